/* Module workqueue (internal/workqueue). A work queue with client-go's
 * guarantees, on one libuv loop:
 *  - de-duplication: a key added while queued is queued once;
 *  - at most one reconcile in flight per key: a key added while being
 *    processed is queued again when its reconcile finishes;
 *  - per-key exponential backoff for failures (5 ms doubling to 1000 s,
 *    each delay cut by up to half at random) and
 *    an overall token bucket (10 qps, burst 100) for retries;
 *  - delayed adds that keep the earliest time for a key;
 *  - up to `concurrency` reconciles in flight at once.
 *
 * A reconcile is asynchronous: the callback starts the work and, whenever
 * it finishes (possibly inside the callback itself), reports with
 * carp_workqueue_done(). The key string passed to the callback stays valid
 * until then. */
#ifndef CARP_WORKQUEUE_H
#define CARP_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct carp_workqueue;
struct carp_metrics;
struct carp_clock;

enum carp_reconcile_result {
  CARP_RECONCILE_DONE = 0,      /* success; failures are forgotten */
  CARP_RECONCILE_REQUEUE,       /* success; run again as soon as possible */
  CARP_RECONCILE_REQUEUE_AFTER, /* success; run again after a delay */
  CARP_RECONCILE_ERROR,         /* failure; retried with backoff */
};

typedef void (*carp_workqueue_reconcile_cb)(struct carp_workqueue *q,
                                            const char *key, void *arg);

struct carp_workqueue_options {
  const char *name;             /* metric label and log field */
  unsigned concurrency;         /* reconciles in flight at once; default 1 */
  uint64_t base_delay_ms;       /* first retry delay; default 5 */
  uint64_t max_delay_ms;        /* retry delay cap; default 1000 s */
  double qps;                   /* overall retry rate; default 10 */
  unsigned burst;               /* default 100 */
  struct carp_metrics *metrics; /* optional: workqueue_* metrics */
  struct carp_clock *clock;     /* optional: NULL for the system clock */
  carp_workqueue_reconcile_cb reconcile;
  void *arg;
};

int carp_workqueue_new(uv_loop_t *loop,
                       const struct carp_workqueue_options *opts,
                       struct carp_workqueue **out);
void carp_workqueue_add(struct carp_workqueue *q, const char *key);
void carp_workqueue_add_after(struct carp_workqueue *q, const char *key,
                              uint64_t delay_ms);
void carp_workqueue_add_rate_limited(struct carp_workqueue *q, const char *key);
void carp_workqueue_forget(struct carp_workqueue *q, const char *key);
unsigned carp_workqueue_failures(struct carp_workqueue *q, const char *key);
/* Ends the reconcile of key. after_ms is used with REQUEUE_AFTER. */
void carp_workqueue_done(struct carp_workqueue *q, const char *key,
                         enum carp_reconcile_result result, uint64_t after_ms);
/* Keys waiting to run now (not delayed, not in flight). */
size_t carp_workqueue_len(const struct carp_workqueue *q);
size_t carp_workqueue_in_flight(const struct carp_workqueue *q);
/* When the reconcile of key in flight started (the queue's clock,
 * monotonic ms), or 0 when key is not in flight. */
uint64_t carp_workqueue_started(struct carp_workqueue *q, const char *key);
/* Drops queued and delayed keys, waits for reconciles in flight to call
 * done, closes the queue's handles, then calls close_cb. */
void carp_workqueue_close(struct carp_workqueue *q, void (*close_cb)(void *arg),
                          void *arg);

#endif
