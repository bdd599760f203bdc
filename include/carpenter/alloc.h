/* Module core (internal/core). Allocation wrappers. Every allocation in
 * Carpenter goes through these.
 *
 * Running out of memory is fatal, as in Redis: the process logs and aborts
 * and Kubernetes restarts it. A controller that cannot allocate cannot make
 * safe progress, and checking every small allocation would hide the real
 * error paths (remote input, API answers) in noise. */
#ifndef CARP_ALLOC_H
#define CARP_ALLOC_H

#include <stddef.h>

void *carp_malloc(size_t size);
void *carp_calloc(size_t n, size_t size);
void *carp_realloc(void *ptr, size_t size);
/* Grows an array of n elements of size each; aborts on overflow. */
void *carp_reallocarray(void *ptr, size_t n, size_t size);
void carp_free(void *ptr);
char *carp_strdup(const char *s);
char *carp_strndup(const char *s, size_t n);

/* Frees *pp and sets it to NULL, so no struct keeps a dangling pointer. */
#define CARP_FREE(pp)                                                          \
  do {                                                                         \
    carp_free(*(pp));                                                          \
    *(pp) = NULL;                                                              \
  } while (0)

#define CARP_NEW(type) ((type *)carp_calloc(1, sizeof(type)))

/* container_of, as in libuv and Linux: from a member back to its owner. */
#define carp_container_of(ptr, type, member)                                   \
  ((type *)((char *)(ptr)-offsetof(type, member)))

#define CARP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
