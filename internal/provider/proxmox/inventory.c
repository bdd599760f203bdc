/* inventory.c: what Carpenter knows about a Proxmox cluster between API
 * calls - its hosts (online or not, in HA maintenance or not, threads,
 * memory, load), every guest (VMID, host, status, tags, lock, template
 * flag, size) - read from one GET /cluster/resources (plus GET
 * /cluster/ha/status/current where the listing lacks the hosts' HA state,
 * see hosts.c), and the host capacity derived from it.
 *
 * Capacity is "configured, not used": a host's free vCPUs are its threads
 * times the overcommit ratio minus the cores of its running VMs, its free
 * memory (memory - reserved) times the ratio minus their memory. The
 * listing lags (guest status and sizes come from pvestatd every ~10 s), so
 * VMs Carpenter is creating are held in memory from the moment a host is
 * chosen until a refresh shows them running, and VMs it deleted stop
 * counting at once; a burst of creates therefore never oversubscribes a
 * host. Concurrent refreshes of one region are coalesced.
 *
 * A privilege-separated token without ACLs sees silently empty lists; a
 * listing without hosts is checked against GET /access/permissions, so that
 * case is reported as "token has no privileges" rather than as an empty
 * cluster. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

void pve_inventory_free(struct pve_inventory *inv)
{
  carp_free(inv->hosts);
  carp_free(inv->guests);
  inv->hosts = NULL;
  inv->guests = NULL;
  inv->nhosts = inv->nguests = 0;
}

static void copy_str(yajl_val obj, const char *key, char *out, size_t size)
{
  const char *s = carp_json_str(obj, key, NULL);
  snprintf(out, size, "%s", s ? s : "");
}

static int64_t get_int(yajl_val obj, const char *key)
{
  int64_t v = 0;
  double d;
  if (carp_json_int(obj, &v, key, NULL) == 0)
    return v;
  /* A fraction ("12.5" seconds of uptime) is cut; a number beyond int64
   * (found by fuzz_pve) is as unreadable as text. */
  if (carp_json_double(obj, &d, key, NULL) == 0 && d > -9.2e18 && d < 9.2e18)
    return (int64_t)d;
  return 0;
}

int pve_resources_parse(yajl_val data, struct pve_inventory *inv)
{
  size_t n, i, nh = 0, ng = 0;
  if (!data || !YAJL_IS_ARRAY(data))
    return CARP_EPARSE;
  n = carp_json_len(data);
  inv->hosts = carp_calloc(n ? n : 1, sizeof(*inv->hosts));
  inv->guests = carp_calloc(n ? n : 1, sizeof(*inv->guests));
  for (i = 0; i < n; i++) {
    yajl_val e = carp_json_at(data, i);
    const char *type = carp_json_str(e, "type", NULL);
    if (!type)
      continue;
    if (!strcmp(type, "node")) {
      struct pve_host *h = &inv->hosts[nh];
      const char *st = carp_json_str(e, "status", NULL);
      /* hastate: the HA CRM's state of the node (online, maintenance,
       * unknown, fence, gone), on node entries since pve-manager 8.3
       * (commit 993d05ab, "include the node ha status in resources call")
       * and only while the HA stack keeps a node status. */
      const char *ha = carp_json_str(e, "hastate", NULL);
      double cpu = 0;
      copy_str(e, "node", h->name, sizeof(h->name));
      if (!h->name[0])
        continue;
      h->status = !st                      ? PVE_HOST_UNKNOWN
                  : !strcmp(st, "online")  ? PVE_HOST_ONLINE
                  : !strcmp(st, "offline") ? PVE_HOST_OFFLINE
                                           : PVE_HOST_UNKNOWN;
      h->online = h->status == PVE_HOST_ONLINE;
      h->has_hastate = ha != NULL;
      h->maintenance = ha && !strcmp(ha, "maintenance");
      inv->has_hastate |= h->has_hastate;
      h->maxcpu = get_int(e, "maxcpu");
      h->maxmem = get_int(e, "maxmem");
      if (carp_json_double(e, &cpu, "cpu", NULL) == 0)
        h->cpu = cpu;
      nh++;
    } else if (!strcmp(type, "qemu") || !strcmp(type, "lxc")) {
      struct pve_guest *g = &inv->guests[ng];
      g->vmid = get_int(e, "vmid");
      if (g->vmid <= 0)
        continue;
      g->lxc = !strcmp(type, "lxc");
      copy_str(e, "node", g->node, sizeof(g->node));
      copy_str(e, "name", g->name, sizeof(g->name));
      copy_str(e, "status", g->status, sizeof(g->status));
      copy_str(e, "tags", g->tags, sizeof(g->tags));
      copy_str(e, "lock", g->lock, sizeof(g->lock));
      copy_str(e, "pool", g->pool, sizeof(g->pool));
      g->template_ = get_int(e, "template") != 0;
      g->maxcpu = get_int(e, "maxcpu");
      g->maxmem = get_int(e, "maxmem");
      g->maxdisk = get_int(e, "maxdisk");
      g->uptime = get_int(e, "uptime");
      ng++;
    }
  }
  inv->nhosts = nh;
  inv->nguests = ng;
  return 0;
}

const struct pve_guest *pve_region_guest(const struct pve_region *r,
                                         int64_t vmid)
{
  size_t i;
  for (i = 0; i < r->inv.nguests; i++)
    if (r->inv.guests[i].vmid == vmid)
      return &r->inv.guests[i];
  return NULL;
}

const struct pve_host *pve_region_host(const struct pve_region *r,
                                       const char *name)
{
  size_t i;
  for (i = 0; i < r->inv.nhosts; i++)
    if (!strcmp(r->inv.hosts[i].name, name))
      return &r->inv.hosts[i];
  return NULL;
}

int pve_region_fresh(const struct pve_region *r, uint64_t max_age_ms)
{
  /* A mapping some class started to use since the last refresh makes the
   * listing stale: placement would not know its devices. */
  if (r->pp->nwant && r->maps_gen != r->pp->want_gen)
    return 0;
  return r->inv.fetched_ms && r->status == 0 &&
         carp_time_mono_ms() - r->inv.fetched_ms <= max_age_ms;
}

int pve_tags_have(const char *tags, const char *tag)
{
  size_t tl = strlen(tag);
  const char *p = tags;
  while (p && *p) {
    size_t n = strcspn(p, ";, ");
    if (n == tl && !strncasecmp(p, tag, n))
      return 1;
    p += n;
    while (*p == ';' || *p == ',' || *p == ' ')
      p++;
  }
  return 0;
}

/* --- holds, forgotten VMs
 * ------------------------------------------------------ */

struct pve_hold *pve_hold_add(struct pve_region *r, const char *host,
                              int64_t cpu, int64_t mem)
{
  struct pve_hold *h = CARP_NEW(struct pve_hold);
  snprintf(h->host, sizeof(h->host), "%s", host);
  h->cpu = cpu;
  h->mem = mem;
  h->next = r->holds;
  r->holds = h;
  return h;
}

void pve_hold_release(struct pve_region *r, struct pve_hold *h)
{
  struct pve_hold **pp;
  for (pp = &r->holds; *pp; pp = &(*pp)->next)
    if (*pp == h) {
      *pp = h->next;
      carp_free(h);
      return;
    }
}

int pve_region_is_gone(const struct pve_region *r, int64_t vmid)
{
  size_t i;
  for (i = 0; i < r->ngone; i++)
    if (r->gone[i] == vmid)
      return 1;
  return 0;
}

const struct pve_hold *pve_region_hold_of(const struct pve_region *r,
                                          int64_t vmid)
{
  const struct pve_hold *h;
  for (h = r->holds; h; h = h->next)
    if (h->vmid == vmid && vmid)
      return h;
  return NULL;
}

void pve_region_forget(struct pve_region *r, int64_t vmid)
{
  struct pve_hold *h = r->holds, *next;
  size_t i;
  for (; h; h = next) {
    next = h->next;
    if (h->vmid == vmid && h->done) {
      pve_ice_forget_zone(r->pp, r->name, h->host);
      pve_hold_release(r, h);
    }
  }
  if (pve_region_is_gone(r, vmid))
    return;
  for (i = 0; i < r->inv.nguests; i++)
    if (r->inv.guests[i].vmid == vmid) {
      if (!strcmp(r->inv.guests[i].status, "running"))
        pve_ice_forget_zone(r->pp, r->name, r->inv.guests[i].node);
      r->gone = carp_reallocarray(r->gone, r->ngone + 1, sizeof(*r->gone));
      r->gone[r->ngone++] = vmid;
      return;
    }
}

void pve_region_capacity(const struct pve_region *r, const struct pve_host *h,
                         int32_t cpu_over, int32_t mem_over,
                         int64_t reserved_mem, struct pve_capacity *out)
{
  const struct pve_provider *pp = r->pp;
  const struct pve_hold *hd;
  int64_t used_cpu = 0, used_mem = 0, mem_base;
  size_t i;

  memset(out, 0, sizeof(*out));
  for (i = 0; i < r->inv.nguests; i++) {
    const struct pve_guest *g = &r->inv.guests[i];
    if (strcmp(g->node, h->name) != 0 || g->template_ ||
        pve_region_is_gone(r, g->vmid))
      continue;
    if (pve_tags_have(g->tags, pp->cluster_tag))
      out->carp_vms++;
    if (pve_region_hold_of(r, g->vmid))
      continue; /* counted by its hold */
    if (!strcmp(g->status, "running")) {
      used_cpu += g->maxcpu;
      used_mem += g->maxmem;
    }
  }
  for (hd = r->holds; hd; hd = hd->next) {
    const struct pve_guest *g;
    if (strcmp(hd->host, h->name) != 0)
      continue;
    used_cpu += hd->cpu;
    used_mem += hd->mem;
    g = hd->vmid ? pve_region_guest(r, hd->vmid) : NULL;
    if (!g || !pve_tags_have(g->tags, pp->cluster_tag))
      out->carp_vms++;
  }
  mem_base = h->maxmem - reserved_mem;
  if (mem_base < 0)
    mem_base = 0;
  out->cpu_free = h->maxcpu * (int64_t)cpu_over / 100 - used_cpu;
  out->mem_free = (int64_t)((__int128)mem_base * mem_over / 100) - used_mem;
}

/* --- templates
 * ----------------------------------------------------------------- */

const struct pve_guest *pve_template_for(const struct pve_region *r,
                                         const struct pve_template_query *q,
                                         const char *zone)
{
  const struct pve_guest *best = NULL;
  size_t i, t;
  for (i = 0; i < r->inv.nguests; i++) {
    const struct pve_guest *g = &r->inv.guests[i];
    int ok = 1;
    if (!g->template_)
      continue;
    if (!q->shared && strcmp(g->node, zone) != 0)
      continue;
    if (q->name && strcmp(g->name, q->name) != 0)
      continue;
    for (t = 0; t < q->ntags && ok; t++)
      ok = pve_tags_have(g->tags, q->tags[t]);
    if (!ok)
      continue;
    if (q->shared) {
      const struct pve_host *h = pve_region_host(r, g->node);
      (void)h; /* a Shared template is usable while its cluster answers */
    }
    if (!best || g->vmid > best->vmid)
      best = g;
  }
  return best;
}

/* --- refresh
 * ------------------------------------------------------------------- */

void pve_waiters_wake(struct pve_waiter **list, int err)
{
  struct pve_waiter *w = *list, *next;
  *list = NULL;
  for (; w; w = next) {
    next = w->next;
    w->cb(w, err);
  }
}

void pve_region_refresh_done(struct pve_region *r, int err)
{
  pve_waiters_wake(&r->waiters, err);
}

static void prune(struct pve_region *r)
{
  struct pve_hold *h, *next;
  uint64_t now = carp_time_mono_ms();
  size_t i, j;

  for (h = r->holds; h; h = next) {
    const struct pve_guest *g;
    next = h->next;
    if (!h->done)
      continue;
    g = pve_region_guest(r, h->vmid);
    /* A VM with devices stays held until its config was read for them. */
    if (!g ||
        (!strcmp(g->status, "running") && g->maxmem > 0 &&
         (!h->ndevs || pve_devices_known(r, h->vmid))) ||
        now - h->done_ms > 10 * 60 * 1000)
      pve_hold_release(r, h);
  }
  for (i = j = 0; i < r->ngone; i++) {
    const struct pve_guest *g = pve_region_guest(r, r->gone[i]);
    if (g && !strcmp(g->status, "running"))
      r->gone[j++] = r->gone[i];
  }
  r->ngone = j;
  for (i = j = 0; i < r->ndescs; i++)
    if (pve_region_guest(r, r->descs[i].vmid))
      r->descs[j++] = r->descs[i];
  r->ndescs = j;
}

static const char *const wanted_privs[] = {"VM.Audit",
                                           "VM.Allocate",
                                           "VM.Clone",
                                           "VM.Config.CPU",
                                           "VM.Config.Memory",
                                           "VM.Config.Disk",
                                           "VM.Config.Network",
                                           "VM.Config.Cloudinit",
                                           "VM.Config.Options",
                                           "VM.PowerMgmt",
                                           "Datastore.AllocateSpace",
                                           "Sys.Audit",
                                           NULL};

static void on_permissions(const struct carp_pve_result *res, void *arg)
{
  struct pve_region *r = arg;
  int no_nodes = r->refresh_stage == 2;
  r->refresh_call = NULL;
  r->refresh_stage = 0;
  if (res->err == CARP_ECANCELED) {
    pve_region_refresh_done(r, CARP_ECANCELED);
    return;
  }
  if (res->err) {
    if (no_nodes) {
      r->status = res->err;
      snprintf(r->message, sizeof(r->message), "region %s: %s", r->name,
               res->message);
      pve_region_refresh_done(r, r->status);
      return;
    }
    r->perms_checked = 1;
    pve_devices_refresh(r, 0);
    return;
  }
  if (no_nodes) {
    if (!res->data || carp_json_len(res->data) == 0) {
      r->status = CARP_EFORBIDDEN;
      snprintf(r->message, sizeof(r->message),
               "API token %s has no privileges in region %s: Proxmox answers "
               "its list calls with empty lists (a privilege-separated token "
               "needs ACLs of its own; grant them to the token or create it "
               "with --privsep 0)",
               carp_pve_client_token_id(r->client), r->name);
    } else {
      r->status = CARP_EFORBIDDEN;
      snprintf(r->message, sizeof(r->message),
               "API token %s sees no hosts in region %s: grant it Sys.Audit "
               "and VM.Audit on /",
               carp_pve_client_token_id(r->client), r->name);
    }
    CARP_LOG_ERROR(PVE_LOG, "region unusable", CARP_F_STR("region", r->name),
                   CARP_F_STR("reason", r->message));
    pve_region_refresh_done(r, r->status);
    return;
  }
  r->perms_checked = 1;
  {
    yajl_val root = carp_json_obj(res->data, "/", NULL);
    char missing[512];
    size_t n = 0, i;
    missing[0] = '\0';
    for (i = 0; wanted_privs[i]; i++) {
      int64_t v = 0;
      if (root && carp_json_int(root, &v, wanted_privs[i], NULL) == 0 && v)
        continue;
      n += (size_t)snprintf(missing + n,
                            n < sizeof(missing) ? sizeof(missing) - n : 0,
                            "%s%s", n ? "," : "", wanted_privs[i]);
      if (n >= sizeof(missing))
        n = sizeof(missing) - 1;
    }
    if (missing[0])
      CARP_LOG_WARN(PVE_LOG,
                    "API token lacks privileges on / (fine if granted on a "
                    "pool or storage instead)",
                    CARP_F_STR("region", r->name),
                    CARP_F_STR("token", carp_pve_client_token_id(r->client)),
                    CARP_F_STR("missing", missing));
  }
  pve_devices_refresh(r, 0);
}

static void check_permissions(struct pve_region *r, int no_nodes)
{
  struct carp_pve_form f;
  int rc;
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "path", "/");
  r->refresh_stage = no_nodes ? 2 : 1;
  rc = carp_pve_call_start(r->client, "GET", "/access/permissions", &f, 0,
                           on_permissions, r, &r->refresh_call);
  carp_pve_form_free(&f);
  if (rc) {
    r->refresh_stage = 0;
    if (no_nodes)
      pve_region_refresh_done(r, rc);
    else
      pve_devices_refresh(r, 0);
  }
}

/* The hosts are known (and their HA state where it was read): move their
 * states on, then check the token's rights once. */
static void refresh_finish(struct pve_region *r)
{
  pve_hosts_update(r, carp_time_wall_ms());
  if (!r->perms_checked) {
    check_permissions(r, 0);
    return;
  }
  pve_devices_refresh(r, 0);
}

static void on_ha_status(const struct carp_pve_result *res, void *arg)
{
  struct pve_region *r = arg;
  r->refresh_call = NULL;
  r->refresh_stage = 0;
  if (res->err == CARP_ECANCELED) {
    pve_region_refresh_done(r, CARP_ECANCELED);
    return;
  }
  pve_ha_result(r, res->err, res->message, res->data);
  refresh_finish(r);
}

static void on_resources(const struct carp_pve_result *res, void *arg)
{
  struct pve_region *r = arg;
  struct pve_inventory inv;
  int rc;

  r->refresh_call = NULL;
  if (res->err) {
    if (res->err != CARP_ECANCELED) {
      r->status = res->err;
      snprintf(r->message, sizeof(r->message), "region %s: %s", r->name,
               res->message);
      CARP_LOG_WARN(PVE_LOG, "inventory refresh failed",
                    CARP_F_STR("region", r->name), CARP_F_ERR(res->err),
                    CARP_F_STR("reason", res->message));
    }
    pve_region_refresh_done(r, res->err);
    return;
  }
  memset(&inv, 0, sizeof(inv));
  rc = pve_resources_parse(res->data, &inv);
  if (rc) {
    pve_inventory_free(&inv);
    r->status = rc;
    snprintf(r->message, sizeof(r->message),
             "region %s: /cluster/resources is not a list", r->name);
    pve_region_refresh_done(r, rc);
    return;
  }
  pve_inventory_free(&r->inv);
  r->inv = inv;
  r->inv.fetched_ms = carp_time_mono_ms();
  prune(r);
  if (inv.nhosts == 0) {
    check_permissions(r, 1);
    return;
  }
  if (r->status != 0)
    CARP_LOG_INFO(PVE_LOG, "region reachable", CARP_F_STR("region", r->name),
                  CARP_F_UINT("hosts", inv.nhosts),
                  CARP_F_UINT("guests", inv.nguests));
  r->status = 0;
  r->message[0] = '\0';
  if (pve_ha_due(r)) {
    r->refresh_stage = 3;
    if (carp_pve_call_start(r->client, "GET", "/cluster/ha/status/current",
                            NULL, 0, on_ha_status, r, &r->refresh_call) == 0)
      return;
    r->refresh_stage = 0;
  }
  refresh_finish(r);
}

int pve_region_refresh_start(struct pve_region *r, struct pve_waiter *w)
{
  int rc;
  if (w) {
    w->next = r->waiters;
    r->waiters = w;
  }
  if (r->refresh_call || r->dev_stage)
    return 0; /* joins the refresh in flight */
  rc = carp_pve_call_start(r->client, "GET", "/cluster/resources", NULL, 0,
                           on_resources, r, &r->refresh_call);
  if (rc && w)
    pve_region_unwait(r, w);
  return rc;
}

void pve_region_unwait(struct pve_region *r, struct pve_waiter *w)
{
  struct pve_waiter **lists[2], **pp;
  size_t i;
  lists[0] = &r->waiters;
  lists[1] = &r->nextid_waiters; /* vmid.c */
  for (i = 0; i < CARP_ARRAY_LEN(lists); i++)
    for (pp = lists[i]; *pp; pp = &(*pp)->next)
      if (*pp == w) {
        *pp = w->next;
        return;
      }
}
