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
#include <yajl/yajl_tree.h>

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
/* Decoding answers: each decoder of a reply the provider reads, exposed so
 * test/fuzz/fuzz_pve.c reaches them as the provider does.                 */

struct carp_http_response;
/* client.c: an HTTP answer into r (status, err, data) and msg (the error
 * text; empty on success). Returns the parsed body for carp_json_free
 * after r->data is used (NULL when it was not JSON). */
yajl_val pve_answer_decode(const struct carp_http_response *resp,
                           const char *region, struct carp_pve_result *r,
                           struct carp_buf *msg);
/* task.c: a task's status answer: 1 while it runs, else 0 with *err (0
 * for OK or warnings) and *msg (the exit status or what was wrong). */
int pve_task_status_decode(yajl_val data, int *err, const char **msg);

/* ------------------------------------------------------------------------ */
/* Inventory (inventory.c)                                                  */

/* A host's status in /cluster/resources: "online", "offline", else
 * unknown (no stats from its pvestatd). */
enum pve_host_status {
  PVE_HOST_UNKNOWN = 0,
  PVE_HOST_ONLINE,
  PVE_HOST_OFFLINE,
};

struct pve_host {
  char name[64];
  int online; /* status == PVE_HOST_ONLINE */
  enum pve_host_status status;
  int maintenance; /* HA maintenance mode (hosts.c) */
  int has_hastate; /* the entry carried hastate (PVE 8.3+ with HA active) */
  int64_t maxcpu;  /* threads */
  int64_t maxmem;  /* bytes */
  double cpu;      /* load, 0..1 */
};

struct pve_guest {
  int64_t vmid;
  int lxc;
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
  int64_t uptime; /* seconds; 0 when not running */
};

struct pve_inventory {
  struct pve_host *hosts;
  size_t nhosts;
  int has_hastate; /* some host entry carried hastate */
  struct pve_guest *guests;
  size_t nguests;
  uint64_t fetched_ms; /* monotonic; 0: never */
};

/* Host devices of one device class of an instance type, as a VM gets them:
 * count devices of a PCI or USB resource mapping. */
#define PVE_MAX_TYPE_DEVS 4
struct pve_dev {
  char mapping[64];
  int usb;
  int32_t count;
  int pcie;
};

/* Capacity held in memory between the decision to create a VM and the
 * refresh that shows it running (or its rollback). */
struct pve_hold {
  int64_t vmid; /* 0 until the VMID is chosen */
  char host[64];
  int64_t cpu; /* vCPUs */
  int64_t mem; /* bytes */
  struct pve_dev devs[PVE_MAX_TYPE_DEVS];
  size_t ndevs;
  int done; /* the create finished; drop once a refresh shows the VM */
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

/* Recent durations of one kind of task (taskpace.c). */
#define PVE_PACE_KINDS   32
#define PVE_PACE_SAMPLES 8
struct pve_pace {
  char key[80];
  uint32_t ms[PVE_PACE_SAMPLES];
  uint8_t n, next;
  uint8_t patient;  /* tasks left whose first poll waits the whole quickest */
  uint16_t waiting; /* tasks of the kind being waited for */
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

/* A resource mapping of a region (/cluster/mapping/pci or /usb): one
 * device per map entry (qemu-server gives a VM the first entry of its host
 * that is free), with the entry's host, path and vendor:device id. */
struct pve_mapping_dev {
  char host[64];
  char path[128];
  char id[16];
};
struct pve_mapping {
  char id[64];
  int usb;
  struct pve_mapping_dev *devs;
  size_t ndevs;
};

/* A host device a VM's config names: hostpciN / usbN with mapping=, or a
 * raw host device (host=, the default key) that may be a mapping's entry.
 * Kept for the VM's current boot: its devices change only when it starts
 * again. */
struct pve_devref {
  char mapping[64]; /* "" for a raw device */
  char path[128];   /* the raw device ("" with a mapping) */
  int usb;
};
struct pve_vmdevs {
  int64_t vmid;
  char node[64];
  int64_t boot_s; /* monotonic seconds it booted at (now - uptime) */
  struct pve_devref *refs;
  size_t nrefs;
};

#define PVE_DEV_CALLS 4 /* config reads of one refresh in flight at once */
/* How long /cluster/nextid's answer serves as the floor of new VMIDs. */
#define PVE_NEXTID_FRESH_MS (60 * 1000)

struct pve_region {
  struct pve_provider *pp;
  char name[64];
  struct carp_pve_client *client;
  struct pve_inventory inv;
  int status; /* 0, CARP_EAGAIN before the first refresh, or an error */
  char message[512];
  int perms_checked;
  struct carp_pve_call *refresh_call;
  int refresh_stage; /* 0 resources, 1-2 permissions, 3 HA status */
  struct pve_waiter *waiters;
  struct pve_hold *holds;
  int64_t *gone; /* deleted VMIDs still shown running by the last refresh */
  size_t ngone;
  struct pve_recent *recent;
  size_t nrecent;
  int64_t cursor; /* next VMID to try within a range */
  /* vmid.c: /cluster/nextid's last answer, and the creates waiting for
   * the call in flight. */
  int64_t nextid_floor;
  uint64_t nextid_at_ms; /* monotonic; 0: never */
  struct carp_pve_call *nextid_call;
  struct pve_waiter *nextid_waiters;
  char nextid_error[256];
  struct pve_pace paces[PVE_PACE_KINDS];
  size_t npaces;
  struct pve_desc *descs;
  size_t ndescs;
  /* Host state over time (hosts.c). */
  struct pve_host_state *hstates;
  size_t nhstates;
  char (*ha_maint)[64]; /* hosts in maintenance per the last HA status */
  size_t nha_maint;
  uint64_t ha_fetched_ms; /* monotonic; 0: never */
  int ha_failing;         /* the last HA status call failed (logged once) */
  /* devices (devices.c): read only once a class with devices was seen */
  struct pve_mapping *maps;
  size_t nmaps;
  int maps_read;        /* the mappings were read at least once */
  unsigned maps_gen;    /* pp->want_gen when the mappings were last read */
  unsigned dev_gen;     /* pp->want_gen the refresh in flight reads for */
  char maps_error[256]; /* why they could not be read ("" when they were) */
  struct pve_vmdevs *vmdevs;
  size_t nvmdevs;
  int dev_stage; /* 0 idle, 1 mappings, 2 configs */
  struct pve_devcall {
    struct pve_region *r;
    struct carp_pve_call *call;
    int64_t vmid;
    char node[64];
    int64_t uptime;
    int usb; /* stage 1: which mapping list */
  } dev[PVE_DEV_CALLS];
  struct pve_mapping *dev_maps; /* stage 1: what was read so far */
  size_t dev_nmaps;
  int dev_read[2];   /* stage 1: pci, usb read */
  size_t dev_cursor; /* stage 2: next guest whose config may be needed */
  size_t dev_pending;
  int dev_result; /* the refresh's status, handed to the waiters */
};

void pve_inventory_free(struct pve_inventory *inv);
/* A /cluster/resources answer into inv (hosts with a name, guests with a
 * VMID > 0; other entries skipped). CARP_EPARSE, inv untouched, when data
 * is not a list. */
int pve_resources_parse(yajl_val data, struct pve_inventory *inv);
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
/* A VM deleted by Carpenter that the last listing still shows. */
int pve_region_is_gone(const struct pve_region *r, int64_t vmid);
/* The hold of a create in flight for vmid, or NULL. */
const struct pve_hold *pve_region_hold_of(const struct pve_region *r,
                                          int64_t vmid);
/* The refresh's last step (inventory.c calls it once the listing and the
 * permission check are done): the waiters get status. */
void pve_region_refresh_done(struct pve_region *r, int status);
/* Empties a waiter list (r->waiters, r->nextid_waiters), then calls each
 * waiter with err. */
void pve_waiters_wake(struct pve_waiter **list, int err);

/* ------------------------------------------------------------------------ */
/* Devices (devices.c)                                                      */

/* After the listing: when any class with devices was seen, reads the PCI
 * and USB mappings and the configs of running VMs on hosts in a wanted
 * mapping (configs are kept per boot), then ends the refresh with status. */
void pve_devices_refresh(struct pve_region *r, int status);
/* Cancels the device reads of a refresh (close). */
void pve_devices_cancel(struct pve_region *r);
void pve_devices_free(struct pve_region *r);
/* Parses a /cluster/mapping/pci or /usb answer into *out (n entries);
 * entries without an id are skipped. */
int pve_mappings_parse(yajl_val data, int usb, struct pve_mapping **out,
                       size_t *n);
void pve_mappings_free(struct pve_mapping *m, size_t n);
/* The mapped devices in a VM config (hostpciN, usbN with mapping=). */
size_t pve_config_devrefs(yajl_val conf, struct pve_devref **out);
/* Devices of mapping (id, usb) on host: in the mapping, and free of
 * running VMs and creates in flight. *total is the mapping's count there;
 * -1 when the region has no such mapping. */
int32_t pve_devices_free_on(const struct pve_region *r, const char *host,
                            const char *mapping, int usb, int32_t *total);
/* Whether host h can give a VM of type t its devices: 1, or why not (and
 * a message in why, which may be NULL), the more telling the higher. */
#define PVE_DEVS_NO_MAPPING (-2) /* the region has no such mapping */
#define PVE_DEVS_NONE_HERE  (-1) /* the mapping has no device on host */
#define PVE_DEVS_BUSY       0    /* not enough of them free */
struct pve_type;
int pve_type_devices_fit(const struct pve_region *r, const char *host,
                         const struct pve_type *t, char *why, size_t why_size);
/* Whether the devices of running VM vmid are known (its config read). */
int pve_devices_known(const struct pve_region *r, int64_t vmid);
/* A spec or class names device mapping (id, usb): refreshes read it. */
void pve_devices_want(struct pve_provider *pp, const char *mapping, int usb);

/* ------------------------------------------------------------------------ */
/* Host state: maintenance and since when (hosts.c)                         */

/* A host as zone_status reports it, kept across refreshes. */
struct pve_host_state {
  char name[64];
  enum carp_zone_state state;
  int64_t since_ms; /* wall clock: first refresh that showed the state */
};

/* Whether a placement may use the host: online and not in maintenance. */
int pve_host_open(const struct pve_host *h);
/* The hosts in HA maintenance mode in an answer of GET
 * /cluster/ha/status/current, into out (size n, a host per entry); returns
 * how many, or CARP_EPARSE when data is not the documented list. */
int pve_ha_maintenance_parse(yajl_val data, char (*out)[64], size_t n);
/* Whether this refresh should also read /cluster/ha/status/current: the
 * listing carried no hastate and the last HA read is older than the
 * refresh interval. */
int pve_ha_due(const struct pve_region *r);
/* The HA read's outcome (data NULL with err set on failure). */
void pve_ha_result(struct pve_region *r, int err, const char *message,
                   yajl_val data);
/* At the end of every successful refresh: applies HA maintenance to the
 * new inventory and moves each host's state and since (wall ms now). */
void pve_hosts_update(struct pve_region *r, int64_t now_ms);
const struct pve_host_state *pve_region_host_state(const struct pve_region *r,
                                                   const char *name);
void pve_hosts_free(struct pve_region *r);

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
/* Task pacing (taskpace.c)                                                 */

/* The kind of the task a UPID names: its type, and a clone's source. */
void pve_pace_key(const char *upid, char *out, size_t size);
/* When to poll a task of this kind first: first_ms until some have
 * succeeded, then nine tenths of the quickest recent one, or the whole of
 * it for a few tasks after such a poll came too early (not sooner than
 * first_ms). */
uint64_t pve_pace_first_ms(const struct pve_region *r, const char *key,
                           uint64_t first_ms);
/* A task of this kind succeeded, seen stopped ms after it was started. */
void pve_pace_learn(struct pve_region *r, const char *key, uint64_t ms);
/* A wait for a task of this kind starts: when to poll it first. *follow is
 * set when nothing is known of the kind yet and another task of it is being
 * waited for: this one polls at the slow pace until that one teaches. */
uint64_t pve_pace_begin(struct pve_region *r, const char *key,
                        uint64_t first_ms, int *follow);
/* That wait ended, ms after it began (ok: the task succeeded); first_at is
 * what pve_pace_begin returned (0 for a follower). */
void pve_pace_end(struct pve_region *r, const char *key, int ok, uint64_t ms,
                  uint64_t first_at, uint64_t first_ms);

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
/* A VM on the host went away: what it held is free again, so nothing
 * cached for the host still holds (availability is computed anew). */
void pve_ice_forget_zone(struct pve_provider *pp, const char *region,
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
  uint64_t task_first_at; /* its first poll (taskpace.c), 0: following */
  pve_step_k k_step;
  pve_fn k_timer;
  int step_err;  /* status handed to a deferred k_step */
  int slot_held; /* holds the full-clone slot slot_key */
  /* VMID allocation (vmid.c) */
  struct pve_region *vmid_region;
  const struct pve_vm_spec *vmid_spec;
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
/* Makes op->waiter a waiter of r's (the caller puts it on one of r's
 * lists): when woken, k runs from the loop with the status; a cancel takes
 * it off the list (pve_region_unwait). */
void pve_op_wait_region(struct pve_op *op, struct pve_region *r, pve_step_k k);
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
  size_t rank; /* order to try (the claim's list); then price */
  struct pve_dev devs[PVE_MAX_TYPE_DEVS];
  size_t ndevs;
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

#define PVE_HOST_FIGURES 8

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
  /* Device mappings some class uses (refreshes read only these hosts'
   * VM configs). */
  struct pve_devref *want;
  size_t nwant;
  unsigned want_gen; /* bumped by each new wanted mapping */
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
/* The same, without caching anything: for a VM that exists already
 * (adoption), which counts against the very host it is on. */
int pve_place_quiet(struct pve_provider *pp, const struct pve_vm_spec *s,
                    const char *only_region, const char *only_zone,
                    struct pve_choice *out, char *msg, size_t msg_size);
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
/* The devices of it (resolved from the class's device classes) into t. */
void pve_type_devices(const struct carp_nodeclass_spec *spec,
                      const struct carp_instance_type *it, struct pve_type *t);
/* The labels of it (carpenter.dev/instance-gpu-*): defined ones, and with
 * absent set the GPU keys a type without GPUs never has. */
size_t pve_type_labels(const struct carp_nodeclass_spec *spec,
                       const struct carp_instance_type *it, int with_absent,
                       struct carp_provider_label *out, size_t max);

/* Builds the user-data variables and renders (userdata.c). */
struct pve_type;
int pve_userdata_files(const struct pve_vm_spec *s, const char *provider_id,
                       const char *region, const char *zone,
                       const struct pve_type *t, int64_t vmid, const char *uuid,
                       const char *mac, struct carp_buf *iso, char **err);

#endif
