/* test_kube_requests.c: the Kubernetes client hands at most
 * CARP_KUBE_MAX_REQUESTS requests (watches aside) to the HTTP client at
 * once; a burst beyond that waits in its queue, without curl handles,
 * and every request of the burst still gets its answer. Over HTTP/1.1 the
 * watches hold a connection each, however many there are, and requests
 * still get theirs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../internal/kube/client_int.h"
#include "carpenter/alloc.h"
#include "carpenter/kube.h"
#include "carpenter/server.h"

#define BURST (3 * CARP_KUBE_MAX_REQUESTS + 5)

struct burst {
  struct carp_kube *k;
  struct carp_server *server;
  int answered, ok, most_in_flight;
};

static void on_event(const struct carp_server_request *req,
                     struct carp_server_response *resp, void *arg)
{
  (void)req;
  (void)arg;
  resp->status = 200;
  resp->content_type = "application/json";
  carp_buf_puts(&resp->body, "{\"kind\":\"Event\"}");
}

static void on_answer(const struct carp_kube_result *res, void *arg)
{
  struct burst *b = arg;
  b->answered++;
  if (!res->err && res->status == 200)
    b->ok++;
  if (b->k->requests > b->most_in_flight)
    b->most_in_flight = b->k->requests;
  if (b->answered == BURST) {
    carp_kube_close(b->k, NULL, NULL);
    carp_server_close(b->server, NULL, NULL);
  }
}

static void test_burst_is_capped(void **state)
{
  struct carp_server_options so;
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct carp_kube_request r;
  struct burst b;
  uv_loop_t loop;
  char url[64];
  int i;
  (void)state;

  memset(&b, 0, sizeof(b));
  assert_int_equal(uv_loop_init(&loop), 0);
  memset(&so, 0, sizeof(so));
  so.max_connections = 4 * CARP_KUBE_MAX_REQUESTS;
  assert_int_equal(carp_server_new(&loop, &so, &b.server), 0);
  assert_int_equal(carp_server_route(b.server, "/api/v1/events",
                                     CARP_SERVER_POST, on_event, NULL),
                   0);
  assert_int_equal(carp_server_start(b.server), 0);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", carp_server_port(b.server));
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = url;
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  ko.qps = 1e6;
  ko.burst = 10 * BURST; /* the rate limit stays out of the way */
  assert_int_equal(carp_kube_new(&loop, &ko, &b.k), 0);

  memset(&r, 0, sizeof(r));
  r.method = "POST";
  r.path = "/api/v1/events";
  r.content_type = "application/json";
  r.body = "{}";
  r.body_len = 2;
  for (i = 0; i < BURST; i++) {
    assert_int_equal(carp_kube_call(b.k, &r, on_answer, &b, NULL), 0);
    assert_true(b.k->requests <= CARP_KUBE_MAX_REQUESTS);
  }
  /* Full, with the rest queued, before any answer. */
  assert_int_equal(b.k->requests, CARP_KUBE_MAX_REQUESTS);
  assert_non_null(b.k->rate_head);

  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(b.answered, BURST);
  assert_int_equal(b.ok, BURST);
  assert_true(b.most_in_flight <= CARP_KUBE_MAX_REQUESTS);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* --- watches beside requests ---
 * A bare HTTP/1.1 server: a request for /watch gets its headers and then
 * nothing (a watch with no events, its connection held); anything else
 * an empty 200 at once. Each request comes on its own connection here,
 * as curl reuses a connection only once an answer has ended. */

#define WATCHES (CARP_KUBE_MAX_REQUESTS + 6)
#define CALLS   (2 * CARP_KUBE_MAX_REQUESTS)

struct held {
  uv_tcp_t listener;
  uv_tcp_t conns[WATCHES + CALLS + 8];
  char seen[WATCHES + CALLS + 8][256];
  size_t nseen[WATCHES + CALLS + 8];
  int nconns, watching, answered, gave_up;
  uv_timer_t give_up; /* turns a hang into a failure */
  struct carp_kube *k;
};

static void on_give_up(uv_timer_t *t)
{
  struct held *h = t->loop->data;
  h->gave_up = 1;
}

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
  static char space[4096];
  (void)h;
  (void)size;
  *buf = uv_buf_init(space, sizeof(space));
}

static void on_written(uv_write_t *w, int status)
{
  (void)status;
  free(w);
}

static void reply(uv_tcp_t *t, const char *text)
{
  uv_write_t *w = malloc(sizeof(*w));
  uv_buf_t b = uv_buf_init((char *)text, (unsigned)strlen(text));
  assert_non_null(w);
  assert_int_equal(uv_write(w, (uv_stream_t *)t, &b, 1, on_written), 0);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
  struct held *h = st->loop->data;
  size_t i = (size_t)((uv_tcp_t *)st - h->conns);
  size_t room = sizeof(h->seen[i]) - 1 - h->nseen[i];
  int watch;
  if (n <= 0)
    return;
  if ((size_t)n > room)
    n = (ssize_t)room;
  memcpy(h->seen[i] + h->nseen[i], buf->base, (size_t)n);
  h->nseen[i] += (size_t)n;
  h->seen[i][h->nseen[i]] = '\0';
  if (!strstr(h->seen[i], "\r\n\r\n"))
    return;
  watch = !strncmp(h->seen[i], "GET /watch", 10);
  h->nseen[i] = 0;
  if (watch) {
    h->watching++;
    reply((uv_tcp_t *)st, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
                          "\r\nTransfer-Encoding: chunked\r\n\r\n");
    return;
  }
  reply((uv_tcp_t *)st, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
                        "\r\nContent-Length: 2\r\n\r\n{}");
}

static void on_conn(uv_stream_t *server, int status)
{
  struct held *h = server->loop->data;
  uv_tcp_t *t;
  assert_int_equal(status, 0);
  assert_true(h->nconns < (int)CARP_ARRAY_LEN(h->conns));
  t = &h->conns[h->nconns++];
  assert_int_equal(uv_tcp_init(server->loop, t), 0);
  assert_int_equal(uv_accept(server, (uv_stream_t *)t), 0);
  assert_int_equal(uv_read_start((uv_stream_t *)t, on_alloc, on_read), 0);
}

static int on_watch_frame(const char *json, size_t len, void *arg)
{
  (void)json;
  (void)len;
  (void)arg;
  return 0;
}

static void on_watch_done(int err, const char *message, void *arg)
{
  (void)err;
  (void)message;
  (void)arg;
}

/* The client closed: the server's handles go too. */
static void on_kube_closed(void *arg)
{
  struct held *h = arg;
  int i;
  uv_close((uv_handle_t *)&h->listener, NULL);
  uv_close((uv_handle_t *)&h->give_up, NULL);
  for (i = 0; i < h->nconns; i++)
    uv_close((uv_handle_t *)&h->conns[i], NULL);
}

static void on_call(const struct carp_kube_result *res, void *arg)
{
  struct held *h = arg;
  assert_int_equal(res->err, 0);
  if (++h->answered == CALLS)
    carp_kube_close(h->k, on_kube_closed, h);
}

static void test_watches_leave_requests_room(void **state)
{
  static struct held h;
  struct sockaddr_in addr;
  struct sockaddr_storage name;
  int namelen = sizeof(name);
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct carp_kube_request r;
  uv_loop_t loop;
  char url[64];
  int i;
  (void)state;

  memset(&h, 0, sizeof(h));
  assert_int_equal(uv_loop_init(&loop), 0);
  loop.data = &h;
  assert_int_equal(uv_tcp_init(&loop, &h.listener), 0);
  assert_int_equal(uv_ip4_addr("127.0.0.1", 0, &addr), 0);
  assert_int_equal(uv_tcp_bind(&h.listener, (const struct sockaddr *)&addr, 0),
                   0);
  assert_int_equal(uv_listen((uv_stream_t *)&h.listener, 128, on_conn), 0);
  assert_int_equal(
      uv_tcp_getsockname(&h.listener, (struct sockaddr *)&name, &namelen), 0);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d",
           ntohs(((struct sockaddr_in *)&name)->sin_port));
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = url;
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  ko.qps = 1e6;
  ko.burst = 1000;
  assert_int_equal(carp_kube_new(&loop, &ko, &h.k), 0);
  assert_int_equal(uv_timer_init(&loop, &h.give_up), 0);
  assert_int_equal(uv_timer_start(&h.give_up, on_give_up, 60000, 0), 0);
  for (i = 0; i < WATCHES; i++)
    assert_int_equal(carp_kube_watch(h.k, "/watch", NULL, on_watch_frame,
                                     on_watch_done, NULL, NULL),
                     0);
  /* More watches than requests may have connections: all get one. */
  while (h.watching < WATCHES && !h.gave_up)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(h.watching, WATCHES);
  memset(&r, 0, sizeof(r));
  r.method = "POST";
  r.path = "/api/v1/events";
  r.content_type = "application/json";
  r.body = "{}";
  r.body_len = 2;
  for (i = 0; i < CALLS; i++)
    assert_int_equal(carp_kube_call(h.k, &r, on_call, &h, NULL), 0);
  while (h.answered < CALLS && !h.gave_up)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(h.answered, CALLS);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_burst_is_capped),
      cmocka_unit_test(test_watches_leave_requests_room),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
