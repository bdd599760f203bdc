/* Unit tests for the watch-stream framer: objects split at every possible
 * byte boundary, braces and escapes inside strings, the size cap, and
 * garbage between objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/error.h"
#include "carpenter/framer.h"

struct seen {
  char objs[8][256];
  int n;
};

static int collect(const char *obj, size_t len, void *arg)
{
  struct seen *s = arg;
  assert_true(len < 256);
  assert_int_equal(obj[len], '\0');
  memcpy(s->objs[s->n], obj, len + 1);
  s->n++;
  return 0;
}

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"a\":\"}{\\\"\",\"b\":[1,{}]}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":"
    "\"12\"}}}\r\n  {\"k\":\"\\\\\"}";

static void check_three(const struct seen *s)
{
  assert_int_equal(s->n, 3);
  assert_string_equal(s->objs[0], "{\"type\":\"ADDED\",\"object\":{\"a\":"
                                  "\"}{\\\"\",\"b\":[1,{}]}}");
  assert_string_equal(s->objs[1],
                      "{\"type\":\"BOOKMARK\",\"object\":{"
                      "\"metadata\":{\"resourceVersion\":\"12\"}}}");
  assert_string_equal(s->objs[2], "{\"k\":\"\\\\\"}");
}

static void test_whole_and_split(void **state)
{
  size_t len = strlen(stream);
  /* Every split point, and byte-by-byte. */
  for (size_t cut = 0; cut <= len; cut++) {
    struct carp_framer f;
    struct seen s = {.n = 0};
    carp_framer_init(&f, 1024);
    assert_int_equal(carp_framer_feed(&f, stream, cut, collect, &s), 0);
    assert_int_equal(carp_framer_feed(&f, stream + cut, len - cut, collect, &s),
                     0);
    check_three(&s);
    assert_false(carp_framer_pending(&f));
    carp_framer_free(&f);
  }
  {
    struct carp_framer f;
    struct seen s = {.n = 0};
    carp_framer_init(&f, 1024);
    for (size_t i = 0; i < len; i++)
      assert_int_equal(carp_framer_feed(&f, stream + i, 1, collect, &s), 0);
    check_three(&s);
    carp_framer_free(&f);
  }
}

static int stop_at_second(const char *obj, size_t len, void *arg)
{
  int *n = arg;
  return ++*n == 2 ? -77 : 0;
}

static void test_errors(void **state)
{
  struct carp_framer f;
  struct seen s = {.n = 0};
  int n = 0;
  char big[300];

  carp_framer_init(&f, 64);
  memset(big, ' ', sizeof(big));
  big[0] = '{';
  big[1] = '"';
  big[sizeof(big) - 2] = '"';
  big[sizeof(big) - 1] = '}';
  assert_int_equal(carp_framer_feed(&f, big, sizeof(big), collect, &s),
                   CARP_ETOOBIG);
  assert_int_equal(s.n, 0);
  carp_framer_reset(&f);
  assert_int_equal(carp_framer_feed(&f, "x{}", 3, collect, &s), CARP_EPARSE);
  carp_framer_reset(&f);
  assert_int_equal(carp_framer_feed(&f, "{}]", 3, collect, &s), CARP_EPARSE);
  carp_framer_reset(&f);
  /* An error from the callback stops the feed and is returned. */
  assert_int_equal(carp_framer_feed(&f, "{}{}{}", 6, stop_at_second, &n), -77);
  assert_int_equal(n, 2);
  carp_framer_free(&f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_whole_and_split),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
