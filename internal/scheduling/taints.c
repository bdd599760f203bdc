/* taints.c: taints and tolerations.
 *
 * Kubernetes' rule, exactly: a toleration matches a taint when its effect
 * is empty or equal, its key is empty or equal, and (operator Exists) or
 * (operator Equal and the values are equal); an empty key with Exists
 * therefore tolerates everything. NoSchedule and NoExecute taints must be
 * tolerated; PreferNoSchedule ones too, until the last relaxation step.
 *
 * Nodes and NodePools carry taint lists; distinct lists are interned as
 * "taint sets" so a pod group checks each set once. Taints Carpenter knows
 * will go away are dropped from the set, as Karpenter does:
 * karpenter.sh/unregistered always, the ephemeral ones the kubelet and the
 * node lifecycle controller set (not-ready, unreachable, ...) on nodes
 * Carpenter launched and on nodes not yet initialized, and the NodePool's
 * startup taints until the node is initialized. */
#include <string.h>

#include "carpenter/alloc.h"
#include "schd_int.h"

static const char *const ephemeral[] = {
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/network-unavailable",
    "node.cloudprovider.kubernetes.io/uninitialized",
};

static int str_eq(const char *a, const char *b)
{
  return strcmp(a ? a : "", b ? b : "") == 0;
}

int carp_sched_taint_ephemeral(const char *key)
{
  size_t k;
  for (k = 0; k < CARP_ARRAY_LEN(ephemeral); k++)
    if (str_eq(key, ephemeral[k]))
      return 1;
  return 0;
}

int carp_sched_tolerates(const struct carp_sched_toleration *t,
                         const struct carp_sched_taint *taint)
{
  if (t->effect != CARP_SCHED_EFFECT_ALL && t->effect != taint->effect)
    return 0;
  if (t->key && *t->key && !str_eq(t->key, taint->key))
    return 0;
  if (t->op == CARP_SCHED_TOLERATE_EXISTS)
    return 1;
  if (t->op == CARP_SCHED_TOLERATE_EQUAL)
    return str_eq(t->value, taint->value);
  return 0;
}

int carp_sched_taints_tolerated(const struct carp_sched_taint *taints,
                                size_t ntaints,
                                const struct carp_sched_toleration *tols,
                                size_t ntols, int prefer_ok, size_t *first)
{
  for (size_t i = 0; i < ntaints; i++) {
    size_t k;
    if (prefer_ok && taints[i].effect == CARP_SCHED_EFFECT_PREFER_NO_SCHEDULE)
      continue;
    for (k = 0; k < ntols; k++)
      if (carp_sched_tolerates(&tols[k], &taints[i]))
        break;
    if (k == ntols) {
      if (first)
        *first = i;
      return 0;
    }
  }
  return 1;
}

static int taint_eq(const struct carp_sched_taint *a,
                    const struct carp_sched_taint *b)
{
  return str_eq(a->key, b->key) && str_eq(a->value, b->value) &&
         a->effect == b->effect;
}

uint32_t schd_taintset(struct schd_solver *s, const struct carp_sched_taint *t,
                       size_t n, const struct carp_sched_taint *ignore,
                       size_t nignore, int ignore_ephemeral)
{
  struct carp_sched_taint *keep =
      schd_alloc(&s->arena, (n + 1) * sizeof(*keep));
  uint32_t nk = 0;
  uint64_t h = 0x7461696e74ull, v;
  for (size_t i = 0; i < n; i++) {
    size_t k;
    if (str_eq(t[i].key, CARP_TAINT_UNREGISTERED))
      continue;
    if (ignore_ephemeral && carp_sched_taint_ephemeral(t[i].key))
      continue;
    for (k = 0; k < nignore; k++)
      if (taint_eq(&t[i], &ignore[k]))
        break;
    if (k < nignore)
      continue;
    keep[nk++] = t[i];
    h = schd_hash_str(h, t[i].key);
    h = schd_hash_str(h, t[i].value);
    h = schd_mix(h, (uint64_t)t[i].effect);
  }
  h = schd_mix(h, nk);
  if (schd_map_get(&s->tset_by_hash, h, &v)) {
    for (uint32_t id = (uint32_t)v; id != SCHD_NONE; id = s->tsets[id].next) {
      struct schd_taintset *ts = &s->tsets[id];
      uint32_t i;
      if (ts->n != nk)
        continue;
      for (i = 0; i < nk; i++)
        if (!taint_eq(&ts->t[i], &keep[i]))
          break;
      if (i == nk)
        return id;
    }
  }
  SCHD_GROW(s->tsets, s->ntsets, s->captsets);
  s->tsets[s->ntsets].t = keep;
  s->tsets[s->ntsets].n = nk;
  s->tsets[s->ntsets].next =
      schd_map_get(&s->tset_by_hash, h, &v) ? (uint32_t)v : SCHD_NONE;
  schd_map_put(&s->tset_by_hash, h, s->ntsets);
  return s->ntsets++;
}

int schd_group_tolerates(struct schd_solver *s, struct schd_group *g,
                         uint32_t taintset, uint32_t *bad)
{
  const struct carp_sched_pod *p;
  const struct schd_taintset *ts;
  size_t first = 0;
  int ok;
  if (g->taint_ok && g->taint_ok[taintset] && !bad)
    return g->taint_ok[taintset] == 1;
  if (!g->taint_ok)
    g->taint_ok = schd_zalloc(&s->arena, s->ntsets + 1);
  p = &s->p->pods[g->rep];
  ts = &s->tsets[taintset];
  ok = carp_sched_taints_tolerated(ts->t, ts->n, p->tolerations,
                                   p->ntolerations, g->tol_pns, &first);
  g->taint_ok[taintset] = ok ? 1 : 2;
  if (!ok && bad)
    *bad = (uint32_t)first;
  return ok;
}
