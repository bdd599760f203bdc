/* alloc.c: the only file that calls malloc and free directly (checksrc.sh
 * enforces it). Allocation failure aborts; see include/carpenter/alloc.h. */
#include "carpenter/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t size)
{
  /* No allocation and no logger here: write the line and stop. */
  fprintf(stderr,
          "{\"level\":\"FATAL\",\"logger\":\"alloc\","
          "\"message\":\"out of memory\",\"bytes\":%zu}\n",
          size);
  abort();
}

void *carp_malloc(size_t size)
{
  void *p = malloc(size ? size : 1);
  if (!p)
    oom(size);
  return p;
}

void *carp_calloc(size_t n, size_t size)
{
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    oom(n * size);
  return p;
}

void *carp_realloc(void *ptr, size_t size)
{
  void *p = realloc(ptr, size ? size : 1);
  if (!p)
    oom(size);
  return p;
}

void *carp_reallocarray(void *ptr, size_t n, size_t size)
{
  if (size && n > SIZE_MAX / size)
    oom(SIZE_MAX);
  return carp_realloc(ptr, n * size);
}

void carp_free(void *ptr)
{
  free(ptr);
}

char *carp_strdup(const char *s)
{
  return s ? carp_strndup(s, strlen(s)) : NULL;
}

char *carp_strndup(const char *s, size_t n)
{
  char *p;
  if (!s)
    return NULL;
  p = carp_malloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}
