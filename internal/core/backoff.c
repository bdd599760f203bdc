/* backoff.c: capped exponential backoff with downward jitter, so a delay is
 * never longer than the cap. */
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
