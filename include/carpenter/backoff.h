/* Exponential backoff with jitter: delay n is base * factor^n, capped, then
 * shortened by a random part of up to jitter * delay so that many clients
 * failing together do not retry together. */
#ifndef CARP_BACKOFF_H
#define CARP_BACKOFF_H

#include <stdint.h>

#include "carpenter/rand.h"

struct carp_backoff {
  uint64_t base_ms;
  uint64_t cap_ms;
  double factor; /* >= 1 */
  double jitter; /* in [0, 1] */
  unsigned attempt;
  struct carp_rand *rng; /* NULL: the global generator */
};

void carp_backoff_init(struct carp_backoff *b, uint64_t base_ms,
                       uint64_t cap_ms, double factor, double jitter);
/* The next delay; each call counts one more failure. */
uint64_t carp_backoff_next(struct carp_backoff *b);
/* The delay before jitter for attempt n, without changing state. */
uint64_t carp_backoff_peek(const struct carp_backoff *b, unsigned n);
void carp_backoff_reset(struct carp_backoff *b);

#endif
