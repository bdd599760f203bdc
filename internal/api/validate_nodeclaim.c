/* validate_nodeclaim.c: carp_nodeclaim_validate() - the schema and CEL
 * rules of crds/karpenter.sh_nodeclaims.yaml on a NodeClaim's JSON (the
 * spec shared with NodePool templates, with karpenter.sh/nodepool allowed
 * as a requirement key, and resources.requests) - and the update rule
 * "spec is immutable". */
#include "carpenter/error.h"
#include "carpenter/nodeclaim.h"
#include "validate_int.h"

int carp_nodeclaim_validate(yajl_val obj, char **reason)
{
  struct vctx v;
  yajl_val spec, res;
  v_init(&v);
  if (!YAJL_IS_OBJECT(obj)) {
    v_err(&v, "<root>", "Invalid value: \"%s\": must be of type object",
          v_typename(obj));
    return v_done(&v, reason);
  }
  spec = v_obj(&v, obj, "", "spec", 1);
  if (spec) {
    v_claim_spec_common(&v, spec, "spec", 0);
    res = v_obj(&v, spec, "spec", "resources", 0);
    if (res) {
      yajl_val req = v_obj(&v, res, "spec.resources", "requests", 0);
      size_t i;
      char p[VPATH];
      for (i = 0; req && i < req->u.object.len; i++)
        v_quantity(&v,
                   v_key(p, "spec.resources.requests", req->u.object.keys[i]),
                   req->u.object.values[i]);
    }
  }
  return v_done(&v, reason);
}

int carp_nodeclaim_validate_update(const struct carp_nodeclaim *old_nc,
                                   const struct carp_nodeclaim *new_nc,
                                   char **reason)
{
  struct vctx v;
  v_init(&v);
  if (!carp_claim_spec_equal(&old_nc->spec, &new_nc->spec))
    v_err(&v, "spec", "Invalid value: \"object\": spec is immutable");
  return v_done(&v, reason);
}
