/* Module api (internal/api). NodeOverlay (karpenter.sh/v1alpha1,
 * cluster-scoped; Karpenter 1.7+): adjusts the instance types the scheduler
 * sees - the price of the offerings that match its requirements (price sets it,
 * priceAdjustment changes it by an amount or a percentage) and the capacity of
 * extended resources of the matching types. When several match, the highest
 * weight wins; overlays of equal weight that change the same offering's
 * price or the same resource of a type conflict. docs/api.md#nodeoverlay.
 *
 * Decoding never fails because a rule is broken: valid and invalid_reason
 * carry carp_nodeoverlay_validate()'s result (every schema and CEL rule of
 * crds/karpenter.sh_nodeoverlays.yaml), which the NodeOverlay controller
 * reports as ValidationSucceeded=False, reason RuntimeValidation. A field
 * of the wrong JSON type fails the decode (CARP_EPARSE). */
#ifndef CARP_NODEOVERLAY_H
#define CARP_NODEOVERLAY_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/api_types.h"
#include "carpenter/buf.h"
#include "carpenter/conditions.h"
#include "carpenter/object.h"

#define CARP_NODEOVERLAY_VERSION "v1alpha1"
#define CARP_NODEOVERLAY_KIND    "NodeOverlay"

/* Ready = ValidationSucceeded. False reasons: RuntimeValidation (a rule is
 * broken; the message says which), Conflict. */
#define CARP_REASON_RUNTIME_VALIDATION "RuntimeValidation"
#define CARP_REASON_CONFLICT           "Conflict"
extern const struct carp_condset carp_condset_nodeoverlay;

enum carp_overlay_price {
  CARP_OVERLAY_PRICE_NONE = 0,
  CARP_OVERLAY_PRICE_SET,     /* price: "5.00" */
  CARP_OVERLAY_PRICE_ADD,     /* priceAdjustment: "+0.5", "-1.2" */
  CARP_OVERLAY_PRICE_PERCENT, /* priceAdjustment: "+10%", "-15%" */
};

struct carp_nodeoverlay {
  struct carp_objmeta meta;
  struct carp_requirement *requirements;
  uint32_t nrequirements;
  enum carp_overlay_price price_kind;
  double price; /* the price, the amount or the percentage (signed) */
  struct carp_resources capacity; /* extended resources only */
  int32_t weight;                 /* 0 when unset */
  struct carp_conditions conditions;
  int valid;
  char *invalid_reason; /* NULL when valid */
};

extern const struct carp_kind carp_kind_nodeoverlay;

/* Every schema and CEL rule of the CRD on a NodeOverlay's JSON. Returns 0,
 * or CARP_EINVALID with every problem in *reason. */
int carp_nodeoverlay_validate(yajl_val obj, char **reason);

/* A price changed by an overlay (Karpenter's AdjustedPrice): the price it
 * sets, or price plus the amount or percentage, never below 0. */
double carp_nodeoverlay_price(const struct carp_nodeoverlay *ov, double price);

/* Whether the overlay is in force: valid and found Ready (no conflict) by
 * the controller for its current generation. */
int carp_nodeoverlay_in_force(const struct carp_nodeoverlay *ov);

#endif
