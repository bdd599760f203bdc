/* Module state (internal/state). Cluster state: the informers every controller
 * reads, their indexes, and the bookkeeping the caches cannot show yet
 * (Karpenter's cluster state).
 *
 *  - NodeClaims are joined to Nodes by provider ID.
 *  - NodeClaims created by this process but not yet seen by the informer
 *    are remembered ("expected"), so a second provisioning batch never
 *    double-counts capacity or NodePool usage in that window.
 *  - Pods nominated to a node or NodeClaim (by provisioning) are
 *    remembered until they bind, or until their window lapses, so the next
 *    batch counts them as using that capacity (and launches nothing more
 *    for them) and disruption leaves those nodes alone.
 *  - The last time a pod arrived on or left each node (consolidateAfter).
 *  - NodeClaims marked for deletion by a disruption decision.
 *  - Virtual pods: the chunks CapacityBuffers keep room for, which the
 *    provisioner places as if they were pending and consolidation keeps
 *    room for (the CapacityBuffer controller sets them).
 *
 * Controllers add their informer handlers between carp_cluster_new() and
 * carp_cluster_start(). Nothing is decided before carp_cluster_synced(). */
#ifndef CARP_CLUSTER_H
#define CARP_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/api.h"
#include "carpenter/informer.h"
#include "carpenter/kube.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"

struct carp_metrics;

struct carp_cluster {
  uv_loop_t *loop;
  struct carp_kube *kube;
  struct carp_informer *pods;
  struct carp_informer *nodes;
  struct carp_informer *nodeclaims;
  struct carp_informer *nodepools;
  struct carp_informer *nodeclasses;
  struct carp_informer *pdbs;
  struct carp_informer *daemonsets;
  struct carp_informer *volumeattachments;
  struct carp_informer *pvcs;
  /* autoscaling.x-k8s.io/v1beta1: optional, empty (and synced) when the
   * cluster does not serve the API. */
  struct carp_informer *capacitybuffers;
  /* karpenter.sh/v1alpha1 NodeOverlays: optional like CapacityBuffers
   * (without the CRD the cache is synced, empty, and no overlay applies). */
  struct carp_informer *nodeoverlays;
  struct carp_informer *all[12];
  int nall;
  int nrequired;
  void *priv; /* state.c's bookkeeping */
};

/* Store index ids. */
#define CARP_IDX_POD_NODE       0 /* pods by spec.nodeName */
#define CARP_IDX_NODE_PROVIDER  0 /* nodes by spec.providerID */
#define CARP_IDX_CLAIM_PROVIDER 0 /* nodeclaims by status.providerID */
#define CARP_IDX_CLAIM_NODEPOOL 1 /* nodeclaims by karpenter.sh/nodepool */
#define CARP_IDX_VA_NODE        0 /* volumeattachments by spec.nodeName */

int carp_cluster_new(uv_loop_t *loop, struct carp_kube *kube,
                     struct carp_metrics *metrics, struct carp_cluster **out);
int carp_cluster_start(struct carp_cluster *c);
void carp_cluster_close(struct carp_cluster *c, void (*cb)(void *arg),
                        void *arg);
/* The clock of the bookkeeping's timestamps (nominations, expectations,
 * pod activity); the system clock until set. */
struct carp_clock;
void carp_cluster_set_clock(struct carp_cluster *c, struct carp_clock *clock);
/* Every informer has listed and is in sync (none is relisting after a
 * watch it could not trust). */
int carp_cluster_synced(const struct carp_cluster *c);
/* Objects that cannot be decoded get a Warning event (FailedDecode) on
 * themselves through r. Before carp_cluster_start(). */
struct carp_recorder;
int carp_cluster_report_invalid(struct carp_cluster *c,
                                struct carp_recorder *r);

/* Lookups (borrowed pointers, valid until the caches next change). */
const struct carp_node *carp_cluster_node(const struct carp_cluster *c,
                                          const char *name);
const struct carp_node *
carp_cluster_node_by_provider(const struct carp_cluster *c,
                              const char *provider_id);
const struct carp_nodeclaim *
carp_cluster_nodeclaim(const struct carp_cluster *c, const char *name);
const struct carp_nodeclaim *
carp_cluster_nodeclaim_by_provider(const struct carp_cluster *c,
                                   const char *provider_id);
/* The NodeClaim of a Node (by provider ID), or NULL. */
const struct carp_nodeclaim *
carp_cluster_nodeclaim_of_node(const struct carp_cluster *c,
                               const struct carp_node *node);
/* The Node of a NodeClaim (by provider ID), or NULL. */
const struct carp_node *
carp_cluster_node_of_nodeclaim(const struct carp_cluster *c,
                               const struct carp_nodeclaim *nc);
const struct carp_nodepool *carp_cluster_nodepool(const struct carp_cluster *c,
                                                  const char *name);
const struct carp_nodeclass *
carp_cluster_nodeclass(const struct carp_cluster *c, const char *name);
struct carp_objmeta *const *
carp_cluster_pods_on_node(const struct carp_cluster *c, const char *node,
                          size_t *n);
/* The VolumeAttachments of a node (spec.nodeName). */
struct carp_objmeta *const *
carp_cluster_volumeattachments_on_node(const struct carp_cluster *c,
                                       const char *node, size_t *n);
/* A PersistentVolumeClaim by namespace and name, or NULL. */
const struct carp_pvc *carp_cluster_pvc(const struct carp_cluster *c,
                                        const char *namespace,
                                        const char *name);
struct carp_objmeta *const *
carp_cluster_nodeclaims_of_pool(const struct carp_cluster *c,
                                const char *nodepool, size_t *n);

/* A pod that must move if its node goes away: not a DaemonSet or mirror
 * pod, not finished, not being deleted. */
int carp_pod_is_reschedulable(const struct carp_pod *p);
/* Provisioning should act for this pod (Karpenter's IsProvisionable). */
int carp_pod_is_provisionable(const struct carp_pod *p);
/* A virtual pod: a CapacityBuffer's chunk (owned by the buffer), never
 * an object of the API server. */
int carp_pod_is_virtual(const struct carp_pod *p);

/* ---- expected NodeClaims ---- */

/* Remembers a NodeClaim just created, with the capacity it may take (the
 * largest of its instance-type options), until the informer sees it or 60
 * seconds pass. */
void carp_cluster_expect_claim(struct carp_cluster *c, const char *name,
                               const char *nodepool,
                               const struct carp_resources *max_capacity);
/* The NodePool's usage: capacity of its NodeClaims (status.capacity once
 * launched, else the expectation recorded for them) plus expected ones,
 * and their number. */
void carp_cluster_nodepool_usage(const struct carp_cluster *c,
                                 const char *nodepool,
                                 struct carp_resources *usage, int64_t *nodes);
/* Forgets an expected NodeClaim whose create failed. */
void carp_cluster_forget_claim(struct carp_cluster *c, const char *name);
/* The capacity remembered for a NodeClaim not launched yet (borrowed; NULL
 * when unknown). */
const struct carp_resources *
carp_cluster_expected_capacity(const struct carp_cluster *c, const char *name);

/* The shape a NodeClaim not launched yet may take, from its NodeClass and
 * the instance types its requirements allow: the largest capacity (for
 * limits) and the smallest allocatable (what is sure to fit). Either out
 * may be NULL. Returns 0, or CARP_ENOENT when the class is unknown. */
int carp_cluster_claim_shape(const struct carp_cluster *c,
                             const struct carp_nodeclaim *nc,
                             struct carp_resources *max_capacity,
                             struct carp_resources *min_allocatable);

/* ---- nominations ---- */

/* Pod (by UID) should land on target (a node or NodeClaim name) within
 * ttl_ms; counted against the target's capacity until then or until it is
 * bound. */
void carp_cluster_nominate(struct carp_cluster *c, const char *pod_uid,
                           const char *target, uint64_t ttl_ms);
/* The target a pod is nominated to, or NULL. */
const char *carp_cluster_nomination(const struct carp_cluster *c,
                                    const char *pod_uid);
struct carp_nomination_info {
  const char *target; /* borrowed, like carp_cluster_nomination() */
  int64_t since_ms;   /* when the pod was nominated (epoch ms) */
  int64_t until_ms;   /* when the nomination lapses */
};
/* 1 and *out when the pod has a live nomination, else 0. */
int carp_cluster_nomination_info(const struct carp_cluster *c,
                                 const char *pod_uid,
                                 struct carp_nomination_info *out);
/* Marks the pod's live nomination as reported (the pod was told it waits
 * for a target that cannot take it): 1 the first time, 0 after that or
 * without a live nomination. A new nomination starts unreported. */
int carp_cluster_nomination_report(struct carp_cluster *c, const char *pod_uid);
/* Whether a node or NodeClaim has live nominations. */
int carp_cluster_is_nominated(const struct carp_cluster *c, const char *target);

/* ---- pod scheduling times (podtimes.c) ---- */

/* What the provisioner knows of a pending pod (epoch ms, 0: not yet), as
 * Karpenter's cluster state keeps it for the pod metrics. */
struct carp_pod_times {
  int64_t ack_ms;         /* first seen pending by the provisioner */
  int64_t decided_ms;     /* its first scheduling decision */
  int64_t schedulable_ms; /* first found a place (a node or a NodeClaim);
                             reset when a later decision finds none */
};
/* The provisioner saw the pod pending (once per pod; a bound pod is left
 * out). */
void carp_cluster_pod_ack(struct carp_cluster *c, const struct carp_pod *pod);
/* A scheduling decision about an unbound pod: schedulable when it was
 * placed. Returns 1 on its first decision, with the time since its ack in
 * *waited_ms (may be NULL), else 0. */
int carp_cluster_pod_decide(struct carp_cluster *c, const struct carp_pod *pod,
                            int schedulable, int64_t *waited_ms);
/* 1 and *out when the pod (by UID) has a record, else 0. */
int carp_cluster_pod_times(const struct carp_cluster *c, const char *pod_uid,
                           struct carp_pod_times *out);
/* Drops the pod's record: the pod metrics are done with it (the pod is
 * Ready or finished). Records of pods deleted, Ready or finished go on
 * their own too (deleted at once, the others at the next sweep). */
void carp_cluster_pod_forget(struct carp_cluster *c, const char *pod_uid);
/* Calls fn for each record whose pod is cached, until fn returns 0. */
typedef int (*carp_pod_times_fn)(const struct carp_pod *pod,
                                 const struct carp_pod_times *t, void *arg);
void carp_cluster_pod_times_each(const struct carp_cluster *c,
                                 carp_pod_times_fn fn, void *arg);

/* ---- node activity ---- */

/* Last time (epoch ms) a pod arrived on or left the node; 0 when unknown
 * since start-up. */
int64_t carp_cluster_last_pod_event(const struct carp_cluster *c,
                                    const char *node);

/* ---- virtual pods (virtual.c) ---- */

/* Replaces the virtual pods of a CapacityBuffer ("namespace/name"); n 0
 * forgets the buffer. The book takes a reference on each pod. A buffer
 * whose pods change loses its placement. Returns 1 when they changed. */
int carp_cluster_set_virtual_pods(struct carp_cluster *c, const char *buffer,
                                  struct carp_pod *const *pods, size_t n);
/* Every virtual pod, buffer by buffer in key order (borrowed until the
 * next carp_cluster_set_virtual_pods). */
const struct carp_pod *const *
carp_cluster_virtual_pods(const struct carp_cluster *c, size_t *n);
/* The buffer key ("namespace/name") of a virtual pod into out. */
void carp_cluster_virtual_owner(const struct carp_pod *p, char *out,
                                size_t size);

/* Where the provisioner's last solve put a buffer's virtual pods. */
struct carp_virtual_placement {
  uint32_t total;
  uint32_t existing;      /* on nodes that are up */
  uint32_t launching;     /* on NodeClaims not registered yet */
  uint32_t new_capacity;  /* on NodeClaims the solve opened */
  uint32_t unschedulable; /* nowhere (limits, requirements) */
  char why[256];          /* the first unschedulable pod's reason */
};
void carp_cluster_virtual_placed(struct carp_cluster *c, const char *buffer,
                                 const struct carp_virtual_placement *p);
/* 1 and *out when the buffer's current pods were placed, else 0. */
int carp_cluster_virtual_placement(const struct carp_cluster *c,
                                   const char *buffer,
                                   struct carp_virtual_placement *out);

/* ---- disruption marks ---- */

void carp_cluster_mark_for_deletion(struct carp_cluster *c,
                                    const char *nodeclaim);
void carp_cluster_unmark(struct carp_cluster *c, const char *nodeclaim);
int carp_cluster_is_marked(const struct carp_cluster *c, const char *nodeclaim);
/* A NodeClaim a disruption command replaces while its replacement
 * launches: unlike a deletion mark, its pods keep their node (nothing
 * needs a place for them yet), but a static NodePool counts the
 * replacement in its place. Dropped when the NodeClaim is deleted. */
void carp_cluster_mark_replaced(struct carp_cluster *c, const char *nodeclaim);
void carp_cluster_unmark_replaced(struct carp_cluster *c,
                                  const char *nodeclaim);
int carp_cluster_is_replaced(const struct carp_cluster *c,
                             const char *nodeclaim);

/* A NodePool's NodeClaims as a static NodePool counts them. */
struct carp_pool_count {
  /* every NodeClaim, deleting and created-not-seen ones too (what
   * limits.nodes counts) */
  int64_t total;
  /* not being deleted: marked, replaced and created-not-seen ones
   * included (what static provisioning fills up to replicas) */
  int64_t active;
  /* seen, not being deleted, neither marked nor replaced (what static
   * deprovisioning may remove) */
  int64_t running;
};
void carp_cluster_nodepool_count(const struct carp_cluster *c,
                                 const char *nodepool,
                                 struct carp_pool_count *out);

#endif
