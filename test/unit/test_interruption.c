/* test_interruption.c: the nodeclaim.interruption controller on the fake
 * clock. A NodeClaim on a host (zone) offline goes once the host has been
 * offline for the toleration and not a moment before; a host back online
 * in between starts the toleration over; with several hosts only those
 * offline long enough lose their NodeClaims (maintenance is not this
 * controller's); a Node still Ready keeps its NodeClaim; an unknown zone
 * and a follower do nothing. The last test runs the whole path with the
 * lifecycle, termination and garbage-collection controllers: the
 * NodeClaim's finalizer does not wait for the unreachable VM, and the VM,
 * left behind, is swept once its host is back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/error.h"
#include "carpenter/gc.h"
#include "carpenter/interruption.h"
#include "carpenter/lifecycle.h"
#include "carpenter/termination.h"
#include "kit.h"

#define TOL_MS  (5 * 60 * 1000)
#define POLL_MS (10 * 1000)
#define TYPE    "c1.2VCPU-4GB"

static const char *const zones[] = {"zone-a", "zone-b", "zone-c", NULL};

static void setup(struct kit *k)
{
  struct carp_fake_provider_options po;
  struct kit_options ko = {.provider = &po};
  struct carp_interruption_options o = {.host_offline_toleration_ms = TOL_MS,
                                        .poll_interval_ms = POLL_MS};
  struct carp_controller *c;
  memset(&po, 0, sizeof(po));
  po.zones = zones;
  kit_init(k, &ko);
  assert_int_equal(carp_interruption_new(&k->env, &o, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", "");
}

static void node_ready(struct kit *k, const char *name, const char *status)
{
  kit_patch(k, "Node", name,
            "{status: {conditions: [{type: Ready, status: '%s', reason: "
            "NodeStatusUnknown, message: ''}]}}",
            status);
}

/* A NodeClaim asked to go: its deletionTimestamp (the finalizer holds
 * it). */
static int deleting(struct kit *k, const char *name)
{
  return kit_str(k, "NodeClaim", name, "metadata", "deletionTimestamp", NULL) !=
         NULL;
}

static double disrupted(struct kit *k)
{
  return kit_metric(k, "karpenter_nodeclaims_disrupted_total",
                    CARP_VALUES("reason=\"host_offline\"",
                                "nodepool=\"default\"",
                                "termination_mode=\"forceful\""));
}

static void test_not_before_the_toleration(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_node_in(&k, "a1", "default", TYPE, "zone-a");
  kit_node_in(&k, "b1", "default", TYPE, "zone-b");
  kit_start(&k);
  kit_advance(&k, 60 * 1000);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_OFFLINE);
  node_ready(&k, "a1", "Unknown");
  kit_advance(&k, TOL_MS - 1000);
  assert_false(deleting(&k, "a1"));
  assert_int_equal(kit_writes(&k, "DELETE", NULL), 0);
  /* The deadline itself: the controller woke up for it. */
  kit_advance(&k, 1000);
  assert_true(deleting(&k, "a1"));
  assert_false(deleting(&k, "b1"));
  assert_int_equal(kit_writes(&k, "DELETE", "/nodeclaims/a1"), 1);
  /* Events on the NodeClaim and on its Node; counted once. */
  assert_int_equal(kit_events(&k, "HostOffline"), 2);
  assert_true(disrupted(&k) == 1);
  /* Later polls leave it to its finalizer. */
  kit_advance(&k, 10 * POLL_MS);
  assert_int_equal(kit_writes(&k, "DELETE", NULL), 1);
  assert_int_equal(kit_events(&k, "HostOffline"), 2);
  assert_true(disrupted(&k) == 1);
  kit_close(&k);
}

static void test_back_online_starts_over(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_node_in(&k, "a1", "default", TYPE, "zone-a");
  node_ready(&k, "a1", "False");
  kit_start(&k);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_OFFLINE);
  kit_advance(&k, 4 * 60 * 1000);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_READY);
  kit_advance(&k, 2 * 60 * 1000);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_OFFLINE);
  /* 10 minutes since it first went, 4 since it went again. */
  kit_advance(&k, 4 * 60 * 1000);
  assert_false(deleting(&k, "a1"));
  kit_advance(&k, 60 * 1000 + POLL_MS);
  assert_true(deleting(&k, "a1"));
  kit_close(&k);
}

static void test_several_hosts(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_node_in(&k, "a1", "default", TYPE, "zone-a");
  kit_node_in(&k, "a2", "default", TYPE, "zone-a");
  kit_node_in(&k, "b1", "default", TYPE, "zone-b");
  kit_node_in(&k, "c1", "default", TYPE, "zone-c");
  node_ready(&k, "a1", "Unknown");
  node_ready(&k, "a2", "Unknown");
  node_ready(&k, "b1", "Unknown");
  node_ready(&k, "c1", "Unknown");
  kit_start(&k);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_OFFLINE);
  carp_fake_provider_set_zone_state(k.provider, "zone-b",
                                    CARP_ZONE_MAINTENANCE);
  kit_advance(&k, 2 * 60 * 1000);
  carp_fake_provider_set_zone_state(k.provider, "zone-c", CARP_ZONE_OFFLINE);
  kit_advance(&k, 3 * 60 * 1000 + POLL_MS);
  /* zone-a is past its toleration, zone-c two minutes short of it. */
  assert_true(deleting(&k, "a1"));
  assert_true(deleting(&k, "a2"));
  assert_false(deleting(&k, "c1"));
  assert_false(deleting(&k, "b1"));
  kit_advance(&k, 2 * 60 * 1000);
  assert_true(deleting(&k, "c1"));
  /* Maintenance is drift's business, however long it lasts. */
  kit_advance(&k, 30 * 60 * 1000);
  assert_false(deleting(&k, "b1"));
  assert_true(disrupted(&k) == 3);
  assert_int_equal(kit_events(&k, "HostOffline"), 6);
  kit_close(&k);
}

static void test_ready_node_is_kept(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_node_in(&k, "a1", "default", TYPE, "zone-a");
  kit_start(&k);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_OFFLINE);
  /* Proxmox says offline, the kubelet still answers. */
  kit_advance(&k, 3 * TOL_MS);
  assert_false(deleting(&k, "a1"));
  node_ready(&k, "a1", "Unknown");
  kit_advance(&k, POLL_MS);
  assert_true(deleting(&k, "a1"));
  kit_close(&k);
}

static void test_claim_without_node(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  /* Launched onto zone-a, never registered: known by its annotation. */
  kit_apply(&k,
            "{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: {name: "
            "l1, labels: {karpenter.sh/nodepool: default},"
            " annotations: {carpenter.dev/vm: fake/zone-a/1234}},"
            " spec: {nodeClassRef: {group: carpenter.dev, kind: "
            "ProxmoxNodeClass, name: default}, requirements: []}}");
  kit_start(&k);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_OFFLINE);
  kit_advance(&k, TOL_MS - POLL_MS);
  assert_true(kit_exists(&k, "NodeClaim", "l1"));
  kit_advance(&k, 2 * POLL_MS);
  /* No finalizer: gone at once. */
  assert_false(kit_exists(&k, "NodeClaim", "l1"));
  assert_int_equal(kit_events(&k, "HostOffline"), 1);
  kit_close(&k);
}

static void test_unknown_and_follower_do_nothing(void **state)
{
  struct kit k;
  (void)state;
  setup(&k);
  kit_node_in(&k, "a1", "default", TYPE, "zone-a");
  kit_node_in(&k, "b1", "default", TYPE, "zone-b");
  node_ready(&k, "a1", "Unknown");
  node_ready(&k, "b1", "Unknown");
  kit_start(&k);
  /* The provider cannot tell (its view of the region failed). */
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_UNKNOWN);
  kit_set_leader(&k, 0);
  carp_fake_provider_set_zone_state(k.provider, "zone-b", CARP_ZONE_OFFLINE);
  kit_advance(&k, 3 * TOL_MS);
  assert_int_equal(kit_writes(&k, "DELETE", NULL), 0);
  /* Leading again: the provider's time counts, not the new leader's. */
  kit_set_leader(&k, 1);
  kit_advance(&k, 2 * 1000);
  assert_true(deleting(&k, "b1"));
  assert_false(deleting(&k, "a1"));
  kit_close(&k);
}

/* The whole way with the lifecycle, termination and GC controllers. */
static void test_finalizer_and_sweep(void **state)
{
  struct kit k;
  struct carp_gc_options go = {.interval_ms = 2 * 60 * 1000,
                               .leaked_vm_grace_ms = 5 * 60 * 1000};
  struct carp_controller *c;
  (void)state;
  setup(&k);
  assert_int_equal(carp_lifecycle_new(&k.env, NULL, &c), 0);
  kit_add(&k, c);
  assert_int_equal(carp_termination_new(&k.env, NULL, &c), 0);
  kit_add(&k, c);
  assert_int_equal(carp_gc_new(&k.env, &go, &c), 0);
  kit_add(&k, c);
  kit_node_in(&k, "a1", "default", TYPE, "zone-a");
  kit_node_in(&k, "b1", "default", TYPE, "zone-b");
  kit_start(&k);
  assert_int_equal(carp_fake_provider_count(k.provider), 2);
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_OFFLINE);
  node_ready(&k, "a1", "Unknown");
  kit_advance(&k, TOL_MS - POLL_MS);
  assert_int_equal(kit_writes(&k, "DELETE", "/nodeclaims/a1"), 0);
  /* Deleted at the deadline. The Node has nothing to drain, its VM cannot
   * be reached: Node and NodeClaim go all the same. */
  kit_advance(&k, 2 * POLL_MS);
  assert_int_equal(kit_writes(&k, "DELETE", "/nodeclaims/a1"), 1);
  kit_advance(&k, 60 * 1000);
  assert_false(kit_exists(&k, "NodeClaim", "a1"));
  assert_false(kit_exists(&k, "Node", "a1"));
  /* The VM is still there, unowned, out of reach: kept however long. */
  kit_advance(&k, 30 * 60 * 1000);
  assert_int_equal(carp_fake_provider_count(k.provider), 2);
  /* Back: the next sweep past the grace deletes it (it was seen unowned
   * long ago), and nothing else. */
  carp_fake_provider_set_zone_state(k.provider, "zone-a", CARP_ZONE_READY);
  kit_advance(&k, go.interval_ms);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  assert_true(kit_exists(&k, "NodeClaim", "b1"));
  assert_true(kit_metric(&k, "carpenter_garbage_collected_vms_total",
                         CARP_VALUES("region=\"fake\"")) == 1);
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_not_before_the_toleration),
      cmocka_unit_test(test_back_online_starts_over),
      cmocka_unit_test(test_several_hosts),
      cmocka_unit_test(test_ready_node_is_kept),
      cmocka_unit_test(test_claim_without_node),
      cmocka_unit_test(test_unknown_and_follower_do_nothing),
      cmocka_unit_test(test_finalizer_and_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
