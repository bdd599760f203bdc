/* Module provisioning (internal/provisioning). The provisioner (Karpenter's
 * provisioning controller): pending pods the kube-scheduler could not place
 * open a batch; when the batch closes and the caches are synced, the scheduler
 * simulation decides which pods fit existing nodes or in-flight NodeClaims and
 * which need new NodeClaims, and the provisioner creates those, nominates pods
 * to their targets and explains, with an event and a log line, every pod that
 * fits nowhere.
 *
 * It acts only while active (the leader); a follower's batches are
 * dropped, and becoming active starts a batch at once. */
#ifndef CARP_PROVISIONER_H
#define CARP_PROVISIONER_H

#include <stdint.h>

#include "carpenter/controller.h"

struct carp_provisioner_options {
  uint64_t batch_idle_ms; /* --batch-idle-duration */
  uint64_t batch_max_ms;  /* --batch-max-duration */
  int ignore_preferences;
};

/* The controller "provisioner" (env->provider required; adds informer
 * handlers: call before carp_cluster_start). */
int carp_provisioner_new(const struct carp_controller_env *env,
                         const struct carp_provisioner_options *o,
                         struct carp_controller **out);
/* Starts a batch (as a pending pod would). */
void carp_provisioner_trigger(struct carp_controller *provisioner);

#endif
