/* tree.c: parser events into yajl trees, handed over in batches.
 *
 * A snapshot of a large cluster is hundreds of megabytes of text: 150,000
 * pods as `kubectl get -o json` prints them is about 850 MB. Parsing all
 * of it into one tree, or even each item with yajl_tree_parse, spends most
 * of the time in malloc and free. Here values are carved from arenas
 * (carp_jtree) that belong to a batch: each item of the document's
 * top-level "items" array goes into the current items batch, which is
 * handed to the sink once it holds enough; the document itself (without
 * its items) goes in a batch of its own when it ends. The sink gives
 * batches back for reuse, so the whole file streams through a few
 * megabytes. The trees are ordinary yajl_val trees (the decoders read them
 * with carp_json_*), but they must never be given to yajl_tree_free. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "sim_int.h"

#define BATCH_ITEMS 64               /* items per batch at most */
#define BATCH_BYTES (256 * 1024 - 1) /* and about this much memory (pipe.c) */

/* ---- batches ---- */

struct sim_batch *sim_batch_new(void)
{
  struct sim_batch *b = CARP_NEW(struct sim_batch);
  carp_arena_init(&b->mem);
  return b;
}

void sim_batch_reset(struct sim_batch *b)
{
  carp_arena_reset(&b->mem);
  b->n = 0;
  b->next = NULL;
}

void sim_batch_free(struct sim_batch *b)
{
  if (!b)
    return;
  carp_arena_free(&b->mem);
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

static int flush_items(struct sim_tree *t)
{
  struct sim_batch *b = t->items;
  if (!b->n)
    return 0;
  t->items = t->sink.fresh(t->sink.arg);
  return t->sink.take(b, t->sink.arg);
}

/* An item of the List is complete. */
static int item_done(struct sim_tree *t, yajl_val v)
{
  batch_add(t->items, v, &t->where, 0, 0);
  t->jt.mem = &t->doc->mem;
  t->where.item++;
  if (t->items->n >= BATCH_ITEMS || t->items->mem.used >= BATCH_BYTES)
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
  t->jt.mem = &t->doc->mem;
  t->had_items = 0;
  t->where.item = SIM_NO_ITEM;
  return t->sink.take(b, t->sink.arg);
}

/* ---- hooks of the tree ---- */

/* A value starts: at the top of a document, as an item of its List (in
 * the items' memory), or as the List's "items" array itself. */
static void starting(struct carp_jtree *jt, yajl_type type, void *arg)
{
  struct sim_tree *t = arg;
  if (jt->depth == 0) {
    t->where.doc++;
    t->where.line = t->line;
    t->where.item = SIM_NO_ITEM;
  } else if (t->in_items && jt->depth == 2) {
    jt->mem = &t->items->mem;
    t->where.line = t->line;
  } else if (type == yajl_t_array && jt->depth == 1 &&
             jt->stack[0].v->type == yajl_t_object && carp_jtree_key(jt, 1) &&
             !strcmp(carp_jtree_key(jt, 1), "items")) {
    t->in_items = 1;
    t->had_items = 1;
    t->where.item = 0;
  }
}

static int complete(struct carp_jtree *jt, yajl_val v, void *arg)
{
  struct sim_tree *t = arg;
  int rc;
  if (jt->depth == 0)
    rc = doc_done(t, v);
  else if (t->in_items && jt->depth == 2)
    rc = item_done(t, v);
  else if (t->in_items && jt->depth == 1) {
    /* The items array itself: its elements are gone already, and the
     * document keeps no "items" member. */
    t->in_items = 0;
    jt->stack[0].key = NULL;
    rc = 0;
  } else {
    return 0;
  }
  return rc ? rc : 1;
}

/* ---- the tree ---- */

void sim_tree_init(struct sim_tree *t, const char *file,
                   const struct sim_sink *sink)
{
  struct carp_jtree_hooks hooks = {starting, complete, t};
  memset(t, 0, sizeof(*t));
  t->where.file = file;
  t->where.item = SIM_NO_ITEM;
  t->sink = *sink;
  t->items = sink->fresh(sink->arg);
  t->doc = sink->fresh(sink->arg);
  carp_jtree_init(&t->jt, &t->doc->mem, SIM_MAX_DEPTH, &hooks);
}

void sim_tree_free(struct sim_tree *t)
{
  sim_batch_free(t->items);
  sim_batch_free(t->doc);
  carp_jtree_free(&t->jt);
  memset(t, 0, sizeof(*t));
}

int sim_tree_finish(struct sim_tree *t)
{
  return flush_items(t);
}

/* The builder's own problems become the tree's. */
static int out(struct sim_tree *t, int rc)
{
  if (rc == CARP_EPARSE && t->jt.err[0])
    snprintf(t->err, sizeof(t->err), "%s", t->jt.err);
  return rc;
}

int sim_tree_null(struct sim_tree *t)
{
  return out(t, carp_jtree_null(&t->jt));
}

int sim_tree_bool(struct sim_tree *t, int value)
{
  return out(t, carp_jtree_bool(&t->jt, value));
}

int sim_tree_number(struct sim_tree *t, const char *s, size_t len)
{
  return out(t, carp_jtree_number(&t->jt, s, len));
}

int sim_tree_string(struct sim_tree *t, const char *s, size_t len)
{
  return out(t, carp_jtree_string(&t->jt, s, len));
}

int sim_tree_key(struct sim_tree *t, const char *s, size_t len)
{
  return out(t, carp_jtree_key_event(&t->jt, s, len));
}

int sim_tree_start_map(struct sim_tree *t)
{
  return out(t, carp_jtree_start_map(&t->jt));
}

int sim_tree_start_array(struct sim_tree *t)
{
  return out(t, carp_jtree_start_array(&t->jt));
}

int sim_tree_end(struct sim_tree *t)
{
  return out(t, carp_jtree_end(&t->jt));
}
