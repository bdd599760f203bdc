/* jskip.c: passing over a member no handler reads without the parser
 * (carp_jdec_pass_over). Every object the API server sends carries
 * metadata.managedFields: a quarter to a half of its bytes, and more of
 * its tokens, which yajl would lex and hand over one by one to be skipped.
 * A byte scan finds the member, checks that it is one of metadata (not
 * text inside a string, not after a key, not in an array or another
 * object: the parser's own state says, jdec.c),
 * and validates its value as strictly as yajl would before the parser is
 * fed the bytes after it. Whatever the scan is not sure of - comments,
 * bytes over 0x7f, deep nesting, a number just before it, whitespace where
 * Kubernetes writes none - it leaves to the parser, which then sees the
 * member as before: the fast path may only ever agree with the slow one. */
#include "jskip.h"

#include <string.h>

/* Outside a string: what a scan for a member stops at. */
enum { PLAIN = 0, QUOTE, SLASH };
static const unsigned char outside[256] = {['"'] = QUOTE, ['/'] = SLASH};
/* Inside a string: its end, an escape, and what JSON forbids there (control
 * characters) or what this scan leaves to the parser (UTF-8). */
enum { STR_PLAIN = 0, STR_END, STR_ESCAPE, STR_OTHER };
static const unsigned char inside[256] = {
#define R4(x)  x, x, x, x
#define R16(x) R4(x), R4(x), R4(x), R4(x)
    R16(STR_OTHER),  R16(STR_OTHER), /* 0x00-0x1f */
    ['"'] = STR_END, ['\\'] = STR_ESCAPE, [0x80] = R16(STR_OTHER),
    R16(STR_OTHER),  R16(STR_OTHER),      R16(STR_OTHER),
    R16(STR_OTHER),  R16(STR_OTHER),      R16(STR_OTHER),
    R16(STR_OTHER),
#undef R16
#undef R4
};

static int is_ws(unsigned char c)
{
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

void carp__jskip_scan(struct carp_jskip_scan *s, const char *text, size_t to)
{
  const unsigned char *p = (const unsigned char *)text;
  size_t i = s->at;
  while (i < to && !s->comment) {
    if (s->in_string) {
      unsigned char c = 0;
      while (i < to && (c = p[i]) != '"' && c != '\\')
        i++;
      if (i == to)
        break;
      /* An escape's byte may be the one at to: then to is inside. */
      i += c == '\\' ? 2 : 1;
      s->in_string = c == '\\';
      continue;
    }
    while (i < to && !outside[p[i]])
      i++;
    if (i == to)
      break;
    if (outside[p[i]] == SLASH) {
      s->comment = 1; /* it may hide a quote: the parser's job from here */
      break;
    }
    s->in_string = 1;
    i++;
  }
  s->at = i;
}

/* A string from its opening quote; the offset after its closing quote, or
 * 0. */
static size_t string_end(const unsigned char *p, size_t i, size_t n)
{
  static const char hex[] = "0123456789abcdefABCDEF";
  for (i++; i < n;) {
    unsigned char c = p[i];
    switch (inside[c]) {
    case STR_PLAIN:
      i++;
      continue;
    case STR_END:
      return i + 1;
    case STR_ESCAPE:
      if (i + 1 >= n)
        return 0;
      c = p[i + 1];
      if (c == 'u') {
        size_t k;
        if (i + 6 > n)
          return 0;
        for (k = 2; k < 6; k++)
          if (!p[i + k] || !strchr(hex, p[i + k]))
            return 0;
        i += 6;
      } else if (c && strchr("\"\\/bfnrt", c)) {
        i += 2;
      } else {
        return 0;
      }
      continue;
    default:
      return 0;
    }
  }
  return 0;
}

static size_t digits(const unsigned char *p, size_t i, size_t n)
{
  while (i < n && p[i] >= '0' && p[i] <= '9')
    i++;
  return i;
}

/* A number as yajl's lexer reads one; the offset after it, or 0. A number
 * that runs to the end of the text is left to the parser (it may go on). */
static size_t number_end(const unsigned char *p, size_t i, size_t n)
{
  size_t j;
  if (p[i] == '-')
    i++;
  if (i >= n)
    return 0;
  if (p[i] == '0')
    i++;
  else if (p[i] >= '1' && p[i] <= '9')
    i = digits(p, i, n);
  else
    return 0;
  if (i < n && p[i] == '.') {
    j = digits(p, i + 1, n);
    if (j == i + 1)
      return 0;
    i = j;
  }
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    i++;
    if (i < n && (p[i] == '+' || p[i] == '-'))
      i++;
    j = digits(p, i, n);
    if (j == i)
      return 0;
    i = j;
  }
  return i < n ? i : 0;
}

static size_t literal_end(const unsigned char *p, size_t i, size_t n,
                          const char *word)
{
  size_t len = strlen(word);
  return n - i >= len && !memcmp(p + i, word, len) ? i + len : 0;
}

#define MAX_NEST 256

size_t carp__jskip_value(const char *text, size_t i, size_t n)
{
  const unsigned char *p = (const unsigned char *)text;
  unsigned char open[MAX_NEST]; /* '{' or '[' */
  size_t depth = 0;

value:
  while (i < n && is_ws(p[i]))
    i++;
  if (i >= n)
    return 0;
  switch (p[i]) {
  case '{':
  case '[':
    if (depth == MAX_NEST)
      return 0;
    open[depth++] = p[i++];
    while (i < n && is_ws(p[i]))
      i++;
    if (i < n && p[i] == (open[depth - 1] == '{' ? '}' : ']')) {
      depth--;
      i++;
      goto after;
    }
    if (open[depth - 1] == '{')
      goto key;
    goto value;
  case '"':
    i = string_end(p, i, n);
    break;
  case 't':
    i = literal_end(p, i, n, "true");
    break;
  case 'f':
    i = literal_end(p, i, n, "false");
    break;
  case 'n':
    i = literal_end(p, i, n, "null");
    break;
  default:
    i = number_end(p, i, n);
    break;
  }
  if (!i)
    return 0;

after:
  if (!depth)
    return i;
  while (i < n && is_ws(p[i]))
    i++;
  if (i >= n)
    return 0;
  if (p[i] == ',') {
    i++;
    if (open[depth - 1] == '[')
      goto value;
    while (i < n && is_ws(p[i]))
      i++;
    goto key;
  }
  if (p[i] != (open[depth - 1] == '{' ? '}' : ']'))
    return 0;
  depth--;
  i++;
  goto after;

key:
  if (i >= n || p[i] != '"' || !(i = string_end(p, i, n)))
    return 0;
  while (i < n && is_ws(p[i]))
    i++;
  if (i >= n || p[i] != ':')
    return 0;
  i++;
  goto value;
}

int carp__jskip_ends_value(const char *text, size_t q)
{
  while (q > 0 && is_ws((unsigned char)text[q - 1]))
    q--;
  return q > 0 && text[q - 1] && strchr("\"}]el", text[q - 1]);
}

int carp__jskip_member_follows(const char *text, size_t i, size_t n)
{
  while (i < n && is_ws((unsigned char)text[i]))
    i++;
  return i < n && (text[i] == ',' || text[i] == '}');
}
