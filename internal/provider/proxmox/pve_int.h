/* pve_int.h: what the files of the Proxmox provider share - the provider
 * and region state, the cached inventory of hosts and guests, the plain
 * "VM spec" a create works from (built from a NodeClass and a NodeClaim by
 * adapter.c, so the state machines never look at Kubernetes objects), and
 * the small operation framework every asynchronous call (create, delete,
 * get, list) is built on: one pending step at a time, a timer for delays
 * and deferrals, cancellation that always ends in exactly one callback. */
#ifndef CARP_PVE_INT_H
#define CARP_PVE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/api_types.h"
#include "carpenter/logfold.h"
#include "carpenter/map.h"
#include "carpenter/provider.h"
#include "carpenter/pve.h"

#define PVE_LOG "provider.proxmox"

struct pve_provider;
struct pve_region;
struct pve_op;

/* ------------------------------------------------------------------------ */
/* Inventory (inventory.c)                                                  */

struct pve_host {
  char name[64];
  int online;
  int64_t maxcpu; /* threads */
  int64_t maxmem; /* bytes */
  double cpu;     /* load, 0..1 */
};

struct pve_guest {
  int64_t vmid;
  char node[64];
  char name[128];
  char status[16];
  int template_;
  int64_t maxcpu;  /* vCPUs (from stats; 0 until the first push) */
  int64_t maxmem;  /* bytes */
  int64_t maxdisk; /* bytes */
  char tags[512];  /* as Proxmox returns them (';'-joined) */
  char lock[24];
  char pool[64];
};

struct pve_inventory {
  struct pve_host *hosts;
  size_t nhosts;
  struct pve_guest *guests;
  size_t nguests;
  uint64_t fetched_ms; /* monotonic; 0: never */
};

/* Capacity held in memory between the decision to create a VM and the
 * refresh that shows it running (or its rollback). */
struct pve_hold {
  int64_t vmid; /* 0 until the VMID is chosen */
  char host[64];
  int64_t cpu; /* vCPUs */
  int64_t mem; /* bytes */
  int done;    /* the create finished; drop once a refresh shows the VM */
  uint64_t done_ms;
  struct pve_hold *next;
};

struct pve_waiter {
  void (*cb)(struct pve_waiter *w, int err);
  struct pve_waiter *next;
};

struct pve_recent {
  int64_t vmid;
  uint64_t until_ms;
};

/* Description fields of a VM, cached by VMID for list(). */
struct pve_desc {
  int64_t vmid;
  char nodeclaim[128];
  char uid[64];
  char nodepool[128];
  char nodeclass[128];
  char cluster[64];
  char image[96]; /* <region>/<template vmid> */
  char sku[96];   /* instance type from smbios1 */
  int32_t cpu;
  int64_t memory;
  int seen; /* mark for pruning */
};

struct pve_region {
  struct pve_provider *pp;
  char name[64];
  struct carp_pve_client *client;
  struct pve_inventory inv;
  int status; /* 0, CARP_EAGAIN before the first refresh, or an error */
  char message[512];
  int perms_checked;
  struct carp_pve_call *refresh_call;
  int refresh_stage; /* 0 resources, 1 permissions */
  struct pve_waiter *waiters;
  struct pve_hold *holds;
  int64_t *gone; /* deleted VMIDs still shown running by the last refresh */
  size_t ngone;
  struct pve_recent *recent;
  size_t nrecent;
  int64_t cursor; /* next VMID to try within a range */
  struct pve_desc *descs;
  size_t ndescs;
};

void pve_inventory_free(struct pve_inventory *inv);
/* Starts a refresh of /cluster/resources (coalesced: a refresh in flight
 * is joined) and calls w->cb (w may be NULL) when it ends, never from
 * inside this call. Returns 0, or an error when no request could be
 * started (w is then not queued). */
int pve_region_refresh_start(struct pve_region *r, struct pve_waiter *w);
/* Removes a waiter that has not been called. */
void pve_region_unwait(struct pve_region *r, struct pve_waiter *w);
int pve_region_fresh(const struct pve_region *r, uint64_t max_age_ms);
const struct pve_guest *pve_region_guest(const struct pve_region *r,
                                         int64_t vmid);
const struct pve_host *pve_region_host(const struct pve_region *r,
                                       const char *name);
/* Whether a ';'/','/space separated tag list holds tag (case-insensitive). */
int pve_tags_have(const char *tags, const char *tag);

/* Host capacity in the class's terms (ratios in hundredths). */
struct pve_capacity {
  int64_t cpu_free; /* vCPUs */
  int64_t mem_free; /* bytes */
  int carp_vms;     /* VMs with the cluster tag, plus creates in flight */
};
void pve_region_capacity(const struct pve_region *r, const struct pve_host *h,
                         int32_t cpu_over, int32_t mem_over,
                         int64_t reserved_mem, struct pve_capacity *out);
struct pve_hold *pve_hold_add(struct pve_region *r, const char *host,
                              int64_t cpu, int64_t mem);
void pve_hold_release(struct pve_region *r, struct pve_hold *h);
/* A VM was deleted: stop counting it before the next refresh. */
void pve_region_forget(struct pve_region *r, int64_t vmid);

/* Templates. */
struct pve_template_query {
  const char *name;        /* NULL: any */
  const char *const *tags; /* all must match */
  size_t ntags;
  int shared; /* scope Shared */
};
/* The template to clone for host zone: PerHost, the highest VMID on that
 * host; Shared, the highest VMID anywhere. NULL when none. */
const struct pve_guest *pve_template_for(const struct pve_region *r,
                                         const struct pve_template_query *q,
                                         const char *zone);

/* ------------------------------------------------------------------------ */
/* Descriptions (adopt.c)                                                   */

/* Builds the VM description. */
void pve_description_build(struct carp_buf *out, const char *nodeclaim,
                           const char *uid, const char *nodepool,
                           const char *nodeclass, const char *cluster,
                           const char *image);
/* Reads "key: value" lines into d (fields not found stay ""). */
void pve_description_parse(const char *text, struct pve_desc *d);
/* smbios1 sku (base64 instance type) into out; "" when absent. */
void pve_smbios_sku(const char *smbios1, char *out, size_t size);
/* A property of a property string ("uuid" of smbios1); "" when absent. */
void pve_prop_get(const char *propstr, const char *key, char *out, size_t size);

/* ------------------------------------------------------------------------ */
/* VMIDs (vmid.c)                                                           */

void pve_vmid_mark(struct pve_region *r, int64_t vmid);
int pve_vmid_recent(struct pve_region *r, int64_t vmid);
struct pve_vm_spec;
/* Picks a free VMID for a new VM of spec in region r: from vmidRange (or
 * /cluster/nextid), skipping VMIDs the inventory shows and those used in
 * the last few minutes, each confirmed free with /cluster/nextid?vmid=N.
 * k gets 0 and the VMID (already marked used), or an error and message. */
void pve_vmid_alloc(struct pve_op *op, struct pve_region *r,
                    const struct pve_vm_spec *s,
                    void (*k)(struct pve_op *op, int err, int64_t vmid,
                              const char *msg));

/* ------------------------------------------------------------------------ */
/* The ICE cache and clone slots (provider.c)                               */

void pve_ice_add(struct pve_provider *pp, const char *type, const char *region,
                 const char *zone);
int pve_ice_has(struct pve_provider *pp, const char *type, const char *region,
                const char *zone);

struct pve_slot_waiter {
  struct pve_slot_waiter *next;
  void (*cb)(struct pve_slot_waiter *w);
};
/* Takes a full-clone slot for key now (returns 1) or queues w (returns 0;
 * w->cb runs from a timer when a slot frees). */
int pve_slot_acquire(struct pve_provider *pp, const char *key, int limit,
                     struct pve_slot_waiter *w);
void pve_slot_release(struct pve_provider *pp, const char *key);
void pve_slot_unwait(struct pve_provider *pp, const char *key,
                     struct pve_slot_waiter *w);

/* ------------------------------------------------------------------------ */
/* Operations (op.c)                                                        */

enum pve_wait {
  PVE_W_NONE = 0,
  PVE_W_CALL,
  PVE_W_TASK,
  PVE_W_REFRESH,
  PVE_W_SLOT,
  PVE_W_RESERVE,
  PVE_W_TIMER,
};

struct pve_reserve_token {
  struct pve_op *op; /* NULL once the op gave up waiting */
};

typedef void (*pve_call_k)(struct pve_op *op, const struct carp_pve_result *r);
typedef void (*pve_task_k)(struct pve_op *op, int err, const char *msg);
typedef void (*pve_step_k)(struct pve_op *op, int err);
typedef void (*pve_fn)(struct pve_op *op);

struct pve_op {
  struct pve_provider *pp;
  struct pve_op *prev, *next;
  uv_timer_t timer;
  enum pve_wait wait;
  struct carp_pve_call *call;
  struct carp_pve_task_wait *task;
  struct pve_region *wait_region;
  struct pve_waiter waiter;
  struct pve_slot_waiter slot_waiter;
  char slot_key[192];
  struct pve_reserve_token *token;
  pve_call_k k_call;
  pve_task_k k_task;
  struct pve_region *task_region; /* the task waited for, for metrics */
  char *task_upid;
  uint64_t task_start_ms;
  pve_step_k k_step;
  pve_fn k_timer;
  int step_err;  /* status handed to a deferred k_step */
  int slot_held; /* holds the full-clone slot slot_key */
  /* VMID allocation (vmid.c) */
  struct pve_region *vmid_region;
  const struct pve_vm_spec *vmid_spec;
  int64_t vmid_cand;
  int vmid_attempts;
  void (*k_vmid)(struct pve_op *op, int err, int64_t vmid, const char *msg);
  int canceled;
  int finished;
  /* Delivers CARP_ECANCELED to the caller. */
  pve_fn on_canceled;
  /* Frees the op's own data (the op itself is freed by op.c). */
  pve_fn on_free;
};

void pve_op_init(struct pve_op *op, struct pve_provider *pp, pve_fn on_canceled,
                 pve_fn on_free);
/* Runs fn from the loop after ms. */
void pve_op_defer(struct pve_op *op, uint64_t ms, pve_fn fn);
/* One API call; k runs with the result (never when cancelled: then
 * on_canceled runs instead). Start errors are passed to k from a timer. */
void pve_op_call(struct pve_op *op, struct pve_region *r, const char *method,
                 const char *path, const struct carp_pve_form *params,
                 uint64_t timeout_ms, pve_call_k k);
void pve_op_upload(struct pve_op *op, struct pve_region *r, const char *path,
                   const char *const *fields, size_t nfields,
                   const char *filename, const void *data, size_t len,
                   pve_call_k k);
/* Waits for a task; timeout_ms is the deadline. */
void pve_op_task(struct pve_op *op, struct pve_region *r, const char *upid,
                 uint64_t timeout_ms, int stop_on_timeout, pve_task_k k);
/* Refreshes the region's inventory (k gets the refresh status). */
void pve_op_refresh(struct pve_op *op, struct pve_region *r, pve_step_k k);
/* Waits for a full-clone slot (k runs with 0 once it is held). */
void pve_op_slot(struct pve_op *op, const char *key, int limit, pve_step_k k);
/* Calls the reserve hook; k gets its status. */
void pve_op_reserve(struct pve_op *op, carp_provider_reserve_fn fn, void *arg,
                    const struct carp_nodeclaim *nc,
                    const struct carp_provider_reservation *res, pve_step_k k);
void pve_op_cancel(struct pve_op *op);
/* The op delivered its callback: unlink and free it (asynchronously). */
void pve_op_done(struct pve_op *op);

/* ------------------------------------------------------------------------ */
/* The plain VM spec (adapter.c builds it)                                  */

struct pve_type {
  char name[96];
  char family[24];
  int32_t cpu;
  int64_t memory; /* bytes */
  double price;
};

struct pve_vm_spec {
  /* identity */
  char *name;
  char *uid;
  char *nodepool;
  char *nodeclass;
  /* candidates, cheapest first (filtered by the claim's requirements and
   * requests) */
  struct pve_type *types;
  size_t ntypes;
  /* where: allowed regions and zones (NULL-free lists; n == 0: any) */
  char **regions;
  size_t nregions;
  char **zones;
  size_t nzones;
  /* the claim's requirements (borrowed; region and zone keys are read) */
  const struct carp_requirement *reqs;
  size_t nreqs;
  /* template */
  char *tmpl_name;
  char **tmpl_tags;
  size_t ntmpl_tags;
  int tmpl_shared;
  /* clone */
  int full;
  char *clone_storage;
  char *clone_format;
  int max_full_clones;
  char *pool;
  int has_range;
  int64_t vmid_min, vmid_max;
  /* the VM */
  int64_t boot_disk_size; /* bytes; 0: keep */
  char *boot_disk_device;
  char *cpu_type;
  int has_net;
  char *net_iface;
  char *net_bridge;
  int32_t net_vlan;
  int net_firewall; /* -1 keep */
  char *net_model;
  int32_t net_mtu;
  char **tags;
  size_t ntags;
  /* cloud-init */
  char *ci_user;
  char **ssh_keys;
  size_t nssh_keys;
  int ipv4_none;
  int ipv6; /* 0 none, 1 dhcp, 2 slaac */
  char **nameservers;
  size_t nnameservers;
  char **search;
  size_t nsearch;
  int ci_upgrade;
  /* bootstrap */
  int userdata_mode;
  char *userdata;
  size_t userdata_len;
  char *iso_storage;
  char *var_labels;
  char *var_taints;
  int32_t max_pods;
  char *var_kube_reserved;
  char *var_system_reserved;
  char *var_eviction_hard;
  /* host capacity */
  int32_t cpu_over; /* hundredths */
  int32_t mem_over;
  int64_t reserved_mem;
  int placement; /* enum carp_placement */
};

void pve_vm_spec_free(struct pve_vm_spec *s);
char **pve_strv_dup(const char *const *v, size_t n);
void pve_strv_free(char **v, size_t n);

/* ------------------------------------------------------------------------ */
/* The provider                                                             */

struct pve_ice {
  char key[256];
  uint64_t until_ms;
};

struct pve_slot {
  char key[192];
  int active;
  struct pve_slot_waiter *head, *tail;
  struct pve_slot *next;
};

/* A streamed host figure (metrics.c). */
struct pve_stream_arg {
  struct pve_provider *pp;
  int fig;
};

#define PVE_HOST_FIGURES 6

struct pve_provider {
  struct carp_provider base;
  uv_loop_t *loop;
  struct carp_pve_provider_options o;
  struct carp_pve_config config;
  char cluster[64];
  char cluster_tag[80]; /* carpenter-<cluster> */
  struct pve_region *regions;
  size_t nregions;
  struct carp_map ice;
  struct carp_logfold fold; /* refused creates, per reason and class */
  struct pve_slot *slots;
  uv_timer_t refresh_timer;
  uv_timer_t slot_timer;
  struct pve_op *ops;
  size_t nops; /* ops not yet freed (including ones closing their timer) */
  int closing;
  int clients_open;
  int handles_open;
  void (*close_cb)(void *arg);
  void *close_arg;
  /* The Proxmox view's metrics (metrics.c); NULL without a registry. */
  struct carp_metric *m_streams[PVE_HOST_FIGURES + 2];
  size_t nstreams;
  struct pve_stream_arg m_figs[PVE_HOST_FIGURES];
  struct carp_metric *m_tasks;
  struct carp_metric *m_task_duration;
};

/* metrics.c: registers the families (reg may be NULL), stops the streamed
 * ones before the provider goes, counts and times a finished task. */
struct carp_metrics;
void pve_metrics_init(struct pve_provider *pp, struct carp_metrics *reg);
void pve_metrics_detach(struct pve_provider *pp);
void pve_metrics_task(struct pve_provider *pp, const char *region,
                      const char *upid, int err, double seconds);

struct pve_region *pve_region_find(struct pve_provider *pp, const char *name);
/* The template each usable host of a class would clone now (adapter.c),
 * for the class's status; strings interned. */
struct carp_nodeclass_template;
int pve_templates(struct pve_provider *pp, const struct carp_nodeclass *nc,
                  struct carp_nodeclass_template **out, size_t *n);
/* The op list became empty or a handle closed: finish a pending close. */
void pve_provider_maybe_closed(struct pve_provider *pp);

/* create.c / delete.c / get and list (adopt.c) */
int pve_create_start(struct pve_provider *pp, struct pve_vm_spec *spec,
                     const struct carp_nodeclaim *claim, const char *annotation,
                     carp_provider_reserve_fn reserve, void *reserve_arg,
                     carp_provider_create_cb cb, void *arg,
                     struct pve_op **out);
int pve_delete_start(struct pve_provider *pp, const char *region, int64_t vmid,
                     const char *uid, carp_provider_done_cb cb, void *arg,
                     struct pve_op **out);
int pve_get_start(struct pve_provider *pp, const char *region, int64_t vmid,
                  carp_provider_get_cb cb, void *arg, struct pve_op **out);
int pve_list_start(struct pve_provider *pp, carp_provider_list_cb cb, void *arg,
                   struct pve_op **out);

/* Placement (instancetypes.c): whether a host fits cpu/mem; the chosen
 * (type index, region, host) for a spec, skipping ICE-cached offerings. */
int pve_host_usable(const struct pve_region *r, const struct pve_vm_spec *s,
                    const struct pve_host *h);
struct pve_choice {
  size_t type;
  struct pve_region *region;
  const struct pve_host *host;
  const struct pve_guest *tmpl;
};
/* Returns 0 and *out, or CARP_EINSUFFICIENT_CAPACITY (with every eligible
 * but full offering added to the ICE cache and a message in msg), or
 * CARP_ENODECLASS_NOT_READY when no allowed host has the template. only_region
 * / only_zone restrict the search (adoption); only_type selects a type by
 * name when set. */
int pve_place(struct pve_provider *pp, const struct pve_vm_spec *s,
              const char *only_region, const char *only_zone,
              const char *only_type, struct pve_choice *out, char *msg,
              size_t msg_size);
int pve_zone_allowed(const struct pve_vm_spec *s, const char *region,
                     const char *zone);
/* One offering per usable (region, zone) of the spec for type t. */
size_t pve_offerings(struct pve_provider *pp, const struct pve_vm_spec *s,
                     const struct pve_type *t,
                     struct carp_provider_offering **out);

/* An instance type of a class as the provider offers it (adapter.c):
 * name, shape, price, capacity and allocatable (bootDisk.size, else
 * template_disk bytes, as ephemeral storage); no offerings. */
struct carp_nodeclass_spec;
struct carp_instance_type;
void pve_type_fill(const struct carp_nodeclass_spec *spec,
                   const struct carp_instance_type *it, int64_t template_disk,
                   struct carp_provider_instance_type *o);

/* Builds the user-data variables and renders (userdata.c). */
struct pve_type;
int pve_userdata_files(const struct pve_vm_spec *s, const char *provider_id,
                       const char *region, const char *zone,
                       const struct pve_type *t, int64_t vmid, const char *uuid,
                       const char *mac, struct carp_buf *iso, char **err);

#endif
