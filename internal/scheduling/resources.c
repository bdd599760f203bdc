/* resources.c: resource vectors and fits.
 *
 * Every resource the problem mentions (cpu, memory, pods,
 * ephemeral-storage and any extended resource) becomes one dimension of a
 * dense int64 vector in millis, so a fit is a handful of integer compares.
 * A new claim's instance-type options shrink as pods join it; per NodePool
 * the types are sorted by capacity in each dimension, and a claim keeps one
 * position per dimension, so dropping the types that no longer fit costs
 * only the types actually dropped, not a scan of every option. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "schd_int.h"

/* Dimensions are few (four fixed plus a handful of extended resources), so
 * a linear scan, pointer equality first, beats hashing every name. */
static int dim_find(const struct schd_solver *s, const char *name)
{
  for (uint32_t d = 0; d < s->R; d++)
    if (s->dim_names[d] == name)
      return (int)d;
  for (uint32_t d = 0; d < s->R; d++)
    if (strcmp(s->dim_names[d], name) == 0)
      return (int)d;
  return -1;
}

static void dim_add(struct schd_solver *s, const char *name)
{
  if (!name || dim_find(s, name) >= 0 || strcmp(name, CARP_RESOURCE_NODES) == 0)
    return;
  s->dim_names =
      carp_reallocarray(s->dim_names, s->R + 1, sizeof(*s->dim_names));
  s->dim_names[s->R] = name;
  s->R++;
}

static void dims_list(struct schd_solver *s,
                      const struct carp_sched_quantity *q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    dim_add(s, q[i].name);
}

int schd_dims_setup(struct schd_solver *s)
{
  const struct carp_sched_problem *p = s->p;
  s->R = 0;
  dim_add(s, CARP_RESOURCE_CPU);
  dim_add(s, CARP_RESOURCE_MEMORY);
  dim_add(s, CARP_RESOURCE_PODS);
  dim_add(s, CARP_RESOURCE_STORAGE);
  for (size_t i = 0; i < p->npods; i++)
    dims_list(s, p->pods[i].requests, p->pods[i].nrequests);
  for (size_t i = 0; i < p->ndaemons; i++)
    dims_list(s, p->daemons[i].requests, p->daemons[i].nrequests);
  for (size_t i = 0; i < p->ninstance_types; i++) {
    const struct carp_sched_instance_type *t = &p->instance_types[i];
    dims_list(s, t->capacity, t->ncapacity);
  }
  for (size_t i = 0; i < p->nnodes; i++) {
    dims_list(s, p->nodes[i].allocatable, p->nodes[i].nallocatable);
    dims_list(s, p->nodes[i].requested, p->nodes[i].nrequested);
  }
  for (size_t i = 0; i < p->nnodepools; i++)
    dims_list(s, p->nodepools[i].limits, p->nodepools[i].nlimits);
  return 0;
}

int schd_dim(const struct schd_solver *s, const char *name)
{
  return name ? dim_find(s, name) : -1;
}

void schd_vec_add(const struct schd_solver *s, int64_t *v,
                  const struct carp_sched_quantity *q, size_t n, int sign)
{
  for (size_t i = 0; i < n; i++) {
    int d = schd_dim(s, q[i].name);
    if (d >= 0)
      v[d] += sign * q[i].milli;
  }
}

int64_t schd_fit_count(const struct schd_solver *s, const int64_t *used,
                       const int64_t *req, const int64_t *cap, int64_t kmax)
{
  int64_t k = kmax;
  for (uint32_t r = 0; r < s->R && k > 0; r++) {
    int64_t avail;
    if (req[r] <= 0)
      continue;
    avail = cap[r] - used[r];
    if (avail < req[r])
      return 0;
    if (avail / req[r] < k)
      k = avail / req[r];
  }
  return k;
}

void schd_opts_shrink(const struct schd_solver *s, const struct schd_pool *pool,
                      const uint32_t *thr, const int64_t *used, uint64_t *out,
                      uint32_t *newthr)
{
  const uint32_t R = s->R;
  for (uint32_t r = 0; r < R; r++) {
    const uint32_t *order = pool->order[r];
    uint32_t pos = thr[r];
    while (pos < pool->ntypes &&
           pool->cap[(size_t)order[pos] * R + r] < used[r]) {
      bs_clr(out, order[pos]);
      pos++;
    }
    newthr[r] = pos;
  }
}

static int64_t list_sum(const struct carp_sched_quantity *q, size_t n,
                        const char *name)
{
  int64_t v = 0;
  for (size_t i = 0; i < n; i++)
    if (q[i].name && strcmp(q[i].name, name) == 0)
      v += q[i].milli;
  return v;
}

int64_t carp_sched_allocatable(const struct carp_sched_instance_type *it,
                               const char *name)
{
  int64_t v;
  if (!it || !name)
    return 0;
  v = list_sum(it->capacity, it->ncapacity, name) -
      list_sum(it->kube_reserved, it->nkube_reserved, name) -
      list_sum(it->system_reserved, it->nsystem_reserved, name) -
      list_sum(it->eviction_threshold, it->neviction_threshold, name);
  return v > 0 ? v : 0;
}
