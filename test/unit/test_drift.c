/* test_drift.c: drift, reconcile by reconcile on the kit - the Drifted
 * condition (NodePool template hash, requirements, the provider's
 * reasons; nothing for fields outside the template) and the drift method
 * (empty drifted nodes at once, others one at a time with a replacement
 * launched first, within the Drifted budget). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/disruption.h"
#include "carpenter/json.h"
#include "carpenter/nodepool_controller.h"
#include "../../internal/disruption/disruption_int.h"
#include "kit.h"

#define SEC  1000ULL
#define POLL (10 * SEC)

#define RS_OWNER                                                               \
  "labels: {app: web}, ownerReferences: [{apiVersion: apps/v1, kind: "         \
  "ReplicaSet, name: web, uid: u-rs, controller: true}]"

static const char *const two_zones[] = {"zone-a", "zone-b", NULL};

/* zones: the fake provider's (NULL: zone-a alone). */
static void setup_in(struct kit *k, const char *pool_spec,
                     const char *const *zones)
{
  struct carp_disruption_options o = {.poll_interval_ms = POLL,
                                      .validation_delay_ms = 15 * SEC,
                                      .command_timeout_ms = 600 * SEC};
  struct carp_nodepool_controller_options no = {.debounce_ms = 100};
  struct carp_fake_provider_options po;
  struct kit_options ko = {.provider = &po};
  struct carp_controller *c;
  memset(&po, 0, sizeof(po));
  po.zones = zones;
  kit_init(k, zones ? &ko : NULL);
  assert_int_equal(carp_disruption_new(&k->env, &o, &c), 0);
  kit_add(k, c);
  assert_int_equal(carp_disruption_conditions_new(&k->env, &c), 0);
  kit_add(k, c);
  /* Stamps the pool's hash, and the claims' (they have none yet). */
  assert_int_equal(carp_nodepool_controller_new(&k->env, &no, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", pool_spec);
}

static void setup(struct kit *k, const char *pool_spec)
{
  setup_in(k, pool_spec, NULL);
}

static const char *drifted(struct kit *k, const char *claim)
{
  static char reason[128];
  const char *why = NULL;
  const char *st = kit_condition(k, "NodeClaim", claim, "Drifted", &why);
  if (!st)
    return NULL;
  assert_string_equal(st, "True");
  snprintf(reason, sizeof(reason), "%s", why ? why : "");
  return reason;
}

static int deleting(struct kit *k, const char *claim)
{
  return kit_str(k, "NodeClaim", claim, "metadata", "deletionTimestamp",
                 NULL) != NULL;
}

static void test_template_change_drifts_and_others_do_not(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never}");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "web-a", "a", 1500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  assert_non_null(kit_str(&k, "NodeClaim", "a", "metadata", "annotations",
                          "karpenter.sh/nodepool-hash", NULL));
  assert_null(drifted(&k, "a"));
  /* Outside the template: weight, limits, budgets. Nothing drifts. */
  kit_patch(&k, "NodePool", "default",
            "{spec: {weight: 7, limits: {cpu: '100'},"
            " disruption: {budgets: [{nodes: '50%%'}]}}}");
  kit_advance(&k, 30 * SEC);
  assert_null(drifted(&k, "a"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 0);
  /* A template label: drifted, and back again when undone. */
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: {team: blue}}}}}");
  kit_advance(&k, 2 * SEC);
  assert_string_equal(drifted(&k, "a"), "NodePoolDrifted");
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: null}}}}");
  kit_advance(&k, 2 * SEC);
  assert_null(drifted(&k, "a"));
  kit_close(&k);
}

static void test_requirements_and_provider_drift(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never, budgets: [{nodes: '0'}]}");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  assert_null(drifted(&k, "a"));
  /* The claims' instance type is no longer allowed. */
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {spec: {requirements: [{key: "
            "node.kubernetes.io/instance-type, operator: In, values: "
            "[c1.4VCPU-8GB]}]}}}}");
  kit_advance(&k, 2 * SEC);
  assert_string_equal(drifted(&k, "a"), "RequirementsDrifted");
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {spec: {requirements: []}}}}");
  kit_advance(&k, 2 * SEC);
  assert_null(drifted(&k, "a"));
  /* What only the provider sees (a class or a template changed) shows at
   * the next look: at most 5 minutes later. */
  carp_fake_provider_set_drift(k.provider, "b", "TemplateDrifted");
  kit_advance(&k, 5 * 60 * SEC + SEC);
  assert_string_equal(drifted(&k, "b"), "TemplateDrifted");
  assert_null(drifted(&k, "a"));
  /* Budget 0 for every reason: drifted, but left alone and said so. */
  kit_advance(&k, 60 * SEC);
  assert_false(deleting(&k, "b"));
  assert_true(kit_events(&k, "DisruptionBlocked") >= 1);
  kit_close(&k);
}

static void test_empty_drifted_nodes_go_at_once(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never, budgets: [{nodes: '2'}]}");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.2VCPU-4GB");
  kit_node(&k, "c", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: {team: blue}}}}}");
  /* Drifted, then the next poll: no validation delay for drift. */
  kit_advance(&k, POLL + 2 * SEC);
  assert_int_equal(deleting(&k, "a") + deleting(&k, "b") + deleting(&k, "c"),
                   2);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 0);
  assert_true(
      kit_metric(&k, "karpenter_nodeclaims_disrupted_total",
                 (const char *const[]){"drifted", "default", "on-demand",
                                       "WhenEmptyOrUnderutilized", "graceful",
                                       NULL}) == 2);
  kit_close(&k);
}

static void test_busy_drifted_node_replaced_first_one_at_a_time(void **state)
{
  struct kit k;
  char repl[128];
  const char *first;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never, budgets: [{nodes: '1'}]}");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.2VCPU-4GB");
  /* Neither pod fits beside the other: each node needs a replacement. */
  kit_pod(&k, "default", "web-a", "a", 1500, RS_OWNER);
  kit_pod(&k, "default", "web-b", "b", 1500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: {team: blue}}}}}");
  kit_advance(&k, POLL + 2 * SEC);
  first = kit_created_claim(&k, 0);
  assert_non_null(first);
  snprintf(repl, sizeof(repl), "%s", first);
  /* The replacement carries the new template; nothing is drained yet. */
  assert_string_equal(
      kit_str(&k, "NodeClaim", repl, "metadata", "labels", "team", NULL),
      "blue");
  assert_false(deleting(&k, "a") || deleting(&k, "b"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  kit_advance(&k, 3 * POLL);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  kit_claim_up(&k, repl, "default");
  kit_advance(&k, SEC);
  /* Up: at once, not at the next poll, the drifted node that drifted first
   * goes (both drifted at once: the first in the cache's order), the
   * other waits for the budget. */
  assert_int_equal(deleting(&k, "a") + deleting(&k, "b"), 1);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  assert_true(kit_events(&k, "DisruptionLaunching") >= 1);
  kit_close(&k);
}

/* A budget of two: two busy drifted nodes go in one command (their pods
 * share one new node of twice the size here), not one after the other; the
 * third waits for the budget. */
static void test_budget_of_two_replaces_two_at_once(void **state)
{
  struct kit k;
  char r0[128];
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never, budgets: [{nodes: '2'}]}");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.2VCPU-4GB");
  kit_node(&k, "c", "default", "c1.2VCPU-4GB");
  kit_pod(&k, "default", "web-a", "a", 1500, RS_OWNER);
  kit_pod(&k, "default", "web-b", "b", 1500, RS_OWNER);
  kit_pod(&k, "default", "web-c", "c", 1500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: {team: blue}}}}}");
  kit_advance(&k, POLL + 2 * SEC);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  snprintf(r0, sizeof(r0), "%s", kit_created_claim(&k, 0));
  assert_false(deleting(&k, "a") || deleting(&k, "b") || deleting(&k, "c"));
  kit_claim_up(&k, r0, "default");
  kit_advance(&k, POLL);
  assert_int_equal(deleting(&k, "a") + deleting(&k, "b") + deleting(&k, "c"),
                   2);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 1);
  kit_close(&k);
}

/* A drifted node whose pods need more than one new node (the sizes the
 * pool now allows are smaller): every replacement is launched first, as
 * Karpenter's drift does, and the node goes once all are up. */
static void test_drifted_node_gets_several_replacements(void **state)
{
  struct kit k;
  char r0[128], r1[128];
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never}");
  kit_node(&k, "a", "default", "c1.4VCPU-8GB");
  kit_pod(&k, "default", "web-a", "a", 1500, RS_OWNER);
  kit_pod(&k, "default", "web-b", "a", 1500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {spec: {requirements: [{key: "
            "node.kubernetes.io/instance-type, operator: In, values: "
            "[c1.2VCPU-4GB]}]}}}}");
  kit_advance(&k, POLL + 2 * SEC);
  assert_string_equal(drifted(&k, "a"), "RequirementsDrifted");
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 2);
  assert_non_null(kit_created_claim(&k, 0));
  assert_non_null(kit_created_claim(&k, 1));
  snprintf(r0, sizeof(r0), "%s", kit_created_claim(&k, 0));
  snprintf(r1, sizeof(r1), "%s", kit_created_claim(&k, 1));
  assert_false(deleting(&k, "a"));
  /* One up is not enough. */
  kit_claim_up(&k, r0, "default");
  kit_advance(&k, 2 * POLL);
  assert_false(deleting(&k, "a"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 2);
  kit_claim_up(&k, r1, "default");
  kit_advance(&k, POLL);
  assert_true(deleting(&k, "a"));
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 2);
  kit_close(&k);
}

/* A node holding more than Carpenter's model of any one instance type
 * (kube-scheduler packs by the kubelet's allocatable, the model takes
 * reservations off): drift opens two replacements instead of holding the
 * node for good. */
static void test_overpacked_drifted_node_gets_two_replacements(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never}");
  kit_node(&k, "a", "default", "c1.4VCPU-8GB");
  kit_pod(&k, "default", "web-a", "a", 1500, RS_OWNER);
  kit_pod(&k, "default", "web-b", "a", 1500, RS_OWNER);
  kit_pod(&k, "default", "web-c", "a", 1500, RS_OWNER);
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: {team: blue}}}}}");
  kit_advance(&k, POLL + 2 * SEC);
  assert_int_equal(kit_writes(&k, "POST", "/nodeclaims"), 2);
  assert_false(deleting(&k, "a"));
  kit_close(&k);
}

/* A host put in maintenance: no Kubernetes event says so, yet its nodes
 * drift within seconds (the host poll), not at the 5-minute resync; the
 * other host's do not; out of maintenance, the condition goes. */
static void test_host_maintenance_drifts_its_nodes_only(void **state)
{
  struct kit k;
  (void)state;
  setup_in(&k, "disruption: {consolidateAfter: Never, budgets: [{nodes: '0'}]}",
           two_zones);
  kit_node_in(&k, "a", "default", "c1.2VCPU-4GB", "zone-a");
  kit_node_in(&k, "b", "default", "c1.2VCPU-4GB", "zone-b");
  kit_start(&k);
  kit_advance(&k, 15 * SEC);
  assert_null(drifted(&k, "a"));
  carp_fake_provider_set_zone_state(k.provider, "zone-a",
                                    CARP_ZONE_MAINTENANCE);
  kit_advance(&k, 6 * SEC);
  assert_string_equal(drifted(&k, "a"), "HostMaintenance");
  assert_null(drifted(&k, "b"));
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_READY);
  kit_advance(&k, 6 * SEC);
  assert_null(drifted(&k, "a"));
  /* Offline is the interruption controller's: not drift. */
  carp_fake_provider_set_zone_state(k.provider, "zone-b", CARP_ZONE_OFFLINE);
  kit_advance(&k, 6 * SEC);
  assert_null(drifted(&k, "b"));
  kit_close(&k);
}

static void test_unlaunched_claim_never_drifts(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never}");
  kit_apply(&k, "{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: "
                "{name: new, labels: {karpenter.sh/nodepool: default}},"
                " spec: {nodeClassRef: {group: carpenter.dev, kind: "
                "ProxmoxNodeClass, name: default}, requirements: []}}");
  carp_fake_provider_set_drift(k.provider, NULL, "NodeClassDrifted");
  kit_start(&k);
  kit_advance(&k, 6 * 60 * SEC);
  assert_null(drifted(&k, "new"));
  kit_close(&k);
}

static void test_drift_remembered_between_changes(void **state)
{
  struct kit k;
  size_t before;
  int i;
  (void)state;
  setup(&k, "disruption: {consolidateAfter: Never}");
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  assert_null(drifted(&k, "a"));
  /* Pods come and go: each reconciles the claim (lastPodEventTime), none
   * works drift out again. */
  before = carp__dis_drift_checks();
  for (i = 0; i < 10; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p%d", i);
    kit_pod(&k, "default", name, "a", 100, RS_OWNER);
    kit_advance(&k, SEC);
  }
  kit_advance(&k, 30 * SEC); /* quiet: lastPodEventTime is written */
  assert_non_null(
      kit_str(&k, "NodeClaim", "a", "status", "lastPodEventTime", NULL));
  /* The claim's own writes (lastPodEventTime) give it a new
   * resourceVersion: one check each, not one per pod. */
  assert_true(carp__dis_drift_checks() - before <=
              kit_writes(&k, "PATCH", "/nodeclaims/a"));
  /* A template change is seen at once... */
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: {team: blue}}}}}");
  kit_advance(&k, 2 * SEC);
  assert_string_equal(drifted(&k, "a"), "NodePoolDrifted");
  kit_patch(&k, "NodePool", "default",
            "{spec: {template: {metadata: {labels: null}}}}");
  kit_advance(&k, 2 * SEC);
  assert_null(drifted(&k, "a"));
  /* ...and what only the provider sees at the next resync, though
   * nothing it remembered drift from has changed. */
  carp_fake_provider_set_drift(k.provider, "a", "TemplateDrifted");
  kit_advance(&k, 5 * 60 * SEC + 5 * SEC);
  assert_string_equal(drifted(&k, "a"), "TemplateDrifted");
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_drift_remembered_between_changes),
      cmocka_unit_test(test_template_change_drifts_and_others_do_not),
      cmocka_unit_test(test_requirements_and_provider_drift),
      cmocka_unit_test(test_empty_drifted_nodes_go_at_once),
      cmocka_unit_test(test_busy_drifted_node_replaced_first_one_at_a_time),
      cmocka_unit_test(test_drifted_node_gets_several_replacements),
      cmocka_unit_test(test_budget_of_two_replaces_two_at_once),
      cmocka_unit_test(test_overpacked_drifted_node_gets_two_replacements),
      cmocka_unit_test(test_host_maintenance_drifts_its_nodes_only),
      cmocka_unit_test(test_unlaunched_claim_never_drifts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
