/* Module server (internal/server). A small HTTP/1.1 server on libuv, for
 * /metrics, /healthz and /readyz.
 *
 * Requests are parsed with libhttp-parser (keep-alive and pipelining
 * included) and answered by handlers that run on the loop and must not
 * block. Every resource is bounded: connections, header and body bytes,
 * and time to send a request, to take an answer or to stay idle. A
 * connection has one request in hand at a time: the bytes of a pipelined
 * next request wait until the answer to the previous one has been sent,
 * so a read costs at most one handler call and a client that does not
 * read holds at most one answer. At the connection limit the connection
 * that has been quiet longest is closed to make room, so a new client (a
 * kubelet probe) is always served. */
#ifndef CARP_SERVER_H
#define CARP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/buf.h"

struct carp_server;

enum carp_server_method {
  CARP_SERVER_GET = 1 << 0,
  CARP_SERVER_HEAD = 1 << 1,
  CARP_SERVER_POST = 1 << 2,
};

struct carp_server_request {
  const char *method; /* "GET" */
  const char *path;   /* "/metrics", without the query */
  const char *query;  /* "a=b" or "" */
  const char *body;
  size_t body_len;
};

struct carp_server_response {
  int status;               /* default 200 */
  const char *content_type; /* default "text/plain; charset=utf-8" */
  struct carp_buf body;     /* the handler appends here */
};

typedef void (*carp_server_handler)(const struct carp_server_request *req,
                                    struct carp_server_response *resp,
                                    void *arg);

struct carp_server_options {
  const char *host;          /* an IP address; default "127.0.0.1" */
  int port;                  /* 0 picks a free port */
  size_t max_connections;    /* default 64 */
  size_t max_header_bytes;   /* request line plus headers; default 8 KiB */
  size_t max_body_bytes;     /* default 64 KiB */
  uint64_t read_timeout_ms;  /* to receive one whole request; default 10 s */
  uint64_t write_timeout_ms; /* for the client to take an answer; 10 s */
  uint64_t idle_timeout_ms;  /* keep-alive idle; default 60 s */
  const char *name;          /* for logs, e.g. "metrics" */
};

int carp_server_new(uv_loop_t *loop, const struct carp_server_options *opts,
                    struct carp_server **out);
/* methods is a mask of enum carp_server_method; exact path match. */
int carp_server_route(struct carp_server *s, const char *path, unsigned methods,
                      carp_server_handler handler, void *arg);
/* An answer of path (status 200) is shared by the requests (same query)
 * that arrive while another connection is still sending it, for up to
 * cache_ms after it was made: a flood of concurrent requests costs one
 * handler call per cache_ms and one copy of the answer, while a client
 * asking again after its answer arrived always gets a fresh one. */
int carp_server_route_cache(struct carp_server *s, const char *path,
                            uint64_t cache_ms);
/* For tests: handler calls made so far, bytes of answers waiting to be
 * taken by their clients, and open connections. */
uint64_t carp_server_handler_calls(const struct carp_server *s);
size_t carp_server_queued_bytes(const struct carp_server *s);
size_t carp_server_connections(const struct carp_server *s);
/* Binds and listens. */
int carp_server_start(struct carp_server *s);
/* The port actually bound (useful with port 0). */
int carp_server_port(const struct carp_server *s);
/* Stops accepting, closes every connection, and calls close_cb (if not
 * NULL) when the last handle is closed; the server is freed then. */
void carp_server_close(struct carp_server *s, void (*close_cb)(void *arg),
                       void *arg);

#endif
