/* tojson.c: a YAML tree as JSON (a yajl tree), the way kubectl turns a
 * manifest into the JSON it sends: plain scalars are resolved with the
 * YAML 1.2 core schema (null, true/false, integers in decimal, 0o octal
 * and 0x hex, floats), quoted and block scalars stay strings. Values JSON
 * cannot hold (.inf, .nan, integers beyond 64 bits in octal or hex) stay
 * strings too. yes/no/on/off are strings, as in YAML 1.2. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/yaml.h"

static int all(const char *s, size_t n, const char *set)
{
  size_t i;
  if (n == 0)
    return 0;
  for (i = 0; i < n; i++)
    if (!strchr(set, s[i]))
      return 0;
  return 1;
}

#define DIGITS "0123456789"

/* Decimal digits without leading zeros. */
static void put_digits(struct carp_buf *b, const char *s, size_t n)
{
  while (n > 1 && *s == '0') {
    s++;
    n--;
  }
  carp_buf_append(b, s, n);
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? written as JSON. */
static int put_float(struct carp_buf *b, const char *s)
{
  const char *p = s, *int_start, *frac_start = NULL, *exp = NULL;
  size_t int_len, frac_len = 0;
  if (*p == '+' || *p == '-')
    p++;
  int_start = p;
  while (*p >= '0' && *p <= '9')
    p++;
  int_len = (size_t)(p - int_start);
  if (*p == '.') {
    frac_start = ++p;
    while (*p >= '0' && *p <= '9')
      p++;
    frac_len = (size_t)(p - frac_start);
  }
  if (int_len == 0 && frac_len == 0)
    return 0;
  if (*p == 'e' || *p == 'E') {
    const char *e = p + 1;
    if (*e == '+' || *e == '-')
      e++;
    if (!all(e, strlen(e), DIGITS))
      return 0;
    exp = p;
  } else if (*p) {
    return 0;
  }
  if (*s == '-')
    carp_buf_putc(b, '-');
  if (int_len)
    put_digits(b, int_start, int_len);
  else
    carp_buf_putc(b, '0');
  if (frac_start) {
    carp_buf_putc(b, '.');
    if (frac_len)
      carp_buf_append(b, frac_start, frac_len);
    else
      carp_buf_putc(b, '0');
  }
  if (exp)
    carp_buf_puts(b, exp);
  return 1;
}

static int is_plain(const char *s, const char *const *words)
{
  for (; *words; words++)
    if (!strcmp(s, *words))
      return 1;
  return 0;
}

enum carp_yaml_scalar carp_yaml_scalar_resolve(const char *s, size_t len,
                                               int plain, struct carp_buf *num)
{
  static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", NULL};
  static const char *const falses[] = {"false", "False", "FALSE", NULL};

  if (!plain)
    return CARP_YAML_STRING;
  if (len == 0 || is_plain(s, nulls))
    return CARP_YAML_NULL;
  if (is_plain(s, trues))
    return CARP_YAML_TRUE;
  if (is_plain(s, falses))
    return CARP_YAML_FALSE;
  if ((len > 2 && s[0] == '0' && s[1] == 'o' &&
       all(s + 2, len - 2, "01234567")) ||
      (len > 2 && s[0] == '0' && s[1] == 'x' &&
       all(s + 2, len - 2, DIGITS "abcdefABCDEF"))) {
    unsigned long long v;
    char *end;
    errno = 0;
    v = strtoull(s + 2, &end, s[1] == 'o' ? 8 : 16);
    if (!errno && !*end && v <= (unsigned long long)INT64_MAX) {
      carp_buf_printf(num, "%llu", v);
      return CARP_YAML_NUMBER;
    }
  } else {
    const char *d = s + (s[0] == '-' || s[0] == '+');
    size_t dl = len - (size_t)(d - s);
    if (all(d, dl, DIGITS)) {
      if (s[0] == '-')
        carp_buf_putc(num, '-');
      put_digits(num, d, dl);
      return CARP_YAML_NUMBER;
    }
    if (put_float(num, s))
      return CARP_YAML_NUMBER;
  }
  return CARP_YAML_STRING;
}

static void scalar(struct carp_buf *b, const struct carp_yaml_node *n)
{
  switch (carp_yaml_scalar_resolve(n->scalar, n->scalar_len, n->plain, b)) {
  case CARP_YAML_NULL:
    carp_buf_puts(b, "null");
    break;
  case CARP_YAML_TRUE:
    carp_buf_puts(b, "true");
    break;
  case CARP_YAML_FALSE:
    carp_buf_puts(b, "false");
    break;
  case CARP_YAML_NUMBER:
    break; /* written by the resolver */
  case CARP_YAML_STRING:
    carp_json_quote(b, n->scalar, n->scalar_len);
    break;
  }
}

static void node(struct carp_buf *b, const struct carp_yaml_node *n)
{
  size_t i;
  if (!n) {
    carp_buf_puts(b, "null");
    return;
  }
  switch (n->type) {
  case CARP_YAML_SCALAR:
    scalar(b, n);
    break;
  case CARP_YAML_SEQUENCE:
    carp_buf_putc(b, '[');
    for (i = 0; i < n->len; i++) {
      if (i)
        carp_buf_putc(b, ',');
      node(b, n->items[i]);
    }
    carp_buf_putc(b, ']');
    break;
  case CARP_YAML_MAPPING:
    carp_buf_putc(b, '{');
    for (i = 0; i < n->len; i++) {
      if (i)
        carp_buf_putc(b, ',');
      carp_json_quote(b, n->keys[i], strlen(n->keys[i]));
      carp_buf_putc(b, ':');
      node(b, n->items[i]);
    }
    carp_buf_putc(b, '}');
    break;
  }
}

int carp_yaml_to_json_text(const struct carp_yaml_node *n, struct carp_buf *out)
{
  node(out, n);
  return out->overflowed ? CARP_ETOOBIG : 0;
}

int carp_yaml_to_json(const struct carp_yaml_node *n, yajl_val *out, char **err)
{
  struct carp_buf b;
  int rc;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  node(&b, n);
  rc = carp_json_parse(b.ptr ? b.ptr : "null", b.len ? b.len : 4, out, err);
  carp_buf_free(&b);
  return rc;
}
