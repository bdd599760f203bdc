/* Helpers shared by the tests of the Karpenter kinds (test_nodepool.c,
 * test_nodeclaim.c, test_nodeclass.c, test_crd_manifests.c...): YAML or
 * JSON text to a yajl tree, decoding with a kind, and a per-test check
 * that every interned string and label set was given back. Include once
 * per test file, after cmocka.h. */
#ifndef CARP_TEST_API_TESTLIB_H
#define CARP_TEST_API_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/object.h"
#include "carpenter/yaml.h"

struct leak_counts {
  size_t strings;
  size_t sets;
};

static __attribute__((unused)) int leak_setup(void **state)
{
  struct leak_counts *c = carp_calloc(1, sizeof(*c));
  c->strings = carp_intern_count();
  c->sets = carp_kvset_count();
  *state = c;
  return 0;
}

static __attribute__((unused)) int leak_teardown(void **state)
{
  struct leak_counts *c = *state;
  size_t strings = carp_intern_count(), sets = carp_kvset_count();
  int ok = strings == c->strings && sets == c->sets;
  if (!ok)
    fprintf(stderr, "leak: interned strings %zu -> %zu, sets %zu -> %zu\n",
            c->strings, strings, c->sets, sets);
  carp_free(c);
  return ok ? 0 : -1;
}

#define LEAK_TEST(f)                                                           \
  cmocka_unit_test_setup_teardown(f, leak_setup, leak_teardown)

/* YAML text to a yajl tree (fails the test on a parse error). */
static __attribute__((unused)) yajl_val yaml_json(const char *text)
{
  struct carp_yaml_doc doc;
  yajl_val v = NULL;
  char *err = NULL;
  if (carp_yaml_load(text, strlen(text), "test.yaml", &doc, &err)) {
    fprintf(stderr, "yaml: %s\n", err ? err : "?");
    carp_free(err);
    fail();
  }
  if (carp_yaml_to_json(doc.root, &v, &err)) {
    fprintf(stderr, "yaml to json: %s\n", err ? err : "?");
    carp_free(err);
    carp_yaml_free(&doc);
    fail();
  }
  carp_yaml_free(&doc);
  return v;
}

static __attribute__((unused)) yajl_val json_of(const char *text)
{
  yajl_val v = NULL;
  char *err = NULL;
  if (carp_json_parse(text, strlen(text), &v, &err)) {
    fprintf(stderr, "json: %s\n", err ? err : "?");
    carp_free(err);
    fail();
  }
  return v;
}

/* Decodes v with kind; NULL (and *err when err is not NULL) on failure. */
static __attribute__((unused)) struct carp_objmeta *
decode_json(const struct carp_kind *kind, yajl_val v, char **err)
{
  struct carp_objmeta *m = NULL;
  char *e = NULL;
  if (kind->decode(v, &m, &e)) {
    if (err)
      *err = e;
    else
      carp_free(e);
    return NULL;
  }
  carp_free(e);
  return m;
}

static __attribute__((unused)) struct carp_objmeta *
decode_yaml(const struct carp_kind *kind, const char *text, char **err)
{
  yajl_val v = yaml_json(text);
  struct carp_objmeta *m = decode_json(kind, v, err);
  carp_json_free(v);
  return m;
}

/* A whole file (fails the test when unreadable); free with carp_free. */
static __attribute__((unused)) char *read_text(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    fail();
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = carp_malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    carp_free(buf);
    fail();
  }
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* $CARP_SOURCE_DIR/rel, or ../../rel from the build's test directory. */
static __attribute__((unused)) void source_path(char *out, size_t cap,
                                                const char *rel)
{
  const char *dir = getenv("CARP_SOURCE_DIR");
  snprintf(out, cap, "%s/%s", dir ? dir : "../..", rel);
}

/* Asserts that reason holds exactly one problem containing want (problems
 * are joined with "; "); a leading '+' in want only asks for a problem
 * containing the rest (for messages that contain "; " themselves, or
 * cases with several problems). */
static __attribute__((unused)) void assert_one_problem(const char *reason,
                                                       const char *want)
{
  int only = want[0] != '+';
  if (!only)
    want++;
  if (!reason || !strstr(reason, want) || (only && strstr(reason, "; "))) {
    fprintf(stderr, "want one problem containing:\n  %s\ngot:\n  %s\n", want,
            reason ? reason : "(valid)");
    fail();
  }
}

#endif
