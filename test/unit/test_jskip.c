/* Unit tests for passing over managedFields (internal/json/jskip.c, through
 * carp_jdec_pass_over): an object's and a list page's are passed over, the
 * handlers see the same as when the parser reads them, one outside
 * metadata (a label of that name) is read, and every case the
 * scan must leave to the parser (text inside a string, a member after a
 * key, an array, a number, a comment, a value yajl would refuse, bytes
 * over 0x7f, deep nesting) is left to it and gives the same result; then
 * random edits of a Pod event give the same both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../fuzz/jskip_trace.h"

#define MF                                                                     \
  "\"managedFields\":[{\"manager\":\"kubelet\",\"operation\":\"Update\","      \
  "\"time\":\"2026-11-27T10:00:00Z\",\"fieldsV1\":{\"f:status\":{"             \
  "\"f:conditions\":{\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{},"            \
  "\"f:lastHeartbeatTime\":{}}}}},\"subresource\":\"status\"}]"
/* members as those of an object's metadata. */
#define META(members) "{\"metadata\":{" members "}}"
#define POD                                                                    \
  "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1\",\"labels\":{\"app\":"    \
  "\"web\"}," MF "},\"spec\":{\"nodeName\":\"n1\",\"priority\":5}}"

static size_t passed_over(const char *text)
{
  size_t passed;
  assert_true(jskip_same(text, strlen(text), &passed));
  return passed;
}

/* What the parser accepts with the member, and what is left without it. */
static void test_passed_over(void **state)
{
  struct carp_buf a;
  (void)state;
  assert_int_equal(passed_over(POD), 1);
  assert_int_equal(passed_over("{\"type\":\"MODIFIED\",\"object\":" POD "}"),
                   1);
  assert_int_equal(
      passed_over("{\"kind\":\"PodList\",\"items\":[" POD "," POD "," POD "]}"),
      3);
  /* Whitespace, every kind of value, and a member on each side. */
  assert_int_equal(
      passed_over(META("\"a\":\"b\" ,\"managedFields\":[ -0.5e+3 , "
                       "{\"k\" : null} , true,false,0,12E-1 ] , \"c\":1")),
      1);
  assert_int_equal(passed_over(META("\"a\":{},\"managedFields\":[],"
                                    "\"managedFields\":{\"x\":[[]]}")),
                   2);
  assert_int_equal(passed_over(META("\"a\":[],\"managedFields\":"
                                    "\"\\u00e9\\n\\\"\\\\\\/\\b\\f\\r\\t\"")),
                   1);
  /* The handlers saw the rest. */
  carp_buf_init(&a, CARP_BUF_UNLIMITED);
  jskip_trace(POD, strlen(POD), 1, &a);
  assert_string_equal(carp_buf_cstr(&a),
                      ":5;<kind:4=Pod;metadata:5;<name:4=web-1;labels:5;<app:"
                      "4=web;>>spec:5;<nodeName:4=n1;priority:3=5;>>rc=0 err=");
  carp_buf_free(&a);
}

/* A member of that name anywhere but in metadata is read: a label, a
 * field of a spec. */
static void test_only_in_metadata(void **state)
{
  static const char *const texts[] = {
      META("\"labels\":{\"a\":\"b\",\"managedFields\":\"x\"}"),
      "{\"a\":\"b\",\"managedFields\":[1]}",
      "{\"spec\":{\"a\":\"b\",\"managedFields\":{\"c\":1}}}",
      "{\"metadata\":[{\"a\":\"b\",\"managedFields\":[1]}]}",
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
    struct carp_buf a;
    assert_int_equal(passed_over(texts[i]), 0);
    carp_buf_init(&a, CARP_BUF_UNLIMITED);
    jskip_trace(texts[i], strlen(texts[i]), 1, &a);
    assert_non_null(strstr(carp_buf_cstr(&a), "managedFields:"));
    carp_buf_free(&a);
  }
}

/* Left to the parser, with the same outcome. */
static void test_left_to_the_parser(void **state)
{
  static const char *const texts[] = {
      /* Inside a string (the text is not JSON, and would be without the
       * member). */
      META("\"a\":\"x,\"managedFields\":[1]"),
      META("\"a\":\"b\",\"l,\"managedFields\":[1],\":2"),
      /* After a key, in an array, after a number. */
      META("\"a\":\"b\",\"k\" ,\"managedFields\":[1]:2"),
      META("\"a\":[\"x\",\"managedFields\":[1]]"),
      META("\"a\":[\"x\",\"managedFields\":[1],\"y\"]"),
      "{\"metadata\":[\"x\",\"managedFields\":[1],\"y\"]}",
      META("\"g\":5,\"managedFields\":[1],\"c\":2"),
      /* A comment may hide a quote. */
      "{/*\"*/\"metadata\":{\"a\":\"b\",\"managedFields\":[]}}",
      META("\"a\":\"b\"/**/,\"managedFields\":[]"),
      /* Two commas; a member missing its comma after the value. */
      META("\"a\":\"b\",,\"managedFields\":[]"),
      META("\"a\":\"b\",,\"managedFields\":[],\"c\":1"),
      META("\"a\":\"b\",\"managedFields\":[]\"c\":1"),
      /* Values yajl refuses. */
      META("\"a\":\"b\",\"managedFields\":[1,]"),
      META("\"a\":\"b\",\"managedFields\":[\"\\q\"]"),
      META("\"a\":\"b\",\"managedFields\":[\"\\u12g4\"]"),
      META("\"a\":\"b\",\"managedFields\":[\"a\tb\"]"),
      META("\"a\":\"b\",\"managedFields\":[01]"),
      META("\"a\":\"b\",\"managedFields\":[1.]"),
      META("\"a\":\"b\",\"managedFields\":[-]"),
      META("\"a\":\"b\",\"managedFields\":[1e+]"),
      META("\"a\":\"b\",\"managedFields\":[tru]"),
      META("\"a\":\"b\",\"managedFields\":{\"k\" 1}"),
      META("\"a\":\"b\",\"managedFields\":{1:1}"),
      META("\"a\":\"b\",\"managedFields\":[}"),
      "{\"metadata\":{\"a\":\"b\",\"managedFields\":[1",
      "{\"metadata\":{\"a\":\"b\",\"managedFields\":",
      /* UTF-8 is the parser's to check. */
      META("\"a\":\"b\",\"managedFields\":[\"\xc3\xa9\"]"),
      META("\"a\":\"b\",\"managedFields\":[\"\xc3\"]"),
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
    size_t passed;
    if (!jskip_same(texts[i], strlen(texts[i]), &passed))
      fail_msg("differs: %s", texts[i]);
    if (passed)
      fail_msg("passed over: %s", texts[i]);
  }
}

/* Deeper than the scan goes: the parser reads it, however deep. */
static void test_deep_value(void **state)
{
  struct carp_buf t;
  int i;
  (void)state;
  carp_buf_init(&t, CARP_BUF_UNLIMITED);
  carp_buf_puts(&t, "{\"metadata\":{\"a\":\"b\",\"managedFields\":");
  for (i = 0; i < 300; i++)
    carp_buf_putc(&t, '[');
  for (i = 0; i < 300; i++)
    carp_buf_putc(&t, ']');
  carp_buf_puts(&t, ",\"c\":1}}");
  assert_int_equal(passed_over(carp_buf_cstr(&t)), 0);
  carp_buf_free(&t);
}

/* Random edits of a Pod event: a byte replaced by one that matters to
 * JSON, one removed or one doubled, up to three at a time. */
static void test_random_edits(void **state)
{
  static const char doc[] = "{\"type\":\"MODIFIED\",\"object\":" POD "}";
  static const char bytes[] = "{}[]\",:\\/ \n0-.eEtu\x01\xc3";
  char text[sizeof(doc) + 8];
  size_t n, i, passed, fast = 0;
  unsigned seed = 12345;
  (void)state;
  for (i = 0; i < 50000; i++) {
    int edits = 1 + (int)(i % 3), e;
    memcpy(text, doc, sizeof(doc));
    n = sizeof(doc) - 1;
    for (e = 0; e < edits; e++) {
      size_t at;
      seed = seed * 1103515245u + 12345u;
      at = (seed >> 8) % n;
      switch ((seed >> 4) % 3) {
      case 0:
        text[at] = bytes[(seed >> 16) % (sizeof(bytes) - 1)];
        break;
      case 1:
        memmove(text + at, text + at + 1, n - at);
        n--;
        break;
      default:
        memmove(text + at + 1, text + at, n - at + 1);
        n++;
        break;
      }
    }
    if (!jskip_same(text, n, &passed))
      fail_msg("differs: %.*s", (int)n, text);
    fast += passed;
  }
  /* Over a third of the edits (those outside managedFields and the keys
   * on its way) leave it passed over. */
  assert_true(fast > 15000);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_passed_over),
      cmocka_unit_test(test_only_in_metadata),
      cmocka_unit_test(test_left_to_the_parser),
      cmocka_unit_test(test_deep_value),
      cmocka_unit_test(test_random_edits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
