/* test_repair.c: node repair (the node.health controller), reconcile by
 * reconcile on the kit: the toleration on both sides of its edge, a node
 * that recovers in time, the unhealthy share that holds repairs, and that
 * a healthy node is never touched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/repair.h"
#include "carpenter/timeutil.h"
#include "kit.h"

#define SEC    1000ULL
#define MINUTE (60 * SEC)

static void setup(struct kit *k, int max_percent)
{
  struct carp_repair_options o = {.toleration_ms = 30 * MINUTE,
                                  .max_unhealthy_percent = max_percent};
  struct carp_controller *c;
  kit_init(k, NULL);
  assert_int_equal(carp_repair_new(&k->env, &o, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", "");
}

/* The kubelet stops reporting: the node lifecycle controller sets Ready
 * Unknown, now. */
static void goes_unknown(struct kit *k, const char *node)
{
  char ts[CARP_RFC3339_LEN];
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  kit_patch(k, "Node", node,
            "{status: {conditions: [{type: Ready, status: Unknown, reason: "
            "NodeStatusUnknown, message: 'Kubelet stopped posting node "
            "status.', lastTransitionTime: '%s', lastHeartbeatTime: '%s'}]}}",
            ts, ts);
}

static void comes_back(struct kit *k, const char *node)
{
  char ts[CARP_RFC3339_LEN];
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  kit_patch(k, "Node", node,
            "{status: {conditions: [{type: Ready, status: 'True', reason: "
            "KubeletReady, message: '', lastTransitionTime: '%s',"
            " lastHeartbeatTime: '%s'}]}}",
            ts, ts);
}

static int deleting(struct kit *k, const char *claim)
{
  return kit_str(k, "NodeClaim", claim, "metadata", "deletionTimestamp",
                 NULL) != NULL;
}

static void test_repaired_after_the_toleration(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 20);
  kit_node(&k, "sick", "default", "c1.2VCPU-4GB");
  kit_node(&k, "well", "default", "c1.2VCPU-4GB");
  kit_node(&k, "fine", "default", "c1.2VCPU-4GB");
  kit_node(&k, "good", "default", "c1.2VCPU-4GB");
  kit_node(&k, "okay", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  goes_unknown(&k, "sick");
  kit_advance(&k, 30 * MINUTE - SEC);
  assert_false(deleting(&k, "sick"));
  kit_advance(&k, 2 * SEC);
  assert_true(deleting(&k, "sick"));
  /* The drain does not wait: the deadline is now. */
  assert_non_null(kit_str(&k, "NodeClaim", "sick", "metadata", "annotations",
                          "karpenter.sh/nodeclaim-termination-timestamp",
                          NULL));
  assert_int_equal(kit_events(&k, "NodeRepair"), 2);
  assert_int_equal(kit_writes(&k, "DELETE", "/nodeclaims/sick"), 1);
  assert_true(kit_metric(&k, "karpenter_nodeclaims_unhealthy_disrupted_total",
                         (const char *const[]){"ready", "default", "on-demand",
                                               "template", NULL}) == 1);
  assert_true(
      kit_metric(&k, "karpenter_nodeclaims_disrupted_total",
                 (const char *const[]){"unhealthy", "default", "on-demand", "",
                                       "forceful", NULL}) == 1);
  assert_false(deleting(&k, "well") || deleting(&k, "fine") ||
               deleting(&k, "good") || deleting(&k, "okay"));
  kit_close(&k);
}

static void test_recovered_in_time_is_left_alone(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 20);
  kit_node(&k, "flaky", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  goes_unknown(&k, "flaky");
  kit_advance(&k, 29 * MINUTE);
  comes_back(&k, "flaky");
  kit_advance(&k, 10 * MINUTE);
  /* Unknown again: the toleration starts over. */
  goes_unknown(&k, "flaky");
  kit_advance(&k, 29 * MINUTE);
  assert_false(deleting(&k, "flaky"));
  assert_int_equal(kit_writes(&k, NULL, "/nodeclaims/"), 0);
  kit_advance(&k, 2 * MINUTE);
  assert_true(deleting(&k, "flaky"));
  kit_close(&k);
}

static void test_too_many_unhealthy_holds_repair(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 20);
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.2VCPU-4GB");
  kit_node(&k, "c", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  /* 20 % of 3, rounded up: one may be repaired; two unhealthy hold it. */
  goes_unknown(&k, "a");
  goes_unknown(&k, "b");
  kit_advance(&k, 45 * MINUTE);
  assert_false(deleting(&k, "a") || deleting(&k, "b"));
  assert_true(kit_events(&k, "NodeRepairBlocked") >= 3);
  comes_back(&k, "b");
  kit_advance(&k, 2 * MINUTE);
  assert_true(deleting(&k, "a"));
  assert_false(deleting(&k, "b") || deleting(&k, "c"));
  kit_close(&k);
}

static void test_healthy_nodes_never_repaired(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 100);
  kit_node(&k, "a", "default", "c1.2VCPU-4GB");
  kit_node(&k, "b", "default", "c1.2VCPU-4GB");
  kit_start(&k);
  kit_advance(&k, 6 * 60 * MINUTE);
  assert_int_equal(kit_writes(&k, NULL, NULL), 0);
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_repaired_after_the_toleration),
      cmocka_unit_test(test_recovered_in_time_is_left_alone),
      cmocka_unit_test(test_too_many_unhealthy_holds_repair),
      cmocka_unit_test(test_healthy_nodes_never_repaired),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
