/* conn.c: one HTTP/1.1 connection of the small server.
 *
 * Bytes go to libhttp-parser, which calls back per request piece; a whole
 * request is dispatched to its route on message completion, and the answer
 * is queued with uv_write (libuv keeps writes in order, so pipelined
 * requests are answered in order). Limits: header and body sizes answer
 * 431 and 413 and close; a request must arrive within read_timeout_ms (408)
 * and an idle keep-alive connection closes after idle_timeout_ms; reading
 * pauses while more than max_output_bytes wait to be sent. */
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
  char *data;
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

static void on_handle_closed(uv_handle_t *h)
{
  struct carp_server_conn *c = h->data;
  struct carp_server *s = c->server;
  if (--c->handles_open == 0) {
    carp_buf_free(&c->url);
    carp_buf_free(&c->body);
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
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->prev = c->next = NULL;
  s->nconns--;
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void send_error(struct carp_server_conn *c, int status);

static void on_timeout(uv_timer_t *t)
{
  struct carp_server_conn *c = t->data;
  /* A request half sent gets an answer; an idle connection just closes. */
  if (c->in_message && !c->close_after_write)
    send_error(c, 408);
  else
    carp__server_conn_close(c);
}

static void arm_timer(struct carp_server_conn *c, uint64_t ms)
{
  if (!c->closing)
    uv_timer_start(&c->timer, on_timeout, ms, 0);
}

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
  int want = !c->closing && !c->close_after_write &&
             c->queued_bytes <= c->server->opts.max_output_bytes;
  if (want && !c->reading) {
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
      c->reading = 1;
  } else if (!want && c->reading) {
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
  }
}

static void on_written(uv_write_t *req, int status)
{
  struct write_req *w = carp_container_of(req, struct write_req, req);
  struct carp_server_conn *c = w->conn;
  c->queued_bytes -= w->len;
  carp_free(w->data);
  carp_free(w);
  if (c->closing)
    return;
  if (status < 0 || (c->close_after_write && c->queued_bytes == 0)) {
    carp__server_conn_close(c);
    return;
  }
  update_reading(c);
}

/* Queues one response. body may be NULL for HEAD and errors. */
static void send_response(struct carp_server_conn *c, int status,
                          const char *content_type, const char *body,
                          size_t body_len, int head_only,
                          const char *extra_headers, int keep_alive)
{
  struct carp_buf out;
  struct write_req *w;
  uv_buf_t ub;
  int rc;

  if (c->closing)
    return;
  carp_buf_init(&out, CARP_BUF_UNLIMITED);
  carp_buf_printf(&out,
                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                  "Content-Length: %zu\r\n%s%s\r\n",
                  status, status_text(status), content_type, body_len,
                  extra_headers ? extra_headers : "",
                  keep_alive ? "" : "Connection: close\r\n");
  if (body && body_len && !head_only)
    carp_buf_append(&out, body, body_len);
  w = CARP_NEW(struct write_req);
  w->conn = c;
  w->data = carp_buf_steal(&out, &w->len);
  ub = uv_buf_init(w->data, (unsigned)w->len);
  c->queued_bytes += w->len;
  if (!keep_alive)
    c->close_after_write = 1;
  rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, on_written);
  if (rc) {
    c->queued_bytes -= w->len;
    carp_free(w->data);
    carp_free(w);
    carp__server_conn_close(c);
    return;
  }
  update_reading(c);
}

static void send_error(struct carp_server_conn *c, int status)
{
  const char *text = status_text(status);
  send_response(c, status, "text/plain; charset=utf-8", text, strlen(text), 0,
                NULL, 0);
}

static int on_message_begin(http_parser *p)
{
  struct carp_server_conn *c = p->data;
  c->in_message = 1;
  c->header_bytes = 0;
  carp_buf_reset(&c->url);
  carp_buf_reset(&c->body);
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

static int on_message_complete(http_parser *p)
{
  struct carp_server_conn *c = p->data;
  struct carp_server *s = c->server;
  const struct carp_server_route *route;
  struct carp_server_request req;
  struct carp_server_response resp;
  char *url = c->url.ptr ? c->url.ptr : "";
  char *q = strchr(url, '?');
  int keep_alive = http_should_keep_alive(p) && !s->closing;
  unsigned bit = method_bit((enum http_method)p->method);

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
    send_response(c, 404, "text/plain; charset=utf-8", "Not Found", 9,
                  bit == CARP_SERVER_HEAD, NULL, keep_alive);
  } else if (!(route->methods & bit)) {
    struct carp_buf allow;
    carp_buf_init(&allow, 256);
    allow_header(route->methods, &allow);
    send_response(c, 405, "text/plain; charset=utf-8", "Method Not Allowed", 18,
                  bit == CARP_SERVER_HEAD, carp_buf_cstr(&allow), keep_alive);
    carp_buf_free(&allow);
  } else {
    resp.status = 200;
    resp.content_type = "text/plain; charset=utf-8";
    carp_buf_init(&resp.body, CARP_BUF_UNLIMITED);
    route->handler(&req, &resp, route->arg);
    send_response(c, resp.status, resp.content_type, resp.body.ptr,
                  resp.body.len, bit == CARP_SERVER_HEAD, NULL, keep_alive);
    carp_buf_free(&resp.body);
  }
  if (!c->closing && !c->close_after_write)
    arm_timer(c, s->opts.idle_timeout_ms);
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

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
  struct carp_server_conn *c = stream->data;
  size_t parsed;

  if (c->closing)
    return;
  if (nread < 0) {
    carp__server_conn_close(c);
    return;
  }
  if (nread == 0)
    return;
  parsed = http_parser_execute(&c->parser, &parser_settings, buf->base,
                               (size_t)nread);
  if (c->closing || c->close_after_write) {
    update_reading(c);
    return;
  }
  if (c->parser.http_errno != HPE_OK || parsed != (size_t)nread) {
    if (c->parser.upgrade)
      send_error(c, 400); /* no protocol upgrades here */
    else if (c->parser.http_errno != HPE_CB_url &&
             c->parser.http_errno != HPE_CB_header_field &&
             c->parser.http_errno != HPE_CB_header_value &&
             c->parser.http_errno != HPE_CB_body)
      send_error(c, 400);
  }
}

void carp__server_conn_accept(struct carp_server *s)
{
  struct carp_server_conn *c = CARP_NEW(struct carp_server_conn);
  int rc;

  c->server = s;
  carp_buf_init(&c->url, s->opts.max_header_bytes);
  carp_buf_init(&c->body, s->opts.max_body_bytes);
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
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp) != 0) {
    carp__server_conn_close(c);
    return;
  }
  if (s->nconns > s->opts.max_connections) {
    CARP_LOG_WARN("server", "too many connections, refusing one",
                  CARP_F_STR("server", s->name),
                  CARP_F_UINT("limit", s->opts.max_connections));
    send_error(c, 503);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
  arm_timer(c, s->opts.read_timeout_ms);
  update_reading(c);
}
