/* test_capacitybuffer.c: CapacityBuffers reconcile by reconcile on the
 * fake clock (test/kit), with the provisioner and the disruption
 * controller wired to the buffer controller as controller/app.c wires
 * them: room launched for a buffer's chunks, the status conditions as the
 * room goes from new to launching to there, room refilled when real pods
 * take it, limits (the buffer's and the NodePool's), scalableRef with a
 * percentage, what the buffer cannot be (missing template, invalid spec,
 * too many chunks) said in ReadyForProvisioning, the room kept by
 * emptiness and by consolidation, and a cluster without the API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/capacitybuffer_controller.h"
#include "carpenter/disruption.h"
#include "carpenter/json.h"
#include "carpenter/provisioner.h"
#include "kit.h"

#define SEC 1000ULL

struct world {
  struct kit k;
  struct carp_controller *prov;
  struct carp_controller *buffers;
};

static void changed(void *arg)
{
  struct world *w = arg;
  carp_provisioner_trigger(w->prov);
}

static void placed(void *arg)
{
  struct world *w = arg;
  carp_capacitybuffer_controller_placed(w->buffers);
}

/* with_disruption: the disruption controller too (1 s poll, 2 s
 * validation). pool_spec NULL: no NodePool yet. */
static void setup(struct world *w, const char *pool_spec, int with_disruption)
{
  struct carp_provisioner_options po = {.batch_idle_ms = 1 * SEC,
                                        .batch_max_ms = 10 * SEC};
  struct carp_capacitybuffer_controller_options bo;
  struct kit *k = &w->k;
  memset(&bo, 0, sizeof(bo));
  po.on_buffers_placed = placed;
  po.on_buffers_placed_arg = w;
  bo.on_change = changed;
  bo.on_change_arg = w;
  kit_init(k, NULL);
  assert_int_equal(carp_provisioner_new(&k->env, &po, &w->prov), 0);
  kit_add(k, w->prov);
  assert_int_equal(
      carp_capacitybuffer_controller_new(&k->env, &bo, &w->buffers), 0);
  kit_add(k, w->buffers);
  if (with_disruption) {
    struct carp_disruption_options o = {.poll_interval_ms = 1 * SEC,
                                        .validation_delay_ms = 2 * SEC,
                                        .command_timeout_ms = 60 * SEC};
    struct carp_controller *c;
    assert_int_equal(carp_disruption_new(&k->env, &o, &c), 0);
    kit_add(k, c);
    assert_int_equal(carp_disruption_conditions_new(&k->env, &c), 0);
    kit_add(k, c);
  }
  kit_nodeclass(k, "default");
  if (pool_spec)
    kit_nodepool(k, "default", pool_spec);
}

static void template(struct kit *k, const char *name, int cpu_milli)
{
  kit_apply(k,
            "{apiVersion: v1, kind: PodTemplate, metadata: {name: %s, "
            "namespace: default}, template: {metadata: {labels: {app: "
            "headroom}}, spec: {containers: [{name: pause, image: pause, "
            "resources: {requests: {cpu: %dm, memory: 64Mi}}}]}}}",
            name, cpu_milli);
}

static void buffer(struct kit *k, const char *name, const char *spec)
{
  kit_apply(k,
            "{apiVersion: autoscaling.x-k8s.io/v1beta1, kind: CapacityBuffer,"
            " metadata: {name: %s, namespace: default}, spec: {%s}}",
            name, spec);
}

static size_t creates(struct kit *k)
{
  return kit_writes(k, "POST", "/nodeclaims");
}

static const char *cond(struct kit *k, const char *buf, const char *type,
                        const char **reason)
{
  char key[256];
  snprintf(key, sizeof(key), "default/%s", buf);
  return kit_condition(k, "CapacityBuffer", key, type, reason);
}

static const char *cond_message(struct kit *k, const char *buf,
                                const char *type)
{
  static char out[1024];
  char key[256];
  yajl_val v, conds;
  size_t i;
  snprintf(key, sizeof(key), "default/%s", buf);
  v = kit_get(k, "CapacityBuffer", key);
  conds = carp_json_arr(v, "status", "conditions", NULL);
  out[0] = '\0';
  for (i = 0; conds && i < carp_json_len(conds); i++) {
    yajl_val c = carp_json_at(conds, i);
    const char *t = carp_json_str(c, "type", NULL);
    if (t && !strcmp(t, type))
      snprintf(out, sizeof(out), "%s", carp_json_str(c, "message", NULL));
  }
  carp_json_free(v);
  return out;
}

static int64_t status_replicas(struct kit *k, const char *buf)
{
  char key[256];
  int64_t n = -1;
  yajl_val v;
  snprintf(key, sizeof(key), "default/%s", buf);
  v = kit_get(k, "CapacityBuffer", key);
  if (carp_json_int(v, &n, "status", "replicas", NULL))
    n = -1;
  carp_json_free(v);
  return n;
}

/* Every NodeClaim not yet launched becomes a Ready node of type. */
static void up_all(struct kit *k, const char *type)
{
  struct carp_objmeta *const *v;
  char names[16][64];
  size_t n, i, got = 0;
  v = carp_cluster_nodeclaims_of_pool(k->cluster, "default", &n);
  for (i = 0; i < n && got < 16; i++)
    if (!((const struct carp_nodeclaim *)v[i])->status.provider_id)
      snprintf(names[got++], 64, "%s", v[i]->name);
  for (i = 0; i < got; i++)
    kit_node_up(k, names[i], "default", type);
}

static void test_room_launched_then_fits(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  const char *reason = NULL;
  size_t nv;
  (void)state;
  setup(&w, "", 0);
  template(k, "chunk", 500);
  buffer(k, "room", "podTemplateRef: {name: chunk}, replicas: 4");
  kit_start(k);
  kit_advance(k, 2 * SEC);
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 4);
  assert_string_equal(cond(k, "room", "ReadyForProvisioning", &reason), "True");
  assert_string_equal(reason, "Resolved");
  assert_int_equal(status_replicas(k, "room"), 4);
  assert_string_equal(kit_str(k, "CapacityBuffer", "default/room", "status",
                              "podTemplateRef", "name", NULL),
                      "chunk");
  assert_string_equal(kit_str(k, "CapacityBuffer", "default/room", "status",
                              "provisioningStrategy", NULL),
                      "buffer.x-k8s.io/active-capacity");
  /* Room launched for the chunks, no events on pods that do not exist. */
  assert_true(creates(k) >= 1);
  assert_int_equal(kit_events(k, "Nominated"), 0);
  assert_int_equal(kit_events(k, "FailedScheduling"), 0);
  assert_string_equal(cond(k, "room", "Provisioning", &reason), "False");
  assert_string_equal(reason, "RequiresNewCapacity");
  /* While it launches, nothing more. */
  {
    size_t before = creates(k);
    kit_advance(k, 30 * SEC);
    assert_int_equal(creates(k), before);
    assert_string_equal(cond(k, "room", "Provisioning", &reason), "False");
    assert_non_null(strstr(cond_message(k, "room", "Provisioning"),
                           "on nodes being launched"));
  }
  up_all(k, "c1.4VCPU-8GB");
  kit_advance(k, 15 * SEC);
  assert_string_equal(cond(k, "room", "Provisioning", &reason), "True");
  assert_string_equal(reason, "FitsExistingCapacity");
  assert_string_equal(cond_message(k, "room", "Provisioning"),
                      "All 4 virtual pods fit on existing capacity");
  assert_int_equal(
      kit_metric(k, "carpenter_capacitybuffer_virtual_pods",
                 (const char *const[]){"placement=\"existing\"", NULL}),
      4);
  kit_close(k);
}

static void test_real_pods_take_room_refilled(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  const char *reason = NULL;
  size_t before;
  (void)state;
  setup(&w, "", 0);
  template(k, "chunk", 500);
  buffer(k, "room", "podTemplateRef: {name: chunk}, replicas: 4");
  kit_node(k, "n1", "default", "c1.4VCPU-8GB");
  kit_start(k);
  kit_advance(k, 15 * SEC);
  /* The room is there already: nothing launched. */
  assert_int_equal(creates(k), 0);
  assert_string_equal(cond(k, "room", "Provisioning", &reason), "True");
  /* Real pods land in the room (the kube-scheduler binds them at once:
   * no VM boot in their path); the room is launched again. */
  kit_pod(k, "default", "w1", "n1", 1500, "");
  kit_pod(k, "default", "w2", "n1", 1500, "");
  before = creates(k);
  kit_advance(k, 3 * SEC);
  assert_true(creates(k) > before);
  assert_string_equal(cond(k, "room", "Provisioning", &reason), "False");
  assert_string_equal(reason, "RequiresNewCapacity");
  up_all(k, "c1.4VCPU-8GB");
  kit_advance(k, 15 * SEC);
  assert_string_equal(cond(k, "room", "Provisioning", &reason), "True");
  kit_close(k);
}

static void test_pool_limit_holds(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  const char *reason = NULL;
  struct carp_resources usage;
  int64_t nodes;
  (void)state;
  setup(&w, "limits: {cpu: '2'}", 0);
  template(k, "chunk", 1000);
  buffer(k, "room", "podTemplateRef: {name: chunk}, replicas: 4");
  kit_start(k);
  kit_advance(k, 60 * SEC);
  /* Room for what the limit allows, no more; the status says why the
   * rest has none. */
  assert_true(creates(k) >= 1);
  carp_cluster_nodepool_usage(k->cluster, "default", &usage, &nodes);
  assert_true(usage.cpu <= 2000);
  carp_resources_cleanup(&usage);
  assert_string_equal(cond(k, "room", "Provisioning", &reason), "False");
  assert_string_equal(reason, "RequiresNewCapacity");
  assert_non_null(
      strstr(cond_message(k, "room", "Provisioning"), "fit nowhere: "));
  assert_non_null(strstr(cond_message(k, "room", "Provisioning"), "limit"));
  assert_int_equal(kit_events(k, "FailedScheduling"), 0);
  kit_close(k);
}

static void test_buffer_limits_and_scalable_ref(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  const char *reason = NULL;
  (void)state;
  setup(&w, "", 0);
  template(k, "chunk", 500);
  /* limits alone: as many chunks as fit (1.6 CPU / 500m = 3). */
  buffer(k, "capped", "podTemplateRef: {name: chunk}, limits: {cpu: 1600m}");
  /* Both: the smaller. */
  buffer(k, "both",
         "podTemplateRef: {name: chunk}, replicas: 5, limits: {cpu: '1'}");
  kit_apply(k, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, "
               "namespace: default}, spec: {replicas: 5, selector: "
               "{matchLabels: {app: web}}, template: {metadata: {labels: "
               "{app: web}}, spec: {containers: [{name: c, image: x, "
               "resources: {requests: {cpu: 250m}}}]}}}}");
  /* 30 % of 5 replicas, rounded up; replicas 1 is smaller. */
  buffer(k, "share",
         "scalableRef: {apiGroup: apps, kind: Deployment, name: web}, "
         "percentage: 30, replicas: 1");
  kit_start(k);
  kit_advance(k, 2 * SEC);
  assert_int_equal(status_replicas(k, "capped"), 3);
  assert_int_equal(status_replicas(k, "both"), 2);
  assert_int_equal(status_replicas(k, "share"), 2);
  assert_string_equal(cond(k, "share", "ReadyForProvisioning", &reason),
                      "True");
  /* No PodTemplate for a scalableRef. */
  assert_null(kit_str(k, "CapacityBuffer", "default/share", "status",
                      "podTemplateRef", "name", NULL));
  /* The Deployment grows: seen at the next resolution. */
  kit_patch(k, "Deployment", "default/web", "{spec: {replicas: 10}}");
  kit_advance(k, 31 * SEC);
  assert_int_equal(status_replicas(k, "share"), 3);
  kit_close(k);
}

static void test_what_a_buffer_cannot_be(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  const char *reason = NULL;
  size_t nv;
  (void)state;
  setup(&w, "", 0);
  template(k, "chunk", 500);
  buffer(k, "missing", "podTemplateRef: {name: nope}, replicas: 2");
  buffer(k, "gone", "scalableRef: {kind: Deployment, name: nope}, replicas: 2");
  buffer(k, "both",
         "podTemplateRef: {name: chunk}, replicas: 2, "
         "scalableRef: {kind: Deployment, name: web}");
  buffer(k, "bare", "podTemplateRef: {name: chunk}");
  buffer(k, "share",
         "podTemplateRef: {name: chunk}, replicas: 1, "
         "percentage: 10");
  buffer(k, "passive",
         "podTemplateRef: {name: chunk}, replicas: 1, "
         "provisioningStrategy: example.com/other");
  buffer(k, "kind", "scalableRef: {kind: DaemonSet, name: ds}, replicas: 1");
  buffer(k, "nothing", "replicas: 1");
  buffer(k, "huge", "podTemplateRef: {name: chunk}, limits: {cpu: '100000'}");
  kit_start(k);
  kit_advance(k, 2 * SEC);
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 0);
  assert_int_equal(creates(k), 0);
  assert_string_equal(cond(k, "missing", "ReadyForProvisioning", &reason),
                      "False");
  assert_string_equal(reason, "PodTemplateNotFound");
  assert_string_equal(cond_message(k, "missing", "ReadyForProvisioning"),
                      "PodTemplate default/nope not found");
  assert_string_equal(cond(k, "gone", "ReadyForProvisioning", &reason),
                      "False");
  assert_string_equal(reason, "ScalableRefNotFound");
  assert_string_equal(cond(k, "both", "ReadyForProvisioning", &reason),
                      "False");
  assert_string_equal(reason, "ValidationFailed");
  assert_non_null(strstr(cond_message(k, "both", "ReadyForProvisioning"),
                         "You must define either PodTemplateRef or "
                         "ScalableRef, but not both"));
  assert_non_null(strstr(cond_message(k, "bare", "ReadyForProvisioning"),
                         "If podTemplateRef is set, replicas or limits must "
                         "also be set"));
  assert_non_null(strstr(cond_message(k, "share", "ReadyForProvisioning"),
                         "percentage applies only with scalableRef"));
  assert_non_null(strstr(cond_message(k, "passive", "ReadyForProvisioning"),
                         "spec.provisioningStrategy: Unsupported value"));
  assert_non_null(strstr(cond_message(k, "kind", "ReadyForProvisioning"),
                         "spec.scalableRef.kind: Unsupported value"));
  assert_string_equal(cond_message(k, "nothing", "ReadyForProvisioning"),
                      "Neither podTemplateRef nor scalableRef is set");
  assert_string_equal(cond(k, "huge", "ReadyForProvisioning", &reason),
                      "False");
  assert_string_equal(reason, "TooManyReplicas");
  assert_string_equal(cond(k, "missing", "Provisioning", &reason), "False");
  assert_string_equal(reason, "NotReadyForProvisioning");
  /* The template appears: the buffer resolves at its next look. */
  template(k, "nope", 500);
  kit_advance(k, 31 * SEC);
  assert_string_equal(cond(k, "missing", "ReadyForProvisioning", &reason),
                      "True");
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 2);
  kit_close(k);
}

static void test_zero_replicas_and_deletion(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  const char *reason = NULL;
  size_t nv;
  (void)state;
  setup(&w, "", 0);
  template(k, "chunk", 500);
  buffer(k, "room", "podTemplateRef: {name: chunk}, replicas: 0");
  kit_start(k);
  kit_advance(k, 2 * SEC);
  assert_string_equal(cond(k, "room", "Provisioning", &reason), "False");
  assert_string_equal(reason, "BufferEmpty");
  kit_patch(k, "CapacityBuffer", "default/room", "{spec: {replicas: 2}}");
  kit_advance(k, 2 * SEC);
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 2);
  kit_delete(k, "CapacityBuffer", "default/room");
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 0);
  kit_close(k);
}

static void test_emptiness_keeps_the_room(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  size_t nv;
  (void)state;
  setup(&w, "disruption: {consolidateAfter: 0s, budgets: [{nodes: '100%'}]}",
        1);
  template(k, "chunk", 500);
  buffer(k, "room", "podTemplateRef: {name: chunk}, replicas: 4");
  kit_node(k, "n1", "default", "c1.4VCPU-8GB");
  kit_start(k);
  kit_advance(k, 60 * SEC);
  /* n1 is empty, but it is the buffer's room. */
  assert_false(kit_str(k, "NodeClaim", "n1", "metadata", "deletionTimestamp",
                       NULL) != NULL);
  assert_true(kit_events(k, "Unconsolidatable") >= 1);
  /* Without the buffer it goes. */
  kit_delete(k, "CapacityBuffer", "default/room");
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 0);
  kit_advance(k, 30 * SEC);
  assert_non_null(
      kit_str(k, "NodeClaim", "n1", "metadata", "deletionTimestamp", NULL));
  kit_close(k);
}

static void test_consolidation_keeps_the_room(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  (void)state;
  setup(&w, NULL, 1);
  /* One instance type: no cheaper replacement, only deletes. */
  kit_apply(k, "{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: "
               "{name: default}, spec: {template: {spec: {nodeClassRef: "
               "{group: carpenter.dev, kind: ProxmoxNodeClass, name: default}, "
               "requirements: [{key: node.kubernetes.io/instance-type, "
               "operator: In, values: [c1.4VCPU-8GB]}]}}, disruption: "
               "{consolidateAfter: 0s, budgets: [{nodes: '100%%'}]}}, status: "
               "{conditions: [{type: Ready, status: 'True', reason: Ready, "
               "message: '', lastTransitionTime: '2026-01-01T00:00:00Z'}]}}");
  template(k, "chunk", 500);
  /* The buffer's 2 CPU fit beside one pod, not beside both. */
  buffer(k, "room", "podTemplateRef: {name: chunk}, replicas: 4");
  kit_node(k, "n1", "default", "c1.4VCPU-8GB");
  kit_node(k, "n2", "default", "c1.4VCPU-8GB");
  kit_pod(k, "default", "app", "n2", 1500,
          "ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: "
          "app, uid: u-rs, controller: true}]");
  kit_pod(k, "default", "filler", "n1", 1000,
          "ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: "
          "filler, uid: u-rs2, controller: true}]");
  kit_start(k);
  kit_advance(k, 60 * SEC);
  /* Moving either pod would take the buffer's room: both nodes stay. */
  assert_null(
      kit_str(k, "NodeClaim", "n2", "metadata", "deletionTimestamp", NULL));
  assert_null(
      kit_str(k, "NodeClaim", "n1", "metadata", "deletionTimestamp", NULL));
  assert_int_equal(kit_writes(k, "DELETE", "/nodeclaims/"), 0);
  /* Without the buffer, one node's pod moves to the other, which goes. */
  kit_delete(k, "CapacityBuffer", "default/room");
  kit_advance(k, 30 * SEC);
  assert_int_equal(kit_writes(k, "DELETE", "/nodeclaims/"), 1);
  kit_close(k);
}

static void test_leadership(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  size_t nv;
  (void)state;
  setup(&w, "", 0);
  template(k, "chunk", 500);
  buffer(k, "a", "podTemplateRef: {name: chunk}, replicas: 2");
  buffer(k, "b", "podTemplateRef: {name: chunk}, replicas: 3");
  kit_start(k);
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 5);
  /* A follower keeps no room; the next lead resolves every buffer. */
  kit_set_leader(k, 0);
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 0);
  kit_set_leader(k, 1);
  kit_advance(k, 1 * SEC);
  carp_cluster_virtual_pods(k->cluster, &nv);
  assert_int_equal(nv, 5);
  kit_close(k);
}

static void test_api_absent(void **state)
{
  struct world w;
  struct kit *k = &w.k;
  (void)state;
  setup(&w, "", 0);
  /* A cluster without the CRD answers 404 to the list. */
  carp_kubemem_fail(k->api, "GET", "/capacitybuffers", 404, -1);
  kit_start(k);
  assert_true(carp_informer_absent(k->cluster->capacitybuffers));
  assert_true(carp_cluster_synced(k->cluster));
  /* Carpenter provisions as usual. */
  kit_pod(k, "default", "p", NULL, 500, "");
  kit_advance(k, 2 * SEC);
  assert_int_equal(creates(k), 1);
  kit_close(k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_room_launched_then_fits),
      cmocka_unit_test(test_real_pods_take_room_refilled),
      cmocka_unit_test(test_pool_limit_holds),
      cmocka_unit_test(test_buffer_limits_and_scalable_ref),
      cmocka_unit_test(test_what_a_buffer_cannot_be),
      cmocka_unit_test(test_zero_replicas_and_deletion),
      cmocka_unit_test(test_emptiness_keeps_the_room),
      cmocka_unit_test(test_consolidation_keeps_the_room),
      cmocka_unit_test(test_leadership),
      cmocka_unit_test(test_api_absent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
