/* Unit tests for carp_yaml_to_json: plain scalars resolved with the YAML
 * 1.2 core schema (null, booleans, decimal/octal/hex integers, floats in
 * every spelling JSON does not accept as is), quoted and block scalars
 * kept as strings, values JSON cannot hold kept as strings, nesting,
 * aliases and an empty document. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/yaml.h"

static char *convert(const char *yaml)
{
  struct carp_yaml_doc doc;
  struct carp_buf b;
  char *err = NULL;
  assert_int_equal(carp_yaml_load(yaml, strlen(yaml), "t.yaml", &doc, &err), 0);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_yaml_to_json_text(doc.root, &b), 0);
  carp_yaml_free(&doc);
  return carp_buf_steal(&b, NULL);
}

static void test_scalars(void **state)
{
  static const struct {
    const char *yaml, *json;
  } cases[] = {
      {"a: ~", "{\"a\":null}"},
      {"a: null", "{\"a\":null}"},
      {"a: NULL", "{\"a\":null}"},
      {"a:", "{\"a\":null}"},
      {"a: 'null'", "{\"a\":\"null\"}"},
      {"a: true", "{\"a\":true}"},
      {"a: False", "{\"a\":false}"},
      {"a: TRUE", "{\"a\":true}"},
      {"a: yes", "{\"a\":\"yes\"}"},
      {"a: on", "{\"a\":\"on\"}"},
      {"a: 'true'", "{\"a\":\"true\"}"},
      {"a: 42", "{\"a\":42}"},
      {"a: -42", "{\"a\":-42}"},
      {"a: +42", "{\"a\":42}"},
      {"a: 007", "{\"a\":7}"},
      {"a: 0", "{\"a\":0}"},
      {"a: 0o17", "{\"a\":15}"},
      {"a: 0x1F", "{\"a\":31}"},
      {"a: 0xFFFFFFFFFFFFFFFFFF", "{\"a\":\"0xFFFFFFFFFFFFFFFFFF\"}"},
      {"a: 123456789012345678901234567890",
       "{\"a\":123456789012345678901234567890}"},
      {"a: '42'", "{\"a\":\"42\"}"},
      {"a: \"42\"", "{\"a\":\"42\"}"},
      {"a: 1.5", "{\"a\":1.5}"},
      {"a: .5", "{\"a\":0.5}"},
      {"a: -.5", "{\"a\":-0.5}"},
      {"a: 1.", "{\"a\":1.0}"},
      {"a: 1e3", "{\"a\":1e3}"},
      {"a: 2.5E-3", "{\"a\":2.5E-3}"},
      {"a: 01.5", "{\"a\":1.5}"},
      {"a: .inf", "{\"a\":\".inf\"}"},
      {"a: .nan", "{\"a\":\".nan\"}"},
      {"a: 10%", "{\"a\":\"10%\"}"},
      {"a: 1.2.3", "{\"a\":\"1.2.3\"}"},
      {"a: 1e", "{\"a\":\"1e\"}"},
      {"a: 720h", "{\"a\":\"720h\"}"},
      {"a: 256Gi", "{\"a\":\"256Gi\"}"},
      {"a: 0 8 * * mon-fri", "{\"a\":\"0 8 * * mon-fri\"}"},
      {"a: '@daily'", "{\"a\":\"@daily\"}"},
      {"a: \"say \\\"hi\\\"\"", "{\"a\":\"say \\\"hi\\\"\"}"},
      {"a: |\n  line1\n  line2\n", "{\"a\":\"line1\\nline2\\n\"}"},
      {"a: >\n  folded\n  text\n", "{\"a\":\"folded text\\n\"}"},
      {"a: 'caf\xc3\xa9'", "{\"a\":\"caf\xc3\xa9\"}"},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *got = convert(cases[i].yaml);
    if (strcmp(got, cases[i].json))
      fprintf(stderr, "%s: want %s, got %s\n", cases[i].yaml, cases[i].json,
              got);
    assert_string_equal(got, cases[i].json);
    carp_free(got);
  }
}

static void test_tree(void **state)
{
  const char *yaml = "spec:\n"
                     "  list: [1, two, {k: v}]\n"
                     "  anchor: &x {a: 1}\n"
                     "  alias: *x\n"
                     "  empty: {}\n"
                     "  none: []\n";
  struct carp_yaml_doc doc;
  yajl_val v;
  int64_t n;
  char *err = NULL, *text;

  text = convert(yaml);
  assert_string_equal(text, "{\"spec\":{\"list\":[1,\"two\",{\"k\":\"v\"}],"
                            "\"anchor\":{\"a\":1},\"alias\":{\"a\":1},"
                            "\"empty\":{},\"none\":[]}}");
  carp_free(text);

  assert_int_equal(carp_yaml_load(yaml, strlen(yaml), "t.yaml", &doc, &err), 0);
  assert_int_equal(carp_yaml_to_json(doc.root, &v, &err), 0);
  carp_yaml_free(&doc);
  assert_int_equal(carp_json_int(v, &n, "spec", "alias", "a", NULL), 0);
  assert_int_equal(n, 1);
  assert_string_equal(
      carp_json_at(carp_json_arr(v, "spec", "list", NULL), 1)->u.string, "two");
  carp_json_free(v);

  /* An empty document is null. */
  assert_int_equal(carp_yaml_load("# nothing\n", 10, "t.yaml", &doc, &err), 0);
  assert_null(doc.root);
  assert_int_equal(carp_yaml_to_json(doc.root, &v, &err), 0);
  assert_true(YAJL_IS_NULL(v));
  carp_json_free(v);
  carp_yaml_free(&doc);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_tree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
