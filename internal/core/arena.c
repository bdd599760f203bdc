/* arena.c: chunked bump allocation. Chunks grow geometrically up to 1 MiB;
 * a request larger than a chunk gets a chunk of its own. A reset moves
 * the chunks to a spare list that later chunks are taken from first. */
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
  a->spare = NULL;
  a->used = 0;
}

/* A chunk with room for need bytes: a spare one when it is large enough
 * (else the spare goes), or a new one. */
static struct carp_arena_chunk *new_chunk(struct carp_arena *a, size_t need)
{
  struct carp_arena_chunk *c = a->spare;
  size_t csize = a->head ? a->head->size * 2 : MIN_CHUNK;
  if (c) {
    a->spare = c->next;
    if (c->size >= need)
      goto take;
    carp_free(c);
  }
  if (csize > MAX_CHUNK)
    csize = MAX_CHUNK;
  if (csize < need)
    csize = need;
  c = carp_malloc(sizeof(*c) + csize);
  c->size = csize;
take:
  c->off = 0;
  c->next = a->head;
  a->head = c;
  return c;
}

void *carp_arena_raw(struct carp_arena *a, size_t size)
{
  struct carp_arena_chunk *c = a->head;
  size_t need = (size + ALIGN - 1) & ~(ALIGN - 1);
  void *p;
  if (need == 0)
    need = ALIGN;
  if (!c || c->size - c->off < need)
    c = new_chunk(a, need);
  p = c->data + c->off;
  c->off += need;
  a->used += need;
  return p;
}

void *carp_arena_alloc(struct carp_arena *a, size_t size)
{
  void *p = carp_arena_raw(a, size);
  memset(p, 0, size);
  return p;
}

void carp_arena_reset(struct carp_arena *a)
{
  while (a->head) {
    struct carp_arena_chunk *c = a->head;
    a->head = c->next;
    c->next = a->spare;
    a->spare = c;
  }
  a->used = 0;
}

void *carp_arena_array(struct carp_arena *a, size_t n, size_t size)
{
  if (size && n > SIZE_MAX / size)
    return carp_malloc(SIZE_MAX); /* aborts: out of memory */
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
  carp_arena_reset(a);
  while (a->spare) {
    struct carp_arena_chunk *c = a->spare;
    a->spare = c->next;
    carp_free(c);
  }
}
