/* test_provisioning.c: a provisioning batch at the reconcile level, on
 * caches filled by hand (the informers are never started) and the fake
 * provider: the problem the provisioner builds, what the solve makes of it
 * and why a pod waits.
 *  - a Node Carpenter launched that keeps node.kubernetes.io/not-ready
 *    (the lifecycle controller's monitor period, a broken CNI): its pods
 *    count there and no NodeClaim is added, with or without nominations;
 *  - a taint that never goes and that Carpenter cannot know will go: the
 *    nominated pods stay headed for the node (the runaway guard), and the
 *    reason names the taint and the node;
 *  - a Node whose labels are not synced yet (not registered) is read
 *    through its NodeClaim, not planned around with its raw labels;
 *  - a nominated target that filled up with others: the pod is placed
 *    anew; a target going away is no target;
 *  - pods on a node being deleted are placed before their eviction;
 *  - per-pod log lines fold by reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../internal/provisioning/fold.h"
#include "../../internal/provisioning/problem.h"
#include "cache_testlib.h"
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/cluster.h"
#include "carpenter/json.h"
#include "carpenter/metrics.h"
#include "carpenter/provider.h"
#include "carpenter/timeutil.h"

#define T0     "2026-11-22T10:00:00Z"
#define NOTRDY "node.kubernetes.io/not-ready"

struct env {
  uv_loop_t loop;
  struct carp_kube *kube;
  struct carp_cluster *cluster;
  struct carp_metrics *metrics;
  struct carp_provider *provider;
  const struct carp_pod *pending[16];
  size_t npending;
  struct carp_prov_problem pr;
  struct carp_sched_result *res;
};

#define READY_STATUS                                                           \
  "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","       \
  "\"reason\":\"Ready\",\"message\":\"\",\"lastTransitionTime\":\"" T0 "\"}]}"

static void put_pool_and_class(struct env *e)
{
  cache_put(e->cluster->nodeclasses, &carp_kind_proxmoxnodeclass,
            "{\"metadata\":{\"name\":\"default\",\"uid\":\"u-class\","
            "\"resourceVersion\":\"1\",\"generation\":1},"
            "\"spec\":{\"template\":{\"name\":\"k3s-agent\"}}," READY_STATUS
            "}");
  cache_put(
      e->cluster->nodepools, &carp_kind_nodepool,
      "{\"metadata\":{\"name\":\"default\",\"uid\":\"u-pool\","
      "\"resourceVersion\":\"1\",\"generation\":1},"
      "\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":"
      "\"carpenter.dev\",\"kind\":\"ProxmoxNodeClass\",\"name\":\"default\"},"
      "\"requirements\":[]}}}," READY_STATUS "}");
}

/* A launched NodeClaim (4 vCPU, 8Gi) with providerID fake://zone-a/<name>;
 * deleting: a deletionTimestamp. */
static void put_claim(struct env *e, const char *name, int deleting)
{
  char json[4096];
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\","
           "\"resourceVersion\":\"1\",\"generation\":1,"
           "\"creationTimestamp\":\"" T0 "\",%s\"labels\":{"
           "\"karpenter.sh/nodepool\":\"default\"},\"finalizers\":["
           "\"karpenter.sh/termination\"]},"
           "\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\",\"kind\":"
           "\"ProxmoxNodeClass\",\"name\":\"default\"},\"requirements\":["
           "{\"key\":\"karpenter.sh/nodepool\",\"operator\":\"In\","
           "\"values\":[\"default\"]}]},"
           "\"status\":{\"providerID\":\"fake://zone-a/%s\","
           "\"capacity\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
           "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":"
           "\"110\"},\"conditions\":[{\"type\":\"Launched\",\"status\":"
           "\"True\",\"reason\":\"Launched\",\"message\":\"\","
           "\"lastTransitionTime\":\"" T0 "\"}]}}",
           name, name,
           deleting ? "\"deletionTimestamp\":\"2026-11-22T10:05:00Z\"," : "",
           name);
  cache_put(e->cluster->nodeclaims, &carp_kind_nodeclaim, json);
}

/* The claim's Node. registered: Carpenter synced it (labels, the
 * registered label); otherwise the kubelet's raw labels only. taint: one
 * more taint (NoSchedule), or NULL. created_ago_ms: its age. */
static void put_node(struct env *e, const char *name, const char *claim,
                     int registered, const char *taint, int64_t created_ago_ms)
{
  char json[4096], when[CARP_RFC3339_LEN], taints[512];
  carp_time_format_rfc3339(carp_time_wall_ms() - created_ago_ms, 0, when);
  snprintf(taints, sizeof(taints), "%s%s%s%s",
           registered ? ""
                      : "{\"key\":\"karpenter.sh/unregistered\","
                        "\"effect\":\"NoExecute\"}",
           taint && !registered ? "," : "", taint ? "{\"key\":\"" : "",
           taint ? taint : "");
  if (taint)
    strcat(taints, "\",\"effect\":\"NoSchedule\"}");
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"un-%s\","
           "\"resourceVersion\":\"1\",\"creationTimestamp\":\"%s\","
           "\"labels\":{\"kubernetes.io/hostname\":\"%s\"%s}},"
           "\"spec\":{\"providerID\":\"fake://zone-a/%s\",\"taints\":[%s]},"
           "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\","
           "\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
           "\"status\":\"True\",\"lastTransitionTime\":\"%s\"}]}}",
           name, name, when, name,
           registered ? ",\"karpenter.sh/nodepool\":\"default\","
                        "\"karpenter.sh/registered\":\"true\","
                        "\"karpenter.sh/initialized\":\"true\","
                        "\"karpenter.sh/capacity-type\":\"on-demand\","
                        "\"kubernetes.io/arch\":\"amd64\","
                        "\"kubernetes.io/os\":\"linux\","
                        "\"carpenter.dev/proxmoxnodeclass\":\"default\""
                      : "",
           claim, taints, when);
  cache_put(e->cluster->nodes, &carp_kind_node, json);
}

/* A pod of 1 CPU: pending (node NULL) or bound; owner "ReplicaSet",
 * "DaemonSet" or NULL. Returns the cached pod. */
static const struct carp_pod *put_pod(struct env *e, const char *name,
                                      const char *node, const char *owner)
{
  char json[4096], key[128];
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
           "\"uid\":\"u-%s\",\"resourceVersion\":\"1\","
           "\"creationTimestamp\":\"" T0 "\"%s%s%s},"
           "\"spec\":{%s%s%s\"nodeSelector\":{\"karpenter.sh/nodepool\":"
           "\"default\"},\"containers\":[{\"name\":\"c\",\"resources\":{"
           "\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},"
           "\"status\":{\"phase\":\"%s\"%s}}",
           name, name,
           owner ? ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
                   "\"kind\":\""
                 : "",
           owner ? owner : "",
           owner ? "\",\"name\":\"o\",\"uid\":\"uo\",\"controller\":true}]"
                 : "",
           node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"," : "",
           node ? "Running" : "Pending",
           node ? ""
                : ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"
                  "\"False\",\"reason\":\"Unschedulable\"}]");
  cache_put(e->cluster->pods, &carp_kind_pod, json);
  snprintf(key, sizeof(key), "default/%s", name);
  return (const struct carp_pod *)carp_store_get(
      carp_informer_store(e->cluster->pods), key);
}

static void pending(struct env *e, const char *name)
{
  e->pending[e->npending++] = put_pod(e, name, NULL, "ReplicaSet");
}

static int env_open(void **state)
{
  struct env *e = carp_calloc(1, sizeof(*e));
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct carp_fake_provider_options fo;
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = (char *)"http://127.0.0.1:1";
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  memset(&fo, 0, sizeof(fo));
  assert_int_equal(uv_loop_init(&e->loop), 0);
  assert_int_equal(carp_kube_new(&e->loop, &ko, &e->kube), 0);
  e->metrics = carp_metrics_new();
  assert_int_equal(carp_cluster_new(&e->loop, e->kube, e->metrics, &e->cluster),
                   0);
  assert_int_equal(carp_fake_provider_new(&e->loop, &fo, &e->provider), 0);
  put_pool_and_class(e);
  *state = e;
  return 0;
}

static void on_closed(void *arg)
{
  (*(int *)arg)++;
}

static void batch_free(struct env *e)
{
  carp_sched_result_free(e->res);
  e->res = NULL;
  carp_prov_problem_free(&e->pr);
}

static int env_close(void **state)
{
  struct env *e = *state;
  int n = 0;
  batch_free(e);
  carp_provider_close(e->provider, on_closed, &n);
  carp_cluster_close(e->cluster, on_closed, &n);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  carp_kube_close(e->kube, on_closed, &n);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  assert_int_equal(n, 3);
  assert_int_equal(uv_loop_close(&e->loop), 0);
  carp_metrics_free(e->metrics);
  carp_free(e);
  return 0;
}

/* Builds the batch's problem from the caches and solves it. */
static void batch(struct env *e)
{
  struct carp_prov_input in;
  batch_free(e);
  memset(&in, 0, sizeof(in));
  in.pending = e->pending;
  in.npending = e->npending;
  assert_int_equal(
      carp_prov_problem_build(&e->pr, e->cluster, e->provider, &in), 0);
  assert_int_equal(carp_sched_solve(&e->pr.p, &e->res), 0);
  assert_int_equal(e->res->nunschedulable, 0);
}

static void nominate_all(struct env *e, const char *target)
{
  size_t i;
  for (i = 0; i < e->npending; i++)
    carp_cluster_nominate(e->cluster, e->pending[i]->meta.uid, target, 60000);
}

static const char *slot_name(struct env *e, uint32_t slot)
{
  return e->pr.node_names[slot];
}

/* ---- the lingering not-ready taint ---- */

static void test_lingering_not_ready_taint(void **state)
{
  struct env *e = *state;
  size_t i;
  put_claim(e, "default-a", 0);
  put_node(e, "node-a", "default-a", 1, NOTRDY, 60000);
  for (i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p%zu", i);
    pending(e, name);
  }
  /* Nominated to the claim before its Node came: they count on the Node
   * (the claim's other name), nothing is placed again. */
  nominate_all(e, "default-a");
  batch(e);
  assert_int_equal(e->pr.nheaded, 3);
  assert_int_equal(e->pr.p.npods, 0);
  for (i = 0; i < 3; i++)
    assert_string_equal(slot_name(e, e->pr.headed[i].slot), "node-a");
  /* After a restart (no nominations) the solve itself puts them on the
   * node it launched: not-ready is ephemeral there. */
  for (i = 0; i < 3; i++)
    carp_cluster_nominate(e->cluster, e->pending[i]->meta.uid, "x", 0);
  batch(e);
  assert_int_equal(e->pr.p.npods, 3);
  assert_int_equal(e->res->nclaims, 0);
  for (i = 0; i < 3; i++) {
    assert_int_equal(e->res->assignments[i].target, CARP_SCHED_ON_NODE);
    assert_string_equal(slot_name(e, e->res->assignments[i].index), "node-a");
  }
}

static void test_ephemeral_taint_only_on_nodes_carpenter_launched(void **state)
{
  struct env *e = *state;
  /* A node nobody launched, with the same taint: not a place for the pod
   * (the kube-scheduler would not use it either), so a claim is made. */
  put_node(e, "foreign", "nobody", 0, NOTRDY, 60000);
  pending(e, "p0");
  batch(e);
  assert_int_equal(e->res->nclaims, 1);
}

/* ---- a taint that never goes: the runaway guard ---- */

static void test_taint_that_never_goes(void **state)
{
  struct env *e = *state;
  struct carp_buf why;
  size_t i;
  put_claim(e, "default-b", 0);
  put_node(e, "node-b", "default-b", 1, "cni.example.org/not-ready", 60000);
  pending(e, "p0");
  pending(e, "p1");
  /* Without a nomination the solve cannot use the node (a taint it does
   * not know will go): this is what launched a claim every batch. */
  batch(e);
  assert_int_equal(e->res->nclaims, 1);
  /* Provisioned for once: headed there, nothing more is launched while
   * the nomination lasts, and the reason names the taint and the node. */
  nominate_all(e, "default-b");
  for (i = 0; i < 5; i++) {
    batch(e);
    assert_int_equal(e->pr.p.npods, 0);
    assert_int_equal(e->res->nclaims, 0);
  }
  assert_int_equal(e->pr.nheaded, 2);
  carp_buf_init(&why, 1024);
  assert_int_equal(carp_prov_why_waiting(&e->pr, &e->pr.headed[0], &why),
                   CARP_PROV_WAIT_TAINT);
  assert_string_equal(carp_buf_cstr(&why),
                      "node node-b has taint cni.example.org/not-ready:"
                      "NoSchedule, which the pod does not tolerate");
  carp_buf_free(&why);
  /* The nomination reports once. */
  assert_int_equal(carp_cluster_nomination_report(e->cluster, "u-p0"), 1);
  assert_int_equal(carp_cluster_nomination_report(e->cluster, "u-p0"), 0);
}

static void test_waiting_reasons(void **state)
{
  struct env *e = *state;
  struct carp_buf why;
  put_claim(e, "default-c", 0);
  put_node(e, "node-c", "default-c", 1, NOTRDY, 60000);
  pending(e, "p0");
  nominate_all(e, "node-c");
  batch(e);
  carp_buf_init(&why, 1024);
  /* The solve lets not-ready pass, the kube-scheduler does not: the
   * reason is the scheduler's. */
  assert_int_equal(carp_prov_why_waiting(&e->pr, &e->pr.headed[0], &why),
                   CARP_PROV_WAIT_TAINT);
  assert_non_null(strstr(carp_buf_cstr(&why), "node.kubernetes.io/not-ready"));
  carp_buf_free(&why);
  assert_string_equal(carp_prov_wait_name(CARP_PROV_WAIT_TAINT), "taint");
}

/* ---- a Node not registered yet (issue 20.5) ---- */

static void test_unregistered_node_is_read_through_its_claim(void **state)
{
  struct env *e = *state;
  struct carp_buf why;
  put_claim(e, "default-d", 0);
  /* The kubelet's Node: raw labels, unregistered and not-ready taints. */
  put_node(e, "node-d", "default-d", 0, NOTRDY, 60000);
  pending(e, "p0");
  pending(e, "p1");
  /* No nomination (a restart): the claim stands for its Node, with the
   * NodePool's labels, and takes the pods. */
  batch(e);
  assert_int_equal(e->res->nclaims, 0);
  assert_int_equal(e->res->assignments[0].target, CARP_SCHED_ON_NODE);
  assert_string_equal(slot_name(e, e->res->assignments[0].index), "default-d");
  assert_true(e->pr.node_is_claim[e->res->assignments[0].index]);
  /* Nominated (to the Node's name or the claim's): headed for the claim,
   * and the reason is that the node is not registered. */
  nominate_all(e, "node-d");
  batch(e);
  assert_int_equal(e->pr.nheaded, 2);
  assert_string_equal(slot_name(e, e->pr.headed[0].slot), "default-d");
  carp_buf_init(&why, 1024);
  assert_int_equal(carp_prov_why_waiting(&e->pr, &e->pr.headed[0], &why),
                   CARP_PROV_WAIT_NOT_REGISTERED);
  assert_non_null(strstr(carp_buf_cstr(&why), "node-d"));
  carp_buf_free(&why);
}

/* ---- targets that filled up or go away ---- */

static void test_full_or_going_target_is_placed_anew(void **state)
{
  struct env *e = *state;
  int i;
  put_claim(e, "default-e", 0);
  put_node(e, "node-e", "default-e", 1, NULL, 60000);
  /* Others took the room (4 CPUs of 4). */
  for (i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof(name), "other%d", i);
    put_pod(e, name, "node-e", "ReplicaSet");
  }
  pending(e, "p0");
  nominate_all(e, "default-e");
  batch(e);
  assert_int_equal(e->pr.nheaded, 0);
  assert_int_equal(e->pr.p.npods, 1);
  assert_int_equal(e->res->nclaims, 1);
}

/* ---- pods on a node being deleted ---- */

static void test_pods_of_a_deleting_node_are_placed(void **state)
{
  struct env *e = *state;
  put_claim(e, "default-f", 1); /* deleting (expired, deleted by hand) */
  put_node(e, "node-f", "default-f", 1, NULL, 60000);
  put_pod(e, "web-1", "node-f", "ReplicaSet");
  put_pod(e, "web-2", "node-f", "ReplicaSet");
  put_pod(e, "agent", "node-f", "DaemonSet"); /* goes with its node */
  batch(e);
  assert_int_equal(e->pr.nmoving, 2);
  assert_int_equal(e->pr.p.npods, 2);
  assert_int_equal(e->res->nclaims, 1);
  assert_int_equal(e->res->claims[0].npods, 2);
  /* Provisioned for: the next batch does not place them again. */
  carp_cluster_nominate(e->cluster, "u-web-1", "default-new", 60000);
  carp_cluster_nominate(e->cluster, "u-web-2", "default-new", 60000);
  put_claim(e, "default-new", 0);
  batch(e);
  assert_int_equal(e->pr.nmoving, 2);
  assert_int_equal(e->pr.nheaded, 2);
  assert_int_equal(e->pr.p.npods, 0);
  /* A pod nominated to the node that now goes is placed elsewhere. */
  pending(e, "late");
  carp_cluster_nominate(e->cluster, "u-late", "node-f", 60000);
  batch(e);
  assert_int_equal(e->pr.nheaded, 2);
  assert_int_equal(e->pr.p.npods, 1);
}

/* ---- folding ---- */

static void test_fold_by_reason(void **state)
{
  struct carp_prov_fold f;
  int i;
  (void)state;
  carp_prov_fold_init(&f);
  for (i = 0; i < 20000; i++) {
    char pod[32];
    snprintf(pod, sizeof(pod), "default/p%d", i);
    carp_prov_fold_add(&f, i % 2 ? "exceeds limit cpu" : "no instance type",
                       pod);
  }
  assert_int_equal(f.n, 2);
  assert_int_equal(f.total, 20000);
  assert_string_equal(f.groups[0].key, "no instance type");
  assert_int_equal(f.groups[0].count, 10000);
  assert_string_equal(carp_buf_cstr(&f.groups[0].examples),
                      "default/p0, default/p2, default/p4");
  assert_string_equal(carp_buf_cstr(&f.groups[1].examples),
                      "default/p1, default/p3, default/p5");
  carp_prov_fold_free(&f);
}

int main(void)
{
#define ENV_TEST(f) cmocka_unit_test_setup_teardown(f, env_open, env_close)
  const struct CMUnitTest tests[] = {
      ENV_TEST(test_lingering_not_ready_taint),
      ENV_TEST(test_ephemeral_taint_only_on_nodes_carpenter_launched),
      ENV_TEST(test_taint_that_never_goes),
      ENV_TEST(test_waiting_reasons),
      ENV_TEST(test_unregistered_node_is_read_through_its_claim),
      ENV_TEST(test_full_or_going_target_is_placed_anew),
      ENV_TEST(test_pods_of_a_deleting_node_are_placed),
      cmocka_unit_test(test_fold_by_reason),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
