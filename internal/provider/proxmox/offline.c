/* offline.c: the Proxmox provider's instance types without Proxmox, for
 * `carpenter simulate` (see include/carpenter/pve.h).
 *
 * The live provider offers each type of a class in every (region, host)
 * where the class's template is found, available while the host has room.
 * Offline there are no hosts to ask, so the zones come from what the
 * snapshot shows: the class's status.templates (where the NodeClass
 * controller last found a template), else the zones its nodes run in
 * (carp_pve_offline_add_zone), else spec.zones in spec.regions. Every
 * offering is available: host capacity is unknown. Types, capacity,
 * allocatable and prices are computed by the same code as the live
 * provider's (pve_type_fill). Nothing here does I/O, so create, delete,
 * get and list are refused. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/nodeclass.h"
#include "pve_int.h"

struct place {
  char *nodeclass; /* NULL: every class */
  char region[64];
  char zone[64];
};

struct disk {
  char *nodeclass;
  int64_t bytes;
};

struct offline {
  struct carp_provider base;
  uv_loop_t *loop;
  struct place *places;
  size_t nplaces;
  struct disk *disks;
  size_t ndisks;
  uv_idle_t idle; /* close's callback runs from the loop */
  void (*close_cb)(void *arg);
  void *close_arg;
  int closing;
};

static struct offline *O(struct carp_provider *p)
{
  return carp_container_of(p, struct offline, base);
}

static int listed(const struct carp_strlist *l, const char *s)
{
  uint32_t i;
  for (i = 0; i < l->n; i++)
    if (!strcmp(l->v[i], s))
      return 1;
  return 0;
}

/* spec.regions and spec.zones, when set, limit where the class launches. */
static int allowed(const struct carp_nodeclass *nc, const char *region,
                   const char *zone)
{
  return (!nc->spec.regions.n || listed(&nc->spec.regions, region)) &&
         (!nc->spec.zones.n || listed(&nc->spec.zones, zone));
}

static void add_offering(struct carp_provider_offering **v, size_t *n,
                         const char *region, const char *zone)
{
  size_t i;
  for (i = 0; i < *n; i++)
    if (!strcmp((*v)[i].region, region) && !strcmp((*v)[i].zone, zone))
      return;
  *v = carp_reallocarray(*v, *n + 1, sizeof(**v));
  memset(&(*v)[*n], 0, sizeof(**v));
  snprintf((*v)[*n].region, sizeof((*v)[0].region), "%s", region);
  snprintf((*v)[*n].zone, sizeof((*v)[0].zone), "%s", zone);
  (*v)[*n].capacity_type = CARP_CAPACITY_TYPE_ON_DEMAND;
  (*v)[*n].available = 1;
  (*n)++;
}

/* The (region, zone) pairs of a class, in the order of preference above. */
static size_t zones_of(struct offline *o, const struct carp_nodeclass *nc,
                       struct carp_provider_offering **out)
{
  struct carp_provider_offering *v = NULL;
  size_t n = 0, i;
  uint32_t r, z;
  for (i = 0; i < nc->status.ntemplates; i++) {
    const struct carp_nodeclass_template *t = &nc->status.templates[i];
    if (t->region && t->zone && allowed(nc, t->region, t->zone))
      add_offering(&v, &n, t->region, t->zone);
  }
  for (i = 0; !n && i < o->nplaces; i++) {
    const struct place *p = &o->places[i];
    if ((!p->nodeclass || !strcmp(p->nodeclass, nc->meta.name)) &&
        allowed(nc, p->region, p->zone))
      add_offering(&v, &n, p->region, p->zone);
  }
  if (!n) {
    const struct carp_strlist *regions =
        nc->spec.regions.n ? &nc->spec.regions : &nc->status.regions;
    const struct carp_strlist *zones =
        nc->spec.zones.n ? &nc->spec.zones : &nc->status.zones;
    for (r = 0; r < regions->n; r++)
      for (z = 0; z < zones->n; z++)
        add_offering(&v, &n, regions->v[r], zones->v[z]);
  }
  *out = v;
  return n;
}

static int64_t template_disk(struct offline *o, const struct carp_nodeclass *nc)
{
  size_t i;
  for (i = 0; i < o->ndisks; i++)
    if (!strcmp(o->disks[i].nodeclass, nc->meta.name))
      return o->disks[i].bytes;
  return 0;
}

static int v_instance_types(struct carp_provider *p,
                            const struct carp_nodeclass *nc,
                            struct carp_provider_instance_types *out)
{
  struct offline *o = O(p);
  struct carp_instance_type *types = NULL;
  struct carp_provider_offering *zones = NULL;
  size_t ntypes = 0, nzones, i, j;
  int64_t tdisk = template_disk(o, nc);
  int rc;

  memset(out, 0, sizeof(*out));
  rc = carp_nodeclass_instance_types(&nc->spec, &types, &ntypes);
  if (rc)
    return rc;
  nzones = zones_of(o, nc, &zones);
  out->v = carp_calloc(ntypes ? ntypes : 1, sizeof(*out->v));
  out->n = ntypes;
  for (i = 0; i < ntypes; i++) {
    struct carp_provider_instance_type *t = &out->v[i];
    pve_type_fill(&nc->spec, &types[i], tdisk, t);
    t->nofferings = nzones;
    t->offerings = carp_calloc(nzones ? nzones : 1, sizeof(*t->offerings));
    for (j = 0; j < nzones; j++) {
      t->offerings[j] = zones[j];
      t->offerings[j].price = t->price;
    }
  }
  carp_free(zones);
  carp_free(types);
  return 0;
}

static int v_is_drifted(struct carp_provider *p,
                        const struct carp_nodeclaim *claim,
                        const struct carp_nodeclass *nc, const char **reason)
{
  (void)p;
  (void)claim;
  (void)nc;
  *reason = "";
  return 0;
}

static int v_create(struct carp_provider *p,
                    const struct carp_provider_create_req *req,
                    carp_provider_create_cb cb, void *arg,
                    struct carp_provider_op **out)
{
  return CARP_EUNSUPPORTED;
}

static int v_delete(struct carp_provider *p,
                    const struct carp_provider_delete_req *req,
                    carp_provider_done_cb cb, void *arg,
                    struct carp_provider_op **out)
{
  return CARP_EUNSUPPORTED;
}

static int v_get(struct carp_provider *p, const char *provider_id,
                 carp_provider_get_cb cb, void *arg,
                 struct carp_provider_op **out)
{
  return CARP_EUNSUPPORTED;
}

static int v_list(struct carp_provider *p, carp_provider_list_cb cb, void *arg,
                  struct carp_provider_op **out)
{
  return CARP_EUNSUPPORTED;
}

static void v_cancel(struct carp_provider *p, struct carp_provider_op *op)
{
  /* Nothing is ever pending. */
}

static void on_closed(uv_handle_t *h)
{
  struct offline *o = h->data;
  void (*cb)(void *) = o->close_cb;
  void *arg = o->close_arg;
  size_t i;
  for (i = 0; i < o->nplaces; i++)
    carp_free(o->places[i].nodeclass);
  for (i = 0; i < o->ndisks; i++)
    carp_free(o->disks[i].nodeclass);
  carp_free(o->places);
  carp_free(o->disks);
  carp_free(o);
  if (cb)
    cb(arg);
}

static void v_close(struct carp_provider *p, void (*cb)(void *), void *arg)
{
  struct offline *o = O(p);
  if (o->closing)
    return;
  o->closing = 1;
  o->close_cb = cb;
  o->close_arg = arg;
  uv_close((uv_handle_t *)&o->idle, on_closed);
}

static const struct carp_provider_ops offline_ops = {
    .name = "proxmox",
    .create = v_create,
    .del = v_delete,
    .get = v_get,
    .list = v_list,
    .instance_types = v_instance_types,
    .is_drifted = v_is_drifted,
    .cancel = v_cancel,
    .close = v_close,
};

int carp_pve_offline_new(uv_loop_t *loop, struct carp_provider **out)
{
  struct offline *o;
  if (!loop || !out)
    return CARP_EINVAL;
  o = CARP_NEW(struct offline);
  o->base.ops = &offline_ops;
  o->loop = loop;
  uv_idle_init(loop, &o->idle);
  o->idle.data = o;
  *out = &o->base;
  return 0;
}

void carp_pve_offline_add_zone(struct carp_provider *p, const char *nodeclass,
                               const char *region, const char *zone)
{
  struct offline *o = O(p);
  struct place *pl;
  size_t i;
  if (!region || !zone)
    return;
  for (i = 0; i < o->nplaces; i++) {
    pl = &o->places[i];
    if (!strcmp(pl->region, region) && !strcmp(pl->zone, zone) &&
        (nodeclass ? pl->nodeclass && !strcmp(pl->nodeclass, nodeclass)
                   : !pl->nodeclass))
      return;
  }
  o->places = carp_reallocarray(o->places, o->nplaces + 1, sizeof(*pl));
  pl = &o->places[o->nplaces++];
  memset(pl, 0, sizeof(*pl));
  pl->nodeclass = nodeclass ? carp_strdup(nodeclass) : NULL;
  snprintf(pl->region, sizeof(pl->region), "%s", region);
  snprintf(pl->zone, sizeof(pl->zone), "%s", zone);
}

void carp_pve_offline_set_template_disk(struct carp_provider *p,
                                        const char *nodeclass, int64_t bytes)
{
  struct offline *o = O(p);
  size_t i;
  for (i = 0; i < o->ndisks; i++)
    if (!strcmp(o->disks[i].nodeclass, nodeclass)) {
      if (bytes > o->disks[i].bytes)
        o->disks[i].bytes = bytes;
      return;
    }
  o->disks = carp_reallocarray(o->disks, o->ndisks + 1, sizeof(*o->disks));
  o->disks[o->ndisks].nodeclass = carp_strdup(nodeclass);
  o->disks[o->ndisks].bytes = bytes;
  o->ndisks++;
}
