/* Module core (internal/core). A hash map from byte-string keys to pointers
 * (open addressing, linear probing). Keys are borrowed: the map stores the
 * caller's pointer, which must stay valid and unchanged until the entry is
 * removed. That suits the usual case where the key lives inside the value (an
 * object's name). */
#ifndef CARP_MAP_H
#define CARP_MAP_H

#include <stddef.h>
#include <stdint.h>

struct carp_map_slot {
  uint64_t hash; /* 0: empty, 1: deleted, otherwise the key's hash */
  const char *key;
  size_t klen;
  void *value;
};

struct carp_map {
  struct carp_map_slot *slots;
  size_t cap;  /* power of two, or 0 */
  size_t len;  /* live entries */
  size_t used; /* live + deleted slots */
};

struct carp_map_iter {
  size_t pos;
};

void carp_map_init(struct carp_map *m);
void carp_map_free(struct carp_map *m);
uint64_t carp_map_hash(const char *key, size_t klen);
void *carp_map_get(const struct carp_map *m, const char *key, size_t klen);
/* Inserts or replaces; returns the previous value or NULL. */
void *carp_map_put(struct carp_map *m, const char *key, size_t klen,
                   void *value);
/* Removes; returns the value or NULL when absent. */
void *carp_map_del(struct carp_map *m, const char *key, size_t klen);
/* Iteration: entries must not be added during it; the current one may be
 * deleted. Returns 0 at the end. */
void carp_map_iter_init(struct carp_map_iter *it);
int carp_map_next(const struct carp_map *m, struct carp_map_iter *it,
                  const char **key, size_t *klen, void **value);

/* NUL-terminated key helpers. */
void *carp_map_gets(const struct carp_map *m, const char *key);
void *carp_map_puts(struct carp_map *m, const char *key, void *value);
void *carp_map_dels(struct carp_map *m, const char *key);

#endif
