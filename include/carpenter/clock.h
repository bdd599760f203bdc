/* Module clock (internal/clock): the one source of time for controllers - wall
 * and monotonic milliseconds, and timers - so that a test can replace it.
 *
 * The real clock reads the system clocks and runs its timers as libuv
 * timers on the loop. The fake clock starts at a wall time given by the
 * test, never moves by itself, and fires due timers only when the test
 * advances it (carp_clock_fake_advance), in order of due time (ties in
 * the order they were started), each with the clock set to its due time.
 * So a rule like "after consolidateAfter" is tested exactly and at once.
 *
 * A carp_timer is a handle in libuv's sense: init it, start and stop it
 * any number of times, and close it; its memory must stay valid until
 * the close callback has run (always later, never inside the close). */
#ifndef CARP_CLOCK_H
#define CARP_CLOCK_H

#include <stdint.h>

#include <uv.h>

struct carp_clock;
struct carp_timer;

typedef void (*carp_timer_cb)(struct carp_timer *t);
typedef void (*carp_timer_close_cb)(struct carp_timer *t);

struct carp_timer {
  void *data; /* the user's */
  /* private */
  uv_timer_t uv; /* runs real timers; gives close its deferred callback */
  struct carp_clock *clock;
  carp_timer_cb cb;
  carp_timer_close_cb close_cb;
  uint64_t due;    /* fake: monotonic ms when it fires */
  uint64_t repeat; /* ms, 0: once */
  uint64_t seq;    /* fake: start order, for ties */
  int active;
  struct carp_timer *next; /* fake: the clock's list of active timers */
};

/* The system clock, for timers on loop. One per loop is enough; it is
 * freed with carp_clock_free once every timer on it is closed. */
struct carp_clock *carp_clock_real_new(uv_loop_t *loop);
/* A clock that moves only when told; starts at wall_ms (epoch ms) and a
 * monotonic time of 1,000,000 ms. Its timers still need loop for their
 * close callbacks. */
struct carp_clock *carp_clock_fake_new(uv_loop_t *loop, int64_t wall_ms);
void carp_clock_free(struct carp_clock *c);

uv_loop_t *carp_clock_loop(const struct carp_clock *c);
int carp_clock_is_fake(const struct carp_clock *c);
/* Milliseconds since the Unix epoch. */
int64_t carp_clock_wall_ms(const struct carp_clock *c);
/* Milliseconds from an arbitrary start; never goes back. */
uint64_t carp_clock_mono_ms(const struct carp_clock *c);

void carp_timer_init(struct carp_clock *c, struct carp_timer *t);
/* (Re)starts: cb after timeout_ms, then every repeat_ms when not 0. */
void carp_timer_start(struct carp_timer *t, carp_timer_cb cb,
                      uint64_t timeout_ms, uint64_t repeat_ms);
void carp_timer_stop(struct carp_timer *t);
int carp_timer_is_active(const struct carp_timer *t);
/* Stops it; cb (may be NULL) runs on a later loop iteration. */
void carp_timer_close(struct carp_timer *t, carp_timer_close_cb cb);

/* Fake clock only. Moves time forward by ms, firing every timer that
 * falls due on the way (timers started by those callbacks included).
 * Returns how many fired. */
unsigned carp_clock_fake_advance(struct carp_clock *c, uint64_t ms);
/* Fires the timers due now (after a change that started zero-delay
 * timers); returns how many fired. */
unsigned carp_clock_fake_fire_due(struct carp_clock *c);
/* Milliseconds until the next timer is due, or UINT64_MAX when none. */
uint64_t carp_clock_fake_next(const struct carp_clock *c);

#endif
