/* hosts.c: whether each Proxmox host can take and keep VMs - online or
 * offline, in HA maintenance mode or not - and since when, for placement,
 * drift (a host in maintenance) and the nodeclaim.interruption controller
 * (a host offline for too long), through zone_status.
 *
 * Online or offline is the status of the host's entry in GET
 * /cluster/resources ("online", "offline"; "unknown" when its pvestatd
 * sends no stats, which tells nothing either way).
 *
 * Maintenance is Proxmox VE's HA node maintenance (7.3+; `ha-manager
 * crm-command node-maintenance enable <node>`, also entered by a shutdown
 * under the HA shutdown_policy "migrate"). Two places show it:
 *  - /cluster/resources node entries carry `hastate`, the HA CRM's state of
 *    the node (online, maintenance, unknown, fence, gone), since
 *    pve-manager 8.3 (commit 993d05ab, 2024-11) while the HA stack keeps a
 *    node status; "maintenance" is what we look for (inventory.c reads it);
 *  - GET /cluster/ha/status/current (pve-ha-manager API2/HA/Status.pm, any
 *    version with maintenance) has an entry {type: "lrm", node: N, status:
 *    "N (maintenance mode, <time>)"} - since 2025 "N (maintenance mode,
 *    watchdog ..., <time>)" - for a node whose LRM is in maintenance mode,
 *    also while the node is down. The status is free text built as
 *    "$node ($status_str, ...)" with $status_str "$lrm_mode mode"; we match
 *    exactly that prefix. It is read only when the listing carried no
 *    hastate at all (older PVE, or HA never used), at most once per refresh
 *    interval; a failed read (a token without Sys.Audit on /) keeps the
 *    last answer and is logged once.
 *
 * Since when: each successful refresh compares a host's state (Offline
 * before Maintenance before Ready; Unknown when its status is unknown)
 * with the previous refresh's and stamps the wall clock when it changed.
 * The first refresh after a start stamps every state with its own time:
 * a host already offline then counts from the provider's start. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

#define LRM_MAINTENANCE "maintenance mode"

int pve_host_open(const struct pve_host *h)
{
  return h->online && !h->maintenance;
}

int pve_ha_maintenance_parse(yajl_val data, char (*out)[64], size_t n)
{
  size_t i, len, k = 0;
  if (!data || !YAJL_IS_ARRAY(data))
    return CARP_EPARSE;
  len = carp_json_len(data);
  for (i = 0; i < len; i++) {
    yajl_val e = carp_json_at(data, i);
    const char *type = carp_json_str(e, "type", NULL);
    const char *node = carp_json_str(e, "node", NULL);
    const char *st = carp_json_str(e, "status", NULL);
    size_t nl;
    if (!type || strcmp(type, "lrm") != 0 || !node || !st)
      continue;
    /* "<node> (maintenance mode, ...)" */
    nl = strlen(node);
    if (strncmp(st, node, nl) != 0 || strncmp(st + nl, " (", 2) != 0 ||
        strncmp(st + nl + 2, LRM_MAINTENANCE, strlen(LRM_MAINTENANCE)) != 0)
      continue;
    if (nl >= sizeof(out[0]))
      continue;
    if (k < n)
      snprintf(out[k], sizeof(out[0]), "%s", node);
    k++;
  }
  return (int)(k < n ? k : n);
}

int pve_ha_due(const struct pve_region *r)
{
  if (r->inv.has_hastate || !r->inv.nhosts)
    return 0;
  return !r->ha_fetched_ms ||
         carp_time_mono_ms() - r->ha_fetched_ms >= r->pp->o.refresh_interval_ms;
}

void pve_ha_result(struct pve_region *r, int err, const char *message,
                   yajl_val data)
{
  char(*names)[64];
  int n;
  r->ha_fetched_ms = carp_time_mono_ms();
  if (err) {
    if (!r->ha_failing)
      CARP_LOG_WARN(PVE_LOG,
                    "cannot read the HA status: hosts in maintenance mode "
                    "are not seen (the token needs Sys.Audit on /)",
                    CARP_F_STR("region", r->name), CARP_F_ERR(err),
                    CARP_F_STR("reason", message ? message : ""));
    r->ha_failing = 1;
    return;
  }
  names = carp_calloc(r->inv.nhosts + 1, sizeof(*names));
  n = pve_ha_maintenance_parse(data, names, r->inv.nhosts + 1);
  if (n < 0) {
    if (!r->ha_failing)
      CARP_LOG_WARN(PVE_LOG, "the HA status is not a list; ignored",
                    CARP_F_STR("region", r->name));
    r->ha_failing = 1;
    carp_free(names);
    return;
  }
  if (r->ha_failing)
    CARP_LOG_INFO(PVE_LOG, "HA status readable again",
                  CARP_F_STR("region", r->name));
  r->ha_failing = 0;
  carp_free(r->ha_maint);
  r->ha_maint = names;
  r->nha_maint = (size_t)n;
}

static int in_ha_maint(const struct pve_region *r, const char *name)
{
  size_t i;
  for (i = 0; i < r->nha_maint; i++)
    if (!strcmp(r->ha_maint[i], name))
      return 1;
  return 0;
}

static enum carp_zone_state state_of(const struct pve_host *h)
{
  if (h->status == PVE_HOST_OFFLINE)
    return CARP_ZONE_OFFLINE;
  if (h->maintenance)
    return CARP_ZONE_MAINTENANCE;
  if (h->status == PVE_HOST_ONLINE)
    return CARP_ZONE_READY;
  return CARP_ZONE_UNKNOWN;
}

static void log_change(const struct pve_region *r, const struct pve_host *h,
                       enum carp_zone_state was, enum carp_zone_state now)
{
  const char *msg = NULL;
  switch (now) {
  case CARP_ZONE_OFFLINE:
    msg = "host offline: no new VM goes there; its NodeClaims are replaced "
          "after --host-offline-toleration";
    break;
  case CARP_ZONE_MAINTENANCE:
    msg = "host in maintenance: no new VM goes there; its nodes are "
          "replaced as drifted";
    break;
  case CARP_ZONE_READY:
    if (was != CARP_ZONE_READY)
      msg = "host available again";
    break;
  case CARP_ZONE_UNKNOWN:
    msg = "host status unknown (no stats from it): not used for new VMs";
    break;
  }
  if (!msg)
    return;
  CARP_LOG(now == CARP_ZONE_READY ? CARP_LOG_INFO : CARP_LOG_WARN, PVE_LOG, msg,
           CARP_F_STR("region", r->name), CARP_F_STR("zone", h->name),
           CARP_F_STR("was", carp_zone_state_name(was)));
}

void pve_hosts_update(struct pve_region *r, int64_t now_ms)
{
  struct pve_host_state *next;
  size_t i;
  if (!r->inv.has_hastate)
    for (i = 0; i < r->inv.nhosts; i++)
      r->inv.hosts[i].maintenance = in_ha_maint(r, r->inv.hosts[i].name);
  next = carp_calloc(r->inv.nhosts + 1, sizeof(*next));
  for (i = 0; i < r->inv.nhosts; i++) {
    const struct pve_host *h = &r->inv.hosts[i];
    const struct pve_host_state *old = pve_region_host_state(r, h->name);
    struct pve_host_state *s = &next[i];
    snprintf(s->name, sizeof(s->name), "%s", h->name);
    s->state = state_of(h);
    if (old && old->state == s->state) {
      s->since_ms = old->since_ms;
      continue;
    }
    s->since_ms = now_ms;
    /* A host first seen ready is not news. */
    if (old || s->state != CARP_ZONE_READY)
      log_change(r, h, old ? old->state : CARP_ZONE_READY, s->state);
  }
  carp_free(r->hstates);
  r->hstates = next;
  r->nhstates = r->inv.nhosts;
}

const struct pve_host_state *pve_region_host_state(const struct pve_region *r,
                                                   const char *name)
{
  size_t i;
  for (i = 0; i < r->nhstates; i++)
    if (!strcmp(r->hstates[i].name, name))
      return &r->hstates[i];
  return NULL;
}

void pve_hosts_free(struct pve_region *r)
{
  carp_free(r->hstates);
  carp_free(r->ha_maint);
  r->hstates = NULL;
  r->ha_maint = NULL;
  r->nhstates = r->nha_maint = 0;
}
