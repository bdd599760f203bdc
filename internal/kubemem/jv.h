/* jv.h: a mutable JSON value for the in-memory API server, which must
 * change objects in place (merge patches, metadata the server owns) where
 * yajl's tree is read-only. Numbers keep their text as written. */
#ifndef CARP_KUBEMEM_JV_H
#define CARP_KUBEMEM_JV_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/json.h"

enum jv_type { JV_NULL = 0, JV_TRUE, JV_FALSE, JV_NUM, JV_STR, JV_ARR, JV_OBJ };

struct jv {
  enum jv_type t;
  char *s; /* JV_NUM: the number's text; JV_STR: the string */
  size_t n, cap;
  char **k;      /* JV_OBJ: keys */
  struct jv **v; /* JV_ARR: items; JV_OBJ: values */
};

struct jv *jv_from_yajl(yajl_val v);
/* NULL on malformed text, with *err set (carp_free it) when err given. */
struct jv *jv_parse(const char *text, size_t len, char **err);
void jv_free(struct jv *j);
struct jv *jv_dup(const struct jv *j);
int jv_equal(const struct jv *a, const struct jv *b);

struct jv *jv_new(enum jv_type t);
struct jv *jv_new_str(const char *s);
struct jv *jv_new_int(int64_t v);

/* Object member (NULL when absent or j is not an object). */
struct jv *jv_get(const struct jv *j, const char *key);
/* Along a dotted path of object keys: "metadata.name". */
struct jv *jv_path(const struct jv *j, const char *dotted);
/* The string at a dotted path, or NULL. */
const char *jv_str(const struct jv *j, const char *dotted);
/* Sets (replacing) an object member; takes ownership of val. */
void jv_set(struct jv *obj, const char *key, struct jv *val);
void jv_set_str(struct jv *obj, const char *key, const char *s);
void jv_del(struct jv *obj, const char *key);
/* The object member key, created empty ({}) when absent or not an
 * object. */
struct jv *jv_obj_at(struct jv *obj, const char *key);
/* Appends to an array; takes ownership of val. */
void jv_push(struct jv *arr, struct jv *val);

/* RFC 7386 JSON merge patch: returns the patched target (which may be a
 * new value: target is then freed). */
struct jv *jv_merge_patch(struct jv *target, const struct jv *patch);

void jv_write(const struct jv *j, struct carp_jw *w);
/* The JSON text (carp_free it); *len when len is not NULL. */
char *jv_text(const struct jv *j, size_t *len);

#endif
