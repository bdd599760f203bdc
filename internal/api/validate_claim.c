/* validate_claim.c: rules NodePool.spec.template.spec and NodeClaim.spec
 * share - nodeClassRef, requirements (item schema, the three CEL list
 * rules, the CEL key rules and Karpenter's runtime key check), taints and
 * startup taints (schema and Karpenter's runtime checks, duplicates
 * included), expireAfter and terminationGracePeriod. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/timeutil.h"
#include "validate_int.h"

static const char *const op_enum[] = {
    "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte", NULL,
};
static const char *const effect_enum[] = {
    "NoSchedule",
    "PreferNoSchedule",
    "NoExecute",
    NULL,
};

/* The CEL rules on label and requirement keys, one bit each. */
enum {
  R_KARPENTER_DOMAIN = 1,
  R_NODEPOOL = 2,
  R_HOSTNAME = 4,
  R_CARPENTER_DOMAIN = 8,
};

static const char MSG_KARPENTER_DOMAIN[] =
    "label domain \"karpenter.sh\" is restricted";
static const char MSG_NODEPOOL[] =
    "label \"karpenter.sh/nodepool\" is restricted";
static const char MSG_HOSTNAME[] =
    "label \"kubernetes.io/hostname\" is restricted";
static const char MSG_CARPENTER_DOMAIN[] =
    "label domain \"carpenter.dev\" is restricted";

/* CEL's k.find("^([^/]+)").endsWith(suffix). */
static int domain_ends_with(const char *key, const char *suffix)
{
  size_t dlen = strcspn(key, "/"), slen = strlen(suffix);
  return dlen >= slen && !memcmp(key + dlen - slen, suffix, slen);
}

/* Which key rules key breaks. Labels (requirement = 0) are NodePool only;
 * requirement keys also allow carpenter.dev/proxmoxnodeclass, and only a
 * NodePool's refuse karpenter.sh/nodepool. */
static unsigned key_rules(const char *key, int nodepool, int requirement)
{
  unsigned bad = 0;
  if (strcmp(key, "karpenter.sh/capacity-type") &&
      strcmp(key, "karpenter.sh/nodepool") &&
      domain_ends_with(key, "karpenter.sh"))
    bad |= R_KARPENTER_DOMAIN;
  if (nodepool && !strcmp(key, "karpenter.sh/nodepool"))
    bad |= R_NODEPOOL;
  if (!strcmp(key, "kubernetes.io/hostname"))
    bad |= R_HOSTNAME;
  if (strcmp(key, "carpenter.dev/instance-family") &&
      strcmp(key, "carpenter.dev/instance-cpu") &&
      strcmp(key, "carpenter.dev/instance-memory") &&
      strcmp(key, "carpenter.dev/instance-gpu-count") &&
      strcmp(key, "carpenter.dev/instance-gpu-name") &&
      strcmp(key, "carpenter.dev/instance-gpu-manufacturer") &&
      strcmp(key, "carpenter.dev/instance-gpu-memory") &&
      (!requirement || strcmp(key, "carpenter.dev/proxmoxnodeclass")) &&
      domain_ends_with(key, "carpenter.dev"))
    bad |= R_CARPENTER_DOMAIN;
  return bad;
}

static void report_rules(struct vctx *v, const char *path, const char *type,
                         unsigned bad)
{
  if (bad & R_KARPENTER_DOMAIN)
    v_err(v, path, "Invalid value: \"%s\": %s", type, MSG_KARPENTER_DOMAIN);
  if (bad & R_NODEPOOL)
    v_err(v, path, "Invalid value: \"%s\": %s", type, MSG_NODEPOOL);
  if (bad & R_HOSTNAME)
    v_err(v, path, "Invalid value: \"%s\": %s", type, MSG_HOSTNAME);
  if (bad & R_CARPENTER_DOMAIN)
    v_err(v, path, "Invalid value: \"%s\": %s", type, MSG_CARPENTER_DOMAIN);
}

void v_restricted_key(struct vctx *v, const char *path, const char *key,
                      int nodepool, int requirement)
{
  report_rules(v, path, "string", key_rules(key, nodepool, requirement));
}

void v_template_labels(struct vctx *v, yajl_val labels, const char *path)
{
  unsigned bad = 0;
  size_t i;
  char p[VPATH];
  for (i = 0; labels && i < labels->u.object.len; i++) {
    const char *k = labels->u.object.keys[i];
    const char *e = v_qualified_name_error(k);
    bad |= key_rules(k, 1, 0);
    if (e)
      v_err(v, v_key(p, path, k), "Invalid value: \"%s\": %s", k, e);
  }
  report_rules(v, path, "object", bad);
}

/* CEL's int(s) (Go's strconv.ParseInt(s, 10, 64)). */
static int cel_int(const char *s, long long *out)
{
  char *end;
  if (!*s)
    return -1;
  errno = 0;
  *out = strtoll(s, &end, 10);
  if (errno || *end || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
    return -1;
  return 0;
}

static void requirements(struct vctx *v, yajl_val spec, const char *path,
                         int nodepool)
{
  static const struct vstr key_rule = {.pattern = V_PAT_QUALIFIED_NAME,
                                       .maxlen = 316};
  static const struct vstr op_rule = {.enums = op_enum};
  static const struct vstr value_rule = {.pattern = V_PAT_LABEL_VALUE,
                                         .maxlen = 63};
  char p[VPATH], pi[VPATH], pv[VPATH];
  int in_empty = 0, bad_int = 0, min_values = 0;
  size_t i;
  yajl_val reqs = v_arr(v, spec, path, "requirements", 1, 100);

  if (!reqs)
    return;
  v_sub(p, path, "requirements");
  for (i = 0; i < reqs->u.array.len; i++) {
    yajl_val r = reqs->u.array.values[i];
    const char *key, *op;
    yajl_val values;
    size_t nvalues;
    int64_t minv = 0;
    int has_min;

    v_idx(pi, p, i);
    if (!YAJL_IS_OBJECT(r)) {
      v_err(v, pi, "Invalid value: \"%s\": must be of type object",
            v_typename(r));
      continue;
    }
    key = v_str(v, r, pi, "key", 1, &key_rule);
    op = v_str(v, r, pi, "operator", 1, &op_rule);
    values = v_arr(v, r, pi, "values", 0, 0);
    v_str_list(v, values, v_sub(pv, pi, "values"), &value_rule, 0);
    has_min = v_int(v, r, pi, "minValues", 0, 1, 50, &minv);
    if (key) {
      v_sub(pv, pi, "key");
      v_restricted_key(v, pv, key, nodepool, 1);
      /* Karpenter's runtime check adds the length limits of a qualified
       * name to the CRD's pattern. */
      if (strlen(key) <= 316 && v_match(V_PAT_QUALIFIED_NAME, key)) {
        const char *e = v_qualified_name_error(key);
        if (e)
          v_err(v, pv, "Invalid value: \"%s\": %s", key, e);
      }
    }
    if (!op)
      continue;
    nvalues = values ? values->u.array.len : 0;
    if (!strcmp(op, "In") && nvalues == 0)
      in_empty = 1;
    if (!strcmp(op, "Gt") || !strcmp(op, "Lt") || !strcmp(op, "Gte") ||
        !strcmp(op, "Lte")) {
      long long x;
      yajl_val v0 = nvalues == 1 ? values->u.array.values[0] : NULL;
      if (!v0 || !YAJL_IS_STRING(v0) || cel_int(v0->u.string, &x) || x < 0)
        bad_int = 1;
    }
    if (!strcmp(op, "In") && has_min && (int64_t)nvalues < minv)
      min_values = 1;
  }
  if (in_empty)
    v_err(v, p,
          "Invalid value: \"array\": requirements with operator 'In' must "
          "have a value defined");
  if (bad_int)
    v_err(v, p,
          "Invalid value: \"array\": requirements operator 'Gt', 'Lt', "
          "'Gte', or 'Lte' must have a single positive integer value");
  if (min_values)
    v_err(v, p,
          "Invalid value: \"array\": requirements with 'minValues' must have "
          "at least that many values specified in the 'values' field");
}

struct seen_taint {
  const char *key;
  const char *effect;
};

static void taints(struct vctx *v, yajl_val spec, const char *path,
                   const char *field, struct seen_taint **seen, size_t *nseen)
{
  static const struct vstr key_rule = {.pattern = V_PAT_QUALIFIED_NAME,
                                       .minlen = 1};
  static const struct vstr value_rule = {.pattern = V_PAT_LABEL_VALUE};
  static const struct vstr effect_rule = {.enums = effect_enum};
  char p[VPATH], pi[VPATH], pk[VPATH];
  size_t i, j;
  yajl_val arr = v_arr(v, spec, path, field, 0, 0);
  if (!arr)
    return;
  v_sub(p, path, field);
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val t = arr->u.array.values[i];
    const char *key, *value, *effect, *added;
    v_idx(pi, p, i);
    if (!YAJL_IS_OBJECT(t)) {
      v_err(v, pi, "Invalid value: \"%s\": must be of type object",
            v_typename(t));
      continue;
    }
    key = v_str(v, t, pi, "key", 1, &key_rule);
    value = v_str(v, t, pi, "value", 0, &value_rule);
    effect = v_str(v, t, pi, "effect", 1, &effect_rule);
    added = v_str(v, t, pi, "timeAdded", 0, NULL);
    if (added) {
      int64_t ms;
      if (carp_time_parse_rfc3339(added, &ms))
        v_err(v, v_sub(pk, pi, "timeAdded"),
              "Invalid value: \"%s\": should be a date-time", added);
    }
    /* Karpenter's runtime checks: qualified names, duplicates. */
    if (key && *key && v_match(V_PAT_QUALIFIED_NAME, key)) {
      const char *e = v_qualified_name_error(key);
      if (e)
        v_err(v, v_sub(pk, pi, "key"), "Invalid value: \"%s\": %s", key, e);
    }
    if (value && *value && v_match(V_PAT_LABEL_VALUE, value)) {
      const char *e = v_label_value_error(value);
      if (e)
        v_err(v, v_sub(pk, pi, "value"), "Invalid value: \"%s\": %s", value, e);
    }
    if (!key || !effect)
      continue;
    for (j = 0; j < *nseen; j++) {
      if (!strcmp((*seen)[j].key, key) && !strcmp((*seen)[j].effect, effect)) {
        v_err(v, pi,
              "Invalid value: \"object\": duplicate taint Key/Effect "
              "pair %s=%s",
              key, effect);
        break;
      }
    }
    if (j == *nseen) {
      *seen = carp_reallocarray(*seen, *nseen + 1, sizeof(**seen));
      (*seen)[*nseen].key = key;
      (*seen)[*nseen].effect = effect;
      (*nseen)++;
    }
  }
}

static void node_class_ref(struct vctx *v, yajl_val spec, const char *path)
{
  static const struct vstr group_rule = {.pattern = "^[^/]*$"};
  static const char *const fields[] = {"group", "kind", "name"};
  char p[VPATH], pf[VPATH];
  size_t i;
  yajl_val ref = v_obj(v, spec, path, "nodeClassRef", 1);
  if (!ref)
    return;
  v_sub(p, path, "nodeClassRef");
  for (i = 0; i < 3; i++) {
    const char *s = v_str(v, ref, p, fields[i], 1, i == 0 ? &group_rule : NULL);
    if (s && !*s)
      v_err(v, v_sub(pf, p, fields[i]),
            "Invalid value: \"string\": %s may not be empty", fields[i]);
  }
}

void v_claim_spec_common(struct vctx *v, yajl_val spec, const char *path,
                         int nodepool)
{
  struct seen_taint *seen = NULL;
  size_t nseen = 0;
  node_class_ref(v, spec, path);
  requirements(v, spec, path, nodepool);
  taints(v, spec, path, "taints", &seen, &nseen);
  taints(v, spec, path, "startupTaints", &seen, &nseen);
  carp_free(seen);
  v_duration(v, spec, path, "expireAfter", 0, V_PAT_DURATION);
  v_duration(v, spec, path, "terminationGracePeriod", 0, V_PAT_TGP);
}
