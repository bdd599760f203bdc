/* jv.c: the mutable JSON value of the in-memory API server (jv.h). Small
 * objects in tests, so members are kept in insertion order in flat arrays
 * and found by a linear scan. */
#include "jv.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"

struct jv *jv_new(enum jv_type t)
{
  struct jv *j = CARP_NEW(struct jv);
  j->t = t;
  return j;
}

struct jv *jv_new_str(const char *s)
{
  struct jv *j = jv_new(JV_STR);
  j->s = carp_strdup(s ? s : "");
  return j;
}

struct jv *jv_new_int(int64_t v)
{
  char buf[32];
  struct jv *j = jv_new(JV_NUM);
  snprintf(buf, sizeof(buf), "%lld", (long long)v);
  j->s = carp_strdup(buf);
  return j;
}

static void grow(struct jv *j)
{
  if (j->n < j->cap)
    return;
  j->cap = j->cap ? j->cap * 2 : 4;
  j->v = carp_reallocarray(j->v, j->cap, sizeof(*j->v));
  if (j->t == JV_OBJ)
    j->k = carp_reallocarray(j->k, j->cap, sizeof(*j->k));
}

void jv_push(struct jv *arr, struct jv *val)
{
  grow(arr);
  arr->v[arr->n++] = val;
}

struct jv *jv_from_yajl(yajl_val v)
{
  struct jv *j;
  size_t i;
  if (!v)
    return jv_new(JV_NULL);
  if (YAJL_IS_STRING(v))
    return jv_new_str(v->u.string);
  if (YAJL_IS_NUMBER(v)) {
    j = jv_new(JV_NUM);
    j->s = carp_strdup(v->u.number.r);
    return j;
  }
  if (YAJL_IS_TRUE(v))
    return jv_new(JV_TRUE);
  if (YAJL_IS_FALSE(v))
    return jv_new(JV_FALSE);
  if (YAJL_IS_ARRAY(v)) {
    j = jv_new(JV_ARR);
    for (i = 0; i < v->u.array.len; i++)
      jv_push(j, jv_from_yajl(v->u.array.values[i]));
    return j;
  }
  if (YAJL_IS_OBJECT(v)) {
    j = jv_new(JV_OBJ);
    for (i = 0; i < v->u.object.len; i++)
      jv_set(j, v->u.object.keys[i], jv_from_yajl(v->u.object.values[i]));
    return j;
  }
  return jv_new(JV_NULL);
}

struct jv *jv_parse(const char *text, size_t len, char **err)
{
  yajl_val v;
  struct jv *j;
  if (carp_json_parse(text, len, &v, err))
    return NULL;
  j = jv_from_yajl(v);
  carp_json_free(v);
  return j;
}

void jv_free(struct jv *j)
{
  size_t i;
  if (!j)
    return;
  for (i = 0; i < j->n; i++) {
    jv_free(j->v[i]);
    if (j->k)
      carp_free(j->k[i]);
  }
  carp_free(j->v);
  carp_free(j->k);
  carp_free(j->s);
  carp_free(j);
}

struct jv *jv_dup(const struct jv *j)
{
  struct jv *d;
  size_t i;
  if (!j)
    return NULL;
  d = jv_new(j->t);
  if (j->s)
    d->s = carp_strdup(j->s);
  for (i = 0; i < j->n; i++) {
    if (j->t == JV_OBJ)
      jv_set(d, j->k[i], jv_dup(j->v[i]));
    else
      jv_push(d, jv_dup(j->v[i]));
  }
  return d;
}

int jv_equal(const struct jv *a, const struct jv *b)
{
  size_t i;
  if (!a || !b)
    return a == b;
  if (a->t != b->t || a->n != b->n)
    return 0;
  if ((a->s || b->s) && (!a->s || !b->s || strcmp(a->s, b->s)))
    return 0;
  for (i = 0; i < a->n; i++) {
    if (a->t == JV_OBJ) {
      if (!jv_equal(a->v[i], jv_get(b, a->k[i])))
        return 0;
    } else if (!jv_equal(a->v[i], b->v[i])) {
      return 0;
    }
  }
  return 1;
}

static size_t find(const struct jv *j, const char *key)
{
  size_t i;
  for (i = 0; i < j->n; i++)
    if (!strcmp(j->k[i], key))
      return i;
  return (size_t)-1;
}

struct jv *jv_get(const struct jv *j, const char *key)
{
  size_t i;
  if (!j || j->t != JV_OBJ)
    return NULL;
  i = find(j, key);
  return i == (size_t)-1 ? NULL : j->v[i];
}

struct jv *jv_path(const struct jv *j, const char *dotted)
{
  char key[256];
  const char *p = dotted, *dot;
  while (j && *p) {
    size_t n;
    dot = strchr(p, '.');
    n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= sizeof(key))
      return NULL;
    memcpy(key, p, n);
    key[n] = 0;
    j = jv_get(j, key);
    p += n + (dot ? 1 : 0);
  }
  return (struct jv *)j;
}

const char *jv_str(const struct jv *j, const char *dotted)
{
  const struct jv *v = jv_path(j, dotted);
  return v && v->t == JV_STR ? v->s : NULL;
}

void jv_set(struct jv *obj, const char *key, struct jv *val)
{
  size_t i = find(obj, key);
  if (i != (size_t)-1) {
    jv_free(obj->v[i]);
    obj->v[i] = val;
    return;
  }
  grow(obj);
  obj->k[obj->n] = carp_strdup(key);
  obj->v[obj->n++] = val;
}

void jv_set_str(struct jv *obj, const char *key, const char *s)
{
  jv_set(obj, key, jv_new_str(s));
}

void jv_del(struct jv *obj, const char *key)
{
  size_t i;
  if (!obj || obj->t != JV_OBJ)
    return;
  i = find(obj, key);
  if (i == (size_t)-1)
    return;
  jv_free(obj->v[i]);
  carp_free(obj->k[i]);
  memmove(obj->v + i, obj->v + i + 1, (obj->n - i - 1) * sizeof(*obj->v));
  memmove(obj->k + i, obj->k + i + 1, (obj->n - i - 1) * sizeof(*obj->k));
  obj->n--;
}

struct jv *jv_obj_at(struct jv *obj, const char *key)
{
  struct jv *v = jv_get(obj, key);
  if (v && v->t == JV_OBJ)
    return v;
  v = jv_new(JV_OBJ);
  jv_set(obj, key, v);
  return v;
}

struct jv *jv_merge_patch(struct jv *target, const struct jv *patch)
{
  size_t i;
  if (!patch || patch->t != JV_OBJ) {
    jv_free(target);
    return jv_dup(patch);
  }
  if (!target || target->t != JV_OBJ) {
    jv_free(target);
    target = jv_new(JV_OBJ);
  }
  for (i = 0; i < patch->n; i++) {
    const char *key = patch->k[i];
    const struct jv *pv = patch->v[i];
    size_t at;
    if (pv->t == JV_NULL) {
      jv_del(target, key);
      continue;
    }
    at = find(target, key);
    if (at == (size_t)-1)
      jv_set(target, key, jv_merge_patch(NULL, pv));
    else
      target->v[at] = jv_merge_patch(target->v[at], pv);
  }
  return target;
}

void jv_write(const struct jv *j, struct carp_jw *w)
{
  size_t i;
  switch (j ? j->t : JV_NULL) {
  case JV_NULL:
    carp_jw_null(w);
    break;
  case JV_TRUE:
    carp_jw_bool(w, 1);
    break;
  case JV_FALSE:
    carp_jw_bool(w, 0);
    break;
  case JV_NUM:
    carp_jw_number(w, j->s, strlen(j->s));
    break;
  case JV_STR:
    carp_jw_str(w, j->s);
    break;
  case JV_ARR:
    carp_jw_arr(w);
    for (i = 0; i < j->n; i++)
      jv_write(j->v[i], w);
    carp_jw_arr_end(w);
    break;
  case JV_OBJ:
    carp_jw_obj(w);
    for (i = 0; i < j->n; i++) {
      carp_jw_key(w, j->k[i]);
      jv_write(j->v[i], w);
    }
    carp_jw_obj_end(w);
    break;
  }
}

char *jv_text(const struct jv *j, size_t *len)
{
  struct carp_buf b;
  struct carp_jw w;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  jv_write(j, &w);
  carp_jw_finish(&w);
  return carp_buf_steal(&b, len);
}
