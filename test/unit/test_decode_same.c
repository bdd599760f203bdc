/* Unit test: decoding without trees changes nothing. Each object of
 * test/unit/data/decode_corpus.txt (Pods, Nodes, DaemonSets: every field
 * the decoders keep, nulls, duplicates, escapes, deep values, and one bad
 * field after another) must decode to exactly what
 * test/unit/data/decode_golden.txt says - the objects (or errors) the tree
 * decoders made before the informer decoded from parser events - both
 * through the kind's decode (a tree) and through the informer's page
 * decoder (events). The description is written field by field by
 * decode_describe.h.
 *
 * The golden file was made by this file built with -DDECODE_GOLDEN
 * against the tree decoders (the commit before the event decoders):
 *   cc -DDECODE_GOLDEN -Iinclude test/unit/test_decode_same.c \
 *      <that build's libcarp_api.a libcarp_json.a libcarp_core.a> -lyajl -lm
 *   ./a.out test/unit/data/decode_corpus.txt > test/unit/data/decode_golden.txt
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DECODE_GOLDEN
#include <setjmp.h>

#include <cmocka.h>

#include "../../internal/informer/informer_int.h"
#endif
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "decode_describe.h"

static const struct carp_kind *kind_of(const char *name)
{
  if (!strcmp(name, "Pod"))
    return &carp_kind_pod;
  if (!strcmp(name, "Node"))
    return &carp_kind_node;
  if (!strcmp(name, "DaemonSet"))
    return &carp_kind_daemonset;
  return NULL;
}

/* The description of what kind->decode makes of the tree of text. */
static void describe_tree(FILE *f, const struct carp_kind *k, const char *text)
{
  yajl_val v;
  struct carp_objmeta *m = NULL;
  char *err = NULL;
  int rc;
  if (carp_json_parse(text, strlen(text), &v, &err)) {
    fprintf(f, "%s not JSON: %s\n", k->name, err ? err : "");
    carp_free(err);
    return;
  }
  rc = k->decode(v, &m, &err);
  dd_object(f, k->name, rc, m, err);
  carp_free(err);
  if (!rc)
    carp_obj_unref(m);
  carp_json_free(v);
}

#ifdef DECODE_GOLDEN
int main(int argc, char **argv)
{
  char line[65536];
  FILE *in = argc > 1 ? fopen(argv[1], "r") : NULL;
  if (!in)
    return 2;
  while (fgets(line, sizeof(line), in)) {
    char *tab = strchr(line, '\t');
    line[strcspn(line, "\n")] = 0;
    *tab = 0;
    describe_tree(stdout, kind_of(line), tab + 1);
    printf("--\n");
  }
  fclose(in);
  return 0;
}
#else

static char *slurp(const char *name)
{
  char path[4096];
  const char *src = getenv("CARP_SOURCE_DIR");
  FILE *f;
  char *text;
  long n;
  snprintf(path, sizeof(path), "%s/test/unit/data/%s", src ? src : ".", name);
  f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = carp_malloc((size_t)n + 1);
  assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
  text[n] = 0;
  fclose(f);
  return text;
}

struct one {
  const struct carp_kind *kind;
  FILE *out;
  int n;
};

static void on_item(struct inf_obj *o, void *arg)
{
  struct one *one = arg;
  one->n++;
  dd_object(one->out, one->kind->name, o->obj ? 0 : CARP_EPARSE, o->obj,
            o->err);
  carp_obj_unref(o->obj);
  carp_free(o->err);
}

/* What the informer's page decoder makes of a page holding text alone. */
static void describe_page(FILE *f, const struct carp_kind *k, const char *text)
{
  struct inf_dec *dec = inf_dec_new(k);
  struct carp_buf page;
  struct inf_page pg;
  struct one one = {k, f, 0};
  char *err = NULL;
  carp_buf_init(&page, CARP_BUF_UNLIMITED);
  carp_buf_puts(&page, "{\"kind\":\"List\",\"items\":[");
  carp_buf_puts(&page, text);
  carp_buf_puts(&page, "],\"metadata\":{\"resourceVersion\":\"1\"}}");
  memset(&pg, 0, sizeof(pg));
  if (inf_dec_page(dec, page.ptr, page.len, &pg, on_item, &one, &err))
    fprintf(f, "%s page refused: %s\n", k->name, err ? err : "");
  else if (one.n != 1)
    fprintf(f, "%s page had %d items\n", k->name, one.n);
  carp_free(err);
  carp_free(pg.rv);
  carp_free(pg.cont);
  carp_buf_free(&page);
  inf_dec_free(dec);
}

static void test_same_as_tree_decoders(void **state)
{
  char *corpus = slurp("decode_corpus.txt");
  char *golden = slurp("decode_golden.txt");
  char *line = corpus, *want = golden;
  int n = 0;
  (void)state;
  while (*line) {
    char *eol = strchr(line, '\n'), *tab = strchr(line, '\t');
    char *end = strstr(want, "--\n");
    const struct carp_kind *k;
    char *got[2] = {NULL, NULL};
    size_t len[2];
    int path;
    assert_non_null(eol);
    assert_non_null(tab);
    assert_non_null(end);
    *eol = *tab = 0;
    *end = 0;
    k = kind_of(line);
    assert_non_null(k);
    for (path = 0; path < 2; path++) {
      FILE *f = open_memstream(&got[path], &len[path]);
      if (path == 0)
        describe_tree(f, k, tab + 1);
      else
        describe_page(f, k, tab + 1);
      fclose(f);
      if (strcmp(got[path], want))
        fail_msg("object %d (%s) through the %s:\n%s\nwanted:\n%s", n + 1, line,
                 path ? "page decoder" : "tree decode", got[path], want);
      free(got[path]);
    }
    n++;
    line = eol + 1;
    want = end + 3;
  }
  assert_int_equal(*want, 0); /* as many objects as descriptions */
  assert_true(n > 50);
  assert_int_equal(carp_podspec_count(), 0);
  carp_free(corpus);
  carp_free(golden);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_as_tree_decoders),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
