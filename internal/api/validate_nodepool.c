/* validate_nodepool.c: carp_nodepool_validate() - every schema and CEL
 * rule of crds/karpenter.sh_nodepools.yaml on a NodePool's JSON, with the
 * API server's wording, plus Karpenter's runtime checks and a check that
 * budget schedules are valid cron - and carp_nodepool_validate_update()
 * for the rules that compare with the previous version. */
#include <string.h>

#include "carpenter/cron.h"
#include "carpenter/error.h"
#include "carpenter/nodepool.h"
#include "validate_int.h"

static const char PAT_BUDGET_NODES[] = "^((100|[0-9]{1,2})%|[0-9]+)$";
static const char PAT_BUDGET_DURATION[] =
    "^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$";
static const char PAT_SCHEDULE[] = "^(@(annually|yearly|monthly|weekly|daily|"
                                   "midnight|hourly))|((.+)\\s(.+)\\s("
                                   ".+)\\s(.+)\\s(.+))$";
static const char *const policy_enum[] = {
    "WhenEmpty",
    "WhenEmptyOrUnderutilized",
    "Balanced",
    NULL,
};
static const char *const reason_enum[] = {
    "Underutilized",
    "Empty",
    "Drifted",
    NULL,
};

static void budgets(struct vctx *v, yajl_val disruption, const char *path)
{
  static const struct vstr nodes_rule = {.pattern = PAT_BUDGET_NODES};
  static const struct vstr schedule_rule = {.pattern = PAT_SCHEDULE};
  static const struct vstr reason_rule = {.enums = reason_enum};
  char p[VPATH], pi[VPATH], pr[VPATH];
  size_t i;
  int mismatch = 0;
  yajl_val arr = v_arr(v, disruption, path, "budgets", 0, 50);
  if (!arr)
    return;
  v_sub(p, path, "budgets");
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val b = arr->u.array.values[i];
    const char *sched;
    yajl_val reasons;
    v_idx(pi, p, i);
    if (!YAJL_IS_OBJECT(b)) {
      v_err(v, pi, "Invalid value: \"%s\": must be of type object",
            v_typename(b));
      continue;
    }
    /* nodes is required but defaulted ("10%"), so absent is fine. */
    v_str(v, b, pi, "nodes", 0, &nodes_rule);
    v_duration(v, b, pi, "duration", 0, PAT_BUDGET_DURATION);
    sched = v_str(v, b, pi, "schedule", 0, &schedule_rule);
    if (sched && v_match(PAT_SCHEDULE, sched)) {
      struct carp_cron c;
      char why[CARP_CRON_ERR_LEN];
      if (carp_cron_parse(sched, &c, why))
        v_err(v, v_sub(pr, pi, "schedule"),
              "Invalid value: \"%s\": not a valid cron schedule: %s", sched,
              why);
    }
    reasons = v_arr(v, b, pi, "reasons", 0, 50);
    v_str_list(v, reasons, v_sub(pr, pi, "reasons"), &reason_rule, 1);
    if (!v_get(b, "schedule") != !v_get(b, "duration"))
      mismatch = 1;
  }
  if (mismatch)
    v_err(v, p,
          "Invalid value: \"array\": 'schedule' must be set with 'duration'");
}

static void disruption(struct vctx *v, yajl_val spec, const char *path)
{
  static const struct vstr policy_rule = {.enums = policy_enum};
  char p[VPATH];
  yajl_val d = v_obj(v, spec, path, "disruption", 0);
  if (!d)
    return; /* defaulted to {consolidateAfter: 0s} */
  v_sub(p, path, "disruption");
  v_duration(v, d, p, "consolidateAfter", 1, V_PAT_DURATION);
  v_str(v, d, p, "consolidationPolicy", 0, &policy_rule);
  budgets(v, d, p);
}

static void limits(struct vctx *v, yajl_val spec, const char *path)
{
  char p[VPATH], pk[VPATH];
  size_t i;
  yajl_val l = v_obj(v, spec, path, "limits", 0);
  if (!l)
    return;
  v_sub(p, path, "limits");
  for (i = 0; i < l->u.object.len; i++)
    v_quantity(v, v_key(pk, p, l->u.object.keys[i]), l->u.object.values[i]);
}

static void template(struct vctx *v, yajl_val spec, const char *path)
{
  static const struct vstr label_value = {.pattern = V_PAT_LABEL_VALUE,
                                          .maxlen = 63};
  char p[VPATH], pm[VPATH], pl[VPATH], ps[VPATH];
  yajl_val t = v_obj(v, spec, path, "template", 1), meta, tspec;
  if (!t)
    return;
  v_sub(p, path, "template");
  meta = v_obj(v, t, p, "metadata", 0);
  if (meta) {
    yajl_val labels;
    v_sub(pm, p, "metadata");
    labels = v_str_map(v, meta, pm, "labels", 100, &label_value);
    if (labels)
      v_template_labels(v, labels, v_sub(pl, pm, "labels"));
    v_str_map(v, meta, pm, "annotations", 0, NULL);
  }
  tspec = v_obj(v, t, p, "spec", 1);
  if (tspec)
    v_claim_spec_common(v, tspec, v_sub(ps, p, "spec"), 1);
}

int carp_nodepool_validate(yajl_val obj, char **reason)
{
  struct vctx v;
  yajl_val spec;
  int64_t x;
  v_init(&v);
  if (!YAJL_IS_OBJECT(obj)) {
    v_err(&v, "<root>", "Invalid value: \"%s\": must be of type object",
          v_typename(obj));
    return v_done(&v, reason);
  }
  spec = v_obj(&v, obj, "", "spec", 1);
  if (spec) {
    yajl_val limits_obj = v_get(spec, "limits");
    template(&v, spec, "spec");
    disruption(&v, spec, "spec");
    limits(&v, spec, "spec");
    v_int(&v, spec, "spec", "weight", 0, 1, 100, &x);
    v_int(&v, spec, "spec", "replicas", 0, 0, INT64_MAX, &x);
    if (v_get(spec, "replicas")) {
      if (YAJL_IS_OBJECT(limits_obj) && limits_obj->u.object.len > 0 &&
          (limits_obj->u.object.len != 1 ||
           strcmp(limits_obj->u.object.keys[0], "nodes")))
        v_err(&v, "spec",
              "Invalid value: \"object\": only 'limits.nodes' is supported "
              "on static NodePools");
      if (v_get(spec, "weight"))
        v_err(&v, "spec",
              "Invalid value: \"object\": 'weight' is not supported on static "
              "NodePools");
    }
  }
  return v_done(&v, reason);
}

int carp_nodepool_validate_update(const struct carp_nodepool *old_np,
                                  const struct carp_nodepool *new_np,
                                  char **reason)
{
  struct vctx v;
  const struct carp_nodeclass_ref *a = &old_np->tmpl.node_class_ref;
  const struct carp_nodeclass_ref *b = &new_np->tmpl.node_class_ref;
  v_init(&v);
  if (old_np->has_replicas != new_np->has_replicas)
    v_err(&v, "spec",
          "Invalid value: \"object\": Cannot transition NodePool between "
          "static (replicas set) and dynamic (replicas unset) provisioning "
          "modes");
  if (strcmp(a->group, b->group))
    v_err(&v, "spec.template.spec.nodeClassRef",
          "Invalid value: \"object\": nodeClassRef.group is immutable");
  if (strcmp(a->kind, b->kind))
    v_err(&v, "spec.template.spec.nodeClassRef",
          "Invalid value: \"object\": nodeClassRef.kind is immutable");
  return v_done(&v, reason);
}
