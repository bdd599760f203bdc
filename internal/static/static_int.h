/* static_int.h: what the two static NodePool controllers share: which
 * pools they act on, how they count a pool's NodeClaims, and the event
 * maps that queue a pool. */
#ifndef CARP_STATIC_INT_H
#define CARP_STATIC_INT_H

#include <stdint.h>

#include "carpenter/cluster.h"
#include "carpenter/controller.h"

/* A static pool the controllers may act on: replicas set, valid, not
 * being deleted, its mode not switched, a carpenter.dev class. */
int carp__static_pool(const struct carp_nodepool *np);

struct static_count {
  int64_t total;   /* every NodeClaim, deleting and not-yet-seen ones too */
  int64_t active;  /* not being deleted (marked ones included) */
  int64_t running; /* not being deleted, not marked */
};
void carp__static_count(const struct carp_cluster *c, const char *pool,
                        struct static_count *out);

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
