/* buffers.c: CapacityBuffers' virtual pods in a provisioning batch. They
 * are placed after the real pending pods, as if they were pending too, so
 * capacity is launched for the room they stand for; they get no
 * nomination and no event (they are not objects of the API server), and
 * where each buffer's pods landed is recorded in the cluster state for
 * the buffer's status. */
#include "buffers.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"

size_t carp_prov_add_virtual(const struct carp_cluster *c,
                             const struct carp_pod ***v, size_t n, size_t *cap)
{
  size_t nv, i;
  const struct carp_pod *const *virt = carp_cluster_virtual_pods(c, &nv);
  if (n + nv > *cap) {
    *cap = n + nv;
    *v = carp_reallocarray(*v, *cap ? *cap : 1, sizeof(**v));
  }
  for (i = 0; i < nv; i++)
    (*v)[n + i] = virt[i];
  return nv;
}

/* Adds pod i's placement to pl. */
static void count(const struct carp_prov_problem *pr,
                  const struct carp_sched_result *res, size_t i,
                  struct carp_virtual_placement *pl)
{
  const struct carp_sched_assignment *a = &res->assignments[i];
  const struct carp_node *node;
  size_t u;
  pl->total++;
  switch (a->target) {
  case CARP_SCHED_ON_NODE:
    node = pr->node_objs[a->index];
    /* Room the kube-scheduler can use now: a registered, Ready Node. */
    if (!pr->node_is_claim[a->index] && node && node->ready.status == 1)
      pl->existing++;
    else
      pl->launching++;
    return;
  case CARP_SCHED_ON_CLAIM:
    pl->new_capacity++;
    return;
  case CARP_SCHED_UNSCHEDULED:
    break;
  }
  pl->unschedulable++;
  for (u = 0; !pl->why[0] && u < res->nunschedulable; u++)
    if (res->unschedulable[u].pod == i)
      snprintf(pl->why, sizeof(pl->why), "%s", res->unschedulable[u].message);
}

size_t carp_prov_buffers_placed(struct carp_cluster *c,
                                const struct carp_prov_problem *pr,
                                const struct carp_sched_result *res)
{
  struct carp_virtual_placement pl;
  char key[512] = "", k[512];
  size_t i, total = 0, existing = 0;
  memset(&pl, 0, sizeof(pl));
  /* A buffer's pods are next to each other (carp_cluster_virtual_pods). */
  for (i = 0; i < pr->p.npods; i++) {
    const struct carp_pod *p = pr->pods[i];
    if (!carp_pod_is_virtual(p))
      continue;
    carp_cluster_virtual_owner(p, k, sizeof(k));
    if (strcmp(k, key)) {
      if (*key)
        carp_cluster_virtual_placed(c, key, &pl);
      memset(&pl, 0, sizeof(pl));
      memcpy(key, k, sizeof(key));
    }
    existing -= pl.existing;
    count(pr, res, i, &pl);
    existing += pl.existing;
    total++;
  }
  if (*key)
    carp_cluster_virtual_placed(c, key, &pl);
  return total - existing;
}
