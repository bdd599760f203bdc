/* server.c: the listening socket, routes and orderly shutdown of the small
 * HTTP server. Connections live in conn.c. The server is freed only after
 * its listener and every connection handle have finished closing, as
 * libuv's handle rules require. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "server_int.h"

int carp_server_new(uv_loop_t *loop, const struct carp_server_options *opts,
                    struct carp_server **out)
{
  struct carp_server *s;
  if (!loop || !opts || !out || opts->port < 0 || opts->port > 65535)
    return CARP_EINVAL;
  s = CARP_NEW(struct carp_server);
  s->loop = loop;
  s->opts = *opts;
  s->host = carp_strdup(opts->host ? opts->host : "127.0.0.1");
  s->name = carp_strdup(opts->name ? opts->name : "http");
  s->opts.host = s->host;
  s->opts.name = s->name;
  if (!s->opts.max_connections)
    s->opts.max_connections = 64;
  if (!s->opts.max_header_bytes)
    s->opts.max_header_bytes = 8 * 1024;
  if (!s->opts.max_body_bytes)
    s->opts.max_body_bytes = 64 * 1024;
  if (!s->opts.read_timeout_ms)
    s->opts.read_timeout_ms = 10 * 1000;
  if (!s->opts.write_timeout_ms)
    s->opts.write_timeout_ms = 10 * 1000;
  if (!s->opts.idle_timeout_ms)
    s->opts.idle_timeout_ms = 60 * 1000;
  s->port = opts->port;
  carp_logfold_init(&s->fold, 0, 0);
  *out = s;
  return 0;
}

int carp_server_route(struct carp_server *s, const char *path, unsigned methods,
                      carp_server_handler handler, void *arg)
{
  struct carp_server_route *r;
  if (!path || path[0] != '/' || !handler || !methods)
    return CARP_EINVAL;
  if (carp__server_find_route(s, path))
    return CARP_EEXIST;
  s->routes = carp_reallocarray(s->routes, s->nroutes + 1, sizeof(*s->routes));
  r = &s->routes[s->nroutes++];
  r->path = carp_strdup(path);
  r->methods = methods;
  r->handler = handler;
  r->arg = arg;
  r->cache_ms = 0;
  r->cached = NULL;
  return 0;
}

int carp_server_route_cache(struct carp_server *s, const char *path,
                            uint64_t cache_ms)
{
  struct carp_server_route *r = carp__server_find_route(s, path);
  if (!r)
    return CARP_ENOENT;
  r->cache_ms = cache_ms;
  return 0;
}

uint64_t carp_server_handler_calls(const struct carp_server *s)
{
  return s->handler_calls;
}

size_t carp_server_queued_bytes(const struct carp_server *s)
{
  const struct carp_server_conn *c;
  size_t n = 0;
  for (c = s->conns; c; c = c->next)
    n += c->queued_bytes;
  return n;
}

size_t carp_server_connections(const struct carp_server *s)
{
  return s->nconns;
}

struct carp_server_body *carp__server_body_ref(struct carp_server_body *b)
{
  b->refs++;
  return b;
}

void carp__server_body_unref(struct carp_server_body *b)
{
  if (!b || --b->refs > 0)
    return;
  carp_free(b->content_type);
  carp_free(b->query);
  carp_free(b->data);
  carp_free(b);
}

struct carp_server_route *carp__server_find_route(struct carp_server *s,
                                                  const char *path)
{
  size_t i;
  for (i = 0; i < s->nroutes; i++)
    if (strcmp(s->routes[i].path, path) == 0)
      return &s->routes[i];
  return NULL;
}

static void on_connection(uv_stream_t *listener, int status)
{
  struct carp_server *s =
      carp_container_of((uv_tcp_t *)listener, struct carp_server, listener);
  if (status < 0) {
    CARP_LOG_FOLDED(&s->fold, "accept", CARP_LOG_WARN, "server",
                    "accept failed", CARP_F_STR("server", s->name),
                    CARP_F_ERR(status));
    return;
  }
  carp__server_conn_accept(s);
}

int carp_server_start(struct carp_server *s)
{
  struct sockaddr_storage addr;
  struct sockaddr_storage bound;
  int rc, len = sizeof(bound);

  if (s->listening || s->closing)
    return CARP_EINVAL;
  rc = uv_ip4_addr(s->host, s->port, (struct sockaddr_in *)&addr);
  if (rc)
    rc = uv_ip6_addr(s->host, s->port, (struct sockaddr_in6 *)&addr);
  if (rc)
    return rc;
  rc = uv_tcp_init(s->loop, &s->listener);
  if (rc)
    return rc;
  s->open_handles++;
  s->listening = 1;
  rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
  if (!rc)
    rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
  if (!rc)
    rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &len);
  if (rc) {
    /* The handle was initialised, so it must be closed; the caller still
     * owns the server and will close it. */
    CARP_LOG_ERROR("server", "cannot listen", CARP_F_STR("server", s->name),
                   CARP_F_STR("host", s->host), CARP_F_INT("port", s->port),
                   CARP_F_ERR(rc));
    return rc;
  }
  if (bound.ss_family == AF_INET)
    s->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
  else
    s->port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
  CARP_LOG_INFO("server", "serving", CARP_F_STR("server", s->name),
                CARP_F_STR("host", s->host), CARP_F_INT("port", s->port));
  return 0;
}

int carp_server_port(const struct carp_server *s)
{
  return s->port;
}

static void server_free(struct carp_server *s)
{
  size_t i;
  void (*cb)(void *) = s->close_cb;
  void *arg = s->close_arg;
  for (i = 0; i < s->nroutes; i++) {
    carp_free(s->routes[i].path);
    carp__server_body_unref(s->routes[i].cached);
  }
  carp_logfold_free(&s->fold);
  carp_free(s->routes);
  carp_free(s->host);
  carp_free(s->name);
  carp_free(s);
  if (cb)
    cb(arg);
}

void carp__server_handle_closed(struct carp_server *s)
{
  s->open_handles--;
  if (s->closing && s->open_handles == 0)
    server_free(s);
}

static void on_listener_closed(uv_handle_t *h)
{
  struct carp_server *s =
      carp_container_of((uv_tcp_t *)h, struct carp_server, listener);
  carp__server_handle_closed(s);
}

void carp_server_close(struct carp_server *s, void (*close_cb)(void *arg),
                       void *arg)
{
  if (!s || s->closing)
    return;
  s->closing = 1;
  s->close_cb = close_cb;
  s->close_arg = arg;
  while (s->conns)
    carp__server_conn_close(s->conns);
  if (s->listening) {
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    return;
  }
  if (s->open_handles == 0)
    server_free(s);
}
