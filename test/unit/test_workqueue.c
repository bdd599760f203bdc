/* Unit tests for the work queue: de-duplication, one reconcile per key,
 * the concurrency limit, backoff timings, delayed adds, and shutdown with
 * reconciles still in flight. Each test runs a real libuv loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "carpenter/clock.h"
#include "carpenter/metrics.h"
#include "carpenter/workqueue.h"

struct rec {
  char key[32];
  uint64_t at;
  int probes_fired; /* probe timers that had fired when this run began */
};

struct fx {
  uv_loop_t loop;
  struct carp_clock *clock; /* a fake one, or NULL for the system clock */
  struct carp_workqueue *q;
  struct rec runs[256];
  int nruns;
  int in_flight;
  int max_in_flight;
  /* Behaviour of the reconcile. */
  int fail_times;   /* fail this many times, then succeed */
  int async;        /* finish from a timer instead of inline */
  uint64_t hold_ms; /* how long an async reconcile takes */
  uv_timer_t holds[16];
  char hold_keys[16][32];
  int nholds;
  /* With probe_base_ms set, each failure starts a probe timer due at twice
   * the backoff that failure should get (probe_base_ms << failure): a retry
   * that runs before its probe fired waited less than twice its backoff,
   * whatever the machine's load (libuv runs due timers in due order). */
  uint64_t probe_base_ms;
  uv_timer_t probes[16];
  int nprobes;
  int probes_fired;
  int closed;
};

static void on_probe(uv_timer_t *t)
{
  struct fx *f = t->data;
  f->probes_fired++;
  uv_close((uv_handle_t *)t, NULL);
}

static void finish(struct fx *f, const char *key)
{
  enum carp_reconcile_result r = CARP_RECONCILE_DONE;
  f->in_flight--;
  if (f->fail_times > 0) {
    f->fail_times--;
    r = CARP_RECONCILE_ERROR;
    if (f->probe_base_ms) {
      int i = f->nprobes++;
      uv_timer_init(&f->loop, &f->probes[i]);
      f->probes[i].data = f;
      uv_timer_start(&f->probes[i], on_probe, 2 * (f->probe_base_ms << i), 0);
    }
  }
  carp_workqueue_done(f->q, key, r, 0);
}

static void on_hold(uv_timer_t *t)
{
  struct fx *f = t->data;
  int i = (int)(t - f->holds);
  finish(f, f->hold_keys[i]);
  uv_close((uv_handle_t *)t, NULL);
}

static void reconcile(struct carp_workqueue *q, const char *key, void *arg)
{
  struct fx *f = arg;
  struct rec *r = &f->runs[f->nruns++];
  snprintf(r->key, sizeof(r->key), "%s", key);
  r->at = f->clock ? carp_clock_mono_ms(f->clock) : uv_now(&f->loop);
  r->probes_fired = f->probes_fired;
  f->in_flight++;
  if (f->in_flight > f->max_in_flight)
    f->max_in_flight = f->in_flight;
  if (!f->async) {
    finish(f, key);
    return;
  }
  {
    int i = f->nholds++;
    snprintf(f->hold_keys[i], sizeof(f->hold_keys[i]), "%s", key);
    uv_timer_init(&f->loop, &f->holds[i]);
    f->holds[i].data = f;
    uv_timer_start(&f->holds[i], on_hold, f->hold_ms, 0);
  }
}

static void setup_fx_clock(struct fx *f, unsigned concurrency,
                           struct carp_metrics *m, int fake_clock)
{
  struct carp_workqueue_options o = {.name = "test",
                                     .concurrency = concurrency,
                                     .metrics = m,
                                     .reconcile = reconcile,
                                     .arg = f};
  memset(f, 0, sizeof(*f));
  assert_int_equal(uv_loop_init(&f->loop), 0);
  if (fake_clock)
    f->clock = o.clock = carp_clock_fake_new(&f->loop, 0);
  o.arg = f;
  assert_int_equal(carp_workqueue_new(&f->loop, &o, &f->q), 0);
}

static void setup_fx(struct fx *f, unsigned concurrency, struct carp_metrics *m)
{
  setup_fx_clock(f, concurrency, m, 0);
}

/* Fake clock: runs every timer, in due order, until none is left. */
static void run_fake(struct fx *f)
{
  for (;;) {
    uint64_t next;
    carp_clock_fake_fire_due(f->clock);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    next = carp_clock_fake_next(f->clock);
    if (next == UINT64_MAX)
      return;
    carp_clock_fake_advance(f->clock, next);
  }
}

static void on_closed(void *arg)
{
  ((struct fx *)arg)->closed = 1;
}

static void teardown_fx(struct fx *f)
{
  carp_workqueue_close(f->q, on_closed, f);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(f->closed, 1);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  carp_clock_free(f->clock);
}

static void test_dedupe(void **state)
{
  struct fx f;
  struct carp_metrics *m = carp_metrics_new();
  setup_fx(&f, 1, m);
  carp_workqueue_add(f.q, "a");
  carp_workqueue_add(f.q, "a");
  carp_workqueue_add(f.q, "b");
  carp_workqueue_add(f.q, "a");
  assert_int_equal(carp_workqueue_len(f.q), 2);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.nruns, 2);
  assert_string_equal(f.runs[0].key, "a");
  assert_string_equal(f.runs[1].key, "b");
  assert_true(carp_metric_value(carp_metrics_counter(m, "workqueue_adds_total",
                                                     "", CARP_LABELS("name")),
                                CARP_VALUES("test")) == 4);
  teardown_fx(&f);
  carp_metrics_free(m);
}

static void on_add_again(uv_timer_t *t)
{
  struct fx *f = t->data;
  /* "a" is in flight now: this must not start a second reconcile. */
  carp_workqueue_add(f->q, "a");
  carp_workqueue_add(f->q, "a");
  uv_close((uv_handle_t *)t, NULL);
}

static void test_one_in_flight_per_key(void **state)
{
  struct fx f;
  uv_timer_t t;
  setup_fx(&f, 4, NULL);
  f.async = 1;
  f.hold_ms = 50;
  carp_workqueue_add(f.q, "a");
  uv_timer_init(&f.loop, &t);
  t.data = &f;
  uv_timer_start(&t, on_add_again, 10, 0);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.nruns, 2);
  assert_int_equal(f.max_in_flight, 1);
  /* The second run started only after the first finished. */
  assert_true(f.runs[1].at >= f.runs[0].at + 50);
  teardown_fx(&f);
}

static void test_concurrency(void **state)
{
  struct fx f;
  char key[8];
  setup_fx(&f, 3, NULL);
  f.async = 1;
  f.hold_ms = 20;
  for (int i = 0; i < 10; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    carp_workqueue_add(f.q, key);
  }
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.nruns, 10);
  assert_int_equal(f.max_in_flight, 3);
  for (int i = 0; i < 10; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    assert_string_equal(f.runs[i].key, key); /* FIFO order */
  }
  teardown_fx(&f);
}

static void test_backoff(void **state)
{
  struct fx f;
  setup_fx_clock(&f, 1, NULL, 1);
  f.fail_times = 4;
  carp_workqueue_add(f.q, "x");
  run_fake(&f);
  assert_int_equal(f.nruns, 5);
  /* On the fake clock the gaps are the delays themselves: 5, 10, 20 and
   * 40 ms, each shortened by up to half of it (jitter). */
  for (int i = 1; i < 5; i++) {
    uint64_t gap = f.runs[i].at - f.runs[i - 1].at;
    uint64_t want = 5u << (i - 1);
    assert_true(gap >= want / 2);
    assert_true(gap <= want);
  }
  /* Success forgot the failures. */
  assert_int_equal(carp_workqueue_failures(f.q, "x"), 0);
  teardown_fx(&f);
}

static void test_rate_limit_and_forget(void **state)
{
  struct fx f;
  struct carp_workqueue_options o = {
      .name = "rl", .reconcile = reconcile, .qps = 10, .burst = 1};
  memset(&f, 0, sizeof(f));
  uv_loop_init(&f.loop);
  o.arg = &f;
  assert_int_equal(carp_workqueue_new(&f.loop, &o, &f.q), 0);
  /* With a burst of one, the second retry waits for the bucket (100 ms at
   * 10 qps) even though its own backoff is only 5 ms. */
  carp_workqueue_add_rate_limited(f.q, "a");
  carp_workqueue_add_rate_limited(f.q, "b");
  assert_int_equal(carp_workqueue_failures(f.q, "a"), 1);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.nruns, 2);
  assert_string_equal(f.runs[1].key, "b");
  assert_true(f.runs[1].at - f.runs[0].at >= 90);
  carp_workqueue_add_rate_limited(f.q, "c");
  carp_workqueue_forget(f.q, "c");
  assert_int_equal(carp_workqueue_failures(f.q, "c"), 0);
  teardown_fx(&f);
}

static void test_add_after(void **state)
{
  struct fx f;
  uint64_t start;
  setup_fx(&f, 1, NULL);
  start = uv_now(&f.loop);
  carp_workqueue_add_after(f.q, "late", 200);
  carp_workqueue_add_after(f.q, "late", 30); /* earliest wins */
  carp_workqueue_add_after(f.q, "later", 60);
  carp_workqueue_add_after(f.q, "now", 0);
  assert_int_equal(carp_workqueue_len(f.q), 1);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.nruns, 3);
  assert_string_equal(f.runs[0].key, "now");
  assert_string_equal(f.runs[1].key, "late");
  assert_string_equal(f.runs[2].key, "later");
  /* "late" ran before "later" (60 ms): its 30 ms won over its 200 ms. */
  assert_true(f.runs[1].at - start >= 30);
  assert_true(f.runs[2].at - start >= 60);
  teardown_fx(&f);
}

static void on_close_now(uv_timer_t *t)
{
  struct fx *f = t->data;
  carp_workqueue_close(f->q, on_closed, f);
  /* Adds after close are ignored. */
  carp_workqueue_add(f->q, "ignored");
  assert_int_equal(f->closed, 0); /* a reconcile is still in flight */
  uv_close((uv_handle_t *)t, NULL);
}

static void test_close_waits_for_in_flight(void **state)
{
  struct fx f;
  uv_timer_t t;
  setup_fx(&f, 1, NULL);
  f.async = 1;
  f.hold_ms = 50;
  carp_workqueue_add(f.q, "busy");
  carp_workqueue_add(f.q, "queued");
  carp_workqueue_add_after(f.q, "delayed", 10);
  uv_timer_init(&f.loop, &t);
  t.data = &f;
  uv_timer_start(&t, on_close_now, 10, 0);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.closed, 1);
  assert_int_equal(f.nruns, 1); /* "queued" and "delayed" were dropped */
  assert_int_equal(uv_loop_close(&f.loop), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dedupe),
      cmocka_unit_test(test_one_in_flight_per_key),
      cmocka_unit_test(test_concurrency),
      cmocka_unit_test(test_backoff),
      cmocka_unit_test(test_rate_limit_and_forget),
      cmocka_unit_test(test_add_after),
      cmocka_unit_test(test_close_waits_for_in_flight),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
