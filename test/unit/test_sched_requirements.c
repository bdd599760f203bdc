/* Unit tests for the scheduling requirements algebra: every operator on
 * present, absent, numeric and non-numeric labels; intersections,
 * including the ones Karpenter gets wrong (Gt 5 ∩ Lt 3, Gt on a non-number);
 * Compatible() with and without the well-known allowance; and, through a
 * solve, node selectors, pool labels, well-known labels and minValues. */
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

#define IN     CARP_SCHED_OP_IN
#define NOTIN  CARP_SCHED_OP_NOT_IN
#define EXISTS CARP_SCHED_OP_EXISTS
#define DNE    CARP_SCHED_OP_DOES_NOT_EXIST
#define GT     CARP_SCHED_OP_GT
#define LT     CARP_SCHED_OP_LT
#define GTE    CARP_SCHED_OP_GTE
#define LTE    CARP_SCHED_OP_LTE

/* Builds a set from "key op v1,v2; key op ..." ("-" for no values). */
static struct carp_sched_reqs *parse(const char *spec)
{
  static const struct {
    const char *name;
    enum carp_sched_op op;
  } ops[] = {{"In", IN}, {"NotIn", NOTIN}, {"Exists", EXISTS}, {"DNE", DNE},
             {"Gt", GT}, {"Lt", LT},       {"Gte", GTE},       {"Lte", LTE}};
  struct carp_sched_reqs *r = carp_sched_reqs_new();
  char *copy = strdup(spec), *save = NULL, *clause;
  for (clause = strtok_r(copy, ";", &save); clause;
       clause = strtok_r(NULL, ";", &save)) {
    char key[128], op[16], vals[256] = "", *vs, *vsave = NULL, *v;
    const char *values[16];
    struct carp_sched_requirement q;
    int n = sscanf(clause, " %127s %15s %255s", key, op, vals);
    size_t nv = 0, k;
    assert_true(n >= 2);
    for (k = 0; k < CARP_ARRAY_LEN(ops); k++)
      if (strcmp(ops[k].name, op) == 0)
        break;
    assert_true(k < CARP_ARRAY_LEN(ops));
    vs = vals;
    if (n == 3 && strcmp(vals, "-") != 0)
      for (v = strtok_r(vs, ",", &vsave); v; v = strtok_r(NULL, ",", &vsave))
        values[nv++] = v;
    q.key = key;
    q.op = ops[k].op;
    q.values = values;
    q.nvalues = nv;
    q.min_values = 0;
    assert_int_equal(carp_sched_reqs_add(r, &q), 0);
  }
  free(copy);
  return r;
}

static void format_is(const struct carp_sched_reqs *r, const char *want)
{
  char buf[512];
  carp_sched_reqs_format(r, buf, sizeof(buf));
  if (strcmp(buf, want) != 0)
    fail_msg("format: got \"%s\", want \"%s\"", buf, want);
}

/* ---- one requirement against one label state ---- */

static void test_operators_on_label_states(void **state)
{
  static const struct {
    const char *spec;
    const char *value; /* NULL: label absent */
    int want;
  } cases[] = {
      {"k In a,b", "a", 1},
      {"k In a,b", "c", 0},
      {"k In a,b", NULL, 0},
      {"k NotIn a", "a", 0},
      {"k NotIn a", "b", 1},
      {"k NotIn a", NULL, 1}, /* NotIn matches a missing label */
      {"k Exists", "x", 1},
      {"k Exists", "", 1},
      {"k Exists", NULL, 0},
      {"k DNE", "x", 0},
      {"k DNE", NULL, 1},
      {"k Gt 5", "6", 1},
      {"k Gt 5", "5", 0},
      {"k Gt 5", "abc", 0}, /* not a number: never matches */
      {"k Gt 5", "6.5", 0},
      {"k Gt 5", "", 0},
      {"k Gt 5", NULL, 0},
      {"k Gt 5", "+7", 1},
      {"k Gt 5", "07", 1},
      {"k Gt -3", "-2", 1},
      {"k Gt 5", "99999999999999999999", 0}, /* overflows int64 */
      {"k Lt 5", "4", 1},
      {"k Lt 5", "5", 0},
      {"k Lt 5", "four", 0},
      {"k Lt 5", NULL, 0},
      {"k Gte 5", "5", 1},
      {"k Gte 5", "4", 0},
      {"k Lte 5", "5", 1},
      {"k Lte 5", "6", 0},
      {"k Gt abc", "6", 0}, /* a bound that is not a number admits nothing */
      {"k Gt abc", NULL, 0},
      {"k Lt 9223372036854775807", "9223372036854775806", 1},
      {"k Gte -9223372036854775808", "-9223372036854775808", 1},
      {"k Lte 9223372036854775807", "9223372036854775807", 1},
      {"other In a", NULL, 1}, /* a key not constrained allows anything */
  };
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    struct carp_sched_reqs *r = parse(cases[i].spec);
    const char *key = strcmp(cases[i].spec, "other In a") == 0 ? "k" : "k";
    int got = carp_sched_reqs_allows(r, key, cases[i].value);
    if (strncmp(cases[i].spec, "other", 5) == 0)
      got = carp_sched_reqs_allows(r, "k", cases[i].value);
    if (got != cases[i].want)
      fail_msg("case %zu: %s with %s: got %d", i, cases[i].spec,
               cases[i].value ? cases[i].value : "(absent)", got);
    carp_sched_reqs_free(r);
  }
}

static void test_int_matches(void **state)
{
  assert_true(carp_sched_int_matches(GT, "3", "4"));
  assert_false(carp_sched_int_matches(GT, "3", "3"));
  assert_true(carp_sched_int_matches(GTE, "3", "3"));
  assert_true(carp_sched_int_matches(LT, "3", "-1"));
  assert_true(carp_sched_int_matches(LTE, "3", "3"));
  assert_false(carp_sched_int_matches(GT, "3", "x4"));
  assert_false(carp_sched_int_matches(GT, "x", "4"));
  assert_false(carp_sched_int_matches(GT, "3", NULL));
  assert_false(carp_sched_int_matches(IN, "3", "4"));
}

/* ---- intersections ---- */

static void test_intersections(void **state)
{
  static const struct {
    const char *spec;
    const char *want;
    int empty;
  } cases[] = {
      {"k In a,b; k In b,c", "k In [b]", 0},
      {"k In a; k In b", "k In []", 1},
      {"k In a,b; k NotIn a", "k In [b]", 0},
      {"k NotIn a; k In a,b", "k In [b]", 0},
      {"k NotIn a; k NotIn b", "k NotIn [a b]", 0},
      {"k NotIn a; k Exists", "k Exists NotIn [a]", 0},
      {"k Exists; k DNE", "k In []", 1},
      {"k NotIn a; k DNE", "k DoesNotExist", 0},
      {"k In a; k DNE", "k In []", 1},
      {"k Gt 5; k Lt 3", "k In []", 1}, /* Karpenter: DoesNotExist */
      {"k Gt 5; k Lt 6", "k In []", 1}, /* no integer in (5, 6) */
      {"k Gt 5; k Lt 7", "k Gt 5 Lt 7", 0},
      {"k Gt 1; k In 0,2,x", "k In [2]", 0},
      {"k Gte 2; k Lte 2", "k Gt 1 Lt 3", 0},
      {"k Gt 2; k Gt 4", "k Gt 4", 0},
      {"k Gt 2; k NotIn 3,x", "k NotIn [3] Gt 2", 0},
      {"k Gt 2; k DNE", "k In []", 1},
      {"k Gt abc; k Exists", "k In []", 1},
      {"a In x; b In y", "a In [x], b In [y]", 0},
      {"k In b,a,b", "k In [a b]", 0},
  };
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    struct carp_sched_reqs *r = parse(cases[i].spec);
    char buf[512];
    carp_sched_reqs_format(r, buf, sizeof(buf));
    if (strcmp(buf, cases[i].want) != 0)
      fail_msg("case %zu: %s: got \"%s\", want \"%s\"", i, cases[i].spec, buf,
               cases[i].want);
    assert_int_equal(carp_sched_reqs_empty(r), cases[i].empty);
    carp_sched_reqs_free(r);
  }
}

static void test_intersect_sets_and_exactness(void **state)
{
  struct carp_sched_reqs *a = parse("zone In z1,z2; gen Gt 2");
  struct carp_sched_reqs *b = parse("zone NotIn z1; gen Lt 9; arch In amd64");
  assert_int_equal(carp_sched_reqs_intersect(a, b), 0);
  format_is(a, "arch In [amd64], gen Gt 2 Lt 9, zone In [z2]");
  assert_int_equal(carp_sched_reqs_len(a), 3);
  assert_true(carp_sched_reqs_allows(a, "gen", "8"));
  assert_false(carp_sched_reqs_allows(a, "gen", "9"));
  assert_true(carp_sched_reqs_allows(a, "gen", "0008"));
  assert_false(carp_sched_reqs_allows(a, "zone", "z1"));
  /* values never seen by the set */
  assert_false(carp_sched_reqs_allows(a, "zone", "z9"));
  carp_sched_reqs_free(a);
  carp_sched_reqs_free(b);

  a = parse("k NotIn a");
  assert_true(carp_sched_reqs_allows(a, "k", "never-seen"));
  carp_sched_reqs_free(a);
}

static void test_matches_labels(void **state)
{
  struct carp_sched_reqs *r = parse("team NotIn red; zone In z1; gpu DNE");
  struct carp_sched_label l1[] = {{"zone", "z1"}};
  struct carp_sched_label l2[] = {{"zone", "z1"}, {"team", "red"}};
  struct carp_sched_label l3[] = {{"zone", "z1"}, {"gpu", "yes"}};
  struct carp_sched_label l4[] = {{"team", "blue"}};
  assert_true(carp_sched_reqs_matches(r, l1, 1)); /* team missing: NotIn ok */
  assert_false(carp_sched_reqs_matches(r, l2, 2));
  assert_false(carp_sched_reqs_matches(r, l3, 2));
  assert_false(carp_sched_reqs_matches(r, l4, 1)); /* zone missing */
  carp_sched_reqs_free(r);
}

static void test_min_values_kept(void **state)
{
  struct carp_sched_reqs *r = carp_sched_reqs_new();
  const char *v[] = {"a", "b", "c"};
  struct carp_sched_requirement q = {"k", IN, v, 3, 2};
  assert_int_equal(carp_sched_reqs_add(r, &q), 0);
  q.op = EXISTS;
  q.nvalues = 0;
  q.min_values = 0;
  assert_int_equal(carp_sched_reqs_add(r, &q), 0);
  format_is(r, "k In [a b c] minValues 2");
  carp_sched_reqs_free(r);
}

static void test_invalid(void **state)
{
  struct carp_sched_reqs *r = carp_sched_reqs_new();
  const char *v[] = {"1", "2"};
  struct carp_sched_requirement q = {NULL, IN, v, 1, 0};
  assert_int_equal(carp_sched_reqs_add(r, &q), CARP_EINVAL);
  q.key = "k";
  q.op = GT;
  q.nvalues = 2;
  assert_int_equal(carp_sched_reqs_add(r, &q), CARP_EINVAL);
  q.nvalues = 0;
  assert_int_equal(carp_sched_reqs_add(r, &q), CARP_EINVAL);
  q.op = (enum carp_sched_op)42;
  q.nvalues = 1;
  assert_int_equal(carp_sched_reqs_add(r, &q), CARP_EINVAL);
  assert_int_equal(carp_sched_reqs_len(r), 0);
  carp_sched_reqs_free(r);
}

/* ---- Compatible() and Intersects() ---- */

static void test_compatible(void **state)
{
  enum { L = CARP_SCHED_ALLOW_UNDEFINED_WELL_KNOWN };
  static const struct {
    const char *node, *pod;
    unsigned flags;
    int want;
    const char *bad;
  } cases[] = {
      {"topology.kubernetes.io/zone In z1,z2",
       "topology.kubernetes.io/zone In z2", 0, 1, NULL},
      {"topology.kubernetes.io/zone In z1", "topology.kubernetes.io/zone In z2",
       L, 0, "topology.kubernetes.io/zone"},
      {"x In y", "custom In a", L, 0, "custom"}, /* undefined custom label */
      {"x In y", "custom NotIn a", L, 1, NULL},  /* absence satisfies NotIn */
      {"x In y", "custom DNE", L, 1, NULL},
      {"x In y", "custom Exists", L, 0, "custom"},
      {"x In y", "topology.kubernetes.io/zone In z1", L, 1, NULL},
      {"x In y", "topology.kubernetes.io/zone In z1", 0, 0,
       "topology.kubernetes.io/zone"},
      {"x In y", "kubernetes.io/arch In arm64", L, 1, NULL},
      {"x In y", "carpenter.dev/instance-cpu Gt 4", L, 1, NULL},
      {"x In y", "kubernetes.io/hostname In n1", L, 0,
       "kubernetes.io/hostname"},
      {"team In a", "team DNE", L, 0, "team"},
      {"team DNE", "team NotIn a", L, 1, NULL},
      {"team NotIn a", "team NotIn b", L, 1, NULL},
      {"team NotIn a", "team In a", L, 0, "team"},
      {"gen Gt 3", "gen Lt 2", L, 0, "gen"},
      {"gen Gt 3", "gen Lt 5", L, 1, NULL},
      /* NotIn compares strings: "04" is still an integer in (3, 5) */
      {"gen Gt 3", "gen Lt 5; gen NotIn 4", L, 1, NULL},
      {"gen In 4", "gen Lt 5; gen NotIn 4", L, 0, "gen"},
      {"carpenter.dev/instance-cpu In 4", "carpenter.dev/instance-cpu Gt 2", L,
       1, NULL},
      {"carpenter.dev/instance-cpu In four", "carpenter.dev/instance-cpu Gt 2",
       L, 0, "carpenter.dev/instance-cpu"},
      {"a In 1", "b In 2; a In 1", 0, 0, "b"},
  };
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    struct carp_sched_reqs *n = parse(cases[i].node), *p = parse(cases[i].pod);
    const char *bad = NULL;
    int got = carp_sched_reqs_compatible(n, p, cases[i].flags, &bad);
    if (got != cases[i].want)
      fail_msg("case %zu: %s vs %s: got %d", i, cases[i].node, cases[i].pod,
               got);
    if (cases[i].bad && (!bad || strcmp(bad, cases[i].bad) != 0))
      fail_msg("case %zu: bad key %s, want %s", i, bad ? bad : "(none)",
               cases[i].bad);
    carp_sched_reqs_free(n);
    carp_sched_reqs_free(p);
  }
}

static void test_intersects_common_keys_only(void **state)
{
  struct carp_sched_reqs *a = parse("a In x"), *b = parse("b In y");
  struct carp_sched_reqs *c = parse("a In z");
  const char *bad = NULL;
  assert_true(carp_sched_reqs_intersects(a, b, NULL));
  assert_false(carp_sched_reqs_intersects(a, c, &bad));
  assert_string_equal(bad, "a");
  carp_sched_reqs_free(a);
  carp_sched_reqs_free(b);
  carp_sched_reqs_free(c);
}

static void test_well_known(void **state)
{
  assert_true(carp_sched_well_known(CARP_LABEL_INSTANCE_TYPE));
  assert_true(carp_sched_well_known(CARP_LABEL_ZONE));
  assert_true(carp_sched_well_known(CARP_LABEL_REGION));
  assert_true(carp_sched_well_known(CARP_LABEL_CAPACITY_TYPE));
  assert_true(carp_sched_well_known(CARP_LABEL_NODEPOOL));
  assert_true(carp_sched_well_known(CARP_LABEL_INSTANCE_FAMILY));
  assert_true(carp_sched_well_known(CARP_LABEL_INSTANCE_CPU));
  assert_true(carp_sched_well_known(CARP_LABEL_INSTANCE_MEMORY));
  assert_false(carp_sched_well_known(CARP_LABEL_HOSTNAME));
  assert_false(carp_sched_well_known("team"));
  assert_false(carp_sched_well_known(NULL));
}

/* ---- through a solve ---- */

static void test_solve_node_selector_and_pool_labels(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *a, *b;
  struct carp_sched_pod *p1, *p2, *p3, *p4;
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1,z2", 0.6);
  a = tb_pool(&t, "a", 10);
  tb_pool_label(&t, a, "team", "red");
  b = tb_pool(&t, "b", 0);
  tb_pool_req(&t, b, "team", NOTIN, "red", 0);
  p1 = tb_pod(&t, "red", "1", "1Gi");
  tb_pod_selector(&t, p1, "team", "red");
  p2 = tb_pod(&t, "any", "1", "1Gi");
  tb_pod_required(&t, p2, 0, "team", NOTIN, "red");
  /* pool b defines team (NotIn red): a claim can carry team=green */
  p3 = tb_pod(&t, "green", "1", "1Gi");
  tb_pod_selector(&t, p3, "team", "green");
  /* no pool defines rack */
  p4 = tb_pod(&t, "rack", "1", "1Gi");
  tb_pod_selector(&t, p4, "rack", "r1");
  tb_solve(&t);
  assert_string_equal(t.pools[tb_claim(&t, p1)->nodepool].name, "a");
  assert_string_equal(t.pools[tb_claim(&t, p2)->nodepool].name, "b");
  assert_string_equal(t.pools[tb_claim(&t, p3)->nodepool].name, "b");
  assert_string_equal(tb_claim_req(tb_claim(&t, p3), "team"), "In green");
  assert_null(tb_claim(&t, p4));
  assert_int_equal(tb_refusal(&t, p4, "a")->reason,
                   CARP_SCHED_REASON_REQUIREMENT);
  assert_string_equal(tb_refusal(&t, p4, "a")->detail, "rack");
  assert_string_equal(tb_refusal(&t, p4, "b")->detail, "rack");
  assert_non_null(strstr(tb_unsched_message(&t, p4),
                         "incompatible with nodepool \"a\", incompatible "
                         "requirements, key \"rack\""));
  assert_non_null(
      strstr(tb_unsched_message(&t, p4), "incompatible with nodepool \"b\""));
  tb_free(&t);
}

static void test_solve_well_known_and_zone_narrowing(void **state)
{
  struct tb t;
  struct carp_sched_pod *p1, *p2, *p3, *p4;
  tb_init(&t);
  tb_standard(&t);
  p1 = tb_pod(&t, "z2", "1", "1Gi");
  tb_pod_selector(&t, p1, CARP_LABEL_ZONE, "z2");
  p2 = tb_pod(&t, "arm", "1", "1Gi");
  tb_pod_selector(&t, p2, CARP_LABEL_ARCH, "arm64");
  p3 = tb_pod(&t, "big-type", "1", "1Gi");
  tb_pod_required(&t, p3, 0, CARP_LABEL_INSTANCE_CPU, GT, "4");
  p4 = tb_pod(&t, "nonnum", "1", "1Gi");
  tb_pod_required(&t, p4, 0, CARP_LABEL_INSTANCE_CPU, GT, "four");
  tb_solve(&t);
  assert_string_equal(tb_claim_req(tb_claim(&t, p1), CARP_LABEL_ZONE), "In z2");
  assert_null(tb_claim(&t, p2));
  assert_int_equal(tb_refusal(&t, p2, "default")->reason,
                   CARP_SCHED_REASON_INSTANCE_TYPE);
  assert_string_equal(tb_claim_type(&t, tb_claim(&t, p3)), "c8");
  assert_null(tb_claim(&t, p4));
  tb_free(&t);
}

static void test_solve_min_values(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  struct carp_sched_pod *small, *big;
  const struct carp_sched_claim *c;
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_req(&t, np, CARP_LABEL_INSTANCE_TYPE, EXISTS, "", 2);
  small = tb_pod(&t, "small", "1", "1Gi");
  /* 5 vCPU fits only c8: one instance type left, minValues 2 refuses */
  big = tb_pod(&t, "big", "5", "1Gi");
  tb_pod_selector(&t, big, "x", "y"); /* keep it off small's claim */
  tb_pod_required(&t, big, 0, "x", DNE, "");
  tb_solve(&t);
  c = tb_claim(&t, small);
  assert_non_null(c);
  assert_true(c->ninstance_types >= 2);
  assert_null(tb_claim(&t, big));
  tb_free(&t);

  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_req(&t, np, CARP_LABEL_INSTANCE_TYPE, EXISTS, "", 2);
  big = tb_pod(&t, "big", "5", "1Gi");
  tb_solve(&t);
  assert_null(tb_claim(&t, big));
  assert_int_equal(tb_refusal(&t, big, "default")->reason,
                   CARP_SCHED_REASON_MIN_VALUES);
  assert_string_equal(tb_refusal(&t, big, "default")->detail,
                      CARP_LABEL_INSTANCE_TYPE);
  tb_free(&t);

  /* minValues 2 with two pods: the claim must not grow past the point where
   * two types remain */
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_req(&t, np, CARP_LABEL_INSTANCE_TYPE, EXISTS, "", 2);
  tb_pod(&t, "a", "3", "1Gi");
  tb_pod(&t, "b", "1500m", "1Gi");
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 2);
  for (size_t i = 0; i < t.res->nclaims; i++)
    assert_true(t.res->claims[i].ninstance_types >= 2);
  tb_free(&t);
}

static void test_solve_claim_requirements_output(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  struct carp_sched_pod *p;
  const struct carp_sched_claim *c;
  tb_init(&t);
  np = tb_standard(&t);
  tb_pool_req(&t, np, "team", IN, "red,blue", 0);
  tb_pool_req(&t, np, "gen", EXISTS, "", 0);
  tb_pool_label(&t, np, "env", "prod");
  p = tb_pod(&t, "p", "1", "1Gi");
  tb_pod_selector(&t, p, "team", "blue");
  tb_pod_required(&t, p, 0, "gen", GT, "3");
  tb_pod_required(&t, p, 0, "gen", LT, "9");
  tb_pod_required(&t, p, 0, "tier", NOTIN, "x");
  tb_solve(&t);
  c = tb_claim(&t, p);
  assert_non_null(c);
  assert_string_equal(tb_claim_req(c, "team"), "In blue");
  assert_string_equal(tb_claim_req(c, "env"), "In prod");
  assert_string_equal(tb_claim_req(c, CARP_LABEL_NODEPOOL), "In default");
  assert_string_equal(tb_claim_req(c, "tier"), "NotIn x");
  assert_string_equal(tb_claim_req(c, "gen"), "Gt 3; Lt 9");
  /* the hostname placeholder never leaks out */
  assert_string_equal(tb_claim_req(c, CARP_LABEL_HOSTNAME), "");
  tb_free(&t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_operators_on_label_states),
      cmocka_unit_test(test_int_matches),
      cmocka_unit_test(test_intersections),
      cmocka_unit_test(test_intersect_sets_and_exactness),
      cmocka_unit_test(test_matches_labels),
      cmocka_unit_test(test_min_values_kept),
      cmocka_unit_test(test_invalid),
      cmocka_unit_test(test_compatible),
      cmocka_unit_test(test_intersects_common_keys_only),
      cmocka_unit_test(test_well_known),
      cmocka_unit_test(test_solve_node_selector_and_pool_labels),
      cmocka_unit_test(test_solve_well_known_and_zone_narrowing),
      cmocka_unit_test(test_solve_min_values),
      cmocka_unit_test(test_solve_claim_requirements_output),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
