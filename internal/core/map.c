/* map.c: open-addressing hash map with linear probing and tombstones.
 * The table doubles when live plus deleted slots reach 3/4 of it and is
 * rebuilt at the same size when tombstones dominate, so lookups stay short
 * under the churn of a watch cache. Hashes are wyhash-style 64-bit mixes;
 * values 0 and 1 are reserved for empty and deleted slots. */
#include "carpenter/map.h"

#include <string.h>

#include "carpenter/alloc.h"

#define SLOT_EMPTY   0
#define SLOT_DELETED 1

void carp_map_init(struct carp_map *m)
{
  m->slots = NULL;
  m->cap = 0;
  m->len = 0;
  m->used = 0;
}

void carp_map_free(struct carp_map *m)
{
  CARP_FREE(&m->slots);
  m->cap = m->len = m->used = 0;
}

static uint64_t read64(const unsigned char *p)
{
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
  __uint128_t r = (__uint128_t)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t carp_map_hash(const char *key, size_t klen)
{
  const unsigned char *p = (const unsigned char *)key;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ klen;
  size_t n = klen;
  while (n >= 8) {
    h = mix(h ^ read64(p), 0xbf58476d1ce4e5b9ull);
    p += 8;
    n -= 8;
  }
  if (n) {
    uint64_t tail = 0;
    memcpy(&tail, p, n);
    h = mix(h ^ tail, 0x94d049bb133111ebull);
  }
  h = mix(h, 0x2545f4914f6cdd1dull);
  return h < 2 ? h + 2 : h;
}

static struct carp_map_slot *find(const struct carp_map *m, uint64_t h,
                                  const char *key, size_t klen)
{
  size_t mask, i;
  if (!m->cap)
    return NULL;
  mask = m->cap - 1;
  for (i = h & mask;; i = (i + 1) & mask) {
    struct carp_map_slot *s = &m->slots[i];
    if (s->hash == SLOT_EMPTY)
      return NULL;
    if (s->hash == h && s->klen == klen && memcmp(s->key, key, klen) == 0)
      return s;
  }
}

static void rehash(struct carp_map *m, size_t cap)
{
  struct carp_map_slot *old = m->slots;
  size_t oldcap = m->cap, i;
  m->slots = carp_calloc(cap, sizeof(*m->slots));
  m->cap = cap;
  m->used = m->len;
  for (i = 0; i < oldcap; i++) {
    size_t j;
    if (old[i].hash < 2)
      continue;
    for (j = old[i].hash & (cap - 1); m->slots[j].hash != SLOT_EMPTY;
         j = (j + 1) & (cap - 1))
      ;
    m->slots[j] = old[i];
  }
  carp_free(old);
}

void *carp_map_get(const struct carp_map *m, const char *key, size_t klen)
{
  struct carp_map_slot *s = find(m, carp_map_hash(key, klen), key, klen);
  return s ? s->value : NULL;
}

void *carp_map_put(struct carp_map *m, const char *key, size_t klen,
                   void *value)
{
  uint64_t h = carp_map_hash(key, klen);
  struct carp_map_slot *s = find(m, h, key, klen);
  size_t i, mask;
  if (s) {
    void *old = s->value;
    s->key = key; /* the new owner's copy of the same bytes */
    s->value = value;
    return old;
  }
  if ((m->used + 1) * 4 >= m->cap * 3) {
    size_t cap = m->cap ? m->cap : 8;
    if ((m->len + 1) * 2 >= cap)
      cap *= 2;
    rehash(m, cap);
  }
  mask = m->cap - 1;
  for (i = h & mask; m->slots[i].hash >= 2; i = (i + 1) & mask)
    ;
  if (m->slots[i].hash == SLOT_EMPTY)
    m->used++;
  m->slots[i].hash = h;
  m->slots[i].key = key;
  m->slots[i].klen = klen;
  m->slots[i].value = value;
  m->len++;
  return NULL;
}

void *carp_map_del(struct carp_map *m, const char *key, size_t klen)
{
  struct carp_map_slot *s = find(m, carp_map_hash(key, klen), key, klen);
  void *value;
  if (!s)
    return NULL;
  value = s->value;
  s->hash = SLOT_DELETED;
  s->key = NULL;
  s->value = NULL;
  m->len--;
  return value;
}

void carp_map_iter_init(struct carp_map_iter *it)
{
  it->pos = 0;
}

int carp_map_next(const struct carp_map *m, struct carp_map_iter *it,
                  const char **key, size_t *klen, void **value)
{
  while (it->pos < m->cap) {
    const struct carp_map_slot *s = &m->slots[it->pos++];
    if (s->hash < 2)
      continue;
    if (key)
      *key = s->key;
    if (klen)
      *klen = s->klen;
    if (value)
      *value = s->value;
    return 1;
  }
  return 0;
}

void *carp_map_gets(const struct carp_map *m, const char *key)
{
  return carp_map_get(m, key, strlen(key));
}

void *carp_map_puts(struct carp_map *m, const char *key, void *value)
{
  return carp_map_put(m, key, strlen(key), value);
}

void *carp_map_dels(struct carp_map *m, const char *key)
{
  return carp_map_del(m, key, strlen(key));
}
