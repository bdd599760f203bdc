/* delete.c: removing a VM for a NodeClaim that is going away.
 *
 * Steps: find the VM by VMID in /cluster/resources (HA may have moved it,
 * and its name is not to be trusted), read its config (the description's
 * NodeClaim UID when the caller guards with one, and the NoCloud ISO on
 * ide2), stop it hard and wait for the stop task - a DELETE racing a stop
 * fails on the config lock and leaves an orphan - then DELETE with purge=1
 * (also drops HA and replication entries) and destroy-unreferenced-disks=1,
 * wait for that task, and remove the uploaded ISO. A VM that is not there
 * is CARP_ENOTFOUND, which is how the lifecycle controller knows it is
 * done: it calls delete until it sees that, as Karpenter does. So is a VM
 * on a host the inventory shows offline (reason HostOffline): nothing can
 * reach it there, its NodeClaim may go, and the garbage collector deletes
 * the VM once the host is back (a host that only blipped answers 595 here
 * until the inventory catches up, and the caller retries). Errors on the
 * way (a lock, a timeout) are reported for the next attempt; nothing is
 * retried here. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

struct pve_delete {
  struct pve_op op;
  struct pve_region *region;
  int64_t vmid;
  char uid[64];
  carp_provider_done_cb cb;
  void *arg;
  char node[64];
  char status[16];
  char lock[24];
  char iso_storage[64];
  char iso_volid[256];
  char upid[256];
  int stopped; /* the stop task ended */
  int delete_tries;
  uint64_t t0;
};

static struct pve_delete *D(struct pve_op *op)
{
  return carp_container_of(op, struct pve_delete, op);
}

static void on_free(struct pve_op *op)
{
  carp_free(D(op));
}

static void finish_as(struct pve_delete *d, int code, const char *reason,
                      const char *reason_msg)
{
  struct carp_provider_error e;
  memset(&e, 0, sizeof(e));
  if (code) {
    carp_provider_error_set(&e, code, reason, "%s",
                            reason_msg ? reason_msg : "");
    if (code != CARP_ENOTFOUND)
      CARP_LOG_WARN(PVE_LOG, "delete failed",
                    CARP_F_STR("region", d->region->name),
                    CARP_F_INT("vmid", d->vmid), CARP_F_ERR(code),
                    CARP_F_STR("reason", e.message));
  } else {
    CARP_LOG_INFO(PVE_LOG, "deleted VM", CARP_F_STR("region", d->region->name),
                  CARP_F_STR("zone", d->node), CARP_F_INT("vmid", d->vmid),
                  CARP_F_DURATION("duration", carp_time_mono_ms() - d->t0));
  }
  d->cb(code, code ? &e : NULL, d->arg);
  pve_op_done(&d->op);
}

static void finish(struct pve_delete *d, int code, const char *reason_msg)
{
  finish_as(d, code, "", reason_msg);
}

static void on_canceled(struct pve_op *op)
{
  finish(D(op), CARP_ECANCELED, "cancelled");
}

static void vm_path(struct pve_delete *d, char *out, size_t size,
                    const char *suffix)
{
  snprintf(out, size, "/nodes/%s/qemu/%" PRId64 "%s", d->node, d->vmid, suffix);
}

static void iso_failed(struct pve_delete *d, const char *reason)
{
  CARP_LOG_WARN(PVE_LOG, "could not remove the VM's ISO",
                CARP_F_STR("volume", d->iso_volid),
                CARP_F_STR("reason", reason));
}

static void on_iso_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_delete *d = D(op);
  if (err && err != CARP_ENOTFOUND)
    iso_failed(d, msg);
  finish(d, 0, NULL);
}

/* Removing a volume is a task too: the VM counts as deleted once the ISO
 * is really gone, so nothing of it is left when the caller moves on. Its
 * failure is only logged - the VM itself is gone. */
static void on_iso_deleted(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_delete *d = D(op);
  if (r->err && r->err != CARP_ENOTFOUND)
    iso_failed(d, r->message);
  if (!r->err && r->data && YAJL_IS_STRING(r->data)) {
    snprintf(d->upid, sizeof(d->upid), "%s", r->data->u.string);
    pve_op_task(op, d->region, d->upid, op->pp->o.delete_timeout_ms, 0,
                on_iso_task);
    return;
  }
  finish(d, 0, NULL);
}

static void gone(struct pve_delete *d)
{
  struct carp_buf p;
  pve_region_forget(d->region, d->vmid);
  pve_vmid_mark(d->region, d->vmid);
  if (!d->iso_volid[0]) {
    finish(d, 0, NULL);
    return;
  }
  carp_buf_init(&p, CARP_BUF_UNLIMITED);
  carp_buf_printf(&p, "/nodes/%s/storage/%s/content/", d->node, d->iso_storage);
  carp_http_escape(&p, d->iso_volid);
  pve_op_call(&d->op, d->region, "DELETE", carp_buf_cstr(&p), NULL, 0,
              on_iso_deleted);
  carp_buf_free(&p);
}

static void stop(struct pve_delete *d);

static void on_destroy_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_delete *d = D(op);
  if (err == CARP_ENOTFOUND || !err) {
    gone(d);
    return;
  }
  if (msg && strstr(msg, "is running") && d->delete_tries++ < 2) {
    /* A start queued on the VM's lock ran between our stop and the
     * destroy: a host that came back starts its onboot guests. */
    stop(d);
    return;
  }
  finish(d, err, msg);
}

static void on_destroy(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_delete *d = D(op);
  if (r->err) {
    if (r->err == CARP_ENOTFOUND) {
      gone(d);
      return;
    }
    if (strstr(r->message, "is running") && d->delete_tries++ < 2) {
      /* The listing lagged: it runs after all. */
      stop(d);
      return;
    }
    finish(d, r->err, r->message);
    return;
  }
  if (r->data && YAJL_IS_STRING(r->data)) {
    snprintf(d->upid, sizeof(d->upid), "%s", r->data->u.string);
    pve_op_task(op, d->region, d->upid, op->pp->o.delete_timeout_ms, 0,
                on_destroy_task);
    return;
  }
  gone(d);
}

static void destroy(struct pve_delete *d)
{
  struct carp_pve_form f;
  char path[256];
  vm_path(d, path, sizeof(path), "");
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "purge", "1");
  carp_pve_form_add(&f, "destroy-unreferenced-disks", "1");
  pve_op_call(&d->op, d->region, "DELETE", path, &f, 0, on_destroy);
  carp_pve_form_free(&f);
}

static void on_stop_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_delete *d = D(op);
  if (err == CARP_ENOTFOUND) {
    gone(d);
    return;
  }
  if (err) {
    finish(d, err, msg);
    return;
  }
  d->stopped = 1;
  destroy(d);
}

static void on_stop(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_delete *d = D(op);
  if (r->err) {
    if (r->err == CARP_ENOTFOUND) {
      gone(d);
      return;
    }
    finish(d, r->err, r->message);
    return;
  }
  if (r->data && YAJL_IS_STRING(r->data)) {
    snprintf(d->upid, sizeof(d->upid), "%s", r->data->u.string);
    pve_op_task(op, d->region, d->upid, op->pp->o.stop_timeout_ms, 0,
                on_stop_task);
    return;
  }
  destroy(d);
}

static void stop(struct pve_delete *d)
{
  struct carp_pve_form f;
  char path[256];
  vm_path(d, path, sizeof(path), "/status/stop");
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "overrule-shutdown", "1");
  pve_op_call(&d->op, d->region, "POST", path, &f, 0, on_stop);
  carp_pve_form_free(&f);
}

static void on_config(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_delete *d = D(op);
  const char *desc, *ide2, *lock;
  struct pve_desc pd;
  char suffix[64];
  if (r->err) {
    if (r->err == CARP_ENOTFOUND) {
      finish(d, CARP_ENOTFOUND, "VM not found");
      return;
    }
    finish(d, r->err, r->message);
    return;
  }
  desc = carp_json_str(r->data, "description", NULL);
  memset(&pd, 0, sizeof(pd));
  pve_description_parse(desc ? desc : "", &pd);
  if (d->uid[0] && strcmp(pd.uid, d->uid) != 0) {
    /* Another VM took this VMID: not ours to delete. */
    finish(d, CARP_ENOTFOUND, "the VMID belongs to another VM");
    return;
  }
  lock = carp_json_str(r->data, "lock", NULL);
  if (lock && !strcmp(lock, "clone")) {
    finish(d, CARP_EAGAIN, "VM is locked (clone): its clone is still running");
    return;
  }
  if (lock && !strcmp(lock, "destroyed")) {
    finish(d, CARP_EAGAIN, "VM is being destroyed");
    return;
  }
  ide2 = carp_json_str(r->data, "ide2", NULL);
  snprintf(suffix, sizeof(suffix), ":iso/carpenter-%" PRId64 ".iso", d->vmid);
  if (ide2) {
    /* "<storage>:iso/carpenter-<vmid>.iso,media=cdrom": ours to remove. */
    const char *colon = strchr(ide2, ':');
    size_t sl = colon ? (size_t)(colon - ide2) : 0;
    if (sl > 0 && sl < sizeof(d->iso_storage) &&
        !strncmp(colon, suffix, strlen(suffix)) &&
        (colon[strlen(suffix)] == ',' || colon[strlen(suffix)] == '\0')) {
      snprintf(d->iso_storage, sizeof(d->iso_storage), "%.*s", (int)sl, ide2);
      snprintf(d->iso_volid, sizeof(d->iso_volid), "%s%s", d->iso_storage,
               suffix);
    }
  }
  if (!strcmp(d->status, "stopped"))
    destroy(d);
  else
    stop(d);
}

static void on_resources(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_delete *d = D(op);
  const struct pve_host *host;
  size_t i, n;
  char path[256];
  if (r->err) {
    finish(d, r->err, r->message);
    return;
  }
  n = carp_json_len(r->data);
  for (i = 0; i < n; i++) {
    yajl_val e = carp_json_at(r->data, i);
    int64_t vmid = 0;
    const char *node, *st, *lock;
    if (carp_json_int(e, &vmid, "vmid", NULL) || vmid != d->vmid)
      continue;
    node = carp_json_str(e, "node", NULL);
    st = carp_json_str(e, "status", NULL);
    lock = carp_json_str(e, "lock", NULL);
    snprintf(d->node, sizeof(d->node), "%s", node ? node : "");
    snprintf(d->status, sizeof(d->status), "%s", st ? st : "");
    snprintf(d->lock, sizeof(d->lock), "%s", lock ? lock : "");
    host = pve_region_host(d->region, d->node);
    if (host && host->status == PVE_HOST_OFFLINE) {
      char msg[256];
      snprintf(msg, sizeof(msg),
               "host %s is offline: the VM cannot be deleted now; the "
               "garbage collector removes it once the host is back",
               d->node);
      CARP_LOG_WARN(PVE_LOG, "VM out of reach on an offline host",
                    CARP_F_STR("region", d->region->name),
                    CARP_F_STR("zone", d->node), CARP_F_INT("vmid", d->vmid));
      finish_as(d, CARP_ENOTFOUND, CARP_REASON_HOST_OFFLINE, msg);
      return;
    }
    vm_path(d, path, sizeof(path), "/config");
    pve_op_call(op, d->region, "GET", path, NULL, 0, on_config);
    return;
  }
  if (r->data && n == 0 && d->region->status == CARP_EFORBIDDEN) {
    finish(d, CARP_EFORBIDDEN, d->region->message);
    return;
  }
  finish(d, CARP_ENOTFOUND, "VM not found");
}

static void begin(struct pve_op *op)
{
  struct pve_delete *d = D(op);
  struct carp_pve_form f;
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "type", "vm");
  pve_op_call(op, d->region, "GET", "/cluster/resources", &f, 0, on_resources);
  carp_pve_form_free(&f);
}

int pve_delete_start(struct pve_provider *pp, const char *region, int64_t vmid,
                     const char *uid, carp_provider_done_cb cb, void *arg,
                     struct pve_op **out)
{
  struct pve_region *r = pve_region_find(pp, region);
  struct pve_delete *d;
  if (!cb || vmid < 100)
    return CARP_EINVAL;
  if (!r)
    return CARP_ENOENT;
  if (pp->closing)
    return CARP_ECANCELED;
  d = CARP_NEW(struct pve_delete);
  d->region = r;
  d->vmid = vmid;
  snprintf(d->uid, sizeof(d->uid), "%s", uid ? uid : "");
  d->cb = cb;
  d->arg = arg;
  d->t0 = carp_time_mono_ms();
  pve_op_init(&d->op, pp, on_canceled, on_free);
  pve_op_defer(&d->op, 0, begin);
  if (out)
    *out = &d->op;
  return 0;
}
