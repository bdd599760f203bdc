/* room.c: a cheap proof, before the solve, that a set of candidates cannot
 * go: not without a new node, not with one new node, or not with one
 * cheaper than they are.
 *
 * A relaxation of the scheduler's question that keeps only the resources
 * (cpu, memory, pods) and forgets every label, taint, affinity, spread and
 * pending pod. A candidate pod that fits on no node outside the set, even
 * so, must go onto the replacement. Of the others, the other nodes take at
 * most their room (of the nodes that hold the smallest of them) and at
 * most as many pods as each node's room allows of the smallest ones; what
 * is left must go onto the replacement too. When that load needs a new
 * node and no instance type holds it, or none priced below the set does,
 * no solve can find a move: the scheduler only adds constraints, its one
 * replacement would hold at least that load, and its options cost at least
 * the cheapest available offering of their type. An answer of "no" is
 * therefore exact; "maybe" is left to the solve.
 *
 * Late consolidation rounds, on a cluster already packed, try hundreds of
 * nodes one by one that are already the cheapest type their pods allow:
 * this check answers most of them in microseconds instead of a solve that
 * walks every node and every bound pod of their apps. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/scheduling.h"
#include "disruption_int.h"

#define UNBOUNDED INT64_MAX

enum { R_CPU, R_MEM, R_PODS, NR };

struct room_type {
  int64_t alloc[NR];
  double price; /* cheapest available offering */
};

struct dis_room {
  const struct carp_sched_problem *p;
  int64_t (*free)[NR]; /* per node: allocatable less requested */
  uint32_t *by_cpu;    /* open nodes, most free cpu first */
  size_t nopen;
  int64_t (*need)[NR]; /* per candidate pod */
  size_t npods;
  uint8_t *typed; /* per candidate pod: some type holds it alone */
  /* Scratch for a judgement: prefix sums of the cpu and memory needs of
   * the pods that fit elsewhere, smallest first (pre[k][0] = 0). */
  int64_t *pre[R_MEM + 1];
  struct room_type *types; /* usable ones, cheapest first */
  size_t ntypes;
};

/* Tests turn the bound off to compare with the solves alone. */
static int disabled;

void carp__dis_room_enable(int on)
{
  disabled = !on;
}

static const char *const names[NR] = {CARP_RESOURCE_CPU, CARP_RESOURCE_MEMORY,
                                      CARP_RESOURCE_PODS};

/* The sum of the entries named name, or -1 when there is none. */
static int64_t sum_of(const struct carp_sched_quantity *q, size_t n,
                      const char *name)
{
  int64_t v = -1;
  size_t i;
  for (i = 0; i < n; i++)
    if (q[i].name && !strcmp(q[i].name, name))
      v = (v < 0 ? 0 : v) + q[i].milli;
  return v;
}

/* a + b, both >= 0, saturating at UNBOUNDED (a sum of room that large
 * bounds nothing; a need that large fits nowhere). */
static int64_t add(int64_t a, int64_t b)
{
  return a == UNBOUNDED || b == UNBOUNDED || a > UNBOUNDED - b ? UNBOUNDED
                                                               : a + b;
}

static int holds(const int64_t *have, const int64_t *need)
{
  size_t k;
  for (k = 0; k < NR; k++)
    if (have[k] != UNBOUNDED && have[k] < need[k])
      return 0;
  return 1;
}

static const struct dis_room *by_cpu_room; /* qsort has no argument */

static int more_cpu(const void *x, const void *y)
{
  int64_t a = by_cpu_room->free[*(const uint32_t *)x][R_CPU];
  int64_t b = by_cpu_room->free[*(const uint32_t *)y][R_CPU];
  if (a != b)
    return a > b ? -1 : 1;
  return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int cheaper(const void *x, const void *y)
{
  double a = ((const struct room_type *)x)->price;
  double b = ((const struct room_type *)y)->price;
  return a < b ? -1 : a > b;
}

/* A resource a node or type does not list is taken as unbounded: the
 * relaxation may only ever be looser than the scheduler. */
static void nodes_setup(struct dis_room *r)
{
  const struct carp_sched_problem *p = r->p;
  size_t i, k;
  r->free = carp_calloc(p->nnodes + 1, sizeof(*r->free));
  r->by_cpu = carp_calloc(p->nnodes + 1, sizeof(*r->by_cpu));
  for (i = 0; i < p->nnodes; i++) {
    const struct carp_sched_node *n = &p->nodes[i];
    for (k = 0; k < NR; k++) {
      int64_t cap = sum_of(n->allocatable, n->nallocatable, names[k]);
      int64_t used = sum_of(n->requested, n->nrequested, names[k]);
      r->free[i][k] = cap < 0 ? UNBOUNDED : cap - (used > 0 ? used : 0);
    }
    if (!n->deleting)
      r->by_cpu[r->nopen++] = (uint32_t)i;
  }
  by_cpu_room = r;
  qsort(r->by_cpu, r->nopen, sizeof(*r->by_cpu), more_cpu);
}

static void types_setup(struct dis_room *r)
{
  const struct carp_sched_problem *p = r->p;
  size_t i, j, k;
  r->types = carp_calloc(p->ninstance_types + 1, sizeof(*r->types));
  for (i = 0; i < p->ninstance_types; i++) {
    const struct carp_sched_instance_type *t = &p->instance_types[i];
    struct room_type *rt = &r->types[r->ntypes];
    int any = 0;
    for (j = 0; j < t->nofferings; j++)
      if (t->offerings[j].available &&
          (!any || t->offerings[j].price < rt->price)) {
        rt->price = t->offerings[j].price;
        any = 1;
      }
    if (!any)
      continue; /* never an option */
    for (k = 0; k < NR; k++)
      rt->alloc[k] = sum_of(t->capacity, t->ncapacity, names[k]) < 0
                         ? UNBOUNDED
                         : carp_sched_allocatable(t, names[k]);
    r->ntypes++;
  }
  qsort(r->types, r->ntypes, sizeof(*r->types), cheaper);
}

struct dis_room *carp__dis_room_new(const struct carp_sched_problem *p,
                                    size_t ncand_pods)
{
  struct dis_room *r = CARP_NEW(struct dis_room);
  size_t i, j;
  r->p = p;
  nodes_setup(r);
  types_setup(r);
  r->npods = ncand_pods;
  r->need = carp_calloc(ncand_pods + 1, sizeof(*r->need));
  r->typed = carp_calloc(ncand_pods + 1, 1);
  r->pre[R_CPU] = carp_calloc(ncand_pods + 1, sizeof(int64_t));
  r->pre[R_MEM] = carp_calloc(ncand_pods + 1, sizeof(int64_t));
  for (i = 0; i < ncand_pods; i++) {
    const struct carp_sched_pod *pod = &p->pods[i];
    int64_t v;
    v = sum_of(pod->requests, pod->nrequests, CARP_RESOURCE_CPU);
    r->need[i][R_CPU] = v > 0 ? v : 0;
    v = sum_of(pod->requests, pod->nrequests, CARP_RESOURCE_MEMORY);
    r->need[i][R_MEM] = v > 0 ? v : 0;
    r->need[i][R_PODS] = 1000; /* one pod, in millis */
    for (j = 0; j < r->ntypes && !r->typed[i]; j++)
      r->typed[i] = (uint8_t)holds(r->types[j].alloc, r->need[i]);
  }
  return r;
}

void carp__dis_room_free(struct dis_room *r)
{
  if (!r)
    return;
  carp_free(r->free);
  carp_free(r->by_cpu);
  carp_free(r->need);
  carp_free(r->typed);
  carp_free(r->pre[R_CPU]);
  carp_free(r->pre[R_MEM]);
  carp_free(r->types);
  carp_free(r);
}

/* Whether some open node outside the set has room for the pod alone. */
static int fits_elsewhere(const struct dis_room *r, const uint8_t *removed,
                          const int64_t *need)
{
  size_t i;
  for (i = 0; i < r->nopen; i++) {
    uint32_t n = r->by_cpu[i];
    if (r->free[n][R_CPU] != UNBOUNDED && r->free[n][R_CPU] < need[R_CPU])
      return 0; /* the rest have less */
    if (!removed[n] && holds(r->free[n], need))
      return 1;
  }
  return 0;
}

static int ascending(const void *x, const void *y)
{
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

/* The most of the smallest rest pods whose needs (prefix sums pre[0..n])
 * fit in free. */
static size_t count_fit(const int64_t *pre, size_t n, int64_t free)
{
  size_t lo = 0, hi = n;
  if (free == UNBOUNDED)
    return n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (pre[mid] <= free)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* What of the rest pods (those each of which fits some other node; their
 * cpu and memory needs sorted into prefix sums r->pre, their total rest,
 * their smallest need per resource min) the other nodes cannot take, per
 * resource, into low. Two bounds, the larger kept: the other nodes' room
 * (only nodes that hold min count), and their count - each node takes at
 * most as many of them as its cpu, memory and pod slots allow of the
 * smallest, so at least the others stay, and they need at least the sum
 * of that many smallest. */
static void left_over(const struct dis_room *r, const uint8_t *removed,
                      size_t nrest, const int64_t *rest, const int64_t *min,
                      int64_t *low)
{
  int64_t room[NR] = {0, 0, 0};
  size_t i, k, leave = 0, stay;
  for (i = 0; i < r->nopen; i++) {
    uint32_t n = r->by_cpu[i];
    size_t c;
    if (r->free[n][R_CPU] != UNBOUNDED && r->free[n][R_CPU] < min[R_CPU])
      break; /* the rest have less */
    if (removed[n] || !holds(r->free[n], min))
      continue;
    for (k = 0; k < NR; k++)
      room[k] = add(room[k], r->free[n][k]);
    c = count_fit(r->pre[R_CPU], nrest, r->free[n][R_CPU]);
    if (count_fit(r->pre[R_MEM], nrest, r->free[n][R_MEM]) < c)
      c = count_fit(r->pre[R_MEM], nrest, r->free[n][R_MEM]);
    if (r->free[n][R_PODS] != UNBOUNDED &&
        (size_t)(r->free[n][R_PODS] / 1000) < c)
      c = (size_t)(r->free[n][R_PODS] / 1000);
    leave += c;
  }
  stay = leave < nrest ? nrest - leave : 0;
  for (k = 0; k < NR; k++) {
    int64_t by_count = k == R_PODS ? (int64_t)stay * 1000 : r->pre[k][stay];
    low[k] = room[k] != UNBOUNDED && rest[k] > room[k] ? rest[k] - room[k] : 0;
    if (by_count > low[k])
      low[k] = by_count;
  }
}

enum dis_room_verdict
carp__dis_room_judge(struct dis_room *r, const uint8_t *removed,
                     const size_t *pod_start, const size_t *pod_count,
                     const size_t *idx, size_t n, double below_price)
{
  /* On the replacement: the pods no other node holds, and what of the
   * rest the other nodes cannot take. */
  int64_t homeless[NR] = {0, 0, 0}, rest[NR] = {0, 0, 0}, min[NR], low[NR];
  size_t i, j, k, nrest = 0;
  int any = 0, held = 0;
  if (disabled)
    return DIS_ROOM_MAYBE;
  for (k = 0; k < NR; k++)
    min[k] = UNBOUNDED;
  for (i = 0; i < n; i++)
    for (j = pod_start[idx[i]]; j < pod_start[idx[i]] + pod_count[idx[i]];
         j++) {
      const int64_t *need = r->need[j];
      if (!r->typed[j])
        return DIS_ROOM_MAYBE; /* no type holds it: the solve says why */
      if (nrest == r->npods)
        return DIS_ROOM_MAYBE; /* a candidate named twice: no bound */
      if (!fits_elsewhere(r, removed, need)) {
        for (k = 0; k < NR; k++)
          homeless[k] = add(homeless[k], need[k]);
        any = 1;
        continue;
      }
      for (k = 0; k < NR; k++) {
        rest[k] = add(rest[k], need[k]);
        if (need[k] < min[k])
          min[k] = need[k];
      }
      r->pre[R_CPU][nrest + 1] = need[R_CPU];
      r->pre[R_MEM][nrest + 1] = need[R_MEM];
      nrest++;
    }
  if (nrest) {
    for (k = R_CPU; k <= R_MEM; k++) {
      qsort(&r->pre[k][1], nrest, sizeof(int64_t), ascending);
      for (i = 1; i <= nrest; i++)
        r->pre[k][i] = add(r->pre[k][i], r->pre[k][i - 1]);
    }
    left_over(r, removed, nrest, rest, min, low);
    for (k = 0; k < NR; k++) {
      homeless[k] = add(homeless[k], low[k]);
      any |= low[k] > 0;
    }
  }
  if (!any)
    return DIS_ROOM_MAYBE; /* a delete may do */
  for (i = 0; i < r->ntypes; i++) {
    if (!holds(r->types[i].alloc, homeless))
      continue;
    if (below_price <= 0 || r->types[i].price < below_price)
      return DIS_ROOM_NO_DELETE;
    held = 1;
  }
  return held ? DIS_ROOM_TOO_DEAR : DIS_ROOM_TOO_BIG;
}
