/* affinity.c: the topology rules of one placement.
 *
 * A group's rules are its active topology spread constraints, pod affinity
 * and anti-affinity terms (preferred ones until relaxed), plus the required
 * anti-affinity of other pods that select it. Before scanning bins for a
 * pod, the domains each rule allows are computed once from the current
 * counts (Karpenter's nextDomainTopologySpread / nextDomainAffinity /
 * nextDomainAntiAffinity), and turned into a bin mask: for hostname rules
 * that is the TG's "occupied" or "at max skew" bitset, for other keys the
 * union of the bins settled in an allowed domain plus the unsettled ones.
 * Only bins surviving the mask are checked one by one; the check narrows an
 * unsettled claim to the chosen domain (the least loaded one for a spread),
 * which the caller then commits. */
#include <string.h>

#include "schd_int.h"

void schd_topology_prepare(struct schd_solver *s, struct schd_group *g)
{
  for (uint32_t i = 0; i < g->nrules; i++) {
    const struct schd_tg *t = &s->tgs[g->rules[i].tg];
    if (t->hostname)
      continue;
    schd_tg_allowed(s, g, t, g->rules[i].self, g->allow[i]);
  }
}

void schd_topology_mask(struct schd_solver *s, struct schd_group *g,
                        uint64_t *mask, size_t nw)
{
  for (uint32_t i = 0; i < g->nrules; i++) {
    const struct schd_rule *ru = &g->rules[i];
    const struct schd_tg *t = &s->tgs[ru->tg];
    size_t w;
    if (t->hostname) {
      switch (ru->type) {
      case TG_SPREAD: {
        /* count + self must stay within maxSkew (the minimum is 0) */
        const uint64_t *full = ru->self ? t->atmax : t->over;
        for (w = 0; w < nw; w++)
          mask[w] &= ~full[w];
        break;
      }
      case TG_AFFINITY:
        if (!(ru->self && t->total == 0))
          for (w = 0; w < nw; w++)
            mask[w] &= t->occ[w];
        break;
      default:
        for (w = 0; w < nw; w++)
          mask[w] &= ~t->occ[w];
        break;
      }
      continue;
    }
    {
      struct schd_dkey *dk = &s->dkeys[t->dkey];
      uint64_t *acc = s->bscr2;
      if (ru->type == TG_SPREAD || ru->type == TG_AFFINITY) {
        memcpy(acc, dk->unres, nw * sizeof(uint64_t));
        for (size_t d = bs_next(g->allow[i], dk->dwords, 0); d != SIZE_MAX;
             d = bs_next(g->allow[i], dk->dwords, d + 1))
          for (w = 0; w < nw; w++)
            acc[w] |= dk->bins_in[d][w];
        for (w = 0; w < nw; w++)
          mask[w] &= acc[w];
      } else {
        for (uint32_t d = 0; d < dk->ndom; d++)
          if (t->cnt[d] > 0)
            for (w = 0; w < nw; w++)
              mask[w] &= ~dk->bins_in[d][w];
      }
    }
  }
}

static uint8_t reason_of(uint8_t type)
{
  switch (type) {
  case TG_SPREAD:
    return CARP_SCHED_REASON_SPREAD;
  case TG_AFFINITY:
    return CARP_SCHED_REASON_AFFINITY;
  default:
    return CARP_SCHED_REASON_ANTI_AFFINITY;
  }
}

int schd_topology_check(struct schd_solver *s, struct schd_group *g,
                        uint32_t bi, uint32_t *rset, uint8_t *reason,
                        uint32_t *key, int *monotone)
{
  struct schd_bin *b = &s->bins[bi];
  uint32_t rs = *rset;
  for (uint32_t i = 0; i < g->nrules; i++) {
    const struct schd_rule *ru = &g->rules[i];
    const struct schd_tg *t = &s->tgs[ru->tg];
    *reason = reason_of(ru->type);
    *key = t->key;
    if (t->hostname) {
      int32_t c = t->cnt[bi];
      switch (ru->type) {
      case TG_SPREAD:
        if ((int64_t)c + ru->self > t->max_skew) {
          *monotone = 1;
          return 0;
        }
        break;
      case TG_AFFINITY:
        if (c == 0 && !(ru->self && t->total == 0)) {
          *monotone = 0;
          return 0;
        }
        break;
      default:
        if (c > 0) {
          *monotone = 1;
          return 0;
        }
        break;
      }
      continue;
    }
    {
      struct schd_dkey *dk = &s->dkeys[t->dkey];
      const uint64_t *poss = schd_bin_possible(s, b, (uint32_t)t->dkey, rs);
      uint64_t *x = s->dtmp;
      int any = 0, same = 1;
      size_t w, d;
      if (!bs_any(poss, dk->dwords) &&
          (ru->type == TG_ANTI || ru->type == TG_INVERSE))
        continue; /* a node without the key: no domain to share */
      for (w = 0; w < dk->dwords; w++) {
        x[w] = poss[w] & g->allow[i][w];
        any |= x[w] != 0;
        same &= x[w] == poss[w];
      }
      if (!any) {
        *monotone = 0;
        return 0;
      }
      /* A spread takes the least loaded domain; an affinity that bootstraps
       * and an anti-affinity owner pin one domain (Karpenter keeps the
       * claim open over every allowed zone and counts the pod in all of
       * them, which lets only one such pod through per batch). */
      if (ru->type == TG_SPREAD || ru->type == TG_ANTI ||
          (ru->type == TG_AFFINITY && ru->self && t->total == 0)) {
        size_t best = SIZE_MAX;
        for (d = bs_next(x, dk->dwords, 0); d != SIZE_MAX;
             d = bs_next(x, dk->dwords, d + 1)) {
          if (best == SIZE_MAX || t->cnt[d] < t->cnt[best])
            best = d;
          if (ru->type != TG_SPREAD)
            break;
        }
        memset(x, 0, dk->dwords * sizeof(uint64_t));
        bs_set(x, best);
        same = bs_next(poss, dk->dwords, 0) == best &&
               bs_next(poss, dk->dwords, best + 1) == SIZE_MAX;
      }
      /* Always state the domain on the claim, even when its instance types
       * could only land there anyway (memoised: a no-op when present). */
      (void)same;
      {
        uint32_t bad, nr = schd_domain_rset(s, (uint32_t)t->dkey, x);
        rs = schd_rset_add(&s->rc, rs, nr, b->kind == BIN_CLAIM, &bad);
        if (rs == SCHD_NONE) {
          *monotone = 0;
          return 0;
        }
      }
    }
  }
  *rset = rs;
  return 1;
}
