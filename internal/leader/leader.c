/* leader.c: Lease-based leader election (see include/carpenter/leader.h).
 *
 * One timer drives everything: every retry period the elector reads the
 * Lease and then creates, takes over or renews it with an update guarded
 * by the resourceVersion it read, so two candidates can never both win
 * one round (the loser gets 409 Conflict).
 *
 * Expiry is judged by the local clock, as in client-go, but dated more
 * tightly: a change of the record is dated at the previous read that still
 * showed the old record (the change happened after it), not at the read
 * that first showed the new one, and the standby wakes exactly when the
 * lease expires instead of on its next retry tick. The holder renewed at
 * some time r after that previous read, and it stops writing at r plus the
 * renew deadline (10 s), while the standby takes over no earlier than the
 * previous read plus the lease (15 s) >= r - retry (2 s) + 15 s = r + 13 s.
 * So the holder has been silent for at least 3 s when the standby takes
 * over, and a standby takes over at most one lease duration after the
 * holder's last renewal (within 15 s of the holder dying). */
#include "carpenter/leader.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/rand.h"
#include "carpenter/timeutil.h"

struct carp_leader {
  uv_loop_t *loop;
  struct carp_kube *kube;
  struct carp_leader_options opts;
  char *namespace;
  char *name;
  char *identity;
  uv_timer_t timer;
  int leading;
  uint64_t last_renew_ms; /* local time of the last successful renewal */
  /* What we last saw of the record. */
  char *observed_holder;
  char *observed_renew;
  int64_t observed_transitions;
  int64_t observed_duration_s;
  uint64_t observed_ms;  /* local time the record last changed (at most) */
  uint64_t last_read_ms; /* local time of the previous successful read */
  int busy;              /* a request is in flight */
  int closing;
  int released;
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_metric *m_status;
};

static int gate(void *arg)
{
  return carp_leader_is_leader(arg);
}

int carp_leader_is_leader(const struct carp_leader *l)
{
  return l->leading &&
         uv_now(l->loop) - l->last_renew_ms < l->opts.renew_deadline_ms;
}

const char *carp_leader_identity(const struct carp_leader *l)
{
  return l->identity;
}

static void set_metric(struct carp_leader *l, int v)
{
  carp_metric_set(l->m_status, CARP_VALUES(l->name), v);
}

static void lose(struct carp_leader *l, const char *why)
{
  if (!l->leading)
    return;
  l->leading = 0;
  set_metric(l, 0);
  CARP_LOG_ERROR("leader", "leadership lost", CARP_F_STR("lease", l->name),
                 CARP_F_STR("identity", l->identity), CARP_F_STR("why", why));
  if (l->opts.on_stopped_leading)
    l->opts.on_stopped_leading(l->opts.arg);
}

static void now_micro(char out[40])
{
  /* MicroTime: RFC 3339 with six fractional digits. */
  char ms[CARP_RFC3339_LEN];
  int64_t t = carp_time_wall_ms();
  carp_time_format_rfc3339(t, 1, ms);
  /* "....SS.mmmZ" -> "....SS.mmm000Z" */
  snprintf(out, 40, "%.*s000Z", (int)strlen(ms) - 1, ms);
}

static void write_lease(struct carp_buf *out, struct carp_leader *l,
                        const char *rv, const char *holder, int64_t duration_s,
                        const char *acquire, const char *renew,
                        int64_t transitions)
{
  struct carp_jw w;
  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", "coordination.k8s.io/v1");
  carp_jw_kstr(&w, "kind", "Lease");
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "name", l->name);
  carp_jw_kstr(&w, "namespace", l->namespace);
  if (rv)
    carp_jw_kstr(&w, "resourceVersion", rv);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "holderIdentity", holder);
  carp_jw_kint(&w, "leaseDurationSeconds", duration_s);
  if (acquire)
    carp_jw_kstr(&w, "acquireTime", acquire);
  carp_jw_kstr(&w, "renewTime", renew);
  carp_jw_kint(&w, "leaseTransitions", transitions);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
}

static void on_timer(uv_timer_t *t);

static void arm(struct carp_leader *l)
{
  if (!l->closing)
    uv_timer_start(&l->timer, on_timer, l->opts.retry_ms, 0);
}

static void on_write(const struct carp_kube_result *res, void *arg)
{
  struct carp_leader *l = arg;
  l->busy = 0;
  if (l->closing) {
    carp_leader_close(l, l->close_cb, l->close_arg);
    return;
  }
  if (res->err) {
    CARP_LOG_DEBUG("leader", "lease write failed", CARP_F_ERR(res->err),
                   CARP_F_STR("message", res->message));
    if (l->leading &&
        uv_now(l->loop) - l->last_renew_ms >= l->opts.renew_deadline_ms)
      lose(l, "could not renew the lease before the renew deadline");
    else if (l->leading && res->err == CARP_ECONFLICT)
      lose(l, "the lease was changed by another holder");
    arm(l);
    return;
  }
  l->last_renew_ms = uv_now(l->loop);
  if (!l->leading) {
    l->leading = 1;
    set_metric(l, 1);
    CARP_LOG_INFO("leader", "became the leader", CARP_F_STR("lease", l->name),
                  CARP_F_STR("identity", l->identity));
    if (l->opts.on_started_leading)
      l->opts.on_started_leading(l->opts.arg);
  }
  arm(l);
}

static void send_write(struct carp_leader *l, const char *method,
                       const char *rv, const char *acquire, int64_t transitions)
{
  struct carp_buf path, body;
  struct carp_kube_request r;
  char renew[40];
  int rc;
  now_micro(renew);
  carp_buf_init(&path, 4096);
  carp_buf_init(&body, 8192);
  carp_buf_printf(&path,
                  "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s",
                  l->namespace, rv ? "/" : "", rv ? l->name : "");
  write_lease(&body, l, rv, l->identity, (int64_t)(l->opts.lease_ms / 1000),
              acquire ? acquire : renew, renew, transitions);
  memset(&r, 0, sizeof(r));
  r.method = method;
  r.path = carp_buf_cstr(&path);
  r.content_type = "application/json";
  r.body = body.ptr;
  r.body_len = body.len;
  r.ungated = 1;
  /* A lease write must land within the retry period to be useful. */
  r.timeout_ms = l->opts.retry_ms > 1000 ? l->opts.retry_ms : 1000;
  l->busy = 1;
  rc = carp_kube_call(l->kube, &r, on_write, l, NULL);
  carp_buf_free(&path);
  carp_buf_free(&body);
  if (rc) {
    l->busy = 0;
    arm(l);
  }
}

static int str_eq(const char *a, const char *b)
{
  return (a ? a : "")[0] == (b ? b : "")[0] && !strcmp(a ? a : "", b ? b : "");
}

static void on_read(const struct carp_kube_result *res, void *arg)
{
  struct carp_leader *l = arg;
  const char *holder, *renew, *acquire, *rv;
  int64_t transitions = 0, duration = 0;
  uint64_t now = uv_now(l->loop);

  l->busy = 0;
  if (l->closing) {
    carp_leader_close(l, l->close_cb, l->close_arg);
    return;
  }
  if (res->err == CARP_ENOTFOUND) {
    send_write(l, "POST", NULL, NULL, 0);
    return;
  }
  if (res->err) {
    CARP_LOG_DEBUG("leader", "cannot read the lease", CARP_F_ERR(res->err));
    if (l->leading && now - l->last_renew_ms >= l->opts.renew_deadline_ms)
      lose(l, "could not read the lease before the renew deadline");
    arm(l);
    return;
  }
  holder = carp_json_str(res->body, "spec", "holderIdentity", NULL);
  renew = carp_json_str(res->body, "spec", "renewTime", NULL);
  acquire = carp_json_str(res->body, "spec", "acquireTime", NULL);
  rv = carp_json_str(res->body, "metadata", "resourceVersion", NULL);
  carp_json_int(res->body, &transitions, "spec", "leaseTransitions", NULL);
  carp_json_int(res->body, &duration, "spec", "leaseDurationSeconds", NULL);
  if (duration <= 0)
    duration = (int64_t)(l->opts.lease_ms / 1000);

  /* Track changes of the record by the local clock. */
  if (!str_eq(holder, l->observed_holder) ||
      !str_eq(renew, l->observed_renew) || !l->observed_ms) {
    /* First sight: we cannot know when it last changed, so assume now. */
    uint64_t changed =
        l->observed_ms && l->last_read_ms ? l->last_read_ms : now;
    carp_free(l->observed_holder);
    carp_free(l->observed_renew);
    l->observed_holder = carp_strdup(holder ? holder : "");
    l->observed_renew = carp_strdup(renew ? renew : "");
    l->observed_ms = changed;
  }
  l->last_read_ms = now;
  l->observed_transitions = transitions;
  l->observed_duration_s = duration;

  if (holder && *holder && strcmp(holder, l->identity)) {
    /* Someone else holds it. */
    uint64_t expiry = l->observed_ms + (uint64_t)duration * 1000;
    if (l->leading)
      lose(l, "another replica holds the lease");
    if (now < expiry) {
      /* Wake at expiry if that comes before the next regular read. */
      uint64_t wait = expiry - now;
      if (!l->closing)
        uv_timer_start(&l->timer, on_timer,
                       wait < l->opts.retry_ms ? wait : l->opts.retry_ms, 0);
      return;
    }
    CARP_LOG_INFO("leader", "lease expired, taking over",
                  CARP_F_STR("previous", holder));
    send_write(l, "PUT", rv, NULL, transitions + 1);
    return;
  }
  if (holder && !strcmp(holder, l->identity))
    send_write(l, "PUT", rv, acquire, transitions); /* renew */
  else
    send_write(l, "PUT", rv, NULL, transitions + 1); /* released: take it */
}

static void tick(struct carp_leader *l)
{
  struct carp_kube_ref ref = {.group = "coordination.k8s.io",
                              .version = "v1",
                              .resource = "leases",
                              .namespace = l->namespace,
                              .name = l->name};
  struct carp_buf path;
  struct carp_kube_request r;
  int rc;
  if (l->closing || l->busy)
    return;
  /* Without a renewal for the renew deadline we are no longer leader,
   * even if no request has failed yet. */
  if (l->leading &&
      uv_now(l->loop) - l->last_renew_ms >= l->opts.renew_deadline_ms)
    lose(l, "renew deadline passed");
  carp_buf_init(&path, 4096);
  carp_kube_path(&path, &ref);
  memset(&r, 0, sizeof(r));
  r.method = "GET";
  r.path = carp_buf_cstr(&path);
  r.timeout_ms = l->opts.retry_ms > 1000 ? l->opts.retry_ms : 1000;
  l->busy = 1;
  rc = carp_kube_call(l->kube, &r, on_read, l, NULL);
  carp_buf_free(&path);
  if (rc) {
    l->busy = 0;
    arm(l);
  }
}

static void on_timer(uv_timer_t *t)
{
  tick(carp_container_of(t, struct carp_leader, timer));
}

int carp_leader_new(uv_loop_t *loop, struct carp_kube *kube,
                    const struct carp_leader_options *o,
                    struct carp_leader **out)
{
  struct carp_leader *l;
  char host[256], id[320];
  if (!loop || !kube || !o || !o->namespace || !*o->namespace || !out)
    return CARP_EINVAL;
  l = CARP_NEW(struct carp_leader);
  l->loop = loop;
  l->kube = kube;
  l->opts = *o;
  l->namespace = carp_strdup(o->namespace);
  l->name = carp_strdup(o->name ? o->name : "carpenter-leader-election");
  if (o->identity) {
    l->identity = carp_strdup(o->identity);
  } else {
    if (gethostname(host, sizeof(host)) != 0)
      snprintf(host, sizeof(host), "carpenter");
    host[sizeof(host) - 1] = '\0';
    snprintf(id, sizeof(id), "%s_%08llx", host,
             (unsigned long long)(carp_rand_u64(carp_rand_global()) &
                                  0xffffffffull));
    l->identity = carp_strdup(id);
  }
  if (!l->opts.lease_ms)
    l->opts.lease_ms = 15000;
  if (!l->opts.renew_deadline_ms)
    l->opts.renew_deadline_ms = 10000;
  if (!l->opts.retry_ms)
    l->opts.retry_ms = 2000;
  l->opts.namespace = l->namespace;
  l->opts.name = l->name;
  l->opts.identity = l->identity;
  if (o->metrics)
    l->m_status = carp_metrics_gauge(
        o->metrics, "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, "
        "0 indicates backup, 1 indicates master. 'name' is the string used "
        "to identify the lease.",
        CARP_LABELS("name"));
  set_metric(l, 0);
  uv_timer_init(loop, &l->timer);
  carp_kube_set_write_gate(kube, gate, l);
  *out = l;
  return 0;
}

int carp_leader_start(struct carp_leader *l)
{
  CARP_LOG_INFO("leader", "campaigning for leadership",
                CARP_F_STR("lease", l->name),
                CARP_F_STR("namespace", l->namespace),
                CARP_F_STR("identity", l->identity));
  uv_timer_start(&l->timer, on_timer, 0, 0);
  return 0;
}

static void on_closed(uv_handle_t *h)
{
  struct carp_leader *l =
      carp_container_of((uv_timer_t *)h, struct carp_leader, timer);
  void (*cb)(void *) = l->close_cb;
  void *arg = l->close_arg;
  carp_free(l->namespace);
  carp_free(l->name);
  carp_free(l->identity);
  carp_free(l->observed_holder);
  carp_free(l->observed_renew);
  carp_free(l);
  if (cb)
    cb(arg);
}

static void on_released(const struct carp_kube_result *res, void *arg)
{
  struct carp_leader *l = arg;
  l->busy = 0;
  if (res->err)
    CARP_LOG_WARN("leader", "could not release the lease",
                  CARP_F_ERR(res->err));
  else
    CARP_LOG_INFO("leader", "released the lease", CARP_F_STR("lease", l->name));
  l->released = 1;
  carp_leader_close(l, l->close_cb, l->close_arg);
}

static void on_read_for_release(const struct carp_kube_result *res, void *arg)
{
  struct carp_leader *l = arg;
  const char *holder = carp_json_str(res->body, "spec", "holderIdentity", NULL);
  const char *rv =
      carp_json_str(res->body, "metadata", "resourceVersion", NULL);
  struct carp_buf path, body;
  struct carp_kube_request r;
  char renew[40];
  int64_t transitions = 0;
  l->busy = 0;
  if (res->err || !holder || strcmp(holder, l->identity) || !rv) {
    l->released = 1;
    carp_leader_close(l, l->close_cb, l->close_arg);
    return;
  }
  carp_json_int(res->body, &transitions, "spec", "leaseTransitions", NULL);
  now_micro(renew);
  carp_buf_init(&path, 4096);
  carp_buf_init(&body, 8192);
  carp_buf_printf(&path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
                  l->namespace, l->name);
  /* client-go's release: an empty holder and a one-second lease. */
  write_lease(&body, l, rv, "", 1, renew, renew, transitions);
  memset(&r, 0, sizeof(r));
  r.method = "PUT";
  r.path = carp_buf_cstr(&path);
  r.content_type = "application/json";
  r.body = body.ptr;
  r.body_len = body.len;
  r.ungated = 1;
  r.timeout_ms = 2000;
  l->busy = 1;
  if (carp_kube_call(l->kube, &r, on_released, l, NULL)) {
    l->busy = 0;
    l->released = 1;
  }
  carp_buf_free(&path);
  carp_buf_free(&body);
  if (l->released)
    carp_leader_close(l, l->close_cb, l->close_arg);
}

void carp_leader_close(struct carp_leader *l, void (*close_cb)(void *arg),
                       void *arg)
{
  if (!l)
    return;
  if (!l->closing) {
    l->closing = 1;
    l->close_cb = close_cb;
    l->close_arg = arg;
    uv_timer_stop(&l->timer);
    carp_kube_set_write_gate(l->kube, NULL, NULL);
  }
  if (l->busy)
    return; /* the callback in flight calls back here */
  if (l->leading && !l->released) {
    struct carp_kube_ref ref = {.group = "coordination.k8s.io",
                                .version = "v1",
                                .resource = "leases",
                                .namespace = l->namespace,
                                .name = l->name};
    l->leading = 0;
    set_metric(l, 0);
    l->busy = 1;
    if (carp_kube_get(l->kube, &ref, on_read_for_release, l) == 0)
      return;
    l->busy = 0;
  }
  if (uv_is_closing((uv_handle_t *)&l->timer))
    return;
  uv_close((uv_handle_t *)&l->timer, on_closed);
}
