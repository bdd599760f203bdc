/* store.c: the cache behind an informer.
 *
 * Objects sit in a hash map keyed by their own key string (borrowed from
 * the object). Each secondary index maps a value to a bucket, an array of
 * objects; an object remembers its position in its bucket
 * (objmeta.store_pos), so removal is a swap with the bucket's last
 * element, O(1), however many pods a node runs. */
#include "carpenter/store.h"

#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/map.h"

struct bucket {
  char *value; /* the map key */
  struct carp_objmeta **objs;
  size_t n, cap;
};

struct carp_store {
  const struct carp_kind *kind;
  struct carp_map objects;
  carp_store_index_fn index_fn[CARP_STORE_MAX_INDEXES];
  struct carp_map index[CARP_STORE_MAX_INDEXES];
  int nindexes;
};

struct carp_store *carp_store_new(const struct carp_kind *kind)
{
  struct carp_store *s = CARP_NEW(struct carp_store);
  int i;
  s->kind = kind;
  carp_map_init(&s->objects);
  for (i = 0; i < CARP_STORE_MAX_INDEXES; i++)
    carp_map_init(&s->index[i]);
  return s;
}

int carp_store_add_index(struct carp_store *s, carp_store_index_fn fn)
{
  if (s->nindexes == CARP_STORE_MAX_INDEXES || s->objects.len)
    return -1;
  s->index_fn[s->nindexes] = fn;
  return s->nindexes++;
}

static void index_add(struct carp_store *s, int i, struct carp_objmeta *obj)
{
  const char *v = s->index_fn[i](obj);
  struct bucket *b;
  if (!v)
    return;
  b = carp_map_gets(&s->index[i], v);
  if (!b) {
    b = CARP_NEW(struct bucket);
    b->value = carp_strdup(v);
    carp_map_puts(&s->index[i], b->value, b);
  }
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 4;
    b->objs = carp_reallocarray(b->objs, b->cap, sizeof(*b->objs));
  }
  obj->store_pos[i] = (uint32_t)b->n;
  b->objs[b->n++] = obj;
}

static void index_del(struct carp_store *s, int i, struct carp_objmeta *obj)
{
  const char *v = s->index_fn[i](obj);
  struct bucket *b;
  uint32_t pos;
  if (!v)
    return;
  b = carp_map_gets(&s->index[i], v);
  if (!b)
    return;
  pos = obj->store_pos[i];
  b->objs[pos] = b->objs[--b->n];
  b->objs[pos]->store_pos[i] = pos;
  if (b->n == 0) {
    carp_map_dels(&s->index[i], b->value);
    carp_free(b->objs);
    carp_free(b->value);
    carp_free(b);
  }
}

struct carp_objmeta *carp_store_put(struct carp_store *s,
                                    struct carp_objmeta *obj)
{
  struct carp_objmeta *old = carp_map_gets(&s->objects, obj->key);
  int i;
  if (old)
    for (i = 0; i < s->nindexes; i++)
      index_del(s, i, old);
  carp_map_puts(&s->objects, obj->key, obj);
  for (i = 0; i < s->nindexes; i++)
    index_add(s, i, obj);
  return old;
}

struct carp_objmeta *carp_store_remove(struct carp_store *s, const char *key)
{
  struct carp_objmeta *obj = carp_map_gets(&s->objects, key);
  int i;
  if (!obj)
    return NULL;
  for (i = 0; i < s->nindexes; i++)
    index_del(s, i, obj);
  carp_map_dels(&s->objects, key);
  return obj;
}

struct carp_objmeta *carp_store_get(const struct carp_store *s, const char *key)
{
  return carp_map_gets(&s->objects, key);
}

size_t carp_store_len(const struct carp_store *s)
{
  return s->objects.len;
}

struct carp_objmeta *const *carp_store_by_index(const struct carp_store *s,
                                                int idx, const char *value,
                                                size_t *n)
{
  struct bucket *b;
  *n = 0;
  if (idx < 0 || idx >= s->nindexes || !value)
    return NULL;
  b = carp_map_gets(&s->index[idx], value);
  if (!b)
    return NULL;
  *n = b->n;
  return b->objs;
}

void carp_store_iter_init(struct carp_store_iter *it)
{
  it->pos = 0;
}

struct carp_objmeta *carp_store_next(const struct carp_store *s,
                                     struct carp_store_iter *it)
{
  struct carp_map_iter mi;
  void *v;
  mi.pos = it->pos;
  if (!carp_map_next(&s->objects, &mi, NULL, NULL, &v))
    return NULL;
  it->pos = mi.pos;
  return v;
}

void carp_store_free(struct carp_store *s)
{
  struct carp_map_iter it;
  void *v;
  int i;
  if (!s)
    return;
  for (i = 0; i < s->nindexes; i++) {
    carp_map_iter_init(&it);
    while (carp_map_next(&s->index[i], &it, NULL, NULL, &v)) {
      struct bucket *b = v;
      carp_free(b->objs);
      carp_free(b->value);
      carp_free(b);
    }
    carp_map_free(&s->index[i]);
  }
  carp_map_iter_init(&it);
  while (carp_map_next(&s->objects, &it, NULL, NULL, &v))
    carp_obj_unref(v);
  carp_map_free(&s->objects);
  carp_free(s);
}
