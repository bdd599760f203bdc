/* Module kube (internal/kube). The Kubernetes REST client: verbs on resource
 * paths, with the API server's errors decoded from metav1.Status into named
 * codes, a client side token bucket (--kube-client-qps/--kube-client-burst),
 * and retries with backoff and jitter (honouring Retry-After) where a retry is
 * safe.
 *
 * Retry rules. Reads retry on connection errors, timeouts, 429 and 5xx.
 * Writes retry only when the server cannot have acted: the connection was
 * never made, or it answered 429 (or 5xx with Retry-After), which it does
 * before processing. A caller whose write is safe to repeat anyway (an
 * update with a resourceVersion, a delete) sets `idempotent`, and then
 * timeouts and lost connections are retried too.
 *
 * Every call takes a callback run exactly once, never from inside the
 * call itself; the result and its parsed body are valid only during it. */
#ifndef CARP_KUBE_H
#define CARP_KUBE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"
#include "carpenter/kubeconfig.h"

struct carp_kube;
struct carp_kube_op;
struct carp_metrics;

/* An API server inside this process (tests, `carpenter simulate`): every
 * request goes to it instead of the network, through the same encoding,
 * status decoding and watch framing. request and watch get the path with
 * its query ("/api/v1/pods?watch=1&..."); the backend answers later, never
 * from inside these callbacks, with carp_kube_backend_reply (a request) or
 * carp_kube_backend_event and carp_kube_backend_end (a watch). cancel
 * tells it to forget an op: the client ends it itself. */
struct carp_kube_backend {
  void (*request)(void *ctx, struct carp_kube_op *op, const char *method,
                  const char *path, const char *body, size_t len);
  void (*watch)(void *ctx, struct carp_kube_op *op, const char *path);
  void (*cancel)(void *ctx, struct carp_kube_op *op);
  void *ctx;
};

struct carp_kube_options {
  const struct carp_kube_config *config; /* copied */
  double qps;                            /* default 200 */
  int burst;                             /* default 300 */
  const char *user_agent;                /* default "carpenter/<version>" */
  struct carp_metrics *metrics;          /* optional: rest_client_* metrics */
  int max_attempts;                      /* default 5 */
  uint64_t timeout_ms; /* per attempt, default 30 s (not for watches) */
  /* Optional: answer requests in-process (no HTTP client, no rate limit);
   * config->server is still needed, as the base of the op's URL. */
  const struct carp_kube_backend *backend;
};

/* Where a request goes: /api/v1/... for the core group, else
 * /apis/<group>/<version>/... */
struct carp_kube_ref {
  const char *group; /* "" or NULL for core */
  const char *version;
  const char *resource;
  const char *namespace; /* NULL for cluster-scoped */
  const char *name;      /* NULL for collections */
  const char *subresource;
};

struct carp_kube_result {
  int err;             /* 0, a CARP_E* code from the Status, or transport */
  long status;         /* HTTP status (0: no response) */
  const char *reason;  /* Status reason ("NotFound"), or "" */
  const char *message; /* Status message, or transport detail, or "" */
  yajl_val body;       /* parsed JSON body (NULL when none or not JSON) */
  const char *raw;     /* the body text */
  size_t raw_len;
  int attempts;
};

typedef void (*carp_kube_cb)(const struct carp_kube_result *res, void *arg);

/* The largest request body Carpenter builds: the API server's own limit
 * (--max-request-bytes, 3 MB). A valid object (at most 1.5 MB in etcd)
 * always fits in a patch this size; a body that still overflows is
 * reported by its caller (log, event, condition), never dropped. */
#define CARP_KUBE_MAX_BODY (3 * 1024 * 1024)

enum carp_kube_patch {
  CARP_PATCH_MERGE = 0, /* application/merge-patch+json */
  CARP_PATCH_JSON,      /* application/json-patch+json */
  CARP_PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
  CARP_PATCH_APPLY,     /* application/apply-patch+yaml, fieldManager */
};

struct carp_kube_request {
  const char *method;
  const char *path;  /* absolute path, e.g. "/api/v1/nodes" */
  const char *query; /* without '?', may be NULL */
  const char *content_type;
  const char *body;
  size_t body_len;
  int idempotent;      /* safe to repeat even if the server may have acted */
  uint64_t timeout_ms; /* 0: the client's default */
  int ungated;         /* not subject to the write gate (leader election) */
  int raw_body; /* a 2xx body is left unparsed (result body NULL, raw set):
                   the caller splits large lists itself, or does not read
                   the answer */
};

int carp_kube_new(uv_loop_t *loop, const struct carp_kube_options *opts,
                  struct carp_kube **out);
/* Cancels every call in flight (callbacks get CARP_ECANCELED), then calls
 * close_cb once every handle is closed. */
void carp_kube_close(struct carp_kube *k, void (*close_cb)(void *arg),
                     void *arg);
const struct carp_kube_config *carp_kube_config_of(const struct carp_kube *k);

/* Appends the path for ref to out. */
int carp_kube_path(struct carp_buf *out, const struct carp_kube_ref *ref);

/* The general call; the helpers below build on it. op may be NULL. */
int carp_kube_call(struct carp_kube *k, const struct carp_kube_request *r,
                   carp_kube_cb cb, void *arg, struct carp_kube_op **op);
/* Cancels: the callback runs later with CARP_ECANCELED (unless it ran). */
void carp_kube_cancel(struct carp_kube_op *op);

int carp_kube_get(struct carp_kube *k, const struct carp_kube_ref *ref,
                  carp_kube_cb cb, void *arg);
/* One page of a list. query holds labelSelector, fieldSelector, limit,
 * continue, resourceVersion as the caller wants them. */
int carp_kube_list(struct carp_kube *k, const struct carp_kube_ref *ref,
                   const char *query, carp_kube_cb cb, void *arg);
int carp_kube_create(struct carp_kube *k, const struct carp_kube_ref *ref,
                     const char *json, size_t len, carp_kube_cb cb, void *arg);
/* PUT: json must carry metadata.resourceVersion for optimistic
 * concurrency; the call is then idempotent. */
int carp_kube_update(struct carp_kube *k, const struct carp_kube_ref *ref,
                     const char *json, size_t len, carp_kube_cb cb, void *arg);
int carp_kube_patch(struct carp_kube *k, const struct carp_kube_ref *ref,
                    enum carp_kube_patch type, const char *json, size_t len,
                    int idempotent, carp_kube_cb cb, void *arg);

struct carp_kube_delete_options {
  const char *uid;              /* precondition, or NULL */
  const char *resource_version; /* precondition, or NULL */
  const char *propagation;      /* "Foreground", "Background", "Orphan" */
  int64_t grace_seconds;        /* -1: the object's default */
};
int carp_kube_delete(struct carp_kube *k, const struct carp_kube_ref *ref,
                     const struct carp_kube_delete_options *o, carp_kube_cb cb,
                     void *arg);
/* policy/v1 Eviction of a pod, with its UID as precondition when given. */
int carp_kube_evict(struct carp_kube *k, const char *namespace,
                    const char *name, const char *uid, carp_kube_cb cb,
                    void *arg);

/* A watch: the stream's events ({"type":...,"object":...}), each handed to
 * on_frame as the text of one JSON object as soon as it is complete (the
 * caller decodes it: the informer straight into its cache). A negative
 * return from on_frame stops the watch with that code. on_done runs once
 * when the stream ends: err 0 for a clean end (timeout), else the error. */
typedef int (*carp_kube_frame_cb)(const char *json, size_t len, void *arg);
typedef void (*carp_kube_watch_done_cb)(int err, const char *message,
                                        void *arg);
int carp_kube_watch(struct carp_kube *k, const char *path, const char *query,
                    carp_kube_frame_cb on_frame,
                    carp_kube_watch_done_cb on_done, void *arg,
                    struct carp_kube_op **op);

/* The write gate: when set, every request other than GET asks it first,
 * on each attempt, and fails with CARP_ENOTLEADER when it says no. Leader
 * election sets it so that a replica that is not (or may no longer be)
 * the leader cannot write, whatever code path tries. */
typedef int (*carp_kube_gate_cb)(void *arg);
void carp_kube_set_write_gate(struct carp_kube *k, carp_kube_gate_cb gate,
                              void *arg);

/* The backend's answers. reply ends a request with an HTTP status and a
 * JSON body (a metav1.Status for errors). event hands one watch event
 * ({"type":...,"object":...}) to the watcher; a negative return means the
 * watcher stopped and the op is gone. end closes a watch: status 200 for
 * a clean end, else the error status and its Status body. */
void carp_kube_backend_reply(struct carp_kube_op *op, long status,
                             const char *body, size_t len);
int carp_kube_backend_event(struct carp_kube_op *op, const char *json,
                            size_t len);
void carp_kube_backend_end(struct carp_kube_op *op, long status,
                           const char *body, size_t len);

/* Maps a metav1.Status reason (or, without one, the HTTP status) to a
 * CARP_E* code. */
int carp_kube_error_of(long http_status, const char *reason);
/* Whether a failed call is one a retry cannot fix: a malformed request
 * (400), an invalid object (422), or a 404 for a path the server does not
 * serve (not a missing object). Such calls back off to minutes. */
int carp_kube_error_permanent(const struct carp_kube_result *res);

/* A resourceVersion as API servers write it (a decimal uint64): 0 and the
 * value, or CARP_EINVAL for anything else (see rv.c). */
int carp_rv_parse(const char *rv, uint64_t *out);
/* The newer of two resourceVersions; a (the caller's own) when they
 * cannot be compared or are equal; the other when one is empty/NULL. */
const char *carp_rv_newer(const char *a, const char *b);
/* Whether an object at resourceVersion have is older than written, the
 * version one of our own writes produced: a cache showing have does not
 * show that write yet. 0 when either is missing. */
int carp_rv_behind(const char *have, const char *written);

/* Requests made so far (all attempts); for tests and metrics. */
uint64_t carp_kube_request_count(const struct carp_kube *k);

#endif
