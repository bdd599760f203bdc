/* groups.c: pods identical for scheduling become one group; the queue and
 * the preference relaxation ladder work on groups.
 *
 * Two pods are identical for scheduling when everything the solve reads is
 * the same: namespace, requests, node selector and affinity, tolerations,
 * spreads, pod (anti-)affinity terms, host ports, and the values of the
 * labels some selector in the problem looks at (a pod-template-hash label
 * nobody selects on does not split a Deployment). Each pod is serialised
 * to a byte signature, hashed and compared; a group then carries the
 * requests, requirements and topology rules once for all its pods.
 *
 * The queue is Karpenter's: CPU request descending, then memory, then the
 * oldest pod. A group that cannot place its remaining pods relaxes one step
 * of the ladder (preferred node affinity heaviest first, extra required
 * node-affinity terms, ScheduleAnyway spreads, preferred pod affinity,
 * preferred pod anti-affinity, then tolerating PreferNoSchedule) and goes
 * to the back of the queue. */
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "schd_int.h"

/* ---- signatures ---- */

/* A byte buffer written with inline appends: one signature per pod, so the
 * per-field cost matters. */
struct sig {
  uint8_t *p;
  size_t len, cap;
};

static void sig_reserve(struct sig *b, size_t n)
{
  if (b->len + n > b->cap) {
    while (b->len + n > b->cap)
      b->cap = b->cap ? b->cap * 2 : 512;
    b->p = carp_realloc(b->p, b->cap);
  }
}

static inline void put_u64(struct sig *b, uint64_t v)
{
  sig_reserve(b, 8);
  memcpy(b->p + b->len, &v, 8);
  b->len += 8;
}

static inline void put_str(struct sig *b, const char *s)
{
  size_t n = s ? strlen(s) : 0;
  sig_reserve(b, n + 8);
  memcpy(b->p + b->len, &n, 8);
  if (n)
    memcpy(b->p + b->len + 8, s, n);
  b->len += n + 8;
}

static void put_req(struct sig *b, const struct carp_sched_requirement *r)
{
  put_str(b, r->key);
  put_u64(b, (uint64_t)r->op << 32 | (uint32_t)r->min_values);
  put_u64(b, r->nvalues);
  for (size_t i = 0; i < r->nvalues; i++)
    put_str(b, r->values[i]);
}

static void put_sel(struct sig *b, const struct carp_sched_selector *s)
{
  if (!s) {
    put_u64(b, UINT64_MAX);
    return;
  }
  put_u64(b, s->nmatch_labels);
  for (size_t i = 0; i < s->nmatch_labels; i++) {
    put_str(b, s->match_labels[i].key);
    put_str(b, s->match_labels[i].value);
  }
  put_u64(b, s->nmatch_expressions);
  for (size_t i = 0; i < s->nmatch_expressions; i++)
    put_req(b, &s->match_expressions[i]);
}

static void put_terms(struct sig *b, const struct carp_sched_pod_term *t,
                      size_t n)
{
  put_u64(b, n);
  for (size_t i = 0; i < n; i++) {
    put_str(b, t[i].topology_key);
    put_sel(b, t[i].selector);
    put_u64(b, t[i].nnamespaces << 1 | (t[i].all_namespaces != 0));
    for (size_t k = 0; k < t[i].nnamespaces; k++)
      put_str(b, t[i].namespaces[k]);
    put_u64(b, (uint64_t)(uint32_t)t[i].weight);
  }
}

static void put_node_terms(struct sig *b, const struct carp_sched_node_term *t,
                           size_t n)
{
  put_u64(b, n);
  for (size_t i = 0; i < n; i++) {
    put_u64(b, (uint64_t)(uint32_t)t[i].weight << 32 | t[i].nexprs);
    for (size_t k = 0; k < t[i].nexprs; k++)
      put_req(b, &t[i].exprs[k]);
  }
}

/* Is key a label some selector looks at? Label keys repeat on every pod
 * of a cluster, mostly as the same pointers: a small cache by pointer
 * answers before the intern table does. */
static int sel_key(struct schd_solver *s, const char *key)
{
  uint64_t v;
  size_t slot = ((uintptr_t)key >> 4) & (CARP_ARRAY_LEN(s->selc_ptr) - 1);
  int yes;
  if (s->selc_ptr[slot] == key)
    return s->selc_val[slot];
  yes = schd_map_get(&s->sel_memo, schd_intern(&s->rc.in, key), &v);
  s->selc_ptr[slot] = key;
  s->selc_val[slot] = (uint8_t)yes;
  return yes;
}

static void signature(struct schd_solver *s, const struct carp_sched_pod *p,
                      struct sig *b, size_t *labels_end)
{
  b->len = 0;
  put_str(b, p->namespace_);
  for (size_t i = 0; i < p->nlabels; i++)
    if (p->labels[i].key && sel_key(s, p->labels[i].key)) {
      put_str(b, p->labels[i].key);
      put_str(b, p->labels[i].value);
    }
  put_u64(b, UINT64_MAX - 1);
  *labels_end = b->len;
  put_u64(b, p->nrequests);
  for (size_t i = 0; i < p->nrequests; i++) {
    put_str(b, p->requests[i].name);
    put_u64(b, (uint64_t)p->requests[i].milli);
  }
  put_u64(b, p->nnode_selector);
  for (size_t i = 0; i < p->nnode_selector; i++) {
    put_str(b, p->node_selector[i].key);
    put_str(b, p->node_selector[i].value);
  }
  put_node_terms(b, p->required_terms, p->nrequired_terms);
  put_node_terms(b, p->preferred_terms, p->npreferred_terms);
  put_u64(b, p->ntolerations);
  for (size_t i = 0; i < p->ntolerations; i++) {
    put_str(b, p->tolerations[i].key);
    put_str(b, p->tolerations[i].value);
    put_u64(b, (uint64_t)p->tolerations[i].op << 8 | p->tolerations[i].effect);
  }
  put_u64(b, p->nspreads);
  for (size_t i = 0; i < p->nspreads; i++) {
    const struct carp_sched_spread *sp = &p->spreads[i];
    put_str(b, sp->topology_key);
    put_u64(b,
            (uint64_t)(uint32_t)sp->max_skew << 32 | (uint32_t)sp->min_domains);
    put_u64(b, (uint64_t)sp->when_unsatisfiable << 8 |
                   (sp->node_affinity_ignore != 0));
    put_sel(b, sp->selector);
  }
  put_terms(b, p->affinity, p->naffinity);
  put_terms(b, p->preferred_affinity, p->npreferred_affinity);
  put_terms(b, p->anti_affinity, p->nanti_affinity);
  put_terms(b, p->preferred_anti_affinity, p->npreferred_anti_affinity);
  put_u64(b, p->nhost_ports);
  for (size_t i = 0; i < p->nhost_ports; i++) {
    put_u64(b,
            (uint64_t)p->host_ports[i].port << 8 | p->host_ports[i].protocol);
    put_str(b, p->host_ports[i].host_ip);
  }
}

/* ---- selector keys ---- */

static void note_key(struct schd_solver *s, const char *key)
{
  size_t slot = ((uintptr_t)key >> 4) & (CARP_ARRAY_LEN(s->selc_ptr) - 1);
  if (s->selc_ptr[slot] == key)
    return; /* noted already */
  schd_map_put(&s->sel_memo, schd_intern(&s->rc.in, key), 1);
  s->selc_ptr[slot] = key;
  s->selc_val[slot] = 1;
}

static void note_sel(struct schd_solver *s,
                     const struct carp_sched_selector *sel)
{
  if (!sel)
    return;
  for (size_t i = 0; i < sel->nmatch_labels; i++)
    note_key(s, sel->match_labels[i].key);
  for (size_t i = 0; i < sel->nmatch_expressions; i++)
    note_key(s, sel->match_expressions[i].key);
}

static void note_terms(struct schd_solver *s,
                       const struct carp_sched_pod_term *t, size_t n)
{
  for (size_t i = 0; i < n; i++)
    note_sel(s, t[i].selector);
}

/* ---- order ---- */

static int pod_cmp(const void *a, const void *b, void *arg)
{
  const struct carp_sched_pod *pods = arg;
  const struct carp_sched_pod *x = &pods[*(const uint32_t *)a];
  const struct carp_sched_pod *y = &pods[*(const uint32_t *)b];
  int c;
  if (x->created != y->created)
    return x->created < y->created ? -1 : 1;
  c = strcmp(x->uid ? x->uid : "", y->uid ? y->uid : "");
  if (c)
    return c;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int req_rank_cmp(const void *a, const void *b, void *arg)
{
  const struct carp_sched_node_term *t = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (t[x].weight != t[y].weight)
    return t[x].weight > t[y].weight ? -1 : 1;
  return x < y ? -1 : 1;
}

static int term_rank_cmp(const void *a, const void *b, void *arg)
{
  const struct carp_sched_pod_term *t = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (t[x].weight != t[y].weight)
    return t[x].weight > t[y].weight ? -1 : 1;
  return x < y ? -1 : 1;
}

/* ---- groups ---- */

static void own_add(struct schd_solver *s, struct schd_group *g, uint32_t tg,
                    uint8_t cls, int32_t weight, uint32_t order)
{
  const struct carp_sched_pod *p = &s->p->pods[g->rep];
  struct schd_owned *o;
  o = &g->own[g->nown++]; /* sized in group_init */
  memset(o, 0, sizeof(*o));
  o->tg = tg;
  o->cls = cls;
  o->weight = weight;
  o->order = order;
  o->self =
      (uint8_t)schd_tg_selects(s, &s->tgs[tg], g->ns, p->labels, p->nlabels);
}

static uint32_t *ranks_of(struct schd_solver *s,
                          const struct carp_sched_pod_term *t, size_t n)
{
  if (!n)
    return NULL;
  uint32_t *idx = schd_alloc(&s->arena, (n + 1) * sizeof(uint32_t));
  uint32_t *rank = schd_alloc(&s->arena, (n + 1) * sizeof(uint32_t));
  for (uint32_t i = 0; i < n; i++)
    idx[i] = i;
  qsort_r(idx, n, sizeof(uint32_t), term_rank_cmp, (void *)t);
  for (uint32_t i = 0; i < n; i++)
    rank[idx[i]] = i;
  return rank;
}

/* Requirements of the pod's node selector plus required term `term`. */
static int strict_of(struct schd_solver *s, const struct carp_sched_pod *p,
                     uint32_t term, struct schd_rbuild *b)
{
  int rc;
  schd_rbuild_reset(b);
  for (size_t k = 0; k < p->nnode_selector; k++) {
    if (!p->node_selector[k].key)
      return CARP_EINVAL;
    schd_rbuild_label(&s->rc, b,
                      schd_intern(&s->rc.in, p->node_selector[k].key),
                      schd_intern(&s->rc.in, p->node_selector[k].value));
  }
  if (term < p->nrequired_terms) {
    const struct carp_sched_node_term *t = &p->required_terms[term];
    for (size_t k = 0; k < t->nexprs; k++) {
      rc = schd_rbuild_public(&s->rc, b, &t->exprs[k]);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}

static void group_init(struct schd_solver *s, struct schd_group *g)
{
  const struct carp_sched_pod *p = &s->p->pods[g->rep];
  const uint32_t R = s->R;
  uint32_t *ranks, nsa = 0, filter = SCHD_NONE;

  g->ns = schd_intern(&s->rc.in, p->namespace_);
  g->req = schd_zalloc(&s->arena, R * sizeof(int64_t));
  g->own = schd_alloc(&s->arena,
                      (p->nspreads + p->naffinity + p->npreferred_affinity +
                       p->nanti_affinity + p->npreferred_anti_affinity + 1) *
                          sizeof(*g->own));
  g->inv_own =
      schd_alloc(&s->arena, (p->nanti_affinity + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < p->nrequests; i++) {
    int d = schd_dim(s, p->requests[i].name);
    if (d >= 0 && d != SCHD_DIM_PODS)
      g->req[d] += p->requests[i].milli;
  }
  g->req[SCHD_DIM_PODS] = 1000;
  if (p->nhost_ports)
    schd_ports_from_public(s, p->host_ports, p->nhost_ports, &g->ports,
                           &g->nports);
  if (p->npreferred_terms) {
    g->pref_order =
        schd_alloc(&s->arena, p->npreferred_terms * sizeof(uint32_t));
    for (uint32_t i = 0; i < p->npreferred_terms; i++)
      g->pref_order[i] = i;
    qsort_r(g->pref_order, p->npreferred_terms, sizeof(uint32_t), req_rank_cmp,
            (void *)p->preferred_terms);
  }

  /* spread node filter (nodeAffinityPolicy Honor): the pod's node selector
   * and its required term when it has exactly one */
  if (p->nspreads &&
      strict_of(s, p, p->nrequired_terms == 1 ? 0 : UINT32_MAX, &s->rb) == 0) {
    filter = schd_rbuild_intern(&s->rc, &s->rb);
    if (filter == 0)
      filter = SCHD_NONE;
  }
  for (size_t i = 0; i < p->nspreads; i++) {
    const struct carp_sched_spread *sp = &p->spreads[i];
    uint32_t tg =
        schd_tg_get(s, TG_SPREAD, schd_intern(&s->rc.in, sp->topology_key),
                    sp->max_skew > 0 ? sp->max_skew : 1, sp->min_domains,
                    sp->node_affinity_ignore ? SCHD_NONE : filter, sp->selector,
                    g->ns, NULL);
    if (sp->when_unsatisfiable == CARP_SCHED_SCHEDULE_ANYWAY)
      own_add(s, g, tg, OWN_SCHEDULE_ANYWAY, 0, nsa++);
    else
      own_add(s, g, tg, OWN_REQUIRED, 0, 0);
  }
  for (size_t i = 0; i < p->naffinity; i++) {
    const struct carp_sched_pod_term *t = &p->affinity[i];
    own_add(s, g,
            schd_tg_get(s, TG_AFFINITY, schd_intern(&s->rc.in, t->topology_key),
                        0, 0, SCHD_NONE, t->selector, g->ns, t),
            OWN_REQUIRED, 0, 0);
  }
  ranks = ranks_of(s, p->preferred_affinity, p->npreferred_affinity);
  for (size_t i = 0; i < p->npreferred_affinity; i++) {
    const struct carp_sched_pod_term *t = &p->preferred_affinity[i];
    own_add(s, g,
            schd_tg_get(s, TG_AFFINITY, schd_intern(&s->rc.in, t->topology_key),
                        0, 0, SCHD_NONE, t->selector, g->ns, t),
            OWN_PREF_AFFINITY, t->weight, ranks[i]);
  }
  for (size_t i = 0; i < p->nanti_affinity; i++) {
    const struct carp_sched_pod_term *t = &p->anti_affinity[i];
    uint32_t key = schd_intern(&s->rc.in, t->topology_key);
    own_add(
        s, g,
        schd_tg_get(s, TG_ANTI, key, 0, 0, SCHD_NONE, t->selector, g->ns, t),
        OWN_REQUIRED, 0, 0);
    g->inv_own[g->ninv_own++] =
        schd_tg_get(s, TG_INVERSE, key, 0, 0, SCHD_NONE, t->selector, g->ns, t);
  }
  ranks = ranks_of(s, p->preferred_anti_affinity, p->npreferred_anti_affinity);
  for (size_t i = 0; i < p->npreferred_anti_affinity; i++) {
    const struct carp_sched_pod_term *t = &p->preferred_anti_affinity[i];
    own_add(s, g,
            schd_tg_get(s, TG_ANTI, schd_intern(&s->rc.in, t->topology_key), 0,
                        0, SCHD_NONE, t->selector, g->ns, t),
            OWN_PREF_ANTI, t->weight, ranks[i]);
  }
  g->sort_cpu = g->req[SCHD_DIM_CPU];
  g->sort_mem = g->req[SCHD_DIM_MEMORY];
  g->sort_extended = 0;
  for (uint32_t r = SCHD_FIXED_DIMS; r < s->R; r++)
    if (g->req[r] > 0)
      g->sort_extended = 1;
  g->sort_created = p->created;
  g->sort_uid = p->uid ? p->uid : "";
}

int schd_groups_setup(struct schd_solver *s)
{
  const struct carp_sched_problem *p = s->p;
  struct sig sig = {NULL, 0, 0};
  struct schd_map byhash;
  uint32_t *counts;
  int rc = 0;

  /* label keys any selector looks at */
  schd_map_init(&s->sel_memo);
  for (size_t i = 0; i < p->npods; i++) {
    const struct carp_sched_pod *pod = &p->pods[i];
    for (size_t k = 0; k < pod->nspreads; k++)
      note_sel(s, pod->spreads[k].selector);
    note_terms(s, pod->affinity, pod->naffinity);
    note_terms(s, pod->preferred_affinity, pod->npreferred_affinity);
    note_terms(s, pod->anti_affinity, pod->nanti_affinity);
    note_terms(s, pod->preferred_anti_affinity, pod->npreferred_anti_affinity);
  }
  for (size_t i = 0; i < p->nbound_pods; i++)
    note_terms(s, p->bound_pods[i].anti_affinity,
               p->bound_pods[i].nanti_affinity);

  /* group by signature */
  schd_map_init(&byhash);
  s->pod_group = schd_alloc(&s->arena, (p->npods + 1) * sizeof(uint32_t));
  s->groups = NULL;
  s->ngroups = 0;
  {
    uint32_t capg = 0;
    for (size_t i = 0; i < p->npods; i++) {
      uint64_t h, v;
      uint32_t gi = SCHD_NONE;
      if (!p->pods[i].namespace_) {
        rc = CARP_EINVAL;
        goto out;
      }
      size_t lend;
      signature(s, &p->pods[i], &sig, &lend);
      h = schd_hash_bytes(0x67726f7570ull, sig.p, sig.len);
      if (schd_map_get(&byhash, h, &v))
        for (gi = (uint32_t)v; gi != SCHD_NONE; gi = s->groups[gi].next_same)
          if (s->groups[gi].nsig == sig.len &&
              memcmp(s->groups[gi].sig, sig.p, sig.len) == 0)
            break;
      if (gi == SCHD_NONE) {
        SCHD_GROW(s->groups, s->ngroups, capg);
        gi = s->ngroups++;
        memset(&s->groups[gi], 0, sizeof(s->groups[gi]));
        s->groups[gi].sig = schd_memdup(&s->arena, sig.p, sig.len);
        s->groups[gi].nsig = sig.len;
        s->groups[gi].sig_labels_end = (uint32_t)lend;
        s->groups[gi].next_same =
            schd_map_get(&byhash, h, &v) ? (uint32_t)v : SCHD_NONE;
        schd_map_put(&byhash, h, gi);
      }
      s->pod_group[i] = gi;
      s->groups[gi].npods++;
    }
  }
  counts = carp_calloc(s->ngroups + 1, sizeof(uint32_t));
  for (uint32_t gi = 0; gi < s->ngroups; gi++)
    s->groups[gi].pods =
        schd_alloc(&s->arena, (s->groups[gi].npods + 1) * sizeof(uint32_t));
  for (uint32_t i = 0; i < p->npods; i++) {
    struct schd_group *g = &s->groups[s->pod_group[i]];
    g->pods[counts[s->pod_group[i]]++] = i;
  }
  carp_free(counts);
  for (uint32_t gi = 0; gi < s->ngroups; gi++) {
    struct schd_group *g = &s->groups[gi];
    uint32_t k;
    for (k = 1; k < g->npods; k++)
      if (pod_cmp(&g->pods[k - 1], &g->pods[k], (void *)p->pods) > 0)
        break;
    if (k < g->npods) /* usually already in creation order */
      qsort_r(g->pods, g->npods, sizeof(uint32_t), pod_cmp, (void *)p->pods);
    g->rep = g->pods[0];
    group_init(s, g);
  }
  /* inverse groups of pods already running, so they exist before setup */
  for (size_t i = 0; i < p->nbound_pods; i++) {
    const struct carp_sched_bound_pod *bp = &p->bound_pods[i];
    uint32_t ns = schd_intern(&s->rc.in, bp->namespace_);
    for (size_t k = 0; k < bp->nanti_affinity; k++)
      schd_tg_get(s, TG_INVERSE,
                  schd_intern(&s->rc.in, bp->anti_affinity[k].topology_key), 0,
                  0, SCHD_NONE, bp->anti_affinity[k].selector, ns,
                  &bp->anti_affinity[k]);
  }
  /* who selects whom, through the index of selectors by first label */
  schd_tg_index_build(s);
  {
    uint32_t *fwd = carp_calloc(s->ntgs + 1, sizeof(uint32_t));
    uint32_t *inv = carp_calloc(s->ntgs + 1, sizeof(uint32_t));
    for (uint32_t gi = 0; gi < s->ngroups; gi++) {
      struct schd_group *g = &s->groups[gi];
      const struct carp_sched_pod *pod = &p->pods[g->rep];
      uint32_t nf = 0, ni = 0;
      size_t nc = schd_tg_candidates(s, pod->labels, pod->nlabels);
      for (size_t c = 0; c < nc; c++) {
        uint32_t t = s->tgcand[c];
        if (!schd_tg_selects(s, &s->tgs[t], g->ns, pod->labels, pod->nlabels))
          continue;
        if (s->tgs[t].type == TG_INVERSE)
          inv[ni++] = t;
        else
          fwd[nf++] = t;
      }
      g->sel_by = schd_memdup(&s->arena, fwd, (nf + 1) * sizeof(uint32_t));
      g->nsel_by = nf;
      g->inv_by = schd_memdup(&s->arena, inv, (ni + 1) * sizeof(uint32_t));
      g->ninv_by = ni;
      /* Free: nothing constrains where it goes. Spread and anti-affinity
       * selectors may count it (placing it last is a valid order: it only
       * adds to counts), but a pod-affinity selector may not, since
       * another pod might need it placed first. */
      g->inert =
          g->nown == 0 && g->ninv_own == 0 && g->nports == 0 && g->ninv_by == 0;
      for (uint32_t i = 0; i < g->nsel_by && g->inert; i++)
        if (s->tgs[g->sel_by[i]].type == TG_AFFINITY)
          g->inert = 0;
      /* room for every rule the group may ever have */
      g->rules =
          schd_alloc(&s->arena, (g->nown + g->ninv_by + 1) * sizeof(*g->rules));
      g->allow =
          schd_alloc(&s->arena, (g->nown + g->ninv_by + 1) * sizeof(*g->allow));
    }
    carp_free(fwd);
    carp_free(inv);
  }
out:
  carp_free(sig.p);
  schd_map_free(&byhash);
  s->stats.groups = s->ngroups;
  return rc;
}

int schd_group_apply(struct schd_solver *s, struct schd_group *g)
{
  const struct carp_sched_pod *p = &s->p->pods[g->rep];
  uint32_t nactive = 0;
  int rc;

  rc = strict_of(s, p, g->req_dropped, &s->rb);
  if (rc < 0) {
    g->bad = 1;
    return rc;
  }
  g->strict = schd_rbuild_intern(&s->rc, &s->rb);
  if (g->pref_dropped < p->npreferred_terms) {
    const struct carp_sched_node_term *t =
        &p->preferred_terms[g->pref_order[g->pref_dropped]];
    for (size_t k = 0; k < t->nexprs; k++) {
      rc = schd_rbuild_public(&s->rc, &s->rb, &t->exprs[k]);
      if (rc < 0) {
        g->bad = 1;
        return rc;
      }
    }
  }
  g->rset = schd_rbuild_intern(&s->rc, &s->rb);

  for (uint32_t i = 0; i < g->nown; i++) {
    struct schd_owned *o = &g->own[i];
    switch (o->cls) {
    case OWN_SCHEDULE_ANYWAY:
      o->active = o->order >= g->sa_dropped;
      break;
    case OWN_PREF_AFFINITY:
      o->active = o->order >= g->paff_dropped;
      break;
    case OWN_PREF_ANTI:
      o->active = o->order >= g->panti_dropped;
      break;
    default:
      o->active = 1;
    }
    nactive += o->active;
  }
  g->nrules = 0;
  for (uint32_t i = 0; i < g->nown; i++)
    if (g->own[i].active) {
      g->rules[g->nrules].tg = g->own[i].tg;
      g->rules[g->nrules].type = s->tgs[g->own[i].tg].type;
      g->rules[g->nrules].self = g->own[i].self;
      g->nrules++;
    }
  for (uint32_t i = 0; i < g->ninv_by; i++) {
    g->rules[g->nrules].tg = g->inv_by[i];
    g->rules[g->nrules].type = TG_INVERSE;
    g->rules[g->nrules].self = 0;
    g->nrules++;
  }
  for (uint32_t i = 0; i < g->nrules; i++) {
    const struct schd_tg *t = &s->tgs[g->rules[i].tg];
    g->allow[i] = t->hostname
                      ? NULL
                      : schd_zalloc(&s->arena, (s->dkeys[t->dkey].dwords + 1) *
                                                   sizeof(uint64_t));
  }
  g->batch = nactive == 0 && g->ninv_own == 0 && g->nports == 0;
  if (g->rej)
    memset(g->rej, 0, s->bwords * sizeof(uint64_t));
  if (g->taint_ok)
    memset(g->taint_ok, 0, s->ntsets + 1);
  return 0;
}

int schd_group_relax(struct schd_solver *s, struct schd_group *g)
{
  const struct carp_sched_pod *p = &s->p->pods[g->rep];
  uint32_t nsa = 0, npa = 0, npn = 0;
  for (uint32_t i = 0; i < g->nown; i++) {
    nsa += g->own[i].cls == OWN_SCHEDULE_ANYWAY;
    npa += g->own[i].cls == OWN_PREF_AFFINITY;
    npn += g->own[i].cls == OWN_PREF_ANTI;
  }
  if (g->pref_dropped < p->npreferred_terms)
    g->pref_dropped++;
  else if (p->nrequired_terms > 1 && g->req_dropped + 1 < p->nrequired_terms)
    g->req_dropped++;
  else if (g->sa_dropped < nsa)
    g->sa_dropped++;
  else if (g->paff_dropped < npa)
    g->paff_dropped++;
  else if (g->panti_dropped < npn)
    g->panti_dropped++;
  else if (!g->tol_pns)
    g->tol_pns = 1;
  else
    return 0;
  s->stats.relaxations++;
  schd_group_apply(s, g);
  return 1;
}
