/* Module repair (internal/repair): node repair (Karpenter's node.health
 * controller, its NodeRepair feature). A Node whose Ready condition has been
 * False or Unknown for the toleration (30 minutes by default) is replaced: its
 * NodeClaim gets karpenter.sh/nodeclaim-termination-timestamp = now (so
 * the drain does not wait: pods are deleted, not evicted) and is deleted;
 * the provisioner makes a new node for its pods. Budgets do not apply, as
 * for expiration.
 *
 * Repair holds while more than max_unhealthy_percent of the NodePool's
 * nodes (rounded up; of the cluster's for a NodeClaim without a pool) are
 * unhealthy: when most of a pool is NotReady the cause is elsewhere (the
 * network, the control plane, a Proxmox host) and new nodes would not fix
 * it. Event NodeRepairBlocked on the Node, NodeClaim and NodePool then.
 *
 * Metrics: karpenter_nodeclaims_disrupted_total{reason="unhealthy"} and
 * karpenter_nodeclaims_unhealthy_disrupted_total{condition, nodepool,
 * capacity_type, image_id}. Event NodeRepair on the Node and NodeClaim. */
#ifndef CARP_REPAIR_H
#define CARP_REPAIR_H

#include <stdint.h>

#include "carpenter/controller.h"

struct carp_repair_options {
  uint64_t toleration_ms;    /* 0: 30 minutes */
  int max_unhealthy_percent; /* 0-100 */
};

/* The controller "node.health"; o NULL: 30 minutes and 20 %. */
int carp_repair_new(const struct carp_controller_env *env,
                    const struct carp_repair_options *o,
                    struct carp_controller **out);

#endif
