/* prices.c: the price book (see include/carpenter/overlay.h): what a
 * NodeClaim's offering costs per hour, in its NodePool's view of its
 * class's instance types, NodeOverlays applied - the prices the
 * provisioner chose it by. Disruption weighs savings with it and the
 * metrics controller sums karpenter_nodepools_cost_total from it. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/overlay.h"
#include "carpenter/scheduling.h"

struct price_list {
  const char *cls;  /* class name (borrowed) */
  const char *pool; /* NodePool name (borrowed): NodeOverlays may match it */
  struct carp_provider_instance_types types;
  int ok;
};

struct carp_price_book {
  const struct carp_cluster *c;
  struct carp_provider *provider;
  const char *controller;
  struct price_list *v;
  size_t n;
};

struct carp_price_book *carp_price_book_new(const struct carp_cluster *c,
                                            struct carp_provider *provider,
                                            const char *controller)
{
  struct carp_price_book *b = CARP_NEW(struct carp_price_book);
  b->c = c;
  b->provider = provider;
  b->controller = controller;
  return b;
}

static const struct carp_provider_instance_types *
types_of(struct carp_price_book *b, const char *cls, const char *pool)
{
  const struct carp_nodeclass *nc;
  const struct carp_nodepool *np;
  struct price_list *l;
  size_t i;
  pool = pool ? pool : "";
  for (i = 0; i < b->n; i++)
    if (!strcmp(b->v[i].cls, cls) && !strcmp(b->v[i].pool, pool))
      return b->v[i].ok ? &b->v[i].types : NULL;
  b->v = carp_reallocarray(b->v, b->n + 1, sizeof(*b->v));
  l = &b->v[b->n++];
  memset(l, 0, sizeof(*l));
  l->cls = cls;
  l->pool = pool;
  nc = carp_cluster_nodeclass(b->c, cls);
  np = carp_cluster_nodepool(b->c, pool);
  l->ok = b->provider && nc &&
          !(np ? carp_overlays_instance_types(b->c, b->provider, b->controller,
                                              np, nc, &l->types)
               : carp_provider_instance_types(b->provider, b->controller, nc,
                                              &l->types));
  return l->ok ? &l->types : NULL;
}

double carp_instance_type_price(const struct carp_provider_instance_types *t,
                                const char *type, const char *zone)
{
  size_t i, j;
  for (i = 0; t && type && i < t->n; i++) {
    if (strcmp(t->v[i].name, type))
      continue;
    for (j = 0; zone && j < t->v[i].nofferings; j++)
      if (!strcmp(t->v[i].offerings[j].zone, zone))
        return t->v[i].offerings[j].price;
    return t->v[i].price;
  }
  return -1;
}

double carp_price_book_claim(struct carp_price_book *b,
                             const struct carp_nodeclaim *nc)
{
  const char *type = carp_kvset_get(nc->meta.labels, CARP_LABEL_INSTANCE_TYPE);
  if (!type || !nc->spec.node_class_ref.name)
    return -1;
  return carp_instance_type_price(
      types_of(b, nc->spec.node_class_ref.name, carp_nodeclaim_nodepool(nc)),
      type, carp_kvset_get(nc->meta.labels, CARP_LABEL_ZONE));
}

void carp_price_book_free(struct carp_price_book *b)
{
  size_t i;
  if (!b)
    return;
  for (i = 0; i < b->n; i++)
    if (b->v[i].ok)
      carp_provider_instance_types_free(&b->v[i].types);
  carp_free(b->v);
  carp_free(b);
}
