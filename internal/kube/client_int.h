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

/* Connections to the API server (see carp_kube_new). */
#define CARP_KUBE_MAX_CONNECTIONS 32
/* Requests other than watches handed to the HTTP client at once: with
 * the watches holding connections of their own, some of these already
 * wait inside curl for a free one, each with an easy handle and buffers
 * (a scale-out's burst of creates, patches and events put over 150 there,
 * about 1.5 MB). The rest wait in the rate queue as bare ops. */
#define CARP_KUBE_MAX_REQUESTS CARP_KUBE_MAX_CONNECTIONS

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
  int counted;  /* one of k->requests (in flight over HTTP, not a watch) */
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
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_metric *m_requests;
  struct carp_metric *m_duration;
};

/* client.c */
struct carp_kube_op *carp__kube_op_new(struct carp_kube *k, const char *method,
                                       const char *path, const char *query);
void carp__kube_op_enqueue(struct carp_kube_op *op);
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
