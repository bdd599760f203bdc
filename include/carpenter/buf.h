/* Module core (internal/core). Growable byte buffers with a hard size cap
 * (after curl's dynbuf): every buffer fed by the network has a limit, so a
 * hostile or broken peer cannot make Carpenter grow without bound. The content
 * is always NUL-terminated. */
#ifndef CARP_BUF_H
#define CARP_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct carp_buf {
  char *ptr;  /* NULL until the first append */
  size_t len; /* bytes used, not counting the terminating NUL */
  size_t cap; /* bytes allocated */
  size_t max; /* hard cap on len; appends beyond it fail with CARP_ETOOBIG */
  int overflowed; /* an append failed since init or the last reset */
};

#define CARP_BUF_UNLIMITED ((size_t)-1)

void carp_buf_init(struct carp_buf *b, size_t max);
void carp_buf_free(struct carp_buf *b);
/* Empties the buffer and keeps its memory. */
void carp_buf_reset(struct carp_buf *b);
int carp_buf_append(struct carp_buf *b, const void *data, size_t len);
int carp_buf_puts(struct carp_buf *b, const char *s);
int carp_buf_putc(struct carp_buf *b, char c);
int carp_buf_printf(struct carp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int carp_buf_vprintf(struct carp_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Removes the first n bytes. */
void carp_buf_consume(struct carp_buf *b, size_t n);
/* The content as a C string ("" when empty); valid until the next change. */
const char *carp_buf_cstr(const struct carp_buf *b);
/* Hands the memory to the caller (free with carp_free) and empties b. */
char *carp_buf_steal(struct carp_buf *b, size_t *len);

#endif
