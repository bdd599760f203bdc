/* Tests of the Proxmox API client and task polling against hack/pve-sim
 * (ctest label integration): the envelope and numbers sent as strings, the
 * three error shapes (reason phrase on PVE 8, "message" on PVE 9, 400 with
 * an "errors" map), 401 for a bad token, 501, ENOTFOUND from a 500, tasks
 * that succeed, fail and hang (stopped at the deadline), a multipart
 * upload, TLS by fingerprint (wrong one refused), CA file and insecure,
 * cancellation, and closing with calls in flight. Two simulators run for
 * the whole binary: PVE 8 and PVE 9. Each test runs its own loop and ends
 * with uv_loop_close() == 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "carpenter/pve.h"
#include "proc.h"
#include "tmpdir.h"

struct sim {
  pid_t pid;
  int out_fd;
  char url[512];
  char cfg[512];
  char cert[512];
  struct carp_pve_config config;
};

static struct {
  char dir[256];
  struct sim v8, v9;
} fx;

static int start_sim(struct sim *s, const char *version, const char *tag)
{
  char sim[1024], line[512], reqlog[600];
  const char *src = getenv("CARP_SOURCE_DIR");
  char *err = NULL;
  char *argv[40];
  int n = 0;
  snprintf(sim, sizeof(sim), "%s/hack/pve-sim", src && *src ? src : ".");
  snprintf(s->cfg, sizeof(s->cfg), "%s/%s.yaml", fx.dir, tag);
  snprintf(s->cert, sizeof(s->cert), "%s/%s.pem", fx.dir, tag);
  snprintf(reqlog, sizeof(reqlog), "%s/%s.jsonl", fx.dir, tag);
  argv[n++] = "python3";
  argv[n++] = sim;
  argv[n++] = "--listen";
  argv[n++] = "127.0.0.1:0";
  argv[n++] = "--cluster";
  argv[n++] = "lab";
  argv[n++] = "--hosts";
  argv[n++] = "pve1,pve2";
  argv[n++] = "--template";
  argv[n++] = "k3s:9000@pve1";
  argv[n++] = "--pve-version";
  argv[n++] = (char *)version;
  argv[n++] = "--config-out";
  argv[n++] = s->cfg;
  argv[n++] = "--cert-out";
  argv[n++] = s->cert;
  argv[n++] = "--request-log";
  argv[n++] = reqlog;
  argv[n++] = "--clone-seconds";
  argv[n++] = "0.2";
  argv[n++] = "--task-seconds";
  argv[n++] = "0.05";
  argv[n++] = "--start-seconds";
  argv[n++] = "0.05";
  argv[n++] = "--bad-token-delay";
  argv[n++] = "0.1";
  argv[n++] = "--stats-seconds";
  argv[n++] = "0.5";
  argv[n] = NULL;
  s->pid = carp_test_spawn(argv, &s->out_fd);
  if (s->pid <= 0)
    return -1;
  if (carp_test_read_line(s->out_fd, line, sizeof(line), 30000) != 0 ||
      strncmp(line, "pve-sim ready ", 14) != 0) {
    fprintf(stderr, "pve-sim did not start: %s\n", line);
    return -1;
  }
  snprintf(s->url, sizeof(s->url), "%s", line + 14);
  if (carp_pve_config_load(s->cfg, &s->config, &err) != 0) {
    fprintf(stderr, "config: %s\n", err ? err : "?");
    return -1;
  }
  return 0;
}

static void stop_sim(struct sim *s)
{
  struct carp_test_proc p = {.pid = s->pid, .out_fd = s->out_fd};
  carp_test_proc_stop(&p);
  carp_pve_config_free(&s->config);
}

static int setup(void **state)
{
  (void)state;
  if (carp_test_tmpdir(fx.dir, sizeof(fx.dir), "pve-client"))
    return -1;
  if (start_sim(&fx.v8, "8", "v8") || start_sim(&fx.v9, "9", "v9"))
    return -1;
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  stop_sim(&fx.v8);
  stop_sim(&fx.v9);
  carp_test_rmtree(fx.dir);
  return 0;
}

/* --- a call, synchronously for tests ----------------------------------------
 */

struct answer {
  int done;
  int err;
  long status;
  char message[1024];
  char *json; /* data re-encoded */
};

static void on_answer(const struct carp_pve_result *r, void *arg)
{
  struct answer *a = arg;
  struct carp_buf b;
  struct carp_jw w;
  a->done = 1;
  a->err = r->err;
  a->status = r->status;
  snprintf(a->message, sizeof(a->message), "%s", r->message);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  if (r->data)
    carp_jw_value(&w, r->data);
  else
    carp_jw_null(&w);
  carp_jw_finish(&w);
  a->json = carp_buf_steal(&b, NULL);
}

static struct carp_pve_client *client(uv_loop_t *loop,
                                      const struct carp_pve_cluster_config *cfg)
{
  struct carp_pve_client *c = NULL;
  assert_int_equal(carp_pve_client_new(loop, cfg, NULL, &c), 0);
  return c;
}

static void call(uv_loop_t *loop, struct carp_pve_client *c, const char *method,
                 const char *path, const struct carp_pve_form *f,
                 struct answer *a)
{
  memset(a, 0, sizeof(*a));
  assert_int_equal(
      carp_pve_call_start(c, method, path, f, 0, on_answer, a, NULL), 0);
  assert_int_equal(a->done, 0);
  while (!a->done)
    uv_run(loop, UV_RUN_ONCE);
}

static void answer_free(struct answer *a)
{
  carp_free(a->json);
  a->json = NULL;
}

static void finish(uv_loop_t *loop, struct carp_pve_client *c)
{
  carp_pve_client_close(c, NULL, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(loop), 0);
}

/* --- tests
 * --------------------------------------------------------------------- */

static void test_envelope_and_errors(void **state)
{
  uv_loop_t loop;
  struct carp_pve_client *c8, *c9;
  struct carp_pve_form f;
  struct answer a;
  (void)state;
  uv_loop_init(&loop);
  c8 = client(&loop, &fx.v8.config.clusters[0]);
  c9 = client(&loop, &fx.v9.config.clusters[0]);

  call(&loop, c8, "GET", "/version", NULL, &a);
  assert_int_equal(a.err, 0);
  assert_non_null(strstr(a.json, "\"release\":\"8."));
  answer_free(&a);
  /* a number that arrives as a string */
  call(&loop, c8, "GET", "/cluster/nextid", NULL, &a);
  assert_int_equal(a.err, 0);
  assert_string_equal(a.json, "\"100\"");
  answer_free(&a);
  /* 400 with an errors map */
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "vmid", "9000");
  call(&loop, c8, "GET", "/cluster/nextid", &f, &a);
  carp_pve_form_free(&f);
  assert_int_equal(a.err, CARP_EBADREQUEST);
  assert_int_equal(a.status, 400);
  assert_non_null(
      strstr(a.message,
             "Parameter verification failed: vmid: VM 9000 already exists"));
  answer_free(&a);
  /* PVE 8: the text only in the reason phrase */
  call(&loop, c8, "GET", "/nodes/pve1/qemu/777/config", NULL, &a);
  assert_int_equal(a.err, CARP_ENOTFOUND);
  assert_non_null(strstr(a.message, "does not exist"));
  assert_non_null(strstr(a.message, "(HTTP 500)"));
  answer_free(&a);
  /* PVE 9: also in "message" */
  call(&loop, c9, "GET", "/nodes/pve1/qemu/777/config", NULL, &a);
  assert_int_equal(a.err, CARP_ENOTFOUND);
  assert_non_null(strstr(a.message, "does not exist"));
  answer_free(&a);
  /* parameter errors on POST (a boolean must be 0/1) */
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "newid", "150");
  carp_pve_form_add(&f, "full", "true");
  call(&loop, c9, "POST", "/nodes/pve1/qemu/9000/clone", &f, &a);
  carp_pve_form_free(&f);
  assert_int_equal(a.err, CARP_EBADREQUEST);
  assert_non_null(strstr(a.message, "full: type check ('boolean') failed"));
  answer_free(&a);
  /* an unknown route */
  call(&loop, c9, "GET", "/nodes/pve1/qemu/9000/rrd", NULL, &a);
  assert_true(a.err == CARP_EUNSUPPORTED || a.err == CARP_EBADREQUEST);
  answer_free(&a);
  carp_pve_client_close(c9, NULL, NULL);
  finish(&loop, c8);
}

static void test_bad_token(void **state)
{
  uv_loop_t loop;
  struct carp_pve_cluster_config cfg = fx.v8.config.clusters[0];
  struct carp_pve_client *c;
  struct answer a;
  (void)state;
  cfg.token_secret = "00000000-0000-0000-0000-000000000000";
  uv_loop_init(&loop);
  c = client(&loop, &cfg);
  call(&loop, c, "GET", "/version", NULL, &a);
  assert_int_equal(a.err, CARP_EUNAUTHORIZED);
  assert_int_equal(a.status, 401);
  assert_non_null(strstr(a.message, "check tokenID and tokenSecret"));
  assert_null(strstr(a.message, "00000000-0000"));
  answer_free(&a);
  finish(&loop, c);
}

struct task_answer {
  int done;
  int err;
  char msg[512];
};

static void on_task(int err, const char *msg, void *arg)
{
  struct task_answer *t = arg;
  t->done = 1;
  t->err = err;
  snprintf(t->msg, sizeof(t->msg), "%s", msg);
}

static void wait_task(uv_loop_t *loop, struct carp_pve_client *c,
                      const char *upid, uint64_t timeout_ms,
                      struct task_answer *t)
{
  struct carp_pve_task_options o = {.timeout_ms = timeout_ms,
                                    .first_ms = 30,
                                    .max_delay_ms = 100,
                                    .stop_on_timeout = 1};
  memset(t, 0, sizeof(*t));
  assert_int_equal(carp_pve_task_wait_start(c, upid, &o, on_task, t, NULL), 0);
  assert_int_equal(t->done, 0);
  while (!t->done)
    uv_run(loop, UV_RUN_ONCE);
}

static void upid_of(const struct answer *a, char *out, size_t size)
{
  assert_true(a->json[0] == '"');
  snprintf(out, size, "%.*s", (int)(strlen(a->json) - 2), a->json + 1);
}

struct ctl_done {
  int done;
  long status;
};

static void on_ctl(struct carp_http_request *req, int status,
                   const struct carp_http_response *resp, void *arg)
{
  struct ctl_done *d = arg;
  (void)req;
  d->done = 1;
  d->status = status ? status : resp->status;
}

/* POST /_sim/faults (no auth) on the simulator's own loop and client. */
static void sim_faults(const struct sim *s, const char *json)
{
  uv_loop_t loop;
  struct carp_http_client_options o;
  struct carp_http_client *h;
  struct carp_http_request_options r;
  struct ctl_done d = {0};
  char url[600];
  snprintf(url, sizeof(url), "%.*s/_sim/faults",
           (int)(strstr(s->url, "/api2") - s->url), s->url);
  uv_loop_init(&loop);
  memset(&o, 0, sizeof(o));
  o.tls.insecure = 1;
  assert_int_equal(carp_http_client_new(&loop, &o, &h), 0);
  memset(&r, 0, sizeof(r));
  r.method = "POST";
  r.url = url;
  r.body = json;
  r.body_len = strlen(json);
  r.timeout_ms = 10000;
  r.on_done = on_ctl;
  r.arg = &d;
  assert_int_equal(carp_http_request_start(h, &r, NULL), 0);
  while (!d.done)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(d.status, 200);
  carp_http_client_close(h, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_tasks(void **state)
{
  uv_loop_t loop;
  struct carp_pve_client *c;
  struct carp_pve_form f;
  struct answer a;
  struct task_answer t;
  char upid[256];
  (void)state;
  uv_loop_init(&loop);
  c = client(&loop, &fx.v8.config.clusters[0]);
  /* a clone that succeeds */
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "newid", "300");
  carp_pve_form_add(&f, "name", "task-test");
  call(&loop, c, "POST", "/nodes/pve1/qemu/9000/clone", &f, &a);
  carp_pve_form_free(&f);
  assert_int_equal(a.err, 0);
  upid_of(&a, upid, sizeof(upid));
  answer_free(&a);
  wait_task(&loop, c, upid, 10000, &t);
  assert_int_equal(t.err, 0);
  assert_string_equal(t.msg, "OK");
  /* a clone onto the same VMID: refused at once */
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "newid", "300");
  call(&loop, c, "POST", "/nodes/pve1/qemu/9000/clone", &f, &a);
  carp_pve_form_free(&f);
  assert_int_equal(a.err, CARP_EEXIST);
  assert_non_null(strstr(a.message, "config file already exists"));
  answer_free(&a);
  /* a task that fails: starting a template */
  call(&loop, c, "POST", "/nodes/pve1/qemu/9000/status/start", NULL, &a);
  assert_int_equal(a.err, 0);
  upid_of(&a, upid, sizeof(upid));
  answer_free(&a);
  wait_task(&loop, c, upid, 10000, &t);
  assert_int_equal(t.err, CARP_ETASK);
  assert_non_null(strstr(t.msg, "you can't start a vm if it's a template"));
  /* a hung task is stopped at its deadline */
  sim_faults(&fx.v8, "{\"hang_tasks\": 1, \"hang_task_types\": [\"qmstart\"]}");
  call(&loop, c, "POST", "/nodes/pve1/qemu/300/status/start", NULL, &a);
  assert_int_equal(a.err, 0);
  upid_of(&a, upid, sizeof(upid));
  answer_free(&a);
  wait_task(&loop, c, upid, 400, &t);
  assert_int_equal(t.err, CARP_ETIMEDOUT);
  assert_non_null(strstr(t.msg, "stopped"));
  sim_faults(&fx.v8, "{\"hang_tasks\": 0}");
  /* malformed UPIDs are refused up front */
  assert_int_equal(carp_pve_task_wait_start(c, "nope", NULL, on_task, &t, NULL),
                   CARP_EPARSE);
  /* clean up VM 300 */
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "purge", "1");
  call(&loop, c, "DELETE", "/nodes/pve1/qemu/300", &f, &a);
  carp_pve_form_free(&f);
  if (!a.err) {
    upid_of(&a, upid, sizeof(upid));
    wait_task(&loop, c, upid, 10000, &t);
  }
  answer_free(&a);
  finish(&loop, c);
}

static void test_upload(void **state)
{
  uv_loop_t loop;
  struct carp_pve_client *c;
  struct carp_iso_file files[] = {{"user-data", "#cloud-config\n", 14},
                                  {"meta-data", "instance-id: a\n", 15}};
  const char *fields[] = {"content", "iso"};
  struct carp_buf iso;
  struct answer a;
  struct task_answer t;
  char upid[256];
  (void)state;
  uv_loop_init(&loop);
  c = client(&loop, &fx.v9.config.clusters[0]);
  carp_buf_init(&iso, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_iso_build("cidata", files, 2, &iso), 0);
  memset(&a, 0, sizeof(a));
  assert_int_equal(carp_pve_upload_start(c, "/nodes/pve1/storage/local/upload",
                                         fields, 2, "filename",
                                         "carpenter-test.iso", iso.ptr, iso.len,
                                         0, on_answer, &a, NULL),
                   0);
  while (!a.done)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(a.err, 0);
  upid_of(&a, upid, sizeof(upid));
  answer_free(&a);
  wait_task(&loop, c, upid, 10000, &t);
  assert_int_equal(t.err, 0);
  call(&loop, c, "GET", "/nodes/pve1/storage/local/content", NULL, &a);
  assert_int_equal(a.err, 0);
  assert_non_null(strstr(a.json, "local:iso/carpenter-test.iso"));
  answer_free(&a);
  carp_buf_free(&iso);
  finish(&loop, c);
}

static void test_tls(void **state)
{
  uv_loop_t loop;
  struct carp_pve_cluster_config cfg = fx.v8.config.clusters[0];
  struct carp_pve_client *c;
  struct answer a;
  (void)state;
  /* the right fingerprint: ok (the other tests); a wrong one: refused */
  cfg.fingerprint =
      "AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:"
      "AB:AB:AB:AB:AB:AB:AB:AB:AB:AB";
  uv_loop_init(&loop);
  c = client(&loop, &cfg);
  call(&loop, c, "GET", "/version", NULL, &a);
  assert_int_equal(a.err, CARP_ETLS);
  assert_non_null(strstr(a.message, "TLS to region lab refused"));
  answer_free(&a);
  finish(&loop, c);
  /* the certificate as a CA file (its SAN is 127.0.0.1) */
  cfg.fingerprint = NULL;
  cfg.ca_file = fx.v8.cert;
  uv_loop_init(&loop);
  c = client(&loop, &cfg);
  call(&loop, c, "GET", "/version", NULL, &a);
  assert_int_equal(a.err, 0);
  answer_free(&a);
  finish(&loop, c);
  /* no CA at all: the system store does not know it */
  cfg.ca_file = NULL;
  uv_loop_init(&loop);
  c = client(&loop, &cfg);
  call(&loop, c, "GET", "/version", NULL, &a);
  assert_int_equal(a.err, CARP_ETLS);
  answer_free(&a);
  finish(&loop, c);
  /* insecure only when asked */
  cfg.insecure = 1;
  uv_loop_init(&loop);
  c = client(&loop, &cfg);
  call(&loop, c, "GET", "/version", NULL, &a);
  assert_int_equal(a.err, 0);
  answer_free(&a);
  finish(&loop, c);
}

static void test_cancel_and_close(void **state)
{
  uv_loop_t loop;
  struct carp_pve_client *c;
  struct carp_pve_call *call1 = NULL;
  struct answer a, b;
  (void)state;
  uv_loop_init(&loop);
  c = client(&loop, &fx.v8.config.clusters[0]);
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  assert_int_equal(carp_pve_call_start(c, "GET", "/cluster/resources", NULL, 0,
                                       on_answer, &a, &call1),
                   0);
  carp_pve_call_cancel(call1);
  while (!a.done)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(a.err, CARP_ECANCELED);
  answer_free(&a);
  /* closing the client cancels what is in flight */
  assert_int_equal(carp_pve_call_start(c, "GET", "/cluster/resources", NULL, 0,
                                       on_answer, &b, NULL),
                   0);
  carp_pve_client_close(c, NULL, NULL);
  assert_int_equal(
      carp_pve_call_start(c, "GET", "/version", NULL, 0, on_answer, &a, NULL),
      CARP_ECANCELED);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(b.done, 1);
  assert_int_equal(b.err, CARP_ECANCELED);
  answer_free(&b);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_envelope_and_errors),
      cmocka_unit_test(test_bad_token),
      cmocka_unit_test(test_tasks),
      cmocka_unit_test(test_upload),
      cmocka_unit_test(test_tls),
      cmocka_unit_test(test_cancel_and_close),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
