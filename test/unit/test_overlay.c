/* test_overlay.c: NodeOverlays (karpenter.sh/v1alpha1). The kind (decode,
 * validation verdict, price arithmetic), overlays applied to a NodePool's
 * instance types (price per offering, capacity per resource, the strongest
 * first, requirements on type, offering and NodePool labels), Karpenter's
 * conflict rule, and reconcile by reconcile on the fake clock (test/kit):
 * the NodeOverlay controller's status, and the provisioner choosing types
 * at overlaid prices and for overlaid extended resources - only once the
 * controller has found the overlay Ready. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api_testlib.h"
#include "carpenter/nodepool.h"
#include "carpenter/overlay.h"
#include "carpenter/provisioner.h"
#include "kit.h"

#define SEC 1000ULL

static struct carp_nodeoverlay *overlay(const char *yaml)
{
  yajl_val v = yaml_json(yaml);
  char *err = NULL;
  struct carp_objmeta *m = decode_json(&carp_kind_nodeoverlay, v, &err);
  if (!m)
    fprintf(stderr, "decode: %s\n", err ? err : "?");
  assert_non_null(m);
  carp_json_free(v);
  return (struct carp_nodeoverlay *)m;
}

static void test_price_arithmetic(void **state)
{
  struct carp_nodeoverlay *set, *pct, *add, *cut, *all;
  (void)state;
  set =
      overlay("{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay,"
              " metadata: {name: a}, spec: {requirements: [], price: '2.5'}}");
  pct = overlay("{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay,"
                " metadata: {name: b}, spec: {requirements: [],"
                " priceAdjustment: '+10%', weight: 7}}");
  add = overlay("{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay,"
                " metadata: {name: c}, spec: {requirements: [],"
                " priceAdjustment: '+0.5'}}");
  cut = overlay("{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay,"
                " metadata: {name: d}, spec: {requirements: [],"
                " priceAdjustment: '-0.5'}}");
  all = overlay("{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay,"
                " metadata: {name: e}, spec: {requirements: [],"
                " priceAdjustment: '-100%'}}");
  assert_true(set->valid && pct->valid && add->valid && cut->valid &&
              all->valid);
  assert_int_equal(set->price_kind, CARP_OVERLAY_PRICE_SET);
  assert_int_equal(pct->price_kind, CARP_OVERLAY_PRICE_PERCENT);
  assert_int_equal(pct->weight, 7);
  assert_int_equal(set->weight, 0);
  assert_float_equal(carp_nodeoverlay_price(set, 0.1), 2.5, 1e-9);
  assert_float_equal(carp_nodeoverlay_price(pct, 2.0), 2.2, 1e-9);
  assert_float_equal(carp_nodeoverlay_price(add, 0.25), 0.75, 1e-9);
  /* never below zero */
  assert_float_equal(carp_nodeoverlay_price(cut, 0.3), 0.0, 1e-9);
  assert_float_equal(carp_nodeoverlay_price(all, 0.3), 0.0, 1e-9);
  carp_obj_unref(&set->meta);
  carp_obj_unref(&pct->meta);
  carp_obj_unref(&add->meta);
  carp_obj_unref(&cut->meta);
  carp_obj_unref(&all->meta);
}

static void test_invalid_kept_with_reason(void **state)
{
  struct carp_nodeoverlay *ov;
  (void)state;
  ov = overlay("{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay,"
               " metadata: {name: bad}, spec: {requirements: [{key: "
               "kubernetes.io/hostname, operator: In, values: [x]}],"
               " price: '1', priceAdjustment: '+1', weight: 0,"
               " capacity: {cpu: '2', example.com/dev: '1'}}}");
  assert_false(ov->valid);
  assert_non_null(strstr(ov->invalid_reason,
                         "cannot set both 'price' and 'priceAdjustment'"));
  assert_non_null(strstr(ov->invalid_reason, "invalid resource restricted"));
  assert_non_null(strstr(ov->invalid_reason,
                         "label \"kubernetes.io/hostname\" is restricted"));
  assert_non_null(strstr(ov->invalid_reason, "spec.weight"));
  /* never in force, whatever its status says */
  assert_false(carp_nodeoverlay_in_force(ov));
  carp_obj_unref(&ov->meta);
}

/* ---- applying ---- */

static void add_type(struct carp_provider_instance_types *t, const char *name,
                     int cpu, double price, const char *gpu_count)
{
  struct carp_provider_instance_type *it = &t->v[t->n++];
  const char *zones[] = {"pve1", "pve2"};
  size_t z;
  memset(it, 0, sizeof(*it));
  snprintf(it->name, sizeof(it->name), "%s", name);
  snprintf(it->family, sizeof(it->family), "%.*s", (int)strcspn(name, "."),
           name);
  it->cpu = cpu;
  it->memory = (int64_t)cpu * (4LL << 30);
  it->price = price;
  it->capacity.cpu = cpu * 1000;
  it->allocatable.cpu = cpu * 1000;
  if (gpu_count) {
    snprintf(it->labels[0].key, sizeof(it->labels[0].key), "%s",
             "carpenter.dev/instance-gpu-count");
    snprintf(it->labels[0].value, sizeof(it->labels[0].value), "%s", gpu_count);
    it->nlabels = 1;
  }
  it->nofferings = 2;
  it->offerings = carp_calloc(2, sizeof(*it->offerings));
  for (z = 0; z < 2; z++) {
    snprintf(it->offerings[z].region, sizeof(it->offerings[z].region), "lab");
    snprintf(it->offerings[z].zone, sizeof(it->offerings[z].zone), "%s",
             zones[z]);
    it->offerings[z].capacity_type = "on-demand";
    it->offerings[z].price = price;
    it->offerings[z].available = 1;
  }
}

static void three_types(struct carp_provider_instance_types *t)
{
  t->n = 0;
  t->v = carp_calloc(3, sizeof(*t->v));
  add_type(t, "c1.2VCPU-4GB", 2, 0.1, NULL);
  add_type(t, "s1.2VCPU-8GB", 2, 0.2, NULL);
  add_type(t, "g1.4VCPU-16GB", 4, 1.0, "1");
}

static struct carp_nodepool *pool(const char *name, const char *labels)
{
  char text[1024];
  yajl_val v;
  struct carp_objmeta *m;
  snprintf(text, sizeof(text),
           "{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: "
           "%s}, spec: {template: {metadata: {labels: {%s}}, spec: "
           "{nodeClassRef: {group: carpenter.dev, kind: ProxmoxNodeClass,"
           " name: default}, requirements: []}}}}",
           name, labels);
  v = yaml_json(text);
  m = decode_json(&carp_kind_nodepool, v, NULL);
  assert_non_null(m);
  carp_json_free(v);
  return (struct carp_nodepool *)m;
}

#define OV(name, weight, rest)                                                 \
  overlay("{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay, metadata: "  \
          "{name: " name "}, spec: {weight: " #weight ", " rest "}}")

static int64_t fuse(const struct carp_provider_instance_type *t)
{
  return carp_resources_get(&t->capacity, "smarter-devices/fuse");
}

static void test_apply_prices_and_capacity(void **state)
{
  struct carp_provider_instance_types t;
  struct carp_nodepool *np = pool("web", "team: blue");
  struct carp_nodeoverlay *ov[6];
  const struct carp_nodeoverlay *sorted[6];
  int64_t ten, three;
  size_t i;
  (void)state;
  /* c1 twice as dear everywhere; pve2 fixed cheap (stronger); the GPU
   * type untouched by a requirement only GPU types lack */
  ov[0] = OV("c1-dear", 1,
             "requirements: [{key: carpenter.dev/instance-family, operator: "
             "In, values: [c1]}], priceAdjustment: '+100%'");
  ov[1] = OV("pve2-cheap", 5,
             "requirements: [{key: topology.kubernetes.io/zone, operator: In,"
             " values: [pve2]}, {key: carpenter.dev/instance-gpu-count,"
             " operator: DoesNotExist}], price: '0.01'");
  /* capacity: everything gets 10 FUSE devices, the blue team's pool 3
   * (stronger) - per resource, the strongest that names it */
  ov[2] = OV("fuse-all", 1,
             "requirements: [], capacity: "
             "{smarter-devices/fuse: '10'}");
  ov[3] = OV("fuse-blue", 2,
             "requirements: [{key: team, operator: In, values: [blue]}],"
             " capacity: {smarter-devices/fuse: '3'}");
  /* a pool it does not match: nothing */
  ov[4] = OV("other-pool", 9,
             "requirements: [{key: karpenter.sh/nodepool, operator: In,"
             " values: [batch]}], price: '99'");
  /* GPU types only, by the label they define */
  ov[5] = OV("gpu-extra", 1,
             "requirements: [{key: carpenter.dev/instance-gpu-count,"
             " operator: Gte, values: ['1']}], priceAdjustment: '+0.5'");
  for (i = 0; i < 6; i++)
    sorted[i] = ov[i];
  carp_overlays_sort(sorted, 6);
  assert_string_equal(sorted[0]->meta.name, "other-pool");
  assert_string_equal(sorted[1]->meta.name, "pve2-cheap");
  assert_string_equal(sorted[2]->meta.name, "fuse-blue");
  /* equal weights: the name later in the alphabet first */
  assert_string_equal(sorted[3]->meta.name, "gpu-extra");

  three_types(&t);
  assert_int_equal(carp_overlays_apply(sorted, 6, np, "default", &t), 3);
  /* c1: pve1 doubled, pve2 fixed; the type's price is its cheapest */
  assert_float_equal(t.v[0].offerings[0].price, 0.2, 1e-9);
  assert_float_equal(t.v[0].offerings[1].price, 0.01, 1e-9);
  assert_float_equal(t.v[0].price, 0.01, 1e-9);
  /* s1: pve2 only */
  assert_float_equal(t.v[1].offerings[0].price, 0.2, 1e-9);
  assert_float_equal(t.v[1].offerings[1].price, 0.01, 1e-9);
  /* g1: +0.5 in both zones (pve2-cheap requires no GPU label) */
  assert_float_equal(t.v[2].offerings[0].price, 1.5, 1e-9);
  assert_float_equal(t.v[2].offerings[1].price, 1.5, 1e-9);
  assert_float_equal(t.v[2].price, 1.5, 1e-9);
  ten = carp_resources_get(&ov[2]->capacity, "smarter-devices/fuse");
  three = carp_resources_get(&ov[3]->capacity, "smarter-devices/fuse");
  assert_true(ten > three && three > 0);
  for (i = 0; i < 3; i++) {
    assert_int_equal(fuse(&t.v[i]), three);
    assert_int_equal(
        carp_resources_get(&t.v[i].allocatable, "smarter-devices/fuse"), three);
    /* core resources untouched */
    assert_int_equal(t.v[i].capacity.cpu, t.v[i].cpu * 1000);
  }
  carp_provider_instance_types_free(&t);

  /* another pool: the blue overlay does not match, the weaker one does */
  carp_obj_unref(&np->meta);
  np = pool("batch", "");
  three_types(&t);
  carp_overlays_apply(sorted, 6, np, "default", &t);
  assert_int_equal(fuse(&t.v[0]), ten);
  assert_float_equal(t.v[0].offerings[0].price, 99, 1e-9);
  carp_provider_instance_types_free(&t);

  carp_obj_unref(&np->meta);
  for (i = 0; i < 6; i++)
    carp_obj_unref(&ov[i]->meta);
}

/* ---- conflicts ---- */

static void test_conflicts(void **state)
{
  struct carp_provider_instance_types t;
  struct carp_nodepool *np = pool("web", "");
  struct carp_overlay_pool pools[1];
  struct carp_nodeoverlay *ov[5];
  const struct carp_nodeoverlay *s[5];
  int conflict[5];
  size_t i;
  (void)state;
  three_types(&t);
  pools[0] = (struct carp_overlay_pool){np, "default", &t};
  /* same weight, same offering prices (c1 in both): the later one in the
   * order (the alphabetically earlier name) conflicts */
  ov[0] = OV("b-c1", 3,
             "requirements: [{key: carpenter.dev/instance-family, operator: "
             "In, values: [c1]}], price: '1'");
  ov[1] = OV("a-all", 3, "requirements: [], priceAdjustment: '+1'");
  /* same weight, other types: no conflict */
  ov[2] = OV("c-s1", 2,
             "requirements: [{key: carpenter.dev/instance-family, operator: "
             "In, values: [s1]}], price: '1'");
  ov[3] = OV("d-g1", 2,
             "requirements: [{key: carpenter.dev/instance-family, operator: "
             "In, values: [g1]}], price: '1'");
  /* same weight as a-all's price but capacity only: other changes */
  ov[4] = OV("e-cap", 3, "requirements: [], capacity: {example.com/x: '1'}");
  for (i = 0; i < 5; i++)
    s[i] = ov[i];
  carp_overlays_sort(s, 5);
  carp_overlays_conflicts(s, 5, pools, 1, conflict);
  for (i = 0; i < 5; i++) {
    int want = !strcmp(s[i]->meta.name, "a-all");
    if (conflict[i] != want)
      fprintf(stderr, "%s: conflict %d\n", s[i]->meta.name, conflict[i]);
    assert_int_equal(conflict[i], want);
  }
  /* a different weight settles it: the stronger one wins, no conflict */
  carp_obj_unref(&ov[1]->meta);
  ov[1] = OV("a-all", 4, "requirements: [], priceAdjustment: '+1'");
  for (i = 0; i < 5; i++)
    s[i] = ov[i];
  carp_overlays_sort(s, 5);
  carp_overlays_conflicts(s, 5, pools, 1, conflict);
  for (i = 0; i < 5; i++)
    assert_int_equal(conflict[i], 0);
  carp_provider_instance_types_free(&t);
  carp_obj_unref(&np->meta);
  for (i = 0; i < 5; i++)
    carp_obj_unref(&ov[i]->meta);
}

/* ---- reconcile level ---- */

static void setup(struct kit *k, int provisioner)
{
  struct carp_provisioner_options o = {.batch_idle_ms = 1 * SEC,
                                       .batch_max_ms = 10 * SEC};
  struct carp_controller *c;
  kit_init(k, NULL);
  assert_int_equal(carp_nodeoverlay_controller_new(&k->env, &c), 0);
  kit_add(k, c);
  if (provisioner) {
    assert_int_equal(carp_provisioner_new(&k->env, &o, &c), 0);
    kit_add(k, c);
  }
  kit_nodeclass(k, "default");
  kit_nodepool(k, "default", "");
}

static void apply_overlay(struct kit *k, const char *name, const char *spec)
{
  kit_apply(k,
            "{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay,"
            " metadata: {name: %s}, spec: {%s}}",
            name, spec);
}

static const char *cond(struct kit *k, const char *name, const char *type,
                        const char **reason)
{
  return kit_condition(k, "NodeOverlay", name, type, reason);
}

/* The first (cheapest) instance type the created NodeClaim lists. */
static const char *claim_first_type(struct kit *k)
{
  static char first[128];
  const struct carp_kubemem_write *w;
  size_t n = carp_kubemem_writes(k->api, &w), i, j;
  first[0] = 0;
  for (i = 0; i < n && !first[0]; i++) {
    yajl_val v = NULL, reqs;
    if (strcmp(w[i].method, "POST") || !strstr(w[i].path, "/nodeclaims") ||
        w[i].status != 201)
      continue;
    assert_int_equal(carp_json_parse(w[i].body, strlen(w[i].body), &v, NULL),
                     0);
    reqs = carp_json_arr(v, "spec", "requirements", NULL);
    for (j = 0; reqs && j < carp_json_len(reqs); j++) {
      yajl_val r = carp_json_at(reqs, j);
      const char *key = carp_json_str(r, "key", NULL);
      if (key && !strcmp(key, "node.kubernetes.io/instance-type"))
        snprintf(first, sizeof(first), "%s",
                 carp_json_str(
                     carp_json_at(carp_json_arr(r, "values", NULL), 0), NULL));
    }
    carp_json_free(v);
  }
  return first;
}

/* The message of a condition of a NodeOverlay ("" when absent). */
static const char *cond_message(struct kit *k, const char *name,
                                const char *type)
{
  static char msg[1024];
  yajl_val v = kit_get(k, "NodeOverlay", name);
  yajl_val conds = carp_json_arr(v, "status", "conditions", NULL);
  size_t i;
  msg[0] = 0;
  for (i = 0; conds && i < carp_json_len(conds); i++) {
    yajl_val c = carp_json_at(conds, i);
    const char *t = carp_json_str(c, "type", NULL);
    if (t && !strcmp(t, type))
      snprintf(msg, sizeof(msg), "%s", carp_json_str(c, "message", NULL));
  }
  carp_json_free(v);
  return msg;
}

static void test_controller_status(void **state)
{
  struct kit k;
  const char *reason = NULL, *st;
  (void)state;
  setup(&k, 0);
  /* pools of two classes: the types of each are read once */
  kit_nodeclass(&k, "other");
  kit_apply(&k, "{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: "
                "{name: other}, spec: {template: {spec: {nodeClassRef: "
                "{group: carpenter.dev, kind: ProxmoxNodeClass, name: other},"
                " requirements: []}}}}");
  apply_overlay(&k, "good", "requirements: [], price: '1', weight: 5");
  apply_overlay(&k, "bad",
                "requirements: [], capacity: {memory: 1Gi}, weight: 5");
  apply_overlay(&k, "b-same",
                "requirements: [], priceAdjustment: '+1%',"
                " weight: 2");
  apply_overlay(&k, "a-same",
                "requirements: [], priceAdjustment: '+2%',"
                " weight: 2");
  kit_start(&k);
  kit_settle(&k);
  st = cond(&k, "good", "ValidationSucceeded", NULL);
  assert_non_null(st);
  assert_string_equal(st, "True");
  assert_string_equal(cond(&k, "good", "Ready", NULL), "True");
  /* the invalid one: its own rule, not a conflict with "good" */
  assert_string_equal(cond(&k, "bad", "ValidationSucceeded", &reason), "False");
  assert_string_equal(reason, "RuntimeValidation");
  assert_string_equal(cond(&k, "bad", "Ready", NULL), "False");
  assert_non_null(strstr(cond_message(&k, "bad", "ValidationSucceeded"),
                         "spec.capacity: Invalid value: \"object\": invalid "
                         "resource restricted"));
  /* equal weights on the same offerings: the first in order wins */
  assert_string_equal(cond(&k, "b-same", "ValidationSucceeded", NULL), "True");
  assert_string_equal(cond(&k, "a-same", "ValidationSucceeded", &reason),
                      "False");
  assert_string_equal(reason, "Conflict");

  /* settled by a weight: the status follows the new generation */
  kit_patch(&k, "NodeOverlay", "a-same", "{spec: {weight: 3}}");
  kit_settle(&k);
  assert_string_equal(cond(&k, "a-same", "ValidationSucceeded", NULL), "True");
  assert_string_equal(cond(&k, "a-same", "Ready", NULL), "True");
  assert_string_equal(cond(&k, "b-same", "Ready", NULL), "True");
  /* nothing changes: nothing written on the next pass */
  {
    size_t before = kit_writes(&k, "PATCH", "/nodeoverlays/");
    kit_advance(&k, 6 * 60 * SEC);
    assert_int_equal(kit_writes(&k, "PATCH", "/nodeoverlays/"), before);
  }
  kit_close(&k);
}

static void test_provisioner_sees_prices(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 1);
  /* c1 is the cheapest family of the fake provider; ten times dearer, s1
   * wins for a small pod */
  apply_overlay(&k, "c1-dear",
                "requirements: [{key: carpenter.dev/instance-family, "
                "operator: In, values: [c1]}], priceAdjustment: '+1000%'");
  kit_start(&k);
  kit_settle(&k);
  assert_string_equal(cond(&k, "c1-dear", "Ready", NULL), "True");
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_advance(&k, 2 * SEC);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  assert_string_equal(claim_first_type(&k), "s1.2VCPU-8GB");
  kit_close(&k);
}

/* The same pod without the overlay: c1's smallest type. A new overlay is
 * not applied before the controller has found it Ready. */
static void test_provisioner_without_overlay(void **state)
{
  struct kit k;
  struct carp_controller *c;
  struct carp_provisioner_options o = {.batch_idle_ms = 1 * SEC,
                                       .batch_max_ms = 10 * SEC};
  (void)state;
  kit_init(&k, NULL);
  assert_int_equal(carp_provisioner_new(&k.env, &o, &c), 0);
  kit_add(&k, c);
  kit_nodeclass(&k, "default");
  kit_nodepool(&k, "default", "");
  /* no NodeOverlay controller: never judged, never in force */
  apply_overlay(&k, "c1-dear",
                "requirements: [{key: carpenter.dev/instance-family, "
                "operator: In, values: [c1]}], priceAdjustment: '+1000%'");
  kit_start(&k);
  kit_pod(&k, "default", "a", NULL, 500, "");
  kit_advance(&k, 2 * SEC);
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  assert_string_equal(claim_first_type(&k), "c1.1VCPU-2GB");
  kit_close(&k);
}

static void test_capacity_only_once_ready(void **state)
{
  struct kit k;
  (void)state;
  setup(&k, 1);
  kit_start(&k);
  kit_apply(&k, "{apiVersion: v1, kind: Pod, metadata: {name: f, namespace: "
                "default}, spec: {containers: [{name: c, image: x, resources:"
                " {requests: {cpu: 100m, smarter-devices/fuse: '1'},"
                " limits: {smarter-devices/fuse: '1'}}}]},"
                " status: {phase: Pending, conditions: [{type: PodScheduled,"
                " status: 'False', reason: Unschedulable}]}}");
  kit_advance(&k, 5 * SEC);
  /* no type has the resource */
  assert_int_equal(kit_count(&k, "NodeClaim"), 0);
  assert_true(kit_events(&k, "FailedScheduling") >= 1);
  apply_overlay(&k, "fuse",
                "requirements: [], capacity: {smarter-devices/fuse: '10'}");
  kit_advance(&k, 5 * SEC);
  assert_string_equal(cond(&k, "fuse", "Ready", NULL), "True");
  assert_int_equal(kit_count(&k, "NodeClaim"), 1);
  kit_close(&k);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_price_arithmetic),
      LEAK_TEST(test_invalid_kept_with_reason),
      LEAK_TEST(test_apply_prices_and_capacity),
      LEAK_TEST(test_conflicts),
      cmocka_unit_test(test_controller_status),
      cmocka_unit_test(test_provisioner_sees_prices),
      cmocka_unit_test(test_provisioner_without_overlay),
      cmocka_unit_test(test_capacity_only_once_ready),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
