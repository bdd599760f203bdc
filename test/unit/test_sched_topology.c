/* Unit tests for topology spread and pod (anti-)affinity in the solve:
 * zone and hostname spreads with maxSkew, minDomains, empty domains and
 * existing pods counted; nodeAffinityPolicy; ScheduleAnyway relaxed;
 * required and preferred affinity and anti-affinity on zone and hostname,
 * the inverse anti-affinity of running pods and of pods in the same batch,
 * and anti-affinity against pods on in-flight claims; each pod's
 * effective zone (Karpenter's computeEffectiveZoneFromPod) before the
 * placement. */
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

#define DNS  CARP_SCHED_DO_NOT_SCHEDULE
#define SA   CARP_SCHED_SCHEDULE_ANYWAY
#define ZONE CARP_LABEL_ZONE
#define HOST CARP_LABEL_HOSTNAME

/* The zone a pod landed in ("-" when unscheduled or unknown). */
static const char *zone_of(struct tb *t, const struct carp_sched_pod *p)
{
  static char buf[300];
  const struct carp_sched_assignment *a =
      &t->res->assignments[tb_pod_index(t, p)];
  snprintf(buf, sizeof(buf), "-");
  if (a->target == CARP_SCHED_ON_CLAIM) {
    const char *r = tb_claim_req(&t->res->claims[a->index], ZONE);
    if (strncmp(r, "In ", 3) == 0 && !strchr(r + 3, ' '))
      snprintf(buf, sizeof(buf), "%s", r + 3);
  } else if (a->target == CARP_SCHED_ON_NODE) {
    const struct carp_sched_node *n = &t->nodes[a->index];
    for (size_t i = 0; i < n->nlabels; i++)
      if (strcmp(n->labels[i].key, ZONE) == 0)
        snprintf(buf, sizeof(buf), "%s", n->labels[i].value);
  }
  return buf;
}

static void count_zones(struct tb *t, struct carp_sched_pod **pods, size_t n,
                        int out[4])
{
  memset(out, 0, 4 * sizeof(int));
  for (size_t i = 0; i < n; i++) {
    const char *z = zone_of(t, pods[i]);
    if (strcmp(z, "z1") == 0)
      out[1]++;
    else if (strcmp(z, "z2") == 0)
      out[2]++;
    else if (strcmp(z, "z3") == 0)
      out[3]++;
    else
      out[0]++;
  }
}

static struct carp_sched_pod *spread_pod(struct tb *t, const char *key,
                                         int32_t skew,
                                         enum carp_sched_unsatisfiable when,
                                         int32_t min_domains)
{
  struct carp_sched_pod *p = tb_pod(t, "web", "100m", "100Mi");
  tb_pod_label(t, p, "app", "web");
  tb_pod_spread(t, p, key, skew, when, min_domains, "app", "web");
  return p;
}

/* ---- zone spread ---- */

static void test_zone_spread_even(void **state)
{
  struct tb t;
  struct carp_sched_pod *p[6];
  int z[4];
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 6; i++)
    p[i] = spread_pod(&t, ZONE, 1, DNS, 0);
  tb_solve(&t);
  count_zones(&t, p, 6, z);
  assert_int_equal(z[0], 0);
  assert_int_equal(z[1], 2);
  assert_int_equal(z[2], 2);
  assert_int_equal(z[3], 2);
  tb_free(&t);
}

static void test_zone_spread_counts_existing_pods(void **state)
{
  struct tb t;
  struct carp_sched_pod *p[3];
  int z[4];
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "16", "64Gi", "110");
  for (int i = 0; i < 3; i++)
    tb_bound(&t, 0, "app", "web", NULL, NULL, NULL);
  tb_bound(&t, 0, "app", "other", NULL, NULL, NULL);
  for (int i = 0; i < 3; i++)
    p[i] = spread_pod(&t, ZONE, 1, DNS, 0);
  tb_solve(&t);
  count_zones(&t, p, 3, z);
  /* z1 already has 3: the new pods go to z2 and z3, none to n1 */
  assert_int_equal(z[1], 0);
  assert_int_equal(z[2], 2);
  assert_int_equal(z[3], 1);
  tb_free(&t);
}

static void test_zone_spread_empty_domains(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np, *tainted;
  struct carp_sched_pod *p[3];
  int z[4];
  uint32_t t12, t3;

  /* z3 is offered only by a pool these pods cannot use: it stays an empty
   * domain, so z1 and z2 may hold one pod each with maxSkew 1 */
  tb_init(&t);
  t12 = tb_type(&t, "c2", "2", "4Gi", "20", "z1,z2", 0.6);
  t3 = tb_type(&t, "c2-z3", "2", "4Gi", "20", "z3", 0.6);
  np = tb_pool(&t, "default", 0);
  tb_pool_types(&t, np, &t12, 1);
  tainted = tb_pool(&t, "tainted", 0);
  tb_pool_types(&t, tainted, &t3, 1);
  tb_pool_taint(&t, tainted, "dedicated", "x", CARP_SCHED_EFFECT_NO_SCHEDULE,
                0);
  for (int i = 0; i < 3; i++)
    p[i] = spread_pod(&t, ZONE, 1, DNS, 0);
  tb_solve(&t);
  count_zones(&t, p, 3, z);
  assert_int_equal(z[1], 1);
  assert_int_equal(z[2], 1);
  assert_int_equal(z[0], 1);
  assert_int_equal(tb_refusal(&t, p[2], "default")->reason,
                   CARP_SCHED_REASON_SPREAD);
  assert_string_equal(tb_refusal(&t, p[2], "default")->detail, ZONE);
  tb_free(&t);

  /* a pod whose node selector excludes z3 does not count it */
  tb_init(&t);
  t12 = tb_type(&t, "c2", "2", "4Gi", "20", "z1,z2", 0.6);
  t3 = tb_type(&t, "c2-z3", "2", "4Gi", "20", "z3", 0.6);
  np = tb_pool(&t, "default", 0);
  tb_pool_types(&t, np, &t12, 1);
  tainted = tb_pool(&t, "tainted", 0);
  tb_pool_types(&t, tainted, &t3, 1);
  tb_pool_taint(&t, tainted, "dedicated", "x", CARP_SCHED_EFFECT_NO_SCHEDULE,
                0);
  for (int i = 0; i < 3; i++) {
    p[i] = spread_pod(&t, ZONE, 1, DNS, 0);
    tb_pod_required(&t, p[i], 0, ZONE, CARP_SCHED_OP_IN, "z1,z2");
  }
  tb_solve(&t);
  count_zones(&t, p, 3, z);
  assert_int_equal(z[0], 0);
  assert_int_equal(z[1], 2);
  assert_int_equal(z[2], 1);
  tb_free(&t);
}

static void test_zone_spread_min_domains(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  struct carp_sched_pod *p[3];
  int z[4];
  /* two zones, minDomains 3: the global minimum counts as 0 */
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1,z2", 0.6);
  np = tb_pool(&t, "default", 0);
  (void)np;
  for (int i = 0; i < 3; i++)
    p[i] = spread_pod(&t, ZONE, 1, DNS, 3);
  tb_solve(&t);
  count_zones(&t, p, 3, z);
  assert_int_equal(z[1], 1);
  assert_int_equal(z[2], 1);
  assert_int_equal(z[0], 1);
  tb_free(&t);

  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1,z2", 0.6);
  tb_pool(&t, "default", 0);
  for (int i = 0; i < 3; i++)
    p[i] = spread_pod(&t, ZONE, 1, DNS, 2);
  tb_solve(&t);
  count_zones(&t, p, 3, z);
  assert_int_equal(z[0], 0);
  tb_free(&t);
}

static void test_zone_spread_schedule_anyway(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  struct carp_sched_node *n;
  struct carp_sched_pod *p[2];
  int z[4];
  for (int when = 0; when < 2; when++) {
    /* z2 exists (a full node) but the pool launches only in z1 */
    tb_init(&t);
    np = tb_standard(&t);
    tb_pool_req(&t, np, ZONE, CARP_SCHED_OP_IN, "z1", 0);
    n = tb_node(&t, "full", "default", "z2", "1", "1Gi", "110");
    tb_node_used(&t, n, "cpu", "1");
    for (int i = 0; i < 2; i++)
      p[i] = spread_pod(&t, ZONE, 1, when ? SA : DNS, 0);
    tb_solve(&t);
    count_zones(&t, p, 2, z);
    assert_int_equal(z[1], when ? 2 : 1);
    assert_int_equal(z[0], when ? 0 : 1);
    tb_free(&t);
  }
}

static void test_spread_node_affinity_policy(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *np;
  struct carp_sched_pod *p[3];
  int z[4];
  for (int ignore = 0; ignore < 2; ignore++) {
    tb_init(&t);
    np = tb_standard(&t);
    tb_pool_label(&t, np, "team", "a");
    /* an old node without team=a, with two matching pods in z1 */
    tb_node(&t, "old", NULL, "z1", "1", "1Gi", "110");
    tb_bound(&t, 0, "app", "web", NULL, NULL, NULL);
    tb_bound(&t, 0, "app", "web", NULL, NULL, NULL);
    for (int i = 0; i < 3; i++) {
      struct carp_sched_spread *sp;
      p[i] = tb_pod(&t, "web", "100m", "100Mi");
      tb_pod_label(&t, p[i], "app", "web");
      tb_pod_selector(&t, p[i], "team", "a");
      sp = tb_pod_spread(&t, p[i], ZONE, 1, DNS, 0, "app", "web");
      sp->node_affinity_ignore = ignore;
    }
    tb_solve(&t);
    count_zones(&t, p, 3, z);
    if (!ignore) { /* Honor: the old node's pods do not count */
      assert_int_equal(z[1], 1);
      assert_int_equal(z[2], 1);
      assert_int_equal(z[3], 1);
    } else {
      assert_int_equal(z[1], 0);
      assert_int_equal(z[2], 2);
      assert_int_equal(z[3], 1);
    }
    tb_free(&t);
  }
}

static void test_spread_custom_key_from_pool_labels(void **state)
{
  struct tb t;
  struct carp_sched_nodepool *a, *b;
  struct carp_sched_pod *p[4];
  int na = 0, nb = 0;
  /* two pools label their nodes rack=a and rack=b: a spread over "rack"
   * alternates between them even though one has a higher weight */
  tb_init(&t);
  tb_type(&t, "c2", "2", "4Gi", "20", "z1", 0.6);
  a = tb_pool(&t, "rack-a", 10);
  tb_pool_label(&t, a, "rack", "a");
  b = tb_pool(&t, "rack-b", 0);
  tb_pool_label(&t, b, "rack", "b");
  for (int i = 0; i < 4; i++)
    p[i] = spread_pod(&t, "rack", 1, DNS, 0);
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 4);
  for (int i = 0; i < 4; i++) {
    const char *pool = t.pools[tb_claim(&t, p[i])->nodepool].name;
    na += strcmp(pool, "rack-a") == 0;
    nb += strcmp(pool, "rack-b") == 0;
  }
  assert_int_equal(na, 2);
  assert_int_equal(nb, 2);
  tb_free(&t);
}

/* ---- hostname spread ---- */

static void test_hostname_spread(void **state)
{
  struct tb t;
  struct carp_sched_pod *p[4];
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 4; i++)
    p[i] = spread_pod(&t, HOST, 1, DNS, 0);
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 4);
  assert_int_equal(t.res->nclaims, 4);
  tb_free(&t);

  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 4; i++)
    p[i] = spread_pod(&t, HOST, 2, DNS, 0);
  tb_solve(&t);
  assert_int_equal(t.res->nclaims, 2);
  tb_free(&t);

  /* a node with one matching pod is full for maxSkew 1; not for others */
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "16", "64Gi", "110");
  tb_bound(&t, 0, "app", "web", NULL, NULL, NULL);
  p[0] = spread_pod(&t, HOST, 1, DNS, 0);
  p[1] = tb_pod(&t, "other", "100m", "100Mi");
  tb_pod_label(&t, p[1], "app", "db");
  tb_pod_spread(&t, p[1], HOST, 1, DNS, 0, "app", "db");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, p[0]), "claim:0");
  assert_string_equal(tb_where(&t, p[1]), "node:n1");
  tb_free(&t);
}

static void test_free_pods_respect_spread_owners(void **state)
{
  struct tb t;
  struct carp_sched_pod *owner, *free_pods[4];
  int with_owner = 0;
  /* the owner spreads app=x pods over hosts (maxSkew 1) but is app=y
   * itself; free app=x pods come later and may not push its host to two */
  tb_init(&t);
  tb_standard(&t);
  owner = tb_pod(&t, "owner", "1", "1Gi");
  tb_pod_label(&t, owner, "app", "y");
  tb_pod_spread(&t, owner, HOST, 1, DNS, 0, "app", "x");
  for (int i = 0; i < 4; i++) {
    free_pods[i] = tb_pod(&t, "free", "100m", "100Mi");
    tb_pod_label(&t, free_pods[i], "app", "x");
  }
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 5);
  for (int i = 0; i < 4; i++)
    with_owner += tb_claim(&t, free_pods[i]) == tb_claim(&t, owner);
  assert_true(with_owner <= 1);
  tb_free(&t);
}

/* ---- affinity ---- */

static void test_zone_self_affinity(void **state)
{
  struct tb t;
  struct carp_sched_pod *p[5];
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 5; i++) {
    p[i] = tb_pod(&t, "cache", "2", "1Gi");
    tb_pod_label(&t, p[i], "app", "cache");
    tb_pod_term(&t, p[i], TB_AFF, ZONE, "app", "cache", 0);
  }
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 5);
  assert_true(t.res->nclaims >= 2);
  {
    char first[16];
    snprintf(first, sizeof(first), "%s", zone_of(&t, p[0]));
    assert_string_not_equal(first, "-");
    for (int i = 1; i < 5; i++)
      assert_string_equal(zone_of(&t, p[i]), first);
  }
  tb_free(&t);
}

static void test_affinity_to_existing_pods(void **state)
{
  struct tb t;
  struct carp_sched_pod *p, *q;
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "db", "default", "z2", "1", "1Gi", "110");
  tb_bound(&t, 0, "app", "db", NULL, NULL, NULL);
  p = tb_pod(&t, "api", "500m", "1Gi");
  tb_pod_term(&t, p, TB_AFF, ZONE, "app", "db", 0);
  q = tb_pod(&t, "lonely", "500m", "1Gi");
  tb_pod_term(&t, q, TB_AFF, ZONE, "app", "nothing", 0);
  tb_solve(&t);
  assert_string_equal(zone_of(&t, p), "z2");
  assert_null(tb_claim(&t, q));
  assert_int_equal(tb_refusal(&t, q, "default")->reason,
                   CARP_SCHED_REASON_AFFINITY);
  tb_free(&t);

  /* hostname affinity to a pod on a full node cannot be met by a claim */
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "db", "default", "z2", "1", "1Gi", "110");
  tb_node_used(&t, &t.nodes[0], "cpu", "1");
  tb_bound(&t, 0, "app", "db", NULL, NULL, NULL);
  p = tb_pod(&t, "sidecar", "500m", "1Gi");
  tb_pod_term(&t, p, TB_AFF, HOST, "app", "db", 0);
  tb_solve(&t);
  assert_null(tb_claim(&t, p));
  tb_free(&t);

  /* preferred affinity that cannot be met is relaxed */
  tb_init(&t);
  tb_standard(&t);
  p = tb_pod(&t, "api", "500m", "1Gi");
  tb_pod_term(&t, p, TB_PAFF, ZONE, "app", "nothing", 10);
  tb_solve(&t);
  assert_non_null(tb_claim(&t, p));
  tb_free(&t);
}

/* ---- anti-affinity ---- */

static void test_hostname_self_anti_affinity(void **state)
{
  struct tb t;
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 5; i++) {
    struct carp_sched_pod *p = tb_pod(&t, "nginx", "100m", "100Mi");
    tb_pod_label(&t, p, "app", "nginx");
    tb_pod_term(&t, p, TB_ANTI, HOST, "app", "nginx", 0);
  }
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 5);
  assert_int_equal(t.res->nclaims, 5);
  tb_free(&t);
}

static void test_zone_anti_affinity(void **state)
{
  struct tb t;
  struct carp_sched_pod *p[4];
  int z[4];
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 4; i++) {
    p[i] = tb_pod(&t, "zk", "100m", "100Mi");
    tb_pod_label(&t, p[i], "app", "zk");
    tb_pod_term(&t, p[i], TB_ANTI, ZONE, "app", "zk", 0);
  }
  tb_solve(&t);
  count_zones(&t, p, 4, z);
  assert_int_equal(z[1], 1);
  assert_int_equal(z[2], 1);
  assert_int_equal(z[3], 1);
  assert_int_equal(z[0], 1);
  assert_int_equal(t.res->nunschedulable, 1);
  assert_int_equal(t.res->unschedulable[0].refusals[0].reason,
                   CARP_SCHED_REASON_ANTI_AFFINITY);
  tb_free(&t);

  /* preferred: the fourth is relaxed and scheduled */
  tb_init(&t);
  tb_standard(&t);
  for (int i = 0; i < 4; i++) {
    p[i] = tb_pod(&t, "zk", "100m", "100Mi");
    tb_pod_label(&t, p[i], "app", "zk");
    tb_pod_term(&t, p[i], TB_PANTI, ZONE, "app", "zk", 10);
  }
  tb_solve(&t);
  assert_int_equal(t.res->nscheduled, 4);
  count_zones(&t, p, 4, z);
  assert_int_equal(z[1] + z[2] + z[3], 4);
  assert_true(z[1] >= 1 && z[2] >= 1 && z[3] >= 1);
  tb_free(&t);
}

static void test_inverse_anti_affinity_existing(void **state)
{
  struct tb t;
  struct carp_sched_pod *web, *other;
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "16", "64Gi", "110");
  /* a running pod that wants no app=web pod on its host */
  tb_bound(&t, 0, "app", "loner", HOST, "app", "web");
  web = tb_pod(&t, "web", "100m", "100Mi");
  tb_pod_label(&t, web, "app", "web");
  other = tb_pod(&t, "other", "100m", "100Mi");
  tb_pod_label(&t, other, "app", "other");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, web), "claim:0");
  assert_string_equal(tb_where(&t, other), "node:n1");
  tb_free(&t);
}

static void test_inverse_anti_affinity_in_batch(void **state)
{
  struct tb t;
  struct carp_sched_pod *a, *b;
  for (int order = 0; order < 2; order++) {
    tb_init(&t);
    tb_standard(&t);
    /* the bigger one is placed first */
    a = tb_pod(&t, "loner", order ? "100m" : "1", "100Mi");
    tb_pod_label(&t, a, "app", "loner");
    tb_pod_term(&t, a, TB_ANTI, HOST, "app", "web", 0);
    b = tb_pod(&t, "web", order ? "1" : "100m", "100Mi");
    tb_pod_label(&t, b, "app", "web");
    tb_solve(&t);
    assert_int_equal(t.res->nscheduled, 2);
    assert_ptr_not_equal(tb_claim(&t, a), tb_claim(&t, b));
    tb_free(&t);
  }
}

static void test_anti_affinity_in_flight_claims(void **state)
{
  struct tb t;
  struct carp_sched_node *n;
  struct carp_sched_pod *web, *plain;
  tb_init(&t);
  tb_standard(&t);
  n = tb_node(&t, "claim-abc", "default", "z1", "8", "16Gi", "80");
  n->in_flight = 1;
  n->initialized = 0;
  tb_node_taint(&t, n, CARP_TAINT_UNREGISTERED, NULL,
                CARP_SCHED_EFFECT_NO_EXECUTE);
  /* a pod nominated to the in-flight claim in an earlier batch */
  tb_bound(&t, 0, "app", "web", NULL, NULL, NULL);
  web = tb_pod(&t, "web", "100m", "100Mi");
  tb_pod_label(&t, web, "app", "web");
  tb_pod_term(&t, web, TB_ANTI, HOST, "app", "web", 0);
  plain = tb_pod(&t, "plain", "100m", "100Mi");
  tb_solve(&t);
  assert_string_equal(tb_where(&t, web), "claim:0");
  assert_string_equal(tb_where(&t, plain), "node:claim-abc");
  tb_free(&t);

  /* zone anti-affinity against a pod on an in-flight claim in z1 */
  tb_init(&t);
  tb_standard(&t);
  n = tb_node(&t, "claim-abc", "default", "z1", "8", "16Gi", "80");
  n->in_flight = 1;
  tb_bound(&t, 0, "app", "web", NULL, NULL, NULL);
  web = tb_pod(&t, "web", "100m", "100Mi");
  tb_pod_label(&t, web, "app", "web");
  tb_pod_term(&t, web, TB_ANTI, ZONE, "app", "web", 0);
  tb_solve(&t);
  assert_string_not_equal(zone_of(&t, web), "z1");
  assert_string_not_equal(zone_of(&t, web), "-");
  tb_free(&t);
}

static void test_anti_affinity_namespaces(void **state)
{
  struct tb t;
  struct carp_sched_pod *a, *b;
  struct carp_sched_pod_term *term;
  /* anti-affinity counts only its namespaces (default: the pod's own) */
  tb_init(&t);
  tb_standard(&t);
  a = tb_pod(&t, "a", "100m", "100Mi");
  tb_pod_label(&t, a, "app", "web");
  tb_pod_term(&t, a, TB_ANTI, HOST, "app", "web", 0);
  b = tb_pod(&t, "b", "100m", "100Mi");
  b->namespace_ = "other";
  tb_pod_label(&t, b, "app", "web");
  tb_solve(&t);
  assert_ptr_equal(tb_claim(&t, a), tb_claim(&t, b));
  tb_free(&t);

  tb_init(&t);
  tb_standard(&t);
  a = tb_pod(&t, "a", "100m", "100Mi");
  tb_pod_label(&t, a, "app", "web");
  term = tb_pod_term(&t, a, TB_ANTI, HOST, "app", "web", 0);
  term->all_namespaces = 1;
  b = tb_pod(&t, "b", "100m", "100Mi");
  b->namespace_ = "other";
  tb_pod_label(&t, b, "app", "web");
  tb_solve(&t);
  assert_ptr_not_equal(tb_claim(&t, a), tb_claim(&t, b));
  tb_free(&t);
}

/* ---- effective zones ---- */

static const char *ezone(struct tb *t, const struct carp_sched_pod *p)
{
  return t->res->effective_zones[tb_pod_index(t, p)];
}

static void test_effective_zones(void **state)
{
  struct tb t;
  struct carp_sched_pod *free_, *sel, *two, *spread, *two_spread, *anti, *ghost;
  (void)state;
  tb_init(&t);
  tb_standard(&t);
  tb_node(&t, "n1", "default", "z1", "16", "64Gi", "110");
  tb_bound(&t, 0, "app", "web", NULL, NULL, NULL);
  tb_bound(&t, 0, "app", "db", NULL, NULL, NULL);
  free_ = tb_pod(&t, "free", "100m", "100Mi");
  sel = tb_pod(&t, "sel", "100m", "100Mi");
  tb_pod_selector(&t, sel, ZONE, "z2");
  two = tb_pod(&t, "two", "100m", "100Mi");
  tb_pod_required(&t, two, 0, ZONE, CARP_SCHED_OP_IN, "z1,z2");
  /* z1 has a web pod already: maxSkew 1, the pod itself counted, leaves
   * z2 and z3 */
  spread = spread_pod(&t, ZONE, 1, DNS, 0);
  two_spread = spread_pod(&t, ZONE, 1, DNS, 0);
  tb_pod_required(&t, two_spread, 0, ZONE, CARP_SCHED_OP_IN, "z1,z2");
  /* only z1 allowed, and a db pod there */
  anti = tb_pod(&t, "anti", "100m", "100Mi");
  tb_pod_selector(&t, anti, ZONE, "z1");
  tb_pod_term(&t, anti, TB_ANTI, ZONE, "app", "db", 0);
  /* a zone no node or offering has: Karpenter names it all the same */
  ghost = tb_pod(&t, "ghost", "100m", "100Mi");
  tb_pod_selector(&t, ghost, ZONE, "z9");
  tb_solve(&t);
  assert_string_equal(ezone(&t, free_), "flexible");
  assert_string_equal(ezone(&t, sel), "z2");
  assert_string_equal(ezone(&t, two), "flexible");
  assert_string_equal(ezone(&t, spread), "flexible");
  assert_string_equal(ezone(&t, two_spread), "z2");
  assert_string_equal(ezone(&t, anti), "none");
  assert_string_equal(ezone(&t, ghost), "z9");
  tb_free(&t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zone_spread_even),
      cmocka_unit_test(test_zone_spread_counts_existing_pods),
      cmocka_unit_test(test_zone_spread_empty_domains),
      cmocka_unit_test(test_zone_spread_min_domains),
      cmocka_unit_test(test_zone_spread_schedule_anyway),
      cmocka_unit_test(test_spread_node_affinity_policy),
      cmocka_unit_test(test_spread_custom_key_from_pool_labels),
      cmocka_unit_test(test_hostname_spread),
      cmocka_unit_test(test_free_pods_respect_spread_owners),
      cmocka_unit_test(test_zone_self_affinity),
      cmocka_unit_test(test_affinity_to_existing_pods),
      cmocka_unit_test(test_hostname_self_anti_affinity),
      cmocka_unit_test(test_zone_anti_affinity),
      cmocka_unit_test(test_inverse_anti_affinity_existing),
      cmocka_unit_test(test_inverse_anti_affinity_in_batch),
      cmocka_unit_test(test_anti_affinity_in_flight_claims),
      cmocka_unit_test(test_anti_affinity_namespaces),
      cmocka_unit_test(test_effective_zones),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
