/* tree.c: parser events into yajl trees, handed over in batches.
 *
 * A snapshot of a large cluster is hundreds of megabytes of text: 150,000
 * pods as `kubectl get -o json` prints them is about 850 MB. Parsing all
 * of it into one tree, or even each item with yajl_tree_parse, spends most
 * of the time in malloc and free. Here values are carved from chunks of
 * memory (bump allocation) that belong to a batch: each item of the
 * document's top-level "items" array goes into the current items batch,
 * which is handed to the sink once it holds enough; the document itself
 * (without its items) goes in a batch of its own when it ends. The sink
 * gives batches back for reuse, so the whole file streams through a few
 * megabytes. The trees are ordinary yajl_val trees (the decoders read them
 * with carp_json_*), but they must never be given to yajl_tree_free.
 *
 * Numbers follow yajl_tree: the literal text in r, and i and d with their
 * flags when the text reads as a 64-bit integer or a double. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "sim_int.h"

#define CHUNK       (1024 * 1024)
#define BATCH_ITEMS 256 /* items per batch at most */

/* ---- memory and batches ---- */

static void *mem_bump(struct sim_mem *m, size_t n)
{
  struct sim_chunk *c;
  n = (n + 15) & ~(size_t)15;
  if (m->nchunks && m->used + n <= m->chunks[m->cur].size) {
    void *p = m->chunks[m->cur].mem + m->used;
    m->used += n;
    return p;
  }
  /* The chunks after cur are free: use the next one if it is large
   * enough, else replace it. */
  if (m->nchunks)
    m->cur++;
  if (m->cur == m->nchunks) {
    m->chunks = carp_reallocarray(m->chunks, m->nchunks + 1, sizeof(*c));
    m->chunks[m->nchunks].mem = NULL;
    m->chunks[m->nchunks].size = 0;
    m->nchunks++;
  }
  c = &m->chunks[m->cur];
  if (c->size < n) {
    carp_free(c->mem);
    c->size = n > CHUNK ? n : CHUNK;
    c->mem = carp_malloc(c->size);
  }
  m->used = n;
  return c->mem;
}

struct sim_batch *sim_batch_new(void)
{
  return CARP_NEW(struct sim_batch);
}

void sim_batch_reset(struct sim_batch *b)
{
  b->mem.cur = 0;
  b->mem.used = 0;
  b->n = 0;
  b->next = NULL;
}

void sim_batch_free(struct sim_batch *b)
{
  size_t i;
  if (!b)
    return;
  for (i = 0; i < b->mem.nchunks; i++)
    carp_free(b->mem.chunks[i].mem);
  carp_free(b->mem.chunks);
  carp_free(b->v);
  carp_free(b);
}

static void batch_add(struct sim_batch *b, yajl_val v,
                      const struct sim_where *w, int doc, int had_items)
{
  struct sim_value *x;
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 64;
    b->v = carp_reallocarray(b->v, b->cap, sizeof(*b->v));
  }
  x = &b->v[b->n++];
  x->v = v;
  x->w = *w;
  x->doc = doc;
  x->had_items = had_items;
}

/* ---- the tree ---- */

void sim_tree_init(struct sim_tree *t, const char *file,
                   const struct sim_sink *sink)
{
  memset(t, 0, sizeof(*t));
  t->where.file = file;
  t->where.item = SIM_NO_ITEM;
  t->sink = *sink;
  t->items = sink->fresh(sink->arg);
  t->doc = sink->fresh(sink->arg);
}

void sim_tree_free(struct sim_tree *t)
{
  sim_batch_free(t->items);
  sim_batch_free(t->doc);
  carp_free(t->vals);
  carp_free(t->keys);
  memset(t, 0, sizeof(*t));
}

static int flush_items(struct sim_tree *t)
{
  struct sim_batch *b = t->items;
  if (!b->n)
    return 0;
  t->items = t->sink.fresh(t->sink.arg);
  return t->sink.take(b, t->sink.arg);
}

int sim_tree_finish(struct sim_tree *t)
{
  return flush_items(t);
}

static void *bump(struct sim_tree *t, size_t n)
{
  return mem_bump(t->in_item ? &t->items->mem : &t->doc->mem, n);
}

static char *bump_str(struct sim_tree *t, const char *s, size_t len)
{
  char *p = bump(t, len + 1);
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

static yajl_val node(struct sim_tree *t, yajl_type type)
{
  yajl_val v = bump(t, sizeof(*v));
  memset(v, 0, sizeof(*v));
  v->type = type;
  return v;
}

/* An item of the List is complete. */
static int item_done(struct sim_tree *t, yajl_val v)
{
  batch_add(t->items, v, &t->where, 0, 0);
  t->in_item = 0;
  t->where.item++;
  if (t->items->n >= BATCH_ITEMS || t->items->mem.cur > 0)
    return flush_items(t);
  return 0;
}

/* The document is complete: its items first, then itself. */
static int doc_done(struct sim_tree *t, yajl_val v)
{
  struct sim_batch *b = t->doc;
  struct sim_where w = t->where;
  int rc = flush_items(t);
  if (rc)
    return rc;
  w.item = SIM_NO_ITEM;
  batch_add(b, v, &w, 1, t->had_items);
  t->doc = t->sink.fresh(t->sink.arg);
  t->had_items = 0;
  t->where.item = SIM_NO_ITEM;
  return t->sink.take(b, t->sink.arg);
}

/* A value starts: at the top of a document, or as an item of its List. */
static void starting(struct sim_tree *t)
{
  if (t->depth == 0) {
    t->where.doc++;
    t->where.line = t->line;
    t->where.item = SIM_NO_ITEM;
  } else if (t->in_items && t->depth == 2) {
    t->in_item = 1;
    t->where.line = t->line;
  }
}

/* A complete value: goes into its container or to the sink. */
static int add(struct sim_tree *t, yajl_val v)
{
  struct sim_frame *f;
  if (t->depth == 0)
    return doc_done(t, v);
  if (t->in_items && t->depth == 2)
    return item_done(t, v);
  f = &t->stack[t->depth - 1];
  if (f->v->type == yajl_t_object && !f->key) {
    snprintf(t->err, sizeof(t->err), "a value without a key");
    return CARP_EPARSE;
  }
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 1024;
    t->vals = carp_reallocarray(t->vals, t->cap, sizeof(*t->vals));
    t->keys = carp_reallocarray(t->keys, t->cap, sizeof(*t->keys));
  }
  t->keys[t->n] = f->key;
  t->vals[t->n] = v;
  t->n++;
  f->key = NULL;
  return 0;
}

int sim_tree_null(struct sim_tree *t)
{
  starting(t);
  return add(t, node(t, yajl_t_null));
}

int sim_tree_bool(struct sim_tree *t, int value)
{
  starting(t);
  return add(t, node(t, value ? yajl_t_true : yajl_t_false));
}

int sim_tree_number(struct sim_tree *t, const char *s, size_t len)
{
  yajl_val v;
  char *end;
  starting(t);
  v = node(t, yajl_t_number);
  v->u.number.r = bump_str(t, s, len);
  errno = 0;
  v->u.number.i = strtoll(v->u.number.r, &end, 10);
  if (!errno && end != v->u.number.r && !*end)
    v->u.number.flags |= YAJL_NUMBER_INT_VALID;
  errno = 0;
  v->u.number.d = strtod(v->u.number.r, &end);
  if (!errno && end != v->u.number.r && !*end)
    v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
  return add(t, v);
}

int sim_tree_string(struct sim_tree *t, const char *s, size_t len)
{
  yajl_val v;
  starting(t);
  v = node(t, yajl_t_string);
  v->u.string = bump_str(t, s, len);
  return add(t, v);
}

int sim_tree_key(struct sim_tree *t, const char *s, size_t len)
{
  struct sim_frame *f = t->depth ? &t->stack[t->depth - 1] : NULL;
  if (!f || f->v->type != yajl_t_object || f->key) {
    snprintf(t->err, sizeof(t->err), "a key outside a mapping");
    return CARP_EPARSE;
  }
  f->key = bump_str(t, s, len);
  return 0;
}

static int start(struct sim_tree *t, yajl_type type)
{
  struct sim_frame *f;
  if (t->depth == SIM_MAX_DEPTH) {
    snprintf(t->err, sizeof(t->err), "nested more than %d levels deep",
             SIM_MAX_DEPTH);
    return CARP_EPARSE;
  }
  starting(t);
  /* The document's "items" array: its elements go one at a time. */
  if (type == yajl_t_array && t->depth == 1 &&
      t->stack[0].v->type == yajl_t_object && t->stack[0].key &&
      !strcmp(t->stack[0].key, "items")) {
    t->in_items = 1;
    t->had_items = 1;
    t->where.item = 0;
  }
  f = &t->stack[t->depth++];
  f->v = node(t, type);
  f->start = t->n;
  f->key = NULL;
  return 0;
}

int sim_tree_start_map(struct sim_tree *t)
{
  return start(t, yajl_t_object);
}

int sim_tree_start_array(struct sim_tree *t)
{
  return start(t, yajl_t_array);
}

int sim_tree_end(struct sim_tree *t)
{
  struct sim_frame *f;
  yajl_val v;
  size_t n;
  if (t->depth == 0) {
    snprintf(t->err, sizeof(t->err), "an end without a start");
    return CARP_EPARSE;
  }
  f = &t->stack[--t->depth];
  v = f->v;
  n = t->n - f->start;
  if (v->type == yajl_t_object) {
    const char **k = bump(t, (n ? n : 1) * sizeof(char *));
    yajl_val *vals = bump(t, (n ? n : 1) * sizeof(yajl_val));
    if (n) {
      memcpy(k, t->keys + f->start, n * sizeof(char *));
      memcpy(vals, t->vals + f->start, n * sizeof(yajl_val));
    }
    v->u.object.keys = k;
    v->u.object.values = vals;
    v->u.object.len = n;
  } else {
    yajl_val *vals = bump(t, (n ? n : 1) * sizeof(yajl_val));
    if (n)
      memcpy(vals, t->vals + f->start, n * sizeof(yajl_val));
    v->u.array.values = vals;
    v->u.array.len = n;
  }
  t->n = f->start;
  if (t->in_items && t->depth == 1) {
    /* The items array itself: its elements are gone already, and the
     * document keeps no "items" member. */
    t->in_items = 0;
    t->stack[0].key = NULL;
    return 0;
  }
  return add(t, v);
}
