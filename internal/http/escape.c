/* escape.c: percent-encoding for URL query and form values (RFC 3986).
 * Unreserved characters (ALPHA, DIGIT, "-", ".", "_", "~") stay; every
 * other byte becomes %XX with upper-case hex, so the result is safe in a
 * query, a path segment or an application/x-www-form-urlencoded body. */
#include "carpenter/error.h"
#include "http_int.h"

static int unreserved(unsigned char ch)
{
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
         ch == '~';
}

int carp_http_escape(struct carp_buf *out, const char *s)
{
  static const char hex[] = "0123456789ABCDEF";
  const unsigned char *p;
  size_t start;
  int rc = 0;

  if (!out || !s)
    return CARP_EINVAL;
  start = out->len;
  for (p = (const unsigned char *)s; *p && !rc; p++) {
    if (unreserved(*p)) {
      rc = carp_buf_putc(out, (char)*p);
    } else {
      char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      rc = carp_buf_append(out, enc, sizeof(enc));
    }
  }
  if (rc) { /* all or nothing */
    out->len = start;
    if (out->ptr)
      out->ptr[start] = '\0';
  }
  return rc;
}
