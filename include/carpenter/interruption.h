/* Module interruption (internal/interruption). Interruption: what Carpenter
 * does when a Proxmox host goes away - its analogue of Karpenter's interruption
 * handling (docs/hosts.md).
 *
 * The controller "nodeclaim.interruption" polls the provider's view of
 * every zone that holds a NodeClaim (carp_provider_zone_status) and deletes
 * a NodeClaim, forcefully, when
 *   - its zone (topology.kubernetes.io/zone and region labels, else the
 *     carpenter.dev/vm write-ahead annotation) has been Offline for at
 *     least the toleration (--host-offline-toleration, 5 minutes), by the
 *     provider's "since" - so a host back online in between starts over;
 *   - and its Node is not Ready (absent, NotReady or Unknown): a Node that
 *     still answers keeps its NodeClaim, whatever the Proxmox API says (a
 *     host cut off from the Proxmox cluster may well run its VMs).
 * The NodeClaim's finalizer then goes as usual: the node cannot be drained
 * (its pods are stuck terminating and left after a minute), and the
 * provider answers the VM's delete as gone because its host is offline;
 * the garbage collector's sweep deletes the VM once the host is back. The
 * pods' new NodeClaims never go to that host meanwhile (placement skips
 * it). Counted in karpenter_nodeclaims_disrupted_total{reason=
 * "host_offline", termination_mode="forceful"}; events HostOffline on the
 * NodeClaim and its Node.
 *
 * A host in maintenance is not this controller's business: the provider
 * reports its VMs as drifted (HostMaintenance) and the disruption
 * controller replaces them gracefully. Unknown zones (a region the provider
 * cannot read) are left alone. */
#ifndef CARP_INTERRUPTION_H
#define CARP_INTERRUPTION_H

#include <stdint.h>

#include "carpenter/controller.h"

struct carp_interruption_options {
  uint64_t host_offline_toleration_ms; /* default 5 minutes */
  uint64_t poll_interval_ms;           /* default 10 s */
};

/* The controller "nodeclaim.interruption" (env->provider required). */
int carp_interruption_new(const struct carp_controller_env *env,
                          const struct carp_interruption_options *o,
                          struct carp_controller **out);

#endif
