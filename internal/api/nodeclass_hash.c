/* nodeclass_hash.c: the drift hash of a ProxmoxNodeClass - FNV-1a 64 over
 * a canonical JSON of the decoded, defaulted fields that shape a new VM
 * (template, clone mode/storage/format, bootDisk, cpu, network, cloudInit,
 * bootstrap, kubelet) plus, in UserData mode, the user-data template. The
 * controller writes it to status.specHash; NodeClaims carry the value they
 * were launched with (carpenter.dev/proxmoxnodeclass-hash). */
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/json.h"
#include "carpenter/nodeclass.h"
#include "carpenter/quantity.h"

static const char *const signals[CARP_EVICT_NSIGNALS] = {
    "memory.available",  "nodefs.available",   "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "pid.available",
};

static void kstr_opt(struct carp_jw *w, const char *key, const char *s)
{
  if (s && *s)
    carp_jw_kstr(w, key, s);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void list(struct carp_jw *w, const char *key,
                 const struct carp_strlist *l, int sorted)
{
  const char **v;
  uint32_t i;
  if (!l->n)
    return;
  v = carp_calloc(l->n, sizeof(*v));
  memcpy(v, l->v, l->n * sizeof(*v));
  if (sorted)
    qsort(v, l->n, sizeof(*v), cmp_str);
  carp_jw_key(w, key);
  carp_jw_arr(w);
  for (i = 0; i < l->n; i++)
    carp_jw_str(w, v[i]);
  carp_jw_arr_end(w);
  carp_free(v);
}

static void reserved(struct carp_jw *w, const char *key,
                     const struct carp_resources *r, int64_t pid)
{
  if (!r->cpu && !r->memory && !r->ephemeral && !pid)
    return;
  carp_jw_key(w, key);
  carp_jw_obj(w);
  if (r->cpu)
    carp_jw_kint(w, "cpu", r->cpu);
  if (r->ephemeral)
    carp_jw_kint(w, "ephemeral-storage", r->ephemeral);
  if (r->memory)
    carp_jw_kint(w, "memory", r->memory);
  if (pid)
    carp_jw_kint(w, "pid", pid);
  carp_jw_obj_end(w);
}

void carp_nodeclass_hash(const struct carp_nodeclass_spec *s,
                         const char *userdata, size_t userdata_len,
                         char out[CARP_HASH_LEN])
{
  static const char *const formats[] = {"", "raw", "qcow2", "vmdk"};
  static const char *const ipv6[] = {"None", "DHCP", "SLAAC"};
  struct carp_buf b;
  struct carp_jw w;
  int i;

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_jw_obj(&w);
  if (s->boot_disk_size || s->boot_disk_device) {
    carp_jw_key(&w, "bootDisk");
    carp_jw_obj(&w);
    kstr_opt(&w, "device", s->boot_disk_device);
    if (s->boot_disk_size)
      carp_jw_kint(&w, "size", s->boot_disk_size);
    carp_jw_obj_end(&w);
  }
  carp_jw_key(&w, "bootstrap");
  carp_jw_obj(&w);
  kstr_opt(&w, "isoStorage", s->iso_storage);
  carp_jw_kstr(&w, "mode",
               s->bootstrap_mode == CARP_BOOTSTRAP_USERDATA ? "UserData"
                                                            : "Template");
  if (s->userdata_secret_name) {
    carp_jw_key(&w, "userDataSecretRef");
    carp_jw_obj(&w);
    kstr_opt(&w, "key", s->userdata_secret_key);
    kstr_opt(&w, "name", s->userdata_secret_name);
    kstr_opt(&w, "namespace", s->userdata_secret_namespace);
    carp_jw_obj_end(&w);
  }
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "clone");
  carp_jw_obj(&w);
  kstr_opt(&w, "format", formats[s->clone_format]);
  carp_jw_kstr(&w, "mode",
               s->clone_mode == CARP_CLONE_FULL ? "Full" : "Linked");
  kstr_opt(&w, "storage", s->clone_storage);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "cloudInit");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "ipv4", s->ci_ipv4 == CARP_IPV4_NONE ? "None" : "DHCP");
  carp_jw_kstr(&w, "ipv6", ipv6[s->ci_ipv6]);
  list(&w, "nameservers", &s->ci_nameservers, 0);
  list(&w, "searchDomains", &s->ci_search_domains, 0);
  list(&w, "sshKeys", &s->ci_ssh_keys, 0);
  if (s->ci_upgrade_packages)
    carp_jw_kbool(&w, "upgradePackages", 1);
  kstr_opt(&w, "user", s->ci_user);
  carp_jw_obj_end(&w);
  if (s->cpu_type) {
    carp_jw_key(&w, "cpu");
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "type", s->cpu_type);
    carp_jw_obj_end(&w);
  }
  carp_jw_key(&w, "kubelet");
  carp_jw_obj(&w);
  carp_jw_key(&w, "evictionHard");
  carp_jw_obj(&w);
  for (i = 0; i < CARP_EVICT_NSIGNALS; i++) {
    const struct carp_eviction_threshold *t = &s->eviction_hard[i];
    if (!t->set)
      continue;
    carp_jw_key(&w, signals[i]);
    carp_jw_obj(&w);
    carp_jw_kint(&w, t->percent ? "percent" : "value", t->value);
    carp_jw_obj_end(&w);
  }
  carp_jw_obj_end(&w);
  reserved(&w, "kubeReserved", &s->kube_reserved, s->kube_reserved_pid);
  carp_jw_kint(&w, "maxPods", s->max_pods);
  reserved(&w, "systemReserved", &s->system_reserved, s->system_reserved_pid);
  carp_jw_obj_end(&w);
  if (s->has_network) {
    carp_jw_key(&w, "network");
    carp_jw_obj(&w);
    kstr_opt(&w, "bridge", s->net_bridge);
    if (s->net_firewall >= 0)
      carp_jw_kbool(&w, "firewall", s->net_firewall);
    kstr_opt(&w, "interface", s->net_interface);
    kstr_opt(&w, "model", s->net_model);
    if (s->net_mtu)
      carp_jw_kint(&w, "mtu", s->net_mtu);
    if (s->net_vlan)
      carp_jw_kint(&w, "vlan", s->net_vlan);
    carp_jw_obj_end(&w);
  }
  carp_jw_key(&w, "template");
  carp_jw_obj(&w);
  kstr_opt(&w, "name", s->template_name);
  carp_jw_kstr(&w, "scope",
               s->template_scope == CARP_SCOPE_SHARED ? "Shared" : "PerHost");
  list(&w, "tags", &s->template_tags, 1);
  carp_jw_obj_end(&w);
  if (s->bootstrap_mode == CARP_BOOTSTRAP_USERDATA && userdata) {
    char h[CARP_HASH_LEN];
    carp_hash_format(carp_fnv1a64(CARP_FNV1A64_BASIS, userdata, userdata_len),
                     h);
    carp_jw_kstr(&w, "userData", h);
  }
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
  carp_hash_format(carp_fnv1a64(CARP_FNV1A64_BASIS, b.ptr, b.len), out);
  carp_buf_free(&b);
}
