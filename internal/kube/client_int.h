/* Private structures of the Kubernetes REST client (client.c, watch.c,
 * backend.c). */
#ifndef CARP_KUBE_CLIENT_INT_H
#define CARP_KUBE_CLIENT_INT_H

#include <time.h>

#include "carpenter/backoff.h"
#include "carpenter/framer.h"
#include "carpenter/http.h"
#include "carpenter/kube.h"

enum op_state {
  OP_WAIT_RATE = 0, /* queued for a token of the rate limiter */
  OP_IN_FLIGHT,
  OP_WAIT_RETRY,
  OP_DELIVERING, /* the result is being handed over on the next tick */
  OP_DONE,
};

/* Requests other than watches handed to the HTTP client at once; the
 * rest wait in the rate queue as bare ops. Over HTTP/1.1 (HTTP/2, a real
 * API server, shares one connection) each needs a connection, and so does
 * each watch, held for as long as it lasts: the client allows as many
 * connections as there are watches plus these (carp__kube_connections).
 * Every open TLS connection costs some 90 KB (OpenSSL's context and the
 * buffers we keep) and one waiting inside curl an easy handle and its
 * buffers: with 32 connections for everything, a 1,000-pod scale-out
 * peaked at 19.9-20.1 MB; with the watches' ten plus 12 at 19.0 MB, plus
 * 8 at 18.5-18.7 MB, Carpenter's own part of a NodeClaim's way up no
 * slower (1.5-2.0 s for the worst of the first batch). */
#define CARP_KUBE_MAX_REQUESTS 8
/* How long a watch stream's data may wait to be read (see
 * carp_http_client_options.stream_coalesce_ms). An event after a quiet
 * spell is read at once; only events that follow it within the window
 * wait, so a NodeClaim's steps (seconds apart) are not slowed, while the
 * steady stream of a large scale-out (100 pod events a second for two
 * minutes at 5,000 pods) wakes Carpenter 20 times a second, not 50. */
#define CARP_KUBE_WATCH_COALESCE_MS 50

struct carp_kube_op {
  struct carp_kube *k;
  enum op_state state;
  char *method;
  char *url;
  char *content_type;
  char *body;
  size_t body_len;
  int idempotent;
  int is_read;
  int ungated;
  int raw_body; /* leave a 2xx body unparsed */
  int counted;  /* one of k->requests, or of k->watches for a watch */
  uint64_t timeout_ms;
  int attempts;
  int retried_auth;
  struct carp_backoff backoff;
  uv_timer_t timer;
  struct carp_http_request *req;
  carp_kube_cb cb;
  void *arg;
  uint64_t started_ms;
  int cancelled;
  /* Watch streams. */
  int watch;
  struct carp_framer framer;
  struct carp_buf errbody;
  long watch_status;
  int watch_err;
  carp_kube_frame_cb on_frame;
  carp_kube_watch_done_cb on_watch_done;
  /* Result held for deferred delivery (cancel and early errors). */
  int pending_err;
  /* Lists. */
  struct carp_kube_op *rate_next;
  struct carp_kube_op *prev, *next;
};

struct carp_kube {
  uv_loop_t *loop;
  struct carp_http_client *http; /* NULL with a backend */
  struct carp_kube_backend backend;
  int has_backend;
  struct carp_kube_config cfg;
  char *host; /* for metric labels */
  char *auth; /* "Bearer <token>" or NULL */
  struct timespec token_mtime;
  uint64_t token_checked_ms;
  double qps;
  int burst;
  double tokens;
  uint64_t tokens_at;
  uv_timer_t rate_timer;
  struct carp_kube_op *rate_head, *rate_tail;
  struct carp_kube_op *ops;
  int max_attempts;
  uint64_t timeout_ms;
  uint64_t nrequests;
  carp_kube_gate_cb gate;
  void *gate_arg;
  int closing;
  int handles;
  int requests; /* requests (not watches) handed to the HTTP client */
  int watches;  /* watches handed to it */
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_metric *m_requests;
  struct carp_metric *m_duration;
};

/* client.c */
struct carp_kube_op *carp__kube_op_new(struct carp_kube *k, const char *method,
                                       const char *path, const char *query);
void carp__kube_op_enqueue(struct carp_kube_op *op);
/* A watch was handed to the HTTP client (+1) or ended there (-1): the
 * connection limit follows, so requests always have theirs. */
void carp__kube_connections(struct carp_kube *k, int watch_delta);
void carp__kube_op_finish(struct carp_kube_op *op);
int carp__kube_headers(struct carp_kube_op *op, struct carp_http_header *h,
                       size_t cap);
void carp__kube_count(struct carp_kube_op *op, long status);
void carp__kube_http_done(struct carp_http_request *req, int status,
                          const struct carp_http_response *resp, void *arg);
/* watch.c */
int carp__kube_watch_send(struct carp_kube_op *op);
int carp__kube_watch_frame(const char *obj, size_t len, void *arg);
void carp__kube_watch_deliver_error(struct carp_kube_op *op, int err);

#endif
