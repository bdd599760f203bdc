/* create.c: launching one VM for a NodeClaim, as a state machine on the
 * op framework (op.c).
 *
 *   refresh inventory -> (adoption lookup) -> place (type, host, template)
 *   -> VMID -> reserve hook (the NodeClaim annotation is stored) -> clone
 *   (a full-clone slot first) -> read the clone's config -> [UserData:
 *   render, build and upload the NoCloud ISO] -> configure -> grow the
 *   boot disk -> start.
 *
 * Capacity is held in memory from placement on, so concurrent creates see
 * each other. Nothing is cloned before the reserve hook reported the
 * annotation stored: after a crash the next create finds the VMID on the
 * NodeClaim and resumes (adopt.c) instead of cloning a second VM. Proxmox
 * refuses a clone onto an existing VMID (synchronously, or as a failed
 * task when two clones race), which is answered by choosing another VMID
 * and reserving again - so two VMs never share a NodeClaim, and no VMID is
 * ever used twice.
 *
 * Any failure after the clone was sent rolls back: stop the VM if it runs,
 * delete it with purge and destroy-unreferenced-disks, and remove an
 * uploaded ISO - but only a VM whose description carries this NodeClaim's
 * UID. A start that fails for lack of host memory or CPUs is reported as
 * InsufficientCapacity and cached for the (type, zone); other failures
 * carry a Launched reason (CloneFailed, ConfigureFailed, StartFailed,
 * UserDataRenderFailed). Cancelling stops where it is and rolls nothing
 * back: the VM is adopted by the next create. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/base64.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

#define MiB             (1024LL * 1024)
#define GiB             (1024LL * 1024 * 1024)
#define MAX_VMID_TRIES  8
#define MAX_CLONE_TRIES 3
#define PVE_MAX_HOSTPCI 16 /* hostpci0..15 */
#define PVE_MAX_USB     15 /* usb0..14 */

struct pve_create {
  struct pve_op op;
  struct pve_vm_spec *spec;
  const struct carp_nodeclaim *claim;
  carp_provider_reserve_fn reserve;
  void *reserve_arg;
  carp_provider_create_cb cb;
  void *arg;
  /* the annotation, when present */
  int has_ann;
  char ann_region[64];
  char ann_zone[64];
  int64_t ann_vmid;
  /* regions to refresh first */
  size_t refresh_idx;
  /* the choice */
  struct pve_region *region;
  size_t type;
  char type_name[96];
  int32_t cpu;
  int64_t memory;
  char zone[64];
  int64_t vmid;
  int64_t tmpl_vmid;
  char tmpl_node[64];
  char image[96];
  struct pve_hold *hold;
  int made;     /* a VM we own may exist at vmid: roll back on failure */
  int adopting; /* resuming a VM found by the annotation */
  int vmid_tries;
  int clone_tries;
  int unlock_polls;
  uint64_t unlock_deadline;
  char upid[256];
  /* from the clone's config */
  char uuid[64];
  char mac[32];
  char net_key[16];
  char net_value[512];
  int agent_on;
  char boot_dev[16];
  int64_t boot_size;
  char sku[96];
  int running;
  char machine[64];   /* the clone's machine type ("" when unset) */
  uint32_t other_pci; /* hostpciN slots the template uses for itself */
  uint32_t other_usb; /* usbN slots likewise */
  /* UserData */
  struct carp_buf iso;
  char iso_volid[256];
  int iso_uploaded;
  /* failure */
  struct carp_provider_error err;
  int rb_stage;
  uint64_t t0;
};

static struct pve_create *C(struct pve_op *op)
{
  return carp_container_of(op, struct pve_create, op);
}

static void vm_path(char *out, size_t size, const char *node, int64_t vmid,
                    const char *suffix)
{
  snprintf(out, size, "/nodes/%s/qemu/%" PRId64 "%s", node, vmid, suffix);
}

/* --- the end
 * ------------------------------------------------------------------ */

static void release(struct pve_create *c, int keep_hold)
{
  if (c->op.slot_held) {
    pve_slot_release(c->op.pp, c->op.slot_key);
    c->op.slot_held = 0;
  }
  if (c->hold && !keep_hold) {
    pve_hold_release(c->region, c->hold);
    c->hold = NULL;
  }
}

static void on_free(struct pve_op *op)
{
  struct pve_create *c = C(op);
  pve_vm_spec_free(c->spec);
  carp_free(c->spec);
  carp_buf_free(&c->iso);
  carp_free(c);
}

static void on_canceled(struct pve_op *op)
{
  struct pve_create *c = C(op);
  struct carp_provider_error e;
  release(c, 0);
  carp_provider_error_set(&e, CARP_ECANCELED, CARP_REASON_LAUNCH_FAILED,
                          "cancelled");
  c->cb(CARP_ECANCELED, NULL, &e, c->arg);
  pve_op_done(op);
}

static void fail_now(struct pve_create *c)
{
  CARP_LOG_WARN(PVE_LOG, "create failed",
                CARP_F_STR("nodeclaim", c->spec->name),
                CARP_F_STR("region", c->region ? c->region->name : ""),
                CARP_F_STR("zone", c->zone), CARP_F_INT("vmid", c->vmid),
                CARP_F_STR("reason", c->err.reason),
                CARP_F_STR("message", c->err.message));
  release(c, 0);
  c->cb(c->err.code, NULL, &c->err, c->arg);
  pve_op_done(&c->op);
}

static void rollback(struct pve_create *c);

/* Records the error; rolls back when a VM of ours may exist. */
static void fail(struct pve_create *c, int code, const char *reason,
                 const char *prefix, const char *detail)
{
  if (!c->err.code)
    carp_provider_error_set(&c->err, code, reason, "%s%s", prefix,
                            detail ? detail : "");
  if (c->made)
    rollback(c);
  else
    fail_now(c);
}

/* What the create makes, as far as it is chosen (all of it at the end). */
static void fill_instance(const struct pve_create *c,
                          struct carp_provider_instance *out)
{
  struct carp_provider_instance inst;
  memset(&inst, 0, sizeof(inst));
  carp_provider_id_format(c->region->name, c->vmid, inst.provider_id,
                          sizeof(inst.provider_id));
  snprintf(inst.region, sizeof(inst.region), "%s", c->region->name);
  snprintf(inst.zone, sizeof(inst.zone), "%s", c->zone);
  inst.vmid = c->vmid;
  snprintf(inst.name, sizeof(inst.name), "%s", c->spec->name);
  snprintf(inst.status, sizeof(inst.status), "running");
  snprintf(inst.instance_type, sizeof(inst.instance_type), "%s", c->type_name);
  if (c->type < c->spec->ntypes &&
      !strcmp(c->spec->types[c->type].name, c->type_name))
    snprintf(inst.family, sizeof(inst.family), "%s",
             c->spec->types[c->type].family);
  inst.cpu = c->cpu;
  inst.memory = c->memory;
  snprintf(inst.capacity_type, sizeof(inst.capacity_type), "%s",
           CARP_CAPACITY_TYPE_ON_DEMAND);
  snprintf(inst.image_id, sizeof(inst.image_id), "%s", c->image);
  snprintf(inst.nodeclaim, sizeof(inst.nodeclaim), "%s", c->spec->name);
  snprintf(inst.nodeclaim_uid, sizeof(inst.nodeclaim_uid), "%s", c->spec->uid);
  snprintf(inst.nodepool, sizeof(inst.nodepool), "%s",
           c->spec->nodepool ? c->spec->nodepool : "");
  snprintf(inst.nodeclass, sizeof(inst.nodeclass), "%s",
           c->spec->nodeclass ? c->spec->nodeclass : "");
  snprintf(inst.cluster, sizeof(inst.cluster), "%s", c->op.pp->cluster);
  inst.capacity.cpu = (int64_t)c->cpu * 1000;
  inst.capacity.memory = c->memory;
  inst.capacity.ephemeral = c->spec->boot_disk_size > c->boot_size
                                ? c->spec->boot_disk_size
                                : c->boot_size;
  inst.capacity.pods = c->spec->max_pods;
  *out = inst;
}

static void succeed(struct pve_create *c)
{
  struct carp_provider_instance inst;
  fill_instance(c, &inst);
  if (c->hold) {
    c->hold->done = 1;
    c->hold->done_ms = carp_time_mono_ms();
    c->hold = NULL; /* dropped by the refresh that shows the VM running */
  }
  release(c, 1);
  CARP_LOG_INFO(PVE_LOG, "created VM", CARP_F_STR("nodeclaim", c->spec->name),
                CARP_F_STR("providerID", inst.provider_id),
                CARP_F_STR("zone", c->zone),
                CARP_F_STR("instanceType", c->type_name),
                CARP_F_BOOL("adopted", c->adopting),
                CARP_F_DURATION("duration", carp_time_mono_ms() - c->t0));
  c->cb(0, &inst, NULL, c->arg);
  pve_op_done(&c->op);
}

/* --- rollback
 * ------------------------------------------------------------------ */

static void rb_next(struct pve_create *c);

static void rb_task_done(struct pve_op *op, int err, const char *msg)
{
  struct pve_create *c = C(op);
  if (err)
    CARP_LOG_WARN(PVE_LOG, "rollback step failed",
                  CARP_F_STR("nodeclaim", c->spec->name),
                  CARP_F_INT("vmid", c->vmid), CARP_F_INT("stage", c->rb_stage),
                  CARP_F_STR("reason", msg));
  if (err && c->rb_stage == 3) {
    /* The delete task failed: leave the rest; the lifecycle controller's
     * delete (or the garbage collector) retries. */
    fail_now(c);
    return;
  }
  rb_next(c);
}

static void rb_answer(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  if (r->err) {
    if (r->err != CARP_ENOTFOUND)
      CARP_LOG_WARN(
          PVE_LOG, "rollback step failed",
          CARP_F_STR("nodeclaim", c->spec->name), CARP_F_INT("vmid", c->vmid),
          CARP_F_INT("stage", c->rb_stage), CARP_F_STR("reason", r->message));
    if (c->rb_stage == 2 || c->rb_stage == 3) {
      if (r->err == CARP_ENOTFOUND) {
        c->rb_stage = 4; /* the VM is gone already */
        rb_next(c);
      } else {
        fail_now(c);
      }
      return;
    }
    rb_next(c);
    return;
  }
  if (c->rb_stage == 1) {
    /* The config: only a VM carrying our UID is ours to delete. */
    struct pve_desc d;
    const char *desc = carp_json_str(r->data, "description", NULL);
    memset(&d, 0, sizeof(d));
    pve_description_parse(desc ? desc : "", &d);
    if (strcmp(d.uid, c->spec->uid) != 0) {
      CARP_LOG_WARN(PVE_LOG, "not rolling back a VM that is not ours",
                    CARP_F_STR("nodeclaim", c->spec->name),
                    CARP_F_INT("vmid", c->vmid), CARP_F_STR("owner", d.uid));
      fail_now(c);
      return;
    }
    rb_next(c);
    return;
  }
  if (r->data && YAJL_IS_STRING(r->data)) {
    snprintf(c->upid, sizeof(c->upid), "%s", r->data->u.string);
    pve_op_task(&c->op, c->region, c->upid,
                c->rb_stage == 2 ? c->op.pp->o.stop_timeout_ms
                                 : c->op.pp->o.delete_timeout_ms,
                0, rb_task_done);
    return;
  }
  rb_next(c);
}

static void rb_next(struct pve_create *c)
{
  char path[256];
  struct carp_pve_form f;
  c->rb_stage++;
  switch (c->rb_stage) {
  case 1:
    vm_path(path, sizeof(path), c->zone, c->vmid, "/config");
    pve_op_call(&c->op, c->region, "GET", path, NULL, 0, rb_answer);
    return;
  case 2:
    vm_path(path, sizeof(path), c->zone, c->vmid, "/status/stop");
    pve_op_call(&c->op, c->region, "POST", path, NULL, 0, rb_answer);
    return;
  case 3:
    vm_path(path, sizeof(path), c->zone, c->vmid, "");
    carp_pve_form_init(&f);
    carp_pve_form_add(&f, "purge", "1");
    carp_pve_form_add(&f, "destroy-unreferenced-disks", "1");
    pve_op_call(&c->op, c->region, "DELETE", path, &f, 0, rb_answer);
    carp_pve_form_free(&f);
    return;
  case 4:
    pve_region_forget(c->region, c->vmid);
    if (c->iso_uploaded) {
      snprintf(path, sizeof(path), "/nodes/%s/storage/%s/content/", c->zone,
               c->spec->iso_storage);
      {
        struct carp_buf p;
        carp_buf_init(&p, CARP_BUF_UNLIMITED);
        carp_buf_puts(&p, path);
        carp_http_escape(&p, c->iso_volid);
        pve_op_call(&c->op, c->region, "DELETE", carp_buf_cstr(&p), NULL, 0,
                    rb_answer);
        carp_buf_free(&p);
      }
      return;
    }
    __attribute__((fallthrough)); /* clang wants it spelled out */
  default:
    CARP_LOG_INFO(PVE_LOG, "rolled back a failed create",
                  CARP_F_STR("nodeclaim", c->spec->name),
                  CARP_F_INT("vmid", c->vmid));
    fail_now(c);
    return;
  }
}

static void rollback(struct pve_create *c)
{
  release(c, 1); /* the slot; the hold goes when the op ends */
  c->rb_stage = 0;
  rb_next(c);
}

/* --- start
 * --------------------------------------------------------------------- */

static int out_of_capacity(const char *msg)
{
  return strstr(msg, "QEMU exited with code") || strstr(msg, "vcpus allowed") ||
         strcasestr(msg, "out of memory") ||
         strcasestr(msg, "Cannot allocate memory") ||
         /* qemu-server: the mapped device is taken (or gone) on this host */
         strstr(msg, "already in use by") ||
         strstr(msg, "could not find a free device") ||
         strstr(msg, "device mapping not found");
}

static void on_start_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_create *c = C(op);
  if (!err || strstr(msg, "already running")) {
    succeed(c);
    return;
  }
  if (out_of_capacity(msg)) {
    pve_ice_add(op->pp, c->type_name, c->region->name, c->zone);
    fail(c, CARP_EINSUFFICIENT_CAPACITY, CARP_REASON_INSUFFICIENT_CAPACITY,
         "host has no room to start the VM: ", msg);
    return;
  }
  fail(c, err, CARP_REASON_START_FAILED, "start failed: ", msg);
}

static void on_start(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  if (r->err) {
    fail(c, r->err, CARP_REASON_START_FAILED, "start refused: ", r->message);
    return;
  }
  if (!r->data || !YAJL_IS_STRING(r->data)) {
    succeed(c);
    return;
  }
  snprintf(c->upid, sizeof(c->upid), "%s", r->data->u.string);
  pve_op_task(op, c->region, c->upid, op->pp->o.start_timeout_ms, 1,
              on_start_task);
}

static void start_vm(struct pve_create *c)
{
  char path[256];
  vm_path(path, sizeof(path), c->zone, c->vmid, "/status/start");
  pve_op_call(&c->op, c->region, "POST", path, NULL, 0, on_start);
}

/* --- resize
 * --------------------------------------------------------------------- */

static void on_resize_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_create *c = C(op);
  if (err) {
    fail(c, err, CARP_REASON_CONFIGURE_FAILED, "disk resize failed: ", msg);
    return;
  }
  c->boot_size = c->spec->boot_disk_size;
  start_vm(c);
}

static void on_resize(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  if (r->err) {
    fail(c, r->err, CARP_REASON_CONFIGURE_FAILED,
         "disk resize refused: ", r->message);
    return;
  }
  if (r->data && YAJL_IS_STRING(r->data)) { /* PVE 8+: a task */
    snprintf(c->upid, sizeof(c->upid), "%s", r->data->u.string);
    pve_op_task(op, c->region, c->upid, op->pp->o.config_timeout_ms, 0,
                on_resize_task);
    return;
  }
  c->boot_size = c->spec->boot_disk_size;
  start_vm(c);
}

static void format_size(char *out, size_t size, int64_t bytes)
{
  if (bytes % GiB == 0)
    snprintf(out, size, "%lldG", (long long)(bytes / GiB));
  else if (bytes % MiB == 0)
    snprintf(out, size, "%lldM", (long long)(bytes / MiB));
  else
    snprintf(out, size, "%lldK", (long long)((bytes + 1023) / 1024));
}

static void resize(struct pve_create *c)
{
  struct carp_pve_form f;
  char path[256], size[32];
  if (!c->spec->boot_disk_size || !c->boot_dev[0] ||
      c->spec->boot_disk_size <= c->boot_size) {
    if (c->spec->boot_disk_size && !c->boot_dev[0])
      CARP_LOG_WARN(PVE_LOG, "no boot disk found to resize",
                    CARP_F_STR("nodeclaim", c->spec->name),
                    CARP_F_INT("vmid", c->vmid));
    start_vm(c);
    return;
  }
  format_size(size, sizeof(size), c->spec->boot_disk_size);
  vm_path(path, sizeof(path), c->zone, c->vmid, "/resize");
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "disk", c->boot_dev);
  carp_pve_form_add(&f, "size", size);
  pve_op_call(&c->op, c->region, "PUT", path, &f, 0, on_resize);
  carp_pve_form_free(&f);
}

/* --- configure
 * ------------------------------------------------------------------- */

static void on_config_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_create *c = C(op);
  if (err) {
    fail(c, err, CARP_REASON_CONFIGURE_FAILED, "configuration failed: ", msg);
    return;
  }
  resize(c);
}

static void on_config_set(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  if (r->err) {
    fail(c, r->err, CARP_REASON_CONFIGURE_FAILED,
         "configuration refused: ", r->message);
    return;
  }
  if (r->data && YAJL_IS_STRING(r->data)) {
    snprintf(c->upid, sizeof(c->upid), "%s", r->data->u.string);
    pve_op_task(op, c->region, c->upid, op->pp->o.config_timeout_ms, 0,
                on_config_task);
    return;
  }
  resize(c);
}

static int is_net_model(const char *k, size_t n)
{
  static const char *const models[] = {
      "virtio",        "e1000",         "e1000e",        "vmxnet3", "rtl8139",
      "e1000-82540em", "e1000-82544gc", "e1000-82545em", "i82551",  "i82557b",
      "i82559er",      "ne2k_isa",      "ne2k_pci",      "pcnet",   NULL};
  size_t i;
  for (i = 0; models[i]; i++)
    if (strlen(models[i]) == n && !strncmp(models[i], k, n))
      return 1;
  return 0;
}

/* The interface rewritten from the NodeClass, keeping the clone's MAC and
 * any option the class does not set. */
static void build_net(struct pve_create *c, struct carp_buf *b)
{
  const struct pve_vm_spec *s = c->spec;
  char model[32] = "virtio";
  const char *p = c->net_value;
  struct carp_buf rest;
  carp_buf_init(&rest, 4096);
  while (*p) {
    size_t n = strcspn(p, ","), kl = strcspn(p, "=");
    if (kl > n)
      kl = n;
    if (is_net_model(p, kl)) {
      snprintf(model, sizeof(model), "%.*s", (int)kl, p);
    } else if (!strncmp(p, "model", kl) && kl == 5) {
      snprintf(model, sizeof(model), "%.*s", (int)(n - 6), p + 6);
    } else if (kl == 7 && !strncmp(p, "macaddr", 7)) {
      /* kept via c->mac */
    } else if ((kl == 6 && !strncmp(p, "bridge", 6) && s->net_bridge) ||
               (kl == 3 && !strncmp(p, "tag", 3) && s->net_vlan) ||
               (kl == 8 && !strncmp(p, "firewall", 8) &&
                s->net_firewall >= 0) ||
               (kl == 3 && !strncmp(p, "mtu", 3) && s->net_mtu)) {
      /* replaced below */
    } else if (n) {
      carp_buf_putc(&rest, ',');
      carp_buf_append(&rest, p, n);
    }
    p += n;
    if (*p)
      p++;
  }
  if (s->net_model)
    snprintf(model, sizeof(model), "%s", s->net_model);
  carp_buf_puts(b, model);
  if (c->mac[0])
    carp_buf_printf(b, "=%s", c->mac);
  if (s->net_bridge)
    carp_buf_printf(b, ",bridge=%s", s->net_bridge);
  if (s->net_firewall >= 0)
    carp_buf_printf(b, ",firewall=%d", s->net_firewall ? 1 : 0);
  if (s->net_vlan)
    carp_buf_printf(b, ",tag=%d", (int)s->net_vlan);
  if (s->net_mtu)
    carp_buf_printf(b, ",mtu=%d", (int)s->net_mtu);
  carp_buf_append(b, rest.ptr ? rest.ptr : "", rest.len);
  carp_buf_free(&rest);
}

/* The type's devices (hostpciN / usbN with mapping=, in slots the
 * template does not use itself; a second configure rewrites the same
 * slots), and what passthrough needs: the q35 machine (pcie=1 needs it)
 * and no memory balloon (a passed-through device pins all guest memory).
 * Without PCI devices the balloon equals the memory: no ballooning, a
 * stable capacity. Returns nonzero when it failed the create. */
static int add_devices(struct pve_create *c, struct carp_pve_form *f,
                       struct carp_buf *v)
{
  const struct pve_type *t =
      c->type < c->spec->ntypes ? &c->spec->types[c->type] : NULL;
  uint32_t pci = c->other_pci, usb = c->other_usb;
  int npci = 0, slot;
  size_t i;
  int32_t k;
  char key[16];
  for (i = 0; t && strcmp(t->name, c->type_name) == 0 && i < t->ndevs; i++) {
    const struct pve_dev *d = &t->devs[i];
    for (k = 0; k < d->count; k++) {
      uint32_t *used = d->usb ? &usb : &pci;
      int max = d->usb ? PVE_MAX_USB : PVE_MAX_HOSTPCI;
      for (slot = 0; slot < max && (*used & (1u << slot)); slot++)
        ;
      if (slot == max) {
        fail(c, CARP_EINVAL, CARP_REASON_CONFIGURE_FAILED, "",
             d->usb ? "no free usbN slot left for the type's USB devices"
                    : "no free hostpciN slot left for the type's PCI devices");
        return -1;
      }
      *used |= 1u << slot;
      snprintf(key, sizeof(key), "%s%d", d->usb ? "usb" : "hostpci", slot);
      carp_buf_reset(v);
      carp_buf_printf(v, "mapping=%s", d->mapping);
      if (!d->usb && d->pcie)
        carp_buf_puts(v, ",pcie=1");
      carp_pve_form_add(f, key, carp_buf_cstr(v));
      npci += !d->usb;
    }
  }
  if (npci) {
    if (!strstr(c->machine, "q35"))
      carp_pve_form_add(f, "machine", "q35");
    carp_pve_form_add(f, "balloon", "0");
  } else {
    carp_pve_form_add_int(f, "balloon", (c->memory + MiB - 1) / MiB);
  }
  return 0;
}

static void configure(struct pve_create *c)
{
  const struct pve_vm_spec *s = c->spec;
  struct pve_provider *pp = c->op.pp;
  struct carp_pve_form f;
  struct carp_buf v, b64;
  char path[256], pid[128];
  size_t i;

  carp_pve_form_init(&f);
  carp_buf_init(&v, 64 * 1024);
  carp_buf_init(&b64, 4096);
  carp_pve_form_add_int(&f, "cores", c->cpu);
  carp_pve_form_add(&f, "sockets", "1");
  carp_pve_form_add_int(&f, "memory", (c->memory + MiB - 1) / MiB);
  if (add_devices(c, &f, &v)) {
    carp_buf_free(&v);
    carp_buf_free(&b64);
    carp_pve_form_free(&f);
    return;
  }
  carp_buf_reset(&v);
  if (s->cpu_type)
    carp_pve_form_add(&f, "cpu", s->cpu_type);
  /* tags: ours first, then the class's */
  carp_buf_printf(&v, "carpenter;%s", pp->cluster_tag);
  for (i = 0; i < s->ntags; i++)
    carp_buf_printf(&v, ";%s", s->tags[i]);
  carp_pve_form_add(&f, "tags", carp_buf_cstr(&v));
  /* smbios1: the clone's uuid, serial = providerID, sku = instance type */
  carp_buf_reset(&v);
  carp_provider_id_format(c->region->name, c->vmid, pid, sizeof(pid));
  if (c->uuid[0])
    carp_buf_printf(&v, "uuid=%s,", c->uuid);
  carp_base64_encode(&b64, pid, strlen(pid));
  carp_buf_printf(&v, "serial=%s,", carp_buf_cstr(&b64));
  carp_buf_reset(&b64);
  carp_base64_encode(&b64, c->type_name, strlen(c->type_name));
  carp_buf_printf(&v, "sku=%s,base64=1", carp_buf_cstr(&b64));
  carp_pve_form_add(&f, "smbios1", carp_buf_cstr(&v));
  carp_pve_form_add(&f, "onboot", "1");
  if (!c->agent_on)
    carp_pve_form_add(&f, "agent", "1");
  if (s->has_net && c->net_key[0]) {
    carp_buf_reset(&v);
    build_net(c, &v);
    carp_pve_form_add(&f, c->net_key, carp_buf_cstr(&v));
  }
  if (s->userdata_mode) {
    carp_buf_reset(&v);
    carp_buf_printf(&v, "%s,media=cdrom", c->iso_volid);
    carp_pve_form_add(&f, "ide2", carp_buf_cstr(&v));
  } else {
    if (s->ci_user)
      carp_pve_form_add(&f, "ciuser", s->ci_user);
    if (s->nssh_keys)
      carp_pve_form_add_sshkeys(&f, (const char *const *)s->ssh_keys,
                                s->nssh_keys);
    carp_buf_reset(&v);
    if (!s->ipv4_none)
      carp_buf_puts(&v, "ip=dhcp");
    if (s->ipv6)
      carp_buf_printf(&v, "%sip6=%s", v.len ? "," : "",
                      s->ipv6 == 1 ? "dhcp" : "auto");
    if (v.len)
      carp_pve_form_add(&f, "ipconfig0", carp_buf_cstr(&v));
    if (s->nnameservers) {
      carp_buf_reset(&v);
      for (i = 0; i < s->nnameservers; i++)
        carp_buf_printf(&v, "%s%s", i ? " " : "", s->nameservers[i]);
      carp_pve_form_add(&f, "nameserver", carp_buf_cstr(&v));
    }
    if (s->nsearch) {
      carp_buf_reset(&v);
      for (i = 0; i < s->nsearch; i++)
        carp_buf_printf(&v, "%s%s", i ? " " : "", s->search[i]);
      carp_pve_form_add(&f, "searchdomain", carp_buf_cstr(&v));
    }
    carp_pve_form_add(&f, "ciupgrade", s->ci_upgrade ? "1" : "0");
  }
  vm_path(path, sizeof(path), c->zone, c->vmid, "/config");
  pve_op_call(&c->op, c->region, "POST", path, &f, 0, on_config_set);
  carp_buf_free(&v);
  carp_buf_free(&b64);
  carp_pve_form_free(&f);
}

/* --- UserData: the NoCloud ISO
 * ------------------------------------------------------ */

static void on_upload_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_create *c = C(op);
  if (err) {
    fail(c, err, CARP_REASON_CONFIGURE_FAILED, "ISO upload failed: ", msg);
    return;
  }
  configure(c);
}

static void on_upload(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  carp_buf_free(&c->iso);
  if (r->err) {
    fail(c, r->err, CARP_REASON_CONFIGURE_FAILED,
         "ISO upload refused: ", r->message);
    return;
  }
  c->iso_uploaded = 1;
  if (r->data && YAJL_IS_STRING(r->data)) {
    snprintf(c->upid, sizeof(c->upid), "%s", r->data->u.string);
    pve_op_task(op, c->region, c->upid, op->pp->o.config_timeout_ms, 0,
                on_upload_task);
    return;
  }
  configure(c);
}

static void upload_iso(struct pve_create *c)
{
  char pid[128], fname[64], path[256], *err = NULL;
  const char *fields[] = {"content", "iso"};
  int rc;
  carp_provider_id_format(c->region->name, c->vmid, pid, sizeof(pid));
  carp_buf_init(&c->iso, 64 * 1024 * 1024);
  {
    struct pve_type t;
    memset(&t, 0, sizeof(t));
    if (c->type < c->spec->ntypes)
      t = c->spec->types[c->type];
    snprintf(t.name, sizeof(t.name), "%s", c->type_name);
    t.cpu = c->cpu;
    t.memory = c->memory;
    rc = pve_userdata_files(c->spec, pid, c->region->name, c->zone, &t, c->vmid,
                            c->uuid, c->mac, &c->iso, &err);
  }
  if (rc) {
    fail(c, CARP_EINVALID, CARP_REASON_USERDATA_RENDER_FAILED,
         "user-data: ", err ? err : carp_strerror(rc));
    carp_free(err);
    return;
  }
  snprintf(fname, sizeof(fname), "carpenter-%" PRId64 ".iso", c->vmid);
  snprintf(c->iso_volid, sizeof(c->iso_volid), "%s:iso/%s",
           c->spec->iso_storage, fname);
  snprintf(path, sizeof(path), "/nodes/%s/storage/%s/upload", c->zone,
           c->spec->iso_storage);
  pve_op_upload(&c->op, c->region, path, fields, 2, fname, c->iso.ptr,
                c->iso.len, on_upload);
}

/* --- the clone's config
 * -------------------------------------------------------------- */

static int64_t parse_size(const char *s)
{
  char *end;
  double v = strtod(s, &end);
  switch (*end) {
  case 'K':
    return (int64_t)(v * 1024);
  case 'M':
    return (int64_t)(v * MiB);
  case 'G':
    return (int64_t)(v * GiB);
  case 'T':
    return (int64_t)(v * GiB * 1024);
  default:
    return (int64_t)v;
  }
}

static int is_disk(const char *key, const char *value)
{
  static const char *const buses[] = {"virtio", "scsi", "sata", "ide", NULL};
  size_t i, bl;
  for (i = 0; buses[i]; i++) {
    bl = strlen(buses[i]);
    if (!strncmp(key, buses[i], bl) && isdigit((unsigned char)key[bl]))
      break;
  }
  if (!buses[i] || !value)
    return 0;
  return !strstr(value, "media=cdrom") && !strstr(value, "cloudinit");
}

static void find_boot_disk(struct pve_create *c, yajl_val conf)
{
  static const char *const fallback[] = {"virtio0", "scsi0", "sata0", "ide0",
                                         NULL};
  const char *boot = carp_json_str(conf, "boot", NULL);
  char dev[16] = "", size[32];
  const char *v;
  size_t i;
  if (c->spec->boot_disk_device) {
    snprintf(dev, sizeof(dev), "%s", c->spec->boot_disk_device);
  } else if (boot) {
    char order[256];
    const char *p;
    pve_prop_get(boot, "order", order, sizeof(order));
    for (p = order; *p && !dev[0];) {
      size_t n = strcspn(p, ";");
      char key[16];
      snprintf(key, sizeof(key), "%.*s", (int)(n < 15 ? n : 15), p);
      if (is_disk(key, carp_json_str(conf, key, NULL)))
        snprintf(dev, sizeof(dev), "%s", key);
      p += n;
      if (*p)
        p++;
    }
  }
  for (i = 0; !dev[0] && fallback[i]; i++)
    if (is_disk(fallback[i], carp_json_str(conf, fallback[i], NULL)))
      snprintf(dev, sizeof(dev), "%s", fallback[i]);
  if (!dev[0])
    return;
  v = carp_json_str(conf, dev, NULL);
  if (!v)
    return;
  snprintf(c->boot_dev, sizeof(c->boot_dev), "%s", dev);
  pve_prop_get(v, "size", size, sizeof(size));
  c->boot_size = size[0] ? parse_size(size) : 0;
}

/* Whether a hostpciN / usbN value names one of the type's mappings (ours:
 * its slot is rewritten by configure, never taken twice). */
static int our_device(const struct pve_create *c, const char *value, int usb)
{
  const struct pve_type *t =
      c->type < c->spec->ntypes ? &c->spec->types[c->type] : NULL;
  char m[64];
  size_t i;
  pve_prop_get(value, "mapping", m, sizeof(m));
  for (i = 0; t && m[0] && i < t->ndevs; i++)
    if (t->devs[i].usb == usb && !strcmp(t->devs[i].mapping, m))
      return 1;
  return 0;
}

/* The machine type and the device slots the template uses itself. */
static void read_device_slots(struct pve_create *c, yajl_val conf)
{
  const char *machine = carp_json_str(conf, "machine", NULL);
  size_t i;
  snprintf(c->machine, sizeof(c->machine), "%s", machine ? machine : "");
  c->other_pci = c->other_usb = 0;
  for (i = 0; conf && YAJL_IS_OBJECT(conf) && i < conf->u.object.len; i++) {
    const char *k = conf->u.object.keys[i];
    yajl_val x = conf->u.object.values[i];
    int usb = !strncmp(k, "usb", 3), n;
    char *end;
    if (!usb && strncmp(k, "hostpci", 7) != 0)
      continue;
    n = (int)strtol(k + (usb ? 3 : 7), &end, 10);
    if (*end || end == k + (usb ? 3 : 7) || n < 0 ||
        n >= (usb ? PVE_MAX_USB : PVE_MAX_HOSTPCI) || !YAJL_IS_STRING(x) ||
        our_device(c, x->u.string, usb))
      continue;
    if (usb)
      c->other_usb |= 1u << n;
    else
      c->other_pci |= 1u << n;
  }
}

static void read_facts(struct pve_create *c, yajl_val conf)
{
  const char *smbios = carp_json_str(conf, "smbios1", NULL);
  const char *agent = carp_json_str(conf, "agent", NULL);
  const char *net;
  int64_t agent_n = 0;
  const char *p;

  c->uuid[0] = '\0';
  if (smbios)
    pve_prop_get(smbios, "uuid", c->uuid, sizeof(c->uuid));
  pve_smbios_sku(smbios, c->sku, sizeof(c->sku));
  c->agent_on = 0;
  if (agent) {
    char en[8];
    pve_prop_get(agent, "enabled", en, sizeof(en));
    c->agent_on = agent[0] == '1' || !strcmp(en, "1");
  } else if (carp_json_int(conf, &agent_n, "agent", NULL) == 0) {
    c->agent_on = agent_n != 0;
  }
  read_device_slots(c, conf);
  snprintf(c->net_key, sizeof(c->net_key), "%s",
           c->spec->net_iface ? c->spec->net_iface : "net0");
  net = carp_json_str(conf, c->net_key, NULL);
  c->net_value[0] = c->mac[0] = '\0';
  if (!net && !c->spec->net_iface) {
    c->net_key[0] = '\0';
  } else if (net) {
    snprintf(c->net_value, sizeof(c->net_value), "%s", net);
    /* model=MAC comes first */
    p = strchr(net, '=');
    if (p) {
      size_t kl = (size_t)(p - net), n = strcspn(p + 1, ",");
      if (is_net_model(net, kl) && n < sizeof(c->mac))
        snprintf(c->mac, sizeof(c->mac), "%.*s", (int)n, p + 1);
    }
    if (!c->mac[0])
      pve_prop_get(net, "macaddr", c->mac, sizeof(c->mac));
  }
  find_boot_disk(c, conf);
}

static void after_config(struct pve_create *c)
{
  if (c->running) {
    succeed(c); /* adopted and already started: it was configured first */
    return;
  }
  if (c->spec->userdata_mode)
    upload_iso(c);
  else
    configure(c);
}

static void read_config(struct pve_create *c);
static void clone_vm(struct pve_create *c);
static void adopt_type(struct pve_create *c);
static void place(struct pve_create *c);

static void on_status(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  const char *st;
  if (r->err) {
    fail(c, r->err, CARP_REASON_LAUNCH_FAILED, "VM status: ", r->message);
    return;
  }
  st = carp_json_str(r->data, "status", NULL);
  c->running = st && !strcmp(st, "running");
  after_config(c);
}

static void poll_config(struct pve_op *op)
{
  read_config(C(op));
}

static void on_config(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  const char *lock, *desc;
  struct pve_desc d;
  char path[256];

  if (r->err == CARP_ENOTFOUND && c->adopting) {
    /* The clone we were waiting for failed and removed itself. */
    CARP_LOG_INFO(PVE_LOG, "adopted VM is gone; cloning it again",
                  CARP_F_STR("nodeclaim", c->spec->name),
                  CARP_F_INT("vmid", c->vmid));
    c->adopting = 0;
    c->made = 0;
    clone_vm(c);
    return;
  }
  if (r->err) {
    fail(c, r->err, CARP_REASON_CONFIGURE_FAILED,
         "reading the clone's config: ", r->message);
    return;
  }
  desc = carp_json_str(r->data, "description", NULL);
  memset(&d, 0, sizeof(d));
  pve_description_parse(desc ? desc : "", &d);
  lock = carp_json_str(r->data, "lock", NULL);
  if (lock && !strcmp(lock, "clone")) {
    /* Still being cloned (a task started before a restart): wait. */
    if (!c->unlock_deadline)
      c->unlock_deadline = carp_time_mono_ms() + op->pp->o.clone_timeout_ms;
    if (carp_time_mono_ms() > c->unlock_deadline) {
      fail(c, CARP_ETIMEDOUT, CARP_REASON_CLONE_FAILED, "",
           "the clone did not finish in time");
      return;
    }
    pve_op_defer(op, 1000, poll_config);
    return;
  }
  if (c->adopting && strcmp(d.uid, c->spec->uid) != 0) {
    /* Checked again once unlocked: the description arrives with the clone. */
    CARP_LOG_WARN(PVE_LOG,
                  "annotated VMID belongs to another VM; choosing a new one",
                  CARP_F_STR("nodeclaim", c->spec->name),
                  CARP_F_INT("vmid", c->vmid), CARP_F_STR("owner", d.uid));
    c->adopting = 0;
    c->made = 0;
    place(c);
    return;
  }
  if (lock && *lock && strcmp(lock, "clone") != 0) {
    fail(c, CARP_EAGAIN, CARP_REASON_CONFIGURE_FAILED, "VM is locked: ", lock);
    return;
  }
  read_facts(c, r->data);
  if (c->adopting) {
    adopt_type(c);
    read_device_slots(c, r->data); /* the type may have changed */
    if (d.image[0])
      snprintf(c->image, sizeof(c->image), "%s", d.image);
    vm_path(path, sizeof(path), c->zone, c->vmid, "/status/current");
    pve_op_call(op, c->region, "GET", path, NULL, 0, on_status);
    return;
  }
  after_config(c);
}

static void read_config(struct pve_create *c)
{
  char path[256];
  vm_path(path, sizeof(path), c->zone, c->vmid, "/config");
  pve_op_call(&c->op, c->region, "GET", path, NULL, 0, on_config);
}

/* --- clone
 * ------------------------------------------------------------------------ */

static void reserve(struct pve_create *c);
static void new_vmid(struct pve_create *c);

static void retry_clone(struct pve_op *op)
{
  clone_vm(C(op));
}

static int storage_lock_text(const char *msg)
{
  return strstr(msg, "pve-storage") || strstr(msg, "cfs-lock");
}

static void on_clone_task(struct pve_op *op, int err, const char *msg)
{
  struct pve_create *c = C(op);
  if (op->slot_held) {
    pve_slot_release(op->pp, op->slot_key);
    op->slot_held = 0;
  }
  if (!err) {
    read_config(c);
    return;
  }
  if (err == CARP_EEXIST) {
    /* Two clones raced onto one VMID and ours lost: nothing of ours exists. */
    c->made = 0;
    CARP_LOG_INFO(PVE_LOG, "VMID taken by a concurrent clone; choosing another",
                  CARP_F_STR("nodeclaim", c->spec->name),
                  CARP_F_INT("vmid", c->vmid));
    new_vmid(c);
    return;
  }
  if (err == CARP_EAGAIN && storage_lock_text(msg) &&
      ++c->clone_tries < MAX_CLONE_TRIES) {
    /* Storage lock contention: the failed clone cleaned up after itself. */
    c->made = 0;
    CARP_LOG_INFO(PVE_LOG, "clone hit a storage lock; retrying",
                  CARP_F_STR("nodeclaim", c->spec->name),
                  CARP_F_STR("reason", msg));
    pve_op_defer(op, 1000u * (unsigned)c->clone_tries, retry_clone);
    return;
  }
  fail(c, err, CARP_REASON_CLONE_FAILED, "clone failed: ", msg);
}

static void on_clone(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_create *c = C(op);
  if (r->err) {
    if (op->slot_held) {
      pve_slot_release(op->pp, op->slot_key);
      op->slot_held = 0;
    }
    c->made = 0; /* a refused clone created nothing */
    if (r->err == CARP_EEXIST) {
      CARP_LOG_INFO(PVE_LOG, "VMID already exists; choosing another",
                    CARP_F_STR("nodeclaim", c->spec->name),
                    CARP_F_INT("vmid", c->vmid));
      new_vmid(c);
      return;
    }
    if (r->err == CARP_EAGAIN && ++c->clone_tries < MAX_CLONE_TRIES) {
      pve_op_defer(op, 1000u * (unsigned)c->clone_tries, retry_clone);
      return;
    }
    fail(c, r->err, CARP_REASON_CLONE_FAILED, "clone refused: ", r->message);
    return;
  }
  if (!r->data || !YAJL_IS_STRING(r->data)) {
    fail(c, CARP_EPARSE, CARP_REASON_CLONE_FAILED, "",
         "clone answered no task");
    return;
  }
  snprintf(c->upid, sizeof(c->upid), "%s", r->data->u.string);
  pve_op_task(op, c->region, c->upid, op->pp->o.clone_timeout_ms, 1,
              on_clone_task);
}

static void clone_send(struct pve_op *op, int err)
{
  struct pve_create *c = C(op);
  const struct pve_vm_spec *s = c->spec;
  struct pve_provider *pp = op->pp;
  struct carp_pve_form f;
  struct carp_buf desc;
  char path[256];

  (void)err;
  carp_pve_form_init(&f);
  carp_buf_init(&desc, 8192);
  carp_pve_form_add_int(&f, "newid", c->vmid);
  carp_pve_form_add(&f, "name", s->name);
  pve_description_build(&desc, s->name, s->uid, s->nodepool, s->nodeclass,
                        pp->cluster, c->image);
  carp_pve_form_add(&f, "description", carp_buf_cstr(&desc));
  carp_pve_form_add(&f, "full", s->full ? "1" : "0");
  if (s->full && s->clone_storage)
    carp_pve_form_add(&f, "storage", s->clone_storage);
  if (s->full && s->clone_format)
    carp_pve_form_add(&f, "format", s->clone_format);
  if (strcmp(c->tmpl_node, c->zone) != 0)
    carp_pve_form_add(&f, "target", c->zone);
  if (s->pool)
    carp_pve_form_add(&f, "pool", s->pool);
  vm_path(path, sizeof(path), c->tmpl_node, c->tmpl_vmid, "/clone");
  c->made = 1; /* from here a VM of ours may exist */
  pve_op_call(op, c->region, "POST", path, &f, 0, on_clone);
  carp_buf_free(&desc);
  carp_pve_form_free(&f);
}

static void clone_vm(struct pve_create *c)
{
  char key[192];
  if (c->spec->full) {
    snprintf(key, sizeof(key), "%s/%s/%s", c->region->name, c->zone,
             c->spec->clone_storage ? c->spec->clone_storage : "");
    pve_op_slot(&c->op, key,
                c->spec->max_full_clones > 0 ? c->spec->max_full_clones : 1,
                clone_send);
    return;
  }
  clone_send(&c->op, 0);
}

/* --- reserve
 * ------------------------------------------------------------------------ */

static void on_reserved(struct pve_op *op, int err)
{
  struct pve_create *c = C(op);
  if (err) {
    fail(c, err, CARP_REASON_LAUNCH_FAILED,
         "recording the VMID on the NodeClaim failed: ", carp_strerror(err));
    return;
  }
  clone_vm(c);
}

static void reserve(struct pve_create *c)
{
  struct carp_provider_reservation res;
  struct carp_provider_instance inst;
  char value[256];
  snprintf(value, sizeof(value), "%s/%s/%" PRId64, c->region->name, c->zone,
           c->vmid);
  res.region = c->region->name;
  res.zone = c->zone;
  res.vmid = c->vmid;
  res.value = value;
  fill_instance(c, &inst);
  res.inst = &inst;
  pve_op_reserve(&c->op, c->reserve, c->reserve_arg, c->claim, &res,
                 on_reserved);
}

static void on_vmid(struct pve_op *op, int err, int64_t vmid, const char *msg)
{
  struct pve_create *c = C(op);
  if (err) {
    fail(c, err,
         err == CARP_EINSUFFICIENT_CAPACITY ? CARP_REASON_INSUFFICIENT_CAPACITY
                                            : CARP_REASON_LAUNCH_FAILED,
         "choosing a VMID: ", msg);
    return;
  }
  c->vmid = vmid;
  if (c->hold)
    c->hold->vmid = vmid;
  reserve(c);
}

static void new_vmid(struct pve_create *c)
{
  if (++c->vmid_tries > MAX_VMID_TRIES) {
    fail(c, CARP_EAGAIN, CARP_REASON_CLONE_FAILED, "",
         "every VMID tried was taken before the clone");
    return;
  }
  pve_vmid_mark(c->region, c->vmid);
  pve_vmid_alloc(&c->op, c->region, c->spec, on_vmid);
}

/* --- placement
 * ------------------------------------------------------------------------ */

static void take(struct pve_create *c, const struct pve_choice *ch)
{
  const struct pve_type *t = &c->spec->types[ch->type];
  c->region = ch->region;
  c->type = ch->type;
  snprintf(c->type_name, sizeof(c->type_name), "%s", t->name);
  c->cpu = t->cpu;
  c->memory = t->memory;
  snprintf(c->zone, sizeof(c->zone), "%s", ch->host->name);
  c->tmpl_vmid = ch->tmpl->vmid;
  snprintf(c->tmpl_node, sizeof(c->tmpl_node), "%s", ch->tmpl->node);
  snprintf(c->image, sizeof(c->image), "%s/%" PRId64, c->region->name,
           c->tmpl_vmid);
  if (c->hold)
    pve_hold_release(c->region, c->hold);
  c->hold = pve_hold_add(c->region, c->zone, t->cpu, t->memory);
  memcpy(c->hold->devs, t->devs, sizeof(t->devs));
  c->hold->ndevs = t->ndevs;
}

static int map_place_error(int rc)
{
  if (rc == CARP_EFORBIDDEN || rc == CARP_EUNAUTHORIZED || rc == CARP_ETLS)
    return CARP_ENODECLASS_NOT_READY;
  return rc;
}

static const char *reason_of(int rc)
{
  if (rc == CARP_EINSUFFICIENT_CAPACITY)
    return CARP_REASON_INSUFFICIENT_CAPACITY;
  if (rc == CARP_ENODECLASS_NOT_READY)
    return CARP_REASON_NODECLASS_NOT_READY;
  return CARP_REASON_LAUNCH_FAILED;
}

static void place(struct pve_create *c)
{
  struct pve_choice ch;
  char msg[512];
  int rc;
  if (c->hold && c->region) {
    pve_hold_release(c->region, c->hold);
    c->hold = NULL;
  }
  rc = pve_place(c->op.pp, c->spec, NULL, NULL, NULL, &ch, msg, sizeof(msg));
  if (rc) {
    rc = map_place_error(rc);
    fail(c, rc, reason_of(rc), "", msg);
    return;
  }
  take(c, &ch);
  c->vmid_tries = 0;
  pve_vmid_alloc(&c->op, c->region, c->spec, on_vmid);
}

/* --- adoption
 * ------------------------------------------------------------------------ */

static void adopt(struct pve_create *c)
{
  struct pve_region *r = pve_region_find(c->op.pp, c->ann_region);
  const struct pve_guest *g;
  struct pve_choice ch;
  char msg[512];
  int rc;

  if (!r || r->status) {
    rc = r ? map_place_error(r->status) : CARP_ENODECLASS_NOT_READY;
    fail(c, rc, reason_of(rc), "",
         r ? r->message : "the NodeClaim's annotated region is not configured");
    return;
  }
  g = pve_region_guest(r, c->ann_vmid);
  c->region = r;
  c->vmid = c->ann_vmid;
  pve_vmid_mark(r, c->vmid);
  if (!g) {
    /* Reserved but never cloned (or the clone failed): clone onto it now,
     * on the annotated host if it still fits. */
    rc = pve_place(c->op.pp, c->spec, r->name, c->ann_zone, NULL, &ch, msg,
                   sizeof(msg));
    if (rc) {
      CARP_LOG_INFO(PVE_LOG, "annotated host no longer fits; placing again",
                    CARP_F_STR("nodeclaim", c->spec->name),
                    CARP_F_STR("zone", c->ann_zone), CARP_F_STR("reason", msg));
      place(c);
      return;
    }
    take(c, &ch);
    c->hold->vmid = c->vmid;
    CARP_LOG_INFO(PVE_LOG, "resuming a create: cloning onto the reserved VMID",
                  CARP_F_STR("nodeclaim", c->spec->name),
                  CARP_F_INT("vmid", c->vmid));
    clone_vm(c);
    return;
  }
  /* The VM exists: ours only if its description names our UID (checked in
   * on_config, once any clone lock is gone). */
  c->adopting = 1;
  c->made = 1;
  snprintf(c->zone, sizeof(c->zone), "%s", g->node);
  rc = pve_place_quiet(c->op.pp, c->spec, r->name, g->node, &ch, msg,
                       sizeof(msg));
  if (rc == 0) {
    take(c, &ch);
    c->hold->vmid = c->vmid;
    snprintf(c->zone, sizeof(c->zone), "%s", g->node);
  } else if (c->spec->ntypes) {
    /* No room counted (the VM itself may be what fills the host): keep the
     * cheapest allowed type; the real one comes from the VM's smbios1. */
    const struct pve_type *t = &c->spec->types[0];
    c->type = 0;
    snprintf(c->type_name, sizeof(c->type_name), "%s", t->name);
    c->cpu = t->cpu;
    c->memory = t->memory;
  }
  CARP_LOG_INFO(PVE_LOG, "resuming a create: adopting the annotated VM",
                CARP_F_STR("nodeclaim", c->spec->name),
                CARP_F_INT("vmid", c->vmid), CARP_F_STR("zone", c->zone));
  read_config(c);
}

/* After adoption's config read: prefer the type recorded in smbios1. */
static void adopt_type(struct pve_create *c)
{
  size_t i;
  if (!c->sku[0])
    return;
  for (i = 0; i < c->spec->ntypes; i++)
    if (!strcmp(c->spec->types[i].name, c->sku)) {
      c->type = i;
      snprintf(c->type_name, sizeof(c->type_name), "%s", c->sku);
      c->cpu = c->spec->types[i].cpu;
      c->memory = c->spec->types[i].memory;
      if (c->hold) {
        memcpy(c->hold->devs, c->spec->types[i].devs, sizeof(c->hold->devs));
        c->hold->ndevs = c->spec->types[i].ndevs;
      }
      return;
    }
}

/* --- begin
 * ----------------------------------------------------------------------------
 */

static void refresh_next(struct pve_create *c);

static void on_refreshed(struct pve_op *op, int err)
{
  struct pve_create *c = C(op);
  (void)err; /* a failed region is skipped by placement (or reported) */
  c->refresh_idx++;
  refresh_next(c);
}

static int region_wanted(struct pve_create *c, const struct pve_region *r)
{
  size_t i;
  if (c->has_ann)
    return !strcmp(r->name, c->ann_region);
  if (!c->spec->nregions)
    return 1;
  for (i = 0; i < c->spec->nregions; i++)
    if (!strcmp(c->spec->regions[i], r->name))
      return 1;
  return 0;
}

static void refresh_next(struct pve_create *c)
{
  struct pve_provider *pp = c->op.pp;
  while (c->refresh_idx < pp->nregions) {
    struct pve_region *r = &pp->regions[c->refresh_idx];
    /* Adoption looks the VM up in a fresh listing; placement accepts one
     * as old as the refresh interval. */
    if (region_wanted(c, r) &&
        !pve_region_fresh(r, c->has_ann ? 0 : pp->o.refresh_interval_ms)) {
      pve_op_refresh(&c->op, r, on_refreshed);
      return;
    }
    c->refresh_idx++;
  }
  if (c->has_ann)
    adopt(c);
  else
    place(c);
}

static void begin(struct pve_op *op)
{
  refresh_next(C(op));
}

int pve_create_start(struct pve_provider *pp, struct pve_vm_spec *spec,
                     const struct carp_nodeclaim *claim, const char *annotation,
                     carp_provider_reserve_fn reserve_fn, void *reserve_arg,
                     carp_provider_create_cb cb, void *arg, struct pve_op **out)
{
  struct pve_create *c;
  if (!pp || !spec || !reserve_fn || !cb || !spec->name || !spec->uid)
    return CARP_EINVAL;
  if (pp->closing)
    return CARP_ECANCELED;
  c = CARP_NEW(struct pve_create);
  if (annotation && *annotation) {
    if (carp_provider_vm_annotation_parse(annotation, c->ann_region,
                                          sizeof(c->ann_region), c->ann_zone,
                                          sizeof(c->ann_zone), &c->ann_vmid)) {
      carp_free(c);
      return CARP_EINVAL;
    }
    c->has_ann = 1;
  }
  c->spec = spec;
  c->claim = claim;
  c->reserve = reserve_fn;
  c->reserve_arg = reserve_arg;
  c->cb = cb;
  c->arg = arg;
  c->t0 = carp_time_mono_ms();
  carp_buf_init(&c->iso, 64 * 1024 * 1024);
  pve_op_init(&c->op, pp, on_canceled, on_free);
  pve_op_defer(&c->op, 0, begin);
  if (out)
    *out = &c->op;
  return 0;
}
