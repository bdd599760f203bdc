/* requirements.c: the requirements algebra over label keys.
 *
 * A requirement says which states a label may be in: one of some values,
 * anything but some values, an integer in a range, or absent. Karpenter
 * keeps In/NotIn/Exists/DoesNotExist/Gt/Lt as "a value set or its
 * complement plus integer bounds" and special-cases absence in
 * Compatible(); here absence is a flag of its own (missing), which makes
 * intersection exact: NotIn [a] ∩ Exists is "present and not a", Gt 5 ∩ Lt 3
 * admits nothing (Karpenter turns it into DoesNotExist, which a node without
 * the label would satisfy), Gt on a non-integer value never matches.
 *
 * Sets of requirements are interned: equal sets get the same id, and the
 * operation the solve repeats most, "Compatible(node, pod) then node ∩ pod",
 * is memoised on the pair of ids. The public carp_sched_reqs_* functions at
 * the end wrap the same code for callers outside a solve and for tests. */
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "schd_int.h"

#define FAIL_BIT ((uint64_t)1 << 63)

/* ---- single requirements ---- */

static int val_cmp(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static int in_vals(const struct schd_req *r, uint32_t v)
{
  uint32_t lo = 0, hi = r->nvals;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (r->vals[mid] == v)
      return 1;
    if (r->vals[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* Does a complement requirement admit value v (present)? */
static int comp_allows(const struct schd_rctx *c, const struct schd_req *r,
                       uint32_t v)
{
  if (in_vals(r, v))
    return 0;
  if (r->has_gt || r->has_lt) {
    int64_t iv;
    if (!(c->in.flags[v] & SCHD_STR_INT))
      return 0;
    iv = c->in.ival[v];
    if (r->has_gt && !(iv > r->gt))
      return 0;
    if (r->has_lt && !(iv < r->lt))
      return 0;
  }
  return 1;
}

int schd_req_allows(const struct schd_rctx *c, const struct schd_req *r,
                    uint32_t value)
{
  if (value == SCHD_NONE)
    return r->missing;
  if (r->complement)
    return comp_allows(c, r, value);
  return in_vals(r, value);
}

int schd_req_empty(const struct schd_req *r)
{
  return !r->complement && r->nvals == 0 && !r->missing;
}

/* Canonical form: bounds only on complements, an empty integer interval
 * becomes an empty value set, and excluded values outside the bounds are
 * dropped (the bounds exclude them already). */
static void normalize(struct schd_rctx *c, struct schd_req *r)
{
  if (!r->complement) {
    r->has_gt = r->has_lt = 0;
    r->gt = r->lt = 0;
    return;
  }
  if (r->has_gt && r->has_lt && (__int128)r->lt - (__int128)r->gt <= 1) {
    r->complement = 0;
    r->nvals = 0;
    r->vals = NULL;
    r->has_gt = r->has_lt = 0;
    r->gt = r->lt = 0;
    return;
  }
  if ((r->has_gt || r->has_lt) && r->nvals) {
    uint32_t *v = schd_alloc(&c->arena, r->nvals * sizeof(uint32_t));
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nvals; i++) {
      uint32_t x = r->vals[i];
      int64_t iv;
      if (!(c->in.flags[x] & SCHD_STR_INT))
        continue;
      iv = c->in.ival[x];
      if (r->has_gt && !(iv > r->gt))
        continue;
      if (r->has_lt && !(iv < r->lt))
        continue;
      v[n++] = x;
    }
    r->vals = v;
    r->nvals = n;
  }
  if (!r->has_gt)
    r->gt = 0;
  if (!r->has_lt)
    r->lt = 0;
}

void schd_req_intersect(struct schd_rctx *c, const struct schd_req *a,
                        const struct schd_req *b, struct schd_req *out)
{
  struct schd_req o;
  uint32_t *v, n = 0, i = 0, j = 0;
  memset(&o, 0, sizeof(o));
  o.key = a->key;
  o.missing = a->missing && b->missing;
  o.min_values = a->min_values > b->min_values ? a->min_values : b->min_values;
  if (a->complement && b->complement) {
    o.complement = 1;
    v = schd_alloc(&c->arena, (a->nvals + b->nvals + 1) * sizeof(uint32_t));
    while (i < a->nvals || j < b->nvals) {
      if (j >= b->nvals || (i < a->nvals && a->vals[i] < b->vals[j]))
        v[n++] = a->vals[i++];
      else if (i >= a->nvals || b->vals[j] < a->vals[i])
        v[n++] = b->vals[j++];
      else {
        v[n++] = a->vals[i++];
        j++;
      }
    }
    o.has_gt = a->has_gt || b->has_gt;
    o.gt = !a->has_gt      ? b->gt
           : !b->has_gt    ? a->gt
           : a->gt > b->gt ? a->gt
                           : b->gt;
    o.has_lt = a->has_lt || b->has_lt;
    o.lt = !a->has_lt      ? b->lt
           : !b->has_lt    ? a->lt
           : a->lt < b->lt ? a->lt
                           : b->lt;
  } else if (a->complement || b->complement) {
    const struct schd_req *cm = a->complement ? a : b;
    const struct schd_req *pl = a->complement ? b : a;
    v = schd_alloc(&c->arena, (pl->nvals + 1) * sizeof(uint32_t));
    for (i = 0; i < pl->nvals; i++)
      if (comp_allows(c, cm, pl->vals[i]))
        v[n++] = pl->vals[i];
  } else {
    v = schd_alloc(&c->arena,
                   ((a->nvals < b->nvals ? a->nvals : b->nvals) + 1) *
                       sizeof(uint32_t));
    while (i < a->nvals && j < b->nvals) {
      if (a->vals[i] == b->vals[j]) {
        v[n++] = a->vals[i];
        i++;
        j++;
      } else if (a->vals[i] < b->vals[j])
        i++;
      else
        j++;
    }
  }
  o.vals = v;
  o.nvals = n;
  normalize(c, &o);
  *out = o;
}

static int req_equal(const struct schd_req *a, const struct schd_req *b)
{
  return a->key == b->key && a->nvals == b->nvals &&
         a->complement == b->complement && a->missing == b->missing &&
         a->has_gt == b->has_gt && a->has_lt == b->has_lt && a->gt == b->gt &&
         a->lt == b->lt && a->min_values == b->min_values &&
         (a->nvals == 0 ||
          memcmp(a->vals, b->vals, a->nvals * sizeof(uint32_t)) == 0);
}

/* ---- builders and interning ---- */

void schd_rbuild_init(struct schd_rbuild *b)
{
  memset(b, 0, sizeof(*b));
}

void schd_rbuild_free(struct schd_rbuild *b)
{
  carp_free(b->r);
  memset(b, 0, sizeof(*b));
}

void schd_rbuild_reset(struct schd_rbuild *b)
{
  b->n = 0;
}

void schd_rbuild_req(struct schd_rctx *c, struct schd_rbuild *b,
                     const struct schd_req *r)
{
  uint32_t lo = 0, hi = b->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (b->r[mid].key == r->key) {
      struct schd_req out;
      schd_req_intersect(c, &b->r[mid], r, &out);
      b->r[mid] = out;
      return;
    }
    if (b->r[mid].key < r->key)
      lo = mid + 1;
    else
      hi = mid;
  }
  SCHD_GROW(b->r, b->n, b->cap);
  memmove(&b->r[lo + 1], &b->r[lo], (b->n - lo) * sizeof(*b->r));
  b->r[lo] = *r;
  b->n++;
}

void schd_rbuild_label(struct schd_rctx *c, struct schd_rbuild *b, uint32_t key,
                       uint32_t value)
{
  struct schd_req r;
  uint32_t *v = schd_alloc(&c->arena, sizeof(uint32_t));
  memset(&r, 0, sizeof(r));
  *v = value;
  r.key = key;
  r.vals = v;
  r.nvals = 1;
  schd_rbuild_req(c, b, &r);
}

void schd_rbuild_set(struct schd_rctx *c, struct schd_rbuild *b, uint32_t set)
{
  const struct schd_rset *s = c->sets[set];
  for (uint32_t i = 0; i < s->n; i++)
    schd_rbuild_req(c, b, &s->reqs[i]);
}

int schd_rbuild_public(struct schd_rctx *c, struct schd_rbuild *b,
                       const struct carp_sched_requirement *req)
{
  struct schd_req r;
  uint32_t *v = NULL, n = 0;
  int64_t bound = 0;
  int is_int = 0;
  if (!req || !req->key || (req->nvalues && !req->values))
    return CARP_EINVAL;
  memset(&r, 0, sizeof(r));
  r.key = schd_intern(&c->in, req->key);
  r.min_values = req->min_values > 0 ? req->min_values : 0;
  switch (req->op) {
  case CARP_SCHED_OP_IN:
  case CARP_SCHED_OP_NOT_IN:
    v = schd_alloc(&c->arena, (req->nvalues + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < req->nvalues; i++)
      v[n++] = schd_intern(&c->in, req->values[i]);
    qsort(v, n, sizeof(uint32_t), val_cmp);
    {
      uint32_t m = 0;
      for (uint32_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
          v[m++] = v[i];
      n = m;
    }
    r.vals = v;
    r.nvals = n;
    r.complement = req->op == CARP_SCHED_OP_NOT_IN;
    r.missing = req->op == CARP_SCHED_OP_NOT_IN;
    break;
  case CARP_SCHED_OP_EXISTS:
    r.complement = 1;
    break;
  case CARP_SCHED_OP_DOES_NOT_EXIST:
    r.missing = 1;
    break;
  case CARP_SCHED_OP_GT:
  case CARP_SCHED_OP_LT:
  case CARP_SCHED_OP_GTE:
  case CARP_SCHED_OP_LTE:
    if (req->nvalues != 1)
      return CARP_EINVAL;
    is_int = schd_parse_int(req->values[0], &bound) == 0;
    if (!is_int)
      break; /* a bound that is not an integer admits nothing */
    r.complement = 1;
    if (req->op == CARP_SCHED_OP_GT) {
      r.has_gt = 1;
      r.gt = bound;
    } else if (req->op == CARP_SCHED_OP_GTE) {
      if (bound != INT64_MIN) {
        r.has_gt = 1;
        r.gt = bound - 1;
      }
    } else if (req->op == CARP_SCHED_OP_LT) {
      r.has_lt = 1;
      r.lt = bound;
    } else if (bound != INT64_MAX) {
      r.has_lt = 1;
      r.lt = bound + 1;
    }
    break;
  default:
    return CARP_EINVAL;
  }
  normalize(c, &r);
  schd_rbuild_req(c, b, &r);
  return 0;
}

static uint64_t req_hash(uint64_t h, const struct schd_req *r)
{
  h = schd_mix(h, ((uint64_t)r->key << 32) | r->nvals);
  h = schd_mix(h, (uint64_t)r->complement | (uint64_t)r->missing << 8 |
                      (uint64_t)r->has_gt << 16 | (uint64_t)r->has_lt << 24 |
                      (uint64_t)(uint32_t)r->min_values << 32);
  if (r->has_gt)
    h = schd_mix(h, (uint64_t)r->gt);
  if (r->has_lt)
    h = schd_mix(h, (uint64_t)r->lt ^ 0x1234);
  for (uint32_t i = 0; i < r->nvals; i++)
    h = schd_mix(h, r->vals[i]);
  return h;
}

static uint32_t intern_reqs(struct schd_rctx *c, const struct schd_req *reqs,
                            uint32_t n)
{
  uint64_t h = 0x243f6a8885a308d3ull, first;
  uint32_t id;
  struct schd_rset *s;
  struct schd_req *copy;
  for (uint32_t i = 0; i < n; i++)
    h = req_hash(h, &reqs[i]);
  if (schd_map_get(&c->byhash, h, &first)) {
    for (id = (uint32_t)first; id != SCHD_NONE; id = c->chain[id]) {
      const struct schd_rset *o = c->sets[id];
      uint32_t i;
      if (o->n != n)
        continue;
      for (i = 0; i < n; i++)
        if (!req_equal(&o->reqs[i], &reqs[i]))
          break;
      if (i == n)
        return id;
    }
  }
  if (c->nsets == c->capsets) {
    c->capsets = c->capsets ? c->capsets * 2 : 64;
    c->sets = carp_reallocarray(c->sets, c->capsets, sizeof(*c->sets));
    c->chain = carp_reallocarray(c->chain, c->capsets, sizeof(*c->chain));
  }
  id = c->nsets++;
  s = schd_alloc(&c->arena, sizeof(*s));
  copy = schd_memdup(&c->arena, reqs, n * sizeof(*reqs));
  s->hash = h;
  s->n = n;
  s->reqs = copy;
  s->has_min_values = 0;
  for (uint32_t i = 0; i < n; i++)
    if (copy[i].min_values > 0)
      s->has_min_values = 1;
  c->sets[id] = s;
  c->chain[id] =
      schd_map_get(&c->byhash, h, &first) ? (uint32_t)first : SCHD_NONE;
  schd_map_put(&c->byhash, h, id);
  return id;
}

uint32_t schd_rbuild_intern(struct schd_rctx *c, struct schd_rbuild *b)
{
  return intern_reqs(c, b->r, b->n);
}

void schd_rctx_init(struct schd_rctx *c)
{
  memset(c, 0, sizeof(*c));
  schd_intern_init(&c->in);
  schd_arena_init(&c->arena);
  schd_map_init(&c->byhash);
  schd_map_init(&c->memo);
  schd_map_init(&c->memo_ix);
  schd_rbuild_init(&c->tmp);
  intern_reqs(c, NULL, 0); /* id 0: no requirement */
  c->k_hostname = schd_intern(&c->in, CARP_LABEL_HOSTNAME);
  c->k_zone = schd_intern(&c->in, CARP_LABEL_ZONE);
  c->k_ct = schd_intern(&c->in, CARP_LABEL_CAPACITY_TYPE);
  c->k_itype = schd_intern(&c->in, CARP_LABEL_INSTANCE_TYPE);
  c->k_nodepool = schd_intern(&c->in, CARP_LABEL_NODEPOOL);
  c->k_cpu = schd_intern(&c->in, CARP_LABEL_INSTANCE_CPU);
  c->k_mem = schd_intern(&c->in, CARP_LABEL_INSTANCE_MEMORY);
  /* Not a valid label value, so no pod can select it by name. */
  c->v_new_host = schd_intern(&c->in, "<new node>");
}

void schd_rctx_free(struct schd_rctx *c)
{
  schd_intern_free(&c->in);
  schd_arena_free(&c->arena);
  schd_map_free(&c->byhash);
  schd_map_free(&c->memo);
  schd_map_free(&c->memo_ix);
  schd_rbuild_free(&c->tmp);
  carp_free(c->sets);
  carp_free(c->chain);
  carp_free(c->vtmp);
  memset(c, 0, sizeof(*c));
}

/* ---- set operations ---- */

const struct schd_req *schd_rset_get(const struct schd_rset *s, uint32_t key)
{
  uint32_t lo = 0, hi = s->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (s->reqs[mid].key == key)
      return &s->reqs[mid];
    if (s->reqs[mid].key < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* Do a and b (same key) share a state? Without allocating. */
static int req_meets(const struct schd_rctx *c, const struct schd_req *a,
                     const struct schd_req *b)
{
  if (a->missing && b->missing)
    return 1;
  if (a->complement && b->complement) {
    __int128 lo, hi;
    /* Both admit infinitely many strings unless the integer range
     * they share is empty. */
    if (!(a->has_gt || a->has_lt || b->has_gt || b->has_lt))
      return 1;
    lo = a->has_gt ? a->gt : INT64_MIN;
    if (b->has_gt && b->gt > lo)
      lo = b->gt;
    hi = a->has_lt ? a->lt : (__int128)INT64_MAX + 1;
    if (b->has_lt && b->lt < hi)
      hi = b->lt;
    return hi - lo > 1;
  }
  if (a->complement || b->complement) {
    const struct schd_req *cm = a->complement ? a : b;
    const struct schd_req *pl = a->complement ? b : a;
    for (uint32_t i = 0; i < pl->nvals; i++)
      if (comp_allows(c, cm, pl->vals[i]))
        return 1;
    return 0;
  }
  {
    uint32_t i = 0, j = 0;
    while (i < a->nvals && j < b->nvals) {
      if (a->vals[i] == b->vals[j])
        return 1;
      if (a->vals[i] < b->vals[j])
        i++;
      else
        j++;
    }
  }
  return 0;
}

int schd_rset_compatible(const struct schd_rctx *c, uint32_t node, uint32_t pod,
                         int lenient, uint32_t *badkey)
{
  const struct schd_rset *n = c->sets[node], *p = c->sets[pod];
  uint32_t i = 0, j = 0;
  for (j = 0; j < p->n; j++) {
    const struct schd_req *pr = &p->reqs[j];
    while (i < n->n && n->reqs[i].key < pr->key)
      i++;
    if (i < n->n && n->reqs[i].key == pr->key) {
      if (!req_meets(c, &n->reqs[i], pr))
        goto fail;
    } else if (!pr->missing &&
               !(lenient && (c->in.flags[pr->key] & SCHD_STR_WELL_KNOWN))) {
      goto fail;
    }
    continue;
  fail:
    if (badkey)
      *badkey = pr->key;
    return 0;
  }
  return 1;
}

int schd_rset_intersects(const struct schd_rctx *c, uint32_t a, uint32_t b,
                         uint32_t *badkey)
{
  return schd_rset_intersects_but(c, a, b, SCHD_NONE, SCHD_NONE, badkey);
}

int schd_rset_intersects_but(const struct schd_rctx *c, uint32_t a, uint32_t b,
                             uint32_t skip1, uint32_t skip2, uint32_t *badkey)
{
  const struct schd_rset *x = c->sets[a], *y = c->sets[b];
  uint32_t i = 0, j = 0;
  while (i < x->n && j < y->n) {
    if (x->reqs[i].key == y->reqs[j].key) {
      if (x->reqs[i].key != skip1 && x->reqs[i].key != skip2 &&
          !req_meets(c, &x->reqs[i], &y->reqs[j])) {
        if (badkey)
          *badkey = x->reqs[i].key;
        return 0;
      }
      i++;
      j++;
    } else if (x->reqs[i].key < y->reqs[j].key)
      i++;
    else
      j++;
  }
  return 1;
}

uint32_t schd_rset_intersect(struct schd_rctx *c, uint32_t a, uint32_t b)
{
  uint64_t key, v;
  uint32_t id;
  if (a == b || b == 0)
    return a;
  if (a == 0)
    return b;
  key = ((uint64_t)a << 32) | b;
  if (schd_map_get(&c->memo_ix, key, &v))
    return (uint32_t)v;
  schd_rbuild_reset(&c->tmp);
  schd_rbuild_set(c, &c->tmp, a);
  schd_rbuild_set(c, &c->tmp, b);
  id = schd_rbuild_intern(c, &c->tmp);
  schd_map_put(&c->memo_ix, key, id);
  return id;
}

uint32_t schd_rset_add(struct schd_rctx *c, uint32_t node, uint32_t pod,
                       int lenient, uint32_t *badkey)
{
  uint64_t key = (((uint64_t)node << 32) | pod), v;
  uint32_t bad = SCHD_NONE, id;
  struct schd_map *m = &c->memo;
  if (pod == 0)
    return node;
  /* Separate halves of one map for the two modes. */
  key = lenient ? key : (key ^ ((uint64_t)1 << 63));
  if (schd_map_get(m, key, &v)) {
    if (v & FAIL_BIT) {
      if (badkey)
        *badkey = (uint32_t)v;
      return SCHD_NONE;
    }
    return (uint32_t)v;
  }
  if (!schd_rset_compatible(c, node, pod, lenient, &bad)) {
    schd_map_put(m, key, FAIL_BIT | bad);
    if (badkey)
      *badkey = bad;
    return SCHD_NONE;
  }
  id = schd_rset_intersect(c, node, pod);
  schd_map_put(m, key, id);
  return id;
}

int schd_rset_empty(const struct schd_rctx *c, uint32_t id)
{
  const struct schd_rset *s = c->sets[id];
  for (uint32_t i = 0; i < s->n; i++)
    if (schd_req_empty(&s->reqs[i]))
      return 1;
  return 0;
}

/* ---- text ---- */

static int str_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void put_values(const struct schd_rctx *c, const struct schd_req *r,
                       struct carp_buf *b)
{
  const char **v = carp_calloc(r->nvals + 1, sizeof(*v));
  for (uint32_t i = 0; i < r->nvals; i++)
    v[i] = c->in.str[r->vals[i]];
  qsort(v, r->nvals, sizeof(*v), str_cmp);
  carp_buf_putc(b, '[');
  for (uint32_t i = 0; i < r->nvals; i++) {
    if (i)
      carp_buf_putc(b, ' ');
    carp_buf_puts(b, v[i]);
  }
  carp_buf_putc(b, ']');
  carp_free(v);
}

void schd_req_format(const struct schd_rctx *c, const struct schd_req *r,
                     struct carp_buf *b)
{
  carp_buf_puts(b, c->in.str[r->key]);
  if (!r->complement) {
    if (r->nvals == 0) {
      carp_buf_puts(b, r->missing ? " DoesNotExist" : " In []");
    } else {
      carp_buf_puts(b, " In ");
      put_values(c, r, b);
      if (r->missing)
        carp_buf_puts(b, " OrAbsent");
    }
  } else {
    int any = 0;
    if (!r->missing && !r->has_gt && !r->has_lt) {
      carp_buf_puts(b, " Exists");
      any = 1;
    }
    if (r->nvals) {
      carp_buf_puts(b, " NotIn ");
      put_values(c, r, b);
      any = 1;
    }
    if (r->has_gt) {
      carp_buf_printf(b, " Gt %lld", (long long)r->gt);
      any = 1;
    }
    if (r->has_lt) {
      carp_buf_printf(b, " Lt %lld", (long long)r->lt);
      any = 1;
    }
    if (!any)
      carp_buf_puts(b, " Any");
  }
  if (r->min_values > 0)
    carp_buf_printf(b, " minValues %d", (int)r->min_values);
}

/* ---- the public wrapper ---- */

struct carp_sched_reqs {
  struct schd_rctx c;
  uint32_t set;
};

struct carp_sched_reqs *carp_sched_reqs_new(void)
{
  struct carp_sched_reqs *r = CARP_NEW(struct carp_sched_reqs);
  schd_rctx_init(&r->c);
  r->set = 0;
  return r;
}

void carp_sched_reqs_free(struct carp_sched_reqs *r)
{
  if (!r)
    return;
  schd_rctx_free(&r->c);
  carp_free(r);
}

/* Copies a requirement's strings into r's arena: the intern table borrows
 * them for as long as r lives. */
static int add_copy(struct carp_sched_reqs *r,
                    const struct carp_sched_requirement *req)
{
  struct carp_sched_requirement q = *req;
  const char **vals = NULL;
  int rc;
  if (!req->key || (req->nvalues && !req->values))
    return CARP_EINVAL;
  q.key = schd_strdup(&r->c.arena, req->key);
  if (req->nvalues) {
    vals = schd_alloc(&r->c.arena, req->nvalues * sizeof(*vals));
    for (size_t i = 0; i < req->nvalues; i++)
      vals[i] = schd_strdup(&r->c.arena, req->values[i]);
  }
  q.values = vals;
  schd_rbuild_reset(&r->c.tmp);
  schd_rbuild_set(&r->c, &r->c.tmp, r->set);
  rc = schd_rbuild_public(&r->c, &r->c.tmp, &q);
  if (rc < 0)
    return rc;
  r->set = schd_rbuild_intern(&r->c, &r->c.tmp);
  return 0;
}

int carp_sched_reqs_add(struct carp_sched_reqs *r,
                        const struct carp_sched_requirement *req)
{
  if (!r || !req)
    return CARP_EINVAL;
  return add_copy(r, req);
}

int carp_sched_reqs_add_labels(struct carp_sched_reqs *r,
                               const struct carp_sched_label *labels,
                               size_t nlabels)
{
  for (size_t i = 0; i < nlabels; i++) {
    const char *v = labels[i].value ? labels[i].value : "";
    struct carp_sched_requirement q = {labels[i].key, CARP_SCHED_OP_IN, &v, 1,
                                       0};
    int rc = carp_sched_reqs_add(r, &q);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* The set of src, re-interned in dst's context. */
static uint32_t import_set(struct carp_sched_reqs *dst,
                           const struct carp_sched_reqs *src)
{
  const struct schd_rset *s;
  struct schd_rbuild b;
  uint32_t id;
  if (dst == src)
    return src->set;
  s = src->c.sets[src->set];
  schd_rbuild_init(&b);
  for (uint32_t i = 0; i < s->n; i++) {
    struct schd_req q = s->reqs[i];
    uint32_t *v = schd_alloc(&dst->c.arena, (q.nvals + 1) * sizeof(uint32_t));
    q.key = schd_intern(&dst->c.in,
                        schd_strdup(&dst->c.arena, src->c.in.str[q.key]));
    for (uint32_t k = 0; k < q.nvals; k++)
      v[k] = schd_intern(&dst->c.in,
                         schd_strdup(&dst->c.arena, src->c.in.str[q.vals[k]]));
    qsort(v, q.nvals, sizeof(uint32_t), val_cmp);
    q.vals = v;
    schd_rbuild_req(&dst->c, &b, &q);
  }
  id = schd_rbuild_intern(&dst->c, &b);
  schd_rbuild_free(&b);
  return id;
}

int carp_sched_reqs_intersect(struct carp_sched_reqs *dst,
                              const struct carp_sched_reqs *src)
{
  uint32_t other;
  if (!dst || !src)
    return CARP_EINVAL;
  other = import_set(dst, src);
  dst->set = schd_rset_intersect(&dst->c, dst->set, other);
  return 0;
}

int carp_sched_reqs_compatible(const struct carp_sched_reqs *node,
                               const struct carp_sched_reqs *pod,
                               unsigned flags, const char **bad_key)
{
  struct carp_sched_reqs *n = (struct carp_sched_reqs *)node;
  uint32_t other = import_set(n, pod), bad = SCHD_NONE;
  int ok = schd_rset_compatible(
      &n->c, n->set, other,
      (flags & CARP_SCHED_ALLOW_UNDEFINED_WELL_KNOWN) != 0, &bad);
  if (!ok && bad_key)
    *bad_key = n->c.in.str[bad];
  return ok;
}

int carp_sched_reqs_intersects(const struct carp_sched_reqs *a,
                               const struct carp_sched_reqs *b,
                               const char **bad_key)
{
  struct carp_sched_reqs *x = (struct carp_sched_reqs *)a;
  uint32_t other = import_set(x, b), bad = SCHD_NONE;
  int ok = schd_rset_intersects(&x->c, x->set, other, &bad);
  if (!ok && bad_key)
    *bad_key = x->c.in.str[bad];
  return ok;
}

int carp_sched_reqs_allows(const struct carp_sched_reqs *r, const char *key,
                           const char *value)
{
  uint32_t k, v;
  const struct schd_req *q;
  if (!r || !key)
    return 0;
  k = schd_intern_find(&r->c.in, key);
  if (k == SCHD_NONE)
    return 1;
  q = schd_rset_get(r->c.sets[r->set], k);
  if (!q)
    return 1;
  if (!value)
    return q->missing;
  v = schd_intern_find(&r->c.in, value);
  if (v == SCHD_NONE) {
    /* A value never seen: allowed only by a complement, bounds permitting. */
    int64_t iv;
    if (!q->complement)
      return 0;
    if (!q->has_gt && !q->has_lt)
      return 1;
    if (schd_parse_int(value, &iv) != 0)
      return 0;
    return (!q->has_gt || iv > q->gt) && (!q->has_lt || iv < q->lt);
  }
  return schd_req_allows(&r->c, q, v);
}

int carp_sched_reqs_matches(const struct carp_sched_reqs *r,
                            const struct carp_sched_label *labels,
                            size_t nlabels)
{
  const struct schd_rset *s;
  if (!r)
    return 0;
  s = r->c.sets[r->set];
  for (uint32_t i = 0; i < s->n; i++) {
    const char *key = r->c.in.str[s->reqs[i].key], *value = NULL;
    for (size_t k = 0; k < nlabels; k++)
      if (labels[k].key && strcmp(labels[k].key, key) == 0) {
        value = labels[k].value ? labels[k].value : "";
        break;
      }
    if (!carp_sched_reqs_allows(r, key, value))
      return 0;
  }
  return 1;
}

int carp_sched_reqs_empty(const struct carp_sched_reqs *r)
{
  return r ? schd_rset_empty(&r->c, r->set) : 1;
}

size_t carp_sched_reqs_len(const struct carp_sched_reqs *r)
{
  return r ? r->c.sets[r->set]->n : 0;
}

static int req_name_cmp(const void *a, const void *b, void *arg)
{
  const struct schd_rctx *c = arg;
  const struct schd_req *x = *(const struct schd_req *const *)a;
  const struct schd_req *y = *(const struct schd_req *const *)b;
  return strcmp(c->in.str[x->key], c->in.str[y->key]);
}

size_t carp_sched_reqs_format(const struct carp_sched_reqs *r, char *buf,
                              size_t cap)
{
  struct carp_buf b;
  const struct schd_rset *s;
  const struct schd_req **order;
  size_t len;
  if (!r)
    return 0;
  s = r->c.sets[r->set];
  order = carp_calloc(s->n + 1, sizeof(*order));
  for (uint32_t i = 0; i < s->n; i++)
    order[i] = &s->reqs[i];
  qsort_r(order, s->n, sizeof(*order), req_name_cmp, (void *)&r->c);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  for (uint32_t i = 0; i < s->n; i++) {
    if (i)
      carp_buf_puts(&b, ", ");
    schd_req_format(&r->c, order[i], &b);
  }
  len = b.len;
  if (cap) {
    size_t n = len < cap - 1 ? len : cap - 1;
    memcpy(buf, carp_buf_cstr(&b), n);
    buf[n] = '\0';
  }
  carp_buf_free(&b);
  carp_free(order);
  return len;
}

int carp_sched_int_matches(enum carp_sched_op op, const char *bound,
                           const char *value)
{
  int64_t b, v;
  if (!bound || !value || schd_parse_int(bound, &b) != 0 ||
      schd_parse_int(value, &v) != 0)
    return 0;
  switch (op) {
  case CARP_SCHED_OP_GT:
    return v > b;
  case CARP_SCHED_OP_LT:
    return v < b;
  case CARP_SCHED_OP_GTE:
    return v >= b;
  case CARP_SCHED_OP_LTE:
    return v <= b;
  default:
    return 0;
  }
}
