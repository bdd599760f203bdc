/* provisioning.c: Karpenter's "provisioning" pod metrics, which count from
 * when the provisioner first found a pod a place (a node or a NodeClaim)
 * rather than from the pod's creation, and only for pods it found one
 * for; and the time a pod seen pending waits for its first decision.
 * They read the cluster state's pod times (carp_cluster_pod_times), which
 * the provisioner writes, so they move only where the provisioner runs
 * (the leader).
 *
 *   karpenter_pods_provisioning_unbound_time_seconds     {name, namespace}
 *   karpenter_pods_provisioning_unstarted_time_seconds   {name, namespace}
 *   karpenter_pods_provisioning_scheduling_undecided_time_seconds
 *                                                        {name, namespace}
 *       computed at each scrape from the records (pods still pending or
 *       not Ready), at most pod_series_limit series each
 *   karpenter_pods_provisioning_bound_duration_seconds   histogram
 *   karpenter_pods_provisioning_startup_duration_seconds histogram
 *       observed from pod events, with the bound and startup durations */
#include "carpenter/cluster.h"
#include "metricsctl_int.h"

enum which { UNBOUND, UNSTARTED, UNDECIDED };

struct walk {
  struct carp_metric_writer *w;
  enum which which;
  int64_t now;
  size_t left;
};

static int put(const struct carp_pod *p, const struct carp_pod_times *t,
               void *arg)
{
  struct walk *k = arg;
  int64_t from;
  if (carp_pod_is_terminal(p))
    return 1;
  switch (k->which) {
  case UNBOUND:
    from = p->node_name ? 0 : t->schedulable_ms;
    break;
  case UNSTARTED:
    from = p->ready ? 0 : t->schedulable_ms;
    break;
  default:
    from = p->node_name || t->decided_ms ? 0 : t->ack_ms;
    break;
  }
  if (!from)
    return 1;
  carp_metric_writer_sample(
      k->w,
      CARP_VALUES(p->meta.name, p->meta.namespace ? p->meta.namespace : ""),
      k->now > from ? (double)(k->now - from) / 1000.0 : 0);
  return --k->left > 0;
}

static void stream(struct carp_metric_writer *w, struct carp_metricsctl *m,
                   enum which which)
{
  struct walk k = {w, which, carp_controller_now(&m->base),
                   m->o.pod_series_limit};
  if (k.left)
    carp_cluster_pod_times_each(m->cluster, put, &k);
}

static void stream_unbound(struct carp_metric_writer *w, void *arg)
{
  stream(w, arg, UNBOUND);
}

static void stream_unstarted(struct carp_metric_writer *w, void *arg)
{
  stream(w, arg, UNSTARTED);
}

static void stream_undecided(struct carp_metric_writer *w, void *arg)
{
  stream(w, arg, UNDECIDED);
}

void carp__mctl_provisioning_register(struct carp_metricsctl *m)
{
  static const char *const labels[] = {"name", "namespace", NULL};
  carp__mctl_stream(m, "karpenter_pods_provisioning_unbound_time_seconds",
                    "The time from when Karpenter first thinks the pod can "
                    "schedule until it binds. Note: this calculated from a "
                    "point in memory, not by the pod creation timestamp.",
                    labels, stream_unbound);
  carp__mctl_stream(m, "karpenter_pods_provisioning_unstarted_time_seconds",
                    "The time from when Karpenter first thinks the pod can "
                    "schedule until the pod is running. Note: this calculated "
                    "from a point in memory, not by the pod creation "
                    "timestamp.",
                    labels, stream_unstarted);
  carp__mctl_stream(
      m, "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
      "The time from when Karpenter has seen a pod without making a "
      "scheduling decision for the pod. Note: this calculated from a point "
      "in memory, not by the pod creation timestamp.",
      labels, stream_undecided);
  m->m_prov_bound = carp_metrics_histogram(
      m->base.env.metrics, "karpenter_pods_provisioning_bound_duration_seconds",
      "The time from when Karpenter first thinks the pod can schedule until "
      "it binds. Note: this calculated from a point in memory, not by the "
      "pod creation timestamp.",
      NULL, carp_metrics_duration_buckets, carp_metrics_duration_buckets_len);
  m->m_prov_startup = carp_metrics_histogram(
      m->base.env.metrics,
      "karpenter_pods_provisioning_startup_duration_seconds",
      "The time from when Karpenter first thinks the pod can schedule until "
      "the pod is running. Note: this calculated from a point in memory, not "
      "by the pod creation timestamp.",
      NULL, carp_metrics_duration_buckets, carp_metrics_duration_buckets_len);
}

/* From the pod's first place to at (PodScheduled or Ready time), for a
 * pod the provisioner found one for. */
void carp__mctl_provisioning_observe(struct carp_metricsctl *m,
                                     struct carp_metric *h,
                                     const struct carp_pod *p, int64_t at)
{
  struct carp_pod_times t;
  if (carp_cluster_pod_times(m->cluster, p->meta.uid, &t) && t.schedulable_ms &&
      at >= t.schedulable_ms)
    carp_metric_observe(h, NULL, (double)(at - t.schedulable_ms) / 1000.0);
}
