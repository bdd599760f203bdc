/* test_provisioner.c: the provisioning controller reconcile by reconcile
 * on the fake clock (test/kit): the batch window (1 s idle, 10 s at most),
 * one NodeClaim for pods that fit together, nothing for pods that fit on a
 * node already there, no second NodeClaim for pods already provisioned
 * for, an event for a pod no pool can take, a failed create tried again,
 * no batch for the kube-scheduler's rewrite of a pending pod's status, no
 * instance types asked while every pending pod is headed for a target,
 * Nominated events rate-limited as Karpenter's are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/provisioner.h"
#include "kit.h"

#define SEC 1000ULL

static void setup(struct kit *k, const char *pool_spec)
{
  struct carp_provisioner_options o = {.batch_idle_ms = 1 * SEC,
                                       .batch_max_ms = 10 * SEC};
  struct carp_controller *c;
  kit_init(k, NULL);
  assert_int_equal(carp_provisioner_new(&k->env, &o, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", pool_spec);
}

static size_t creates(struct kit *k)
{
  return kit_writes(k, "POST", "/nodeclaims");
}

static void test_window_then_one_claim(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_advance(&k, 600);
  kit_pod(&k, "default", "b", NULL, 500, "");
  /* The window closes 1 s after the last trigger, not before. */
  kit_advance(&k, 900);
  assert_int_equal(creates(&k), 0);
  kit_advance(&k, 200);
  assert_int_equal(creates(&k), 1);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  assert_true(kit_events(&k, "Nominated") >= 2);
  /* Both pods nominated to it: later batches launch nothing more. */
  kit_advance(&k, 60 * SEC);
  assert_int_equal(creates(&k), 1);
  kit_close(&k);
}

/* Karpenter's PodNominationRateLimiter: Nominated events come 10 at once,
 * then 5 a second, across pods, whatever the batch. */
static void test_nominated_events_are_rate_limited(void **state)
{
  struct kit k;
  char name[16];
  int i;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  for (i = 0; i < 30; i++) {
    snprintf(name, sizeof(name), "a%d", i);
    kit_pod(&k, "default", name, NULL, 100, "");
  }
  kit_advance(&k, 1100);
  assert_true(creates(&k) >= 1);
  assert_int_equal(kit_events(&k, "Nominated"), 10);
  /* 1.1 s later a second batch closes: 5.5 tokens came back. */
  for (i = 0; i < 10; i++) {
    snprintf(name, sizeof(name), "b%d", i);
    kit_pod(&k, "default", name, NULL, 100, "");
  }
  kit_advance(&k, 1100);
  assert_int_equal(kit_events(&k, "Nominated"), 15);
  kit_close(&k);
}

static void test_window_closes_at_max(void **state)
{
  struct kit k;
  int i;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  /* A trigger every 900 ms keeps the idle timer from firing. */
  for (i = 0; i < 10; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p%d", i);
    kit_pod(&k, "default", name, NULL, 100, "");
    kit_advance(&k, 900);
  }
  assert_int_equal(creates(&k), 0);
  kit_advance(&k, 1100);
  assert_int_equal(creates(&k), 1);
  kit_close(&k);
}

static void test_fits_on_existing_node(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "");
  kit_node(&k, "n1", "default", "c1.4VCPU-8GB");
  kit_start(&k);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_advance(&k, 5 * SEC);
  assert_int_equal(creates(&k), 0);
  assert_true(kit_events(&k, "Nominated") >= 1);
  kit_close(&k);
}

static void test_unschedulable_pod_gets_an_event(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "limits: {cpu: '1'}");
  kit_start(&k);
  kit_pod(&k, "default", "huge", NULL, 64000, "");
  kit_advance(&k, 5 * SEC);
  assert_int_equal(creates(&k), 0);
  assert_true(kit_events(&k, "FailedScheduling") >= 1);
  kit_close(&k);
}

static void test_failed_create_is_retried(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  carp_kubemem_fail(k.api, "POST", "/nodeclaims", 500, 1);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_advance(&k, 1500);
  assert_int_equal(kit_count(&k, "NodeClaim"), 0);
  kit_advance(&k, 2 * SEC);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  kit_close(&k);
}

static void test_follower_launches_nothing(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  kit_set_leader(&k, 0);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_advance(&k, 60 * SEC);
  assert_int_equal(kit_count(&k, "NodeClaim"), 0);
  /* Leading again: a batch at once. */
  kit_set_leader(&k, 1);
  kit_advance(&k, 100);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  kit_close(&k);
}

static double batches(struct kit *k)
{
  return kit_metric(k, "controller_runtime_reconcile_total",
                    CARP_VALUES("controller=\"provisioner\""));
}

static void scheduler_retry(struct kit *k, const char *pod, int nodes)
{
  char patch[256];
  snprintf(patch, sizeof(patch),
           "{status: {conditions: [{type: PodScheduled, status: 'False', "
           "reason: Unschedulable, message: '0/%d nodes are available'}]}}",
           nodes);
  kit_patch(k, "Pod", pod, "%s", patch);
}

/* The kube-scheduler rewrites a pending pod's PodScheduled message on each
 * retry: no batch for that, but one for a change a batch reads. */
static void test_scheduler_retries_start_no_batch(void **state)
{
  struct kit k;
  double before;
  int i;
  (void)state;
  setup(&k, "limits: {cpu: '1'}");
  kit_start(&k);
  kit_pod(&k, "default", "huge", NULL, 64000, "");
  kit_advance(&k, 1100);
  before = batches(&k);
  assert_true(before >= 1);
  for (i = 0; i < 4; i++) {
    scheduler_retry(&k, "default/huge", i + 2);
    kit_advance(&k, 2 * SEC);
  }
  assert_true(batches(&k) == before);
  /* Its labels changed: a topology spread may count it differently. */
  kit_patch(&k, "Pod", "default/huge", "{metadata: {labels: {tier: web}}}");
  kit_advance(&k, 1100);
  assert_true(batches(&k) == before + 1);
  kit_close(&k);
}

/* A pod that requires karpenter.sh/nodepool DoesNotExist is ignored, as
 * Karpenter's Validate does; the others have their first decision timed
 * from when they were first seen, once. */
static void test_ignored_pods_and_decision_duration(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_pod(&k, "default", "shy", NULL, 500, "");
  kit_patch(&k, "Pod", "default/shy",
            "{spec: {affinity: {nodeAffinity: "
            "{requiredDuringSchedulingIgnoredDuringExecution: "
            "{nodeSelectorTerms: [{matchExpressions: [{key: "
            "karpenter.sh/nodepool, operator: DoesNotExist}]}]}}}}}");
  kit_advance(&k, 1100);
  assert_int_equal(creates(&k), 1);
  assert_int_equal(
      kit_metric(&k, "karpenter_scheduler_ignored_pods_count", NULL), 1);
  assert_int_equal(
      kit_metric(&k, "karpenter_scheduler_unschedulable_pods_count", NULL), 0);
  assert_int_equal(
      kit_metric(&k,
                 "karpenter_pods_scheduling_decision_duration_seconds_count",
                 NULL),
      1);
  {
    /* Seen at 0, decided when the 1 s window closed. */
    double took = kit_metric(
        &k, "karpenter_pods_scheduling_decision_duration_seconds_sum", NULL);
    assert_true(took >= 1 && took <= 1.1);
  }
  /* Later batches decide nothing new for it. */
  kit_advance(&k, 30 * SEC);
  assert_int_equal(
      kit_metric(&k,
                 "karpenter_pods_scheduling_decision_duration_seconds_count",
                 NULL),
      1);
  kit_close(&k);
}

/* karpenter_scheduler_pending_pods_by_effective_zone_count: the last
 * batch's pending pods by the zone their constraints leave them. */
static void test_pending_pods_by_effective_zone(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_pod(&k, "default", "b", NULL, 500, "");
  kit_pod(&k, "default", "pinned", NULL, 500, "");
  kit_patch(&k, "Pod", "default/pinned",
            "{spec: {nodeSelector: {topology.kubernetes.io/zone: pve-9}}}");
  kit_advance(&k, 1100);
  assert_true(kit_metric(&k,
                         "karpenter_scheduler_pending_pods_by_effective_zone_"
                         "count",
                         CARP_VALUES("controller=\"provisioner\"",
                                     "zone=\"flexible\"")) == 2);
  assert_true(kit_metric(&k,
                         "karpenter_scheduler_pending_pods_by_effective_zone_"
                         "count",
                         CARP_VALUES("zone=\"pve-9\"")) == 1);
  /* The pods bind: the next batch has nothing pending, and no series. */
  kit_patch(&k, "Pod", "default/a", "{spec: {nodeName: n1}}");
  kit_patch(&k, "Pod", "default/b", "{spec: {nodeName: n1}}");
  kit_delete(&k, "Pod", "default/pinned");
  kit_advance(&k, 30 * SEC);
  assert_true(kit_metric(&k,
                         "karpenter_scheduler_pending_pods_by_effective_zone_"
                         "count",
                         NULL) == 0);
  kit_close(&k);
}

/* Pods headed for the NodeClaim made for them are looked over again and
 * again, and while every one is headed nothing is solved: the provider is
 * not asked for its instance types. Once the claim's node is up and the
 * pods still cannot bind, each is told after the grace, once. */
static void test_headed_pods_ask_no_instance_types(void **state)
{
  struct kit k;
  size_t asks;
  double before;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_pod(&k, "default", "b", NULL, 500, "");
  kit_advance(&k, 1500);
  assert_int_equal(creates(&k), 1);
  asks = carp_fake_provider_calls(k.provider, "instance_types");
  assert_true(asks >= 1);
  before = batches(&k);
  kit_advance(&k, 25 * SEC);
  assert_true(batches(&k) >= before + 2);
  assert_int_equal(carp_fake_provider_calls(k.provider, "instance_types"),
                   asks);
  kit_claim_up(&k, kit_created_claim(&k, 0), "default");
  kit_patch(&k, "Node", kit_created_claim(&k, 0),
            "{spec: {taints: [{key: example.com/held, effect: NoSchedule}]}}");
  kit_advance(&k, 29 * SEC);
  assert_int_equal(kit_events(&k, "WaitingForNode"), 0);
  kit_advance(&k, 12 * SEC);
  assert_int_equal(kit_events(&k, "WaitingForNode"), 2);
  kit_advance(&k, 30 * SEC);
  assert_int_equal(kit_events(&k, "WaitingForNode"), 2);
  assert_int_equal(creates(&k), 1);
  /* A pod that is headed nowhere is solved for: the types are asked. */
  kit_pod(&k, "default", "c", NULL, 500, "");
  kit_advance(&k, 1500);
  assert_true(carp_fake_provider_calls(k.provider, "instance_types") > asks);
  kit_close(&k);
}

/* Nodes that join one after another do not each bring a look-over of the
 * pending pods headed for them: the pods are looked over every 10 s, and
 * each WaitingForNode report comes at the first look after its node's
 * 30 s grace. A look at each node's own report time cost a pass over
 * every pending pod per node joining (32 passes instead of 11 while 5,000
 * pods bound). */
static void test_joining_nodes_keep_the_look_pace(void **state)
{
  struct kit k;
  double before;
  size_t i;
  (void)state;
  setup(&k, "");
  kit_start(&k);
  for (i = 0; i < 6; i++) {
    char pod[16];
    snprintf(pod, sizeof(pod), "p%zu", i);
    kit_pod(&k, "default", pod, NULL, 3000, "");
  }
  kit_advance(&k, 1500);
  assert_int_equal(creates(&k), 6);
  before = batches(&k);
  /* A node a second, each keeping its pod out with a taint. */
  for (i = 0; i < 6; i++) {
    char claim[128];
    snprintf(claim, sizeof(claim), "%s", kit_created_claim(&k, i));
    kit_claim_up(&k, claim, "default");
    kit_patch(&k, "Node", claim,
              "{spec: {taints: [{key: example.com/held, effect: "
              "NoSchedule}]}}");
    kit_advance(&k, SEC);
  }
  /* The graces end 30 to 35 s after the first node came. */
  kit_advance(&k, 23 * SEC);
  assert_int_equal(kit_events(&k, "WaitingForNode"), 0);
  kit_advance(&k, 16 * SEC);
  assert_int_equal(kit_events(&k, "WaitingForNode"), 6);
  kit_advance(&k, 15 * SEC);
  /* 60 s: a look every 10 s, not one more per node. */
  assert_true(batches(&k) - before <= 6);
  assert_int_equal(kit_events(&k, "WaitingForNode"), 6);
  assert_int_equal(creates(&k), 6);
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ignored_pods_and_decision_duration),
      cmocka_unit_test(test_headed_pods_ask_no_instance_types),
      cmocka_unit_test(test_joining_nodes_keep_the_look_pace),
      cmocka_unit_test(test_window_then_one_claim),
      cmocka_unit_test(test_window_closes_at_max),
      cmocka_unit_test(test_nominated_events_are_rate_limited),
      cmocka_unit_test(test_fits_on_existing_node),
      cmocka_unit_test(test_unschedulable_pod_gets_an_event),
      cmocka_unit_test(test_failed_create_is_retried),
      cmocka_unit_test(test_follower_launches_nothing),
      cmocka_unit_test(test_scheduler_retries_start_no_batch),
      cmocka_unit_test(test_pending_pods_by_effective_zone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
