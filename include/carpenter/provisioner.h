/* The provisioner (Karpenter's provisioning controller): pending pods the
 * kube-scheduler could not place open a batch; when the batch closes and
 * the caches are synced, the scheduler simulation decides which pods fit
 * existing nodes or in-flight NodeClaims and which need new NodeClaims,
 * and the provisioner creates those, nominates pods to their targets and
 * explains, with an event and a log line, every pod that fits nowhere.
 *
 * It acts only while active (the leader); a follower's batches are
 * dropped, and becoming active starts a batch at once. */
#ifndef CARP_PROVISIONER_H
#define CARP_PROVISIONER_H

#include <stdint.h>

#include <uv.h>

#include "carpenter/cluster.h"
#include "carpenter/events.h"
#include "carpenter/kube.h"
#include "carpenter/provider.h"

struct carp_provisioner;
struct carp_metrics;

struct carp_provisioner_options {
  uint64_t batch_idle_ms; /* --batch-idle-duration */
  uint64_t batch_max_ms;  /* --batch-max-duration */
  int ignore_preferences;
  struct carp_recorder *recorder; /* optional */
  struct carp_metrics *metrics;   /* optional */
};

/* Adds its informer handlers: call before carp_cluster_start(). */
int carp_provisioner_new(uv_loop_t *loop, struct carp_cluster *cluster,
                         struct carp_kube *kube, struct carp_provider *provider,
                         const struct carp_provisioner_options *o,
                         struct carp_provisioner **out);
void carp_provisioner_set_active(struct carp_provisioner *p, int active);
/* Starts a batch (as a pending pod would). */
void carp_provisioner_trigger(struct carp_provisioner *p);
/* Stops batching and waits for creates in flight, then calls cb. The
 * informer handlers stay registered: free only after the cluster state
 * (its informers) is closed. */
void carp_provisioner_close(struct carp_provisioner *p, void (*cb)(void *arg),
                            void *arg);
void carp_provisioner_free(struct carp_provisioner *p);

#endif
