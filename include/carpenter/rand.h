/* Module core (internal/core). Pseudo-random numbers for jitter and generated
 * names (xoshiro256**), seeded from the kernel. Not for secrets. Tests seed it
 * for repeatable results. */
#ifndef CARP_RAND_H
#define CARP_RAND_H

#include <stdint.h>

struct carp_rand {
  uint64_t s[4];
};

void carp_rand_seed(struct carp_rand *r, uint64_t seed);
/* Seeds from getrandom(2). */
void carp_rand_seed_random(struct carp_rand *r);
uint64_t carp_rand_u64(struct carp_rand *r);
/* Uniform in [0, n); n > 0. */
uint64_t carp_rand_below(struct carp_rand *r, uint64_t n);
/* Uniform in [0, 1). */
double carp_rand_double(struct carp_rand *r);

/* A process-wide generator, seeded on first use. */
struct carp_rand *carp_rand_global(void);

#endif
