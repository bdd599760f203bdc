/* arena.c: the solve's memory and its integer hash map.
 *
 * A solve allocates many small things (requirement values, memoised
 * bitsets, messages) that all die together, so they come from a bump arena
 * freed in one go. The map from uint64 to uint64 (open addressing, linear
 * probing, no deletion) backs every memo table on the hot path; it is much
 * cheaper than the string-keyed carp_map for integer keys. */
#include <string.h>

#include "carpenter/alloc.h"
#include "schd_int.h"

#define CHUNK_SIZE (64 * 1024)

struct schd_chunk {
  struct schd_chunk *next;
  size_t size;
  _Alignas(16) char data[];
};

void schd_arena_init(struct schd_arena *a)
{
  memset(a, 0, sizeof(*a));
}

void schd_arena_free(struct schd_arena *a)
{
  struct schd_chunk *c = a->head, *n;
  while (c) {
    n = c->next;
    carp_free(c);
    c = n;
  }
  memset(a, 0, sizeof(*a));
}

void *schd_alloc(struct schd_arena *a, size_t n)
{
  void *p;
  n = (n + 15) & ~(size_t)15;
  if (n == 0)
    n = 16;
  if (n > a->left) {
    size_t size = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
    struct schd_chunk *c = carp_malloc(sizeof(*c) + size);
    c->size = size;
    a->bytes += sizeof(*c) + size;
    if (size == n && a->head) {
      /* A big block: keep the current chunk for small ones. */
      c->next = a->head->next;
      a->head->next = c;
      return c->data;
    }
    c->next = a->head;
    a->head = c;
    a->cur = c->data;
    a->left = size;
  }
  p = a->cur;
  a->cur += n;
  a->left -= n;
  return p;
}

void *schd_zalloc(struct schd_arena *a, size_t n)
{
  void *p = schd_alloc(a, n);
  memset(p, 0, n);
  return p;
}

void *schd_memdup(struct schd_arena *a, const void *p, size_t n)
{
  void *q = schd_alloc(a, n);
  if (n)
    memcpy(q, p, n);
  return q;
}

char *schd_strdup(struct schd_arena *a, const char *s)
{
  size_t n = s ? strlen(s) : 0;
  char *q = schd_alloc(a, n + 1);
  if (n)
    memcpy(q, s, n);
  q[n] = '\0';
  return q;
}

/* ---- integer map ---- */

#define EMPTY UINT64_MAX

void schd_map_init(struct schd_map *m)
{
  memset(m, 0, sizeof(*m));
}

void schd_map_free(struct schd_map *m)
{
  carp_free(m->keys);
  carp_free(m->vals);
  memset(m, 0, sizeof(*m));
}

size_t schd_map_bytes(const struct schd_map *m)
{
  return m->cap * 2 * sizeof(uint64_t);
}

static inline size_t slot_of(uint64_t key, size_t cap)
{
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return (size_t)(h & (cap - 1));
}

int schd_map_get(const struct schd_map *m, uint64_t key, uint64_t *val)
{
  size_t i;
  if (key == EMPTY)
    key--; /* the one reserved key aliases its neighbour */
  if (!m->cap)
    return 0;
  i = slot_of(key, m->cap);
  for (;;) {
    uint64_t k = m->keys[i];
    if (k == key) {
      *val = m->vals[i];
      return 1;
    }
    if (k == EMPTY)
      return 0;
    i = (i + 1) & (m->cap - 1);
  }
}

static void map_grow(struct schd_map *m)
{
  size_t ncap = m->cap ? m->cap * 2 : 16, i;
  uint64_t *ok = m->keys, *ov = m->vals;
  size_t ocap = m->cap;
  m->keys = carp_malloc(ncap * sizeof(uint64_t));
  m->vals = carp_malloc(ncap * sizeof(uint64_t));
  memset(m->keys, 0xff, ncap * sizeof(uint64_t));
  m->cap = ncap;
  for (i = 0; i < ocap; i++) {
    if (ok[i] != EMPTY) {
      size_t j = slot_of(ok[i], ncap);
      while (m->keys[j] != EMPTY)
        j = (j + 1) & (ncap - 1);
      m->keys[j] = ok[i];
      m->vals[j] = ov[i];
    }
  }
  carp_free(ok);
  carp_free(ov);
}

void schd_map_put(struct schd_map *m, uint64_t key, uint64_t val)
{
  size_t i;
  if (key == EMPTY)
    key--;
  if ((m->len + 1) * 4 >= m->cap * 3)
    map_grow(m);
  i = slot_of(key, m->cap);
  for (;;) {
    if (m->keys[i] == key) {
      m->vals[i] = val;
      return;
    }
    if (m->keys[i] == EMPTY) {
      m->keys[i] = key;
      m->vals[i] = val;
      m->len++;
      return;
    }
    i = (i + 1) & (m->cap - 1);
  }
}

uint64_t schd_mix(uint64_t h, uint64_t v)
{
  __uint128_t r =
      (__uint128_t)(h ^ 0xa0761d6478bd642full) * (v ^ 0xe7037ed1a0b428dbull);
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t schd_hash_str(uint64_t h, const char *s)
{
  uint64_t v;
  size_t n;
  if (!s)
    s = "";
  n = strlen(s);
  while (n >= 8) {
    memcpy(&v, s, 8);
    h = schd_mix(h, v);
    s += 8;
    n -= 8;
  }
  v = 0;
  memcpy(&v, s, n);
  return schd_mix(h, v ^ ((uint64_t)n << 56) ^ 0x5bd1e995u);
}

uint64_t schd_hash_bytes(uint64_t h, const void *p, size_t n)
{
  const unsigned char *c = p;
  uint64_t a, b;
  h ^= (uint64_t)n * 0x9E3779B97F4A7C15ull;
  while (n >= 16) {
    memcpy(&a, c, 8);
    memcpy(&b, c + 8, 8);
    h = schd_mix(a ^ h, b ^ 0x8ebc6af09c88c6e3ull);
    c += 16;
    n -= 16;
  }
  a = b = 0;
  if (n > 8) {
    memcpy(&a, c, 8);
    memcpy(&b, c + 8, n - 8);
  } else if (n) {
    memcpy(&a, c, n);
  }
  return schd_mix(a ^ h, b ^ ((uint64_t)n << 56) ^ 0x589965cc75374cc3ull);
}
