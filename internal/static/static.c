/* static.c: what the static NodePool controllers share (see
 * static_int.h): the pools they act on and the events that queue a
 * pool. */
#include <string.h>

#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"
#include "static_int.h"

int carp__static_pool(const struct carp_nodepool *np)
{
  return np && np->has_replicas && np->valid && !np->meta.deletion_ms &&
         !carp_nodepool_mode_switched(np) &&
         !strcmp(np->tmpl.node_class_ref.kind, CARP_NODECLASS_KIND) &&
         !strcmp(np->tmpl.node_class_ref.group, CARP_NODECLASS_GROUP);
}

void carp__static_map_pool(struct carp_controller *c,
                           const struct carp_objmeta *old,
                           const struct carp_objmeta *obj, int deleted)
{
  (void)old;
  if (!deleted && ((const struct carp_nodepool *)obj)->has_replicas)
    carp_controller_enqueue(c, obj->name);
}

void carp__static_map_claim(struct carp_controller *c,
                            const struct carp_objmeta *old,
                            const struct carp_objmeta *obj, int deleted)
{
  const char *pool =
      carp_nodeclaim_nodepool((const struct carp_nodeclaim *)obj);
  const struct carp_nodepool *np;
  (void)old;
  (void)deleted;
  np = pool ? carp_cluster_nodepool(c->env.cluster, pool) : NULL;
  if (np && np->has_replicas)
    carp_controller_enqueue(c, pool);
}

void carp__static_activated(struct carp_controller *c)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((
      m = carp_store_next(carp_informer_store(c->env.cluster->nodepools), &it)))
    if (((const struct carp_nodepool *)m)->has_replicas)
      carp_controller_enqueue(c, m->name);
}
