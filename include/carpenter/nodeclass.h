/* Module api (internal/api). ProxmoxNodeClass (carpenter.dev/v1alpha1,
 * cluster-scoped): how a node is built on Proxmox VE - regions (clusters) and
 * zones (hosts), the template, clone mode, the VM's disk, CPU, network and
 * tags, cloud-init, bootstrap, kubelet reservations, instance types and prices,
 * host capacity and placement. docs/api.md describes every field.
 *
 * Decoding applies every default of the CRD (clone mode Linked, scope
 * PerHost, bootstrap Template, maxPods 110, the c1/s1/m1 families at 1, 2,
 * 4, 8 and 16 vCPUs, prices 0.03/vCPU and 0.004/GiB, vmMemoryOverhead
 * 7.5%, reservedMemory 2Gi, placement Spread...) and never fails because a
 * rule is broken; valid and invalid_reason carry carp_nodeclass_validate()'s
 * result, which the controller reports as ValidationSucceeded=False,
 * reason InvalidSpec. A field of the wrong JSON type fails the decode
 * (CARP_EPARSE). */
#ifndef CARP_NODECLASS_H
#define CARP_NODECLASS_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/api_types.h"
#include "carpenter/buf.h"
#include "carpenter/conditions.h"
#include "carpenter/object.h"
#include "carpenter/spechash.h"

#define CARP_NODECLASS_GROUP   "carpenter.dev"
#define CARP_NODECLASS_VERSION "v1alpha1"
#define CARP_NODECLASS_KIND    "ProxmoxNodeClass"

/* Condition types and reasons (docs/api.md). */
#define CARP_COND_REGIONS_READY   "RegionsReady"
#define CARP_COND_TEMPLATES_READY "TemplatesReady"
#define CARP_COND_BOOTSTRAP_READY "BootstrapReady"
#define CARP_REASON_INVALID_SPEC  "InvalidSpec"

/* Drift bookkeeping of the node class (docs/api.md, Drift). */
#define CARP_ANN_NODECLASS_HASH "carpenter.dev/proxmoxnodeclass-hash"
#define CARP_ANN_NODECLASS_HASH_VER                                            \
  "carpenter.dev/proxmoxnodeclass-hash-version"
#define CARP_NODECLASS_HASH_VERSION "v1"

/* A list of interned strings. */
struct carp_strlist {
  uint32_t n;
  const char **v;
};

enum carp_template_scope { CARP_SCOPE_PER_HOST = 0, CARP_SCOPE_SHARED };
enum carp_clone_mode { CARP_CLONE_LINKED = 0, CARP_CLONE_FULL };
enum carp_disk_format {
  CARP_FORMAT_DEFAULT = 0, /* unset: the storage's default */
  CARP_FORMAT_RAW,
  CARP_FORMAT_QCOW2,
  CARP_FORMAT_VMDK,
};
enum carp_bootstrap_mode {
  CARP_BOOTSTRAP_TEMPLATE = 0,
  CARP_BOOTSTRAP_USERDATA
};
enum carp_ipv4_mode { CARP_IPV4_DHCP = 0, CARP_IPV4_NONE };
enum carp_ipv6_mode { CARP_IPV6_NONE = 0, CARP_IPV6_DHCP, CARP_IPV6_SLAAC };
enum carp_placement {
  CARP_PLACEMENT_SPREAD = 0,
  CARP_PLACEMENT_PACK,
  CARP_PLACEMENT_LEAST_LOADED,
};

enum carp_eviction_signal {
  CARP_EVICT_MEMORY_AVAILABLE = 0,
  CARP_EVICT_NODEFS_AVAILABLE,
  CARP_EVICT_NODEFS_INODES_FREE,
  CARP_EVICT_IMAGEFS_AVAILABLE,
  CARP_EVICT_IMAGEFS_INODES_FREE,
  CARP_EVICT_PID_AVAILABLE,
};
#define CARP_EVICT_NSIGNALS 6

struct carp_eviction_threshold {
  int set;
  int percent;   /* value is hundredths of a percent (10% = 1000) */
  int64_t value; /* else bytes (memory, fs) or a count (inodes, pids) */
};

struct carp_instance_family {
  const char *name;       /* interned */
  int64_t memory_per_cpu; /* bytes */
  uint32_t nsizes;        /* 0: the class's sizes */
  int32_t *sizes;
};

struct carp_custom_instance_type {
  const char *name;   /* interned */
  const char *family; /* interned; default "custom" */
  int32_t cpu;
  int64_t memory; /* bytes */
  int has_price;
  int64_t price_nano; /* price per hour in 1e-9 units */
};

struct carp_nodeclass_spec {
  struct carp_strlist regions; /* empty: every configured region */
  struct carp_strlist zones;   /* empty: every online host */
  /* template */
  const char *template_name; /* NULL when selecting by tags only */
  struct carp_strlist template_tags;
  enum carp_template_scope template_scope;
  /* clone */
  enum carp_clone_mode clone_mode;
  const char *clone_storage; /* NULL: the template's */
  enum carp_disk_format clone_format;
  int32_t max_concurrent_full_clones; /* default 1 */
  const char *resource_pool;          /* NULL: none */
  int has_vmid_range;
  int64_t vmid_min, vmid_max;
  int64_t boot_disk_size;       /* bytes; 0: the template's */
  const char *boot_disk_device; /* NULL: auto */
  const char *cpu_type;         /* NULL: the template's */
  /* network: has_network 0 keeps the template's interface untouched */
  int has_network;
  const char *net_interface; /* default "net0" */
  const char *net_bridge;    /* NULL: the template's */
  int32_t net_vlan;          /* 0: the template's */
  int net_firewall;          /* -1: the template's; else 0/1 */
  const char *net_model;     /* NULL: the template's */
  int32_t net_mtu;           /* 0: the template's */
  struct carp_strlist tags;  /* extra Proxmox tags */
  /* cloudInit */
  const char *ci_user; /* NULL: the image's default user */
  struct carp_strlist ci_ssh_keys;
  enum carp_ipv4_mode ci_ipv4;
  enum carp_ipv6_mode ci_ipv6;
  struct carp_strlist ci_nameservers;
  struct carp_strlist ci_search_domains;
  int ci_upgrade_packages; /* default 0 */
  /* bootstrap */
  enum carp_bootstrap_mode bootstrap_mode;
  const char *userdata_secret_name; /* NULL unless UserData */
  const char *userdata_secret_namespace;
  const char *userdata_secret_key; /* default "user-data" */
  const char *iso_storage;
  /* kubelet */
  int32_t max_pods;                      /* default 110 */
  struct carp_resources kube_reserved;   /* cpu, memory, ephemeral-storage */
  int64_t kube_reserved_pid;             /* 0 when unset */
  struct carp_resources system_reserved; /* cpu, memory, ephemeral-storage */
  int64_t system_reserved_pid;
  /* evictionHard; when the field is absent, the kubelet's defaults
   * (memory.available 100Mi, nodefs.available 10%, imagefs.available 15%,
   * nodefs.inodesFree 5%) and eviction_hard_defaulted = 1. */
  struct carp_eviction_threshold eviction_hard[CARP_EVICT_NSIGNALS];
  int eviction_hard_defaulted;
  /* instanceTypes */
  uint32_t nfamilies;
  struct carp_instance_family *families;
  uint32_t nsizes;
  int32_t *sizes;
  uint32_t ncustom;
  struct carp_custom_instance_type *custom;
  int32_t vm_memory_overhead; /* hundredths of a percent (7.5% = 750) */
  /* pricing, per hour, in 1e-9 units */
  int64_t price_per_cpu_nano; /* default 0.03 */
  int64_t price_per_gib_nano; /* default 0.004 */
  /* hostCapacity */
  int32_t cpu_overcommit;    /* hundredths (1 = 100) */
  int32_t memory_overcommit; /* hundredths */
  int64_t reserved_memory;   /* bytes, default 2Gi */
  enum carp_placement placement;
};

/* One instance type: a cell of the grid or a custom type. */
struct carp_instance_type {
  char name[96]; /* "<family>.<vCPU>VCPU-<GiB>GB" for grid types */
  char family[24];
  int32_t cpu;        /* vCPUs */
  int64_t memory;     /* VM memory, bytes */
  int64_t price_nano; /* per hour, 1e-9 units */
  double price;       /* price_nano / 1e9 */
  int custom;
};

struct carp_nodeclass_template {
  const char *region; /* interned */
  const char *zone;   /* the host a VM is cloned onto */
  int64_t vmid;
  const char *name;    /* NULL when unset */
  const char *node;    /* host holding the template */
  const char *storage; /* NULL when unset */
  int shared;
};

struct carp_nodeclass_status {
  struct carp_conditions conditions;
  int64_t observed_generation;
  char *spec_hash; /* NULL when unset */
  struct carp_strlist regions;
  struct carp_strlist zones;
  uint32_t ntemplates;
  struct carp_nodeclass_template *templates;
  uint32_t ninstance_types;
  struct carp_instance_type *instance_types;
};

struct carp_nodeclass {
  struct carp_objmeta meta; /* annotations: karpenter.sh/ and carpenter.dev/ */
  struct carp_nodeclass_spec spec;
  struct carp_nodeclass_status status;
  int valid;
  char *invalid_reason; /* NULL when valid */
};

extern const struct carp_kind carp_kind_proxmoxnodeclass;

/* Validates a ProxmoxNodeClass object (its JSON): every schema and CEL
 * rule of crds/carpenter.dev_proxmoxnodeclasses.yaml with its message.
 * Returns 0, or CARP_EINVALID with every problem in *reason. */
int carp_nodeclass_validate(yajl_val obj, char **reason);

/* The instance types the class offers: every family x size of the grid
 * (a family's own sizes, else the class's), in family order and ascending
 * size, then the custom types in order. Memory = size x memoryPerCPU;
 * price = vCPUs x perCPU + GiB x perGiB unless a custom type has its own.
 * Duplicates (by name) keep the first. *out is freed with carp_free. */
int carp_nodeclass_instance_types(const struct carp_nodeclass_spec *spec,
                                  struct carp_instance_type **out, size_t *n);
/* "<family>.<vCPU>VCPU-<memory in GiB, no trailing zeros>GB". */
void carp_instance_type_name(const char *family, int32_t cpu, int64_t memory,
                             char out[96]);
/* Capacity of a VM of that type: cpu, memory less vmMemoryOverhead,
 * ephemeral-storage = bootDisk.size (else template_disk, bytes), pods =
 * maxPods. */
void carp_nodeclass_capacity(const struct carp_nodeclass_spec *spec,
                             const struct carp_instance_type *it,
                             int64_t template_disk,
                             struct carp_resources *capacity);
/* Eviction thresholds as amounts: memory.available against memory and
 * nodefs.available against ephemeral-storage (a percentage of capacity,
 * rounded up). allocatable = capacity - kube_reserved - system_reserved -
 * this. */
void carp_nodeclass_eviction_threshold(const struct carp_nodeclass_spec *spec,
                                       const struct carp_resources *capacity,
                                       struct carp_resources *out);
/* Decimal text of a price in 1e-9 units, without trailing zeros ("0.092"). */
void carp_price_format(int64_t price_nano, char out[32]);

/* The drift hash of the spec fields that shape a new VM (template,
 * clone.mode, clone.storage, clone.format, bootDisk, cpu, network,
 * cloudInit, bootstrap, kubelet) plus, in UserData mode, the user-data
 * template text (NULL when not read). Leaves out regions, zones,
 * resourcePool, vmidRange, tags, instanceTypes, pricing, hostCapacity,
 * placementStrategy and clone.maxConcurrentFullClones. */
void carp_nodeclass_hash(const struct carp_nodeclass_spec *spec,
                         const char *userdata, size_t userdata_len,
                         char out[CARP_HASH_LEN]);

void carp_nodeclass_status_copy(struct carp_nodeclass_status *dst,
                                const struct carp_nodeclass_status *src);
void carp_nodeclass_status_cleanup(struct carp_nodeclass_status *st);
/* A JSON merge patch for the status subresource: conditions,
 * observedGeneration, specHash, regions, zones, templates, instanceTypes
 * (memory and price as strings); metadata.resourceVersion when rv is not
 * NULL. */
int carp_nodeclass_status_patch(const struct carp_nodeclass_status *st,
                                const char *rv, struct carp_buf *out);

void carp_strlist_cleanup(struct carp_strlist *l);
void carp_strlist_copy(struct carp_strlist *dst,
                       const struct carp_strlist *src);

#endif
