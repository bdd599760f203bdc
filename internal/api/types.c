/* types.c: decoders for the pieces every model shares — resource lists,
 * node selector requirements and terms, label selectors, taints and
 * tolerations — and the matching rules that go with them (label selector
 * matching, Kubernetes' ToleratesTaint). Errors name the JSON path. */
#include "carpenter/api_types.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/quantity.h"

int carp_api_error(char **err, const char *path, const char *fmt, ...)
{
  va_list ap;
  struct carp_buf b;
  if (!err)
    return CARP_EPARSE;
  carp_buf_init(&b, 4096);
  carp_buf_printf(&b, "%s: ", path);
  va_start(ap, fmt);
  carp_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  *err = carp_buf_steal(&b, NULL);
  return CARP_EPARSE;
}

/* path + "." + field (or "[i]"), into a small buffer. */
static const char *sub(char *buf, size_t cap, const char *path,
                       const char *field)
{
  snprintf(buf, cap, "%s.%s", path, field);
  return buf;
}

static const char *idx(char *buf, size_t cap, const char *path, size_t i)
{
  snprintf(buf, cap, "%s[%zu]", path, i);
  return buf;
}

/* ---- resources ---- */

static int cmp_res(const void *a, const void *b)
{
  const struct carp_resource *x = a, *y = b;
  return strcmp(x->name, y->name);
}

/* A quantity given as a string or a JSON number. */
static int quantity_of(const struct carp_jval *v, int64_t *milli)
{
  if (v->type == CARP_JSTRING || v->type == CARP_JNUMBER)
    return carp_quantity_parse(v->s, milli);
  return CARP_EPARSE;
}

void carp_resources_dec_begin(struct carp_resources_dec *rd, const char *path)
{
  memset(rd, 0, sizeof(*rd));
  rd->path = path;
}

static int resource_member(struct carp_jdec *d, void *ctx,
                           const struct carp_jval *v)
{
  struct carp_resources_dec *rd = ctx;
  struct carp_resources *out = &rd->r;
  const char *name = carp_jdec_key(d, NULL);
  char p[512];
  int64_t milli;
  if (rd->err)
    return 0;
  if (v->type == CARP_JEND) {
    if (out->nextended > 1)
      qsort(out->extended, out->nextended, sizeof(*out->extended), cmp_res);
    return 0;
  }
  if (quantity_of(v, &milli) || milli < 0) {
    carp_api_error(&rd->err, sub(p, sizeof(p), rd->path, name),
                   "not a valid non-negative quantity");
    return 0;
  }
  if (!strcmp(name, "cpu")) {
    out->cpu = milli;
  } else if (!strcmp(name, "memory")) {
    out->memory = carp_quantity_value(milli);
  } else if (!strcmp(name, "ephemeral-storage")) {
    out->ephemeral = carp_quantity_value(milli);
  } else if (!strcmp(name, "pods")) {
    out->pods = carp_quantity_value(milli);
  } else {
    out->extended = carp_reallocarray(out->extended, out->nextended + 1,
                                      sizeof(*out->extended));
    out->extended[out->nextended].name = carp_interns(name);
    out->extended[out->nextended].value = carp_quantity_value(milli);
    out->nextended++;
  }
  return 0;
}

int carp_resources_dec_value(struct carp_jdec *d, struct carp_resources_dec *rd,
                             const struct carp_jval *v)
{
  if (v->type == CARP_JNULL)
    return 0;
  if (v->type != CARP_JOBJECT) {
    carp_api_error(&rd->err, rd->path, "must be a map of quantities");
    return 0;
  }
  if (carp_jdec_enter(d, resource_member, rd, NULL))
    carp_api_error(&rd->err, rd->path, "nested too deep");
  return 0;
}

int carp_resources_dec_finish(struct carp_resources_dec *rd,
                              struct carp_resources *out, char **err)
{
  if (rd->err) {
    carp_resources_cleanup(&rd->r);
    memset(out, 0, sizeof(*out));
    if (err)
      *err = rd->err;
    else
      carp_free(rd->err);
    rd->err = NULL;
    return CARP_EPARSE;
  }
  *out = rd->r;
  memset(&rd->r, 0, sizeof(rd->r));
  return 0;
}

static int resources_root(struct carp_jdec *d, void *ctx,
                          const struct carp_jval *v)
{
  return carp_resources_dec_value(d, ctx, v);
}

int carp_resources_decode(yajl_val list, const char *path,
                          struct carp_resources *out, char **err)
{
  struct carp_resources_dec rd;
  carp_resources_dec_begin(&rd, path);
  carp_jdec_tree(list, resources_root, &rd);
  return carp_resources_dec_finish(&rd, out, err);
}

void carp_resources_cleanup(struct carp_resources *r)
{
  uint32_t i;
  for (i = 0; i < r->nextended; i++)
    carp_intern_release(r->extended[i].name);
  carp_free(r->extended);
  memset(r, 0, sizeof(*r));
}

static struct carp_resource *find_ext(struct carp_resources *r,
                                      const char *name, int create)
{
  uint32_t i;
  for (i = 0; i < r->nextended; i++)
    if (!strcmp(r->extended[i].name, name))
      return &r->extended[i];
  if (!create)
    return NULL;
  r->extended =
      carp_reallocarray(r->extended, r->nextended + 1, sizeof(*r->extended));
  r->extended[r->nextended].name = carp_interns(name);
  r->extended[r->nextended].value = 0;
  r->nextended++;
  qsort(r->extended, r->nextended, sizeof(*r->extended), cmp_res);
  return find_ext(r, name, 0);
}

void carp_resources_add(struct carp_resources *sum,
                        const struct carp_resources *r)
{
  uint32_t i;
  sum->cpu += r->cpu;
  sum->memory += r->memory;
  sum->ephemeral += r->ephemeral;
  sum->pods += r->pods;
  for (i = 0; i < r->nextended; i++)
    find_ext(sum, r->extended[i].name, 1)->value += r->extended[i].value;
}

void carp_resources_add_extended(struct carp_resources *r, const char *name,
                                 int64_t value)
{
  find_ext(r, name, 1)->value += value;
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

void carp_resources_max(struct carp_resources *acc,
                        const struct carp_resources *r)
{
  uint32_t i;
  acc->cpu = MAX(acc->cpu, r->cpu);
  acc->memory = MAX(acc->memory, r->memory);
  acc->ephemeral = MAX(acc->ephemeral, r->ephemeral);
  acc->pods = MAX(acc->pods, r->pods);
  for (i = 0; i < r->nextended; i++) {
    struct carp_resource *e = find_ext(acc, r->extended[i].name, 1);
    e->value = MAX(e->value, r->extended[i].value);
  }
}

int64_t carp_resources_get(const struct carp_resources *r, const char *name)
{
  uint32_t i;
  if (!strcmp(name, "cpu"))
    return r->cpu;
  if (!strcmp(name, "memory"))
    return r->memory;
  if (!strcmp(name, "ephemeral-storage"))
    return r->ephemeral;
  if (!strcmp(name, "pods"))
    return r->pods;
  for (i = 0; i < r->nextended; i++)
    if (!strcmp(r->extended[i].name, name))
      return r->extended[i].value;
  return 0;
}

void carp_resources_copy(struct carp_resources *dst,
                         const struct carp_resources *src)
{
  uint32_t i;
  *dst = *src;
  dst->extended = NULL;
  if (src->nextended) {
    dst->extended = carp_calloc(src->nextended, sizeof(*dst->extended));
    for (i = 0; i < src->nextended; i++) {
      dst->extended[i].name = carp_intern_ref(src->extended[i].name);
      dst->extended[i].value = src->extended[i].value;
    }
  }
}

/* ---- requirements ---- */

static const char *const op_names[] = {
    "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte",
};

int carp_op_parse(const char *s, int allow_gte, enum carp_op *op)
{
  size_t i;
  for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
    if (!strcmp(s, op_names[i])) {
      if (!allow_gte && (i == CARP_OP_GTE || i == CARP_OP_LTE))
        return CARP_EINVAL;
      *op = (enum carp_op)i;
      return 0;
    }
  }
  return CARP_EINVAL;
}

const char *carp_op_name(enum carp_op op)
{
  return (size_t)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op]
                                                             : "?";
}

void carp_requirement_cleanup(struct carp_requirement *r)
{
  uint32_t i;
  carp_intern_release(r->key);
  for (i = 0; i < r->nvalues; i++)
    carp_intern_release(r->values[i]);
  carp_free(r->values);
  memset(r, 0, sizeof(*r));
}

int carp_requirement_decode(yajl_val v, const char *path, int allow_gte,
                            struct carp_requirement *out, char **err)
{
  const char *key = carp_json_str(v, "key", NULL);
  const char *op = carp_json_str(v, "operator", NULL);
  yajl_val values = carp_json_get(v, "values", NULL);
  char p[512];
  size_t i;
  int64_t minv;

  memset(out, 0, sizeof(*out));
  if (!YAJL_IS_OBJECT(v))
    return carp_api_error(err, path, "must be an object");
  if (!key || !*key)
    return carp_api_error(err, sub(p, sizeof(p), path, "key"), "required");
  if (!op || carp_op_parse(op, allow_gte, &out->op))
    return carp_api_error(err, sub(p, sizeof(p), path, "operator"),
                          "unsupported value \"%s\"", op ? op : "");
  if (values && !YAJL_IS_NULL(values)) {
    if (!YAJL_IS_ARRAY(values))
      return carp_api_error(err, sub(p, sizeof(p), path, "values"),
                            "must be a list of strings");
    out->values = carp_calloc(values->u.array.len ? values->u.array.len : 1,
                              sizeof(char *));
    for (i = 0; i < values->u.array.len; i++) {
      yajl_val s = values->u.array.values[i];
      if (!YAJL_IS_STRING(s)) {
        carp_requirement_cleanup(out);
        return carp_api_error(err, sub(p, sizeof(p), path, "values"),
                              "must be a list of strings");
      }
      out->values[out->nvalues++] = carp_interns(s->u.string);
    }
  }
  if (carp_json_get(v, "minValues", NULL)) {
    if (carp_json_int(v, &minv, "minValues", NULL) || minv < 1 || minv > 50) {
      carp_requirement_cleanup(out);
      return carp_api_error(err, sub(p, sizeof(p), path, "minValues"),
                            "must be an integer from 1 to 50");
    }
    out->min_values = (int32_t)minv;
  }
  out->key = carp_interns(key);
  return 0;
}

void carp_requirements_free(struct carp_requirement *r, uint32_t n)
{
  uint32_t i;
  for (i = 0; i < n; i++)
    carp_requirement_cleanup(&r[i]);
  carp_free(r);
}

int carp_requirements_decode(yajl_val arr, const char *path, int allow_gte,
                             struct carp_requirement **out, uint32_t *n,
                             char **err)
{
  size_t i;
  char p[512];
  *out = NULL;
  *n = 0;
  if (!arr || YAJL_IS_NULL(arr))
    return 0;
  if (!YAJL_IS_ARRAY(arr))
    return carp_api_error(err, path, "must be a list");
  *out = carp_calloc(arr->u.array.len ? arr->u.array.len : 1, sizeof(**out));
  for (i = 0; i < arr->u.array.len; i++) {
    int rc = carp_requirement_decode(arr->u.array.values[i],
                                     idx(p, sizeof(p), path, i), allow_gte,
                                     &(*out)[i], err);
    if (rc) {
      carp_requirements_free(*out, *n);
      *out = NULL;
      *n = 0;
      return rc;
    }
    (*n)++;
  }
  return 0;
}

int carp_term_decode(yajl_val v, const char *path, struct carp_term *out,
                     char **err)
{
  char p[512];
  yajl_val fields = carp_json_arr(v, "matchFields", NULL);
  int rc;
  memset(out, 0, sizeof(*out));
  rc = carp_requirements_decode(carp_json_get(v, "matchExpressions", NULL),
                                sub(p, sizeof(p), path, "matchExpressions"), 0,
                                &out->reqs, &out->n, err);
  if (rc)
    return rc;
  /* matchFields supports only metadata.name, which pins a pod to one
   * existing node: keep it as a requirement on the hostname label. */
  if (fields && fields->u.array.len) {
    struct carp_requirement *f;
    uint32_t nf = 0, i;
    rc = carp_requirements_decode(
        fields, sub(p, sizeof(p), path, "matchFields"), 0, &f, &nf, err);
    if (rc) {
      carp_term_cleanup(out);
      return rc;
    }
    out->reqs = carp_reallocarray(out->reqs, out->n + nf, sizeof(*out->reqs));
    for (i = 0; i < nf; i++) {
      if (strcmp(f[i].key, "metadata.name") == 0) {
        carp_intern_release(f[i].key);
        f[i].key = carp_interns("kubernetes.io/hostname");
      }
      out->reqs[out->n++] = f[i];
    }
    carp_free(f);
  }
  return 0;
}

void carp_term_cleanup(struct carp_term *t)
{
  carp_requirements_free(t->reqs, t->n);
  memset(t, 0, sizeof(*t));
}

/* ---- label selectors ---- */

int carp_label_selector_decode(yajl_val v, const char *path,
                               struct carp_label_selector *out, char **err)
{
  char p[512];
  int rc;
  memset(out, 0, sizeof(*out));
  if (!v || YAJL_IS_NULL(v))
    return 0;
  if (!YAJL_IS_OBJECT(v))
    return carp_api_error(err, path, "must be an object");
  out->present = 1;
  if (carp_kvset_from_object(carp_json_get(v, "matchLabels", NULL), NULL,
                             &out->match_labels))
    return carp_api_error(err, sub(p, sizeof(p), path, "matchLabels"),
                          "must be a map of strings");
  rc = carp_requirements_decode(carp_json_get(v, "matchExpressions", NULL),
                                sub(p, sizeof(p), path, "matchExpressions"), 0,
                                &out->exprs, &out->nexprs, err);
  if (rc) {
    carp_label_selector_cleanup(out);
    return rc;
  }
  return 0;
}

void carp_label_selector_cleanup(struct carp_label_selector *s)
{
  carp_kvset_release(s->match_labels);
  carp_requirements_free(s->exprs, s->nexprs);
  memset(s, 0, sizeof(*s));
}

static int value_in(const struct carp_requirement *r, const char *v)
{
  uint32_t i;
  for (i = 0; i < r->nvalues; i++)
    if (!strcmp(r->values[i], v))
      return 1;
  return 0;
}

int carp_label_selector_matches(const struct carp_label_selector *s,
                                const struct carp_kvset *labels)
{
  uint32_t i;
  if (!s->present)
    return 0;
  if (s->match_labels) {
    for (i = 0; i < s->match_labels->n; i++) {
      const char *v = carp_kvset_get(labels, s->match_labels->kv[i].key);
      if (!v || strcmp(v, s->match_labels->kv[i].value))
        return 0;
    }
  }
  for (i = 0; i < s->nexprs; i++) {
    const struct carp_requirement *r = &s->exprs[i];
    const char *v = carp_kvset_get(labels, r->key);
    switch (r->op) {
    case CARP_OP_IN:
      if (!v || !value_in(r, v))
        return 0;
      break;
    case CARP_OP_NOT_IN:
      if (v && value_in(r, v))
        return 0;
      break;
    case CARP_OP_EXISTS:
      if (!v)
        return 0;
      break;
    case CARP_OP_DOES_NOT_EXIST:
      if (v)
        return 0;
      break;
    default:
      return 0; /* Gt/Lt are not label selector operators */
    }
  }
  return 1;
}

/* ---- taints and tolerations ---- */

int carp_taint_effect_parse(const char *s, enum carp_taint_effect *e)
{
  if (!s || !*s)
    *e = CARP_EFFECT_ANY;
  else if (!strcmp(s, "NoSchedule"))
    *e = CARP_EFFECT_NO_SCHEDULE;
  else if (!strcmp(s, "PreferNoSchedule"))
    *e = CARP_EFFECT_PREFER_NO_SCHEDULE;
  else if (!strcmp(s, "NoExecute"))
    *e = CARP_EFFECT_NO_EXECUTE;
  else
    return CARP_EINVAL;
  return 0;
}

const char *carp_taint_effect_name(enum carp_taint_effect e)
{
  switch (e) {
  case CARP_EFFECT_NO_SCHEDULE:
    return "NoSchedule";
  case CARP_EFFECT_PREFER_NO_SCHEDULE:
    return "PreferNoSchedule";
  case CARP_EFFECT_NO_EXECUTE:
    return "NoExecute";
  case CARP_EFFECT_ANY:
    break;
  }
  return "";
}

void carp_taints_free(struct carp_taint *t, uint32_t n)
{
  uint32_t i;
  for (i = 0; i < n; i++) {
    carp_intern_release(t[i].key);
    carp_intern_release(t[i].value);
  }
  carp_free(t);
}

void carp_taints_dec_init(struct carp_taints_dec *td)
{
  memset(td, 0, sizeof(*td));
  carp_buf_init(&td->strs, CARP_BUF_UNLIMITED);
}

void carp_taints_dec_free(struct carp_taints_dec *td)
{
  carp_buf_free(&td->strs);
  carp_free(td->items);
  carp_free(td->err);
  memset(td, 0, sizeof(*td));
}

void carp_taints_dec_begin(struct carp_taints_dec *td, const char *path)
{
  td->path = path;
  carp_buf_reset(&td->strs);
  td->n = 0;
  CARP_FREE(&td->err);
}

enum { T_KEY = 0, T_VALUE, T_EFFECT };

static int taint_member(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct carp_taints_dec *td = ctx;
  int f = carp_jdec_field(d);
  char p[512], q[512];
  const char *key;
  if (v->type != CARP_JEND) {
    if (f == T_EFFECT)
      td->cur_effect_ok = v->type == CARP_JSTRING &&
                          !carp_taint_effect_parse(v->s, &td->cur_effect) &&
                          td->cur_effect != CARP_EFFECT_ANY;
    else if (f >= 0 && v->type == CARP_JSTRING) {
      td->cur[f] = td->strs.len;
      td->cur_have |= 1u << f;
      carp_buf_append(&td->strs, v->s, v->len + 1);
    }
    return 0;
  }
  idx(p, sizeof(p), td->path, td->cur_index);
  key = td->cur_have & 1u << T_KEY ? td->strs.ptr + td->cur[T_KEY] : "";
  if (!*key) {
    carp_api_error(&td->err, sub(q, sizeof(q), p, "key"), "required");
    return 0;
  }
  if (!td->cur_effect_ok) {
    carp_api_error(&td->err, sub(q, sizeof(q), p, "effect"),
                   "must be NoSchedule, PreferNoSchedule or NoExecute");
    return 0;
  }
  if (td->n == td->cap) {
    td->cap = td->cap ? td->cap * 2 : 4;
    td->items = carp_reallocarray(td->items, td->cap, sizeof(*td->items));
  }
  td->items[td->n].key = td->cur[T_KEY];
  td->items[td->n].value =
      td->cur_have & 1u << T_VALUE ? td->cur[T_VALUE] : (size_t)-1;
  td->items[td->n].effect = td->cur_effect;
  td->n++;
  return 0;
}

static int taint_element(struct carp_jdec *d, void *ctx,
                         const struct carp_jval *v)
{
  static const char *const keys[] = {"key", "value", "effect", NULL};
  struct carp_taints_dec *td = ctx;
  char p[512], q[512];
  if (v->type == CARP_JEND || td->err)
    return 0;
  td->cur_index = carp_jdec_index(d);
  td->cur_have = 0;
  td->cur_effect_ok = 0;
  if (v->type != CARP_JOBJECT) {
    /* No key to find in it. */
    idx(p, sizeof(p), td->path, td->cur_index);
    carp_api_error(&td->err, sub(q, sizeof(q), p, "key"), "required");
    return 0;
  }
  if (carp_jdec_enter(d, taint_member, td, keys))
    carp_api_error(&td->err, td->path, "nested too deep");
  return 0;
}

int carp_taints_dec_value(struct carp_jdec *d, struct carp_taints_dec *td,
                          const struct carp_jval *v)
{
  if (v->type == CARP_JNULL)
    return 0;
  if (v->type != CARP_JARRAY) {
    carp_api_error(&td->err, td->path, "must be a list");
    return 0;
  }
  if (carp_jdec_enter(d, taint_element, td, NULL))
    carp_api_error(&td->err, td->path, "nested too deep");
  return 0;
}

int carp_taints_dec_finish(struct carp_taints_dec *td, struct carp_taint **out,
                           uint32_t *n, char **err)
{
  uint32_t i;
  *out = NULL;
  *n = 0;
  if (td->err) {
    if (err)
      *err = td->err;
    else
      carp_free(td->err);
    td->err = NULL;
    return CARP_EPARSE;
  }
  if (!td->n)
    return 0;
  *out = carp_calloc(td->n, sizeof(**out));
  for (i = 0; i < td->n; i++) {
    const struct carp_taints_dec_item *t = &td->items[i];
    (*out)[i].key = carp_interns(td->strs.ptr + t->key);
    (*out)[i].value =
        carp_interns(t->value == (size_t)-1 ? "" : td->strs.ptr + t->value);
    (*out)[i].effect = td->items[i].effect;
  }
  *n = td->n;
  return 0;
}

static int taints_root(struct carp_jdec *d, void *ctx,
                       const struct carp_jval *v)
{
  return carp_taints_dec_value(d, ctx, v);
}

int carp_taints_decode(yajl_val arr, const char *path, struct carp_taint **out,
                       uint32_t *n, char **err)
{
  struct carp_taints_dec td;
  int rc;
  carp_taints_dec_init(&td);
  carp_taints_dec_begin(&td, path);
  carp_jdec_tree(arr, taints_root, &td);
  rc = carp_taints_dec_finish(&td, out, n, err);
  carp_taints_dec_free(&td);
  return rc;
}

void carp_tolerations_free(struct carp_toleration *t, uint32_t n)
{
  uint32_t i;
  for (i = 0; i < n; i++) {
    carp_intern_release(t[i].key);
    carp_intern_release(t[i].value);
  }
  carp_free(t);
}

int carp_tolerations_decode(yajl_val arr, const char *path,
                            struct carp_toleration **out, uint32_t *n,
                            char **err)
{
  size_t i;
  char p[512], q[512];
  *out = NULL;
  *n = 0;
  if (!arr || YAJL_IS_NULL(arr))
    return 0;
  if (!YAJL_IS_ARRAY(arr))
    return carp_api_error(err, path, "must be a list");
  *out = carp_calloc(arr->u.array.len ? arr->u.array.len : 1, sizeof(**out));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val t = arr->u.array.values[i];
    const char *key = carp_json_str(t, "key", NULL);
    const char *op = carp_json_str(t, "operator", NULL);
    const char *value = carp_json_str(t, "value", NULL);
    const char *effect = carp_json_str(t, "effect", NULL);
    struct carp_toleration *o = &(*out)[*n];
    int64_t secs;
    idx(p, sizeof(p), path, i);
    if (op && strcmp(op, "Exists") && strcmp(op, "Equal")) {
      carp_tolerations_free(*out, *n);
      *out = NULL;
      *n = 0;
      return carp_api_error(err, sub(q, sizeof(q), p, "operator"),
                            "must be Exists or Equal");
    }
    if (carp_taint_effect_parse(effect, &o->effect)) {
      carp_tolerations_free(*out, *n);
      *out = NULL;
      *n = 0;
      return carp_api_error(err, sub(q, sizeof(q), p, "effect"),
                            "must be NoSchedule, PreferNoSchedule or "
                            "NoExecute");
    }
    o->exists = op && !strcmp(op, "Exists");
    o->key = carp_interns(key ? key : "");
    o->value = carp_interns(value ? value : "");
    o->seconds =
        carp_json_int(t, &secs, "tolerationSeconds", NULL) == 0 ? secs : -1;
    (*n)++;
  }
  return 0;
}

int carp_toleration_tolerates(const struct carp_toleration *tol,
                              const struct carp_taint *taint)
{
  if (tol->effect != CARP_EFFECT_ANY && tol->effect != taint->effect)
    return 0;
  /* An empty key with Exists matches every taint. */
  if (tol->key[0] && strcmp(tol->key, taint->key))
    return 0;
  if (tol->exists)
    return 1;
  return strcmp(tol->value, taint->value) == 0;
}

int carp_tolerates_all(const struct carp_toleration *tols, uint32_t ntols,
                       const struct carp_taint *taints, uint32_t ntaints,
                       int prefer, const struct carp_taint **untolerated)
{
  uint32_t i, j;
  for (i = 0; i < ntaints; i++) {
    int ok = 0;
    if (taints[i].effect == CARP_EFFECT_PREFER_NO_SCHEDULE && !prefer)
      continue;
    for (j = 0; j < ntols && !ok; j++)
      ok = carp_toleration_tolerates(&tols[j], &taints[i]);
    if (!ok) {
      if (untolerated)
        *untolerated = &taints[i];
      return 0;
    }
  }
  return 1;
}
