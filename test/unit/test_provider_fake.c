/* Unit tests for internal/provider (the provider.h wrapper: metrics, typed
 * error labels, providerID and annotation parsing, requirement matching)
 * and internal/provider/fake (the in-memory provider controller tests use):
 * create with the reserve hook, adoption by annotation, insufficient
 * capacity, injected failures, cancellation, delete until NotFound, list,
 * offerings, drift, and closing with calls pending. Every test ends with
 * uv_loop_close() == 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/object.h"
#include "carpenter/provider.h"

/* --- helpers
 * ------------------------------------------------------------------ */

static struct carp_nodeclaim *claim(const char *name, const char *uid,
                                    const char *annotation, const char *reqs)
{
  char text[2048];
  yajl_val v;
  struct carp_objmeta *m = NULL;
  char *err = NULL;
  snprintf(
      text, sizeof(text),
      "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":"
      "{\"name\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"1\","
      "\"annotations\":{%s%s%s}},"
      "\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\",\"kind\":"
      "\"ProxmoxNodeClass\",\"name\":\"default\"},\"requirements\":[%s],"
      "\"resources\":{\"requests\":{\"cpu\":\"500m\"}}}}",
      name, uid, annotation ? "\"carpenter.dev/vm\":\"" : "",
      annotation ? annotation : "", annotation ? "\"" : "", reqs ? reqs : "");
  assert_int_equal(carp_json_parse(text, strlen(text), &v, &err), 0);
  assert_int_equal(carp_kind_nodeclaim.decode(v, &m, &err), 0);
  carp_json_free(v);
  return carp_container_of(m, struct carp_nodeclaim, meta);
}

struct result {
  int done;
  int status;
  struct carp_provider_instance inst;
  struct carp_provider_error err;
  size_t n;
};

static void on_create(int status, const struct carp_provider_instance *inst,
                      const struct carp_provider_error *err, void *arg)
{
  struct result *r = arg;
  r->done++;
  r->status = status;
  if (inst)
    r->inst = *inst;
  if (err)
    r->err = *err;
}

static void on_done(int status, const struct carp_provider_error *err,
                    void *arg)
{
  struct result *r = arg;
  r->done++;
  r->status = status;
  if (err)
    r->err = *err;
}

static void on_list(int status, const struct carp_provider_instance *v,
                    size_t n, const struct carp_provider_error *err, void *arg)
{
  struct result *r = arg;
  (void)err;
  r->done++;
  r->status = status;
  r->n = n;
  if (n)
    r->inst = v[0];
}

struct reserve_log {
  int calls;
  char value[256];
  int answer;
  int sync;
  carp_provider_reserved_cb done;
  void *token;
};

static void reserve(const struct carp_nodeclaim *nc,
                    const struct carp_provider_reservation *r,
                    carp_provider_reserved_cb done, void *token, void *arg)
{
  struct reserve_log *l = arg;
  (void)nc;
  l->calls++;
  snprintf(l->value, sizeof(l->value), "%s", r->value);
  if (l->sync) {
    done(token, l->answer);
  } else {
    l->done = done;
    l->token = token;
  }
}

static void create(struct carp_provider *p, struct carp_nodeclaim *c,
                   struct reserve_log *l, struct result *r,
                   struct carp_provider_op **op)
{
  struct carp_provider_create_req req;
  memset(&req, 0, sizeof(req));
  req.controller = "test";
  req.nodeclaim = c;
  req.reserve = reserve;
  req.reserve_arg = l;
  assert_int_equal(carp_provider_create(p, &req, on_create, r, op), 0);
  assert_int_equal(r->done, 0); /* never synchronous */
}

static void run(uv_loop_t *loop, struct result *r)
{
  while (!r->done)
    uv_run(loop, UV_RUN_ONCE);
}

static void close_all(uv_loop_t *loop, struct carp_provider *p)
{
  carp_provider_close(p, NULL, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(loop), 0);
}

/* --- the wrapper and helpers
 * -------------------------------------------------- */

static void test_ids(void **state)
{
  char region[64], zone[64];
  int64_t vmid;
  char out[128];
  (void)state;
  assert_int_equal(carp_provider_id_parse("proxmox://lab/20017", region,
                                          sizeof(region), &vmid),
                   0);
  assert_string_equal(region, "lab");
  assert_int_equal(vmid, 20017);
  assert_int_equal(
      carp_provider_id_parse("proxmox://lab/99", region, sizeof(region), &vmid),
      CARP_EINVAL);
  assert_int_equal(
      carp_provider_id_parse("proxmox:///100", region, sizeof(region), &vmid),
      CARP_EINVAL);
  assert_int_equal(
      carp_provider_id_parse("kwok://x", region, sizeof(region), &vmid),
      CARP_EINVAL);
  assert_int_equal(carp_provider_id_parse("proxmox://a/b/100", region,
                                          sizeof(region), &vmid),
                   CARP_EINVAL);
  carp_provider_id_format("homelab", 101, out, sizeof(out));
  assert_string_equal(out, "proxmox://homelab/101");
  assert_int_equal(carp_provider_vm_annotation_parse("lab/pve2/4242", region,
                                                     sizeof(region), zone,
                                                     sizeof(zone), &vmid),
                   0);
  assert_string_equal(zone, "pve2");
  assert_int_equal(vmid, 4242);
  assert_int_equal(carp_provider_vm_annotation_parse("lab/4242", region,
                                                     sizeof(region), zone,
                                                     sizeof(zone), &vmid),
                   CARP_EINVAL);
  assert_int_equal(carp_provider_vm_annotation_parse("lab//4242", region,
                                                     sizeof(region), zone,
                                                     sizeof(zone), &vmid),
                   CARP_EINVAL);
}

static void test_requirements(void **state)
{
  const char *in[] = {"a", "b"}, *n4[] = {"4"};
  struct carp_requirement r[] = {
      {.key = "k", .op = CARP_OP_IN, .nvalues = 2, .values = in},
      {.key = "cpu", .op = CARP_OP_GTE, .nvalues = 1, .values = n4},
      {.key = "gone", .op = CARP_OP_DOES_NOT_EXIST},
      {.key = "t", .op = CARP_OP_NOT_IN, .nvalues = 2, .values = in},
  };
  (void)state;
  assert_true(carp_requirements_allow(r, 4, "k", "a"));
  assert_false(carp_requirements_allow(r, 4, "k", "c"));
  assert_false(carp_requirements_allow(r, 4, "k", NULL));
  assert_true(carp_requirements_allow(r, 4, "cpu", "4"));
  assert_true(carp_requirements_allow(r, 4, "cpu", "16"));
  assert_false(carp_requirements_allow(r, 4, "cpu", "2"));
  assert_false(carp_requirements_allow(r, 4, "cpu", "x"));
  assert_true(carp_requirements_allow(r, 4, "gone", NULL));
  assert_false(carp_requirements_allow(r, 4, "gone", "v"));
  assert_true(carp_requirements_allow(r, 4, "t", "z"));
  assert_false(carp_requirements_allow(r, 4, "t", "b"));
  assert_true(carp_requirements_allow(r, 4, "other", "anything"));
}

static void test_error_helpers(void **state)
{
  struct carp_provider_error e;
  (void)state;
  assert_string_equal(carp_provider_error_label(CARP_ENOTFOUND),
                      "NodeClaimNotFoundError");
  assert_string_equal(carp_provider_error_label(CARP_EINSUFFICIENT_CAPACITY),
                      "InsufficientCapacityError");
  assert_string_equal(carp_provider_error_label(CARP_ENODECLASS_NOT_READY),
                      "NodeClassNotReadyError");
  assert_string_equal(carp_provider_error_label(CARP_ETASK), "");
  assert_true(carp_provider_error_transient(CARP_ETIMEDOUT));
  assert_true(carp_provider_error_transient(CARP_EUNAVAIL));
  assert_true(carp_provider_error_transient(CARP_EAGAIN));
  assert_false(carp_provider_error_transient(CARP_EINSUFFICIENT_CAPACITY));
  assert_false(carp_provider_error_transient(CARP_EFORBIDDEN));
  carp_provider_error_set(&e, CARP_ETASK, "CloneFailed", "clone of %d failed",
                          7);
  assert_int_equal(e.code, CARP_ETASK);
  assert_string_equal(e.reason, "CloneFailed");
  assert_string_equal(e.message, "clone of 7 failed");
}

/* --- the fake provider
 * -------------------------------------------------------- */

static void test_fake_lifecycle(void **state)
{
  uv_loop_t loop;
  struct carp_provider *p;
  struct carp_metrics *m = carp_metrics_new();
  const char *zones[] = {"zone-a", "zone-b", NULL};
  struct carp_fake_provider_options o = {.zones = zones, .create_delay_ms = 5};
  struct carp_nodeclaim *c =
      claim("nc-1", "uid-1", NULL,
            "{\"key\":\"topology.kubernetes.io/zone\","
            "\"operator\":\"In\",\"values\":[\"zone-b\"]}");
  struct reserve_log rl = {.sync = 1};
  struct result r = {0}, d = {0}, l = {0};
  struct carp_provider_delete_req del;
  struct carp_buf text;
  const char *reason = NULL;
  (void)state;
  uv_loop_init(&loop);
  assert_int_equal(carp_fake_provider_new(&loop, &o, &p), 0);
  carp_provider_set_metrics(p, m);
  assert_string_equal(carp_provider_name(p), "fake");
  create(p, c, &rl, &r, NULL);
  run(&loop, &r);
  assert_int_equal(r.status, 0);
  assert_int_equal(rl.calls, 1);
  assert_string_equal(r.inst.zone, "zone-b");
  assert_string_equal(r.inst.instance_type, "c1.1VCPU-2GB");
  assert_string_equal(r.inst.nodeclaim_uid, "uid-1");
  assert_string_equal(r.inst.provider_id, "proxmox://fake/1000");
  assert_string_equal(rl.value, "fake/zone-b/1000");
  assert_int_equal(carp_fake_provider_count(p), 1);

  carp_provider_list(p, "gc", on_list, &l, NULL);
  run(&loop, &l);
  assert_int_equal(l.n, 1);

  carp_fake_provider_set_drift(p, "nc-1", CARP_DRIFT_TEMPLATE);
  assert_int_equal(carp_provider_is_drifted(
                       p, "d", c, (const struct carp_nodeclass *)c, &reason),
                   0);
  assert_string_equal(reason, CARP_DRIFT_TEMPLATE);

  memset(&del, 0, sizeof(del));
  del.controller = "test";
  del.provider_id = r.inst.provider_id;
  del.nodeclaim_uid = "someone-else";
  carp_provider_delete(p, &del, on_done, &d, NULL);
  run(&loop, &d);
  assert_int_equal(d.status, CARP_ENOTFOUND); /* guarded by UID */
  del.nodeclaim_uid = "uid-1";
  memset(&d, 0, sizeof(d));
  carp_provider_delete(p, &del, on_done, &d, NULL);
  run(&loop, &d);
  assert_int_equal(d.status, 0);
  memset(&d, 0, sizeof(d));
  carp_provider_delete(p, &del, on_done, &d, NULL);
  run(&loop, &d);
  assert_int_equal(d.status, CARP_ENOTFOUND);
  assert_int_equal(carp_fake_provider_calls(p, "delete"), 3);

  carp_buf_init(&text, CARP_BUF_UNLIMITED);
  carp_metrics_render(m, &text);
  assert_non_null(strstr(
      carp_buf_cstr(&text),
      "karpenter_cloudprovider_duration_seconds_count{controller=\"test\","
      "method=\"Create\",provider=\"fake\"} 1"));
  assert_non_null(
      strstr(carp_buf_cstr(&text),
             "karpenter_cloudprovider_errors_total{controller=\"test\","
             "method=\"Delete\",provider=\"fake\",error="
             "\"NodeClaimNotFoundError\"} 2"));
  carp_buf_free(&text);
  carp_obj_unref(&c->meta);
  close_all(&loop, p);
  carp_metrics_free(m);
}

static void test_fake_adoption_and_async_reserve(void **state)
{
  uv_loop_t loop;
  struct carp_provider *p;
  struct carp_nodeclaim *c = claim("nc-2", "uid-2", NULL, NULL), *again;
  struct reserve_log rl = {0};
  struct result r = {0}, r2 = {0};
  (void)state;
  uv_loop_init(&loop);
  assert_int_equal(carp_fake_provider_new(&loop, NULL, &p), 0);
  create(p, c, &rl, &r, NULL);
  while (!rl.calls)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(r.done, 0); /* waits for the annotation */
  rl.done(rl.token, 0);
  run(&loop, &r);
  assert_int_equal(r.status, 0);
  /* the same NodeClaim with the annotation: the same instance back */
  again = claim("nc-2", "uid-2", rl.value, NULL);
  rl.sync = 1;
  create(p, again, &rl, &r2, NULL);
  run(&loop, &r2);
  assert_int_equal(r2.status, 0);
  assert_int_equal(rl.calls, 1);
  assert_string_equal(r2.inst.provider_id, r.inst.provider_id);
  assert_int_equal(carp_fake_provider_count(p), 1);
  carp_obj_unref(&c->meta);
  carp_obj_unref(&again->meta);
  close_all(&loop, p);
}

static void test_fake_failures(void **state)
{
  uv_loop_t loop;
  struct carp_provider *p;
  const char *zones[] = {"zone-a", NULL};
  struct carp_fake_provider_options o = {.zones = zones, .host_cpus = 1};
  struct carp_nodeclaim *c = claim("nc-3", "uid-3", NULL, NULL);
  struct carp_nodeclaim *big =
      claim("nc-4", "uid-4", NULL,
            "{\"key\":\"node.kubernetes.io/instance-type\","
            "\"operator\":\"In\",\"values\":[\"c1.4VCPU-8GB\"]}");
  struct reserve_log rl = {.sync = 1};
  struct result r = {0};
  struct carp_provider_op *op = NULL;
  struct carp_provider_instance_types t;
  (void)state;
  uv_loop_init(&loop);
  assert_int_equal(carp_fake_provider_new(&loop, &o, &p), 0);
  /* 4 vCPUs never fit a 1-CPU zone */
  create(p, big, &rl, &r, NULL);
  run(&loop, &r);
  assert_int_equal(r.status, CARP_EINSUFFICIENT_CAPACITY);
  assert_string_equal(r.err.reason, CARP_REASON_INSUFFICIENT_CAPACITY);
  assert_int_equal(rl.calls, 0);
  /* injected clone failure */
  carp_fake_provider_fail(p, "create", 1, CARP_ETASK, CARP_REASON_CLONE_FAILED);
  memset(&r, 0, sizeof(r));
  create(p, c, &rl, &r, NULL);
  run(&loop, &r);
  assert_int_equal(r.status, CARP_ETASK);
  assert_string_equal(r.err.reason, CARP_REASON_CLONE_FAILED);
  /* ICE on the only zone */
  carp_fake_provider_set_ice(p, "c1.1VCPU-2GB", "zone-a", 1);
  assert_int_equal(carp_provider_instance_types(
                       p, "prov", (const struct carp_nodeclass *)c, &t),
                   0);
  assert_string_equal(t.v[0].name, "c1.1VCPU-2GB");
  assert_int_equal(t.v[0].nofferings, 1);
  assert_false(t.v[0].offerings[0].available);
  carp_provider_instance_types_free(&t);
  memset(&r, 0, sizeof(r));
  create(p, c, &rl, &r, NULL);
  run(&loop, &r);
  assert_int_equal(r.status, CARP_EINSUFFICIENT_CAPACITY);
  carp_fake_provider_set_ice(p, "c1.1VCPU-2GB", "zone-a", 0);
  /* a failing reserve hook: nothing is created */
  rl.answer = CARP_ECONFLICT;
  memset(&r, 0, sizeof(r));
  create(p, c, &rl, &r, NULL);
  run(&loop, &r);
  assert_int_equal(r.status, CARP_ECONFLICT);
  assert_int_equal(carp_fake_provider_count(p), 0);
  /* cancel */
  rl.sync = 0;
  memset(&r, 0, sizeof(r));
  create(p, c, &rl, &r, &op);
  carp_provider_cancel(p, op);
  run(&loop, &r);
  assert_int_equal(r.status, CARP_ECANCELED);
  if (rl.done)
    rl.done(rl.token, 0); /* a late answer is harmless */
  carp_obj_unref(&c->meta);
  carp_obj_unref(&big->meta);
  close_all(&loop, p);
}

static void test_fake_close_pending(void **state)
{
  uv_loop_t loop;
  struct carp_provider *p;
  struct carp_fake_provider_options o = {.create_delay_ms = 10000};
  struct carp_nodeclaim *c = claim("nc-5", "uid-5", NULL, NULL);
  struct reserve_log rl = {.sync = 1};
  struct result r = {0};
  char pid[64];
  (void)state;
  uv_loop_init(&loop);
  assert_int_equal(carp_fake_provider_new(&loop, &o, &p), 0);
  assert_int_equal(carp_fake_provider_add_instance(p, "orphan", "uid-x",
                                                   "c1.1VCPU-2GB", NULL, pid,
                                                   sizeof(pid)),
                   0);
  assert_string_equal(pid, "proxmox://fake/1000");
  create(p, c, &rl, &r, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
  carp_provider_close(p, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(r.done, 1);
  assert_int_equal(r.status, CARP_ECANCELED);
  assert_int_equal(uv_loop_close(&loop), 0);
  carp_obj_unref(&c->meta);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ids),
      cmocka_unit_test(test_requirements),
      cmocka_unit_test(test_error_helpers),
      cmocka_unit_test(test_fake_lifecycle),
      cmocka_unit_test(test_fake_adoption_and_async_reserve),
      cmocka_unit_test(test_fake_failures),
      cmocka_unit_test(test_fake_close_pending),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
