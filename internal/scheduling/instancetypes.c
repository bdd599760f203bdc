/* instancetypes.c: instance types, offerings and NodePools as the solve
 * sees them.
 *
 * Each instance type becomes a requirement set (its labels, plus the
 * well-known ones derived from its name, offerings and capacity) and an
 * allocatable vector. Each NodePool becomes a template requirement set, a
 * bitset of the types it may launch, a per-type capacity left after the
 * DaemonSet pods that would run there, sorted orders for shrinking claim
 * options, and a remaining budget for its limits. Which types a set of
 * requirements allows is computed once per distinct set and memoised. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "schd_int.h"

static int has_key(const struct schd_rbuild *b, uint32_t key)
{
  for (uint32_t i = 0; i < b->n; i++)
    if (b->r[i].key == key)
      return 1;
  return 0;
}

static uint32_t *sorted_unique(struct schd_arena *a, uint32_t *v, uint32_t *n)
{
  uint32_t m = 0;
  for (uint32_t i = 1; i < *n; i++) /* insertion sort: lists are short */
    for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      uint32_t t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  for (uint32_t i = 0; i < *n; i++)
    if (m == 0 || v[m - 1] != v[i])
      v[m++] = v[i];
  *n = m;
  return schd_memdup(a, v, (m ? m : 1) * sizeof(uint32_t));
}

/* Decimal text of a non-negative number, interned (snprintf is slow for
 * 800 numbers per solve). */
static uint32_t intern_num(struct schd_solver *s, int64_t v)
{
  char buf[24], *p = buf + sizeof(buf) - 1;
  uint64_t u = v < 0 ? 0 : (uint64_t)v;
  *p = '\0';
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  return schd_intern(&s->rc.in, schd_strdup(&s->arena, p));
}

static void add_in(struct schd_solver *s, struct schd_rbuild *b, uint32_t key,
                   uint32_t *vals, uint32_t n)
{
  struct schd_req r;
  memset(&r, 0, sizeof(r));
  r.key = key;
  r.vals = sorted_unique(&s->rc.arena, vals, &n);
  r.nvals = n;
  schd_rbuild_req(&s->rc, b, &r);
}

static int is_derived_key(const char *k)
{
  return k && k[0] == 'c' &&
         (strcmp(k, CARP_LABEL_INSTANCE_CPU) == 0 ||
          strcmp(k, CARP_LABEL_INSTANCE_MEMORY) == 0);
}

static int exprs_use(const struct carp_sched_requirement *r, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (is_derived_key(r[i].key))
      return 1;
  return 0;
}

static int terms_use(const struct carp_sched_node_term *t, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (exprs_use(t[i].exprs, t[i].nexprs))
      return 1;
  return 0;
}

static int pod_terms_use(const struct carp_sched_pod_term *t, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (is_derived_key(t[i].topology_key))
      return 1;
  return 0;
}

/* Does anything in the problem look at carpenter.dev/instance-cpu or
 * -memory? Deriving them for hundreds of types is the costliest part of
 * setting up instance types, and usually nobody asks. */
static int derived_keys_used(const struct carp_sched_problem *p)
{
  for (size_t i = 0; i < p->npods; i++) {
    const struct carp_sched_pod *q = &p->pods[i];
    for (size_t k = 0; k < q->nnode_selector; k++)
      if (is_derived_key(q->node_selector[k].key))
        return 1;
    for (size_t k = 0; k < q->nspreads; k++)
      if (is_derived_key(q->spreads[k].topology_key))
        return 1;
    if (terms_use(q->required_terms, q->nrequired_terms) ||
        terms_use(q->preferred_terms, q->npreferred_terms) ||
        pod_terms_use(q->affinity, q->naffinity) ||
        pod_terms_use(q->preferred_affinity, q->npreferred_affinity) ||
        pod_terms_use(q->anti_affinity, q->nanti_affinity) ||
        pod_terms_use(q->preferred_anti_affinity, q->npreferred_anti_affinity))
      return 1;
  }
  for (size_t i = 0; i < p->nnodepools; i++) {
    if (exprs_use(p->nodepools[i].requirements, p->nodepools[i].nrequirements))
      return 1;
    for (size_t k = 0; k < p->nodepools[i].nlabels; k++)
      if (is_derived_key(p->nodepools[i].labels[k].key))
        return 1;
  }
  for (size_t i = 0; i < p->ndaemons; i++) {
    for (size_t k = 0; k < p->daemons[i].nnode_selector; k++)
      if (is_derived_key(p->daemons[i].node_selector[k].key))
        return 1;
    if (terms_use(p->daemons[i].required_terms, p->daemons[i].nrequired_terms))
      return 1;
  }
  for (size_t i = 0; i < p->nbound_pods; i++)
    if (pod_terms_use(p->bound_pods[i].anti_affinity,
                      p->bound_pods[i].nanti_affinity))
      return 1;
  return 0;
}

int schd_types_setup(struct schd_solver *s)
{
  const struct carp_sched_problem *p = s->p;
  const uint32_t R = s->R;
  struct schd_rbuild b;
  uint32_t *zones = NULL, *cts = NULL;
  int rc = 0;

  int derive = derived_keys_used(p);
  s->ntypes = (uint32_t)p->ninstance_types;
  s->twords = SCHD_WORDS(s->ntypes ? s->ntypes : 1);
  s->types = schd_zalloc(&s->arena, (s->ntypes + 1) * sizeof(*s->types));
  schd_rbuild_init(&b);
  for (uint32_t t = 0; t < s->ntypes; t++) {
    const struct carp_sched_instance_type *it = &p->instance_types[t];
    struct schd_type *ty = &s->types[t];
    uint32_t nz = 0, nc = 0;
    if (!it->name) {
      rc = CARP_EINVAL;
      goto out;
    }
    ty->name = schd_intern(&s->rc.in, it->name);
    ty->alloc = schd_zalloc(&s->arena, R * sizeof(int64_t));
    ty->cap = schd_zalloc(&s->arena, R * sizeof(int64_t));
    schd_vec_add(s, ty->cap, it->capacity, it->ncapacity, 1);
    memcpy(ty->alloc, ty->cap, R * sizeof(int64_t));
    schd_vec_add(s, ty->alloc, it->kube_reserved, it->nkube_reserved, -1);
    schd_vec_add(s, ty->alloc, it->system_reserved, it->nsystem_reserved, -1);
    schd_vec_add(s, ty->alloc, it->eviction_threshold, it->neviction_threshold,
                 -1);
    for (uint32_t r = 0; r < R; r++)
      if (ty->alloc[r] < 0)
        ty->alloc[r] = 0;
    ty->off = schd_zalloc(&s->arena, (it->nofferings + 1) * sizeof(*ty->off));
    zones = carp_reallocarray(zones, it->nofferings + 1, sizeof(*zones));
    cts = carp_reallocarray(cts, it->nofferings + 1, sizeof(*cts));
    ty->base_price = INFINITY;
    for (size_t o = 0; o < it->nofferings; o++) {
      const struct carp_sched_offering *of = &it->offerings[o];
      if (!of->available)
        continue;
      ty->off[ty->noff].zone = schd_intern(&s->rc.in, of->zone);
      ty->off[ty->noff].ct = schd_intern(&s->rc.in, of->capacity_type);
      ty->off[ty->noff].price = of->price;
      if (of->price < ty->base_price)
        ty->base_price = of->price;
      zones[nz++] = ty->off[ty->noff].zone;
      cts[nc++] = ty->off[ty->noff].ct;
      ty->noff++;
    }
    schd_rbuild_reset(&b);
    for (size_t i = 0; i < it->nrequirements; i++) {
      rc = schd_rbuild_public(&s->rc, &b, &it->requirements[i]);
      if (rc < 0)
        goto out;
    }
    if (!has_key(&b, s->rc.k_itype))
      schd_rbuild_label(&s->rc, &b, s->rc.k_itype, ty->name);
    if (!has_key(&b, s->rc.k_zone))
      add_in(s, &b, s->rc.k_zone, zones, nz);
    if (!has_key(&b, s->rc.k_ct))
      add_in(s, &b, s->rc.k_ct, cts, nc);
    if (derive && !has_key(&b, s->rc.k_cpu))
      schd_rbuild_label(&s->rc, &b, s->rc.k_cpu,
                        intern_num(s, (ty->cap[SCHD_DIM_CPU] + 999) / 1000));
    if (derive && !has_key(&b, s->rc.k_mem))
      schd_rbuild_label(
          &s->rc, &b, s->rc.k_mem,
          intern_num(s, ty->cap[SCHD_DIM_MEMORY] / (1048576LL * 1000)));
    ty->rset = schd_rbuild_intern(&s->rc, &b);
  }
out:
  carp_free(zones);
  carp_free(cts);
  schd_rbuild_free(&b);
  return rc;
}

/* ---- offerings and compatibility ---- */

static int offering_ok(const struct schd_solver *s,
                       const struct schd_offering *o, const struct schd_req *zr,
                       const struct schd_req *cr)
{
  if (zr && !schd_req_allows(&s->rc, zr, o->zone))
    return 0;
  if (cr && !schd_req_allows(&s->rc, cr, o->ct))
    return 0;
  return 1;
}

double schd_type_price(const struct schd_solver *s, uint32_t t, uint32_t rset)
{
  const struct schd_rset *rs = schd_rset(&s->rc, rset);
  const struct schd_req *zr = schd_rset_get(rs, s->rc.k_zone);
  const struct schd_req *cr = schd_rset_get(rs, s->rc.k_ct);
  const struct schd_type *ty = &s->types[t];
  double best = INFINITY;
  for (uint32_t o = 0; o < ty->noff; o++)
    if (ty->off[o].price < best && offering_ok(s, &ty->off[o], zr, cr))
      best = ty->off[o].price;
  return best;
}

const uint64_t *schd_pool_compat(struct schd_solver *s, struct schd_pool *pool,
                                 uint32_t rset)
{
  uint64_t v;
  uint64_t *bits;
  const struct schd_rset *rs;
  const struct schd_req *zr, *cr;
  if (schd_map_get(&pool->compat, rset, &v))
    return (const uint64_t *)(uintptr_t)v;
  bits = schd_zalloc(&s->arena, s->twords * sizeof(uint64_t));
  rs = schd_rset(&s->rc, rset);
  zr = schd_rset_get(rs, s->rc.k_zone);
  cr = schd_rset_get(rs, s->rc.k_ct);
  for (size_t t = bs_next(pool->types, s->twords, 0); t != SIZE_MAX;
       t = bs_next(pool->types, s->twords, t + 1)) {
    const struct schd_type *ty = &s->types[t];
    uint32_t o;
    if (!schd_rset_intersects(&s->rc, ty->rset, rset, NULL))
      continue;
    for (o = 0; o < ty->noff; o++)
      if (offering_ok(s, &ty->off[o], zr, cr))
        break;
    if (o < ty->noff)
      bs_set(bits, t);
  }
  schd_map_put(&pool->compat, rset, (uint64_t)(uintptr_t)bits);
  return bits;
}

int schd_min_values_ok(struct schd_solver *s, uint32_t rset,
                       const uint64_t *opts, uint32_t *badkey)
{
  const struct schd_rset *rs = schd_rset(&s->rc, rset);
  uint32_t *seen = NULL;
  size_t nseen = 0, capseen = 0;
  int ok = 1;
  if (!rs->has_min_values)
    return 1;
  for (uint32_t i = 0; i < rs->n && ok; i++) {
    const struct schd_req *q = &rs->reqs[i];
    if (q->min_values <= 0)
      continue;
    nseen = 0;
    for (size_t t = bs_next(opts, s->twords, 0); t != SIZE_MAX;
         t = bs_next(opts, s->twords, t + 1)) {
      const struct schd_req *tr =
          schd_rset_get(schd_rset(&s->rc, s->types[t].rset), q->key);
      if (!tr || tr->complement)
        continue;
      for (uint32_t k = 0; k < tr->nvals; k++) {
        uint32_t v = tr->vals[k];
        size_t j;
        if (!schd_req_allows(&s->rc, q, v))
          continue;
        for (j = 0; j < nseen; j++)
          if (seen[j] == v)
            break;
        if (j == nseen) {
          SCHD_GROW(seen, nseen, capseen);
          seen[nseen++] = v;
        }
      }
    }
    if (nseen < (size_t)q->min_values) {
      ok = 0;
      if (badkey)
        *badkey = q->key;
    }
  }
  carp_free(seen);
  return ok;
}

void schd_claim_reserve(struct schd_solver *s, struct schd_bin *b)
{
  struct schd_pool *pool = &s->pools[b->pool];
  const uint32_t R = s->R;
  if (!pool->limited)
    return;
  if (!b->reserve)
    b->reserve = schd_zalloc(&s->arena, (R + 1) * sizeof(int64_t));
  for (uint32_t r = 0; r < R; r++) {
    int64_t mx = 0;
    if (pool->remaining[r] == INT64_MAX)
      continue;
    for (size_t t = bs_next(b->opts, s->twords, 0); t != SIZE_MAX;
         t = bs_next(b->opts, s->twords, t + 1))
      if (s->types[t].cap[r] > mx)
        mx = s->types[t].cap[r];
    pool->remaining[r] += b->reserve[r] - mx;
    b->reserve[r] = mx;
  }
  if (pool->remaining[R] != INT64_MAX) {
    pool->remaining[R] += b->reserve[R] - 1000;
    b->reserve[R] = 1000;
  }
}

/* ---- pools ---- */

static int pool_cmp(const void *a, const void *b, void *arg)
{
  const struct carp_sched_problem *p = arg;
  const struct carp_sched_nodepool *x = &p->nodepools[*(const uint32_t *)a];
  const struct carp_sched_nodepool *y = &p->nodepools[*(const uint32_t *)b];
  int c;
  if (x->weight != y->weight)
    return x->weight > y->weight ? -1 : 1;
  /* Karpenter's OrderByWeight: equal weights by name, descending. */
  c = strcmp(y->name, x->name);
  if (c)
    return c;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

struct order_ctx {
  const int64_t *cap;
  uint32_t R, r;
  const double *score;
};

static int cap_cmp(const void *a, const void *b, void *arg)
{
  const struct order_ctx *o = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  int64_t cx = o->cap[(size_t)x * o->R + o->r],
          cy = o->cap[(size_t)y * o->R + o->r];
  if (cx != cy)
    return cx < cy ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int score_desc_cmp(const void *a, const void *b, void *arg)
{
  const struct order_ctx *o = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (o->score[x] != o->score[y])
    return o->score[x] > o->score[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int score_asc_cmp(const void *a, const void *b, void *arg)
{
  const struct order_ctx *o = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (o->score[x] != o->score[y])
    return o->score[x] < o->score[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* Would daemon d run on a node of pool with type t? */
static int daemon_runs(struct schd_solver *s, const uint32_t *dterms,
                       uint32_t nterms, uint32_t node)
{
  for (uint32_t i = 0; i < nterms; i++)
    if (schd_rset_compatible(&s->rc, node, dterms[i], 1, NULL))
      return 1;
  return 0;
}

/* A daemon's requirement sets, one per required term (or one). */
static int daemon_terms(struct schd_solver *s,
                        const struct carp_sched_daemon *d, uint32_t **out,
                        uint32_t *nout)
{
  uint32_t n = d->nrequired_terms ? (uint32_t)d->nrequired_terms : 1;
  uint32_t *ids = schd_alloc(&s->arena, n * sizeof(uint32_t));
  for (uint32_t i = 0; i < n; i++) {
    int rc;
    schd_rbuild_reset(&s->rb);
    for (size_t k = 0; k < d->nnode_selector; k++)
      schd_rbuild_label(&s->rc, &s->rb,
                        schd_intern(&s->rc.in, d->node_selector[k].key),
                        schd_intern(&s->rc.in, d->node_selector[k].value));
    if (d->nrequired_terms) {
      const struct carp_sched_node_term *t = &d->required_terms[i];
      for (size_t k = 0; k < t->nexprs; k++) {
        rc = schd_rbuild_public(&s->rc, &s->rb, &t->exprs[k]);
        if (rc < 0)
          return rc;
      }
    }
    ids[i] = schd_rbuild_intern(&s->rc, &s->rb);
  }
  *out = ids;
  *nout = n;
  return 0;
}

int schd_pools_setup(struct schd_solver *s)
{
  const struct carp_sched_problem *p = s->p;
  const uint32_t R = s->R, NT = s->ntypes;
  uint32_t *order = carp_calloc(p->nnodepools + 1, sizeof(uint32_t));
  uint32_t **dterms = carp_calloc(p->ndaemons + 1, sizeof(*dterms));
  uint32_t *ndterms = carp_calloc(p->ndaemons + 1, sizeof(uint32_t));
  double *score = carp_calloc(NT + 1, sizeof(double));
  int rc = 0;

  for (size_t d = 0; d < p->ndaemons; d++) {
    rc = daemon_terms(s, &p->daemons[d], &dterms[d], &ndterms[d]);
    if (rc < 0)
      goto out;
  }
  for (uint32_t i = 0; i < p->nnodepools; i++) {
    if (!p->nodepools[i].name) {
      rc = CARP_EINVAL;
      goto out;
    }
    order[i] = i;
  }
  qsort_r(order, p->nnodepools, sizeof(uint32_t), pool_cmp, (void *)p);
  s->npools = (uint32_t)p->nnodepools;
  s->pools = schd_zalloc(&s->arena, (s->npools + 1) * sizeof(*s->pools));
  s->pool_of = schd_zalloc(&s->arena, (s->npools + 1) * sizeof(uint32_t));
  for (uint32_t pi = 0; pi < s->npools; pi++) {
    const struct carp_sched_nodepool *np = &p->nodepools[order[pi]];
    struct schd_pool *pool = &s->pools[pi];
    int64_t *maxcap = schd_zalloc(&s->arena, R * sizeof(int64_t));
    pool->idx = order[pi];
    s->pool_of[order[pi]] = pi;
    pool->name = schd_intern(&s->rc.in, np->name);
    schd_map_init(&pool->compat);
    /* template: requirements ∩ labels ∩ nodepool ∩ "a new hostname" */
    schd_rbuild_reset(&s->rb);
    for (size_t k = 0; k < np->nrequirements; k++) {
      rc = schd_rbuild_public(&s->rc, &s->rb, &np->requirements[k]);
      if (rc < 0)
        goto out;
    }
    for (size_t k = 0; k < np->nlabels; k++)
      schd_rbuild_label(&s->rc, &s->rb,
                        schd_intern(&s->rc.in, np->labels[k].key),
                        schd_intern(&s->rc.in, np->labels[k].value));
    schd_rbuild_label(&s->rc, &s->rb, s->rc.k_nodepool, pool->name);
    schd_rbuild_label(&s->rc, &s->rb, s->rc.k_hostname, s->rc.v_new_host);
    pool->tmpl = schd_rbuild_intern(&s->rc, &s->rb);
    pool->taintset = schd_taintset(s, np->taints, np->ntaints, NULL, 0, 0);
    /* types the pool may launch at all */
    pool->types = schd_zalloc(&s->arena, s->twords * sizeof(uint64_t));
    if (np->instance_types) {
      for (size_t k = 0; k < np->ninstance_types; k++) {
        if (np->instance_types[k] >= NT) {
          rc = CARP_EINVAL;
          goto out;
        }
        bs_set(pool->types, np->instance_types[k]);
      }
    } else {
      for (uint32_t t = 0; t < NT; t++)
        bs_set(pool->types, t);
    }
    pool->listed =
        schd_memdup(&s->arena, pool->types, s->twords * sizeof(uint64_t));
    {
      const uint64_t *c = schd_pool_compat(s, pool, pool->tmpl);
      for (size_t w = 0; w < s->twords; w++)
        pool->types[w] &= c[w];
      /* the memo was computed against the unfiltered list: drop it */
      schd_map_free(&pool->compat);
      schd_map_init(&pool->compat);
    }
    pool->ntypes = (uint32_t)bs_count(pool->types, s->twords);
    /* DaemonSet overhead per type, and capacity left for pods */
    pool->daemon =
        schd_zalloc(&s->arena, ((size_t)NT * R + 1) * sizeof(int64_t));
    pool->cap = schd_zalloc(&s->arena, ((size_t)NT * R + 1) * sizeof(int64_t));
    for (size_t d = 0; d < p->ndaemons; d++) {
      const struct carp_sched_daemon *dm = &p->daemons[d];
      const struct schd_taintset *ts = &s->tsets[pool->taintset];
      int any = 0;
      if (!carp_sched_taints_tolerated(ts->t, ts->n, dm->tolerations,
                                       dm->ntolerations, 1, NULL))
        continue;
      if (!daemon_runs(s, dterms[d], ndterms[d], pool->tmpl))
        continue;
      for (size_t t = bs_next(pool->types, s->twords, 0); t != SIZE_MAX;
           t = bs_next(pool->types, s->twords, t + 1)) {
        uint32_t node =
            schd_rset_intersect(&s->rc, pool->tmpl, s->types[t].rset);
        if (!daemon_runs(s, dterms[d], ndterms[d], node))
          continue;
        for (size_t q = 0; q < dm->nrequests; q++) {
          int dim = schd_dim(s, dm->requests[q].name);
          if (dim >= 0 && dim != SCHD_DIM_PODS) /* one pod, listed or not */
            pool->daemon[t * R + (uint32_t)dim] += dm->requests[q].milli;
        }
        pool->daemon[t * R + SCHD_DIM_PODS] += 1000;
        any = 1;
      }
      if (any && dm->nhost_ports) {
        struct schd_port *pp;
        uint32_t np2;
        schd_ports_from_public(s, dm->host_ports, dm->nhost_ports, &pp, &np2);
        pool->dports = carp_reallocarray(pool->dports, pool->ndports + np2 + 1,
                                         sizeof(*pool->dports));
        memcpy(pool->dports + pool->ndports, pp, np2 * sizeof(*pp));
        pool->ndports += np2;
      }
    }
    for (uint32_t t = 0; t < NT; t++)
      for (uint32_t r = 0; r < R; r++) {
        int64_t c = s->types[t].alloc[r] - pool->daemon[(size_t)t * R + r];
        pool->cap[(size_t)t * R + r] = c;
        if (bs_get(pool->types, t) && c > maxcap[r])
          maxcap[r] = c;
      }
    /* orders */
    {
      uint32_t *ts =
          schd_alloc(&s->arena, (pool->ntypes + 1) * sizeof(uint32_t));
      uint32_t n = 0;
      struct order_ctx oc = {pool->cap, R, 0, score};
      for (size_t t = bs_next(pool->types, s->twords, 0); t != SIZE_MAX;
           t = bs_next(pool->types, s->twords, t + 1))
        ts[n++] = (uint32_t)t;
      pool->order = schd_alloc(&s->arena, R * sizeof(uint32_t *));
      for (uint32_t r = 0; r < R; r++) {
        pool->order[r] = schd_memdup(&s->arena, ts, (n + 1) * sizeof(uint32_t));
        oc.r = r;
        qsort_r(pool->order[r], n, sizeof(uint32_t), cap_cmp, &oc);
      }
      for (uint32_t i = 0; i < n; i++) {
        double sc = 0;
        for (uint32_t r = 0; r < R; r++)
          if (maxcap[r] > 0)
            sc += (double)pool->cap[(size_t)ts[i] * R + r] / (double)maxcap[r];
        score[ts[i]] = sc;
      }
      pool->by_size = schd_memdup(&s->arena, ts, (n + 1) * sizeof(uint32_t));
      qsort_r(pool->by_size, n, sizeof(uint32_t), score_desc_cmp, &oc);
      for (uint32_t i = 0; i < n; i++)
        score[ts[i]] = s->types[ts[i]].base_price;
      pool->by_price = schd_memdup(&s->arena, ts, (n + 1) * sizeof(uint32_t));
      qsort_r(pool->by_price, n, sizeof(uint32_t), score_asc_cmp, &oc);
    }
    /* limits */
    pool->remaining = schd_alloc(&s->arena, (R + 1) * sizeof(int64_t));
    for (uint32_t r = 0; r <= R; r++)
      pool->remaining[r] = INT64_MAX;
    for (size_t k = 0; k < np->nlimits; k++) {
      const char *name = np->limits[k].name;
      int d = name && strcmp(name, CARP_RESOURCE_NODES) == 0
                  ? (int)R
                  : schd_dim(s, name);
      int64_t used = 0;
      if (d < 0)
        continue;
      for (size_t u = 0; u < np->nusage; u++) {
        const char *un = np->usage[u].name;
        if (un && name && strcmp(un, name) == 0)
          used += np->usage[u].milli;
      }
      pool->remaining[d] = np->limits[k].milli - used;
      pool->limited = 1;
    }
  }
out:
  carp_free(order);
  carp_free(dterms);
  carp_free(ndterms);
  carp_free(score);
  return rc;
}
