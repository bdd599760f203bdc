/* Module termination (internal/termination). The node termination controller
 * (Karpenter's node/termination): a Node being deleted that carries the
 * karpenter.sh/termination finalizer is taken down in order, one reconcile at a
 * time per Node:
 *
 *   1. its NodeClaim is deleted too, when it is not being deleted already
 *      (deleting a Node deletes its NodeClaim);
 *   2. a NotReady Node whose VM the provider no longer finds is let go at
 *      once: there is nothing left to drain;
 *   3. taint karpenter.sh/disrupted:NoSchedule and label
 *      node.kubernetes.io/exclude-from-external-load-balancers=karpenter;
 *   4. drain through the Eviction API (policy/v1, the pod UID as
 *      precondition): mirror (static) pods, DaemonSet pods, finished pods
 *      and pods tolerating the disrupted taint are left alone; ordinary
 *      pods go first, critical ones (system-cluster-critical,
 *      system-node-critical) only once the others are gone. 404 and 409
 *      count as done, 429 (a PodDisruptionBudget) is retried with backoff
 *      (100 ms doubling to 10 s, jitter) and reported as FailedDraining; an
 *      answer a retry cannot fix (400, 422, a 404 naming no pod) waits three
 *      minutes and is reported as FailedDraining too; pods
 *      annotated karpenter.sh/do-not-disrupt are not evicted;
 *   5. the NodeClaim's terminationGracePeriod, counted from its deletion
 *      (stamped as karpenter.sh/nodeclaim-termination-timestamp), is a hard
 *      deadline: a pod still there at the deadline minus its own
 *      terminationGracePeriodSeconds is deleted outright with what grace
 *      is left, PDBs and do-not-disrupt notwithstanding. Before the
 *      deadline nothing is ever deleted, only evicted;
 *   6. once drained, the VolumeAttachments of the node are waited for
 *      (but those of volumes that pods staying on the node still use),
 *      until the attach/detach controller has deleted them or the
 *      terminationGracePeriod deadline has passed (AwaitingVolumeDetachment
 *      events while waiting);
 *   7. the VM is deleted through the provider until it reports NotFound
 *      (the NodeClaim's finalizer does the same; both are idempotent); a
 *      failed delete backs off per node (1 s doubling to a minute);
 *   8. the Node's finalizer is removed.
 *
 * The NodeClaim's conditions follow: Drained (Unknown with the pods left,
 * then True), VolumesDetached (Unknown AwaitingVolumeDetachment, then True,
 * or False TerminationGracePeriodElapsed), InstanceTerminating (True once
 * the VM delete is asked for). Every write carries a resourceVersion or UID
 * precondition and goes through the Kubernetes client's write gate; the
 * controller acts only while active (the leader).
 *
 * Metrics: karpenter_nodes_terminated_total{nodepool,zone},
 * karpenter_nodes_drained_total{nodepool},
 * karpenter_pods_eviction_requests_total{code},
 * karpenter_pods_drained_total{reason}. Events on the Node (Draining,
 * FailedDraining, TerminationGracePeriodExpiring, Drained,
 * AwaitingVolumeDetachment, VolumesNotDetached, Terminated),
 * on its NodeClaim, and on evicted (Evicted) and deleted (Disrupted) pods. */
#ifndef CARP_TERMINATION_H
#define CARP_TERMINATION_H

#include <stdint.h>

#include "carpenter/cluster.h"
#include "carpenter/controller.h"

struct carp_termination_options {
  unsigned concurrency; /* Nodes reconciled at once; default 64 */
};

/* The controller "node.termination" (env->provider required). */
int carp_termination_new(const struct carp_controller_env *env,
                         const struct carp_termination_options *o,
                         struct carp_controller **out);

/* ---- pure helpers (exposed for tests and the disruption controller) ---- */

/* Whether a pod's karpenter.sh/do-not-disrupt annotation holds at now_ms:
 * "true", or a duration not yet elapsed since the pod started. Any other
 * value is ignored, as Karpenter does. */
int carp_pod_do_not_disrupt(const struct carp_pod *p, int64_t now_ms);
/* Whether the pod tolerates karpenter.sh/disrupted:NoSchedule. */
int carp_pod_tolerates_disrupted(const struct carp_pod *p);

/* How the drain treats one pod. */
enum carp_drain_class {
  CARP_DRAIN_IGNORE = 0,  /* mirror, DaemonSet, finished, tolerating, or
                             stuck terminating for over a minute */
  CARP_DRAIN_TERMINATING, /* being deleted: waited for */
  CARP_DRAIN_EVICT,       /* to be evicted (or deleted at the deadline) */
};
enum carp_drain_class carp_drain_classify(const struct carp_pod *p,
                                          int64_t now_ms);
/* 0 for ordinary pods, 1 for critical ones (evicted last). */
int carp_drain_tier(const struct carp_pod *p);
/* When a pod must be deleted outright so that it gets its whole grace
 * period before deadline_ms (CARP_DURATION_NEVER: never): the deadline
 * minus its terminationGracePeriodSeconds. */
int64_t carp_drain_force_at(const struct carp_pod *p, int64_t deadline_ms);

#endif
