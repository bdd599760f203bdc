/* jtree.c: parser events into yajl trees carved from an arena (see
 * include/carpenter/jtree.h).
 *
 * An open container's values wait in scratch arrays shared by every level
 * (a stack of members); when it closes they are copied into the arena as
 * its keys and values, and the scratch shrinks back. So a tree costs its
 * nodes and strings in the arena, nothing in malloc. */
#include "carpenter/jtree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"

void carp_jtree_init(struct carp_jtree *t, struct carp_arena *mem,
                     int max_depth, const struct carp_jtree_hooks *hooks)
{
  memset(t, 0, sizeof(*t));
  t->mem = mem;
  t->max_depth = max_depth > 0 && max_depth <= CARP_JDEC_MAX_DEPTH
                     ? max_depth
                     : CARP_JDEC_MAX_DEPTH;
  if (hooks)
    t->hooks = *hooks;
}

void carp_jtree_reset(struct carp_jtree *t)
{
  t->depth = 0;
  t->n = 0;
  t->done = NULL;
  t->err[0] = '\0';
}

void carp_jtree_free(struct carp_jtree *t)
{
  carp_free(t->vals);
  carp_free(t->keys);
  t->vals = NULL;
  t->keys = NULL;
  t->n = t->cap = 0;
}

const char *carp_jtree_key(const struct carp_jtree *t, int d)
{
  return d >= 1 && d <= t->depth ? t->stack[d - 1].key : NULL;
}

static char *copy_str(struct carp_jtree *t, const char *s, size_t len)
{
  char *p = carp_arena_raw(t->mem, len + 1);
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

/* A value starts: the hook first, as it may switch the memory. */
static yajl_val node(struct carp_jtree *t, yajl_type type)
{
  yajl_val v;
  if (t->hooks.starting)
    t->hooks.starting(t, type, t->hooks.arg);
  v = carp_arena_alloc(t->mem, sizeof(*v));
  v->type = type;
  return v;
}

/* A complete value: to a hook, into its container, or done. */
static int add(struct carp_jtree *t, yajl_val v)
{
  struct carp_jtree_frame *f;
  if (t->hooks.complete) {
    int rc = t->hooks.complete(t, v, t->hooks.arg);
    if (rc)
      return rc < 0 ? rc : 0;
  }
  if (t->depth == 0) {
    t->done = v;
    return 0;
  }
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

int carp_jtree_null(struct carp_jtree *t)
{
  return add(t, node(t, yajl_t_null));
}

int carp_jtree_bool(struct carp_jtree *t, int value)
{
  return add(t, node(t, value ? yajl_t_true : yajl_t_false));
}

int carp_jtree_number(struct carp_jtree *t, const char *s, size_t len)
{
  yajl_val v = node(t, yajl_t_number);
  char *end;
  v->u.number.r = copy_str(t, s, len);
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

int carp_jtree_string(struct carp_jtree *t, const char *s, size_t len)
{
  yajl_val v = node(t, yajl_t_string);
  v->u.string = copy_str(t, s, len);
  return add(t, v);
}

int carp_jtree_key_event(struct carp_jtree *t, const char *s, size_t len)
{
  struct carp_jtree_frame *f = t->depth ? &t->stack[t->depth - 1] : NULL;
  if (!f || f->v->type != yajl_t_object || f->key) {
    snprintf(t->err, sizeof(t->err), "a key outside a mapping");
    return CARP_EPARSE;
  }
  f->key = copy_str(t, s, len);
  return 0;
}

static int start(struct carp_jtree *t, yajl_type type)
{
  struct carp_jtree_frame *f;
  if (t->depth == t->max_depth) {
    snprintf(t->err, sizeof(t->err), "nested more than %d levels deep",
             t->max_depth);
    return CARP_EPARSE;
  }
  f = &t->stack[t->depth];
  f->v = node(t, type);
  f->start = t->n;
  f->key = NULL;
  t->depth++;
  return 0;
}

int carp_jtree_start_map(struct carp_jtree *t)
{
  return start(t, yajl_t_object);
}

int carp_jtree_start_array(struct carp_jtree *t)
{
  return start(t, yajl_t_array);
}

int carp_jtree_end(struct carp_jtree *t)
{
  struct carp_jtree_frame *f;
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
    const char **k = carp_arena_raw(t->mem, (n ? n : 1) * sizeof(char *));
    yajl_val *vals = carp_arena_raw(t->mem, (n ? n : 1) * sizeof(yajl_val));
    if (n) {
      memcpy(k, t->keys + f->start, n * sizeof(char *));
      memcpy(vals, t->vals + f->start, n * sizeof(yajl_val));
    }
    v->u.object.keys = k;
    v->u.object.values = vals;
    v->u.object.len = n;
  } else {
    yajl_val *vals = carp_arena_raw(t->mem, (n ? n : 1) * sizeof(yajl_val));
    if (n)
      memcpy(vals, t->vals + f->start, n * sizeof(yajl_val));
    v->u.array.values = vals;
    v->u.array.len = n;
  }
  t->n = f->start;
  return add(t, v);
}

/* ---- from a jdec handler ---- */

void carp_jtree_jdec_member(struct carp_jdec *d, struct carp_jtree *t,
                            const struct carp_jval *v)
{
  if (t->err[0])
    return;
  if (!carp_jdec_in_array(d)) {
    size_t n;
    const char *k = carp_jdec_key(d, &n);
    carp_jtree_key_event(t, k, n);
  }
  carp_jtree_jdec(d, t, v);
}

static int jdec_fn(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct carp_jtree *t = ctx;
  if (v->type != CARP_JEND)
    carp_jtree_jdec_member(d, t, v);
  else if (!t->err[0])
    carp_jtree_end(t);
  return 0;
}

int carp_jtree_jdec(struct carp_jdec *d, struct carp_jtree *t,
                    const struct carp_jval *v)
{
  int rc;
  switch (v->type) {
  case CARP_JNULL:
    rc = carp_jtree_null(t);
    break;
  case CARP_JFALSE:
  case CARP_JTRUE:
    rc = carp_jtree_bool(t, v->type == CARP_JTRUE);
    break;
  case CARP_JNUMBER:
    rc = carp_jtree_number(t, v->s, v->len);
    break;
  case CARP_JSTRING:
    rc = carp_jtree_string(t, v->s, v->len);
    break;
  case CARP_JOBJECT:
  case CARP_JARRAY:
    rc = v->type == CARP_JOBJECT ? carp_jtree_start_map(t)
                                 : carp_jtree_start_array(t);
    if (!rc && carp_jdec_enter(d, jdec_fn, t, NULL)) {
      snprintf(t->err, sizeof(t->err), "nested more than %d levels deep",
               CARP_JDEC_MAX_DEPTH);
      rc = CARP_EPARSE;
    }
    break;
  default:
    rc = 0;
    break;
  }
  if (rc && !t->err[0])
    snprintf(t->err, sizeof(t->err), "cannot be built");
  return rc < 0 ? CARP_EPARSE : 0;
}

/* ---- a whole text ---- */

static int parse_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  return carp_jtree_jdec(d, ctx, v);
}

static int parse(struct carp_arena *a, const char *text, size_t len, int kube,
                 yajl_val *out, char **err)
{
  struct carp_jdec d;
  struct carp_jtree t;
  int rc;
  *out = NULL;
  /* Embedded NULs would cut the strings short, as in carp_json_parse. */
  if (memchr(text, '\0', len)) {
    if (err)
      *err = carp_strdup("NUL byte inside JSON text");
    return CARP_EPARSE;
  }
  carp_jtree_init(&t, a, 0, NULL);
  carp_jdec_init(&d, parse_root, &t);
  if (kube)
    carp_jdec_pass_over(&d, "metadata", "managedFields");
  rc = carp_jdec_parse(&d, text, len, err);
  if (!rc && (t.err[0] || !t.done)) {
    if (err)
      *err = carp_strdup(t.err[0] ? t.err : "no JSON value");
    rc = CARP_EPARSE;
  }
  if (!rc)
    *out = t.done;
  carp_jdec_free(&d);
  carp_jtree_free(&t);
  return rc;
}

int carp_jtree_parse(struct carp_arena *a, const char *text, size_t len,
                     yajl_val *out, char **err)
{
  return parse(a, text, len, 0, out, err);
}

int carp_jtree_parse_kube(struct carp_arena *a, const char *text, size_t len,
                          yajl_val *out, char **err)
{
  return parse(a, text, len, 1, out, err);
}
