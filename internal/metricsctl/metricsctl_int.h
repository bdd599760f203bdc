/* Private parts of the cluster-state metrics controller, shared by
 * metricsctl.c (node, pool and cluster gauges, lifetime) and pods.c
 * (karpenter_pods_state and the pod durations). */
#ifndef CARP_METRICSCTL_INT_H
#define CARP_METRICSCTL_INT_H

#include <stdint.h>

#include "carpenter/api.h"
#include "carpenter/controller.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"
#include "carpenter/metricsctl.h"

/* Node label values, in the order of the node families' labels. */
enum {
  NL_NODE = 0,
  NL_NODEPOOL,
  NL_ZONE,
  NL_REGION,
  NL_INSTANCE_TYPE,
  NL_ARCH,
  NL_OS,
  NL_CAPACITY_TYPE,
  NL_MANAGED,
  NL_COUNT
};

/* One node in the scrape's snapshot (borrowed pointers: valid during the
 * rendering that built it). */
struct carp_mctl_node {
  const struct carp_node *node;
  const char *labels[NL_COUNT];
  struct carp_resources pod_requests;    /* non-terminal pods */
  struct carp_resources daemon_requests; /* of which DaemonSet pods */
  struct carp_resources pod_limits;      /* the same for limits */
  struct carp_resources daemon_limits;
  double lifetime_s;
  /* karpenter_pods_state's node labels for pods on this node, formatted:
   * `",nodepool="…",zone="…",arch="…",capacity_type="…",instance_type="…` */
  char *pod_labels;
  size_t pod_labels_len;
};

#define MCTL_CACHE       4096 /* node name cache slots */
#define MCTL_OWNER_CACHE 1024 /* owner link cache slots */
#define MCTL_COND_KINDS  5    /* kinds with status condition metrics */

struct carp_metricsctl {
  struct carp_controller base;
  struct carp_cluster *cluster; /* base.env.cluster */
  struct carp_metricsctl_options o;
  struct carp_metric *streams[64];
  struct carp_metric *m_cond_transitions; /* conditions.c */
  struct carp_metric *m_cond_durations;
  struct carp_metric *m_term_durations;
  /* operatorpkg's per-kind families (conditions.c): each kind's counter,
   * histogram, and the argument of its streamed gauges. */
  struct carp_mctl_cond_kind {
    struct carp_metricsctl *m;
    int kind;
    struct carp_metric *transitions, *durations, *terminations;
  } cond_kinds[MCTL_COND_KINDS];
  size_t nstreams;
  struct carp_metric *m_startup;
  struct carp_metric *m_bound;
  struct carp_metric *m_prov_bound; /* provisioning.c */
  struct carp_metric *m_prov_startup;
  struct carp_mctl_offerings *offerings; /* offerings.c: the last scrape's */
  int64_t unsynced_since_ms;             /* monotonic; 0 while synced */
  size_t pods_omitted; /* pods without a series at the last scrape */
  /* the snapshot */
  uint64_t snap_scrape;
  struct carp_mctl_node *snap;
  size_t nsnap, capsnap;
  struct carp_map snap_index; /* node name -> snapshot entry */
  struct {
    const char *key; /* interned node name */
    const struct carp_mctl_node *node;
  } node_cache[MCTL_CACHE];
  struct {
    const char *uid; /* interned owner UID */
    char link[320];
  } owner_cache[MCTL_OWNER_CACHE];
};

/* Registers a streamed gauge of Karpenter's (untyped when its name ends in
 * _count or _total), detached when the controller closes. cb gets m. */
struct carp_metric *carp__mctl_stream(struct carp_metricsctl *m,
                                      const char *name, const char *help,
                                      const char *const *labels,
                                      carp_metrics_stream_cb cb);
/* The same, cb getting arg. */
struct carp_metric *carp__mctl_stream_arg(struct carp_metricsctl *m,
                                          const char *name, const char *help,
                                          const char *const *labels,
                                          carp_metrics_stream_cb cb, void *arg);
/* conditions.c: operatorpkg's status condition and termination metrics;
 * registers the families and watches the NodePool, NodeClaim,
 * ProxmoxNodeClass, CapacityBuffer and Node informers. */
void carp__mctl_conditions_register(struct carp_metricsctl *m);
/* offerings.c: karpenter_cloudprovider_instance_type_* (the provider's
 * instance types of the NodeClasses in use, resolved once per scrape). */
void carp__mctl_offerings_register(struct carp_metricsctl *m);
void carp__mctl_offerings_free(struct carp_metricsctl *m);
/* Builds the snapshot once per scrape (scrape 0: always). */
void carp__mctl_snapshot(struct carp_metricsctl *m, uint64_t scrape);
const struct carp_mctl_node *carp__mctl_node_of(struct carp_metricsctl *m,
                                                const char *node_name);
/* pods.c */
/* karpenter_pods_state, and how many pods it left out. */
void carp__mctl_stream_pods(struct carp_metric_writer *w, void *arg);
void carp__mctl_stream_pods_omitted(struct carp_metric_writer *w, void *arg);
/* karpenter_pods_unbound_time_seconds: one series per pod not bound yet
 * (at most pod_series_limit of them, oldest first). */
void carp__mctl_stream_unbound(struct carp_metric_writer *w, void *arg);
/* karpenter_pods_unstarted_time_seconds: one series per pod not Ready and
 * not finished (capped like the others). */
void carp__mctl_stream_unstarted(struct carp_metric_writer *w, void *arg);
/* provisioning.c: the provisioning pod gauges and histograms. */
void carp__mctl_provisioning_register(struct carp_metricsctl *m);
void carp__mctl_provisioning_observe(struct carp_metricsctl *m,
                                     struct carp_metric *h,
                                     const struct carp_pod *p, int64_t at);
/* Formats the node's labels for karpenter_pods_state (pod_labels). */
void carp__mctl_pod_labels(struct carp_mctl_node *s);
/* The pod informer's map: observes the durations (while leading). */
void carp__mctl_pod_event(struct carp_controller *c,
                          const struct carp_objmeta *old,
                          const struct carp_objmeta *obj, int deleted);

#define MCTL(c) carp_container_of(c, struct carp_metricsctl, base)

#endif
