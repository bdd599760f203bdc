/* arena.c: chunked bump allocation. Chunks grow geometrically up to 1 MiB;
 * a request larger than a chunk gets a chunk of its own. */
#include "carpenter/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "carpenter/alloc.h"

struct carp_arena_chunk {
  struct carp_arena_chunk *next;
  size_t size;
  size_t off;
  alignas(max_align_t) unsigned char data[];
};

#define ALIGN     (alignof(max_align_t))
#define MIN_CHUNK 4096
#define MAX_CHUNK (1024 * 1024)

void carp_arena_init(struct carp_arena *a)
{
  a->head = NULL;
  a->used = 0;
}

void *carp_arena_alloc(struct carp_arena *a, size_t size)
{
  struct carp_arena_chunk *c = a->head;
  size_t need = (size + ALIGN - 1) & ~(ALIGN - 1);
  void *p;
  if (need == 0)
    need = ALIGN;
  if (!c || c->size - c->off < need) {
    size_t csize = c ? c->size * 2 : MIN_CHUNK;
    if (csize > MAX_CHUNK)
      csize = MAX_CHUNK;
    if (csize < need)
      csize = need;
    c = carp_malloc(sizeof(*c) + csize);
    c->size = csize;
    c->off = 0;
    c->next = a->head;
    a->head = c;
  }
  p = c->data + c->off;
  c->off += need;
  a->used += need;
  memset(p, 0, size);
  return p;
}

void *carp_arena_array(struct carp_arena *a, size_t n, size_t size)
{
  if (size && n > SIZE_MAX / size)
    return carp_arena_alloc(a, SIZE_MAX); /* aborts: out of memory */
  return carp_arena_alloc(a, n * size);
}

char *carp_arena_strdup(struct carp_arena *a, const char *s)
{
  size_t n;
  char *p;
  if (!s)
    return NULL;
  n = strlen(s);
  p = carp_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  return p;
}

void carp_arena_free(struct carp_arena *a)
{
  struct carp_arena_chunk *c = a->head;
  while (c) {
    struct carp_arena_chunk *next = c->next;
    carp_free(c);
    c = next;
  }
  a->head = NULL;
  a->used = 0;
}
