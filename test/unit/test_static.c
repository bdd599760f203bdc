/* test_static.c: static NodePools (spec.replicas) reconcile by reconcile on
 * the fake clock (test/kit): replicas NodeClaims launched and no more,
 * scaling up and down (which NodeClaims go first), limits.nodes, a pool
 * that is not Ready, a deleted NodeClaim replaced, one marked for
 * deletion counted as there, validation of the static rules and of a
 * switch between static and dynamic, no consolidation of static nodes,
 * and drifted static nodes replaced within the Drifted budget, each
 * replacement launched and initialized before its node goes (rolled back
 * if it never is; none at the node limit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/disruption.h"
#include "carpenter/nodepool_controller.h"
#include "carpenter/static.h"
#include "kit.h"

#define SEC 1000ULL

static void setup(struct kit *k, const char *pool_spec)
{
  struct carp_controller *c;
  kit_init(k, NULL);
  assert_int_equal(carp_static_provisioning_new(&k->env, &c), 0);
  kit_add(k, c);
  assert_int_equal(carp_static_deprovisioning_new(&k->env, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  if (pool_spec)
    kit_nodepool(k, "static", pool_spec);
}

/* The pool's NodeClaims not being deleted, names sorted into out. */
static size_t live_claims(struct kit *k, const char *pool, char out[][64],
                          size_t max)
{
  struct carp_objmeta *const *v;
  size_t n, i, got = 0;
  v = carp_cluster_nodeclaims_of_pool(k->cluster, pool, &n);
  for (i = 0; i < n && got < max; i++)
    if (!v[i]->deletion_ms)
      snprintf(out[got++], 64, "%s", v[i]->name);
  qsort(out, got, 64, (int (*)(const void *, const void *))strcmp);
  return got;
}

static size_t creates(struct kit *k)
{
  return kit_writes(k, "POST", "/nodeclaims");
}

static size_t deletes(struct kit *k)
{
  return kit_writes(k, "DELETE", "/nodeclaims/");
}

/* Brings every live NodeClaim of the pool up as a node. */
static void up_all(struct kit *k, const char *pool)
{
  char names[16][64];
  size_t n = live_claims(k, pool, names, 16), i;
  for (i = 0; i < n; i++)
    if (!kit_str(k, "NodeClaim", names[i], "status", "providerID", NULL))
      kit_node_up(k, names[i], pool, "c1.2VCPU-4GB");
}

static void test_launches_replicas_and_no_more(void **state)
{
  struct kit k;
  char names[8][64];
  (void)state;
  setup(&k, "replicas: 3");
  kit_start(&k);
  assert_int_equal(creates(&k), 3);
  assert_int_equal(live_claims(&k, "static", names, 8), 3);
  /* The template's NodeClaims: the pool's label, no requests. */
  assert_string_equal(kit_str(&k, "NodeClaim", names[0], "metadata", "labels",
                              "karpenter.sh/nodepool", NULL),
                      "static");
  assert_null(kit_get(&k, "NodeClaim", "nothing"));
  up_all(&k, "static");
  kit_advance(&k, 5 * 60 * SEC);
  assert_int_equal(creates(&k), 3);
  assert_int_equal(deletes(&k), 0);
  assert_int_equal(
      kit_metric(&k, "karpenter_nodeclaims_created_total",
                 (const char *const[]){"nodepool=\"static\"", NULL}),
      3);
  assert_true(kit_metric(&k, "controller_runtime_reconcile_total",
                         (const char *const[]){
                             "controller=\"static.provisioning\"", NULL}) > 0);
  kit_close(&k);
}

static void test_scale_up_then_down_in_order(void **state)
{
  struct kit k;
  char names[8][64];
  (void)state;
  setup(&k, "replicas: 4");
  kit_start(&k);
  up_all(&k, "static");
  assert_int_equal(live_claims(&k, "static", names, 8), 4);
  /* names[0]: a pod that must not be disrupted; names[1]: a plain pod;
   * names[2], names[3]: empty. */
  kit_pod(&k, "default", "precious", names[0], 100,
          "annotations: {karpenter.sh/do-not-disrupt: 'true'}");
  kit_pod(&k, "default", "plain", names[1], 100, "");
  /* kubectl scale: spec.replicas through the scale subresource. */
  kit_patch(&k, "NodePool", "static", "{spec: {replicas: 5}}");
  assert_int_equal(creates(&k), 5);
  {
    char all[8][64], fresh[64] = "";
    size_t n = live_claims(&k, "static", all, 8), i, j;
    assert_int_equal(n, 5);
    for (i = 0; i < n; i++) {
      for (j = 0; j < 4 && strcmp(all[i], names[j]); j++)
        ;
      if (j == 4)
        memcpy(fresh, all[i], sizeof(fresh));
    }
    assert_true(*fresh);
    /* Down to 2 before the new one launched: it goes first, then the
     * two empty nodes; the nodes with pods stay. */
    kit_patch(&k, "NodePool", "static", "{spec: {replicas: 2}}");
    assert_int_equal(deletes(&k), 3);
    assert_non_null(
        kit_str(&k, "NodeClaim", fresh, "metadata", "deletionTimestamp", NULL));
  }
  assert_true(kit_exists(&k, "NodeClaim", names[0]));
  assert_true(kit_exists(&k, "NodeClaim", names[1]));
  assert_non_null(kit_str(&k, "NodeClaim", names[2], "metadata",
                          "deletionTimestamp", NULL));
  assert_non_null(kit_str(&k, "NodeClaim", names[3], "metadata",
                          "deletionTimestamp", NULL));
  assert_null(kit_str(&k, "NodeClaim", names[1], "metadata",
                      "deletionTimestamp", NULL));
  /* Down to 1: the plain pod's node before the do-not-disrupt one. */
  kit_patch(&k, "NodePool", "static", "{spec: {replicas: 1}}");
  assert_int_equal(deletes(&k), 4);
  assert_non_null(kit_str(&k, "NodeClaim", names[1], "metadata",
                          "deletionTimestamp", NULL));
  assert_null(kit_str(&k, "NodeClaim", names[0], "metadata",
                      "deletionTimestamp", NULL));
  /* Nothing launched to make up for the ones going. */
  kit_advance(&k, 2 * 60 * SEC);
  assert_int_equal(creates(&k), 5);
  assert_int_equal(deletes(&k), 4);
  kit_close(&k);
}

static void test_limit_nodes_holds(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "replicas: 5, limits: {nodes: '3'}");
  kit_start(&k);
  assert_int_equal(creates(&k), 3);
  kit_advance(&k, 2 * 60 * SEC);
  assert_int_equal(creates(&k), 3);
  assert_true(kit_events(&k, "NodePoolLimitReached") >= 1);
  /* The limit raised: the rest come. */
  kit_patch(&k, "NodePool", "static",
            "{spec: {replicas: 5, limits: {nodes: '10'}}}");
  assert_int_equal(creates(&k), 5);
  kit_close(&k);
}

static void test_not_ready_pool_waits(void **state)
{
  struct kit k;
  char ts[64];
  (void)state;
  setup(&k, NULL);
  snprintf(ts, sizeof(ts), "2026-01-01T00:00:00Z");
  kit_apply(&k,
            "{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: "
            "static}, spec: {replicas: 2, template: {spec: {nodeClassRef: "
            "{group: carpenter.dev, kind: ProxmoxNodeClass, name: default}, "
            "requirements: []}}}, status: {conditions: [{type: Ready, status: "
            "'False', reason: NodeClassNotReady, message: '', "
            "lastTransitionTime: '%s'}]}}",
            ts);
  kit_start(&k);
  kit_advance(&k, 30 * SEC);
  assert_int_equal(creates(&k), 0);
  kit_patch(&k, "NodePool", "static",
            "{status: {conditions: [{type: Ready, status: 'True', reason: "
            "Ready, message: '', lastTransitionTime: '%s'}]}}",
            ts);
  assert_int_equal(creates(&k), 2);
  kit_close(&k);
}

static void test_deleted_claim_replaced_marked_counted(void **state)
{
  struct kit k;
  char names[8][64];
  (void)state;
  setup(&k, "replicas: 2");
  kit_start(&k);
  up_all(&k, "static");
  assert_int_equal(live_claims(&k, "static", names, 8), 2);
  /* Deleted by someone (expiration, a user): replaced at once. */
  kit_delete(&k, "NodeClaim", names[0]);
  assert_int_equal(creates(&k), 3);
  /* Marked for deletion by a disruption command (not deleted yet):
   * counted as there, so neither side acts. */
  carp_cluster_mark_for_deletion(k.cluster, names[1]);
  kit_patch(&k, "NodePool", "static", "{spec: {replicas: 2}}");
  kit_advance(&k, 2 * 60 * SEC);
  assert_int_equal(creates(&k), 3);
  assert_int_equal(deletes(&k), 0);
  kit_close(&k);
}

static void test_failed_create_retried(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, "replicas: 1");
  carp_kubemem_fail(k.api, "POST", "/nodeclaims", 500, 1);
  kit_start(&k);
  assert_int_equal(kit_count(&k, "NodeClaim"), 0);
  kit_advance(&k, 2 * SEC);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  kit_advance(&k, 60 * SEC);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  kit_close(&k);
}

/* The message of a condition of a NodePool. */
static const char *cond_message(struct kit *k, const char *pool,
                                const char *type)
{
  static char buf[1024];
  yajl_val v = kit_get(k, "NodePool", pool);
  yajl_val conds = carp_json_arr(v, "status", "conditions", NULL);
  size_t i;
  buf[0] = '\0';
  for (i = 0; conds && i < carp_json_len(conds); i++) {
    yajl_val cd = carp_json_at(conds, i);
    const char *t = carp_json_str(cd, "type", NULL);
    if (t && !strcmp(t, type))
      snprintf(buf, sizeof(buf), "%s", carp_json_str(cd, "message", NULL));
  }
  carp_json_free(v);
  return buf;
}

static void test_validation_texts(void **state)
{
  struct kit k;
  struct carp_nodepool_controller_options o;
  struct carp_controller *c;
  const char *reason = NULL;
  (void)state;
  memset(&o, 0, sizeof(o));
  setup(&k, NULL);
  assert_int_equal(carp_nodepool_controller_new(&k.env, &o, &c), 0);
  kit_add(&k, c);
  kit_nodepool(&k, "weighted", "replicas: 2, weight: 10");
  kit_nodepool(&k, "cpu", "replicas: 2, limits: {cpu: '8', nodes: '4'}");
  kit_start(&k);
  assert_string_equal(
      kit_condition(&k, "NodePool", "weighted", "ValidationSucceeded", &reason),
      "False");
  assert_string_equal(reason, "NodePoolValidationFailed");
  assert_non_null(strstr(cond_message(&k, "weighted", "ValidationSucceeded"),
                         "'weight' is not supported on static NodePools"));
  assert_string_equal(
      kit_condition(&k, "NodePool", "cpu", "ValidationSucceeded", &reason),
      "False");
  assert_non_null(
      strstr(cond_message(&k, "cpu", "ValidationSucceeded"),
             "only 'limits.nodes' is supported on static NodePools"));
  /* Neither is Ready, so nothing is launched for them. */
  assert_string_equal(kit_condition(&k, "NodePool", "cpu", "Ready", NULL),
                      "False");
  kit_advance(&k, 30 * SEC);
  assert_int_equal(creates(&k), 0);
  kit_close(&k);
}

static void test_switch_refused(void **state)
{
  struct kit k;
  struct carp_nodepool_controller_options o;
  struct carp_controller *c;
  const char *reason = NULL;
  (void)state;
  memset(&o, 0, sizeof(o));
  setup(&k, NULL);
  assert_int_equal(carp_nodepool_controller_new(&k.env, &o, &c), 0);
  kit_add(&k, c);
  kit_nodepool(&k, "pool", "");
  kit_start(&k);
  /* First seen dynamic: stamped so. */
  assert_string_equal(kit_str(&k, "NodePool", "pool", "metadata", "annotations",
                              "carpenter.dev/nodepool-mode", NULL),
                      "dynamic");
  assert_string_equal(
      kit_condition(&k, "NodePool", "pool", "ValidationSucceeded", NULL),
      "True");
  /* An API server without CEL let replicas in: refused, nothing
   * launched, and the stamp stays. */
  kit_patch(&k, "NodePool", "pool", "{spec: {replicas: 3}}");
  kit_advance(&k, 5 * SEC);
  assert_string_equal(
      kit_condition(&k, "NodePool", "pool", "ValidationSucceeded", &reason),
      "False");
  assert_non_null(
      strstr(cond_message(&k, "pool", "ValidationSucceeded"),
             "Cannot transition NodePool between static (replicas set) and "
             "dynamic (replicas unset) provisioning modes"));
  assert_string_equal(kit_condition(&k, "NodePool", "pool", "Ready", NULL),
                      "False");
  assert_int_equal(creates(&k), 0);
  assert_string_equal(kit_str(&k, "NodePool", "pool", "metadata", "annotations",
                              "carpenter.dev/nodepool-mode", NULL),
                      "dynamic");
  /* Back to dynamic: valid again. */
  kit_patch(&k, "NodePool", "pool", "{spec: {replicas: null}}");
  kit_advance(&k, 5 * SEC);
  assert_string_equal(
      kit_condition(&k, "NodePool", "pool", "ValidationSucceeded", NULL),
      "True");
  kit_close(&k);
}

static void test_static_nodes_not_consolidated(void **state)
{
  struct kit k;
  struct carp_disruption_options o = {.poll_interval_ms = 1 * SEC,
                                      .validation_delay_ms = 2 * SEC,
                                      .command_timeout_ms = 60 * SEC};
  struct carp_controller *c;
  (void)state;
  setup(&k, "replicas: 2, disruption: {consolidateAfter: 0s, "
            "budgets: [{nodes: '100%'}]}");
  assert_int_equal(carp_disruption_new(&k.env, &o, &c), 0);
  kit_add(&k, c);
  kit_start(&k);
  up_all(&k, "static");
  /* Empty, and would be consolidated in a dynamic pool. */
  kit_advance(&k, 5 * 60 * SEC);
  assert_int_equal(deletes(&k), 0);
  assert_int_equal(creates(&k), 2);
  kit_close(&k);
}

/* The pool's NodeClaims being deleted. */
static size_t deleting_claims(struct kit *k, const char *pool)
{
  struct carp_objmeta *const *v;
  size_t n, i, got = 0;
  v = carp_cluster_nodeclaims_of_pool(k->cluster, pool, &n);
  for (i = 0; i < n; i++)
    got += v[i]->deletion_ms != 0;
  return got;
}

/* The disruption controllers beside the static ones, and a pool. */
static void setup_drift(struct kit *k, const char *pool_spec)
{
  static const struct carp_disruption_options o = {
      .poll_interval_ms = 1 * SEC,
      .validation_delay_ms = 2 * SEC,
      .command_timeout_ms = 60 * SEC};
  static const struct carp_nodepool_controller_options no = {.debounce_ms =
                                                                 100};
  struct carp_controller *c;
  setup(k, pool_spec);
  assert_int_equal(carp_disruption_new(&k->env, &o, &c), 0);
  kit_add(k, c);
  assert_int_equal(carp_disruption_conditions_new(&k->env, &c), 0);
  kit_add(k, c);
  assert_int_equal(carp_nodepool_controller_new(&k->env, &no, &c), 0);
  kit_add(k, c);
  kit_start(k);
  up_all(k, "static");
  kit_advance(k, 5 * SEC);
  assert_int_equal(deletes(k), 0);
}

/* A new template label: every node of the pool drifts. */
static void drift_all(struct kit *k)
{
  kit_patch(k, "NodePool", "static",
            "{spec: {template: {metadata: {labels: {team: blue}}}}}");
}

/* Of the new template. */
static int is_blue(struct kit *k, const char *claim)
{
  const char *t =
      kit_str(k, "NodeClaim", claim, "metadata", "labels", "team", NULL);
  return t && !strcmp(t, "blue");
}

/* The name of the pool's NodeClaim being deleted ("" when none). */
static void deleting_name(struct kit *k, char out[64])
{
  struct carp_objmeta *const *v;
  size_t n, i;
  out[0] = 0;
  v = carp_cluster_nodeclaims_of_pool(k->cluster, "static", &n);
  for (i = 0; i < n; i++)
    if (v[i]->deletion_ms)
      snprintf(out, 64, "%s", v[i]->name);
}

/* The nth NodeClaim created, brought up; its name into out. */
static void created_up(struct kit *k, size_t nth, char out[64])
{
  const char *name = kit_created_claim(k, nth);
  assert_non_null(name);
  snprintf(out, 64, "%s", name);
  assert_true(is_blue(k, out));
  kit_node_up(k, out, "static", "c1.2VCPU-4GB");
}

static void test_drifted_nodes_replaced_first(void **state)
{
  struct kit k;
  char names[8][64], repl[64], gone[64];
  (void)state;
  setup_drift(&k, "replicas: 2, disruption: {consolidateAfter: Never, "
                  "budgets: [{nodes: '1'}]}");
  live_claims(&k, "static", names, 8);
  kit_pod(&k, "default", "web", names[0], 500, "");
  drift_all(&k);
  kit_advance(&k, 5 * SEC);
  /* The budget lets one go: its replacement, of the new template, is
   * launched first and the drifted node is left alone meanwhile. */
  assert_int_equal(creates(&k), 3);
  assert_int_equal(deleting_claims(&k, "static"), 0);
  assert_int_equal(deletes(&k), 0);
  /* While it launches neither static controller acts: the drifted node
   * being replaced launches nothing more, and the replacement is not an
   * extra node to remove. */
  kit_advance(&k, 30 * SEC);
  assert_int_equal(creates(&k), 3);
  assert_int_equal(deletes(&k), 0);
  assert_int_equal(live_claims(&k, "static", names, 8), 3);
  /* Up and initialized: now the drifted node goes. */
  created_up(&k, 2, repl);
  kit_advance(&k, 5 * SEC);
  assert_int_equal(deleting_claims(&k, "static"), 1);
  deleting_name(&k, gone);
  assert_false(is_blue(&k, gone));
  assert_int_equal(creates(&k), 3);
  assert_int_equal(live_claims(&k, "static", names, 8), 2);
  /* The other waits while one is disrupting. */
  kit_advance(&k, 30 * SEC);
  assert_int_equal(creates(&k), 3);
  assert_int_equal(deleting_claims(&k, "static"), 1);
  /* Gone: the next one is replaced the same way, replacement first. */
  kit_patch(&k, "NodeClaim", gone, "{metadata: {finalizers: null}}");
  kit_advance(&k, 5 * SEC);
  assert_false(kit_exists(&k, "NodeClaim", gone));
  assert_int_equal(creates(&k), 4);
  assert_int_equal(deleting_claims(&k, "static"), 0);
  created_up(&k, 3, repl);
  kit_advance(&k, 5 * SEC);
  deleting_name(&k, gone);
  assert_true(gone[0]);
  assert_false(is_blue(&k, gone));
  kit_patch(&k, "NodeClaim", gone, "{metadata: {finalizers: null}}");
  kit_advance(&k, 30 * SEC);
  assert_int_equal(live_claims(&k, "static", names, 8), 2);
  assert_true(is_blue(&k, names[0]) && is_blue(&k, names[1]));
  assert_int_equal(creates(&k), 4);
  assert_int_equal(deleting_claims(&k, "static"), 0);
  assert_true(kit_metric(&k, "karpenter_nodeclaims_disrupted_total",
                         (const char *const[]){"drifted", "static", "on-demand",
                                               "WhenEmptyOrUnderutilized",
                                               "graceful", NULL}) == 2);
  assert_int_equal(
      kit_metric(&k, "karpenter_nodeclaims_created_total",
                 (const char *const[]){"reason=\"drifted\"",
                                       "nodepool=\"static\"", NULL}),
      2);
  kit_close(&k);
}

static void test_drift_budget_and_rollback(void **state)
{
  struct kit k;
  char names[8][64], r1[64], r2[64];
  size_t i;
  (void)state;
  setup_drift(&k, "replicas: 3, disruption: {consolidateAfter: Never, "
                  "budgets: [{nodes: '2'}]}");
  drift_all(&k);
  kit_advance(&k, 5 * SEC);
  /* Two replacements at once, as the budget allows. */
  assert_int_equal(creates(&k), 5);
  snprintf(r1, sizeof(r1), "%s", kit_created_claim(&k, 3));
  snprintf(r2, sizeof(r2), "%s", kit_created_claim(&k, 4));
  /* They never initialize: after the command timeout both are deleted and
   * the drifted nodes, untouched, count again (nothing launched for them
   * by static.provisioning); then the replacement is tried again. */
  kit_advance(&k, 62 * SEC);
  assert_non_null(
      kit_str(&k, "NodeClaim", r1, "metadata", "deletionTimestamp", NULL));
  assert_non_null(
      kit_str(&k, "NodeClaim", r2, "metadata", "deletionTimestamp", NULL));
  assert_int_equal(deletes(&k), 2);
  assert_int_equal(deleting_claims(&k, "static"), 2);
  assert_int_equal(creates(&k), 7);
  assert_int_equal(live_claims(&k, "static", names, 8), 5);
  kit_patch(&k, "NodeClaim", r1, "{metadata: {finalizers: null}}");
  kit_patch(&k, "NodeClaim", r2, "{metadata: {finalizers: null}}");
  /* Both up: two drifted nodes go together, the third waits. */
  created_up(&k, 5, r1);
  created_up(&k, 6, r2);
  kit_advance(&k, 5 * SEC);
  assert_int_equal(deleting_claims(&k, "static"), 2);
  assert_int_equal(creates(&k), 7);
  live_claims(&k, "static", names, 8);
  for (i = 0; i < 3; i++)
    if (!is_blue(&k, names[i]))
      break;
  assert_true(i < 3); /* the third drifted node, still there */
  kit_close(&k);
}

static void test_drift_at_node_limit_waits(void **state)
{
  struct kit k;
  (void)state;
  setup_drift(&k, "replicas: 2, limits: {nodes: 2}, disruption: "
                  "{consolidateAfter: Never, budgets: [{nodes: '1'}]}");
  drift_all(&k);
  /* No room for a replacement first: the drifted nodes stay (none is
   * deleted to make room), and say why. */
  kit_advance(&k, 60 * SEC);
  assert_int_equal(creates(&k), 2);
  assert_int_equal(deletes(&k), 0);
  assert_true(kit_events(&k, "DisruptionBlocked") > 0);
  kit_patch(&k, "NodePool", "static", "{spec: {limits: {nodes: 3}}}");
  kit_advance(&k, 5 * SEC);
  assert_int_equal(creates(&k), 3);
  assert_int_equal(deletes(&k), 0);
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launches_replicas_and_no_more),
      cmocka_unit_test(test_scale_up_then_down_in_order),
      cmocka_unit_test(test_limit_nodes_holds),
      cmocka_unit_test(test_not_ready_pool_waits),
      cmocka_unit_test(test_deleted_claim_replaced_marked_counted),
      cmocka_unit_test(test_failed_create_retried),
      cmocka_unit_test(test_validation_texts),
      cmocka_unit_test(test_switch_refused),
      cmocka_unit_test(test_static_nodes_not_consolidated),
      cmocka_unit_test(test_drifted_nodes_replaced_first),
      cmocka_unit_test(test_drift_budget_and_rollback),
      cmocka_unit_test(test_drift_at_node_limit_waits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
