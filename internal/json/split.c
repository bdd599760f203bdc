/* split.c: walking a JSON document's top level without building a tree.
 *
 * A list page from the API server is up to a megabyte of JSON. Parsing it
 * into one yajl tree allocates every node of every item at once and frees
 * them together, which leaves glibc's heap interleaved with the cache's
 * own long-lived objects; at 150,000 pods most of a cold sync went into
 * malloc's consolidation. Splitting the page first lets each item be
 * parsed, decoded and freed on its own. The scanner only finds where each
 * value ends (strings, escapes and nesting); yajl still validates every
 * piece that is parsed. */
#include <string.h>

#include "carpenter/error.h"
#include "carpenter/json.h"

static const char *skip_ws(const char *p, const char *end)
{
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

/* p is at the opening quote; returns past the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
  for (p++; p < end; p++) {
    if (*p == '\\') {
      p++;
      continue;
    }
    if (*p == '"')
      return p + 1;
    if (*p == '\0')
      return NULL;
  }
  return NULL;
}

/* Returns past the value starting at p, or NULL when it does not end. */
static const char *skip_value(const char *p, const char *end)
{
  int depth = 0;
  if (p >= end)
    return NULL;
  if (*p == '"')
    return skip_string(p, end);
  if (*p != '{' && *p != '[') {
    const char *s = p;
    while (p < end && !strchr(",}] \t\r\n", *p))
      p++;
    return p > s && memchr(s, '\0', (size_t)(p - s)) == NULL ? p : NULL;
  }
  while (p < end) {
    switch (*p) {
    case '"':
      p = skip_string(p, end);
      if (!p)
        return NULL;
      continue;
    case '{':
    case '[':
      depth++;
      break;
    case '}':
    case ']':
      if (--depth == 0)
        return p + 1;
      break;
    case '\0':
      return NULL;
    default:
      break;
    }
    p++;
  }
  return NULL;
}

/* Steps into a container opening with `open`: 1 with *pp at its first
 * value, 0 when it is empty and the text ends there, or CARP_EPARSE. */
static int enter(const char **pp, const char *end, char open, char close)
{
  const char *p = skip_ws(*pp, end);
  if (p == end || *p != open)
    return CARP_EPARSE;
  p = skip_ws(p + 1, end);
  if (p < end && *p == close)
    return skip_ws(p + 1, end) == end ? 0 : CARP_EPARSE;
  *pp = p;
  return 1;
}

/* After a value: 1 with *pp at the next one, 0 when the container closes
 * and the text ends there, or CARP_EPARSE. */
static int next(const char **pp, const char *end, char close)
{
  const char *p = skip_ws(*pp, end);
  if (p < end && *p == ',') {
    *pp = skip_ws(p + 1, end);
    return 1;
  }
  if (p < end && *p == close)
    return skip_ws(p + 1, end) == end ? 0 : CARP_EPARSE;
  return CARP_EPARSE;
}

int carp_json_each_member(const char *text, size_t len, carp_json_member_cb cb,
                          void *arg)
{
  const char *end = text + len;
  const char *p = text;
  int rc = enter(&p, end, '{', '}');
  while (rc > 0) {
    const char *key, *kend, *val, *vend;
    if (p == end || *p != '"')
      return CARP_EPARSE;
    key = p + 1;
    kend = skip_string(p, end);
    if (!kend)
      return CARP_EPARSE;
    p = skip_ws(kend, end);
    if (p == end || *p != ':')
      return CARP_EPARSE;
    val = skip_ws(p + 1, end);
    vend = skip_value(val, end);
    if (!vend)
      return CARP_EPARSE;
    rc = cb(key, (size_t)(kend - 1 - key), val, (size_t)(vend - val), arg);
    if (rc)
      return rc;
    p = vend;
    rc = next(&p, end, '}');
  }
  return rc;
}

int carp_json_each_element(const char *text, size_t len,
                           carp_json_element_cb cb, void *arg)
{
  const char *end = text + len;
  const char *p = text;
  int rc = enter(&p, end, '[', ']');
  while (rc > 0) {
    const char *vend = skip_value(p, end);
    if (!vend)
      return CARP_EPARSE;
    rc = cb(p, (size_t)(vend - p), arg);
    if (rc)
      return rc;
    p = vend;
    rc = next(&p, end, ']');
  }
  return rc;
}
