/* object.c: interned key/value sets and the metadata every cached object
 * shares. Sets are interned by their canonical bytes ("k\0v\0..." with keys
 * sorted), so two pods with equal labels point at one set.
 *
 * Both are decoded from parser events (include/carpenter/jdec.h): the
 * pairs of a set are gathered as bytes and looked up as a whole, so the
 * labels of a pod whose set exists already cost one hash lookup and no
 * allocation; metadata is gathered likewise and checked once the object
 * has ended. The tree functions replay a tree through the same code. */
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

/* ---- interned sets ---- */

/* The set of canon (sorted, no key twice), n pairs: found, or made with
 * each string interned. */
static const struct carp_kvset *set_of(const char *canon, size_t len, size_t n)
{
  struct carp_kvset *s;
  const char *p;
  size_t i;
  if (n == 0)
    return NULL;
  s = carp_map_get(&sets, canon, len);
  if (s) {
    s->refs++;
    return s;
  }
  s = carp_malloc(sizeof(*s) + n * sizeof(struct carp_kv));
  s->refs = 1;
  s->n = (uint32_t)n;
  s->canon_len = len;
  s->canon = carp_malloc(len + 1);
  memcpy(s->canon, canon, len);
  s->canon[len] = '\0';
  for (i = 0, p = s->canon; i < n; i++) {
    size_t kl = strlen(p), vl;
    s->kv[i].key = carp_intern(p, kl);
    p += kl + 1;
    vl = strlen(p);
    s->kv[i].value = carp_intern(p, vl);
    p += vl + 1;
  }
  carp_map_put(&sets, s->canon, s->canon_len, s);
  return s;
}

void carp_kvset_dec_init(struct carp_kvset_dec *k, int array,
                         int (*keep)(const char *key))
{
  memset(k, 0, sizeof(*k));
  k->array = array;
  k->keep = keep;
  carp_buf_init(&k->kv, CARP_BUF_UNLIMITED);
}

void carp_kvset_dec_reset(struct carp_kvset_dec *k)
{
  carp_buf_reset(&k->kv);
  k->n = 0;
  k->bad = 0;
}

void carp_kvset_dec_free(struct carp_kvset_dec *k)
{
  carp_buf_free(&k->kv);
  CARP_FREE(&k->at);
  k->n = k->cap = 0;
}

static void add_pair(struct carp_kvset_dec *k, const char *key, size_t klen,
                     const char *value, size_t vlen)
{
  if (k->n == k->cap) {
    k->cap = k->cap ? k->cap * 2 : 16;
    k->at = carp_reallocarray(k->at, k->cap, sizeof(*k->at));
  }
  k->at[k->n++] = k->kv.len;
  carp_buf_append(&k->kv, key, klen);
  carp_buf_putc(&k->kv, '\0');
  carp_buf_append(&k->kv, value, vlen);
  carp_buf_putc(&k->kv, '\0');
}

static int kvset_member(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct carp_kvset_dec *k = ctx;
  const char *key;
  size_t klen;
  if (v->type == CARP_JEND)
    return 0;
  if (v->type != CARP_JSTRING) {
    k->bad = 1;
    return 0;
  }
  if (k->array) {
    add_pair(k, v->s, v->len, "", 0);
    return 0;
  }
  key = carp_jdec_key(d, &klen);
  if (!k->keep || k->keep(key))
    add_pair(k, key, klen, v->s, v->len);
  return 0;
}

int carp_kvset_dec_value(struct carp_jdec *d, struct carp_kvset_dec *k,
                         const struct carp_jval *v)
{
  if (v->type == CARP_JNULL)
    return 0;
  if (v->type != (k->array ? CARP_JARRAY : CARP_JOBJECT) ||
      carp_jdec_enter(d, kvset_member, k, NULL))
    k->bad = 1;
  return 0;
}

struct pair {
  const char *key; /* NUL-terminated; the value follows */
  size_t len;      /* key and value, both NULs included */
  size_t order;
};

static int cmp_pair(const void *a, const void *b)
{
  const struct pair *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  if (c)
    return c;
  return x->order < y->order ? -1 : x->order > y->order;
}

int carp_kvset_dec_finish(struct carp_kvset_dec *k,
                          const struct carp_kvset **out)
{
  struct pair *pairs;
  struct carp_buf canon;
  size_t i, n = 0;
  int sorted = 1;
  *out = NULL;
  if (k->bad)
    return CARP_EPARSE;
  if (k->n == 0)
    return 0;
  /* The API server writes maps sorted (Go's encoding/json): then the
   * pairs as they came are the canonical bytes. */
  for (i = 1; i < k->n && sorted; i++)
    sorted = strcmp(k->kv.ptr + k->at[i - 1], k->kv.ptr + k->at[i]) < 0;
  if (sorted) {
    *out = set_of(k->kv.ptr, k->kv.len, k->n);
    return 0;
  }
  /* Sorted by key; of a key given twice, the later value. */
  pairs = carp_calloc(k->n, sizeof(*pairs));
  for (i = 0; i < k->n; i++) {
    size_t end = i + 1 < k->n ? k->at[i + 1] : k->kv.len;
    pairs[i].key = k->kv.ptr + k->at[i];
    pairs[i].len = end - k->at[i];
    pairs[i].order = i;
  }
  qsort(pairs, k->n, sizeof(*pairs), cmp_pair);
  carp_buf_init(&canon, CARP_BUF_UNLIMITED);
  for (i = 0; i < k->n; i++) {
    if (i + 1 < k->n && !strcmp(pairs[i].key, pairs[i + 1].key))
      continue;
    carp_buf_append(&canon, pairs[i].key, pairs[i].len);
    n++;
  }
  *out = set_of(canon.ptr, canon.len, n);
  carp_buf_free(&canon);
  carp_free(pairs);
  return 0;
}

const struct carp_kvset *carp_kvset_make(const struct carp_kv *kv, size_t n)
{
  struct carp_kvset_dec k;
  const struct carp_kvset *s;
  size_t i;
  carp_kvset_dec_init(&k, 0, NULL);
  for (i = 0; i < n; i++) {
    const char *v = kv[i].value ? kv[i].value : "";
    add_pair(&k, kv[i].key, strlen(kv[i].key), v, strlen(v));
  }
  carp_kvset_dec_finish(&k, &s);
  carp_kvset_dec_free(&k);
  return s;
}

/* A tree's set: its events through a set decoder. */
static int kvset_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  return carp_kvset_dec_value(d, ctx, v);
}

static int kvset_of_tree(yajl_val v, int array, int (*keep)(const char *key),
                         const struct carp_kvset **out)
{
  struct carp_kvset_dec k;
  int rc;
  *out = NULL;
  if (!v)
    return 0;
  carp_kvset_dec_init(&k, array, keep);
  carp_jdec_tree(v, kvset_root, &k);
  rc = carp_kvset_dec_finish(&k, out);
  carp_kvset_dec_free(&k);
  return rc;
}

int carp_kvset_from_object(yajl_val obj, int (*keep)(const char *key),
                           const struct carp_kvset **out)
{
  return kvset_of_tree(obj, 0, keep, out);
}

int carp_kvset_from_array(yajl_val arr, const struct carp_kvset **out)
{
  return kvset_of_tree(arr, 1, NULL, out);
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

/* ---- metadata ---- */

enum {
  M_NAME = 0,
  M_NAMESPACE,
  M_UID,
  M_RV,
  M_GENERATION,
  M_CREATED,
  M_DELETED,
  M_LABELS,
  M_ANNOTATIONS,
  M_FINALIZERS,
  M_OWNERS,
};

static const char *const meta_keys[] = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    NULL,
};

/* Owner references: the first, and the first that says it is the
 * controller; each reference's strings go into md->owners. */
enum { O_API = 0, O_KIND, O_NAME, O_UID, O_CONTROLLER };

static const char *const owner_keys[] = {"apiVersion", "kind",       "name",
                                         "uid",        "controller", NULL};

void carp_objmeta_dec_init(struct carp_objmeta_dec *md,
                           int (*keep_annotation)(const char *key))
{
  memset(md, 0, sizeof(*md));
  md->keep_annotation = keep_annotation;
  carp_buf_init(&md->strs, CARP_BUF_UNLIMITED);
  carp_buf_init(&md->owners, CARP_BUF_UNLIMITED);
  carp_kvset_dec_init(&md->labels, 0, NULL);
  carp_kvset_dec_init(&md->annotations, 0, keep_annotation);
  carp_kvset_dec_init(&md->finalizers, 1, NULL);
}

void carp_objmeta_dec_free(struct carp_objmeta_dec *md)
{
  carp_buf_free(&md->strs);
  carp_buf_free(&md->owners);
  carp_kvset_dec_free(&md->labels);
  carp_kvset_dec_free(&md->annotations);
  carp_kvset_dec_free(&md->finalizers);
}

void carp_objmeta_dec_reset(struct carp_objmeta_dec *md)
{
  md->present = 0;
  carp_buf_reset(&md->strs);
  carp_buf_reset(&md->owners);
  md->have = 0;
  md->gen_seen = md->gen_bad = 0;
  md->gen = 0;
  md->created_bad = md->deleted_bad = 0;
  md->created_ms = md->deleted_ms = 0;
  carp_kvset_dec_reset(&md->labels);
  carp_kvset_dec_reset(&md->annotations);
  carp_kvset_dec_reset(&md->finalizers);
  md->owner_have[0] = md->owner_have[1] = 0;
  md->owner_ctl = 0;
}

static size_t keep_str(struct carp_buf *b, const struct carp_jval *v)
{
  size_t at = b->len;
  carp_buf_append(b, v->s, v->len + 1);
  return at;
}

static int owner_member(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct carp_objmeta_dec *md = ctx;
  int f = carp_jdec_field(d), i;
  if (v->type != CARP_JEND) {
    if (f == O_CONTROLLER) {
      int ctl = 0;
      md->owner_cur_ctl = carp_jval_bool(v, &ctl) == 0 && ctl;
    } else if (f >= 0 && v->type == CARP_JSTRING) {
      md->owner_cur[f] = keep_str(&md->owners, v);
      md->owner_cur_have |= 1u << f;
    }
    return 0;
  }
  /* The reference has ended: keep it as the first, or the controller. */
  if (md->owner_cur_first) {
    for (i = 0; i < 4; i++)
      md->owner_at[0][i] = md->owner_cur[i];
    md->owner_have[0] = md->owner_cur_have;
  }
  if (md->owner_cur_ctl && !md->owner_ctl) {
    for (i = 0; i < 4; i++)
      md->owner_at[1][i] = md->owner_cur[i];
    md->owner_have[1] = md->owner_cur_have;
    md->owner_ctl = 1;
  }
  return 0;
}

static int owner_element(struct carp_jdec *d, void *ctx,
                         const struct carp_jval *v)
{
  struct carp_objmeta_dec *md = ctx;
  if (v->type != CARP_JOBJECT)
    return 0; /* a first element that is not an object names no owner */
  md->owner_cur_first = carp_jdec_index(d) == 0;
  md->owner_cur_ctl = 0;
  md->owner_cur_have = 0;
  carp_jdec_enter(d, owner_member, md, owner_keys);
  return 0;
}

static int meta_member(struct carp_jdec *d, void *ctx,
                       const struct carp_jval *v)
{
  struct carp_objmeta_dec *md = ctx;
  int f = carp_jdec_field(d);
  switch (f) {
  case M_NAME:
  case M_NAMESPACE:
  case M_UID:
  case M_RV:
    if (v->type == CARP_JSTRING) {
      md->at[f] = keep_str(&md->strs, v);
      md->have |= 1u << f;
    }
    break;
  case M_GENERATION:
    md->gen_seen = 1;
    md->gen_bad = carp_jval_int(v, &md->gen) != 0;
    break;
  case M_CREATED:
    md->created_bad = carp_jval_time(v, &md->created_ms) != 0;
    break;
  case M_DELETED:
    md->deleted_bad = carp_jval_time(v, &md->deleted_ms) != 0;
    break;
  case M_LABELS:
    return carp_kvset_dec_value(d, &md->labels, v);
  case M_ANNOTATIONS:
    return carp_kvset_dec_value(d, &md->annotations, v);
  case M_FINALIZERS:
    return carp_kvset_dec_value(d, &md->finalizers, v);
  case M_OWNERS:
    if (v->type == CARP_JARRAY)
      carp_jdec_enter(d, owner_element, md, NULL);
    break;
  default:
    break;
  }
  return 0;
}

int carp_objmeta_dec_value(struct carp_jdec *d, struct carp_objmeta_dec *md,
                           const struct carp_jval *v)
{
  if (v->type != CARP_JOBJECT)
    return 0;
  md->present = 1;
  carp_jdec_enter(d, meta_member, md, meta_keys);
  return 0;
}

static const char *meta_str(const struct carp_objmeta_dec *md, int f)
{
  return md->have & (1u << f) ? md->strs.ptr + md->at[f] : NULL;
}

void carp_objmeta_dec_id(const struct carp_objmeta_dec *md,
                         struct carp_obj_id *id)
{
  id->name = meta_str(md, M_NAME);
  id->namespace = meta_str(md, M_NAMESPACE);
  id->uid = meta_str(md, M_UID);
  id->resource_version = meta_str(md, M_RV);
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

static const char *owner_str(const struct carp_objmeta_dec *md, int slot, int f)
{
  return md->owner_have[slot] & (1u << f)
             ? md->owners.ptr + md->owner_at[slot][f]
             : NULL;
}

static void finish_owner(const struct carp_objmeta_dec *md,
                         struct carp_owner *o)
{
  int slot = md->owner_ctl ? 1 : 0;
  const char *kind = owner_str(md, slot, O_KIND);
  const char *name = owner_str(md, slot, O_NAME);
  if (!kind || !name)
    return;
  o->api_version = carp_interns(owner_str(md, slot, O_API));
  o->kind = carp_interns(kind);
  o->name = carp_interns(name);
  o->uid = carp_interns(owner_str(md, slot, O_UID));
  o->controller = md->owner_ctl;
}

int carp_objmeta_dec_finish(struct carp_objmeta_dec *md, struct carp_objmeta *m,
                            char **err)
{
  const char *name = meta_str(md, M_NAME), *ns = meta_str(md, M_NAMESPACE);
  const char *uid = meta_str(md, M_UID), *rv = meta_str(md, M_RV);
  size_t nslen, namelen, uidlen, rvlen;
  char *p;

  memset(m, 0, sizeof(*m));
  m->refs = 1;
  if (err)
    *err = NULL;
  /* The checks of a tree decode, in its order. */
  if (!md->present)
    return meta_error(err, "(missing)");
  if (!name || !*name)
    return meta_error(err, "name");
  if (md->gen_seen && md->gen_bad)
    return meta_error(err, "generation");
  if (md->created_bad)
    return meta_error(err, "creationTimestamp");
  if (md->deleted_bad)
    return meta_error(err, "deletionTimestamp");
  if (md->labels.bad)
    return meta_error(err, "labels");
  if (md->annotations.bad)
    return meta_error(err, "annotations");
  if (md->finalizers.bad)
    return meta_error(err, "finalizers");
  m->generation = md->gen_seen ? md->gen : 0;
  m->creation_ms = md->created_ms;
  m->deletion_ms = md->deleted_ms;
  carp_kvset_dec_finish(&md->labels, &m->labels);
  carp_kvset_dec_finish(&md->annotations, &m->annotations);
  carp_kvset_dec_finish(&md->finalizers, &m->finalizers);
  finish_owner(md, &m->owner);
  m->namespace = ns && *ns ? carp_interns(ns) : NULL;

  /* "[namespace/]name\0uid\0rv\0" in one block. */
  nslen = m->namespace ? carp_intern_len(m->namespace) + 1 : 0;
  namelen = strlen(name) + 1;
  uidlen = uid ? strlen(uid) + 1 : 1;
  rvlen = rv ? strlen(rv) + 1 : 1;
  p = m->strings = carp_malloc(nslen + namelen + uidlen + rvlen);
  if (nslen) {
    memcpy(p, m->namespace, nslen - 1);
    p[nslen - 1] = '/';
  }
  m->key = p;
  m->name = p + nslen;
  memcpy(p + nslen, name, namelen);
  m->uid = m->name + namelen;
  memcpy((char *)m->uid, uid ? uid : "", uidlen);
  m->resource_version = m->uid + uidlen;
  memcpy((char *)m->resource_version, rv ? rv : "", rvlen);
  return 0;
}

/* A tree's metadata: the events of obj's "metadata" member. */
static int meta_root_member(struct carp_jdec *d, void *ctx,
                            const struct carp_jval *v)
{
  if (v->type != CARP_JEND && carp_jdec_field(d) == 0)
    return carp_objmeta_dec_value(d, ctx, v);
  return 0;
}

static int meta_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  static const char *const keys[] = {"metadata", NULL};
  if (v->type == CARP_JOBJECT)
    carp_jdec_enter(d, meta_root_member, ctx, keys);
  return 0;
}

int carp_objmeta_decode(yajl_val obj, int (*keep_annotation)(const char *key),
                        struct carp_objmeta *m, char **err)
{
  struct carp_objmeta_dec md;
  int rc;
  carp_objmeta_dec_init(&md, keep_annotation);
  carp_jdec_tree(obj, meta_root, &md);
  rc = carp_objmeta_dec_finish(&md, m, err);
  carp_objmeta_dec_free(&md);
  return rc;
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

/* ---- kinds decoded from events, given a tree ---- */

/* A decoder and its state per kind, kept between calls: `carpenter
 * simulate` decodes its snapshot's objects from trees, 150,000 pods in a
 * large one. Decoding happens on one thread (the intern tables are not
 * shared either); a call made while the kind's decoder is busy (never so
 * far) gets one of its own. */
struct tree_dec {
  const struct carp_kind_stream *s;
  void *state;
  struct carp_jdec d;
  int busy;
};

static struct tree_dec *tree_decs[16];

static int kind_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct tree_dec *t = ctx;
  if (v->type == CARP_JOBJECT)
    carp_jdec_enter(d, t->s->member, t->state, t->s->keys);
  return 0;
}

static struct tree_dec *tree_dec_get(const struct carp_kind_stream *s)
{
  struct tree_dec *t;
  size_t i;
  for (i = 0; i < CARP_ARRAY_LEN(tree_decs) && tree_decs[i]; i++)
    if (tree_decs[i]->s == s && !tree_decs[i]->busy)
      return tree_decs[i];
  t = CARP_NEW(struct tree_dec);
  t->s = s;
  t->state = s->state_new();
  carp_jdec_init(&t->d, kind_root, t);
  if (i < CARP_ARRAY_LEN(tree_decs))
    tree_decs[i] = t;
  return t;
}

static void tree_dec_put(struct tree_dec *t)
{
  size_t i;
  t->busy = 0;
  for (i = 0; i < CARP_ARRAY_LEN(tree_decs); i++)
    if (tree_decs[i] == t)
      return;
  carp_jdec_free(&t->d);
  t->s->state_free(t->state);
  carp_free(t);
}

int carp_kind_decode_tree(const struct carp_kind *kind, yajl_val obj,
                          struct carp_objmeta **out, char **err)
{
  struct tree_dec *t = tree_dec_get(kind->stream);
  int rc;
  t->busy = 1;
  t->s->begin(t->state);
  carp_jdec_replay(&t->d, obj);
  rc = t->s->finish(t->state, out, err);
  tree_dec_put(t);
  return rc;
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
