/* conditions.c: status conditions as operatorpkg keeps them - decode,
 * copy, set (lastTransitionTime moves only when the status changes), the
 * root Ready condition derived from its dependents, and the JSON list a
 * status patch carries. */
#include "carpenter/conditions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/timeutil.h"
#include "carpenter/api_types.h"

static const char *const nodepool_deps[] = {"ValidationSucceeded",
                                            "NodeClassReady"};
static const char *const nodeclaim_deps[] = {"Launched", "Registered",
                                             "Initialized"};
static const char *const nodeclass_deps[] = {
    "ValidationSucceeded", "RegionsReady", "TemplatesReady", "BootstrapReady"};

const struct carp_condset carp_condset_nodepool = {
    CARP_COND_READY, nodepool_deps, CARP_ARRAY_LEN(nodepool_deps)};
const struct carp_condset carp_condset_nodeclaim = {
    CARP_COND_READY, nodeclaim_deps, CARP_ARRAY_LEN(nodeclaim_deps)};
const struct carp_condset carp_condset_nodeclass = {
    CARP_COND_READY, nodeclass_deps, CARP_ARRAY_LEN(nodeclass_deps)};

static const char AWAITING[] = "AwaitingReconciliation";

enum carp_cond_status carp_cond_status_parse(const char *s)
{
  if (s && !strcmp(s, "True"))
    return CARP_COND_TRUE;
  if (s && !strcmp(s, "False"))
    return CARP_COND_FALSE;
  return CARP_COND_UNKNOWN;
}

const char *carp_cond_status_name(enum carp_cond_status s)
{
  switch (s) {
  case CARP_COND_TRUE:
    return "True";
  case CARP_COND_FALSE:
    return "False";
  case CARP_COND_UNKNOWN:
    break;
  }
  return "Unknown";
}

static void cond_cleanup(struct carp_condition *c)
{
  carp_intern_release(c->type);
  carp_intern_release(c->reason);
  carp_free(c->message);
}

void carp_conditions_cleanup(struct carp_conditions *c)
{
  uint32_t i;
  for (i = 0; i < c->n; i++)
    cond_cleanup(&c->items[i]);
  carp_free(c->items);
  c->items = NULL;
  c->n = 0;
}

static int cmp_cond(const void *a, const void *b)
{
  const struct carp_condition *x = a, *y = b;
  return strcmp(x->type, y->type);
}

int carp_conditions_decode(yajl_val arr, const char *path,
                           struct carp_conditions *out, char **err)
{
  size_t i;
  char p[512];
  memset(out, 0, sizeof(*out));
  if (!arr || YAJL_IS_NULL(arr))
    return 0;
  if (!YAJL_IS_ARRAY(arr))
    return carp_api_error(err, path, "must be a list");
  out->items =
      carp_calloc(arr->u.array.len ? arr->u.array.len : 1, sizeof(*out->items));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val c = arr->u.array.values[i];
    const char *type = carp_json_str(c, "type", NULL);
    const char *reason = carp_json_str(c, "reason", NULL);
    const char *msg = carp_json_str(c, "message", NULL);
    struct carp_condition *o;
    int64_t gen = 0, at = 0;
    snprintf(p, sizeof(p), "%s[%zu]", path, i);
    if (!YAJL_IS_OBJECT(c)) {
      carp_conditions_cleanup(out);
      return carp_api_error(err, p, "must be an object");
    }
    if (carp_json_time(c, &at, "lastTransitionTime")) {
      carp_conditions_cleanup(out);
      return carp_api_error(err, p, "lastTransitionTime: not a valid time");
    }
    if (carp_json_get(c, "observedGeneration", NULL) &&
        !YAJL_IS_NULL(carp_json_get(c, "observedGeneration", NULL)) &&
        carp_json_int(c, &gen, "observedGeneration", NULL)) {
      carp_conditions_cleanup(out);
      return carp_api_error(err, p, "observedGeneration: must be an integer");
    }
    if (!type || !*type || carp_conditions_get(out, type))
      continue; /* a list-map: one entry per type */
    o = &out->items[out->n++];
    o->type = carp_interns(type);
    o->status = carp_cond_status_parse(carp_json_str(c, "status", NULL));
    o->reason = carp_interns(reason ? reason : "");
    o->message = carp_strdup(msg ? msg : "");
    o->transition_ms = at;
    o->observed_generation = gen;
  }
  if (out->n > 1)
    qsort(out->items, out->n, sizeof(*out->items), cmp_cond);
  return 0;
}

void carp_conditions_copy(struct carp_conditions *dst,
                          const struct carp_conditions *src)
{
  uint32_t i;
  dst->n = src->n;
  dst->items = NULL;
  if (!src->n)
    return;
  dst->items = carp_calloc(src->n, sizeof(*dst->items));
  for (i = 0; i < src->n; i++) {
    dst->items[i] = src->items[i];
    dst->items[i].type = carp_intern_ref(src->items[i].type);
    dst->items[i].reason = carp_intern_ref(src->items[i].reason);
    dst->items[i].message = carp_strdup(src->items[i].message);
  }
}

const struct carp_condition *
carp_conditions_get(const struct carp_conditions *c, const char *type)
{
  uint32_t i;
  for (i = 0; c && i < c->n; i++)
    if (c->items[i].type && !strcmp(c->items[i].type, type))
      return &c->items[i];
  return NULL;
}

int carp_conditions_is(const struct carp_conditions *c, const char *type,
                       enum carp_cond_status status)
{
  const struct carp_condition *x = carp_conditions_get(c, type);
  return x && x->status == status;
}

int carp_conditions_is_true(const struct carp_conditions *c, const char *type)
{
  return carp_conditions_is(c, type, CARP_COND_TRUE);
}

static int set_one(struct carp_conditions *c, const char *type,
                   enum carp_cond_status status, const char *reason,
                   const char *message, int64_t generation, int64_t now_ms)
{
  struct carp_condition *x =
      (struct carp_condition *)carp_conditions_get(c, type);
  if (!reason || !*reason)
    reason = status == CARP_COND_UNKNOWN ? AWAITING : type;
  if (!message)
    message = "";
  if (x) {
    if (x->status == status && !strcmp(x->reason, reason) &&
        !strcmp(x->message, message) && x->observed_generation == generation)
      return 0;
    if (x->status != status)
      x->transition_ms = now_ms;
    x->status = status;
    if (strcmp(x->reason, reason)) {
      carp_intern_release(x->reason);
      x->reason = carp_interns(reason);
    }
    if (strcmp(x->message, message)) {
      carp_free(x->message);
      x->message = carp_strdup(message);
    }
    x->observed_generation = generation;
    return 1;
  }
  c->items = carp_reallocarray(c->items, c->n + 1, sizeof(*c->items));
  x = &c->items[c->n++];
  x->type = carp_interns(type);
  x->status = status;
  x->reason = carp_interns(reason);
  x->message = carp_strdup(message);
  x->transition_ms = now_ms;
  x->observed_generation = generation;
  qsort(c->items, c->n, sizeof(*c->items), cmp_cond);
  return 1;
}

int carp_conditions_recompute_root(struct carp_conditions *c,
                                   const struct carp_condset *set,
                                   int64_t generation, int64_t now_ms)
{
  const struct carp_condition *first_false = NULL, *first_unknown = NULL;
  const char *missing = NULL;
  size_t i;

  for (i = 0; i < set->ndeps; i++) {
    const struct carp_condition *d = carp_conditions_get(c, set->deps[i]);
    if (!d) {
      if (!first_unknown && !missing)
        missing = set->deps[i];
    } else if (d->status == CARP_COND_FALSE) {
      if (!first_false)
        first_false = d;
    } else if (d->status == CARP_COND_UNKNOWN) {
      if (!first_unknown && !missing)
        first_unknown = d;
    }
  }
  if (first_false)
    return set_one(c, set->root, CARP_COND_FALSE, first_false->reason,
                   first_false->message, generation, now_ms);
  if (first_unknown)
    return set_one(c, set->root, CARP_COND_UNKNOWN, first_unknown->reason,
                   first_unknown->message, generation, now_ms);
  if (missing) {
    struct carp_buf m;
    int rc;
    carp_buf_init(&m, CARP_BUF_UNLIMITED);
    carp_buf_printf(&m, "%s is not set yet", missing);
    rc = set_one(c, set->root, CARP_COND_UNKNOWN, AWAITING, carp_buf_cstr(&m),
                 generation, now_ms);
    carp_buf_free(&m);
    return rc;
  }
  return set_one(c, set->root, CARP_COND_TRUE, set->root, "", generation,
                 now_ms);
}

int carp_conditions_set(struct carp_conditions *c,
                        const struct carp_condset *set, const char *type,
                        enum carp_cond_status status, const char *reason,
                        const char *message, int64_t generation, int64_t now_ms)
{
  int changed = set_one(c, type, status, reason, message, generation, now_ms);
  if (set && strcmp(type, set->root))
    changed |= carp_conditions_recompute_root(c, set, generation, now_ms);
  return changed;
}

int carp_conditions_clear(struct carp_conditions *c, const char *type)
{
  uint32_t i;
  for (i = 0; i < c->n; i++) {
    if (!strcmp(c->items[i].type, type)) {
      cond_cleanup(&c->items[i]);
      memmove(&c->items[i], &c->items[i + 1],
              (c->n - i - 1) * sizeof(*c->items));
      c->n--;
      return 1;
    }
  }
  return 0;
}

void carp_conditions_encode(struct carp_jw *w, const struct carp_conditions *c)
{
  uint32_t i;
  carp_jw_arr(w);
  for (i = 0; i < c->n; i++) {
    const struct carp_condition *x = &c->items[i];
    char ts[CARP_RFC3339_LEN];
    carp_time_format_rfc3339(x->transition_ms, 0, ts);
    carp_jw_obj(w);
    carp_jw_kstr(w, "type", x->type);
    carp_jw_kstr(w, "status", carp_cond_status_name(x->status));
    carp_jw_kstr(w, "reason", x->reason && *x->reason ? x->reason : x->type);
    carp_jw_kstr(w, "message", x->message ? x->message : "");
    carp_jw_kstr(w, "lastTransitionTime", ts);
    if (x->observed_generation > 0)
      carp_jw_kint(w, "observedGeneration", x->observed_generation);
    carp_jw_obj_end(w);
  }
  carp_jw_arr_end(w);
}
