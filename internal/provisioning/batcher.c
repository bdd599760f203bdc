/* batcher.c: the batch window (see include/carpenter/batcher.h). Two
 * one-shot timers: the idle timer restarts on every new trigger, the max
 * timer is armed when the window opens; whichever fires first closes the
 * window. Keys seen in the window live in a map freed at close. */
#include "carpenter/batcher.h"

#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/map.h"

struct carp_batcher {
  uv_loop_t *loop;
  uv_timer_t idle;
  uv_timer_t max;
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
  uv_timer_stop(&b->idle);
  uv_timer_stop(&b->max);
  b->open = 0;
  b->triggers = 0;
  clear_keys(b);
  b->cb(n, b->arg);
}

static void on_idle(uv_timer_t *t)
{
  fire(carp_container_of(t, struct carp_batcher, idle));
}

static void on_max(uv_timer_t *t)
{
  fire(carp_container_of(t, struct carp_batcher, max));
}

int carp_batcher_new(uv_loop_t *loop, uint64_t idle_ms, uint64_t max_ms,
                     carp_batcher_cb cb, void *arg, struct carp_batcher **out)
{
  struct carp_batcher *b;
  if (!loop || !cb || !out || idle_ms > max_ms)
    return CARP_EINVAL;
  b = CARP_NEW(struct carp_batcher);
  b->loop = loop;
  b->idle_ms = idle_ms;
  b->max_ms = max_ms;
  b->cb = cb;
  b->arg = arg;
  carp_map_init(&b->keys);
  uv_timer_init(loop, &b->idle);
  uv_timer_init(loop, &b->max);
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
    uv_timer_start(&b->max, on_max, b->max_ms, 0);
  }
  uv_timer_start(&b->idle, on_idle, b->idle_ms, 0);
}

int carp_batcher_open(const struct carp_batcher *b)
{
  return b->open;
}

static void on_closed(uv_handle_t *h)
{
  struct carp_batcher *b = h->data;
  void (*cb)(void *);
  void *arg;
  if (--b->handles > 0)
    return;
  cb = b->close_cb;
  arg = b->close_arg;
  clear_keys(b);
  carp_map_free(&b->keys);
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
  uv_close((uv_handle_t *)&b->idle, on_closed);
  uv_close((uv_handle_t *)&b->max, on_closed);
}
