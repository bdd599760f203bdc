/* pack.c: packing the pods nothing constrains.
 *
 * A group is free when it has no topology rule of its own, no host port,
 * no other pod's anti-affinity selects it and no pod-affinity selector
 * matches it: where its pods go changes nothing for any other pod except
 * the capacity they use and counts nobody reads any more. Those groups are
 * placed after all the others (a valid order: each earlier placement was
 * checked against the counts it saw), and packed for price rather than in
 * size order. With prices linear in vCPU and memory, what costs is
 * fragmentation (a node full of CPU-heavy pods wastes its memory) and
 * paying for room nobody uses, not node size. So:
 *
 *   1. every bin is first filled "for free": an existing node up to its
 *      allocatable, a claim up to its cheapest option's capacity (the
 *      rounding slack its price already pays for);
 *   2. claims then grow, each towards its largest option;
 *   3. new claims open one at a time, each grown towards its largest option.
 *
 * A growing claim first takes the same fraction of every pending group
 * (so its CPU:memory ratio is the batch's, not whatever the biggest pods
 * happen to be), then tops up pod by pod with the group whose request best
 * matches the room left (dot product, each dimension scaled by the target
 * capacity). Groups that differ only in labels form one class here. Ratios
 * only choose; every fit is still checked in integers by schd_try_place(). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "schd_int.h"

enum { FILL_FREE = 0, FILL_GROW };

struct pclass {
  uint32_t *mem; /* member groups, in queue order */
  uint32_t nmem, cur;
  const int64_t *req;
  int64_t remaining;
  uint64_t *rej; /* bins that can never take the class */
};

struct packer {
  struct schd_solver *s;
  struct pclass *cls;
  uint32_t ncls;
  uint32_t *cand;
  struct schd_map compat; /* (rset, taintset) -> per-class byte */
  int64_t *minreq;        /* smallest pending request per dimension */
  int64_t left;           /* pods still pending, all classes */
  double *Dall;           /* pending demand of every class */
  uint32_t **rank;        /* per pool: types by value for Dall */
  uint32_t *rank_stamp;   /* per pool: stamp the rank was made at */
  uint32_t stamp;
  double *D;
};

static struct schd_group *leader(struct packer *P, struct pclass *c)
{
  while (c->cur < c->nmem) {
    struct schd_group *g = &P->s->groups[c->mem[c->cur]];
    if (g->next < g->npods)
      return g;
    c->cur++;
  }
  return NULL;
}

static const uint8_t *compat_of(struct packer *P, const struct schd_bin *b)
{
  struct schd_solver *s = P->s;
  uint64_t key = ((uint64_t)b->rset << 32) | b->taintset, v;
  uint8_t *ok;
  if (schd_map_get(&P->compat, key, &v))
    return (const uint8_t *)(uintptr_t)v;
  ok = schd_zalloc(&s->arena, P->ncls + 1);
  for (uint32_t i = 0; i < P->ncls; i++) {
    struct schd_group *g = leader(P, &P->cls[i]);
    if (!g || g->bad)
      continue;
    ok[i] = schd_group_tolerates(s, g, b->taintset, NULL) &&
            schd_rset_add(&s->rc, b->rset, g->rset, b->kind == BIN_CLAIM,
                          NULL) != SCHD_NONE;
  }
  schd_map_put(&P->compat, key, (uint64_t)(uintptr_t)ok);
  return ok;
}

/* How many pods of g may still join bin bi without pushing a hostname
 * spread that counts them above maxSkew on a bin hosting one of its owners:
 * the plan then holds whatever order the kube-scheduler binds pods in. */
static int64_t spread_room(struct schd_solver *s, const struct schd_group *g,
                           uint32_t bi)
{
  int64_t room = INT64_MAX;
  for (uint32_t i = 0; i < g->nsel_by; i++) {
    const struct schd_tg *t = &s->tgs[g->sel_by[i]];
    int64_t r;
    if (t->type != TG_SPREAD || !t->hostname || !bs_get(t->owned, bi))
      continue;
    r = (int64_t)t->max_skew - t->cnt[bi];
    if (r < room)
      room = r > 0 ? r : 0;
  }
  return room;
}

/* Places up to k pods of class c on bin bi; returns how many. Members
 * differ only in labels, so a refusal for one (capacity, requirements) is a
 * refusal for all; only the room left by hostname spreads differs. */
static int64_t place_class(struct packer *P, struct pclass *c, uint32_t bi,
                           int64_t k)
{
  struct schd_solver *s = P->s;
  int64_t placed = 0;
  struct schd_fail f;
  for (uint32_t m = c->cur; m < c->nmem && k > 0; m++) {
    struct schd_group *g = &s->groups[c->mem[m]];
    int64_t room;
    uint32_t kk, n;
    if (g->next >= g->npods)
      continue;
    room = g->nsel_by ? spread_room(s, g, bi) : INT64_MAX;
    if (room <= 0)
      continue;
    if (room > k)
      room = k;
    kk = (uint32_t)(room < g->npods - g->next ? room : g->npods - g->next);
    n = schd_try_place(s, g, bi, kk, &f);
    if (!n) {
      if (f.monotone) {
        if (!c->rej)
          schd_breg(s, &c->rej);
        bs_set(c->rej, bi);
      }
      break;
    }
    placed += n;
    k -= n;
    c->remaining -= n;
    P->left -= n;
    if (n < kk)
      break; /* the bin is full for this class */
  }
  while (c->cur < c->nmem &&
         s->groups[c->mem[c->cur]].next >= s->groups[c->mem[c->cur]].npods)
    c->cur++;
  return placed;
}

struct rank_ctx {
  const double *cost;
  const double *size;
};

static int rank_cmp(const void *a, const void *b, void *arg)
{
  const struct rank_ctx *rc = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (rc->cost[x] != rc->cost[y])
    return rc->cost[x] < rc->cost[y] ? -1 : 1;
  if (rc->size[x] != rc->size[y]) /* equal value: the bigger one */
    return rc->size[x] > rc->size[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* The pool's types by value for the pending demand: price times how many
 * such nodes the demand needs in its tightest dimension (cheapest offering
 * price; a claim's own zone may cost more, which only blurs the ranking).
 * Made once per stamp, i.e. when the demand moved. */
static const uint32_t *ranking(struct packer *P, uint32_t pi)
{
  struct schd_solver *s = P->s;
  struct schd_pool *pool = &s->pools[pi];
  const uint32_t R = s->R;
  double *cost, *size;
  struct rank_ctx rc;
  if (P->rank[pi] && P->rank_stamp[pi] == P->stamp)
    return P->rank[pi];
  if (!P->rank[pi])
    P->rank[pi] = carp_calloc(pool->ntypes + 1, sizeof(uint32_t));
  cost = carp_calloc(s->ntypes + 1, sizeof(double));
  size = carp_calloc(s->ntypes + 1, sizeof(double));
  for (uint32_t i = 0; i < pool->ntypes; i++) {
    uint32_t t = pool->by_size[i];
    const int64_t *cap = &pool->cap[(size_t)t * R];
    double need = 0;
    for (uint32_t r = 0; r < R; r++) {
      double x;
      if (P->Dall[r] <= 0)
        continue;
      if (cap[r] <= 0) {
        need = INFINITY;
        break;
      }
      x = P->Dall[r] / (double)cap[r];
      if (x > need)
        need = x;
    }
    cost[t] = s->types[t].base_price * need;
    size[t] = (double)(pool->ntypes - i); /* by_size is largest first */
    P->rank[pi][i] = t;
  }
  rc.cost = cost;
  rc.size = size;
  qsort_r(P->rank[pi], pool->ntypes, sizeof(uint32_t), rank_cmp, &rc);
  carp_free(cost);
  carp_free(size);
  P->rank_stamp[pi] = P->stamp;
  return P->rank[pi];
}

/* The capacity vector a fill aims at, and the type behind it. Free: the
 * cheapest option (its room is already paid for). Grow: the option that
 * would serve the pending pods most cheaply, price times the number of
 * such nodes the pending demand needs in its tightest dimension; with
 * linear prices that is the largest type (its reservations weigh least),
 * with other price models it is the best value, not the biggest. */
static const int64_t *target(struct packer *P, struct schd_bin *b, int mode,
                             uint32_t *type)
{
  struct schd_solver *s = P->s;
  struct schd_pool *pool;
  const uint32_t R = s->R;
  double best = INFINITY;
  *type = SCHD_NONE;
  if (b->kind != BIN_CLAIM)
    return b->alloc;
  pool = &s->pools[b->pool];
  if (mode == FILL_GROW) {
    const uint32_t *rank = ranking(P, (uint32_t)b->pool);
    for (uint32_t i = 0; i < pool->ntypes; i++)
      if (bs_get(b->opts, rank[i])) {
        *type = rank[i];
        break;
      }
  } else {
    for (uint32_t i = 0; i < pool->ntypes; i++) {
      uint32_t t = pool->by_price[i];
      double pr;
      if (s->types[t].base_price >= best)
        break;
      if (!bs_get(b->opts, t))
        continue;
      pr = schd_type_price(s, t, b->rset);
      if (pr < best) {
        best = pr;
        *type = t;
      }
    }
  }
  if (*type == SCHD_NONE)
    return NULL;
  return &pool->cap[(size_t)*type * R];
}

/* Pending demand of the candidate classes, into P->D. */
static void demand(struct packer *P, uint32_t nc)
{
  const uint32_t R = P->s->R;
  for (uint32_t r = 0; r < R; r++)
    P->D[r] = 0;
  for (uint32_t c = 0; c < nc; c++) {
    const struct pclass *pc = &P->cls[P->cand[c]];
    for (uint32_t r = 0; r < R; r++)
      P->D[r] += (double)pc->remaining * (double)pc->req[r];
  }
}

static void fill(struct packer *P, uint32_t bi, int mode)
{
  struct schd_solver *s = P->s;
  struct schd_bin *b = &s->bins[bi];
  const uint32_t R = s->R;
  const int64_t *T = NULL;
  const uint8_t *ok;
  uint32_t nc = 0, ttype = SCHD_NONE;

  if (!bs_get(s->open, bi))
    return;
  if (mode == FILL_FREE) {
    /* most bins have no room worth a look: say so before any set work */
    T = target(P, b, mode, &ttype);
    if (!T)
      return;
    for (uint32_t r = 0; r < R; r++)
      if (P->minreq[r] > 0 && T[r] - b->used[r] < P->minreq[r])
        return;
  }
  ok = compat_of(P, b);
  for (uint32_t i = 0; i < P->ncls; i++)
    if (ok[i] && P->cls[i].remaining > 0 &&
        !(P->cls[i].rej && bs_get(P->cls[i].rej, bi)))
      P->cand[nc++] = i;
  if (!nc)
    return;
  if (mode == FILL_GROW) {
    demand(P, nc);
    T = target(P, b, mode, &ttype);
  }
  if (!T)
    return;
  for (uint32_t r = 0; r < R; r++)
    if (P->minreq[r] > 0 && T[r] - b->used[r] < P->minreq[r])
      return; /* not even the smallest pending pod fits the target */

  if (mode == FILL_GROW) {
    /* the same fraction of every pending class */
    double alpha = INFINITY;
    for (uint32_t r = 0; r < R; r++)
      if (P->D[r] > 0) {
        double a = (double)(T[r] - b->used[r]) / P->D[r];
        if (a < alpha)
          alpha = a;
      }
    if (alpha > 0)
      for (uint32_t c = 0; c < nc && bs_get(s->open, bi); c++) {
        struct pclass *pc = &P->cls[P->cand[c]];
        int64_t k = alpha >= 1 ? pc->remaining
                               : (int64_t)(alpha * (double)pc->remaining);
        if (k > 0)
          place_class(P, pc, bi, k);
      }
    if (ttype != SCHD_NONE && !bs_get(b->opts, ttype))
      T = target(P, b, mode, &ttype);
  }

  /* top up: the best match for the room left, a few pods at a time */
  while (T && nc && bs_get(s->open, bi)) {
    double best = -1, w[16];
    uint32_t bc = SCHD_NONE, RW = R < 16 ? R : 16;
    /* score = sum of req/T * room/T: the weights once per round */
    for (uint32_t r = 0; r < RW; r++)
      w[r] = T[r] > 0 ? (double)(T[r] - b->used[r]) / ((double)T[r] * T[r]) : 0;
    for (uint32_t c = 0; c < nc; c++) {
      const struct pclass *pc = &P->cls[P->cand[c]];
      double score = 0;
      uint32_t r;
      if (pc->remaining <= 0)
        continue;
      for (r = 0; r < R; r++)
        if (pc->req[r] > 0 && T[r] - b->used[r] < pc->req[r])
          break;
      if (r < R)
        continue;
      for (r = 0; r < RW; r++)
        score += (double)pc->req[r] * w[r];
      if (score > best) {
        best = score;
        bc = c;
      }
    }
    if (bc == SCHD_NONE)
      break;
    {
      struct pclass *pc = &P->cls[P->cand[bc]];
      int64_t fitc = schd_fit_count(s, b->used, pc->req, T, pc->remaining);
      if (!place_class(P, pc, bi, fitc / 8 > 1 ? fitc / 8 : 1)) {
        P->cand[bc] = P->cand[--nc];
        continue;
      }
    }
    if (ttype != SCHD_NONE && !bs_get(b->opts, ttype))
      T = target(P, b, mode, &ttype);
  }
}

/* Recomputes the smallest pending request per dimension (a stale, smaller
 * value is still a safe filter) and says whether anything is pending. */
static int refresh(struct packer *P)
{
  const uint32_t R = P->s->R;
  P->stamp++;
  for (uint32_t r = 0; r < R; r++) {
    P->minreq[r] = INT64_MAX;
    P->Dall[r] = 0;
  }
  for (uint32_t i = 0; i < P->ncls; i++) {
    const struct pclass *pc = &P->cls[i];
    if (pc->remaining <= 0)
      continue;
    for (uint32_t r = 0; r < R; r++) {
      if (pc->req[r] < P->minreq[r])
        P->minreq[r] = pc->req[r];
      P->Dall[r] += (double)pc->remaining * (double)pc->req[r];
    }
  }
  return P->left > 0;
}

/* Classes: groups whose signatures agree past the labels. */
static void build_classes(struct packer *P, const uint32_t *groups, uint32_t n)
{
  struct schd_solver *s = P->s;
  struct schd_map byhash;
  uint32_t *next = carp_calloc(n + 1, sizeof(uint32_t));
  uint32_t *cls_of = carp_calloc(n + 1, sizeof(uint32_t));
  uint32_t *head = carp_calloc(n + 1, sizeof(uint32_t));
  schd_map_init(&byhash);
  /* in the arena: registered bitsets point into it until the end */
  P->cls = schd_zalloc(&s->arena, (n + 1) * sizeof(*P->cls));
  for (uint32_t i = 0; i < n; i++) {
    const struct schd_group *g = &s->groups[groups[i]];
    const uint8_t *rest = g->sig + g->sig_labels_end;
    size_t nrest = g->nsig - g->sig_labels_end;
    uint64_t h = schd_hash_bytes(schd_mix(0x636c61, g->ns), rest, nrest), v;
    uint32_t c = SCHD_NONE;
    if (h == UINT64_MAX)
      h--;
    if (schd_map_get(&byhash, h, &v))
      for (uint32_t j = (uint32_t)v; j != SCHD_NONE; j = next[j]) {
        const struct schd_group *o = &s->groups[groups[j]];
        if (o->ns == g->ns && o->nsig - o->sig_labels_end == nrest &&
            memcmp(o->sig + o->sig_labels_end, rest, nrest) == 0) {
          c = cls_of[j];
          break;
        }
      }
    if (c == SCHD_NONE) {
      c = P->ncls++;
      P->cls[c].mem = schd_alloc(&s->arena, (n + 1) * sizeof(uint32_t));
      P->cls[c].req = g->req;
      next[i] = schd_map_get(&byhash, h, &v) ? (uint32_t)v : SCHD_NONE;
      schd_map_put(&byhash, h, i);
      head[c] = i;
    } else {
      next[i] = SCHD_NONE;
    }
    cls_of[i] = c;
    P->cls[c].mem[P->cls[c].nmem++] = groups[i];
    P->cls[c].remaining += g->npods - g->next;
    P->left += g->npods - g->next;
  }
  schd_map_free(&byhash);
  carp_free(next);
  carp_free(cls_of);
  carp_free(head);
}

/* ---- new claims: two strategies, the better one kept ---- */

/* What a strategy changes, so it can be undone. */
struct snapshot {
  uint32_t nbins, nnew;
  int64_t *remaining; /* per pool, R + 1 each */
  uint32_t *next;     /* per member group, in class order */
  uint32_t *cur;
  int64_t *left;
};

static void snap_take(struct packer *P, struct snapshot *sn)
{
  struct schd_solver *s = P->s;
  size_t k = 0;
  sn->nbins = s->nbins;
  sn->nnew = s->nnew;
  for (uint32_t pi = 0; pi < s->npools; pi++)
    memcpy(&sn->remaining[(size_t)pi * (s->R + 1)], s->pools[pi].remaining,
           (s->R + 1) * sizeof(int64_t));
  for (uint32_t i = 0; i < P->ncls; i++) {
    sn->cur[i] = P->cls[i].cur;
    sn->left[i] = P->cls[i].remaining;
    for (uint32_t m = 0; m < P->cls[i].nmem; m++)
      sn->next[k++] = s->groups[P->cls[i].mem[m]].next;
  }
}

/* Undoes everything since snap_take: the pods placed go back to pending,
 * the claims opened are discarded (their bits cleared in every bin
 * bitset), reservations return to the pools. Topology counts are not
 * restored: free groups have no rule that reads them. */
static void snap_restore(struct packer *P, const struct snapshot *sn)
{
  struct schd_solver *s = P->s;
  size_t k = 0;
  for (uint32_t i = 0; i < P->ncls; i++) {
    P->cls[i].cur = sn->cur[i];
    P->left += sn->left[i] - P->cls[i].remaining;
    P->cls[i].remaining = sn->left[i];
    for (uint32_t m = 0; m < P->cls[i].nmem; m++) {
      struct schd_group *g = &s->groups[P->cls[i].mem[m]];
      for (uint32_t j = sn->next[k]; j < g->next; j++)
        s->assign[g->pods[j]] = SCHD_NONE;
      g->next = sn->next[k++];
    }
  }
  while (s->nbins > sn->nbins)
    schd_bin_discard(s, s->nbins - 1);
  s->nnew = sn->nnew;
  for (uint32_t pi = 0; pi < s->npools; pi++)
    memcpy(s->pools[pi].remaining, &sn->remaining[(size_t)pi * (s->R + 1)],
           (s->R + 1) * sizeof(int64_t));
}

static double claims_price(struct packer *P, uint32_t from)
{
  struct schd_solver *s = P->s;
  double sum = 0;
  uint32_t t;
  for (uint32_t bi = from; bi < s->nbins; bi++)
    if (target(P, &s->bins[bi], FILL_FREE, &t))
      sum += schd_type_price(s, t, s->bins[bi].rset);
  return sum;
}

static int64_t pending_pods(struct packer *P)
{
  int64_t n = 0;
  for (uint32_t i = 0; i < P->ncls; i++)
    n += P->cls[i].remaining;
  return n;
}

/* Balanced: open a claim for the biggest pending pod, grow it towards the
 * best-value option, repeat. */
static void open_balanced(struct packer *P, uint8_t *failed)
{
  struct schd_solver *s = P->s;
  memset(failed, 0, P->ncls);
  while (refresh(P)) {
    uint32_t i, bi;
    for (i = 0; i < P->ncls; i++)
      if (P->cls[i].remaining > 0 && !failed[i])
        break;
    if (i == P->ncls)
      break;
    bi = schd_open_claim(s, leader(P, &P->cls[i]), 1);
    if (bi == SCHD_NONE) {
      failed[i] = 1;
      continue;
    }
    P->cls[i].remaining -= 1;
    P->left -= 1;
    s->bins[bi].phase2 = 1;
    fill(P, bi, FILL_GROW);
  }
}

/* First-fit decreasing: pods in queue order, each into the first new
 * claim some option of which still holds it, else a new claim; Karpenter's
 * packing without existing capacity. The reference a plan must never be
 * worse than. */
static void open_ffd(struct packer *P, uint32_t from)
{
  struct schd_solver *s = P->s;
  for (uint32_t i = 0; i < P->ncls; i++) {
    struct pclass *pc = &P->cls[i];
    while (pc->remaining > 0) {
      uint32_t bi;
      for (bi = from; bi < s->nbins && pc->remaining > 0; bi++)
        if (bs_get(s->open, bi) && !(pc->rej && bs_get(pc->rej, bi)))
          place_class(P, pc, bi, pc->remaining);
      if (pc->remaining <= 0)
        break;
      bi = schd_open_claim(s, leader(P, pc), 1);
      if (bi == SCHD_NONE)
        break;
      pc->remaining -= 1;
      P->left -= 1;
      s->bins[bi].phase2 = 1;
    }
  }
}

static void open_new(struct packer *P, uint8_t *failed, struct snapshot *sn)
{
  struct schd_solver *s = P->s;
  uint32_t from = s->nbins;
  int64_t left_ffd, left_bal;
  double price_ffd, price_bal;
  if (!refresh(P))
    return;
  snap_take(P, sn);
  open_ffd(P, from);
  left_ffd = pending_pods(P);
  price_ffd = claims_price(P, from);
  snap_restore(P, sn);
  open_balanced(P, failed);
  left_bal = pending_pods(P);
  price_bal = claims_price(P, from);
  if (left_ffd < left_bal || (left_ffd == left_bal && price_ffd < price_bal)) {
    snap_restore(P, sn);
    open_ffd(P, from);
  }
}

void schd_pack_inert(struct schd_solver *s, uint32_t *groups, uint32_t n)
{
  struct packer P;
  struct snapshot sn;
  uint8_t *failed;
  memset(&P, 0, sizeof(P));
  P.s = s;
  build_classes(&P, groups, n);
  P.cand = carp_calloc(P.ncls + 1, sizeof(uint32_t));
  P.minreq = carp_calloc(s->R + 1, sizeof(int64_t));
  P.D = carp_calloc(s->R + 1, sizeof(double));
  P.Dall = carp_calloc(s->R + 1, sizeof(double));
  P.rank = carp_calloc(s->npools + 1, sizeof(uint32_t *));
  P.rank_stamp = carp_calloc(s->npools + 1, sizeof(uint32_t));
  failed = carp_calloc(P.ncls + 1, 1);
  sn.remaining =
      carp_calloc((size_t)(s->npools + 1) * (s->R + 1), sizeof(int64_t));
  sn.next = carp_calloc(n + 1, sizeof(uint32_t));
  sn.cur = carp_calloc(P.ncls + 1, sizeof(uint32_t));
  sn.left = carp_calloc(P.ncls + 1, sizeof(int64_t));
  schd_map_init(&P.compat);
  for (;;) {
    uint32_t nb = s->nbins;
    int relaxed = 0;
    s->stats.passes++;
    refresh(&P);
    for (uint32_t bi = 0; bi < nb && P.left > 0; bi++)
      fill(&P, bi, FILL_FREE);
    for (uint32_t bi = 0; bi < nb && P.left > 0; bi++)
      if (s->bins[bi].kind == BIN_CLAIM)
        fill(&P, bi, FILL_GROW);
    open_new(&P, failed, &sn);
    for (uint32_t i = 0; i < P.ncls; i++) {
      struct pclass *pc = &P.cls[i];
      if (pc->remaining <= 0)
        continue;
      for (uint32_t m = pc->cur; m < pc->nmem; m++) {
        struct schd_group *g = &s->groups[pc->mem[m]];
        if (g->next < g->npods && schd_group_relax(s, g))
          relaxed = 1;
      }
      if (pc->rej)
        memset(pc->rej, 0, s->bwords * sizeof(uint64_t));
    }
    if (!relaxed)
      break;
    schd_map_free(&P.compat); /* requirements changed */
    schd_map_init(&P.compat);
  }
  schd_map_free(&P.compat);
  carp_free(P.cand);
  carp_free(P.minreq);
  carp_free(P.D);
  carp_free(P.Dall);
  for (uint32_t pi = 0; pi < s->npools; pi++)
    carp_free(P.rank[pi]);
  carp_free(P.rank);
  carp_free(P.rank_stamp);
  carp_free(failed);
  carp_free(sn.remaining);
  carp_free(sn.next);
  carp_free(sn.cur);
  carp_free(sn.left);
}
