/* nodeoverlay.c: the cached NodeOverlay (karpenter.sh/v1alpha1) - its
 * requirements, price or price adjustment, extended-resource capacity and
 * weight, its conditions and validation result; the price arithmetic and
 * the status patch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeoverlay.h"

static const char *const overlay_deps[] = {CARP_COND_VALIDATION_SUCCEEDED};
const struct carp_condset carp_condset_nodeoverlay = {CARP_COND_READY,
                                                      overlay_deps, 1};

static void overlay_free(struct carp_objmeta *m)
{
  struct carp_nodeoverlay *ov = (struct carp_nodeoverlay *)m;
  carp_objmeta_cleanup(&ov->meta);
  carp_requirements_free(ov->requirements, ov->nrequirements);
  carp_resources_cleanup(&ov->capacity);
  carp_conditions_cleanup(&ov->conditions);
  carp_free(ov->invalid_reason);
  carp_free(ov);
}

/* "+10%", "-0.5", "5.25": lenient (an unreadable value leaves the kind
 * NONE; validation reports it). */
static void read_price(struct carp_nodeoverlay *ov, const char *price,
                       const char *adj)
{
  char *end;
  double v;
  if (price && *price) {
    v = strtod(price, &end);
    if (!*end && v >= 0) {
      ov->price_kind = CARP_OVERLAY_PRICE_SET;
      ov->price = v;
    }
    return;
  }
  if (!adj || (*adj != '+' && *adj != '-'))
    return;
  v = strtod(adj, &end);
  if (end == adj)
    return;
  if (*end == '%' && !end[1]) {
    ov->price_kind = CARP_OVERLAY_PRICE_PERCENT;
    ov->price = v;
  } else if (!*end) {
    ov->price_kind = CARP_OVERLAY_PRICE_ADD;
    ov->price = v;
  }
}

static int overlay_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_nodeoverlay *ov = CARP_NEW(struct carp_nodeoverlay);
  yajl_val spec, reqs, cap, status, conds;
  const char *price = NULL, *adj = NULL;
  int present;
  int64_t w;
  unsigned seen;

  if (carp_objmeta_decode(obj, api_keep_annotation, &ov->meta, err)) {
    carp_free(ov);
    return CARP_EPARSE;
  }
  ov->meta.kind = &carp_kind_nodeoverlay;
  if (api_obj(obj, "spec", "", &spec, err) ||
      api_arr(spec, "requirements", "spec", &reqs, err) ||
      carp_requirements_decode(reqs, "spec.requirements", 1, &ov->requirements,
                               &ov->nrequirements, err) ||
      api_str(spec, "price", "spec", &price, err) ||
      api_str(spec, "priceAdjustment", "spec", &adj, err) ||
      api_obj(spec, "capacity", "spec", &cap, err) ||
      api_resources(cap, "spec.capacity", &ov->capacity, &seen, err) ||
      api_int(spec, "weight", "spec", &present, &w, err) ||
      api_obj(obj, "status", "", &status, err) ||
      api_arr(status, "conditions", "status", &conds, err) ||
      carp_conditions_decode(conds, "status.conditions", &ov->conditions,
                             err)) {
    overlay_free(&ov->meta);
    return CARP_EPARSE;
  }
  read_price(ov, price, adj);
  ov->weight = present && w >= 1 && w <= 10000 ? (int32_t)w : 0;
  ov->valid = carp_nodeoverlay_validate(obj, &ov->invalid_reason) == 0;
  *out = &ov->meta;
  return 0;
}

const struct carp_kind carp_kind_nodeoverlay = {
    .name = CARP_NODEOVERLAY_KIND,
    .group = CARP_KARPENTER_GROUP,
    .version = CARP_NODEOVERLAY_VERSION,
    .resource = "nodeoverlays",
    .namespaced = 0,
    .decode = overlay_decode,
    .free = overlay_free,
};

double carp_nodeoverlay_price(const struct carp_nodeoverlay *ov, double price)
{
  double p = price;
  switch (ov->price_kind) {
  case CARP_OVERLAY_PRICE_SET:
    return ov->price;
  case CARP_OVERLAY_PRICE_ADD:
    p = price + ov->price;
    break;
  case CARP_OVERLAY_PRICE_PERCENT:
    p = price * (1 + ov->price / 100);
    break;
  default:
    break;
  }
  return p >= 0 ? p : 0;
}

int carp_nodeoverlay_in_force(const struct carp_nodeoverlay *ov)
{
  const struct carp_condition *v =
      carp_conditions_get(&ov->conditions, CARP_COND_VALIDATION_SUCCEEDED);
  return ov->valid && !ov->meta.deletion_ms && v &&
         v->status == CARP_COND_TRUE &&
         v->observed_generation == ov->meta.generation;
}
