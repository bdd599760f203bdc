/* zones.c: each pod's effective zone, as Karpenter's
 * computeEffectiveZoneFromPod has it for the metric
 * karpenter_scheduler_pending_pods_by_effective_zone_count: the
 * intersection of the pod's required zones (nodeSelector and required node
 * affinity) and the zones its zone-keyed topology rules (spread, pod
 * affinity, anti-affinity) allow with the counts at the start of the
 * solve. One zone: its name; several (or no constraint): "flexible"; none
 * left: "none". Volume zones play no part: the problem has none (Proxmox
 * volumes are placed with their VM). */
#include "schd_int.h"

static const char FLEXIBLE[] = "flexible";
static const char NONE[] = "none";

/* The zones the group's zone-keyed rules allow (ANDed), in *tsc; 0 when it
 * has no such rule, -1 when one allows nothing. */
static int rule_zones(struct schd_solver *s, struct schd_group *g,
                      struct schd_dkey **dkp, uint64_t **tsc)
{
  int have = 0;
  for (uint32_t i = 0; i < g->nrules; i++) {
    const struct schd_tg *t = &s->tgs[g->rules[i].tg];
    struct schd_dkey *dk;
    uint64_t *out;
    if (g->rules[i].type == TG_INVERSE || t->hostname ||
        t->key != s->rc.k_zone || t->dkey < 0)
      continue;
    dk = &s->dkeys[t->dkey];
    out = schd_zalloc(&s->arena, (dk->dwords + 1) * sizeof(uint64_t));
    schd_tg_allowed(s, g, t, g->rules[i].self, out);
    if (!bs_any(out, dk->dwords))
      return -1;
    if (have)
      for (size_t w = 0; w < dk->dwords; w++)
        (*tsc)[w] &= out[w];
    else
      *tsc = out;
    *dkp = dk;
    have = 1;
  }
  return have;
}

static int tsc_has(const struct schd_dkey *dk, const uint64_t *tsc,
                   uint32_t value)
{
  uint64_t d;
  return schd_map_get(&dk->idx, value, &d) && bs_get(tsc, (size_t)d);
}

static const char *effective_zone(struct schd_solver *s, struct schd_group *g)
{
  const struct schd_req *zr =
      schd_rset_get(schd_rset(&s->rc, g->strict), s->rc.k_zone);
  struct schd_dkey *dk = NULL;
  uint64_t *tsc = NULL;
  const char *match = NULL;
  int have = rule_zones(s, g, &dk, &tsc);
  int in = zr && !zr->complement && !zr->missing;
  uint32_t n = 0;
  if (have < 0)
    return NONE;
  if (in) {
    for (uint32_t i = 0; i < zr->nvals; i++) {
      if (have && !tsc_has(dk, tsc, zr->vals[i]))
        continue;
      if (n++)
        return FLEXIBLE;
      match = s->rc.in.str[zr->vals[i]];
    }
  } else if (have) {
    for (size_t d = bs_next(tsc, dk->dwords, 0); d != SIZE_MAX;
         d = bs_next(tsc, dk->dwords, d + 1)) {
      if (zr && !schd_req_allows(&s->rc, zr, dk->vals[d]))
        continue;
      if (n++)
        return FLEXIBLE;
      match = s->rc.in.str[dk->vals[d]];
    }
  } else {
    return FLEXIBLE;
  }
  return n == 1 ? match : NONE;
}

void schd_effective_zones(struct schd_solver *s)
{
  s->ezone = schd_zalloc(&s->arena, (s->p->npods + 1) * sizeof(*s->ezone));
  for (uint32_t gi = 0; gi < s->ngroups; gi++) {
    struct schd_group *g = &s->groups[gi];
    const char *z = g->bad ? NONE : effective_zone(s, g);
    for (uint32_t i = 0; i < g->npods; i++)
      s->ezone[g->pods[i]] = z;
  }
}
