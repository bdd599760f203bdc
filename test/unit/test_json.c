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
  {
    /* strtod reads these; JSON has no such numbers (found by fuzz_pve) */
    static const char *const odd[] = {"\"nan\"", "\"inf\"", "\"-Infinity\"",
                                      "1e999"};
    size_t k;
    for (k = 0; k < sizeof(odd) / sizeof(odd[0]); k++) {
      yajl_val o = NULL;
      assert_int_equal(carp_json_parse(odd[k], strlen(odd[k]), &o, NULL), 0);
      assert_int_equal(carp_json_double(o, &d, NULL), CARP_EPARSE);
      carp_json_free(o);
    }
  }
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
