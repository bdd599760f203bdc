/* room.c: a cheap proof, before the solve, that a set of candidates cannot
 * be replaced by one node cheaper than they are.
 *
 * A relaxation of the scheduler's question that keeps only the resources
 * (cpu, memory, pods) and forgets every label, taint, affinity, spread and
 * pending pod: a candidate pod that fits on no node outside the set, even
 * so, must go onto the replacement, so the replacement must hold all such
 * "homeless" pods together. When no instance type priced below the set
 * does, no solve can find a move: the scheduler only adds constraints, its
 * replacement holds at least the homeless pods, and its options cost at
 * least the cheapest available offering of their type. An answer of "no"
 * is therefore exact; "maybe" is left to the solve.
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
  int64_t (*need)[NR];     /* per candidate pod */
  struct room_type *types; /* usable ones, cheapest first */
  size_t ntypes;
};

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
  size_t i;
  r->p = p;
  nodes_setup(r);
  types_setup(r);
  r->need = carp_calloc(ncand_pods + 1, sizeof(*r->need));
  for (i = 0; i < ncand_pods; i++) {
    const struct carp_sched_pod *pod = &p->pods[i];
    int64_t v;
    v = sum_of(pod->requests, pod->nrequests, CARP_RESOURCE_CPU);
    r->need[i][R_CPU] = v > 0 ? v : 0;
    v = sum_of(pod->requests, pod->nrequests, CARP_RESOURCE_MEMORY);
    r->need[i][R_MEM] = v > 0 ? v : 0;
    r->need[i][R_PODS] = 1000; /* one pod, in millis */
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
  carp_free(r->types);
  carp_free(r);
}

static int holds(const int64_t *have, const int64_t *need)
{
  size_t k;
  for (k = 0; k < NR; k++)
    if (have[k] != UNBOUNDED && have[k] < need[k])
      return 0;
  return 1;
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

/* The room open nodes outside the set have for pods at least min each:
 * an upper bound on what of rest can go onto them, per resource. */
static void room_for(const struct dis_room *r, const uint8_t *removed,
                     const int64_t *min, int64_t *out)
{
  size_t i, k;
  for (k = 0; k < NR; k++)
    out[k] = 0;
  for (i = 0; i < r->nopen; i++) {
    uint32_t n = r->by_cpu[i];
    if (r->free[n][R_CPU] != UNBOUNDED && r->free[n][R_CPU] < min[R_CPU])
      break;
    if (removed[n] || !holds(r->free[n], min))
      continue;
    for (k = 0; k < NR; k++)
      out[k] = out[k] == UNBOUNDED || r->free[n][k] == UNBOUNDED
                   ? UNBOUNDED
                   : out[k] + r->free[n][k];
  }
}

int carp__dis_room_rules_out(const struct dis_room *r, const uint8_t *removed,
                             const size_t *pod_start, const size_t *pod_count,
                             const size_t *idx, size_t n, double below_price)
{
  /* On the replacement: the pods no other node holds, and of the rest what
   * the other nodes' room cannot take, per resource. */
  int64_t homeless[NR] = {0, 0, 0}, rest[NR] = {0, 0, 0}, min[NR], room[NR];
  size_t i, j, k;
  int any = 0, held = 0;
  for (k = 0; k < NR; k++)
    min[k] = UNBOUNDED;
  for (i = 0; i < n; i++)
    for (j = pod_start[idx[i]]; j < pod_start[idx[i]] + pod_count[idx[i]];
         j++) {
      int64_t *to = fits_elsewhere(r, removed, r->need[j]) ? rest : homeless;
      for (k = 0; k < NR; k++) {
        to[k] += r->need[j][k];
        if (to == rest && r->need[j][k] < min[k])
          min[k] = r->need[j][k];
      }
      any |= to == homeless;
    }
  if (min[R_CPU] != UNBOUNDED) {
    room_for(r, removed, min, room);
    for (k = 0; k < NR; k++)
      if (room[k] != UNBOUNDED && rest[k] > room[k]) {
        homeless[k] += rest[k] - room[k];
        any = 1;
      }
  }
  if (!any)
    return 0; /* a delete may do */
  for (i = 0; i < r->ntypes; i++) {
    if (!holds(r->types[i].alloc, homeless))
      continue;
    if (r->types[i].price < below_price)
      return 0;
    held = 1;
  }
  /* No type at all: the solve says why the pods cannot move. */
  return held;
}
