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

/* What the scan stops at: outside a string, a quote or a bracket; inside
 * one, its end or an escape. Every byte of every watch event passes here,
 * and strings are most of them: the scan runs over the bytes between stops
 * in a tight loop on a table, with the state in locals, instead of testing
 * each byte against each state. */
enum { PLAIN = 0, QUOTE, OPEN, CLOSE, BACKSLASH };

static const unsigned char outside[256] = {
    ['"'] = QUOTE, ['{'] = OPEN, ['['] = OPEN, ['}'] = CLOSE, [']'] = CLOSE};
static const unsigned char inside[256] = {['"'] = QUOTE, ['\\'] = BACKSLASH};

int carp_framer_feed(struct carp_framer *f, const char *data, size_t len,
                     carp_framer_cb cb, void *arg)
{
  const unsigned char *p = (const unsigned char *)data;
  size_t i = 0, start;
  int depth = f->depth, in_string = f->in_string, escape = f->escape, rc;

  while (i < len) {
    if (depth == 0) {
      /* Between objects: skip whitespace, expect '{'. */
      unsigned char c = p[i];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        i++;
        continue;
      }
      if (c != '{')
        return CARP_EPARSE;
    }
    start = i;
    while (i < len) {
      if (escape) {
        escape = 0;
        i++;
        continue;
      }
      if (in_string) {
        while (i < len && !inside[p[i]])
          i++;
        if (i == len)
          break;
        if (p[i++] == '\\')
          escape = 1;
        else
          in_string = 0;
        continue;
      }
      while (i < len && !outside[p[i]])
        i++;
      if (i == len)
        break;
      switch (outside[p[i++]]) {
      case QUOTE:
        in_string = 1;
        break;
      case OPEN:
        depth++;
        break;
      default:
        if (--depth < 0)
          return CARP_EPARSE;
        break;
      }
      if (depth == 0)
        break;
    }
    f->depth = depth;
    f->in_string = in_string;
    f->escape = escape;
    rc = carp_buf_append(&f->buf, data + start, i - start);
    if (rc)
      return rc;
    if (depth == 0) {
      rc = cb(f->buf.ptr, f->buf.len, arg);
      carp_buf_reset(&f->buf);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}
