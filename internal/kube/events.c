/* events.c: the event recorder (see include/carpenter/events.h).
 *
 * A small cache keyed by object UID + type + reason + message remembers
 * the event created for it; a repeat within the fold window becomes a
 * merge patch of count and lastTimestamp. Per-object token buckets live in
 * the same map; stale entries are swept once a minute so the cache stays
 * bounded by what happened in the last ten minutes. */
#include "carpenter/events.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/clock.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/logfold.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"
#include "carpenter/timeutil.h"

#define FOLD_WINDOW_MS (10 * 60 * 1000)
#define SWEEP_MS       (60 * 1000)
#define MAX_ENTRIES    4096
#define MAX_MESSAGE    1024 /* events.k8s.io's limit on a note */

struct fold {
  char *key;
  char *event_name;
  char *namespace;
  char *first_ts;
  int64_t count;
  uint64_t last_ms;
  int pending; /* a create or patch is in flight */
};

struct bucket {
  char *key; /* object uid or ns/name */
  double tokens;
  uint64_t at;
};

/* A reason's own bucket (carp_recorder_limit_reason), across objects. */
struct reason_limit {
  char *reason;
  double qps, burst, tokens;
  uint64_t at;
};

struct carp_recorder {
  uv_loop_t *loop;
  struct carp_kube *kube;
  struct carp_recorder_options o;
  char *component;
  char *instance;
  struct carp_map folds;
  struct carp_map buckets;
  double tokens;
  uint64_t tokens_at;
  struct reason_limit *limits;
  size_t nlimits;
  uv_timer_t sweep;
  int inflight;
  int closing;
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_recorder_stats stats;
  struct carp_metric *m_events;
  struct carp_logfold fold; /* drops and failures, once per interval */
};

struct call_ctx {
  struct carp_recorder *r;
  char *fold_key;
};

static void fold_free(struct fold *f)
{
  carp_free(f->key);
  carp_free(f->event_name);
  carp_free(f->namespace);
  carp_free(f->first_ts);
  carp_free(f);
}

static void maybe_closed(struct carp_recorder *r);

static void on_call_done(const struct carp_kube_result *res, void *arg)
{
  struct call_ctx *c = arg;
  struct carp_recorder *r = c->r;
  struct fold *f = carp_map_gets(&r->folds, c->fold_key);
  r->inflight--;
  if (f)
    f->pending = 0;
  if (res->err) {
    r->stats.failed++;
    /* A failed create leaves nothing to fold into; a failed patch (event
     * expired server-side) too. */
    if (f) {
      carp_map_dels(&r->folds, f->key);
      fold_free(f);
    }
    if (res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED)
      CARP_LOG_DEBUG("events", "event not recorded", CARP_F_ERR(res->err),
                     CARP_F_STR("message", res->message));
  }
  carp_free(c->fold_key);
  carp_free(c);
  maybe_closed(r);
}

/* The options' clock when given (a test's fake one), else libuv's. */
static uint64_t now_ms(const struct carp_recorder *r)
{
  return r->o.clock ? carp_clock_mono_ms(r->o.clock) : uv_now(r->loop);
}

static int take_token(double *tokens, uint64_t *at, uint64_t now,
                      double rate_per_ms, double burst)
{
  *tokens += (double)(now - *at) * rate_per_ms;
  if (*tokens > burst)
    *tokens = burst;
  *at = now;
  if (*tokens < 1.0)
    return 0;
  *tokens -= 1.0;
  return 1;
}

static int reason_allowed(struct carp_recorder *r, const char *reason,
                          uint64_t now)
{
  size_t i;
  for (i = 0; i < r->nlimits; i++) {
    struct reason_limit *l = &r->limits[i];
    if (!strcmp(l->reason, reason))
      return take_token(&l->tokens, &l->at, now, l->qps / 1000.0, l->burst);
  }
  return 1;
}

static int allowed(struct carp_recorder *r, const char *obj_key,
                   const char *reason)
{
  uint64_t now = now_ms(r);
  struct bucket *b;
  if (!reason_allowed(r, reason, now))
    return 0;
  b = carp_map_gets(&r->buckets, obj_key);
  if (!b) {
    if (r->buckets.len >= MAX_ENTRIES)
      return 0;
    b = CARP_NEW(struct bucket);
    b->key = carp_strdup(obj_key);
    b->tokens = r->o.per_object_burst;
    b->at = now;
    carp_map_puts(&r->buckets, b->key, b);
  }
  if (!take_token(&b->tokens, &b->at, now,
                  1.0 / (double)r->o.per_object_refill_ms,
                  r->o.per_object_burst))
    return 0;
  return take_token(&r->tokens, &r->tokens_at, now, r->o.qps / 1000.0,
                    r->o.burst);
}

static void put_target(struct carp_jw *w, const struct carp_event_target *t)
{
  carp_jw_key(w, "involvedObject");
  carp_jw_obj(w);
  carp_jw_kstr(w, "apiVersion", t->api_version ? t->api_version : "v1");
  carp_jw_kstr(w, "kind", t->kind);
  if (t->namespace)
    carp_jw_kstr(w, "namespace", t->namespace);
  carp_jw_kstr(w, "name", t->name);
  if (t->uid && *t->uid)
    carp_jw_kstr(w, "uid", t->uid);
  carp_jw_obj_end(w);
}

static void call(struct carp_recorder *r, const char *method, const char *path,
                 const char *ctype, struct carp_buf *body, const char *fold_key)
{
  struct carp_kube_request req;
  struct call_ctx *c = CARP_NEW(struct call_ctx);
  c->r = r;
  c->fold_key = carp_strdup(fold_key);
  memset(&req, 0, sizeof(req));
  req.method = method;
  req.path = path;
  req.content_type = ctype;
  req.body = body->ptr;
  req.body_len = body->len;
  req.idempotent = 0;
  /* Only the outcome matters: the created or patched Event is not read,
   * so its body is not parsed (one tree per event otherwise). */
  req.raw_body = 1;
  r->inflight++;
  if (carp_kube_call(r->kube, &req, on_call_done, c, NULL)) {
    r->inflight--;
    r->stats.failed++;
    carp_free(c->fold_key);
    carp_free(c);
  }
}

void carp_recorder_event(struct carp_recorder *r,
                         const struct carp_event_target *t,
                         enum carp_event_type type, const char *reason,
                         const char *fmt, ...)
{
  struct carp_buf msg, key, body, path;
  struct carp_jw w;
  struct fold *f;
  char ts[CARP_RFC3339_LEN];
  const char *ns;
  const char *type_name = type == CARP_EVENT_WARNING ? "Warning" : "Normal";
  uint64_t now;
  va_list ap;

  if (!r || r->closing || !t || !t->kind || !t->name || !reason)
    return;
  now = now_ms(r);
  ns = t->namespace && *t->namespace ? t->namespace : "default";
  carp_buf_init(&msg, CARP_BUF_UNLIMITED);
  va_start(ap, fmt);
  carp_buf_vprintf(&msg, fmt, ap);
  va_end(ap);
  if (msg.len > MAX_MESSAGE) {
    /* Cut on a UTF-8 boundary, and say it was cut. */
    size_t n = MAX_MESSAGE - 3;
    while (n > 0 && ((unsigned char)msg.ptr[n] & 0xC0) == 0x80)
      n--;
    msg.len = n;
    carp_buf_puts(&msg, "...");
  }
  carp_metric_add(r->m_events, CARP_VALUES(type_name, reason), 1);
  CARP_LOG_DEBUG("events", carp_buf_cstr(&msg), CARP_F_STR("kind", t->kind),
                 CARP_F_STR("name", t->name), CARP_F_STR("reason", reason),
                 CARP_F_STR("type", type_name));

  carp_buf_init(&key, 4096);
  carp_buf_printf(&key, "%s/%s/%s\x1f%s\x1f%s\x1f%s", ns, t->kind, t->name,
                  type_name, reason, carp_buf_cstr(&msg));
  carp_buf_init(&body, 16 * 1024);
  carp_buf_init(&path, 1024);
  carp_time_format_rfc3339(carp_time_wall_ms(), 0, ts);

  {
    struct carp_buf obj;
    carp_buf_init(&obj, 1024);
    carp_buf_printf(&obj, "%s/%s/%s", ns, t->kind, t->name);
    if (!allowed(r, carp_buf_cstr(&obj), reason)) {
      r->stats.dropped++;
      carp_buf_free(&obj);
      goto out;
    }
    carp_buf_free(&obj);
  }

  f = carp_map_gets(&r->folds, carp_buf_cstr(&key));
  if (f && f->event_name && !f->pending && now - f->last_ms < FOLD_WINDOW_MS) {
    f->count++;
    f->last_ms = now;
    f->pending = 1;
    carp_jw_init(&w, &body);
    carp_jw_obj(&w);
    carp_jw_kint(&w, "count", f->count);
    carp_jw_kstr(&w, "lastTimestamp", ts);
    carp_jw_obj_end(&w);
    carp_jw_finish(&w);
    carp_buf_printf(&path, "/api/v1/namespaces/%s/events/%s", f->namespace,
                    f->event_name);
    r->stats.folded++;
    call(r, "PATCH", carp_buf_cstr(&path), "application/merge-patch+json",
         &body, f->key);
    goto out;
  }
  if (f && f->pending) {
    /* The previous write of this very event is still going: count it
     * there next time rather than creating a twin. */
    f->count++;
    r->stats.folded++;
    goto out;
  }
  if (f) {
    carp_map_dels(&r->folds, f->key);
    fold_free(f);
  }
  if (r->folds.len >= MAX_ENTRIES) {
    r->stats.dropped++;
    CARP_LOG_FOLDED(&r->fold, "full", CARP_LOG_WARN, "events",
                    "too many distinct events in ten minutes, dropping new "
                    "ones",
                    CARP_F_UINT("limit", MAX_ENTRIES),
                    CARP_F_STR("reason", reason));
    goto out;
  }
  f = CARP_NEW(struct fold);
  f->key = carp_buf_steal(&key, NULL);
  f->namespace = carp_strdup(ns);
  {
    char name[512];
    snprintf(name, sizeof(name), "%.200s.%llx", t->name,
             (unsigned long long)carp_time_wall_ms() * 1000000ull +
                 (unsigned long long)(r->stats.created % 1000000));
    f->event_name = carp_strdup(name);
  }
  f->first_ts = carp_strdup(ts);
  f->count = 1;
  f->last_ms = now;
  f->pending = 1;
  carp_map_puts(&r->folds, f->key, f);

  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", "v1");
  carp_jw_kstr(&w, "kind", "Event");
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "name", f->event_name);
  carp_jw_kstr(&w, "namespace", ns);
  carp_jw_obj_end(&w);
  put_target(&w, t);
  carp_jw_kstr(&w, "reason", reason);
  carp_jw_kstr(&w, "message", carp_buf_cstr(&msg));
  carp_jw_kstr(&w, "type", type_name);
  carp_jw_key(&w, "source");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "component", r->component);
  carp_jw_obj_end(&w);
  carp_jw_kstr(&w, "firstTimestamp", ts);
  carp_jw_kstr(&w, "lastTimestamp", ts);
  carp_jw_kint(&w, "count", 1);
  carp_jw_kstr(&w, "reportingComponent", r->component);
  carp_jw_kstr(&w, "reportingInstance", r->instance);
  carp_jw_obj_end(&w);
  if (carp_jw_finish(&w) == 0) {
    carp_buf_printf(&path, "/api/v1/namespaces/%s/events", ns);
    r->stats.created++;
    call(r, "POST", carp_buf_cstr(&path), "application/json", &body, f->key);
  } else {
    /* Never sent: forget it, or its repeats would wait on it forever. */
    r->stats.failed++;
    CARP_LOG_FOLDED(&r->fold, reason, CARP_LOG_ERROR, "events",
                    "cannot build an event", CARP_F_STR("kind", t->kind),
                    CARP_F_STR("name", t->name), CARP_F_STR("reason", reason));
    carp_map_dels(&r->folds, f->key);
    fold_free(f);
  }
out:
  carp_buf_free(&msg);
  carp_buf_free(&key);
  carp_buf_free(&body);
  carp_buf_free(&path);
}

int carp_recorder_body_finish(struct carp_jw *w, struct carp_recorder *r,
                              const struct carp_event_target *t,
                              struct carp_logfold *fold, const char *logger,
                              const char *key, const char *what)
{
  int rc = carp_jw_finish(w);
  if (!rc)
    return 0;
  if (fold)
    CARP_LOG_FOLDED(fold, key, CARP_LOG_ERROR, logger,
                    "cannot build a request body", CARP_F_STR("object", key),
                    CARP_F_STR("write", what), CARP_F_ERR(rc));
  else
    CARP_LOG_ERROR(logger, "cannot build a request body",
                   CARP_F_STR("object", key), CARP_F_STR("write", what),
                   CARP_F_ERR(rc));
  if (r && t)
    carp_recorder_event(r, t, CARP_EVENT_WARNING, "WriteFailed",
                        "Cannot build the %s write: %s", what,
                        carp_strerror(rc));
  return rc;
}

static void on_sweep(uv_timer_t *tm)
{
  struct carp_recorder *r = tm->data;
  struct carp_map_iter it;
  void *v;
  uint64_t now = now_ms(r);
  char **drop = NULL;
  size_t n = 0, cap = 0, i;
  carp_map_iter_init(&it);
  while (carp_map_next(&r->folds, &it, NULL, NULL, &v)) {
    struct fold *f = v;
    if (f->pending || now - f->last_ms < FOLD_WINDOW_MS)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      drop = carp_reallocarray(drop, cap, sizeof(char *));
    }
    drop[n++] = f->key;
  }
  for (i = 0; i < n; i++)
    fold_free(carp_map_dels(&r->folds, drop[i]));
  n = 0;
  carp_map_iter_init(&it);
  while (carp_map_next(&r->buckets, &it, NULL, NULL, &v)) {
    struct bucket *b = v;
    /* A bucket that refilled completely carries no state. */
    if ((double)(now - b->at) / (double)r->o.per_object_refill_ms + b->tokens <
        r->o.per_object_burst)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      drop = carp_reallocarray(drop, cap, sizeof(char *));
    }
    drop[n++] = b->key;
  }
  for (i = 0; i < n; i++) {
    struct bucket *b = carp_map_dels(&r->buckets, drop[i]);
    carp_free(b->key);
    carp_free(b);
  }
  carp_free(drop);
}

int carp_recorder_new(uv_loop_t *loop, struct carp_kube *kube,
                      const struct carp_recorder_options *o,
                      struct carp_recorder **out)
{
  struct carp_recorder *r;
  if (!loop || !kube || !out)
    return CARP_EINVAL;
  r = CARP_NEW(struct carp_recorder);
  r->loop = loop;
  r->kube = kube;
  if (o)
    r->o = *o;
  r->component = carp_strdup(r->o.component ? r->o.component : "karpenter");
  r->instance = carp_strdup(r->o.instance ? r->o.instance : r->component);
  if (!r->o.per_object_burst)
    r->o.per_object_burst = 25;
  if (!r->o.per_object_refill_ms)
    r->o.per_object_refill_ms = 5 * 60 * 1000;
  if (!(r->o.qps > 0))
    r->o.qps = 10;
  if (!r->o.burst)
    r->o.burst = 100;
  r->tokens = r->o.burst;
  r->tokens_at = now_ms(r);
  carp_map_init(&r->folds);
  carp_map_init(&r->buckets);
  carp_logfold_init(&r->fold, 0, 0);
  uv_timer_init(loop, &r->sweep);
  r->sweep.data = r;
  uv_timer_start(&r->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
  uv_unref((uv_handle_t *)&r->sweep);
  if (r->o.metrics)
    r->m_events = carp_metrics_counter(
        r->o.metrics, "carpenter_events_total",
        "Kubernetes events emitted, before folding and rate limiting.",
        CARP_LABELS("type", "reason"));
  *out = r;
  return 0;
}

int carp_recorder_limit_reason(struct carp_recorder *r, const char *reason,
                               double qps, unsigned burst)
{
  struct reason_limit *l;
  size_t i;
  if (!r || !reason || !*reason || !(qps > 0) || !burst)
    return CARP_EINVAL;
  for (i = 0; i < r->nlimits && strcmp(r->limits[i].reason, reason); i++)
    ;
  if (i == r->nlimits) {
    r->limits = carp_reallocarray(r->limits, r->nlimits + 1, sizeof(*l));
    r->limits[r->nlimits++].reason = carp_strdup(reason);
  }
  l = &r->limits[i];
  l->qps = qps;
  l->burst = burst;
  l->tokens = burst;
  l->at = now_ms(r);
  return 0;
}

void carp_recorder_stats(const struct carp_recorder *r,
                         struct carp_recorder_stats *out)
{
  *out = r->stats;
}

static void on_sweep_closed(uv_handle_t *h)
{
  struct carp_recorder *r = h->data;
  struct carp_map_iter it;
  void *v;
  void (*cb)(void *) = r->close_cb;
  void *arg = r->close_arg;
  carp_map_iter_init(&it);
  while (carp_map_next(&r->folds, &it, NULL, NULL, &v))
    fold_free(v);
  carp_map_free(&r->folds);
  carp_map_iter_init(&it);
  while (carp_map_next(&r->buckets, &it, NULL, NULL, &v)) {
    struct bucket *b = v;
    carp_free(b->key);
    carp_free(b);
  }
  carp_map_free(&r->buckets);
  for (size_t i = 0; i < r->nlimits; i++)
    carp_free(r->limits[i].reason);
  carp_free(r->limits);
  carp_logfold_free(&r->fold);
  carp_free(r->component);
  carp_free(r->instance);
  carp_free(r);
  if (cb)
    cb(arg);
}

static void maybe_closed(struct carp_recorder *r)
{
  if (!r->closing || r->inflight || uv_is_closing((uv_handle_t *)&r->sweep))
    return;
  uv_close((uv_handle_t *)&r->sweep, on_sweep_closed);
}

void carp_recorder_close(struct carp_recorder *r, void (*cb)(void *arg),
                         void *arg)
{
  if (!r || r->closing)
    return;
  r->closing = 1;
  r->close_cb = cb;
  r->close_arg = arg;
  uv_timer_stop(&r->sweep);
  /* Writes in flight finish (or are cancelled with the kube client). */
  maybe_closed(r);
}
