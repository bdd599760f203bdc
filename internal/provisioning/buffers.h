/* buffers.h: CapacityBuffers' virtual pods in a provisioning batch (see
 * buffers.c). */
#ifndef CARP_PROV_BUFFERS_H
#define CARP_PROV_BUFFERS_H

#include <stddef.h>

#include "carpenter/cluster.h"
#include "carpenter/scheduling.h"
#include "problem.h"

/* Appends every virtual pod to v[n..] (grown, *cap updated); returns how
 * many. */
size_t carp_prov_add_virtual(const struct carp_cluster *c,
                             const struct carp_pod ***v, size_t n, size_t *cap);
/* Records, per buffer, where the solve put its virtual pods
 * (carp_cluster_virtual_placed); returns how many are not on a Node that
 * is there (launching, new or nowhere): the batch should look again. */
size_t carp_prov_buffers_placed(struct carp_cluster *c,
                                const struct carp_prov_problem *pr,
                                const struct carp_sched_result *res);

#endif
