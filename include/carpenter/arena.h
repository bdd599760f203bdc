/* Module core (internal/core). A bump allocator for data that lives exactly as
 * long as one piece of work (a scheduling problem built from the caches, say):
 * allocations are carved from large chunks and all freed at once. */
#ifndef CARP_ARENA_H
#define CARP_ARENA_H

#include <stddef.h>

struct carp_arena_chunk;

struct carp_arena {
  struct carp_arena_chunk *head;
  size_t used; /* bytes handed out, for statistics */
};

void carp_arena_init(struct carp_arena *a);
/* Zeroed memory, aligned for any type. */
void *carp_arena_alloc(struct carp_arena *a, size_t size);
void *carp_arena_array(struct carp_arena *a, size_t n, size_t size);
char *carp_arena_strdup(struct carp_arena *a, const char *s);
void carp_arena_free(struct carp_arena *a);

#endif
