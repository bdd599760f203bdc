/* test_state_metrics.c: the cluster-state metrics that depend on time and
 * the provider, on the kit: karpenter_pods_unbound_time_seconds (a series
 * per unbound pod, gone once it binds or goes, capped by the pod series
 * limit), karpenter_nodepools_cost_total (the offering prices of each
 * pool's NodeClaims), karpenter_nodes_total_pod_limits and
 * _total_daemon_limits (container limits as Kubernetes sums them), and
 * operatorpkg's operator_status_condition_* (a
 * series per object and condition, transitions counted and timed), and
 * the pod metrics that count from the provisioner's decisions
 * (karpenter_pods_provisioning_*), with karpenter_pods_unstarted_time_seconds,
 * operatorpkg's families for Nodes (every condition) and its termination
 * metrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/cluster.h"
#include "carpenter/metricsctl.h"
#include "carpenter/provisioner.h"
#include "carpenter/timeutil.h"
#include "kit.h"

#define SEC 1000ULL
#define GIB (1LL << 30)

static const struct carp_fake_instance_type types[] = {
    {"c1.2VCPU-4GB", 2, 4 * GIB, 0.25},
    {"c1.4VCPU-8GB", 4, 8 * GIB, 0.5},
};

static void setup(struct kit *k, size_t limit)
{
  struct carp_fake_provider_options po = {.types = types, .ntypes = 2};
  struct kit_options ko = {.provider = &po};
  struct carp_metricsctl_options mo = {.pod_series_limit = limit};
  struct carp_controller *c = NULL;
  kit_init(k, &ko);
  assert_int_equal(carp_metricsctl_new(&k->env, &mo, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
}

/* The kit with the pool "default", started. */
static void started_with_pool(struct kit *k)
{
  setup(k, 0);
  kit_nodepool(k, "default", "");
  kit_start(k);
}

/* The kit with the pool "default" and its node n1, started. */
static void started_with_node(struct kit *k, const char *type)
{
  setup(k, 0);
  kit_nodepool(k, "default", "");
  kit_node(k, "n1", "default", type);
  kit_start(k);
}

static double unbound(struct kit *k, const char *name)
{
  char want[128];
  snprintf(want, sizeof(want), "name=\"%s\"", name);
  return kit_metric(k, "karpenter_pods_unbound_time_seconds",
                    CARP_VALUES(want));
}

/* Occurrences of text in a rendering of the metrics. */
static size_t count_lines(struct kit *k, const char *prefix)
{
  struct carp_buf out;
  const char *at;
  size_t n = 0;
  carp_buf_init(&out, CARP_BUF_UNLIMITED);
  carp_metrics_render(k->metrics, &out);
  for (at = carp_buf_cstr(&out); (at = strstr(at, prefix)); at++)
    n++;
  carp_buf_free(&out);
  return n;
}

static size_t unbound_series(struct kit *k)
{
  return count_lines(k, "\nkarpenter_pods_unbound_time_seconds{");
}

static void test_unbound_time_until_bound(void **state)
{
  struct kit k;
  (void)state;
  started_with_node(&k, "c1.2VCPU-4GB");
  kit_pod(&k, "default", "waits", NULL, 100, "");
  kit_pod(&k, "default", "runs", "n1", 100, "");
  kit_advance(&k, 90 * SEC);
  /* Created at the fake time 90 s ago. */
  assert_true(unbound(&k, "waits") == 90);
  assert_int_equal(unbound_series(&k), 1);
  kit_patch(&k, "Pod", "default/waits", "{spec: {nodeName: n1}}");
  assert_int_equal(unbound_series(&k), 0);
  kit_pod(&k, "default", "goes", NULL, 100, "");
  assert_int_equal(unbound_series(&k), 1);
  kit_delete(&k, "Pod", "default/goes");
  assert_int_equal(unbound_series(&k), 0);
  kit_close(&k);
}

static void test_unbound_time_respects_the_series_limit(void **state)
{
  struct kit k;
  int i;
  (void)state;
  setup(&k, 3);
  kit_start(&k);
  for (i = 0; i < 5; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p%d", i);
    kit_pod(&k, "default", name, NULL, 100, "");
  }
  assert_int_equal(unbound_series(&k), 3);
  kit_close(&k);
}

static void test_nodepool_cost(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  kit_nodepool(&k, "default", "");
  kit_nodepool(&k, "big", "");
  kit_nodepool(&k, "idle", "");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.4VCPU-8GB");
  kit_node(&k, "c", "big", "c1.4VCPU-8GB");
  kit_start(&k);
  assert_true(kit_metric(&k, "karpenter_nodepools_cost_total",
                         CARP_VALUES("nodepool=\"default\"")) == 0.75);
  assert_true(kit_metric(&k, "karpenter_nodepools_cost_total",
                         CARP_VALUES("nodepool=\"big\"")) == 0.5);
  /* A pool without NodeClaims costs nothing, and says so. */
  assert_int_equal(kit_metric(&k, "karpenter_nodepools_cost_total",
                              CARP_VALUES("nodepool=\"idle\"")),
                   0);
  assert_true(unbound_series(&k) == 0);
  /* A NodeClaim gone is no longer paid for. */
  kit_patch(&k, "NodeClaim", "b", "{metadata: {finalizers: []}}");
  kit_delete(&k, "NodeClaim", "b");
  assert_true(kit_metric(&k, "karpenter_nodepools_cost_total",
                         CARP_VALUES("nodepool=\"default\"")) == 0.25);
  kit_close(&k);
}

#define NC_READY                                                               \
  "name=\"default\",group=\"carpenter.dev\",kind=\"ProxmoxNodeClass\",type="   \
  "\"Ready\""

static void test_status_conditions(void **state)
{
  struct kit k;
  char ts[CARP_RFC3339_LEN];
  (void)state;
  started_with_pool(&k);
  /* One series per object and condition, with its status and reason. */
  assert_true(kit_metric(&k, "operator_status_condition_count",
                         CARP_VALUES("namespace=\"\"," NC_READY,
                                     "status=\"True\"", "reason=\"Ready\"")) ==
              1);
  assert_true(
      kit_metric(&k, "operator_status_condition_count",
                 CARP_VALUES("name=\"default\"", "group=\"karpenter.sh\"",
                             "kind=\"NodePool\"", "type=\"Ready\"")) == 1);
  kit_advance(&k, 90 * SEC);
  assert_true(kit_metric(&k, "operator_status_condition_current_status_seconds",
                         CARP_VALUES(NC_READY, "status=\"True\"")) == 90);
  /* Listed before leading: no transition seen yet. */
  assert_true(
      kit_metric(&k, "operator_status_condition_transitions_total", NULL) == 0);

  /* Ready goes False: the old series goes, the new one counts, and the 90
   * s it was True are observed. */
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock), 0, ts);
  kit_patch(&k, "ProxmoxNodeClass", "default",
            "{status: {conditions: [{type: Ready, status: 'False',"
            " reason: TemplatesNotFound, message: gone,"
            " lastTransitionTime: '%s'}]}}",
            ts);
  assert_int_equal(
      count_lines(&k, "\noperator_status_condition_count{namespace=\"\","
                      "name=\"default\",group=\"carpenter.dev\""),
      1);
  assert_true(kit_metric(&k, "operator_status_condition_count",
                         CARP_VALUES(NC_READY, "status=\"False\"",
                                     "reason=\"TemplatesNotFound\"")) == 1);
  assert_true(kit_metric(&k, "operator_status_condition_current_status_seconds",
                         CARP_VALUES(NC_READY, "status=\"False\"")) == 0);
  assert_true(kit_metric(&k, "operator_status_condition_transitions_total",
                         CARP_VALUES("group=\"carpenter.dev\","
                                     "kind=\"ProxmoxNodeClass\",type=\"Ready\","
                                     "status=\"False\","
                                     "reason=\"TemplatesNotFound\"")) == 1);
  assert_true(kit_metric(&k, "operator_status_condition_transition_seconds_sum",
                         CARP_VALUES("kind=\"ProxmoxNodeClass\"",
                                     "status=\"True\"")) == 90);
  assert_true(kit_metric(&k,
                         "operator_status_condition_transition_seconds_count",
                         NULL) == 1);
  /* The same status again (a new message) is no transition. */
  kit_patch(&k, "ProxmoxNodeClass", "default",
            "{status: {conditions: [{type: Ready, status: 'False',"
            " reason: TemplatesNotFound, message: still gone,"
            " lastTransitionTime: '%s'}]}}",
            ts);
  assert_true(
      kit_metric(&k, "operator_status_condition_transitions_total", NULL) == 1);

  /* A NodeClaim created while leading: each of its conditions is new. */
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  assert_true(kit_metric(&k, "operator_status_condition_transitions_total",
                         CARP_VALUES("kind=\"NodeClaim\"", "type=\"Ready\"")) >=
              1);
  assert_true(kit_metric(&k, "operator_status_condition_count",
                         CARP_VALUES("kind=\"NodeClaim\"", "name=\"n1\"",
                                     "type=\"Ready\"", "status=\"True\"")) ==
              1);
  /* Gone objects leave no series. */
  kit_delete(&k, "ProxmoxNodeClass", "default");
  assert_int_equal(
      count_lines(&k, "\noperator_status_condition_count{namespace=\"\","
                      "name=\"default\",group=\"carpenter.dev\""),
      0);
  assert_int_equal(count_lines(&k, "operator_status_condition_current_status_"
                                   "seconds{namespace=\"\",name=\"default\","
                                   "group=\"carpenter.dev\""),
                   0);
  kit_close(&k);
}

/* A per-kind transition histogram's bucket, le its bound. */
static double bucket(struct kit *k, const char *kind, const char *le)
{
  char name[128], label[64];
  snprintf(name, sizeof(name),
           "operator_%s_status_condition_transition_seconds_bucket", kind);
  snprintf(label, sizeof(label), "le=\"%s\"", le);
  return kit_metric(k, name, CARP_VALUES(label));
}

/* Karpenter v1.14's configuration of operatorpkg's status controller:
 * per-kind families operator_<kind>_status_condition_* without group and
 * kind, NodeClaims with the NodeClass and NodePool labels, the
 * exponential buckets (0.5 s ... 8192 s) for NodePools and NodeClaims and
 * the default ones for the NodeClass and the kind-independent family. */
static void test_status_conditions_per_kind(void **state)
{
  struct kit k;
  char ts[CARP_RFC3339_LEN];
  (void)state;
  started_with_pool(&k);
  assert_true(kit_metric(&k, "operator_nodepool_status_condition_count",
                         CARP_VALUES("{namespace=\"\",name=\"default\","
                                     "type=\"Ready\",status=\"True\","
                                     "reason=\"")) == 1);
  assert_int_equal(count_lines(&k, "\noperator_nodepool_status_condition_"
                                   "count{namespace=\"\",name=\"default\","
                                   "group="),
                   0);
  assert_true(kit_metric(&k, "operator_proxmoxnodeclass_status_condition_count",
                         CARP_VALUES("name=\"default\"", "type=\"Ready\"")) ==
              1);
  kit_advance(&k, 30 * SEC);
  assert_true(
      kit_metric(&k,
                 "operator_proxmoxnodeclass_status_condition_current_status_"
                 "seconds",
                 CARP_VALUES("name=\"default\"", "type=\"Ready\"")) == 30);

  /* A NodeClaim created while leading, with both labels Karpenter adds. */
  kit_apply(
      &k, "{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: "
          "{name: c1, labels: {karpenter.sh/nodepool: default,"
          " carpenter.dev/proxmoxnodeclass: default}},"
          " spec: {nodeClassRef: {group: carpenter.dev, kind: "
          "ProxmoxNodeClass, name: default}, requirements: []},"
          " status: {conditions: [{type: Launched, status: 'True',"
          " reason: Launched, lastTransitionTime: '2026-01-01T00:00:00Z'}]}}");
  assert_true(
      kit_metric(&k, "operator_nodeclaim_status_condition_count",
                 CARP_VALUES("{namespace=\"\",name=\"c1\",type=\"Launched\","
                             "status=\"True\",reason=\"Launched\","
                             "carpenter_dev_proxmoxnodeclass=\"default\","
                             "karpenter_sh_nodepool=\"default\"}")) == 1);
  assert_true(
      kit_metric(&k, "operator_nodeclaim_status_condition_transitions_total",
                 CARP_VALUES("{type=\"Launched\",status=\"True\","
                             "reason=\"Launched\","
                             "carpenter_dev_proxmoxnodeclass="
                             "\"default\",karpenter_sh_nodepool="
                             "\"default\"}")) == 1);
  /* The kind-independent family still counts it, with group and kind. */
  assert_true(kit_metric(&k, "operator_status_condition_transitions_total",
                         CARP_VALUES("group=\"karpenter.sh\",kind="
                                     "\"NodeClaim\",type=\"Launched\"")) == 1);

  /* CapacityBuffers have their family too (Karpenter's CapacityBuffer
   * gate; Carpenter always keeps buffers). */
  kit_apply(&k, "{apiVersion: autoscaling.x-k8s.io/v1beta1, kind: "
                "CapacityBuffer, metadata: {name: b1, namespace: team},"
                " spec: {podTemplateRef: {name: t}, replicas: 1},"
                " status: {conditions: [{type: ReadyForProvisioning,"
                " status: 'True', reason: Ready,"
                " lastTransitionTime: '2026-01-01T00:00:00Z'}]}}");
  assert_true(
      kit_metric(&k, "operator_capacitybuffer_status_condition_count",
                 CARP_VALUES("{namespace=\"team\",name=\"b1\","
                             "type=\"ReadyForProvisioning\",status=\"True\","
                             "reason=\"Ready\"}")) == 1);
  assert_true(kit_metric(&k, "operator_status_condition_count",
                         CARP_VALUES("group=\"autoscaling.x-k8s.io\","
                                     "kind=\"CapacityBuffer\"")) == 1);

  /* Ready goes False on the NodePool and the NodeClass: each histogram
   * observes the 30 s, with its own buckets. */
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock), 0, ts);
  kit_patch(&k, "NodePool", "default",
            "{status: {conditions: [{type: Ready, status: 'False',"
            " reason: NodeClassNotReady, lastTransitionTime: '%s'}]}}",
            ts);
  kit_patch(&k, "ProxmoxNodeClass", "default",
            "{status: {conditions: [{type: Ready, status: 'False',"
            " reason: TemplatesNotFound, lastTransitionTime: '%s'}]}}",
            ts);
  assert_true(kit_metric(&k,
                         "operator_nodepool_status_condition_transitions_total",
                         CARP_VALUES("{type=\"Ready\",status=\"False\","
                                     "reason=\"NodeClassNotReady\"}")) == 1);
  assert_true(
      kit_metric(&k,
                 "operator_nodepool_status_condition_transition_seconds_"
                 "sum",
                 CARP_VALUES("{type=\"Ready\",status=\"True\"}")) == 30);
  assert_true(bucket(&k, "nodepool", "16") == 0);
  assert_true(bucket(&k, "nodepool", "32") == 1);
  assert_int_equal(count_lines(&k, "operator_nodepool_status_condition_"
                                   "transition_seconds_bucket{"),
                   16); /* 0.5 ... 8192 and +Inf */
  assert_true(bucket(&k, "proxmoxnodeclass", "10") == 0);
  assert_int_equal(count_lines(&k, "operator_proxmoxnodeclass_status_"
                                   "condition_transition_seconds_bucket{"),
                   12); /* 0.005 ... 10 and +Inf */
  assert_int_equal(count_lines(&k, "\noperator_status_condition_transition_"
                                   "seconds_bucket{group=\"karpenter.sh\","
                                   "kind=\"NodePool\""),
                   12);
  kit_close(&k);
}

/* A Node with the labels Karpenter's Node families read, Ready and free
 * of memory pressure since now (a finalizer keeps it while it terminates). */
static void labelled_node(struct kit *k, const char *name)
{
  char ts[CARP_RFC3339_LEN];
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  kit_apply(k,
            "{apiVersion: v1, kind: Node, metadata: {name: %s,"
            " labels: {karpenter.sh/nodepool: default,"
            " carpenter.dev/proxmoxnodeclass: default,"
            " karpenter.sh/initialized: 'true'},"
            " finalizers: [karpenter.sh/termination]},"
            " status: {conditions: ["
            " {type: Ready, status: 'True', reason: KubeletReady,"
            "  lastTransitionTime: '%s', lastHeartbeatTime: '%s'},"
            " {type: MemoryPressure, status: 'False',"
            "  reason: KubeletHasSufficientMemory, lastTransitionTime: '%s'},"
            " {type: PIDPressure, status: 'False'}]}}",
            name, ts, ts, ts);
}

#define NODE_LABELS_W1                                                         \
  "carpenter_dev_proxmoxnodeclass=\"default\",karpenter_sh_nodepool="          \
  "\"default\",karpenter_sh_initialized=\"true\"}"

/* operatorpkg's status controller for Nodes, as Karpenter v1.14 runs it:
 * every condition of the Node (not only Ready), the NodeClass, NodePool and
 * initialized labels, the exponential buckets, and no kind-independent
 * copy. Nodes in the same state share their cached condition set. */
static void test_node_status_conditions(void **state)
{
  struct kit k;
  char ts[CARP_RFC3339_LEN];
  const struct carp_node *a, *b;
  (void)state;
  started_with_pool(&k);
  labelled_node(&k, "w1");
  labelled_node(&k, "w2");
  assert_true(
      kit_metric(
          &k, "operator_node_status_condition_count",
          CARP_VALUES(
              "{namespace=\"\",name=\"w1\","
              "type=\"MemoryPressure\",status=\"False\","
              "reason=\"KubeletHasSufficientMemory\"," NODE_LABELS_W1)) == 1);
  assert_true(kit_metric(&k, "operator_node_status_condition_count",
                         CARP_VALUES("{namespace=\"\",name=\"w1\","
                                     "type=\"PIDPressure\",status=\"False\","
                                     "reason=\"\",")) == 1);
  assert_int_equal(count_lines(&k, "\noperator_node_status_condition_count{"),
                   6);
  assert_int_equal(count_lines(&k, "kind=\"Node\""), 0);
  /* Created while leading: each condition is a transition. */
  assert_true(
      kit_metric(&k, "operator_node_status_condition_transitions_total",
                 CARP_VALUES("{type=\"Ready\",status=\"True\","
                             "reason=\"KubeletReady\"," NODE_LABELS_W1)) == 2);
  a = (const struct carp_node *)carp_store_get(
      carp_informer_store(k.cluster->nodes), "w1");
  b = (const struct carp_node *)carp_store_get(
      carp_informer_store(k.cluster->nodes), "w2");
  assert_non_null(a);
  assert_non_null(b);
  assert_ptr_equal(a->conds, b->conds);

  kit_advance(&k, 45 * SEC);
  assert_true(
      kit_metric(&k, "operator_node_status_condition_current_status_seconds",
                 CARP_VALUES("name=\"w1\"", "type=\"MemoryPressure\"")) == 45);
  /* A condition without lastTransitionTime has no such series. */
  assert_int_equal(
      count_lines(&k, "operator_node_status_condition_current_status_seconds{"
                      "namespace=\"\",name=\"w1\",type=\"PIDPressure\""),
      0);
  /* Memory pressure on w1: counted, the 45 s without it observed. */
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock), 0, ts);
  kit_patch(&k, "Node", "w1",
            "{status: {conditions: ["
            " {type: Ready, status: 'True', reason: KubeletReady,"
            "  lastTransitionTime: '2026-01-01T00:00:00Z'},"
            " {type: MemoryPressure, status: 'True',"
            "  reason: KubeletHasInsufficientMemory, lastTransitionTime: '%s'},"
            " {type: PIDPressure, status: 'False'}]}}",
            ts);
  assert_true(
      kit_metric(&k, "operator_node_status_condition_transitions_total",
                 CARP_VALUES("{type=\"MemoryPressure\",status=\"True\","
                             "reason=\"KubeletHasInsufficientMemory\",")) == 1);
  assert_true(
      kit_metric(
          &k, "operator_node_status_condition_transition_seconds_sum",
          CARP_VALUES(
              "{type=\"MemoryPressure\",status=\"False\"," NODE_LABELS_W1)) ==
      45);
  assert_int_equal(count_lines(&k, "operator_node_status_condition_"
                                   "transition_seconds_bucket{"),
                   16); /* 0.5 ... 8192 and +Inf */
  assert_true(kit_metric(&k, "operator_node_status_condition_count",
                         CARP_VALUES("name=\"w1\"", "type=\"MemoryPressure\"",
                                     "status=\"True\"")) == 1);
  assert_int_equal(
      count_lines(&k, "\noperator_node_status_condition_count{namespace=\"\","
                      "name=\"w1\",type=\"MemoryPressure\",status=\"False\""),
      0);
  assert_ptr_not_equal(((const struct carp_node *)carp_store_get(
                            carp_informer_store(k.cluster->nodes), "w1"))
                           ->conds,
                       b->conds);
  /* Gone: no series left. */
  kit_patch(&k, "Node", "w2", "{metadata: {finalizers: []}}");
  kit_delete(&k, "Node", "w2");
  assert_int_equal(count_lines(&k, "name=\"w2\""), 0);
  kit_close(&k);
}

/* operatorpkg's termination metrics: the time each terminating object has
 * been terminating, and once it is gone how long that took, per kind (the
 * kind's labels and buckets) and, for the kinds Karpenter emits them for,
 * in the kind-independent families. */
static void test_termination_metrics(void **state)
{
  struct kit k;
  (void)state;
  started_with_pool(&k);
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  labelled_node(&k, "w1");
  assert_int_equal(count_lines(&k, "termination_current_time_seconds{"), 0);
  kit_delete(&k, "NodeClaim", "n1");
  kit_delete(&k, "Node", "w1");
  kit_advance(&k, 20 * SEC);
  assert_true(
      kit_metric(&k, "operator_nodeclaim_termination_current_time_seconds",
                 CARP_VALUES("{namespace=\"\",name=\"n1\","
                             "carpenter_dev_proxmoxnodeclass=\"\","
                             "karpenter_sh_nodepool=\"default\"}")) == 20);
  assert_true(kit_metric(&k, "operator_termination_current_time_seconds",
                         CARP_VALUES("{namespace=\"\",name=\"n1\","
                                     "group=\"karpenter.sh\","
                                     "kind=\"NodeClaim\"}")) == 20);
  assert_true(
      kit_metric(&k, "operator_node_termination_current_time_seconds",
                 CARP_VALUES("{namespace=\"\",name=\"w1\"," NODE_LABELS_W1)) ==
      20);
  /* Nodes have no kind-independent copy. */
  assert_int_equal(count_lines(&k, "kind=\"Node\""), 0);

  kit_advance(&k, 10 * SEC);
  kit_patch(&k, "NodeClaim", "n1", "{metadata: {finalizers: []}}");
  kit_patch(&k, "Node", "w1", "{metadata: {finalizers: []}}");
  assert_false(kit_exists(&k, "Node", "w1"));
  assert_int_equal(count_lines(&k, "termination_current_time_seconds{"), 0);
  assert_true(
      kit_metric(&k, "operator_nodeclaim_termination_duration_seconds_sum",
                 CARP_VALUES("karpenter_sh_nodepool=\"default\"")) == 30);
  assert_true(kit_metric(&k, "operator_node_termination_duration_seconds_sum",
                         CARP_VALUES("{" NODE_LABELS_W1)) == 30);
  assert_true(kit_metric(&k,
                         "operator_node_termination_duration_seconds_bucket",
                         CARP_VALUES("le=\"16\"")) == 0);
  assert_true(kit_metric(&k,
                         "operator_node_termination_duration_seconds_bucket",
                         CARP_VALUES("le=\"32\"")) == 1);
  assert_true(kit_metric(&k, "operator_termination_duration_seconds_count",
                         CARP_VALUES("kind=\"NodeClaim\"")) == 1);
  assert_int_equal(count_lines(&k, "\noperator_termination_duration_seconds_"
                                   "bucket{group=\"karpenter.sh\","
                                   "kind=\"NodeClaim\""),
                   12); /* Prometheus's defaults */
  kit_close(&k);
}

static double offering(struct kit *k, const char *name, const char *type,
                       const char *zone)
{
  char want[256];
  snprintf(want, sizeof(want),
           "{instance_type=\"%s\",capacity_type=\"on-demand\",zone=\"%s\"}",
           type, zone);
  return kit_metric(k, name, CARP_VALUES(want));
}

#define AVAILABLE "karpenter_cloudprovider_instance_type_offering_available"
#define PRICE     "karpenter_cloudprovider_instance_type_offering_price_estimate"

/* The AWS provider's instance type gauges, for the grid of the NodeClass a
 * NodePool uses: each type's vCPUs and memory, and per host (zone) whether
 * it can take the type now and at what price; nothing left of a type no
 * pool uses any more. */
static void test_instance_type_offerings(void **state)
{
  static const char *const zones[] = {"zone-a", "zone-b", NULL};
  struct carp_fake_provider_options po = {
      .types = types, .ntypes = 2, .zones = zones};
  struct kit_options ko = {.provider = &po};
  struct carp_controller *c = NULL;
  struct kit k;
  (void)state;
  kit_init(&k, &ko);
  assert_int_equal(carp_metricsctl_new(&k.env, NULL, &c), 0);
  kit_add(&k, c);
  kit_nodeclass(&k, "default");
  kit_start(&k);
  /* No NodePool uses the class yet. */
  assert_int_equal(count_lines(&k, "\nkarpenter_cloudprovider_instance_type"),
                   0);
  kit_nodepool(&k, "default", "");
  assert_true(kit_metric(&k, "karpenter_cloudprovider_instance_type_cpu_cores",
                         CARP_VALUES("{instance_type=\"c1.4VCPU-8GB\"}")) == 4);
  assert_true(kit_metric(&k,
                         "karpenter_cloudprovider_instance_type_memory_bytes",
                         CARP_VALUES("{instance_type=\"c1.2VCPU-4GB\"}")) ==
              (double)(4 * GIB));
  assert_true(offering(&k, AVAILABLE, "c1.4VCPU-8GB", "zone-b") == 1);
  assert_true(offering(&k, PRICE, "c1.4VCPU-8GB", "zone-b") == 0.5);
  assert_true(offering(&k, PRICE, "c1.2VCPU-4GB", "zone-a") == 0.25);
  assert_int_equal(count_lines(&k, "\n" AVAILABLE "{"), 4);

  /* zone-b has 3 vCPUs left: the 4-vCPU type no longer fits there. */
  carp_fake_provider_set_capacity(k.provider, "zone-b", 3, 64 * GIB);
  assert_true(offering(&k, AVAILABLE, "c1.4VCPU-8GB", "zone-b") == 0);
  assert_true(offering(&k, AVAILABLE, "c1.2VCPU-4GB", "zone-b") == 1);
  assert_true(offering(&k, AVAILABLE, "c1.4VCPU-8GB", "zone-a") == 1);
  /* Out of capacity (ICE) in zone-a. */
  carp_fake_provider_set_ice(k.provider, "c1.2VCPU-4GB", "zone-a", 1);
  assert_true(offering(&k, AVAILABLE, "c1.2VCPU-4GB", "zone-a") == 0);
  /* Unavailable offerings keep their series (0), and their price. */
  assert_int_equal(count_lines(&k, "\n" AVAILABLE "{"), 4);
  assert_true(offering(&k, PRICE, "c1.2VCPU-4GB", "zone-a") == 0.25);

  /* The pool is gone: so are the class's types and offerings. */
  kit_delete(&k, "NodePool", "default");
  assert_int_equal(count_lines(&k, "\nkarpenter_cloudprovider_instance_type"),
                   0);
  kit_close(&k);
}

/* A running pod on node with container limits and requests. */
static void limited_pod(struct kit *k, const char *name, const char *node,
                        const char *owner_kind, const char *limits)
{
  kit_apply(k,
            "{apiVersion: v1, kind: Pod, metadata: {name: %s, namespace: "
            "default, ownerReferences: [{apiVersion: apps/v1, kind: %s,"
            "  name: o-%s, uid: u-%s, controller: true}]},"
            " spec: {nodeName: %s, containers: [{name: c, image: x,"
            "  resources: {requests: {cpu: 100m}, limits: %s}},"
            "  {name: d, image: x}],"
            "  initContainers: [{name: i, image: x,"
            "   resources: {limits: {cpu: '3'}}}]},"
            " status: {phase: Running}}",
            name, owner_kind, name, name, node, limits);
}

#define N1_LIMITS(family, resource)                                            \
  kit_metric(                                                                  \
      &k, family,                                                              \
      CARP_VALUES("node_name=\"n1\"", "resource_type=\"" resource "\""))

static void test_node_limits(void **state)
{
  struct kit k;
  (void)state;
  started_with_node(&k, "c1.4VCPU-8GB");
  /* Containers' limits summed, the larger of that and an init
   * container's: max(2, 3) cores; memory 1Gi (the init container has
   * none). */
  limited_pod(&k, "web", "n1", "ReplicaSet", "{cpu: '2', memory: 1Gi}");
  limited_pod(&k, "agent", "n1", "DaemonSet", "{cpu: 500m}");
  limited_pod(&k, "other", "n2", "ReplicaSet", "{cpu: '8'}");
  /* web 3 + agent 3 (its init container's 3 beat its 500m). */
  assert_true(N1_LIMITS("karpenter_nodes_total_pod_limits", "cpu") == 6);
  assert_true(N1_LIMITS("karpenter_nodes_total_pod_limits", "memory") ==
              1024.0 * 1024 * 1024);
  assert_true(N1_LIMITS("karpenter_nodes_total_pod_limits", "pods") == 2);
  assert_true(N1_LIMITS("karpenter_nodes_total_daemon_limits", "cpu") == 3);
  assert_true(N1_LIMITS("karpenter_nodes_total_daemon_limits", "memory") == 0);
  assert_true(N1_LIMITS("karpenter_nodes_total_daemon_limits", "pods") == 1);
  /* Requests are apart from limits. */
  assert_true(N1_LIMITS("karpenter_nodes_total_pod_requests", "cpu") == 0.2);
  kit_delete(&k, "Pod", "default/web");
  assert_true(N1_LIMITS("karpenter_nodes_total_pod_limits", "cpu") == 3);
  assert_true(N1_LIMITS("karpenter_nodes_total_pod_limits", "pods") == 1);
  kit_close(&k);
}

/* A pod's gauge for the pod name, or -1 when it has no series. */
static double pod_series(struct kit *k, const char *metric, const char *name)
{
  char want[128];
  snprintf(want, sizeof(want), "name=\"%s\"", name);
  return kit_metric(k, metric, CARP_VALUES(want));
}

#define NEAR(a, b) ((a) > (b)-0.001 && (a) < (b) + 0.001)
#define UNDECIDED                                                              \
  "karpenter_pods_provisioning_scheduling_undecided_time_seconds"
#define P_UNBOUND   "karpenter_pods_provisioning_unbound_time_seconds"
#define P_UNSTARTED "karpenter_pods_provisioning_unstarted_time_seconds"

/* Karpenter's provisioning metrics count from the provisioner's first
 * decision that a pod has a place, only for pods it found one for; the
 * undecided time from when it first saw the pod until that decision. */
static void test_provisioning_pod_metrics(void **state)
{
  struct kit k;
  struct carp_provisioner_options po = {.batch_idle_ms = 1 * SEC,
                                        .batch_max_ms = 10 * SEC};
  struct carp_controller *c;
  struct carp_pod_times t;
  const struct carp_pod *a;
  (void)state;
  setup(&k, 0);
  assert_int_equal(carp_provisioner_new(&k.env, &po, &c), 0);
  kit_add(&k, c);
  kit_nodepool(&k, "default", "");
  kit_start(&k);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_pod(&k, "default", "huge", NULL, 64000, "");
  kit_advance(&k, 500);
  /* Seen, no decision yet: the batch window is open. */
  assert_true(NEAR(pod_series(&k, UNDECIDED, "a"), 0.5));
  assert_true(NEAR(pod_series(&k, UNDECIDED, "huge"), 0.5));
  assert_int_equal(count_lines(&k, "\n" P_UNBOUND "{"), 0);
  assert_true(
      NEAR(pod_series(&k, "karpenter_pods_unstarted_time_seconds", "a"), 0.5));
  /* The window closed at 1 s: a goes on a NodeClaim, huge fits nowhere. */
  kit_advance(&k, 600);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  assert_int_equal(count_lines(&k, "\n" UNDECIDED "{"), 0);
  assert_true(NEAR(pod_series(&k, P_UNBOUND, "a"), 0.1));
  assert_true(NEAR(pod_series(&k, P_UNSTARTED, "a"), 0.1));
  assert_int_equal(count_lines(&k, "\n" P_UNBOUND "{"), 1);
  assert_int_equal(count_lines(&k, "\n" P_UNSTARTED "{"), 1);
  kit_advance(&k, 10 * SEC);
  assert_true(NEAR(pod_series(&k, P_UNBOUND, "a"), 10.1));
  /* Bound 10.1 s after it was found a place. */
  kit_patch(&k, "Pod", "default/a",
            "{spec: {nodeName: n1}, status: {conditions: "
            "[{type: PodScheduled, status: 'True'}]}}");
  assert_int_equal(count_lines(&k, "\n" P_UNBOUND "{"), 0);
  assert_true(
      kit_metric(&k, "karpenter_pods_provisioning_bound_duration_seconds_count",
                 NULL) == 1);
  assert_true(NEAR(
      kit_metric(&k, "karpenter_pods_provisioning_bound_duration_seconds_sum",
                 NULL),
      10.1));
  assert_true(NEAR(pod_series(&k, P_UNSTARTED, "a"), 10.1));
  /* Ready 5 s later: the startup histogram, and no more waiting series. */
  kit_advance(&k, 5 * SEC);
  kit_patch(&k, "Pod", "default/a",
            "{status: {phase: Running, conditions: [{type: PodScheduled, "
            "status: 'True'}, {type: Ready, status: 'True'}]}}");
  assert_true(
      kit_metric(&k,
                 "karpenter_pods_provisioning_startup_duration_seconds_count",
                 NULL) == 1);
  assert_true(NEAR(
      kit_metric(&k, "karpenter_pods_provisioning_startup_duration_seconds_sum",
                 NULL),
      15.1));
  assert_int_equal(count_lines(&k, "\n" P_UNSTARTED "{"), 0);
  assert_int_equal(
      count_lines(&k, "\nkarpenter_pods_unstarted_time_seconds{name=\"a\""), 0);
  /* The pod that fits nowhere never counts as provisioned for; its
   * creation-based gauges go on. */
  assert_true(NEAR(
      pod_series(&k, "karpenter_pods_unbound_time_seconds", "huge"), 16.1));
  assert_true(NEAR(
      pod_series(&k, "karpenter_pods_unstarted_time_seconds", "huge"), 16.1));
  assert_true(
      kit_metric(&k, "karpenter_pods_provisioning_bound_duration_seconds_count",
                 NULL) == 1);
  /* The records go: a Ready pod's once observed, a deleted one's at
   * once. */
  a = (const struct carp_pod *)carp_store_get(
      carp_informer_store(k.cluster->pods), "default/a");
  assert_non_null(a);
  assert_int_equal(carp_cluster_pod_times(k.cluster, a->meta.uid, &t), 0);
  {
    const struct carp_pod *h = (const struct carp_pod *)carp_store_get(
        carp_informer_store(k.cluster->pods), "default/huge");
    char uid[128];
    assert_non_null(h);
    snprintf(uid, sizeof(uid), "%s", h->meta.uid);
    assert_int_equal(carp_cluster_pod_times(k.cluster, uid, &t), 1);
    assert_true(t.decided_ms && !t.schedulable_ms);
    kit_delete(&k, "Pod", "default/huge");
    assert_int_equal(carp_cluster_pod_times(k.cluster, uid, &t), 0);
  }
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unbound_time_until_bound),
      cmocka_unit_test(test_unbound_time_respects_the_series_limit),
      cmocka_unit_test(test_nodepool_cost),
      cmocka_unit_test(test_status_conditions),
      cmocka_unit_test(test_status_conditions_per_kind),
      cmocka_unit_test(test_node_status_conditions),
      cmocka_unit_test(test_termination_metrics),
      cmocka_unit_test(test_instance_type_offerings),
      cmocka_unit_test(test_node_limits),
      cmocka_unit_test(test_provisioning_pod_metrics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
