/* clock.c: the real and the fake clock (see include/carpenter/clock.h).
 *
 * Both kinds share the timer handle. A real timer is a libuv timer; a fake
 * one sits in the clock's list of active timers until the test advances
 * the clock past its due time. Either way the handle holds an initialised
 * uv_timer_t, so that closing always goes through uv_close and its
 * callback is deferred exactly as libuv defers it. */
#include "carpenter/clock.h"

#include "carpenter/alloc.h"
#include "carpenter/timeutil.h"

#define FAKE_MONO_START 1000000

struct carp_clock {
  uv_loop_t *loop;
  int fake;
  int64_t wall_base; /* fake: wall ms at mono FAKE_MONO_START */
  uint64_t mono;     /* fake: now */
  uint64_t seq;
  struct carp_timer *timers; /* fake: active ones */
};

static struct carp_clock *clock_new(uv_loop_t *loop, int fake)
{
  struct carp_clock *c = CARP_NEW(struct carp_clock);
  c->loop = loop;
  c->fake = fake;
  return c;
}

struct carp_clock *carp_clock_real_new(uv_loop_t *loop)
{
  return clock_new(loop, 0);
}

struct carp_clock *carp_clock_fake_new(uv_loop_t *loop, int64_t wall_ms)
{
  struct carp_clock *c = clock_new(loop, 1);
  c->wall_base = wall_ms;
  c->mono = FAKE_MONO_START;
  return c;
}

void carp_clock_free(struct carp_clock *c)
{
  carp_free(c);
}

uv_loop_t *carp_clock_loop(const struct carp_clock *c)
{
  return c->loop;
}

int carp_clock_is_fake(const struct carp_clock *c)
{
  return c->fake;
}

int64_t carp_clock_wall_ms(const struct carp_clock *c)
{
  if (!c || !c->fake)
    return carp_time_wall_ms();
  return c->wall_base + (int64_t)(c->mono - FAKE_MONO_START);
}

uint64_t carp_clock_mono_ms(const struct carp_clock *c)
{
  if (!c || !c->fake)
    return carp_time_mono_ms();
  return c->mono;
}

/* ---- timers ---- */

static void unlink_fake(struct carp_timer *t)
{
  struct carp_timer **pp = &t->clock->timers;
  while (*pp && *pp != t)
    pp = &(*pp)->next;
  if (*pp)
    *pp = t->next;
  t->next = NULL;
}

static void on_uv_timer(uv_timer_t *h)
{
  struct carp_timer *t = carp_container_of(h, struct carp_timer, uv);
  if (!t->repeat)
    t->active = 0;
  t->cb(t);
}

void carp_timer_init(struct carp_clock *c, struct carp_timer *t)
{
  t->clock = c;
  t->cb = NULL;
  t->close_cb = NULL;
  t->active = 0;
  t->next = NULL;
  t->due = t->repeat = t->seq = 0;
  uv_timer_init(c->loop, &t->uv);
}

void carp_timer_start(struct carp_timer *t, carp_timer_cb cb,
                      uint64_t timeout_ms, uint64_t repeat_ms)
{
  struct carp_clock *c = t->clock;
  carp_timer_stop(t);
  t->cb = cb;
  t->repeat = repeat_ms;
  t->active = 1;
  if (!c->fake) {
    uv_timer_start(&t->uv, on_uv_timer, timeout_ms, repeat_ms);
    return;
  }
  t->due = c->mono + timeout_ms;
  t->seq = ++c->seq;
  t->next = c->timers;
  c->timers = t;
}

void carp_timer_stop(struct carp_timer *t)
{
  if (!t->active)
    return;
  t->active = 0;
  if (t->clock->fake)
    unlink_fake(t);
  else
    uv_timer_stop(&t->uv);
}

int carp_timer_is_active(const struct carp_timer *t)
{
  return t->active;
}

static void on_uv_closed(uv_handle_t *h)
{
  struct carp_timer *t =
      carp_container_of((uv_timer_t *)h, struct carp_timer, uv);
  if (t->close_cb)
    t->close_cb(t);
}

void carp_timer_close(struct carp_timer *t, carp_timer_close_cb cb)
{
  carp_timer_stop(t);
  t->close_cb = cb;
  uv_close((uv_handle_t *)&t->uv, on_uv_closed);
}

/* ---- driving the fake clock ---- */

static struct carp_timer *earliest(const struct carp_clock *c)
{
  struct carp_timer *t, *best = NULL;
  for (t = c->timers; t; t = t->next)
    if (!best || t->due < best->due ||
        (t->due == best->due && t->seq < best->seq))
      best = t;
  return best;
}

/* Fires the earliest timer if it is due by limit. */
static int fire_one(struct carp_clock *c, uint64_t limit)
{
  struct carp_timer *t = earliest(c);
  if (!t || t->due > limit)
    return 0;
  if (t->due > c->mono)
    c->mono = t->due;
  unlink_fake(t);
  if (t->repeat) {
    t->due = c->mono + t->repeat;
    t->seq = ++c->seq;
    t->next = c->timers;
    c->timers = t;
  } else {
    t->active = 0;
  }
  t->cb(t);
  return 1;
}

unsigned carp_clock_fake_advance(struct carp_clock *c, uint64_t ms)
{
  uint64_t target = c->mono + ms;
  unsigned n = 0;
  while (fire_one(c, target))
    n++;
  c->mono = target;
  return n;
}

unsigned carp_clock_fake_fire_due(struct carp_clock *c)
{
  unsigned n = 0;
  while (fire_one(c, c->mono))
    n++;
  return n;
}

uint64_t carp_clock_fake_next(const struct carp_clock *c)
{
  const struct carp_timer *t = earliest(c);
  if (!t)
    return UINT64_MAX;
  return t->due > c->mono ? t->due - c->mono : 0;
}
