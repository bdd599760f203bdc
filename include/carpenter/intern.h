/* Module core (internal/core). Interned strings: one shared, reference-counted
 * copy of each distinct string (label keys and values, namespaces, node names,
 * owner names). A cache of 150,000 pods holds a few thousand distinct such
 * strings, so sharing them is most of what keeps a cached pod small; equal
 * interned strings are equal pointers, so comparisons are free.
 *
 * The returned pointer is an ordinary NUL-terminated string. Each
 * carp_intern() (or carp_intern_ref()) takes a reference that
 * carp_intern_release() gives back; the string is freed with its last
 * reference, so churning values do not accumulate. One thread only. */
#ifndef CARP_INTERN_H
#define CARP_INTERN_H

#include <stddef.h>

const char *carp_intern(const char *s, size_t len);
const char *carp_interns(const char *s); /* NUL-terminated; NULL -> NULL */
const char *carp_intern_ref(const char *interned); /* NULL -> NULL */
void carp_intern_release(const char *interned);    /* NULL is a no-op */
size_t carp_intern_len(const char *interned);
/* Distinct strings alive, and their bytes (for metrics and tests). */
size_t carp_intern_count(void);
size_t carp_intern_bytes(void);

#endif
