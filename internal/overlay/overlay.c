/* overlay.c: NodeOverlays applied to a NodePool's instance types, and
 * Karpenter's conflict rule (see include/carpenter/overlay.h).
 *
 * A requirement of an overlay is matched against what a node of the type
 * would carry: its instance-type, arch, os, family, cpu and memory labels,
 * its GPU labels, the NodePool's name and template labels and the class's
 * name; the zone, region and capacity-type requirements against each
 * offering. As in Karpenter, a key the type does not define satisfies
 * only NotIn and DoesNotExist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/map.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/overlay.h"
#include "carpenter/scheduling.h"

static int by_strength(const void *a, const void *b)
{
  const struct carp_nodeoverlay *x = *(const struct carp_nodeoverlay *const *)a;
  const struct carp_nodeoverlay *y = *(const struct carp_nodeoverlay *const *)b;
  if (x->weight != y->weight)
    return x->weight > y->weight ? -1 : 1;
  return strcmp(y->meta.name ? y->meta.name : "",
                x->meta.name ? x->meta.name : "");
}

void carp_overlays_sort(const struct carp_nodeoverlay **v, size_t n)
{
  if (n > 1)
    qsort(v, n, sizeof(*v), by_strength);
}

size_t carp_overlays_in_force(const struct carp_cluster *c,
                              const struct carp_nodeoverlay ***out)
{
  struct carp_store *st;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  const struct carp_nodeoverlay **v;
  size_t n = 0;
  *out = NULL;
  if (!c->nodeoverlays)
    return 0;
  st = carp_informer_store(c->nodeoverlays);
  if (!carp_store_len(st))
    return 0;
  v = carp_calloc(carp_store_len(st), sizeof(*v));
  carp_store_iter_init(&it);
  while ((m = carp_store_next(st, &it))) {
    const struct carp_nodeoverlay *ov = (const struct carp_nodeoverlay *)m;
    if (carp_nodeoverlay_in_force(ov))
      v[n++] = ov;
  }
  if (!n) {
    carp_free(v);
    return 0;
  }
  carp_overlays_sort(v, n);
  *out = v;
  return n;
}

/* ---- matching ---- */

static int offering_key(const char *key)
{
  return !strcmp(key, CARP_LABEL_ZONE) || !strcmp(key, CARP_LABEL_REGION) ||
         !strcmp(key, CARP_LABEL_CAPACITY_TYPE);
}

/* The label key of a node of type t in pool np, or NULL. */
static const char *type_label(const struct carp_provider_instance_type *t,
                              const struct carp_nodepool *np,
                              const char *nodeclass, const char *key, char *buf,
                              size_t size)
{
  size_t i;
  if (!strcmp(key, CARP_LABEL_INSTANCE_TYPE))
    return t->name;
  if (!strcmp(key, CARP_LABEL_ARCH))
    return t->arch ? t->arch : "amd64";
  if (!strcmp(key, CARP_LABEL_OS))
    return t->os ? t->os : "linux";
  if (!strcmp(key, CARP_LABEL_INSTANCE_FAMILY))
    return t->family[0] ? t->family : NULL;
  if (!strcmp(key, CARP_LABEL_INSTANCE_CPU)) {
    snprintf(buf, size, "%d", (int)t->cpu);
    return buf;
  }
  if (!strcmp(key, CARP_LABEL_INSTANCE_MEMORY)) {
    snprintf(buf, size, "%lld", (long long)(t->memory >> 20));
    return buf;
  }
  if (!strcmp(key, CARP_LABEL_NODEPOOL))
    return np->meta.name;
  if (!strcmp(key, CARP_LABEL_NODECLASS_KEY))
    return nodeclass;
  for (i = 0; i < t->nlabels; i++)
    if (!strcmp(t->labels[i].key, key))
      return t->labels[i].absent ? NULL : t->labels[i].value;
  return carp_kvset_get(np->labels, key);
}

static int type_matches(const struct carp_nodeoverlay *ov,
                        const struct carp_provider_instance_type *t,
                        const struct carp_nodepool *np, const char *nodeclass)
{
  char buf[32];
  uint32_t i;
  for (i = 0; i < ov->nrequirements; i++) {
    const struct carp_requirement *r = &ov->requirements[i];
    if (offering_key(r->key))
      continue;
    if (!carp_requirements_allow(
            r, 1, r->key,
            type_label(t, np, nodeclass, r->key, buf, sizeof(buf))))
      return 0;
  }
  return 1;
}

/* o NULL: a type without offerings (no zone, region or capacity type). */
static int offering_matches(const struct carp_nodeoverlay *ov,
                            const struct carp_provider_offering *o)
{
  uint32_t i;
  for (i = 0; i < ov->nrequirements; i++) {
    const struct carp_requirement *r = &ov->requirements[i];
    const char *v;
    if (!offering_key(r->key))
      continue;
    v = !o                                   ? NULL
        : !strcmp(r->key, CARP_LABEL_ZONE)   ? o->zone
        : !strcmp(r->key, CARP_LABEL_REGION) ? o->region
                                             : o->capacity_type;
    if (!carp_requirements_allow(r, 1, r->key, v))
      return 0;
  }
  return 1;
}

static int any_offering(const struct carp_nodeoverlay *ov,
                        const struct carp_provider_instance_type *t)
{
  size_t i;
  for (i = 0; i < t->nofferings; i++)
    if (offering_matches(ov, &t->offerings[i]))
      return 1;
  return 0;
}

/* ---- applying ---- */

static void set_extended(struct carp_resources *r, const char *name,
                         int64_t value)
{
  carp_resources_add_extended(r, name, value - carp_resources_get(r, name));
}

static int named(const char *const *v, size_t n, const char *s)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (!strcmp(v[i], s))
      return 1;
  return 0;
}

static int apply_type(const struct carp_nodeoverlay *const *ovs, size_t n,
                      const struct carp_nodepool *np, const char *nodeclass,
                      struct carp_provider_instance_type *t)
{
  const char **done = NULL;
  size_t ndone = 0, i, k, o;
  int changed = 0;
  char *matches = carp_calloc(n ? n : 1, 1);
  for (k = 0; k < n; k++)
    matches[k] = (char)type_matches(ovs[k], t, np, nodeclass);
  /* prices: the strongest overlay with a price, per offering */
  for (o = 0; o < t->nofferings; o++)
    for (k = 0; k < n; k++)
      if (matches[k] && ovs[k]->price_kind != CARP_OVERLAY_PRICE_NONE &&
          offering_matches(ovs[k], &t->offerings[o])) {
        t->offerings[o].price =
            carp_nodeoverlay_price(ovs[k], t->offerings[o].price);
        changed = 1;
        break;
      }
  if (changed && t->nofferings) {
    t->price = t->offerings[0].price;
    for (o = 1; o < t->nofferings; o++)
      if (t->offerings[o].price < t->price)
        t->price = t->offerings[o].price;
  } else if (!t->nofferings) {
    for (k = 0; k < n; k++)
      if (matches[k] && ovs[k]->price_kind != CARP_OVERLAY_PRICE_NONE &&
          offering_matches(ovs[k], NULL)) {
        t->price = carp_nodeoverlay_price(ovs[k], t->price);
        changed = 1;
        break;
      }
  }
  /* capacity: the strongest overlay that names it, per resource, for a
   * type one of whose offerings matches */
  for (k = 0; k < n; k++) {
    const struct carp_resources *cap = &ovs[k]->capacity;
    if (!matches[k] || !cap->nextended ||
        !(t->nofferings ? any_offering(ovs[k], t)
                        : offering_matches(ovs[k], NULL)))
      continue;
    for (i = 0; i < cap->nextended; i++) {
      const char *name = cap->extended[i].name;
      if (named(done, ndone, name))
        continue;
      done = carp_reallocarray(done, ndone + 1, sizeof(*done));
      done[ndone++] = name;
      set_extended(&t->capacity, name, cap->extended[i].value);
      set_extended(&t->allocatable, name, cap->extended[i].value);
      changed = 1;
    }
  }
  carp_free(done);
  carp_free(matches);
  return changed;
}

size_t carp_overlays_apply(const struct carp_nodeoverlay *const *ovs, size_t n,
                           const struct carp_nodepool *np,
                           const char *nodeclass,
                           struct carp_provider_instance_types *types)
{
  size_t i, changed = 0;
  if (!n)
    return 0;
  for (i = 0; i < types->n; i++)
    changed += (size_t)apply_type(ovs, n, np, nodeclass, &types->v[i]);
  return changed;
}

int carp_overlays_instance_types(const struct carp_cluster *c,
                                 struct carp_provider *p,
                                 const char *controller,
                                 const struct carp_nodepool *np,
                                 const struct carp_nodeclass *nc,
                                 struct carp_provider_instance_types *out)
{
  const struct carp_nodeoverlay **ovs;
  size_t n;
  int rc = carp_provider_instance_types(p, controller, nc, out);
  if (rc)
    return rc;
  n = carp_overlays_in_force(c, &ovs);
  carp_overlays_apply(ovs, n, np, nc->meta.name, out);
  carp_free(ovs);
  return 0;
}

/* ---- conflicts ---- */

/* What the overlays stored so far change, by "pool\ntype\nzone" (prices)
 * and "pool\ntype" (capacity), with the weight of the weakest of them. */
struct change {
  int32_t weight;
  const struct carp_resources *names; /* capacity: the weakest one's */
};

static void key_of(char *out, size_t size, const char *pool, const char *type,
                   const char *zone)
{
  snprintf(out, size, "%s\n%s%s%s", pool, type, zone ? "\n" : "",
           zone ? zone : "");
}

static int shares_resource(const struct carp_resources *a,
                           const struct carp_resources *b)
{
  uint32_t i, j;
  for (i = 0; i < a->nextended; i++)
    for (j = 0; b && j < b->nextended; j++)
      if (!strcmp(a->extended[i].name, b->extended[j].name))
        return 1;
  return 0;
}

/* Walks the pools' types the overlay matches; store 0 checks for a
 * conflict (returns 1 on one), store 1 records the overlay's changes. */
static int walk(const struct carp_nodeoverlay *ov,
                const struct carp_overlay_pool *pools, size_t npools,
                struct carp_map *m, int store)
{
  char key[512];
  size_t p, t, o;
  for (p = 0; p < npools; p++) {
    const struct carp_overlay_pool *pl = &pools[p];
    for (t = 0; pl->types && t < pl->types->n; t++) {
      const struct carp_provider_instance_type *it = &pl->types->v[t];
      struct change *ch;
      if (!type_matches(ov, it, pl->np, pl->nodeclass) || !any_offering(ov, it))
        continue;
      for (o = 0;
           ov->price_kind != CARP_OVERLAY_PRICE_NONE && o < it->nofferings;
           o++) {
        if (!offering_matches(ov, &it->offerings[o]))
          continue;
        key_of(key, sizeof(key), pl->np->meta.name, it->name,
               it->offerings[o].zone);
        ch = carp_map_gets(m, key);
        if (!store) {
          if (ch && ch->weight == ov->weight)
            return 1;
        } else if (ch) {
          ch->weight = ov->weight;
        } else {
          ch = CARP_NEW(struct change);
          ch->weight = ov->weight;
          carp_map_puts(m, key, ch);
        }
      }
      if (!ov->capacity.nextended)
        continue;
      key_of(key, sizeof(key), pl->np->meta.name, it->name, NULL);
      ch = carp_map_gets(m, key);
      if (!store) {
        if (ch && ch->weight == ov->weight &&
            shares_resource(&ov->capacity, ch->names))
          return 1;
      } else {
        if (!ch) {
          ch = CARP_NEW(struct change);
          carp_map_puts(m, key, ch);
        }
        ch->weight = ov->weight;
        ch->names = &ov->capacity;
      }
    }
  }
  return 0;
}

void carp_overlays_conflicts(const struct carp_nodeoverlay *const *ovs,
                             size_t n, const struct carp_overlay_pool *pools,
                             size_t npools, int *conflict)
{
  struct carp_map m;
  struct carp_map_iter it;
  const char *k;
  size_t kl, i;
  void *v;
  carp_map_init(&m);
  for (i = 0; i < n; i++) {
    conflict[i] = 0;
    if (!ovs[i]->valid)
      continue;
    /* checked in every pool before anything is stored: an overlay is
     * applied whole or not at all */
    if (walk(ovs[i], pools, npools, &m, 0)) {
      conflict[i] = 1;
      continue;
    }
    walk(ovs[i], pools, npools, &m, 1);
  }
  carp_map_iter_init(&it);
  while (carp_map_next(&m, &it, &k, &kl, &v))
    carp_free(v);
  carp_map_free(&m);
}
