/* The NodeClaim lifecycle controller (Karpenter's nodeclaim/lifecycle):
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
 * Every write carries a resourceVersion precondition; a stale cache only
 * costs a retry. Work for one NodeClaim is serialised by the work queue;
 * launches run beside it and re-queue their NodeClaim when done. */
#ifndef CARP_LIFECYCLE_H
#define CARP_LIFECYCLE_H

#include <stdint.h>

#include <uv.h>

#include "carpenter/cluster.h"
#include "carpenter/events.h"
#include "carpenter/kube.h"
#include "carpenter/provider.h"

struct carp_lifecycle;
struct carp_metrics;

struct carp_lifecycle_options {
  struct carp_recorder *recorder;
  struct carp_metrics *metrics;
  unsigned concurrency;             /* default 64 */
  uint64_t launch_timeout_ms;       /* default 5 minutes */
  uint64_t registration_timeout_ms; /* default 15 minutes */
};

/* Adds informer handlers: call before carp_cluster_start(). */
int carp_lifecycle_new(uv_loop_t *loop, struct carp_cluster *cluster,
                       struct carp_kube *kube, struct carp_provider *provider,
                       const struct carp_lifecycle_options *o,
                       struct carp_lifecycle **out);
/* Acts only while active (the leader); activating queues every NodeClaim. */
void carp_lifecycle_set_active(struct carp_lifecycle *l, int active);
/* Stops, cancels launches and deletes in flight, waits for every callback,
 * then calls cb. The informer handlers stay registered: free only after
 * the cluster state (its informers) is closed. */
void carp_lifecycle_close(struct carp_lifecycle *l, void (*cb)(void *arg),
                          void *arg);
void carp_lifecycle_free(struct carp_lifecycle *l);

#endif
