/* Module json (internal/json). Building yajl trees from parser events in bump
 * memory (an arena), with no malloc per value: for JSON that is read as a tree
 * (the kinds without a streaming decoder, `carpenter simulate`'s snapshots) but
 * arrives as events (jdec.h, simulate's own JSON and YAML readers). The trees
 * are ordinary yajl_val trees for carp_json_* lookups, but must never be given
 * to yajl_tree_free: they go with their arena.
 *
 * Numbers follow yajl_tree: the literal text in r, and i and d with their
 * flags when the text reads as a 64-bit integer or a double.
 *
 * A value complete at the top ends the build (*done). Its owner may step
 * in through hooks: starting() before each value (to switch t->mem, to
 * note where it is), complete() with each finished value (to take it out
 * of its container). */
#ifndef CARP_JTREE_H
#define CARP_JTREE_H

#include <stddef.h>

#include <yajl/yajl_tree.h>

#include "carpenter/arena.h"
#include "carpenter/jdec.h"

struct carp_jtree;

struct carp_jtree_hooks {
  /* A value of this type starts at t->depth (0: the top). */
  void (*starting)(struct carp_jtree *t, yajl_type type, void *arg);
  /* v is complete at t->depth: 1 when the hook took it (it goes into no
   * container), 0 to go on, or a negative code that stops the build. */
  int (*complete)(struct carp_jtree *t, yajl_val v, void *arg);
  void *arg;
};

struct carp_jtree_frame {
  yajl_val v;
  size_t start; /* its first member in the scratch arrays */
  char *key;    /* an object's key awaiting its value */
};

struct carp_jtree {
  struct carp_arena *mem; /* where values go; the owner may switch it */
  struct carp_jtree_frame stack[CARP_JDEC_MAX_DEPTH];
  int depth;
  int max_depth; /* at most CARP_JDEC_MAX_DEPTH */
  yajl_val *vals;
  char **keys;
  size_t n, cap;
  struct carp_jtree_hooks hooks;
  yajl_val done; /* the complete top value, when not taken */
  char err[128]; /* the tree's own errors (depth, keys) */
};

void carp_jtree_init(struct carp_jtree *t, struct carp_arena *mem,
                     int max_depth, const struct carp_jtree_hooks *hooks);
/* Forgets a build in progress (the memory stays with the arena). */
void carp_jtree_reset(struct carp_jtree *t);
void carp_jtree_free(struct carp_jtree *t);
/* The key a value at depth d (>= 1) goes under, or NULL. */
const char *carp_jtree_key(const struct carp_jtree *t, int d);

/* Events. Each returns 0, CARP_EPARSE (t->err says why) or a hook's
 * code. number is the literal text; string and key any bytes. */
int carp_jtree_null(struct carp_jtree *t);
int carp_jtree_bool(struct carp_jtree *t, int value);
int carp_jtree_number(struct carp_jtree *t, const char *s, size_t len);
int carp_jtree_string(struct carp_jtree *t, const char *s, size_t len);
int carp_jtree_key_event(struct carp_jtree *t, const char *s, size_t len);
int carp_jtree_start_map(struct carp_jtree *t);
int carp_jtree_start_array(struct carp_jtree *t);
int carp_jtree_end(struct carp_jtree *t);

/* From a jdec handler: v (and, for a container, what it holds) into t.
 * Returns 0, or CARP_EPARSE with t->err when the tree refuses it (too
 * deep; what was built is then incomplete). */
int carp_jtree_jdec(struct carp_jdec *d, struct carp_jtree *t,
                    const struct carp_jval *v);
/* The same for a member or element of a container whose values a jdec
 * handler passes on (its key first, when it has one); nothing once t
 * has failed. */
void carp_jtree_jdec_member(struct carp_jdec *d, struct carp_jtree *t,
                            const struct carp_jval *v);

/* A whole JSON text (comments allowed, one value, as carp_json_parse)
 * into a tree in a, with no malloc per value: for answers read once and
 * dropped, where yajl_tree_parse's malloc per value (and the free of each)
 * cost more than the parse. *out lives as long as a's memory. Returns 0,
 * or CARP_EPARSE with *err (carp_free it) when err is not NULL. */
int carp_jtree_parse(struct carp_arena *a, const char *text, size_t len,
                     yajl_val *out, char **err);
/* The same for an API server's answer: metadata.managedFields, which no
 * caller reads and which is a quarter to a half of an object's bytes, may
 * be left out of the tree (carp_jdec_pass_over); it is validated as
 * strictly as the rest. */
int carp_jtree_parse_kube(struct carp_arena *a, const char *text, size_t len,
                          yajl_val *out, char **err);

#endif
