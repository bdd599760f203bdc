/* Unit tests for the per-node rules of scheduling: tolerations (Exists with
 * an empty key, empty effect, PreferNoSchedule only tolerated as the last
 * relaxation step), host ports, label selectors, resources (allocatable
 * after reservations, extended resources, the pods count, existing nodes'
 * usage), DaemonSet overhead per NodePool and instance type, nodeSelector,
 * required node affinity OR terms and preferred node affinity relaxed
 * heaviest first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "test_sched_util.h"

#define NS  CARP_SCHED_EFFECT_NO_SCHEDULE
#define PNS CARP_SCHED_EFFECT_PREFER_NO_SCHEDULE
#define NE  CARP_SCHED_EFFECT_NO_EXECUTE
#define ALL CARP_SCHED_EFFECT_ALL
#define EQ  CARP_SCHED_TOLERATE_EQUAL
#define EX  CARP_SCHED_TOLERATE_EXISTS

/* ---- building blocks ---- */

static void test_tolerations(void **state)
{
  static const struct {
    struct carp_sched_toleration tol;
    struct carp_sched_taint taint;
    int want;
  } cases[] = {
      {{"k", EQ, "v", NS}, {"k", "v", NS}, 1},
      {{"k", EQ, "v", NS}, {"k", "w", NS}, 0},
      {{"k", EQ, "v", NS}, {"j", "v", NS}, 0},
      {{"k", EQ, "v", NS}, {"k", "v", NE}, 0},
      {{"k", EQ, NULL, NS}, {"k", NULL, NS}, 1},
      {{"k", EQ, "", NS}, {"k", NULL, NS}, 1},
      {{"k", EX, NULL, ALL}, {"k", "any", NE}, 1},   /* empty effect: all */
      {{"k", EX, "ignored", NS}, {"k", "x", NS}, 1}, /* Exists ignores value */
      {{NULL, EX, NULL, ALL}, {"anything", "x", NE}, 1}, /* tolerates all */
      {{"", EX, NULL, ALL}, {"anything", NULL, PNS}, 1},
      {{"", EX, NULL, NS}, {"anything", NULL, NE}, 0}, /* effect still counts */
      {{"", EQ, "v", ALL}, {"anything", "v", NS}, 1},  /* k8s ToleratesTaint */
      {{"k", EX, NULL, NS}, {"k", "v", PNS}, 0},
  };
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++)
    if (carp_sched_tolerates(&cases[i].tol, &cases[i].taint) != cases[i].want)
      fail_msg("toleration case %zu", i);
}

static void test_taints_tolerated(void **state)
{
  struct carp_sched_taint taints[] = {
      {"a", "1", NS}, {"soft", NULL, PNS}, {"b", NULL, NE}};
  struct carp_sched_toleration tols[] = {{"a", EQ, "1", ALL},
                                         {"b", EX, NULL, NE}};
  size_t first = 99;
  assert_false(carp_sched_taints_tolerated(taints, 3, tols, 2, 0, &first));
  assert_int_equal(first, 1); /* PreferNoSchedule must be tolerated... */
  assert_true(carp_sched_taints_tolerated(taints, 3, tols, 2, 1, NULL));
  first = 99;
  assert_false(carp_sched_taints_tolerated(taints, 3, tols, 1, 1, &first));
  assert_int_equal(first, 2); /* NoExecute untolerated */
  assert_true(carp_sched_taints_tolerated(NULL, 0, NULL, 0, 0, NULL));
}

static void test_host_ports(void **state)
{
  static const struct {
    struct carp_sched_host_port a, b;
    int want;
  } cases[] = {
      {{8080, CARP_SCHED_TCP, NULL}, {8080, CARP_SCHED_TCP, "10.0.0.1"}, 1},
      {{8080, CARP_SCHED_TCP, "10.0.0.1"},
       {8080, CARP_SCHED_TCP, "10.0.0.2"},
       0},
      {{8080, CARP_SCHED_TCP, "10.0.0.1"},
       {8080, CARP_SCHED_TCP, "10.0.0.1"},
       1},
      {{8080, CARP_SCHED_TCP, "0.0.0.0"},
       {8080, CARP_SCHED_TCP, "10.0.0.2"},
       1},
      {{8080, CARP_SCHED_TCP, "::"}, {8080, CARP_SCHED_TCP, "10.0.0.2"}, 1},
      {{8080, CARP_SCHED_TCP, ""}, {8080, CARP_SCHED_TCP, NULL}, 1},
      {{8080, CARP_SCHED_UDP, NULL}, {8080, CARP_SCHED_TCP, NULL}, 0},
      {{8080, CARP_SCHED_TCP, NULL}, {8081, CARP_SCHED_TCP, NULL}, 0},
      {{0, CARP_SCHED_TCP, NULL}, {0, CARP_SCHED_TCP, NULL}, 0},
  };
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    if (carp_sched_host_ports_conflict(&cases[i].a, &cases[i].b) !=
        cases[i].want)
      fail_msg("host port case %zu", i);
    if (carp_sched_host_ports_conflict(&cases[i].b, &cases[i].a) !=
        cases[i].want)
      fail_msg("host port case %zu (swapped)", i);
  }
}

static void test_selectors(void **state)
{
  const char *ab[] = {"a", "b"};
  struct carp_sched_label ml[] = {{"app", "web"}};
  struct carp_sched_requirement in = {"tier", CARP_SCHED_OP_IN, ab, 2, 0};
  struct carp_sched_requirement notin = {"tier", CARP_SCHED_OP_NOT_IN, ab, 2,
                                         0};
  struct carp_sched_requirement ex = {"tier", CARP_SCHED_OP_EXISTS, NULL, 0, 0};
  struct carp_sched_requirement dne = {"tier", CARP_SCHED_OP_DOES_NOT_EXIST,
                                       NULL, 0, 0};
  struct carp_sched_requirement gt = {"tier", CARP_SCHED_OP_GT, ab, 1, 0};
  struct carp_sched_label web_a[] = {{"app", "web"}, {"tier", "a"}};
  struct carp_sched_label web[] = {{"app", "web"}};
  struct carp_sched_label db_a[] = {{"app", "db"}, {"tier", "a"}};
  struct carp_sched_selector s;

  memset(&s, 0, sizeof(s));
  assert_true(carp_sched_selector_matches(&s, NULL, 0));   /* {} matches all */
  assert_false(carp_sched_selector_matches(NULL, web, 1)); /* nil: none */
  s.match_labels = ml;
  s.nmatch_labels = 1;
  assert_true(carp_sched_selector_matches(&s, web_a, 2));
  assert_false(carp_sched_selector_matches(&s, db_a, 2));
  s.match_expressions = &in;
  s.nmatch_expressions = 1;
  assert_true(carp_sched_selector_matches(&s, web_a, 2));
  assert_false(carp_sched_selector_matches(&s, web, 1));
  s.match_expressions = &notin;
  assert_false(carp_sched_selector_matches(&s, web_a, 2));
  assert_true(carp_sched_selector_matches(&s, web, 1)); /* missing: NotIn ok */
  s.match_expressions = &ex;
  assert_true(carp_sched_selector_matches(&s, web_a, 2));
  assert_false(carp_sched_selector_matches(&s, web, 1));
  s.match_expressions = &dne;
  assert_false(carp_sched_selector_matches(&s, web_a, 2));
  assert_true(carp_sched_selector_matches(&s, web, 1));
  s.match_expressions = &gt; /* not a label-selector operator */
  assert_false(carp_sched_selector_matches(&s, web_a, 2));
}

static void test_allocatable(void **state)
{
  struct carp_sched_quantity cap[] = {{"cpu", 4000}, {"memory", 8000}};
  struct carp_sched_quantity kube[] = {{"cpu", 100}, {"memory", 1000}};
  struct carp_sched_quantity sys[] = {{"cpu", 50}};
  struct carp_sched_quantity ev[] = {{"memory", 500}, {"cpu", 9000}};
  struct carp_sched_instance_type it;
  memset(&it, 0, sizeof(it));
  it.capacity = cap;
  it.ncapacity = 2;
  it.kube_reserved = kube;
  it.nkube_reserved = 2;
  it.system_reserved = sys;
  it.nsystem_reserved = 1;
  it.eviction_threshold = ev;
  it.neviction_threshold = 1;
  assert_int_equal(carp_sched_allocatable(&it, "cpu"), 3850);
  assert_int_equal(carp_sched_allocatable(&it, "memory"), 6500);
  assert_int_equal(carp_sched_allocatable(&it, "pods"), 0);
  it.neviction_threshold = 2; /* more reserved than capacity: 0, not < 0 */
  assert_int_equal(carp_sched_allocatable(&it, "cpu"), 0);
}

/* ---- resources through a solve ---- */

static void test_resources_pick_cheapest_fit(void **state)
{
  struct tb t;
  struct carp_sched_pod *p;
  const struct carp_sched_claim *c;
  tb_init(&t);
  tb_standard(&t);
  p = tb_pod(&t, "p", "3", "1Gi");
  tb_solve(&t);
  c = tb_claim(&t, p);
  assert_string_equal(tb_claim_type(&t, c), "c4");
  assert_int_equal(c->ninstance_types, 2); /* c4 and c8, cheapest first */
  assert_string_equal(t.types[c->instance_types[1]].name, "c8");
  assert_true(c->prices[0] < c->prices[1]);
  assert_true(c->price == c->prices[0]);
  assert_true(t.res->price == c->price);
  tb_free(&t);
}

static void test_resources_overhead_subtracted(void **state)
{
  struct tb t;
  struct carp_sched_pod *p, *q;
  uint32_t c4;
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  c4 = tb_type(&t, "c4", "4", "8Gi", "40", "z1", 1.2);
  tb_type(&t, "c8", "8", "16Gi", "80", "z1", 2.4);
  t.tx[c4].kube[t.types[c4].nkube_reserved++] =
      (struct carp_sched_quantity){"cpu", 300};
  t.tx[c4].sys[t.types[c4].nsystem_reserved++] =
      (struct carp_sched_quantity){"cpu", 100};
  t.tx[c4].evict[t.types[c4].neviction_threshold++] =
      (struct carp_sched_quantity){"memory", tb_q("1Gi")};
  tb_pool(&t, "default", 0);
  p = tb_pod(&t, "p", "3700m", "1Gi"); /* c4 allocatable is 3600m */
  tb_pod_selector(&t, p, "k", "v");
  tb_pod_required(&t, p, 0, "k", CARP_SCHED_OP_DOES_NOT_EXIST, "");
  q = tb_pod(&t, "q", "1", "7500Mi"); /* c4 allocatable is 7Gi */
  tb_solve(&t);
  assert_null(tb_claim(&t, p)); /* nodeSelector k=v vs DoesNotExist k */
  tb_free(&t);

  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  c4 = tb_type(&t, "c4", "4", "8Gi", "40", "z1", 1.2);
  tb_type(&t, "c8", "8", "16Gi", "80", "z1", 2.4);
  t.tx[c4].kube[t.types[c4].nkube_reserved++] =
      (struct carp_sched_quantity){"cpu", 300};
  t.tx[c4].sys[t.types[c4].nsystem_reserved++] =
      (struct carp_sched_quantity){"cpu", 100};
  t.tx[c4].evict[t.types[c4].neviction_threshold++] =
      (struct carp_sched_quantity){"memory", tb_q("1Gi")};
  tb_pool(&t, "default", 0);
  p = tb_pod(&t, "p", "3700m", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, p)), "c8");
  tb_free(&t);

  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  c4 = tb_type(&t, "c4", "4", "8Gi", "40", "z1", 1.2);
  tb_type(&t, "c8", "8", "16Gi", "80", "z1", 2.4);
  t.tx[c4].evict[t.types[c4].neviction_threshold++] =
      (struct carp_sched_quantity){"memory", tb_q("1Gi")};
  tb_pool(&t, "default", 0);
  q = tb_pod(&t, "q", "1", "7500Mi");
  tb_solve(&t);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, q)), "c8");
  tb_free(&t);
}

static void test_resources_extended_and_pods(void **state)
{
  struct tb t;
  struct carp_sched_pod *g1, *g2, *s1;
  uint32_t gpu, disk;
  tb_init(&t);
  tb_standard(&t);
  gpu = tb_type(&t, "g4", "4", "16Gi", "40", "z1", 5.0);
  tb_type_cap(&t, gpu, "nvidia.com/gpu", "1");
  disk = tb_type(&t, "d2", "2", "4Gi", "20", "z1", 0.9);
  tb_type_cap(&t, disk, "ephemeral-storage", "100Gi");
  g1 = tb_pod(&t, "gpu1", "1", "1Gi");
  tb_pod_request(&t, g1, "nvidia.com/gpu", "1");
  g2 = tb_pod(&t, "gpu2", "1", "1Gi");
  tb_pod_request(&t, g2, "nvidia.com/gpu", "2");
  s1 = tb_pod(&t, "disk", "500m", "1Gi");
  tb_pod_request(&t, s1, "ephemeral-storage", "50Gi");
  tb_solve(&t);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, g1)), "g4");
  assert_null(tb_claim(&t, g2));
  assert_int_equal(tb_refusal(&t, g2, "default")->reason,
                   CARP_SCHED_REASON_RESOURCES);
  assert_string_equal(tb_refusal(&t, g2, "default")->detail, "nvidia.com/gpu");
  assert_non_null(strstr(tb_unsched_message(&t, g2),
                         "no instance type has enough nvidia.com/gpu"));
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, s1)), "d2");
  tb_free(&t);

  /* a type that holds 2 pods: 5 tiny pods need 3 claims of it */
  tb_init(&t);
  tb_type(&t, "tiny", "8", "16Gi", "2", "z1", 1.0);
  tb_pool(&t, "default", 0);
  for (int i = 0; i < 5; i++)
    tb_pod(&t, "p", "10m", "10Mi");
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 5);
  assert_int_equal(t.res->nclaims, 3);
  tb_free(&t);
}

/* GPUs as the Proxmox provider offers them: GPU types carry the extended
 * resource and carpenter.dev/instance-gpu-* labels, the others say
 * DoesNotExist for those labels. A pod asking for a GPU (by resource or
 * by label) gets a GPU type; one that does not gets a GPU type only when
 * nothing else fits; GPU types whose offerings are all unavailable are
 * named as such. */
static void gpu_labels(struct tb *t, uint32_t i, const char *count)
{
  struct carp_sched_instance_type *it = &t->types[i];
  struct carp_sched_requirement *r = &t->tx[i].reqs[it->nrequirements++];
  if (count)
    tb_req(t, r, CARP_LABEL_INSTANCE_GPU_COUNT, CARP_SCHED_OP_IN, count);
  else
    tb_req(t, r, CARP_LABEL_INSTANCE_GPU_COUNT, CARP_SCHED_OP_DOES_NOT_EXIST,
           "");
}

static uint32_t gpu_cluster(struct tb *t, int available)
{
  uint32_t g;
  tb_init(t);
  tb_standard(t);
  for (uint32_t i = 0; i < 3; i++)
    gpu_labels(t, i, NULL);
  g = tb_type(t, "g4", "4", "16Gi", "40", "", 5.0);
  tb_type_offering(t, g, "z1", "on-demand", 5.0, available);
  tb_type_cap(t, g, "nvidia.com/gpu", "1");
  gpu_labels(t, g, "1");
  return g;
}

static int has_option(const struct tb *t, const struct carp_sched_claim *c,
                      const char *name)
{
  for (size_t i = 0; i < c->ninstance_types; i++)
    if (!strcmp(t->types[c->instance_types[i]].name, name))
      return 1;
  return 0;
}

static void test_gpu_types(void **state)
{
  struct tb t;
  struct carp_sched_pod *gpu, *plain, *big, *by_label;
  const struct carp_sched_claim *c;
  (void)state;

  gpu_cluster(&t, 1);
  gpu = tb_pod(&t, "gpu", "1", "1Gi");
  tb_pod_request(&t, gpu, "nvidia.com/gpu", "1");
  tb_solve(&t);
  c = tb_claim(&t, gpu);
  assert_non_null(c);
  assert_int_equal(c->ninstance_types, 1);
  assert_string_equal(tb_claim_type(&t, c), "g4");
  tb_free(&t);

  /* a plain pod alone: the cheapest non-GPU type; GPU types only as the
   * dearest fallback */
  gpu_cluster(&t, 1);
  plain = tb_pod(&t, "plain", "1", "1Gi");
  tb_solve(&t);
  c = tb_claim(&t, plain);
  assert_string_equal(tb_claim_type(&t, c), "c2");
  assert_string_equal(t.types[c->instance_types[c->ninstance_types - 1]].name,
                      "g4");
  tb_free(&t);

  /* ...unless nothing else fits it */
  gpu_cluster(&t, 1);
  t.tx[3].cap[1].milli = tb_q("64Gi"); /* only g4 has 32Gi to spare */
  big = tb_pod(&t, "big", "1", "32Gi");
  tb_solve(&t);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, big)), "g4");
  tb_free(&t);

  /* asking by label: Gt 0 excludes the types that say DoesNotExist */
  gpu_cluster(&t, 1);
  by_label = tb_pod(&t, "label", "1", "1Gi");
  tb_pod_required(&t, by_label, 0, CARP_LABEL_INSTANCE_GPU_COUNT,
                  CARP_SCHED_OP_GT, "0");
  plain = tb_pod(&t, "no-gpu", "1", "1Gi");
  tb_pod_required(&t, plain, 0, CARP_LABEL_INSTANCE_GPU_COUNT,
                  CARP_SCHED_OP_DOES_NOT_EXIST, "");
  tb_solve(&t);
  c = tb_claim(&t, by_label);
  assert_non_null(c);
  assert_int_equal(c->ninstance_types, 1);
  assert_string_equal(tb_claim_type(&t, c), "g4");
  c = tb_claim(&t, plain);
  assert_false(has_option(&t, c, "g4"));
  tb_free(&t);

  /* the usual setup: a tainted GPU pool that takes only GPU types, tried
   * first, and a default pool that may launch anything */
  gpu_cluster(&t, 1);
  {
    struct carp_sched_nodepool *gp = tb_pool(&t, "gpu", 10);
    tb_pool_req(&t, gp, CARP_LABEL_INSTANCE_GPU_COUNT, CARP_SCHED_OP_EXISTS, "",
                0);
    tb_pool_taint(&t, gp, "nvidia.com/gpu", "true", NS, 0);
  }
  /* the plain pod comes first in the queue's usual order (bigger, older):
   * were it placed first, the GPU pod would join its default-pool claim
   * and make a GPU node of it */
  plain = tb_pod(&t, "plain", "1", "1Gi");
  gpu = tb_pod(&t, "gpu", "500m", "512Mi");
  tb_pod_request(&t, gpu, "nvidia.com/gpu", "1");
  tb_pod_toleration(&t, gpu, "nvidia.com/gpu", EQ, "true", NS);
  tb_solve(&t);
  assert_string_equal(t.p.nodepools[tb_claim(&t, gpu)->nodepool].name, "gpu");
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, gpu)), "g4");
  assert_string_equal(t.p.nodepools[tb_claim(&t, plain)->nodepool].name,
                      "default");
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, plain)), "c2");
  tb_free(&t);

  /* the GPU type's only offering is out of capacity (its devices are all
   * in use): the pod waits, and says why */
  gpu_cluster(&t, 0);
  gpu = tb_pod(&t, "gpu", "1", "1Gi");
  tb_pod_request(&t, gpu, "nvidia.com/gpu", "1");
  tb_solve(&t);
  assert_null(tb_claim(&t, gpu));
  assert_int_equal(tb_refusal(&t, gpu, "default")->reason,
                   CARP_SCHED_REASON_RESOURCES);
  assert_non_null(strstr(tb_unsched_message(&t, gpu),
                         "instance types with enough nvidia.com/gpu are "
                         "unavailable (no capacity or devices free in the "
                         "allowed zones)"));
  tb_free(&t);

  /* ...and a pool that takes only GPU types says so too */
  gpu_cluster(&t, 0);
  tb_pool_req(&t, &t.pools[0], CARP_LABEL_INSTANCE_GPU_COUNT,
              CARP_SCHED_OP_EXISTS, "", 0);
  gpu = tb_pod(&t, "gpu", "1", "1Gi");
  tb_pod_request(&t, gpu, "nvidia.com/gpu", "1");
  tb_solve(&t);
  assert_int_equal(tb_refusal(&t, gpu, "default")->reason,
                   CARP_SCHED_REASON_INSTANCE_TYPE);
  assert_non_null(strstr(tb_unsched_message(&t, gpu),
                         "the instance types that meet the requirements are "
                         "unavailable"));
  /* a pool whose types never had a GPU keeps the plain message */
  plain = tb_pod(&t, "selector", "1", "1Gi");
  tb_pod_selector(&t, plain, CARP_LABEL_INSTANCE_TYPE, "nosuch");
  tb_solve(&t);
  assert_non_null(strstr(tb_unsched_message(&t, plain),
                         "no instance type met the requirements"));
  tb_free(&t);
}

static void test_existing_node_capacity(void **state)
{
  struct tb t;
  struct carp_sched_node *n;
  struct carp_sched_pod *fits, *nofit;
  tb_init(&t);
  tb_standard(&t);
  n = tb_node(&t, "n1", "default", "z1", "4", "8Gi", "110");
  tb_node_used(&t, n, "cpu", "3");
  tb_node_used(&t, n, "memory", "1Gi");
  tb_node_used(&t, n, "pods", "5");
  nofit = tb_pod(&t, "big", "1500m", "1Gi");
  fits = tb_pod(&t, "small", "500m", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, fits), "node:n1");
  assert_string_equal(tb_where(&t, nofit), "claim:0");
  assert_int_equal(t.res->nclaims, 1);
  tb_free(&t);

  /* a full pod count keeps pods off, whatever the CPU */
  tb_init(&t);
  tb_standard(&t);
  n = tb_node(&t, "n1", "default", "z1", "4", "8Gi", "3");
  tb_node_used(&t, n, "pods", "3");
  fits = tb_pod(&t, "small", "10m", "10Mi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, fits), "claim:0");
  tb_free(&t);
}

/* ---- DaemonSet overhead ---- */

static void test_daemon_overhead(void **state)
{
  struct tb t;
  struct carp_sched_pod *p;
  struct carp_sched_daemon *d;
  const struct carp_sched_claim *c;
  int64_t cpu = 0, pods = 0;

  /* every node runs a 1 vCPU daemon: 3500m no longer fits c4 (4 - 1) */
  tb_init(&t);
  tb_standard(&t);
  tb_daemon(&t, "agent", "1", "100Mi");
  p = tb_pod(&t, "p", "3500m", "1Gi");
  tb_solve(&t);
  c = tb_claim(&t, p);
  assert_string_equal(tb_claim_type(&t, c), "c8");
  for (size_t i = 0; i < c->nrequests; i++) {
    if (strcmp(c->requests[i].name, "cpu") == 0)
      cpu = c->requests[i].milli;
    if (strcmp(c->requests[i].name, "pods") == 0)
      pods = c->requests[i].milli;
  }
  assert_int_equal(cpu, 4500); /* pod + daemon */
  assert_int_equal(pods, 2000);
  tb_free(&t);

  /* a daemon for arm64 nodes only does not run here */
  tb_init(&t);
  tb_standard(&t);
  d = tb_daemon(&t, "arm-agent", "1", "100Mi");
  tb_daemonx(&t, d)->nsel[d->nnode_selector++] =
      (struct carp_sched_label){CARP_LABEL_ARCH, "arm64"};
  p = tb_pod(&t, "p", "3500m", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, p)), "c4");
  tb_free(&t);

  /* a daemon that does not tolerate the pool's taint does not run there */
  tb_init(&t);
  {
    struct carp_sched_nodepool *np = tb_standard(&t);
    tb_pool_taint(&t, np, "dedicated", "x", NS, 0);
  }
  tb_daemon(&t, "agent", "1", "100Mi");
  p = tb_pod(&t, "p", "3500m", "1Gi");
  tb_pod_toleration(&t, p, "dedicated", EQ, "x", NS);
  tb_solve(&t);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, p)), "c4");
  tb_free(&t);

  /* a daemon with affinity to big types (instance-cpu > 4) runs on c8 only,
   * so c4 keeps its 4 vCPU */
  tb_init(&t);
  tb_standard(&t);
  d = tb_daemon(&t, "big-agent", "1", "100Mi");
  {
    struct tb_daemon *x = tb_daemonx(&t, d);
    d->nrequired_terms = 1;
    x->terms[0].exprs = x->exprs[0];
    x->terms[0].nexprs = 1;
    tb_req(&t, &x->exprs[0][0], CARP_LABEL_INSTANCE_CPU, CARP_SCHED_OP_GT, "4");
  }
  p = tb_pod(&t, "p", "3500m", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, p)), "c4");
  tb_free(&t);

  /* a daemon's host port blocks a pod with the same port on that pool */
  tb_init(&t);
  tb_standard(&t);
  d = tb_daemon(&t, "exporter", "10m", "10Mi");
  {
    static const struct carp_sched_host_port hp = {9100, CARP_SCHED_TCP, NULL};
    d->host_ports = &hp;
    d->nhost_ports = 1;
  }
  p = tb_pod(&t, "p", "100m", "10Mi");
  tb_pod_port(&t, p, 9100, NULL);
  tb_solve(&t);
  assert_null(tb_claim(&t, p));
  assert_int_equal(tb_refusal(&t, p, "default")->reason,
                   CARP_SCHED_REASON_HOST_PORT);
  assert_string_equal(tb_refusal(&t, p, "default")->detail, "9100");
  tb_free(&t);
}

/* ---- taints ---- */

static void test_pool_taints(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *gpu;
  struct carp_sched_pod *plain, *tol, *all;
  tb_init(&t);
  tb_standard(&t);
  gpu = tb_pool(&t, "gpu", 50);
  tb_pool_taint(&t, gpu, "dedicated", "gpu", NS, 0);
  tb_pool_taint(&t, gpu, "example.com/booting", NULL, NS, 1); /* startup */
  /* tolerating pods open on the heavier tainted pool; the plain pod cannot
   * join them and opens on the default pool */
  tol = tb_pod(&t, "tol", "1", "1Gi");
  tb_pod_toleration(&t, tol, "dedicated", EQ, "gpu", NS);
  all = tb_pod(&t, "all", "1", "1Gi");
  tb_pod_toleration(&t, all, NULL, EX, NULL, ALL);
  plain = tb_pod(&t, "plain", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(t.pools[tb_claim(&t, tol)->nodepool].name, "gpu");
  assert_string_equal(t.pools[tb_claim(&t, all)->nodepool].name, "gpu");
  assert_string_equal(t.pools[tb_claim(&t, plain)->nodepool].name, "default");
  assert_int_equal(t.res->nclaims, 2);
  tb_free(&t);

  /* only a tainted pool: the refusal names the taint */
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  gpu = tb_pool(&t, "gpu", 0);
  tb_pool_taint(&t, gpu, "dedicated", "gpu", NS, 0);
  plain = tb_pod(&t, "plain", "1", "1Gi");
  tb_pod_toleration(&t, plain, "dedicated", EQ, "gpu", NE); /* wrong effect */
  tb_solve(&t);
  assert_null(tb_claim(&t, plain));
  assert_int_equal(tb_refusal(&t, plain, "gpu")->reason,
                   CARP_SCHED_REASON_TAINT);
  assert_string_equal(tb_refusal(&t, plain, "gpu")->detail, "dedicated");
  assert_string_equal(tb_refusal(&t, plain, "gpu")->message,
                      "did not tolerate taint \"dedicated=gpu:NoSchedule\"");
  tb_free(&t);
}

static void test_prefer_no_schedule_relaxed_last(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *soft;
  struct carp_sched_pod *p;
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  soft = tb_pool(&t, "soft", 0);
  tb_pool_taint(&t, soft, "spot-ish", NULL, PNS, 0);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(t.pools[tb_claim(&t, p)->nodepool].name, "soft");
  assert_true(t.res->stats.relaxations >= 1);
  tb_free(&t);

  /* with an untainted pool of lower weight, the soft taint is respected */
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  soft = tb_pool(&t, "soft", 10);
  tb_pool_taint(&t, soft, "spot-ish", NULL, PNS, 0);
  tb_pool(&t, "plain", 0);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(t.pools[tb_claim(&t, p)->nodepool].name, "plain");
  tb_free(&t);
}

static void test_node_taints(void **state)
{
  struct tb t;
  struct carp_sched_node *ne, *boot, *dis;
  struct carp_sched_pod *p;
  struct carp_sched_nodepool *np;
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_taint(&t, np, "example.com/booting", NULL, NS, 1);
  ne = tb_node(&t, "tainted", "default", "z1", "4", "8Gi", "110");
  tb_node_taint(&t, ne, "maintenance", NULL, NE);
  dis = tb_node(&t, "disrupted", "default", "z1", "4", "8Gi", "110");
  tb_node_taint(&t, dis, CARP_TAINT_DISRUPTED, NULL, NS);
  dis->nodepool = "default";
  /* not initialized yet: unregistered, not-ready and the pool's startup
   * taint will go away, so pods may be planned onto it */
  boot = tb_node(&t, "booting", "default", "z1", "4", "8Gi", "110");
  boot->initialized = 0;
  tb_node_taint(&t, boot, CARP_TAINT_UNREGISTERED, NULL, NE);
  tb_node_taint(&t, boot, "node.kubernetes.io/not-ready", NULL, NE);
  tb_node_taint(&t, boot, "example.com/booting", NULL, NS);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, p), "node:booting");
  tb_free(&t);

  /* an initialized node keeps its startup taint */
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_taint(&t, np, "example.com/booting", NULL, NS, 1);
  boot = tb_node(&t, "booting", "default", "z1", "4", "8Gi", "110");
  tb_node_taint(&t, boot, "example.com/booting", NULL, NS);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, p), "claim:0");
  tb_free(&t);
}

/* ---- node affinity ---- */

static void test_required_terms_or(void **state)
{
  struct tb t;
  struct carp_sched_pod *p;
  tb_init(&t);
  tb_standard(&t);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_required(&t, p, 0, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z9");
  tb_pod_required(&t, p, 1, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z2");
  tb_solve(&t);
  assert_string_equal(tb_claim_req(tb_claim(&t, p), CARP_LABEL_ZONE), "In z2");
  tb_free(&t);

  /* the first term wins when it can be met */
  tb_init(&t);
  tb_standard(&t);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_required(&t, p, 0, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z3");
  tb_pod_required(&t, p, 1, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z2");
  tb_solve(&t);
  assert_string_equal(tb_claim_req(tb_claim(&t, p), CARP_LABEL_ZONE), "In z3");
  tb_free(&t);
}

static void test_preferred_affinity_relaxed_heaviest_first(void **state)
{
  struct tb t;
  struct carp_sched_pod *p;
  struct carp_sched_nodepool *np;
  tb_init(&t);
  tb_standard(&t);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_preferred(&t, p, 0, 10, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z3");
  tb_pod_preferred(&t, p, 1, 50, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z2");
  tb_solve(&t);
  assert_string_equal(tb_claim_req(tb_claim(&t, p), CARP_LABEL_ZONE), "In z2");
  tb_free(&t);

  /* the heaviest cannot be met: the next one is tried */
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_req(&t, np, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z1,z3", 0);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_preferred(&t, p, 0, 10, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z3");
  tb_pod_preferred(&t, p, 1, 50, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z2");
  tb_solve(&t);
  assert_string_equal(tb_claim_req(tb_claim(&t, p), CARP_LABEL_ZONE), "In z3");
  tb_free(&t);

  /* none can be met: scheduled anyway */
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_req(&t, np, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z1", 0);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_preferred(&t, p, 0, 10, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z3");
  tb_pod_preferred(&t, p, 1, 50, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z2");
  tb_solve(&t);
  assert_string_equal(tb_claim_req(tb_claim(&t, p), CARP_LABEL_ZONE), "In z1");
  assert_true(t.res->stats.relaxations >= 2);
  tb_free(&t);

  /* PREFERENCE_POLICY=Ignore: preferences never narrow */
  tb_init(&t);
  tb_standard(&t);
  t.p.ignore_preferences = 1;
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_preferred(&t, p, 0, 10, CARP_LABEL_ZONE, CARP_SCHED_OP_IN, "z3");
  tb_solve(&t);
  assert_string_equal(tb_claim_req(tb_claim(&t, p), CARP_LABEL_ZONE), "");
  tb_free(&t);
}

/* ---- host ports ---- */

static void test_host_ports_solve(void **state)
{
  struct tb t;
  struct carp_sched_pod *a, *b, *c, *d;
  struct carp_sched_node *n;
  tb_init(&t);
  tb_standard(&t);
  a = tb_pod(&t, "a", "100m", "10Mi");
  tb_pod_port(&t, a, 8080, NULL);
  b = tb_pod(&t, "b", "100m", "10Mi");
  tb_pod_port(&t, b, 8080, NULL);
  c = tb_pod(&t, "c", "100m", "10Mi");
  tb_pod_port(&t, c, 8443, "10.0.0.1");
  d = tb_pod(&t, "d", "100m", "10Mi");
  tb_pod_port(&t, d, 8443, "10.0.0.2");
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 4);
  assert_ptr_not_equal(tb_claim(&t, a), tb_claim(&t, b));
  assert_ptr_equal(tb_claim(&t, c), tb_claim(&t, d));
  tb_free(&t);

  /* a port in use on an existing node */
  tb_init(&t);
  tb_standard(&t);
  n = tb_node(&t, "n1", "default", "z1", "4", "8Gi", "110");
  tb_nodex(&t, n)->ports[n->nhost_ports++] =
      (struct carp_sched_host_port){80, CARP_SCHED_TCP, NULL};
  a = tb_pod(&t, "a", "100m", "10Mi");
  tb_pod_port(&t, a, 80, "192.168.1.1");
  b = tb_pod(&t, "b", "100m", "10Mi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, a), "claim:0");
  assert_string_equal(tb_where(&t, b), "node:n1");
  tb_free(&t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tolerations),
      cmocka_unit_test(test_taints_tolerated),
      cmocka_unit_test(test_host_ports),
      cmocka_unit_test(test_selectors),
      cmocka_unit_test(test_allocatable),
      cmocka_unit_test(test_resources_pick_cheapest_fit),
      cmocka_unit_test(test_resources_overhead_subtracted),
      cmocka_unit_test(test_resources_extended_and_pods),
      cmocka_unit_test(test_gpu_types),
      cmocka_unit_test(test_existing_node_capacity),
      cmocka_unit_test(test_daemon_overhead),
      cmocka_unit_test(test_pool_taints),
      cmocka_unit_test(test_prefer_no_schedule_relaxed_last),
      cmocka_unit_test(test_node_taints),
      cmocka_unit_test(test_required_terms_or),
      cmocka_unit_test(test_preferred_affinity_relaxed_heaviest_first),
      cmocka_unit_test(test_host_ports_solve),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
