/* http_int.h: private structures of the HTTP client module, shared by
 * client.c (the curl multi and libuv glue), request.c (one transfer),
 * response.c (status line and header parsing) and tls.c (TLS options and
 * certificate fingerprint pinning). Nothing here is visible to other
 * modules.
 *
 * Life of a request. carp_http_request_start() prepares an easy handle and
 * puts the request on the client's `pending` list; the client's zero-delay
 * `defer` timer adds it to the multi handle (curl refuses
 * curl_multi_add_handle from inside its own callbacks, and users start
 * requests from theirs). Once added it sits on `running`. When its result is
 * known (curl finished it, a callback aborted it, it was cancelled or timed
 * out) it moves to `finished` with the result recorded, and the dispatcher
 * removes the easy handle from the multi and runs on_done. The dispatcher
 * runs only outside curl callbacks: after curl_multi_socket_action returns,
 * or from the defer timer. So no easy handle is ever removed inside its own
 * callback: it is marked and reaped later. */
#ifndef CARP_HTTP_INT_H
#define CARP_HTTP_INT_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/http.h"

#define CARP_HTTP_LOG "http"

/* Default cap on a buffered response body. */
#define CARP_HTTP_MAX_BODY_DEFAULT ((size_t)64 * 1024 * 1024)
/* Caps on response headers (curl has its own, per line). */
#define CARP_HTTP_MAX_HEADERS      1000
#define CARP_HTTP_MAX_HEADER_BYTES ((size_t)256 * 1024)

/* A minimal intrusive circular doubly-linked list (libuv's queue). A link
 * that is on no list points at itself. */
struct carp_http_link {
  struct carp_http_link *prev;
  struct carp_http_link *next;
};

static inline void carp__http_list_init(struct carp_http_link *l)
{
  l->prev = l;
  l->next = l;
}

static inline int carp__http_list_empty(const struct carp_http_link *head)
{
  return head->next == head;
}

static inline void carp__http_list_remove(struct carp_http_link *l)
{
  l->prev->next = l->next;
  l->next->prev = l->prev;
  carp__http_list_init(l);
}

/* Appends l at the tail of head. */
static inline void carp__http_list_push(struct carp_http_link *head,
                                        struct carp_http_link *l)
{
  l->next = head;
  l->prev = head->prev;
  head->prev->next = l;
  head->prev = l;
}

/* Owned copies of struct carp_http_tls (tls.c). */
struct carp__http_tls {
  char *ca_file;
  char *ca_pem;
  size_t ca_pem_len;
  char *cert_file;
  char *key_file;
  char *cert_pem;
  size_t cert_pem_len;
  char *key_pem; /* secret: wiped on cleanup */
  size_t key_pem_len;
  char *pinned_pubkey;
  unsigned char fingerprint[32];
  int has_fingerprint;
  int tune_ctx; /* curl uses our OpenSSL: SSL_CTX_FUNCTION may touch it */
  int insecure;
};

struct carp_http_client {
  uv_loop_t *loop;
  CURLM *multi;
  CURL *tmpl;       /* every request's easy handle is a duplicate of this one */
  uv_timer_t timer; /* curl's timeout (CURLMOPT_TIMERFUNCTION); unref'd */
  uv_timer_t defer; /* zero delay: adds, completions, teardown */
  uv_timer_t idle;  /* sweeps requests for idle timeouts; unref'd */
  uv_timer_t coalesce;            /* reads parked sockets; unref'd */
  uint64_t stream_coalesce_ms;    /* 0: streams are read at once */
  struct carp_http_link parked;   /* struct carp__http_sock waiting */
  uint64_t streamed;              /* on_data calls so far (parking) */
  uv_check_t busy;                /* active while any request is undelivered */
  struct carp_http_link pending;  /* started, not yet in the multi */
  struct carp_http_link running;  /* in the multi, no result yet */
  struct carp_http_link finished; /* result known, on_done not yet run */
  struct carp_http_link socks;    /* struct carp__http_sock, open polls */
  size_t nrequests;               /* undelivered requests */
  unsigned nhandles;              /* uv handles initialised, not closed */
  int closing;                    /* carp_http_client_close was called */
  int torn_down;                  /* curl released, handles closing */
  int dispatching;
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp__http_tls tls;
  char *user_agent;
};

struct carp_http_request {
  struct carp_http_client *client;
  struct carp_http_link link; /* on pending, running or finished */
  CURL *easy;
  struct curl_slist *headers;
  carp_http_headers_cb on_headers;
  carp_http_data_cb on_data;
  carp_http_done_cb on_done;
  void *arg;
  uint64_t idle_timeout_ms;
  uint64_t last_rx;      /* uv_now() when a byte last arrived */
  int result;            /* valid when has_result */
  const char *abort_msg; /* our own detail for result, or NULL */
  unsigned has_result : 1;
  unsigned queued : 1;     /* on the finished list */
  unsigned added : 1;      /* easy handle is in the multi */
  unsigned delivering : 1; /* on_done is running */
  unsigned is_head : 1;
  unsigned headers_done : 1;
  /* Response being assembled; resp points into the fields below. */
  struct carp_http_response resp;
  char *reason;
  struct carp_http_header *hdrs; /* each name/value is one allocation */
  size_t hdrs_cap;
  size_t hdr_bytes;
  char errbuf[CURL_ERROR_SIZE]; /* CURLOPT_ERRORBUFFER */
};

/* Sets a curl option in a function returning int; on failure logs and
 * returns a Carpenter error. */
#define CARP_HTTP_SETOPT(h, opt, val)                                          \
  do {                                                                         \
    CURLcode carp_cc__ = curl_easy_setopt((h), (opt), (val));                  \
    if (carp_cc__ != CURLE_OK)                                                 \
      return carp__http_setopt_failed(#opt, carp_cc__);                        \
  } while (0)

/* client.c */
void carp__http_client_kick(struct carp_http_client *c);
void carp__http_client_arm_idle(struct carp_http_client *c, uint64_t ms);
void carp__http_client_release(struct carp_http_client *c);
int carp__http_client_acquire(struct carp_http_client *c);

/* request.c */
int carp__http_setopt_failed(const char *opt, CURLcode cc);
int carp__http_error_from_curl(CURLcode cc);
/* Records result (keeping an earlier one unless override) and queues the
 * request for delivery. Safe inside curl callbacks. */
void carp__http_request_finish(struct carp_http_request *req, int result,
                               const char *msg, int override);
/* Adds a pending request to the multi (outside curl callbacks only). */
void carp__http_request_add(struct carp_http_request *req);
/* curl reported the transfer done (CURLMSG_DONE). */
void carp__http_request_curl_done(struct carp_http_request *req, CURLcode cc);
/* Removes the easy handle, runs on_done and frees the request. */
void carp__http_request_deliver(struct carp_http_request *req);

/* response.c */
void carp__http_response_init(struct carp_http_request *req, size_t max_body);
void carp__http_response_cleanup(struct carp_http_request *req);
/* Feeds one header line as curl hands it over (with its CRLF). Returns 1
 * when the final response's header block is complete, 0 otherwise, or a
 * negative error. */
int carp__http_response_header_line(struct carp_http_request *req,
                                    const char *line, size_t len);

/* tls.c */
int carp__http_tls_init(struct carp__http_tls *t,
                        const struct carp_http_tls *opts);
void carp__http_tls_cleanup(struct carp__http_tls *t);
int carp__http_tls_apply(struct carp__http_tls *t, CURL *easy);
int carp__http_fingerprint_parse(const char *s, unsigned char out[32]);

#endif
