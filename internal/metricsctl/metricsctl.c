/* metricsctl.c: the cluster-state metrics (see include/carpenter/
 * metricsctl.h). Node, pool and cluster gauges are streamed at scrape time
 * from a per-scrape snapshot of the nodes (their labels and the requests
 * of the pods bound to them, summed through the pods-by-node index);
 * pods.c streams karpenter_pods_state and observes the pod durations. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/overlay.h"
#include "carpenter/timeutil.h"
#include "metricsctl_int.h"

#define LABEL_ZONE          "topology.kubernetes.io/zone"
#define LABEL_REGION        "topology.kubernetes.io/region"
#define LABEL_INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define LABEL_ARCH          "kubernetes.io/arch"
#define LABEL_OS            "kubernetes.io/os"

/* ---- the snapshot ---- */

static const char *label_or(const struct carp_node *n, const char *key,
                            const char *dflt)
{
  const char *v = carp_kvset_get(n->meta.labels, key);
  return v ? v : dflt;
}

static void snap_clear(struct carp_metricsctl *m)
{
  size_t i;
  for (i = 0; i < m->nsnap; i++) {
    carp_resources_cleanup(&m->snap[i].pod_requests);
    carp_resources_cleanup(&m->snap[i].daemon_requests);
    carp_resources_cleanup(&m->snap[i].pod_limits);
    carp_resources_cleanup(&m->snap[i].daemon_limits);
    carp_free(m->snap[i].pod_labels);
  }
  m->nsnap = 0;
  carp_map_free(&m->snap_index);
  carp_map_init(&m->snap_index);
  memset(m->node_cache, 0, sizeof(m->node_cache));
  memset(m->owner_cache, 0, sizeof(m->owner_cache));
}

void carp__mctl_snapshot(struct carp_metricsctl *m, uint64_t scrape)
{
  struct carp_store *nodes = carp_informer_store(m->cluster->nodes);
  struct carp_store_iter it;
  struct carp_objmeta *o;
  int64_t now = carp_time_wall_ms();
  size_t i;
  if (m->snap_scrape == scrape && scrape)
    return;
  snap_clear(m);
  m->snap_scrape = scrape;
  if (carp_store_len(nodes) > m->capsnap) {
    m->capsnap = carp_store_len(nodes);
    m->snap = carp_reallocarray(m->snap, m->capsnap, sizeof(*m->snap));
  }
  carp_store_iter_init(&it);
  while ((o = carp_store_next(nodes, &it)) && m->nsnap < m->capsnap) {
    const struct carp_node *n = (const struct carp_node *)o;
    struct carp_mctl_node *s = &m->snap[m->nsnap];
    struct carp_objmeta *const *pods;
    size_t np;
    const char *pool = carp_kvset_get(n->meta.labels, CARP_LABEL_NODEPOOL_KEY);
    memset(s, 0, sizeof(*s));
    s->node = n;
    s->labels[NL_NODE] = n->meta.name;
    s->labels[NL_NODEPOOL] = pool ? pool : "";
    s->labels[NL_ZONE] = label_or(n, LABEL_ZONE, "");
    s->labels[NL_REGION] = label_or(n, LABEL_REGION, "");
    s->labels[NL_INSTANCE_TYPE] = label_or(n, LABEL_INSTANCE_TYPE, "");
    s->labels[NL_ARCH] = label_or(n, LABEL_ARCH, "");
    s->labels[NL_OS] = label_or(n, LABEL_OS, "");
    s->labels[NL_CAPACITY_TYPE] = label_or(n, CARP_LABEL_CAPACITY_TYPE_KEY, "");
    s->labels[NL_MANAGED] = pool ? "true" : "false";
    s->lifetime_s =
        n->meta.creation_ms ? (double)(now - n->meta.creation_ms) / 1000.0 : 0;
    pods = carp_cluster_pods_on_node(m->cluster, n->meta.name, &np);
    for (i = 0; i < np; i++) {
      const struct carp_pod *p = (const struct carp_pod *)pods[i];
      if (carp_pod_is_terminal(p) || !p->spec)
        continue;
      carp_resources_add(&s->pod_requests, &p->spec->requests);
      carp_resources_add(&s->pod_limits, &p->spec->limits);
      if (carp_pod_is_daemon(p)) {
        carp_resources_add(&s->daemon_requests, &p->spec->requests);
        carp_resources_add(&s->daemon_limits, &p->spec->limits);
      }
    }
    carp__mctl_pod_labels(s);
    carp_map_puts(&m->snap_index, n->meta.name, s);
    m->nsnap++;
  }
}

/* The snapshot of the node a pod is bound to (pods share the interned
 * node name, so a pointer-keyed cache in front of the map does). */
const struct carp_mctl_node *carp__mctl_node_of(struct carp_metricsctl *m,
                                                const char *node_name)
{
  size_t slot;
  const struct carp_mctl_node *s;
  if (!node_name)
    return NULL;
  slot = ((uintptr_t)node_name >> 4) % MCTL_CACHE;
  if (m->node_cache[slot].key == node_name)
    return m->node_cache[slot].node;
  s = carp_map_gets(&m->snap_index, node_name);
  m->node_cache[slot].key = node_name;
  m->node_cache[slot].node = s;
  return s;
}

/* ---- resource samples ---- */

/* Karpenter's resource_type: the resource name, lower case, '-' → '_'. */
static void resource_label(const char *name, char *out, size_t size)
{
  size_t i;
  for (i = 0; name[i] && i + 1 < size; i++) {
    char ch = name[i];
    out[i] = ch == '-' ? '_' : (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
  }
  out[i] = '\0';
}

/* Writes one sample per resource of r: cpu in cores, the others as they
 * are. with_pods includes "pods" (for the request gauges the number of
 * pods, as Karpenter's RequestsForPods counts them; the capacity panels
 * read it); extended resources always follow. */
static void put_resources(struct carp_metric_writer *w,
                          const struct carp_mctl_node *s,
                          const struct carp_resources *r, int with_pods)
{
  const char *v[NL_COUNT + 2];
  char ext[128];
  uint32_t i;
  memcpy(v, s->labels, sizeof(s->labels));
  v[NL_COUNT + 1] = NULL;
  v[NL_COUNT] = "cpu";
  carp_metric_writer_sample(w, v, (double)r->cpu / 1000.0);
  v[NL_COUNT] = "memory";
  carp_metric_writer_sample(w, v, (double)r->memory);
  v[NL_COUNT] = "ephemeral_storage";
  carp_metric_writer_sample(w, v, (double)r->ephemeral);
  if (with_pods) {
    v[NL_COUNT] = "pods";
    carp_metric_writer_sample(w, v, (double)r->pods);
  }
  for (i = 0; i < r->nextended; i++) {
    resource_label(r->extended[i].name, ext, sizeof(ext));
    v[NL_COUNT] = ext;
    carp_metric_writer_sample(w, v, (double)r->extended[i].value);
  }
}

static void stream_allocatable(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  size_t i;
  carp__mctl_snapshot(m, carp_metric_writer_scrape(w));
  for (i = 0; i < m->nsnap; i++)
    put_resources(w, &m->snap[i], &m->snap[i].node->allocatable, 1);
}

/* One of the snapshot's per-node sums (at offset off in each entry). */
static void stream_sums(struct carp_metric_writer *w, struct carp_metricsctl *m,
                        size_t off)
{
  size_t i;
  carp__mctl_snapshot(m, carp_metric_writer_scrape(w));
  for (i = 0; i < m->nsnap; i++)
    put_resources(
        w, &m->snap[i],
        (const struct carp_resources *)((const char *)&m->snap[i] + off), 1);
}

static void stream_pod_requests(struct carp_metric_writer *w, void *arg)
{
  stream_sums(w, arg, offsetof(struct carp_mctl_node, pod_requests));
}

static void stream_daemon_requests(struct carp_metric_writer *w, void *arg)
{
  stream_sums(w, arg, offsetof(struct carp_mctl_node, daemon_requests));
}

static void stream_pod_limits(struct carp_metric_writer *w, void *arg)
{
  stream_sums(w, arg, offsetof(struct carp_mctl_node, pod_limits));
}

static void stream_daemon_limits(struct carp_metric_writer *w, void *arg)
{
  stream_sums(w, arg, offsetof(struct carp_mctl_node, daemon_limits));
}

static void stream_overhead(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  size_t i;
  carp__mctl_snapshot(m, carp_metric_writer_scrape(w));
  for (i = 0; i < m->nsnap; i++) {
    const struct carp_node *n = m->snap[i].node;
    struct carp_resources o;
    memset(&o, 0, sizeof(o));
    o.cpu = n->capacity.cpu - n->allocatable.cpu;
    o.memory = n->capacity.memory - n->allocatable.memory;
    o.ephemeral = n->capacity.ephemeral - n->allocatable.ephemeral;
    o.pods = n->capacity.pods - n->allocatable.pods;
    put_resources(w, &m->snap[i], &o, 1);
  }
}

static void stream_lifetime(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  const char *v[NL_COUNT + 1];
  size_t i;
  carp__mctl_snapshot(m, carp_metric_writer_scrape(w));
  v[NL_COUNT] = NULL;
  for (i = 0; i < m->nsnap; i++) {
    memcpy(v, m->snap[i].labels, sizeof(m->snap[i].labels));
    carp_metric_writer_sample(w, v, m->snap[i].lifetime_s);
  }
}

static void stream_utilization(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  double req_cpu = 0, req_mem = 0, alloc_cpu = 0, alloc_mem = 0;
  size_t i;
  carp__mctl_snapshot(m, carp_metric_writer_scrape(w));
  for (i = 0; i < m->nsnap; i++) {
    req_cpu += (double)m->snap[i].pod_requests.cpu;
    req_mem += (double)m->snap[i].pod_requests.memory;
    alloc_cpu += (double)m->snap[i].node->allocatable.cpu;
    alloc_mem += (double)m->snap[i].node->allocatable.memory;
  }
  if (alloc_cpu > 0)
    carp_metric_writer_sample(w, CARP_VALUES("cpu"),
                              100.0 * req_cpu / alloc_cpu);
  if (alloc_mem > 0)
    carp_metric_writer_sample(w, CARP_VALUES("memory"),
                              100.0 * req_mem / alloc_mem);
}

/* ---- NodePools ---- */

static void pool_sample(struct carp_metric_writer *w, const char *pool,
                        const char *resource, double v)
{
  carp_metric_writer_sample(w, CARP_VALUES(pool, resource), v);
}

static void stream_pool_usage(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  struct carp_store_iter it;
  struct carp_objmeta *o;
  char ext[128];
  uint32_t i;
  carp_store_iter_init(&it);
  while (
      (o = carp_store_next(carp_informer_store(m->cluster->nodepools), &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)o;
    const struct carp_resources *r = &np->status.resources;
    pool_sample(w, o->name, "cpu", (double)r->cpu / 1000.0);
    pool_sample(w, o->name, "memory", (double)r->memory);
    pool_sample(w, o->name, "ephemeral_storage", (double)r->ephemeral);
    pool_sample(w, o->name, "pods", (double)r->pods);
    pool_sample(w, o->name, "nodes", (double)np->status.nodes);
    for (i = 0; i < r->nextended; i++) {
      resource_label(r->extended[i].name, ext, sizeof(ext));
      pool_sample(w, o->name, ext, (double)r->extended[i].value);
    }
  }
}

static void stream_pool_limit(struct carp_metric_writer *w, void *arg)
{
  static const char *const core[] = {"cpu", "memory", "ephemeral-storage",
                                     "pods", "nodes"};
  struct carp_metricsctl *m = arg;
  struct carp_store_iter it;
  struct carp_objmeta *o;
  char label[128];
  size_t i;
  int64_t v;
  carp_store_iter_init(&it);
  while (
      (o = carp_store_next(carp_informer_store(m->cluster->nodepools), &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)o;
    const struct carp_resources *l = &np->limits.values;
    for (i = 0; i < CARP_ARRAY_LEN(core); i++) {
      if (!carp_nodepool_limit(np, core[i], &v))
        continue;
      resource_label(core[i], label, sizeof(label));
      pool_sample(w, o->name, label,
                  !strcmp(core[i], "cpu") ? (double)v / 1000.0 : (double)v);
    }
    for (i = 0; i < l->nextended; i++) {
      if (!strcmp(l->extended[i].name, "nodes"))
        continue;
      resource_label(l->extended[i].name, label, sizeof(label));
      pool_sample(w, o->name, label, (double)l->extended[i].value);
    }
  }
}

/* Karpenter's cost tracker: the summed hourly price of a NodePool's
 * NodeClaims, each at its offering's price (NodeOverlays applied); a
 * claim whose price is unknown (not launched yet, a type no longer
 * offered) adds nothing. Every NodePool has a series, 0 when empty. */
static void stream_pool_cost(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  struct carp_price_book *book =
      carp_price_book_new(m->cluster, m->base.env.provider, "metrics.state");
  struct carp_store_iter it;
  struct carp_objmeta *o;
  carp_store_iter_init(&it);
  while (
      (o = carp_store_next(carp_informer_store(m->cluster->nodepools), &it))) {
    struct carp_objmeta *const *claims;
    size_t n, i;
    double sum = 0, price;
    claims = carp_cluster_nodeclaims_of_pool(m->cluster, o->name, &n);
    for (i = 0; i < n; i++)
      if ((price = carp_price_book_claim(
               book, (const struct carp_nodeclaim *)claims[i])) > 0)
        sum += price;
    carp_metric_writer_sample(w, CARP_VALUES(o->name), sum);
  }
  carp_price_book_free(book);
}

/* ---- cluster state ---- */

static void stream_node_count(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  struct carp_store *claims = carp_informer_store(m->cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_objmeta *o;
  size_t n = carp_store_len(carp_informer_store(m->cluster->nodes));
  /* Karpenter's state nodes: every Node, plus NodeClaims without one. */
  carp_store_iter_init(&it);
  while ((o = carp_store_next(claims, &it)))
    if (!carp_cluster_node_of_nodeclaim(m->cluster,
                                        (const struct carp_nodeclaim *)o))
      n++;
  carp_metric_writer_sample(w, NULL, (double)n);
}

static void stream_synced(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  int synced = carp_cluster_synced(m->cluster);
  if (synced)
    m->unsynced_since_ms = 0;
  else if (!m->unsynced_since_ms)
    m->unsynced_since_ms = (int64_t)carp_time_mono_ms();
  carp_metric_writer_sample(w, NULL, synced ? 1 : 0);
}

static void stream_unsynced_time(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  double s = 0;
  if (!carp_cluster_synced(m->cluster) && m->unsynced_since_ms)
    s = (double)((int64_t)carp_time_mono_ms() - m->unsynced_since_ms) / 1000.0;
  carp_metric_writer_sample(w, NULL, s);
}

/* ---- lifetime ---- */

#define NODE_LABELS                                                            \
  "node_name", "nodepool", "zone", "region", "instance_type", "arch", "os",    \
      "capacity_type", "managed"

struct carp_metric *carp__mctl_stream(struct carp_metricsctl *m,
                                      const char *name, const char *help,
                                      const char *const *labels,
                                      carp_metrics_stream_cb cb)
{
  return carp__mctl_stream_arg(m, name, help, labels, cb, m);
}

struct carp_metric *carp__mctl_stream_arg(struct carp_metricsctl *m,
                                          const char *name, const char *help,
                                          const char *const *labels,
                                          carp_metrics_stream_cb cb, void *arg)
{
  /* Karpenter's gauge names ending in _count or _total are exported
   * untyped: promtool keeps those suffixes for histograms and summaries,
   * and for counters. */
  size_t n = strlen(name);
  enum carp_metric_type type = n > 6 && (!strcmp(name + n - 6, "_count") ||
                                         !strcmp(name + n - 6, "_total"))
                                   ? CARP_METRIC_UNTYPED
                                   : CARP_METRIC_GAUGE;
  struct carp_metric *f = carp_metrics_stream(m->base.env.metrics, name, help,
                                              type, labels, cb, arg);
  if (f && m->nstreams == CARP_ARRAY_LEN(m->streams)) {
    /* A stream not detached at close would be called after it: a table
     * too small is a programming error, caught by any start. */
    fprintf(stderr, "metricsctl: more than %zu stream families (%s)\n",
            CARP_ARRAY_LEN(m->streams), name);
    abort();
  }
  if (f)
    m->streams[m->nstreams++] = f;
  return f;
}

static void register_all(struct carp_metricsctl *m)
{
  static const double startup_q[] = {0, 0.5, 0.9, 0.99, 1};
  carp__mctl_stream(m, "karpenter_nodes_allocatable",
                    "Node allocatable are the resources allocatable by nodes.",
                    CARP_LABELS(NODE_LABELS, "resource_type"),
                    stream_allocatable);
  carp__mctl_stream(
      m, "karpenter_nodes_total_pod_requests",
      "Node total pod requests are the resources requested by pods bound "
      "to nodes, including the DaemonSet pods.",
      CARP_LABELS(NODE_LABELS, "resource_type"), stream_pod_requests);
  carp__mctl_stream(
      m, "karpenter_nodes_total_daemon_requests",
      "Node total daemon requests are the resource requested by DaemonSet "
      "pods bound to nodes.",
      CARP_LABELS(NODE_LABELS, "resource_type"), stream_daemon_requests);
  carp__mctl_stream(m, "karpenter_nodes_total_pod_limits",
                    "Node total pod limits are the resources specified by pod "
                    "limits, including the DaemonSet pods.",
                    CARP_LABELS(NODE_LABELS, "resource_type"),
                    stream_pod_limits);
  carp__mctl_stream(m, "karpenter_nodes_total_daemon_limits",
                    "Node total daemon limits are the resources specified by "
                    "DaemonSet pod limits.",
                    CARP_LABELS(NODE_LABELS, "resource_type"),
                    stream_daemon_limits);
  carp__mctl_stream(
      m, "karpenter_nodes_system_overhead",
      "Node system daemon overhead are the resources reserved for system "
      "overhead, the difference between the node's capacity and "
      "allocatable values are reported by the status.",
      CARP_LABELS(NODE_LABELS, "resource_type"), stream_overhead);
  carp__mctl_stream(m, "karpenter_nodes_current_lifetime_seconds",
                    "Node age in seconds", CARP_LABELS(NODE_LABELS),
                    stream_lifetime);
  carp__mctl_stream(m, "karpenter_cluster_utilization_percent",
                    "Utilization of allocatable resources by pod requests",
                    CARP_LABELS("resource_type"), stream_utilization);
  carp__mctl_stream(
      m, "karpenter_pods_state",
      "Pod state is the current state of pods. This metric can be used "
      "several ways as it is labeled by the pod name, namespace, owner, "
      "node, nodepool name, zone, architecture, capacity type, instance "
      "type and pod phase.",
      CARP_LABELS("name", "namespace", "owner", "node", "scheduled", "nodepool",
                  "zone", "arch", "capacity_type", "instance_type", "phase",
                  "ready", "managed"),
      carp__mctl_stream_pods);
  carp__mctl_stream(
      m, "carpenter_pods_state_series_omitted",
      "Pods left out of karpenter_pods_state at the last scrape: it has "
      "at most --metrics-pod-series-limit series, pods that are pending, "
      "not running or not ready first.",
      NULL, carp__mctl_stream_pods_omitted);
  carp__mctl_stream(
      m, "karpenter_nodepools_usage",
      "The amount of resources that have been provisioned for a nodepool. "
      "Labeled by nodepool name and resource type.",
      CARP_LABELS("nodepool", "resource_type"), stream_pool_usage);
  carp__mctl_stream(
      m, "karpenter_nodepools_limit",
      "Limits specified on the nodepool that restrict the quantity of "
      "resources provisioned. Labeled by nodepool name and resource type.",
      CARP_LABELS("nodepool", "resource_type"), stream_pool_limit);
  carp__mctl_stream(m, "karpenter_nodepools_cost_total",
                    "Total cost of a nodepool: the summed hourly price of its "
                    "NodeClaims' instance types at their offering prices.",
                    CARP_LABELS("nodepool"), stream_pool_cost);
  carp__mctl_stream(
      m, "karpenter_pods_unbound_time_seconds",
      "The time from pod creation until the pod is bound, for pods not "
      "bound yet.",
      CARP_LABELS("name", "namespace"), carp__mctl_stream_unbound);
  carp__mctl_stream(
      m, "karpenter_pods_unstarted_time_seconds",
      "The time from pod creation until the pod is running, for pods not "
      "Ready yet.",
      CARP_LABELS("name", "namespace"), carp__mctl_stream_unstarted);
  carp__mctl_stream(m, "karpenter_cluster_state_node_count",
                    "Current count of nodes in cluster state", NULL,
                    stream_node_count);
  carp__mctl_stream(
      m, "karpenter_cluster_state_synced",
      "Returns 1 if cluster state is synced and 0 otherwise. Synced checks "
      "that nodeclaims and nodes that are stored in the APIServer have the "
      "same representation as Karpenter's cluster state",
      NULL, stream_synced);
  carp__mctl_stream(m, "karpenter_cluster_state_unsynced_time_seconds",
                    "The time for which cluster state is not synced", NULL,
                    stream_unsynced_time);
  m->m_startup = carp_metrics_summary(
      m->base.env.metrics, "karpenter_pods_startup_duration_seconds",
      "The time from pod creation until the pod is running.", NULL, startup_q,
      CARP_ARRAY_LEN(startup_q), 0, 0);
  m->m_bound = carp_metrics_histogram(
      m->base.env.metrics, "karpenter_pods_bound_duration_seconds",
      "The time from pod creation until the pod is bound.", NULL,
      carp_metrics_duration_buckets, carp_metrics_duration_buckets_len);
}

/* Nothing is ever queued: the gauges are computed at scrape time and the
 * durations observed in the pod informer's map. */
static void reconcile(struct carp_controller *c, const char *key)
{
  carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
}

/* At close: the streamed families render nothing from now on. */
static void cancel(struct carp_controller *c)
{
  struct carp_metricsctl *m = MCTL(c);
  size_t i;
  for (i = 0; i < m->nstreams; i++)
    carp_metric_stream_detach(m->streams[i]);
}

static void metricsctl_free(struct carp_controller *c)
{
  struct carp_metricsctl *m = MCTL(c);
  snap_clear(m);
  carp__mctl_offerings_free(m);
  carp_map_free(&m->snap_index);
  CARP_FREE(&m->snap);
  carp_free(m);
}

static const struct carp_controller_def metricsctl_def = {
    .name = "metrics.state",
    .log_module = "metrics",
    .before_sync = 1,
    .reconcile = reconcile,
    .cancel = cancel,
    .free = metricsctl_free,
};

int carp_metricsctl_new(const struct carp_controller_env *env,
                        const struct carp_metricsctl_options *o,
                        struct carp_controller **out)
{
  struct carp_metricsctl *m;
  int rc;
  if (!env || !env->metrics || !out)
    return CARP_EINVAL;
  m = CARP_NEW(struct carp_metricsctl);
  m->cluster = env->cluster;
  if (o)
    m->o = *o;
  if (!m->o.pod_series_limit)
    m->o.pod_series_limit = 5000;
  carp_map_init(&m->snap_index);
  m->unsynced_since_ms = (int64_t)carp_time_mono_ms();
  rc = carp_controller_init(&m->base, env, &metricsctl_def);
  if (rc) {
    carp_map_free(&m->snap_index);
    carp_free(m);
    return rc;
  }
  register_all(m);
  carp__mctl_conditions_register(m);
  carp__mctl_provisioning_register(m);
  carp__mctl_offerings_register(m);
  carp_controller_watch(&m->base, env->cluster->pods, carp__mctl_pod_event);
  *out = &m->base;
  return 0;
}
