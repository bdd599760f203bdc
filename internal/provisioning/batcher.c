/* batcher.c: the batch window (see include/carpenter/batcher.h). Two
 * one-shot timers: the idle timer restarts on every new trigger, the max
 * timer is armed when the window opens; whichever fires first closes the
 * window. Keys seen in the window live in a map freed at close. */
#include "carpenter/batcher.h"

#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/clock.h"
#include "carpenter/error.h"
#include "carpenter/map.h"

struct carp_batcher {
  struct carp_clock *clock;
  struct carp_clock *own_clock; /* made here when none was given */
  struct carp_timer idle;
  struct carp_timer max;
  uint64_t idle_ms;
  uint64_t max_ms;
  carp_batcher_cb cb;
  void *arg;
  struct carp_map keys;
  size_t triggers;
  int open;
  int closing;
  int handles;
  void (*close_cb)(void *arg);
  void *close_arg;
};

static void clear_keys(struct carp_batcher *b)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&b->keys, &it, NULL, NULL, &v))
    carp_free(v);
  carp_map_free(&b->keys);
  carp_map_init(&b->keys);
}

static void fire(struct carp_batcher *b)
{
  size_t n = b->triggers;
  carp_timer_stop(&b->idle);
  carp_timer_stop(&b->max);
  b->open = 0;
  b->triggers = 0;
  clear_keys(b);
  b->cb(n, b->arg);
}

static void on_idle(struct carp_timer *t)
{
  fire(carp_container_of(t, struct carp_batcher, idle));
}

static void on_max(struct carp_timer *t)
{
  fire(carp_container_of(t, struct carp_batcher, max));
}

int carp_batcher_new(uv_loop_t *loop, struct carp_clock *clock,
                     uint64_t idle_ms, uint64_t max_ms, carp_batcher_cb cb,
                     void *arg, struct carp_batcher **out)
{
  struct carp_batcher *b;
  if (!loop || !cb || !out || idle_ms > max_ms)
    return CARP_EINVAL;
  b = CARP_NEW(struct carp_batcher);
  b->clock = clock;
  if (!b->clock)
    b->clock = b->own_clock = carp_clock_real_new(loop);
  b->idle_ms = idle_ms;
  b->max_ms = max_ms;
  b->cb = cb;
  b->arg = arg;
  carp_map_init(&b->keys);
  carp_timer_init(b->clock, &b->idle);
  carp_timer_init(b->clock, &b->max);
  b->handles = 2;
  *out = b;
  return 0;
}

void carp_batcher_trigger(struct carp_batcher *b, const char *key)
{
  if (b->closing)
    return;
  if (key) {
    char *copy;
    if (carp_map_gets(&b->keys, key))
      return; /* already in this window */
    copy = carp_strdup(key);
    carp_map_puts(&b->keys, copy, copy);
  }
  b->triggers++;
  if (!b->open) {
    b->open = 1;
    carp_timer_start(&b->max, on_max, b->max_ms, 0);
  }
  carp_timer_start(&b->idle, on_idle, b->idle_ms, 0);
}

int carp_batcher_open(const struct carp_batcher *b)
{
  return b->open;
}

static void on_closed(struct carp_timer *t)
{
  struct carp_batcher *b = t->data;
  void (*cb)(void *);
  void *arg;
  if (--b->handles > 0)
    return;
  cb = b->close_cb;
  arg = b->close_arg;
  clear_keys(b);
  carp_map_free(&b->keys);
  carp_clock_free(b->own_clock);
  carp_free(b);
  if (cb)
    cb(arg);
}

void carp_batcher_close(struct carp_batcher *b, void (*cb)(void *arg),
                        void *arg)
{
  if (!b || b->closing)
    return;
  b->closing = 1;
  b->close_cb = cb;
  b->close_arg = arg;
  b->idle.data = b->max.data = b;
  carp_timer_close(&b->idle, on_closed);
  carp_timer_close(&b->max, on_closed);
}
