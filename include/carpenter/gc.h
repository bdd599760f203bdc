/* Module gc (internal/gc). Garbage collection (Karpenter's
 * nodeclaim/garbagecollection, plus the leaked-VM sweep DESIGN.md calls for).
 * Every interval (2 minutes by default), while active (the leader) and with
 * every cache synced, the provider lists this cluster's VMs (tagged
 * carpenter-<cluster>). A list in which any region failed is ignored as a
 * whole: nothing is ever deleted from a partial view.
 *
 *   Leaked VMs   a VM that no NodeClaim in the cache owns - none has its
 *                UID (from the VM's description), its provider ID, or a
 *                write-ahead annotation naming it - is remembered from the
 *                first list that shows it so; still unowned after the
 *                grace period (5 minutes by default) it is deleted through
 *                the provider, guarded by its own NodeClaim UID. Counted in
 *                carpenter_garbage_collected_vms_total{region}.
 *   Lost VMs     a Launched NodeClaim, not being deleted, whose VM is not
 *                in the list and whose Node is absent or NotReady, is
 *                deleted (reason garbage_collected) when it is Registered
 *                or was launched at least a minute before the list began
 *                (so a VM created during the list is never mistaken for a
 *                lost one). Counted in karpenter_nodeclaims_disrupted_total
 *                {reason="garbage_collected"}; event GarbageCollected. */
#ifndef CARP_GC_H
#define CARP_GC_H

#include <stdint.h>

#include "carpenter/controller.h"

struct carp_gc_options {
  uint64_t interval_ms;        /* default 2 minutes */
  uint64_t leaked_vm_grace_ms; /* default 5 minutes */
  uint64_t launch_grace_ms;    /* unregistered claims; default 1 minute */
};

/* The controller "nodeclaim.garbagecollection" (env->provider required);
 * leading, it sweeps a second after it became the leader, then every
 * interval. */
int carp_gc_new(const struct carp_controller_env *env,
                const struct carp_gc_options *o, struct carp_controller **out);

#endif
