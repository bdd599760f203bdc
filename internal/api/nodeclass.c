/* nodeclass.c: the cached ProxmoxNodeClass - every spec field decoded with
 * the CRD's defaults, its status, and its validation result. */
#include <stdio.h>
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/nodeclass.h"
#include "carpenter/quantity.h"

#define GiB (1024LL * 1024 * 1024)

void carp_strlist_cleanup(struct carp_strlist *l)
{
  uint32_t i;
  for (i = 0; i < l->n; i++)
    carp_intern_release(l->v[i]);
  carp_free(l->v);
  l->v = NULL;
  l->n = 0;
}

void carp_strlist_copy(struct carp_strlist *dst, const struct carp_strlist *src)
{
  uint32_t i;
  dst->n = src->n;
  dst->v = src->n ? carp_calloc(src->n, sizeof(*dst->v)) : NULL;
  for (i = 0; i < src->n; i++)
    dst->v[i] = carp_intern_ref(src->v[i]);
}

int api_hundredths(const char *s, int32_t *out)
{
  int64_t nano;
  if (api_decimal_nano(s, &nano) || nano % 10000000 ||
      nano / 10000000 > INT32_MAX)
    return CARP_EPARSE;
  *out = (int32_t)(nano / 10000000);
  return 0;
}

static void spec_cleanup(struct carp_nodeclass_spec *s)
{
  uint32_t i;
  carp_strlist_cleanup(&s->regions);
  carp_strlist_cleanup(&s->zones);
  carp_intern_release(s->template_name);
  carp_strlist_cleanup(&s->template_tags);
  carp_intern_release(s->clone_storage);
  carp_intern_release(s->resource_pool);
  carp_intern_release(s->boot_disk_device);
  carp_intern_release(s->cpu_type);
  carp_intern_release(s->net_interface);
  carp_intern_release(s->net_bridge);
  carp_intern_release(s->net_model);
  carp_strlist_cleanup(&s->tags);
  carp_intern_release(s->ci_user);
  carp_strlist_cleanup(&s->ci_ssh_keys);
  carp_strlist_cleanup(&s->ci_nameservers);
  carp_strlist_cleanup(&s->ci_search_domains);
  carp_intern_release(s->userdata_secret_name);
  carp_intern_release(s->userdata_secret_namespace);
  carp_intern_release(s->userdata_secret_key);
  carp_intern_release(s->iso_storage);
  carp_resources_cleanup(&s->kube_reserved);
  carp_resources_cleanup(&s->system_reserved);
  for (i = 0; i < s->ndevices; i++)
    api_device_class_cleanup(&s->devices[i]);
  carp_free(s->devices);
  for (i = 0; i < s->nfamilies; i++) {
    carp_intern_release(s->families[i].name);
    carp_free(s->families[i].sizes);
  }
  carp_free(s->families);
  carp_free(s->sizes);
  for (i = 0; i < s->ncustom; i++) {
    carp_intern_release(s->custom[i].name);
    carp_intern_release(s->custom[i].family);
  }
  carp_free(s->custom);
  memset(s, 0, sizeof(*s));
}

static void nodeclass_free(struct carp_objmeta *m)
{
  struct carp_nodeclass *nc = (struct carp_nodeclass *)m;
  carp_objmeta_cleanup(&nc->meta);
  spec_cleanup(&nc->spec);
  carp_nodeclass_status_cleanup(&nc->status);
  carp_free(nc->invalid_reason);
  carp_free(nc);
}

/* Interned copy of an optional string field. */
static int str_field(yajl_val obj, const char *key, const char *path,
                     const char **out, char **err)
{
  const char *s;
  if (api_str(obj, key, path, &s, err))
    return CARP_EPARSE;
  if (s) {
    carp_intern_release(*out);
    *out = carp_interns(s);
  }
  return 0;
}

static int int_list(yajl_val arr, const char *path, int32_t **out, uint32_t *n,
                    char **err)
{
  size_t i;
  char p[512];
  *out = NULL;
  *n = 0;
  if (!arr || !arr->u.array.len)
    return 0;
  *out = carp_calloc(arr->u.array.len, sizeof(**out));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val x = arr->u.array.values[i];
    int64_t v;
    if (!YAJL_IS_INTEGER(x)) {
      snprintf(p, sizeof(p), "%s[%zu]", path, i);
      return carp_api_error(err, p, "must be an integer");
    }
    v = YAJL_GET_INTEGER(x);
    if (v < 1 || v > 512)
      continue; /* invalid: reported by validation */
    (*out)[(*n)++] = (int32_t)v;
  }
  return 0;
}

static int decode_where(yajl_val spec, struct carp_nodeclass_spec *s,
                        char **err)
{
  yajl_val t, c, r, d, cpu, n;
  const char *scope = NULL, *mode = NULL, *format = NULL, *size = NULL;
  int present, fw;
  int64_t x;
  if (api_strlist(spec, "regions", "spec", &s->regions, err) ||
      api_strlist(spec, "zones", "spec", &s->zones, err) ||
      api_obj(spec, "template", "spec", &t, err) ||
      str_field(t, "name", "spec.template", &s->template_name, err) ||
      api_strlist(t, "tags", "spec.template", &s->template_tags, err) ||
      api_str(t, "scope", "spec.template", &scope, err) ||
      api_obj(spec, "clone", "spec", &c, err) ||
      api_str(c, "mode", "spec.clone", &mode, err) ||
      str_field(c, "storage", "spec.clone", &s->clone_storage, err) ||
      api_str(c, "format", "spec.clone", &format, err) ||
      api_int(c, "maxConcurrentFullClones", "spec.clone", &present, &x, err))
    return CARP_EPARSE;
  s->template_scope = scope && !strcmp(scope, "Shared") ? CARP_SCOPE_SHARED
                                                        : CARP_SCOPE_PER_HOST;
  s->clone_mode =
      mode && !strcmp(mode, "Full") ? CARP_CLONE_FULL : CARP_CLONE_LINKED;
  s->clone_format = !format                    ? CARP_FORMAT_DEFAULT
                    : !strcmp(format, "raw")   ? CARP_FORMAT_RAW
                    : !strcmp(format, "qcow2") ? CARP_FORMAT_QCOW2
                    : !strcmp(format, "vmdk")  ? CARP_FORMAT_VMDK
                                               : CARP_FORMAT_DEFAULT;
  s->max_concurrent_full_clones = present && x >= 1 && x <= 16 ? (int32_t)x : 1;
  if (str_field(spec, "resourcePool", "spec", &s->resource_pool, err) ||
      api_obj(spec, "vmidRange", "spec", &r, err) ||
      api_int(r, "min", "spec.vmidRange", &present, &s->vmid_min, err) ||
      api_int(r, "max", "spec.vmidRange", &present, &s->vmid_max, err) ||
      api_obj(spec, "bootDisk", "spec", &d, err) ||
      api_str(d, "size", "spec.bootDisk", &size, err) ||
      str_field(d, "device", "spec.bootDisk", &s->boot_disk_device, err) ||
      api_obj(spec, "cpu", "spec", &cpu, err) ||
      str_field(cpu, "type", "spec.cpu", &s->cpu_type, err) ||
      api_obj(spec, "network", "spec", &n, err) ||
      str_field(n, "interface", "spec.network", &s->net_interface, err) ||
      str_field(n, "bridge", "spec.network", &s->net_bridge, err) ||
      str_field(n, "model", "spec.network", &s->net_model, err) ||
      api_bool(n, "firewall", "spec.network", &present, &fw, err) ||
      api_strlist(spec, "tags", "spec", &s->tags, err))
    return CARP_EPARSE;
  s->has_vmid_range = r != NULL;
  s->net_firewall = present ? fw : -1;
  if (size)
    api_bytes(size, &s->boot_disk_size);
  s->has_network = n != NULL;
  if (!s->net_interface)
    s->net_interface = carp_interns("net0");
  if (api_int(n, "vlan", "spec.network", &present, &x, err))
    return CARP_EPARSE;
  s->net_vlan = present && x >= 1 && x <= 4094 ? (int32_t)x : 0;
  if (api_int(n, "mtu", "spec.network", &present, &x, err))
    return CARP_EPARSE;
  s->net_mtu = present && x >= 1 && x <= 65520 ? (int32_t)x : 0;
  return 0;
}

static int decode_boot(yajl_val spec, struct carp_nodeclass_spec *s, char **err)
{
  yajl_val ci, ip, b, ref;
  const char *v4 = NULL, *v6 = NULL, *mode = NULL;
  int present, up;
  if (api_obj(spec, "cloudInit", "spec", &ci, err) ||
      str_field(ci, "user", "spec.cloudInit", &s->ci_user, err) ||
      api_strlist(ci, "sshKeys", "spec.cloudInit", &s->ci_ssh_keys, err) ||
      api_obj(ci, "ipConfig", "spec.cloudInit", &ip, err) ||
      api_str(ip, "ipv4", "spec.cloudInit.ipConfig", &v4, err) ||
      api_str(ip, "ipv6", "spec.cloudInit.ipConfig", &v6, err) ||
      api_strlist(ci, "nameservers", "spec.cloudInit", &s->ci_nameservers,
                  err) ||
      api_strlist(ci, "searchDomains", "spec.cloudInit", &s->ci_search_domains,
                  err) ||
      api_bool(ci, "upgradePackages", "spec.cloudInit", &present, &up, err) ||
      api_obj(spec, "bootstrap", "spec", &b, err) ||
      api_str(b, "mode", "spec.bootstrap", &mode, err) ||
      api_obj(b, "userDataSecretRef", "spec.bootstrap", &ref, err) ||
      str_field(ref, "name", "spec.bootstrap.userDataSecretRef",
                &s->userdata_secret_name, err) ||
      str_field(ref, "namespace", "spec.bootstrap.userDataSecretRef",
                &s->userdata_secret_namespace, err) ||
      str_field(ref, "key", "spec.bootstrap.userDataSecretRef",
                &s->userdata_secret_key, err) ||
      str_field(b, "isoStorage", "spec.bootstrap", &s->iso_storage, err))
    return CARP_EPARSE;
  s->ci_ipv4 = v4 && !strcmp(v4, "None") ? CARP_IPV4_NONE : CARP_IPV4_DHCP;
  s->ci_ipv6 = !v6                    ? CARP_IPV6_NONE
               : !strcmp(v6, "DHCP")  ? CARP_IPV6_DHCP
               : !strcmp(v6, "SLAAC") ? CARP_IPV6_SLAAC
                                      : CARP_IPV6_NONE;
  s->ci_upgrade_packages = present ? up : 0;
  s->bootstrap_mode = mode && !strcmp(mode, "UserData")
                          ? CARP_BOOTSTRAP_USERDATA
                          : CARP_BOOTSTRAP_TEMPLATE;
  if (!s->userdata_secret_key)
    s->userdata_secret_key = carp_interns("user-data");
  return 0;
}

/* kubeReserved / systemReserved: cpu, memory, ephemeral-storage, pid. */
static int reserved(yajl_val kubelet, const char *key,
                    struct carp_resources *out, int64_t *pid, char **err)
{
  yajl_val m;
  size_t i;
  char p[512];
  if (api_obj(kubelet, key, "spec.kubelet", &m, err))
    return CARP_EPARSE;
  for (i = 0; m && i < m->u.object.len; i++) {
    const char *name = m->u.object.keys[i];
    yajl_val x = m->u.object.values[i];
    int64_t milli;
    if (!YAJL_IS_STRING(x)) {
      snprintf(p, sizeof(p), "spec.kubelet.%s[%s]", key, name);
      return carp_api_error(err, p, "must be a string");
    }
    if (carp_quantity_parse(x->u.string, &milli) || milli < 0)
      continue;
    if (!strcmp(name, "cpu"))
      out->cpu = milli;
    else if (!strcmp(name, "memory"))
      out->memory = carp_quantity_value(milli);
    else if (!strcmp(name, "ephemeral-storage"))
      out->ephemeral = carp_quantity_value(milli);
    else if (!strcmp(name, "pid"))
      *pid = carp_quantity_value(milli);
  }
  return 0;
}

static const char *const signals[CARP_EVICT_NSIGNALS] = {
    "memory.available",  "nodefs.available",   "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "pid.available",
};

static void threshold(struct carp_eviction_threshold *t, const char *s)
{
  size_t n = strlen(s);
  memset(t, 0, sizeof(*t));
  if (n > 1 && s[n - 1] == '%') {
    char num[32];
    int32_t h;
    if (n - 1 >= sizeof(num))
      return;
    memcpy(num, s, n - 1);
    num[n - 1] = '\0';
    if (api_hundredths(num, &h) || h > 10000)
      return;
    t->set = 1;
    t->percent = 1;
    t->value = h;
  } else if (api_bytes(s, &t->value) == 0) {
    t->set = 1;
  }
}

static int decode_kubelet(yajl_val spec, struct carp_nodeclass_spec *s,
                          char **err)
{
  yajl_val k, ev;
  int present;
  int64_t x;
  size_t i, j;
  char p[512];
  s->max_pods = 110;
  if (api_obj(spec, "kubelet", "spec", &k, err) ||
      api_int(k, "maxPods", "spec.kubelet", &present, &x, err) ||
      reserved(k, "kubeReserved", &s->kube_reserved, &s->kube_reserved_pid,
               err) ||
      reserved(k, "systemReserved", &s->system_reserved,
               &s->system_reserved_pid, err) ||
      api_obj(k, "evictionHard", "spec.kubelet", &ev, err))
    return CARP_EPARSE;
  if (present && x >= 1 && x <= 1000)
    s->max_pods = (int32_t)x;
  if (!ev) {
    /* The kubelet's own defaults. */
    threshold(&s->eviction_hard[CARP_EVICT_MEMORY_AVAILABLE], "100Mi");
    threshold(&s->eviction_hard[CARP_EVICT_NODEFS_AVAILABLE], "10%");
    threshold(&s->eviction_hard[CARP_EVICT_IMAGEFS_AVAILABLE], "15%");
    threshold(&s->eviction_hard[CARP_EVICT_NODEFS_INODES_FREE], "5%");
    s->eviction_hard_defaulted = 1;
    return 0;
  }
  for (i = 0; i < ev->u.object.len; i++) {
    yajl_val v = ev->u.object.values[i];
    if (!YAJL_IS_STRING(v)) {
      snprintf(p, sizeof(p), "spec.kubelet.evictionHard[%s]",
               ev->u.object.keys[i]);
      return carp_api_error(err, p, "must be a string");
    }
    for (j = 0; j < CARP_EVICT_NSIGNALS; j++)
      if (!strcmp(ev->u.object.keys[i], signals[j]))
        threshold(&s->eviction_hard[j], v->u.string);
  }
  return 0;
}

static const struct {
  const char *name;
  int64_t memory_per_cpu;
} default_families[] = {{"c1", 2 * GiB}, {"s1", 4 * GiB}, {"m1", 8 * GiB}};
static const int32_t default_sizes[] = {1, 2, 4, 8, 16};

static int decode_instance_types(yajl_val spec, struct carp_nodeclass_spec *s,
                                 char **err)
{
  yajl_val it, fam, sizes, custom;
  const char *overhead = NULL;
  size_t i;
  char p[512];
  if (api_obj(spec, "instanceTypes", "spec", &it, err) ||
      api_arr(it, "families", "spec.instanceTypes", &fam, err) ||
      api_arr(it, "sizes", "spec.instanceTypes", &sizes, err) ||
      api_arr(it, "custom", "spec.instanceTypes", &custom, err) ||
      api_str(it, "vmMemoryOverhead", "spec.instanceTypes", &overhead, err))
    return CARP_EPARSE;
  if (!fam) {
    s->families = carp_calloc(3, sizeof(*s->families));
    for (i = 0; i < 3; i++) {
      s->families[i].name = carp_interns(default_families[i].name);
      s->families[i].memory_per_cpu = default_families[i].memory_per_cpu;
    }
    s->nfamilies = 3;
  } else if (fam->u.array.len) {
    s->families = carp_calloc(fam->u.array.len, sizeof(*s->families));
    for (i = 0; i < fam->u.array.len; i++) {
      yajl_val f = fam->u.array.values[i];
      struct carp_instance_family *o = &s->families[s->nfamilies];
      const char *name, *mem;
      yajl_val fs;
      snprintf(p, sizeof(p), "spec.instanceTypes.families[%zu]", i);
      if (!YAJL_IS_OBJECT(f))
        return carp_api_error(err, p, "must be an object");
      if (api_str(f, "name", p, &name, err) ||
          api_str(f, "memoryPerCPU", p, &mem, err) ||
          api_arr(f, "sizes", p, &fs, err) ||
          api_device_refs(f, p, s, &o->devices, err))
        return CARP_EPARSE;
      if (!name || !*name || !mem || api_bytes(mem, &o->memory_per_cpu) ||
          o->memory_per_cpu <= 0)
        continue; /* invalid: reported by validation */
      snprintf(p, sizeof(p), "spec.instanceTypes.families[%zu].sizes", i);
      if (int_list(fs, p, &o->sizes, &o->nsizes, err)) {
        carp_free(o->sizes);
        return CARP_EPARSE;
      }
      o->name = carp_interns(name);
      s->nfamilies++;
    }
  }
  if (!sizes) {
    s->sizes = carp_calloc(CARP_ARRAY_LEN(default_sizes), sizeof(*s->sizes));
    memcpy(s->sizes, default_sizes, sizeof(default_sizes));
    s->nsizes = CARP_ARRAY_LEN(default_sizes);
  } else if (int_list(sizes, "spec.instanceTypes.sizes", &s->sizes, &s->nsizes,
                      err)) {
    return CARP_EPARSE;
  }
  if (custom && custom->u.array.len) {
    s->custom = carp_calloc(custom->u.array.len, sizeof(*s->custom));
    for (i = 0; i < custom->u.array.len; i++) {
      yajl_val c = custom->u.array.values[i];
      struct carp_custom_instance_type *o = &s->custom[s->ncustom];
      const char *name, *family, *mem, *price;
      int has_cpu;
      int64_t cpu = 0;
      snprintf(p, sizeof(p), "spec.instanceTypes.custom[%zu]", i);
      if (!YAJL_IS_OBJECT(c))
        return carp_api_error(err, p, "must be an object");
      if (api_str(c, "name", p, &name, err) ||
          api_str(c, "family", p, &family, err) ||
          api_int(c, "cpu", p, &has_cpu, &cpu, err) ||
          api_str(c, "memory", p, &mem, err) ||
          api_str(c, "price", p, &price, err) ||
          api_device_refs(c, p, s, &o->devices, err))
        return CARP_EPARSE;
      if (!name || !*name || !has_cpu || cpu < 1 || cpu > 512 || !mem ||
          api_bytes(mem, &o->memory) || o->memory <= 0)
        continue;
      o->cpu = (int32_t)cpu;
      o->has_price = price && api_decimal_nano(price, &o->price_nano) == 0;
      o->name = carp_interns(name);
      o->family = carp_interns(family && *family ? family : "custom");
      s->ncustom++;
    }
  }
  s->vm_memory_overhead = 750;
  if (overhead) {
    size_t n = strlen(overhead);
    char num[32];
    int32_t h;
    if (n > 1 && n < sizeof(num) && overhead[n - 1] == '%') {
      memcpy(num, overhead, n - 1);
      num[n - 1] = '\0';
      if (api_hundredths(num, &h) == 0 && h < 5000)
        s->vm_memory_overhead = h;
    }
  }
  return 0;
}

static int decode_money(yajl_val spec, struct carp_nodeclass_spec *s,
                        char **err)
{
  yajl_val pr, hc;
  const char *per_cpu = NULL, *per_gib = NULL, *cpu_ratio = NULL,
             *mem_ratio = NULL, *reserved_mem = NULL, *placement = NULL;
  int32_t h;
  if (api_obj(spec, "pricing", "spec", &pr, err) ||
      api_str(pr, "perCPU", "spec.pricing", &per_cpu, err) ||
      api_str(pr, "perGiB", "spec.pricing", &per_gib, err) ||
      api_obj(spec, "hostCapacity", "spec", &hc, err) ||
      api_str(hc, "cpuOvercommitRatio", "spec.hostCapacity", &cpu_ratio, err) ||
      api_str(hc, "memoryOvercommitRatio", "spec.hostCapacity", &mem_ratio,
              err) ||
      api_str(hc, "reservedMemory", "spec.hostCapacity", &reserved_mem, err) ||
      api_str(spec, "placementStrategy", "spec", &placement, err))
    return CARP_EPARSE;
  if (!per_cpu || api_decimal_nano(per_cpu, &s->price_per_cpu_nano))
    s->price_per_cpu_nano = 30000000;
  if (!per_gib || api_decimal_nano(per_gib, &s->price_per_gib_nano))
    s->price_per_gib_nano = 4000000;
  s->cpu_overcommit = 100;
  if (cpu_ratio && api_hundredths(cpu_ratio, &h) == 0 && h >= 100)
    s->cpu_overcommit = h;
  s->memory_overcommit = 100;
  if (mem_ratio && api_hundredths(mem_ratio, &h) == 0 && h >= 100)
    s->memory_overcommit = h;
  if (!reserved_mem || api_bytes(reserved_mem, &s->reserved_memory))
    s->reserved_memory = 2 * GiB;
  s->placement = !placement                   ? CARP_PLACEMENT_SPREAD
                 : !strcmp(placement, "Pack") ? CARP_PLACEMENT_PACK
                 : !strcmp(placement, "LeastLoaded")
                     ? CARP_PLACEMENT_LEAST_LOADED
                     : CARP_PLACEMENT_SPREAD;
  return 0;
}

static int nodeclass_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_nodeclass *nc = CARP_NEW(struct carp_nodeclass);
  yajl_val spec;
  if (carp_objmeta_decode(obj, api_keep_annotation, &nc->meta, err)) {
    carp_free(nc);
    return CARP_EPARSE;
  }
  nc->meta.kind = &carp_kind_proxmoxnodeclass;
  if (api_obj(obj, "spec", "", &spec, err) ||
      decode_where(spec, &nc->spec, err) || decode_boot(spec, &nc->spec, err) ||
      decode_kubelet(spec, &nc->spec, err) ||
      api_devices_decode(spec, &nc->spec, err) ||
      decode_instance_types(spec, &nc->spec, err) ||
      decode_money(spec, &nc->spec, err) ||
      api_nodeclass_status_decode(obj, &nc->status, err)) {
    nodeclass_free(&nc->meta);
    return CARP_EPARSE;
  }
  nc->valid = carp_nodeclass_validate(obj, &nc->invalid_reason) == 0;
  *out = &nc->meta;
  return 0;
}

const struct carp_kind carp_kind_proxmoxnodeclass = {
    .name = CARP_NODECLASS_KIND,
    .group = CARP_NODECLASS_GROUP,
    .version = CARP_NODECLASS_VERSION,
    .resource = "proxmoxnodeclasses",
    .namespaced = 0,
    .decode = nodeclass_decode,
    .free = nodeclass_free,
};
