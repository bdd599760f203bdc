/* task.c: Proxmox worker tasks. Most calls that change a VM (clone,
 * config, resize, start, stop, delete, upload) answer at once with a UPID
 * and do the work in a task; the HTTP 200 says nothing about success. So
 * every such call is followed by polling the task's status until it has
 * stopped, and its exitstatus decides: "OK" or "WARNINGS: n" is success,
 * anything else is the error text (a failed start, a lock timeout, "config
 * file already exists" from a racing clone...).
 *
 * The status must be asked of the node named inside the UPID (a task is
 * unknown elsewhere), so the UPID is parsed first. The first poll goes out
 * when the caller expects the task to be done (taskpace.c learns that per
 * kind of task), else at 100 ms. Polls back off from
 * 100 ms to 750 ms, doubling, with jitter (at 0.1, 0.3, 0.7, 1.45 s...:
 * a config or start task ends within the first three polls; a finished
 * clone is seen at most 750 ms late). Doubling rather than growing by half
 * (0.1, 0.2, 0.35, 0.58 s...) takes a quarter fewer polls per VM (11
 * instead of 15 on the scale-out benchmark) for at most a few hundred ms
 * more on a short task: polls were two thirds of Carpenter's requests
 * while scaling out; each wait has a deadline, and a task still
 * running at its deadline may be stopped (DELETE .../tasks/{upid}) so a
 * hung clone does not keep its lock. Transient poll failures (network,
 * 5xx, host briefly unreachable) are retried until the deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/backoff.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

static int hexfield(const char **p, int min, int max, uint64_t *out)
{
  const char *s = *p;
  int n = 0;
  uint64_t v = 0;
  while (*s && *s != ':') {
    char ch = *s;
    int d;
    if (ch >= '0' && ch <= '9')
      d = ch - '0';
    else if (ch >= 'A' && ch <= 'F')
      d = ch - 'A' + 10;
    else if (ch >= 'a' && ch <= 'f')
      d = ch - 'a' + 10;
    else
      return CARP_EPARSE;
    v = v * 16 + (uint64_t)d;
    n++;
    s++;
  }
  if (n < min || n > max || *s != ':')
    return CARP_EPARSE;
  *out = v;
  *p = s + 1;
  return 0;
}

static int strfield(const char **p, char *out, size_t size, int allow_empty,
                    int allow_slash)
{
  const char *s = *p;
  size_t n = 0;
  while (*s && *s != ':') {
    if (*s == ' ' || *s == '\t' || (*s == '/' && !allow_slash))
      return CARP_EPARSE;
    n++;
    s++;
  }
  if (*s != ':' || (!n && !allow_empty) || n >= size)
    return CARP_EPARSE;
  memcpy(out, *p, n);
  out[n] = '\0';
  *p = s + 1;
  return 0;
}

int carp_pve_upid_parse(const char *s, struct carp_pve_upid *out)
{
  const char *p;
  uint64_t v;
  size_t i, n;

  if (!s || !out || strncmp(s, "UPID:", 5) != 0)
    return CARP_EPARSE;
  memset(out, 0, sizeof(*out));
  p = s + 5;
  if (strfield(&p, out->node, sizeof(out->node), 0, 0))
    return CARP_EPARSE;
  n = strlen(out->node);
  for (i = 0; i < n; i++) {
    char ch = out->node[i];
    int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                (ch >= '0' && ch <= '9');
    if (!alnum && !(ch == '-' && i > 0 && i + 1 < n))
      return CARP_EPARSE;
  }
  if (hexfield(&p, 8, 8, &v))
    return CARP_EPARSE;
  out->pid = (uint32_t)v;
  if (hexfield(&p, 8, 9, &v))
    return CARP_EPARSE;
  out->pstart = v;
  if (hexfield(&p, 8, 8, &v))
    return CARP_EPARSE;
  out->starttime = (uint32_t)v;
  if (strfield(&p, out->type, sizeof(out->type), 0, 0) ||
      strfield(&p, out->id, sizeof(out->id), 1, 0) ||
      strfield(&p, out->user, sizeof(out->user), 0, 0))
    return CARP_EPARSE;
  return *p ? CARP_EPARSE : 0;
}

int carp_pve_exitstatus_ok(const char *s)
{
  const char *p;
  if (!s)
    return 0;
  if (!strcmp(s, "OK"))
    return 1;
  if (strncmp(s, "WARNINGS: ", 10) != 0)
    return 0;
  p = s + 10;
  if (!*p)
    return 0;
  for (; *p; p++)
    if (*p < '0' || *p > '9')
      return 0;
  return 1;
}

int pve_task_status_decode(yajl_val data, int *err, const char **msg)
{
  const char *status = carp_json_str(data, "status", NULL), *exitstatus;
  if (!status) {
    *err = CARP_EPARSE;
    *msg = "task status without a status field";
    return 0;
  }
  if (!strcmp(status, "running"))
    return 1;
  exitstatus = carp_json_str(data, "exitstatus", NULL);
  if (!exitstatus || !*exitstatus) /* an error needs a message */
    exitstatus = "unexpected status";
  *msg = exitstatus;
  *err = carp_pve_exitstatus_ok(exitstatus)
             ? 0
             : carp_pve_classify(exitstatus, CARP_ETASK);
  return 0;
}

/* --- waiting
 * ------------------------------------------------------------------ */

struct carp_pve_task_wait {
  struct carp_pve_client *c;
  uv_timer_t timer;
  char *upid;
  char *status_path;
  char *task_path;
  struct carp_backoff backoff;
  uint64_t deadline_ms;
  int stop_on_timeout;
  struct carp_pve_call *call;
  carp_pve_task_cb cb;
  void *arg;
  int err;       /* result, once known */
  char *message; /* result text */
  int done;      /* result known; delivering from the timer */
  int canceled;
  int last_err; /* last transient poll error */
  char last_msg[256];
};

static void wait_free(uv_handle_t *h)
{
  struct carp_pve_task_wait *w = h->data;
  carp_free(w->upid);
  carp_free(w->status_path);
  carp_free(w->task_path);
  carp_free(w->message);
  carp_free(w);
}

static void deliver(struct carp_pve_task_wait *w)
{
  w->cb(w->err, w->message ? w->message : "", w->arg);
  uv_close((uv_handle_t *)&w->timer, wait_free);
}

static void on_timer(uv_timer_t *t);

/* Records the result and delivers it from the timer (never synchronously). */
static void finish(struct carp_pve_task_wait *w, int err, const char *msg)
{
  if (w->done)
    return;
  w->done = 1;
  w->err = err;
  carp_free(w->message);
  w->message = carp_strdup(msg ? msg : "");
  uv_timer_start(&w->timer, on_timer, 0, 0);
}

static void on_stopped(const struct carp_pve_result *r, void *arg)
{
  struct carp_pve_task_wait *w = arg;
  char msg[512];
  w->call = NULL;
  if (w->canceled) {
    finish(w, CARP_ECANCELED, "cancelled");
    return;
  }
  if (r->err && r->err != CARP_ECANCELED)
    CARP_LOG_WARN(PVE_LOG, "could not stop a task past its deadline",
                  CARP_F_STR("upid", w->upid),
                  CARP_F_STR("reason", r->message));
  snprintf(msg, sizeof(msg), "task %s did not finish in time (stopped)",
           w->upid);
  finish(w, CARP_ETIMEDOUT, msg);
}

static void timed_out(struct carp_pve_task_wait *w)
{
  char msg[512];
  if (w->stop_on_timeout &&
      carp_pve_call_start(w->c, "DELETE", w->task_path, NULL, 10000, on_stopped,
                          w, &w->call) == 0)
    return;
  if (w->last_err)
    snprintf(msg, sizeof(msg), "task %s: no status before the deadline: %s",
             w->upid, w->last_msg);
  else
    snprintf(msg, sizeof(msg), "task %s did not finish in time", w->upid);
  finish(w, CARP_ETIMEDOUT, msg);
}

static void schedule(struct carp_pve_task_wait *w)
{
  uint64_t now = carp_time_mono_ms(), delay = carp_backoff_next(&w->backoff);
  if (now >= w->deadline_ms) {
    timed_out(w);
    return;
  }
  if (now + delay > w->deadline_ms)
    delay = w->deadline_ms - now;
  uv_timer_start(&w->timer, on_timer, delay, 0);
}

static void on_status(const struct carp_pve_result *r, void *arg)
{
  struct carp_pve_task_wait *w = arg;
  const char *msg;
  int err;

  w->call = NULL;
  if (w->canceled || r->err == CARP_ECANCELED) {
    finish(w, CARP_ECANCELED, "cancelled");
    return;
  }
  if (r->err) {
    /* A status request that cannot succeed ends the wait; anything else
     * (network, 5xx, 595 while a host reboots) is retried. */
    if (r->err == CARP_EUNAUTHORIZED || r->err == CARP_EFORBIDDEN ||
        r->err == CARP_EBADREQUEST || r->err == CARP_ETLS) {
      finish(w, r->err, r->message);
      return;
    }
    w->last_err = r->err;
    snprintf(w->last_msg, sizeof(w->last_msg), "%s", r->message);
    schedule(w);
    return;
  }
  if (pve_task_status_decode(r->data, &err, &msg))
    schedule(w);
  else
    finish(w, err, msg);
}

static void on_timer(uv_timer_t *t)
{
  struct carp_pve_task_wait *w = t->data;
  int rc;
  if (w->done) {
    deliver(w);
    return;
  }
  if (w->canceled) {
    finish(w, CARP_ECANCELED, "cancelled");
    return;
  }
  rc = carp_pve_call_start(w->c, "GET", w->status_path, NULL, 15000, on_status,
                           w, &w->call);
  if (rc)
    finish(w, rc, carp_strerror(rc));
}

int carp_pve_task_wait_start(struct carp_pve_client *c, const char *upid,
                             const struct carp_pve_task_options *opts,
                             carp_pve_task_cb cb, void *arg,
                             struct carp_pve_task_wait **out)
{
  struct carp_pve_task_wait *w;
  struct carp_pve_upid u;
  struct carp_buf path;
  uint64_t first, cap, timeout, at;
  int rc;

  if (!c || !upid || !cb)
    return CARP_EINVAL;
  if (carp_pve_upid_parse(upid, &u))
    return CARP_EPARSE;
  first = opts && opts->first_ms ? opts->first_ms : 100;
  cap = opts && opts->max_delay_ms ? opts->max_delay_ms : 750;
  if (cap < first)
    cap = first;
  timeout = opts && opts->timeout_ms ? opts->timeout_ms : 300000;
  w = CARP_NEW(struct carp_pve_task_wait);
  rc = uv_timer_init(carp_pve_client_loop(c), &w->timer);
  if (rc) {
    carp_free(w);
    return rc;
  }
  w->timer.data = w;
  w->c = c;
  w->upid = carp_strdup(upid);
  carp_buf_init(&path, CARP_BUF_UNLIMITED);
  carp_buf_puts(&path, "/nodes/");
  carp_http_escape(&path, u.node);
  carp_buf_puts(&path, "/tasks/");
  carp_http_escape(&path, upid);
  w->task_path = carp_strdup(carp_buf_cstr(&path));
  carp_buf_puts(&path, "/status");
  w->status_path = carp_buf_steal(&path, NULL);
  carp_backoff_init(&w->backoff, first, cap, 2.0, 0.2);
  /* The first poll is at first ms; the wait after it is twice that. */
  (void)carp_backoff_next(&w->backoff);
  w->deadline_ms = carp_time_mono_ms() + timeout;
  w->stop_on_timeout = opts ? opts->stop_on_timeout : 0;
  w->cb = cb;
  w->arg = arg;
  at = opts && opts->expect_ms > first ? opts->expect_ms : first;
  uv_timer_start(&w->timer, on_timer, at < timeout ? at : timeout, 0);
  if (out)
    *out = w;
  return 0;
}

void carp_pve_task_wait_cancel(struct carp_pve_task_wait *w)
{
  if (!w || w->done || w->canceled)
    return;
  w->canceled = 1;
  if (w->call)
    carp_pve_call_cancel(w->call);
  else
    finish(w, CARP_ECANCELED, "cancelled");
}
