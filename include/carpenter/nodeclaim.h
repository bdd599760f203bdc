/* Module api (internal/api). NodeClaim (karpenter.sh/v1, cluster-scoped): one
 * node being launched or running. Carpenter creates NodeClaims from a
 * NodePool's template (carp_nodeclaim_encode_create), the lifecycle controller
 * launches and tracks them and writes their status
 * (carp_nodeclaim_status_patch).
 *
 * The spec shape is shared with NodePool.spec.template.spec
 * (struct carp_claim_spec). Decoding applies the CRD defaults, so an
 * object reads the same whether or not the API server defaulted it, and
 * never fails because a rule is broken: it fails (CARP_EPARSE, path in the
 * message) only when a field has the wrong JSON type. The result of
 * carp_nodeclaim_validate() travels with the object (valid,
 * invalid_reason). */
#ifndef CARP_NODECLAIM_H
#define CARP_NODECLAIM_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/api_types.h"
#include "carpenter/buf.h"
#include "carpenter/conditions.h"
#include "carpenter/object.h"

#define CARP_KARPENTER_GROUP   "karpenter.sh"
#define CARP_KARPENTER_VERSION "v1"

/* Labels, annotations, finalizer and taints of Karpenter's API. */
#define CARP_LABEL_NODEPOOL_KEY      "karpenter.sh/nodepool"
#define CARP_LABEL_CAPACITY_TYPE_KEY "karpenter.sh/capacity-type"
#define CARP_LABEL_REGISTERED        "karpenter.sh/registered"
#define CARP_LABEL_INITIALIZED       "karpenter.sh/initialized"
#define CARP_LABEL_NODECLASS_KEY     "carpenter.dev/proxmoxnodeclass"
#define CARP_ANN_NODEPOOL_HASH       "karpenter.sh/nodepool-hash"
#define CARP_ANN_NODEPOOL_HASH_VER   "karpenter.sh/nodepool-hash-version"
#define CARP_ANN_TERMINATION_TS      "karpenter.sh/nodeclaim-termination-timestamp"
#define CARP_ANN_MIN_VALUES_RELAXED  "karpenter.sh/nodeclaim-min-values-relaxed"
#define CARP_FINALIZER_TERMINATION   "karpenter.sh/termination"

/* NodeClaim condition types. */
#define CARP_COND_LAUNCHED             "Launched"
#define CARP_COND_REGISTERED           "Registered"
#define CARP_COND_INITIALIZED          "Initialized"
#define CARP_COND_CONSOLIDATABLE       "Consolidatable"
#define CARP_COND_DRIFTED              "Drifted"
#define CARP_COND_DISRUPTION_REASON    "DisruptionReason"
#define CARP_COND_DRAINED              "Drained"
#define CARP_COND_VOLUMES_DETACHED     "VolumesDetached"
#define CARP_COND_INSTANCE_TERMINATING "InstanceTerminating"
#define CARP_COND_CONSISTENT_STATE     "ConsistentStateFound"

/* spec.nodeClassRef. Strings are interned; "" when absent. */
struct carp_nodeclass_ref {
  const char *group;
  const char *kind;
  const char *name;
};

/* NodeClaim.spec, and NodePool.spec.template.spec (without requests). */
struct carp_claim_spec {
  struct carp_nodeclass_ref node_class_ref;
  uint32_t nrequirements;
  struct carp_requirement *requirements; /* in the object's order */
  uint32_t ntaints;
  struct carp_taint *taints;
  uint32_t nstartup_taints;
  struct carp_taint *startup_taints;
  int64_t expire_after_ms; /* default 720h; CARP_DURATION_NEVER for Never */
  /* terminationGracePeriod; CARP_DURATION_NEVER when unset (wait for the
   * drain forever, as Karpenter does). */
  int64_t termination_grace_ms;
  struct carp_resources requests; /* resources.requests (NodeClaim only) */
};

#define CARP_DEFAULT_EXPIRE_AFTER_MS (720LL * 3600 * 1000)

struct carp_nodeclaim_status {
  char *provider_id; /* NULL when unset */
  char *node_name;
  char *image_id;
  struct carp_resources capacity;
  struct carp_resources allocatable;
  struct carp_conditions conditions;
  int64_t last_pod_event_ms; /* 0 when unset */
};

struct carp_nodeclaim {
  struct carp_objmeta meta; /* annotations: karpenter.sh/ and carpenter.dev/ */
  struct carp_claim_spec spec;
  struct carp_nodeclaim_status status;
  int valid;            /* carp_nodeclaim_validate() passed */
  char *invalid_reason; /* NULL when valid: "path: problem[; ...]" */
};

extern const struct carp_kind carp_kind_nodeclaim;

/* Validates a NodeClaim object (its JSON, as the API server would: the
 * schema and CEL rules of crds/karpenter.sh_nodeclaims.yaml plus
 * Karpenter's runtime checks). Returns 0, or CARP_EINVALID with every
 * problem found in *reason ("path: problem; path: problem"; free with
 * carp_free). */
int carp_nodeclaim_validate(yajl_val obj, char **reason);
/* The update rule (CEL self == oldSelf on spec): "spec: Invalid value:
 * \"object\": spec is immutable" when the specs differ. */
int carp_nodeclaim_validate_update(const struct carp_nodeclaim *old_nc,
                                   const struct carp_nodeclaim *new_nc,
                                   char **reason);

/* Whether two specs are equal after defaulting (requirement values and
 * taints compared in order, as CEL compares lists). */
int carp_claim_spec_equal(const struct carp_claim_spec *a,
                          const struct carp_claim_spec *b);

/* The NodeClaim's NodePool (label karpenter.sh/nodepool), or NULL. */
const char *carp_nodeclaim_nodepool(const struct carp_nodeclaim *nc);

/* Status: copy the cached status, change it, write it back. */
void carp_nodeclaim_status_copy(struct carp_nodeclaim_status *dst,
                                const struct carp_nodeclaim_status *src);
void carp_nodeclaim_status_cleanup(struct carp_nodeclaim_status *st);
/* A JSON merge patch for the status subresource:
 * {"metadata":{"resourceVersion":rv},"status":{...}}; resourceVersion only
 * when rv is not NULL (it makes the patch conditional). Every status field
 * is written (unset strings are left out, conditions always). Returns 0 or
 * an error from the writer. */
int carp_nodeclaim_status_patch(const struct carp_nodeclaim_status *st,
                                const char *rv, struct carp_buf *out);

struct carp_nodepool;

/* What carp_nodeclaim_encode_create needs besides the NodePool. */
struct carp_nodeclaim_create {
  const struct carp_nodepool *pool;
  /* metadata.name; NULL uses generateName "<pool>-" as Karpenter does. */
  const char *name;
  /* The requirements the scheduler chose (the pool's, narrowed by the
   * pods), minValues included. karpenter.sh/nodepool In [<pool>] is added
   * when no requirement has that key. */
  const struct carp_requirement *requirements;
  size_t nrequirements;
  const struct carp_resources *requests; /* NULL: none */
  /* Extra labels and annotations (after the template's, before
   * Carpenter's own keys, which always win). */
  const struct carp_kv *labels;
  size_t nlabels;
  const struct carp_kv *annotations;
  size_t nannotations;
};

/* The body of a NodeClaim create, as Karpenter's NodeClaimTemplate
 * .ToNodeClaim builds it: labels = template labels + extra labels +
 * karpenter.sh/nodepool and carpenter.dev/proxmoxnodeclass (the
 * nodeClassRef's group/lower-case kind); annotations = template
 * annotations + extra + the NodePool hash and hash version; an
 * ownerReference to the NodePool (apiVersion karpenter.sh/v1, uid,
 * blockOwnerDeletion); the finalizer karpenter.sh/termination; spec
 * taints, startupTaints, requirements, resources.requests, nodeClassRef,
 * expireAfter and terminationGracePeriod from the template. Returns 0, or
 * CARP_EINVAL when the pool has no name/uid or the writer failed. */
int carp_nodeclaim_encode_create(const struct carp_nodeclaim_create *in,
                                 struct carp_buf *out);

#endif
