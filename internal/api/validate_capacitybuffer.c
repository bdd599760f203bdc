/* validate_capacitybuffer.c: carp_capacitybuffer_validate() - the schema
 * and CEL rules of crds/autoscaling.x-k8s.io_capacitybuffers.yaml on a
 * CapacityBuffer's JSON, with the API server's wording, and what
 * Carpenter cannot do with a buffer that the schema allows: another
 * provisioning strategy, a percentage without scalableRef (it would do
 * nothing), a scalableRef to something that is not an apps/v1
 * Deployment, StatefulSet or ReplicaSet. */
#include <stdint.h>
#include <string.h>

#include "carpenter/capacitybuffer.h"
#include "carpenter/error.h"
#include "validate_int.h"

static const char *const scalable_kinds[] = {"Deployment", "StatefulSet",
                                             "ReplicaSet", NULL};
static const char *const strategies[] = {CARP_BUFFER_STRATEGY_ACTIVE, NULL};

static void scalable_ref(struct vctx *v, yajl_val ref)
{
  static const struct vstr name_rule = {.minlen = 1};
  static const struct vstr kind_rule = {.minlen = 1, .enums = scalable_kinds};
  const char *group;
  v_str(v, ref, "spec.scalableRef", "kind", 1, &kind_rule);
  v_str(v, ref, "spec.scalableRef", "name", 1, &name_rule);
  group = v_str(v, ref, "spec.scalableRef", "apiGroup", 0, NULL);
  if (group && *group && strcmp(group, "apps"))
    v_err(v, "spec.scalableRef.apiGroup",
          "Unsupported value: \"%s\": Carpenter resolves Deployments, "
          "StatefulSets and ReplicaSets of the \"apps\" group",
          group);
}

int carp_capacitybuffer_validate(yajl_val obj, char **reason)
{
  static const struct vstr name_rule = {.minlen = 1};
  static const struct vstr strategy_rule = {.enums = strategies};
  struct vctx v;
  yajl_val spec, tref, sref, limits;
  int64_t x;
  size_t i;
  char p[VPATH];
  v_init(&v);
  spec = v_spec(&v, obj);
  if (!spec)
    return v_done(&v, reason);
  v_str(&v, spec, "spec", "provisioningStrategy", 0, &strategy_rule);
  tref = v_obj(&v, spec, "spec", "podTemplateRef", 0);
  if (tref)
    v_str(&v, tref, "spec.podTemplateRef", "name", 1, &name_rule);
  sref = v_obj(&v, spec, "spec", "scalableRef", 0);
  if (sref)
    scalable_ref(&v, sref);
  v_int(&v, spec, "spec", "replicas", 0, 0, INT32_MAX, &x);
  v_int(&v, spec, "spec", "percentage", 0, 0, INT32_MAX, &x);
  limits = v_obj(&v, spec, "spec", "limits", 0);
  for (i = 0; limits && i < limits->u.object.len; i++)
    v_quantity(&v, v_key(p, "spec.limits", limits->u.object.keys[i]),
               limits->u.object.values[i]);
  /* The CRD's CEL rules, with their messages. */
  if (v_get(spec, "podTemplateRef") && !v_get(spec, "replicas") &&
      !v_get(spec, "limits"))
    v_err(&v, "spec",
          "Invalid value: \"object\": If podTemplateRef is set, replicas or "
          "limits must also be set");
  if (v_get(spec, "podTemplateRef") && v_get(spec, "scalableRef"))
    v_err(&v, "spec",
          "Invalid value: \"object\": You must define either PodTemplateRef "
          "or ScalableRef, but not both");
  if (v_get(spec, "percentage") && !v_get(spec, "scalableRef"))
    v_err(&v, "spec.percentage",
          "Invalid value: \"integer\": percentage applies only with "
          "scalableRef (a share of that object's replicas)");
  return v_done(&v, reason);
}
