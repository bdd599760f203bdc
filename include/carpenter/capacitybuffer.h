/* Module api (internal/api). CapacityBuffer (autoscaling.x-k8s.io/v1beta1,
 * namespaced): room kept free for pods that do not exist yet, as Cluster
 * Autoscaler and Karpenter (1.13+) define it. A buffer names the shape of one
 * chunk - a PodTemplate (podTemplateRef) or the pod template of a Deployment,
 * StatefulSet or ReplicaSet (scalableRef) - and how many chunks to keep:
 * replicas, a percentage of the scalable object's replicas (the larger of
 * the two when both are set), at most what fits in limits (or, with
 * neither replicas nor percentage, as many as fit in limits).
 *
 * Carpenter provisions as if the chunks were pending pods ("virtual
 * pods", never created in the API server), so the kube-scheduler finds
 * the room free when real pods come; when they take it, the virtual pods
 * no longer fit and more capacity is launched. Consolidation keeps the
 * room they hold.
 *
 * Status, as upstream: status.replicas (the chunks kept),
 * status.podTemplateRef and podTemplateGeneration (podTemplateRef only),
 * status.provisioningStrategy, and the conditions ReadyForProvisioning
 * (the template resolved and the count computed) and Provisioning (True
 * FitsExistingCapacity once every chunk fits on nodes that are up; False
 * RequiresNewCapacity while some need nodes being launched, new nodes or
 * fit nowhere; False NotReadyForProvisioning or BufferEmpty).
 *
 * Decoding follows the CRD (crds/autoscaling.x-k8s.io_capacitybuffers
 * .yaml): a buffer that breaks a rule decodes with valid = 0 and the
 * reason, so the controller can say so in its condition; only a field of
 * the wrong JSON type fails the decode. */
#ifndef CARP_CAPACITYBUFFER_H
#define CARP_CAPACITYBUFFER_H

#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/api_types.h"
#include "carpenter/conditions.h"
#include "carpenter/object.h"

#define CARP_BUFFER_GROUP       "autoscaling.x-k8s.io"
#define CARP_BUFFER_VERSION     "v1beta1"
#define CARP_BUFFER_API_VERSION "autoscaling.x-k8s.io/v1beta1"
#define CARP_BUFFER_KIND        "CapacityBuffer"
/* The only provisioning strategy (the CRD's default). */
#define CARP_BUFFER_STRATEGY_ACTIVE "buffer.x-k8s.io/active-capacity"

/* Condition types (upstream's). */
#define CARP_COND_BUFFER_READY        "ReadyForProvisioning"
#define CARP_COND_BUFFER_PROVISIONING "Provisioning"

/* Chunks Carpenter keeps room for, per buffer: a buffer asking for more
 * (limits alone can ask for millions) is refused with a condition. */
#define CARP_BUFFER_MAX_REPLICAS 1000

struct carp_capacitybuffer_status {
  int has_replicas;
  int32_t replicas;
  const char *pod_template; /* status.podTemplateRef.name, interned */
  int has_generation;
  int64_t pod_template_generation;
  const char *strategy; /* status.provisioningStrategy, interned */
  struct carp_conditions conditions;
};

struct carp_capacitybuffer {
  struct carp_objmeta meta;
  const char *strategy;     /* defaulted to CARP_BUFFER_STRATEGY_ACTIVE */
  const char *pod_template; /* spec.podTemplateRef.name; NULL when absent */
  /* spec.scalableRef; name NULL when absent; api_group "" for core */
  const char *scalable_group;
  const char *scalable_kind;
  const char *scalable_name;
  int has_replicas;
  int32_t replicas;
  int has_percentage;
  int32_t percentage;
  int has_limits;
  struct carp_resources limits; /* cpu millicores, others whole units */
  struct carp_capacitybuffer_status status;
  int valid;            /* carp_capacitybuffer_validate() passed */
  char *invalid_reason; /* NULL when valid */
};

extern const struct carp_kind carp_kind_capacitybuffer;

/* The schema and CEL rules of the CRD, with the API server's wording,
 * and Carpenter's own: the provisioning strategy is active-capacity,
 * percentage needs scalableRef, scalableRef names a Deployment,
 * StatefulSet or ReplicaSet of apps. Returns 0, or CARP_EINVALID with
 * every problem in *reason (free with carp_free). */
int carp_capacitybuffer_validate(yajl_val obj, char **reason);

/* The chunks to keep, Karpenter's and Cluster Autoscaler's rule:
 * candidates are replicas and, with scalableRef, ceil(percentage% of the
 * scalable object's replicas) (at least 1 when both are positive); the
 * largest wins; limits cap it at floor(limit / request) over the
 * resources both name, or set it alone when there is no candidate.
 * requests are one chunk's; scalable_replicas < 0 when not known. */
int64_t carp_capacitybuffer_replicas(const struct carp_capacitybuffer *b,
                                     const struct carp_resources *requests,
                                     int64_t scalable_replicas);

/* A JSON merge patch of the status subresource: replicas (null when
 * has_replicas is 0), podTemplateRef, podTemplateGeneration,
 * provisioningStrategy and the whole condition list; the
 * resourceVersion precondition when rv is not NULL. */
int carp_capacitybuffer_status_patch(
    const struct carp_capacitybuffer_status *st, const char *rv,
    struct carp_buf *out);
void carp_capacitybuffer_status_copy(
    struct carp_capacitybuffer_status *dst,
    const struct carp_capacitybuffer_status *src);
void carp_capacitybuffer_status_cleanup(struct carp_capacitybuffer_status *st);

#endif
