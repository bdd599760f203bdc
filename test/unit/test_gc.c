/* test_gc.c: garbage collection, reconcile by reconcile on the fake clock:
 * a leaked VM goes after its grace period and not a moment before; one
 * that a NodeClaim claims meanwhile stays; a NodeClaim whose VM is gone
 * goes when its Node is absent or NotReady, and stays while the Node is
 * Ready; a failed list deletes nothing; a replica that does not lead
 * sweeps nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/error.h"
#include "carpenter/gc.h"
#include "kit.h"

#define INTERVAL_MS (2 * 60 * 1000)
#define GRACE_MS    (5 * 60 * 1000)

static void setup(struct kit *k)
{
  struct carp_gc_options o = {.interval_ms = INTERVAL_MS,
                              .leaked_vm_grace_ms = GRACE_MS};
  struct carp_controller *c;
  kit_init(k, NULL);
  assert_int_equal(carp_gc_new(&k->env, &o, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", "");
}

static void test_leaked_vm_after_grace(void **state)
{
  struct kit k;
  char pid[128];
  (void)state;
  setup(&k);
  assert_int_equal(carp_fake_provider_add_instance(
                       k.provider, "orphan", "no-such-uid", "c1.2VCPU-4GB",
                       "zone-a", pid, sizeof(pid)),
                   0);
  kit_start(&k);
  /* First sweep a second after leading: seen, not deleted. */
  kit_advance(&k, 1000);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  /* Sweeps at 2 and 4 minutes: still within the grace. */
  kit_advance(&k, 2 * INTERVAL_MS);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  /* The sweep at 6 minutes is past the 5-minute grace. */
  kit_advance(&k, INTERVAL_MS);
  assert_int_equal(carp_fake_provider_count(k.provider), 0);
  assert_int_equal(kit_metric(&k, "carpenter_garbage_collected_vms_total",
                              CARP_VALUES("region=\"fake\"")),
                   1);
  kit_close(&k);
}

static void test_claimed_vm_is_kept(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_start(&k);
  /* A VM whose NodeClaim the cache shows only after the first sweep. */
  kit_node(&k, "late", "default", "c1.2VCPU-4GB");
  kit_advance(&k, 1000);
  kit_advance(&k, 4 * INTERVAL_MS);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  assert_true(kit_exists(&k, "NodeClaim", "late"));
  assert_int_equal(kit_writes(&k, "DELETE", NULL), 0);
  kit_close(&k);
}

/* A NodeClaim whose VM does not exist, registered long ago. */
static void lost_claim(struct kit *k, const char *name, int node_ready)
{
  kit_apply(k,
            "{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: {name: "
            "%s, labels: {karpenter.sh/nodepool: default}},"
            " spec: {nodeClassRef: {group: carpenter.dev, kind: "
            "ProxmoxNodeClass, name: default}, requirements: []},"
            " status: {providerID: 'proxmox://fake/4242', conditions: ["
            "  {type: Launched, status: 'True', reason: Launched, message: '',"
            "   lastTransitionTime: '2025-12-31T00:00:00Z'},"
            "  {type: Registered, status: 'True', reason: Registered, message: "
            "'', lastTransitionTime: '2025-12-31T00:00:00Z'}]}}",
            name);
  kit_apply(k,
            "{apiVersion: v1, kind: Node, metadata: {name: %s}, spec: "
            "{providerID: 'proxmox://fake/4242'}, status: {conditions: "
            "[{type: Ready, status: '%s'}]}}",
            name, node_ready ? "True" : "False");
}

static void test_lost_vm_claim_deleted_unless_ready(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  lost_claim(&k, "ready", 1);
  kit_start(&k);
  kit_advance(&k, 1000);
  /* The Node still answers: not garbage. */
  assert_true(kit_exists(&k, "NodeClaim", "ready"));
  kit_patch(&k, "Node", "ready",
            "{status: {conditions: [{type: Ready, "
            "status: 'False'}]}}");
  kit_advance(&k, INTERVAL_MS);
  assert_false(kit_exists(&k, "NodeClaim", "ready"));
  assert_int_equal(kit_events(&k, "GarbageCollected"), 1);
  assert_int_equal(kit_metric(&k, "karpenter_nodeclaims_disrupted_total",
                              CARP_VALUES("reason=\"garbage_collected\"",
                                          "nodepool=\"default\"")),
                   1);
  kit_close(&k);
}

static void test_failed_list_deletes_nothing(void **state)
{
  struct kit k;
  char pid[128];
  (void)state;
  setup(&k);
  carp_fake_provider_add_instance(k.provider, "orphan", "x", "c1.2VCPU-4GB",
                                  "zone-a", pid, sizeof(pid));
  lost_claim(&k, "lost", 0);
  carp_fake_provider_fail(k.provider, "list", 100, CARP_EUNAVAIL, NULL);
  kit_start(&k);
  kit_advance(&k, 10 * INTERVAL_MS);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  assert_true(kit_exists(&k, "NodeClaim", "lost"));
  kit_close(&k);
}

static void test_follower_sweeps_nothing(void **state)
{
  struct kit k;
  char pid[128];
  (void)state;
  setup(&k);
  carp_fake_provider_add_instance(k.provider, "orphan", "x", "c1.2VCPU-4GB",
                                  "zone-a", pid, sizeof(pid));
  kit_start(&k);
  kit_set_leader(&k, 0);
  kit_advance(&k, 10 * INTERVAL_MS);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leaked_vm_after_grace),
      cmocka_unit_test(test_claimed_vm_is_kept),
      cmocka_unit_test(test_lost_vm_claim_deleted_unless_ready),
      cmocka_unit_test(test_failed_list_deletes_nothing),
      cmocka_unit_test(test_follower_sweeps_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
