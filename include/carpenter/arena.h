/* Module core (internal/core). A bump allocator for data that lives exactly as
 * long as one piece of work (a scheduling problem built from the caches, say):
 * allocations are carved from large chunks and all freed at once - or all
 * dropped at once with the chunks kept for the next piece of the same kind
 * (the trees of a stream's objects, one after the other). */
#ifndef CARP_ARENA_H
#define CARP_ARENA_H

#include <stddef.h>

struct carp_arena_chunk;

struct carp_arena {
  struct carp_arena_chunk *head;
  struct carp_arena_chunk *spare; /* emptied by a reset, to reuse */
  size_t used; /* bytes handed out since init or the last reset */
};

void carp_arena_init(struct carp_arena *a);
/* Zeroed memory, aligned for any type. */
void *carp_arena_alloc(struct carp_arena *a, size_t size);
void *carp_arena_array(struct carp_arena *a, size_t n, size_t size);
char *carp_arena_strdup(struct carp_arena *a, const char *s);
/* Not zeroed: for bytes about to be written (strings). */
void *carp_arena_raw(struct carp_arena *a, size_t size);
/* Drops every allocation and keeps the memory. */
void carp_arena_reset(struct carp_arena *a);
void carp_arena_free(struct carp_arena *a);

#endif
