/* backoff.c: capped exponential backoff with downward jitter, so a delay is
 * never longer than the cap; and the per-object retry state built on it. */
#include "carpenter/backoff.h"

#include <stddef.h>

void carp_backoff_init(struct carp_backoff *b, uint64_t base_ms,
                       uint64_t cap_ms, double factor, double jitter)
{
  b->base_ms = base_ms;
  b->cap_ms = cap_ms;
  b->factor = factor < 1.0 ? 1.0 : factor;
  b->jitter = jitter < 0 ? 0 : jitter > 1 ? 1 : jitter;
  b->attempt = 0;
  b->rng = NULL;
}

uint64_t carp_backoff_peek(const struct carp_backoff *b, unsigned n)
{
  double d = (double)b->base_ms;
  unsigned i;
  for (i = 0; i < n && d < (double)b->cap_ms; i++)
    d *= b->factor;
  if (d > (double)b->cap_ms)
    d = (double)b->cap_ms;
  return (uint64_t)d;
}

uint64_t carp_backoff_next(struct carp_backoff *b)
{
  uint64_t d = carp_backoff_peek(b, b->attempt);
  struct carp_rand *rng = b->rng ? b->rng : carp_rand_global();
  if (b->attempt < 64)
    b->attempt++;
  if (b->jitter > 0 && d > 0)
    d -= (uint64_t)((double)d * b->jitter * carp_rand_double(rng));
  return d;
}

void carp_backoff_reset(struct carp_backoff *b)
{
  b->attempt = 0;
}

void carp_retry_init(struct carp_retry *r, uint64_t base_ms, uint64_t cap_ms)
{
  carp_backoff_init(&r->backoff, base_ms, cap_ms, 2.0, 0.5);
  r->next_ms = 0;
  r->failures = 0;
  r->last_delay = 0;
}

static uint64_t retry_after(struct carp_retry *r, int64_t now_ms, uint64_t d)
{
  if (r->failures < UINT32_MAX)
    r->failures++;
  r->last_delay = d;
  r->next_ms = now_ms + (int64_t)d;
  return d;
}

uint64_t carp_retry_fail(struct carp_retry *r, int64_t now_ms)
{
  return retry_after(r, now_ms, carp_backoff_next(&r->backoff));
}

uint64_t carp_retry_fail_permanent(struct carp_retry *r, int64_t now_ms,
                                   uint64_t permanent_ms)
{
  uint64_t d = carp_backoff_next(&r->backoff);
  if (d < permanent_ms) {
    /* Jitter still spreads many objects failing together. */
    struct carp_rand *rng =
        r->backoff.rng ? r->backoff.rng : carp_rand_global();
    d = permanent_ms +
        (uint64_t)((double)permanent_ms * 0.25 * carp_rand_double(rng));
  }
  return retry_after(r, now_ms, d);
}

uint64_t carp_retry_wait(const struct carp_retry *r, int64_t now_ms)
{
  return r->next_ms > now_ms ? (uint64_t)(r->next_ms - now_ms) : 0;
}

void carp_retry_reset(struct carp_retry *r)
{
  carp_backoff_reset(&r->backoff);
  r->next_ms = 0;
  r->failures = 0;
  r->last_delay = 0;
}
