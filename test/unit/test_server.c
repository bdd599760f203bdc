/* Unit tests for internal/server: a client thread speaks raw HTTP/1.1 to
 * the server running on the test's loop, and checks every answer byte for
 * byte where it matters: routing, keep-alive, pipelining, HEAD, limits and
 * timeouts, and a clean shutdown (uv_loop_close() == 0). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "carpenter/log.h"
#include "carpenter/error.h"
#include "carpenter/server.h"

struct fixture {
  uv_loop_t loop;
  uv_async_t done;
  struct carp_server *server;
  int port;
  pthread_t thread;
  int ready_calls;
  int run_rc;
};

static void handle_health(const struct carp_server_request *req,
                          struct carp_server_response *resp, void *arg)
{
  carp_buf_puts(&resp->body, "ok");
}

/* A 64 KiB answer (BIG_BYTES of 'x'). */
#define BIG_BYTES (64 * 1024)
static void handle_big(const struct carp_server_request *req,
                       struct carp_server_response *resp, void *arg)
{
  (void)arg;
  carp_buf_printf(&resp->body, "%s.", req->query);
  while (resp->body.len < BIG_BYTES)
    carp_buf_putc(&resp->body, 'x');
}

/* Reports, from the loop's own thread, what the server holds. */
static void handle_stats(const struct carp_server_request *req,
                         struct carp_server_response *resp, void *arg)
{
  struct fixture *f = arg;
  (void)req;
  carp_buf_printf(&resp->body, "calls=%llu queued=%zu conns=%zu end",
                  (unsigned long long)carp_server_handler_calls(f->server),
                  carp_server_queued_bytes(f->server),
                  carp_server_connections(f->server));
}

static void handle_echo(const struct carp_server_request *req,
                        struct carp_server_response *resp, void *arg)
{
  struct fixture *f = arg;
  f->ready_calls++;
  resp->content_type = "application/json";
  carp_buf_printf(&resp->body, "%s %s ?%s body=%.*s", req->method, req->path,
                  req->query, (int)req->body_len, req->body);
}

static int connect_to(int port)
{
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void send_all(int fd, const char *s)
{
  size_t len = strlen(s), off = 0;
  while (off < len) {
    ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);
    if (n <= 0)
      return;
    off += (size_t)n;
  }
}

/* Reads until want bytes are in, the peer closes, or timeout_ms passes.
 * Returns bytes read; *closed tells whether the peer closed. */
static size_t recv_until(int fd, char *buf, size_t cap, const char *want,
                         int timeout_ms, int *closed)
{
  size_t len = 0;
  *closed = 0;
  buf[0] = '\0';
  while (len + 1 < cap) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n;
    if (want && strstr(buf, want))
      break;
    if (poll(&p, 1, timeout_ms) <= 0)
      break;
    n = recv(fd, buf + len, cap - 1 - len, 0);
    if (n <= 0) {
      *closed = 1;
      break;
    }
    len += (size_t)n;
    buf[len] = '\0';
  }
  return len;
}

static int count(const char *hay, const char *needle)
{
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

static void on_done(uv_async_t *a)
{
  struct fixture *f = a->data;
  carp_server_close(f->server, NULL, NULL);
  uv_close((uv_handle_t *)&f->done, NULL);
}

/* The loop runs on a thread of its own so that the client, which makes
 * the assertions, can run on the main thread (cmocka must not longjmp
 * from another thread). */
static void *loop_main(void *arg)
{
  struct fixture *f = arg;
  f->run_rc = uv_run(&f->loop, UV_RUN_DEFAULT);
  return NULL;
}

static uint64_t big_cache_ms; /* set by a test before run_with_client */

static void run_with_client(void (*client)(struct fixture *f),
                            struct carp_server_options opts)
{
  struct fixture f;
  memset(&f, 0, sizeof(f));
  assert_int_equal(uv_loop_init(&f.loop), 0);
  opts.host = "127.0.0.1";
  opts.port = 0;
  assert_int_equal(carp_server_new(&f.loop, &opts, &f.server), 0);
  assert_int_equal(carp_server_route(f.server, "/healthz",
                                     CARP_SERVER_GET | CARP_SERVER_HEAD,
                                     handle_health, &f),
                   0);
  assert_int_equal(carp_server_route(f.server, "/echo",
                                     CARP_SERVER_GET | CARP_SERVER_POST,
                                     handle_echo, &f),
                   0);
  assert_int_equal(
      carp_server_route(f.server, "/echo", CARP_SERVER_GET, handle_echo, &f),
      CARP_EEXIST);
  assert_int_equal(
      carp_server_route(f.server, "/big", CARP_SERVER_GET, handle_big, &f), 0);
  assert_int_equal(
      carp_server_route(f.server, "/stats", CARP_SERVER_GET, handle_stats, &f),
      0);
  assert_int_equal(carp_server_route_cache(f.server, "/nope", 1), CARP_ENOENT);
  if (big_cache_ms)
    assert_int_equal(carp_server_route_cache(f.server, "/big", big_cache_ms),
                     0);
  assert_int_equal(carp_server_start(f.server), 0);
  f.port = carp_server_port(f.server);
  assert_true(f.port > 0);
  assert_int_equal(uv_async_init(&f.loop, &f.done, on_done), 0);
  f.done.data = &f;
  assert_int_equal(pthread_create(&f.thread, NULL, loop_main, &f), 0);
  client(&f);
  uv_async_send(&f.done);
  pthread_join(f.thread, NULL);
  assert_int_equal(f.run_rc, 0);
  /* Every handle the server opened has been closed. */
  assert_int_equal(uv_loop_close(&f.loop), 0);
}

static char rbuf[1 << 16];

static void client_basic(struct fixture *f)
{
  int closed, fd = connect_to(f->port);
  assert_true(fd >= 0);
  send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), "\r\n\r\nok", 2000, &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(rbuf, "Content-Length: 2\r\n"));
  assert_null(strstr(rbuf, "Connection: close"));
  /* Keep-alive: a second request on the same connection. */
  send_all(fd, "GET /echo?a=1&b=2 HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), "body=", 2000, &closed);
  assert_non_null(strstr(rbuf, "Content-Type: application/json\r\n"));
  assert_non_null(strstr(rbuf, "GET /echo ?a=1&b=2 body="));
  /* A POST body. */
  send_all(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
               "hello");
  recv_until(fd, rbuf, sizeof(rbuf), "body=hello", 2000, &closed);
  assert_non_null(strstr(rbuf, "POST /echo ? body=hello"));
  /* 404 and 405 (with Allow). */
  send_all(fd, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), "Not Found", 2000, &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 404 Not Found\r\n"));
  send_all(fd, "DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), "\r\n\r\nMethod Not Allowed", 2000,
             &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 405 Method Not Allowed\r\n"));
  assert_non_null(strstr(rbuf, "Allow: GET, HEAD\r\n"));
  /* HEAD: headers with the length, no body. */
  send_all(fd, "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), "\r\n\r\n", 2000, &closed);
  assert_non_null(strstr(rbuf, "Content-Length: 2\r\n"));
  assert_null(strstr(rbuf, "\r\n\r\nok"));
  assert_false(closed);
  close(fd);
}

static void client_pipelined(struct fixture *f)
{
  int closed, fd = connect_to(f->port);
  send_all(fd, "GET /echo?n=1 HTTP/1.1\r\nHost: x\r\n\r\n"
               "GET /echo?n=2 HTTP/1.1\r\nHost: x\r\n\r\n"
               "GET /echo?n=3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               "\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), NULL, 2000, &closed);
  assert_true(closed); /* the last request asked to close */
  assert_int_equal(count(rbuf, "HTTP/1.1 200 OK"), 3);
  {
    const char *a = strstr(rbuf, "?n=1"), *b = strstr(rbuf, "?n=2"),
               *c = strstr(rbuf, "?n=3");
    assert_true(a && b && c && a < b && b < c);
  }
  assert_int_equal(count(rbuf, "Connection: close"), 1);
  close(fd);
  /* HTTP/1.0 closes by default. */
  fd = connect_to(f->port);
  send_all(fd, "GET /healthz HTTP/1.0\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), NULL, 2000, &closed);
  assert_true(closed);
  assert_non_null(strstr(rbuf, "Connection: close\r\n"));
  close(fd);
}

static void client_limits(struct fixture *f)
{
  static char big[20000];
  int closed, fd;

  /* Headers over the limit. */
  fd = connect_to(f->port);
  memset(big, 'a', sizeof(big) - 1);
  send_all(fd, "GET /healthz HTTP/1.1\r\nX-Big: ");
  send_all(fd, big);
  send_all(fd, "\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), NULL, 2000, &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 431 "));
  assert_true(closed);
  close(fd);

  /* A body over the limit. */
  fd = connect_to(f->port);
  send_all(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 19999\r\n"
               "\r\n");
  send_all(fd, big);
  recv_until(fd, rbuf, sizeof(rbuf), NULL, 2000, &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 413 "));
  assert_true(closed);
  close(fd);

  /* Not HTTP at all. */
  fd = connect_to(f->port);
  send_all(fd, "\x01\x02 garbage\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), NULL, 2000, &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 400 "));
  assert_true(closed);
  close(fd);

  /* Connection limit (4 in this test): a fifth connection is served, and
   * the least recently active one (the first, idle) makes room for it. */
  {
    int fds[5];
    for (int i = 0; i < 4; i++) {
      fds[i] = connect_to(f->port);
      usleep(20 * 1000);
    }
    /* The others have been active since the first. */
    for (int i = 1; i < 4; i++) {
      send_all(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
      recv_until(fds[i], rbuf, sizeof(rbuf), "\r\n\r\nok", 2000, &closed);
      assert_non_null(strstr(rbuf, "200 OK"));
    }
    fds[4] = connect_to(f->port);
    send_all(fds[4], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    recv_until(fds[4], rbuf, sizeof(rbuf), "\r\n\r\nok", 2000, &closed);
    assert_non_null(strstr(rbuf, "HTTP/1.1 200 OK"));
    recv_until(fds[0], rbuf, sizeof(rbuf), NULL, 2000, &closed);
    assert_true(closed);
    for (int i = 1; i < 4; i++) {
      send_all(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
      recv_until(fds[i], rbuf, sizeof(rbuf), "\r\n\r\nok", 2000, &closed);
      assert_non_null(strstr(rbuf, "200 OK"));
    }
    for (int i = 0; i < 5; i++)
      close(fds[i]);
  }
}

/* Asks /stats on a connection of its own; fills calls and queued. */
static void stats(struct fixture *f, unsigned long long *calls, size_t *queued)
{
  int closed, fd = connect_to(f->port);
  const char *p;
  assert_true(fd >= 0);
  send_all(fd, "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               "\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), " end", 5000, &closed);
  close(fd);
  p = strstr(rbuf, "calls=");
  assert_non_null(p);
  assert_int_equal(sscanf(p, "calls=%llu queued=%zu", calls, queued), 2);
}

#define FLOODERS  8
#define PIPELINED 400

/* Clients that pipeline hundreds of requests and never read (issue 20's
 * /metrics stall): each holds at most one unsent answer, the server keeps
 * answering others, and once a client reads it gets every answer, in
 * order. */
static void client_pipeline_flood(struct fixture *f)
{
  static char req[PIPELINED * 40];
  unsigned long long calls = 0, prev = ~0ULL;
  size_t queued = 0, len = 0;
  int fds[FLOODERS], closed, i, n;

  for (n = 0; n < PIPELINED; n++)
    len += (size_t)snprintf(req + len, sizeof(req) - len,
                            "GET /big?n=%d HTTP/1.1\r\nHost: x\r\n\r\n", n);
  for (i = 0; i < FLOODERS; i++) {
    fds[i] = connect_to(f->port);
    assert_true(fds[i] >= 0);
    send_all(fds[i], req);
  }
  /* Wait until the answers stop (every socket buffer is full): between two
   * looks only the /stats call itself was made. */
  for (i = 0; i < 200 && calls != prev + 1; i++) {
    prev = calls;
    usleep(200 * 1000);
    stats(f, &calls, &queued);
  }
  assert_true(calls == prev + 1);
  /* Far fewer answers than requests were made, and what waits in memory
   * is at most one answer per client. */
  assert_true(calls < (unsigned long long)FLOODERS * PIPELINED);
  assert_true(queued <= (size_t)FLOODERS * (BIG_BYTES + 512));
  /* Another client is served meanwhile. */
  {
    int fd = connect_to(f->port);
    send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    recv_until(fd, rbuf, sizeof(rbuf), "\r\n\r\nok", 5000, &closed);
    assert_non_null(strstr(rbuf, "HTTP/1.1 200 OK"));
    close(fd);
  }
  /* A flooder that reads gets all its answers, in order: each one is the
   * same size, its body starts with its request's query. */
  {
    size_t hdr = 0, pos = 0, total = 0;
    char *all = malloc((size_t)PIPELINED * (BIG_BYTES + 256));
    while (1) {
      struct pollfd p = {.fd = fds[0], .events = POLLIN};
      ssize_t r;
      if (hdr && total >= (size_t)PIPELINED * (hdr + BIG_BYTES))
        break;
      assert_true(poll(&p, 1, 5000) > 0);
      r = recv(fds[0], all + total, 64 * 1024, 0);
      assert_true(r > 0);
      total += (size_t)r;
      if (!hdr && total > 200) {
        char *end = memmem(all, total, "\r\n\r\n", 4);
        assert_non_null(end);
        hdr = (size_t)(end + 4 - all);
      }
    }
    assert_int_equal(total, (size_t)PIPELINED * (hdr + BIG_BYTES));
    for (n = 0; n < PIPELINED; n++, pos += hdr + BIG_BYTES) {
      char want[32];
      int wl = snprintf(want, sizeof(want), "n=%d.", n);
      assert_memory_equal(all + pos, "HTTP/1.1 200 OK\r\n", 17);
      assert_memory_equal(all + pos + hdr, want, (size_t)wl);
    }
    free(all);
  }
  for (i = 0; i < FLOODERS; i++)
    close(fds[i]);
}

/* A 64 KiB answer nobody takes stays in hand; another client asking for
 * the same cached route meanwhile shares it (no second handler call); a
 * client asking after its own answer arrived gets a fresh one. */
static void client_cache(struct fixture *f)
{
  static char req[200 * 40];
  unsigned long long calls, before;
  size_t queued, len = 0;
  int closed, hog, fd, n;
  /* One client fills its socket buffers and more with unread answers, so
   * the last one is still being sent. */
  for (n = 0; n < 200; n++)
    len += (size_t)snprintf(req + len, sizeof(req) - len,
                            "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  hog = connect_to(f->port);
  send_all(hog, req);
  /* Stalled: an answer waits, and nothing but /stats ran since the last
   * look. */
  calls = ~0ULL - 1;
  for (n = 0; n < 100; n++) {
    usleep(100 * 1000);
    stats(f, &before, &queued);
    if (queued && before == calls + 1)
      break;
    calls = before;
  }
  assert_true(queued > 0);
  fd = connect_to(f->port);
  send_all(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), "xxxxxxxxx", 5000, &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 200 OK"));
  stats(f, &calls, &queued);
  assert_true(calls == before + 1); /* the /stats call only */
  close(hog);
  /* Nobody is sending it any more: the next request calls the handler. */
  usleep(200 * 1000);
  stats(f, &before, &queued);
  send_all(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  usleep(200 * 1000);
  stats(f, &calls, &queued);
  assert_true(calls == before + 2);
  close(fd);
}

/* A client that does not take its answer is closed after the write
 * timeout (300 ms here). */
static void client_write_timeout(struct fixture *f)
{
  static char req[200 * 40];
  size_t len = 0;
  int closed, fd, n;
  for (n = 0; n < 200; n++)
    len += (size_t)snprintf(req + len, sizeof(req) - len,
                            "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  fd = connect_to(f->port);
  send_all(fd, req);
  usleep(2000 * 1000);
  /* Now drain: the stream ends (closed) well before 200 answers. */
  {
    size_t total = 0;
    while (1) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      ssize_t r;
      if (poll(&p, 1, 5000) <= 0)
        break;
      r = recv(fd, rbuf, sizeof(rbuf), 0);
      if (r <= 0) {
        closed = 1;
        break;
      }
      total += (size_t)r;
    }
    assert_true(closed);
    assert_true(total < (size_t)200 * BIG_BYTES);
  }
  close(fd);
}

static void client_timeouts(struct fixture *f)
{
  int closed, fd;
  /* Half a request: 408 after the read timeout (300 ms here). */
  fd = connect_to(f->port);
  send_all(fd, "GET /healthz HTTP/1.1\r\nHos");
  recv_until(fd, rbuf, sizeof(rbuf), NULL, 3000, &closed);
  assert_non_null(strstr(rbuf, "HTTP/1.1 408 "));
  assert_true(closed);
  close(fd);
  /* An idle keep-alive connection closes after the idle timeout. */
  fd = connect_to(f->port);
  send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(fd, rbuf, sizeof(rbuf), "\r\n\r\nok", 2000, &closed);
  assert_false(closed);
  recv_until(fd, rbuf, sizeof(rbuf), NULL, 3000, &closed);
  assert_true(closed);
  close(fd);
}

static void client_leaves_open(struct fixture *f)
{
  /* Connections still open when the server closes: shutdown must not wait
   * for them or leak their handles. */
  int closed, a = connect_to(f->port), b = connect_to(f->port);
  send_all(a, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  recv_until(a, rbuf, sizeof(rbuf), "\r\n\r\nok", 2000, &closed);
  send_all(b, "GET /heal");
  usleep(100 * 1000);
  (void)closed;
  /* The fds are closed after the server is gone (by process exit). */
}

static void test_basic(void **state)
{
  run_with_client(client_basic, (struct carp_server_options){.name = "t"});
}

static void test_pipelined(void **state)
{
  run_with_client(client_pipelined, (struct carp_server_options){.name = "t"});
}

static void test_limits(void **state)
{
  run_with_client(client_limits,
                  (struct carp_server_options){.max_connections = 4,
                                               .max_header_bytes = 4096,
                                               .max_body_bytes = 1024});
}

static void test_timeouts(void **state)
{
  run_with_client(client_timeouts,
                  (struct carp_server_options){.read_timeout_ms = 300,
                                               .idle_timeout_ms = 500});
}

static void test_pipeline_flood(void **state)
{
  big_cache_ms = 0;
  run_with_client(client_pipeline_flood,
                  (struct carp_server_options){.max_connections = 16,
                                               .write_timeout_ms = 60000});
}

static void test_cache(void **state)
{
  big_cache_ms = 60000;
  run_with_client(client_cache,
                  (struct carp_server_options){.write_timeout_ms = 60000});
  big_cache_ms = 0;
}

static void test_write_timeout(void **state)
{
  run_with_client(client_write_timeout,
                  (struct carp_server_options){.write_timeout_ms = 300});
}

static void test_close_with_open_connections(void **state)
{
  run_with_client(client_leaves_open, (struct carp_server_options){0});
}

static void test_bad_options(void **state)
{
  uv_loop_t loop;
  struct carp_server *s;
  uv_loop_init(&loop);
  assert_int_equal(
      carp_server_new(&loop, &(struct carp_server_options){.port = -1}, &s),
      CARP_EINVAL);
  assert_int_equal(
      carp_server_new(
          &loop, &(struct carp_server_options){.host = "not-an-ip", .port = 0},
          &s),
      0);
  assert_true(carp_server_start(s) < 0);
  carp_server_close(s, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),
      cmocka_unit_test(test_pipelined),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_timeouts),
      cmocka_unit_test(test_pipeline_flood),
      cmocka_unit_test(test_cache),
      cmocka_unit_test(test_write_timeout),
      cmocka_unit_test(test_close_with_open_connections),
      cmocka_unit_test(test_bad_options),
  };
  carp_log_set_level(CARP_LOG_ERROR);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
