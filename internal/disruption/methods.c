/* methods.c: what to disrupt next, in Karpenter's order - empty nodes,
 * then drifted nodes, then multi-node consolidation, then single-node
 * consolidation - within each NodePool's budget for the reason (Empty,
 * Drifted, Underutilized).
 *
 * Drift takes every empty drifted node the budgets allow at once, else
 * the drifted node that drifted first whose pods have room elsewhere or on
 * one new node of any price (a replacement need not be cheaper: the node
 * goes because it is not what its NodePool would make now). A static
 * pool's drifted nodes come first, replaced in place: as many as the
 * budget allows, each by a NodeClaim of the pool's template launched and
 * initialized before it goes (execute.c).
 *
 * Multi-node consolidation looks at every candidate, not the first 100:
 * a binary search over the candidates in disruption-cost order finds the
 * longest prefix whose pods have room with at most one new node, in
 * O(log n) simulations; that prefix (or, if its replacement saves nothing,
 * one of the next few shorter ones) is deleted or replaced by one cheaper
 * node. Single-node consolidation tries each candidate in
 * turn and stops at the first that can go. Pods waiting for a place are
 * in every simulation, so a move never takes the room they need, and so
 * are CapacityBuffers' virtual pods: an empty node, or room a move would
 * fill, that holds a buffer's chunks stays.
 *
 * Balanced pools (consolidationPolicy: Balanced) accept a move only when
 * the share of the pools' price it saves is at least half the share of
 * the pools' disruption it causes: score = (savings / pool price) /
 * (moved disruption / pool disruption) >= 0.5, a node's disruption being
 * 1 + the positive eviction costs of its pods. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../provisioning/claim.h"
#include "carpenter/alloc.h"
#include "carpenter/log.h"
#include "disruption_int.h"

#define BALANCED_THRESHOLD 0.5
/* How many lengths below the longest that fits are priced before giving
 * up: a prefix whose replacement costs what it replaces can be followed
 * by a longer one that saves. */
#define PRICE_STEPS 3

const char *carp__dis_method_name(enum dis_method m)
{
  switch (m) {
  case DIS_EMPTY:
    return "empty";
  case DIS_DRIFT:
    return "drift";
  case DIS_MULTI:
    return "multi";
  case DIS_SINGLE:
    return "single";
  }
  return "";
}

void carp__dis_command_cleanup(struct dis_command *cmd)
{
  carp__dis_plan_cleanup(&cmd->plan);
  carp_free(cmd->cands);
  memset(cmd, 0, sizeof(*cmd));
}

void carp__dis_notes_free(struct dis_notes *n)
{
  carp_free(n->v);
  memset(n, 0, sizeof(*n));
}

static struct dis_note *note(struct dis_notes *notes, const struct dis_cand *cd,
                             const char *why)
{
  struct dis_note *x;
  if (!notes)
    return NULL;
  if (notes->n == notes->cap) {
    notes->cap = notes->cap ? notes->cap * 2 : 16;
    notes->v = carp_reallocarray(notes->v, notes->cap, sizeof(*notes->v));
  }
  x = &notes->v[notes->n++];
  x->nc = cd->nc;
  x->node = cd->node;
  x->score = -1;
  x->pool = NULL;
  x->drift = 0;
  snprintf(x->why, sizeof(x->why), "%s", why);
  return x;
}

double carp__dis_balanced_score(const struct dis_analysis *a, const size_t *idx,
                                size_t n, double savings)
{
  double cost = 0, pool_disruption = 0, moved = 0;
  uint8_t *seen = carp_calloc(a->npools + 1, 1);
  size_t i;
  for (i = 0; i < n; i++) {
    const struct dis_cand *cd = &a->cands[idx[i]];
    moved += cd->disruption;
    if (!seen[cd->pool]) {
      seen[cd->pool] = 1;
      cost += a->pools[cd->pool].cost;
      pool_disruption += a->pools[cd->pool].disruption;
    }
  }
  carp_free(seen);
  if (cost <= 0 || pool_disruption <= 0 || moved <= 0)
    return 0;
  return (savings / cost) / (moved / pool_disruption);
}

static int balanced_involved(const struct dis_analysis *a, const size_t *idx,
                             size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (a->pools[a->cands[idx[i]].pool].np->consolidation_policy ==
        CARP_CONSOLIDATE_BALANCED)
      return 1;
  return 0;
}

static double price_of_set(const struct dis_analysis *a, const size_t *idx,
                           size_t n)
{
  double sum = 0;
  size_t i;
  for (i = 0; i < n; i++)
    sum += a->cands[idx[i]].price > 0 ? a->cands[idx[i]].price : 0;
  return sum;
}

/* Fills cmd from a plan for idx[0..n): savings and, for Balanced pools,
 * the score. Returns 0 when Balanced refuses it (why set, *rejected the
 * score). */
static int accept_move(const struct dis_analysis *a, const size_t *idx,
                       size_t n, enum dis_method method, struct dis_plan *plan,
                       struct dis_command *cmd, char *why, size_t whysz,
                       double *rejected)
{
  double savings = price_of_set(a, idx, n);
  double score = -1;
  if (plan->decision == DIS_REPLACE)
    savings -= plan->repl.price;
  if (balanced_involved(a, idx, n)) {
    score = carp__dis_balanced_score(a, idx, n, savings);
    if (score < BALANCED_THRESHOLD) {
      *rejected = score;
      snprintf(why, whysz,
               "Balanced: the move saves too little for the disruption it "
               "causes (score %.2f < %.2f)",
               score, BALANCED_THRESHOLD);
      return 0;
    }
  }
  memset(cmd, 0, sizeof(*cmd));
  cmd->method = method;
  cmd->reason = CARP_DISRUPT_UNDERUTILIZED;
  cmd->cands = carp_calloc(n, sizeof(size_t));
  memcpy(cmd->cands, idx, n * sizeof(size_t));
  cmd->ncands = n;
  cmd->plan = *plan;
  memset(plan, 0, sizeof(*plan));
  cmd->savings = savings;
  cmd->score = score;
  return 1;
}

/* ---- emptiness ---- */

static int emptiness(const struct dis_analysis *a, struct dis_command *cmd)
{
  int64_t *taken = carp_calloc(a->npools + 1, sizeof(int64_t));
  size_t *idx = carp_calloc(a->ncands + 1, sizeof(size_t));
  size_t i, n = 0;
  for (i = 0; i < a->ncands; i++) {
    const struct dis_cand *cd = &a->cands[i];
    if (!cd->empty || !cd->consolidatable ||
        taken[cd->pool] >= a->pools[cd->pool].allowed[CARP_DISRUPT_EMPTY])
      continue;
    taken[cd->pool]++;
    idx[n++] = i;
  }
  carp_free(taken);
  if (!n) {
    carp_free(idx);
    return 0;
  }
  memset(cmd, 0, sizeof(*cmd));
  cmd->method = DIS_EMPTY;
  cmd->reason = CARP_DISRUPT_EMPTY;
  cmd->cands = idx;
  cmd->ncands = n;
  cmd->plan.decision = DIS_DELETE;
  cmd->savings = price_of_set(a, idx, n);
  cmd->score = -1;
  return 1;
}

/* ---- drift ---- */

static const struct dis_analysis *by_drift_a; /* qsort has no argument */

static int by_drift_time(const void *x, const void *y)
{
  const struct dis_cand *a = &by_drift_a->cands[*(const size_t *)x];
  const struct dis_cand *b = &by_drift_a->cands[*(const size_t *)y];
  if (a->drifted_ms != b->drifted_ms)
    return a->drifted_ms < b->drifted_ms ? -1 : 1;
  return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

static void command_of(struct dis_command *cmd, enum dis_method method,
                       enum carp_disruption_reason reason, size_t *idx,
                       size_t n)
{
  memset(cmd, 0, sizeof(*cmd));
  cmd->method = method;
  cmd->reason = reason;
  cmd->cands = idx;
  cmd->ncands = n;
  cmd->score = -1;
}

#define AT_NODE_LIMIT                                                          \
  "static NodePool is at its node limit and cannot stage a replacement"

/* The drifted candidates of the first static pool, in drift order, that
 * can replace any now (Karpenter's StaticDrift): one NodeClaim of the
 * pool's template each, launched before they go (the scheduler never
 * places pods on a static pool, so nothing is simulated), as many as the
 * Drifted budget allows and limits.nodes leaves room for; none while the
 * pool has more NodeClaims than replicas (scaling down comes first). */
static int static_drift(const struct carp_cluster *c,
                        const struct dis_analysis *a, const size_t *order,
                        size_t n, struct dis_command *cmd,
                        struct dis_notes *notes)
{
  uint8_t *tried = carp_calloc(a->npools + 1, 1);
  size_t *idx = carp_calloc(n + 1, sizeof(size_t));
  size_t i, j, k = 0;
  int found = 0;
  for (i = 0; i < n && !found; i++) {
    size_t p = a->cands[order[i]].pool;
    const struct carp_nodepool *np = a->pools[p].np;
    int64_t want = a->pools[p].allowed[CARP_DISRUPT_DRIFTED], limit;
    struct carp_pool_count cnt;
    struct carp_buf body;
    if (!np->has_replicas || tried[p])
      continue;
    tried[p] = 1;
    carp_cluster_nodepool_count(c, np->meta.name, &cnt);
    if (!want || cnt.active > np->replicas ||
        !carp_conditions_is_true(&np->status.conditions, CARP_COND_READY))
      continue;
    if (carp_nodepool_limit(np, "nodes", &limit) && limit - cnt.total < want)
      want = limit - cnt.total;
    for (j = i, k = 0; j < n; j++) {
      const struct dis_cand *cd = &a->cands[order[j]];
      if (cd->pool != p)
        continue;
      if (want > 0 && k < (size_t)want) {
        idx[k++] = order[j];
      } else if (want <= 0) {
        struct dis_note *x = note(notes, cd, AT_NODE_LIMIT);
        if (x)
          x->drift = 1;
      }
    }
    if (!k)
      continue;
    carp_buf_init(&body, CARP_BUF_UNLIMITED);
    if (carp_prov_claim_encode_pool(c, np, "__NAME__", &body)) {
      CARP_LOG_WARN("disruption", "cannot encode a static replacement",
                    CARP_F_STR("nodepool", np->meta.name));
      carp_buf_free(&body);
      continue;
    }
    command_of(cmd, DIS_DRIFT, CARP_DISRUPT_DRIFTED, idx, k);
    idx = NULL;
    cmd->plan.decision = DIS_REPLACE;
    cmd->plan.repl.nodepool = carp_strdup(np->meta.name);
    cmd->plan.repl.body = carp_buf_steal(&body, NULL);
    cmd->plan.repl.in_place = 1;
    found = 1;
  }
  carp_free(tried);
  carp_free(idx);
  return found;
}

/* Whether the Drifted budget of cd's pool (a dynamic one) has room for one
 * more in this command, counted in taken; takes it if so. */
static int drift_budget_takes(const struct dis_analysis *a, int64_t *taken,
                              const struct dis_cand *cd)
{
  const struct dis_pool *pool = &a->pools[cd->pool];
  if (pool->np->has_replicas ||
      taken[cd->pool] >= pool->allowed[CARP_DISRUPT_DRIFTED])
    return 0;
  taken[cd->pool]++;
  return 1;
}

/* The drifted node idx[0] can go (plan); more of the drifted nodes after
 * it (rest, in drift order) go with it in one command as far as their
 * pools' Drifted budgets allow (taken: none taken yet) and the simulation
 * finds every pod a place: the longest such prefix, found by halving, so
 * a budget of ten replaces ten nodes at a time instead of one after
 * another. Returns how many are in idx; plan is the plan for all of them. */
static size_t widen_drift(struct dis_sim *sim, const struct dis_analysis *a,
                          int64_t *taken, const size_t *rest, size_t nrest,
                          size_t *idx, struct dis_plan *plan)
{
  size_t i, m = 0, lo = 0, hi;
  taken[a->cands[idx[0]].pool] = 1;
  for (i = 0; i < nrest; i++)
    if (drift_budget_takes(a, taken, &a->cands[rest[i]]))
      idx[1 + m++] = rest[i];
  /* lo: the longest prefix known to go; hi: the longest that may. */
  hi = m;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    struct dis_plan p;
    carp__dis_sim_run_any(sim, idx, 1 + mid, &p);
    if (p.decision == DIS_NONE) {
      carp__dis_plan_cleanup(&p);
      hi = mid - 1;
      continue;
    }
    carp__dis_plan_cleanup(plan);
    *plan = p;
    lo = mid;
  }
  return 1 + lo;
}

static int drift(const struct carp_cluster *c, struct carp_provider *provider,
                 const struct dis_analysis *a, struct dis_command *cmd,
                 struct dis_notes *notes)
{
  int64_t *taken = carp_calloc(a->npools + 1, sizeof(int64_t));
  size_t *order = carp_calloc(a->ncands + 1, sizeof(size_t));
  size_t *idx = carp_calloc(a->ncands + 1, sizeof(size_t));
  struct dis_sim *sim = NULL;
  size_t i, k, n = 0, ne = 0;
  int found = 0;
  for (i = 0; i < a->ncands; i++)
    if (a->cands[i].drifted)
      order[n++] = i;
  by_drift_a = a;
  qsort(order, n, sizeof(size_t), by_drift_time);
  if (static_drift(c, a, order, n, cmd, notes)) {
    carp_free(taken);
    carp_free(order);
    carp_free(idx);
    return 1;
  }
  for (i = 0; i < n; i++)
    if (a->cands[order[i]].empty &&
        drift_budget_takes(a, taken, &a->cands[order[i]]))
      idx[ne++] = order[i];
  if (ne) {
    command_of(cmd, DIS_DRIFT, CARP_DISRUPT_DRIFTED, idx, ne);
    cmd->plan.decision = DIS_DELETE;
    cmd->savings = price_of_set(a, idx, ne);
    idx = NULL;
    found = 1;
  }
  for (i = 0; !found && i < n; i++) {
    const struct dis_cand *cd = &a->cands[order[i]];
    struct dis_plan plan;
    if (!a->pools[cd->pool].allowed[CARP_DISRUPT_DRIFTED] ||
        a->pools[cd->pool].np->has_replicas)
      continue;
    if (!sim && carp__dis_sim_new(c, provider, a, &sim)) {
      CARP_LOG_WARN("disruption", "cannot build the drift simulation");
      break;
    }
    carp__dis_sim_run_any(sim, &order[i], 1, &plan);
    if (plan.decision == DIS_NONE) {
      struct dis_note *x = note(notes, cd, plan.why);
      if (x)
        x->drift = 1;
      carp__dis_plan_cleanup(&plan);
      continue;
    }
    idx[0] = order[i];
    /* No empty node was taken (else ne): taken is all zero here. */
    k = widen_drift(sim, a, taken, order + i + 1, n - i - 1, idx, &plan);
    command_of(cmd, DIS_DRIFT, CARP_DISRUPT_DRIFTED, idx, k);
    cmd->plan = plan;
    cmd->savings = price_of_set(a, idx, k);
    if (plan.decision == DIS_REPLACE) {
      size_t r;
      cmd->savings -= plan.repl.price;
      for (r = 0; r < plan.nmore; r++)
        cmd->savings -= plan.more[r].price;
    }
    idx = NULL;
    found = 1;
  }
  carp__dis_sim_free(sim);
  carp_free(taken);
  carp_free(order);
  carp_free(idx);
  return found;
}

/* ---- consolidation ---- */

/* The non-empty candidates of consolidating pools, cheapest to disrupt
 * first: as many per pool as its Underutilized budget allows (multi-node
 * moves them together), or every one of a pool whose budget allows one
 * (single-node moves one at a time). */
static size_t consolidation_candidates(const struct dis_analysis *a,
                                       int together, size_t *out)
{
  int64_t *taken = carp_calloc(a->npools + 1, sizeof(int64_t));
  size_t i, n = 0;
  for (i = 0; i < a->ncands; i++) {
    const struct dis_cand *cd = &a->cands[i];
    const struct dis_pool *p = &a->pools[cd->pool];
    if (cd->empty || !cd->consolidatable ||
        p->np->consolidation_policy == CARP_CONSOLIDATE_WHEN_EMPTY ||
        taken[cd->pool] >= (together
                                ? p->allowed[CARP_DISRUPT_UNDERUTILIZED]
                                : !!p->allowed[CARP_DISRUPT_UNDERUTILIZED]))
      continue;
    if (together)
      taken[cd->pool]++;
    out[n++] = i;
  }
  carp_free(taken);
  return n;
}

/* The longest prefix of cands that can go together: a binary search for
 * the longest that has room with at most one new node (room only grows
 * scarcer as the prefix grows, so this search is sound where one on
 * price is not: three 2-vCPU nodes can fold into one 4-vCPU node when two
 * of them cannot, for want of savings), then that length and the next
 * few shorter ones priced. The whole list is asked first: when it has
 * room (often, as the list is cut at the budget) that is the longest
 * prefix, found with one solve rather than a search's log2(n), and the
 * priced run that follows reuses it. */
static int longest_prefix(struct dis_sim *sim, const struct dis_analysis *a,
                          const size_t *cands, size_t n,
                          struct dis_command *cmd)
{
  size_t lo = 2, hi = n, fit = 0, k, tries;
  char why[256];
  if (carp__dis_sim_fits(sim, cands, n)) {
    fit = n;
    lo = n + 1; /* nothing left to search */
  } else {
    hi = n - 1;
  }
  while (lo <= hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (carp__dis_sim_fits(sim, cands, mid)) {
      fit = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  for (k = fit, tries = 0; k >= 2 && tries < PRICE_STEPS; k--, tries++) {
    struct dis_plan plan;
    double rejected = -1;
    carp__dis_sim_run_multi(sim, cands, k, &plan);
    if (plan.decision != DIS_NONE &&
        accept_move(a, cands, k, DIS_MULTI, &plan, cmd, why, sizeof(why),
                    &rejected))
      return 1;
    carp__dis_plan_cleanup(&plan);
  }
  return 0;
}

/* Across every pool first; then, since one candidate that cannot move
 * (its pods held to its own pool) spoils every prefix that holds it, each
 * pool on its own, keeping the command that saves most. */
static int multi_node(struct dis_sim *sim, const struct dis_analysis *a,
                      const size_t *cands, size_t n, struct dis_command *cmd)
{
  size_t *mine = carp_calloc(n + 1, sizeof(size_t));
  size_t p, i, m;
  int found = 0;
  if (longest_prefix(sim, a, cands, n, cmd)) {
    carp_free(mine);
    return 1;
  }
  for (p = 0; p < a->npools; p++) {
    struct dis_command c;
    for (i = 0, m = 0; i < n; i++)
      if (a->cands[cands[i]].pool == p)
        mine[m++] = cands[i];
    if (m < 2 || m == n || !longest_prefix(sim, a, mine, m, &c))
      continue;
    if (found && c.savings <= cmd->savings) {
      carp__dis_command_cleanup(&c);
      continue;
    }
    if (found)
      carp__dis_command_cleanup(cmd);
    *cmd = c;
    found = 1;
  }
  carp_free(mine);
  return found;
}

static int single_node(struct dis_sim *sim, const struct dis_analysis *a,
                       const size_t *cands, size_t n, struct dis_command *cmd,
                       struct dis_notes *notes)
{
  char why[256];
  size_t i;
  for (i = 0; i < n; i++) {
    struct dis_plan plan;
    struct dis_note *x;
    double rejected = -1;
    carp__dis_sim_run(sim, &cands[i], 1, 1, &plan);
    if (plan.decision != DIS_NONE &&
        accept_move(a, &cands[i], 1, DIS_SINGLE, &plan, cmd, why, sizeof(why),
                    &rejected))
      return 1;
    x = note(notes, &a->cands[cands[i]],
             plan.decision == DIS_NONE ? plan.why : why);
    if (x && rejected >= 0) {
      x->score = rejected;
      x->pool = a->pools[a->cands[cands[i]].pool].np->meta.name;
    }
    carp__dis_plan_cleanup(&plan);
  }
  return 0;
}

/* Empty nodes may hold the room a CapacityBuffer keeps: of the empty
 * candidates, only those whose going leaves every held buffer pod a place
 * stay in the command, taken one by one in order. Returns whether any
 * does. */
static int keep_buffer_room(const struct carp_cluster *c,
                            struct carp_provider *provider,
                            const struct dis_analysis *a,
                            struct dis_command *cmd, struct dis_notes *notes)
{
  struct dis_sim *sim = NULL;
  size_t i, kept = 0, nvirt;
  carp_cluster_virtual_pods(c, &nvirt);
  if (!nvirt)
    return 1;
  if (carp__dis_sim_new(c, provider, a, &sim)) {
    CARP_LOG_WARN("disruption", "cannot build the simulation for empty nodes "
                                "that may hold a CapacityBuffer's room");
    return 0;
  }
  for (i = 0; i < cmd->ncands; i++) {
    struct dis_plan plan;
    cmd->cands[kept] = cmd->cands[i];
    carp__dis_sim_run(sim, cmd->cands, kept + 1, 0, &plan);
    if (plan.decision == DIS_DELETE)
      kept++;
    else
      note(notes, &a->cands[cmd->cands[i]],
           "it holds room a CapacityBuffer keeps");
    carp__dis_plan_cleanup(&plan);
  }
  carp__dis_sim_free(sim);
  cmd->ncands = kept;
  cmd->savings = price_of_set(a, cmd->cands, kept);
  return kept > 0;
}

int carp__dis_decide(const struct carp_cluster *c,
                     struct carp_provider *provider,
                     const struct dis_analysis *a, struct dis_command *cmd,
                     struct dis_notes *notes)
{
  struct dis_sim *sim = NULL;
  size_t *cands, n;
  int found = 0, rc;
  if (emptiness(a, cmd)) {
    if (keep_buffer_room(c, provider, a, cmd, notes))
      return 1;
    carp__dis_command_cleanup(cmd);
  }
  if (drift(c, provider, a, cmd, notes))
    return 1;
  cands = carp_calloc(a->ncands + 1, sizeof(size_t));
  n = consolidation_candidates(a, 0, cands);
  if (!n) {
    carp_free(cands);
    return 0;
  }
  rc = carp__dis_sim_new(c, provider, a, &sim);
  if (rc) {
    CARP_LOG_WARN("disruption", "cannot build the consolidation simulation",
                  CARP_F_ERR(rc));
    carp_free(cands);
    return 0;
  }
  {
    size_t *together = carp_calloc(a->ncands + 1, sizeof(size_t));
    size_t nt = consolidation_candidates(a, 1, together);
    if (nt >= 2)
      found = multi_node(sim, a, together, nt, cmd);
    carp_free(together);
  }
  if (!found)
    found = single_node(sim, a, cands, n, cmd, notes);
  CARP_LOG_DEBUG("disruption", "consolidation evaluated",
                 CARP_F_UINT("candidates", n), CARP_F_BOOL("found", found));
  carp__dis_sim_free(sim);
  carp_free(cands);
  return found;
}
