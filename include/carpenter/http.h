/* Module http (internal/http). Async HTTP client: libcurl's multi interface
 * driven by a libuv loop.
 *
 * A client owns one CURLM (its own connection cache, so connections are
 * reused only between requests with the same TLS settings), a few libuv
 * timers and one uv_poll_t per socket curl uses.
 * Every API client in Carpenter (Kubernetes, each Proxmox cluster) has its
 * own carp_http_client.
 *
 * Callback rules (libuv's): if carp_http_request_start() returns an error,
 * no callback runs. Otherwise on_done runs exactly once, never from inside
 * carp_http_request_start() itself, and the request handle is valid until
 * on_done returns.
 *
 * Everything runs on the loop's thread; nothing here is thread-safe. The
 * client keeps the loop alive only while a request is undelivered (or it is
 * closing): curl's timer and socket polls are unref'd, so uv_run() returns
 * once all work is done. Redirects are not followed. Only http:// and
 * https:// URLs are accepted. Connections are kept alive and reused between
 * requests of one client; HTTP/2 is used when the server offers it over TLS
 * (HTTP/2 status lines have no reason phrase).
 *
 * The process should ignore SIGPIPE (signal(SIGPIPE, SIG_IGN)); curl runs
 * with CURLOPT_NOSIGNAL and does not touch signal handlers. libcurl honours
 * the http_proxy, https_proxy and no_proxy environment variables. Host
 * names are resolved in a curl thread per lookup; a lookup still running
 * when its request ends is abandoned (CURLOPT_QUICK_EXIT), not waited for. */
#ifndef CARP_HTTP_H
#define CARP_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/buf.h"

struct carp_http_client;
struct carp_http_request;

/* Lengths of in-memory PEM data may be 0 for NUL-terminated strings. Files
 * must be readable when the client is created (else -errno). */
struct carp_http_tls {
  const char *ca_file; /* PEM bundle to trust; NULL: the system store */
  const char *ca_pem;  /* in-memory PEM CA (kubeconfig ...-data); wins over
                          ca_file when both are set. Either replaces the
                          system store entirely. */
  size_t ca_pem_len;
  const char *cert_file; /* client certificate (PEM) */
  const char *key_file;  /* client key (PEM) */
  const char *cert_pem;  /* in-memory client certificate */
  size_t cert_pem_len;
  const char *key_pem; /* in-memory client key (wiped from the client's copy
                          when it is freed) */
  size_t key_pem_len;
  /* Public-key pins in curl's syntax, "sha256//<base64 SPKI>[;sha256//...]".
   * Checked in addition to normal verification. */
  const char *pinned_pubkey;
  /* A certificate's SHA-256 fingerprint, "AA:BB:...:FF" (32 bytes), as
   * Proxmox VE shows it. When set, the server's leaf certificate must match
   * it exactly; the chain and host name are not checked against a CA.
   * Also accepted: 64 hex digits without colons. Malformed: CARP_EINVAL
   * from carp_http_client_new; with insecure set too: CARP_EINVAL. */
  const char *cert_sha256;
  /* Skips every check (a pinned_pubkey is still enforced). Only when the
   * user asked for it explicitly. */
  int insecure;
};

struct carp_http_client_options {
  struct carp_http_tls tls;    /* copied by carp_http_client_new */
  const char *user_agent;      /* copied; NULL: "carpenter/<version>" */
  uint64_t connect_timeout_ms; /* 0: 10 s */
  long max_host_connections;   /* 0: no limit */
  /* Streaming responses (requests with on_data: watches) are read at most
   * this often while they stream: an API server sends each watch event as
   * it happens, and a wake-up per event (kernel, TLS record, curl) cost
   * more than decoding it. Data after a quiet spell is read at once; what
   * follows it within this time waits for one read. 0: always at once.
   * Responses that are not streamed never wait. */
  uint64_t stream_coalesce_ms;
};

struct carp_http_header {
  const char *name;
  const char *value;
};

struct carp_http_response {
  long status; /* HTTP status; 0 when no response arrived (a transport error
                 after the status line keeps it) */
  const char *reason;   /* reason phrase of the status line ("" if none) */
  struct carp_buf body; /* buffered body; empty in streaming mode */
  const struct carp_http_header *headers; /* response headers, in order */
  size_t nheaders;
  const char *errmsg; /* transport error detail, or "" */
};
/* The response passed to a callback, and every string in it, is valid only
 * during that callback (see carp_http_request_take_body to keep the body). */

/* Case-insensitive; the last value when repeated; NULL when absent. */
const char *carp_http_response_header(const struct carp_http_response *r,
                                      const char *name);

/* status is 0 when an HTTP response arrived, whatever its code, or a
 * negative error: CARP_ETIMEDOUT, CARP_ECONNECT, CARP_ETLS, CARP_ECANCELED,
 * CARP_ETOOBIG (body over max_body), CARP_EIO (connection lost mid-way), or
 * the code a callback returned to abort. Also possible: CARP_EHTTP (a reply
 * that is not HTTP), CARP_ENOMEM, CARP_EINVAL, or a negative errno from
 * libuv when a socket could not be watched.
 * CARP_ETIMEDOUT covers both timeout_ms and idle_timeout_ms, and a connect
 * that took longer than connect_timeout_ms. A server that demands a client
 * certificate the client lacks fails with CARP_ETLS under TLS 1.2 but with
 * CARP_EIO under TLS 1.3 (the alert arrives after the handshake). */
typedef void (*carp_http_done_cb)(struct carp_http_request *req, int status,
                                  const struct carp_http_response *resp,
                                  void *arg);
/* Called once, when the final status line and headers are in (not for 1xx
 * interim responses). A negative return aborts the request with that code.
 * May call carp_http_request_cancel or carp_http_client_close. */
typedef int (*carp_http_headers_cb)(struct carp_http_request *req,
                                    const struct carp_http_response *resp,
                                    void *arg);
/* Streaming mode: each piece of the body as it arrives, in order, in pieces
 * of any size (not aligned to chunks or lines). A negative return aborts
 * the request with that code. May call carp_http_request_cancel or
 * carp_http_client_close; no more data arrives for a cancelled request. */
typedef int (*carp_http_data_cb)(struct carp_http_request *req,
                                 const char *data, size_t len, void *arg);

struct carp_http_request_options {
  const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
  const char *url;
  /* Copied. Names must be tokens and values free of CR/LF (else
   * CARP_EINVAL). An empty value sends "Name:" with nothing after it. A body
   * without a Content-Type header goes as application/x-www-form-urlencoded
   * (curl's default). "Expect: 100-continue" is never sent unless given. */
  const struct carp_http_header *headers;
  size_t nheaders;
  const void *body; /* copied; POST, PUT and PATCH send Content-Length: 0
                       without one */
  size_t body_len;
  uint64_t timeout_ms; /* whole request; 0: no limit (watches) */
  /* Abort with CARP_ETIMEDOUT after this long without receiving a byte,
   * counted from when the transfer is handed to curl (so it includes
   * connecting and waiting for a free connection); 0: no limit. Bytes sent
   * do not count. */
  uint64_t idle_timeout_ms;
  size_t max_body; /* cap on a buffered body; 0: 64 MiB. A Content-Length
                      above it fails at once. Ignored when streaming. */
  /* The answer is expected small (a write's object, a task's status):
   * curl reads it through a 4 KB buffer instead of its 16 KB one. The
   * buffer is most of what a request holds, and a scale-out has a hundred
   * or more in flight at once. Anything larger still arrives whole. */
  int small_answer;
  carp_http_headers_cb on_headers; /* optional */
  carp_http_data_cb on_data;       /* optional; set for streaming */
  carp_http_done_cb on_done;       /* required */
  void *arg;
};

/* Initialises libcurl (curl_global_init). Called by carp_http_client_new
 * on first use; call it early from main() to get it done before any thread
 * exists. Idempotent. */
int carp_http_global_init(void);
/* Releases libcurl's global state (curl_global_cleanup). Only at exit, after
 * every client has been closed; no client may be created afterwards. */
void carp_http_global_cleanup(void);

/* opts may be NULL for defaults. TLS settings are checked here (files
 * readable, fingerprint well formed, options supported by this libcurl). */
int carp_http_client_new(uv_loop_t *loop,
                         const struct carp_http_client_options *opts,
                         struct carp_http_client **out);
/* Changes max_host_connections for the connections opened from now on
 * (0: no limit); CARP_EINVAL when n is negative or curl refuses it. */
int carp_http_client_set_max_host_connections(struct carp_http_client *c,
                                              long n);
/* Cancels every request in flight (each gets on_done with CARP_ECANCELED),
 * releases curl and libuv resources, and calls close_cb (if not NULL) once
 * the last handle is closed. The client must not be used afterwards.
 * Callbacks run later, from the loop, never from inside this call; it is
 * safe to call from any of the client's callbacks. From then on,
 * carp_http_request_start on this client returns CARP_ECANCELED. The loop
 * must run for the client's memory to be released. Calling it twice is an
 * error (logged, ignored). */
void carp_http_client_close(struct carp_http_client *c,
                            void (*close_cb)(void *arg), void *arg);

/* out may be NULL when the caller never cancels. Errors (no callback
 * runs): CARP_EINVAL (missing url or on_done, a URL that is not absolute
 * http or https, a bad method or header, a HEAD with a body),
 * CARP_ECANCELED (the client is closing), CARP_ENOMEM, CARP_EUNSUPPORTED.
 * Transfers start from the loop, never inside this call, so it may be
 * called from any callback. */
int carp_http_request_start(struct carp_http_client *c,
                            const struct carp_http_request_options *opts,
                            struct carp_http_request **out);
/* Cancels a request: on_done runs later with CARP_ECANCELED (whatever
 * result was pending), unless on_done is already running, in which case it
 * does nothing. Safe to call from any callback, including the request's
 * own. Never call it after on_done returned: the handle is freed then. */
void carp_http_request_cancel(struct carp_http_request *req);

/* Only inside on_done: takes the buffered body (NUL-terminated; free with
 * carp_free) so it can outlive the callback without a copy; resp->body is
 * empty afterwards. Elsewhere returns NULL. */
char *carp_http_request_take_body(struct carp_http_request *req, size_t *len);

/* Percent-encodes s for a URL query or form value (RFC 3986 unreserved
 * characters stay as they are; a space becomes %20), appending to out. On
 * error (CARP_ETOOBIG from a capped out) out is left as it was. */
int carp_http_escape(struct carp_buf *out, const char *s);

#endif
