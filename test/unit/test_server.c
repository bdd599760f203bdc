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

  /* Connection limit (4 in this test): the fifth gets 503 and is closed,
   * the first four still work. */
  {
    int fds[5];
    for (int i = 0; i < 5; i++)
      fds[i] = connect_to(f->port);
    recv_until(fds[4], rbuf, sizeof(rbuf), NULL, 2000, &closed);
    assert_non_null(strstr(rbuf, "HTTP/1.1 503 "));
    assert_true(closed);
    for (int i = 0; i < 4; i++) {
      send_all(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
      recv_until(fds[i], rbuf, sizeof(rbuf), "\r\n\r\nok", 2000, &closed);
      assert_non_null(strstr(rbuf, "200 OK"));
    }
    for (int i = 0; i < 5; i++)
      close(fds[i]);
  }
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
      cmocka_unit_test(test_close_with_open_connections),
      cmocka_unit_test(test_bad_options),
  };
  carp_log_set_level(CARP_LOG_ERROR);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
