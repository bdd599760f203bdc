/* Module proxmox (internal/provider/proxmox). Proxmox VE: the --pve-config
 * file, an API client per cluster (region) on the async HTTP module, task
 * (UPID) handling, and the Proxmox provider that implements
 * include/carpenter/provider.h.
 *
 * The client speaks /api2/json with an API token (no tickets, no CSRF):
 * every answer is {"data": ...}; errors come as the HTTP reason phrase
 * (PVE 8), also in "message" (PVE 9), and parameter errors as 400 with an
 * "errors" map. Numbers may arrive as strings. Form values are always fully
 * percent-encoded (PVE splits form bodies on ';' as well as '&').
 * docs/provider.md describes the whole provider. */
#ifndef CARP_PVE_H
#define CARP_PVE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"
#include "carpenter/provider.h"

/* --- --pve-config ----------------------------------------------------------
 */

struct carp_pve_cluster_config {
  char *region;       /* label-value syntax, unique */
  char *url;          /* base URL ending in /api2/json */
  char *token_id;     /* user@realm!name */
  char *token_secret; /* never logged */
  char *ca_file;      /* NULL unless set */
  char *fingerprint;  /* "AA:BB:..." SHA-256 of the certificate, or NULL */
  int insecure;
};

struct carp_pve_config {
  size_t nclusters;
  struct carp_pve_cluster_config *clusters;
};

/* Loads and checks the YAML file:
 *   clusters: [{region, url, tokenID, tokenSecret | tokenSecretFile,
 *                caFile | fingerprint | insecure: true}]
 * url may omit /api2/json (it is added). On error returns CARP_ECONFIG
 * (or a negative errno for an unreadable file) with "file:line:col:
 * problem" in *err (free with carp_free). Secrets never appear in
 * messages. */
int carp_pve_config_load(const char *path, struct carp_pve_config *out,
                         char **err);
int carp_pve_config_parse(const char *text, size_t len, const char *source,
                          struct carp_pve_config *out, char **err);
void carp_pve_config_free(struct carp_pve_config *c);

/* --- form encoding -----------------------------------------------------------
 */

/* key=value pairs, every key and value percent-encoded. */
struct carp_pve_form {
  struct carp_buf buf;
};

void carp_pve_form_init(struct carp_pve_form *f);
void carp_pve_form_free(struct carp_pve_form *f);
int carp_pve_form_add(struct carp_pve_form *f, const char *key,
                      const char *value);
int carp_pve_form_addf(struct carp_pve_form *f, const char *key,
                       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int carp_pve_form_add_int(struct carp_pve_form *f, const char *key, int64_t v);
/* sshkeys: the keys joined with '\n', percent-encoded strictly (the
 * 'urlencoded' format), then form-encoded like any value. */
int carp_pve_form_add_sshkeys(struct carp_pve_form *f, const char *const *keys,
                              size_t n);

/* --- the client
 * ---------------------------------------------------------------- */

struct carp_pve_client;
struct carp_pve_call;

struct carp_pve_result {
  /* 0; a transport error (CARP_ETIMEDOUT, CARP_ECONNECT, CARP_ETLS,
   * CARP_EIO...); or from the status: 400 CARP_EBADREQUEST, 401
   * CARP_EUNAUTHORIZED, 403 CARP_EFORBIDDEN, 501 CARP_EUNSUPPORTED,
   * 502-504/595/596 CARP_EUNAVAIL, 500 classified by its text
   * (carp_pve_classify), other CARP_EHTTP; CARP_EPARSE for a 200 that is
   * not the envelope; CARP_ECANCELED. */
  int err;
  long status;         /* HTTP status, 0 when none arrived */
  const char *message; /* "" on success; else the error text: message or
                          reason phrase, plus "param: problem" pairs */
  yajl_val data;       /* the envelope's data (NULL when null) */
};

/* Valid only during the callback. */
typedef void (*carp_pve_cb)(const struct carp_pve_result *r, void *arg);

struct carp_pve_client_options {
  uint64_t timeout_ms;         /* per request; 0: 30 s */
  uint64_t connect_timeout_ms; /* 0: 10 s */
  const char *user_agent;      /* NULL: carpenter/<version> */
};

/* One client per cluster: own connection cache and TLS settings
 * (fingerprint pinning, CA file, or insecure). Errors: CARP_EINVAL
 * (malformed fingerprint), -errno (unreadable CA file). */
int carp_pve_client_new(uv_loop_t *loop,
                        const struct carp_pve_cluster_config *cfg,
                        const struct carp_pve_client_options *opts,
                        struct carp_pve_client **out);
/* Cancels every call (CARP_ECANCELED) and frees the client; cb runs once
 * every handle is closed. */
void carp_pve_client_close(struct carp_pve_client *c, void (*cb)(void *arg),
                           void *arg);
const char *carp_pve_client_region(const struct carp_pve_client *c);
const char *carp_pve_client_token_id(const struct carp_pve_client *c);
uv_loop_t *carp_pve_client_loop(const struct carp_pve_client *c);

/* method GET/POST/PUT/DELETE; path relative to the base URL
 * ("/nodes/pve1/qemu/100/config"), segments already escaped; params (may
 * be NULL) go in the query for GET/DELETE, in the body otherwise.
 * timeout_ms 0: the client's. GETs are retried once after a dropped
 * connection. */
int carp_pve_call_start(struct carp_pve_client *c, const char *method,
                        const char *path, const struct carp_pve_form *params,
                        uint64_t timeout_ms, carp_pve_cb cb, void *arg,
                        struct carp_pve_call **out);
/* POST multipart/form-data: the fields of params (unencoded values) and
 * one file part named file_field. */
int carp_pve_upload_start(struct carp_pve_client *c, const char *path,
                          const char *const *fields, size_t nfields,
                          const char *file_field, const char *filename,
                          const void *data, size_t len, uint64_t timeout_ms,
                          carp_pve_cb cb, void *arg,
                          struct carp_pve_call **out);
/* The callback then runs with CARP_ECANCELED (unless already running). */
void carp_pve_call_cancel(struct carp_pve_call *call);

/* Maps a Proxmox error text to a code: "already exists" CARP_EEXIST,
 * "does not exist"/"unable to find configuration file"/"no such"
 * CARP_ENOTFOUND, "VM is locked"/"got timeout"/"can't lock file"
 * CARP_EAGAIN, "no quorum" CARP_EUNAVAIL; otherwise fallback. */
int carp_pve_classify(const char *text, int fallback);

/* --- tasks
 * -------------------------------------------------------------------- */

struct carp_pve_upid {
  char node[64];
  uint32_t pid;
  uint64_t pstart;
  uint32_t starttime;
  char type[32];
  char id[64]; /* may be empty */
  char user[128];
};

/* UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>: (hex fields,
 * trailing colon). Returns 0 or CARP_EPARSE. */
int carp_pve_upid_parse(const char *s, struct carp_pve_upid *out);
/* OK or "WARNINGS: <n>". */
int carp_pve_exitstatus_ok(const char *exitstatus);

struct carp_pve_task_wait;

/* err 0 when the task ended OK or with warnings; CARP_ETIMEDOUT at the
 * deadline; otherwise carp_pve_classify(exitstatus, CARP_ETASK) or the
 * error of a status request that cannot succeed (401, 403, 400 "no such
 * task"). message is the exit status or the error text. */
typedef void (*carp_pve_task_cb)(int err, const char *message, void *arg);

struct carp_pve_task_options {
  uint64_t timeout_ms;   /* deadline; 0: 5 min */
  uint64_t first_ms;     /* first poll; 0: 100 ms */
  uint64_t expect_ms;    /* when the task should be done (0: unknown): the
                            first poll then, if later than first_ms; the
                            backoff from first_ms follows it */
  uint64_t max_delay_ms; /* poll backoff cap; 0: 750 ms */
  int stop_on_timeout;   /* DELETE the task at the deadline */
};

/* Polls GET /nodes/{node of the UPID}/tasks/{upid}/status with backoff
 * until the task stops or the deadline passes. Transient poll errors are
 * retried until the deadline. */
int carp_pve_task_wait_start(struct carp_pve_client *c, const char *upid,
                             const struct carp_pve_task_options *opts,
                             carp_pve_task_cb cb, void *arg,
                             struct carp_pve_task_wait **out);
void carp_pve_task_wait_cancel(struct carp_pve_task_wait *w);

/* --- NoCloud seed image and user-data
 * ----------------------------------------- */

struct carp_iso_file {
  const char *name; /* long name: "user-data" */
  const void *data;
  size_t len;
};

/* An ISO 9660 image with the files in its root directory, names in Rock
 * Ridge (NM) and Joliet so Linux sees them as given; label e.g. "cidata".
 * Appends to out. */
int carp_iso_build(const char *label, const struct carp_iso_file *files,
                   size_t n, struct carp_buf *out);

struct carp_userdata_var {
  const char *name; /* "ProviderID" */
  const char *value;
};

/* Replaces each {{ .Name }} (spaces inside the braces optional) by its
 * value; other {{ ... }} text stays. An unknown .Name fails with
 * CARP_EINVALID and "unknown variable .Name" in *err. */
int carp_userdata_render(const char *tmpl, size_t len,
                         const struct carp_userdata_var *vars, size_t nvars,
                         struct carp_buf *out, char **err);

/* --- the Proxmox provider ---------------------------------------------------
 */

struct carp_pve_provider_options {
  const struct carp_pve_config *config; /* copied */
  const char *cluster_name;             /* --cluster-name; NULL: "kubernetes" */
  uint64_t refresh_interval_ms;         /* host capacity refresh; 0: 30 s */
  uint64_t ice_ttl_ms;          /* insufficient-capacity cache; 0: 3 min */
  uint64_t vmid_reuse_ms;       /* skip recently used VMIDs; 0: 5 min */
  uint64_t request_timeout_ms;  /* 0: 30 s */
  uint64_t clone_timeout_ms;    /* 0: 5 min */
  uint64_t start_timeout_ms;    /* 0: 2 min */
  uint64_t stop_timeout_ms;     /* 0: 2 min */
  uint64_t delete_timeout_ms;   /* 0: 5 min */
  uint64_t config_timeout_ms;   /* config, resize, upload tasks; 0: 2 min */
  uint64_t task_poll_first_ms;  /* 0: 100 ms */
  uint64_t task_poll_max_ms;    /* 0: 750 ms */
  struct carp_metrics *metrics; /* optional */
};

/* Starts the provider: one client per configured cluster, a first refresh
 * of every region, then one every refresh_interval_ms (the timer does not
 * keep the loop alive). */
int carp_pve_provider_new(uv_loop_t *loop,
                          const struct carp_pve_provider_options *opts,
                          struct carp_provider **out);

/* State of a region for readiness and conditions: 0 after a successful
 * refresh, CARP_EAGAIN before the first one ended, else the last error
 * with its message (e.g. CARP_EFORBIDDEN "token ... has no privileges").
 * CARP_ENOENT for an unknown region. */
int carp_pve_provider_region_status(struct carp_provider *p, const char *region,
                                    const char **message);
/* Refreshes every region now; cb(arg, status) when all answered
 * (status: the first error, or 0). */
int carp_pve_provider_refresh(struct carp_provider *p,
                              void (*cb)(void *arg, int status), void *arg);
/* Whether (instance type, region, zone) is in the insufficient-capacity
 * cache. */
int carp_pve_provider_ice_cached(struct carp_provider *p, const char *type,
                                 const char *region, const char *zone);
/* The template each usable host would clone for a class now (the class's
 * status.templates; fits carp_nodeclass_controller_options.templates):
 * *out freed with carp_free, its strings interned. A new template there
 * changes the status, and the class's NodeClaims are looked at for drift. */
struct carp_nodeclass_template;
int carp_pve_provider_templates(struct carp_provider *p,
                                const struct carp_nodeclass *nc,
                                struct carp_nodeclass_template **out,
                                size_t *n);
/* The client of a region (tests and the NodeClass controller). */
struct carp_pve_client *carp_pve_provider_client(struct carp_provider *p,
                                                 const char *region);

/* --- the offline provider (offline.c) ---------------------------------------
 */

/* The Proxmox provider's instance types without Proxmox, for `carpenter
 * simulate`: each ProxmoxNodeClass's grid and custom types with the live
 * provider's capacity, allocatable and prices, offered in every zone the
 * class is known to use - its status.templates (region, zone) pairs, else
 * the zones added below for it, else spec.zones (or status.zones) in
 * spec.regions (or status.regions); spec.regions and spec.zones filter
 * the first two. Every offering is available: host capacity is unknown
 * offline. create, delete, get and list fail with CARP_EUNSUPPORTED;
 * nothing is ever drifted. */
int carp_pve_offline_new(uv_loop_t *loop, struct carp_provider **out);
/* A zone the class's VMs run in (from its nodes, say). */
void carp_pve_offline_add_zone(struct carp_provider *p, const char *nodeclass,
                               const char *region, const char *zone);
/* The ephemeral storage (bytes) of the class's VMs when spec.bootDisk.size
 * is unset: the template's disk, which the live provider reads from
 * Proxmox. The largest value given wins; 0 until set. */
void carp_pve_offline_set_template_disk(struct carp_provider *p,
                                        const char *nodeclass, int64_t bytes);

#endif
