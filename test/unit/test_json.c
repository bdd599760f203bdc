/* Unit tests for internal/json: parse errors that do not echo input,
 * typed lookups (numbers as strings), and the writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"

static void test_parse_and_lookup(void **state)
{
  const char *text =
      "{\"data\":{\"vmid\":\"105\",\"memory\":\"4096\",\"cores\":4,"
      "\"ratio\":1.5,\"big\":123456789012345678901234567890,"
      "\"flag\":1,\"ok\":true,\"name\":\"vm\",\"list\":[1,2,3]}}";
  yajl_val v;
  int64_t i;
  double d;
  int b;
  char *err = NULL;

  assert_int_equal(carp_json_parse(text, strlen(text), &v, &err), 0);
  assert_string_equal(carp_json_str(v, "data", "name", NULL), "vm");
  assert_null(carp_json_str(v, "data", "cores", NULL)); /* not a string */
  assert_null(carp_json_str(v, "data", "absent", NULL));
  assert_int_equal(carp_json_int(v, &i, "data", "vmid", NULL), 0);
  assert_int_equal(i, 105);
  assert_int_equal(carp_json_int(v, &i, "data", "cores", NULL), 0);
  assert_int_equal(i, 4);
  assert_int_equal(carp_json_int(v, &i, "data", "name", NULL), CARP_EPARSE);
  assert_int_equal(carp_json_int(v, &i, "data", "ratio", NULL), CARP_EPARSE);
  assert_int_equal(carp_json_int(v, &i, "data", "big", NULL), CARP_EPARSE);
  assert_int_equal(carp_json_int(v, &i, "data", "nope", NULL), CARP_ENOENT);
  assert_int_equal(carp_json_double(v, &d, "data", "ratio", NULL), 0);
  assert_true(d == 1.5);
  assert_int_equal(carp_json_double(v, &d, "data", "memory", NULL), 0);
  assert_true(d == 4096);
  assert_int_equal(carp_json_bool(v, &b, "data", "flag", NULL), 0);
  assert_int_equal(b, 1);
  assert_int_equal(carp_json_bool(v, &b, "data", "ok", NULL), 0);
  assert_int_equal(b, 1);
  assert_int_equal(carp_json_bool(v, &b, "data", "cores", NULL), CARP_EPARSE);
  assert_int_equal(carp_json_len(carp_json_arr(v, "data", "list", NULL)), 3);
  assert_null(carp_json_at(carp_json_arr(v, "data", "list", NULL), 3));
  assert_ptr_equal(carp_json_get(v, NULL), v);
  carp_json_free(v);
}

static void test_parse_errors(void **state)
{
  static const char *const bad[] = {
      "{\"token\":\"s3cr3t\"", "{\"a\":}", "", "[1,2", "{\"a\":\"\xff\"}",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    yajl_val v = NULL;
    char *err = NULL;
    assert_int_equal(carp_json_parse(bad[i], strlen(bad[i]), &v, &err),
                     CARP_EPARSE);
    assert_non_null(err);
    assert_null(strstr(err, "s3cr3t")); /* never echoes the payload */
    assert_null(strchr(err, '\n'));
    carp_free(err);
  }
  {
    yajl_val v;
    char *err = NULL;
    assert_int_equal(carp_json_parse("{\"a\":1}\0x", 9, &v, &err), CARP_EPARSE);
    carp_free(err);
  }
}

static void test_writer(void **state)
{
  struct carp_buf b;
  struct carp_jw w;
  yajl_val v;
  const char *src = "{\"x\":[1,2.50,\"s\",null,false,{\"y\":{}}]}";

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "name", "a\"b\n");
  carp_jw_kint(&w, "n", -42);
  carp_jw_kbool(&w, "t", 1);
  carp_jw_key(&w, "copy");
  assert_int_equal(carp_json_parse(src, strlen(src), &v, NULL), 0);
  carp_jw_value(&w, carp_json_get(v, "x", NULL));
  carp_json_free(v);
  carp_jw_key(&w, "nil");
  carp_jw_str(&w, NULL);
  carp_jw_obj_end(&w);
  assert_int_equal(carp_jw_finish(&w), 0);
  assert_string_equal(carp_buf_cstr(&b),
                      "{\"name\":\"a\\\"b\\n\",\"n\":-42,\"t\":true,"
                      "\"copy\":[1,2.50,\"s\",null,false,{\"y\":{}}],"
                      "\"nil\":null}");
  carp_buf_free(&b);

  /* An unclosed object and invalid UTF-8 are both errors. */
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_jw_obj(&w);
  assert_int_equal(carp_jw_finish(&w), CARP_EINVAL);
  carp_buf_reset(&b);
  carp_jw_init(&w, &b);
  carp_jw_str(&w, "\xff\xfe");
  assert_int_equal(carp_jw_finish(&w), CARP_EINVAL);
  carp_buf_free(&b);

  /* A capped buffer reports the overflow. */
  carp_buf_init(&b, 8);
  carp_jw_init(&w, &b);
  carp_jw_str(&w, "longer than eight");
  assert_int_equal(carp_jw_finish(&w), CARP_ETOOBIG);
  carp_buf_free(&b);

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_json_quote(&b, "a\x01\"", 3);
  assert_string_equal(carp_buf_cstr(&b), "\"a\\u0001\\\"\"");
  carp_buf_free(&b);
}

/* Collects what the walkers report, as "key=value;" or "value;". */
struct seen {
  char text[1024];
  int n;
  int stop_at; /* return 7 from this call (1-based), 0: never */
};

static int on_member(const char *key, size_t klen, const char *v, size_t vlen,
                     void *arg)
{
  struct seen *s = arg;
  size_t used = strlen(s->text);
  snprintf(s->text + used, sizeof(s->text) - used, "%.*s=%.*s;", (int)klen, key,
           (int)vlen, v);
  return ++s->n == s->stop_at ? 7 : 0;
}

static int on_element(const char *v, size_t vlen, void *arg)
{
  struct seen *s = arg;
  size_t used = strlen(s->text);
  snprintf(s->text + used, sizeof(s->text) - used, "%.*s;", (int)vlen, v);
  return ++s->n == s->stop_at ? 7 : 0;
}

static void test_split_list_page(void **state)
{
  const char *page =
      " {\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"12\","
      "\"continue\":\"a]b}\"},\n \"items\" : [ {\"a\":\"x\\\"}]\",\"b\":[1,{}]}"
      " , {\"c\":null} ,[], \"s\\\\\" , -1.5e3,true ] } ";
  struct seen s = {0};
  const char *items;
  char *at;
  yajl_val v;
  (void)state;
  assert_int_equal(carp_json_each_member(page, strlen(page), on_member, &s), 0);
  assert_int_equal(s.n, 3);
  assert_non_null(strstr(s.text, "kind=\"PodList\";"));
  assert_non_null(strstr(
      s.text, "metadata={\"resourceVersion\":\"12\",\"continue\":\"a]b}\"};"));
  /* The items array, exactly as written, walked element by element. */
  items = strstr(page, "[ {");
  at = strstr(s.text, "items=");
  assert_non_null(at);
  assert_int_equal(strncmp(at + 6, items, strlen(items) - 3), 0);
  memset(&s, 0, sizeof(s));
  assert_int_equal(
      carp_json_each_element(items, strlen(items) - 3, on_element, &s), 0);
  assert_string_equal(s.text,
                      "{\"a\":\"x\\\"}]\",\"b\":[1,{}]};{\"c\":null};[];"
                      "\"s\\\\\";-1.5e3;true;");
  /* Each piece parses on its own. */
  assert_int_equal(
      carp_json_parse("{\"a\":\"x\\\"}]\",\"b\":[1,{}]}", 24, &v, NULL), 0);
  assert_string_equal(carp_json_str(v, "a", NULL), "x\"}]");
  carp_json_free(v);
}

static void test_split_edges_and_errors(void **state)
{
  struct seen s = {0};
  static const char *bad_objects[] = {
      "",          "[]",         "{",           "{\"a\":1",
      "{\"a\" 1}", "{\"a\":1,}", "{\"a\":\"x}", "{\"a\":1} x",
      "{a:1}",     "{\"a\":[1}", "{\"a\":}",    "{\"a\":1 \"b\":2}",
  };
  size_t i;
  (void)state;
  assert_int_equal(carp_json_each_member("{ }", 3, on_member, &s), 0);
  assert_int_equal(s.n, 0);
  assert_int_equal(carp_json_each_element(" [ ] ", 5, on_element, &s), 0);
  assert_int_equal(s.n, 0);
  for (i = 0; i < sizeof(bad_objects) / sizeof(bad_objects[0]); i++) {
    memset(&s, 0, sizeof(s));
    if (carp_json_each_member(bad_objects[i], strlen(bad_objects[i]), on_member,
                              &s) != CARP_EPARSE)
      fail_msg("accepted %s", bad_objects[i]);
  }
  assert_int_equal(carp_json_each_element("[1,]", 4, on_element, &s),
                   CARP_EPARSE);
  assert_int_equal(carp_json_each_element("[1 2]", 5, on_element, &s),
                   CARP_EPARSE);
  assert_int_equal(carp_json_each_element("{}", 2, on_element, &s),
                   CARP_EPARSE);
  /* A NUL byte inside is refused, not taken as the end. */
  assert_int_equal(carp_json_each_element("[\"a\0b\"]", 7, on_element, &s),
                   CARP_EPARSE);
  assert_int_equal(carp_json_each_element("[{\"a\":\0}]", 9, on_element, &s),
                   CARP_EPARSE);
  /* A callback's non-zero answer stops the walk and is returned. */
  memset(&s, 0, sizeof(s));
  s.stop_at = 2;
  assert_int_equal(carp_json_each_element("[1,2,3]", 7, on_element, &s), 7);
  assert_string_equal(s.text, "1;2;");
  memset(&s, 0, sizeof(s));
  s.stop_at = 1;
  assert_int_equal(
      carp_json_each_member("{\"a\":1,\"b\":2}", 13, on_member, &s), 7);
  assert_string_equal(s.text, "a=1;");
}

static void test_parse_cstr(void **state)
{
  yajl_val v = NULL;
  char *err = NULL;
  (void)state;
  assert_int_equal(carp_json_parse_cstr("{\"a\":[1,2]}", 11, &v, NULL), 0);
  assert_int_equal(carp_json_len(carp_json_arr(v, "a", NULL)), 2);
  carp_json_free(v);
  /* A NUL inside the text, or none where len says the text ends. */
  assert_int_equal(carp_json_parse_cstr("{\"a\":\0}", 6, &v, &err),
                   CARP_EPARSE);
  assert_string_equal(err, "NUL byte inside JSON text");
  carp_free(err);
  assert_int_equal(carp_json_parse_cstr("{}{}", 2, &v, NULL), CARP_EPARSE);
  assert_int_equal(carp_json_parse_cstr("{\"a\":", 5, &v, &err), CARP_EPARSE);
  assert_non_null(err);
  carp_free(err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_and_lookup),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_writer),
      cmocka_unit_test(test_parse_cstr),
      cmocka_unit_test(test_split_list_page),
      cmocka_unit_test(test_split_edges_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
