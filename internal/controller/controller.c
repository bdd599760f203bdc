/* controller.c: the controller skeleton (see include/carpenter/
 * controller.h): the queue and its reconcile wrapper, informer routing,
 * leadership, holding, timers, events, metrics and the close sequence.
 *
 * Close runs in three steps, each waiting for the one before: the queue
 * (reconciles in flight end first), the holds (writes and other callbacks
 * that use the controller), the timers. Only then is the caller told. */
#include "carpenter/controller.h"

#include <stdarg.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"

#define NOT_SYNCED_RETRY_MS 500

static const char *const *name_label(const struct carp_controller *c)
{
  static const char *v[2];
  v[0] = c->def->name;
  v[1] = NULL;
  return v;
}

/* ---- reconcile ---- */

static void reconcile(struct carp_workqueue *q, const char *key, void *arg)
{
  struct carp_controller *c = arg;
  (void)q;
  if (!carp_controller_acting(c)) {
    carp_workqueue_done(c->queue, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  /* A decision on a cache that has not listed yet would take a NodeClaim
   * seen before its Node for one whose Node is gone. */
  if (!c->def->before_sync && !carp_cluster_synced(c->env.cluster)) {
    carp_workqueue_done(c->queue, key, CARP_RECONCILE_REQUEUE_AFTER,
                        NOT_SYNCED_RETRY_MS);
    return;
  }
  carp_metric_set(c->m_active, name_label(c),
                  (double)carp_workqueue_in_flight(c->queue));
  c->def->reconcile(c, key);
}

void carp_controller_done(struct carp_controller *c, const char *key,
                          enum carp_reconcile_result result, uint64_t after_ms)
{
  static const char *const results[] = {"success", "requeue", "requeue_after",
                                        "error"};
  uint64_t started = carp_workqueue_started(c->queue, key);
  if (c->m_total) {
    carp_metric_add(c->m_total, CARP_VALUES(c->def->name, results[result]), 1);
    if (result == CARP_RECONCILE_ERROR)
      carp_metric_add(c->m_errors, name_label(c), 1);
    if (started)
      carp_metric_observe(c->m_time, name_label(c),
                          (double)(carp_clock_mono_ms(c->env.clock) - started) /
                              1000.0);
  }
  carp_workqueue_done(c->queue, key, result, after_ms);
  carp_metric_set(c->m_active, name_label(c),
                  c->queue ? (double)carp_workqueue_in_flight(c->queue) : 0);
}

/* ---- events from informers ---- */

static void on_add(struct carp_objmeta *obj, void *arg)
{
  struct carp_controller_watch *w = arg;
  if (carp_controller_acting(w->c))
    w->map(w->c, NULL, obj, 0);
}

static void on_update(struct carp_objmeta *old, struct carp_objmeta *obj,
                      void *arg)
{
  struct carp_controller_watch *w = arg;
  if (carp_controller_acting(w->c))
    w->map(w->c, old, obj, 0);
}

static void on_delete(struct carp_objmeta *obj, void *arg)
{
  struct carp_controller_watch *w = arg;
  if (carp_controller_acting(w->c))
    w->map(w->c, NULL, obj, 1);
}

void carp_controller_watch(struct carp_controller *c, struct carp_informer *inf,
                           carp_event_map_fn map)
{
  struct carp_informer_handlers h = {
      .on_add = on_add, .on_update = on_update, .on_delete = on_delete};
  struct carp_controller_watch *w;
  if (c->nwatches == CARP_CONTROLLER_MAX_WATCHES) {
    CARP_LOG_ERROR("controller", "too many watches",
                   CARP_F_STR("controller", c->def->name));
    return;
  }
  w = &c->watches[c->nwatches++];
  w->c = c;
  w->map = map;
  h.arg = w;
  carp_informer_add_handlers(inf, &h);
}

void carp_controller_map_name(struct carp_controller *c,
                              const struct carp_objmeta *old,
                              const struct carp_objmeta *obj, int deleted)
{
  (void)old;
  (void)deleted;
  carp_controller_enqueue(c, obj->name);
}

/* ---- queue ---- */

int carp_controller_acting(const struct carp_controller *c)
{
  return c->active && !c->closing;
}

void carp_controller_enqueue(struct carp_controller *c, const char *key)
{
  if (carp_controller_acting(c))
    carp_workqueue_add(c->queue, key);
}

void carp_controller_enqueue_after(struct carp_controller *c, const char *key,
                                   uint64_t delay_ms)
{
  if (carp_controller_acting(c))
    carp_workqueue_add_after(c->queue, key, delay_ms);
}

void carp_controller_enqueue_all(struct carp_controller *c,
                                 struct carp_informer *inf)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(inf), &it)))
    carp_controller_enqueue(c, m->name);
}

void carp_controller_set_active(struct carp_controller *c, int active)
{
  if (c->closing || !active == !c->active)
    return;
  c->active = active;
  if (active && c->def->activated)
    c->def->activated(c);
  else if (!active && c->def->deactivated)
    c->def->deactivated(c);
}

/* ---- time ---- */

int64_t carp_controller_now(const struct carp_controller *c)
{
  return carp_clock_wall_ms(c->env.clock);
}

uint64_t carp_controller_mono(const struct carp_controller *c)
{
  return carp_clock_mono_ms(c->env.clock);
}

void carp_controller_timer(struct carp_controller *c, struct carp_timer *t)
{
  carp_timer_init(c->env.clock, t);
  if (c->ntimers == CARP_CONTROLLER_MAX_TIMERS) {
    CARP_LOG_ERROR("controller", "too many timers",
                   CARP_F_STR("controller", c->def->name));
    return;
  }
  c->timers[c->ntimers++] = t;
}

static void on_resync(struct carp_timer *t)
{
  struct carp_controller *c =
      carp_container_of(t, struct carp_controller, resync);
  if (carp_controller_acting(c) && c->def->activated)
    c->def->activated(c);
}

void carp_controller_resync(struct carp_controller *c, uint64_t period_ms)
{
  carp_controller_timer(c, &c->resync);
  carp_timer_start(&c->resync, on_resync, period_ms, period_ms);
}

/* ---- events ---- */

struct carp_event_target carp_event_target_of(const struct carp_objmeta *m,
                                              const char *api_version)
{
  struct carp_event_target t;
  t.api_version = api_version;
  t.kind = m->kind ? m->kind->name : "";
  t.namespace = m->namespace;
  t.name = m->name;
  t.uid = m->uid;
  return t;
}

void carp_controller_event(struct carp_controller *c,
                           const struct carp_objmeta *m,
                           const char *api_version, enum carp_event_type type,
                           const char *reason, const char *fmt, ...)
{
  struct carp_event_target t;
  struct carp_buf msg;
  va_list ap;
  if (!c->env.recorder || !m)
    return;
  carp_buf_init(&msg, CARP_BUF_UNLIMITED); /* the recorder cuts it */
  va_start(ap, fmt);
  carp_buf_vprintf(&msg, fmt, ap);
  va_end(ap);
  t = carp_event_target_of(m, api_version);
  carp_recorder_event(c->env.recorder, &t, type, reason, "%s",
                      carp_buf_cstr(&msg));
  carp_buf_free(&msg);
}

/* ---- close ---- */

static void on_timer_closed(struct carp_timer *t);

/* Moves the close along: timers once the queue and the holds are done,
 * the caller's callback once the timers are closed. */
static void close_step(struct carp_controller *c)
{
  size_t i;
  void (*cb)(void *);
  if (!c->closing || c->closed || c->queue || c->held)
    return;
  if (!c->timers_closing) {
    c->timers_closing = 1;
    c->timers_open = (int)c->ntimers;
    for (i = 0; i < c->ntimers; i++) {
      /* The timer's data is the controller's until it has closed. */
      c->timers[i]->data = c;
      carp_timer_close(c->timers[i], on_timer_closed);
    }
  }
  if (c->timers_open > 0)
    return;
  c->closed = 1;
  cb = c->close_cb;
  c->close_cb = NULL;
  if (cb)
    cb(c->close_arg);
}

static void on_timer_closed(struct carp_timer *t)
{
  struct carp_controller *c = t->data;
  c->timers_open--;
  close_step(c);
}

void carp_controller_hold(struct carp_controller *c)
{
  c->held++;
}

void carp_controller_release(struct carp_controller *c)
{
  c->held--;
  close_step(c);
}

static void on_queue_closed(void *arg)
{
  struct carp_controller *c = arg;
  c->queue = NULL;
  close_step(c);
}

void carp_controller_close(struct carp_controller *c, void (*cb)(void *arg),
                           void *arg)
{
  size_t i;
  if (c->closing)
    return;
  c->closing = 1;
  c->close_cb = cb;
  c->close_arg = arg;
  for (i = 0; i < c->ntimers; i++)
    carp_timer_stop(c->timers[i]);
  if (c->def->cancel)
    c->def->cancel(c);
  carp_workqueue_close(c->queue, on_queue_closed, c);
}

void carp_controller_free(struct carp_controller *c)
{
  if (c)
    c->def->free(c);
}

/* ---- setup ---- */

int carp_controller_init(struct carp_controller *c,
                         const struct carp_controller_env *env,
                         const struct carp_controller_def *def)
{
  struct carp_workqueue_options qo;
  int rc;
  if (!c || !env || !def || !def->name || !def->reconcile || !def->free ||
      !env->loop || !env->clock || !env->cluster)
    return CARP_EINVAL;
  c->def = def;
  c->env = *env;
  memset(&qo, 0, sizeof(qo));
  qo.name = def->name;
  qo.concurrency = def->concurrency ? def->concurrency : 1;
  qo.max_delay_ms = def->max_backoff_ms;
  qo.metrics = env->metrics;
  qo.clock = env->clock;
  qo.reconcile = reconcile;
  qo.arg = c;
  rc = carp_workqueue_new(env->loop, &qo, &c->queue);
  if (rc)
    return rc;
  if (env->metrics) {
    c->m_total =
        carp_metrics_counter(env->metrics, "controller_runtime_reconcile_total",
                             "Total number of reconciliations per controller",
                             CARP_LABELS("controller", "result"));
    c->m_errors = carp_metrics_counter(
        env->metrics, "controller_runtime_reconcile_errors_total",
        "Total number of reconciliation errors per controller",
        CARP_LABELS("controller"));
    c->m_time = carp_metrics_histogram(
        env->metrics, "controller_runtime_reconcile_time_seconds",
        "Length of time per reconciliation per controller",
        CARP_LABELS("controller"), carp_metrics_duration_buckets,
        carp_metrics_duration_buckets_len);
    c->m_active =
        carp_metrics_gauge(env->metrics, "controller_runtime_active_workers",
                           "Number of currently used workers per controller",
                           CARP_LABELS("controller"));
    c->m_max = carp_metrics_gauge(
        env->metrics, "controller_runtime_max_concurrent_reconciles",
        "Maximum number of concurrent reconciles per controller",
        CARP_LABELS("controller"));
    carp_metric_set(c->m_max, name_label(c), (double)qo.concurrency);
    carp_metric_set(c->m_active, name_label(c), 0);
    /* Every result series exists from the start, as controller-runtime
     * initialises them, so rate() has a baseline. */
    carp_metric_add(c->m_total, CARP_VALUES(def->name, "success"), 0);
    carp_metric_add(c->m_total, CARP_VALUES(def->name, "error"), 0);
    carp_metric_add(c->m_total, CARP_VALUES(def->name, "requeue"), 0);
    carp_metric_add(c->m_total, CARP_VALUES(def->name, "requeue_after"), 0);
    carp_metric_add(c->m_errors, name_label(c), 0);
  }
  return 0;
}
