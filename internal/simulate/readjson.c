/* readjson.c: a JSON snapshot into tree events (tree.c).
 *
 * `kubectl get -o json` of a large cluster is most of a gigabyte, more than
 * half of it the indentation. yajl's lexer takes about 1.5 s over 880 MB of
 * that; this recursive-descent parser, which skips runs of indentation
 * eight bytes at a time and hands strings to the tree without copying them
 * twice, takes a third of it. It is strict JSON (RFC 8259): one or more
 * values one after the other (`kubectl get pods -o json; kubectl get
 * nodes -o json`), strings checked for control characters and UTF-8. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "sim_int.h"

struct parser {
  struct sim_tree *t;
  const char *start, *p, *end;
  struct carp_buf scratch; /* strings with escapes, decoded */
  const char *problem;     /* a syntax error, at p */
};

static int syntax(struct parser *ps, const char *problem)
{
  ps->problem = problem;
  return CARP_EPARSE;
}

static void skip_ws(struct parser *ps)
{
  const char *p = ps->p, *end = ps->end;
  for (;;) {
    while (end - p >= 8 && !memcmp(p, "        ", 8))
      p += 8;
    if (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
      p++;
    else
      break;
  }
  ps->p = p;
}

/* Length of a valid UTF-8 sequence starting at p (a byte >= 0x80), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
  size_t n, i;
  uint32_t c;
  if (*p >= 0xc2 && *p <= 0xdf) {
    n = 2;
    c = *p & 0x1f;
  } else if (*p >= 0xe0 && *p <= 0xef) {
    n = 3;
    c = *p & 0x0f;
  } else if (*p >= 0xf0 && *p <= 0xf4) {
    n = 4;
    c = *p & 0x07;
  } else {
    return 0;
  }
  if ((size_t)(end - p) < n)
    return 0;
  for (i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    c = c << 6 | (p[i] & 0x3f);
  }
  if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
      (n == 4 && (c < 0x10000 || c > 0x10ffff)))
    return 0;
  return n;
}

static int hex4(const char *p, uint32_t *out)
{
  int i;
  *out = 0;
  for (i = 0; i < 4; i++) {
    char c = p[i];
    *out <<= 4;
    if (c >= '0' && c <= '9')
      *out |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
      *out |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      *out |= (uint32_t)(c - 'A' + 10);
    else
      return -1;
  }
  return 0;
}

static void put_utf8(struct carp_buf *b, uint32_t c)
{
  char u[4];
  size_t n;
  if (c < 0x80) {
    u[0] = (char)c;
    n = 1;
  } else if (c < 0x800) {
    u[0] = (char)(0xc0 | c >> 6);
    u[1] = (char)(0x80 | (c & 0x3f));
    n = 2;
  } else if (c < 0x10000) {
    u[0] = (char)(0xe0 | c >> 12);
    u[1] = (char)(0x80 | (c >> 6 & 0x3f));
    u[2] = (char)(0x80 | (c & 0x3f));
    n = 3;
  } else {
    u[0] = (char)(0xf0 | c >> 18);
    u[1] = (char)(0x80 | (c >> 12 & 0x3f));
    u[2] = (char)(0x80 | (c >> 6 & 0x3f));
    u[3] = (char)(0x80 | (c & 0x3f));
    n = 4;
  }
  carp_buf_append(b, u, n);
}

/* A string escape at ps->p (the backslash), decoded into scratch. */
static int escape(struct parser *ps)
{
  const char *p = ps->p + 1;
  uint32_t c, lo;
  if (p >= ps->end)
    return syntax(ps, "the text ends inside a string");
  switch (*p) {
  case '"':
  case '\\':
  case '/':
    carp_buf_putc(&ps->scratch, *p);
    break;
  case 'b':
    carp_buf_putc(&ps->scratch, '\b');
    break;
  case 'f':
    carp_buf_putc(&ps->scratch, '\f');
    break;
  case 'n':
    carp_buf_putc(&ps->scratch, '\n');
    break;
  case 'r':
    carp_buf_putc(&ps->scratch, '\r');
    break;
  case 't':
    carp_buf_putc(&ps->scratch, '\t');
    break;
  case 'u':
    if (ps->end - p < 5 || hex4(p + 1, &c))
      return syntax(ps, "a \\u escape needs four hex digits");
    p += 4;
    if (c >= 0xd800 && c <= 0xdbff) {
      if (ps->end - p < 7 || p[1] != '\\' || p[2] != 'u' || hex4(p + 3, &lo) ||
          lo < 0xdc00 || lo > 0xdfff)
        return syntax(ps, "a lone UTF-16 surrogate in a \\u escape");
      c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
      p += 6;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return syntax(ps, "a lone UTF-16 surrogate in a \\u escape");
    }
    put_utf8(&ps->scratch, c);
    break;
  default:
    return syntax(ps, "an unknown escape in a string");
  }
  ps->p = p + 1;
  return 0;
}

/* A string at ps->p (the opening quote): its bytes, unescaped, in *s. */
static int string(struct parser *ps, const char **s, size_t *len)
{
  const char *p = ++ps->p, *end = ps->end, *run = p;
  int escaped = 0, rc;
  for (;;) {
    while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 &&
           (unsigned char)*p < 0x80)
      p++;
    if (p == end) {
      ps->p = p;
      return syntax(ps, "the text ends inside a string");
    }
    if (*p == '"')
      break;
    if ((unsigned char)*p >= 0x80) {
      size_t n = utf8_len((const unsigned char *)p, (const unsigned char *)end);
      if (!n) {
        ps->p = p;
        return syntax(ps, "invalid UTF-8 in a string");
      }
      p += n;
      continue;
    }
    if (*p != '\\') {
      ps->p = p;
      return syntax(ps, "a control character in a string");
    }
    if (!escaped) {
      carp_buf_reset(&ps->scratch);
      escaped = 1;
    }
    carp_buf_append(&ps->scratch, run, (size_t)(p - run));
    ps->p = p;
    if ((rc = escape(ps)))
      return rc;
    p = run = ps->p;
  }
  if (escaped) {
    carp_buf_append(&ps->scratch, run, (size_t)(p - run));
    *s = ps->scratch.ptr ? ps->scratch.ptr : "";
    *len = ps->scratch.len;
  } else {
    *s = run;
    *len = (size_t)(p - run);
  }
  ps->p = p + 1;
  return 0;
}

static int digits(const char **p, const char *end)
{
  const char *s = *p;
  while (*p < end && **p >= '0' && **p <= '9')
    (*p)++;
  return *p > s;
}

static int number(struct parser *ps)
{
  const char *s = ps->p, *p = s, *end = ps->end;
  if (p < end && *p == '-')
    p++;
  if (p < end && *p == '0')
    p++;
  else if (!digits(&p, end))
    return syntax(ps, "not a JSON value");
  if (p < end && *p == '.') {
    p++;
    if (!digits(&p, end)) {
      ps->p = p;
      return syntax(ps, "a number needs digits after the point");
    }
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-'))
      p++;
    if (!digits(&p, end)) {
      ps->p = p;
      return syntax(ps, "a number needs digits in its exponent");
    }
  }
  ps->p = p;
  return sim_tree_number(ps->t, s, (size_t)(p - s));
}

static int literal(struct parser *ps, const char *word)
{
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
    return syntax(ps, "not a JSON value");
  ps->p += n;
  switch (word[0]) {
  case 't':
    return sim_tree_bool(ps->t, 1);
  case 'f':
    return sim_tree_bool(ps->t, 0);
  default:
    return sim_tree_null(ps->t);
  }
}

static int value(struct parser *ps);

/* Containers: open_container() at '{' or '[' and next() after each member or
 * element return 1 when another member follows, 0 when the container has
 * closed (and been ended in the tree), or an error. */
static int open_container(struct parser *ps, int obj)
{
  int rc;
  ps->p++;
  rc = obj ? sim_tree_start_map(ps->t) : sim_tree_start_array(ps->t);
  if (rc)
    return rc;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
    ps->p++;
    return sim_tree_end(ps->t);
  }
  return 1;
}

static int next(struct parser *ps, char close, const char *problem)
{
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == ',') {
    ps->p++;
    skip_ws(ps);
    return 1;
  }
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    return sim_tree_end(ps->t);
  }
  return syntax(ps, problem);
}

static int object(struct parser *ps)
{
  const char *k;
  size_t klen;
  int rc;
  for (rc = open_container(ps, 1); rc == 1;
       rc = next(ps, '}', "a ',' or '}' must follow an object member")) {
    if (ps->p == ps->end || *ps->p != '"')
      return syntax(ps, "an object key must be a string");
    if ((rc = string(ps, &k, &klen)) || (rc = sim_tree_key(ps->t, k, klen)))
      return rc;
    skip_ws(ps);
    if (ps->p == ps->end || *ps->p != ':')
      return syntax(ps, "a ':' must follow an object key");
    ps->p++;
    skip_ws(ps);
    if ((rc = value(ps)))
      return rc;
  }
  return rc;
}

static int array(struct parser *ps)
{
  int rc;
  for (rc = open_container(ps, 0); rc == 1;
       rc = next(ps, ']', "a ',' or ']' must follow an array element"))
    if ((rc = value(ps)))
      return rc;
  return rc;
}

static int value(struct parser *ps)
{
  const char *s;
  size_t len;
  int rc;
  if (ps->p == ps->end)
    return syntax(ps, "the text ends where a value should be");
  switch (*ps->p) {
  case '{':
    return object(ps);
  case '[':
    return array(ps);
  case '"':
    if ((rc = string(ps, &s, &len)))
      return rc;
    return sim_tree_string(ps->t, s, len);
  case 't':
    return literal(ps, "true");
  case 'f':
    return literal(ps, "false");
  case 'n':
    return literal(ps, "null");
  default:
    return number(ps);
  }
}

int sim_read_json(struct sim_tree *t, const char *text, size_t len, char *err,
                  size_t errsz)
{
  struct parser ps;
  int rc = 0;
  memset(&ps, 0, sizeof(ps));
  ps.t = t;
  ps.start = ps.p = text;
  ps.end = text + len;
  carp_buf_init(&ps.scratch, CARP_BUF_UNLIMITED);
  for (;;) {
    skip_ws(&ps);
    if (ps.p == ps.end)
      break;
    if ((rc = value(&ps)))
      break;
  }
  carp_buf_free(&ps.scratch);
  if (rc == CARP_EPARSE) {
    size_t line = 1, col = 1;
    const char *p;
    for (p = ps.start; p < ps.p; p++) {
      if (*p == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    snprintf(err, errsz, "%s:%zu:%zu: %s%s", t->where.file, line, col,
             ps.problem ? "invalid JSON: " : "",
             ps.problem ? ps.problem : t->err);
  }
  return rc;
}
