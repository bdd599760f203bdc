/* Module json (internal/json). JSON helpers over yajl: parsing into yajl's tree
 * with an error message that never quotes the input (payloads may hold
 * secrets), typed lookups that accept numbers sent as strings (Proxmox does
 * that), and a writer that appends to a carp_buf.
 *
 * Lookups take a NULL-terminated path of object keys:
 *   const char *name = carp_json_str(obj, "metadata", "name", NULL);  */
#ifndef CARP_JSON_H
#define CARP_JSON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"

/* Parses len bytes (no NUL needed). On error returns CARP_EPARSE and, when
 * err is not NULL, a short message (free with carp_free). */
int carp_json_parse(const char *text, size_t len, yajl_val *out, char **err);
/* The same without a copy, for text already NUL-terminated at len (a
 * carp_buf, a watch frame): a response a second saves a malloc of its
 * size, and each large malloc makes glibc consolidate its fastbins. */
int carp_json_parse_cstr(const char *text, size_t len, yajl_val *out,
                         char **err);
void carp_json_free(yajl_val v);

/* The value at path (NULL when absent), or v itself for an empty path. */
yajl_val carp_json_get(yajl_val v, ...);
yajl_val carp_json_vget(yajl_val v, va_list ap);
/* Typed lookups: NULL (or the return code) when absent or of another type. */
const char *carp_json_str(yajl_val v, ...);
yajl_val carp_json_obj(yajl_val v, ...);
yajl_val carp_json_arr(yajl_val v, ...);
/* Integer at path, from a JSON integer or a numeric string. Returns 0, or
 * CARP_ENOENT when absent, CARP_EPARSE when not an integer. */
int carp_json_int(yajl_val v, int64_t *out, ...);
/* A whole decimal integer (as strtoll reads it, all of s), or CARP_EPARSE:
 * what carp_json_int accepts as the text of a number or a string. */
int carp_json_int_text(const char *s, int64_t *out);
/* Number (integer or not) at path, also from a numeric string. */
int carp_json_double(yajl_val v, double *out, ...);
/* Boolean at path: true/false, or 0/1 (Proxmox). */
int carp_json_bool(yajl_val v, int *out, ...);

size_t carp_json_len(yajl_val arr_or_obj);
yajl_val carp_json_at(yajl_val arr, size_t i);

/* A JSON writer. Errors are sticky: check carp_jw_finish() once. */
struct carp_jw {
  yajl_gen gen;
  struct carp_buf *out;
  int err;
  int depth;   /* open containers */
  int written; /* a top-level value was started */
};

void carp_jw_init(struct carp_jw *w, struct carp_buf *out);
/* Returns 0 when everything written was valid and complete. */
int carp_jw_finish(struct carp_jw *w);
void carp_jw_obj(struct carp_jw *w);
void carp_jw_obj_end(struct carp_jw *w);
void carp_jw_arr(struct carp_jw *w);
void carp_jw_arr_end(struct carp_jw *w);
void carp_jw_key(struct carp_jw *w, const char *key);
void carp_jw_str(struct carp_jw *w, const char *s);
void carp_jw_strn(struct carp_jw *w, const char *s, size_t n);
void carp_jw_int(struct carp_jw *w, int64_t v);
/* A number given as its JSON text (copied as written). */
void carp_jw_number(struct carp_jw *w, const char *text, size_t len);
void carp_jw_bool(struct carp_jw *w, int v);
void carp_jw_null(struct carp_jw *w);
/* Copies a parsed value (an object from a response, say) into the output. */
void carp_jw_value(struct carp_jw *w, yajl_val v);
/* key + value in one call. */
void carp_jw_kstr(struct carp_jw *w, const char *key, const char *s);
void carp_jw_kint(struct carp_jw *w, const char *key, int64_t v);
void carp_jw_kbool(struct carp_jw *w, const char *key, int v);

/* Appends s as a quoted JSON string (for hand-built JSON paths). */
void carp_json_quote(struct carp_buf *out, const char *s, size_t n);

#endif
