/* workqueue.c: the work queue (see include/carpenter/workqueue.h).
 *
 * Each known key has one entry holding its state bits, failure count and
 * delay. Ready keys form a FIFO (an intrusive singly linked list); delayed
 * keys sit in a binary min-heap on their ready time, drained by one timer.
 * Reconciles are started from a zero-delay "kick" timer rather than from
 * add() or done(), so a callback never runs inside another one. An entry
 * is freed as soon as nothing refers to it: not queued, not in flight, not
 * delayed, no failures remembered. */
#include "carpenter/workqueue.h"

#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/clock.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"
#include "carpenter/rand.h"

struct wq_entry {
  char *key;
  size_t klen;
  int dirty;      /* should run (again) */
  int queued;     /* in the ready FIFO */
  int processing; /* reconcile in flight */
  unsigned failures;
  size_t heap_idx; /* SIZE_MAX when not delayed */
  uint64_t ready_at;
  uint64_t queued_at;
  uint64_t started_at;
  struct wq_entry *next;
};

struct carp_workqueue {
  uv_loop_t *loop;
  struct carp_clock *clock;
  struct carp_clock *own_clock; /* made here when the options gave none */
  struct carp_timer kick;
  struct carp_timer delay;
  char *name;
  struct carp_workqueue_options opts;
  struct carp_map entries;
  struct wq_entry *head, *tail;
  size_t nqueued;
  size_t nprocessing;
  struct wq_entry **heap;
  size_t nheap, capheap;
  double tokens;
  uint64_t tokens_at;
  int closing;
  int handles_open;
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_metric *m_depth, *m_adds, *m_queue_dur, *m_work_dur, *m_retries;
};

#define NOT_IN_HEAP ((size_t)-1)

static const char *const *labels(struct carp_workqueue *q)
{
  static const char *v[2];
  v[0] = q->name;
  v[1] = NULL;
  return v;
}

static void update_depth(struct carp_workqueue *q)
{
  carp_metric_set(q->m_depth, labels(q), (double)q->nqueued);
}

static void maybe_free(struct carp_workqueue *q, struct wq_entry *e)
{
  if (e->dirty || e->queued || e->processing || e->failures ||
      e->heap_idx != NOT_IN_HEAP)
    return;
  carp_map_del(&q->entries, e->key, e->klen);
  carp_free(e->key);
  carp_free(e);
}

static struct wq_entry *entry_get(struct carp_workqueue *q, const char *key,
                                  int create)
{
  size_t len = strlen(key);
  struct wq_entry *e = carp_map_get(&q->entries, key, len);
  if (e || !create)
    return e;
  e = CARP_NEW(struct wq_entry);
  e->key = carp_strndup(key, len);
  e->klen = len;
  e->heap_idx = NOT_IN_HEAP;
  carp_map_put(&q->entries, e->key, e->klen, e);
  return e;
}

static void on_kick(struct carp_timer *t);

static uint64_t now_ms(const struct carp_workqueue *q)
{
  return carp_clock_mono_ms(q->clock);
}

static void kick(struct carp_workqueue *q)
{
  if (q->closing || !q->head || q->nprocessing >= q->opts.concurrency)
    return;
  if (!carp_timer_is_active(&q->kick))
    carp_timer_start(&q->kick, on_kick, 0, 0);
}

static void enqueue(struct carp_workqueue *q, struct wq_entry *e)
{
  e->queued = 1;
  e->queued_at = now_ms(q);
  e->next = NULL;
  if (q->tail)
    q->tail->next = e;
  else
    q->head = e;
  q->tail = e;
  q->nqueued++;
  update_depth(q);
  kick(q);
}

void carp_workqueue_add(struct carp_workqueue *q, const char *key)
{
  struct wq_entry *e;
  if (q->closing)
    return;
  e = entry_get(q, key, 1);
  carp_metric_add(q->m_adds, labels(q), 1);
  if (e->dirty)
    return; /* already waiting to run */
  e->dirty = 1;
  if (!e->processing)
    enqueue(q, e); /* otherwise done() requeues it */
}

/* Min-heap on ready_at. */
static void heap_swap(struct carp_workqueue *q, size_t a, size_t b)
{
  struct wq_entry *t = q->heap[a];
  q->heap[a] = q->heap[b];
  q->heap[b] = t;
  q->heap[a]->heap_idx = a;
  q->heap[b]->heap_idx = b;
}

static void heap_up(struct carp_workqueue *q, size_t i)
{
  while (i > 0 && q->heap[(i - 1) / 2]->ready_at > q->heap[i]->ready_at) {
    heap_swap(q, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static void heap_down(struct carp_workqueue *q, size_t i)
{
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < q->nheap && q->heap[l]->ready_at < q->heap[m]->ready_at)
      m = l;
    if (r < q->nheap && q->heap[r]->ready_at < q->heap[m]->ready_at)
      m = r;
    if (m == i)
      return;
    heap_swap(q, i, m);
    i = m;
  }
}

static void heap_remove(struct carp_workqueue *q, struct wq_entry *e)
{
  size_t i = e->heap_idx;
  q->nheap--;
  if (i != q->nheap) {
    q->heap[i] = q->heap[q->nheap];
    q->heap[i]->heap_idx = i;
    heap_down(q, i);
    heap_up(q, i);
  }
  e->heap_idx = NOT_IN_HEAP;
}

static void on_delay(struct carp_timer *t);

static void arm_delay(struct carp_workqueue *q)
{
  uint64_t now = now_ms(q);
  if (q->closing || q->nheap == 0) {
    carp_timer_stop(&q->delay);
    return;
  }
  carp_timer_start(&q->delay, on_delay,
                   q->heap[0]->ready_at > now ? q->heap[0]->ready_at - now : 0,
                   0);
}

static void on_delay(struct carp_timer *t)
{
  struct carp_workqueue *q = carp_container_of(t, struct carp_workqueue, delay);
  uint64_t now = now_ms(q);
  while (q->nheap && q->heap[0]->ready_at <= now) {
    struct wq_entry *e = q->heap[0];
    heap_remove(q, e);
    /* add() may not create a new entry here: e is still referenced. */
    carp_workqueue_add(q, e->key);
    maybe_free(q, e);
  }
  arm_delay(q);
}

void carp_workqueue_add_after(struct carp_workqueue *q, const char *key,
                              uint64_t delay_ms)
{
  struct wq_entry *e;
  uint64_t at;
  if (q->closing)
    return;
  if (delay_ms == 0) {
    carp_workqueue_add(q, key);
    return;
  }
  e = entry_get(q, key, 1);
  at = now_ms(q) + delay_ms;
  if (e->heap_idx != NOT_IN_HEAP) {
    if (at < e->ready_at) {
      e->ready_at = at; /* keep the earliest */
      heap_up(q, e->heap_idx);
    }
  } else {
    if (q->nheap == q->capheap) {
      q->capheap = q->capheap ? q->capheap * 2 : 16;
      q->heap = carp_reallocarray(q->heap, q->capheap, sizeof(*q->heap));
    }
    e->ready_at = at;
    e->heap_idx = q->nheap;
    q->heap[q->nheap++] = e;
    heap_up(q, e->heap_idx);
  }
  arm_delay(q);
}

/* Token bucket reservation, as golang.org/x/time/rate does it: a token is
 * taken even when none is left, and the caller waits until it exists. */
static uint64_t bucket_delay(struct carp_workqueue *q)
{
  uint64_t now = now_ms(q);
  double qps = q->opts.qps;
  q->tokens += (double)(now - q->tokens_at) * qps / 1000.0;
  if (q->tokens > q->opts.burst)
    q->tokens = q->opts.burst;
  q->tokens_at = now;
  q->tokens -= 1;
  if (q->tokens >= 0)
    return 0;
  return (uint64_t)(-q->tokens * 1000.0 / qps + 0.5);
}

void carp_workqueue_add_rate_limited(struct carp_workqueue *q, const char *key)
{
  struct wq_entry *e;
  uint64_t item = q->opts.base_delay_ms, global;
  unsigned i;
  if (q->closing)
    return;
  e = entry_get(q, key, 1);
  for (i = 0; i < e->failures && item < q->opts.max_delay_ms; i++)
    item *= 2;
  if (item > q->opts.max_delay_ms)
    item = q->opts.max_delay_ms;
  /* Jitter (down to half): keys that failed together retry apart. */
  item -= (uint64_t)((double)item * 0.5 * carp_rand_double(carp_rand_global()));
  e->failures++;
  global = bucket_delay(q);
  carp_metric_add(q->m_retries, labels(q), 1);
  carp_workqueue_add_after(q, key, item > global ? item : global);
}

void carp_workqueue_forget(struct carp_workqueue *q, const char *key)
{
  struct wq_entry *e = entry_get(q, key, 0);
  if (!e)
    return;
  e->failures = 0;
  maybe_free(q, e);
}

unsigned carp_workqueue_failures(struct carp_workqueue *q, const char *key)
{
  struct wq_entry *e = entry_get(q, key, 0);
  return e ? e->failures : 0;
}

static void on_kick(struct carp_timer *t)
{
  struct carp_workqueue *q = carp_container_of(t, struct carp_workqueue, kick);
  uint64_t now = now_ms(q);
  while (!q->closing && q->head && q->nprocessing < q->opts.concurrency) {
    struct wq_entry *e = q->head;
    q->head = e->next;
    if (!q->head)
      q->tail = NULL;
    e->next = NULL;
    e->queued = 0;
    e->dirty = 0;
    e->processing = 1;
    e->started_at = now;
    q->nqueued--;
    q->nprocessing++;
    update_depth(q);
    carp_metric_observe(q->m_queue_dur, labels(q),
                        (double)(now - e->queued_at) / 1000.0);
    q->opts.reconcile(q, e->key, q->opts.arg);
  }
}

static void on_handle_closed(struct carp_timer *t)
{
  struct carp_workqueue *q = t->data;
  if (--q->handles_open > 0)
    return;
  if (q->close_cb)
    q->close_cb(q->close_arg);
  carp_clock_free(q->own_clock);
  carp_map_free(&q->entries);
  carp_free(q->heap);
  carp_free(q->name);
  carp_free(q);
}

static void finish_close(struct carp_workqueue *q)
{
  struct carp_map_iter it;
  void *v;
  if (q->nprocessing || q->handles_open != 2)
    return;
  carp_map_iter_init(&it);
  while (carp_map_next(&q->entries, &it, NULL, NULL, &v)) {
    struct wq_entry *e = v;
    carp_free(e->key);
    carp_free(e);
  }
  carp_timer_close(&q->kick, on_handle_closed);
  carp_timer_close(&q->delay, on_handle_closed);
}

void carp_workqueue_done(struct carp_workqueue *q, const char *key,
                         enum carp_reconcile_result result, uint64_t after_ms)
{
  struct wq_entry *e = entry_get(q, key, 0);
  if (!e || !e->processing) {
    CARP_LOG_ERROR("workqueue", "done for a key not in flight",
                   CARP_F_STR("queue", q->name), CARP_F_STR("key", key));
    return;
  }
  e->processing = 0;
  q->nprocessing--;
  carp_metric_observe(q->m_work_dur, labels(q),
                      (double)(now_ms(q) - e->started_at) / 1000.0);
  if (q->closing) {
    finish_close(q);
    return;
  }
  switch (result) {
  case CARP_RECONCILE_DONE:
    e->failures = 0;
    break;
  case CARP_RECONCILE_REQUEUE:
    e->failures = 0;
    carp_workqueue_add(q, e->key);
    break;
  case CARP_RECONCILE_REQUEUE_AFTER:
    e->failures = 0;
    carp_workqueue_add_after(q, e->key, after_ms);
    break;
  case CARP_RECONCILE_ERROR:
    carp_workqueue_add_rate_limited(q, e->key);
    break;
  }
  if (e->dirty && !e->queued)
    enqueue(q, e);
  maybe_free(q, e);
  kick(q);
}

size_t carp_workqueue_len(const struct carp_workqueue *q)
{
  return q->nqueued;
}

size_t carp_workqueue_in_flight(const struct carp_workqueue *q)
{
  return q->nprocessing;
}

uint64_t carp_workqueue_started(struct carp_workqueue *q, const char *key)
{
  struct wq_entry *e = entry_get(q, key, 0);
  return e && e->processing ? e->started_at : 0;
}

void carp_workqueue_close(struct carp_workqueue *q, void (*close_cb)(void *arg),
                          void *arg)
{
  struct carp_map_iter it;
  void *v;
  if (q->closing)
    return;
  q->closing = 1;
  q->close_cb = close_cb;
  q->close_arg = arg;
  carp_timer_stop(&q->kick);
  carp_timer_stop(&q->delay);
  /* Forget everything not in flight; in-flight entries finish first. */
  q->head = q->tail = NULL;
  q->nqueued = 0;
  q->nheap = 0;
  carp_map_iter_init(&it);
  while (carp_map_next(&q->entries, &it, NULL, NULL, &v)) {
    struct wq_entry *e = v;
    e->queued = 0;
    e->dirty = 0;
    e->failures = 0;
    e->heap_idx = NOT_IN_HEAP;
    if (!e->processing) {
      carp_map_del(&q->entries, e->key, e->klen);
      carp_free(e->key);
      carp_free(e);
    }
  }
  update_depth(q);
  finish_close(q);
}

int carp_workqueue_new(uv_loop_t *loop,
                       const struct carp_workqueue_options *opts,
                       struct carp_workqueue **out)
{
  struct carp_workqueue *q;
  struct carp_metrics *m = opts ? opts->metrics : NULL;
  if (!loop || !opts || !opts->reconcile || !opts->name || !out)
    return CARP_EINVAL;
  q = CARP_NEW(struct carp_workqueue);
  q->loop = loop;
  q->opts = *opts;
  q->name = carp_strdup(opts->name);
  q->opts.name = q->name;
  if (!q->opts.concurrency)
    q->opts.concurrency = 1;
  if (!q->opts.base_delay_ms)
    q->opts.base_delay_ms = 5;
  if (!q->opts.max_delay_ms)
    q->opts.max_delay_ms = 1000 * 1000;
  if (!(q->opts.qps > 0))
    q->opts.qps = 10;
  if (!q->opts.burst)
    q->opts.burst = 100;
  q->clock = opts->clock;
  if (!q->clock)
    q->clock = q->own_clock = carp_clock_real_new(loop);
  q->tokens = q->opts.burst;
  q->tokens_at = now_ms(q);
  carp_map_init(&q->entries);
  carp_timer_init(q->clock, &q->kick);
  carp_timer_init(q->clock, &q->delay);
  q->kick.data = q->delay.data = q;
  q->handles_open = 2;
  if (m) {
    q->m_depth =
        carp_metrics_gauge(m, "workqueue_depth", "Current depth of workqueue",
                           CARP_LABELS("name"));
    q->m_adds = carp_metrics_counter(m, "workqueue_adds_total",
                                     "Total number of adds handled by "
                                     "workqueue",
                                     CARP_LABELS("name"));
    q->m_queue_dur = carp_metrics_histogram(
        m, "workqueue_queue_duration_seconds",
        "How long in seconds an item stays in workqueue before being "
        "requested",
        CARP_LABELS("name"), carp_metrics_duration_buckets,
        carp_metrics_duration_buckets_len);
    q->m_work_dur = carp_metrics_histogram(
        m, "workqueue_work_duration_seconds",
        "How long in seconds processing an item from workqueue takes",
        CARP_LABELS("name"), carp_metrics_duration_buckets,
        carp_metrics_duration_buckets_len);
    q->m_retries = carp_metrics_counter(m, "workqueue_retries_total",
                                        "Total number of retries handled by "
                                        "workqueue",
                                        CARP_LABELS("name"));
    update_depth(q);
  }
  *out = q;
  return 0;
}
