/* writer.c: a JSON writer on yajl_gen that prints straight into a
 * carp_buf. Only integers, booleans and strings are emitted (yajl prints
 * doubles with %.20g, which would turn 0.1 into 0.1000...0555); quantities
 * travel as strings, as Kubernetes itself writes them. */
#include "carpenter/json.h"

#include <string.h>

#include "carpenter/error.h"

static void print_cb(void *ctx, const char *s, size_t len)
{
  struct carp_jw *w = ctx;
  if (carp_buf_append(w->out, s, len))
    w->err = CARP_ETOOBIG;
}

void carp_jw_init(struct carp_jw *w, struct carp_buf *out)
{
  w->out = out;
  w->err = 0;
  w->depth = 0;
  w->written = 0;
  w->gen = yajl_gen_alloc(NULL);
  if (!w->gen) {
    w->err = CARP_ENOMEM;
    return;
  }
  yajl_gen_config(w->gen, yajl_gen_print_callback, print_cb, w);
  yajl_gen_config(w->gen, yajl_gen_validate_utf8, 1);
}

static void check(struct carp_jw *w, yajl_gen_status st)
{
  w->written = 1;
  if (st != yajl_gen_status_ok && !w->err)
    w->err = CARP_EINVAL;
}

int carp_jw_finish(struct carp_jw *w)
{
  int err = w->err;
  if (w->gen) {
    /* An unclosed container means the caller built it wrong. */
    if (!err && (w->depth != 0 || !w->written))
      err = CARP_EINVAL;
    yajl_gen_free(w->gen);
    w->gen = NULL;
  }
  return err;
}

void carp_jw_obj(struct carp_jw *w)
{
  w->depth++;
  if (w->gen)
    check(w, yajl_gen_map_open(w->gen));
}

void carp_jw_obj_end(struct carp_jw *w)
{
  w->depth--;
  if (w->gen)
    check(w, yajl_gen_map_close(w->gen));
}

void carp_jw_arr(struct carp_jw *w)
{
  w->depth++;
  if (w->gen)
    check(w, yajl_gen_array_open(w->gen));
}

void carp_jw_arr_end(struct carp_jw *w)
{
  w->depth--;
  if (w->gen)
    check(w, yajl_gen_array_close(w->gen));
}

void carp_jw_strn(struct carp_jw *w, const char *s, size_t n)
{
  if (w->gen)
    check(w, yajl_gen_string(w->gen, (const unsigned char *)s, n));
}

void carp_jw_str(struct carp_jw *w, const char *s)
{
  if (!s) {
    carp_jw_null(w);
    return;
  }
  carp_jw_strn(w, s, strlen(s));
}

void carp_jw_key(struct carp_jw *w, const char *key)
{
  carp_jw_strn(w, key, strlen(key));
}

void carp_jw_int(struct carp_jw *w, int64_t v)
{
  if (w->gen)
    check(w, yajl_gen_integer(w->gen, (long long)v));
}

void carp_jw_number(struct carp_jw *w, const char *text, size_t len)
{
  if (w->gen)
    check(w, yajl_gen_number(w->gen, text, len));
}

void carp_jw_bool(struct carp_jw *w, int v)
{
  if (w->gen)
    check(w, yajl_gen_bool(w->gen, v));
}

void carp_jw_null(struct carp_jw *w)
{
  if (w->gen)
    check(w, yajl_gen_null(w->gen));
}

void carp_jw_value(struct carp_jw *w, yajl_val v)
{
  size_t i;
  if (!v) {
    carp_jw_null(w);
  } else if (YAJL_IS_STRING(v)) {
    carp_jw_str(w, v->u.string);
  } else if (YAJL_IS_NUMBER(v)) {
    /* Copy the number's text as written, so nothing is reformatted. */
    if (w->gen)
      check(w, yajl_gen_number(w->gen, v->u.number.r, strlen(v->u.number.r)));
  } else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
    carp_jw_bool(w, YAJL_IS_TRUE(v));
  } else if (YAJL_IS_ARRAY(v)) {
    carp_jw_arr(w);
    for (i = 0; i < v->u.array.len; i++)
      carp_jw_value(w, v->u.array.values[i]);
    carp_jw_arr_end(w);
  } else if (YAJL_IS_OBJECT(v)) {
    carp_jw_obj(w);
    for (i = 0; i < v->u.object.len; i++) {
      carp_jw_key(w, v->u.object.keys[i]);
      carp_jw_value(w, v->u.object.values[i]);
    }
    carp_jw_obj_end(w);
  } else {
    carp_jw_null(w);
  }
}

void carp_jw_kstr(struct carp_jw *w, const char *key, const char *s)
{
  carp_jw_key(w, key);
  carp_jw_str(w, s);
}

void carp_jw_kint(struct carp_jw *w, const char *key, int64_t v)
{
  carp_jw_key(w, key);
  carp_jw_int(w, v);
}

void carp_jw_kbool(struct carp_jw *w, const char *key, int v)
{
  carp_jw_key(w, key);
  carp_jw_bool(w, v);
}

void carp_json_quote(struct carp_buf *out, const char *s, size_t n)
{
  static const char hex[] = "0123456789abcdef";
  size_t i, run = 0;
  carp_buf_putc(out, '"');
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c != '"' && c != '\\' && c >= 0x20)
      continue;
    /* The bytes that need no escape go in one piece. */
    carp_buf_append(out, s + run, i - run);
    run = i + 1;
    if (c == '"' || c == '\\') {
      carp_buf_putc(out, '\\');
      carp_buf_putc(out, (char)c);
    } else if (c == '\n') {
      carp_buf_puts(out, "\\n");
    } else if (c == '\r') {
      carp_buf_puts(out, "\\r");
    } else if (c == '\t') {
      carp_buf_puts(out, "\\t");
    } else {
      char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
      carp_buf_puts(out, esc);
    }
  }
  carp_buf_append(out, s + run, n - run);
  carp_buf_putc(out, '"');
}
