/* Unit tests for the provisioning batcher: idle close, max close under a
 * steady stream, de-duplication within a window, and a new window after
 * the callback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "carpenter/batcher.h"

struct fx {
  uv_loop_t loop;
  struct carp_batcher *b;
  uint64_t start;
  uint64_t fired_at[8];
  size_t counts[8];
  int fired;
  uv_timer_t feeder;
  int feeds_left;
  int closed;
};

static void on_batch(size_t n, void *arg)
{
  struct fx *f = arg;
  f->fired_at[f->fired] = uv_now(&f->loop) - f->start;
  f->counts[f->fired] = n;
  f->fired++;
}

static void on_closed(void *arg)
{
  ((struct fx *)arg)->closed = 1;
}

static void setup(struct fx *f, uint64_t idle, uint64_t max)
{
  memset(f, 0, sizeof(*f));
  uv_loop_init(&f->loop);
  assert_int_equal(
      carp_batcher_new(&f->loop, NULL, idle, max, on_batch, f, &f->b), 0);
  f->start = uv_now(&f->loop);
}

static void finish(struct fx *f)
{
  carp_batcher_close(f->b, on_closed, f);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_true(f->closed);
  assert_int_equal(uv_loop_close(&f->loop), 0);
}

static void test_idle_window(void **state)
{
  struct fx f;
  setup(&f, 50, 1000);
  carp_batcher_trigger(f.b, "pod-a");
  carp_batcher_trigger(f.b, "pod-b");
  carp_batcher_trigger(f.b, "pod-a"); /* duplicate */
  carp_batcher_trigger(f.b, NULL);
  assert_true(carp_batcher_open(f.b));
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.fired, 1);
  assert_int_equal(f.counts[0], 3);
  assert_true(f.fired_at[0] >= 50 && f.fired_at[0] < 500);
  assert_false(carp_batcher_open(f.b));
  /* A new window after the first: duplicates of old keys count again. */
  carp_batcher_trigger(f.b, "pod-a");
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.fired, 2);
  assert_int_equal(f.counts[1], 1);
  finish(&f);
}

static void on_feed(uv_timer_t *t)
{
  struct fx *f = t->data;
  char key[16];
  snprintf(key, sizeof(key), "p%d", f->feeds_left);
  carp_batcher_trigger(f->b, key);
  if (--f->feeds_left == 0)
    uv_timer_stop(t);
}

static void test_max_window(void **state)
{
  struct fx f;
  setup(&f, 40, 200);
  /* A trigger every 20 ms keeps the idle timer from ever firing. */
  f.feeds_left = 20;
  uv_timer_init(&f.loop, &f.feeder);
  f.feeder.data = &f;
  uv_timer_start(&f.feeder, on_feed, 0, 20);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  uv_close((uv_handle_t *)&f.feeder, NULL);
  assert_true(f.fired >= 2);
  assert_true(f.fired_at[0] >= 200 && f.fired_at[0] < 320);
  {
    size_t total = 0;
    for (int i = 0; i < f.fired; i++)
      total += f.counts[i];
    assert_int_equal(total, 20);
  }
  finish(&f);
}

static void test_bad_args(void **state)
{
  uv_loop_t loop;
  struct carp_batcher *b;
  uv_loop_init(&loop);
  assert_true(carp_batcher_new(&loop, NULL, 100, 10, on_batch, NULL, &b) < 0);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_window),
      cmocka_unit_test(test_max_window),
      cmocka_unit_test(test_bad_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
