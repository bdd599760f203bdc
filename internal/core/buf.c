/* buf.c: capped growable buffers. Growth doubles, so appends are amortised
 * O(1); the cap is checked before any allocation. */
#include "carpenter/buf.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"

void carp_buf_init(struct carp_buf *b, size_t max)
{
  b->ptr = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max;
  b->overflowed = 0;
}

void carp_buf_free(struct carp_buf *b)
{
  CARP_FREE(&b->ptr);
  b->len = 0;
  b->cap = 0;
}

void carp_buf_reset(struct carp_buf *b)
{
  b->len = 0;
  b->overflowed = 0;
  if (b->ptr)
    b->ptr[0] = '\0';
}

static int reserve(struct carp_buf *b, size_t extra)
{
  size_t need, cap;
  if (extra > b->max || b->len > b->max - extra) {
    b->overflowed = 1;
    return CARP_ETOOBIG;
  }
  need = b->len + extra + 1;
  if (need <= b->cap)
    return 0;
  cap = b->cap ? b->cap : 64;
  while (cap < need)
    cap *= 2;
  b->ptr = carp_realloc(b->ptr, cap);
  b->cap = cap;
  return 0;
}

int carp_buf_append(struct carp_buf *b, const void *data, size_t len)
{
  int rc = reserve(b, len);
  if (rc)
    return rc;
  if (len)
    memcpy(b->ptr + b->len, data, len);
  b->len += len;
  b->ptr[b->len] = '\0';
  return 0;
}

int carp_buf_puts(struct carp_buf *b, const char *s)
{
  return carp_buf_append(b, s, strlen(s));
}

int carp_buf_putc(struct carp_buf *b, char c)
{
  return carp_buf_append(b, &c, 1);
}

int carp_buf_vprintf(struct carp_buf *b, const char *fmt, va_list ap)
{
  va_list copy;
  int n, rc;
  char small[256];

  va_copy(copy, ap);
  n = vsnprintf(small, sizeof(small), fmt, copy);
  va_end(copy);
  if (n < 0)
    return CARP_EINVAL;
  if ((size_t)n < sizeof(small))
    return carp_buf_append(b, small, (size_t)n);
  rc = reserve(b, (size_t)n);
  if (rc)
    return rc;
  vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int carp_buf_printf(struct carp_buf *b, const char *fmt, ...)
{
  va_list ap;
  int rc;
  va_start(ap, fmt);
  rc = carp_buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

void carp_buf_consume(struct carp_buf *b, size_t n)
{
  if (n >= b->len) {
    carp_buf_reset(b);
    return;
  }
  memmove(b->ptr, b->ptr + n, b->len - n);
  b->len -= n;
  b->ptr[b->len] = '\0';
}

const char *carp_buf_cstr(const struct carp_buf *b)
{
  return b->ptr ? b->ptr : "";
}

char *carp_buf_steal(struct carp_buf *b, size_t *len)
{
  char *p = b->ptr;
  if (!p)
    p = carp_strdup("");
  if (len)
    *len = b->len;
  b->ptr = NULL;
  b->len = 0;
  b->cap = 0;
  return p;
}
