/* base64.c: RFC 4648 base64 with padding. The decoder is strict about the
 * alphabet and padding but skips whitespace, as kubeconfig data fields are
 * sometimes wrapped. */
#include "carpenter/base64.h"

#include "carpenter/error.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int carp_base64_encode(struct carp_buf *out, const void *data, size_t len)
{
  const unsigned char *p = data;
  size_t i;
  char q[4];
  int rc = 0;
  for (i = 0; i + 2 < len && !rc; i += 3) {
    q[0] = alphabet[p[i] >> 2];
    q[1] = alphabet[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
    q[2] = alphabet[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
    q[3] = alphabet[p[i + 2] & 63];
    rc = carp_buf_append(out, q, 4);
  }
  if (!rc && len - i == 1) {
    q[0] = alphabet[p[i] >> 2];
    q[1] = alphabet[(p[i] & 3) << 4];
    q[2] = q[3] = '=';
    rc = carp_buf_append(out, q, 4);
  } else if (!rc && len - i == 2) {
    q[0] = alphabet[p[i] >> 2];
    q[1] = alphabet[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
    q[2] = alphabet[(p[i + 1] & 15) << 2];
    q[3] = '=';
    rc = carp_buf_append(out, q, 4);
  }
  return rc;
}

static int value_of(char c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

int carp_base64_decode(struct carp_buf *out, const char *text, size_t len)
{
  unsigned acc = 0;
  int bits = 0, pad = 0, rc;
  size_t i, count = 0;
  for (i = 0; i < len; i++) {
    char c = text[i];
    int v;
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
      continue;
    if (c == '=') {
      pad++;
      count++;
      continue;
    }
    if (pad)
      return CARP_EPARSE; /* data after padding */
    v = value_of(c);
    if (v < 0)
      return CARP_EPARSE;
    count++;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      char byte;
      bits -= 8;
      byte = (char)((acc >> bits) & 0xff);
      rc = carp_buf_putc(out, byte);
      if (rc)
        return rc;
    }
  }
  if (count % 4 != 0 || pad > 2)
    return CARP_EPARSE;
  /* Leftover bits must be zero padding bits. */
  if (bits && (acc & ((1u << bits) - 1)))
    return CARP_EPARSE;
  return 0;
}
