/* instances.c: get(providerID) and list() - the VMs this cluster manages as
 * Karpenter's garbage collection and termination see them.
 *
 * list() walks every region's /cluster/resources?type=vm and keeps the VMs
 * tagged carpenter-<cluster> (never by name: a fresh clone has none yet).
 * The NodeClaim UID, NodePool and NodeClass come from each VM's
 * description and the instance type from its SMBIOS sku, so each VM's
 * config is read once and cached by VMID until the VM leaves the listing.
 * A region that fails is reported in the error (and its VMs are missing),
 * so a garbage collector can tell "no VM" from "no answer". A VM on a host
 * the inventory shows offline is listed without reading its config (with
 * what was read before, if anything). get() reads one VM the same way,
 * found by VMID wherever it runs now. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "pve_int.h"

#define MiB (1024LL * 1024)

struct found {
  int64_t vmid;
  char node[64];
  char name[128];
  char status[16];
};

struct pve_list {
  struct pve_op op;
  carp_provider_list_cb cb;    /* list */
  carp_provider_get_cb get_cb; /* get */
  void *arg;
  int64_t get_vmid; /* get: the VM; 0 for list */
  size_t ri;        /* region being listed */
  struct found *found;
  size_t nfound, fi;
  struct carp_provider_instance *out;
  size_t nout;
  struct carp_provider_error err;
};

static struct pve_list *L(struct pve_op *op)
{
  return carp_container_of(op, struct pve_list, op);
}

static void on_free(struct pve_op *op)
{
  struct pve_list *l = L(op);
  carp_free(l->found);
  carp_free(l->out);
  carp_free(l);
}

static void deliver(struct pve_list *l, int code)
{
  if (l->get_vmid) {
    l->get_cb(code, code ? NULL : &l->out[0], code ? &l->err : NULL, l->arg);
  } else {
    l->cb(code, l->out, l->nout, l->err.code ? &l->err : NULL, l->arg);
  }
  pve_op_done(&l->op);
}

static void on_canceled(struct pve_op *op)
{
  struct pve_list *l = L(op);
  carp_provider_error_set(&l->err, CARP_ECANCELED, "", "cancelled");
  l->nout = 0;
  deliver(l, CARP_ECANCELED);
}

static struct pve_desc *desc_find(struct pve_region *r, int64_t vmid)
{
  size_t i;
  for (i = 0; i < r->ndescs; i++)
    if (r->descs[i].vmid == vmid)
      return &r->descs[i];
  return NULL;
}

static struct pve_desc *desc_put(struct pve_region *r, int64_t vmid)
{
  struct pve_desc *d = desc_find(r, vmid);
  if (d)
    return d;
  r->descs = carp_reallocarray(r->descs, r->ndescs + 1, sizeof(*r->descs));
  d = &r->descs[r->ndescs++];
  memset(d, 0, sizeof(*d));
  d->vmid = vmid;
  return d;
}

static void emit(struct pve_list *l, struct pve_region *r,
                 const struct found *f, const struct pve_desc *d)
{
  struct carp_provider_instance *in;
  l->out = carp_reallocarray(l->out, l->nout + 1, sizeof(*l->out));
  in = &l->out[l->nout++];
  memset(in, 0, sizeof(*in));
  carp_provider_id_format(r->name, f->vmid, in->provider_id,
                          sizeof(in->provider_id));
  snprintf(in->region, sizeof(in->region), "%s", r->name);
  snprintf(in->zone, sizeof(in->zone), "%s", f->node);
  in->vmid = f->vmid;
  snprintf(in->name, sizeof(in->name), "%s",
           f->name[0] ? f->name : d->nodeclaim);
  snprintf(in->status, sizeof(in->status), "%s",
           f->status[0] ? f->status : "unknown");
  snprintf(in->instance_type, sizeof(in->instance_type), "%s", d->sku);
  in->cpu = d->cpu;
  in->memory = d->memory;
  snprintf(in->capacity_type, sizeof(in->capacity_type), "%s",
           CARP_CAPACITY_TYPE_ON_DEMAND);
  snprintf(in->image_id, sizeof(in->image_id), "%s", d->image);
  snprintf(in->nodeclaim, sizeof(in->nodeclaim), "%s", d->nodeclaim);
  snprintf(in->nodeclaim_uid, sizeof(in->nodeclaim_uid), "%s", d->uid);
  snprintf(in->nodepool, sizeof(in->nodepool), "%s", d->nodepool);
  snprintf(in->nodeclass, sizeof(in->nodeclass), "%s", d->nodeclass);
  snprintf(in->cluster, sizeof(in->cluster), "%s", d->cluster);
}

static void next_vm(struct pve_list *l);
static void next_region(struct pve_list *l);

static void on_config(struct pve_op *op, const struct carp_pve_result *r)
{
  struct pve_list *l = L(op);
  struct pve_region *reg = &op->pp->regions[l->ri];
  const struct found *f = &l->found[l->fi];
  if (r->err) {
    if (r->err != CARP_ENOTFOUND && !l->err.code)
      carp_provider_error_set(&l->err, r->err, "",
                              "region %s: VM %" PRId64 ": %s", reg->name,
                              f->vmid, r->message);
    if (l->get_vmid) {
      if (r->err != CARP_ENOTFOUND)
        deliver(l, r->err);
      else {
        carp_provider_error_set(&l->err, CARP_ENOTFOUND, "", "VM not found");
        deliver(l, CARP_ENOTFOUND);
      }
      return;
    }
  } else {
    struct pve_desc *d = desc_put(reg, f->vmid);
    const char *desc = carp_json_str(r->data, "description", NULL);
    int64_t cores = 0, sockets = 1, mem = 0;
    pve_description_parse(desc ? desc : "", d);
    pve_smbios_sku(carp_json_str(r->data, "smbios1", NULL), d->sku,
                   sizeof(d->sku));
    carp_json_int(r->data, &cores, "cores", NULL);
    carp_json_int(r->data, &sockets, "sockets", NULL);
    if (carp_json_int(r->data, &mem, "memory", NULL) != 0) {
      /* "[current=]MiB" */
      const char *m = carp_json_str(r->data, "memory", NULL);
      char cur[32];
      if (m) {
        pve_prop_get(m, "current", cur, sizeof(cur));
        mem = strtoll(cur[0] ? cur : m, NULL, 10);
      }
    }
    d->cpu = (int32_t)(cores * (sockets ? sockets : 1));
    d->memory = mem * MiB;
    emit(l, reg, f, d);
  }
  l->fi++;
  next_vm(l);
}

static void next_vm(struct pve_list *l)
{
  struct pve_region *r = &l->op.pp->regions[l->ri];
  const struct pve_host *h;
  char path[256];
  while (l->fi < l->nfound) {
    const struct found *f = &l->found[l->fi];
    struct pve_desc *d = desc_find(r, f->vmid);
    if (d && d->uid[0] && !l->get_vmid) {
      emit(l, r, f, d);
      l->fi++;
      continue;
    }
    if (!l->get_vmid && (h = pve_region_host(r, f->node)) &&
        h->status == PVE_HOST_OFFLINE) {
      /* Its config is out of reach until the host is back: list it as
       * what we know, rather than fail the whole list (a garbage collector
       * would then stop sweeping every host). */
      struct pve_desc none;
      memset(&none, 0, sizeof(none));
      emit(l, r, f, d ? d : &none);
      l->fi++;
      continue;
    }
    snprintf(path, sizeof(path), "/nodes/%s/qemu/%" PRId64 "/config", f->node,
             f->vmid);
    pve_op_call(&l->op, r, "GET", path, NULL, 0, on_config);
    return;
  }
  if (l->get_vmid) {
    deliver(l, 0);
    return;
  }
  l->ri++;
  next_region(l);
}

static void on_resources(struct pve_op *op, const struct carp_pve_result *res)
{
  struct pve_list *l = L(op);
  struct pve_provider *pp = op->pp;
  struct pve_region *r = &pp->regions[l->ri];
  size_t i, n, j, k;

  l->nfound = l->fi = 0;
  if (res->err) {
    if (!l->err.code)
      carp_provider_error_set(&l->err, res->err, "", "region %s: %s", r->name,
                              res->message);
    if (l->get_vmid) {
      deliver(l, res->err);
      return;
    }
    l->ri++;
    next_region(l);
    return;
  }
  n = carp_json_len(res->data);
  if (n == 0 && r->status == CARP_EFORBIDDEN && !l->err.code)
    carp_provider_error_set(&l->err, r->status, "", "%s", r->message);
  l->found = carp_reallocarray(l->found, n ? n : 1, sizeof(*l->found));
  for (i = 0; i < n; i++) {
    yajl_val e = carp_json_at(res->data, i);
    struct found *f = &l->found[l->nfound];
    const char *tags = carp_json_str(e, "tags", NULL);
    const char *node = carp_json_str(e, "node", NULL);
    const char *name = carp_json_str(e, "name", NULL);
    const char *st = carp_json_str(e, "status", NULL);
    int64_t tmpl = 0;
    if (carp_json_int(e, &f->vmid, "vmid", NULL) || !node)
      continue;
    carp_json_int(e, &tmpl, "template", NULL);
    if (l->get_vmid ? f->vmid != l->get_vmid
                    : (tmpl || !tags || !pve_tags_have(tags, pp->cluster_tag)))
      continue;
    snprintf(f->node, sizeof(f->node), "%s", node);
    snprintf(f->name, sizeof(f->name), "%s", name ? name : "");
    snprintf(f->status, sizeof(f->status), "%s", st ? st : "");
    l->nfound++;
  }
  if (!l->get_vmid) {
    /* Forget descriptions of VMs that left the listing. */
    for (j = k = 0; j < r->ndescs; j++) {
      int keep = 0;
      for (i = 0; i < l->nfound && !keep; i++)
        keep = l->found[i].vmid == r->descs[j].vmid;
      if (keep)
        r->descs[k++] = r->descs[j];
    }
    r->ndescs = k;
  } else if (!l->nfound) {
    carp_provider_error_set(&l->err, CARP_ENOTFOUND, "", "VM not found");
    deliver(l, CARP_ENOTFOUND);
    return;
  }
  next_vm(l);
}

static void next_region(struct pve_list *l)
{
  struct pve_provider *pp = l->op.pp;
  struct carp_pve_form f;
  if (l->ri >= pp->nregions) {
    deliver(l, 0);
    return;
  }
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "type", "vm");
  pve_op_call(&l->op, &pp->regions[l->ri], "GET", "/cluster/resources", &f, 0,
              on_resources);
  carp_pve_form_free(&f);
}

static void begin(struct pve_op *op)
{
  next_region(L(op));
}

int pve_list_start(struct pve_provider *pp, carp_provider_list_cb cb, void *arg,
                   struct pve_op **out)
{
  struct pve_list *l;
  if (!cb)
    return CARP_EINVAL;
  if (pp->closing)
    return CARP_ECANCELED;
  l = CARP_NEW(struct pve_list);
  l->cb = cb;
  l->arg = arg;
  pve_op_init(&l->op, pp, on_canceled, on_free);
  pve_op_defer(&l->op, 0, begin);
  if (out)
    *out = &l->op;
  return 0;
}

int pve_get_start(struct pve_provider *pp, const char *region, int64_t vmid,
                  carp_provider_get_cb cb, void *arg, struct pve_op **out)
{
  struct pve_list *l;
  size_t i;
  if (!cb || vmid < 100)
    return CARP_EINVAL;
  if (pp->closing)
    return CARP_ECANCELED;
  for (i = 0; i < pp->nregions; i++)
    if (!strcmp(pp->regions[i].name, region))
      break;
  if (i == pp->nregions)
    return CARP_ENOENT;
  l = CARP_NEW(struct pve_list);
  l->get_cb = cb;
  l->arg = arg;
  l->get_vmid = vmid;
  l->ri = i;
  pve_op_init(&l->op, pp, on_canceled, on_free);
  pve_op_defer(&l->op, 0, begin);
  if (out)
    *out = &l->op;
  return 0;
}
