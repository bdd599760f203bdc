/* Module provider (internal/provider). The cloud provider interface, modelled
 * on Karpenter's CloudProvider (pkg/cloudprovider/types.go): a vtable that the
 * lifecycle, termination, garbage-collection, provisioning and drift code call
 * without knowing which provider is behind it. Two implementations exist:
 * Proxmox VE (include/carpenter/pve.h) and an in-memory fake for controller
 * tests (carp_fake_provider_new below).
 *
 * Calls go through the carp_provider_* functions, which time every call
 * into karpenter_cloudprovider_duration_seconds and count failures into
 * karpenter_cloudprovider_errors_total (labels controller, method,
 * provider[, error]).
 *
 * Asynchronous calls follow libuv's rules: when the start function returns
 * an error no callback runs; otherwise the callback runs exactly once,
 * never from inside the start function. carp_provider_cancel() makes a
 * pending call finish with CARP_ECANCELED. A cancelled create leaves the
 * VM as it is (it is adopted by the next create of the same NodeClaim);
 * nothing is rolled back.
 *
 * Errors are negative codes with a typed meaning (Karpenter's error types):
 *   CARP_EINSUFFICIENT_CAPACITY  InsufficientCapacityError: no allowed host
 *                                fits the VM; the NodeClaim is deleted and
 *                                its pods tried again elsewhere.
 *   CARP_ENODECLASS_NOT_READY    NodeClassNotReadyError.
 *   CARP_ENOTFOUND               NodeClaimNotFoundError: the VM is gone
 *                                (delete: or out of reach on an offline
 *                                host, see carp_provider_done_cb).
 *   carp_provider_error_transient() true: retry later (network, 5xx,
 *                                locks, timeouts).
 *   anything else from create    CreateError: struct carp_provider_error
 *                                carries the Launched condition reason
 *                                (CloneFailed, ConfigureFailed, StartFailed,
 *                                UserDataRenderFailed, LaunchFailed) and a
 *                                message. */
#ifndef CARP_PROVIDER_H
#define CARP_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct carp_clock;

#include "carpenter/api_types.h"

struct carp_metrics;
struct carp_metric;
struct carp_nodeclaim;
struct carp_nodeclass;

/* The write-ahead annotation on a NodeClaim: "<region>/<zone>/<vmid>",
 * written (by the lifecycle controller, through the reserve hook) before
 * the VM is cloned. */
#define CARP_ANN_VM "carpenter.dev/vm"

#define CARP_CAPACITY_TYPE_ON_DEMAND "on-demand"

/* Launched=Unknown reasons of a failed create (docs/api.md). */
#define CARP_REASON_INSUFFICIENT_CAPACITY  "InsufficientCapacity"
#define CARP_REASON_NODECLASS_NOT_READY    "NodeClassNotReady"
#define CARP_REASON_CLONE_FAILED           "CloneFailed"
#define CARP_REASON_CONFIGURE_FAILED       "ConfigureFailed"
#define CARP_REASON_START_FAILED           "StartFailed"
#define CARP_REASON_USERDATA_RENDER_FAILED "UserDataRenderFailed"
#define CARP_REASON_LAUNCH_FAILED          "LaunchFailed"

/* Drift reasons from carp_provider_is_drifted ("" when not drifted). */
#define CARP_DRIFT_NODECLASS        "NodeClassDrifted"
#define CARP_DRIFT_TEMPLATE         "TemplateDrifted"
#define CARP_DRIFT_HOST_MAINTENANCE "HostMaintenance"

/* The reason of a delete that answers CARP_ENOTFOUND because the VM's host
 * is offline (the VM may still exist; see carp_provider_done_cb). */
#define CARP_REASON_HOST_OFFLINE "HostOffline"

/* A failed call: the code, the condition reason and a human message. */
struct carp_provider_error {
  int code;        /* 0 or negative */
  char reason[40]; /* CamelCase; "" when code is 0 */
  char message[512];
};

/* A label of an instance type beyond the standard ones (its GPUs): key =
 * value, or, with absent set, a key nodes of the type never have (the
 * scheduler reads it as DoesNotExist). */
struct carp_provider_label {
  char key[64];
  char value[64];
  int absent;
};
#define CARP_PROVIDER_MAX_LABELS 8

/* One VM as the provider sees it. */
struct carp_provider_instance {
  char provider_id[128]; /* proxmox://<region>/<vmid> */
  char region[64];
  char zone[64]; /* the Proxmox host */
  int64_t vmid;
  char name[128];         /* VM name = NodeClaim name */
  char status[16];        /* running, stopped, unknown */
  char instance_type[96]; /* "" when unknown (list/get of a bare VM) */
  char family[24];
  int32_t cpu;            /* vCPUs */
  int64_t memory;         /* VM memory, bytes */
  char capacity_type[16]; /* "on-demand" */
  char image_id[96];      /* "<region>/<template vmid>", "" when unknown */
  /* From the VM's description ("" when absent). */
  char nodeclaim[128];
  char nodeclaim_uid[64];
  char nodepool[128];
  char nodeclass[128];
  char cluster[64];
  /* create only: the node's estimated capacity and allocatable (extended
   * resources of its devices included), and the labels of its type
   * (defined ones only). */
  struct carp_resources capacity;
  struct carp_resources allocatable;
  struct carp_provider_label labels[CARP_PROVIDER_MAX_LABELS];
  size_t nlabels;
};

/* An offering: an instance type in one (region, zone). */
struct carp_provider_offering {
  char region[64];
  char zone[64];
  const char *capacity_type; /* static "on-demand" */
  double price;
  int available; /* the host fits the type and no ICE is cached */
};

struct carp_provider_instance_type {
  char name[96];
  char family[24];
  int32_t cpu;
  int64_t memory; /* VM memory, bytes */
  double price;
  const char *arch; /* static "amd64" */
  const char *os;   /* static "linux" */
  struct carp_resources capacity;
  struct carp_resources kube_reserved;
  struct carp_resources system_reserved;
  struct carp_resources eviction_threshold;
  struct carp_resources allocatable;
  struct carp_provider_label labels[CARP_PROVIDER_MAX_LABELS];
  size_t nlabels;
  size_t nofferings;
  struct carp_provider_offering *offerings;
};

struct carp_provider_instance_types {
  size_t n;
  struct carp_provider_instance_type *v;
};

/* Frees the offerings and the capacity and allocatable of every type. */
void carp_provider_instance_types_free(struct carp_provider_instance_types *t);

/* --- the write-ahead hook ------------------------------------------------ */

struct carp_provider_reservation {
  const char *region;
  const char *zone;
  int64_t vmid;
  const char *value; /* "<region>/<zone>/<vmid>", the annotation's value */
  /* The instance planned (type, size, zone): the controller records its
   * labels with the annotation. NULL when not known. */
  const struct carp_provider_instance *inst;
};

/* The lifecycle controller's answer: 0 once the annotation is stored, or a
 * negative error (the create then fails with it and nothing is cloned).
 * Must be called exactly once per reserve call, from the loop's thread,
 * now or later. */
typedef void (*carp_provider_reserved_cb)(void *token, int status);
/* Called by create before each clone with the VMID and host chosen. The
 * controller writes CARP_ANN_VM = r->value on the NodeClaim (with a
 * resourceVersion precondition) and calls done(token, 0) when it is
 * stored. May be called again for the same NodeClaim when the VMID turned
 * out to be taken. r's strings are valid only during the call. */
typedef void (*carp_provider_reserve_fn)(
    const struct carp_nodeclaim *nc, const struct carp_provider_reservation *r,
    carp_provider_reserved_cb done, void *token, void *arg);

/* --- requests --------------------------------------------------------------
 */

struct carp_provider_create_req {
  const char *controller; /* metric label; NULL: "" */
  /* Must stay valid until the callback. The NodeClaim's requirements pick
   * instance types, regions and zones; its CARP_ANN_VM annotation, when
   * present, makes create resume that VM (adoption) instead of cloning a
   * new one. */
  const struct carp_nodeclaim *nodeclaim;
  const struct carp_nodeclass *nodeclass;
  /* Bootstrap mode UserData: the Secret's user-data template (the
   * controller reads the Secret). Copied. */
  const char *userdata;
  size_t userdata_len;
  carp_provider_reserve_fn reserve; /* required */
  void *reserve_arg;
};

struct carp_provider_delete_req {
  const char *controller;
  const char *provider_id; /* proxmox://<region>/<vmid> */
  /* When set, a VM whose description names another NodeClaim UID is not
   * touched (reported as CARP_ENOTFOUND): guards a NodeClaim that only
   * carries the write-ahead annotation. */
  const char *nodeclaim_uid;
};

struct carp_provider;
struct carp_provider_op; /* a pending asynchronous call */

typedef void (*carp_provider_create_cb)(
    int status, const struct carp_provider_instance *inst,
    const struct carp_provider_error *err, void *arg);
/* Delete: 0 = the VM was deleted by this call, CARP_ENOTFOUND = it is
 * gone (the lifecycle controller repeats delete until it sees this), or it
 * cannot be reached because its host (zone) is offline: then err->reason
 * is CARP_REASON_HOST_OFFLINE. Its NodeClaim may go all the same - the node
 * went with the host - and the VM, which no NodeClaim owns any more, is
 * left to the garbage collector's sweep once the host is back. */
typedef void (*carp_provider_done_cb)(int status,
                                      const struct carp_provider_error *err,
                                      void *arg);
typedef void (*carp_provider_get_cb)(int status,
                                     const struct carp_provider_instance *inst,
                                     const struct carp_provider_error *err,
                                     void *arg);
/* List: every VM this cluster manages in every region that answered;
 * err->code is nonzero when a region failed (its VMs are then missing,
 * and a garbage collector must not act on the result). VMs on an offline
 * host are listed too (status "unknown"; the description's fields only
 * when they were read before the host went away). */
typedef void (*carp_provider_list_cb)(int status,
                                      const struct carp_provider_instance *v,
                                      size_t n,
                                      const struct carp_provider_error *err,
                                      void *arg);

/* --- host (zone) state
 * --------------------------------------------------------
 */

/* What the provider's last view of a zone (a Proxmox host) says. A zone in
 * maintenance or offline gets no new VM and offers nothing to the
 * scheduler; VMs in maintenance are drifted (CARP_DRIFT_HOST_MAINTENANCE);
 * an offline zone's NodeClaims are replaced once it has been offline for
 * --host-offline-toleration (the nodeclaim.interruption controller). */
enum carp_zone_state {
  CARP_ZONE_UNKNOWN = 0, /* the provider cannot tell: its view of the region
                            failed or is not there yet, or the host's own
                            status is unknown */
  CARP_ZONE_READY,
  CARP_ZONE_MAINTENANCE, /* up, but being emptied (Proxmox HA maintenance) */
  CARP_ZONE_OFFLINE,     /* down (before maintenance when both hold) */
};

struct carp_provider_zone_status {
  enum carp_zone_state state;
  /* Wall-clock ms since when the provider has seen the zone in this state
   * (the first view that showed it; a provider restart starts over); 0
   * for CARP_ZONE_UNKNOWN. */
  int64_t since_ms;
};

/* "Unknown", "Ready", "Maintenance", "Offline". */
const char *carp_zone_state_name(enum carp_zone_state s);

/* --- the vtable --------------------------------------------------------------
 */

struct carp_provider_ops {
  const char *name; /* provider label: "proxmox", "fake" */
  int (*create)(struct carp_provider *p,
                const struct carp_provider_create_req *req,
                carp_provider_create_cb cb, void *arg,
                struct carp_provider_op **out);
  int (*del)(struct carp_provider *p,
             const struct carp_provider_delete_req *req,
             carp_provider_done_cb cb, void *arg,
             struct carp_provider_op **out);
  int (*get)(struct carp_provider *p, const char *provider_id,
             carp_provider_get_cb cb, void *arg, struct carp_provider_op **out);
  int (*list)(struct carp_provider *p, carp_provider_list_cb cb, void *arg,
              struct carp_provider_op **out);
  /* Synchronous, from the provider's cached view of its hosts: every
   * instance type of the class (available or not) with one offering per
   * usable (region, zone). */
  int (*instance_types)(struct carp_provider *p,
                        const struct carp_nodeclass *nc,
                        struct carp_provider_instance_types *out);
  /* Synchronous: *reason is "" or a drift reason (static string). */
  int (*is_drifted)(struct carp_provider *p, const struct carp_nodeclaim *claim,
                    const struct carp_nodeclass *nc, const char **reason);
  /* Synchronous, from the provider's cached view: the zone's state, or
   * CARP_ENOENT for a region or zone it does not know. NULL: every zone is
   * CARP_ZONE_UNKNOWN. */
  int (*zone_status)(struct carp_provider *p, const char *region,
                     const char *zone, struct carp_provider_zone_status *out);
  void (*cancel)(struct carp_provider *p, struct carp_provider_op *op);
  /* Cancels everything pending (callbacks get CARP_ECANCELED), releases
   * every handle, then calls cb (if not NULL) from the loop. */
  void (*close)(struct carp_provider *p, void (*cb)(void *arg), void *arg);
};

struct carp_provider {
  const struct carp_provider_ops *ops;
  struct carp_metric *m_duration; /* NULL until carp_provider_set_metrics */
  struct carp_metric *m_errors;
};

/* Registers karpenter_cloudprovider_duration_seconds and
 * karpenter_cloudprovider_errors_total in reg and uses them from now on. */
void carp_provider_set_metrics(struct carp_provider *p,
                               struct carp_metrics *reg);

int carp_provider_create(struct carp_provider *p,
                         const struct carp_provider_create_req *req,
                         carp_provider_create_cb cb, void *arg,
                         struct carp_provider_op **out);
int carp_provider_delete(struct carp_provider *p,
                         const struct carp_provider_delete_req *req,
                         carp_provider_done_cb cb, void *arg,
                         struct carp_provider_op **out);
int carp_provider_get(struct carp_provider *p, const char *controller,
                      const char *provider_id, carp_provider_get_cb cb,
                      void *arg, struct carp_provider_op **out);
int carp_provider_list(struct carp_provider *p, const char *controller,
                       carp_provider_list_cb cb, void *arg,
                       struct carp_provider_op **out);
int carp_provider_instance_types(struct carp_provider *p,
                                 const char *controller,
                                 const struct carp_nodeclass *nc,
                                 struct carp_provider_instance_types *out);
int carp_provider_is_drifted(struct carp_provider *p, const char *controller,
                             const struct carp_nodeclaim *claim,
                             const struct carp_nodeclass *nc,
                             const char **reason);
/* Fills *out (CARP_ZONE_UNKNOWN when the provider cannot tell); returns 0
 * or CARP_ENOENT (unknown region or zone; *out is then UNKNOWN too). */
int carp_provider_zone_status(struct carp_provider *p, const char *region,
                              const char *zone,
                              struct carp_provider_zone_status *out);
/* Only while the call is pending (before its callback ran). */
void carp_provider_cancel(struct carp_provider *p, struct carp_provider_op *op);
void carp_provider_close(struct carp_provider *p, void (*cb)(void *arg),
                         void *arg);
const char *carp_provider_name(const struct carp_provider *p);

/* --- helpers
 * ------------------------------------------------------------------ */

/* Whether err is worth retrying unchanged (network, timeouts, 5xx, locks,
 * conflicts). */
int carp_provider_error_transient(int err);
/* The error label of karpenter_cloudprovider_errors_total:
 * "NodeClaimNotFoundError", "InsufficientCapacityError",
 * "NodeClassNotReadyError" or "". */
const char *carp_provider_error_label(int err);
/* Fills e (code, reason, printf message). */
void carp_provider_error_set(struct carp_provider_error *e, int code,
                             const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* providerID "proxmox://<region>/<vmid>". Returns 0 or CARP_EINVAL. */
int carp_provider_id_parse(const char *provider_id, char *region,
                           size_t region_size, int64_t *vmid);
void carp_provider_id_format(const char *region, int64_t vmid, char *out,
                             size_t size);
/* CARP_ANN_VM's value "<region>/<zone>/<vmid>". Returns 0 or CARP_EINVAL. */
int carp_provider_vm_annotation_parse(const char *value, char *region,
                                      size_t region_size, char *zone,
                                      size_t zone_size, int64_t *vmid);

/* The zone a NodeClaim's VM was placed in: its zone label with the region
 * label (else the providerID's region), else the write-ahead annotation
 * CARP_ANN_VM (a launch that never finished). 1 when found, else 0. */
int carp_provider_claim_zone(const struct carp_nodeclaim *nc, char *region,
                             size_t region_size, char *zone, size_t zone_size);

/* Whether a value of key is allowed by every requirement on that key
 * (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte; value NULL means the
 * key is undefined). Requirements on other keys are ignored. */
int carp_requirements_allow(const struct carp_requirement *reqs, size_t n,
                            const char *key, const char *value);

/* --- the fake provider (internal/provider/fake) ------------------------------
 */

/* An in-memory provider for controller tests, in the spirit of Karpenter's
 * KWOK/fake providers. create honours the reserve hook and the NodeClaim's
 * annotation (adoption), picks the cheapest instance type and zone its
 * requirements allow from the configured list, and fails on request. */
struct carp_fake_instance_type {
  const char *name;
  int32_t cpu;
  int64_t memory; /* bytes */
  double price;
};

struct carp_fake_provider_options {
  const char *region;       /* default "fake" */
  const char *const *zones; /* NULL-terminated; default {"zone-a"} */
  const struct carp_fake_instance_type *types; /* NULL: a small grid */
  size_t ntypes;
  int64_t host_cpus;        /* per zone; 0: unlimited */
  int64_t host_memory;      /* bytes per zone; 0: unlimited */
  uint64_t create_delay_ms; /* each async call takes this long */
  uint64_t delete_delay_ms;
  uint64_t get_delay_ms;
  struct carp_clock *clock; /* optional: the delays' clock (a fake one) */
};

int carp_fake_provider_new(uv_loop_t *loop,
                           const struct carp_fake_provider_options *opts,
                           struct carp_provider **out);

/* Fault injection: the next n calls of a method ("create", "delete",
 * "get", "list") fail with err (reason used by create). */
void carp_fake_provider_fail(struct carp_provider *p, const char *method, int n,
                             int err, const char *reason);
/* Capacity of a zone (vCPUs, bytes); 0 = unlimited. */
void carp_fake_provider_set_capacity(struct carp_provider *p, const char *zone,
                                     int64_t cpus, int64_t memory);
/* Marks an instance type unavailable (ICE) in a zone, or clears it. */
void carp_fake_provider_set_ice(struct carp_provider *p, const char *type,
                                const char *zone, int ice);
/* Makes is_drifted answer reason ("" or NULL: not drifted) for a
 * NodeClaim name (NULL: every NodeClaim). It wins over the zone's
 * maintenance below. */
void carp_fake_provider_set_drift(struct carp_provider *p,
                                  const char *nodeclaim, const char *reason);
/* A zone's state as zone_status reports it, since now on the provider's
 * clock (unchanged when the state is the same). Like the Proxmox provider:
 * a zone in maintenance or offline gets no new instance and its offerings
 * are unavailable; is_drifted answers CARP_DRIFT_HOST_MAINTENANCE for an
 * instance in a zone in maintenance; delete of an instance in an offline
 * zone answers CARP_ENOTFOUND with reason CARP_REASON_HOST_OFFLINE and
 * leaves the instance (listed) until the zone is back. Unknown zone: no-op.
 * Every zone starts CARP_ZONE_READY (since the provider's creation). */
void carp_fake_provider_set_zone_state(struct carp_provider *p,
                                       const char *zone,
                                       enum carp_zone_state state);
/* Adds a VM as if created outside the controller (orphan for GC tests);
 * returns its providerID in out. */
int carp_fake_provider_add_instance(struct carp_provider *p, const char *name,
                                    const char *nodeclaim_uid, const char *type,
                                    const char *zone, char *out, size_t size);
/* Number of instances, and calls per method so far. */
size_t carp_fake_provider_count(struct carp_provider *p);
/* One of its instance types by name, or NULL. */
const struct carp_fake_instance_type *
carp_fake_provider_type(struct carp_provider *p, const char *name);
/* Calls so far of "create", "delete", "get", "list" or "instance_types". */
size_t carp_fake_provider_calls(struct carp_provider *p, const char *method);

#endif
