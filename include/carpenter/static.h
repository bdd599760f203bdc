/* Module static (internal/static). Static NodePools (spec.replicas,
 * Karpenter 1.8+): a NodePool with replicas keeps exactly that many nodes,
 * whatever the pods ask for. Two controllers, as Karpenter has them, each keyed
 * by NodePool name:
 *
 *   static.provisioning    launches NodeClaims of the pool's template
 *                          while fewer than replicas are not being
 *                          deleted, never beyond limits.nodes; a pool must
 *                          be Ready (valid, its class Ready). NodeClaims
 *                          marked for deletion by a disruption decision
 *                          count as there (a replacement is being made).
 *   static.deprovisioning  deletes NodeClaims while more than replicas run
 *                          (not being deleted, not marked): first those
 *                          not launched yet, then nodes without pods to
 *                          move, then the cheapest to disrupt (Karpenter's
 *                          disruption cost), nodes with do-not-disrupt
 *                          pods last. Each is marked for deletion before
 *                          its delete is sent, so no reconcile counts it
 *                          again; termination drains it as usual.
 *
 * `kubectl scale nodepool NAME --replicas N` changes spec.replicas
 * through the scale subresource; status.nodes (the scale's status
 * replicas) is the NodePool controller's count of launched NodeClaims.
 * Static pools are left out of provisioning for pods and of
 * consolidation; a pool whose mode was switched (carp_nodepool_mode_
 * switched) is not acted on. Drift of static nodes belongs to the
 * disruption controller (Karpenter's StaticDrift: replacement first,
 * within the Drifted budget); it marks what it replaces, which these
 * controllers then count as there. */
#ifndef CARP_STATIC_H
#define CARP_STATIC_H

#include "carpenter/controller.h"

int carp_static_provisioning_new(const struct carp_controller_env *env,
                                 struct carp_controller **out);
int carp_static_deprovisioning_new(const struct carp_controller_env *env,
                                   struct carp_controller **out);

#endif
