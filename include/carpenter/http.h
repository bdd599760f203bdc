/* Async HTTP client: libcurl's multi interface driven by a libuv loop.
 *
 * A client owns one CURLM (its own connection cache, so connections are
 * reused only between requests with the same TLS settings) and one timer.
 * Every API client in Carpenter (Kubernetes, each Proxmox cluster) has its
 * own carp_http_client.
 *
 * Callback rules (libuv's): if carp_http_request_start() returns an error,
 * no callback runs. Otherwise on_done runs exactly once, never from inside
 * carp_http_request_start() itself, and the request handle is valid until
 * on_done returns. */
#ifndef CARP_HTTP_H
#define CARP_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/buf.h"

struct carp_http_client;
struct carp_http_request;

struct carp_http_tls {
  const char *ca_file;  /* PEM bundle to trust; NULL: the system store */
  const char *ca_pem;   /* in-memory PEM CA (kubeconfig ...-data) */
  size_t ca_pem_len;
  const char *cert_file; /* client certificate (PEM) */
  const char *key_file;  /* client key (PEM) */
  const char *cert_pem;  /* in-memory client certificate */
  size_t cert_pem_len;
  const char *key_pem; /* in-memory client key */
  size_t key_pem_len;
  /* Public-key pins in curl's syntax, "sha256//<base64 SPKI>[;sha256//...]".
   * Checked in addition to normal verification. */
  const char *pinned_pubkey;
  /* A certificate's SHA-256 fingerprint, "AA:BB:...:FF" (32 bytes), as
   * Proxmox VE shows it. When set, the server's leaf certificate must match
   * it exactly; the chain and host name are not checked against a CA. */
  const char *cert_sha256;
  /* Skips every check. Only when the user asked for it explicitly. */
  int insecure;
};

struct carp_http_client_options {
  struct carp_http_tls tls; /* copied by carp_http_client_new */
  const char *user_agent;   /* copied; NULL: "carpenter/<version>" */
  uint64_t connect_timeout_ms; /* 0: 10 s */
  long max_host_connections;   /* 0: no limit */
};

struct carp_http_header {
  const char *name;
  const char *value;
};

struct carp_http_response {
  long status;        /* HTTP status; 0 when no response arrived */
  const char *reason; /* reason phrase of the status line ("" if none) */
  struct carp_buf body; /* buffered body; empty in streaming mode */
  const struct carp_http_header *headers; /* response headers, in order */
  size_t nheaders;
  const char *errmsg; /* transport error detail, or "" */
};

/* Case-insensitive; the last value when repeated; NULL when absent. */
const char *carp_http_response_header(const struct carp_http_response *r,
                                      const char *name);

/* status is 0 when an HTTP response arrived, whatever its code, or a
 * negative error: CARP_ETIMEDOUT, CARP_ECONNECT, CARP_ETLS, CARP_ECANCELED,
 * CARP_ETOOBIG (body over max_body), CARP_EIO (connection lost mid-way), or
 * the code a callback returned to abort. */
typedef void (*carp_http_done_cb)(struct carp_http_request *req, int status,
                                  const struct carp_http_response *resp,
                                  void *arg);
/* Called once, when the status line and headers are in. A negative return
 * aborts the request with that code. */
typedef int (*carp_http_headers_cb)(struct carp_http_request *req,
                                    const struct carp_http_response *resp,
                                    void *arg);
/* Streaming mode: each piece of the body as it arrives. A negative return
 * aborts the request with that code. */
typedef int (*carp_http_data_cb)(struct carp_http_request *req,
                                 const char *data, size_t len, void *arg);

struct carp_http_request_options {
  const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
  const char *url;
  const struct carp_http_header *headers;
  size_t nheaders;
  const void *body; /* copied */
  size_t body_len;
  uint64_t timeout_ms;      /* whole request; 0: no limit (watches) */
  uint64_t idle_timeout_ms; /* abort after this long without a byte; 0: no */
  size_t max_body;          /* cap on a buffered body; 0: 64 MiB */
  carp_http_headers_cb on_headers; /* optional */
  carp_http_data_cb on_data;       /* optional; set for streaming */
  carp_http_done_cb on_done;       /* required */
  void *arg;
};

int carp_http_client_new(uv_loop_t *loop,
                         const struct carp_http_client_options *opts,
                         struct carp_http_client **out);
/* Cancels every request in flight (each gets on_done with CARP_ECANCELED),
 * releases curl and libuv resources, and calls close_cb (if not NULL) once
 * the last handle is closed. The client must not be used afterwards. */
void carp_http_client_close(struct carp_http_client *c,
                            void (*close_cb)(void *arg), void *arg);

int carp_http_request_start(struct carp_http_client *c,
                            const struct carp_http_request_options *opts,
                            struct carp_http_request **out);
/* Cancels a request: on_done runs later with CARP_ECANCELED, unless it has
 * already run. Safe to call from any callback, including the request's own. */
void carp_http_request_cancel(struct carp_http_request *req);

/* Percent-encodes s for a URL query or form value (RFC 3986 unreserved
 * characters stay as they are). */
int carp_http_escape(struct carp_buf *out, const char *s);

#endif
