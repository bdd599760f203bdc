/* hostwatch.c: notices a Proxmox host going into maintenance (or out of
 * it) for the nodeclaim.disruption controller. The provider's view of a
 * host changes without any Kubernetes event, and the drift resync runs
 * only every 5 minutes; an operator who puts a host in maintenance wants
 * its nodes moved before they shut it down. So every few seconds the
 * state of each host holding a NodeClaim is compared with the last poll's,
 * and the NodeClaims of a host whose state changed are queued: their
 * Drifted condition (HostMaintenance, from the provider) is set or cleared
 * at once. Asking the provider reads its cached view: no API call. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "disruption_int.h"

struct seen {
  enum carp_zone_state state;
  char key[132]; /* "<region>/<zone>", the map's key */
};

static void seen_free(struct carp_map *m)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(m, &it, NULL, NULL, &v))
    carp_free(v);
  carp_map_free(m);
}

static int claim_key(const struct carp_nodeclaim *nc, char *key, size_t size)
{
  char region[64], zone[64];
  if (nc->meta.deletion_ms || !carp__dis_managed(nc) ||
      !carp_provider_claim_zone(nc, region, sizeof(region), zone, sizeof(zone)))
    return 0;
  snprintf(key, size, "%s/%s", region, zone);
  return 1;
}

size_t carp__dis_hosts_poll(struct carp_controller *c, struct carp_map *last)
{
  struct carp_store *claims = carp_informer_store(c->env.cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct carp_map now;
  char key[132];
  size_t queued = 0;
  carp_map_init(&now);
  /* The hosts' states now... */
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    struct carp_provider_zone_status zs;
    char region[64];
    struct seen *s;
    if (!claim_key(nc, key, sizeof(key)) || carp_map_gets(&now, key))
      continue;
    snprintf(region, sizeof(region), "%.*s", (int)strcspn(key, "/"), key);
    carp_provider_zone_status(c->env.provider, region, key + strlen(region) + 1,
                              &zs);
    s = CARP_NEW(struct seen);
    s->state = zs.state;
    snprintf(s->key, sizeof(s->key), "%s", key);
    carp_map_puts(&now, s->key, s);
  }
  /* ...against the last poll's: the claims of a host that changed (or is
   * new to the poll) are looked at again. */
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct seen *was, *is;
    if (!claim_key((const struct carp_nodeclaim *)m, key, sizeof(key)))
      continue;
    was = carp_map_gets(last, key);
    is = carp_map_gets(&now, key);
    if (is && (!was || was->state != is->state)) {
      carp_controller_enqueue(c, m->name);
      queued++;
    }
  }
  seen_free(last);
  *last = now;
  return queued;
}

void carp__dis_hosts_free(struct carp_map *last)
{
  seen_free(last);
}
