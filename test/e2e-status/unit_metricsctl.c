/* unit_metricsctl.c: the cluster-state metrics rendered from caches filled
 * by hand (the informers are never started): node gauges and their labels,
 * karpenter_pods_state with owner links and "N/A" for unbound pods, pool
 * usage and limits, state counts; then, with CARP_BENCH_PODS set (and
 * CARP_BENCH_NODES, default pods / 30), the cost of a scrape at that
 * size, printed, not asserted:
 *
 *   CARP_BENCH_PODS=150000 build/test/e2e-status/test_metricsctl */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "../unit/cache_testlib.h"

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/cluster.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/metricsctl.h"
#include "carpenter/timeutil.h"

struct env {
  uv_loop_t loop;
  struct carp_kube *kube;
  struct carp_cluster *cluster;
  struct carp_metrics *metrics;
  struct carp_clock *clock;
  struct carp_controller *mctl;
  int closed;
};

static size_t series_limit; /* 0: the default */

static void env_open(struct env *e)
{
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct carp_metricsctl_options mo;
  struct carp_controller_env env;
  memset(e, 0, sizeof(*e));
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = (char *)"http://127.0.0.1:1";
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  assert_int_equal(uv_loop_init(&e->loop), 0);
  assert_int_equal(carp_kube_new(&e->loop, &ko, &e->kube), 0);
  e->metrics = carp_metrics_new();
  assert_int_equal(carp_cluster_new(&e->loop, e->kube, e->metrics, &e->cluster),
                   0);
  e->clock = carp_clock_real_new(&e->loop);
  memset(&env, 0, sizeof(env));
  env.loop = &e->loop;
  env.clock = e->clock;
  env.cluster = e->cluster;
  env.kube = e->kube;
  env.metrics = e->metrics;
  memset(&mo, 0, sizeof(mo));
  mo.pod_series_limit = series_limit;
  assert_int_equal(carp_metricsctl_new(&env, &mo, &e->mctl), 0);
}

static void on_closed(void *arg)
{
  (*(int *)arg)++;
}

static void env_close(struct env *e)
{
  int n = 0;
  carp_controller_close(e->mctl, on_closed, &n);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  assert_int_equal(n, 1);
  carp_cluster_close(e->cluster, on_closed, &n);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  carp_controller_free(e->mctl);
  carp_clock_free(e->clock);
  carp_kube_close(e->kube, on_closed, &n);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  assert_int_equal(n, 3);
  assert_int_equal(uv_loop_close(&e->loop), 0);
  carp_metrics_free(e->metrics);
}

static void put_node(struct env *e, const char *name, const char *pool,
                     const char *zone)
{
  char json[2048];
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\","
           "\"resourceVersion\":\"1\","
           "\"creationTimestamp\":\"2026-11-22T10:00:00Z\",\"labels\":{"
           "%s%s%s"
           "\"topology.kubernetes.io/zone\":\"%s\","
           "\"topology.kubernetes.io/region\":\"homelab\","
           "\"node.kubernetes.io/instance-type\":\"c1.4VCPU-8GB\","
           "\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/os\":\"linux\","
           "\"karpenter.sh/capacity-type\":\"on-demand\"}},"
           "\"spec\":{\"providerID\":\"proxmox://homelab/%s\"},"
           "\"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"8Gi\","
           "\"pods\":\"110\",\"ephemeral-storage\":\"32Gi\"},"
           "\"allocatable\":{\"cpu\":\"3800m\",\"memory\":\"7Gi\","
           "\"pods\":\"110\",\"ephemeral-storage\":\"28Gi\"},"
           "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
           name, name, pool ? "\"karpenter.sh/nodepool\":\"" : "",
           pool ? pool : "", pool ? "\"," : "", zone, name);
  cache_put(e->cluster->nodes, &carp_kind_node, json);
}

static void put_pod(struct env *e, const char *ns, const char *name,
                    const char *node, const char *owner_kind, const char *owner,
                    const char *cpu, int ready)
{
  char json[4096], nodefield[128] = "", ownerfield[512] = "";
  if (node)
    snprintf(nodefield, sizeof(nodefield), "\"nodeName\":\"%s\",", node);
  if (owner)
    snprintf(ownerfield, sizeof(ownerfield),
             ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
             "\"%s\",\"name\":\"%s\",\"uid\":\"uid-%s\",\"controller\":"
             "true}]",
             owner_kind, owner, owner);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
           "\"uid\":\"u-%s-%s\",\"resourceVersion\":\"1\","
           "\"creationTimestamp\":\"2026-11-22T10:00:00Z\","
           "\"labels\":{\"app\":\"%s\"}%s},"
           "\"spec\":{%s\"containers\":[{\"name\":\"c\",\"resources\":"
           "{\"requests\":{\"cpu\":\"%s\",\"memory\":\"256Mi\"}}}]},"
           "\"status\":{\"phase\":\"%s\",\"conditions\":["
           "{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
           name, ns, ns, name, owner ? owner : name, ownerfield, nodefield, cpu,
           node ? "Running" : "Pending", ready ? "True" : "False");
  cache_put(e->cluster->pods, &carp_kind_pod, json);
}

static const char *render(struct env *e, struct carp_buf *b)
{
  carp_buf_reset(b);
  assert_int_equal(carp_metrics_render(e->metrics, b), 0);
  return carp_buf_cstr(b);
}

static void has(const char *text, const char *line)
{
  if (!strstr(text, line)) {
    fprintf(stderr, "missing line:\n%s\nin:\n%s\n", line, text);
    fail();
  }
}

static void test_metrics(void **state)
{
  struct env e;
  struct carp_buf b;
  const char *t;
  env_open(&e);
  put_node(&e, "n1", "default", "pve1");
  put_node(&e, "n2", NULL, "pve2");
  put_pod(&e, "default", "web-1", "n1", "ReplicaSet", "web-abc", "500m", 1);
  put_pod(&e, "default", "web-2", "n1", "ReplicaSet", "web-abc", "1500m", 1);
  put_pod(&e, "kube-system", "ds-1", "n1", "DaemonSet", "agent", "100m", 1);
  put_pod(&e, "default", "pending", NULL, NULL, NULL, "1", 0);
  cache_put(
      e.cluster->nodepools, &carp_kind_nodepool,
      "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\","
      "\"metadata\":{\"name\":\"default\",\"uid\":\"p1\","
      "\"resourceVersion\":\"1\"},"
      "\"spec\":{\"limits\":{\"cpu\":\"64\",\"nodes\":\"5\"},"
      "\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\","
      "\"kind\":\"ProxmoxNodeClass\",\"name\":\"default\"},"
      "\"requirements\":[]}}},"
      "\"status\":{\"nodes\":1,\"resources\":{\"cpu\":\"4\","
      "\"memory\":\"8Gi\",\"nodes\":\"1\"}}}");
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  t = render(&e, &b);
#define N1                                                                     \
  "node_name=\"n1\",nodepool=\"default\",zone=\"pve1\",region=\"homelab\","    \
  "instance_type=\"c1.4VCPU-8GB\",arch=\"amd64\",os=\"linux\","                \
  "capacity_type=\"on-demand\",managed=\"true\""
  has(t, "# TYPE karpenter_nodes_allocatable gauge\n");
  has(t, "karpenter_nodes_allocatable{" N1 ",resource_type=\"cpu\"} 3.8\n");
  has(t, "karpenter_nodes_allocatable{" N1
         ",resource_type=\"memory\"} 7516192768\n");
  has(t, "karpenter_nodes_allocatable{" N1
         ",resource_type=\"ephemeral_storage\"} 30064771072\n");
  has(t, "karpenter_nodes_allocatable{" N1 ",resource_type=\"pods\"} 110\n");
  has(t,
      "karpenter_nodes_total_pod_requests{" N1 ",resource_type=\"cpu\"} 2.1\n");
  has(t, "karpenter_nodes_total_pod_requests{" N1
         ",resource_type=\"memory\"} 805306368\n");
  has(t, "karpenter_nodes_total_daemon_requests{" N1
         ",resource_type=\"cpu\"} 0.1\n");
  /* Pods counted, as Karpenter's resource_type="pods" (the capacity
   * dashboard's Node Summary adds the two). */
  has(t,
      "karpenter_nodes_total_pod_requests{" N1 ",resource_type=\"pods\"} 3\n");
  has(t, "karpenter_nodes_total_daemon_requests{" N1
         ",resource_type=\"pods\"} 1\n");
  has(t, "karpenter_nodes_system_overhead{" N1 ",resource_type=\"cpu\"} 0.2\n");
  has(t, "karpenter_nodes_system_overhead{" N1
         ",resource_type=\"memory\"} 1073741824\n");
  has(t, "karpenter_nodes_current_lifetime_seconds{" N1 "} ");
  has(t, "karpenter_nodes_allocatable{node_name=\"n2\",nodepool=\"\","
         "zone=\"pve2\",region=\"homelab\",instance_type=\"c1.4VCPU-8GB\","
         "arch=\"amd64\",os=\"linux\",capacity_type=\"on-demand\","
         "managed=\"false\",resource_type=\"cpu\"} 3.8\n");
  /* 2.1 of 7.6 cores, 768Mi of 14Gi. */
  has(t, "karpenter_cluster_utilization_percent{resource_type=\"cpu\"} "
         "27.63157894736842\n");
  has(t, "karpenter_pods_state{name=\"web-1\",namespace=\"default\","
         "owner=\"/apis/apps/v1/namespaces/default/replicasets/web-abc\","
         "node=\"n1\",scheduled=\"true\",nodepool=\"default\",zone=\"pve1\","
         "arch=\"amd64\",capacity_type=\"on-demand\","
         "instance_type=\"c1.4VCPU-8GB\",phase=\"Running\",ready=\"true\","
         "managed=\"true\"} 1\n");
  has(t, "karpenter_pods_state{name=\"ds-1\",namespace=\"kube-system\","
         "owner=\"/apis/apps/v1/namespaces/kube-system/daemonsets/agent\",");
  has(t, "karpenter_pods_state{name=\"pending\",namespace=\"default\","
         "owner=\"\",node=\"\",scheduled=\"false\",nodepool=\"N/A\","
         "zone=\"N/A\",arch=\"N/A\",capacity_type=\"N/A\","
         "instance_type=\"N/A\",phase=\"Pending\",ready=\"false\","
         "managed=\"false\"} 1\n");
  has(t, "karpenter_nodepools_usage{nodepool=\"default\","
         "resource_type=\"cpu\"} 4\n");
  has(t, "karpenter_nodepools_usage{nodepool=\"default\","
         "resource_type=\"nodes\"} 1\n");
  has(t, "karpenter_nodepools_limit{nodepool=\"default\","
         "resource_type=\"cpu\"} 64\n");
  has(t, "karpenter_nodepools_limit{nodepool=\"default\","
         "resource_type=\"nodes\"} 5\n");
  has(t, "# TYPE karpenter_cluster_state_node_count untyped\n"
         "karpenter_cluster_state_node_count 2\n");
  has(t, "karpenter_cluster_state_synced 0\n");
  has(t, "# TYPE karpenter_pods_startup_duration_seconds summary\n");
  has(t, "karpenter_pods_bound_duration_seconds_count 0\n");
  carp_buf_free(&b);
  env_close(&e);
}

static size_t count(const char *hay, const char *needle)
{
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

/* karpenter_pods_state keeps its labels but is bounded: at most the limit
 * of series, pods needing attention first, the rest counted. */
static void test_pod_series_limit(void **state)
{
  struct env e;
  struct carp_buf b;
  const char *t;
  char name[64];
  int i;
  series_limit = 10;
  env_open(&e);
  series_limit = 0;
  put_node(&e, "n1", "default", "pve1");
  for (i = 0; i < 40; i++) {
    snprintf(name, sizeof(name), "ok-%d", i);
    put_pod(&e, "default", name, "n1", "ReplicaSet", "ok-1", "100m", 1);
  }
  for (i = 0; i < 4; i++) {
    snprintf(name, sizeof(name), "pending-%d", i);
    put_pod(&e, "default", name, NULL, "ReplicaSet", "p-1", "100m", 0);
  }
  put_pod(&e, "default", "unready", "n1", "ReplicaSet", "u-1", "100m", 0);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  t = render(&e, &b);
  assert_int_equal(count(t, "\nkarpenter_pods_state{"), 10);
  for (i = 0; i < 4; i++) {
    snprintf(name, sizeof(name), "{name=\"pending-%d\"", i);
    has(t, name);
  }
  has(t, "{name=\"unready\"");
  has(t, "carpenter_pods_state_series_omitted 35\n");
  carp_buf_free(&b);
  env_close(&e);
}

/* Not a test: the cost of one scrape with many pods. */
static void bench(size_t npods, size_t nnodes)
{
  struct env e;
  struct carp_buf b;
  size_t i;
  uint64_t t0, t1;
  char name[64], node[64], owner[64];
  const char *r = getenv("CARP_BENCH_ROUNDS");
  int k, rounds = r ? (int)strtol(r, NULL, 10) : 3;
  env_open(&e);
  for (i = 0; i < nnodes; i++) {
    snprintf(node, sizeof(node), "node-%05zu", i);
    put_node(&e, node, "default", i % 2 ? "pve1" : "pve2");
  }
  for (i = 0; i < npods; i++) {
    snprintf(name, sizeof(name), "app-%zu-%zu", i / 30, i);
    snprintf(node, sizeof(node), "node-%05zu", i % nnodes);
    snprintf(owner, sizeof(owner), "app-%zu-5d4f8", i / 30);
    put_pod(&e, "team-a", name, node, "ReplicaSet", owner, "100m", 1);
  }
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  if (getenv("CARP_BENCH_NO_PODS")) {
    struct carp_metric *ps = carp_metrics_stream(
        e.metrics, "karpenter_pods_state", "", CARP_METRIC_GAUGE,
        CARP_LABELS("name", "namespace", "owner", "node", "scheduled",
                    "nodepool", "zone", "arch", "capacity_type",
                    "instance_type", "phase", "ready", "managed"),
        NULL, NULL);
    carp_metric_stream_detach(ps);
  }
  for (k = 0; k < rounds; k++) {
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    t0 = carp_time_mono_ms();
    render(&e, &b);
    t1 = carp_time_mono_ms();
    getrusage(RUSAGE_SELF, &r1);
    printf("bench: pods=%zu nodes=%zu scrape_ms=%llu cpu_ms=%.0f "
           "bytes=%zu\n",
           npods, nnodes, (unsigned long long)(t1 - t0),
           (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec +
                    r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) *
                   1000.0 +
               (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec +
                        r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) /
                   1000.0,
           b.len);
  }
  carp_buf_free(&b);
  env_close(&e);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_metrics),
      cmocka_unit_test(test_pod_series_limit),
  };
  const char *pods = getenv("CARP_BENCH_PODS");
  const char *nodes = getenv("CARP_BENCH_NODES");
  carp_http_global_init();
  if (pods) {
    size_t np = (size_t)strtoull(pods, NULL, 10);
    bench(np, nodes ? (size_t)strtoull(nodes, NULL, 10) : np / 30 + 1);
    carp_http_global_cleanup();
    return 0;
  }
  {
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    carp_http_global_cleanup();
    return rc;
  }
}
