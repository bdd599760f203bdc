/* Module informer (internal/informer). A store of cached objects of one kind,
 * keyed by "namespace/name" (or "name"), with up to two single-valued secondary
 * indexes such as pods by node name or nodes by provider ID. The store owns one
 * reference to each object it holds. Lookups return borrowed pointers, valid
 * until the store next changes. */
#ifndef CARP_STORE_H
#define CARP_STORE_H

#include <stddef.h>

#include "carpenter/object.h"

#define CARP_STORE_MAX_INDEXES 2

struct carp_store;

/* Returns the index value for obj, or NULL to leave it out of the index.
 * The string must live as long as obj (usually a field of obj). */
typedef const char *(*carp_store_index_fn)(const struct carp_objmeta *obj);

struct carp_store *carp_store_new(const struct carp_kind *kind);
/* Drops every object. */
void carp_store_free(struct carp_store *s);
/* Adds an index before any object is stored; returns its id (0 or 1). */
int carp_store_add_index(struct carp_store *s, carp_store_index_fn fn);

/* Stores obj, taking over the caller's reference. Returns the object it
 * replaced (the caller now owns that reference) or NULL. */
struct carp_objmeta *carp_store_put(struct carp_store *s,
                                    struct carp_objmeta *obj);
/* Removes by key; returns the object (the caller owns the reference). */
struct carp_objmeta *carp_store_remove(struct carp_store *s, const char *key);
struct carp_objmeta *carp_store_get(const struct carp_store *s,
                                    const char *key);
size_t carp_store_len(const struct carp_store *s);

/* Objects whose index idx has value; *n is their number. */
struct carp_objmeta *const *carp_store_by_index(const struct carp_store *s,
                                                int idx, const char *value,
                                                size_t *n);

struct carp_store_iter {
  size_t pos;
};
void carp_store_iter_init(struct carp_store_iter *it);
/* Next object, or NULL at the end. The store must not change meanwhile. */
struct carp_objmeta *carp_store_next(const struct carp_store *s,
                                     struct carp_store_iter *it);

#endif
