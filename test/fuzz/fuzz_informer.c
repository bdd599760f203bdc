/* Fuzz target: the informer's decoding of what the API server sends (list
 * pages and watch events, internal/informer/decode.c) for a kind decoded
 * from parser events (Pod, Node) and kinds decoded from trees (PDB,
 * DaemonSet). The first byte picks the kind and the shape; the rest is
 * the text. As a third shape, an object alone: where it is JSON, a Pod or
 * a Node must decode to the same thing (or the same error) from its tree
 * (kind->decode) as from the page decoder's events - abort otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../internal/informer/informer_int.h"
#include "../unit/decode_describe.h"
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/jdec.h"
#include "carpenter/json.h"
#include "fuzz.h"

static const struct carp_kind *const kinds[] = {
    &carp_kind_pod, &carp_kind_node, &carp_kind_pdb, &carp_kind_daemonset};

struct seen {
  const struct carp_kind *kind;
  FILE *out; /* descriptions, or NULL */
};

static void on_item(struct inf_obj *o, void *arg)
{
  struct seen *s = arg;
  if (s->out)
    dd_object(s->out, s->kind->name, o->obj ? 0 : CARP_EPARSE, o->obj, o->err);
  carp_obj_unref(o->obj);
  carp_free(o->err);
}

static void page(struct inf_dec *dec, const char *text, size_t len, FILE *out,
                 const struct carp_kind *k)
{
  struct inf_page pg;
  struct seen s = {k, out};
  char *err = NULL;
  memset(&pg, 0, sizeof(pg));
  if (inf_dec_page(dec, text, len, &pg, on_item, &s, &err) && out)
    fprintf(out, "page refused: %s\n", err ? err : "");
  carp_free(err);
  carp_free(pg.rv);
  carp_free(pg.cont);
}

static void event(struct inf_dec *dec, const char *text, size_t len)
{
  struct inf_event ev;
  struct inf_obj o;
  char *err = NULL;
  if (inf_dec_event(dec, text, len, &ev, &err) == 0 &&
      (ev.t == INF_ADDED || ev.t == INF_MODIFIED)) {
    inf_dec_event_object(dec, &o);
    carp_obj_unref(o.obj);
    carp_free(o.err);
  }
  carp_free(err);
}

static int skip_all(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  (void)d;
  (void)ctx;
  (void)v;
  return 0;
}

/* The tree decode and the page decoder agree on one object, for text
 * that is one JSON value also inside a list (yajl lets an unfinished
 * token after a document's value go, but not inside a list). */
static void same(const struct carp_kind *k, const char *text, size_t len)
{
  struct inf_dec *dec;
  struct carp_buf wrapped;
  struct carp_objmeta *m = NULL;
  struct carp_jdec d;
  char *err = NULL, *a = NULL, *b = NULL;
  size_t alen, blen;
  yajl_val v;
  FILE *f;
  int rc;
  carp_buf_init(&wrapped, CARP_BUF_UNLIMITED);
  carp_buf_puts(&wrapped, "{\"items\":[");
  carp_buf_append(&wrapped, text, len);
  carp_buf_puts(&wrapped, "\n]}"); /* after a // comment */
  carp_jdec_init(&d, skip_all, NULL);
  rc = carp_jdec_parse(&d, wrapped.ptr, wrapped.len, NULL);
  carp_jdec_free(&d);
  if (rc || carp_json_parse(text, len, &v, NULL)) {
    carp_buf_free(&wrapped);
    return;
  }
  f = open_memstream(&a, &alen);
  rc = k->decode(v, &m, &err);
  dd_object(f, k->name, rc, m, err);
  fclose(f);
  if (!rc)
    carp_obj_unref(m);
  carp_free(err);
  carp_json_free(v);

  dec = inf_dec_new(k);
  f = open_memstream(&b, &blen);
  page(dec, wrapped.ptr, wrapped.len, f, k);
  fclose(f);
  inf_dec_free(dec);
  carp_buf_free(&wrapped);
  if (strcmp(a, b)) {
    size_t i;
    fprintf(stderr, "tree decode:\n%s\npage decoder:\n%s\ninput:\n", a, b);
    for (i = 0; i < len; i++)
      fprintf(stderr,
              (unsigned char)text[i] < 0x20 || text[i] == '\\' ? "\\x%02x"
                                                               : "%c",
              (unsigned char)text[i]);
    fprintf(stderr, "\n");
    abort();
  }
  free(a); /* open_memstream's, from libc */
  free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const struct carp_kind *k;
  const char *text = (const char *)data + 1;
  struct inf_dec *dec;
  if (size < 1)
    return 0;
  k = kinds[data[0] % 4];
  switch ((data[0] >> 2) % 3) {
  case 0:
    dec = inf_dec_new(k);
    page(dec, text, size - 1, NULL, k);
    inf_dec_free(dec);
    break;
  case 1:
    dec = inf_dec_new(k);
    event(dec, text, size - 1);
    inf_dec_free(dec);
    break;
  default:
    if (k == &carp_kind_pod || k == &carp_kind_node)
      same(k, text, size - 1);
    break;
  }
  return 0;
}
