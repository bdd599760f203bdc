/* test_lifecycle.c: the NodeClaim lifecycle controller, reconcile by
 * reconcile on the kit (kubemem, fake provider, fake clock): launch,
 * registration, initialization, their timeouts, finalization, and how
 * many writes a NodeClaim costs on its way up. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/lifecycle.h"
#include "carpenter/timeutil.h"
#include "kit.h"

#define SEC    1000
#define MINUTE (60 * SEC)

static void setup_with(struct kit *k, uint64_t create_delay_ms,
                       const struct carp_lifecycle_options *o)
{
  struct carp_fake_provider_options po;
  struct kit_options ko = {.provider = &po};
  struct carp_controller *c = NULL;
  memset(&po, 0, sizeof(po));
  po.create_delay_ms = create_delay_ms;
  kit_init(k, &ko);
  assert_int_equal(carp_lifecycle_new(&k->env, o, &c), 0);
  kit_add(k, c);
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", "");
}

static void setup(struct kit *k, uint64_t create_delay_ms)
{
  setup_with(k, create_delay_ms, NULL);
}

/* The NodePool's NodeRegistrationHealthy status, its reason in *reason. */
static const char *pool_health(struct kit *k, const char **reason)
{
  return kit_condition(k, "NodePool", "default", "NodeRegistrationHealthy",
                       reason);
}

/* A NodeClaim as the provisioner makes it: no finalizer yet. */
static void claim(struct kit *k, const char *name, const char *extra_spec)
{
  kit_apply(k,
            "{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: {name: "
            "%s, labels: {karpenter.sh/nodepool: default}},"
            " spec: {nodeClassRef: {group: carpenter.dev, kind: "
            "ProxmoxNodeClass, name: default}, requirements: []%s}}",
            name, extra_spec);
}

/* The kubelet registers the claim's Node (with the unregistered taint). */
static void kubelet_joins(struct kit *k, const char *claim_name,
                          const char *node, int ready)
{
  char ts[CARP_RFC3339_LEN];
  const char *pid =
      kit_str(k, "NodeClaim", claim_name, "status", "providerID", NULL);
  char pidc[160];
  assert_non_null(pid);
  snprintf(pidc, sizeof(pidc), "%s", pid);
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  kit_apply(k,
            "{apiVersion: v1, kind: Node, metadata: {name: %s},"
            " spec: {providerID: '%s', taints: [{key: karpenter.sh/"
            "unregistered, effect: NoExecute}]},"
            " status: {capacity: {cpu: '2', memory: 4Gi, pods: '110'},"
            "  allocatable: {cpu: '2', memory: 4Gi, pods: '110'},"
            "  conditions: [{type: Ready, status: '%s', reason: KubeletReady,"
            "   message: '', lastTransitionTime: '%s', lastHeartbeatTime: "
            "'%s'}]}}",
            node, pidc, ready ? "True" : "False", ts, ts);
}

static void set_ready(struct kit *k, const char *node)
{
  char ts[CARP_RFC3339_LEN];
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  kit_patch(k, "Node", node,
            "{status: {conditions: [{type: Ready, status: 'True', reason: "
            "KubeletReady, message: '', lastTransitionTime: '%s',"
            " lastHeartbeatTime: '%s'}]}}",
            ts, ts);
}

static const char *cond(struct kit *k, const char *claim_name, const char *type)
{
  return kit_condition(k, "NodeClaim", claim_name, type, NULL);
}

static int has_finalizer(struct kit *k, const char *kind, const char *key)
{
  yajl_val v = kit_get(k, kind, key);
  yajl_val f = carp_json_arr(v, "metadata", "finalizers", NULL);
  size_t i;
  int found = 0;
  for (i = 0; f && i < carp_json_len(f); i++) {
    const char *s = carp_json_str(carp_json_at(f, i), NULL);
    if (s && !strcmp(s, "karpenter.sh/termination"))
      found = 1;
  }
  carp_json_free(v);
  return found;
}

/* Writes to the NodeClaim after its creation (the object and status). */
static size_t claim_writes(struct kit *k, const char *name)
{
  char path[160];
  snprintf(path, sizeof(path), "/nodeclaims/%s", name);
  return kit_writes(k, "PATCH", path);
}

static void test_launch_records_vm_finalizer_and_labels_first(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  assert_string_equal(cond(&k, "c1", "Launched"), "True");
  assert_non_null(kit_str(&k, "NodeClaim", "c1", "status", "providerID", NULL));
  assert_true(has_finalizer(&k, "NodeClaim", "c1"));
  assert_non_null(kit_str(&k, "NodeClaim", "c1", "metadata", "annotations",
                          "carpenter.dev/vm", NULL));
  assert_non_null(kit_str(&k, "NodeClaim", "c1", "metadata", "labels",
                          "node.kubernetes.io/instance-type", NULL));
  assert_string_equal(kit_str(&k, "NodeClaim", "c1", "metadata", "labels",
                              "topology.kubernetes.io/zone", NULL),
                      "zone-a");
  /* Waiting for its Node is said in the launch's own write. */
  assert_string_equal(cond(&k, "c1", "Registered"), "Unknown");
  /* One write before the clone, one with the result. */
  assert_int_equal(claim_writes(&k, "c1"), 2);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  assert_int_equal(kit_events(&k, "Launched"), 1);
  kit_close(&k);
}

static void test_ready_node_costs_three_claim_writes(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  kubelet_joins(&k, "c1", "n1", 1);
  assert_string_equal(cond(&k, "c1", "Registered"), "True");
  assert_string_equal(cond(&k, "c1", "Initialized"), "True");
  assert_string_equal(cond(&k, "c1", "Ready"), "True");
  assert_string_equal(
      kit_str(&k, "NodeClaim", "c1", "status", "nodeName", NULL), "n1");
  /* The Node got everything in one patch. */
  assert_false(kit_node_tainted(&k, "n1", "karpenter.sh/unregistered"));
  assert_string_equal(kit_str(&k, "Node", "n1", "metadata", "labels",
                              "karpenter.sh/registered", NULL),
                      "true");
  assert_string_equal(kit_str(&k, "Node", "n1", "metadata", "labels",
                              "karpenter.sh/initialized", NULL),
                      "true");
  assert_string_equal(kit_str(&k, "Node", "n1", "metadata", "labels",
                              "karpenter.sh/nodepool", NULL),
                      "default");
  assert_true(has_finalizer(&k, "Node", "n1"));
  {
    yajl_val v = kit_get(&k, "Node", "n1");
    yajl_val owner =
        carp_json_at(carp_json_arr(v, "metadata", "ownerReferences", NULL), 0);
    assert_string_equal(carp_json_str(owner, "kind", NULL), "NodeClaim");
    assert_string_equal(carp_json_str(owner, "name", NULL), "c1");
    carp_json_free(v);
  }
  assert_int_equal(claim_writes(&k, "c1"), 3);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodes/n1"), 1);
  assert_int_equal(kit_events(&k, "Registered"), 1);
  assert_int_equal(kit_events(&k, "Initialized"), 1);
  {
    const char *reason = NULL;
    assert_string_equal(pool_health(&k, &reason), "True");
    assert_string_equal(reason, "NodeRegistrationHealthy");
  }
  assert_true(kit_metric(&k, "karpenter_nodes_created_total",
                         (const char *const[]){"default", "zone-a", NULL}) ==
              1);
  /* Nothing more happens while nothing changes. */
  kit_advance(&k, 20 * MINUTE);
  assert_int_equal(claim_writes(&k, "c1"), 3);
  assert_true(kit_exists(&k, "NodeClaim", "c1"));
  kit_close(&k);
}

/* A Node that joins NotReady is synced at once; the claim's Registered
 * write waits for it to go Ready (up to REGISTER_HOLD_MS, 15 s), so one
 * write says Registered and Initialized: still three writes in all. */
static void test_not_ready_node_initializes_when_ready(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  kubelet_joins(&k, "c1", "n1", 0);
  assert_string_equal(kit_str(&k, "Node", "n1", "metadata", "labels",
                              "karpenter.sh/registered", NULL),
                      "true");
  assert_false(kit_node_tainted(&k, "n1", "karpenter.sh/unregistered"));
  assert_string_equal(cond(&k, "c1", "Registered"), "Unknown");
  assert_int_equal(claim_writes(&k, "c1"), 2);
  kit_advance(&k, 5 * SEC);
  assert_int_equal(claim_writes(&k, "c1"), 2);
  set_ready(&k, "n1");
  assert_string_equal(cond(&k, "c1", "Registered"), "True");
  assert_string_equal(cond(&k, "c1", "Initialized"), "True");
  assert_string_equal(
      kit_str(&k, "NodeClaim", "c1", "status", "nodeName", NULL), "n1");
  assert_string_equal(kit_str(&k, "Node", "n1", "metadata", "labels",
                              "karpenter.sh/initialized", NULL),
                      "true");
  assert_int_equal(claim_writes(&k, "c1"), 3);
  assert_int_equal(kit_events(&k, "Registered"), 1);
  assert_int_equal(kit_events(&k, "Initialized"), 1);
  kit_advance(&k, 20 * MINUTE);
  assert_int_equal(claim_writes(&k, "c1"), 3);
  kit_close(&k);
}

/* A reconcile that comes before the cache shows the claim's Registered
 * write (a Node event queued it while that write was in flight) waits for
 * the cache: it does not sync the Node again, nor register twice. */
static void test_registration_waits_for_the_cache(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  kit_set_leader(&k, 0);
  kubelet_joins(&k, "c1", "n1", 1);
  /* From here the caches lag: they see none of the writes that follow. */
  carp_kubemem_hold_watches(k.api, 1);
  kit_set_leader(&k, 1);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodes/n1"), 1);
  assert_int_equal(claim_writes(&k, "c1"), 3);
  carp_controller_enqueue(k.ctls[0], "c1");
  kit_settle(&k);
  kit_advance(&k, 1 * SEC);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodes/n1"), 1);
  assert_int_equal(claim_writes(&k, "c1"), 3);
  carp_kubemem_hold_watches(k.api, 0);
  kit_advance(&k, 1 * SEC);
  assert_string_equal(cond(&k, "c1", "Initialized"), "True");
  assert_int_equal(kit_writes(&k, "PATCH", "/nodes/n1"), 1);
  assert_int_equal(claim_writes(&k, "c1"), 3);
  assert_int_equal(kit_events(&k, "Registered"), 1);
  assert_int_equal(kit_events(&k, "Initialized"), 1);
  kit_close(&k);
}

/* A Node that stays NotReady past the hold: Registered is written then,
 * with why it is not initialized, and Initialized follows when it is. */
static void test_not_ready_node_registers_after_the_hold(void **state)
{
  struct kit k;
  const char *reason = NULL;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  kubelet_joins(&k, "c1", "n1", 0);
  assert_string_equal(cond(&k, "c1", "Registered"), "Unknown");
  kit_advance(&k, 16 * SEC);
  assert_string_equal(cond(&k, "c1", "Registered"), "True");
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "c1", "Initialized", &reason), "Unknown");
  assert_string_equal(reason, "NodeNotReady");
  assert_null(kit_str(&k, "Node", "n1", "metadata", "labels",
                      "karpenter.sh/initialized", NULL));
  assert_int_equal(claim_writes(&k, "c1"), 3);
  set_ready(&k, "n1");
  assert_string_equal(cond(&k, "c1", "Initialized"), "True");
  assert_string_equal(kit_str(&k, "Node", "n1", "metadata", "labels",
                              "karpenter.sh/initialized", NULL),
                      "true");
  assert_int_equal(claim_writes(&k, "c1"), 4);
  assert_int_equal(kit_events(&k, "Initialized"), 1);
  kit_close(&k);
}

static void test_startup_taints_hold_initialization(void **state)
{
  struct kit k;
  const char *reason = NULL;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1",
        ", startupTaints: [{key: example.com/agent, effect: NoSchedule}]");
  kit_start(&k);
  kubelet_joins(&k, "c1", "n1", 1);
  assert_true(kit_node_tainted(&k, "n1", "example.com/agent"));
  /* The agent takes longer than the Registered write waits. */
  kit_advance(&k, 16 * SEC);
  assert_string_equal(cond(&k, "c1", "Registered"), "True");
  assert_string_equal(
      kit_condition(&k, "NodeClaim", "c1", "Initialized", &reason), "Unknown");
  assert_string_equal(reason, "StartupTaintsExist");
  /* The agent is done: it takes its taint off. */
  kit_patch(&k, "Node", "n1", "{spec: {taints: []}}");
  kit_advance(&k, 11 * SEC);
  assert_string_equal(cond(&k, "c1", "Initialized"), "True");
  kit_close(&k);
}

static void test_not_ready_taint_holds_initialization(void **state)
{
  struct kit k;
  char ts[CARP_RFC3339_LEN];
  char pid[160];
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  snprintf(pid, sizeof(pid), "%s",
           kit_str(&k, "NodeClaim", "c1", "status", "providerID", NULL));
  carp_time_format_rfc3339(carp_clock_wall_ms(k.clock), 0, ts);
  /* Ready, but the node lifecycle controller has not taken its not-ready
   * taint off yet: no pod can land. */
  kit_apply(&k,
            "{apiVersion: v1, kind: Node, metadata: {name: n1},"
            " spec: {providerID: '%s', taints: [{key: karpenter.sh/"
            "unregistered, effect: NoExecute}, {key: "
            "node.kubernetes.io/not-ready, effect: NoSchedule}]},"
            " status: {capacity: {cpu: '2', memory: 4Gi, pods: '110'},"
            "  allocatable: {cpu: '2', memory: 4Gi, pods: '110'},"
            "  conditions: [{type: Ready, status: 'True', reason: "
            "KubeletReady, message: '', lastTransitionTime: '%s',"
            " lastHeartbeatTime: '%s'}]}}",
            pid, ts, ts);
  /* Registered waits for the taint to go (a few seconds on a cluster). */
  assert_string_equal(cond(&k, "c1", "Registered"), "Unknown");
  assert_int_equal(claim_writes(&k, "c1"), 2);
  kit_patch(&k, "Node", "n1", "{spec: {taints: []}}");
  assert_string_equal(cond(&k, "c1", "Registered"), "True");
  assert_string_equal(cond(&k, "c1", "Initialized"), "True");
  assert_int_equal(claim_writes(&k, "c1"), 3);
  kit_close(&k);
}

static void test_launch_failures_back_off_then_time_out(void **state)
{
  struct kit k;
  size_t calls;
  (void)state;
  setup(&k, 0);
  carp_fake_provider_fail(k.provider, "create", 1000, CARP_EIO, NULL);
  claim(&k, "c1", "");
  kit_start(&k);
  {
    const char *reason = NULL;
    assert_string_equal(
        kit_condition(&k, "NodeClaim", "c1", "Launched", &reason), "Unknown");
  }
  kit_advance(&k, 4 * MINUTE);
  assert_true(kit_exists(&k, "NodeClaim", "c1"));
  /* 1 s doubling: a handful of tries in four minutes, not hundreds. */
  calls = carp_fake_provider_calls(k.provider, "create");
  assert_true(calls >= 5 && calls <= 10);
  kit_advance(&k, 61 * SEC + 5 * SEC);
  assert_false(kit_exists(&k, "NodeClaim", "c1"));
  assert_int_equal(kit_events(&k, "LaunchTimeout"), 1);
  assert_true(
      kit_metric(&k, "karpenter_nodeclaims_disrupted_total",
                 (const char *const[]){"launch_timeout", "default", "on-demand",
                                       "", "forceful", NULL}) == 1);
  kit_close(&k);
}

static void test_insufficient_capacity_deletes_the_claim(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  carp_fake_provider_fail(k.provider, "create", 1, CARP_EINSUFFICIENT_CAPACITY,
                          NULL);
  claim(&k, "c1", "");
  kit_start(&k);
  assert_false(kit_exists(&k, "NodeClaim", "c1"));
  assert_int_equal(kit_events(&k, "InsufficientCapacityError"), 1);
  assert_int_equal(carp_fake_provider_calls(k.provider, "create"), 1);
  kit_close(&k);
}

static void test_registration_timeout(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  kit_advance(&k, 14 * MINUTE);
  assert_true(kit_exists(&k, "NodeClaim", "c1"));
  kit_advance(&k, 2 * MINUTE);
  /* Deleted; the finalizer holds it until its VM is gone. */
  assert_false(kit_exists(&k, "NodeClaim", "c1"));
  assert_int_equal(kit_events(&k, "RegistrationTimeout"), 1);
  assert_int_equal(carp_fake_provider_count(k.provider), 0);
  {
    const char *reason = NULL;
    assert_string_equal(pool_health(&k, &reason), "False");
    assert_string_equal(reason, "RegistrationFailed");
  }
  kit_close(&k);
}

/* --nodeclaim-launch-timeout and --nodeclaim-registration-timeout reach
 * the controller; the first word on the pool's registration health after
 * a reset stays (a later success does not undo it: only a change of the
 * NodePool or its class does, in the nodepool controller). */
static void test_timeouts_from_options(void **state)
{
  struct kit k;
  struct carp_lifecycle_options o = {.launch_timeout_ms = 90 * SEC,
                                     .registration_timeout_ms = 2 * MINUTE};
  const char *reason = NULL;
  (void)state;
  setup_with(&k, 0, &o);
  carp_fake_provider_fail(k.provider, "create", 1000, CARP_EIO, NULL);
  claim(&k, "c1", "");
  kit_start(&k);
  kit_advance(&k, 80 * SEC);
  assert_true(kit_exists(&k, "NodeClaim", "c1"));
  assert_null(pool_health(&k, &reason));
  kit_advance(&k, 20 * SEC);
  assert_false(kit_exists(&k, "NodeClaim", "c1"));
  assert_int_equal(kit_events(&k, "LaunchTimeout"), 1);
  assert_string_equal(pool_health(&k, &reason), "False");
  assert_string_not_equal(reason, "RegistrationFailed");

  /* Launched but never registered: gone after two minutes, not 15. */
  carp_fake_provider_fail(k.provider, "create", 0, 0, NULL);
  claim(&k, "c2", "");
  kit_advance(&k, 110 * SEC);
  assert_true(kit_exists(&k, "NodeClaim", "c2"));
  kit_advance(&k, 15 * SEC);
  assert_false(kit_exists(&k, "NodeClaim", "c2"));
  assert_int_equal(kit_events(&k, "RegistrationTimeout"), 1);

  claim(&k, "c3", "");
  kit_settle(&k);
  kubelet_joins(&k, "c3", "n3", 1);
  assert_string_equal(cond(&k, "c3", "Registered"), "True");
  assert_string_equal(pool_health(&k, &reason), "False");
  kit_close(&k);
}

static void test_node_deleted_takes_the_claim(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  kubelet_joins(&k, "c1", "n1", 1);
  kit_advance(&k, 30 * SEC);
  /* Someone removes the Node's finalizer and deletes it. */
  kit_patch(&k, "Node", "n1", "{metadata: {finalizers: []}}");
  kit_delete(&k, "Node", "n1");
  kit_advance(&k, 11 * SEC);
  assert_false(kit_exists(&k, "NodeClaim", "c1"));
  assert_int_equal(kit_events(&k, "NodeDeleted"), 1);
  assert_int_equal(carp_fake_provider_count(k.provider), 0);
  kit_close(&k);
}

static void test_finalize_node_then_vm_then_finalizer(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  kit_start(&k);
  kubelet_joins(&k, "c1", "n1", 1);
  kit_delete(&k, "NodeClaim", "c1");
  /* The Node goes first (its own finalizer is the termination
   * controller's, not running here): the VM stays until it is gone. */
  assert_true(kit_exists(&k, "NodeClaim", "c1"));
  assert_non_null(
      kit_str(&k, "Node", "n1", "metadata", "deletionTimestamp", NULL));
  kit_advance(&k, 10 * SEC);
  assert_int_equal(carp_fake_provider_count(k.provider), 1);
  assert_int_equal(
      kit_metric(&k, "karpenter_nodeclaims_termination_duration_seconds_count",
                 NULL),
      0);
  kit_patch(&k, "Node", "n1", "{metadata: {finalizers: []}}");
  kit_advance(&k, 10 * SEC);
  assert_false(kit_exists(&k, "Node", "n1"));
  assert_int_equal(carp_fake_provider_count(k.provider), 0);
  assert_false(kit_exists(&k, "NodeClaim", "c1"));
  assert_true(kit_metric(&k, "karpenter_nodeclaims_terminated_total",
                         (const char *const[]){"default", "on-demand", "zone-a",
                                               NULL}) == 1);
  /* Deleted at 0, the Node held it 10 s: between 8 and 16 s to the
   * finalizer; the VM went after its Node did, within a few seconds. */
  assert_int_equal(
      kit_metric(&k, "karpenter_nodeclaims_termination_duration_seconds_count",
                 CARP_VALUES("nodepool=\"default\"")),
      1);
  assert_int_equal(
      kit_metric(&k, "karpenter_nodeclaims_termination_duration_seconds_bucket",
                 CARP_VALUES("le=\"8\"")),
      0);
  assert_int_equal(
      kit_metric(&k, "karpenter_nodeclaims_termination_duration_seconds_bucket",
                 CARP_VALUES("le=\"16\"")),
      1);
  assert_int_equal(
      kit_metric(&k,
                 "karpenter_nodeclaims_instance_termination_duration_seconds_"
                 "count",
                 CARP_VALUES("nodepool=\"default\"")),
      1);
  assert_int_equal(
      kit_metric(&k,
                 "karpenter_nodeclaims_instance_termination_duration_seconds_"
                 "bucket",
                 CARP_VALUES("le=\"8\"")),
      1);
  kit_close(&k);
}

static void test_adopted_claim_gets_finalizer_before_launch(void **state)
{
  struct kit k;
  char pid[128];
  const char *uid;
  (void)state;
  setup(&k, 0);
  claim(&k, "c1", "");
  uid = kit_str(&k, "NodeClaim", "c1", "metadata", "uid", NULL);
  assert_non_null(uid);
  assert_int_equal(carp_fake_provider_add_instance(k.provider, "c1", uid,
                                                   "c1.2VCPU-4GB", "zone-a",
                                                   pid, sizeof(pid)),
                   0);
  kit_patch(&k, "NodeClaim", "c1",
            "{metadata: {annotations: {carpenter.dev/vm: fake/zone-a/%s}}}",
            strrchr(pid, '/') + 1);
  kit_start(&k);
  assert_true(has_finalizer(&k, "NodeClaim", "c1"));
  assert_string_equal(cond(&k, "c1", "Launched"), "True");
  kit_close(&k);
}

static void test_leader_loss_stops_a_launch_midway(void **state)
{
  struct kit k;
  size_t writes;
  (void)state;
  setup(&k, 30 * SEC);
  claim(&k, "c1", "");
  kit_start(&k);
  kit_advance(&k, 5 * SEC);
  writes = claim_writes(&k, "c1");
  kit_set_leader(&k, 0);
  kit_advance(&k, 2 * MINUTE);
  /* The create finished or was cancelled; nothing was written for it. */
  assert_int_equal(claim_writes(&k, "c1"), writes);
  assert_null(cond(&k, "c1", "Launched"));
  /* The next leader resumes the VM the annotation names. */
  kit_set_leader(&k, 1);
  kit_advance(&k, 2 * MINUTE);
  assert_string_equal(cond(&k, "c1", "Launched"), "True");
  assert_true(carp_fake_provider_count(k.provider) <= 2);
  kit_close(&k);
}

static void test_close_with_a_launch_in_flight(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 60 * SEC);
  claim(&k, "c1", "");
  kit_start(&k);
  kit_advance(&k, 1 * SEC);
  assert_null(cond(&k, "c1", "Launched"));
  kit_close(&k); /* the sanitizer build checks nothing leaks */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_records_vm_finalizer_and_labels_first),
      cmocka_unit_test(test_ready_node_costs_three_claim_writes),
      cmocka_unit_test(test_not_ready_node_initializes_when_ready),
      cmocka_unit_test(test_not_ready_node_registers_after_the_hold),
      cmocka_unit_test(test_startup_taints_hold_initialization),
      cmocka_unit_test(test_not_ready_taint_holds_initialization),
      cmocka_unit_test(test_launch_failures_back_off_then_time_out),
      cmocka_unit_test(test_insufficient_capacity_deletes_the_claim),
      cmocka_unit_test(test_registration_timeout),
      cmocka_unit_test(test_timeouts_from_options),
      cmocka_unit_test(test_node_deleted_takes_the_claim),
      cmocka_unit_test(test_finalize_node_then_vm_then_finalizer),
      cmocka_unit_test(test_adopted_claim_gets_finalizer_before_launch),
      cmocka_unit_test(test_leader_loss_stops_a_launch_midway),
      cmocka_unit_test(test_close_with_a_launch_in_flight),
      cmocka_unit_test(test_registration_waits_for_the_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
