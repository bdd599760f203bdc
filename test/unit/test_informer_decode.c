/* Unit tests for the informer's decoding (internal/informer/decode.c):
 * list pages and watch events straight into objects, for a kind decoded
 * from the parser's events (Pod) and one built as a tree (PDB) - the same
 * objects and the same refusals as decoding each object's tree, bad items
 * reported with who they are while the rest of the page goes on, and the
 * page or event refused as a whole only when it is not what it must be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../internal/informer/informer_int.h"
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"

#define POD(name, extra)                                                       \
  "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\","                 \
  "\"resourceVersion\":\"7\",\"labels\":{\"app\":\"web\"}" extra "},"          \
  "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":"   \
  "\"x\",\"env\":[{\"name\":\"A\",\"value\":\"b\"}],\"resources\":{"           \
  "\"requests\":{\"cpu\":\"250m\"},\"limits\":{\"cpu\":\"1\"}}}]},"            \
  "\"status\":{\"phase\":\"Running\"}}"

/* What a page's items came out as. */
struct got {
  struct carp_objmeta *obj[8];
  char *err[8];
  char name[8][32];
  int n;
};

static void on_item(struct inf_obj *o, void *arg)
{
  struct got *g = arg;
  assert_true(g->n < 8);
  g->obj[g->n] = o->obj;
  g->err[g->n] = o->err;
  snprintf(g->name[g->n], sizeof(g->name[0]), "%s/%s",
           o->id.namespace ? o->id.namespace : "-",
           o->id.name ? o->id.name : "-");
  g->n++;
}

static void got_free(struct got *g)
{
  int i;
  for (i = 0; i < g->n; i++) {
    carp_obj_unref(g->obj[i]);
    carp_free(g->err[i]);
  }
  memset(g, 0, sizeof(*g));
}

/* The object the kind's tree decode makes of text, for comparison. */
static struct carp_objmeta *tree_decode(const struct carp_kind *k,
                                        const char *text)
{
  yajl_val v;
  struct carp_objmeta *m = NULL;
  assert_int_equal(carp_json_parse(text, strlen(text), &v, NULL), 0);
  if (k->decode(v, &m, NULL))
    m = NULL;
  carp_json_free(v);
  return m;
}

static void test_page_of_pods(void **state)
{
  static const char *page =
      "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},"
      "\"items\":[" POD("a", "") "," POD(
          "b", ",\"uid\":\"u-b\"") ","
                                   "{\"metadata\":{\"name\":\"bad\","
                                   "\"namespace\":\"ns\",\"labels\":{"
                                   "\"x\":1}},\"spec\":{}},"
                                   "7,"
                                   "{\"metadata\":{\"name\":\"nospec\"}}],"
                                   "\"metadata\":{\"resourceVersion\":\"42\","
                                   "\"continue\":\"tok\"}}";
  size_t strings = carp_intern_count(), sets = carp_kvset_count();
  struct inf_dec *dec = inf_dec_new(&carp_kind_pod);
  struct carp_objmeta *ref;
  struct inf_page pg;
  struct got g;
  const struct carp_pod *a, *b;
  (void)state;
  memset(&g, 0, sizeof(g));
  assert_int_equal(
      inf_dec_page(dec, page, strlen(page), &pg, on_item, &g, NULL), 0);
  assert_true(pg.has_items);
  /* The later metadata wins, as the walk over members had it. */
  assert_string_equal(pg.rv, "42");
  assert_string_equal(pg.cont, "tok");
  assert_int_equal(g.n, 5);
  a = (const struct carp_pod *)g.obj[0];
  b = (const struct carp_pod *)g.obj[1];
  assert_non_null(a);
  assert_non_null(b);
  assert_string_equal(a->meta.key, "ns/a");
  assert_string_equal(b->meta.uid, "u-b");
  assert_string_equal(a->node_name, "n1");
  assert_int_equal(a->phase, CARP_POD_RUNNING);
  assert_int_equal(a->spec->requests.cpu, 250);
  /* One spec and one label set for both. */
  assert_ptr_equal(a->spec, b->spec);
  assert_ptr_equal(a->meta.labels, b->meta.labels);
  /* The same as the tree decode of the same pod. */
  ref = tree_decode(&carp_kind_pod, POD("a", ""));
  assert_ptr_equal(((struct carp_pod *)ref)->spec, a->spec);
  assert_ptr_equal(ref->labels, a->meta.labels);
  assert_string_equal(ref->resource_version, a->meta.resource_version);
  carp_obj_unref(ref);
  /* Bad items: refused with the tree decode's message and who they are. */
  assert_null(g.obj[2]);
  assert_string_equal(g.err[2], "metadata.labels: invalid");
  assert_string_equal(g.name[2], "ns/bad");
  assert_null(g.obj[3]);
  assert_string_equal(g.err[3], "metadata.(missing): invalid");
  assert_string_equal(g.name[3], "-/-");
  assert_null(g.obj[4]);
  assert_string_equal(g.err[4], "spec: required");
  assert_string_equal(g.name[4], "-/nospec");
  got_free(&g);
  carp_free(pg.rv);
  carp_free(pg.cont);
  inf_dec_free(dec);
  assert_int_equal(carp_intern_count(), strings);
  assert_int_equal(carp_kvset_count(), sets);
  assert_int_equal(carp_podspec_count(), 0);
}

static void test_page_shapes(void **state)
{
  struct inf_dec *dec = inf_dec_new(&carp_kind_pod);
  struct inf_page pg;
  struct got g;
  char *err = NULL;
  (void)state;
  memset(&g, 0, sizeof(g));
  /* Go marshals an empty list's items as null. */
  assert_int_equal(
      inf_dec_page(dec, "{\"items\":null}", 14, &pg, on_item, &g, NULL), 0);
  assert_true(pg.has_items);
  assert_null(pg.rv);
  assert_int_equal(g.n, 0);
  /* No items at all: the caller refuses that. */
  assert_int_equal(
      inf_dec_page(dec, "{\"kind\":\"PodList\"}", 18, &pg, on_item, &g, NULL),
      0);
  assert_false(pg.has_items);
  /* Not a list: refused whole. */
  assert_int_equal(
      inf_dec_page(dec, "{\"items\":5}", 11, &pg, on_item, &g, &err),
      CARP_EPARSE);
  assert_non_null(err);
  CARP_FREE(&err);
  assert_int_equal(inf_dec_page(dec, "[]", 2, &pg, on_item, &g, &err),
                   CARP_EPARSE);
  CARP_FREE(&err);
  /* Not JSON: refused, after what came before the fault. */
  assert_int_equal(
      inf_dec_page(dec, "{\"items\":[" POD("a", "") ",{\"x\":}]}",
                   strlen("{\"items\":[" POD("a", "") ",{\"x\":}]}"), &pg,
                   on_item, &g, &err),
      CARP_EPARSE);
  assert_non_null(strstr(err, "parse error"));
  assert_int_equal(g.n, 1);
  CARP_FREE(&err);
  carp_free(pg.rv);
  got_free(&g);
  inf_dec_free(dec);
}

/* A kind without a stream (PDB) goes through a tree of each object. */
static void test_page_of_tree_kind(void **state)
{
  char page[4096];
  size_t n = 0, i;
  struct inf_dec *dec = inf_dec_new(&carp_kind_pdb);
  struct inf_page pg;
  struct got g;
  (void)state;
  memset(&g, 0, sizeof(g));
  n += (size_t)snprintf(page + n, sizeof(page) - n,
                        "{\"items\":[{\"metadata\":{\"name\":\"p1\","
                        "\"namespace\":\"ns\"},\"spec\":{\"selector\":{"
                        "\"matchLabels\":{\"app\":\"web\"}}},\"status\":{"
                        "\"disruptionsAllowed\":1}},"
                        "{\"metadata\":{\"name\":\"deep\"},\"spec\":");
  for (i = 0; i < 150; i++)
    page[n++] = '[';
  for (i = 0; i < 150; i++)
    page[n++] = ']';
  n += (size_t)snprintf(page + n, sizeof(page) - n,
                        "},{\"metadata\":{\"name\":\"p2\",\"namespace\":"
                        "\"ns\"}}]}");
  assert_int_equal(inf_dec_page(dec, page, n, &pg, on_item, &g, NULL), 0);
  assert_int_equal(g.n, 3);
  assert_non_null(g.obj[0]);
  assert_int_equal(((struct carp_pdb *)g.obj[0])->disruptions_allowed, 1);
  assert_true(((struct carp_pdb *)g.obj[0])->selector.present);
  /* Too deep for a tree: refused, and the page goes on. */
  assert_null(g.obj[1]);
  assert_non_null(strstr(g.err[1], "nested more than"));
  assert_non_null(g.obj[2]);
  assert_string_equal(g.obj[2]->key, "ns/p2");
  got_free(&g);
  inf_dec_free(dec);
}

static int event(struct inf_dec *dec, const char *text, struct inf_event *ev)
{
  char *err = NULL;
  int rc = inf_dec_event(dec, text, strlen(text), ev, &err);
  if (rc)
    assert_non_null(err);
  carp_free(err);
  return rc;
}

static void test_events(void **state)
{
  static const char *bad[] = {
      "[]",         "{\"object\":{}}", "{\"type\":1,\"object\":{}}",
      "{\"type\":", "\"ADDED\"",
  };
  size_t strings = carp_intern_count(), i;
  struct inf_dec *dec = inf_dec_new(&carp_kind_pod);
  struct inf_event ev;
  struct inf_obj o;
  (void)state;

  assert_int_equal(
      event(dec, "{\"type\":\"ADDED\",\"object\":" POD("a", "") "}", &ev), 0);
  assert_int_equal(ev.t, INF_ADDED);
  assert_string_equal(ev.id.resource_version, "7");
  inf_dec_event_object(dec, &o);
  assert_non_null(o.obj);
  assert_string_equal(o.obj->key, "ns/a");
  carp_obj_unref(o.obj);
  /* The object before the type (no API server writes it so). */
  assert_int_equal(
      event(dec, "{\"object\":" POD("b", "") ",\"type\":\"MODIFIED\"}", &ev),
      0);
  assert_int_equal(ev.t, INF_MODIFIED);
  assert_string_equal(ev.id.name, "b");
  inf_dec_event_object(dec, &o);
  assert_non_null(o.obj);
  assert_string_equal(o.obj->key, "ns/b");
  carp_obj_unref(o.obj);
  /* Its managedFields are passed over unparsed, and the rest is read. */
  assert_int_equal(inf_dec_passed_over(dec), 0);
  assert_int_equal(
      event(dec,
            "{\"type\":\"MODIFIED\",\"object\":" POD(
                "c", ",\"managedFields\":[{\"manager\":\"kubelet\","
                     "\"fieldsV1\":{\"f:status\":{\".\":{}}}}]") "}",
            &ev),
      0);
  assert_int_equal(inf_dec_passed_over(dec), 1);
  inf_dec_event_object(dec, &o);
  assert_non_null(o.obj);
  assert_string_equal(o.obj->key, "ns/c");
  assert_string_equal(((struct carp_pod *)o.obj)->node_name, "n1");
  carp_obj_unref(o.obj);
  /* An object that cannot be decoded. */
  assert_int_equal(event(dec, "{\"type\":\"ADDED\",\"object\":5}", &ev), 0);
  assert_null(ev.id.resource_version);
  inf_dec_event_object(dec, &o);
  assert_null(o.obj);
  assert_string_equal(o.err, "metadata.(missing): invalid");
  carp_free(o.err);
  /* A deletion, a bookmark: who, not what. */
  assert_int_equal(event(dec,
                         "{\"type\":\"DELETED\",\"object\":{\"metadata\":{"
                         "\"name\":\"a\",\"namespace\":\"ns\","
                         "\"resourceVersion\":\"9\"},\"spec\":5}}",
                         &ev),
                   0);
  assert_int_equal(ev.t, INF_DELETED);
  assert_string_equal(ev.id.name, "a");
  assert_string_equal(ev.id.namespace, "ns");
  assert_string_equal(ev.id.resource_version, "9");
  assert_int_equal(event(dec,
                         "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
                         "\"metadata\":{\"resourceVersion\":\"12\"}}}",
                         &ev),
                   0);
  assert_int_equal(ev.t, INF_BOOKMARK);
  assert_string_equal(ev.id.resource_version, "12");
  assert_null(ev.id.name);
  assert_int_equal(event(dec,
                         "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
                         "\"code\":410,\"message\":\"too old\"}}",
                         &ev),
                   0);
  assert_int_equal(ev.t, INF_ERROR);
  assert_int_equal(ev.code, 410);
  assert_string_equal(ev.message, "too old");
  assert_int_equal(event(dec, "{\"type\":\"SOMETHING\"}", &ev), 0);
  assert_int_equal(ev.t, INF_OTHER);
  /* No type, a type not a string, not an object, not JSON: refused. */
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    if (event(dec, bad[i], &ev) != CARP_EPARSE)
      fail_msg("accepted %s", bad[i]);
  inf_dec_free(dec);
  assert_int_equal(carp_intern_count(), strings);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_page_of_pods),
      cmocka_unit_test(test_page_shapes),
      cmocka_unit_test(test_page_of_tree_kind),
      cmocka_unit_test(test_events),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
