/* instancetypes.c: offerings and placement - which (region, zone) can take
 * a VM of a given instance type now, and which one a create should use.
 *
 * A zone (Proxmox host) is usable for a NodeClass when it is online and
 * not in HA maintenance mode (hosts.c), its region and name are allowed
 * (NodeClass regions/zones, and for a create the NodeClaim's topology
 * requirements) and the template is available on it. An offering is available
 * when the host's free capacity (inventory.c) fits the type, the host has the
 * type's devices free (devices.c), and the (type, region, zone) is not in the
 * insufficient-capacity cache. Placement picks, for the cheapest type that has
 * any available offering, the host the NodeClass's strategy prefers: Spread
 * (fewest of this cluster's VMs, then most free memory), Pack (least free
 * memory that still fits) or LeastLoaded (most free memory, then lowest CPU
 * load); ties go by name so the choice is stable. When nothing fits, every
 * offering that was eligible but full goes into the
 * cache, as Karpenter's providers do with unavailable offerings. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/nodeclass.h"
#include "carpenter/scheduling.h"
#include "pve_int.h"

static int in_list(char *const *v, size_t n, const char *s)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (!strcmp(v[i], s))
      return 1;
  return 0;
}

int pve_zone_allowed(const struct pve_vm_spec *s, const char *region,
                     const char *zone)
{
  if (s->nregions && !in_list(s->regions, s->nregions, region))
    return 0;
  if (s->nzones && !in_list(s->zones, s->nzones, zone))
    return 0;
  if (!carp_requirements_allow(s->reqs, s->nreqs, CARP_LABEL_REGION, region))
    return 0;
  if (!carp_requirements_allow(s->reqs, s->nreqs, CARP_LABEL_ZONE, zone))
    return 0;
  return 1;
}

static const struct pve_guest *template_of(const struct pve_region *r,
                                           const struct pve_vm_spec *s,
                                           const char *zone)
{
  struct pve_template_query q;
  q.name = s->tmpl_name;
  q.tags = (const char *const *)s->tmpl_tags;
  q.ntags = s->ntmpl_tags;
  q.shared = s->tmpl_shared;
  return pve_template_for(r, &q, zone);
}

int pve_host_usable(const struct pve_region *r, const struct pve_vm_spec *s,
                    const struct pve_host *h)
{
  return pve_host_open(h) && template_of(r, s, h->name) != NULL;
}

struct cand {
  struct pve_region *r;
  const struct pve_host *h;
  const struct pve_guest *tmpl;
  struct pve_capacity cap;
};

/* Whether a is better than b under the strategy. */
static int better(int placement, const struct cand *a, const struct cand *b,
                  int64_t need_mem)
{
  int c;
  (void)need_mem;
  switch (placement) {
  case CARP_PLACEMENT_PACK:
    if (a->cap.mem_free != b->cap.mem_free)
      return a->cap.mem_free < b->cap.mem_free;
    break;
  case CARP_PLACEMENT_LEAST_LOADED:
    if (a->cap.mem_free != b->cap.mem_free)
      return a->cap.mem_free > b->cap.mem_free;
    if (a->h->cpu != b->h->cpu)
      return a->h->cpu < b->h->cpu;
    break;
  default: /* Spread */
    if (a->cap.carp_vms != b->cap.carp_vms)
      return a->cap.carp_vms < b->cap.carp_vms;
    if (a->cap.mem_free != b->cap.mem_free)
      return a->cap.mem_free > b->cap.mem_free;
    break;
  }
  c = strcmp(a->h->name, b->h->name);
  if (c)
    return c < 0;
  return strcmp(a->r->name, b->r->name) < 0;
}

static int fits(const struct pve_capacity *cap, const struct pve_type *t)
{
  return cap->cpu_free >= t->cpu && cap->mem_free >= t->memory;
}

static int place(struct pve_provider *pp, const struct pve_vm_spec *s,
                 const char *only_region, const char *only_zone,
                 const char *only_type, struct pve_choice *out, char *msg,
                 size_t msg_size, int cache);

int pve_place(struct pve_provider *pp, const struct pve_vm_spec *s,
              const char *only_region, const char *only_zone,
              const char *only_type, struct pve_choice *out, char *msg,
              size_t msg_size)
{
  return place(pp, s, only_region, only_zone, only_type, out, msg, msg_size, 1);
}

int pve_place_quiet(struct pve_provider *pp, const struct pve_vm_spec *s,
                    const char *only_region, const char *only_zone,
                    struct pve_choice *out, char *msg, size_t msg_size)
{
  return place(pp, s, only_region, only_zone, NULL, out, msg, msg_size, 0);
}

static int place(struct pve_provider *pp, const struct pve_vm_spec *s,
                 const char *only_region, const char *only_zone,
                 const char *only_type, struct pve_choice *out, char *msg,
                 size_t msg_size, int cache)
{
  size_t ti, ri, hi;
  int any_host = 0, region_err = 0, any_type = 0;
  const char *region_msg = "";
  char full[256] = "", nodev[384] = "", why[384];
  int nodev_rank = PVE_DEVS_NO_MAPPING - 1;

  for (ti = 0; ti < s->ntypes; ti++) {
    const struct pve_type *t = &s->types[ti];
    struct cand best;
    int have = 0;
    if (only_type && strcmp(t->name, only_type) != 0)
      continue;
    any_type = 1;
    memset(&best, 0, sizeof(best));
    for (ri = 0; ri < pp->nregions; ri++) {
      struct pve_region *r = &pp->regions[ri];
      if (only_region && strcmp(r->name, only_region) != 0)
        continue;
      if (s->nregions && !in_list(s->regions, s->nregions, r->name))
        continue;
      if (!carp_requirements_allow(s->reqs, s->nreqs, CARP_LABEL_REGION,
                                   r->name))
        continue;
      if (r->status != 0 || !r->inv.fetched_ms) {
        if (!region_err) {
          region_err = r->status ? r->status : CARP_EAGAIN;
          region_msg = r->message[0] ? r->message : "region not refreshed yet";
        }
        continue;
      }
      for (hi = 0; hi < r->inv.nhosts; hi++) {
        struct cand c;
        const struct pve_host *h = &r->inv.hosts[hi];
        if (only_zone && strcmp(h->name, only_zone) != 0)
          continue;
        if (!pve_host_open(h) || !pve_zone_allowed(s, r->name, h->name))
          continue;
        c.tmpl = template_of(r, s, h->name);
        if (!c.tmpl)
          continue;
        any_host = 1;
        if (pve_ice_has(pp, t->name, r->name, h->name))
          continue;
        c.r = r;
        c.h = h;
        pve_region_capacity(r, h, s->cpu_over, s->mem_over, s->reserved_mem,
                            &c.cap);
        if (!fits(&c.cap, t)) {
          if (!full[0])
            snprintf(full, sizeof(full),
                     "%s on %s/%s has %lld vCPUs and %lld MiB free", t->name,
                     r->name, h->name, (long long)c.cap.cpu_free,
                     (long long)(c.cap.mem_free / (1024 * 1024)));
          continue;
        }
        {
          /* say the most telling: busy over absent over unknown */
          int fit = pve_type_devices_fit(r, h->name, t, why, sizeof(why));
          if (fit != 1) {
            if (fit > nodev_rank) {
              nodev_rank = fit;
              snprintf(nodev, sizeof(nodev), "%s", why);
            }
            continue;
          }
        }
        if (!have || better(s->placement, &c, &best, t->memory)) {
          best = c;
          have = 1;
        }
      }
    }
    if (have) {
      out->type = ti;
      out->region = best.r;
      out->host = best.h;
      out->tmpl = best.tmpl;
      return 0;
    }
  }
  if (!any_type) {
    snprintf(msg, msg_size,
             "no instance type of the NodeClass satisfies the "
             "NodeClaim's requirements and requests");
    return CARP_EINSUFFICIENT_CAPACITY;
  }
  if (!any_host) {
    if (region_err) {
      snprintf(msg, msg_size, "%s", region_msg);
      return region_err;
    }
    snprintf(msg, msg_size,
             "no allowed host is online, out of maintenance and has a "
             "matching template%s%s",
             only_zone ? " in zone " : "", only_zone ? only_zone : "");
    return CARP_ENODECLASS_NOT_READY;
  }
  /* Every eligible offering was full (or cached as such): cache them. */
  for (ti = 0; cache && ti < s->ntypes; ti++) {
    const struct pve_type *t = &s->types[ti];
    if (only_type && strcmp(t->name, only_type) != 0)
      continue;
    for (ri = 0; ri < pp->nregions; ri++) {
      struct pve_region *r = &pp->regions[ri];
      if ((only_region && strcmp(r->name, only_region) != 0) || r->status ||
          !r->inv.fetched_ms)
        continue;
      for (hi = 0; hi < r->inv.nhosts; hi++) {
        const struct pve_host *h = &r->inv.hosts[hi];
        if ((only_zone && strcmp(h->name, only_zone) != 0) ||
            !pve_host_open(h) || !pve_zone_allowed(s, r->name, h->name) ||
            !template_of(r, s, h->name))
          continue;
        if (!pve_ice_has(pp, t->name, r->name, h->name))
          pve_ice_add(pp, t->name, r->name, h->name);
      }
    }
  }
  snprintf(msg, msg_size,
           "no host in the allowed zones has room for the NodeClaim's "
           "instance types%s%s%s%s",
           full[0] || nodev[0] ? ": " : " (all recently found full)", full,
           full[0] && nodev[0] ? "; " : "", nodev);
  return CARP_EINSUFFICIENT_CAPACITY;
}

size_t pve_offerings(struct pve_provider *pp, const struct pve_vm_spec *s,
                     const struct pve_type *t,
                     struct carp_provider_offering **out)
{
  size_t ri, hi, n = 0, cap = 0;
  struct carp_provider_offering *v = NULL;
  for (ri = 0; ri < pp->nregions; ri++) {
    struct pve_region *r = &pp->regions[ri];
    if (s->nregions && !in_list(s->regions, s->nregions, r->name))
      continue;
    if (r->status != 0 || !r->inv.fetched_ms)
      continue;
    for (hi = 0; hi < r->inv.nhosts; hi++) {
      const struct pve_host *h = &r->inv.hosts[hi];
      struct pve_capacity c;
      struct carp_provider_offering *o;
      if (!pve_host_open(h) || !pve_zone_allowed(s, r->name, h->name) ||
          !template_of(r, s, h->name))
        continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 8;
        v = carp_reallocarray(v, cap, sizeof(*v));
      }
      o = &v[n++];
      memset(o, 0, sizeof(*o));
      snprintf(o->region, sizeof(o->region), "%s", r->name);
      snprintf(o->zone, sizeof(o->zone), "%s", h->name);
      o->capacity_type = CARP_CAPACITY_TYPE_ON_DEMAND;
      o->price = t->price;
      pve_region_capacity(r, h, s->cpu_over, s->mem_over, s->reserved_mem, &c);
      o->available = fits(&c, t) &&
                     pve_type_devices_fit(r, h->name, t, NULL, 0) == 1 &&
                     !pve_ice_has(pp, t->name, r->name, h->name);
    }
  }
  *out = v;
  return n;
}
