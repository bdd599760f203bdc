/* static_int.h: what the two static NodePool controllers share: which
 * pools they act on and the event maps that queue a pool (the count of a
 * pool's NodeClaims is the cluster state's carp_cluster_nodepool_count). */
#ifndef CARP_STATIC_INT_H
#define CARP_STATIC_INT_H

#include <stdint.h>

#include "carpenter/cluster.h"
#include "carpenter/controller.h"

/* A static pool the controllers may act on: replicas set, valid, not
 * being deleted, its mode not switched, a carpenter.dev class. */
int carp__static_pool(const struct carp_nodepool *np);

/* A NodePool event queues the pool (not a delete); a NodeClaim event
 * queues its pool. */
void carp__static_map_pool(struct carp_controller *c,
                           const struct carp_objmeta *old,
                           const struct carp_objmeta *obj, int deleted);
void carp__static_map_claim(struct carp_controller *c,
                            const struct carp_objmeta *old,
                            const struct carp_objmeta *obj, int deleted);
/* Every static pool. */
void carp__static_activated(struct carp_controller *c);

#endif
