/* Private structures of the HTTP server: the listener (server.c) and its
 * connections (conn.c). */
#ifndef CARP_SERVER_INT_H
#define CARP_SERVER_INT_H

#include <http_parser.h>

#include "carpenter/logfold.h"
#include "carpenter/server.h"

/* An answer's body, shared by the writes that send it and by the route's
 * cache; freed with its last reference. */
struct carp_server_body {
  size_t refs;
  int status;
  char *content_type;
  char *query; /* of the request it answered (cache key) */
  char *data;
  size_t len;
  uint64_t made_ms; /* loop time */
};

struct carp_server_route {
  char *path;
  unsigned methods;
  carp_server_handler handler;
  void *arg;
  uint64_t cache_ms;
  struct carp_server_body *cached;
};

struct carp_server_conn;

struct carp_server {
  uv_loop_t *loop;
  uv_tcp_t listener;
  struct carp_server_options opts;
  char *host;
  char *name;
  int port;
  int listening;
  int closing;
  size_t open_handles; /* listener plus every connection's handles */
  struct carp_server_route *routes;
  size_t nroutes;
  /* Doubly linked, most recently active first: the tail is the one to
   * close when a new connection needs room. */
  struct carp_server_conn *conns, *conns_tail;
  size_t nconns;
  uint64_t handler_calls;
  struct carp_logfold fold; /* evictions and accept errors */
  void (*close_cb)(void *arg);
  void *close_arg;
};

struct carp_server_conn {
  struct carp_server *server;
  uv_tcp_t tcp;
  uv_timer_t timer;
  http_parser parser;
  struct carp_server_conn *prev, *next;
  struct carp_buf url;
  struct carp_buf body;
  struct carp_buf pending; /* read, not parsed: waits for the answer */
  size_t header_bytes;
  size_t queued_bytes; /* written but not yet flushed */
  int in_message;      /* between message begin and complete */
  int busy;            /* a request answered, its answer not yet sent */
  int reading;
  int closing;
  int close_after_write;
  int handles_open; /* tcp and timer still to be closed */
};

void carp__server_conn_accept(struct carp_server *s);
void carp__server_conn_close(struct carp_server_conn *c);
/* Called when a handle of the server or a connection finishes closing. */
void carp__server_handle_closed(struct carp_server *s);
struct carp_server_route *carp__server_find_route(struct carp_server *s,
                                                  const char *path);
struct carp_server_body *carp__server_body_ref(struct carp_server_body *b);
void carp__server_body_unref(struct carp_server_body *b);

#endif
