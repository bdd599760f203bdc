/* object.c: interned key/value sets and the metadata every cached object
 * shares. Sets are interned by their canonical bytes ("k\0v\0..." with keys
 * sorted), so two pods with equal labels point at one set. */
#include "carpenter/object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/map.h"
#include "carpenter/timeutil.h"

static struct carp_map sets;

static int cmp_kv(const void *a, const void *b)
{
  const struct carp_kv *x = a, *y = b;
  return strcmp(x->key, y->key);
}

/* Takes ownership of the references held by kv[0..n). */
static const struct carp_kvset *intern_set(struct carp_kv *kv, size_t n)
{
  struct carp_buf canon;
  struct carp_kvset *s;
  size_t i, w = 0;

  if (n == 0)
    return NULL;
  qsort(kv, n, sizeof(*kv), cmp_kv);
  /* Duplicate keys: the later one (in input order after a stable pass is
   * not guaranteed by qsort) is not expected from JSON objects; keep one. */
  for (i = 0; i < n; i++) {
    if (w > 0 && kv[w - 1].key == kv[i].key) {
      carp_intern_release(kv[w - 1].key);
      carp_intern_release(kv[w - 1].value);
      kv[w - 1] = kv[i];
      continue;
    }
    kv[w++] = kv[i];
  }
  n = w;
  carp_buf_init(&canon, CARP_BUF_UNLIMITED);
  for (i = 0; i < n; i++) {
    carp_buf_append(&canon, kv[i].key, carp_intern_len(kv[i].key) + 1);
    carp_buf_append(&canon, kv[i].value, carp_intern_len(kv[i].value) + 1);
  }
  s = carp_map_get(&sets, canon.ptr, canon.len);
  if (s) {
    s->refs++;
    for (i = 0; i < n; i++) {
      carp_intern_release(kv[i].key);
      carp_intern_release(kv[i].value);
    }
    carp_buf_free(&canon);
    return s;
  }
  s = carp_malloc(sizeof(*s) + n * sizeof(struct carp_kv));
  s->refs = 1;
  s->n = (uint32_t)n;
  s->canon_len = canon.len;
  s->canon = carp_buf_steal(&canon, NULL);
  memcpy(s->kv, kv, n * sizeof(*kv));
  carp_map_put(&sets, s->canon, s->canon_len, s);
  return s;
}

const struct carp_kvset *carp_kvset_make(const struct carp_kv *kv, size_t n)
{
  struct carp_kv *copy = carp_calloc(n ? n : 1, sizeof(*copy));
  const struct carp_kvset *s;
  size_t i;
  for (i = 0; i < n; i++) {
    copy[i].key = carp_interns(kv[i].key);
    copy[i].value = carp_interns(kv[i].value ? kv[i].value : "");
  }
  s = intern_set(copy, n);
  carp_free(copy);
  return s;
}

int carp_kvset_from_object(yajl_val obj, int (*keep)(const char *key),
                           const struct carp_kvset **out)
{
  struct carp_kv *kv;
  size_t i, n = 0;
  *out = NULL;
  if (!obj || YAJL_IS_NULL(obj))
    return 0;
  if (!YAJL_IS_OBJECT(obj))
    return CARP_EPARSE;
  kv = carp_calloc(obj->u.object.len ? obj->u.object.len : 1, sizeof(*kv));
  for (i = 0; i < obj->u.object.len; i++) {
    yajl_val v = obj->u.object.values[i];
    const char *k = obj->u.object.keys[i];
    if (!YAJL_IS_STRING(v)) {
      size_t j;
      for (j = 0; j < n; j++) {
        carp_intern_release(kv[j].key);
        carp_intern_release(kv[j].value);
      }
      carp_free(kv);
      return CARP_EPARSE;
    }
    if (keep && !keep(k))
      continue;
    kv[n].key = carp_interns(k);
    kv[n].value = carp_interns(v->u.string);
    n++;
  }
  *out = intern_set(kv, n);
  carp_free(kv);
  return 0;
}

int carp_kvset_from_array(yajl_val arr, const struct carp_kvset **out)
{
  struct carp_kv *kv;
  size_t i, n;
  *out = NULL;
  if (!arr || YAJL_IS_NULL(arr))
    return 0;
  if (!YAJL_IS_ARRAY(arr))
    return CARP_EPARSE;
  n = arr->u.array.len;
  for (i = 0; i < n; i++)
    if (!YAJL_IS_STRING(arr->u.array.values[i]))
      return CARP_EPARSE;
  kv = carp_calloc(n ? n : 1, sizeof(*kv));
  for (i = 0; i < n; i++) {
    kv[i].key = carp_interns(arr->u.array.values[i]->u.string);
    kv[i].value = carp_interns("");
  }
  *out = intern_set(kv, n);
  carp_free(kv);
  return 0;
}

const struct carp_kvset *carp_kvset_ref(const struct carp_kvset *s)
{
  if (s)
    ((struct carp_kvset *)s)->refs++;
  return s;
}

void carp_kvset_release(const struct carp_kvset *cs)
{
  struct carp_kvset *s = (struct carp_kvset *)cs;
  uint32_t i;
  if (!s || --s->refs > 0)
    return;
  carp_map_del(&sets, s->canon, s->canon_len);
  for (i = 0; i < s->n; i++) {
    carp_intern_release(s->kv[i].key);
    carp_intern_release(s->kv[i].value);
  }
  carp_free(s->canon);
  carp_free(s);
  if (sets.len == 0)
    carp_map_free(&sets);
}

const char *carp_kvset_get(const struct carp_kvset *s, const char *key)
{
  size_t lo = 0, hi;
  if (!s)
    return NULL;
  hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(s->kv[mid].key, key);
    if (c == 0)
      return s->kv[mid].value;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

int carp_kvset_has(const struct carp_kvset *s, const char *key)
{
  return carp_kvset_get(s, key) != NULL;
}

size_t carp_kvset_len(const struct carp_kvset *s)
{
  return s ? s->n : 0;
}

size_t carp_kvset_count(void)
{
  return sets.len;
}

int carp_json_time(yajl_val v, int64_t *epoch_ms, const char *field)
{
  const char *s = carp_json_str(v, field, NULL);
  *epoch_ms = 0;
  if (!s)
    return carp_json_get(v, field, NULL) &&
                   !YAJL_IS_NULL(carp_json_get(v, field, NULL))
               ? CARP_EPARSE
               : 0;
  return carp_time_parse_rfc3339(s, epoch_ms);
}

static int meta_error(char **err, const char *field)
{
  if (err) {
    struct carp_buf b;
    carp_buf_init(&b, 512);
    carp_buf_printf(&b, "metadata.%s: invalid", field);
    *err = carp_buf_steal(&b, NULL);
  }
  return CARP_EPARSE;
}

static void decode_owner(yajl_val refs, struct carp_owner *o)
{
  size_t i, pick = 0;
  int found = 0;
  if (!YAJL_IS_ARRAY(refs) || refs->u.array.len == 0)
    return;
  for (i = 0; i < refs->u.array.len && !found; i++) {
    int ctl = 0;
    if (carp_json_bool(refs->u.array.values[i], &ctl, "controller", NULL) ==
            0 &&
        ctl) {
      pick = i;
      found = 1;
    }
  }
  {
    yajl_val r = refs->u.array.values[pick];
    const char *kind = carp_json_str(r, "kind", NULL);
    const char *name = carp_json_str(r, "name", NULL);
    if (!kind || !name)
      return;
    o->api_version = carp_interns(carp_json_str(r, "apiVersion", NULL));
    o->kind = carp_interns(kind);
    o->name = carp_interns(name);
    o->uid = carp_interns(carp_json_str(r, "uid", NULL));
    o->controller = found;
  }
}

int carp_objmeta_decode(yajl_val obj, int (*keep_annotation)(const char *key),
                        struct carp_objmeta *m, char **err)
{
  yajl_val meta = carp_json_obj(obj, "metadata", NULL);
  const char *name, *uid, *rv, *ns;
  struct carp_buf strs;
  int64_t gen = 0;

  memset(m, 0, sizeof(*m));
  m->refs = 1;
  if (err)
    *err = NULL;
  if (!meta)
    return meta_error(err, "(missing)");
  name = carp_json_str(meta, "name", NULL);
  if (!name || !*name)
    return meta_error(err, "name");
  uid = carp_json_str(meta, "uid", NULL);
  rv = carp_json_str(meta, "resourceVersion", NULL);
  ns = carp_json_str(meta, "namespace", NULL);
  if (carp_json_get(meta, "generation", NULL) &&
      carp_json_int(meta, &gen, "generation", NULL))
    return meta_error(err, "generation");
  m->generation = gen;
  if (carp_json_time(meta, &m->creation_ms, "creationTimestamp"))
    return meta_error(err, "creationTimestamp");
  if (carp_json_time(meta, &m->deletion_ms, "deletionTimestamp"))
    return meta_error(err, "deletionTimestamp");
  if (carp_kvset_from_object(carp_json_get(meta, "labels", NULL), NULL,
                             &m->labels))
    return meta_error(err, "labels");
  if (carp_kvset_from_object(carp_json_get(meta, "annotations", NULL),
                             keep_annotation, &m->annotations)) {
    carp_objmeta_cleanup(m);
    return meta_error(err, "annotations");
  }
  if (carp_kvset_from_array(carp_json_get(meta, "finalizers", NULL),
                            &m->finalizers)) {
    carp_objmeta_cleanup(m);
    return meta_error(err, "finalizers");
  }
  decode_owner(carp_json_get(meta, "ownerReferences", NULL), &m->owner);
  m->namespace = ns && *ns ? carp_interns(ns) : NULL;

  carp_buf_init(&strs, CARP_BUF_UNLIMITED);
  if (m->namespace) {
    carp_buf_puts(&strs, m->namespace);
    carp_buf_putc(&strs, '/');
  }
  carp_buf_append(&strs, name, strlen(name) + 1);
  carp_buf_append(&strs, uid ? uid : "", (uid ? strlen(uid) : 0) + 1);
  carp_buf_append(&strs, rv ? rv : "", (rv ? strlen(rv) : 0) + 1);
  m->strings = carp_buf_steal(&strs, NULL);
  m->key = m->strings;
  m->name = m->key + (m->namespace ? strlen(m->namespace) + 1 : 0);
  m->uid = m->name + strlen(m->name) + 1;
  m->resource_version = m->uid + strlen(m->uid) + 1;
  return 0;
}

void carp_objmeta_cleanup(struct carp_objmeta *m)
{
  carp_kvset_release(m->labels);
  carp_kvset_release(m->annotations);
  carp_kvset_release(m->finalizers);
  carp_intern_release(m->namespace);
  carp_intern_release(m->owner.api_version);
  carp_intern_release(m->owner.kind);
  carp_intern_release(m->owner.name);
  carp_intern_release(m->owner.uid);
  carp_free(m->strings);
  m->labels = m->annotations = m->finalizers = NULL;
  m->namespace = NULL;
  m->strings = NULL;
  memset(&m->owner, 0, sizeof(m->owner));
}

struct carp_objmeta *carp_obj_ref(struct carp_objmeta *m)
{
  if (m)
    m->refs++;
  return m;
}

void carp_obj_unref(struct carp_objmeta *m)
{
  if (!m || --m->refs > 0)
    return;
  m->kind->free(m);
}
