/* Unit tests for internal/http: the async HTTP client on libcurl multi and
 * libuv, against test/tools/httpd.py (plain, TLS, TLS with a wrong host
 * name, TLS demanding a client certificate), with certificates made by
 * test/tools/mkcerts.sh in a temporary directory.
 *
 * Each test runs its own loop and ends by closing the client, running the
 * loop dry and asserting uv_loop_close() == 0. Callbacks only record what
 * happened; assertions come after the loop ran, so a failure never unwinds
 * through libuv or curl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/log.h"
#include "proc.h"
#include "tmpdir.h"

/* --- fixture: servers and certificates (one per test binary) ---------- */

static struct {
  char dir[256];
  struct carp_test_proc plain, tls, wrong, mtls;
  char ca_file[512], cert_file[512], key_file[512];
  char *ca_pem, *cert_pem, *key_pem;
  char spki[256], fp[256], wrong_fp[256];
} fx;

static void path_in(char *out, size_t size, const char *name)
{
  snprintf(out, size, "%s/%s", fx.dir, name);
}

static int read_line_file(const char *name, char *out, size_t size)
{
  char path[512];
  char *s;
  path_in(path, sizeof(path), name);
  s = carp_test_read_file(path, NULL);
  if (!s)
    return -1;
  s[strcspn(s, "\r\n")] = '\0';
  snprintf(out, size, "%s", s);
  free(s);
  return 0;
}

static const char *tools_dir(void)
{
  static char dir[1024];
  const char *src = getenv("CARP_SOURCE_DIR");
  if (src && *src) {
    snprintf(dir, sizeof(dir), "%s/test/tools", src);
  } else { /* __FILE__ is absolute in CMake builds: test/unit/test_http.c */
    snprintf(dir, sizeof(dir), "%s", __FILE__);
    *strrchr(dir, '/') = '\0';
    snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/../tools");
  }
  return dir;
}

static int start_server(struct carp_test_proc *p, const char *cert,
                        const char *key, const char *client_ca)
{
  char script[1100], certp[512], keyp[512], cap[512];
  char *argv[12];
  int n = 0;

  snprintf(script, sizeof(script), "%s/httpd.py", tools_dir());
  argv[n++] = "python3";
  argv[n++] = script;
  if (cert) {
    path_in(certp, sizeof(certp), cert);
    path_in(keyp, sizeof(keyp), key);
    argv[n++] = "--cert";
    argv[n++] = certp;
    argv[n++] = "--key";
    argv[n++] = keyp;
  }
  if (client_ca) {
    path_in(cap, sizeof(cap), client_ca);
    argv[n++] = "--client-ca";
    argv[n++] = cap;
  }
  argv[n] = NULL;
  return carp_test_proc_start(p, argv, 20000);
}

static int group_teardown(void **state);

static int group_setup(void **state)
{
  static const char *proxies[] = {"http_proxy",  "https_proxy", "HTTP_PROXY",
                                  "HTTPS_PROXY", "all_proxy",   "ALL_PROXY"};
  char script[1100];
  char *argv[4];
  size_t i;

  (void)state;
  carp_test_proc_init(&fx.plain);
  carp_test_proc_init(&fx.tls);
  carp_test_proc_init(&fx.wrong);
  carp_test_proc_init(&fx.mtls);
  for (i = 0; i < CARP_ARRAY_LEN(proxies); i++)
    unsetenv(proxies[i]);
  carp_log_set_level(CARP_LOG_ERROR);
  if (carp_test_tmpdir(fx.dir, sizeof(fx.dir), "http") != 0) {
    fx.dir[0] = '\0';
    return -1;
  }
  snprintf(script, sizeof(script), "%s/mkcerts.sh", tools_dir());
  argv[0] = "bash";
  argv[1] = script;
  argv[2] = fx.dir;
  argv[3] = NULL;
  if (carp_test_run(argv) != 0) {
    fprintf(stderr, "mkcerts.sh failed\n");
    goto fail;
  }
  path_in(fx.ca_file, sizeof(fx.ca_file), "ca.pem");
  path_in(fx.cert_file, sizeof(fx.cert_file), "client.pem");
  path_in(fx.key_file, sizeof(fx.key_file), "client.key");
  fx.ca_pem = carp_test_read_file(fx.ca_file, NULL);
  fx.cert_pem = carp_test_read_file(fx.cert_file, NULL);
  fx.key_pem = carp_test_read_file(fx.key_file, NULL);
  if (!fx.ca_pem || !fx.cert_pem || !fx.key_pem ||
      read_line_file("server.spki", fx.spki, sizeof(fx.spki)) ||
      read_line_file("server.fp", fx.fp, sizeof(fx.fp)) ||
      read_line_file("wrong.fp", fx.wrong_fp, sizeof(fx.wrong_fp)))
    goto fail;
  if (start_server(&fx.plain, NULL, NULL, NULL) ||
      start_server(&fx.tls, "server.pem", "server.key", NULL) ||
      start_server(&fx.wrong, "wrong.pem", "wrong.key", NULL) ||
      start_server(&fx.mtls, "server.pem", "server.key", "ca.pem"))
    goto fail;
  return 0;
fail: /* idempotent, whether or not cmocka also runs the teardown */
  group_teardown(state);
  return -1;
}

static int group_teardown(void **state)
{
  (void)state;
  carp_test_proc_stop(&fx.plain);
  carp_test_proc_stop(&fx.tls);
  carp_test_proc_stop(&fx.wrong);
  carp_test_proc_stop(&fx.mtls);
  free(fx.ca_pem);
  free(fx.cert_pem);
  free(fx.key_pem);
  fx.ca_pem = fx.cert_pem = fx.key_pem = NULL;
  carp_test_rmtree(fx.dir);
  fx.dir[0] = '\0';
  carp_http_global_cleanup();
  return 0;
}

static void assert_contains(const char *hay, const char *needle);

/* --- log capture -------------------------------------------------------- */

static char *log_text;
static size_t log_len;
static FILE *log_stream;

static void log_capture_start(enum carp_log_level level)
{
  log_stream = open_memstream(&log_text, &log_len);
  assert_non_null(log_stream);
  carp_log_set_output(log_stream);
  carp_log_set_level(level);
}

/* Returns what was logged; valid until log_capture_free(). */
static const char *log_capture_end(void)
{
  fflush(log_stream);
  carp_log_set_output(NULL);
  carp_log_set_level(CARP_LOG_ERROR);
  fclose(log_stream);
  log_stream = NULL;
  return log_text ? log_text : "";
}

static void log_capture_free(void)
{
  free(log_text);
  log_text = NULL;
  log_len = 0;
}

/* --- per-test loop and client ------------------------------------------ */

struct ctx {
  uv_loop_t loop;
  uv_timer_t watchdog; /* makes UV_RUN_ONCE return at least every 20 ms */
  struct carp_http_client *client;
  int closed; /* close_cb calls */
};

static void on_watchdog(uv_timer_t *t)
{
  (void)t;
}

static void ctx_init(struct ctx *x, const struct carp_http_client_options *o)
{
  memset(x, 0, sizeof(*x));
  assert_int_equal(uv_loop_init(&x->loop), 0);
  assert_int_equal(uv_timer_init(&x->loop, &x->watchdog), 0);
  assert_int_equal(uv_timer_start(&x->watchdog, on_watchdog, 20, 20), 0);
  assert_int_equal(carp_http_client_new(&x->loop, o, &x->client), 0);
  assert_non_null(x->client);
}

static void on_client_closed(void *arg)
{
  struct ctx *x = arg;
  x->closed++;
}

static void on_closed_count(void *arg)
{
  (*(int *)arg)++;
}

/* Runs the loop until *counter reaches want, failing after timeout_ms. */
static void run_until(struct ctx *x, const int *counter, int want,
                      uint64_t timeout_ms)
{
  uint64_t start;
  uv_update_time(&x->loop);
  start = uv_now(&x->loop);
  while (*counter < want) {
    uv_update_time(&x->loop);
    if (uv_now(&x->loop) - start > timeout_ms)
      fail_msg("timed out waiting: %d of %d", *counter, want);
    uv_run(&x->loop, UV_RUN_ONCE);
  }
}

/* Closes the client (if still open), runs the loop dry, closes the loop. */
static void ctx_finish(struct ctx *x)
{
  if (x->client) {
    carp_http_client_close(x->client, on_client_closed, x);
    x->client = NULL;
  }
  uv_close((uv_handle_t *)&x->watchdog, NULL);
  assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(x->closed, 1);
  assert_int_equal(uv_loop_close(&x->loop), 0);
}

/* --- recording callbacks ------------------------------------------------ */

#define MAX_WATCH 4

struct res {
  struct ctx *ctx;
  uv_loop_t *loop;
  struct carp_http_request *req;
  int *counter; /* incremented on done, if set */
  int ndone;    /* on_done calls: must end at exactly 1 */
  int err;      /* on_done status */
  long http;    /* resp->status */
  char *reason;
  char *body;
  size_t body_len;
  char *errmsg;
  const char *watch[MAX_WATCH]; /* header names to copy in on_done */
  char *got[MAX_WATCH];
  int nheaders_cb; /* on_headers calls */
  long headers_status;
  struct carp_buf data; /* streamed body */
  int ndata;            /* on_data calls */
  int nlines;           /* '\n' seen in streamed data */
  int violations;       /* callbacks that must not have happened */
  /* actions */
  int cancel_at_lines; /* cancel self in on_data at this many lines */
  int abort_at_lines;  /* return abort_code from on_data at this many */
  int abort_code;
  int headers_ret;       /* on_headers returns this */
  int cancel_in_headers; /* cancel self from on_headers */
  int close_at_lines;    /* close the client from on_data */
  int cancel_in_done;    /* cancel self from on_done (must be a no-op) */
  int take_body;         /* take the body in on_done */
  int acted;             /* an action (cancel/abort/close) was taken */
  uint64_t t_start, t_done;
  uint64_t data_at; /* loop time of the last on_data */
  int data_ticks;   /* on_data calls in loop iterations of their own */
};

static int g_in_start; /* on_done must never run inside request_start */

static void res_init(struct res *r, struct ctx *x)
{
  memset(r, 0, sizeof(*r));
  r->ctx = x;
  r->loop = x ? &x->loop : NULL;
  carp_buf_init(&r->data, CARP_BUF_UNLIMITED);
}

static void res_free(struct res *r)
{
  int i;
  carp_free(r->reason);
  carp_free(r->body);
  carp_free(r->errmsg);
  for (i = 0; i < MAX_WATCH; i++)
    carp_free(r->got[i]);
  carp_buf_free(&r->data);
}

static const char *res_hdr(const struct res *r, const char *name)
{
  int i;
  for (i = 0; i < MAX_WATCH; i++)
    if (r->watch[i] && !strcmp(r->watch[i], name))
      return r->got[i];
  return NULL;
}

static int cb_headers(struct carp_http_request *req,
                      const struct carp_http_response *resp, void *arg)
{
  struct res *r = arg;
  if (r->ndone || r->acted || req != r->req)
    r->violations++;
  r->nheaders_cb++;
  r->headers_status = resp->status;
  if (r->cancel_in_headers) {
    r->acted = 1;
    carp_http_request_cancel(req);
    carp_http_request_cancel(req); /* twice is fine */
  }
  return r->headers_ret;
}

static int cb_data(struct carp_http_request *req, const char *data, size_t len,
                   void *arg)
{
  struct res *r = arg;
  size_t i;
  if (r->ndone || r->acted || req != r->req)
    r->violations++;
  r->ndata++;
  if (r->loop && (r->ndata == 1 || uv_now(r->loop) != r->data_at)) {
    r->data_ticks++;
    r->data_at = uv_now(r->loop);
  }
  assert_int_equal(carp_buf_append(&r->data, data, len), 0);
  for (i = 0; i < len; i++)
    r->nlines += data[i] == '\n';
  if (r->cancel_at_lines && r->nlines >= r->cancel_at_lines) {
    r->acted = 1;
    carp_http_request_cancel(req);
  }
  if (r->close_at_lines && r->nlines >= r->close_at_lines) {
    r->acted = 1;
    carp_http_client_close(r->ctx->client, on_client_closed, r->ctx);
    r->ctx->client = NULL;
  }
  if (r->abort_at_lines && r->nlines >= r->abort_at_lines) {
    r->acted = 1;
    return r->abort_code;
  }
  return 0;
}

static void cb_done(struct carp_http_request *req, int status,
                    const struct carp_http_response *resp, void *arg)
{
  struct res *r = arg;
  int i;

  if (g_in_start || req != r->req)
    r->violations++;
  r->ndone++;
  if (r->ndone > 1)
    return;
  r->err = status;
  r->http = resp->status;
  r->reason = carp_strdup(resp->reason);
  r->errmsg = carp_strdup(resp->errmsg);
  if (r->take_body) {
    size_t len = 0;
    r->body = carp_http_request_take_body(req, &r->body_len);
    if (resp->body.len != 0 || !r->body)
      r->violations++;
    /* A second take gives an empty body. */
    carp_free(carp_http_request_take_body(req, &len));
    if (len != 0)
      r->violations++;
  } else {
    r->body =
        carp_strndup(resp->body.ptr ? resp->body.ptr : "", resp->body.len);
    r->body_len = resp->body.len;
  }
  for (i = 0; i < MAX_WATCH; i++)
    if (r->watch[i])
      r->got[i] = carp_strdup(carp_http_response_header(resp, r->watch[i]));
  uv_update_time(r->loop);
  r->t_done = uv_now(r->loop);
  if (r->cancel_in_done)
    carp_http_request_cancel(req); /* already done: no effect */
  if (r->counter)
    (*r->counter)++;
}

static void opts_init(struct carp_http_request_options *o, struct res *r,
                      const char *method, const char *url)
{
  memset(o, 0, sizeof(*o));
  o->method = method;
  o->url = url;
  o->on_done = cb_done;
  o->on_headers = cb_headers;
  o->arg = r;
}

static int start(struct ctx *x, const struct carp_http_request_options *o,
                 struct res *r)
{
  int rc;
  uv_update_time(&x->loop);
  r->t_start = uv_now(&x->loop);
  g_in_start = 1;
  rc = carp_http_request_start(x->client, o, &r->req);
  g_in_start = 0;
  return rc;
}

/* Starts one request and runs the loop until it is done. */
static void run_one(struct ctx *x, const struct carp_http_request_options *o,
                    struct res *r)
{
  assert_int_equal(start(x, o, r), 0);
  run_until(x, &r->ndone, 1, 20000);
  assert_int_equal(r->ndone, 1);
  assert_int_equal(r->violations, 0);
}

static void url(char *out, size_t size, const struct carp_test_proc *p, int tls,
                const char *path)
{
  snprintf(out, size, "%s://127.0.0.1:%d%s", tls ? "https" : "http", p->port,
           path);
}

/* --- tests --------------------------------------------------------------- */

static void test_escape(void **state)
{
  struct carp_buf b;
  (void)state;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_http_escape(&b, "a b&c=d/\xc3\xa9~._-AZ09+%"), 0);
  assert_string_equal(carp_buf_cstr(&b),
                      "a%20b%26c%3Dd%2F%C3%A9~._-AZ09%2B%25");
  carp_buf_free(&b);
  /* All or nothing when the buffer is capped. */
  carp_buf_init(&b, 8);
  assert_int_equal(carp_buf_puts(&b, "ab"), 0);
  assert_int_equal(carp_http_escape(&b, "x\xc3\xa9"), CARP_ETOOBIG);
  assert_string_equal(carp_buf_cstr(&b), "ab");
  assert_int_equal(carp_http_escape(&b, "x y"), 0);
  assert_string_equal(carp_buf_cstr(&b), "abx%20y");
  carp_buf_free(&b);
}

static void test_client_options(void **state)
{
  uv_loop_t loop;
  struct carp_http_client *c = (void *)&loop; /* must be reset */
  struct carp_http_client_options o;
  (void)state;

  assert_int_equal(uv_loop_init(&loop), 0);
  log_capture_start(CARP_LOG_ERROR);
  memset(&o, 0, sizeof(o));
  o.tls.cert_sha256 = "AA:BB";
  assert_int_equal(carp_http_client_new(&loop, &o, &c), CARP_EINVAL);
  assert_null(c);
  o.tls.cert_sha256 = fx.fp;
  o.tls.insecure = 1;
  assert_int_equal(carp_http_client_new(&loop, &o, &c), CARP_EINVAL);
  memset(&o, 0, sizeof(o));
  o.tls.ca_file = "/nonexistent/ca.pem";
  assert_int_equal(carp_http_client_new(&loop, &o, &c), -ENOENT);
  memset(&o, 0, sizeof(o));
  o.tls.key_pem = fx.key_pem; /* a key without a certificate */
  assert_int_equal(carp_http_client_new(&loop, &o, &c), CARP_EINVAL);
  assert_int_equal(carp_http_client_new(NULL, NULL, &c), CARP_EINVAL);
  {
    const char *logged = log_capture_end();
    assert_contains(logged, "malformed certificate fingerprint");
    assert_contains(logged, "/nonexistent/ca.pem");
    log_capture_free();
  }
  /* Nothing was left on the loop by the failures. */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_bad_requests(void **state)
{
  struct ctx x;
  struct res r;
  struct carp_http_request_options o;
  struct carp_http_header bad_name = {"X Bad", "v"};
  struct carp_http_header bad_value = {"X-Bad", "a\r\nInjected: 1"};
  char u[256];
  (void)state;

  ctx_init(&x, NULL);
  res_init(&r, &x);
  url(u, sizeof(u), &fx.plain, 0, "/echo");
  opts_init(&o, &r, "GET", "ftp://127.0.0.1/x");
  assert_int_equal(start(&x, &o, &r), CARP_EINVAL);
  assert_null(r.req);
  opts_init(&o, &r, "GET", "not a url");
  assert_int_equal(start(&x, &o, &r), CARP_EINVAL);
  opts_init(&o, &r, "GE T", u);
  assert_int_equal(start(&x, &o, &r), CARP_EINVAL);
  opts_init(&o, &r, "GET", u);
  o.headers = &bad_name;
  o.nheaders = 1;
  assert_int_equal(start(&x, &o, &r), CARP_EINVAL);
  o.headers = &bad_value;
  assert_int_equal(start(&x, &o, &r), CARP_EINVAL);
  opts_init(&o, &r, "HEAD", u);
  o.body = "x";
  o.body_len = 1;
  assert_int_equal(start(&x, &o, &r), CARP_EINVAL);
  opts_init(&o, &r, "GET", u);
  o.on_done = NULL;
  assert_int_equal(start(&x, &o, &r), CARP_EINVAL);
  /* No callback ran for any of them. */
  uv_run(&x.loop, UV_RUN_NOWAIT);
  assert_int_equal(r.ndone, 0);
  ctx_finish(&x);
  assert_int_equal(r.ndone, 0);
  res_free(&r);
}

/* The client holds the loop only while work is in flight: uv_run returns
 * by itself once the request is done. */
static void test_loop_runs_dry(void **state)
{
  uv_loop_t loop;
  struct carp_http_client *c;
  struct res r;
  struct carp_http_request_options o;
  char u[256];
  int closed = 0;
  (void)state;

  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(carp_http_client_new(&loop, NULL, &c), 0);
  res_init(&r, NULL);
  r.loop = &loop;
  url(u, sizeof(u), &fx.plain, 0, "/echo");
  opts_init(&o, &r, "GET", u);
  g_in_start = 1;
  assert_int_equal(carp_http_request_start(c, &o, &r.req), 0);
  g_in_start = 0;
  assert_int_equal(r.ndone, 0); /* never synchronous */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(r.ndone, 1);
  assert_int_equal(r.err, 0);
  assert_int_equal(r.http, 200);
  assert_int_equal(r.violations, 0);
  carp_http_client_close(c, on_closed_count, &closed);
  assert_int_equal(closed, 0); /* never synchronous either */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(closed, 1);
  assert_int_equal(uv_loop_close(&loop), 0);
  res_free(&r);
}

static void assert_contains(const char *hay, const char *needle)
{
  if (!hay || !strstr(hay, needle))
    fail_msg("\"%s\" not in \"%.2000s\"", needle, hay ? hay : "(null)");
}

static void test_methods_echo(void **state)
{
  struct ctx x;
  struct res get, post, put, patch, del, head, big;
  struct carp_http_request_options o;
  struct carp_http_header get_hdrs[] = {{"X-Test", "hello"}, {"X-Empty", ""}};
  struct carp_http_header json[] = {{"Content-Type", "application/json"}};
  char u[256], uq[256];
  size_t big_len = 2 * 1024 * 1024;
  char *big_body = carp_malloc(big_len);
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  url(u, sizeof(u), &fx.plain, 0, "/echo");
  url(uq, sizeof(uq), &fx.plain, 0, "/echo?q=a%20b");

  res_init(&get, &x);
  get.counter = &done;
  get.watch[0] = "content-type";
  get.watch[1] = "X-METHOD";
  get.watch[2] = "x-missing";
  get.watch[3] = "Server";
  opts_init(&o, &get, "GET", uq);
  o.headers = get_hdrs;
  o.nheaders = 2;
  assert_int_equal(start(&x, &o, &get), 0);

  res_init(&post, &x);
  post.counter = &done;
  opts_init(&o, &post, "POST", u);
  o.headers = json;
  o.nheaders = 1;
  o.body = "{\"a\":1}";
  o.body_len = 7;
  assert_int_equal(start(&x, &o, &post), 0);

  res_init(&put, &x);
  put.counter = &done;
  opts_init(&o, &put, "PUT", u);
  assert_int_equal(start(&x, &o, &put), 0);

  res_init(&patch, &x);
  patch.counter = &done;
  opts_init(&o, &patch, "PATCH", u);
  o.body = "patch-body";
  o.body_len = 10;
  assert_int_equal(start(&x, &o, &patch), 0);

  res_init(&del, &x);
  del.counter = &done;
  opts_init(&o, &del, "DELETE", u);
  o.body = "{}";
  o.body_len = 2;
  assert_int_equal(start(&x, &o, &del), 0);

  res_init(&head, &x);
  head.counter = &done;
  head.watch[0] = "x-method";
  head.watch[1] = "content-length";
  opts_init(&o, &head, "HEAD", u);
  assert_int_equal(start(&x, &o, &head), 0);

  /* A large body is copied at start: changing it afterwards is harmless. */
  res_init(&big, &x);
  big.counter = &done;
  memset(big_body, 'b', big_len);
  opts_init(&o, &big, "POST", u);
  o.body = big_body;
  o.body_len = big_len;
  assert_int_equal(start(&x, &o, &big), 0);
  memset(big_body, 'z', big_len);

  run_until(&x, &done, 7, 20000);

  assert_int_equal(get.ndone, 1);
  assert_int_equal(get.err, 0);
  assert_int_equal(get.http, 200);
  assert_string_equal(get.reason, "OK");
  assert_string_equal(get.errmsg, "");
  assert_int_equal(get.nheaders_cb, 1);
  assert_int_equal(get.headers_status, 200);
  assert_contains(get.body, "\"method\":\"GET\"");
  assert_contains(get.body, "\"x-test\":\"hello\"");
  assert_contains(get.body, "\"x-empty\":\"\"");
  assert_contains(get.body, "\"user-agent\":\"carpenter/");
  assert_contains(get.body, "\"query\":{\"q\":\"a b\"}");
  assert_string_equal(res_hdr(&get, "content-type"), "application/json");
  assert_string_equal(res_hdr(&get, "X-METHOD"), "GET");
  assert_null(res_hdr(&get, "x-missing"));
  assert_string_equal(res_hdr(&get, "Server"), "carp-test-httpd"); /* trimmed */

  assert_int_equal(post.err, 0);
  assert_contains(post.body, "\"method\":\"POST\"");
  assert_contains(post.body, "\"body\":\"{\\\"a\\\":1}\"");
  assert_contains(post.body, "\"content-type\":\"application/json\"");
  assert_null(strstr(post.body, "\"expect\""));

  assert_int_equal(put.err, 0);
  assert_contains(put.body, "\"method\":\"PUT\"");
  assert_contains(put.body, "\"content-length\":\"0\"");

  assert_int_equal(patch.err, 0);
  assert_contains(patch.body, "\"method\":\"PATCH\"");
  assert_contains(patch.body, "\"body\":\"patch-body\"");

  assert_int_equal(del.err, 0);
  assert_contains(del.body, "\"method\":\"DELETE\"");
  assert_contains(del.body, "\"body_len\":2");

  assert_int_equal(head.err, 0);
  assert_int_equal(head.http, 200);
  assert_int_equal(head.body_len, 0);
  assert_string_equal(res_hdr(&head, "x-method"), "HEAD");

  assert_int_equal(big.err, 0);
  assert_contains(big.body, "\"body_len\":2097152");
  assert_contains(big.body, "\"body\":\"bbbbbbbb");
  assert_null(strstr(big.body, "z"));

  struct res *all[] = {&get, &post, &put, &patch, &del, &head, &big};
  for (size_t i = 0; i < CARP_ARRAY_LEN(all); i++) {
    assert_int_equal(all[i]->ndone, 1);
    assert_int_equal(all[i]->violations, 0);
    res_free(all[i]);
  }
  carp_free(big_body);
  ctx_finish(&x);
}

#define NCONC 200

static void test_concurrent_200(void **state)
{
  struct ctx x;
  struct res *rs = carp_calloc(NCONC, sizeof(*rs));
  struct carp_http_request_options o;
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  for (int i = 0; i < NCONC; i++) {
    char u[256], v[32];
    struct carp_http_header h = {"X-Index", v};
    char path[64];
    snprintf(path, sizeof(path), "/echo?i=%d", i);
    snprintf(v, sizeof(v), "%d", i);
    url(u, sizeof(u), &fx.plain, 0, path);
    res_init(&rs[i], &x);
    rs[i].counter = &done;
    opts_init(&o, &rs[i], "GET", u);
    o.headers = &h;
    o.nheaders = 1;
    o.timeout_ms = 20000;
    assert_int_equal(start(&x, &o, &rs[i]), 0);
  }
  run_until(&x, &done, NCONC, 25000);
  for (int i = 0; i < NCONC; i++) {
    char want[64];
    assert_int_equal(rs[i].ndone, 1);
    assert_int_equal(rs[i].violations, 0);
    assert_int_equal(rs[i].err, 0);
    assert_int_equal(rs[i].http, 200);
    snprintf(want, sizeof(want), "\"query\":{\"i\":\"%d\"}", i);
    assert_contains(rs[i].body, want);
    snprintf(want, sizeof(want), "\"x-index\":\"%d\"", i);
    assert_contains(rs[i].body, want);
    res_free(&rs[i]);
  }
  carp_free(rs);
  ctx_finish(&x);
}

static void test_connection_reuse(void **state)
{
  struct ctx x;
  struct carp_http_client_options co;
  struct carp_http_request_options o;
  struct res rs[40];
  char u[256];
  char first[32] = "";
  long ids[40];
  int distinct = 0, done = 0;
  (void)state;

  memset(&co, 0, sizeof(co));
  co.max_host_connections = 4;
  ctx_init(&x, &co);
  url(u, sizeof(u), &fx.plain, 0, "/echo");

  /* One after another: every request rides the same kept-alive
   * connection. */
  for (int i = 0; i < 5; i++) {
    struct res r;
    res_init(&r, &x);
    r.watch[0] = "x-conn-id";
    opts_init(&o, &r, "GET", u);
    run_one(&x, &o, &r);
    assert_int_equal(r.err, 0);
    assert_non_null(res_hdr(&r, "x-conn-id"));
    if (i == 0)
      snprintf(first, sizeof(first), "%s", res_hdr(&r, "x-conn-id"));
    else
      assert_string_equal(res_hdr(&r, "x-conn-id"), first);
    res_free(&r);
  }

  /* A burst over at most 4 connections. */
  for (int i = 0; i < 40; i++) {
    res_init(&rs[i], &x);
    rs[i].counter = &done;
    rs[i].watch[0] = "x-conn-id";
    opts_init(&o, &rs[i], "GET", u);
    assert_int_equal(start(&x, &o, &rs[i]), 0);
  }
  run_until(&x, &done, 40, 20000);
  for (int i = 0; i < 40; i++) {
    long id;
    int seen = 0;
    assert_int_equal(rs[i].err, 0);
    assert_non_null(res_hdr(&rs[i], "x-conn-id"));
    id = strtol(res_hdr(&rs[i], "x-conn-id"), NULL, 10);
    for (int j = 0; j < distinct; j++)
      seen |= ids[j] == id;
    if (!seen)
      ids[distinct++] = id;
    res_free(&rs[i]);
  }
  assert_true(distinct >= 1);
  assert_true(distinct <= 4);
  ctx_finish(&x);
}

static void test_close_mid_stream(void **state)
{
  static const char *modes[] = {"length", "chunked", "reset"};
  struct ctx x;
  struct carp_http_request_options o;
  struct res rs[3];
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  for (size_t i = 0; i < CARP_ARRAY_LEN(modes); i++) {
    char u[256], path[64];
    snprintf(path, sizeof(path), "/close-mid?mode=%s", modes[i]);
    url(u, sizeof(u), &fx.plain, 0, path);
    res_init(&rs[i], &x);
    rs[i].counter = &done;
    opts_init(&o, &rs[i], "GET", u);
    assert_int_equal(start(&x, &o, &rs[i]), 0);
  }
  run_until(&x, &done, 3, 10000);
  for (size_t i = 0; i < CARP_ARRAY_LEN(modes); i++) {
    if (rs[i].err != CARP_EIO)
      fail_msg("mode %s: %s (%s)", modes[i], carp_errname(rs[i].err),
               rs[i].errmsg);
    assert_int_equal(rs[i].http, 200); /* the status line had arrived */
    assert_true(rs[i].errmsg[0] != '\0');
    assert_int_equal(rs[i].ndone, 1);
    assert_int_equal(rs[i].violations, 0);
    res_free(&rs[i]);
  }
  ctx_finish(&x);
}

static void test_request_timeout(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res r;
  char u[256];
  uint64_t took;
  (void)state;

  ctx_init(&x, NULL);
  url(u, sizeof(u), &fx.plain, 0, "/slow?delay=3000");
  res_init(&r, &x);
  opts_init(&o, &r, "GET", u);
  o.timeout_ms = 300;
  run_one(&x, &o, &r);
  took = r.t_done - r.t_start;
  assert_int_equal(r.err, CARP_ETIMEDOUT);
  assert_int_equal(r.http, 0);
  if (took < 280 || took > 1500)
    fail_msg("timed out after %llu ms", (unsigned long long)took);
  res_free(&r);
  ctx_finish(&x);
}

static void test_idle_timeout(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res stall, steady, slow;
  char u1[256], u2[256], u3[256];
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  /* One chunk, then silence. */
  url(u1, sizeof(u1), &fx.plain, 0, "/drip?n=3&interval=3000");
  res_init(&stall, &x);
  stall.counter = &done;
  opts_init(&o, &stall, "GET", u1);
  o.on_data = cb_data;
  o.idle_timeout_ms = 300;
  assert_int_equal(start(&x, &o, &stall), 0);
  /* Data every 100 ms keeps a 500 ms idle timeout from firing, though the
   * whole stream takes longer than that. */
  url(u2, sizeof(u2), &fx.plain, 0, "/drip?n=8&interval=100");
  res_init(&steady, &x);
  steady.counter = &done;
  opts_init(&o, &steady, "GET", u2);
  o.on_data = cb_data;
  o.idle_timeout_ms = 500;
  assert_int_equal(start(&x, &o, &steady), 0);
  /* No status line at all: idle covers the wait for headers too. */
  url(u3, sizeof(u3), &fx.plain, 0, "/slow?delay=3000");
  res_init(&slow, &x);
  slow.counter = &done;
  opts_init(&o, &slow, "GET", u3);
  o.idle_timeout_ms = 300;
  assert_int_equal(start(&x, &o, &slow), 0);

  run_until(&x, &done, 3, 10000);
  assert_int_equal(stall.err, CARP_ETIMEDOUT);
  assert_string_equal(carp_buf_cstr(&stall.data), "chunk-0\n");
  if (stall.t_done - stall.t_start < 280 || stall.t_done - stall.t_start > 1500)
    fail_msg("stall: %llu ms",
             (unsigned long long)(stall.t_done - stall.t_start));
  assert_int_equal(steady.err, 0);
  assert_int_equal(steady.nlines, 8);
  assert_true(steady.t_done - steady.t_start >= 600);
  assert_int_equal(slow.err, CARP_ETIMEDOUT);
  assert_int_equal(slow.http, 0);
  if (slow.t_done - slow.t_start < 280 || slow.t_done - slow.t_start > 1500)
    fail_msg("slow: %llu ms", (unsigned long long)(slow.t_done - slow.t_start));
  struct res *all[] = {&stall, &steady, &slow};
  for (size_t i = 0; i < CARP_ARRAY_LEN(all); i++) {
    assert_int_equal(all[i]->ndone, 1);
    assert_int_equal(all[i]->violations, 0);
    res_free(all[i]);
  }
  ctx_finish(&x);
}

static void test_cancel_before_start(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res r;
  char u[256];
  (void)state;

  ctx_init(&x, NULL);
  url(u, sizeof(u), &fx.plain, 0, "/echo");
  res_init(&r, &x);
  r.cancel_in_done = 1;
  opts_init(&o, &r, "GET", u);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &r), 0);
  carp_http_request_cancel(r.req);
  assert_int_equal(r.ndone, 0); /* later, not from cancel itself */
  carp_http_request_cancel(r.req);
  run_until(&x, &r.ndone, 1, 5000);
  /* Give a stray second on_done a chance to show up. */
  for (int i = 0; i < 5; i++)
    uv_run(&x.loop, UV_RUN_ONCE);
  assert_int_equal(r.ndone, 1);
  assert_int_equal(r.err, CARP_ECANCELED);
  assert_int_equal(r.http, 0);
  assert_int_equal(r.nheaders_cb, 0);
  assert_int_equal(r.ndata, 0);
  assert_int_equal(r.violations, 0);
  res_free(&r);
  ctx_finish(&x);
}

static void on_cancel_timer(uv_timer_t *t)
{
  struct res *r = t->data;
  if (!r->ndone)
    carp_http_request_cancel(r->req);
  uv_close((uv_handle_t *)t, NULL);
}

static void test_cancel_during_stream(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res in_data, in_headers, outside, waiting;
  uv_timer_t t1, t2;
  char u[256], us[256];
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  url(u, sizeof(u), &fx.plain, 0, "/drip?n=60&interval=30");
  url(us, sizeof(us), &fx.plain, 0, "/slow?delay=3000");

  res_init(&in_data, &x);
  in_data.counter = &done;
  in_data.cancel_at_lines = 2;
  opts_init(&o, &in_data, "GET", u);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &in_data), 0);

  res_init(&in_headers, &x);
  in_headers.counter = &done;
  in_headers.cancel_in_headers = 1;
  opts_init(&o, &in_headers, "GET", u);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &in_headers), 0);

  res_init(&outside, &x);
  outside.counter = &done;
  opts_init(&o, &outside, "GET", u);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &outside), 0);
  assert_int_equal(uv_timer_init(&x.loop, &t1), 0);
  t1.data = &outside;
  assert_int_equal(uv_timer_start(&t1, on_cancel_timer, 250, 0), 0);

  res_init(&waiting, &x);
  waiting.counter = &done;
  opts_init(&o, &waiting, "GET", us);
  assert_int_equal(start(&x, &o, &waiting), 0);
  assert_int_equal(uv_timer_init(&x.loop, &t2), 0);
  t2.data = &waiting;
  assert_int_equal(uv_timer_start(&t2, on_cancel_timer, 100, 0), 0);

  run_until(&x, &done, 4, 10000);
  for (int i = 0; i < 5; i++)
    uv_run(&x.loop, UV_RUN_ONCE);

  assert_int_equal(in_data.err, CARP_ECANCELED);
  assert_int_equal(in_data.nlines, 2); /* nothing after the cancel */
  assert_string_equal(carp_buf_cstr(&in_data.data), "chunk-0\nchunk-1\n");
  assert_int_equal(in_headers.err, CARP_ECANCELED);
  assert_int_equal(in_headers.nheaders_cb, 1);
  assert_int_equal(in_headers.ndata, 0);
  assert_int_equal(outside.err, CARP_ECANCELED);
  assert_true(outside.nlines < 60); /* stopped before the end */
  assert_int_equal(waiting.err, CARP_ECANCELED);
  assert_true(waiting.t_done - waiting.t_start < 1000);
  struct res *all[] = {&in_data, &in_headers, &outside, &waiting};
  for (size_t i = 0; i < CARP_ARRAY_LEN(all); i++) {
    assert_int_equal(all[i]->ndone, 1);
    assert_int_equal(all[i]->violations, 0);
    res_free(all[i]);
  }
  ctx_finish(&x);
}

static void test_stream_order_and_abort(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res ok, aborted, hdr_abort;
  char u1[256], u2[256], u3[256];
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  url(u1, sizeof(u1), &fx.plain, 0, "/drip?n=5&interval=20");
  res_init(&ok, &x);
  ok.counter = &done;
  opts_init(&o, &ok, "GET", u1);
  o.on_data = cb_data;
  o.max_body = 4; /* ignored when streaming */
  assert_int_equal(start(&x, &o, &ok), 0);

  url(u2, sizeof(u2), &fx.plain, 0, "/drip?n=10&interval=20");
  res_init(&aborted, &x);
  aborted.counter = &done;
  aborted.abort_at_lines = 3;
  aborted.abort_code = CARP_EPARSE;
  opts_init(&o, &aborted, "GET", u2);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &aborted), 0);

  url(u3, sizeof(u3), &fx.plain, 0, "/echo");
  res_init(&hdr_abort, &x);
  hdr_abort.counter = &done;
  hdr_abort.headers_ret = CARP_EFORBIDDEN;
  opts_init(&o, &hdr_abort, "GET", u3);
  assert_int_equal(start(&x, &o, &hdr_abort), 0);

  run_until(&x, &done, 3, 10000);
  assert_int_equal(ok.err, 0);
  assert_int_equal(ok.http, 200);
  assert_string_equal(carp_buf_cstr(&ok.data),
                      "chunk-0\nchunk-1\nchunk-2\nchunk-3\nchunk-4\n");
  assert_true(ok.ndata >= 5);
  assert_int_equal(ok.body_len, 0); /* streamed, not buffered */
  assert_int_equal(aborted.err, CARP_EPARSE);
  assert_int_equal(aborted.nlines, 3);
  assert_int_equal(hdr_abort.err, CARP_EFORBIDDEN);
  assert_int_equal(hdr_abort.http, 200);
  assert_int_equal(hdr_abort.body_len, 0);
  struct res *all[] = {&ok, &aborted, &hdr_abort};
  for (size_t i = 0; i < CARP_ARRAY_LEN(all); i++) {
    assert_int_equal(all[i]->ndone, 1);
    assert_int_equal(all[i]->violations, 0);
    res_free(all[i]);
  }
  ctx_finish(&x);
}

/* With stream_coalesce_ms, a streamed body's data that arrives bit by bit
 * is read a window at a time; a large burst is read whole, not a window
 * per buffer; a buffered response on the same client is unaffected. */
static void test_streams_read_together(void **state)
{
  struct carp_http_client_options co;
  struct ctx x;
  struct carp_http_request_options o;
  struct res drip, big, plain;
  char u1[256], u2[256], u3[256];
  struct carp_buf want;
  int done = 0, i;
  (void)state;

  memset(&co, 0, sizeof(co));
  co.stream_coalesce_ms = 150;
  ctx_init(&x, &co);
  /* 20 lines, 10 ms apart. */
  url(u1, sizeof(u1), &fx.plain, 0, "/drip?n=20&interval=10");
  res_init(&drip, &x);
  drip.counter = &done;
  opts_init(&o, &drip, "GET", u1);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &drip), 0);
  url(u2, sizeof(u2), &fx.plain, 0, "/big?size=4000000&chunked=1");
  res_init(&big, &x);
  big.counter = &done;
  opts_init(&o, &big, "GET", u2);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &big), 0);
  url(u3, sizeof(u3), &fx.plain, 0, "/echo");
  res_init(&plain, &x);
  plain.counter = &done;
  opts_init(&o, &plain, "GET", u3);
  assert_int_equal(start(&x, &o, &plain), 0);
  run_until(&x, &done, 3, 20000);

  carp_buf_init(&want, CARP_BUF_UNLIMITED);
  for (i = 0; i < 20; i++)
    carp_buf_printf(&want, "chunk-%d\n", i);
  assert_int_equal(drip.err, 0);
  assert_string_equal(carp_buf_cstr(&drip.data), carp_buf_cstr(&want));
  /* About 200 ms of lines in 150 ms windows (each line in a loop
   * iteration of its own without the option). */
  if (drip.data_ticks > 5)
    fail_msg("20 lines read in %d loop iterations", drip.data_ticks);
  assert_int_equal(big.err, 0);
  assert_int_equal(big.data.len, 4000000);
  if (big.data_ticks > 20)
    fail_msg("4 MB read in %d loop iterations", big.data_ticks);
  assert_int_equal(plain.err, 0);
  assert_int_equal(plain.http, 200);
  carp_buf_free(&want);
  struct res *all[] = {&drip, &big, &plain};
  for (size_t k = 0; k < CARP_ARRAY_LEN(all); k++) {
    assert_int_equal(all[k]->ndone, 1);
    assert_int_equal(all[k]->violations, 0);
    res_free(all[k]);
  }
  ctx_finish(&x);
}

/* With stream_coalesce_ms, data after a quiet spell is read at once: only
 * what follows it within the window waits. The window here is an hour: the
 * first line, 300 ms in, would otherwise wait for the client's next timer
 * (10 s), past the deadline. */
static void test_stream_read_at_once_after_quiet(void **state)
{
  struct carp_http_client_options co;
  struct ctx x;
  struct carp_http_request_options o;
  struct res r;
  char u[256];
  int done = 0;
  (void)state;

  memset(&co, 0, sizeof(co));
  co.stream_coalesce_ms = 3600 * 1000;
  ctx_init(&x, &co);
  url(u, sizeof(u), &fx.plain, 0, "/drip?n=3&first=300&interval=300");
  res_init(&r, &x);
  r.counter = &done;
  r.cancel_at_lines = 1;
  opts_init(&o, &r, "GET", u);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &r), 0);
  run_until(&x, &done, 1, 5000);
  assert_int_equal(r.err, CARP_ECANCELED);
  assert_string_equal(carp_buf_cstr(&r.data), "chunk-0\n");
  assert_int_equal(r.violations, 0);
  res_free(&r);
  ctx_finish(&x);
}

/* Starting a request from inside another's on_data (inside curl's write
 * callback, where curl_multi_add_handle is refused) works. */
struct spawner {
  struct res r;
  struct res child;
  const char *child_url;
  int rc;
  int spawned;
};

static int cb_data_spawn(struct carp_http_request *req, const char *data,
                         size_t len, void *arg)
{
  struct spawner *s = arg;
  if (!s->spawned) {
    struct carp_http_request_options o;
    s->spawned = 1;
    opts_init(&o, &s->child, "GET", s->child_url);
    s->rc = carp_http_request_start(s->r.ctx->client, &o, &s->child.req);
  }
  return cb_data(req, data, len, &s->r);
}

static void cb_done_spawn(struct carp_http_request *req, int status,
                          const struct carp_http_response *resp, void *arg)
{
  struct spawner *s = arg;
  cb_done(req, status, resp, &s->r);
}

static void test_start_from_callback(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct spawner s;
  char u[256], uc[256];
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  memset(&s, 0, sizeof(s));
  url(u, sizeof(u), &fx.plain, 0, "/drip?n=3&interval=50");
  url(uc, sizeof(uc), &fx.plain, 0, "/echo");
  res_init(&s.r, &x);
  res_init(&s.child, &x);
  s.r.counter = &done;
  s.child.counter = &done;
  s.child_url = uc;
  opts_init(&o, &s.r, "GET", u);
  o.on_data = cb_data_spawn;
  o.on_done = cb_done_spawn;
  o.on_headers = NULL;
  o.arg = &s;
  assert_int_equal(start(&x, &o, &s.r), 0);
  run_until(&x, &done, 2, 10000);
  assert_int_equal(s.rc, 0);
  assert_int_equal(s.r.err, 0);
  assert_int_equal(s.r.nlines, 3);
  assert_int_equal(s.child.err, 0);
  assert_contains(s.child.body, "\"method\":\"GET\"");
  assert_int_equal(s.r.violations + s.child.violations, 0);
  res_free(&s.r);
  res_free(&s.child);
  ctx_finish(&x);
}

static void test_reason_and_headers(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res locked, busy, missing;
  char u1[256], u2[256], u3[256];
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  url(u1, sizeof(u1), &fx.plain, 0,
      "/status/500?reason=VM%20is%20locked%20(clone)&body=x");
  res_init(&locked, &x);
  locked.counter = &done;
  opts_init(&o, &locked, "POST", u1);
  assert_int_equal(start(&x, &o, &locked), 0);

  url(u2, sizeof(u2), &fx.plain, 0,
      "/status/503?reason=Busy&header=Retry-After:7&header=X-Multi:a"
      "&header=X-Multi:b");
  res_init(&busy, &x);
  busy.counter = &done;
  busy.watch[0] = "retry-after";
  busy.watch[1] = "x-multi";
  opts_init(&o, &busy, "GET", u2);
  assert_int_equal(start(&x, &o, &busy), 0);

  url(u3, sizeof(u3), &fx.plain, 0, "/nowhere");
  res_init(&missing, &x);
  missing.counter = &done;
  opts_init(&o, &missing, "GET", u3);
  assert_int_equal(start(&x, &o, &missing), 0);

  run_until(&x, &done, 3, 10000);
  assert_int_equal(locked.err, 0); /* an HTTP answer is not an error here */
  assert_int_equal(locked.http, 500);
  assert_string_equal(locked.reason, "VM is locked (clone)");
  assert_string_equal(locked.body, "x");
  assert_int_equal(busy.err, 0);
  assert_int_equal(busy.http, 503);
  assert_string_equal(busy.reason, "Busy");
  assert_string_equal(res_hdr(&busy, "retry-after"), "7");
  assert_string_equal(res_hdr(&busy, "x-multi"), "b"); /* the last one */
  assert_int_equal(missing.http, 404);
  assert_string_equal(missing.reason, "Not Found");
  struct res *all[] = {&locked, &busy, &missing};
  for (size_t i = 0; i < CARP_ARRAY_LEN(all); i++) {
    assert_int_equal(all[i]->ndone, 1);
    assert_int_equal(all[i]->violations, 0);
    res_free(all[i]);
  }
  ctx_finish(&x);
}

static int check_pattern(const char *p, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (p[i] != 'a' + (char)(i % 26))
      return 0;
  return 1;
}

static void test_max_body(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res over, over_chunked, exact, large;
  char u1[256], u2[256], u3[256], u4[256];
  int done = 0;
  (void)state;

  ctx_init(&x, NULL);
  url(u1, sizeof(u1), &fx.plain, 0, "/big?size=100000");
  res_init(&over, &x);
  over.counter = &done;
  opts_init(&o, &over, "GET", u1);
  o.max_body = 1000;
  assert_int_equal(start(&x, &o, &over), 0);

  url(u2, sizeof(u2), &fx.plain, 0, "/big?size=100000&chunked=1");
  res_init(&over_chunked, &x);
  over_chunked.counter = &done;
  opts_init(&o, &over_chunked, "GET", u2);
  o.max_body = 1000;
  assert_int_equal(start(&x, &o, &over_chunked), 0);

  url(u3, sizeof(u3), &fx.plain, 0, "/big?size=1000&chunked=1");
  res_init(&exact, &x);
  exact.counter = &done;
  opts_init(&o, &exact, "GET", u3);
  o.max_body = 1000;
  assert_int_equal(start(&x, &o, &exact), 0);

  url(u4, sizeof(u4), &fx.plain, 0, "/big?size=5000000");
  res_init(&large, &x);
  large.counter = &done;
  large.take_body = 1;
  opts_init(&o, &large, "GET", u4);
  assert_int_equal(start(&x, &o, &large), 0);

  run_until(&x, &done, 4, 20000);
  assert_int_equal(over.err, CARP_ETOOBIG);
  assert_int_equal(over.body_len, 0); /* refused on Content-Length */
  assert_int_equal(over_chunked.err, CARP_ETOOBIG);
  assert_int_equal(exact.err, 0);
  assert_int_equal(exact.body_len, 1000);
  assert_true(check_pattern(exact.body, 1000));
  assert_int_equal(large.err, 0);
  assert_int_equal(large.body_len, 5000000);
  assert_true(check_pattern(large.body, 5000000));
  assert_int_equal(large.body[5000000], '\0');
  struct res *all[] = {&over, &over_chunked, &exact, &large};
  for (size_t i = 0; i < CARP_ARRAY_LEN(all); i++) {
    assert_int_equal(all[i]->ndone, 1);
    assert_int_equal(all[i]->violations, 0);
    res_free(all[i]);
  }
  ctx_finish(&x);
}

static void test_connect_refused(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res r;
  struct sockaddr_in sa;
  socklen_t slen = sizeof(sa);
  char u[256];
  int fd;
  (void)state;

  /* A port nobody listens on: bind one, note it, close it. */
  fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &slen), 0);
  close(fd);
  snprintf(u, sizeof(u), "http://127.0.0.1:%d/echo", ntohs(sa.sin_port));

  ctx_init(&x, NULL);
  res_init(&r, &x);
  opts_init(&o, &r, "GET", u);
  run_one(&x, &o, &r);
  assert_int_equal(r.err, CARP_ECONNECT);
  assert_int_equal(r.http, 0);
  assert_true(r.errmsg[0] != '\0');
  res_free(&r);
  ctx_finish(&x);
}

/* A host name that goes through curl's resolver thread (curl answers
 * "localhost" itself): this machine's name, when it resolves to loopback. */
static void test_resolver_thread(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct addrinfo hints, *ai = NULL;
  struct res r;
  char host[256], u[512];
  int loopback;
  (void)state;

  if (gethostname(host, sizeof(host)) != 0 || !strcmp(host, "localhost"))
    skip();
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, NULL, &hints, &ai) != 0)
    skip();
  loopback = ((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr.s_addr ==
             htonl(INADDR_LOOPBACK);
  freeaddrinfo(ai);
  if (!loopback)
    skip();

  ctx_init(&x, NULL);
  snprintf(u, sizeof(u), "http://%s:%d/echo", host, fx.plain.port);
  res_init(&r, &x);
  opts_init(&o, &r, "GET", u);
  run_one(&x, &o, &r);
  if (r.err)
    fail_msg("%s: %s (%s)", u, carp_errname(r.err), r.errmsg);
  assert_int_equal(r.http, 200);
  res_free(&r);
  ctx_finish(&x);
}

static void test_close_in_flight(void **state)
{
  struct ctx x;
  struct carp_http_request_options o;
  struct res slow[3], stream;
  char us[256], ud[256];
  int done = 0;
  (void)state;

  /* Closed from inside a streaming request's on_data. */
  ctx_init(&x, NULL);
  url(us, sizeof(us), &fx.plain, 0, "/slow?delay=5000");
  url(ud, sizeof(ud), &fx.plain, 0, "/drip?n=100&interval=30");
  for (int i = 0; i < 3; i++) {
    res_init(&slow[i], &x);
    slow[i].counter = &done;
    opts_init(&o, &slow[i], "GET", us);
    assert_int_equal(start(&x, &o, &slow[i]), 0);
  }
  res_init(&stream, &x);
  stream.counter = &done;
  stream.close_at_lines = 1;
  opts_init(&o, &stream, "GET", ud);
  o.on_data = cb_data;
  assert_int_equal(start(&x, &o, &stream), 0);
  run_until(&x, &done, 4, 10000);
  assert_null(x.client);
  assert_int_equal(stream.err, CARP_ECANCELED);
  assert_int_equal(stream.nlines, 1);
  for (int i = 0; i < 3; i++) {
    if (slow[i].err != CARP_ECANCELED)
      fail_msg("slow %d: %s %ld (%s) after %llu ms", i,
               carp_errname(slow[i].err), slow[i].http, slow[i].errmsg,
               (unsigned long long)(slow[i].t_done - slow[i].t_start));
    assert_true(slow[i].t_done - slow[i].t_start < 4000);
    assert_int_equal(slow[i].ndone, 1);
    assert_int_equal(slow[i].violations, 0);
    res_free(&slow[i]);
  }
  assert_int_equal(stream.ndone, 1);
  assert_int_equal(stream.violations, 0);
  res_free(&stream);
  ctx_finish(&x); /* runs the loop dry; checks close_cb ran once */

  /* Closed from outside, with a request still pending (never added). */
  done = 0;
  ctx_init(&x, NULL);
  for (int i = 0; i < 3; i++) {
    res_init(&slow[i], &x);
    slow[i].counter = &done;
    opts_init(&o, &slow[i], "GET", us);
    assert_int_equal(start(&x, &o, &slow[i]), 0);
    if (i == 1) /* let the first two reach the server */
      for (int k = 0; k < 5; k++)
        uv_run(&x.loop, UV_RUN_ONCE);
  }
  {
    struct carp_http_client *c = x.client;
    struct res late;
    carp_http_client_close(c, on_client_closed, &x);
    x.client = NULL;
    res_init(&late, &x);
    opts_init(&o, &late, "GET", us);
    g_in_start = 1;
    assert_int_equal(carp_http_request_start(c, &o, &late.req), CARP_ECANCELED);
    g_in_start = 0;
    res_free(&late);
  }
  assert_int_equal(done, 0);
  run_until(&x, &done, 3, 5000);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(slow[i].err, CARP_ECANCELED);
    assert_int_equal(slow[i].ndone, 1);
    assert_int_equal(slow[i].violations, 0);
    res_free(&slow[i]);
  }
  ctx_finish(&x);
}

/* --- TLS ------------------------------------------------------------------ */

/* GET /echo on server p over TLS with options co; fills r. */
static void tls_get(const struct carp_http_client_options *co,
                    const struct carp_test_proc *p, struct res *r)
{
  struct ctx x;
  struct carp_http_request_options o;
  char u[256];

  ctx_init(&x, co);
  url(u, sizeof(u), p, 1, "/echo");
  res_init(r, &x);
  opts_init(&o, r, "GET", u);
  o.timeout_ms = 10000;
  run_one(&x, &o, r);
  ctx_finish(&x);
  r->ctx = NULL;
  r->loop = NULL;
}

static void expect_tls(const struct carp_http_client_options *co,
                       const struct carp_test_proc *p, int want,
                       const char *what)
{
  struct res r;
  tls_get(co, p, &r);
  if (r.err != want)
    fail_msg("%s: want %s, got %s (%s)", what, carp_errname(want),
             carp_errname(r.err), r.errmsg);
  if (want == 0)
    assert_int_equal(r.http, 200);
  else
    assert_true(r.errmsg[0] != '\0');
  res_free(&r);
}

static void test_tls_ca(void **state)
{
  struct carp_http_client_options co;
  (void)state;

  memset(&co, 0, sizeof(co));
  co.tls.ca_file = fx.ca_file;
  expect_tls(&co, &fx.tls, 0, "ca_file");
  memset(&co, 0, sizeof(co));
  co.tls.ca_pem = fx.ca_pem; /* length 0: NUL-terminated */
  expect_tls(&co, &fx.tls, 0, "ca_pem");
  co.tls.ca_pem_len = strlen(fx.ca_pem);
  expect_tls(&co, &fx.tls, 0, "ca_pem with length");
  /* The system store does not know the test CA. */
  memset(&co, 0, sizeof(co));
  expect_tls(&co, &fx.tls, CARP_ETLS, "system store");
  /* A certificate for another host name. */
  co.tls.ca_file = fx.ca_file;
  expect_tls(&co, &fx.wrong, CARP_ETLS, "wrong host");
  co.tls.ca_file = NULL;
  co.tls.ca_pem = fx.ca_pem;
  expect_tls(&co, &fx.wrong, CARP_ETLS, "wrong host, ca_pem");
}

static void test_tls_insecure(void **state)
{
  struct carp_http_client_options co;
  (void)state;

  memset(&co, 0, sizeof(co));
  co.tls.insecure = 1;
  expect_tls(&co, &fx.tls, 0, "insecure");
  expect_tls(&co, &fx.wrong, 0, "insecure, wrong host");
}

static void test_tls_pinned_pubkey(void **state)
{
  struct carp_http_client_options co;
  (void)state;

  memset(&co, 0, sizeof(co));
  co.tls.ca_file = fx.ca_file;
  co.tls.pinned_pubkey = fx.spki;
  expect_tls(&co, &fx.tls, 0, "right pin");
  co.tls.pinned_pubkey = "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
  expect_tls(&co, &fx.tls, CARP_ETLS, "wrong pin");
}

static void test_tls_fingerprint(void **state)
{
  struct carp_http_client_options co;
  char wrong[256], bare[128];
  size_t n = 0;
  (void)state;

  memset(&co, 0, sizeof(co));
  co.tls.cert_sha256 = fx.fp; /* no CA at all */
  expect_tls(&co, &fx.tls, 0, "right fingerprint");
  /* The same, lower case without colons. */
  for (const char *p = fx.fp; *p && n + 1 < sizeof(bare); p++)
    if (*p != ':')
      bare[n++] = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
  bare[n] = '\0';
  co.tls.cert_sha256 = bare;
  expect_tls(&co, &fx.tls, 0, "bare fingerprint");
  /* One digit off. */
  snprintf(wrong, sizeof(wrong), "%s", fx.fp);
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  co.tls.cert_sha256 = wrong;
  expect_tls(&co, &fx.tls, CARP_ETLS, "wrong fingerprint");
  /* Another server's certificate. */
  co.tls.cert_sha256 = fx.fp;
  expect_tls(&co, &fx.wrong, CARP_ETLS, "other certificate");
  /* The host name is not checked: the certificate itself is pinned. */
  co.tls.cert_sha256 = fx.wrong_fp;
  expect_tls(&co, &fx.wrong, 0, "pinned certificate, other host name");
  /* A CA given as well is ignored, not required to match. */
  co.tls.ca_file = fx.ca_file;
  expect_tls(&co, &fx.wrong, 0, "pinned certificate with ca_file");
}

static void test_tls_client_cert(void **state)
{
  struct carp_http_client_options co;
  struct carp_http_request_options o;
  struct carp_http_header auth = {"Authorization", "Bearer s3cr3t-t0ken"};
  struct ctx x;
  struct res r;
  char u[256];
  const char *logged;
  (void)state;

  /* From memory, with debug logging on: neither the key nor the bearer
   * token may reach a log line. */
  log_capture_start(CARP_LOG_DEBUG);
  memset(&co, 0, sizeof(co));
  co.tls.ca_pem = fx.ca_pem;
  co.tls.cert_pem = fx.cert_pem;
  co.tls.key_pem = fx.key_pem;
  co.tls.key_pem_len = strlen(fx.key_pem);
  ctx_init(&x, &co);
  url(u, sizeof(u), &fx.mtls, 1, "/echo");
  res_init(&r, &x);
  opts_init(&o, &r, "GET", u);
  o.headers = &auth;
  o.nheaders = 1;
  run_one(&x, &o, &r);
  ctx_finish(&x);
  logged = log_capture_end();
  if (r.err)
    fail_msg("client cert from memory: %s (%s)", carp_errname(r.err), r.errmsg);
  assert_contains(r.body, "\"client_cn\":\"carpenter-test-client\"");
  assert_contains(r.body, "\"authorization\":\"Bearer s3cr3t-t0ken\"");
  assert_contains(logged, "request done");
  assert_null(strstr(logged, "s3cr3t"));
  assert_null(strstr(logged, "PRIVATE KEY"));
  log_capture_free();
  res_free(&r);

  memset(&co, 0, sizeof(co));
  co.tls.ca_file = fx.ca_file;
  co.tls.cert_file = fx.cert_file;
  co.tls.key_file = fx.key_file;
  tls_get(&co, &fx.mtls, &r);
  assert_int_equal(r.err, 0);
  assert_contains(r.body, "\"client_cn\":\"carpenter-test-client\"");
  res_free(&r);

  /* Without one the server refuses: ETLS, or EIO when TLS 1.3 delivers
   * the alert after the handshake. */
  memset(&co, 0, sizeof(co));
  co.tls.ca_file = fx.ca_file;
  tls_get(&co, &fx.mtls, &r);
  if (r.err != CARP_ETLS && r.err != CARP_EIO)
    fail_msg("no client cert: %s (%s)", carp_errname(r.err), r.errmsg);
  res_free(&r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape),
      cmocka_unit_test(test_client_options),
      cmocka_unit_test(test_bad_requests),
      cmocka_unit_test(test_loop_runs_dry),
      cmocka_unit_test(test_methods_echo),
      cmocka_unit_test(test_concurrent_200),
      cmocka_unit_test(test_connection_reuse),
      cmocka_unit_test(test_close_mid_stream),
      cmocka_unit_test(test_request_timeout),
      cmocka_unit_test(test_idle_timeout),
      cmocka_unit_test(test_cancel_before_start),
      cmocka_unit_test(test_cancel_during_stream),
      cmocka_unit_test(test_stream_order_and_abort),
      cmocka_unit_test(test_streams_read_together),
      cmocka_unit_test(test_stream_read_at_once_after_quiet),
      cmocka_unit_test(test_start_from_callback),
      cmocka_unit_test(test_reason_and_headers),
      cmocka_unit_test(test_max_body),
      cmocka_unit_test(test_connect_refused),
      cmocka_unit_test(test_resolver_thread),
      cmocka_unit_test(test_close_in_flight),
      cmocka_unit_test(test_tls_ca),
      cmocka_unit_test(test_tls_insecure),
      cmocka_unit_test(test_tls_pinned_pubkey),
      cmocka_unit_test(test_tls_fingerprint),
      cmocka_unit_test(test_tls_client_cert),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
