/* rand.c: xoshiro256** (Blackman and Vigna), seeded through splitmix64. */
#include "carpenter/rand.h"

#include <sys/random.h>
#include <time.h>

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void carp_rand_seed(struct carp_rand *r, uint64_t seed)
{
  int i;
  for (i = 0; i < 4; i++)
    r->s[i] = splitmix64(&seed);
}

void carp_rand_seed_random(struct carp_rand *r)
{
  uint64_t seed;
  if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
  }
  carp_rand_seed(r, seed);
}

static uint64_t rotl(uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

uint64_t carp_rand_u64(struct carp_rand *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t carp_rand_below(struct carp_rand *r, uint64_t n)
{
  /* Rejection sampling keeps the result unbiased. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
  do {
    x = carp_rand_u64(r);
  } while (x >= limit);
  return x % n;
}

double carp_rand_double(struct carp_rand *r)
{
  return (double)(carp_rand_u64(r) >> 11) * 0x1.0p-53;
}

struct carp_rand *carp_rand_global(void)
{
  static struct carp_rand global;
  static int seeded;
  if (!seeded) {
    carp_rand_seed_random(&global);
    seeded = 1;
  }
  return &global;
}
