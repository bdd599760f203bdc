/* Unit tests for the solve as a whole: where pods go first (initialized
 * nodes, other nodes, in-flight claims, then new claims from NodePools by
 * weight), strict NodePool limits (nodes, cpu, usage counted, the largest
 * option reserved), prices and offerings, queue order, grouping, the
 * consolidation switches, determinism, refusals and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "test_sched_util.h"

#define HOST CARP_LABEL_HOSTNAME

static struct carp_sched_pod *anti_pod(struct tb *t, const char *cpu)
{
  struct carp_sched_pod *p = tb_pod(t, "nginx", cpu, "100Mi");
  tb_pod_label(t, p, "app", "nginx");
  tb_pod_term(t, p, TB_ANTI, HOST, "app", "nginx", 0);
  return p;
}

/* Sum over claims of the largest option's capacity of a resource. */
static int64_t reserved(struct tb *t, const char *res)
{
  int64_t sum = 0;
  for (size_t c = 0; c < t->res->nclaims; c++) {
    const struct carp_sched_claim *cl = &t->res->claims[c];
    int64_t mx = 0;
    for (size_t i = 0; i < cl->ninstance_types; i++) {
      const struct carp_sched_instance_type *it =
          &t->types[cl->instance_types[i]];
      for (size_t k = 0; k < it->ncapacity; k++)
        if (strcmp(it->capacity[k].name, res) == 0 &&
            it->capacity[k].milli > mx)
          mx = it->capacity[k].milli;
    }
    sum += mx;
  }
  return sum;
}

/* ---- where pods go first ---- */

static void test_existing_then_in_flight_then_new(void **state)
{
  struct tb t;
  struct carp_sched_node *fresh, *old, *flight;
  struct carp_sched_pod *p[4];
  tb_init(&t);
  tb_standard(&t);
  flight = tb_node(&t, "flight", "default", "z1", "2", "4Gi", "110");
  flight->in_flight = 1;
  flight->initialized = 0;
  fresh = tb_node(&t, "fresh", "default", "z1", "2", "4Gi", "110");
  fresh->initialized = 0;
  old = tb_node(&t, "old", "default", "z1", "2", "4Gi", "110");
  (void)old;
  for (int i = 0; i < 4; i++)
    p[i] = tb_pod(&t, "p", "2", "1Gi");
  tb_solve(&t);
  /* initialized first, then not initialized, then in flight, then new */
  assert_string_equal(tb_where(&t, p[0]), "node:old");
  assert_string_equal(tb_where(&t, p[1]), "node:fresh");
  assert_string_equal(tb_where(&t, p[2]), "node:flight");
  assert_string_equal(tb_where(&t, p[3]), "claim:0");
  tb_free(&t);
}

static void test_deleting_nodes_are_not_targets(void **state)
{
  struct tb t;
  struct carp_sched_node *n;
  struct carp_sched_pod *p;
  tb_init(&t);
  tb_standard(&t);
  n = tb_node(&t, "going", "default", "z1", "8", "16Gi", "110");
  n->deleting = 1;
  n = tb_node(&t, "disrupted", "default", "z1", "8", "16Gi", "110");
  tb_node_taint(&t, n, CARP_TAINT_DISRUPTED, NULL,
                CARP_SCHED_EFFECT_NO_SCHEDULE);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, p), "claim:0");
  tb_free(&t);
}

static void test_pool_order(void **state)
{
  struct tb t;
  struct carp_sched_pod *p;
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  tb_pool(&t, "light", 1);
  tb_pool(&t, "heavy", 90);
  tb_pool(&t, "mid", 50);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(t.pools[tb_claim(&t, p)->nodepool].name, "heavy");
  tb_free(&t);

  /* equal weights: by name, descending, as Karpenter's OrderByWeight */
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  tb_pool(&t, "alpha", 0);
  tb_pool(&t, "beta", 0);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(t.pools[tb_claim(&t, p)->nodepool].name, "beta");
  tb_free(&t);
}

static void test_queue_order_biggest_first(void **state)
{
  struct tb t;
  struct carp_sched_pod *small, *big;
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "4", "8Gi", "110");
  small = tb_pod(&t, "small", "1", "1Gi"); /* older */
  big = tb_pod(&t, "big", "4", "1Gi");
  tb_pod_selector(&t, small, "x", "1"); /* keep small off big's claim */
  tb_pod_required(&t, small, 0, "x", CARP_SCHED_OP_DOES_NOT_EXIST, "");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, big), "node:n1");
  tb_free(&t);

  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "4", "8Gi", "110");
  small = tb_pod(&t, "small", "1", "1Gi");
  big = tb_pod(&t, "big", "4", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, big), "node:n1");
  assert_string_equal(tb_where(&t, small), "claim:0");
  tb_free(&t);
}

/* ---- limits ---- */

static void test_limit_nodes(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_limit(&t, np, "nodes", "5", "3"); /* 3 in use: 2 more */
  for (int i = 0; i < 5; i++)
    anti_pod(&t, "100m");
  tb_solve(&t);
  assert_int_equal(t.res->nclaims, 2);
  assert_int_equal(t.res->nscheduled, 2);
  assert_int_equal(t.res->nunschedulable, 3);
  for (size_t u = 0; u < t.res->nunschedulable; u++) {
    const struct carp_sched_refusal *r = &t.res->unschedulable[u].refusals[0];
    assert_int_equal(r->reason, CARP_SCHED_REASON_LIMIT);
    assert_string_equal(r->detail, "nodes");
  }
  tb_free(&t);

  /* nodes remaining 0: the pool is closed */
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_limit(&t, np, "nodes", "3", "3");
  tb_pod(&t, "p", "100m", "100Mi");
  tb_solve(&t);
  assert_int_equal(t.res->nclaims, 0);
  tb_free(&t);
}

static void test_limit_cpu_reserves_largest_option(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  struct carp_sched_pod *p;
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_limit(&t, np, "cpu", "10", "4");
  for (int i = 0; i < 12; i++)
    anti_pod(&t, "1");
  tb_solve(&t);
  assert_true(t.res->nclaims >= 1);
  assert_true(reserved(&t, "cpu") + 4000 <= 10000);
  assert_int_equal(t.res->nscheduled + t.res->nunschedulable, 12);
  tb_free(&t);

  /* only c8 holds 5 vCPU, and 8 > 6 left: refused on cpu */
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_limit(&t, np, "cpu", "10", "4");
  p = tb_pod(&t, "p", "5", "1Gi");
  tb_solve(&t);
  assert_null(tb_claim(&t, p));
  assert_int_equal(tb_refusal(&t, p, "default")->reason,
                   CARP_SCHED_REASON_LIMIT);
  assert_string_equal(tb_refusal(&t, p, "default")->detail, "cpu");
  assert_non_null(strstr(tb_refusal(&t, p, "default")->message, "cpu limit"));
  tb_free(&t);

  /* memory limit: options that would breach it are dropped */
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_limit(&t, np, "memory", "10Gi", NULL);
  p = tb_pod(&t, "p", "500m", "1Gi");
  tb_solve(&t);
  assert_non_null(tb_claim(&t, p));
  for (size_t i = 0; i < tb_claim(&t, p)->ninstance_types; i++)
    assert_string_not_equal(t.types[tb_claim(&t, p)->instance_types[i]].name,
                            "c8");
  tb_free(&t);
}

static void test_limit_many_pods_never_exceeded(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_limit(&t, np, "cpu", "64", "10");
  tb_pool_limit(&t, np, "nodes", "20", "2");
  for (int i = 0; i < 300; i++)
    tb_pod(&t, "p", i % 3 ? "700m" : "1500m", "1Gi");
  tb_solve(&t);
  assert_true(t.res->nclaims <= 18);
  assert_true(reserved(&t, "cpu") + 10000 <= 64000);
  assert_true(t.res->nunschedulable > 0);
  tb_free(&t);
}

/* ---- prices and offerings ---- */

static void test_prices_and_offerings(void **state)
{
  struct tb t;
  struct carp_sched_pod *p, *od;
  uint32_t cheap, gone;
  const struct carp_sched_claim *c;
  tb_init(&t);
  tb_type(&t, "small", "2", "4Gi", "20", "z1", 0.6);
  cheap = tb_type(&t, "big-cheap", "8", "16Gi", "80", "z1", 0.5);
  gone = tb_type(&t, "gone", "4", "8Gi", "40", "", 0);
  tb_type_offering(&t, gone, "z1", "on-demand", 0.01, 0); /* unavailable */
  tb_type_offering(&t, cheap, "z1", "spot", 0.2, 1);
  tb_pool(&t, "default", 0);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  c = tb_claim(&t, p);
  assert_string_equal(tb_claim_type(&t, c), "big-cheap");
  assert_true(c->price > 0.19 && c->price < 0.21); /* the spot offering */
  for (size_t i = 0; i < c->ninstance_types; i++)
    assert_string_not_equal(t.types[c->instance_types[i]].name, "gone");
  for (size_t i = 1; i < c->ninstance_types; i++)
    assert_true(c->prices[i - 1] <= c->prices[i]);
  tb_free(&t);

  /* on-demand required: the spot price does not apply */
  tb_init(&t);
  tb_type(&t, "small", "2", "4Gi", "20", "z1", 0.6);
  cheap = tb_type(&t, "big-cheap", "8", "16Gi", "80", "z1", 0.5);
  tb_type_offering(&t, cheap, "z1", "spot", 0.2, 1);
  tb_pool(&t, "default", 0);
  od = tb_pod(&t, "od", "1", "1Gi");
  tb_pod_selector(&t, od, CARP_LABEL_CAPACITY_TYPE, "on-demand");
  tb_solve(&t);
  c = tb_claim(&t, od);
  assert_true(c->price > 0.49 && c->price < 0.51);
  assert_string_equal(tb_claim_req(c, CARP_LABEL_CAPACITY_TYPE),
                      "In on-demand");
  tb_free(&t);

  /* a zone no available offering serves */
  tb_init(&t);
  tb_standard(&t);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_selector(&t, p, CARP_LABEL_ZONE, "z9");
  tb_solve(&t);
  assert_null(tb_claim(&t, p));
  tb_free(&t);
}

/* ---- consolidation switches ---- */

static void test_no_new_claims(void **state)
{
  struct tb t;
  struct carp_sched_pod *a, *b;
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "2", "4Gi", "110");
  t.p.no_new_claims = 1;
  a = tb_pod(&t, "a", "1500m", "1Gi");
  b = tb_pod(&t, "b", "1500m", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, a), "node:n1");
  assert_string_equal(tb_where(&t, b), "-");
  assert_int_equal(tb_refusal(&t, b, "default")->reason,
                   CARP_SCHED_REASON_CLAIM_LIMIT);
  tb_free(&t);

  tb_init(&t);
  tb_standard(&t);
  t.p.max_new_claims = 1;
  for (int i = 0; i < 3; i++)
    anti_pod(&t, "100m");
  tb_solve(&t);
  assert_int_equal(t.res->nclaims, 1);
  assert_int_equal(t.res->nscheduled, 1);
  tb_free(&t);
}

/* ---- grouping, determinism, results ---- */

static void test_grouping(void **state)
{
  struct tb t;
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 10; i++) {
    struct carp_sched_pod *p = tb_pod(&t, "web", "100m", "100Mi");
    char hash[16];
    snprintf(hash, sizeof(hash), "h%d", i);
    tb_pod_label(&t, p, "pod-template-hash", hash); /* nobody selects it */
    tb_pod_label(&t, p, "app", "web");
  }
  tb_solve(&t);
  assert_int_equal(t.res->stats.groups, 1);
  assert_int_equal(t.res->nclaims, 1);
  assert_int_equal(t.res->claims[0].npods, 10);
  tb_free(&t);

  /* once a selector looks at the label, it splits the group */
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 10; i++) {
    struct carp_sched_pod *p = tb_pod(&t, "web", "100m", "100Mi");
    tb_pod_label(&t, p, "color", i % 2 ? "red" : "blue");
  }
  {
    struct carp_sched_pod *s = tb_pod(&t, "s", "100m", "100Mi");
    tb_pod_spread(&t, s, CARP_LABEL_ZONE, 1, CARP_SCHED_DO_NOT_SCHEDULE, 0,
                  "color", "red");
  }
  tb_solve(&t);
  assert_int_equal(t.res->stats.groups, 3);
  tb_free(&t);
}

static void test_deterministic(void **state)
{
  struct tb t;
  struct carp_sched_result *first;
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "4", "8Gi", "110");
  for (int i = 0; i < 200; i++) {
    struct carp_sched_pod *p =
        tb_pod(&t, "p", i % 3 ? "300m" : "1200m", i % 2 ? "512Mi" : "2Gi");
    if (i % 5 == 0) {
      tb_pod_label(&t, p, "app", "s");
      tb_pod_spread(&t, p, CARP_LABEL_ZONE, 1, CARP_SCHED_DO_NOT_SCHEDULE, 0,
                    "app", "s");
    }
    if (i % 7 == 0) {
      tb_pod_label(&t, p, "app", "a");
      tb_pod_term(&t, p, TB_ANTI, HOST, "app", "a", 0);
    }
  }
  assert_int_equal(carp_sched_solve(&t.p, &first), 0);
  tb_solve(&t);
  assert_int_equal(first->nclaims, t.res->nclaims);
  assert_memory_equal(first->assignments, t.res->assignments,
                      t.p.npods * sizeof(*first->assignments));
  for (size_t c = 0; c < first->nclaims; c++) {
    assert_int_equal(first->claims[c].ninstance_types,
                     t.res->claims[c].ninstance_types);
    assert_true(first->claims[c].price == t.res->claims[c].price);
  }
  carp_sched_result_free(first);
  tb_free(&t);
}

static void test_claim_pods_and_requests(void **state)
{
  struct tb t;
  struct carp_sched_pod *a, *b;
  const struct carp_sched_claim *c;
  int64_t cpu = 0, mem = 0, pods = 0;
  tb_init(&t);
  tb_standard(&t);
  a = tb_pod(&t, "a", "1", "1Gi");
  b = tb_pod(&t, "b", "500m", "512Mi");
  tb_solve(&t);
  c = tb_claim(&t, a);
  assert_ptr_equal(c, tb_claim(&t, b));
  assert_int_equal(c->npods, 2);
  assert_int_equal(c->pods[0], tb_pod_index(&t, a));
  assert_int_equal(c->pods[1], tb_pod_index(&t, b));
  assert_int_equal(c->nodepool, 0);
  for (size_t i = 0; i < c->nrequests; i++) {
    if (!strcmp(c->requests[i].name, "cpu"))
      cpu = c->requests[i].milli;
    if (!strcmp(c->requests[i].name, "memory"))
      mem = c->requests[i].milli;
    if (!strcmp(c->requests[i].name, "pods"))
      pods = c->requests[i].milli;
  }
  assert_int_equal(cpu, 1500);
  assert_int_equal(mem, tb_q("1536Mi"));
  assert_int_equal(pods, 2000);
  tb_free(&t);
}

static void test_empty_and_no_pools(void **state)
{
  struct tb t;
  struct carp_sched_pod *p;
  tb_init(&t);
  tb_standard(&t);
  tb_solve(&t);
  assert_int_equal(t.res->nclaims, 0);
  assert_int_equal(t.res->nscheduled, 0);
  tb_free(&t);

  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_solve(&t);
  assert_string_equal(tb_unsched_message(&t, p), "no nodepools");
  tb_free(&t);
}

static void test_bad_input(void **state)
{
  struct tb t;
  struct carp_sched_result *r = (void *)1;
  struct carp_sched_nodepool *np;
  uint32_t bad = 99;
  assert_int_equal(carp_sched_solve(NULL, &r), CARP_EINVAL);
  tb_init(&t);
  tb_standard(&t);
  assert_int_equal(carp_sched_solve(&t.p, NULL), CARP_EINVAL);
  tb_node(&t, "n1", NULL, "z1", "1", "1Gi", "10");
  tb_bound(&t, 5, "a", "b", NULL, NULL, NULL); /* no node 5 */
  assert_int_equal(carp_sched_solve(&t.p, &r), CARP_EINVAL);
  assert_null(r);
  tb_free(&t);

  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_types(&t, np, &bad, 1);
  assert_int_equal(carp_sched_solve(&t.p, &r), CARP_EINVAL);
  tb_free(&t);

  tb_init(&t);
  np = tb_standard(&t);
  np->name = NULL;
  assert_int_equal(carp_sched_solve(&t.p, &r), CARP_EINVAL);
  tb_free(&t);

  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_req(&t, np, "gen", CARP_SCHED_OP_GT, "1,2", 0);
  assert_int_equal(carp_sched_solve(&t.p, &r), CARP_EINVAL);
  tb_free(&t);

  /* a pod's bad requirement is the pod's problem, not the solve's */
  tb_init(&t);
  tb_standard(&t);
  {
    struct carp_sched_pod *p = tb_pod(&t, "p", "1", "1Gi");
    struct carp_sched_pod *q = tb_pod(&t, "q", "1", "1Gi");
    tb_pod_required(&t, p, 0, "gen", CARP_SCHED_OP_LT, "1,2");
    tb_solve(&t);
    assert_null(tb_claim(&t, p));
    assert_non_null(tb_claim(&t, q));
    assert_int_equal(tb_refusal(&t, p, "default")->reason,
                     CARP_SCHED_REASON_REQUIREMENT);
  }
  tb_free(&t);
}

static void test_reason_names(void **state)
{
  assert_string_equal(carp_sched_reason_name(CARP_SCHED_REASON_TAINT), "Taint");
  assert_string_equal(carp_sched_reason_name(CARP_SCHED_REASON_LIMIT), "Limit");
  assert_string_equal(carp_sched_reason_name(CARP_SCHED_REASON_SPREAD),
                      "TopologySpread");
  assert_string_equal(carp_sched_reason_name((enum carp_sched_reason)999),
                      "Unknown");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_existing_then_in_flight_then_new),
      cmocka_unit_test(test_deleting_nodes_are_not_targets),
      cmocka_unit_test(test_pool_order),
      cmocka_unit_test(test_queue_order_biggest_first),
      cmocka_unit_test(test_limit_nodes),
      cmocka_unit_test(test_limit_cpu_reserves_largest_option),
      cmocka_unit_test(test_limit_many_pods_never_exceeded),
      cmocka_unit_test(test_prices_and_offerings),
      cmocka_unit_test(test_no_new_claims),
      cmocka_unit_test(test_grouping),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_claim_pods_and_requests),
      cmocka_unit_test(test_empty_and_no_pools),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_reason_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
