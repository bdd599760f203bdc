/* Unit tests for internal/yaml: the tree, positions in errors, aliases,
 * nulls and booleans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/yaml.h"
#include "tmpdir.h"

static void test_tree(void **state)
{
  const char *text = "# comment\n"
                     "clusters:\n"
                     "  - region: pve-a\n"
                     "    url: \"https://a:8006/api2/json\"\n"
                     "    insecure: yes\n"
                     "    empty:\n"
                     "    quoted: \"null\"\n"
                     "  - &b {region: pve-b, tags: [x, y]}\n"
                     "copy: *b\n"
                     "multi: |\n"
                     "  line1\n"
                     "  line2\n";
  struct carp_yaml_doc doc;
  struct carp_yaml_node *clusters, *c0, *c1;
  char *err = NULL;
  int b;

  assert_int_equal(carp_yaml_load(text, strlen(text), "t.yaml", &doc, &err), 0);
  clusters = carp_yaml_get(doc.root, "clusters");
  assert_non_null(clusters);
  assert_int_equal(clusters->type, CARP_YAML_SEQUENCE);
  assert_int_equal(clusters->len, 2);
  c0 = clusters->items[0];
  assert_string_equal(carp_yaml_str(carp_yaml_get(c0, "region")), "pve-a");
  assert_int_equal(carp_yaml_get(c0, "region")->line, 3);
  assert_int_equal(carp_yaml_get(c0, "region")->col, 13);
  assert_string_equal(carp_yaml_str(carp_yaml_get(c0, "url")),
                      "https://a:8006/api2/json");
  assert_int_equal(carp_yaml_bool(carp_yaml_get(c0, "insecure"), &b), 0);
  assert_int_equal(b, 1);
  assert_true(carp_yaml_is_null(carp_yaml_get(c0, "empty")));
  assert_true(carp_yaml_is_null(carp_yaml_get(c0, "absent")));
  assert_false(carp_yaml_is_null(carp_yaml_get(c0, "quoted")));
  assert_string_equal(carp_yaml_str(carp_yaml_get(c0, "quoted")), "null");
  assert_int_equal(carp_yaml_bool(carp_yaml_get(c0, "url"), &b), CARP_EINVAL);
  c1 = clusters->items[1];
  assert_string_equal(carp_yaml_str(carp_yaml_get(c1, "region")), "pve-b");
  assert_int_equal(carp_yaml_get(c1, "tags")->len, 2);
  assert_ptr_equal(carp_yaml_get(doc.root, "copy"), c1);
  assert_string_equal(carp_yaml_str(carp_yaml_get(doc.root, "multi")),
                      "line1\nline2\n");
  carp_yaml_free(&doc);
}

static void test_errors(void **state)
{
  struct carp_yaml_doc doc;
  char *err = NULL;
  const char *bad = "a: 1\nb: [1, 2\nc: 3\n";
  assert_int_equal(carp_yaml_load(bad, strlen(bad), "bad.yaml", &doc, &err),
                   CARP_EPARSE);
  assert_non_null(err);
  assert_true(strncmp(err, "bad.yaml:", 9) == 0);
  carp_free(err);

  bad = "? [complex, key]\n: value\n";
  assert_int_equal(carp_yaml_load(bad, strlen(bad), "k.yaml", &doc, &err),
                   CARP_EPARSE);
  assert_non_null(strstr(err, "k.yaml:1:3: mapping keys must be plain"));
  carp_free(err);

  bad = "a: *nowhere\n";
  assert_int_equal(carp_yaml_load(bad, strlen(bad), "x", &doc, &err),
                   CARP_EPARSE);
  carp_free(err);

  assert_int_equal(carp_yaml_load_file("/nonexistent/x.yaml", &doc, &err),
                   -ENOENT);
  assert_non_null(strstr(err, "/nonexistent/x.yaml: "));
  carp_free(err);

  /* An empty document has no root. */
  assert_int_equal(carp_yaml_load("", 0, "e", &doc, &err), 0);
  assert_null(doc.root);
  carp_yaml_free(&doc);
}

static void test_file(void **state)
{
  char path[300];
  FILE *f;
  struct carp_yaml_doc doc;
  char *err = NULL;
  snprintf(path, sizeof(path), "%s/doc.yaml", (const char *)*state);
  f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs("apiVersion: v1\nkind: Config\n", f) >= 0);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(carp_yaml_load_file(path, &doc, &err), 0);
  assert_string_equal(carp_yaml_str(carp_yaml_get(doc.root, "kind")), "Config");
  carp_yaml_free(&doc);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tree),
      cmocka_unit_test(test_errors),
      cmocka_unit_test_setup_teardown(test_file, carp_test_tmpdir_setup,
                                      carp_test_tmpdir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
