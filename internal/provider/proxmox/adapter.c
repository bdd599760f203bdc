/* adapter.c: from Kubernetes objects to what the Proxmox state machines
 * work on, and back.
 *
 * create() gets a ProxmoxNodeClass and a NodeClaim; this file turns them
 * into a plain struct pve_vm_spec: the instance types of the class that the
 * claim's requirements (instance type, family, cpu, memory, arch, os,
 * capacity type, node class) allow and whose allocatable fits its requests,
 * cheapest first; the allowed regions and zones; and every VM setting with
 * the class's defaults already applied. Keeping Kubernetes types out of
 * create.c keeps that code about Proxmox only. The results go the other
 * way too: capacity and allocatable of a created VM, the instance types
 * with their offerings, and drift (NodeClass hash, template). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/conditions.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/log.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/object.h"
#include "carpenter/quantity.h"
#include "carpenter/scheduling.h"
#include "pve_int.h"

#define MiB (1024LL * 1024)

int pve_spec_build(struct pve_provider *pp, const struct carp_nodeclass *nc,
                   const struct carp_nodeclaim *claim, const char *userdata,
                   size_t userdata_len, struct pve_vm_spec *out, char *msg,
                   size_t msg_size);
int pve_nodeclass_ready(const struct carp_nodeclass *nc, char *msg,
                        size_t msg_size);
void pve_fill_resources(const struct carp_nodeclass *nc,
                        struct carp_provider_instance *inst);
int pve_instance_types(struct pve_provider *pp, const struct carp_nodeclass *nc,
                       struct carp_provider_instance_types *out);
int pve_is_drifted(struct pve_provider *pp, const struct carp_nodeclaim *claim,
                   const struct carp_nodeclass *nc, const char **reason);
const char *pve_claim_annotation(const struct carp_nodeclaim *claim);

static char *dup_or_null(const char *s)
{
  return s && *s ? carp_strdup(s) : NULL;
}

static char **strlist_dup(const struct carp_strlist *l, size_t *n)
{
  *n = l->n;
  return pve_strv_dup(l->v, l->n);
}

const char *pve_claim_annotation(const struct carp_nodeclaim *claim)
{
  return claim ? carp_kvset_get(claim->meta.annotations, CARP_ANN_VM) : NULL;
}

int pve_nodeclass_ready(const struct carp_nodeclass *nc, char *msg,
                        size_t msg_size)
{
  const struct carp_condition *ready;
  if (!nc->valid) {
    snprintf(msg, msg_size, "ProxmoxNodeClass %s is invalid: %s", nc->meta.name,
             nc->invalid_reason ? nc->invalid_reason : "");
    return CARP_ENODECLASS_NOT_READY;
  }
  if (nc->meta.deletion_ms) {
    snprintf(msg, msg_size, "ProxmoxNodeClass %s is being deleted",
             nc->meta.name);
    return CARP_ENODECLASS_NOT_READY;
  }
  /* Not yet reconciled (no Ready condition) is allowed: placement checks
   * regions and templates itself. */
  ready = carp_conditions_get(&nc->status.conditions, CARP_COND_READY);
  if (ready && ready->status == CARP_COND_FALSE) {
    snprintf(msg, msg_size, "ProxmoxNodeClass %s is not ready: %s: %s",
             nc->meta.name, ready->reason ? ready->reason : "",
             ready->message ? ready->message : "");
    return CARP_ENODECLASS_NOT_READY;
  }
  return 0;
}

/* --- instance types
 * ------------------------------------------------------------ */

static void overhead(const struct carp_nodeclass_spec *spec,
                     const struct carp_instance_type *it, int64_t template_disk,
                     struct carp_provider_instance_type *o)
{
  carp_nodeclass_capacity(spec, it, template_disk, &o->capacity);
  o->kube_reserved = spec->kube_reserved;
  o->kube_reserved.nextended = 0;
  o->kube_reserved.extended = NULL;
  o->system_reserved = spec->system_reserved;
  o->system_reserved.nextended = 0;
  o->system_reserved.extended = NULL;
  carp_nodeclass_eviction_threshold(spec, &o->capacity, &o->eviction_threshold);
  o->allocatable = o->capacity;
  o->allocatable.cpu -= o->kube_reserved.cpu + o->system_reserved.cpu;
  o->allocatable.memory -= o->kube_reserved.memory + o->system_reserved.memory +
                           o->eviction_threshold.memory;
  o->allocatable.ephemeral -= o->kube_reserved.ephemeral +
                              o->system_reserved.ephemeral +
                              o->eviction_threshold.ephemeral;
  if (o->allocatable.cpu < 0)
    o->allocatable.cpu = 0;
  if (o->allocatable.memory < 0)
    o->allocatable.memory = 0;
  if (o->allocatable.ephemeral < 0)
    o->allocatable.ephemeral = 0;
}

void pve_type_fill(const struct carp_nodeclass_spec *spec,
                   const struct carp_instance_type *it, int64_t template_disk,
                   struct carp_provider_instance_type *o)
{
  snprintf(o->name, sizeof(o->name), "%s", it->name);
  snprintf(o->family, sizeof(o->family), "%s", it->family);
  o->cpu = it->cpu;
  o->memory = it->memory;
  o->price = it->price;
  o->arch = "amd64";
  o->os = "linux";
  overhead(spec, it, template_disk, o);
}

static int type_allowed(const struct carp_nodeclaim *claim,
                        const struct carp_nodeclass *nc,
                        const struct carp_instance_type *it)
{
  const struct carp_requirement *r = claim->spec.requirements;
  size_t n = claim->spec.nrequirements;
  char cpu[16], mem[32];
  snprintf(cpu, sizeof(cpu), "%d", (int)it->cpu);
  snprintf(mem, sizeof(mem), "%lld", (long long)(it->memory / MiB));
  return carp_requirements_allow(r, n, CARP_LABEL_INSTANCE_TYPE, it->name) &&
         carp_requirements_allow(r, n, CARP_LABEL_INSTANCE_FAMILY,
                                 it->family) &&
         carp_requirements_allow(r, n, CARP_LABEL_INSTANCE_CPU, cpu) &&
         carp_requirements_allow(r, n, CARP_LABEL_INSTANCE_MEMORY, mem) &&
         carp_requirements_allow(r, n, CARP_LABEL_ARCH, "amd64") &&
         carp_requirements_allow(r, n, CARP_LABEL_OS, "linux") &&
         carp_requirements_allow(r, n, CARP_LABEL_CAPACITY_TYPE,
                                 CARP_CAPACITY_TYPE_ON_DEMAND) &&
         carp_requirements_allow(r, n, CARP_LABEL_NODECLASS_KEY, nc->meta.name);
}

static int fits_requests(const struct carp_nodeclaim *claim,
                         const struct carp_provider_instance_type *o)
{
  const struct carp_resources *q = &claim->spec.requests;
  if (q->cpu > o->allocatable.cpu || q->memory > o->allocatable.memory)
    return 0;
  if (q->pods > o->capacity.pods)
    return 0;
  if (q->ephemeral && o->capacity.ephemeral &&
      q->ephemeral > o->allocatable.ephemeral)
    return 0;
  return 1;
}

static int cmp_type(const void *a, const void *b)
{
  const struct pve_type *x = a, *y = b;
  if (x->price != y->price)
    return x->price < y->price ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* --- kubelet variables
 * -------------------------------------------------------- */

static void reserved_str(const struct carp_resources *r, int64_t pid,
                         struct carp_buf *b)
{
  char q[CARP_QUANTITY_LEN];
  if (r->cpu) {
    carp_quantity_format(r->cpu, CARP_QUANTITY_DECIMAL, q);
    carp_buf_printf(b, "%scpu=%s", b->len ? "," : "", q);
  }
  if (r->memory) {
    carp_quantity_format(r->memory * 1000, CARP_QUANTITY_BINARY, q);
    carp_buf_printf(b, "%smemory=%s", b->len ? "," : "", q);
  }
  if (r->ephemeral) {
    carp_quantity_format(r->ephemeral * 1000, CARP_QUANTITY_BINARY, q);
    carp_buf_printf(b, "%sephemeral-storage=%s", b->len ? "," : "", q);
  }
  if (pid)
    carp_buf_printf(b, "%spid=%lld", b->len ? "," : "", (long long)pid);
}

static void eviction_str(const struct carp_nodeclass_spec *s,
                         struct carp_buf *b)
{
  static const char *const names[CARP_EVICT_NSIGNALS] = {
      "memory.available",  "nodefs.available",   "nodefs.inodesFree",
      "imagefs.available", "imagefs.inodesFree", "pid.available"};
  char q[CARP_QUANTITY_LEN];
  int i;
  for (i = 0; i < CARP_EVICT_NSIGNALS; i++) {
    const struct carp_eviction_threshold *t = &s->eviction_hard[i];
    if (!t->set)
      continue;
    if (t->percent) {
      if (t->value % 100)
        carp_buf_printf(b, "%s%s<%lld.%02lld%%", b->len ? "," : "", names[i],
                        (long long)(t->value / 100),
                        (long long)(t->value % 100));
      else
        carp_buf_printf(b, "%s%s<%lld%%", b->len ? "," : "", names[i],
                        (long long)(t->value / 100));
    } else if (i == CARP_EVICT_MEMORY_AVAILABLE ||
               i == CARP_EVICT_NODEFS_AVAILABLE ||
               i == CARP_EVICT_IMAGEFS_AVAILABLE) {
      carp_quantity_format(t->value * 1000, CARP_QUANTITY_BINARY, q);
      carp_buf_printf(b, "%s%s<%s", b->len ? "," : "", names[i], q);
    } else {
      carp_buf_printf(b, "%s%s<%lld", b->len ? "," : "", names[i],
                      (long long)t->value);
    }
  }
}

/* Labels a kubelet may set on its own Node (the NodeRestriction admission
 * plugin refuses other kubernetes.io and k8s.io labels). */
static int self_label_ok(const char *key)
{
  const char *slash = strchr(key, '/');
  size_t dl;
  const char *domain;
  static const char *const allowed[] = {
      "kubernetes.io/hostname",
      "kubernetes.io/arch",
      "kubernetes.io/os",
      "beta.kubernetes.io/instance-type",
      "node.kubernetes.io/instance-type",
      "failure-domain.beta.kubernetes.io/region",
      "failure-domain.beta.kubernetes.io/zone",
      "topology.kubernetes.io/region",
      "topology.kubernetes.io/zone",
      NULL};
  size_t i;
  if (!slash)
    return 1;
  for (i = 0; allowed[i]; i++)
    if (!strcmp(key, allowed[i]))
      return 1;
  dl = (size_t)(slash - key);
  domain = key;
#define ENDS(d)                                                                \
  (dl >= strlen(d) && !strncmp(domain + dl - strlen(d), d, strlen(d)))
  if ((dl == strlen("kubelet.kubernetes.io") &&
       ENDS("kubelet.kubernetes.io")) ||
      ENDS(".kubelet.kubernetes.io") ||
      (dl == strlen("node.kubernetes.io") && ENDS("node.kubernetes.io")) ||
      ENDS(".node.kubernetes.io"))
    return 1;
  if ((dl == strlen("kubernetes.io") && ENDS("kubernetes.io")) ||
      ENDS(".kubernetes.io") || (dl == strlen("k8s.io") && ENDS("k8s.io")) ||
      ENDS(".k8s.io"))
    return 0;
#undef ENDS
  return 1;
}

static void taint_str(const struct carp_taint *t, struct carp_buf *b)
{
  carp_buf_printf(b, ",%s", t->key);
  if (t->value && *t->value)
    carp_buf_printf(b, "=%s", t->value);
  carp_buf_printf(b, ":%s", carp_taint_effect_name(t->effect));
}

/* --- the spec
 * ------------------------------------------------------------------ */

static const char *format_name(enum carp_disk_format f)
{
  switch (f) {
  case CARP_FORMAT_RAW:
    return "raw";
  case CARP_FORMAT_QCOW2:
    return "qcow2";
  case CARP_FORMAT_VMDK:
    return "vmdk";
  default:
    return NULL;
  }
}

static void spec_common(struct pve_provider *pp,
                        const struct carp_nodeclass *nc, struct pve_vm_spec *o)
{
  const struct carp_nodeclass_spec *s = &nc->spec;
  struct carp_buf b;
  (void)pp;
  o->nodeclass = carp_strdup(nc->meta.name ? nc->meta.name : "");
  o->regions = strlist_dup(&s->regions, &o->nregions);
  o->zones = strlist_dup(&s->zones, &o->nzones);
  o->tmpl_name = dup_or_null(s->template_name);
  o->tmpl_tags = strlist_dup(&s->template_tags, &o->ntmpl_tags);
  o->tmpl_shared = s->template_scope == CARP_SCOPE_SHARED;
  o->full = s->clone_mode == CARP_CLONE_FULL;
  o->clone_storage = o->full ? dup_or_null(s->clone_storage) : NULL;
  o->clone_format = o->full ? dup_or_null(format_name(s->clone_format)) : NULL;
  o->max_full_clones =
      s->max_concurrent_full_clones > 0 ? s->max_concurrent_full_clones : 1;
  o->pool = dup_or_null(s->resource_pool);
  o->has_range = s->has_vmid_range;
  o->vmid_min = s->vmid_min;
  o->vmid_max = s->vmid_max;
  o->boot_disk_size = s->boot_disk_size;
  o->boot_disk_device = dup_or_null(s->boot_disk_device);
  o->cpu_type = dup_or_null(s->cpu_type);
  o->has_net = s->has_network;
  o->net_iface = dup_or_null(s->net_interface);
  o->net_bridge = dup_or_null(s->net_bridge);
  o->net_vlan = s->net_vlan;
  o->net_firewall = s->has_network ? s->net_firewall : -1;
  o->net_model = dup_or_null(s->net_model);
  o->net_mtu = s->net_mtu;
  o->tags = strlist_dup(&s->tags, &o->ntags);
  o->ci_user = dup_or_null(s->ci_user);
  o->ssh_keys = strlist_dup(&s->ci_ssh_keys, &o->nssh_keys);
  o->ipv4_none = s->ci_ipv4 == CARP_IPV4_NONE;
  o->ipv6 = s->ci_ipv6 == CARP_IPV6_DHCP    ? 1
            : s->ci_ipv6 == CARP_IPV6_SLAAC ? 2
                                            : 0;
  o->nameservers = strlist_dup(&s->ci_nameservers, &o->nnameservers);
  o->search = strlist_dup(&s->ci_search_domains, &o->nsearch);
  o->ci_upgrade = s->ci_upgrade_packages;
  o->userdata_mode = s->bootstrap_mode == CARP_BOOTSTRAP_USERDATA;
  o->iso_storage = dup_or_null(s->iso_storage);
  o->max_pods = s->max_pods > 0 ? s->max_pods : 110;
  carp_buf_init(&b, 4096);
  reserved_str(&s->kube_reserved, s->kube_reserved_pid, &b);
  o->var_kube_reserved = carp_buf_steal(&b, NULL);
  if (!o->var_kube_reserved)
    o->var_kube_reserved = carp_strdup("");
  reserved_str(&s->system_reserved, s->system_reserved_pid, &b);
  o->var_system_reserved = carp_buf_steal(&b, NULL);
  if (!o->var_system_reserved)
    o->var_system_reserved = carp_strdup("");
  eviction_str(s, &b);
  o->var_eviction_hard = carp_buf_steal(&b, NULL);
  if (!o->var_eviction_hard)
    o->var_eviction_hard = carp_strdup("");
  carp_buf_free(&b);
  o->cpu_over = s->cpu_overcommit > 0 ? s->cpu_overcommit : 100;
  o->mem_over = s->memory_overcommit > 0 ? s->memory_overcommit : 100;
  o->reserved_mem = s->reserved_memory;
  o->placement = (int)s->placement;
}

int pve_spec_build(struct pve_provider *pp, const struct carp_nodeclass *nc,
                   const struct carp_nodeclaim *claim, const char *userdata,
                   size_t userdata_len, struct pve_vm_spec *o, char *msg,
                   size_t msg_size)
{
  const struct carp_nodeclass_spec *s = &nc->spec;
  struct carp_instance_type *types = NULL;
  size_t ntypes = 0, i, n = 0;
  struct carp_buf b;
  int rc;

  memset(o, 0, sizeof(*o));
  spec_common(pp, nc, o);
  o->name = carp_strdup(claim->meta.name ? claim->meta.name : "");
  o->uid = carp_strdup(claim->meta.uid ? claim->meta.uid : "");
  {
    const char *np =
        carp_kvset_get(claim->meta.labels, CARP_LABEL_NODEPOOL_KEY);
    o->nodepool = carp_strdup(np ? np : "");
  }
  o->reqs = claim->spec.requirements;
  o->nreqs = claim->spec.nrequirements;
  if (o->userdata_mode) {
    if (!userdata) {
      snprintf(msg, msg_size,
               "bootstrap mode UserData but no user-data template "
               "was passed to the provider");
      return CARP_EINVAL;
    }
    o->userdata = carp_strndup(userdata, userdata_len);
    o->userdata_len = userdata_len;
  }
  /* Labels the kubelet may set itself, and the taints to register with. */
  carp_buf_init(&b, 256 * 1024);
  if (claim->meta.labels)
    for (i = 0; i < claim->meta.labels->n; i++) {
      const struct carp_kv *kv = &claim->meta.labels->kv[i];
      if (self_label_ok(kv->key))
        carp_buf_printf(&b, "%s%s=%s", b.len ? "," : "", kv->key, kv->value);
    }
  o->var_labels = carp_buf_steal(&b, NULL);
  if (!o->var_labels)
    o->var_labels = carp_strdup("");
  carp_buf_puts(&b, "karpenter.sh/unregistered:NoExecute");
  for (i = 0; i < claim->spec.ntaints; i++)
    taint_str(&claim->spec.taints[i], &b);
  for (i = 0; i < claim->spec.nstartup_taints; i++)
    taint_str(&claim->spec.startup_taints[i], &b);
  o->var_taints = carp_buf_steal(&b, NULL);
  carp_buf_free(&b);

  rc = carp_nodeclass_instance_types(s, &types, &ntypes);
  if (rc) {
    snprintf(msg, msg_size, "instance types of ProxmoxNodeClass %s: %s",
             nc->meta.name, carp_strerror(rc));
    return rc;
  }
  o->types = carp_calloc(ntypes ? ntypes : 1, sizeof(*o->types));
  for (i = 0; i < ntypes; i++) {
    struct carp_provider_instance_type ov;
    memset(&ov, 0, sizeof(ov));
    if (!type_allowed(claim, nc, &types[i]))
      continue;
    overhead(s, &types[i], 0, &ov);
    if (!fits_requests(claim, &ov))
      continue;
    snprintf(o->types[n].name, sizeof(o->types[n].name), "%s", types[i].name);
    snprintf(o->types[n].family, sizeof(o->types[n].family), "%s",
             types[i].family);
    o->types[n].cpu = types[i].cpu;
    o->types[n].memory = types[i].memory;
    o->types[n].price = types[i].price;
    n++;
  }
  carp_free(types);
  o->ntypes = n;
  qsort(o->types, n, sizeof(*o->types), cmp_type);
  if (!n && !pve_claim_annotation(claim)) {
    snprintf(
        msg, msg_size,
        "no instance type of ProxmoxNodeClass %s satisfies the NodeClaim's "
        "requirements and fits its requests",
        nc->meta.name);
    return CARP_EINSUFFICIENT_CAPACITY;
  }
  return 0;
}

/* --- results
 * ------------------------------------------------------------------- */

void pve_fill_resources(const struct carp_nodeclass *nc,
                        struct carp_provider_instance *inst)
{
  struct carp_instance_type it;
  struct carp_provider_instance_type o;
  memset(&it, 0, sizeof(it));
  memset(&o, 0, sizeof(o));
  snprintf(it.name, sizeof(it.name), "%s", inst->instance_type);
  snprintf(it.family, sizeof(it.family), "%s", inst->family);
  it.cpu = inst->cpu;
  it.memory = inst->memory;
  overhead(&nc->spec, &it, inst->capacity.ephemeral, &o);
  inst->capacity = o.capacity;
  inst->allocatable = o.allocatable;
}

int pve_instance_types(struct pve_provider *pp, const struct carp_nodeclass *nc,
                       struct carp_provider_instance_types *out)
{
  struct pve_vm_spec s;
  struct carp_instance_type *types = NULL;
  size_t ntypes = 0, i, ri;
  int64_t tdisk = 0;
  int rc;

  memset(out, 0, sizeof(*out));
  memset(&s, 0, sizeof(s));
  spec_common(pp, nc, &s);
  rc = carp_nodeclass_instance_types(&nc->spec, &types, &ntypes);
  if (rc) {
    pve_vm_spec_free(&s);
    return rc;
  }
  /* The template's boot disk stands in for ephemeral storage when the
   * class does not size the disk. */
  for (ri = 0; ri < pp->nregions && !tdisk; ri++) {
    struct pve_region *r = &pp->regions[ri];
    struct pve_template_query q;
    size_t hi;
    q.name = s.tmpl_name;
    q.tags = (const char *const *)s.tmpl_tags;
    q.ntags = s.ntmpl_tags;
    q.shared = s.tmpl_shared;
    for (hi = 0; hi < r->inv.nhosts && !tdisk; hi++) {
      const struct pve_guest *g =
          pve_template_for(r, &q, r->inv.hosts[hi].name);
      if (g)
        tdisk = g->maxdisk;
    }
  }
  out->v = carp_calloc(ntypes ? ntypes : 1, sizeof(*out->v));
  out->n = ntypes;
  for (i = 0; i < ntypes; i++) {
    struct carp_provider_instance_type *o = &out->v[i];
    struct pve_type t;
    pve_type_fill(&nc->spec, &types[i], tdisk, o);
    memset(&t, 0, sizeof(t));
    snprintf(t.name, sizeof(t.name), "%s", types[i].name);
    t.cpu = types[i].cpu;
    t.memory = types[i].memory;
    t.price = types[i].price;
    o->nofferings = pve_offerings(pp, &s, &t, &o->offerings);
  }
  carp_free(types);
  pve_vm_spec_free(&s);
  return 0;
}

int pve_templates(struct pve_provider *pp, const struct carp_nodeclass *nc,
                  struct carp_nodeclass_template **out, size_t *n)
{
  struct pve_vm_spec s;
  struct pve_template_query q;
  size_t ri, hi, cap = 0;
  memset(&s, 0, sizeof(s));
  spec_common(pp, nc, &s);
  q.name = s.tmpl_name;
  q.tags = (const char *const *)s.tmpl_tags;
  q.ntags = s.ntmpl_tags;
  q.shared = s.tmpl_shared;
  *out = NULL;
  *n = 0;
  for (ri = 0; ri < pp->nregions; ri++) {
    struct pve_region *r = &pp->regions[ri];
    if (r->status || !r->inv.fetched_ms)
      continue;
    for (hi = 0; hi < r->inv.nhosts; hi++) {
      const struct pve_host *h = &r->inv.hosts[hi];
      const struct pve_guest *g;
      struct carp_nodeclass_template *t;
      if (!pve_zone_allowed(&s, r->name, h->name) ||
          !pve_host_usable(r, &s, h) || !(g = pve_template_for(r, &q, h->name)))
        continue;
      if (*n == cap) {
        cap = cap ? cap * 2 : 8;
        *out = carp_reallocarray(*out, cap, sizeof(**out));
      }
      t = &(*out)[(*n)++];
      memset(t, 0, sizeof(*t));
      t->region = carp_intern(r->name, strlen(r->name));
      t->zone = carp_intern(h->name, strlen(h->name));
      t->vmid = g->vmid;
      t->name = carp_intern(g->name, strlen(g->name));
      t->node = carp_intern(g->node, strlen(g->node));
      t->shared = q.shared;
    }
  }
  pve_vm_spec_free(&s);
  return 0;
}

int pve_is_drifted(struct pve_provider *pp, const struct carp_nodeclaim *claim,
                   const struct carp_nodeclass *nc, const char **reason)
{
  const char *hash =
      carp_kvset_get(claim->meta.annotations, CARP_ANN_NODECLASS_HASH);
  const char *ver =
      carp_kvset_get(claim->meta.annotations, CARP_ANN_NODECLASS_HASH_VER);
  const char *image = claim->status.image_id;
  const char *zone = carp_kvset_get(claim->meta.labels, CARP_LABEL_ZONE);
  char region[64], azone[64];
  int64_t tvmid = 0, avmid;
  struct pve_region *r;
  struct pve_vm_spec s;
  const struct pve_guest *g;
  struct pve_template_query q;
  const char *slash;

  *reason = "";
  if (hash && ver && nc->status.spec_hash &&
      !strcmp(ver, CARP_NODECLASS_HASH_VERSION) &&
      strcmp(hash, nc->status.spec_hash) != 0) {
    *reason = CARP_DRIFT_NODECLASS;
    return 0;
  }
  if (!image || !(slash = strchr(image, '/')) ||
      (size_t)(slash - image) >= sizeof(region))
    return 0;
  snprintf(region, sizeof(region), "%.*s", (int)(slash - image), image);
  tvmid = strtoll(slash + 1, NULL, 10);
  if (!zone) {
    const char *ann = pve_claim_annotation(claim);
    char ar[64];
    if (!ann || carp_provider_vm_annotation_parse(ann, ar, sizeof(ar), azone,
                                                  sizeof(azone), &avmid))
      return 0;
    zone = azone;
  }
  r = pve_region_find(pp, region);
  if (!r || r->status || !r->inv.fetched_ms || tvmid <= 0)
    return 0;
  memset(&s, 0, sizeof(s));
  spec_common(pp, nc, &s);
  q.name = s.tmpl_name;
  q.tags = (const char *const *)s.tmpl_tags;
  q.ntags = s.ntmpl_tags;
  q.shared = s.tmpl_shared;
  g = pve_template_for(r, &q, zone);
  /* Drifted only when another template now serves the host (with none at
   * all, a replacement could not be launched either). */
  if (g && g->vmid != tvmid)
    *reason = CARP_DRIFT_TEMPLATE;
  pve_vm_spec_free(&s);
  return 0;
}
