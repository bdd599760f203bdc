/* validate_nodeclass.c: carp_nodeclass_validate() - every schema and CEL
 * rule of crds/carpenter.dev_proxmoxnodeclasses.yaml on a
 * ProxmoxNodeClass's JSON, CEL rules evaluated on the defaulted object as
 * the API server does (clone.mode Linked, bootstrap.mode Template, the
 * default families), plus two checks of Carpenter's own: quantities and
 * prices must fit its integer representation. Device classes are checked
 * in validate_devices.c. */
#include <string.h>

#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/nodeclass.h"
#include "carpenter/quantity.h"
#include "validate_int.h"

static const char PAT_REGION[] = "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$";
static const char PAT_ZONE[] = "^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$";
static const char PAT_TEMPLATE_NAME[] =
    "^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$";
static const char PAT_TAG[] = "^[a-z0-9_][-a-z0-9_+.]*$";
static const char PAT_STORAGE[] = "^[A-Za-z][-A-Za-z0-9_.]*[A-Za-z0-9]$";
static const char PAT_POOL[] =
    "^[A-Za-z0-9][-A-Za-z0-9_]*(/[A-Za-z0-9][-A-Za-z0-9_]*){0,2}$";
static const char PAT_DISK_SIZE[] = "^[1-9][0-9]*(Gi|Ti)$";
static const char PAT_DISK_DEVICE[] = "^(virtio|scsi|sata|ide)[0-9]{1,2}$";
static const char PAT_CPU_TYPE[] = "^[A-Za-z0-9][-A-Za-z0-9_.+]*$";
static const char PAT_NET_IF[] = "^net[0-9]{1,2}$";
static const char PAT_BRIDGE[] = "^[A-Za-z0-9][-A-Za-z0-9_.]*$";
static const char PAT_CI_USER[] = "^[a-z_][-a-z0-9_]*$";
static const char PAT_SSH_KEY[] =
    "^(ssh|ecdsa|sk-)[-a-z0-9@.]+ [A-Za-z0-9+/=]+( .*)?$";
static const char PAT_NAMESERVER[] = "^[0-9A-Fa-f.:]+$";
static const char PAT_SEARCH_DOMAIN[] =
    "^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$";
static const char PAT_SECRET_NAME[] = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";
static const char PAT_NAMESPACE[] = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
static const char PAT_SECRET_KEY[] = "^[-._a-zA-Z0-9]+$";
static const char PAT_EVICTION[] = "^((\\d{1,2}(\\.\\d{1,2})?|100(\\.0{1,2})?)%"
                                   "|(\\+|-)?(([0-9]+(\\.[0-9]*)?)|("
                                   "\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE]("
                                   "\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\."
                                   "[0-9]+))))?)$";
static const char PAT_FAMILY[] = "^[a-z][a-z0-9]*$";
static const char PAT_MEMORY[] = "^[1-9][0-9]*(Mi|Gi)$";
static const char PAT_CUSTOM_NAME[] = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";
static const char PAT_PRICE[] = "^[0-9]+(\\.[0-9]{1,9})?$";
static const char PAT_OVERHEAD[] = "^([0-9]|[1-4][0-9])(\\.[0-9]{1,2})?%$";
static const char PAT_CPU_RATIO[] = "^([1-9]|1[0-6])(\\.[0-9]{1,2})?$";
static const char PAT_MEM_RATIO[] = "^(1(\\.[0-9]{1,2})?|2(\\.0{1,2})?)$";
static const char PAT_RESERVED_MEMORY[] = "^[0-9]+(Mi|Gi)$";

static const char *const scope_enum[] = {"PerHost", "Shared", NULL};
static const char *const mode_enum[] = {"Linked", "Full", NULL};
static const char *const format_enum[] = {"raw", "qcow2", "vmdk", NULL};
static const char *const model_enum[] = {
    "virtio", "e1000", "e1000e", "vmxnet3", "rtl8139", NULL,
};
static const char *const ipv4_enum[] = {"DHCP", "None", NULL};
static const char *const ipv6_enum[] = {"None", "DHCP", "SLAAC", NULL};
static const char *const bootstrap_enum[] = {"Template", "UserData", NULL};
static const char *const placement_enum[] = {"Spread", "Pack", "LeastLoaded",
                                             NULL};
static const char *const reserved_keys[] = {"cpu", "memory",
                                            "ephemeral-storage", "pid", NULL};
static const char *const eviction_keys[] = {
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
    NULL,
};
/* The families an absent instanceTypes.families defaults to. */
static const char *const default_families[] = {"c1", "s1", "m1", NULL};

static int in_list(const char *const *list, const char *s)
{
  for (; *list; list++)
    if (!strcmp(*list, s))
      return 1;
  return 0;
}

/* A quantity that matched its pattern but does not fit Carpenter's int64
 * millis (about 8 PiB). */
static void fits(struct vctx *v, yajl_val obj, const char *path,
                 const char *key, const char *pattern)
{
  char p[VPATH];
  int64_t milli;
  const char *s = carp_json_str(obj, key, NULL);
  if (s && v_match(pattern, s) && carp_quantity_parse(s, &milli))
    v_err(v, v_sub(p, path, key), "Invalid value: \"%s\": quantity too large",
          s);
}

/* A price (decimal with up to 9 fractional digits) must be below 1e9 so
 * that nano-units fit an int64. */
static void price_fits(struct vctx *v, yajl_val obj, const char *path,
                       const char *key)
{
  char p[VPATH];
  const char *s = carp_json_str(obj, key, NULL);
  if (s && v_match(PAT_PRICE, s) && strcspn(s, ".") > 9)
    v_err(v, v_sub(p, path, key), "Invalid value: \"%s\": price too large", s);
}

static void template(struct vctx *v, yajl_val spec)
{
  static const struct vstr name_rule = {.pattern = PAT_TEMPLATE_NAME,
                                        .maxlen = 128};
  static const struct vstr tag_rule = {.pattern = PAT_TAG, .maxlen = 64};
  static const struct vstr scope_rule = {.enums = scope_enum};
  yajl_val t = v_obj(v, spec, "spec", "template", 1), tags;
  if (!t)
    return;
  v_str(v, t, "spec.template", "name", 0, &name_rule);
  tags = v_arr(v, t, "spec.template", "tags", 0, 16);
  v_str_list(v, tags, "spec.template.tags", &tag_rule, 1);
  v_str(v, t, "spec.template", "scope", 0, &scope_rule);
  if (!v_get(t, "name") && !(tags && tags->u.array.len > 0))
    v_err(v, "spec.template",
          "Invalid value: \"object\": template.name or template.tags must be "
          "set");
}

static void clone(struct vctx *v, yajl_val spec)
{
  static const struct vstr mode_rule = {.enums = mode_enum};
  static const struct vstr storage_rule = {.pattern = PAT_STORAGE,
                                           .maxlen = 64};
  static const struct vstr format_rule = {.enums = format_enum};
  const char *mode;
  yajl_val c = v_obj(v, spec, "spec", "clone", 0);
  if (!c)
    return;
  mode = v_str(v, c, "spec.clone", "mode", 0, &mode_rule);
  v_str(v, c, "spec.clone", "storage", 0, &storage_rule);
  v_str(v, c, "spec.clone", "format", 0, &format_rule);
  v_int(v, c, "spec.clone", "maxConcurrentFullClones", 0, 1, 16, NULL);
  if (!(mode && !strcmp(mode, "Full")) &&
      (v_get(c, "storage") || v_get(c, "format")))
    v_err(v, "spec.clone",
          "Invalid value: \"object\": clone.storage and clone.format are only "
          "allowed with mode Full (Proxmox refuses them for linked clones)");
}

static void vm(struct vctx *v, yajl_val spec)
{
  static const struct vstr pool_rule = {.pattern = PAT_POOL, .maxlen = 128};
  static const struct vstr size_rule = {.pattern = PAT_DISK_SIZE};
  static const struct vstr device_rule = {.pattern = PAT_DISK_DEVICE};
  static const struct vstr cpu_rule = {.pattern = PAT_CPU_TYPE, .maxlen = 64};
  static const struct vstr if_rule = {.pattern = PAT_NET_IF};
  static const struct vstr bridge_rule = {.pattern = PAT_BRIDGE, .maxlen = 32};
  static const struct vstr model_rule = {.enums = model_enum};
  static const struct vstr tag_rule = {.pattern = PAT_TAG, .maxlen = 64};
  yajl_val r, d, c, n, tags;
  size_t i;

  v_str(v, spec, "spec", "resourcePool", 0, &pool_rule);
  r = v_obj(v, spec, "spec", "vmidRange", 0);
  if (r) {
    int64_t lo = 0, hi = 0;
    int has_lo = v_int(v, r, "spec.vmidRange", "min", 1, 100, 999999999, &lo);
    int has_hi = v_int(v, r, "spec.vmidRange", "max", 1, 100, 999999999, &hi);
    if (has_lo && has_hi && lo > hi)
      v_err(v, "spec.vmidRange",
            "Invalid value: \"object\": vmidRange.min must be less than or "
            "equal to vmidRange.max");
  }
  d = v_obj(v, spec, "spec", "bootDisk", 0);
  if (d) {
    v_str(v, d, "spec.bootDisk", "size", 0, &size_rule);
    fits(v, d, "spec.bootDisk", "size", PAT_DISK_SIZE);
    v_str(v, d, "spec.bootDisk", "device", 0, &device_rule);
  }
  c = v_obj(v, spec, "spec", "cpu", 0);
  if (c)
    v_str(v, c, "spec.cpu", "type", 0, &cpu_rule);
  n = v_obj(v, spec, "spec", "network", 0);
  if (n) {
    v_str(v, n, "spec.network", "interface", 0, &if_rule);
    v_str(v, n, "spec.network", "bridge", 0, &bridge_rule);
    v_int(v, n, "spec.network", "vlan", 0, 1, 4094, NULL);
    v_bool(v, n, "spec.network", "firewall", NULL);
    v_str(v, n, "spec.network", "model", 0, &model_rule);
    v_int(v, n, "spec.network", "mtu", 0, 1, 65520, NULL);
  }
  tags = v_arr(v, spec, "spec", "tags", 0, 32);
  v_str_list(v, tags, "spec.tags", &tag_rule, 1);
  for (i = 0; tags && i < tags->u.array.len; i++) {
    yajl_val t = tags->u.array.values[i];
    if (YAJL_IS_STRING(t) && (!strcmp(t->u.string, "carpenter") ||
                              !strncmp(t->u.string, "carpenter-", 10))) {
      v_err(v, "spec.tags",
            "Invalid value: \"array\": tags 'carpenter' and 'carpenter-*' are "
            "reserved for Carpenter");
      break;
    }
  }
}

static void cloud_init(struct vctx *v, yajl_val spec)
{
  static const struct vstr user_rule = {.pattern = PAT_CI_USER, .maxlen = 32};
  static const struct vstr key_rule = {.pattern = PAT_SSH_KEY, .maxlen = 16384};
  static const struct vstr ipv4_rule = {.enums = ipv4_enum};
  static const struct vstr ipv6_rule = {.enums = ipv6_enum};
  static const struct vstr ns_rule = {.pattern = PAT_NAMESERVER, .maxlen = 45};
  static const struct vstr sd_rule = {.pattern = PAT_SEARCH_DOMAIN,
                                      .maxlen = 253};
  yajl_val ci = v_obj(v, spec, "spec", "cloudInit", 0), ip, a;
  if (!ci)
    return;
  v_str(v, ci, "spec.cloudInit", "user", 0, &user_rule);
  a = v_arr(v, ci, "spec.cloudInit", "sshKeys", 0, 32);
  v_str_list(v, a, "spec.cloudInit.sshKeys", &key_rule, 0);
  ip = v_obj(v, ci, "spec.cloudInit", "ipConfig", 0);
  if (ip) {
    v_str(v, ip, "spec.cloudInit.ipConfig", "ipv4", 0, &ipv4_rule);
    v_str(v, ip, "spec.cloudInit.ipConfig", "ipv6", 0, &ipv6_rule);
  }
  a = v_arr(v, ci, "spec.cloudInit", "nameservers", 0, 3);
  v_str_list(v, a, "spec.cloudInit.nameservers", &ns_rule, 0);
  a = v_arr(v, ci, "spec.cloudInit", "searchDomains", 0, 6);
  v_str_list(v, a, "spec.cloudInit.searchDomains", &sd_rule, 0);
  v_bool(v, ci, "spec.cloudInit", "upgradePackages", NULL);
}

static void bootstrap(struct vctx *v, yajl_val spec)
{
  static const struct vstr mode_rule = {.enums = bootstrap_enum};
  static const struct vstr name_rule = {.pattern = PAT_SECRET_NAME,
                                        .maxlen = 253};
  static const struct vstr ns_rule = {.pattern = PAT_NAMESPACE, .maxlen = 63};
  static const struct vstr key_rule = {.pattern = PAT_SECRET_KEY,
                                       .maxlen = 253};
  static const struct vstr iso_rule = {.pattern = PAT_STORAGE, .maxlen = 64};
  const char *mode;
  int userdata;
  yajl_val b = v_obj(v, spec, "spec", "bootstrap", 0), ref, ci;
  if (!b)
    return;
  mode = v_str(v, b, "spec.bootstrap", "mode", 0, &mode_rule);
  ref = v_obj(v, b, "spec.bootstrap", "userDataSecretRef", 0);
  if (ref) {
    const char *p = "spec.bootstrap.userDataSecretRef";
    v_str(v, ref, p, "name", 1, &name_rule);
    v_str(v, ref, p, "namespace", 1, &ns_rule);
    v_str(v, ref, p, "key", 0, &key_rule);
  }
  v_str(v, b, "spec.bootstrap", "isoStorage", 0, &iso_rule);
  userdata = mode && !strcmp(mode, "UserData");
  if (userdata && !(v_get(b, "userDataSecretRef") && v_get(b, "isoStorage")))
    v_err(v, "spec.bootstrap",
          "Invalid value: \"object\": bootstrap.userDataSecretRef and "
          "bootstrap.isoStorage are required when mode is UserData");
  if (!userdata && (v_get(b, "userDataSecretRef") || v_get(b, "isoStorage")))
    v_err(v, "spec.bootstrap",
          "Invalid value: \"object\": bootstrap.userDataSecretRef and "
          "bootstrap.isoStorage are only allowed when mode is UserData");
  ci = v_get(spec, "cloudInit");
  if (userdata && YAJL_IS_OBJECT(ci) &&
      (v_get(ci, "user") || v_get(ci, "sshKeys")))
    v_err(v, "spec",
          "Invalid value: \"object\": cloudInit.user and cloudInit.sshKeys "
          "apply to bootstrap mode Template only; with mode UserData put users "
          "and keys in the user-data");
}

static void reserved_map(struct vctx *v, yajl_val kubelet, const char *field,
                         const char *pattern, const char *const *keys,
                         size_t max)
{
  const struct vstr rule = {.pattern = pattern};
  char p[VPATH], pk[VPATH];
  size_t i;
  int bad = 0;
  yajl_val m = v_str_map(v, kubelet, "spec.kubelet", field, max, &rule);
  if (!m)
    return;
  v_sub(p, "spec.kubelet", field);
  for (i = 0; i < m->u.object.len; i++) {
    const char *s = carp_json_str(m->u.object.values[i], NULL);
    size_t len = s ? strlen(s) : 0;
    int64_t milli;
    if (!in_list(keys, m->u.object.keys[i]))
      bad = 1;
    if (len && s[len - 1] != '%' && v_match(pattern, s) &&
        carp_quantity_parse(s, &milli))
      v_err(v, v_key(pk, p, m->u.object.keys[i]),
            "Invalid value: \"%s\": quantity too large", s);
  }
  if (bad) {
    struct carp_buf b;
    const char *const *k;
    carp_buf_init(&b, CARP_BUF_UNLIMITED);
    for (k = keys; *k; k++)
      carp_buf_printf(&b, "%s'%s'", k == keys ? "" : ",", *k);
    v_err(v, p, "Invalid value: \"object\": valid keys for %s are [%s]", field,
          carp_buf_cstr(&b));
    carp_buf_free(&b);
  }
}

static void kubelet(struct vctx *v, yajl_val spec)
{
  yajl_val k = v_obj(v, spec, "spec", "kubelet", 0);
  if (!k)
    return;
  v_int(v, k, "spec.kubelet", "maxPods", 0, 1, 1000, NULL);
  reserved_map(v, k, "kubeReserved", V_PAT_QUANTITY, reserved_keys, 4);
  reserved_map(v, k, "systemReserved", V_PAT_QUANTITY, reserved_keys, 4);
  reserved_map(v, k, "evictionHard", PAT_EVICTION, eviction_keys, 6);
}

/* Duplicate keys of a list-map (x-kubernetes-list-map-keys: [name]). */
static void map_keys(struct vctx *v, yajl_val arr, const char *path)
{
  char p[VPATH];
  size_t i, j;
  for (i = 0; arr && i < arr->u.array.len; i++) {
    const char *a = carp_json_str(arr->u.array.values[i], "name", NULL);
    for (j = 0; a && j < i; j++) {
      const char *b = carp_json_str(arr->u.array.values[j], "name", NULL);
      if (b && !strcmp(a, b)) {
        v_err(v, v_idx(p, path, i), "Duplicate value: {\"name\":\"%s\"}", a);
        break;
      }
    }
  }
}

static void instance_types(struct vctx *v, yajl_val spec)
{
  static const struct vstr family_rule = {.pattern = PAT_FAMILY, .maxlen = 16};
  static const struct vstr memory_rule = {.pattern = PAT_MEMORY};
  static const struct vstr name_rule = {.pattern = PAT_CUSTOM_NAME,
                                        .maxlen = 63};
  static const struct vstr price_rule = {.pattern = PAT_PRICE, .maxlen = 24};
  static const struct vstr overhead_rule = {.pattern = PAT_OVERHEAD};
  const char *base = "spec.instanceTypes";
  char p[VPATH], pi[VPATH], ps[VPATH];
  yajl_val it = v_obj(v, spec, "spec", "instanceTypes", 0), fam, custom, a;
  size_t i, j;
  int has_families, has_custom, unknown = 0, two_gpus = 0;

  if (!it) {
    /* Defaulted to {}: the default families - nothing to check. */
    return;
  }
  fam = v_arr(v, it, base, "families", 0, 16);
  v_sub(p, base, "families");
  for (i = 0; fam && i < fam->u.array.len; i++) {
    yajl_val f = fam->u.array.values[i];
    v_idx(pi, p, i);
    if (!YAJL_IS_OBJECT(f)) {
      v_err(v, pi, "Invalid value: \"%s\": must be of type object",
            v_typename(f));
      continue;
    }
    v_str(v, f, pi, "name", 1, &family_rule);
    v_str(v, f, pi, "memoryPerCPU", 1, &memory_rule);
    fits(v, f, pi, "memoryPerCPU", PAT_MEMORY);
    a = v_arr(v, f, pi, "sizes", 0, 32);
    v_int_list(v, a, v_sub(ps, pi, "sizes"), 1, 512, 1);
    v_instance_type_devices(v, spec, f, pi, &unknown, &two_gpus);
  }
  map_keys(v, fam, p);
  a = v_arr(v, it, base, "sizes", 0, 32);
  v_int_list(v, a, "spec.instanceTypes.sizes", 1, 512, 1);
  custom = v_arr(v, it, base, "custom", 0, 100);
  v_sub(p, base, "custom");
  for (i = 0; custom && i < custom->u.array.len; i++) {
    yajl_val c = custom->u.array.values[i];
    v_idx(pi, p, i);
    if (!YAJL_IS_OBJECT(c)) {
      v_err(v, pi, "Invalid value: \"%s\": must be of type object",
            v_typename(c));
      continue;
    }
    v_str(v, c, pi, "name", 1, &name_rule);
    v_str(v, c, pi, "family", 0, &family_rule);
    v_int(v, c, pi, "cpu", 1, 1, 512, NULL);
    v_str(v, c, pi, "memory", 1, &memory_rule);
    fits(v, c, pi, "memory", PAT_MEMORY);
    v_str(v, c, pi, "price", 0, &price_rule);
    price_fits(v, c, pi, "price");
    v_instance_type_devices(v, spec, c, pi, &unknown, &two_gpus);
  }
  map_keys(v, custom, p);
  v_str(v, it, base, "vmMemoryOverhead", 0, &overhead_rule);
  v_instance_type_devices_done(v, unknown, two_gpus);

  /* CEL, on the defaulted object: absent families are c1, s1, m1. */
  has_families = !fam ? 1 : fam->u.array.len > 0;
  has_custom = custom && custom->u.array.len > 0;
  if (!has_families && !has_custom)
    v_err(v, base,
          "Invalid value: \"object\": instanceTypes must define at least one "
          "family or custom instance type");
  for (i = 0; custom && i < custom->u.array.len; i++) {
    const char *name = carp_json_str(custom->u.array.values[i], "name", NULL);
    int clash = 0;
    size_t nf = fam ? fam->u.array.len : 3;
    for (j = 0; name && j < nf && !clash; j++) {
      const char *f = fam ? carp_json_str(fam->u.array.values[j], "name", NULL)
                          : default_families[j];
      size_t fl = f ? strlen(f) : 0;
      clash = f && !strncmp(name, f, fl) && name[fl] == '.';
    }
    if (clash) {
      v_err(v, base,
            "Invalid value: \"object\": custom instance type names must not "
            "start with a family name followed by '.'");
      break;
    }
  }
}

static void pricing_and_capacity(struct vctx *v, yajl_val spec)
{
  static const struct vstr price_rule = {.pattern = PAT_PRICE, .maxlen = 24};
  static const struct vstr cpu_rule = {.pattern = PAT_CPU_RATIO};
  static const struct vstr mem_rule = {.pattern = PAT_MEM_RATIO};
  static const struct vstr reserved_rule = {.pattern = PAT_RESERVED_MEMORY};
  static const struct vstr placement_rule = {.enums = placement_enum};
  yajl_val pr = v_obj(v, spec, "spec", "pricing", 0);
  yajl_val hc = v_obj(v, spec, "spec", "hostCapacity", 0);
  if (pr) {
    v_str(v, pr, "spec.pricing", "perCPU", 0, &price_rule);
    price_fits(v, pr, "spec.pricing", "perCPU");
    v_str(v, pr, "spec.pricing", "perGiB", 0, &price_rule);
    price_fits(v, pr, "spec.pricing", "perGiB");
  }
  if (hc) {
    v_str(v, hc, "spec.hostCapacity", "cpuOvercommitRatio", 0, &cpu_rule);
    v_str(v, hc, "spec.hostCapacity", "memoryOvercommitRatio", 0, &mem_rule);
    v_str(v, hc, "spec.hostCapacity", "reservedMemory", 0, &reserved_rule);
    fits(v, hc, "spec.hostCapacity", "reservedMemory", PAT_RESERVED_MEMORY);
  }
  v_str(v, spec, "spec", "placementStrategy", 0, &placement_rule);
}

int carp_nodeclass_validate(yajl_val obj, char **reason)
{
  static const struct vstr region_rule = {.pattern = PAT_REGION, .maxlen = 63};
  static const struct vstr zone_rule = {.pattern = PAT_ZONE, .maxlen = 63};
  struct vctx v;
  yajl_val spec, a;
  v_init(&v);
  if (!YAJL_IS_OBJECT(obj)) {
    v_err(&v, "<root>", "Invalid value: \"%s\": must be of type object",
          v_typename(obj));
    return v_done(&v, reason);
  }
  spec = v_obj(&v, obj, "", "spec", 1);
  if (spec) {
    a = v_arr(&v, spec, "spec", "regions", 0, 16);
    v_str_list(&v, a, "spec.regions", &region_rule, 1);
    a = v_arr(&v, spec, "spec", "zones", 0, 256);
    v_str_list(&v, a, "spec.zones", &zone_rule, 1);
    template(&v, spec);
    clone(&v, spec);
    vm(&v, spec);
    cloud_init(&v, spec);
    bootstrap(&v, spec);
    kubelet(&v, spec);
    v_nodeclass_devices(&v, spec);
    instance_types(&v, spec);
    pricing_and_capacity(&v, spec);
  }
  return v_done(&v, reason);
}
