/* Module core (internal/core). Exponential backoff with jitter: delay n is base
 * * factor^n, capped, then shortened by a random part of up to jitter * delay
 * so that many clients failing together do not retry together. */
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

/* The retry state of one object (a NodeClaim's launch, a pod's eviction):
 * when it may be tried again, kept across reconciles so that a step that
 * ends in success for the work queue (a status write) cannot reset it.
 * Errors that retrying cannot fix back off to at least permanent_ms. */
struct carp_retry {
  struct carp_backoff backoff;
  int64_t next_ms;     /* not before this time (any clock, ms) */
  unsigned failures;   /* in a row */
  uint64_t last_delay; /* the delay given by the last failure */
};

void carp_retry_init(struct carp_retry *r, uint64_t base_ms, uint64_t cap_ms);
/* Counts a failure at now_ms; returns the delay before the next try. */
uint64_t carp_retry_fail(struct carp_retry *r, int64_t now_ms);
/* A failure that a retry cannot fix (a malformed request, an API the
 * server does not have): the delay is at least permanent_ms. */
uint64_t carp_retry_fail_permanent(struct carp_retry *r, int64_t now_ms,
                                   uint64_t permanent_ms);
/* Milliseconds left before the next try may start (0: now). */
uint64_t carp_retry_wait(const struct carp_retry *r, int64_t now_ms);
void carp_retry_reset(struct carp_retry *r);

#endif
