/* test_controller.c: the pieces every reconcile-level test stands on -
 * the fake clock, the in-memory API server behind the real REST client
 * and informers, and the controller skeleton (queue, leadership, writes,
 * close, metrics) - exercised through a toy controller that taints Nodes
 * labelled example.com/taint=yes and re-checks them every minute. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "kit.h"

/* ---- the fake clock ---- */

struct fired {
  int order[16];
  int n;
  uint64_t at[16];
};

struct tagged {
  struct carp_timer t;
  struct fired *log;
  int tag;
};

static void on_tagged(struct carp_timer *t)
{
  struct tagged *x = carp_container_of(t, struct tagged, t);
  x->log->at[x->log->n] = carp_clock_mono_ms(t->clock);
  x->log->order[x->log->n++] = x->tag;
}

static void closed_count(struct carp_timer *t)
{
  (*(int *)t->data)++;
}

static void test_fake_clock_order(void **state)
{
  uv_loop_t loop;
  struct carp_clock *c;
  struct tagged a, b, r;
  struct fired log = {0};
  int closed = 0;
  uint64_t start;
  (void)state;
  uv_loop_init(&loop);
  c = carp_clock_fake_new(&loop, 1000);
  start = carp_clock_mono_ms(c);
  a.log = b.log = r.log = &log;
  a.tag = 1;
  b.tag = 2;
  r.tag = 3;
  carp_timer_init(c, &a.t);
  carp_timer_init(c, &b.t);
  carp_timer_init(c, &r.t);
  carp_timer_start(&b.t, on_tagged, 300, 0);
  carp_timer_start(&a.t, on_tagged, 100, 0);
  carp_timer_start(&r.t, on_tagged, 150, 150);
  /* Nothing moves by itself. */
  assert_int_equal(carp_clock_fake_fire_due(c), 0);
  assert_int_equal(carp_clock_fake_next(c), 100);
  assert_int_equal(carp_clock_fake_advance(c, 99), 0);
  assert_int_equal(carp_clock_fake_advance(c, 301), 4);
  /* a at 100, r at 150, b at 300 and r again at 300 (started first). */
  assert_int_equal(log.n, 4);
  assert_int_equal(log.order[0], 1);
  assert_int_equal(log.order[1], 3);
  assert_int_equal(log.order[2], 2);
  assert_int_equal(log.order[3], 3);
  assert_int_equal(log.at[0] - start, 100);
  assert_int_equal(log.at[1] - start, 150);
  assert_int_equal(log.at[3] - start, 300);
  assert_int_equal(carp_clock_wall_ms(c), 1000 + 400);
  carp_timer_stop(&r.t);
  assert_false(carp_timer_is_active(&r.t));
  assert_int_equal(carp_clock_fake_advance(c, 10000), 0);
  a.t.data = b.t.data = r.t.data = &closed;
  carp_timer_close(&a.t, closed_count);
  carp_timer_close(&b.t, closed_count);
  carp_timer_close(&r.t, closed_count);
  assert_int_equal(closed, 0); /* close callbacks are deferred */
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(closed, 3);
  assert_int_equal(uv_loop_close(&loop), 0);
  carp_clock_free(c);
}

/* ---- the in-memory API server through the REST client ---- */

struct reply {
  int done;
  int err;
  char rv[32];
};

static void on_reply(const struct carp_kube_result *res, void *arg)
{
  struct reply *r = arg;
  const char *rv =
      carp_json_str(res->body, "metadata", "resourceVersion", NULL);
  r->done = 1;
  r->err = res->err;
  snprintf(r->rv, sizeof(r->rv), "%s", rv ? rv : "");
}

static void wait_reply(struct kit *k, struct reply *r)
{
  kit_settle(k);
  assert_true(r->done);
}

static void test_kubemem_semantics(void **state)
{
  struct kit k;
  struct carp_kube_ref ref = carp_ref_node("n1");
  struct carp_kube_delete_options del = {.grace_seconds = -1};
  struct reply r = {0};
  const char *patch_stale = "{\"metadata\":{\"resourceVersion\":\"1\","
                            "\"labels\":{\"a\":\"b\"}}}";
  char body[256];
  (void)state;
  kit_init(&k, NULL);
  kit_apply(&k, "{apiVersion: v1, kind: Node, metadata: {name: n1,"
                " finalizers: [example.com/hold]}, spec: {},"
                " status: {conditions: [{type: Ready, status: 'True'}]}}");
  assert_non_null(kit_str(&k, "Node", "n1", "metadata", "uid", NULL));
  assert_string_equal(
      kit_str(&k, "Node", "n1", "metadata", "creationTimestamp", NULL),
      "2026-01-01T00:00:00Z");
  /* A stale precondition is a conflict. */
  kit_patch(&k, "Node", "n1", "{metadata: {labels: {x: y}}}");
  carp_kube_patch(k.kube, &ref, CARP_PATCH_MERGE, patch_stale,
                  strlen(patch_stale), 1, on_reply, &r);
  wait_reply(&k, &r);
  assert_int_equal(r.err, CARP_ECONFLICT);
  /* With the current version it applies; status is kept apart. */
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"resourceVersion\":\"%s\",\"labels\":{\"a\":"
           "\"b\"}},\"status\":{\"phase\":\"x\"}}",
           kit_str(&k, "Node", "n1", "metadata", "resourceVersion", NULL));
  memset(&r, 0, sizeof(r));
  carp_kube_patch(k.kube, &ref, CARP_PATCH_MERGE, body, strlen(body), 1,
                  on_reply, &r);
  wait_reply(&k, &r);
  assert_int_equal(r.err, 0);
  assert_string_equal(
      kit_str(&k, "Node", "n1", "metadata", "labels", "a", NULL), "b");
  assert_null(kit_str(&k, "Node", "n1", "status", "phase", NULL));
  /* A finalizer holds a deleted object with its deletionTimestamp. */
  memset(&r, 0, sizeof(r));
  carp_kube_delete(k.kube, &ref, &del, on_reply, &r);
  wait_reply(&k, &r);
  assert_int_equal(r.err, 0);
  assert_non_null(
      kit_str(&k, "Node", "n1", "metadata", "deletionTimestamp", NULL));
  /* Removing the last finalizer deletes it. */
  kit_patch(&k, "Node", "n1", "{metadata: {finalizers: null}}");
  assert_false(kit_exists(&k, "Node", "n1"));
  /* Injected failures are answered as the server would. */
  carp_kubemem_fail(k.api, "DELETE", "/nodes/", 500, 1);
  kit_apply(&k, "{apiVersion: v1, kind: Node, metadata: {name: n1}}");
  memset(&r, 0, sizeof(r));
  carp_kube_delete(k.kube, &ref, &del, on_reply, &r);
  wait_reply(&k, &r);
  assert_int_not_equal(r.err, 0);
  assert_true(kit_exists(&k, "Node", "n1"));
  assert_int_equal(kit_writes(&k, "DELETE", "/nodes/n1"), 1);
  kit_close(&k);
}

static void test_kubemem_eviction_pdb(void **state)
{
  struct kit k;
  struct reply r = {0};
  (void)state;
  kit_init(&k, NULL);
  kit_pod(&k, "default", "web-1", "n1", 100, "labels: {app: web}");
  kit_pod(&k, "default", "web-2", "n1", 100, "labels: {app: web}");
  kit_apply(&k, "{apiVersion: policy/v1, kind: PodDisruptionBudget,"
                " metadata: {name: web, namespace: default},"
                " spec: {selector: {matchLabels: {app: web}}, maxUnavailable: "
                "1},"
                " status: {disruptionsAllowed: 1}}");
  carp_kube_evict(k.kube, "default", "web-1", NULL, on_reply, &r);
  wait_reply(&k, &r);
  assert_int_equal(r.err, 0);
  assert_false(kit_exists(&k, "Pod", "default/web-1"));
  memset(&r, 0, sizeof(r));
  carp_kube_evict(k.kube, "default", "web-2", NULL, on_reply, &r);
  wait_reply(&k, &r);
  assert_int_equal(r.err, CARP_ETOOMANY);
  assert_true(kit_exists(&k, "Pod", "default/web-2"));
  kit_close(&k);
}

/* ---- the skeleton, through a toy controller ---- */

#define TOY_TAINT  "example.com/taint"
#define RECHECK_MS (60 * 1000)

struct toy {
  struct carp_controller base;
  int reconciles;
  int freed;
  int *freed_flag;
};

static void toy_written(struct carp_controller *c, const char *key,
                        const struct carp_kube_result *res, void *arg)
{
  (void)arg;
  carp_write_done(c, key, res);
}

static void toy_reconcile(struct carp_controller *c, const char *key)
{
  struct toy *t = carp_container_of(c, struct toy, base);
  const struct carp_node *n = carp_cluster_node(c->env.cluster, key);
  struct carp_taint taint = {
      .key = TOY_TAINT, .value = "", .effect = CARP_EFFECT_NO_SCHEDULE};
  const char *want;
  t->reconciles++;
  if (!n) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  want = carp_kvset_get(n->meta.labels, "example.com/taint");
  switch (carp_write_node_taint(c, key, n, &taint, want && !strcmp(want, "yes"),
                                toy_written, NULL)) {
  case 0:
    return; /* the write ends it */
  case 1:
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER, RECHECK_MS);
    return;
  default:
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
  }
}

static void toy_activated(struct carp_controller *c)
{
  carp_controller_enqueue_all(c, c->env.cluster->nodes);
}

static void toy_free(struct carp_controller *c)
{
  struct toy *t = carp_container_of(c, struct toy, base);
  if (t->freed_flag)
    *t->freed_flag = 1;
  carp_free(t);
}

static const struct carp_controller_def toy_def = {
    .name = "toy",
    .log_module = "toy",
    .reconcile = toy_reconcile,
    .activated = toy_activated,
    .free = toy_free,
};

static struct toy *toy_new(struct kit *k)
{
  struct toy *t = CARP_NEW(struct toy);
  assert_int_equal(carp_controller_init(&t->base, &k->env, &toy_def), 0);
  carp_controller_watch(&t->base, k->cluster->nodes, carp_controller_map_name);
  return t;
}

static void test_skeleton_reconciles_and_rechecks(void **state)
{
  struct kit k;
  struct toy *t;
  int freed = 0;
  (void)state;
  kit_init(&k, NULL);
  t = toy_new(&k);
  t->freed_flag = &freed;
  kit_add(&k, &t->base);
  kit_apply(&k, "{apiVersion: v1, kind: Node, metadata: {name: n1, labels: "
                "{example.com/taint: 'yes'}}}");
  kit_apply(&k, "{apiVersion: v1, kind: Node, metadata: {name: n2}}");
  /* Not leading yet: nothing happens. */
  kit_settle(&k);
  assert_int_equal(t->reconciles, 0);
  kit_start(&k);
  assert_true(kit_node_tainted(&k, "n1", TOY_TAINT));
  assert_false(kit_node_tainted(&k, "n2", TOY_TAINT));
  assert_int_equal(kit_writes(&k, "PATCH", "/nodes/n1"), 1);
  assert_int_equal(kit_writes(&k, "PATCH", "/nodes/n2"), 0);
  /* A label change is an event: the taint follows. */
  kit_patch(&k, "Node", "n1", "{metadata: {labels: {example.com/taint: no}}}");
  assert_false(kit_node_tainted(&k, "n1", TOY_TAINT));
  /* The recheck runs after its minute, not before. */
  {
    int before = t->reconciles;
    kit_advance(&k, RECHECK_MS - 1000);
    assert_int_equal(t->reconciles, before);
    kit_advance(&k, 2000);
    assert_true(t->reconciles > before);
  }
  assert_true(kit_metric(&k, "controller_runtime_reconcile_total",
                         CARP_VALUES("controller=\"toy\"",
                                     "result=\"requeue_after\"")) >= 2);
  assert_true(kit_metric(&k, "controller_runtime_reconcile_time_seconds_count",
                         CARP_VALUES("controller=\"toy\"")) >= 4);
  assert_int_equal(kit_metric(&k,
                              "controller_runtime_max_concurrent_reconciles",
                              CARP_VALUES("controller=\"toy\"")),
                   1);
  kit_close(&k);
  assert_true(freed);
}

static void test_skeleton_leader_loss_stops_writes(void **state)
{
  struct kit k;
  struct toy *t;
  (void)state;
  kit_init(&k, NULL);
  t = toy_new(&k);
  kit_add(&k, &t->base);
  kit_start(&k);
  kit_set_leader(&k, 0);
  kit_apply(&k, "{apiVersion: v1, kind: Node, metadata: {name: n3, labels: "
                "{example.com/taint: 'yes'}}}");
  kit_advance(&k, 10 * RECHECK_MS);
  assert_false(kit_node_tainted(&k, "n3", TOY_TAINT));
  assert_int_equal(kit_writes(&k, "PATCH", NULL), 0);
  /* Leading again: activated queues everything. */
  kit_set_leader(&k, 1);
  assert_true(kit_node_tainted(&k, "n3", TOY_TAINT));
  kit_close(&k);
}

static void test_skeleton_conflict_backs_off(void **state)
{
  struct kit k;
  struct toy *t;
  size_t tries_first_second, tries_total;
  (void)state;
  kit_init(&k, NULL);
  t = toy_new(&k);
  kit_add(&k, &t->base);
  kit_start(&k);
  /* Every patch of n4 conflicts from now on: retries must slow down. */
  carp_kubemem_fail(k.api, "PATCH", "/nodes/n4", 409, -1);
  kit_apply(&k, "{apiVersion: v1, kind: Node, metadata: {name: n4, labels: "
                "{example.com/taint: 'yes'}}}");
  kit_advance(&k, 1000);
  tries_first_second =
      carp_kubemem_count_writes(k.api, "PATCH", "/nodes/n4", 0);
  kit_advance(&k, 60 * 1000);
  tries_total = carp_kubemem_count_writes(k.api, "PATCH", "/nodes/n4", 0);
  /* 5 ms doubling: about 8 tries in the first second, a few more in the
   * next minute - not hundreds. */
  assert_true(tries_first_second >= 3);
  assert_true(tries_first_second <= 12);
  assert_true(tries_total - tries_first_second <= 8);
  carp_kubemem_clear_faults(k.api);
  kit_advance(&k, 10 * 60 * 1000);
  assert_true(kit_node_tainted(&k, "n4", TOY_TAINT));
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fake_clock_order),
      cmocka_unit_test(test_kubemem_semantics),
      cmocka_unit_test(test_kubemem_eviction_pdb),
      cmocka_unit_test(test_skeleton_reconciles_and_rechecks),
      cmocka_unit_test(test_skeleton_leader_loss_stops_writes),
      cmocka_unit_test(test_skeleton_conflict_backs_off),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
