/* result.c: turning the solve's bins back into strings and arrays.
 *
 * Each claim gets its NodePool, its narrowed requirements in the NodeClaim
 * form (the solve's placeholder hostname dropped), its instance-type options
 * cheapest first with the price of the cheapest offering its requirements
 * allow, its total requests with the DaemonSet overhead of the cheapest
 * option, and its pods. Each pod that found no place gets, per NodePool,
 * the first rule that refused it and one line in Karpenter's words for an
 * event. Everything is copied into an arena the result owns. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "schd_int.h"

static const char *const reason_names[] = {
    [CARP_SCHED_REASON_NONE] = "None",
    [CARP_SCHED_REASON_REQUIREMENT] = "Requirement",
    [CARP_SCHED_REASON_TAINT] = "Taint",
    [CARP_SCHED_REASON_HOST_PORT] = "HostPort",
    [CARP_SCHED_REASON_LIMIT] = "Limit",
    [CARP_SCHED_REASON_RESOURCES] = "Resources",
    [CARP_SCHED_REASON_INSTANCE_TYPE] = "InstanceType",
    [CARP_SCHED_REASON_MIN_VALUES] = "MinValues",
    [CARP_SCHED_REASON_SPREAD] = "TopologySpread",
    [CARP_SCHED_REASON_AFFINITY] = "PodAffinity",
    [CARP_SCHED_REASON_ANTI_AFFINITY] = "PodAntiAffinity",
    [CARP_SCHED_REASON_CLAIM_LIMIT] = "ClaimLimit",
};

const char *carp_sched_reason_name(enum carp_sched_reason reason)
{
  if ((size_t)reason < CARP_ARRAY_LEN(reason_names) && reason_names[reason])
    return reason_names[reason];
  return "Unknown";
}

static const char *effect_name(enum carp_sched_effect e)
{
  switch (e) {
  case CARP_SCHED_EFFECT_NO_SCHEDULE:
    return "NoSchedule";
  case CARP_SCHED_EFFECT_PREFER_NO_SCHEDULE:
    return "PreferNoSchedule";
  case CARP_SCHED_EFFECT_NO_EXECUTE:
    return "NoExecute";
  default:
    return "";
  }
}

static const char *copy(struct schd_arena *a, const char *s)
{
  return schd_strdup(a, s ? s : "");
}

/* ---- requirements in NodeClaim form ---- */

struct req_out {
  struct carp_sched_requirement *r;
  size_t n, cap;
};

static void emit(struct schd_arena *a, struct req_out *o, const char *key,
                 enum carp_sched_op op, const char **vals, size_t nvals,
                 int32_t *minv)
{
  struct carp_sched_requirement *q;
  SCHD_GROW(o->r, o->n, o->cap);
  q = &o->r[o->n++];
  q->key = key;
  q->op = op;
  q->values = vals;
  q->nvalues = nvals;
  q->min_values = *minv;
  *minv = 0;
  (void)a;
}

static int cstr_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int req_key_cmp(const void *a, const void *b, void *arg)
{
  const struct schd_rctx *c = arg;
  const struct schd_req *x = *(const struct schd_req *const *)a;
  const struct schd_req *y = *(const struct schd_req *const *)b;
  return strcmp(c->in.str[x->key], c->in.str[y->key]);
}

static void requirements_out(struct schd_solver *s, struct schd_arena *a,
                             uint32_t rset, struct carp_sched_claim *c)
{
  const struct schd_rset *rs = schd_rset(&s->rc, rset);
  const struct schd_req **order = carp_calloc(rs->n + 1, sizeof(*order));
  struct req_out o = {NULL, 0, 0};
  uint32_t n = 0;
  for (uint32_t i = 0; i < rs->n; i++)
    if (rs->reqs[i].key != s->rc.k_hostname)
      order[n++] = &rs->reqs[i];
  qsort_r(order, n, sizeof(*order), req_key_cmp, &s->rc);
  for (uint32_t i = 0; i < n; i++) {
    const struct schd_req *q = order[i];
    const char *key = copy(a, s->rc.in.str[q->key]);
    const char **vals = schd_alloc(a, (q->nvals + 1) * sizeof(*vals));
    int32_t minv = q->min_values;
    char num[32];
    size_t before = o.n;
    for (uint32_t k = 0; k < q->nvals; k++)
      vals[k] = copy(a, s->rc.in.str[q->vals[k]]);
    qsort(vals, q->nvals, sizeof(*vals), cstr_cmp);
    if (!q->complement) {
      if (q->nvals)
        emit(a, &o, key, CARP_SCHED_OP_IN, vals, q->nvals, &minv);
      else if (q->missing)
        emit(a, &o, key, CARP_SCHED_OP_DOES_NOT_EXIST, NULL, 0, &minv);
      else
        emit(a, &o, key, CARP_SCHED_OP_IN, NULL, 0, &minv);
      continue;
    }
    if (!q->missing && !q->has_gt && !q->has_lt)
      emit(a, &o, key, CARP_SCHED_OP_EXISTS, NULL, 0, &minv);
    if (q->nvals)
      emit(a, &o, key, CARP_SCHED_OP_NOT_IN, vals, q->nvals, &minv);
    if (q->has_gt) {
      const char **v = schd_alloc(a, sizeof(*v));
      snprintf(num, sizeof(num), "%lld", (long long)q->gt);
      v[0] = copy(a, num);
      emit(a, &o, key, CARP_SCHED_OP_GT, v, 1, &minv);
    }
    if (q->has_lt) {
      const char **v = schd_alloc(a, sizeof(*v));
      snprintf(num, sizeof(num), "%lld", (long long)q->lt);
      v[0] = copy(a, num);
      emit(a, &o, key, CARP_SCHED_OP_LT, v, 1, &minv);
    }
    (void)before;
  }
  c->requirements = schd_memdup(a, o.r, (o.n + 1) * sizeof(*o.r));
  c->nrequirements = o.n;
  carp_free(o.r);
  carp_free(order);
}

/* ---- options ---- */

struct opt {
  uint32_t t;
  double price;
  const char *name;
};

static int opt_cmp(const void *a, const void *b)
{
  const struct opt *x = a, *y = b;
  int c;
  if (x->price != y->price)
    return x->price < y->price ? -1 : 1;
  c = strcmp(x->name, y->name);
  if (c)
    return c;
  return x->t < y->t ? -1 : x->t > y->t;
}

/* Claims with the same requirements and options share their arrays: a
 * thousand one-pod claims of a Deployment cost one sort, not a thousand. */
struct shared_opts {
  uint32_t rset;
  const uint64_t *opts;
  uint32_t *types;
  double *prices;
  size_t n;
  struct shared_opts *next;
};

struct out_ctx {
  struct schd_arena *a;
  struct schd_map reqs; /* rset -> index in req_sets */
  struct carp_sched_claim *req_sets;
  size_t nreq_sets, capreq_sets;
  struct schd_map opts;   /* hash -> struct shared_opts * */
  struct schd_map sorted; /* rset -> struct by_price * */
};

/* Every type a claim's requirements allow, by price: computed once per
 * distinct requirement set, then each claim keeps the ones in its options. */
struct by_price {
  struct opt *o;
  size_t n;
};

static const struct by_price *
sorted_for(struct schd_solver *s, struct out_ctx *oc, const struct schd_bin *b)
{
  uint64_t v;
  struct by_price *bp;
  const uint64_t *compat;
  size_t n = 0;
  if (schd_map_get(&oc->sorted, b->rset, &v))
    return (const struct by_price *)(uintptr_t)v;
  compat = schd_pool_compat(s, &s->pools[b->pool], b->rset);
  bp = schd_zalloc(&s->arena, sizeof(*bp));
  bp->o =
      schd_alloc(&s->arena, (bs_count(compat, s->twords) + 1) * sizeof(*bp->o));
  for (size_t t = bs_next(compat, s->twords, 0); t != SIZE_MAX;
       t = bs_next(compat, s->twords, t + 1)) {
    double pr = schd_type_price(s, (uint32_t)t, b->rset);
    if (isinf(pr))
      continue;
    bp->o[n].t = (uint32_t)t;
    bp->o[n].price = pr;
    bp->o[n].name = s->rc.in.str[s->types[t].name];
    n++;
  }
  qsort(bp->o, n, sizeof(*bp->o), opt_cmp);
  bp->n = n;
  schd_map_put(&oc->sorted, b->rset, (uint64_t)(uintptr_t)bp);
  return bp;
}

static const struct shared_opts *
options_of(struct schd_solver *s, struct out_ctx *oc, const struct schd_bin *b)
{
  uint64_t h = schd_hash_bytes(schd_mix(0x6f707473, b->rset), b->opts,
                               s->twords * sizeof(uint64_t));
  uint64_t v;
  struct shared_opts *so = NULL, *head = NULL;
  const struct by_price *bp;
  size_t k = 0;
  if (h == UINT64_MAX)
    h--;
  if (schd_map_get(&oc->opts, h, &v))
    for (head = so = (struct shared_opts *)(uintptr_t)v; so; so = so->next)
      if (so->rset == b->rset &&
          memcmp(so->opts, b->opts, s->twords * sizeof(uint64_t)) == 0)
        return so;
  bp = sorted_for(s, oc, b);
  so = schd_zalloc(oc->a, sizeof(*so));
  so->rset = b->rset;
  so->opts = schd_memdup(oc->a, b->opts, s->twords * sizeof(uint64_t));
  so->types = schd_alloc(oc->a, (bp->n + 1) * sizeof(uint32_t));
  so->prices = schd_alloc(oc->a, (bp->n + 1) * sizeof(double));
  for (size_t i = 0; i < bp->n; i++)
    if (bs_get(b->opts, bp->o[i].t)) {
      so->types[k] = bp->o[i].t;
      so->prices[k] = bp->o[i].price;
      k++;
    }
  so->n = k;
  so->next = head;
  schd_map_put(&oc->opts, h, (uint64_t)(uintptr_t)so);
  return so;
}

static void claim_out(struct schd_solver *s, struct out_ctx *oc,
                      const struct schd_bin *b, struct carp_sched_claim *c)
{
  const struct schd_pool *pool = &s->pools[b->pool];
  const uint32_t R = s->R;
  const struct shared_opts *so = options_of(s, oc, b);
  struct carp_sched_quantity *q;
  size_t nq = 0;
  uint64_t v;

  c->nodepool = pool->idx;
  if (!schd_map_get(&oc->reqs, b->rset, &v)) {
    SCHD_GROW(oc->req_sets, oc->nreq_sets, oc->capreq_sets);
    requirements_out(s, oc->a, b->rset, &oc->req_sets[oc->nreq_sets]);
    v = oc->nreq_sets++;
    schd_map_put(&oc->reqs, b->rset, v);
  }
  c->requirements = oc->req_sets[v].requirements;
  c->nrequirements = oc->req_sets[v].nrequirements;
  c->instance_types = so->types;
  c->prices = so->prices;
  c->ninstance_types = so->n;
  c->price = so->n ? so->prices[0] : 0;
  q = schd_alloc(oc->a, (R + 1) * sizeof(*q));
  for (uint32_t r = 0; r < R; r++) {
    int64_t amount =
        b->used[r] + (so->n ? pool->daemon[(size_t)so->types[0] * R + r] : 0);
    if (!amount)
      continue;
    q[nq].name = s->dim_names[r]; /* replaced by a copy below */
    q[nq].milli = amount;
    nq++;
  }
  c->requests = q;
  c->nrequests = nq;
}

/* ---- refusals ---- */

static void refusal_text(struct schd_solver *s, const struct schd_refusal *f,
                         struct carp_buf *b, const char **detail,
                         struct schd_arena *a)
{
  const char *key = f->detail != SCHD_NONE &&
                            f->reason != CARP_SCHED_REASON_RESOURCES &&
                            f->reason != CARP_SCHED_REASON_LIMIT &&
                            f->reason != CARP_SCHED_REASON_HOST_PORT
                        ? s->rc.in.str[f->detail]
                        : NULL;
  const char *dim = NULL;
  char num[32];
  if (f->reason == CARP_SCHED_REASON_RESOURCES ||
      f->reason == CARP_SCHED_REASON_LIMIT)
    dim = f->detail == SCHD_NONE ? NULL
          : f->detail == s->R    ? CARP_RESOURCE_NODES
                                 : s->dim_names[f->detail];
  *detail = NULL;
  switch (f->reason) {
  case CARP_SCHED_REASON_REQUIREMENT:
    if (key)
      carp_buf_printf(b, "incompatible requirements, key \"%s\"", key);
    else
      carp_buf_puts(b, "invalid node selector or affinity");
    *detail = key;
    break;
  case CARP_SCHED_REASON_TAINT: {
    const struct schd_taintset *ts = &s->tsets[f->a];
    const struct carp_sched_taint *t = &ts->t[f->b];
    carp_buf_printf(b, "did not tolerate taint \"%s", t->key ? t->key : "");
    if (t->value && *t->value)
      carp_buf_printf(b, "=%s", t->value);
    carp_buf_printf(b, ":%s\"", effect_name(t->effect));
    *detail = t->key;
    break;
  }
  case CARP_SCHED_REASON_HOST_PORT:
    snprintf(num, sizeof(num), "%u", f->detail);
    carp_buf_printf(b, "host port %s is taken by a DaemonSet pod", num);
    *detail = schd_strdup(a, num);
    break;
  case CARP_SCHED_REASON_LIMIT:
    carp_buf_printf(b, "would exceed the nodepool's %s limit",
                    dim ? dim : "resource");
    *detail = dim;
    break;
  case CARP_SCHED_REASON_RESOURCES:
    if (f->a && dim)
      carp_buf_printf(b,
                      "instance types with enough %s are unavailable (no "
                      "capacity or devices free in the allowed zones)",
                      dim);
    else if (f->a)
      carp_buf_puts(b, "instance types that fit are unavailable (no capacity "
                       "or devices free in the allowed zones)");
    else if (dim)
      carp_buf_printf(b, "no instance type has enough %s", dim);
    else
      carp_buf_puts(b, "no instance type has enough resources for all "
                       "requests at once");
    *detail = dim;
    break;
  case CARP_SCHED_REASON_INSTANCE_TYPE:
    if (f->a)
      carp_buf_puts(b, "the instance types that meet the requirements are "
                       "unavailable (no capacity or devices free in the "
                       "allowed zones)");
    else
      carp_buf_puts(b, "no instance type met the requirements and offerings");
    break;
  case CARP_SCHED_REASON_MIN_VALUES:
    carp_buf_printf(b, "minValues requirement not met for \"%s\"",
                    key ? key : "");
    *detail = key;
    break;
  case CARP_SCHED_REASON_SPREAD:
    carp_buf_printf(b, "unsatisfiable topology spread constraint, key \"%s\"",
                    key ? key : "");
    *detail = key;
    break;
  case CARP_SCHED_REASON_AFFINITY:
    carp_buf_printf(b, "unsatisfiable pod affinity, key \"%s\"",
                    key ? key : "");
    *detail = key;
    break;
  case CARP_SCHED_REASON_ANTI_AFFINITY:
    carp_buf_printf(b, "unsatisfiable pod anti-affinity, key \"%s\"",
                    key ? key : "");
    *detail = key;
    break;
  case CARP_SCHED_REASON_CLAIM_LIMIT:
    carp_buf_puts(b, "no new nodeclaims may be created");
    break;
  default:
    carp_buf_puts(b, "unknown");
  }
}

static void unschedulable_out(struct schd_solver *s, struct schd_arena *a,
                              const struct schd_group *g,
                              struct carp_sched_unschedulable *u)
{
  const struct carp_sched_problem *p = s->p;
  struct carp_buf line, one;
  struct carp_sched_refusal *refs =
      schd_zalloc(a, (s->npools + 1) * sizeof(*refs));
  size_t n = 0;
  carp_buf_init(&line, CARP_BUF_UNLIMITED);
  carp_buf_init(&one, CARP_BUF_UNLIMITED);
  for (uint32_t pi = 0; pi < s->npools; pi++) {
    const char *detail;
    if (!g->ref_set || !g->ref_set[pi])
      continue;
    carp_buf_reset(&one);
    refusal_text(s, &g->ref[pi], &one, &detail, a);
    refs[n].nodepool = s->pools[pi].idx;
    refs[n].reason = (enum carp_sched_reason)g->ref[pi].reason;
    refs[n].detail = detail ? copy(a, detail) : NULL;
    refs[n].message = copy(a, carp_buf_cstr(&one));
    if (line.len)
      carp_buf_puts(&line, "; ");
    carp_buf_printf(&line, "incompatible with nodepool \"%s\", %s",
                    p->nodepools[s->pools[pi].idx].name, carp_buf_cstr(&one));
    n++;
  }
  if (!n)
    carp_buf_puts(&line, s->npools ? "no nodepool could take the pod"
                                   : "no nodepools");
  u->refusals = refs;
  u->nrefusals = n;
  u->message = copy(a, carp_buf_cstr(&line));
  carp_buf_free(&line);
  carp_buf_free(&one);
}

/* The pods' effective zones, each distinct name copied once (zones are
 * few). */
static void copy_zones(const struct schd_solver *s, struct carp_sched_result *r,
                       struct schd_arena *a)
{
  const char *seen[16][2];
  size_t nseen = 0;
  r->effective_zones =
      schd_zalloc(a, (s->p->npods + 1) * sizeof(*r->effective_zones));
  for (size_t i = 0; i < s->p->npods; i++) {
    const char *z = s->ezone ? s->ezone[i] : NULL;
    size_t k;
    if (!z)
      z = "flexible";
    for (k = 0; k < nseen && seen[k][0] != z; k++)
      ;
    if (k < nseen) {
      r->effective_zones[i] = seen[k][1];
      continue;
    }
    r->effective_zones[i] = copy(a, z);
    if (nseen < 16) {
      seen[nseen][0] = z;
      seen[nseen][1] = r->effective_zones[i];
      nseen++;
    }
  }
}

int schd_result_build(struct schd_solver *s, struct carp_sched_result *r)
{
  const struct carp_sched_problem *p = s->p;
  struct schd_arena *a = carp_malloc(sizeof(*a));
  uint32_t *claim_of = carp_calloc(s->nbins + 1, sizeof(uint32_t));
  uint32_t *fill;
  size_t nclaims = 0, nuns = 0;

  schd_arena_init(a);
  r->priv = a;
  r->assignments = schd_zalloc(a, (p->npods + 1) * sizeof(*r->assignments));
  for (uint32_t bi = 0; bi < s->nbins; bi++)
    claim_of[bi] =
        s->bins[bi].kind == BIN_CLAIM ? (uint32_t)nclaims++ : SCHD_NONE;
  copy_zones(s, r, a);
  r->claims = schd_zalloc(a, (nclaims + 1) * sizeof(*r->claims));
  r->nclaims = nclaims;
  for (size_t i = 0; i < p->npods; i++) {
    uint32_t bi = s->assign[i];
    if (bi == SCHD_NONE) {
      nuns++;
      continue;
    }
    if (s->bins[bi].kind == BIN_CLAIM) {
      r->assignments[i].target = CARP_SCHED_ON_CLAIM;
      r->assignments[i].index = claim_of[bi];
      r->claims[claim_of[bi]].npods++;
    } else {
      r->assignments[i].target = CARP_SCHED_ON_NODE;
      r->assignments[i].index = s->bins[bi].node;
    }
    r->nscheduled++;
  }
  fill = carp_calloc(nclaims + 1, sizeof(uint32_t));
  for (size_t c = 0; c < nclaims; c++)
    r->claims[c].pods =
        schd_alloc(a, (r->claims[c].npods + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < p->npods; i++)
    if (r->assignments[i].target == CARP_SCHED_ON_CLAIM) {
      uint32_t c = r->assignments[i].index;
      ((uint32_t *)r->claims[c].pods)[fill[c]++] = (uint32_t)i;
    }
  carp_free(fill);
  r->price = 0;
  {
    struct out_ctx oc;
    const char **names = schd_alloc(a, (s->R + 1) * sizeof(*names));
    memset(&oc, 0, sizeof(oc));
    oc.a = a;
    schd_map_init(&oc.reqs);
    schd_map_init(&oc.opts);
    schd_map_init(&oc.sorted);
    for (uint32_t d = 0; d < s->R; d++)
      names[d] = copy(a, s->dim_names[d]);
    for (uint32_t bi = 0; bi < s->nbins; bi++) {
      struct carp_sched_claim *c;
      if (claim_of[bi] == SCHD_NONE)
        continue;
      c = &r->claims[claim_of[bi]];
      claim_out(s, &oc, &s->bins[bi], c);
      for (size_t k = 0; k < c->nrequests; k++)
        ((struct carp_sched_quantity *)c->requests)[k].name =
            names[schd_dim(s, c->requests[k].name)];
      r->price += c->price;
    }
    schd_map_free(&oc.reqs);
    schd_map_free(&oc.opts);
    schd_map_free(&oc.sorted);
    carp_free(oc.req_sets);
  }
  carp_free(claim_of);
  r->unschedulable = schd_zalloc(a, (nuns + 1) * sizeof(*r->unschedulable));
  for (size_t i = 0; i < p->npods; i++) {
    struct carp_sched_unschedulable *u;
    if (s->assign[i] != SCHD_NONE)
      continue;
    u = &r->unschedulable[r->nunschedulable++];
    u->pod = (uint32_t)i;
    unschedulable_out(s, a, &s->groups[s->pod_group[i]], u);
  }
  return 0;
}

void carp_sched_result_free(struct carp_sched_result *r)
{
  if (!r)
    return;
  if (r->priv) {
    schd_arena_free(r->priv);
    carp_free(r->priv);
  }
  carp_free(r);
}
