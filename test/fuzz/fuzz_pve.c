/* Fuzz target: Proxmox API answers, through every decoder the provider
 * runs on them (internal/provider/proxmox). The input is an HTTP answer
 * body, optionally after a first line "HTTP <status> <reason>" (else 200).
 * The envelope is decoded as client.c does; its data then goes through
 * each reply decoder - cluster resources, resource mappings, VM configs
 * (devices, description, smbios1), HA status, task status, UPIDs - since
 * a confused or hostile server can send any answer to any call.
 *
 * Properties beyond not crashing: a failed answer always has an error and
 * a message; a decoder refuses what is not its shape without leaving
 * anything half-filled; the inventory decoded from /cluster/resources,
 * written back as such an answer, decodes to the same inventory; a VM
 * description and a UPID read back the same once written out again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "fuzz.h"
#include "pve_int.h"

/* The inventory written back as a /cluster/resources answer's data. */
static void write_inventory(const struct pve_inventory *inv,
                            struct carp_buf *out)
{
  struct carp_jw w;
  char num[64];
  size_t i;
  carp_jw_init(&w, out);
  carp_jw_arr(&w);
  for (i = 0; i < inv->nhosts; i++) {
    const struct pve_host *h = &inv->hosts[i];
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "type", "node");
    carp_jw_kstr(&w, "node", h->name);
    if (h->status != PVE_HOST_UNKNOWN)
      carp_jw_kstr(&w, "status",
                   h->status == PVE_HOST_ONLINE ? "online" : "offline");
    if (h->has_hastate)
      carp_jw_kstr(&w, "hastate", h->maintenance ? "maintenance" : "online");
    carp_jw_kint(&w, "maxcpu", h->maxcpu);
    carp_jw_kint(&w, "maxmem", h->maxmem);
    carp_jw_key(&w, "cpu");
    snprintf(num, sizeof(num), "%.17g", h->cpu);
    carp_jw_number(&w, num, strlen(num));
    carp_jw_obj_end(&w);
  }
  for (i = 0; i < inv->nguests; i++) {
    const struct pve_guest *g = &inv->guests[i];
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "type", g->lxc ? "lxc" : "qemu");
    carp_jw_kint(&w, "vmid", g->vmid);
    carp_jw_kstr(&w, "node", g->node);
    carp_jw_kstr(&w, "name", g->name);
    carp_jw_kstr(&w, "status", g->status);
    carp_jw_kstr(&w, "tags", g->tags);
    carp_jw_kstr(&w, "lock", g->lock);
    carp_jw_kstr(&w, "pool", g->pool);
    carp_jw_kint(&w, "template", g->template_);
    carp_jw_kint(&w, "maxcpu", g->maxcpu);
    carp_jw_kint(&w, "maxmem", g->maxmem);
    carp_jw_kint(&w, "maxdisk", g->maxdisk);
    carp_jw_kint(&w, "uptime", g->uptime);
    carp_jw_obj_end(&w);
  }
  carp_jw_arr_end(&w);
  if (carp_jw_finish(&w))
    abort();
}

static int same_inventory(const struct pve_inventory *a,
                          const struct pve_inventory *b)
{
  size_t i;
  if (a->nhosts != b->nhosts || a->nguests != b->nguests ||
      a->has_hastate != b->has_hastate)
    return 0;
  for (i = 0; i < a->nhosts; i++) {
    const struct pve_host *x = &a->hosts[i], *y = &b->hosts[i];
    if (strcmp(x->name, y->name) || x->status != y->status ||
        x->online != y->online || x->maintenance != y->maintenance ||
        x->has_hastate != y->has_hastate || x->maxcpu != y->maxcpu ||
        x->maxmem != y->maxmem || x->cpu != y->cpu)
      return 0;
  }
  for (i = 0; i < a->nguests; i++) {
    const struct pve_guest *x = &a->guests[i], *y = &b->guests[i];
    if (x->vmid != y->vmid || x->lxc != y->lxc || strcmp(x->node, y->node) ||
        strcmp(x->name, y->name) || strcmp(x->status, y->status) ||
        strcmp(x->tags, y->tags) || strcmp(x->lock, y->lock) ||
        strcmp(x->pool, y->pool) || x->template_ != y->template_ ||
        x->maxcpu != y->maxcpu || x->maxmem != y->maxmem ||
        x->maxdisk != y->maxdisk || x->uptime != y->uptime)
      return 0;
  }
  return 1;
}

static void resources(yajl_val data)
{
  struct pve_inventory inv, again;
  struct carp_buf b;
  yajl_val v = NULL;
  size_t i;
  memset(&inv, 0, sizeof(inv));
  if (pve_resources_parse(data, &inv)) {
    if (YAJL_IS_ARRAY(data) || inv.hosts || inv.guests || inv.nhosts ||
        inv.nguests)
      abort();
    return;
  }
  if (inv.nhosts + inv.nguests > carp_json_len(data))
    abort();
  for (i = 0; i < inv.nhosts; i++)
    if (!inv.hosts[i].name[0])
      abort();
  for (i = 0; i < inv.nguests; i++)
    if (inv.guests[i].vmid <= 0)
      abort();
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  write_inventory(&inv, &b);
  if (carp_json_parse(b.ptr, b.len, &v, NULL))
    abort();
  memset(&again, 0, sizeof(again));
  if (pve_resources_parse(v, &again) || !same_inventory(&inv, &again))
    abort();
  carp_json_free(v);
  carp_buf_free(&b);
  pve_inventory_free(&inv);
  pve_inventory_free(&again);
}

static void mappings(yajl_val data, int usb)
{
  struct pve_mapping *m = (struct pve_mapping *)&m;
  size_t n = 99, i, j;
  if (pve_mappings_parse(data, usb, &m, &n)) {
    if (m || n)
      abort();
    return;
  }
  if (n > carp_json_len(data))
    abort();
  for (i = 0; i < n; i++) {
    if (!m[i].id[0] || m[i].usb != usb)
      abort();
    for (j = 0; j < m[i].ndevs; j++)
      if (!m[i].devs[j].host[0])
        abort();
  }
  pve_mappings_free(m, n);
}

/* A VM config (GET /nodes/{node}/qemu/{vmid}/config). */
static void vm_config(yajl_val conf)
{
  struct pve_devref *refs;
  struct pve_desc d, d2;
  struct carp_buf b;
  char sku[96], uuid[64];
  const char *desc = carp_json_str(conf, "description", NULL);
  size_t n = pve_config_devrefs(conf, &refs), i;
  if (n && !YAJL_IS_OBJECT(conf))
    abort();
  for (i = 0; i < n; i++)
    if (refs[i].mapping[0]
            ? refs[i].path[0] != '\0'
            : !refs[i].path[0] || !strcasecmp(refs[i].path, "spice"))
      abort();
  carp_free(refs);
  pve_smbios_sku(carp_json_str(conf, "smbios1", NULL), sku, sizeof(sku));
  pve_prop_get(carp_json_str(conf, "smbios1", NULL), "uuid", uuid,
               sizeof(uuid));
  if (strlen(sku) >= sizeof(sku) || strlen(uuid) >= sizeof(uuid))
    abort();
  if (!desc)
    return;
  /* A description read, written as Carpenter writes it, reads the same. */
  pve_description_parse(desc, &d);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  pve_description_build(&b, d.nodeclaim, d.uid, d.nodepool, d.nodeclass,
                        d.cluster, d.image);
  pve_description_parse(carp_buf_cstr(&b), &d2);
  if (strcmp(d.nodeclaim, d2.nodeclaim) || strcmp(d.uid, d2.uid) ||
      strcmp(d.nodepool, d2.nodepool) || strcmp(d.nodeclass, d2.nodeclass) ||
      strcmp(d.cluster, d2.cluster) || strcmp(d.image, d2.image))
    abort();
  carp_buf_free(&b);
}

static void ha_status(yajl_val data)
{
  char out[4][64];
  int n = pve_ha_maintenance_parse(data, out, 4), i;
  if (n == CARP_EPARSE) {
    if (YAJL_IS_ARRAY(data))
      abort();
    return;
  }
  if (n < 0 || n > 4)
    abort();
  for (i = 0; i < n; i++)
    if (!out[i][0])
      abort();
}

static void task_status(yajl_val data)
{
  const char *msg = NULL;
  int err = 1;
  if (pve_task_status_decode(data, &err, &msg))
    return;
  if (!msg || !*msg || (err == 0) != (carp_pve_exitstatus_ok(msg) == 1))
    abort();
}

/* A UPID (what POST answers carry), written out and read again. */
static void upid(const char *s)
{
  struct carp_pve_upid u, u2;
  char text[512];
  if (carp_pve_upid_parse(s, &u))
    return;
  snprintf(text, sizeof(text), "UPID:%s:%08X:%08llX:%08X:%s:%s:%s:", u.node,
           u.pid, (unsigned long long)u.pstart, u.starttime, u.type, u.id,
           u.user);
  if (carp_pve_upid_parse(text, &u2) || strcmp(u.node, u2.node) ||
      u.pid != u2.pid || u.pstart != u2.pstart || u.starttime != u2.starttime ||
      strcmp(u.type, u2.type) || strcmp(u.id, u2.id) || strcmp(u.user, u2.user))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size)
{
  struct carp_http_response resp;
  struct carp_pve_result r;
  struct carp_buf msg;
  char reason[96] = "";
  const char *body = (const char *)bytes;
  size_t len = size, i;
  yajl_val root;

  memset(&resp, 0, sizeof(resp));
  resp.status = 200;
  if (size > 9 && !memcmp(bytes, "HTTP ", 5)) {
    const char *nl = memchr(bytes, '\n', size);
    char line[96];
    size_t ll = nl ? (size_t)(nl - body) : size;
    snprintf(line, sizeof(line), "%.*s", (int)(ll < 95 ? ll : 95), body);
    resp.status = strtol(line + 5, NULL, 10);
    if (strlen(line) > 9)
      snprintf(reason, sizeof(reason), "%s", line + 9);
    body = nl ? nl + 1 : body + size;
    len = size - (size_t)(body - (const char *)bytes);
  }
  resp.reason = reason;
  carp_buf_init(&resp.body, CARP_BUF_UNLIMITED);
  carp_buf_append(&resp.body, body, len);
  carp_buf_init(&msg, 64 * 1024);
  root = pve_answer_decode(&resp, "fuzz", &r, &msg);
  if (r.status != resp.status)
    abort();
  if (r.err) {
    if (!msg.len || r.data)
      abort();
  } else {
    if (resp.status != 200 || msg.len)
      abort();
    resources(r.data);
    mappings(r.data, 0);
    mappings(r.data, 1);
    vm_config(r.data);
    ha_status(r.data);
    task_status(r.data);
    if (YAJL_IS_STRING(r.data))
      upid(r.data->u.string);
    for (i = 0; i < carp_json_len(r.data) && YAJL_IS_ARRAY(r.data); i++) {
      yajl_val e = carp_json_at(r.data, i);
      vm_config(e); /* a list of configs: every shape meets every decoder */
      task_status(e);
      upid(carp_json_str(e, "upid", NULL));
    }
  }
  carp_json_free(root);
  carp_buf_free(&msg);
  carp_buf_free(&resp.body);
  return 0;
}
