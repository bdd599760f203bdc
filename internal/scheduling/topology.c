/* topology.c: topology groups, domains and counts.
 *
 * A topology group (Karpenter's TopologyGroup) counts, per domain of one
 * topology key, the pods its label selector matches in its namespaces. A
 * topology spread constraint, a pod (anti-)affinity term and the "inverse"
 * side of a required anti-affinity term (which counts the pods that own the
 * term, to keep the pods it selects away from them) are each one group;
 * identical ones from different pods share a group, so a Deployment of 500
 * replicas with self anti-affinity is one group with 500 owners.
 *
 * Hostname is special: its domains are the bins themselves (each new claim
 * is a fresh domain with count 0), so counts are per bin and there is a
 * bitset of bins with a count, which turns "every node without such a pod"
 * into a word-wise AND. Other keys (zone, capacity type, any custom key)
 * have a fixed universe of domains, found at setup from the existing nodes
 * and from what each NodePool's instance types can launch; a bin settles in
 * one domain when its requirements narrow to one value, and per domain a
 * bitset lists the bins settled there. */
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "schd_int.h"

/* ---- label selectors ---- */

static const char *label_get(const struct carp_sched_label *labels, size_t n,
                             const char *key)
{
  for (size_t i = 0; i < n; i++)
    if (labels[i].key && strcmp(labels[i].key, key) == 0)
      return labels[i].value ? labels[i].value : "";
  return NULL;
}

int carp_sched_selector_matches(const struct carp_sched_selector *sel,
                                const struct carp_sched_label *labels,
                                size_t nlabels)
{
  if (!sel)
    return 0;
  for (size_t i = 0; i < sel->nmatch_labels; i++) {
    const char *v = label_get(labels, nlabels, sel->match_labels[i].key);
    const char *want = sel->match_labels[i].value;
    if (!v || strcmp(v, want ? want : "") != 0)
      return 0;
  }
  for (size_t i = 0; i < sel->nmatch_expressions; i++) {
    const struct carp_sched_requirement *e = &sel->match_expressions[i];
    const char *v = e->key ? label_get(labels, nlabels, e->key) : NULL;
    int in = 0;
    if (v)
      for (size_t k = 0; k < e->nvalues; k++)
        if (e->values[k] && strcmp(e->values[k], v) == 0) {
          in = 1;
          break;
        }
    switch (e->op) {
    case CARP_SCHED_OP_IN:
      if (!in)
        return 0;
      break;
    case CARP_SCHED_OP_NOT_IN:
      if (in)
        return 0;
      break;
    case CARP_SCHED_OP_EXISTS:
      if (!v)
        return 0;
      break;
    case CARP_SCHED_OP_DOES_NOT_EXIST:
      if (v)
        return 0;
      break;
    default:
      return 0; /* not a label-selector operator */
    }
  }
  return 1;
}

static uint64_t sel_hash(uint64_t h, const struct carp_sched_selector *sel)
{
  if (!sel)
    return schd_mix(h, 0xdead);
  h = schd_mix(h, sel->nmatch_labels);
  for (size_t i = 0; i < sel->nmatch_labels; i++) {
    h = schd_hash_str(h, sel->match_labels[i].key);
    h = schd_hash_str(h, sel->match_labels[i].value);
  }
  h = schd_mix(h, sel->nmatch_expressions);
  for (size_t i = 0; i < sel->nmatch_expressions; i++) {
    const struct carp_sched_requirement *e = &sel->match_expressions[i];
    h = schd_hash_str(h, e->key);
    h = schd_mix(h, (uint64_t)e->op << 32 | e->nvalues);
    for (size_t k = 0; k < e->nvalues; k++)
      h = schd_hash_str(h, e->values[k]);
  }
  return h;
}

static int str_eq(const char *a, const char *b)
{
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static int sel_eq(const struct carp_sched_selector *a,
                  const struct carp_sched_selector *b)
{
  if (a == b)
    return 1;
  if (!a || !b)
    return 0;
  if (a->nmatch_labels != b->nmatch_labels ||
      a->nmatch_expressions != b->nmatch_expressions)
    return 0;
  for (size_t i = 0; i < a->nmatch_labels; i++)
    if (!str_eq(a->match_labels[i].key, b->match_labels[i].key) ||
        !str_eq(a->match_labels[i].value, b->match_labels[i].value))
      return 0;
  for (size_t i = 0; i < a->nmatch_expressions; i++) {
    const struct carp_sched_requirement *x = &a->match_expressions[i],
                                        *y = &b->match_expressions[i];
    if (!str_eq(x->key, y->key) || x->op != y->op || x->nvalues != y->nvalues)
      return 0;
    for (size_t k = 0; k < x->nvalues; k++)
      if (!str_eq(x->values[k], y->values[k]))
        return 0;
  }
  return 1;
}

/* ---- topology groups ---- */

static int u32_cmp(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

uint32_t schd_tg_get(struct schd_solver *s, uint8_t type, uint32_t key,
                     int32_t max_skew, int32_t min_domains, uint32_t filter,
                     const struct carp_sched_selector *sel, uint32_t podns,
                     const struct carp_sched_pod_term *term)
{
  uint32_t nsbuf[8], *ns = nsbuf, nns = 0, id;
  uint8_t all_ns = 0;
  uint64_t h, v;
  if (term && term->all_namespaces) {
    all_ns = 1;
  } else if (term && term->nnamespaces) {
    ns = term->nnamespaces > 8
             ? schd_alloc(&s->arena, term->nnamespaces * sizeof(uint32_t))
             : nsbuf;
    for (size_t i = 0; i < term->nnamespaces; i++)
      ns[nns++] = schd_intern(&s->rc.in, term->namespaces[i]);
    qsort(ns, nns, sizeof(uint32_t), u32_cmp);
    {
      uint32_t m = 0;
      for (uint32_t i = 0; i < nns; i++)
        if (m == 0 || ns[m - 1] != ns[i])
          ns[m++] = ns[i];
      nns = m;
    }
  } else {
    ns[nns++] = podns;
  }
  h = schd_mix(0x746f706full, (uint64_t)type << 32 | key);
  h = schd_mix(h, (uint64_t)(uint32_t)max_skew << 32 | (uint32_t)min_domains);
  h = schd_mix(h, (uint64_t)filter << 8 | all_ns);
  for (uint32_t i = 0; i < nns; i++)
    h = schd_mix(h, ns[i]);
  h = sel_hash(h, sel);
  if (schd_map_get(&s->tg_by_hash, h, &v)) {
    for (id = (uint32_t)v; id != SCHD_NONE; id = s->tgs[id].next) {
      const struct schd_tg *t = &s->tgs[id];
      if (t->type == type && t->key == key && t->max_skew == max_skew &&
          t->min_domains == min_domains && t->filter == filter &&
          t->all_ns == all_ns && t->nns == nns &&
          (nns == 0 || memcmp(t->ns, ns, nns * sizeof(uint32_t)) == 0) &&
          sel_eq(t->sel, sel))
        return id;
    }
  }
  SCHD_GROW(s->tgs, s->ntgs, s->captgs);
  id = s->ntgs++;
  memset(&s->tgs[id], 0, sizeof(s->tgs[id]));
  s->tgs[id].type = type;
  s->tgs[id].key = key;
  s->tgs[id].hostname = key == s->rc.k_hostname;
  s->tgs[id].dkey = -1;
  s->tgs[id].max_skew = max_skew;
  s->tgs[id].min_domains = min_domains;
  s->tgs[id].filter = filter;
  s->tgs[id].sel = sel;
  s->tgs[id].all_ns = all_ns;
  s->tgs[id].ns = schd_memdup(&s->arena, ns, (nns + 1) * sizeof(uint32_t));
  s->tgs[id].nns = nns;
  s->tgs[id].hash = h;
  s->tgs[id].next =
      schd_map_get(&s->tg_by_hash, h, &v) ? (uint32_t)v : SCHD_NONE;
  schd_map_put(&s->tg_by_hash, h, id);
  return id;
}

int schd_tg_selects(const struct schd_solver *s, const struct schd_tg *tg,
                    uint32_t ns, const struct carp_sched_label *labels,
                    size_t nlabels)
{
  (void)s;
  if (!tg->all_ns) {
    uint32_t i;
    for (i = 0; i < tg->nns; i++)
      if (tg->ns[i] == ns)
        break;
    if (i == tg->nns)
      return 0;
  }
  return carp_sched_selector_matches(tg->sel, labels, nlabels);
}

/* ---- domains ---- */

static uint32_t dkey_of(struct schd_solver *s, uint32_t key)
{
  for (uint32_t i = 0; i < s->ndkeys; i++)
    if (s->dkeys[i].key == key)
      return i;
  s->dkeys = carp_reallocarray(s->dkeys, s->ndkeys + 1, sizeof(*s->dkeys));
  memset(&s->dkeys[s->ndkeys], 0, sizeof(s->dkeys[0]));
  s->dkeys[s->ndkeys].key = key;
  schd_map_init(&s->dkeys[s->ndkeys].idx);
  schd_map_init(&s->dkeys[s->ndkeys].poss);
  schd_map_init(&s->dkeys[s->ndkeys].xset);
  return s->ndkeys++;
}

static void dom_add(struct schd_dkey *dk, uint32_t val)
{
  uint64_t v;
  if (schd_map_get(&dk->idx, val, &v))
    return;
  SCHD_GROW(dk->vals, dk->ndom, dk->capdom);
  dk->vals[dk->ndom] = val;
  schd_map_put(&dk->idx, val, dk->ndom);
  dk->ndom++;
}

static void dom_add_req(struct schd_dkey *dk, const struct schd_req *r)
{
  if (!r || r->complement)
    return;
  for (uint32_t i = 0; i < r->nvals; i++)
    dom_add(dk, r->vals[i]);
}

const uint64_t *schd_domains(struct schd_solver *s, uint32_t dki, uint32_t rset,
                             uint32_t mode)
{
  struct schd_dkey *dk = &s->dkeys[dki];
  uint64_t key = ((uint64_t)mode << 32) | rset, v;
  uint64_t *out;
  const struct schd_req *r;
  if (schd_map_get(&dk->poss, key, &v))
    return (const uint64_t *)(uintptr_t)v;
  out = schd_zalloc(&s->arena, (dk->dwords + 1) * sizeof(uint64_t));
  r = schd_rset_get(schd_rset(&s->rc, rset), dk->key);
  if (mode == 0) {
    for (uint32_t d = 0; d < dk->ndom; d++)
      if (!r || schd_req_allows(&s->rc, r, dk->vals[d]))
        bs_set(out, d);
  } else if (mode == 1) {
    if (r)
      for (uint32_t d = 0; d < dk->ndom; d++)
        if (schd_req_allows(&s->rc, r, dk->vals[d]))
          bs_set(out, d);
  } else {
    const struct schd_pool *pool = &s->pools[mode - 2];
    if (r || (s->rc.in.flags[dk->key] & SCHD_STR_WELL_KNOWN))
      for (uint32_t d = 0; d < dk->ndom; d++)
        if (bs_get(pool->reach[dki], d) &&
            (!r || schd_req_allows(&s->rc, r, dk->vals[d])))
          bs_set(out, d);
  }
  schd_map_put(&dk->poss, key, (uint64_t)(uintptr_t)out);
  return out;
}

static uint32_t bin_mode(const struct schd_bin *b)
{
  return b->kind == BIN_CLAIM ? 2 + (uint32_t)b->pool : 1;
}

const uint64_t *schd_bin_possible(struct schd_solver *s,
                                  const struct schd_bin *b, uint32_t dk,
                                  uint32_t rset)
{
  return schd_domains(s, dk, rset, bin_mode(b));
}

uint32_t schd_domain_rset(struct schd_solver *s, uint32_t dki,
                          const uint64_t *doms)
{
  struct schd_dkey *dk = &s->dkeys[dki];
  struct schd_req r;
  uint32_t *v, n = 0, id;
  uint64_t cached;
  /* Memoised on the bitset when it fits a word (the usual case). */
  int memo = dk->dwords == 1 && doms[0] != UINT64_MAX;
  if (memo && schd_map_get(&dk->xset, doms[0], &cached))
    return (uint32_t)cached;
  v = schd_alloc(&s->rc.arena, (dk->ndom + 1) * sizeof(uint32_t));
  for (size_t d = bs_next(doms, dk->dwords, 0); d != SIZE_MAX;
       d = bs_next(doms, dk->dwords, d + 1))
    v[n++] = dk->vals[d];
  qsort(v, n, sizeof(uint32_t), u32_cmp);
  memset(&r, 0, sizeof(r));
  r.key = dk->key;
  r.vals = v;
  r.nvals = n;
  schd_rbuild_reset(&s->rb);
  schd_rbuild_req(&s->rc, &s->rb, &r);
  id = schd_rbuild_intern(&s->rc, &s->rb);
  if (memo)
    schd_map_put(&dk->xset, doms[0], id);
  return id;
}

void schd_bin_settle(struct schd_solver *s, uint32_t bi)
{
  struct schd_bin *b = &s->bins[bi];
  for (uint32_t k = 0; k < s->ndkeys; k++) {
    struct schd_dkey *dk = &s->dkeys[k];
    const uint64_t *poss = schd_bin_possible(s, b, k, b->rset);
    size_t first = bs_next(poss, dk->dwords, 0);
    int32_t nd;
    if (first == SIZE_MAX)
      nd = -2;
    else if (bs_next(poss, dk->dwords, first + 1) == SIZE_MAX)
      nd = (int32_t)first;
    else
      nd = -1;
    if (nd == b->dom[k])
      continue;
    if (b->dom[k] >= 0)
      bs_clr(dk->bins_in[b->dom[k]], bi);
    else if (b->dom[k] == -1)
      bs_clr(dk->unres, bi);
    if (nd >= 0)
      bs_set(dk->bins_in[nd], bi);
    else if (nd == -1)
      bs_set(dk->unres, bi);
    b->dom[k] = nd;
  }
}

/* ---- counting ---- */

static void tg_count(struct schd_solver *s, struct schd_tg *t, uint32_t bi,
                     int32_t n)
{
  struct schd_bin *b = &s->bins[bi];
  if (t->hostname) {
    t->cnt[bi] += n;
    t->total += n;
    if (t->cnt[bi] > 0)
      bs_set(t->occ, bi);
    if (t->atmax && t->cnt[bi] >= t->max_skew)
      bs_set(t->atmax, bi);
    if (t->over && t->cnt[bi] > t->max_skew)
      bs_set(t->over, bi);
    return;
  }
  if (b->dom[t->dkey] >= 0) {
    t->cnt[b->dom[t->dkey]] += n;
    t->total += n;
  } else if (b->dom[t->dkey] == -1 &&
             (t->type == TG_ANTI || t->type == TG_INVERSE)) {
    /* Anti-affinity blocks every domain the pod might land in. */
    struct schd_dkey *dk = &s->dkeys[t->dkey];
    const uint64_t *poss = schd_bin_possible(s, b, (uint32_t)t->dkey, b->rset);
    for (size_t d = bs_next(poss, dk->dwords, 0); d != SIZE_MAX;
         d = bs_next(poss, dk->dwords, d + 1))
      t->cnt[d] += n;
    t->total += n;
  }
}

static int filter_ok(struct schd_solver *s, const struct schd_tg *t,
                     const struct schd_bin *b)
{
  if (t->filter == SCHD_NONE)
    return 1;
  return schd_rset_compatible(&s->rc, b->rset, t->filter, b->kind == BIN_CLAIM,
                              NULL);
}

void schd_record(struct schd_solver *s, struct schd_group *g, uint32_t bi,
                 uint32_t n)
{
  for (uint32_t i = 0; i < g->nsel_by; i++) {
    struct schd_tg *t = &s->tgs[g->sel_by[i]];
    if (filter_ok(s, t, &s->bins[bi]))
      tg_count(s, t, bi, (int32_t)n);
  }
  for (uint32_t i = 0; i < g->ninv_own; i++)
    tg_count(s, &s->tgs[g->inv_own[i]], bi, (int32_t)n);
}

/* A selector with matchLabels can only select pods carrying its first
 * pair: index the topology groups by it, so matching a pod (or each of a
 * large cluster's running pods) looks at a handful of groups, not all. */
void schd_tg_index_build(struct schd_solver *s)
{
  schd_map_init(&s->tgidx);
  s->tgchain = carp_calloc(s->ntgs + 1, sizeof(uint32_t));
  s->tgalways = carp_calloc(s->ntgs + 1, sizeof(uint32_t));
  s->tgcand = carp_calloc(s->ntgs + 1, sizeof(uint32_t));
  s->ntgalways = 0;
  for (uint32_t t = 0; t < s->ntgs; t++) {
    const struct carp_sched_selector *sel = s->tgs[t].sel;
    uint64_t key, v;
    if (!sel)
      continue; /* a nil selector matches nothing */
    if (!sel->nmatch_labels) {
      s->tgalways[s->ntgalways++] = t;
      continue;
    }
    key = (uint64_t)schd_intern(&s->rc.in, sel->match_labels[0].key) << 32 |
          schd_intern(&s->rc.in, sel->match_labels[0].value);
    s->tgchain[t] = schd_map_get(&s->tgidx, key, &v) ? (uint32_t)v : 0;
    schd_map_put(&s->tgidx, key, t + 1);
  }
}

void schd_tg_index_free(struct schd_solver *s)
{
  schd_map_free(&s->tgidx);
  carp_free(s->tgchain);
  carp_free(s->tgalways);
  carp_free(s->tgcand);
  s->tgchain = s->tgalways = s->tgcand = NULL;
}

size_t schd_tg_candidates(struct schd_solver *s,
                          const struct carp_sched_label *labels, size_t nlabels)
{
  size_t n = 0;
  for (size_t k = 0; k < nlabels; k++) {
    uint64_t v;
    if (!labels[k].key ||
        !schd_map_get(&s->tgidx,
                      (uint64_t)schd_intern(&s->rc.in, labels[k].key) << 32 |
                          schd_intern(&s->rc.in, labels[k].value),
                      &v))
      continue;
    for (uint32_t next = (uint32_t)v; next && n < s->ntgs;
         next = s->tgchain[next - 1])
      s->tgcand[n++] = next - 1;
  }
  for (uint32_t i = 0; i < s->ntgalways && n < s->ntgs; i++)
    s->tgcand[n++] = s->tgalways[i];
  return n;
}

void schd_record_bound(struct schd_solver *s,
                       const struct carp_sched_bound_pod *bp, uint32_t bi)
{
  uint32_t ns = schd_intern(&s->rc.in, bp->namespace_);
  size_t nc = schd_tg_candidates(s, bp->labels, bp->nlabels);
  for (size_t c = 0; c < nc; c++) {
    struct schd_tg *t = &s->tgs[s->tgcand[c]];
    if (t->type == TG_INVERSE)
      continue;
    if (!schd_tg_selects(s, t, ns, bp->labels, bp->nlabels))
      continue;
    if (filter_ok(s, t, &s->bins[bi]))
      tg_count(s, t, bi, 1);
  }
  for (size_t k = 0; k < bp->nanti_affinity; k++) {
    const struct carp_sched_pod_term *term = &bp->anti_affinity[k];
    uint32_t tg =
        schd_tg_get(s, TG_INVERSE, schd_intern(&s->rc.in, term->topology_key),
                    0, 0, SCHD_NONE, term->selector, ns, term);
    tg_count(s, &s->tgs[tg], bi, 1);
  }
}

void schd_tg_allowed(struct schd_solver *s, struct schd_group *g,
                     const struct schd_tg *t, uint8_t self, uint64_t *out)
{
  struct schd_dkey *dk = &s->dkeys[t->dkey];
  const uint64_t *elig = schd_domains(s, (uint32_t)t->dkey, g->strict, 0);
  size_t d;
  memset(out, 0, dk->dwords * sizeof(uint64_t));
  switch (t->type) {
  case TG_SPREAD: {
    int64_t min = INT64_MAX;
    uint32_t n = 0;
    for (d = bs_next(elig, dk->dwords, 0); d != SIZE_MAX;
         d = bs_next(elig, dk->dwords, d + 1)) {
      n++;
      if (t->cnt[d] < min)
        min = t->cnt[d];
    }
    if (n == 0)
      return;
    if (t->min_domains > 0 && (uint32_t)t->min_domains > n)
      min = 0;
    for (d = bs_next(elig, dk->dwords, 0); d != SIZE_MAX;
         d = bs_next(elig, dk->dwords, d + 1))
      if ((int64_t)t->cnt[d] + self - min <= t->max_skew)
        bs_set(out, d);
    return;
  }
  case TG_AFFINITY:
    for (d = bs_next(elig, dk->dwords, 0); d != SIZE_MAX;
         d = bs_next(elig, dk->dwords, d + 1))
      if (t->cnt[d] > 0)
        bs_set(out, d);
    if (!bs_any(out, dk->dwords) && self && t->total == 0)
      memcpy(out, elig, dk->dwords * sizeof(uint64_t));
    return;
  default: /* anti-affinity, either side */
    for (d = bs_next(elig, dk->dwords, 0); d != SIZE_MAX;
         d = bs_next(elig, dk->dwords, d + 1))
      if (t->cnt[d] == 0)
        bs_set(out, d);
    return;
  }
}

/* ---- setup ---- */

int schd_topology_setup(struct schd_solver *s)
{
  const struct carp_sched_problem *p = s->p;
  /* domain keys */
  for (uint32_t i = 0; i < s->ntgs; i++)
    if (!s->tgs[i].hostname)
      s->tgs[i].dkey = (int32_t)dkey_of(s, s->tgs[i].key);
  /* universes: existing nodes, then what the pools can launch */
  for (uint32_t k = 0; k < s->ndkeys; k++) {
    struct schd_dkey *dk = &s->dkeys[k];
    for (uint32_t bi = 0; bi < s->nbins; bi++)
      dom_add_req(dk,
                  schd_rset_get(schd_rset(&s->rc, s->bins[bi].rset), dk->key));
    for (uint32_t pi = 0; pi < s->npools; pi++) {
      struct schd_pool *pool = &s->pools[pi];
      const struct schd_req *tr =
          schd_rset_get(schd_rset(&s->rc, pool->tmpl), dk->key);
      dom_add_req(dk, tr);
      for (size_t t = bs_next(pool->types, s->twords, 0); t != SIZE_MAX;
           t = bs_next(pool->types, s->twords, t + 1)) {
        const struct schd_req *r =
            schd_rset_get(schd_rset(&s->rc, s->types[t].rset), dk->key);
        if (!r || r->complement)
          continue;
        for (uint32_t i = 0; i < r->nvals; i++)
          if (!tr || schd_req_allows(&s->rc, tr, r->vals[i]))
            dom_add(dk, r->vals[i]);
      }
    }
    dk->dwords = SCHD_WORDS(dk->ndom ? dk->ndom : 1);
    dk->bins_in = carp_calloc(dk->ndom + 1, sizeof(uint64_t *));
    for (uint32_t d = 0; d < dk->ndom; d++)
      schd_breg(s, &dk->bins_in[d]);
    schd_breg(s, &dk->unres);
    if (dk->dwords > s->dtmp_words)
      s->dtmp_words = dk->dwords;
  }
  s->dtmp = schd_zalloc(&s->arena, (s->dtmp_words + 1) * sizeof(uint64_t));
  s->dtmp2 = schd_zalloc(&s->arena, (s->dtmp_words + 1) * sizeof(uint64_t));
  /* what each pool can reach */
  for (uint32_t pi = 0; pi < s->npools; pi++) {
    struct schd_pool *pool = &s->pools[pi];
    pool->reach = schd_zalloc(&s->arena, (s->ndkeys + 1) * sizeof(uint64_t *));
    for (uint32_t k = 0; k < s->ndkeys; k++) {
      struct schd_dkey *dk = &s->dkeys[k];
      pool->reach[k] = schd_zalloc(&s->arena, dk->dwords * sizeof(uint64_t));
      const struct schd_req *tr =
          schd_rset_get(schd_rset(&s->rc, pool->tmpl), dk->key);
      for (size_t t = bs_next(pool->types, s->twords, 0); t != SIZE_MAX;
           t = bs_next(pool->types, s->twords, t + 1)) {
        const struct schd_req *r =
            schd_rset_get(schd_rset(&s->rc, s->types[t].rset), dk->key);
        uint64_t v;
        if (!r)
          r = tr; /* a label only the template sets */
        if (!r || r->complement)
          continue;
        for (uint32_t i = 0; i < r->nvals; i++)
          if ((!tr || schd_req_allows(&s->rc, tr, r->vals[i])) &&
              schd_map_get(&dk->idx, r->vals[i], &v))
            bs_set(pool->reach[k], v);
      }
    }
  }
  /* counts */
  for (uint32_t i = 0; i < s->ntgs; i++) {
    struct schd_tg *t = &s->tgs[i];
    if (t->hostname) {
      t->cnt = carp_calloc(s->bwords * 64, sizeof(int32_t));
      schd_breg(s, &t->occ);
      if (t->type == TG_SPREAD) {
        schd_breg(s, &t->atmax);
        schd_breg(s, &t->over);
        schd_breg(s, &t->owned);
      }
    } else {
      t->cnt = schd_zalloc(&s->arena,
                           (s->dkeys[t->dkey].ndom + 1) * sizeof(int32_t));
    }
  }
  s->topo_ready = 1;
  for (uint32_t bi = 0; bi < s->nbins; bi++) {
    s->bins[bi].dom = schd_alloc(&s->arena, (s->ndkeys + 1) * sizeof(int32_t));
    for (uint32_t k = 0; k < s->ndkeys; k++)
      s->bins[bi].dom[k] = -3;
    schd_bin_settle(s, bi);
  }
  for (size_t i = 0; i < p->nbound_pods; i++) {
    const struct carp_sched_bound_pod *bp = &p->bound_pods[i];
    schd_record_bound(s, bp, s->node_bin[bp->node]);
  }
  return 0;
}
