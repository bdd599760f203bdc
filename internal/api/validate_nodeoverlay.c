/* validate_nodeoverlay.c: carp_nodeoverlay_validate() - every schema and
 * CEL rule of crds/karpenter.sh_nodeoverlays.yaml (Karpenter's CRD) on a
 * NodeOverlay's JSON, with the messages the API server gives, plus what
 * Karpenter's runtime validation adds (a requirement key must be a
 * qualified name; capacity holds extended resources only). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/nodeoverlay.h"
#include "validate_int.h"

static const char PAT_PRICE[] = "^\\d+(\\.\\d+)?$";
static const char PAT_ADJUST[] =
    "^(([+-]{1}(\\d*\\.?\\d+))|(\\+{1}\\d*\\.?\\d+%)|(^(-\\d{1,2}(\\.\\d+)?%)"
    "$)|(-100%))$";
static const char *const op_enum[] = {
    "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte", NULL,
};
static const char *const core_resources[] = {"cpu", "memory",
                                             "ephemeral-storage", "pods", NULL};

/* CEL's k.find("^([^/]+)").endsWith(suffix). */
static int domain_ends_with(const char *key, const char *suffix)
{
  size_t dlen = strcspn(key, "/"), slen = strlen(suffix);
  return dlen >= slen && !memcmp(key + dlen - slen, suffix, slen);
}

/* CEL's int(s) >= 0. */
static int nonneg_int(const char *s)
{
  char *end;
  long long x;
  if (!*s || *s == ' ' || *s == '\t' || *s == '\n')
    return 0;
  errno = 0;
  x = strtoll(s, &end, 10);
  return !errno && !*end && x >= 0;
}

static void key_rules(struct vctx *v, const char *path, const char *key)
{
  const char *e;
  if (strcmp(key, "karpenter.sh/capacity-type") &&
      strcmp(key, "karpenter.sh/nodepool") &&
      domain_ends_with(key, "karpenter.sh"))
    v_err(v, path,
          "Invalid value: \"string\": label domain \"karpenter.sh\" is "
          "restricted");
  if (!strcmp(key, "kubernetes.io/hostname"))
    v_err(v, path,
          "Invalid value: \"string\": label \"kubernetes.io/hostname\" is "
          "restricted");
  if (strlen(key) <= 316 && v_match(V_PAT_QUALIFIED_NAME, key) &&
      (e = v_qualified_name_error(key)))
    v_err(v, path, "Invalid value: \"%s\": %s", key, e);
}

static void requirements(struct vctx *v, yajl_val spec)
{
  static const struct vstr key_rule = {.pattern = V_PAT_QUALIFIED_NAME,
                                       .maxlen = 316};
  static const struct vstr op_rule = {.enums = op_enum};
  static const struct vstr value_rule = {.pattern = V_PAT_LABEL_VALUE,
                                         .maxlen = 63};
  char pi[VPATH], pv[VPATH];
  int in_empty = 0, notin_empty = 0, bad_int = 0;
  size_t i;
  yajl_val reqs = v_arr(v, spec, "spec", "requirements", 1, 100);
  if (!reqs)
    return;
  for (i = 0; i < reqs->u.array.len; i++) {
    yajl_val r = reqs->u.array.values[i], values;
    const char *key, *op;
    size_t n;
    v_idx(pi, "spec.requirements", i);
    if (!YAJL_IS_OBJECT(r)) {
      v_err(v, pi, "Invalid value: \"%s\": must be of type object",
            v_typename(r));
      continue;
    }
    key = v_str(v, r, pi, "key", 1, &key_rule);
    op = v_str(v, r, pi, "operator", 1, &op_rule);
    values = v_arr(v, r, pi, "values", 0, 0);
    v_str_list(v, values, v_sub(pv, pi, "values"), &value_rule, 0);
    if (key)
      key_rules(v, v_sub(pv, pi, "key"), key);
    if (!op)
      continue;
    n = values ? values->u.array.len : 0;
    if (!strcmp(op, "In") && !n)
      in_empty = 1;
    if (!strcmp(op, "NotIn") && !n)
      notin_empty = 1;
    if (!strcmp(op, "Gt") || !strcmp(op, "Lt") || !strcmp(op, "Gte") ||
        !strcmp(op, "Lte")) {
      yajl_val x = n == 1 ? values->u.array.values[0] : NULL;
      if (!x || !YAJL_IS_STRING(x) || !nonneg_int(x->u.string))
        bad_int = 1;
    }
  }
  if (notin_empty)
    v_err(v, "spec.requirements",
          "Invalid value: \"array\": requirements with operator 'NotIn' must "
          "have a value defined");
  if (in_empty)
    v_err(v, "spec.requirements",
          "Invalid value: \"array\": requirements with operator 'In' must "
          "have a value defined");
  if (bad_int)
    v_err(v, "spec.requirements",
          "Invalid value: \"array\": requirements operator 'Gt', 'Lt', 'Gte' "
          "or 'Lte' must have a single positive integer value");
}

static void capacity(struct vctx *v, yajl_val spec)
{
  char p[VPATH];
  size_t i;
  int restricted = 0;
  yajl_val cap = v_obj(v, spec, "spec", "capacity", 0);
  for (i = 0; cap && i < cap->u.object.len; i++) {
    const char *const *c;
    v_quantity(v, v_key(p, "spec.capacity", cap->u.object.keys[i]),
               cap->u.object.values[i]);
    for (c = core_resources; *c; c++)
      if (!strcmp(*c, cap->u.object.keys[i]))
        restricted = 1;
  }
  if (restricted)
    v_err(v, "spec.capacity",
          "Invalid value: \"object\": invalid resource restricted");
}

int carp_nodeoverlay_validate(yajl_val obj, char **reason)
{
  static const struct vstr price_rule = {.pattern = PAT_PRICE};
  static const struct vstr adjust_rule = {.pattern = PAT_ADJUST};
  struct vctx v;
  yajl_val spec;
  v_init(&v);
  if (!YAJL_IS_OBJECT(obj)) {
    v_err(&v, "<root>", "Invalid value: \"%s\": must be of type object",
          v_typename(obj));
    return v_done(&v, reason);
  }
  spec = v_obj(&v, obj, "", "spec", 1);
  if (spec) {
    requirements(&v, spec);
    v_str(&v, spec, "spec", "price", 0, &price_rule);
    v_str(&v, spec, "spec", "priceAdjustment", 0, &adjust_rule);
    capacity(&v, spec);
    v_int(&v, spec, "spec", "weight", 0, 1, 10000, NULL);
    if (v_get(spec, "price") && v_get(spec, "priceAdjustment"))
      v_err(&v, "spec",
            "Invalid value: \"object\": cannot set both 'price' and "
            "'priceAdjustment'");
  }
  return v_done(&v, reason);
}
