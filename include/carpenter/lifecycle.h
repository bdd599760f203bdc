/* Module lifecycle (internal/lifecycle). The NodeClaim lifecycle controller
 * (Karpenter's nodeclaim/lifecycle):
 *
 *   Launched      provider create, after the VMID is written ahead onto
 *                 the NodeClaim; labels and status copied from the VM;
 *                 Unknown with the failure reason while retrying; deleted
 *                 when not launched within 5 minutes or when there is no
 *                 capacity (pods are then tried again elsewhere).
 *   Registered    the Node with the NodeClaim's provider ID: its labels,
 *                 annotations and taints synced from the NodeClaim, an
 *                 owner reference and the termination finalizer added,
 *                 karpenter.sh/unregistered removed, label
 *                 karpenter.sh/registered=true. Deleted when no Node came
 *                 within 15 minutes.
 *   Initialized   the Node is Ready and its startup taints are gone:
 *                 label karpenter.sh/initialized=true.
 *   Ready         all three.
 *   finalize      on deletion: delete the Node and wait for it (the
 *                 termination controller drains it), delete the VM until
 *                 the provider says it is gone, remove the finalizer.
 *
 * Writes per NodeClaim, from creation to initialized: the write-ahead
 * record (VMID annotation, instance labels, finalizer), the launch result
 * (status), registration (status; Initialized too when the Node joins
 * Ready), and Initialized on its own only for a Node that joined NotReady.
 * Every write carries a resourceVersion precondition; a stale cache only
 * costs a retry. Work for one NodeClaim is serialised by the work queue;
 * launches run beside it and re-queue their NodeClaim when done. */
#ifndef CARP_LIFECYCLE_H
#define CARP_LIFECYCLE_H

#include <stdint.h>

#include "carpenter/controller.h"

struct carp_lifecycle_options {
  unsigned concurrency;             /* default 64 */
  uint64_t launch_timeout_ms;       /* default 5 minutes */
  uint64_t registration_timeout_ms; /* default 15 minutes */
};

/* The controller "nodeclaim.lifecycle" (env->provider required). */
int carp_lifecycle_new(const struct carp_controller_env *env,
                       const struct carp_lifecycle_options *o,
                       struct carp_controller **out);

#endif
