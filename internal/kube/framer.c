/* framer.c: JSON object framing for watch streams. A small state machine
 * (depth, inside-string, after-backslash) runs over each byte once; bytes
 * of an object are copied into a capped buffer, and the callback gets the
 * object as soon as its closing brace arrives. Whitespace between objects
 * (the newlines the API server writes) is skipped. */
#include "carpenter/framer.h"

#include "carpenter/error.h"

void carp_framer_init(struct carp_framer *f, size_t max_object)
{
  carp_buf_init(&f->buf, max_object);
  f->max = max_object;
  f->depth = 0;
  f->in_string = 0;
  f->escape = 0;
}

void carp_framer_free(struct carp_framer *f)
{
  carp_buf_free(&f->buf);
}

void carp_framer_reset(struct carp_framer *f)
{
  carp_buf_reset(&f->buf);
  f->depth = 0;
  f->in_string = 0;
  f->escape = 0;
}

int carp_framer_pending(const struct carp_framer *f)
{
  return f->buf.len > 0;
}

int carp_framer_feed(struct carp_framer *f, const char *data, size_t len,
                     carp_framer_cb cb, void *arg)
{
  size_t i = 0, start;
  int rc;

  while (i < len) {
    if (f->depth == 0) {
      /* Between objects: skip whitespace, expect '{'. */
      char c = data[i];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        i++;
        continue;
      }
      if (c != '{')
        return CARP_EPARSE;
    }
    start = i;
    for (; i < len; i++) {
      char c = data[i];
      if (f->in_string) {
        if (f->escape)
          f->escape = 0;
        else if (c == '\\')
          f->escape = 1;
        else if (c == '"')
          f->in_string = 0;
        continue;
      }
      if (c == '"') {
        f->in_string = 1;
      } else if (c == '{' || c == '[') {
        f->depth++;
      } else if (c == '}' || c == ']') {
        if (--f->depth == 0) {
          i++;
          break;
        }
        if (f->depth < 0)
          return CARP_EPARSE;
      }
    }
    rc = carp_buf_append(&f->buf, data + start, i - start);
    if (rc)
      return rc;
    if (f->depth == 0) {
      rc = cb(f->buf.ptr, f->buf.len, arg);
      carp_buf_reset(&f->buf);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}
