/* Module nodepool (internal/nodepool). The NodePool controllers (Karpenter's
 * nodepool/readiness, validation, counter and hash controllers), one work queue
 * keyed by NodePool name:
 *
 *   ValidationSucceeded  True, or False with reason NodePoolValidationFailed
 *                        and the broken rules (an object that slipped past
 *                        the API server's validation is refused here).
 *   NodeClassReady       True when its ProxmoxNodeClass exists and is
 *                        Ready; False NodeClassNotFound, NodeClassTerminating
 *                        or the class's own Ready reason; Unknown
 *                        NodeClassReadinessUnknown.
 *   Ready                both (carp_condset_nodepool); each condition
 *                        carries the generation it was computed from.
 *   counter              status.resources: the capacity of the pool's
 *                        launched NodeClaims summed, with "nodes";
 * status.nodes; nodeClassObservedGeneration. NodeClaim events queue their pool
 * after a short debounce. hash                 stamps
 * karpenter.sh/nodepool-hash and -hash-version on the NodePool when stale, then
 * re-stamps NodeClaims whose hash version differs (and that have no Drifted
 *                        condition), as Karpenter does after a version change.
 *
 * One write per reconcile, each with a resourceVersion precondition; the
 * watch event of a successful write queues the next step. Writes happen
 * only while active (the leader). */
#ifndef CARP_NODEPOOL_CONTROLLER_H
#define CARP_NODEPOOL_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/cluster.h"
#include "carpenter/controller.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"

struct carp_nodepool_controller_options {
  uint64_t debounce_ms; /* NodeClaim events; default 1 s */
  uint64_t resync_ms;   /* every pool again; default 60 s */
  /* Called when a NodePool's Ready condition turns True in the cache (the
   * provisioner may now use it). Optional. */
  void (*on_ready)(void *arg, const char *nodepool);
  void *on_ready_arg;
};

/* The controller "nodepool" (adds informer handlers: call before
 * carp_cluster_start). */
int carp_nodepool_controller_new(
    const struct carp_controller_env *env,
    const struct carp_nodepool_controller_options *o,
    struct carp_controller **out);

/* ---- pure parts (tests) ---- */

/* The status a NodePool should have: st starts as a copy of the cached
 * status (carp_nodepool_status_copy) and gets the conditions, resources,
 * nodes and nodeClassObservedGeneration. cls is the pool's class (NULL
 * when not found); claims are the pool's NodeClaims. Returns 1 when st
 * differs from np->status. */
int carp_nodepool_status_compute(const struct carp_nodepool *np,
                                 const struct carp_nodeclass *cls,
                                 struct carp_objmeta *const *claims,
                                 size_t nclaims, int64_t now_ms,
                                 struct carp_nodepool_status *st);
/* The merge patch writing st over old: like carp_nodepool_status_patch,
 * but resources present in old and gone (zero) in st are set to null so
 * the merge removes them. */
int carp_nodepool_status_diff_patch(const struct carp_nodepool_status *old,
                                    const struct carp_nodepool_status *st,
                                    const char *rv, struct carp_buf *out);

#endif
