/* devices.c: host devices behind Proxmox resource mappings - which host
 * has how many devices of a mapping, which of them running VMs hold, and
 * so how many a new VM can still get on each host.
 *
 * A mapping (/cluster/mapping/pci or /usb, Proxmox VE 8+) lists entries,
 * each a device on one host; qemu-server gives a VM that names the
 * mapping (hostpciN: mapping=ID) the first entry of its host that no
 * running VM holds, and refuses to start it when none is free. A device is
 * held by a running VM whose config names it - through the mapping, or
 * as a raw host device (host=0000:01:00.0) that happens to be a mapping's
 * entry - and by creates in flight (their holds). Stopped VMs hold
 * nothing.
 *
 * Reading the mappings and the configs costs requests, so nothing here
 * runs until a NodeClass with devices was seen (pve_devices_want), and
 * then only configs of running VMs on hosts that have an entry in a wanted
 * mapping are read, once per boot of the VM (its devices can only change
 * when it starts again): after the first refresh a refresh reads only the
 * VMs that started since. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

/* Boot times drift by the listing's lag; a VM whose boot time moved more
 * than this started again. */
#define BOOT_SLACK_S 60

/* --- parsing
 * ------------------------------------------------------------------- */

void pve_mappings_free(struct pve_mapping *m, size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    carp_free(m[i].devs);
  carp_free(m);
}

int pve_mappings_parse(yajl_val data, int usb, struct pve_mapping **out,
                       size_t *n)
{
  size_t i, j, cnt = 0, len;
  struct pve_mapping *v;
  *out = NULL;
  *n = 0;
  if (!data || !YAJL_IS_ARRAY(data))
    return CARP_EPARSE;
  len = carp_json_len(data);
  v = carp_calloc(len ? len : 1, sizeof(*v));
  for (i = 0; i < len; i++) {
    yajl_val e = carp_json_at(data, i);
    const char *id = carp_json_str(e, "id", NULL);
    yajl_val map = carp_json_arr(e, "map", NULL);
    struct pve_mapping *m = &v[cnt];
    size_t nmap = map ? carp_json_len(map) : 0;
    if (!id || !*id || strlen(id) >= sizeof(m->id))
      continue;
    snprintf(m->id, sizeof(m->id), "%s", id);
    m->usb = usb;
    m->devs = carp_calloc(nmap ? nmap : 1, sizeof(*m->devs));
    for (j = 0; j < nmap; j++) {
      yajl_val x = carp_json_at(map, j);
      struct pve_mapping_dev *d = &m->devs[m->ndevs];
      if (!x || !YAJL_IS_STRING(x))
        continue;
      pve_prop_get(x->u.string, "node", d->host, sizeof(d->host));
      pve_prop_get(x->u.string, "path", d->path, sizeof(d->path));
      pve_prop_get(x->u.string, "id", d->id, sizeof(d->id));
      if (d->host[0])
        m->ndevs++;
    }
    cnt++;
  }
  *out = v;
  *n = cnt;
  return 0;
}

static int key_numbered(const char *key, const char *prefix)
{
  size_t pl = strlen(prefix);
  const char *p = key + pl;
  if (strncmp(key, prefix, pl) != 0 || !*p)
    return 0;
  for (; *p; p++)
    if (*p < '0' || *p > '9')
      return 0;
  return 1;
}

size_t pve_config_devrefs(yajl_val conf, struct pve_devref **out)
{
  size_t i, n = 0;
  struct pve_devref *v = NULL;
  *out = NULL;
  if (!conf || !YAJL_IS_OBJECT(conf))
    return 0;
  for (i = 0; i < conf->u.object.len; i++) {
    const char *k = conf->u.object.keys[i];
    yajl_val x = conf->u.object.values[i];
    struct pve_devref d;
    int usb;
    if (key_numbered(k, "hostpci"))
      usb = 0;
    else if (key_numbered(k, "usb"))
      usb = 1;
    else
      continue;
    if (!YAJL_IS_STRING(x))
      continue;
    memset(&d, 0, sizeof(d));
    d.usb = usb;
    pve_prop_get(x->u.string, "mapping", d.mapping, sizeof(d.mapping));
    if (!d.mapping[0]) {
      /* The default key: "0000:01:00.0,pcie=1" or "host=...". */
      size_t l = strcspn(x->u.string, ",");
      pve_prop_get(x->u.string, "host", d.path, sizeof(d.path));
      if (!d.path[0] && !memchr(x->u.string, '=', l) && l < sizeof(d.path))
        snprintf(d.path, sizeof(d.path), "%.*s", (int)l, x->u.string);
      if (!d.path[0] || !strcasecmp(d.path, "spice"))
        continue;
    }
    v = carp_reallocarray(v, n + 1, sizeof(*v));
    v[n++] = d;
  }
  *out = v;
  return n;
}

/* --- counting
 * ------------------------------------------------------------------ */

/* "01:00.0" and "0000:01:00.0" name the same PCI function; "0000:01:00"
 * (a whole device) covers its functions. */
static void pci_norm(const char *in, char *out, size_t size)
{
  size_t colons = 0;
  const char *p;
  for (p = in; *p; p++)
    colons += *p == ':';
  snprintf(out, size, "%s%s", colons < 2 ? "0000:" : "", in);
  for (char *q = out; *q; q++)
    if (*q >= 'A' && *q <= 'F')
      *q = (char)(*q - 'A' + 'a');
}

/* Whether a raw device a VM names is the entry d (any of its ';'
 * alternatives or functions). */
static int raw_is_entry(const struct pve_devref *ref,
                        const struct pve_mapping_dev *d)
{
  char a[160], b[160];
  const char *p = ref->path;
  if (ref->usb)
    return (d->path[0] && !strcmp(ref->path, d->path)) ||
           (d->id[0] && !strcasecmp(ref->path, d->id));
  while (*p) {
    size_t l = strcspn(p, ";");
    const char *q = d->path;
    snprintf(a, sizeof(a), "%.*s", (int)l, p);
    pci_norm(a, b, sizeof(b));
    while (*q) {
      size_t m = strcspn(q, ";");
      char e[160], en[160];
      size_t el;
      snprintf(e, sizeof(e), "%.*s", (int)m, q);
      pci_norm(e, en, sizeof(en));
      el = strlen(en);
      /* equal, or one is the whole device of the other's function */
      if (!strncmp(en, b, el < strlen(b) ? el : strlen(b)))
        return 1;
      q += m;
      if (*q == ';')
        q++;
    }
    p += l;
    if (*p == ';')
      p++;
  }
  return 0;
}

static const struct pve_mapping *mapping_of(const struct pve_region *r,
                                            const char *id, int usb)
{
  size_t i;
  for (i = 0; i < r->nmaps; i++)
    if (r->maps[i].usb == usb && !strcmp(r->maps[i].id, id))
      return &r->maps[i];
  return NULL;
}

static const struct pve_vmdevs *vmdevs_of(const struct pve_region *r,
                                          int64_t vmid)
{
  size_t i;
  for (i = 0; i < r->nvmdevs; i++)
    if (r->vmdevs[i].vmid == vmid)
      return &r->vmdevs[i];
  return NULL;
}

int pve_devices_known(const struct pve_region *r, int64_t vmid)
{
  return vmdevs_of(r, vmid) != NULL;
}

int32_t pve_devices_free_on(const struct pve_region *r, const char *host,
                            const char *mapping, int usb, int32_t *total)
{
  const struct pve_mapping *m = mapping_of(r, mapping, usb);
  const struct pve_hold *h;
  int32_t n = 0, used = 0;
  size_t i, j, k;
  unsigned char *taken;
  if (total)
    *total = 0;
  if (!m)
    return -1;
  taken = carp_calloc(m->ndevs ? m->ndevs : 1, 1);
  for (i = 0; i < m->ndevs; i++)
    n += !strcmp(m->devs[i].host, host);
  if (usb && n > 1)
    n = 1; /* qemu-server uses a USB mapping's one entry per host */
  for (i = 0; i < r->inv.nguests; i++) {
    const struct pve_guest *g = &r->inv.guests[i];
    const struct pve_vmdevs *vd;
    if (strcmp(g->node, host) != 0 || strcmp(g->status, "running") != 0 ||
        pve_region_is_gone(r, g->vmid) || pve_region_hold_of(r, g->vmid))
      continue;
    vd = vmdevs_of(r, g->vmid);
    for (j = 0; vd && j < vd->nrefs; j++) {
      const struct pve_devref *ref = &vd->refs[j];
      if (ref->usb != usb)
        continue;
      if (ref->mapping[0]) {
        used += !strcmp(ref->mapping, mapping);
        continue;
      }
      for (k = 0; k < m->ndevs; k++)
        if (!taken[k] && !strcmp(m->devs[k].host, host) &&
            raw_is_entry(ref, &m->devs[k])) {
          taken[k] = 1;
          used++;
          break;
        }
    }
  }
  carp_free(taken);
  for (h = r->holds; h; h = h->next) {
    if (strcmp(h->host, host) != 0)
      continue;
    for (j = 0; j < h->ndevs; j++)
      if (h->devs[j].usb == usb && !strcmp(h->devs[j].mapping, mapping))
        used += h->devs[j].count;
  }
  if (total)
    *total = n;
  return n > used ? n - used : 0;
}

int pve_type_devices_fit(const struct pve_region *r, const char *host,
                         const struct pve_type *t, char *why, size_t why_size)
{
  size_t i, j;
  for (i = 0; i < t->ndevs; i++) {
    const struct pve_dev *d = &t->devs[i];
    int32_t need = 0, total, free_;
    for (j = 0; j < t->ndevs; j++)
      if (t->devs[j].usb == d->usb && !strcmp(t->devs[j].mapping, d->mapping))
        need += t->devs[j].count;
    free_ = pve_devices_free_on(r, host, d->mapping, d->usb, &total);
    if (free_ >= need)
      continue;
    if (free_ < 0) {
      if (why)
        snprintf(why, why_size,
                 "%s mapping %s not found in region %s%s%s (the API token "
                 "needs Mapping.Audit or Mapping.Use on /mapping/%s/%s)",
                 d->usb ? "USB" : "PCI", d->mapping, r->name,
                 r->maps_error[0] ? ": " : "", r->maps_error,
                 d->usb ? "usb" : "pci", d->mapping);
      return PVE_DEVS_NO_MAPPING;
    }
    if (total == 0) {
      if (why)
        snprintf(why, why_size, "%s mapping %s has no device on %s/%s",
                 d->usb ? "USB" : "PCI", d->mapping, r->name, host);
      return PVE_DEVS_NONE_HERE;
    }
    if (why)
      snprintf(why, why_size,
               "%s mapping %s has %d of %d devices free on %s/%s, %s needs "
               "%d",
               d->usb ? "USB" : "PCI", d->mapping, (int)free_, (int)total,
               r->name, host, t->name, (int)need);
    return PVE_DEVS_BUSY;
  }
  return 1;
}

void pve_devices_want(struct pve_provider *pp, const char *mapping, int usb)
{
  size_t i;
  for (i = 0; i < pp->nwant; i++)
    if (pp->want[i].usb == usb && !strcmp(pp->want[i].mapping, mapping))
      return;
  pp->want = carp_reallocarray(pp->want, pp->nwant + 1, sizeof(*pp->want));
  memset(&pp->want[pp->nwant], 0, sizeof(*pp->want));
  snprintf(pp->want[pp->nwant].mapping, sizeof(pp->want[0].mapping), "%s",
           mapping);
  pp->want[pp->nwant].usb = usb;
  pp->nwant++;
  /* Regions have not read it yet: no listing is fresh until they have
   * (pve_region_fresh), and a refresh starts now rather than at the next
   * tick, so offerings of the new class soon say where its devices are. */
  pp->want_gen++;
  for (i = 0; i < pp->nregions && !pp->closing; i++)
    (void)pve_region_refresh_start(&pp->regions[i], NULL);
}

/* --- the refresh step
 * ---------------------------------------------------------- */

static void vmdevs_drop(struct pve_region *r, size_t i)
{
  carp_free(r->vmdevs[i].refs);
  r->vmdevs[i] = r->vmdevs[--r->nvmdevs];
}

void pve_devices_free(struct pve_region *r)
{
  while (r->nvmdevs)
    vmdevs_drop(r, r->nvmdevs - 1);
  carp_free(r->vmdevs);
  r->vmdevs = NULL;
  pve_mappings_free(r->maps, r->nmaps);
  r->maps = NULL;
  r->nmaps = 0;
  pve_mappings_free(r->dev_maps, r->dev_nmaps);
  r->dev_maps = NULL;
  r->dev_nmaps = 0;
}

static int64_t now_s(void)
{
  return (int64_t)(carp_time_mono_ms() / 1000);
}

/* A host some wanted mapping has an entry on. */
static int host_wanted(const struct pve_region *r, const char *host)
{
  const struct pve_provider *pp = r->pp;
  size_t i, j;
  for (i = 0; i < pp->nwant; i++) {
    const struct pve_mapping *m =
        mapping_of(r, pp->want[i].mapping, pp->want[i].usb);
    for (j = 0; m && j < m->ndevs; j++)
      if (!strcmp(m->devs[j].host, host))
        return 1;
  }
  return 0;
}

/* Drops what no longer holds: VMs gone, stopped, moved or started again. */
static void vmdevs_prune(struct pve_region *r)
{
  size_t i = 0;
  int64_t now = now_s();
  while (i < r->nvmdevs) {
    const struct pve_vmdevs *vd = &r->vmdevs[i];
    const struct pve_guest *g = pve_region_guest(r, vd->vmid);
    int64_t boot = g ? now - g->uptime : 0;
    if (!g || strcmp(g->status, "running") != 0 || strcmp(g->node, vd->node) ||
        boot > vd->boot_s + BOOT_SLACK_S || boot < vd->boot_s - BOOT_SLACK_S)
      vmdevs_drop(r, i);
    else
      i++;
  }
}

static void finish(struct pve_region *r)
{
  if (r->dev_result == 0 && r->maps_read)
    r->maps_gen = r->dev_gen;
  r->dev_stage = 0;
  pve_region_refresh_done(r, r->dev_result);
}

static void next_configs(struct pve_region *r);

static void on_config(const struct carp_pve_result *res, void *arg)
{
  struct pve_devcall *dc = arg;
  struct pve_region *r = dc->r;
  dc->call = NULL;
  r->dev_pending--;
  if (res->err == CARP_ECANCELED) {
    r->dev_result = CARP_ECANCELED;
  } else if (res->err) {
    /* Gone or moved since the listing: the next refresh sees it anew. */
    CARP_LOG_DEBUG(PVE_LOG, "VM config not read for its devices",
                   CARP_F_STR("region", r->name), CARP_F_INT("vmid", dc->vmid),
                   CARP_F_STR("reason", res->message));
  } else {
    struct pve_vmdevs *vd;
    r->vmdevs =
        carp_reallocarray(r->vmdevs, r->nvmdevs + 1, sizeof(*r->vmdevs));
    vd = &r->vmdevs[r->nvmdevs++];
    memset(vd, 0, sizeof(*vd));
    vd->vmid = dc->vmid;
    snprintf(vd->node, sizeof(vd->node), "%s", dc->node);
    vd->boot_s = now_s() - dc->uptime;
    vd->nrefs = pve_config_devrefs(res->data, &vd->refs);
  }
  next_configs(r);
}

static void next_configs(struct pve_region *r)
{
  size_t s;
  if (r->dev_result != CARP_ECANCELED && !r->pp->closing) {
    for (s = 0; s < PVE_DEV_CALLS; s++) {
      struct pve_devcall *dc = &r->dev[s];
      const struct pve_guest *g = NULL;
      char path[192];
      int rc;
      if (dc->call)
        continue;
      while (r->dev_cursor < r->inv.nguests) {
        const struct pve_guest *c = &r->inv.guests[r->dev_cursor++];
        if (c->lxc || c->template_ || strcmp(c->status, "running") != 0 ||
            vmdevs_of(r, c->vmid) || !host_wanted(r, c->node))
          continue;
        g = c;
        break;
      }
      if (!g)
        break;
      dc->r = r;
      dc->vmid = g->vmid;
      dc->uptime = g->uptime;
      snprintf(dc->node, sizeof(dc->node), "%s", g->node);
      snprintf(path, sizeof(path), "/nodes/%s/qemu/%" PRId64 "/config", g->node,
               g->vmid);
      rc = carp_pve_call_start(r->client, "GET", path, NULL, 0, on_config, dc,
                               &dc->call);
      if (rc) {
        dc->call = NULL;
        break;
      }
      r->dev_pending++;
    }
  }
  if (!r->dev_pending)
    finish(r);
}

static void replace_maps(struct pve_region *r)
{
  size_t i, n = 0;
  struct pve_mapping *v;
  /* A list that could not be read keeps what the last refresh read. */
  for (i = 0; i < r->nmaps; i++)
    if (!r->dev_read[r->maps[i].usb])
      n++;
  v = carp_calloc(r->dev_nmaps + n + 1, sizeof(*v));
  memcpy(v, r->dev_maps, r->dev_nmaps * sizeof(*v));
  n = r->dev_nmaps;
  for (i = 0; i < r->nmaps; i++) {
    if (!r->dev_read[r->maps[i].usb])
      v[n++] = r->maps[i];
    else
      carp_free(r->maps[i].devs);
  }
  carp_free(r->maps);
  carp_free(r->dev_maps);
  r->dev_maps = NULL;
  r->dev_nmaps = 0;
  r->maps = v;
  r->nmaps = n;
  if (r->dev_read[0] || r->dev_read[1])
    r->maps_read = 1;
}

static void on_mappings(const struct carp_pve_result *res, void *arg)
{
  struct pve_devcall *dc = arg;
  struct pve_region *r = dc->r;
  dc->call = NULL;
  r->dev_pending--;
  if (res->err == CARP_ECANCELED) {
    r->dev_result = CARP_ECANCELED;
  } else {
    struct pve_mapping *m = NULL;
    size_t n = 0;
    int rc =
        res->err ? res->err : pve_mappings_parse(res->data, dc->usb, &m, &n);
    if (rc) {
      snprintf(r->maps_error, sizeof(r->maps_error),
               "GET /cluster/mapping/%s: %s", dc->usb ? "usb" : "pci",
               res->err ? res->message : "not a list");
      CARP_LOG_WARN(PVE_LOG, "cannot read resource mappings",
                    CARP_F_STR("region", r->name),
                    CARP_F_STR("reason", r->maps_error));
    } else {
      r->dev_maps = carp_reallocarray(r->dev_maps, r->dev_nmaps + n + 1,
                                      sizeof(*r->dev_maps));
      memcpy(r->dev_maps + r->dev_nmaps, m, n * sizeof(*m));
      r->dev_nmaps += n;
      carp_free(m);
      r->dev_read[dc->usb] = 1;
    }
  }
  if (r->dev_pending)
    return;
  if (r->dev_result == CARP_ECANCELED || r->pp->closing) {
    pve_mappings_free(r->dev_maps, r->dev_nmaps);
    r->dev_maps = NULL;
    r->dev_nmaps = 0;
    finish(r);
    return;
  }
  if (r->dev_read[0] && r->dev_read[1])
    r->maps_error[0] = '\0';
  replace_maps(r);
  vmdevs_prune(r);
  r->dev_stage = 2;
  r->dev_cursor = 0;
  next_configs(r);
}

void pve_devices_refresh(struct pve_region *r, int status)
{
  static const char *const paths[2] = {"/cluster/mapping/pci",
                                       "/cluster/mapping/usb"};
  int usb;
  if (!r->pp->nwant || r->pp->closing || status) {
    pve_region_refresh_done(r, status);
    return;
  }
  r->dev_stage = 1;
  r->dev_gen = r->pp->want_gen;
  r->dev_result = status;
  r->dev_pending = 0;
  r->dev_read[0] = r->dev_read[1] = 0;
  for (usb = 0; usb < 2; usb++) {
    struct pve_devcall *dc = &r->dev[usb];
    dc->r = r;
    dc->usb = usb;
    if (carp_pve_call_start(r->client, "GET", paths[usb], NULL, 0, on_mappings,
                            dc, &dc->call) == 0)
      r->dev_pending++;
    else
      dc->call = NULL;
  }
  if (!r->dev_pending) {
    r->dev_stage = 0;
    pve_region_refresh_done(r, status);
  }
}

void pve_devices_cancel(struct pve_region *r)
{
  size_t s;
  for (s = 0; s < PVE_DEV_CALLS; s++)
    if (r->dev[s].call)
      carp_pve_call_cancel(r->dev[s].call);
}
