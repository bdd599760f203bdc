/* offerings.c: the instance type and offering gauges of Karpenter's AWS
 * provider (v1.14), for Proxmox:
 *
 *   karpenter_cloudprovider_instance_type_cpu_cores {instance_type}
 *   karpenter_cloudprovider_instance_type_memory_bytes {instance_type}
 *       the vCPUs and VM memory of each instance type
 *   karpenter_cloudprovider_instance_type_offering_available
 *       {instance_type, capacity_type, zone}: 1 when the host (zone) can
 *       take a VM of the type now, else 0
 *   karpenter_cloudprovider_instance_type_offering_price_estimate
 *       {same}: the offering's hourly price
 *
 * The instance types are the grid of each ProxmoxNodeClass a NodePool
 * uses, and the offerings one per usable Proxmox host, as the provider
 * resolves them from its inventory (the same call the provisioner makes).
 * Karpenter's offering controller asks the provider for every NodePool's
 * types once a minute and sets the gauges (available if any pool's
 * offering is; the price of the last), and its provider sets the type
 * gauges each time it resolves a type. Here the same resolution is done
 * once per scrape (shared by the four families), so the values are never
 * older than the provider's inventory, and a type or host that is gone
 * (a NodeClass changed, a host offline and dropped) has no series left,
 * where Karpenter's would keep its last value. */
#include <stdint.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"
#include "carpenter/provider.h"
#include "metricsctl_int.h"

/* A type (key: its name) or an offering (key: "type\0capacity type\0zone").
 * values: the label values, pointing into key. */
struct entry {
  double a, b; /* type: cpu, memory; offering: available, price */
  const char *values[4];
  char key[];
};

struct carp_mctl_offerings {
  uint64_t scrape;
  struct carp_map types, offers;
};

static void clear(struct carp_map *map)
{
  struct carp_map_iter it;
  const char *k;
  size_t klen;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(map, &it, &k, &klen, &v))
    carp_free(v);
  carp_map_free(map);
  carp_map_init(map);
}

/* The entry of key (n parts, NUL-separated), made when new. */
static struct entry *entry_of(struct carp_map *map, const char *const *parts,
                              size_t n, int *made)
{
  char key[320];
  size_t len = 0, i;
  struct entry *e;
  for (i = 0; i < n; i++) {
    size_t l = strlen(parts[i]);
    if (len + l + 1 > sizeof(key))
      return NULL;
    memcpy(key + len, parts[i], l + 1);
    len += l + 1;
  }
  len--; /* the last NUL is not part of the key */
  e = carp_map_get(map, key, len);
  *made = !e;
  if (e)
    return e;
  e = carp_malloc(sizeof(*e) + len + 1);
  memset(e, 0, sizeof(*e));
  memcpy(e->key, key, len + 1);
  for (i = 0, len = 0; i < n; i++) {
    e->values[i] = e->key + len;
    len += strlen(e->key + len) + 1;
  }
  e->values[n] = NULL;
  carp_map_put(map, e->key, len - 1, e);
  return e;
}

static void add_types(struct carp_mctl_offerings *o,
                      const struct carp_provider_instance_types *t)
{
  size_t i, j;
  int made;
  for (i = 0; i < t->n; i++) {
    const struct carp_provider_instance_type *it = &t->v[i];
    const char *name[1];
    struct entry *e;
    name[0] = it->name;
    if ((e = entry_of(&o->types, name, 1, &made))) {
      e->a = (double)it->cpu;
      e->b = (double)it->memory;
    }
    for (j = 0; j < it->nofferings; j++) {
      const struct carp_provider_offering *of = &it->offerings[j];
      const char *parts[3];
      parts[0] = it->name;
      parts[1] = of->capacity_type ? of->capacity_type : "";
      parts[2] = of->zone;
      if (!(e = entry_of(&o->offers, parts, 3, &made)))
        continue;
      e->a = made ? (of->available != 0) : (e->a || of->available);
      e->b = of->price;
    }
  }
}

/* Resolves the instance types once per scrape (scrape 0: always). */
static struct carp_mctl_offerings *resolve(struct carp_metricsctl *m,
                                           uint64_t scrape)
{
  struct carp_mctl_offerings *o = m->offerings;
  struct carp_store_iter it;
  struct carp_objmeta *obj;
  struct carp_map seen; /* NodeClass names asked already */
  if (!o) {
    o = m->offerings = CARP_NEW(struct carp_mctl_offerings);
    carp_map_init(&o->types);
    carp_map_init(&o->offers);
  } else if (o->scrape == scrape && scrape) {
    return o;
  }
  o->scrape = scrape;
  clear(&o->types);
  clear(&o->offers);
  if (!m->base.env.provider)
    return o;
  carp_map_init(&seen);
  carp_store_iter_init(&it);
  while ((
      obj = carp_store_next(carp_informer_store(m->cluster->nodepools), &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)obj;
    const char *cls = np->tmpl.node_class_ref.name;
    const struct carp_nodeclass *nc;
    struct carp_provider_instance_types types;
    if (!cls || carp_map_gets(&seen, cls))
      continue;
    carp_map_puts(&seen, cls, (void *)cls);
    if (!(nc = carp_cluster_nodeclass(m->cluster, cls)))
      continue;
    memset(&types, 0, sizeof(types));
    /* A class the provider cannot resolve now adds nothing (Karpenter's
     * controller keeps its last values then; gone types go here). */
    if (carp_provider_instance_types(m->base.env.provider,
                                     "cloudprovider.metrics", nc, &types))
      continue;
    add_types(o, &types);
    carp_provider_instance_types_free(&types);
  }
  carp_map_free(&seen);
  return o;
}

static void stream(struct carp_metric_writer *w, struct carp_metricsctl *m,
                   int offers, int second)
{
  struct carp_mctl_offerings *o = resolve(m, carp_metric_writer_scrape(w));
  struct carp_map *map = offers ? &o->offers : &o->types;
  struct carp_map_iter it;
  const char *k;
  size_t klen;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(map, &it, &k, &klen, &v)) {
    const struct entry *e = v;
    carp_metric_writer_sample(w, e->values, second ? e->b : e->a);
  }
}

static void stream_cpu(struct carp_metric_writer *w, void *arg)
{
  stream(w, arg, 0, 0);
}

static void stream_memory(struct carp_metric_writer *w, void *arg)
{
  stream(w, arg, 0, 1);
}

static void stream_available(struct carp_metric_writer *w, void *arg)
{
  stream(w, arg, 1, 0);
}

static void stream_price(struct carp_metric_writer *w, void *arg)
{
  stream(w, arg, 1, 1);
}

void carp__mctl_offerings_register(struct carp_metricsctl *m)
{
  carp__mctl_stream(m, "karpenter_cloudprovider_instance_type_cpu_cores",
                    "VCPUs cores for a given instance type.",
                    CARP_LABELS("instance_type"), stream_cpu);
  carp__mctl_stream(m, "karpenter_cloudprovider_instance_type_memory_bytes",
                    "Memory, in bytes, for a given instance type.",
                    CARP_LABELS("instance_type"), stream_memory);
  carp__mctl_stream(
      m, "karpenter_cloudprovider_instance_type_offering_available",
      "Instance type offering availability, based on instance type, "
      "capacity type, and zone",
      CARP_LABELS("instance_type", "capacity_type", "zone"), stream_available);
  carp__mctl_stream(
      m, "karpenter_cloudprovider_instance_type_offering_price_estimate",
      "Instance type offering estimated hourly price used when making "
      "informed decisions on node cost calculation, based on instance type, "
      "capacity type, and zone.",
      CARP_LABELS("instance_type", "capacity_type", "zone"), stream_price);
}

void carp__mctl_offerings_free(struct carp_metricsctl *m)
{
  if (!m->offerings)
    return;
  clear(&m->offerings->types);
  clear(&m->offerings->offers);
  carp_map_free(&m->offerings->types);
  carp_map_free(&m->offerings->offers);
  CARP_FREE(&m->offerings);
}
