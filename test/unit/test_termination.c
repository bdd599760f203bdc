/* test_termination.c: the node termination controller, reconcile by
 * reconcile on the kit: the order of a drain, PodDisruptionBudgets, the
 * terminationGracePeriod deadline, do-not-disrupt pods, a Node whose VM is
 * already gone, and leadership. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/json.h"
#include "carpenter/termination.h"
#include "carpenter/timeutil.h"
#include "kit.h"

#define SEC    1000
#define MINUTE (60 * SEC)

static void setup(struct kit *k)
{
  struct carp_controller *c = NULL;
  kit_init(k, NULL);
  assert_int_equal(carp_termination_new(&k->env, NULL, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", "");
}

/* The position of the first write whose path holds part (method too), or
 * -1. */
static long write_index(struct kit *k, const char *method, const char *part)
{
  const struct carp_kubemem_write *w;
  size_t n = carp_kubemem_writes(k->api, &w), i;
  for (i = 0; i < n; i++)
    if (!strcmp(w[i].method, method) && strstr(w[i].path, part) &&
        w[i].status / 100 == 2)
      return (long)i;
  return -1;
}

static void pdb(struct kit *k, const char *app, int allowed)
{
  kit_apply(k,
            "{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: "
            "{name: %s, namespace: default}, spec: {maxUnavailable: 1,"
            " selector: {matchLabels: {app: %s}}},"
            " status: {disruptionsAllowed: %d, currentHealthy: 1,"
            " desiredHealthy: 1, expectedPods: 1}}",
            app, app, allowed);
}

static void test_drain_order_then_vm_then_finalizer(void **state)
{
  struct kit k;
  long web, dns;
  (void)state;
  setup(&k);
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "web", "n1", 100, "labels: {app: web}");
  kit_pod(&k, "kube-system", "dns", "n1", 100, "");
  kit_patch(&k, "Pod", "kube-system/dns",
            "{spec: {priorityClassName: system-cluster-critical}}");
  kit_pod(&k, "kube-system", "agent", "n1", 100,
          "ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: "
          "agent, uid: u1, controller: true}]");
  kit_pod(&k, "default", "tolerant", "n1", 100, "");
  kit_patch(&k, "Pod", "default/tolerant",
            "{spec: {tolerations: [{key: karpenter.sh/disrupted, operator: "
            "Exists}]}}");
  kit_start(&k);
  kit_delete(&k, "Node", "n1");
  kit_advance(&k, 10 * SEC);
  /* The NodeClaim goes with its Node. */
  assert_non_null(
      kit_str(&k, "NodeClaim", "n1", "metadata", "deletionTimestamp", NULL));
  web = write_index(&k, "POST", "/pods/web/eviction");
  dns = write_index(&k, "POST", "/pods/dns/eviction");
  assert_true(web >= 0 && dns > web);
  /* The taint came before any eviction. */
  assert_true(write_index(&k, "PATCH", "/nodes/n1") < web);
  assert_int_equal(kit_writes(&k, "POST", "/pods/agent/eviction"), 0);
  assert_int_equal(kit_writes(&k, "POST", "/pods/tolerant/eviction"), 0);
  assert_false(kit_exists(&k, "Pod", "default/web"));
  assert_false(kit_exists(&k, "Pod", "kube-system/dns"));
  /* Drained, VM deleted, Node let go. */
  assert_int_equal(carp_fake_provider_count(k.provider), 0);
  assert_false(kit_exists(&k, "Node", "n1"));
  assert_int_equal(kit_events(&k, "Drained"), 2); /* Node and NodeClaim */
  assert_string_equal(kit_condition(&k, "NodeClaim", "n1", "Drained", NULL),
                      "True");
  assert_true(kit_metric(&k, "karpenter_pods_eviction_requests_total",
                         (const char *const[]){"200", NULL}) == 2);
  assert_true(kit_metric(&k, "karpenter_nodes_terminated_total",
                         (const char *const[]){"default", "zone-a", NULL}) ==
              1);
  kit_close(&k);
}

static void test_pdb_holds_the_drain_until_it_allows(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "web", "n1", 100, "labels: {app: web}");
  pdb(&k, "web", 0);
  kit_start(&k);
  kit_delete(&k, "Node", "n1");
  kit_advance(&k, 2 * MINUTE);
  assert_true(kit_exists(&k, "Pod", "default/web"));
  assert_true(kit_exists(&k, "Node", "n1"));
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  assert_true(kit_events(&k, "FailedDraining") >= 1);
  /* Backed off: 100 ms doubling to 10 s, not a request per tick. */
  assert_true(kit_writes(&k, "POST", "/eviction") == 0);
  {
    double refused = kit_metric(&k, "karpenter_pods_eviction_requests_total",
                                (const char *const[]){"429", NULL});
    assert_true(refused >= 5 && refused <= 30);
  }
  assert_string_equal(kit_condition(&k, "NodeClaim", "n1", "Drained", NULL),
                      "Unknown");
  kit_patch(&k, "PodDisruptionBudget", "default/web",
            "{status: {disruptionsAllowed: 1}}");
  kit_advance(&k, 15 * SEC);
  assert_false(kit_exists(&k, "Pod", "default/web"));
  assert_false(kit_exists(&k, "Node", "n1"));
  kit_close(&k);
}

static void test_deadline_deletes_what_evictions_cannot(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_patch(&k, "NodeClaim", "n1", "{spec: {terminationGracePeriod: 5m}}");
  kit_pod(&k, "default", "web", "n1", 100, "labels: {app: web}");
  kit_pod(&k, "default", "pinned", "n1", 100,
          "annotations: {karpenter.sh/do-not-disrupt: 'true'}");
  pdb(&k, "web", 0);
  kit_start(&k);
  kit_delete(&k, "Node", "n1");
  /* The deadline is stamped on the NodeClaim. */
  assert_non_null(kit_str(&k, "NodeClaim", "n1", "metadata", "annotations",
                          "karpenter.sh/nodeclaim-termination-timestamp",
                          NULL));
  assert_int_equal(kit_events(&k, "TerminationGracePeriodExpiring"), 2);
  /* Before the deadline minus the pods' 30 s grace: nothing deleted. */
  kit_advance(&k, 4 * MINUTE + 20 * SEC);
  assert_int_equal(kit_writes(&k, "DELETE", "/pods/"), 0);
  assert_int_equal(kit_writes(&k, "POST", "/pods/pinned/eviction"), 0);
  assert_true(kit_exists(&k, "Pod", "default/pinned"));
  kit_advance(&k, 15 * SEC);
  assert_int_equal(kit_writes(&k, "DELETE", "/pods/web"), 1);
  assert_int_equal(kit_writes(&k, "DELETE", "/pods/pinned"), 1);
  assert_int_equal(kit_events(&k, "Disrupted"), 2);
  kit_advance(&k, 1 * MINUTE);
  assert_false(kit_exists(&k, "Node", "n1"));
  kit_close(&k);
}

/* Node repair stamps "now" on a NodeClaim whose pool has no
 * terminationGracePeriod: the stamp is the deadline, so the drain deletes
 * at once instead of evicting (the kubelet is gone: an eviction would leave
 * the pod terminating for minutes). */
static void test_stamp_without_grace_period_is_the_deadline(void **state)
{
  struct kit k;
  char ts[CARP_RFC3339_LEN];
  (void)state;
  setup(&k);
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "web", "n1", 100, "labels: {app: web}");
  pdb(&k, "web", 0);
  kit_start(&k);
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock), 0, ts);
  kit_patch(&k, "NodeClaim", "n1",
            "{metadata: {annotations: "
            "{karpenter.sh/nodeclaim-termination-timestamp: '%s'}}}",
            ts);
  kit_delete(&k, "Node", "n1");
  kit_advance(&k, SEC);
  assert_int_equal(kit_writes(&k, "DELETE", "/pods/web"), 1);
  assert_int_equal(kit_writes(&k, "POST", "/eviction"), 0);
  assert_int_equal(kit_events(&k, "Disrupted"), 1);
  kit_close(&k);
}

static void on_deleted(int status, const struct carp_provider_error *err,
                       void *arg)
{
  (void)err;
  *(int *)arg = status;
}

static void test_gone_vm_skips_the_drain(void **state)
{
  struct kit k;
  struct carp_provider_delete_req req;
  struct carp_provider_op *op = NULL;
  char pid[160];
  int status = 1;
  (void)state;
  setup(&k);
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "web", "n1", 100, "");
  snprintf(pid, sizeof(pid), "%s",
           kit_str(&k, "NodeClaim", "n1", "status", "providerID", NULL));
  kit_patch(&k, "Node", "n1",
            "{status: {conditions: [{type: Ready, status: 'Unknown', reason: "
            "NodeStatusUnknown, message: ''}]}}");
  kit_start(&k);
  /* The VM vanished behind our back (someone deleted it in Proxmox). */
  memset(&req, 0, sizeof(req));
  req.provider_id = pid;
  assert_int_equal(
      carp_provider_delete(k.provider, &req, on_deleted, &status, &op), 0);
  kit_settle(&k);
  assert_int_equal(status, 0);
  kit_delete(&k, "Node", "n1");
  kit_advance(&k, 5 * SEC);
  /* Nothing to drain on a machine that is gone. */
  assert_false(kit_exists(&k, "Node", "n1"));
  assert_int_equal(kit_writes(&k, "POST", "/eviction"), 0);
  assert_true(kit_exists(&k, "Pod", "default/web"));
  kit_close(&k);
}

static void test_not_leader_writes_nothing(void **state)
{
  struct kit k;
  size_t before;
  (void)state;
  setup(&k);
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "web", "n1", 100, "");
  kit_start(&k);
  kit_set_leader(&k, 0);
  before = kit_writes(&k, NULL, NULL); /* the test's own are not counted */
  kit_delete(&k, "Node", "n1");
  kit_advance(&k, 1 * MINUTE);
  assert_int_equal(kit_writes(&k, NULL, NULL), before);
  assert_true(kit_exists(&k, "Pod", "default/web"));
  kit_set_leader(&k, 1);
  kit_advance(&k, 30 * SEC);
  assert_false(kit_exists(&k, "Node", "n1"));
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_drain_order_then_vm_then_finalizer),
      cmocka_unit_test(test_pdb_holds_the_drain_until_it_allows),
      cmocka_unit_test(test_deadline_deletes_what_evictions_cannot),
      cmocka_unit_test(test_stamp_without_grace_period_is_the_deadline),
      cmocka_unit_test(test_gone_vm_skips_the_drain),
      cmocka_unit_test(test_not_leader_writes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
