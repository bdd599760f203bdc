/* solve.c: the placement loop.
 *
 * Setup turns the problem into ids, bitsets and vectors (dimensions,
 * instance types, NodePools, bins for nodes and in-flight claims, pod
 * groups, topology). Then groups are taken in queue order. For each pod of
 * a group, a bin mask is built word by word (open bins, minus the bins this
 * group was refused by for good, minus what its topology rules rule out)
 * and the surviving bins are tried first-fit in bin order: existing nodes,
 * in-flight claims, then the claims this solve opened, oldest first; a group
 * without topology rules places as many pods as fit at once. When no bin
 * takes the pod, a claim is opened from the first NodePool (by weight) that
 * accepts it, and every NodePool that refused says why.
 *
 * First fit over claims in opening order, with pods in decreasing size, is
 * first-fit-decreasing; it lets a claim keep growing while some instance
 * type still holds it, and makes rejection monotone enough to remember
 * (requirements only narrow and usage only grows, so a bin that refused a
 * group for those reasons refuses it forever). Groups that no topology rule
 * ties to any other pod are packed afterwards by pack.c, which balances
 * resources instead of taking them in size order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "schd_int.h"

void schd_reject(struct schd_solver *s, struct schd_group *g, uint32_t bi)
{
  if (!g->rej)
    schd_breg(s, &g->rej);
  bs_set(g->rej, bi);
}

void schd_refuse(struct schd_solver *s, struct schd_group *g, uint32_t pool,
                 uint8_t reason, uint32_t detail, uint32_t a, uint32_t b)
{
  if (!g->ref) {
    g->ref = schd_zalloc(&s->arena, (s->npools + 1) * sizeof(*g->ref));
    g->ref_set = schd_zalloc(&s->arena, s->npools + 1);
  }
  g->ref[pool].reason = reason;
  g->ref[pool].detail = detail;
  g->ref[pool].a = a;
  g->ref[pool].b = b;
  g->ref_set[pool] = 1;
}

uint32_t schd_try_place(struct schd_solver *s, struct schd_group *g,
                        uint32_t bi, uint32_t kmax, struct schd_fail *f)
{
  struct schd_bin *b = &s->bins[bi];
  const uint32_t R = s->R;
  uint32_t rs, rs0, bad = SCHD_NONE, k = 0;
  int lenient = b->kind == BIN_CLAIM, mono_after;

  f->monotone = 1;
  f->detail = SCHD_NONE;
  if (g->bad) {
    f->reason = CARP_SCHED_REASON_REQUIREMENT;
    return 0;
  }
  if (!schd_group_tolerates(s, g, b->taintset, NULL)) {
    f->reason = CARP_SCHED_REASON_TAINT;
    return 0;
  }
  if (g->nports) {
    uint32_t port;
    kmax = 1;
    if (b->nports &&
        schd_ports_conflict(g->ports, g->nports, b->ports, b->nports, &port)) {
      f->reason = CARP_SCHED_REASON_HOST_PORT;
      f->detail = port;
      return 0;
    }
  }
  rs = schd_rset_add(&s->rc, b->rset, g->rset, lenient, &bad);
  if (rs == SCHD_NONE) {
    f->reason = CARP_SCHED_REASON_REQUIREMENT;
    f->detail = bad;
    return 0;
  }
  rs0 = rs;
  if (g->nrules) {
    uint8_t reason;
    uint32_t key;
    int mono;
    if (!schd_topology_check(s, g, bi, &rs, &reason, &key, &mono)) {
      f->reason = reason;
      f->detail = key;
      f->monotone = mono;
      return 0;
    }
  }
  /* A refusal caused by a domain the topology picked may change later. */
  mono_after = rs == rs0;
  if (b->kind != BIN_CLAIM) {
    k = (uint32_t)schd_fit_count(s, b->used, g->req, b->alloc, kmax);
    if (!k) {
      f->reason = CARP_SCHED_REASON_RESOURCES;
      f->monotone = mono_after;
      return 0;
    }
  } else {
    struct schd_pool *pool = &s->pools[b->pool];
    const uint64_t *compat = schd_pool_compat(s, pool, rs);
    int any = 0;
    for (size_t w = 0; w < s->twords; w++) {
      s->scr[w] = b->opts[w] & compat[w];
      any |= s->scr[w] != 0;
    }
    if (!any) {
      f->reason = CARP_SCHED_REASON_INSTANCE_TYPE;
      f->monotone = mono_after;
      return 0;
    }
    if (kmax > 1) {
      int64_t best = 0;
      for (size_t t = bs_next(s->scr, s->twords, 0); t != SIZE_MAX;
           t = bs_next(s->scr, s->twords, t + 1)) {
        int64_t c = schd_fit_count(s, b->used, g->req, &pool->cap[t * R], kmax);
        if (c > best) {
          best = c;
          if (best == kmax)
            break;
        }
      }
      k = (uint32_t)best;
    } else {
      k = 1;
    }
    if (k) {
      for (uint32_t r = 0; r < R; r++)
        s->vtmp[r] = b->used[r] + (int64_t)k * g->req[r];
      memcpy(s->scr2, s->scr, s->twords * sizeof(uint64_t));
      schd_opts_shrink(s, pool, b->thr, s->vtmp, s->scr2, s->thrtmp);
      if (!bs_any(s->scr2, s->twords))
        k = 0;
    }
    if (!k) {
      f->reason = CARP_SCHED_REASON_RESOURCES;
      f->monotone = mono_after;
      return 0;
    }
    if (schd_rset(&s->rc, rs)->has_min_values &&
        !schd_min_values_ok(s, rs, s->scr2, &bad)) {
      f->reason = CARP_SCHED_REASON_MIN_VALUES;
      f->detail = bad;
      f->monotone = mono_after;
      return 0;
    }
  }

  /* commit */
  if (b->kind != BIN_NODE && rs != b->rset) {
    b->rset = rs;
    schd_bin_settle(s, bi);
  }
  for (uint32_t r = 0; r < R; r++)
    b->used[r] += (int64_t)k * g->req[r];
  if (b->kind == BIN_CLAIM) {
    memcpy(b->opts, s->scr2, s->twords * sizeof(uint64_t));
    memcpy(b->thr, s->thrtmp, R * sizeof(uint32_t));
    schd_claim_reserve(s, b);
  }
  if (g->nports)
    schd_bin_add_ports(b, g->ports, g->nports);
  b->npods += k;
  for (uint32_t i = 0; i < k; i++)
    s->assign[g->pods[g->next++]] = bi;
  schd_record(s, g, bi, k);
  for (uint32_t i = 0; i < g->nrules; i++)
    if (g->rules[i].type == TG_SPREAD && s->tgs[g->rules[i].tg].hostname)
      bs_set(s->tgs[g->rules[i].tg].owned, bi);
  if (schd_bin_full(s, b))
    bs_clr(s->open, bi);
  return k;
}

/* The dimension no compatible type has enough of, for a refusal. */
static uint32_t short_dim(struct schd_solver *s, struct schd_pool *pool,
                          struct schd_group *g, uint32_t rs)
{
  const uint32_t R = s->R;
  const uint64_t *compat = schd_pool_compat(s, pool, rs);
  for (uint32_t r = 0; r < R; r++) {
    int64_t mx = INT64_MIN;
    if (g->req[r] <= 0)
      continue;
    for (size_t t = bs_next(compat, s->twords, 0); t != SIZE_MAX;
         t = bs_next(compat, s->twords, t + 1))
      if (pool->cap[t * R + r] > mx)
        mx = pool->cap[t * R + r];
    if (mx < g->req[r])
      return r;
  }
  return SCHD_NONE;
}

/* Whether a type of the pool would hold g's pod but has no available
 * offering now (its hosts are full, out of devices, or cached as such):
 * then "no type has enough" or "no type met the requirements" would
 * mislead. used: what the claim holds already (NULL: nothing). The zone
 * and capacity-type keys are not compared: a type without offerings has
 * none of either. */
static int unavailable_fit(struct schd_solver *s, struct schd_pool *pool,
                           struct schd_group *g, uint32_t rs,
                           const int64_t *used)
{
  const uint32_t R = s->R;
  const uint64_t *compat = schd_pool_compat(s, pool, rs);
  if (!used)
    used = schd_zalloc(&s->arena, (R + 1) * sizeof(int64_t));
  for (size_t t = bs_next(pool->listed, s->twords, 0); t != SIZE_MAX;
       t = bs_next(pool->listed, s->twords, t + 1)) {
    if (bs_get(compat, t) || s->types[t].noff ||
        !schd_rset_intersects_but(&s->rc, s->types[t].rset, rs, s->rc.k_zone,
                                  s->rc.k_ct, NULL))
      continue;
    if (schd_fit_count(s, used, g->req, &pool->cap[t * R], 1))
      return 1;
  }
  return 0;
}

uint32_t schd_open_claim(struct schd_solver *s, struct schd_group *g,
                         uint32_t kmax)
{
  const uint32_t R = s->R;
  const struct carp_sched_problem *p = s->p;
  if (p->no_new_claims || (p->max_new_claims && s->nnew >= p->max_new_claims)) {
    for (uint32_t pi = 0; pi < s->npools; pi++)
      schd_refuse(s, g, pi, CARP_SCHED_REASON_CLAIM_LIMIT, SCHD_NONE, 0, 0);
    return SCHD_NONE;
  }
  for (uint32_t pi = 0; pi < s->npools; pi++) {
    struct schd_pool *pool = &s->pools[pi];
    struct schd_bin *b;
    struct schd_fail f;
    uint32_t bad = SCHD_NONE, rs, bi, port;
    if (g->bad) {
      schd_refuse(s, g, pi, CARP_SCHED_REASON_REQUIREMENT, SCHD_NONE, 0, 0);
      continue;
    }
    if (!schd_group_tolerates(s, g, pool->taintset, NULL)) {
      schd_group_tolerates(s, g, pool->taintset, &bad);
      schd_refuse(s, g, pi, CARP_SCHED_REASON_TAINT, SCHD_NONE, pool->taintset,
                  bad);
      continue;
    }
    if (g->nports && pool->ndports &&
        schd_ports_conflict(g->ports, g->nports, pool->dports, pool->ndports,
                            &port)) {
      schd_refuse(s, g, pi, CARP_SCHED_REASON_HOST_PORT, port, 0, 0);
      continue;
    }
    rs = schd_rset_add(&s->rc, pool->tmpl, g->rset, 1, &bad);
    if (rs == SCHD_NONE) {
      schd_refuse(s, g, pi, CARP_SCHED_REASON_REQUIREMENT, bad, 0, 0);
      continue;
    }
    if (!bs_any(schd_pool_compat(s, pool, rs), s->twords)) {
      schd_refuse(s, g, pi, CARP_SCHED_REASON_INSTANCE_TYPE, SCHD_NONE,
                  (uint32_t)unavailable_fit(s, pool, g, rs, NULL), 0);
      continue;
    }
    if (pool->remaining[R] < 1000) {
      schd_refuse(s, g, pi, CARP_SCHED_REASON_LIMIT, R, 0, 0);
      continue;
    }
    bi = schd_bin_new(s, BIN_CLAIM);
    b = &s->bins[bi];
    b->pool = (int32_t)pi;
    b->rset = pool->tmpl;
    b->taintset = pool->taintset;
    b->opts = schd_alloc(&s->arena, s->twords * sizeof(uint64_t));
    b->thr = schd_zalloc(&s->arena, R * sizeof(uint32_t));
    memcpy(b->opts, pool->types, s->twords * sizeof(uint64_t));
    memset(s->scr_lim, 0, s->twords * sizeof(uint64_t));
    if (pool->limited) {
      uint32_t breach = SCHD_NONE;
      const uint64_t *compat = schd_pool_compat(s, pool, rs);
      int compat_left = 0;
      for (size_t t = bs_next(b->opts, s->twords, 0); t != SIZE_MAX;
           t = bs_next(b->opts, s->twords, t + 1))
        for (uint32_t r = 0; r < R; r++)
          if (pool->remaining[r] != INT64_MAX &&
              s->types[t].cap[r] > pool->remaining[r]) {
            bs_clr(b->opts, t);
            bs_set(s->scr_lim, t);
            if (bs_get(compat, t) && breach == SCHD_NONE)
              breach = r;
            break;
          }
      for (size_t w = 0; w < s->twords; w++)
        compat_left |= (b->opts[w] & compat[w]) != 0;
      if (!compat_left) {
        schd_bin_discard(s, bi);
        schd_refuse(s, g, pi, CARP_SCHED_REASON_LIMIT,
                    breach == SCHD_NONE ? SCHD_DIM_CPU : breach, 0, 0);
        continue;
      }
    }
    if (pool->ndports)
      schd_bin_add_ports(b, pool->dports, pool->ndports);
    schd_bin_settle(s, bi);
    bs_set(s->open, bi);
    if (!schd_try_place(s, g, bi, kmax, &f)) {
      uint32_t detail = f.detail, unavailable = 0;
      if (f.reason == CARP_SCHED_REASON_RESOURCES) {
        unavailable = (uint32_t)unavailable_fit(s, pool, g, rs, b->used);
        detail = short_dim(s, pool, g, rs);
        /* a type the limit removed would have held it: say so */
        for (size_t t = bs_next(s->scr_lim, s->twords, 0); t != SIZE_MAX;
             t = bs_next(s->scr_lim, s->twords, t + 1)) {
          if (!bs_get(schd_pool_compat(s, pool, rs), t) ||
              !schd_fit_count(s, b->used, g->req, &pool->cap[t * R], 1))
            continue;
          f.reason = CARP_SCHED_REASON_LIMIT;
          for (uint32_t r = 0; r < R; r++)
            if (pool->remaining[r] != INT64_MAX &&
                s->types[t].cap[r] > pool->remaining[r]) {
              detail = r;
              break;
            }
          break;
        }
      }
      schd_bin_discard(s, bi);
      schd_refuse(s, g, pi, f.reason, detail,
                  f.reason == CARP_SCHED_REASON_RESOURCES ? unavailable : 0, 0);
      continue;
    }
    s->nnew++;
    return bi;
  }
  return SCHD_NONE;
}

/* Places as many of g's remaining pods as possible; returns how many. */
static uint32_t place_group(struct schd_solver *s, struct schd_group *g)
{
  uint32_t placed = 0;
  while (g->next < g->npods) {
    uint32_t remain = g->npods - g->next, kmax = g->batch ? remain : 1;
    uint32_t before = g->next, found = SCHD_NONE;
    size_t nw = SCHD_WORDS(s->nbins), b;
    uint64_t *mask = s->bscr;
    struct schd_fail f;
    if (g->nrules)
      schd_topology_prepare(s, g);
    for (size_t w = 0; w < nw; w++)
      mask[w] = s->open[w] & (g->rej ? ~g->rej[w] : ~(uint64_t)0);
    if (g->nrules)
      schd_topology_mask(s, g, mask, nw);
    for (b = bs_next(mask, nw, 0); b != SIZE_MAX;
         b = bs_next(mask, nw, b + 1)) {
      if (schd_try_place(s, g, (uint32_t)b, kmax, &f)) {
        found = (uint32_t)b;
        break;
      }
      if (f.monotone)
        schd_reject(s, g, (uint32_t)b);
    }
    if (found == SCHD_NONE && schd_open_claim(s, g, kmax) == SCHD_NONE)
      break;
    placed += g->next - before;
  }
  return placed;
}

static void run_queue(struct schd_solver *s, uint32_t *q, uint32_t n)
{
  uint32_t head = 0, count = n, stale = 0;
  while (count > 0 && stale < count) {
    uint32_t gi = q[head], placed;
    struct schd_group *g = &s->groups[gi];
    int relaxed;
    head = (head + 1) % n;
    count--;
    s->stats.passes++;
    placed = place_group(s, g);
    if (g->next >= g->npods) {
      stale = 0;
      continue;
    }
    relaxed = schd_group_relax(s, g);
    q[(head + count) % n] = gi;
    count++;
    if (placed || relaxed)
      stale = 0;
    else
      stale++;
  }
}

static int group_cmp(const void *a, const void *b, void *arg)
{
  const struct schd_solver *s = arg;
  const struct schd_group *x = &s->groups[*(const uint32_t *)a];
  const struct schd_group *y = &s->groups[*(const uint32_t *)b];
  int c;
  /* Pods that need an extended resource go first: they open claims of the
   * types (and pools) that have it, and the others fill those claims or
   * their own. The other way round a GPU pod would turn a claim opened for
   * plain pods into a GPU node. */
  if (x->sort_extended != y->sort_extended)
    return x->sort_extended ? -1 : 1;
  if (x->sort_cpu != y->sort_cpu)
    return x->sort_cpu > y->sort_cpu ? -1 : 1;
  if (x->sort_mem != y->sort_mem)
    return x->sort_mem > y->sort_mem ? -1 : 1;
  if (x->sort_created != y->sort_created)
    return x->sort_created < y->sort_created ? -1 : 1;
  c = strcmp(x->sort_uid, y->sort_uid);
  if (c)
    return c;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int validate(const struct carp_sched_problem *p)
{
  if (!p)
    return CARP_EINVAL;
  if ((p->npods && !p->pods) || (p->nnodes && !p->nodes) ||
      (p->nbound_pods && !p->bound_pods) || (p->nnodepools && !p->nodepools) ||
      (p->ninstance_types && !p->instance_types) ||
      (p->ndaemons && !p->daemons))
    return CARP_EINVAL;
  for (size_t i = 0; i < p->nbound_pods; i++)
    if (p->bound_pods[i].node >= p->nnodes)
      return CARP_EINVAL;
  return 0;
}

static void solver_free(struct schd_solver *s)
{
  schd_bins_free(s); /* first: registered bitsets live in other structs */
  schd_tg_index_free(s);
  carp_free(s->groups);
  for (uint32_t i = 0; i < s->ntgs; i++)
    if (s->tgs[i].hostname)
      carp_free(s->tgs[i].cnt);
  carp_free(s->tgs);
  for (uint32_t k = 0; k < s->ndkeys; k++) {
    struct schd_dkey *dk = &s->dkeys[k];
    schd_map_free(&dk->idx);
    schd_map_free(&dk->poss);
    schd_map_free(&dk->xset);
    carp_free(dk->vals);
    carp_free(dk->bins_in);
  }
  carp_free(s->dkeys);
  for (uint32_t pi = 0; pi < s->npools; pi++) {
    schd_map_free(&s->pools[pi].compat);
    carp_free(s->pools[pi].dports);
  }
  carp_free(s->tsets);
  schd_map_free(&s->tset_by_hash);
  schd_map_free(&s->tg_by_hash);
  schd_map_free(&s->sel_memo);
  carp_free(s->dim_names);
  schd_rbuild_free(&s->rb);
  schd_rctx_free(&s->rc);
  schd_arena_free(&s->arena);
  carp_free(s);
}

static size_t solver_bytes(const struct schd_solver *s)
{
  size_t n = s->arena.bytes + s->rc.arena.bytes;
  n += schd_map_bytes(&s->rc.memo) + schd_map_bytes(&s->rc.memo_ix) +
       schd_map_bytes(&s->rc.byhash) + schd_map_bytes(&s->rc.in.ptr);
  n += (size_t)s->nbreg * s->bwords * sizeof(uint64_t);
  n += (size_t)s->capbins * sizeof(struct schd_bin);
  n += (size_t)s->ngroups * sizeof(struct schd_group);
  return n;
}

int carp_sched_solve(const struct carp_sched_problem *p,
                     struct carp_sched_result **out)
{
  struct schd_solver *s;
  struct carp_sched_result *res;
  uint32_t *q1, *q2, n1 = 0, n2 = 0;
  int rc;

  if (!out)
    return CARP_EINVAL;
  *out = NULL;
  rc = validate(p);
  if (rc < 0)
    return rc;
  s = CARP_NEW(struct schd_solver);
  s->p = p;
  schd_rctx_init(&s->rc);
  schd_arena_init(&s->arena);
  schd_rbuild_init(&s->rb);
  schd_map_init(&s->tset_by_hash);
  schd_map_init(&s->tg_by_hash);

  if ((rc = schd_dims_setup(s)) < 0 || (rc = schd_types_setup(s)) < 0 ||
      (rc = schd_pools_setup(s)) < 0 || (rc = schd_bins_setup(s)) < 0 ||
      (rc = schd_groups_setup(s)) < 0 || (rc = schd_topology_setup(s)) < 0)
    goto fail;

  s->scr = schd_zalloc(&s->arena, (s->twords + 1) * sizeof(uint64_t));
  s->scr2 = schd_zalloc(&s->arena, (s->twords + 1) * sizeof(uint64_t));
  s->scr_lim = schd_zalloc(&s->arena, (s->twords + 1) * sizeof(uint64_t));
  s->vtmp = schd_zalloc(&s->arena, (s->R + 1) * sizeof(int64_t));
  s->thrtmp = schd_zalloc(&s->arena, (s->R + 1) * sizeof(uint32_t));
  s->assign = schd_alloc(&s->arena, (p->npods + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < p->npods; i++)
    s->assign[i] = SCHD_NONE;
  s->minreq = schd_alloc(&s->arena, s->R * sizeof(int64_t));
  for (uint32_t r = 0; r < s->R; r++) {
    s->minreq[r] = s->ngroups ? INT64_MAX : 0;
    for (uint32_t gi = 0; gi < s->ngroups; gi++)
      if (s->groups[gi].req[r] < s->minreq[r])
        s->minreq[r] = s->groups[gi].req[r];
  }
  for (uint32_t bi = 0; bi < s->nbins; bi++)
    if (bs_get(s->open, bi) && schd_bin_full(s, &s->bins[bi]))
      bs_clr(s->open, bi);

  q1 = schd_alloc(&s->arena, (s->ngroups + 1) * sizeof(uint32_t));
  q2 = schd_alloc(&s->arena, (s->ngroups + 1) * sizeof(uint32_t));
  for (uint32_t gi = 0; gi < s->ngroups; gi++) {
    struct schd_group *g = &s->groups[gi];
    if (p->ignore_preferences) {
      const struct carp_sched_pod *pod = &p->pods[g->rep];
      g->pref_dropped = (uint32_t)pod->npreferred_terms;
      for (uint32_t i = 0; i < g->nown; i++) {
        g->sa_dropped += g->own[i].cls == OWN_SCHEDULE_ANYWAY;
        g->paff_dropped += g->own[i].cls == OWN_PREF_AFFINITY;
        g->panti_dropped += g->own[i].cls == OWN_PREF_ANTI;
      }
    }
    schd_group_apply(s, g);
    if (g->inert)
      q2[n2++] = gi;
    else
      q1[n1++] = gi;
  }
  schd_effective_zones(s);
  qsort_r(q1, n1, sizeof(uint32_t), group_cmp, s);
  qsort_r(q2, n2, sizeof(uint32_t), group_cmp, s);
  if (n1)
    run_queue(s, q1, n1);
  if (n2)
    schd_pack_inert(s, q2, n2);

  res = CARP_NEW(struct carp_sched_result);
  s->stats.bytes = solver_bytes(s);
  rc = schd_result_build(s, res);
  if (rc < 0) {
    carp_sched_result_free(res);
    goto fail;
  }
  res->stats = s->stats;
  solver_free(s);
  *out = res;
  return 0;
fail:
  solver_free(s);
  return rc;
}
