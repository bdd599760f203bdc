/* test_consolidation_property.c: properties of every consolidation plan,
 * on generated clusters (test/kit/world.c) with several seeds, sizes,
 * budgets and policies, each consolidated round after round to a fixed
 * point:
 *  - the plan places every pod of every candidate;
 *  - carried out as planned, no node holds more than its allocatable;
 *  - a replacement's every allowed instance type costs less than the
 *    candidates together (and, multi-node, than a candidate of that type);
 *  - the cluster's price goes down strictly with every command, so there
 *    is a fixed point, and it is reached. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/log.h"
#include "world.h"

#define MAX_ROUNDS 2000

static double price_of_candidates(const struct dis_analysis *a,
                                  const struct dis_command *cmd)
{
  double sum = 0;
  size_t i;
  for (i = 0; i < cmd->ncands; i++)
    sum += a->cands[cmd->cands[i]].price;
  return sum;
}

static void check_replacement(const struct dis_analysis *a,
                              const struct dis_command *cmd)
{
  double total = price_of_candidates(a, cmd);
  char types[8192], *t, *save = NULL;
  size_t i;
  assert_non_null(cmd->plan.repl.types);
  assert_true(cmd->plan.repl.price < total);
  snprintf(types, sizeof(types), "%s", cmd->plan.repl.types);
  for (t = strtok_r(types, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    double p = world_type_price(t);
    assert_true(p >= 0);
    assert_true(p < total);
    if (cmd->method != DIS_MULTI)
      continue;
    for (i = 0; i < cmd->ncands; i++) {
      const char *ct = carp_kvset_get(a->cands[cmd->cands[i]].nc->meta.labels,
                                      "node.kubernetes.io/instance-type");
      if (ct && !strcmp(ct, t))
        assert_true(p < a->cands[cmd->cands[i]].price);
    }
  }
}

static void check_loads(struct world *w)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(w->cluster->nodes), &it))) {
    struct world_load l;
    assert_int_equal(world_node_load(w, m->name, &l), 0);
    if (l.cpu > l.cpu_cap || l.mem > l.mem_cap || l.pods > l.pods_cap)
      fail_msg("node %s over its allocatable: cpu %lld/%lld mem %lld/%lld "
               "pods %lld/%lld",
               m->name, (long long)l.cpu, (long long)l.cpu_cap,
               (long long)l.mem, (long long)l.mem_cap, (long long)l.pods,
               (long long)l.pods_cap);
  }
}

static void consolidate(const struct world_options *o)
{
  struct world *w = world_new(o);
  int64_t now = world_now();
  double price = world_price(w);
  size_t rounds = 0;
  check_loads(w);
  for (;;) {
    struct dis_analysis a;
    struct dis_command cmd;
    int found;
    memset(&cmd, 0, sizeof(cmd));
    carp__dis_analyze(w->cluster, w->provider, now, 0, &a);
    found = carp__dis_decide(w->cluster, w->provider, &a, &cmd, NULL);
    if (!found) {
      carp__dis_analysis_free(&a);
      break;
    }
    assert_true(++rounds < MAX_ROUNDS);
    if (cmd.plan.decision == DIS_REPLACE)
      check_replacement(&a, &cmd);
    assert_int_equal(world_apply(w, &a, &cmd), 0);
    check_loads(w);
    assert_true(world_price(w) < price);
    price = world_price(w);
    carp__dis_command_cleanup(&cmd);
    carp__dis_analysis_free(&a);
  }
  /* Something happened in a fragmented cluster. */
  assert_true(rounds > 0);
  world_free(w);
}

static void test_plans_hold_their_promises(void **state)
{
  static const char *budgets[] = {"10%", "100%", "1"};
  uint64_t seed;
  (void)state;
  for (seed = 1; seed <= 6; seed++) {
    struct world_options o = {.nodes = 12 + (size_t)seed * 7,
                              .pods = (12 + (size_t)seed * 7) * 30,
                              .seed = seed,
                              .budget = budgets[seed % 3]};
    consolidate(&o);
  }
}

static void test_balanced_plans_hold_their_promises(void **state)
{
  uint64_t seed;
  (void)state;
  for (seed = 11; seed <= 13; seed++) {
    struct world_options o = {.nodes = 30,
                              .pods = 900,
                              .seed = seed,
                              .budget = "100%",
                              .policy = "Balanced"};
    consolidate(&o);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plans_hold_their_promises),
      cmocka_unit_test(test_balanced_plans_hold_their_promises),
  };
  carp_log_set_level(CARP_LOG_ERROR);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
