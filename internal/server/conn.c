/* conn.c: one HTTP/1.1 connection of the small server.
 *
 * Bytes go to libhttp-parser, which calls back per request piece; a whole
 * request is dispatched to its route on message completion and the parser
 * is paused there. Whatever else the read brought (pipelined requests)
 * waits in `pending`, and nothing more is read, until the answer has been
 * handed to the kernel; then parsing resumes. So one read never costs more
 * than one handler call, a client that pipelines without reading holds one
 * answer at a time, and every connection gets its turn on the loop.
 *
 * Limits: header and body sizes answer 431 and 413 and close; a request
 * must arrive within read_timeout_ms (408), an answer must be taken within
 * write_timeout_ms, and an idle keep-alive connection closes after
 * idle_timeout_ms. At max_connections a new connection closes the least
 * recently active one instead of being refused: idle or stalled clients
 * cannot starve a probe. */
#include <string.h>
#include <strings.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "server_int.h"

struct write_req {
  uv_write_t req;
  struct carp_server_conn *conn;
  size_t len;
  char *head; /* status line and headers */
  struct carp_server_body *body;
};

static const http_parser_settings parser_settings;

static const char *status_text(int status)
{
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 413:
    return "Payload Too Large";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  }
  return "Unknown";
}

/* ---- the list, most recently active first ---- */

static void list_unlink(struct carp_server *s, struct carp_server_conn *c)
{
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    s->conns_tail = c->prev;
  c->prev = c->next = NULL;
}

static void list_push_front(struct carp_server *s, struct carp_server_conn *c)
{
  c->prev = NULL;
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  else
    s->conns_tail = c;
  s->conns = c;
}

static void touch(struct carp_server_conn *c)
{
  struct carp_server *s = c->server;
  if (s->conns == c || c->closing)
    return;
  list_unlink(s, c);
  list_push_front(s, c);
}

/* ---- closing ---- */

static void on_handle_closed(uv_handle_t *h)
{
  struct carp_server_conn *c = h->data;
  struct carp_server *s = c->server;
  if (--c->handles_open == 0) {
    carp_buf_free(&c->url);
    carp_buf_free(&c->body);
    carp_buf_free(&c->pending);
    carp_free(c);
  }
  carp__server_handle_closed(s);
}

void carp__server_conn_close(struct carp_server_conn *c)
{
  struct carp_server *s = c->server;
  if (c->closing)
    return;
  c->closing = 1;
  list_unlink(s, c);
  s->nconns--;
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void send_error(struct carp_server_conn *c, int status);

static void on_timeout(uv_timer_t *t)
{
  struct carp_server_conn *c = t->data;
  /* A request half sent gets an answer; a client that does not take its
   * answer, or an idle connection, is just closed. */
  if (c->in_message && !c->close_after_write && !c->busy)
    send_error(c, 408);
  else
    carp__server_conn_close(c);
}

static void arm_timer(struct carp_server_conn *c, uint64_t ms)
{
  if (!c->closing)
    uv_timer_start(&c->timer, on_timeout, ms, 0);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
  static char slab[16 * 1024]; /* the loop is single-threaded */
  (void)h;
  (void)suggested;
  buf->base = slab;
  buf->len = sizeof(slab);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void update_reading(struct carp_server_conn *c)
{
  int want =
      !c->closing && !c->close_after_write && !c->busy && c->pending.len == 0;
  if (want && !c->reading) {
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
      c->reading = 1;
  } else if (!want && c->reading) {
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
  }
}

static void feed(struct carp_server_conn *c, const char *data, size_t len);

/* The answer in hand is sent: the next pipelined request may go. */
static void resume(struct carp_server_conn *c)
{
  struct carp_buf rest;
  c->busy = 0;
  arm_timer(c, c->server->opts.idle_timeout_ms);
  http_parser_pause(&c->parser, 0);
  if (!c->pending.len) {
    update_reading(c);
    return;
  }
  /* feed() may keep a tail of these bytes in pending again. */
  rest = c->pending;
  carp_buf_init(&c->pending, rest.max);
  feed(c, rest.ptr, rest.len);
  carp_buf_free(&rest);
}

/* ---- writing ---- */

static void write_free(struct write_req *w)
{
  carp_free(w->head);
  carp__server_body_unref(w->body);
  carp_free(w);
}

static void on_written(uv_write_t *req, int status)
{
  struct write_req *w = carp_container_of(req, struct write_req, req);
  struct carp_server_conn *c = w->conn;
  c->queued_bytes -= w->len;
  write_free(w);
  if (c->closing)
    return;
  if (status < 0 || (c->close_after_write && c->queued_bytes == 0)) {
    carp__server_conn_close(c);
    return;
  }
  if (c->busy && c->queued_bytes == 0)
    resume(c);
}

static struct carp_server_body *body_new(int status, const char *content_type,
                                         char *data, size_t len)
{
  struct carp_server_body *b = CARP_NEW(struct carp_server_body);
  b->refs = 1;
  b->status = status;
  b->content_type = carp_strdup(content_type);
  b->data = data;
  b->len = len;
  return b;
}

static struct carp_server_body *body_text(int status, const char *text)
{
  return body_new(status, "text/plain; charset=utf-8", carp_strdup(text),
                  strlen(text));
}

/* Queues one answer; takes the caller's reference to body. */
static void send_body(struct carp_server_conn *c, struct carp_server_body *body,
                      int head_only, const char *extra_headers, int keep_alive)
{
  struct carp_buf head;
  struct write_req *w;
  uv_buf_t ub[2];
  int rc, n = 1;

  if (c->closing) {
    carp__server_body_unref(body);
    return;
  }
  carp_buf_init(&head, CARP_BUF_UNLIMITED);
  carp_buf_printf(&head,
                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                  "Content-Length: %zu\r\n%s%s\r\n",
                  body->status, status_text(body->status), body->content_type,
                  body->len, extra_headers ? extra_headers : "",
                  keep_alive ? "" : "Connection: close\r\n");
  w = CARP_NEW(struct write_req);
  w->conn = c;
  w->body = body;
  w->head = carp_buf_steal(&head, &w->len);
  ub[0] = uv_buf_init(w->head, (unsigned)w->len);
  if (body->len && !head_only) {
    ub[1] = uv_buf_init(body->data, (unsigned)body->len);
    w->len += body->len;
    n = 2;
  }
  c->queued_bytes += w->len;
  if (!keep_alive)
    c->close_after_write = 1;
  /* Until it is sent, nothing more is read or parsed; the client has
   * write_timeout_ms to take it. */
  c->busy = 1;
  arm_timer(c, c->server->opts.write_timeout_ms);
  rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, ub, (unsigned)n, on_written);
  if (rc) {
    c->queued_bytes -= w->len;
    write_free(w);
    carp__server_conn_close(c);
    return;
  }
  update_reading(c);
}

static void send_error(struct carp_server_conn *c, int status)
{
  send_body(c, body_text(status, status_text(status)), 0, NULL, 0);
}

/* ---- parser callbacks ---- */

static int on_message_begin(http_parser *p)
{
  struct carp_server_conn *c = p->data;
  c->in_message = 1;
  c->header_bytes = 0;
  carp_buf_reset(&c->url);
  carp_buf_reset(&c->body);
  touch(c);
  arm_timer(c, c->server->opts.read_timeout_ms);
  return 0;
}

static int count_header_bytes(struct carp_server_conn *c, size_t len)
{
  c->header_bytes += len;
  if (c->header_bytes > c->server->opts.max_header_bytes) {
    send_error(c, 431);
    return -1;
  }
  return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
  struct carp_server_conn *c = p->data;
  if (count_header_bytes(c, len))
    return -1;
  carp_buf_append(&c->url, at, len);
  return 0;
}

static int on_header_piece(http_parser *p, const char *at, size_t len)
{
  (void)at;
  return count_header_bytes(p->data, len + 4); /* ": " and CRLF */
}

static int on_body(http_parser *p, const char *at, size_t len)
{
  struct carp_server_conn *c = p->data;
  if (c->body.len + len > c->server->opts.max_body_bytes) {
    send_error(c, 413);
    return -1;
  }
  carp_buf_append(&c->body, at, len);
  return 0;
}

static unsigned method_bit(enum http_method m)
{
  switch (m) {
  case HTTP_GET:
    return CARP_SERVER_GET;
  case HTTP_HEAD:
    return CARP_SERVER_HEAD;
  case HTTP_POST:
    return CARP_SERVER_POST;
  default:
    return 0;
  }
}

static void allow_header(unsigned methods, struct carp_buf *out)
{
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {{CARP_SERVER_GET, "GET"},
               {CARP_SERVER_HEAD, "HEAD"},
               {CARP_SERVER_POST, "POST"}};
  size_t i;
  int first = 1;
  carp_buf_puts(out, "Allow: ");
  for (i = 0; i < CARP_ARRAY_LEN(names); i++) {
    if (!(methods & names[i].bit))
      continue;
    carp_buf_printf(out, "%s%s", first ? "" : ", ", names[i].name);
    first = 0;
  }
  carp_buf_puts(out, "\r\n");
}

/* The route's answer: the cached one while another connection is still
 * sending it and it is younger than cache_ms (only concurrent requests
 * share an answer, so a client asking again after its answer always gets
 * a fresh one), else the handler's. */
static struct carp_server_body *answer(struct carp_server *s,
                                       struct carp_server_route *route,
                                       const struct carp_server_request *req)
{
  struct carp_server_response resp;
  struct carp_server_body *b;
  uint64_t now = uv_now(s->loop);
  char *data;
  size_t len;
  if (route->cached && route->cached->refs > 1 &&
      now - route->cached->made_ms < route->cache_ms &&
      !strcmp(route->cached->query, req->query))
    return carp__server_body_ref(route->cached);
  resp.status = 200;
  resp.content_type = "text/plain; charset=utf-8";
  carp_buf_init(&resp.body, CARP_BUF_UNLIMITED);
  s->handler_calls++;
  route->handler(req, &resp, route->arg);
  data = carp_buf_steal(&resp.body, &len);
  b = body_new(resp.status, resp.content_type, data, len);
  b->made_ms = now;
  b->query = carp_strdup(req->query);
  if (route->cache_ms && resp.status == 200 && !req->body_len) {
    carp__server_body_unref(route->cached);
    route->cached = carp__server_body_ref(b);
  }
  return b;
}

static int on_message_complete(http_parser *p)
{
  struct carp_server_conn *c = p->data;
  struct carp_server *s = c->server;
  struct carp_server_route *route;
  struct carp_server_request req;
  char *url = c->url.ptr ? c->url.ptr : "";
  char *q = strchr(url, '?');
  int keep_alive = http_should_keep_alive(p) && !s->closing;
  unsigned bit = method_bit((enum http_method)p->method);
  int head_only = bit == CARP_SERVER_HEAD;

  c->in_message = 0;
  if (q)
    *q++ = '\0';
  memset(&req, 0, sizeof(req));
  req.method = http_method_str((enum http_method)p->method);
  req.path = url;
  req.query = q ? q : "";
  req.body = carp_buf_cstr(&c->body);
  req.body_len = c->body.len;

  route = carp__server_find_route(s, req.path);
  if (!route) {
    send_body(c, body_text(404, "Not Found"), head_only, NULL, keep_alive);
  } else if (!(route->methods & bit)) {
    struct carp_buf allow;
    carp_buf_init(&allow, 256);
    allow_header(route->methods, &allow);
    send_body(c, body_text(405, "Method Not Allowed"), head_only,
              carp_buf_cstr(&allow), keep_alive);
    carp_buf_free(&allow);
  } else {
    send_body(c, answer(s, route, &req), head_only, NULL, keep_alive);
  }
  /* One request at a time: the parser stops here and resumes once the
   * answer is sent. */
  if (!c->closing)
    http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_piece,
    .on_header_value = on_header_piece,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Parses data up to the end of the first complete request; the rest is
 * kept in pending for after its answer. */
static void feed(struct carp_server_conn *c, const char *data, size_t len)
{
  size_t parsed = http_parser_execute(&c->parser, &parser_settings, data, len);
  enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);

  if (c->closing)
    return;
  if (e == HPE_PAUSED) {
    if (parsed < len && !c->close_after_write)
      carp_buf_append(&c->pending, data + parsed, len - parsed);
    update_reading(c);
    return;
  }
  if (c->close_after_write) {
    update_reading(c);
    return;
  }
  if (e != HPE_OK || parsed != len) {
    if (c->parser.upgrade)
      send_error(c, 400); /* no protocol upgrades here */
    else if (e != HPE_CB_url && e != HPE_CB_header_field &&
             e != HPE_CB_header_value && e != HPE_CB_body)
      send_error(c, 400);
  }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
  struct carp_server_conn *c = stream->data;
  if (c->closing)
    return;
  if (nread < 0) {
    carp__server_conn_close(c);
    return;
  }
  if (nread > 0)
    feed(c, buf->base, (size_t)nread);
}

/* ---- accepting ---- */

/* Closes the least recently active connection to make room. */
static void evict(struct carp_server *s)
{
  struct carp_server_conn *victim = s->conns_tail;
  if (!victim)
    return;
  CARP_LOG_FOLDED(&s->fold, "evict", CARP_LOG_WARN, "server",
                  "connection limit reached, closing the least recently "
                  "active connection",
                  CARP_F_STR("server", s->name),
                  CARP_F_UINT("limit", s->opts.max_connections));
  carp__server_conn_close(victim);
}

void carp__server_conn_accept(struct carp_server *s)
{
  struct carp_server_conn *c = CARP_NEW(struct carp_server_conn);
  int rc;

  c->server = s;
  carp_buf_init(&c->url, s->opts.max_header_bytes);
  carp_buf_init(&c->body, s->opts.max_body_bytes);
  /* At most one read's worth: nothing is read while it holds bytes. */
  carp_buf_init(&c->pending, 64 * 1024);
  rc = uv_tcp_init(s->loop, &c->tcp);
  if (rc) {
    carp_free(c);
    return;
  }
  c->tcp.data = c;
  rc = uv_timer_init(s->loop, &c->timer);
  if (rc) {
    /* Only the tcp handle exists: close it alone. */
    c->handles_open = 1;
    c->closing = 1;
    s->open_handles++;
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    return;
  }
  c->timer.data = c;
  c->handles_open = 2;
  s->open_handles += 2;
  if (s->nconns >= s->opts.max_connections)
    evict(s);
  list_push_front(s, c);
  s->nconns++;
  if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp) != 0) {
    carp__server_conn_close(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
  arm_timer(c, s->opts.read_timeout_ms);
  update_reading(c);
}
