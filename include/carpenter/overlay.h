/* Module overlay (internal/overlay). NodeOverlays applied to the instance types
 * the scheduler sees (internal/overlay), as Karpenter's overlay store and
 * decorator do: an overlay in force changes the price of the offerings its
 * requirements match and the extended-resource capacity of the types they
 * match, in a NodePool's view of its class's types (the NodePool's name and
 * template labels are matched too). The strongest overlay wins - highest
 * weight, then the name later in the alphabet - per offering for the price and
 * per resource for the capacity.
 *
 * Which overlays are in force is the NodeOverlay controller's decision,
 * written into their status (ValidationSucceeded, reasons RuntimeValidation
 * and Conflict: two overlays of one weight that change the same offering's
 * price or the same resource of a type); the controller is here too. */
#ifndef CARP_OVERLAY_H
#define CARP_OVERLAY_H

#include <stddef.h>

#include "carpenter/cluster.h"
#include "carpenter/controller.h"
#include "carpenter/nodeoverlay.h"
#include "carpenter/nodepool.h"
#include "carpenter/provider.h"

/* Sorts overlays strongest first (weight descending, then name
 * descending: Karpenter's OrderByWeight). */
void carp_overlays_sort(const struct carp_nodeoverlay **v, size_t n);

/* The overlays in the cache that are in force, strongest first; *out is
 * freed with carp_free (NULL when there are none). */
size_t carp_overlays_in_force(const struct carp_cluster *c,
                              const struct carp_nodeoverlay ***out);

/* Applies overlays (strongest first) to the instance types of NodePool np
 * of class nodeclass, in place: offering prices (and each type's price,
 * the cheapest of its offerings), and capacity and allocatable of
 * extended resources. Returns the number of types changed. */
size_t carp_overlays_apply(const struct carp_nodeoverlay *const *ovs, size_t n,
                           const struct carp_nodepool *np,
                           const char *nodeclass,
                           struct carp_provider_instance_types *types);

/* The instance types of np's class with the overlays in force applied:
 * carp_provider_instance_types() followed by carp_overlays_apply(). */
int carp_overlays_instance_types(const struct carp_cluster *c,
                                 struct carp_provider *p,
                                 const char *controller,
                                 const struct carp_nodepool *np,
                                 const struct carp_nodeclass *nc,
                                 struct carp_provider_instance_types *out);

/* One NodePool and its class's instance types, for the conflict check. */
struct carp_overlay_pool {
  const struct carp_nodepool *np;
  const char *nodeclass;
  const struct carp_provider_instance_types *types;
};

/* Karpenter's conflict rule over overlays sorted strongest first (invalid
 * ones are skipped): conflict[i] is set when overlay i would change an
 * offering price or a type's resource that an overlay of the same weight
 * earlier in the order changes, in any pool. */
void carp_overlays_conflicts(const struct carp_nodeoverlay *const *ovs,
                             size_t n, const struct carp_overlay_pool *pools,
                             size_t npools, int *conflict);

/* The NodeOverlay controller ("nodeoverlay.controller"): evaluates every
 * overlay against every NodePool's instance types and writes each one's
 * ValidationSucceeded and Ready conditions. */
int carp_nodeoverlay_controller_new(const struct carp_controller_env *env,
                                    struct carp_controller **out);

/* The hourly price of NodeClaims' offerings, as the provisioner saw them
 * (their NodePool's view of their class's types, NodeOverlays applied):
 * the instance types are read once per (class, pool) and kept until the
 * book is freed, so one pass over many NodeClaims asks the provider a few
 * times only. Used by disruption (savings) and the cost metric. */
struct carp_price_book;
struct carp_price_book *carp_price_book_new(const struct carp_cluster *c,
                                            struct carp_provider *provider,
                                            const char *controller);
/* The price of the claim's offering (its instance type in its zone; the
 * type's price when the zone has none), or -1 when unknown: no instance
 * type label, no class, or a type its class no longer offers. */
double carp_price_book_claim(struct carp_price_book *b,
                             const struct carp_nodeclaim *nc);
void carp_price_book_free(struct carp_price_book *b);
/* The price of type among t in zone (the type's price when the zone has
 * no offering of it, or zone is NULL), or -1 when t has no such type. */
double carp_instance_type_price(const struct carp_provider_instance_types *t,
                                const char *type, const char *zone);

#endif
