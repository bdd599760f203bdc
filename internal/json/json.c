/* json.c: parsing and typed lookups on yajl trees.
 *
 * yajl_tree_parse wants a NUL-terminated copy and writes an error that
 * quotes the input; we pass it a private buffer and keep only the first
 * line of its message, which names the problem without the payload. */
#include "carpenter/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"

int carp_json_parse_cstr(const char *text, size_t len, yajl_val *out,
                         char **err)
{
  char errbuf[256];
  yajl_val v;

  errbuf[0] = '\0';
  /* Embedded NULs would silently truncate the document. */
  if (text[len] != '\0' || memchr(text, '\0', len)) {
    if (err)
      *err = carp_strdup("NUL byte inside JSON text");
    return CARP_EPARSE;
  }
  v = yajl_tree_parse(text, errbuf, sizeof(errbuf));
  if (!v) {
    if (err) {
      char *nl = strchr(errbuf, '\n');
      if (nl)
        *nl = '\0';
      *err = carp_strdup(errbuf[0] ? errbuf : "invalid JSON");
    }
    return CARP_EPARSE;
  }
  *out = v;
  return 0;
}

int carp_json_parse(const char *text, size_t len, yajl_val *out, char **err)
{
  /* A NUL-terminated copy; a NUL inside is found by the check below. */
  char *copy = carp_malloc(len + 1);
  int rc;
  memcpy(copy, text, len);
  copy[len] = '\0';
  rc = carp_json_parse_cstr(copy, len, out, err);
  carp_free(copy);
  return rc;
}

void carp_json_free(yajl_val v)
{
  if (v)
    yajl_tree_free(v);
}

static yajl_val object_member(yajl_val v, const char *key)
{
  size_t i;
  if (!YAJL_IS_OBJECT(v))
    return NULL;
  for (i = 0; i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return v->u.object.values[i];
  return NULL;
}

yajl_val carp_json_vget(yajl_val v, va_list ap)
{
  const char *key;
  while (v && (key = va_arg(ap, const char *)))
    v = object_member(v, key);
  return v;
}

yajl_val carp_json_get(yajl_val v, ...)
{
  va_list ap;
  va_start(ap, v);
  v = carp_json_vget(v, ap);
  va_end(ap);
  return v;
}

const char *carp_json_str(yajl_val v, ...)
{
  va_list ap;
  va_start(ap, v);
  v = carp_json_vget(v, ap);
  va_end(ap);
  return YAJL_IS_STRING(v) ? v->u.string : NULL;
}

yajl_val carp_json_obj(yajl_val v, ...)
{
  va_list ap;
  va_start(ap, v);
  v = carp_json_vget(v, ap);
  va_end(ap);
  return YAJL_IS_OBJECT(v) ? v : NULL;
}

yajl_val carp_json_arr(yajl_val v, ...)
{
  va_list ap;
  va_start(ap, v);
  v = carp_json_vget(v, ap);
  va_end(ap);
  return YAJL_IS_ARRAY(v) ? v : NULL;
}

int carp_json_int_text(const char *s, int64_t *out)
{
  char *end;
  long long x;
  if (!s || !*s)
    return CARP_EPARSE;
  errno = 0;
  x = strtoll(s, &end, 10);
  if (errno || *end)
    return CARP_EPARSE;
  *out = x;
  return 0;
}

int carp_json_int(yajl_val v, int64_t *out, ...)
{
  va_list ap;
  va_start(ap, out);
  v = carp_json_vget(v, ap);
  va_end(ap);
  if (!v)
    return CARP_ENOENT;
  if (YAJL_IS_INTEGER(v)) {
    *out = YAJL_GET_INTEGER(v);
    return 0;
  }
  if (YAJL_IS_NUMBER(v))
    return carp_json_int_text(v->u.number.r, out);
  if (YAJL_IS_STRING(v))
    return carp_json_int_text(v->u.string, out);
  return CARP_EPARSE;
}

int carp_json_double(yajl_val v, double *out, ...)
{
  va_list ap;
  char *end;
  const char *text;
  va_start(ap, out);
  v = carp_json_vget(v, ap);
  va_end(ap);
  if (!v)
    return CARP_ENOENT;
  if (YAJL_IS_NUMBER(v))
    text = v->u.number.r;
  else if (YAJL_IS_STRING(v))
    text = v->u.string;
  else
    return CARP_EPARSE;
  if (!text || !*text)
    return CARP_EPARSE;
  errno = 0;
  *out = strtod(text, &end);
  /* strtod also reads "nan" and "inf", which are no JSON numbers: a
   * string holding one is no number either. */
  return errno || *end || !isfinite(*out) ? CARP_EPARSE : 0;
}

int carp_json_bool(yajl_val v, int *out, ...)
{
  va_list ap;
  int64_t i;
  va_start(ap, out);
  v = carp_json_vget(v, ap);
  va_end(ap);
  if (!v)
    return CARP_ENOENT;
  if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
    *out = YAJL_IS_TRUE(v);
    return 0;
  }
  if ((YAJL_IS_INTEGER(v) || YAJL_IS_STRING(v)) &&
      carp_json_int(v, &i, NULL) == 0 && (i == 0 || i == 1)) {
    *out = (int)i;
    return 0;
  }
  return CARP_EPARSE;
}

size_t carp_json_len(yajl_val v)
{
  if (YAJL_IS_ARRAY(v))
    return v->u.array.len;
  if (YAJL_IS_OBJECT(v))
    return v->u.object.len;
  return 0;
}

yajl_val carp_json_at(yajl_val arr, size_t i)
{
  if (!YAJL_IS_ARRAY(arr) || i >= arr->u.array.len)
    return NULL;
  return arr->u.array.values[i];
}
