/* claimspec.c: the spec NodeClaims and NodePool templates share -
 * nodeClassRef, requirements, taints, startup taints, expireAfter (default
 * 720h), terminationGracePeriod and, for NodeClaims, resources.requests -
 * decoded leniently (a requirement with an unknown operator or a taint
 * with an unknown effect is dropped; validation reports it), compared, and
 * freed. Also the small typed-field helpers of api_int.h. */
#include <stdio.h>
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/nodepool.h"
#include "carpenter/quantity.h"

int api_keep_annotation(const char *key)
{
  return !strncmp(key, "karpenter.sh/", 13) ||
         !strncmp(key, "carpenter.dev/", 14);
}

static yajl_val member(yajl_val obj, const char *key)
{
  yajl_val x = carp_json_get(obj, key, NULL);
  return x && !YAJL_IS_NULL(x) ? x : NULL;
}

static int type_error(const char *path, const char *key, const char *what,
                      char **err)
{
  char p[512];
  snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", key);
  return carp_api_error(err, p, "must be %s", what);
}

int api_str(yajl_val obj, const char *key, const char *path, const char **out,
            char **err)
{
  yajl_val x = member(obj, key);
  *out = NULL;
  if (!x)
    return 0;
  if (!YAJL_IS_STRING(x))
    return type_error(path, key, "a string", err);
  *out = x->u.string;
  return 0;
}

int api_obj(yajl_val obj, const char *key, const char *path, yajl_val *out,
            char **err)
{
  yajl_val x = member(obj, key);
  *out = NULL;
  if (!x)
    return 0;
  if (!YAJL_IS_OBJECT(x))
    return type_error(path, key, "an object", err);
  *out = x;
  return 0;
}

int api_arr(yajl_val obj, const char *key, const char *path, yajl_val *out,
            char **err)
{
  yajl_val x = member(obj, key);
  *out = NULL;
  if (!x)
    return 0;
  if (!YAJL_IS_ARRAY(x))
    return type_error(path, key, "a list", err);
  *out = x;
  return 0;
}

int api_int(yajl_val obj, const char *key, const char *path, int *present,
            int64_t *out, char **err)
{
  yajl_val x = member(obj, key);
  *present = 0;
  if (!x)
    return 0;
  if (!YAJL_IS_INTEGER(x))
    return type_error(path, key, "an integer", err);
  *present = 1;
  *out = YAJL_GET_INTEGER(x);
  return 0;
}

int api_bool(yajl_val obj, const char *key, const char *path, int *present,
             int *out, char **err)
{
  yajl_val x = member(obj, key);
  *present = 0;
  if (!x)
    return 0;
  if (!YAJL_IS_TRUE(x) && !YAJL_IS_FALSE(x))
    return type_error(path, key, "a boolean", err);
  *present = 1;
  *out = YAJL_IS_TRUE(x);
  return 0;
}

int api_resources(yajl_val obj, const char *path, struct carp_resources *out,
                  unsigned *present, char **err)
{
  size_t i;
  char p[512];
  memset(out, 0, sizeof(*out));
  if (present)
    *present = 0;
  if (!obj)
    return 0;
  for (i = 0; i < obj->u.object.len; i++) {
    const char *name = obj->u.object.keys[i];
    yajl_val x = obj->u.object.values[i];
    const char *text;
    int64_t milli;
    if (YAJL_IS_STRING(x))
      text = x->u.string;
    else if (YAJL_IS_NUMBER(x))
      text = x->u.number.r;
    else {
      carp_resources_cleanup(out);
      snprintf(p, sizeof(p), "%s[%s]", path, name);
      return carp_api_error(err, p, "must be a quantity");
    }
    /* An unreadable quantity reads as 0 (fail closed for limits);
     * validation reports it. */
    if (carp_quantity_parse(text, &milli) || milli < 0)
      milli = 0;
    if (!strcmp(name, "cpu")) {
      out->cpu = milli;
      if (present)
        *present |= CARP_LIMIT_CPU;
    } else if (!strcmp(name, "memory")) {
      out->memory = carp_quantity_value(milli);
      if (present)
        *present |= CARP_LIMIT_MEMORY;
    } else if (!strcmp(name, "ephemeral-storage")) {
      out->ephemeral = carp_quantity_value(milli);
      if (present)
        *present |= CARP_LIMIT_EPHEMERAL;
    } else if (!strcmp(name, "pods")) {
      out->pods = carp_quantity_value(milli);
      if (present)
        *present |= CARP_LIMIT_PODS;
    } else {
      /* carp_resources_add keeps extended names sorted and unique. */
      struct carp_resources one;
      struct carp_resource r;
      memset(&one, 0, sizeof(one));
      r.name = name;
      r.value = carp_quantity_value(milli);
      one.nextended = 1;
      one.extended = &r;
      carp_resources_add(out, &one);
    }
  }
  return 0;
}

int api_strlist(yajl_val obj, const char *key, const char *path,
                struct carp_strlist *out, char **err)
{
  yajl_val arr;
  size_t i;
  char p[512];
  memset(out, 0, sizeof(*out));
  if (api_arr(obj, key, path, &arr, err))
    return CARP_EPARSE;
  if (!arr || !arr->u.array.len)
    return 0;
  out->v = carp_calloc(arr->u.array.len, sizeof(*out->v));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val x = arr->u.array.values[i];
    if (!YAJL_IS_STRING(x)) {
      carp_strlist_cleanup(out);
      snprintf(p, sizeof(p), "%s.%s[%zu]", path, key, i);
      return carp_api_error(err, p, "must be a string");
    }
    out->v[out->n++] = carp_interns(x->u.string);
  }
  return 0;
}

int api_decimal_nano(const char *s, int64_t *out)
{
  int64_t whole = 0, frac = 0;
  int digits = 0, fd = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++, digits++) {
    if (whole > 999999999)
      return CARP_EPARSE;
    whole = whole * 10 + (*p - '0');
  }
  if (!digits)
    return CARP_EPARSE;
  if (*p == '.') {
    for (p++; *p >= '0' && *p <= '9'; p++) {
      if (++fd > 9)
        return CARP_EPARSE;
      frac = frac * 10 + (*p - '0');
    }
    if (!fd)
      return CARP_EPARSE;
  }
  if (*p || whole > 999999999)
    return CARP_EPARSE;
  for (; fd < 9; fd++)
    frac *= 10;
  *out = whole * 1000000000LL + frac;
  return 0;
}

int api_bytes(const char *s, int64_t *out)
{
  int64_t milli;
  *out = 0;
  if (!s || carp_quantity_parse(s, &milli) || milli < 0)
    return CARP_EPARSE;
  *out = carp_quantity_value(milli);
  return 0;
}

/* ---- the shared spec ---- */

void api_claim_spec_cleanup(struct carp_claim_spec *s)
{
  carp_intern_release(s->node_class_ref.group);
  carp_intern_release(s->node_class_ref.kind);
  carp_intern_release(s->node_class_ref.name);
  carp_requirements_free(s->requirements, s->nrequirements);
  carp_taints_free(s->taints, s->ntaints);
  carp_taints_free(s->startup_taints, s->nstartup_taints);
  carp_resources_cleanup(&s->requests);
  memset(s, 0, sizeof(*s));
}

static int decode_requirements(yajl_val arr, const char *path,
                               struct carp_claim_spec *out, char **err)
{
  size_t i, j;
  char p[512];
  if (!arr)
    return 0;
  out->requirements = carp_calloc(arr->u.array.len ? arr->u.array.len : 1,
                                  sizeof(*out->requirements));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val r = arr->u.array.values[i];
    const char *key, *op;
    yajl_val values;
    int64_t minv = 0;
    int has_min;
    enum carp_op o;
    struct carp_requirement *q;
    snprintf(p, sizeof(p), "%s[%zu]", path, i);
    if (!YAJL_IS_OBJECT(r))
      return carp_api_error(err, p, "must be an object");
    if (api_str(r, "key", p, &key, err) ||
        api_str(r, "operator", p, &op, err) ||
        api_arr(r, "values", p, &values, err) ||
        api_int(r, "minValues", p, &has_min, &minv, err))
      return CARP_EPARSE;
    for (j = 0; values && j < values->u.array.len; j++)
      if (!YAJL_IS_STRING(values->u.array.values[j])) {
        char pv[600];
        snprintf(pv, sizeof(pv), "%s.values[%zu]", p, j);
        return carp_api_error(err, pv, "must be a string");
      }
    if (!key || !*key || !op || carp_op_parse(op, 1, &o))
      continue; /* invalid: reported by validation */
    q = &out->requirements[out->nrequirements++];
    q->key = carp_interns(key);
    q->op = o;
    q->nvalues = values ? (uint32_t)values->u.array.len : 0;
    q->values = carp_calloc(q->nvalues ? q->nvalues : 1, sizeof(char *));
    for (j = 0; j < q->nvalues; j++)
      q->values[j] = carp_interns(values->u.array.values[j]->u.string);
    q->min_values = !has_min    ? 0
                    : minv > 50 ? 50
                    : minv < 0  ? 0
                                : (int32_t)minv;
  }
  return 0;
}

static int decode_taints(yajl_val arr, const char *path,
                         struct carp_taint **out, uint32_t *n, char **err)
{
  size_t i;
  char p[512];
  *out = NULL;
  *n = 0;
  if (!arr)
    return 0;
  *out = carp_calloc(arr->u.array.len ? arr->u.array.len : 1, sizeof(**out));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val t = arr->u.array.values[i];
    const char *key, *value, *effect, *added;
    enum carp_taint_effect e;
    snprintf(p, sizeof(p), "%s[%zu]", path, i);
    if (!YAJL_IS_OBJECT(t))
      return carp_api_error(err, p, "must be an object");
    if (api_str(t, "key", p, &key, err) ||
        api_str(t, "value", p, &value, err) ||
        api_str(t, "effect", p, &effect, err) ||
        api_str(t, "timeAdded", p, &added, err))
      return CARP_EPARSE;
    if (!key || !*key || !effect || carp_taint_effect_parse(effect, &e) ||
        e == CARP_EFFECT_ANY)
      continue;
    (*out)[*n].key = carp_interns(key);
    (*out)[*n].value = carp_interns(value ? value : "");
    (*out)[*n].effect = e;
    (*n)++;
  }
  return 0;
}

int api_claim_spec_decode(yajl_val spec, const char *path, int with_requests,
                          struct carp_claim_spec *out, char **err)
{
  char p[512];
  yajl_val ref, reqs, taints, startup, res = NULL, requests = NULL;
  const char *group = NULL, *kind = NULL, *name = NULL, *expire, *tgp;
  int64_t ms;

  memset(out, 0, sizeof(*out));
  out->expire_after_ms = CARP_DEFAULT_EXPIRE_AFTER_MS;
  out->termination_grace_ms = CARP_DURATION_NEVER;
  snprintf(p, sizeof(p), "%s.nodeClassRef", path);
  if (api_obj(spec, "nodeClassRef", path, &ref, err) ||
      api_str(ref, "group", p, &group, err) ||
      api_str(ref, "kind", p, &kind, err) ||
      api_str(ref, "name", p, &name, err) ||
      api_arr(spec, "requirements", path, &reqs, err) ||
      api_arr(spec, "taints", path, &taints, err) ||
      api_arr(spec, "startupTaints", path, &startup, err) ||
      api_str(spec, "expireAfter", path, &expire, err) ||
      api_str(spec, "terminationGracePeriod", path, &tgp, err))
    return CARP_EPARSE;
  if (with_requests) {
    snprintf(p, sizeof(p), "%s.resources", path);
    if (api_obj(spec, "resources", path, &res, err) ||
        api_obj(res, "requests", p, &requests, err))
      return CARP_EPARSE;
  }
  out->node_class_ref.group = carp_interns(group ? group : "");
  out->node_class_ref.kind = carp_interns(kind ? kind : "");
  out->node_class_ref.name = carp_interns(name ? name : "");
  if (expire && carp_duration_parse(expire, 1, &ms) == 0)
    out->expire_after_ms = ms;
  if (tgp && carp_duration_parse(tgp, 0, &ms) == 0)
    out->termination_grace_ms = ms;
  snprintf(p, sizeof(p), "%s.requirements", path);
  if (decode_requirements(reqs, p, out, err))
    goto fail;
  snprintf(p, sizeof(p), "%s.taints", path);
  if (decode_taints(taints, p, &out->taints, &out->ntaints, err))
    goto fail;
  snprintf(p, sizeof(p), "%s.startupTaints", path);
  if (decode_taints(startup, p, &out->startup_taints, &out->nstartup_taints,
                    err))
    goto fail;
  snprintf(p, sizeof(p), "%s.resources.requests", path);
  if (api_resources(requests, p, &out->requests, NULL, err))
    goto fail;
  return 0;
fail:
  api_claim_spec_cleanup(out);
  return CARP_EPARSE;
}

static int requirement_equal(const struct carp_requirement *a,
                             const struct carp_requirement *b)
{
  uint32_t i;
  if (a->key != b->key || a->op != b->op || a->nvalues != b->nvalues ||
      a->min_values != b->min_values)
    return 0;
  for (i = 0; i < a->nvalues; i++)
    if (a->values[i] != b->values[i])
      return 0;
  return 1;
}

static int taints_equal(const struct carp_taint *a, uint32_t na,
                        const struct carp_taint *b, uint32_t nb)
{
  uint32_t i;
  if (na != nb)
    return 0;
  for (i = 0; i < na; i++)
    if (a[i].key != b[i].key || a[i].value != b[i].value ||
        a[i].effect != b[i].effect)
      return 0;
  return 1;
}

static int resources_equal(const struct carp_resources *a,
                           const struct carp_resources *b)
{
  uint32_t i;
  if (a->cpu != b->cpu || a->memory != b->memory ||
      a->ephemeral != b->ephemeral || a->pods != b->pods ||
      a->nextended != b->nextended)
    return 0;
  for (i = 0; i < a->nextended; i++)
    if (a->extended[i].name != b->extended[i].name ||
        a->extended[i].value != b->extended[i].value)
      return 0;
  return 1;
}

/* Interned strings compare by pointer. */
int carp_claim_spec_equal(const struct carp_claim_spec *a,
                          const struct carp_claim_spec *b)
{
  uint32_t i;
  if (a->node_class_ref.group != b->node_class_ref.group ||
      a->node_class_ref.kind != b->node_class_ref.kind ||
      a->node_class_ref.name != b->node_class_ref.name ||
      a->expire_after_ms != b->expire_after_ms ||
      a->termination_grace_ms != b->termination_grace_ms ||
      a->nrequirements != b->nrequirements)
    return 0;
  for (i = 0; i < a->nrequirements; i++)
    if (!requirement_equal(&a->requirements[i], &b->requirements[i]))
      return 0;
  return taints_equal(a->taints, a->ntaints, b->taints, b->ntaints) &&
         taints_equal(a->startup_taints, a->nstartup_taints, b->startup_taints,
                      b->nstartup_taints) &&
         resources_equal(&a->requests, &b->requests);
}
