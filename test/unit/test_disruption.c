/* test_disruption.c: the disruption, expiration and nodeclaim.disruption
 * controllers, reconcile by reconcile on the fake clock, against the
 * in-memory API server and the fake provider (test/kit). Every timing
 * rule is checked on both sides of its edge: consolidateAfter, the
 * validation delay, budget windows, expireAfter, the replacement's
 * timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/disruption.h"
#include "carpenter/json.h"
#include "carpenter/timeutil.h"
#include "kit.h"

#define SEC     1000ULL
#define POLL    (10 * SEC)
#define VALIDTN (15 * SEC)
#define TIMEOUT (10 * 60 * SEC)

#define DS_OWNER                                                               \
  "ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: ds, uid: "   \
  "u-ds, controller: true}]"
#define RS_OWNER                                                               \
  "labels: {app: web}, ownerReferences: [{apiVersion: apps/v1, kind: "         \
  "ReplicaSet, name: web, uid: u-rs, controller: true}]"

static void setup(struct kit *k, const char *pool_spec)
{
  struct carp_disruption_options o = {.poll_interval_ms = POLL,
                                      .validation_delay_ms = VALIDTN,
                                      .command_timeout_ms = TIMEOUT};
  struct carp_controller *c;
  kit_init(k, NULL);
  assert_int_equal(carp_disruption_new(&k->env, &o, &c), 0);
  kit_add(k, c);
  assert_int_equal(carp_expiration_new(&k->env, &c), 0);
  kit_add(k, c);
  assert_int_equal(carp_disruption_conditions_new(&k->env, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", pool_spec);
}

static int deleting(struct kit *k, const char *claim)
{
  return kit_str(k, "NodeClaim", claim, "metadata", "deletionTimestamp",
                 NULL) != NULL;
}

/* ---- emptiness ---- */

static void test_empty_node_after_consolidate_after(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "30s}");
  kit_node(&k, "empty", "default", "c1.2VCPU-4GB");
  kit_node(&k, "busy", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "ds-1", "empty", 100, DS_OWNER);
  kit_pod(&k, "default", "web-1", "busy", 500, RS_OWNER);
  kit_start(&k);
  /* Quiet for 30 s at t=30, decided there; validated 15 s later. */
  kit_advance(&k, 44 * SEC);
  assert_false(deleting(&k, "empty"));
  assert_false(kit_node_tainted(&k, "empty", "karpenter.sh/disrupted"));
  kit_advance(&k, 2 * SEC);
  assert_true(deleting(&k, "empty"));
  assert_true(kit_node_tainted(&k, "empty", "karpenter.sh/disrupted"));
  assert_false(deleting(&k, "busy"));
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "empty", "DisruptionReason", NULL),
      "True");
  assert_int_equal(kit_events(&k, "DisruptionTerminating"), 2);
  assert_int_equal(
      kit_metric(&k, "karpenter_voluntary_disruption_decisions_total",
                 CARP_VALUES("decision=\"delete\"", "reason=\"empty\"",
                             "consolidation_type=\"empty\"")),
      1);
  assert_int_equal(kit_metric(&k, "karpenter_nodeclaims_disrupted_total",
                              CARP_VALUES("reason=\"empty\"",
                                          "termination_mode=\"graceful\"")),
                   1);
  /* WhenEmpty: the busy node stays, however long. */
  kit_advance(&k, 10 * 60 * SEC);
  assert_false(deleting(&k, "busy"));
  kit_close(&k);
}

static void test_pod_event_restarts_the_wait(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "30s}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 25 * SEC);
  /* A pod comes and goes at t=25: quiet again only from then. */
  kit_pod(&k, "default", "short", "n1", 100, RS_OWNER);
  kit_delete(&k, "Pod", "default/short");
  kit_advance(&k, 25 * SEC); /* t=50: only 25 s quiet */
  assert_null(kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL));
  assert_false(deleting(&k, "n1"));
  kit_advance(&k, 30 * SEC); /* t=80: quiet since 55 */
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL), "True");
  assert_non_null(
      kit_str(&k, "NodeClaim", "n1", "status", "lastPodEventTime", NULL));
  kit_advance(&k, 20 * SEC);
  assert_true(deleting(&k, "n1"));
  kit_close(&k);
}

/* lastPodEventTime is written once the node has been quiet for 30 s, or
 * when what is written is a minute behind: not every 5 s while pods keep
 * coming. The quiet time is measured from the pods all the same. */
static void test_last_pod_event_written_when_quiet(void **state)
{
  struct kit k;
  char name[16], want[CARP_RFC3339_LEN];
  size_t writes;
  int i;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "30s}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  writes = kit_writes(&k, "PATCH", "/nodeclaims/n1/status");
  /* A pod every 2 s for 20 s: nothing written. */
  for (i = 0; i < 10; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    kit_pod(&k, "default", name, "n1", 10, RS_OWNER);
    kit_advance(&k, 2 * SEC);
  }
  assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"), writes);
  assert_null(
      kit_str(&k, "NodeClaim", "n1", "status", "lastPodEventTime", NULL));
  /* Quiet for 30 s: written, with the last pod's time; not a second
   * before. */
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock) - 2 * SEC, 0, want);
  kit_advance(&k, 27 * SEC);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"), writes);
  kit_advance(&k, 1 * SEC);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"),
                   writes + 1);
  assert_string_equal(
      kit_str(&k, "NodeClaim", "n1", "status", "lastPodEventTime", NULL), want);
  /* The write above also set Consolidatable (quiet for the pool's 30 s):
   * the next pod takes it off, and lastPodEventTime goes with that write.
   * Then pods every 2 s: written whenever what is written is a minute
   * behind, at 60 and 120 s. */
  for (i = 0; i < 75; i++) {
    snprintf(name, sizeof(name), "q%d", i);
    kit_pod(&k, "default", name, "n1", 10, RS_OWNER);
    kit_advance(&k, 2 * SEC);
    if (i == 0 || i == 28)
      assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"),
                       writes + 2);
    if (i == 29)
      assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"),
                       writes + 3);
  }
  assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"),
                   writes + 4);
  /* The node was never quiet for its 30 s; it is once they all go. */
  assert_null(kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL));
  for (i = 0; i < 10; i++) {
    snprintf(name, sizeof(name), "default/p%d", i);
    kit_delete(&k, "Pod", name);
  }
  for (i = 0; i < 75; i++) {
    snprintf(name, sizeof(name), "default/q%d", i);
    kit_delete(&k, "Pod", name);
  }
  kit_advance(&k, 29 * SEC);
  assert_null(kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL));
  kit_advance(&k, 2 * SEC);
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL), "True");
  kit_close(&k);
}

static double claim_reconciles(struct kit *k)
{
  return kit_metric(k, "controller_runtime_reconcile_total",
                    CARP_VALUES("controller=\"nodeclaim.disruption\""));
}

/* Pods landing one by one do not each reconcile the claim: nothing is due
 * before the node has been quiet. A claim that shows Consolidatable loses
 * it at the first pod. */
static void test_pods_landing_reconcile_the_claim_rarely(void **state)
{
  struct kit k;
  char name[16], want[CARP_RFC3339_LEN];
  double before;
  size_t writes;
  int i;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "20s}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 21 * SEC);
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL), "True");
  kit_pod(&k, "default", "p0", "n1", 10, RS_OWNER);
  kit_settle(&k);
  assert_null(kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL));
  before = claim_reconciles(&k);
  writes = kit_writes(&k, "PATCH", "/nodeclaims/n1/status");
  for (i = 1; i < 16; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    kit_pod(&k, "default", name, "n1", 10, RS_OWNER);
    kit_advance(&k, 1 * SEC);
  }
  /* 15 pods in 15 s, and the only reconciles are the controller's host
   * poll, one every 5 s (with a reconcile per pod there were 18). */
  assert_true(claim_reconciles(&k) - before <= 3);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"), writes);
  /* Quiet for the pool's 20 s: both fields in one write. */
  kit_advance(&k, 20 * SEC);
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL), "True");
  assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"),
                   writes + 1);
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock) - 21 * SEC, 0, want);
  assert_string_equal(
      kit_str(&k, "NodeClaim", "n1", "status", "lastPodEventTime", NULL), want);
  kit_close(&k);
}

/* The NodePool controller writes the pool's status as nodes join: that
 * reconciles none of its claims. A change of its spec reconciles them
 * all. */
static void test_pool_status_write_reconciles_no_claim(void **state)
{
  struct kit k;
  double before;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "20s}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_node(&k, "n2", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 21 * SEC);
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL), "True");
  before = claim_reconciles(&k);
  kit_patch(&k, "NodePool", "default",
            "{status: {resources: {cpu: '4', nodes: '2'}}}");
  kit_patch(&k, "NodePool", "default", "{status: {resources: {cpu: '6'}}}");
  assert_true(claim_reconciles(&k) == before);
  kit_patch(&k, "NodePool", "default",
            "{spec: {disruption: {consolidateAfter: 1h}}}");
  assert_true(claim_reconciles(&k) >= before + 2);
  assert_null(kit_condition(&k, "NodeClaim", "n1", "Consolidatable", NULL));
  assert_null(kit_condition(&k, "NodeClaim", "n2", "Consolidatable", NULL));
  kit_close(&k);
}

/* Writes that reached the server, refused ones (409) too. */
static size_t attempts(struct kit *k, const char *path_part)
{
  return carp_kubemem_count_writes(k->api, "PATCH", path_part, 0);
}

/* A claim queued again before the cache shows the status write just made
 * (the next pod event) waits for it instead of sending the same change a
 * second time, conditional on a version the server has moved past. */
/* A pod that comes between two seconds: lastPodEventTime is written once,
 * as the API keeps it (whole seconds), not again every 5 s because what
 * comes back is older than the event. */
static void test_last_pod_event_in_whole_seconds(void **state)
{
  struct kit k;
  char want[CARP_RFC3339_LEN];
  size_t writes;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 1500);
  writes = kit_writes(&k, "PATCH", "/nodeclaims/n1/status");
  kit_pod(&k, "default", "half", "n1", 10, RS_OWNER);
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock) / 1000 * 1000, 0, want);
  kit_advance(&k, 10 * 60 * SEC);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodeclaims/n1/status"),
                   writes + 1);
  assert_string_equal(
      kit_str(&k, "NodeClaim", "n1", "status", "lastPodEventTime", NULL), want);
  kit_close(&k);
}

static void test_status_written_once_while_the_cache_lags(void **state)
{
  struct kit k;
  size_t writes;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 30 * SEC);
  kit_pod(&k, "default", "p1", "n1", 10, RS_OWNER);
  writes = attempts(&k, "/nodeclaims/n1/status");
  /* From here the caches see none of the writes that follow. */
  carp_kubemem_hold_watches(k.api, 1);
  kit_advance(&k, 31 * SEC); /* quiet: lastPodEventTime is written */
  assert_int_equal(attempts(&k, "/nodeclaims/n1/status"), writes + 1);
  carp_controller_enqueue(k.ctls[2], "n1");
  kit_settle(&k);
  kit_advance(&k, 1 * SEC);
  assert_int_equal(attempts(&k, "/nodeclaims/n1/status"), writes + 1);
  carp_kubemem_hold_watches(k.api, 0);
  kit_advance(&k, 1 * SEC);
  assert_non_null(
      kit_str(&k, "NodeClaim", "n1", "status", "lastPodEventTime", NULL));
  assert_int_equal(attempts(&k, "/nodeclaims/n1/status"), writes + 1);
  kit_close(&k);
}

static void test_budget_zero_blocks(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "10s, budgets: [{nodes: '0'}]}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 5 * 60 * SEC);
  assert_false(deleting(&k, "n1"));
  assert_true(kit_events(&k, "DisruptionBlocked") >= 1);
  assert_int_equal(
      kit_metric(&k, "karpenter_nodepools_allowed_disruptions",
                 CARP_VALUES("nodepool=\"default\"", "reason=\"Empty\"")),
      0);
  kit_close(&k);
}

static void test_budget_window_opens_and_closes(void **state)
{
  struct kit k;
  (void)state;
  /* No disruption from 00:00 for an hour every day (the fake clock starts
   * at midnight). */
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "10s, budgets: [{nodes: '0', schedule: '@daily', duration: 1h},"
            " {nodes: '100%'}]}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 59 * 60 * SEC);
  assert_false(deleting(&k, "n1"));
  kit_advance(&k, 60 * SEC + POLL + VALIDTN + POLL);
  assert_true(deleting(&k, "n1"));
  kit_close(&k);
}

static void test_validation_drops_a_changed_candidate(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "30s}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 31 * SEC); /* decided at t=30 */
  /* A pod arrives during the validation delay: no longer empty. */
  kit_pod(&k, "default", "late", "n1", 100, RS_OWNER);
  kit_advance(&k, 20 * SEC);
  assert_false(deleting(&k, "n1"));
  assert_int_equal(
      kit_metric(&k, "karpenter_voluntary_disruption_failed_validations_total",
                 CARP_VALUES("consolidation_type=\"empty\"")),
      1);
  kit_close(&k);
}

/* ---- consolidation ---- */

static void test_multi_node_delete(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s, budgets: [{nodes: '100%'}]}");
  kit_node(&k, "a", "default", "c1.4VCPU-8GB");
  kit_node(&k, "b", "default", "c1.4VCPU-8GB");
  kit_node(&k, "c", "default", "c1.4VCPU-8GB");
  kit_pod(&k, "default", "p-a", "a", 1000, RS_OWNER);
  kit_pod(&k, "default", "p-b", "b", 1000, RS_OWNER);
  kit_pod(&k, "default", "p-c", "c", 1000, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + POLL);
  /* Two can go: their pods fit on the third. */
  assert_int_equal(deleting(&k, "a") + deleting(&k, "b") + deleting(&k, "c"),
                   2);
  assert_int_equal(
      kit_metric(&k, "karpenter_voluntary_disruption_decisions_total",
                 CARP_VALUES("decision=\"delete\"", "reason=\"underutilized\"",
                             "consolidation_type=\"multi\"")),
      1);
  /* One pod on each of the two nodes starts to move. */
  assert_int_equal(
      kit_metric(&k, "karpenter_pods_disruption_initiated_total",
                 CARP_VALUES("reason=\"underutilized\"", "nodepool=\"default\"",
                             "capacity_type=\"on-demand\"",
                             "termination_mode=\"graceful\"")),
      2);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 0);
  kit_close(&k);
}

static void test_multi_node_folds_three_into_one(void **state)
{
  struct kit k;
  (void)state;
  /* Two 2-vCPU nodes cost what one 4-vCPU node does: folding two saves
   * nothing, folding all three saves a third. */
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s, budgets: [{nodes: '100%'}]}");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.2VCPU-4GB");
  kit_node(&k, "c", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "p-a", "a", 1200, RS_OWNER);
  kit_pod(&k, "default", "p-b", "b", 1200, RS_OWNER);
  kit_pod(&k, "default", "p-c", "c", 1200, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + 1 * SEC);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  assert_int_equal(kit_metric(&k,
                              "karpenter_voluntary_disruption_decisions_total",
                              CARP_VALUES("decision=\"replace\"",
                                          "consolidation_type=\"multi\"")),
                   1);
  kit_close(&k);
}

static void test_multi_node_across_pools(void **state)
{
  struct kit k;
  (void)state;
  /* The candidates of two pools interleave in cost order; the three of
   * "a" still fold into one node of their own pool. */
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s, budgets: [{nodes: '100%'}]}");
  kit_nodepool(&k, "b",
               "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
               " consolidateAfter: 30s, budgets: [{nodes: '100%'}]}");
  kit_node(&k, "a1", "default", "c1.2VCPU-4GB");
  kit_node(&k, "a2", "default", "c1.2VCPU-4GB");
  kit_node(&k, "a3", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b1", "b", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "p-a1", "a1", 1200, RS_OWNER);
  kit_pod(&k, "default", "p-a2", "a2", 1200, RS_OWNER);
  kit_pod(&k, "default", "p-a3", "a3", 1200, RS_OWNER);
  kit_pod(&k, "default", "p-b1", "b1", 1200, RS_OWNER);
  /* Each pod held to its pool, as the pods of a Deployment with a
   * nodeSelector are; b1 is the cheapest to disrupt (newest and first). */
  kit_patch(&k, "Pod", "default/p-a1",
            "{spec: {nodeSelector: {karpenter.sh/nodepool: default}}}");
  kit_patch(&k, "Pod", "default/p-a2",
            "{spec: {nodeSelector: {karpenter.sh/nodepool: default}}}");
  kit_patch(&k, "Pod", "default/p-a3",
            "{spec: {nodeSelector: {karpenter.sh/nodepool: default}}}");
  kit_patch(&k, "Pod", "default/p-b1",
            "{spec: {nodeSelector: {karpenter.sh/nodepool: b}}}");
  kit_patch(&k, "Pod", "default/p-b1",
            "{metadata: {annotations: {controller.kubernetes.io/"
            "pod-deletion-cost: '-100000000'}}}");
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + 1 * SEC);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  kit_close(&k);
}

static void test_single_node_replace_after_initialized(void **state)
{
  struct kit k;
  const char *repl;
  char body[512];
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s}");
  kit_node(&k, "big", "default", "m1.4VCPU-32GB");
  kit_pod(&k, "default", "small", "big", 500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + 1 * SEC);
  repl = kit_created_claim(&k, 0);
  assert_non_null(repl);
  snprintf(body, sizeof(body), "%s", repl);
  /* Launched first: the candidate is untouched until it is up. */
  assert_false(deleting(&k, "big"));
  assert_false(kit_node_tainted(&k, "big", "karpenter.sh/disrupted"));
  assert_true(kit_events(&k, "DisruptionLaunching") >= 1);
  {
    /* Only types cheaper than the big one's 0.248 are allowed. */
    const struct carp_kubemem_write *w;
    size_t n = carp_kubemem_writes(k.api, &w), i;
    for (i = 0; i < n; i++)
      if (!strcmp(w[i].method, "POST") && strstr(w[i].path, "/nodeclaims")) {
        assert_null(strstr(w[i].body, "m1.4VCPU-32GB"));
        assert_non_null(strstr(w[i].body, "c1.1VCPU-2GB"));
      }
  }
  kit_advance(&k, 3 * POLL);
  assert_false(deleting(&k, "big"));
  assert_true(kit_events(&k, "DisruptionWaitingReadiness") >= 1);
  kit_claim_up(&k, body, "default");
  kit_advance(&k, POLL + 1 * SEC);
  assert_true(deleting(&k, "big"));
  assert_true(kit_node_tainted(&k, "big", "karpenter.sh/disrupted"));
  assert_int_equal(kit_metric(&k,
                              "karpenter_voluntary_disruption_decisions_total",
                              CARP_VALUES("decision=\"replace\"",
                                          "consolidation_type=\"single\"")),
                   1);
  kit_close(&k);
}

static void test_replacement_never_initializes_rolls_back(void **state)
{
  struct kit k;
  const char *repl;
  char name[128];
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s}");
  kit_node(&k, "big", "default", "m1.4VCPU-32GB");
  kit_pod(&k, "default", "small", "big", 500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + 1 * SEC);
  repl = kit_created_claim(&k, 0);
  assert_non_null(repl);
  snprintf(name, sizeof(name), "%s", repl);
  kit_advance(&k, TIMEOUT - 2 * POLL);
  assert_false(deleting(&k, name));
  kit_advance(&k, 3 * POLL);
  /* Rolled back: the replacement goes, the candidate was never touched. */
  assert_true(!kit_exists(&k, "NodeClaim", name) || deleting(&k, name));
  assert_false(deleting(&k, "big"));
  assert_false(kit_node_tainted(&k, "big", "karpenter.sh/disrupted"));
  assert_true(
      kit_metric(&k, "karpenter_voluntary_disruption_failed_validations_total",
                 CARP_VALUES("consolidation_type=\"single\"")) >= 1);
  kit_close(&k);
}

static void test_pdb_blocks_with_event(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s}");
  kit_node(&k, "big", "default", "m1.4VCPU-32GB");
  kit_pod(&k, "default", "small", "big", 500, RS_OWNER);
  kit_apply(&k, "{apiVersion: policy/v1, kind: PodDisruptionBudget,"
                " metadata: {name: web, namespace: default},"
                " spec: {selector: {matchLabels: {app: web}}, minAvailable: 1},"
                " status: {disruptionsAllowed: 0}}");
  kit_start(&k);
  kit_advance(&k, 5 * 60 * SEC);
  assert_false(deleting(&k, "big"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 0);
  assert_true(kit_events(&k, "Unconsolidatable") >= 1);
  {
    const struct carp_kubemem_write *w;
    size_t n = carp_kubemem_writes(k.api, &w), i, found = 0;
    for (i = 0; i < n; i++)
      if (strstr(w[i].body, "pdb default/web prevents pod evictions"))
        found++;
    assert_true(found >= 1);
  }
  kit_close(&k);
}

static void test_do_not_disrupt_pod_blocks(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s}");
  kit_node(&k, "big", "default", "m1.4VCPU-32GB");
  kit_pod(&k, "default", "small", "big", 500,
          RS_OWNER ", annotations: {karpenter.sh/do-not-disrupt: 'true'}");
  kit_start(&k);
  kit_advance(&k, 5 * 60 * SEC);
  assert_false(deleting(&k, "big"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 0);
  kit_close(&k);
}

static void test_no_cheaper_replacement_no_move(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s}");
  /* Already the cheapest type that holds the pod. */
  kit_node(&k, "small", "default", "c1.1VCPU-2GB");
  kit_pod(&k, "default", "p", "small", 500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 5 * 60 * SEC);
  assert_false(deleting(&k, "small"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 0);
  assert_true(kit_events(&k, "Unconsolidatable") >= 1);
  kit_close(&k);
}

static void test_pending_pods_keep_their_room(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s, budgets: [{nodes: '100%'}]}");
  kit_node(&k, "a", "default", "c1.4VCPU-8GB");
  kit_node(&k, "b", "default", "c1.4VCPU-8GB");
  kit_pod(&k, "default", "pa", "a", 1000, RS_OWNER);
  /* b stays (do-not-disrupt): the only question is whether a can go. */
  kit_pod(&k, "default", "pb", "b", 1000,
          RS_OWNER ", annotations: {karpenter.sh/do-not-disrupt: 'true'}");
  /* It fits on either node as it is, on neither once a's pod joins b. */
  kit_pod(&k, "default", "waiting", NULL, 2800, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + POLL);
  /* Deleting a outright would leave the waiting pod no room: a is
   * replaced by a node of its own size instead. */
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  assert_false(deleting(&k, "a"));
  kit_close(&k);
}

static void test_balanced_rejects_a_poor_move(void **state)
{
  struct kit k;
  int i;
  (void)state;
  /* The only move replaces the busy node (10 pods) by a cheaper one: it
   * saves a third of the pool's price for 11/13 of its disruption. */
  setup(&k, "disruption: {consolidationPolicy: Balanced, consolidateAfter: "
            "30s}");
  kit_node(&k, "busy", "default", "m1.4VCPU-32GB");
  kit_node(&k, "tiny", "default", "c1.1VCPU-2GB");
  for (i = 0; i < 10; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p%d", i);
    kit_pod(&k, "default", name, "busy", 330, RS_OWNER);
  }
  kit_pod(&k, "default", "t", "tiny", 900, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 5 * 60 * SEC);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 0);
  assert_false(deleting(&k, "busy"));
  assert_true(kit_metric(&k, "karpenter_consolidation_moves_total",
                         CARP_VALUES("decision=\"rejected\"",
                                     "policy=\"Balanced\"")) >= 1);
  kit_close(&k);
}

static void test_balanced_accepts_a_good_move(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: Balanced, consolidateAfter: "
            "30s}");
  kit_node(&k, "big", "default", "m1.4VCPU-32GB");
  kit_pod(&k, "default", "small", "big", 500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + 1 * SEC);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  assert_true(kit_metric(&k, "karpenter_consolidation_moves_total",
                         CARP_VALUES("decision=\"approved\"",
                                     "policy=\"Balanced\"")) >= 1);
  kit_close(&k);
}

/* ---- expiration ---- */

static void test_expiration_exact(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "Never}");
  kit_node(&k, "old", "default", "c1.2VCPU-4GB");
  kit_patch(&k, "NodeClaim", "old", "{spec: {expireAfter: 1h}}");
  kit_pod(&k, "default", "p", "old", 500, RS_OWNER);
  kit_pod(&k, "default", "ds", "old", 100, DS_OWNER);
  kit_start(&k);
  kit_advance(&k, 60 * 60 * SEC - 1000);
  assert_false(deleting(&k, "old"));
  kit_advance(&k, 2000);
  assert_true(deleting(&k, "old"));
  assert_int_equal(kit_events(&k, "Expired"), 1);
  assert_int_equal(kit_metric(&k, "karpenter_nodeclaims_disrupted_total",
                              CARP_VALUES("reason=\"expired\"",
                                          "termination_mode=\"forceful\"")),
                   1);
  /* Its one pod (the DaemonSet's stays) is to move. */
  assert_int_equal(
      kit_metric(&k, "karpenter_pods_disruption_initiated_total",
                 CARP_VALUES("reason=\"expired\"", "nodepool=\"default\"",
                             "termination_mode=\"forceful\"")),
      1);
  kit_close(&k);
}

/* ---- commands in a row ---- */

static void test_next_command_before_previous_is_gone(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "30s, budgets: [{nodes: '100%'}]}");
  kit_node(&k, "e1", "default", "c1.2VCPU-4GB");
  kit_node(&k, "e2", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "last", "e2", 500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 40 * SEC);
  kit_delete(&k, "Pod", "default/last"); /* e2 empty from t=40 */
  kit_advance(&k, 6 * SEC);              /* e1: decided at 30, gone at 45 */
  assert_true(deleting(&k, "e1"));
  assert_false(deleting(&k, "e2"));
  /* Nothing terminates e1 here: it stays deleting, its finalizer held.
   * e2 is quiet from t=70, decided at the poll after (t=75) and carried
   * out after the validation delay, without waiting for e1 to go. */
  kit_advance(&k, 23 * SEC); /* t=69 */
  assert_false(deleting(&k, "e2"));
  kit_advance(&k, 5 * SEC + VALIDTN + 2 * SEC);
  assert_true(deleting(&k, "e2"));
  assert_true(deleting(&k, "e1"));
  assert_int_equal(
      kit_metric(&k, "karpenter_voluntary_disruption_decisions_total",
                 CARP_VALUES("decision=\"delete\"", "reason=\"empty\"",
                             "consolidation_type=\"empty\"")),
      2);
  kit_close(&k);
}

static void test_draining_pods_keep_their_room(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
            " consolidateAfter: 30s, budgets: [{nodes: '100%'}]}");
  kit_node(&k, "g", "default", "c1.4VCPU-8GB");
  kit_node(&k, "a", "default", "c1.4VCPU-8GB");
  kit_node(&k, "b", "default", "c1.4VCPU-8GB");
  kit_pod(&k, "default", "pg", "g", 2500, RS_OWNER);
  kit_pod(&k, "default", "pa", "a", 1000, RS_OWNER);
  kit_pod(&k, "default", "pb", "b", 1000, RS_OWNER);
  /* g is being deleted (its finalizer holds it) while its pod still runs:
   * the pod will need 2.5 vCPUs on a or b. */
  kit_delete(&k, "NodeClaim", "g");
  kit_start(&k);
  kit_advance(&k, 30 * SEC + VALIDTN + POLL);
  /* Deleting a would fit a's pod on b but leave g's pod nowhere: a is
   * replaced by a smaller node instead, and b keeps the room. */
  assert_false(deleting(&k, "a"));
  assert_false(deleting(&k, "b"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  assert_int_equal(
      kit_metric(&k, "karpenter_voluntary_disruption_decisions_total",
                 CARP_VALUES("decision=\"delete\"", "reason=\"underutilized\"",
                             "consolidation_type=\"single\"")),
      0);
  assert_int_equal(
      kit_metric(&k, "karpenter_voluntary_disruption_decisions_total",
                 CARP_VALUES("decision=\"replace\"", "reason=\"underutilized\"",
                             "consolidation_type=\"single\"")),
      1);
  kit_close(&k);
}

/* a goes (its pod fits on b, which a do-not-disrupt pod keeps), then e2
 * empties at t=40. */
static void setup_two_commands(struct kit *k)
{
  setup(k, "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized,"
           " consolidateAfter: 30s, budgets: [{nodes: '100%'}]}");
  kit_node(k, "a", "default", "c1.2VCPU-4GB");
  kit_node(k, "b", "default", "c1.4VCPU-8GB");
  kit_node(k, "e2", "default", "c1.2VCPU-4GB");
  kit_pod(k, "default", "pa", "a", 1000, RS_OWNER);
  kit_pod(k, "default", "pb", "b", 1000,
          RS_OWNER ", annotations: {karpenter.sh/do-not-disrupt: 'true'}");
  kit_pod(k, "default", "last", "e2", 500, RS_OWNER);
  kit_start(k);
  /* A pod comes and goes on e2 at t=20: not a candidate along with a. */
  kit_advance(k, 20 * SEC);
  kit_pod(k, "default", "blip", "e2", 100, RS_OWNER);
  kit_delete(k, "Pod", "default/blip");
  kit_advance(k, 20 * SEC);
  kit_delete(k, "Pod", "default/last");
  kit_advance(k, 6 * SEC); /* a: decided at 30, deleted at 45 */
  assert_true(deleting(k, "a"));
}

static void test_next_decision_waits_for_moved_pods(void **state)
{
  struct kit k;
  char meta[256], ts[CARP_RFC3339_LEN];
  (void)state;
  setup_two_commands(&k);
  /* Nothing drains a here: its pod still runs there, so e2 (quiet since
   * t=70) waits. */
  kit_advance(&k, 54 * SEC); /* t=100 */
  assert_false(deleting(&k, "e2"));
  /* Evicted: its replacement is pending for a while. */
  kit_delete(&k, "Pod", "default/pa");
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock), 0, ts);
  snprintf(meta, sizeof(meta), "%s, creationTimestamp: '%s'", RS_OWNER, ts);
  kit_pod(&k, "default", "pa2", NULL, 1000, meta);
  kit_advance(&k, 20 * SEC); /* t=120 */
  assert_false(deleting(&k, "e2"));
  /* Bound: once no pod has changed for 2 s the command has settled, and
   * e2 is decided at once (t=122), carried out at t=137. */
  kit_delete(&k, "Pod", "default/pa2");
  kit_pod(&k, "default", "pa2", "b", 1000, meta);
  kit_advance(&k, VALIDTN + SEC);
  assert_false(deleting(&k, "e2"));
  kit_advance(&k, 2 * SEC);
  assert_true(deleting(&k, "e2"));
  kit_close(&k);
}

static void test_settle_wait_is_bounded(void **state)
{
  struct kit k;
  (void)state;
  setup_two_commands(&k);
  /* a's pod never leaves (a PDB could hold it): after two minutes the
   * next decision goes ahead, a's pod placed first in its simulation. */
  kit_advance(&k, 45 * SEC + 2 * 60 * SEC - 46 * SEC - SEC); /* t=164 */
  assert_false(deleting(&k, "e2"));
  kit_advance(&k, POLL + VALIDTN + SEC);
  assert_true(deleting(&k, "e2"));
  kit_close(&k);
}

static void test_decided_when_consolidate_after_ends(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "
            "30s}");
  kit_node(&k, "n1", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "p", "n1", 100, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 3 * SEC);
  kit_delete(&k, "Pod", "default/p");
  /* Quiet at t=33, between two polls (30 and 40): decided at 33, not 40,
   * and carried out at 48. */
  kit_advance(&k, 44 * SEC); /* t=47 */
  assert_false(deleting(&k, "n1"));
  kit_advance(&k, 2 * SEC);
  assert_true(deleting(&k, "n1"));
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_node_after_consolidate_after),
      cmocka_unit_test(test_pod_event_restarts_the_wait),
      cmocka_unit_test(test_last_pod_event_written_when_quiet),
      cmocka_unit_test(test_pods_landing_reconcile_the_claim_rarely),
      cmocka_unit_test(test_pool_status_write_reconciles_no_claim),
      cmocka_unit_test(test_status_written_once_while_the_cache_lags),
      cmocka_unit_test(test_last_pod_event_in_whole_seconds),
      cmocka_unit_test(test_budget_zero_blocks),
      cmocka_unit_test(test_budget_window_opens_and_closes),
      cmocka_unit_test(test_validation_drops_a_changed_candidate),
      cmocka_unit_test(test_multi_node_delete),
      cmocka_unit_test(test_multi_node_folds_three_into_one),
      cmocka_unit_test(test_multi_node_across_pools),
      cmocka_unit_test(test_single_node_replace_after_initialized),
      cmocka_unit_test(test_replacement_never_initializes_rolls_back),
      cmocka_unit_test(test_pdb_blocks_with_event),
      cmocka_unit_test(test_do_not_disrupt_pod_blocks),
      cmocka_unit_test(test_no_cheaper_replacement_no_move),
      cmocka_unit_test(test_pending_pods_keep_their_room),
      cmocka_unit_test(test_balanced_rejects_a_poor_move),
      cmocka_unit_test(test_balanced_accepts_a_good_move),
      cmocka_unit_test(test_expiration_exact),
      cmocka_unit_test(test_next_command_before_previous_is_gone),
      cmocka_unit_test(test_draining_pods_keep_their_room),
      cmocka_unit_test(test_next_decision_waits_for_moved_pods),
      cmocka_unit_test(test_settle_wait_is_bounded),
      cmocka_unit_test(test_decided_when_consolidate_after_ends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
