/* validate.c: the toolkit every validate_*.c builds on - collecting
 * problems worded as the API server words them, field paths, the CRD
 * patterns (compiled once as POSIX extended regular expressions) and the
 * per-field schema checks (type, required, length, pattern, enum, bounds,
 * list/map sizes, set uniqueness), plus Kubernetes' qualified-name and
 * label-value checks that Karpenter runs at runtime. */
#include "validate_int.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/duration.h"
#include "carpenter/quantity.h"

const char V_PAT_DURATION[] = "^(([0-9]+(s|m|h))+|Never)$";
const char V_PAT_TGP[] = "^([0-9]+(s|m|h))+$";
const char V_PAT_QUANTITY[] =
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE]("
    "\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";
const char V_PAT_LABEL_VALUE[] =
    "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";
const char V_PAT_QUALIFIED_NAME[] =
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?"
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";

/* ---- collecting problems ---- */

void v_init(struct vctx *v)
{
  carp_buf_init(&v->out, CARP_BUF_UNLIMITED);
  v->n = 0;
}

void v_err(struct vctx *v, const char *path, const char *fmt, ...)
{
  va_list ap;
  v->n++;
  if (v->n > VCTX_MAX_ERRORS)
    return;
  if (v->out.len)
    carp_buf_puts(&v->out, "; ");
  carp_buf_printf(&v->out, "%s: ", path);
  va_start(ap, fmt);
  carp_buf_vprintf(&v->out, fmt, ap);
  va_end(ap);
}

int v_done(struct vctx *v, char **reason)
{
  if (reason)
    *reason = NULL;
  if (v->n == 0) {
    carp_buf_free(&v->out);
    return 0;
  }
  if (v->n > VCTX_MAX_ERRORS)
    carp_buf_printf(&v->out, "; and %u more", v->n - VCTX_MAX_ERRORS);
  if (reason)
    *reason = carp_buf_steal(&v->out, NULL);
  carp_buf_free(&v->out);
  return CARP_EINVALID;
}

/* ---- paths ---- */

const char *v_sub(char *out, const char *path, const char *field)
{
  if (!*path)
    snprintf(out, VPATH, "%s", field);
  else
    snprintf(out, VPATH, "%s.%s", path, field);
  return out;
}

const char *v_idx(char *out, const char *path, size_t i)
{
  snprintf(out, VPATH, "%s[%zu]", path, i);
  return out;
}

const char *v_key(char *out, const char *path, const char *key)
{
  snprintf(out, VPATH, "%s[%s]", path, key);
  return out;
}

/* ---- patterns ---- */

struct rx {
  const char *pattern;
  regex_t re;
  int ok;
};

static struct rx rx_cache[64];
static size_t rx_n;

static struct rx *rx_get(const char *pattern)
{
  struct carp_buf t;
  const char *p;
  size_t i;
  struct rx *r;

  for (i = 0; i < rx_n; i++)
    if (rx_cache[i].pattern == pattern || !strcmp(rx_cache[i].pattern, pattern))
      return &rx_cache[i];
  if (rx_n == CARP_ARRAY_LEN(rx_cache))
    abort(); /* a new pattern was added: grow rx_cache */
  /* RE2 classes the CRDs use, in POSIX terms. */
  carp_buf_init(&t, CARP_BUF_UNLIMITED);
  for (p = pattern; *p; p++) {
    if (p[0] == '\\' && p[1] == 'd') {
      carp_buf_puts(&t, "[0-9]");
      p++;
    } else if (p[0] == '\\' && p[1] == 's') {
      carp_buf_puts(&t, "[[:space:]]");
      p++;
    } else if (p[0] == '\\' && p[1] == '/') {
      carp_buf_putc(&t, '/');
      p++;
    } else if (p[0] == '\\' && p[1]) {
      carp_buf_append(&t, p, 2);
      p++;
    } else {
      carp_buf_putc(&t, *p);
    }
  }
  r = &rx_cache[rx_n++];
  r->pattern = pattern;
  r->ok = regcomp(&r->re, carp_buf_cstr(&t), REG_EXTENDED | REG_NOSUB) == 0;
  carp_buf_free(&t);
  return r;
}

int v_match(const char *pattern, const char *s)
{
  struct rx *r;
  /* POSIX matchers are not linear like RE2: a huge string against
   * "(.+)\s(.+)..." would stall the loop. No real field comes close. */
  if (strlen(s) > V_MAX_MATCH_LEN)
    return 0;
  r = rx_get(pattern);
  if (!r || !r->ok)
    return 0;
  return regexec(&r->re, s, 0, NULL, 0) == 0;
}

/* ---- values ---- */

yajl_val v_get(yajl_val obj, const char *key)
{
  yajl_val x = carp_json_get(obj, key, NULL);
  return x && !YAJL_IS_NULL(x) ? x : NULL;
}

const char *v_typename(yajl_val val)
{
  if (YAJL_IS_STRING(val))
    return "string";
  if (YAJL_IS_INTEGER(val))
    return "integer";
  if (YAJL_IS_NUMBER(val))
    return "number";
  if (YAJL_IS_OBJECT(val))
    return "object";
  if (YAJL_IS_ARRAY(val))
    return "array";
  if (YAJL_IS_TRUE(val) || YAJL_IS_FALSE(val))
    return "boolean";
  return "null";
}

static void type_err(struct vctx *v, const char *path, yajl_val val,
                     const char *want)
{
  v_err(v, path, "Invalid value: \"%s\": must be of type %s", v_typename(val),
        want);
}

/* A string quoted for a message, cut at 200 bytes. */
static const char *quoted(char *out, size_t cap, const char *s)
{
  struct carp_buf b;
  size_t n = strlen(s);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_json_quote(&b, s, n > 200 ? 200 : n);
  snprintf(out, cap, "%s%s", carp_buf_cstr(&b), n > 200 ? "..." : "");
  carp_buf_free(&b);
  return out;
}

void v_check_str(struct vctx *v, const char *path, const char *s,
                 const struct vstr *rule)
{
  char q[256];
  size_t len = strlen(s);
  if (!rule)
    return;
  if (rule->maxlen && len > rule->maxlen)
    v_err(v, path, "Too long: may not be more than %zu bytes", rule->maxlen);
  if (rule->minlen && len < rule->minlen)
    v_err(v, path, "Invalid value: %s: should be at least %zu chars long",
          quoted(q, sizeof(q), s), rule->minlen);
  if (rule->pattern && len > V_MAX_MATCH_LEN) {
    if (!rule->maxlen || len <= rule->maxlen)
      v_err(v, path, "Too long: may not be more than %d bytes",
            V_MAX_MATCH_LEN);
  } else if (rule->pattern && !v_match(rule->pattern, s))
    v_err(v, path, "Invalid value: %s: should match '%s'",
          quoted(q, sizeof(q), s), rule->pattern);
  if (rule->enums) {
    const char *const *e;
    struct carp_buf b;
    for (e = rule->enums; *e; e++)
      if (!strcmp(*e, s))
        return;
    carp_buf_init(&b, CARP_BUF_UNLIMITED);
    for (e = rule->enums; *e; e++)
      carp_buf_printf(&b, "%s\"%s\"", e == rule->enums ? "" : ", ", *e);
    v_err(v, path, "Unsupported value: %s: supported values: %s",
          quoted(q, sizeof(q), s), carp_buf_cstr(&b));
    carp_buf_free(&b);
  }
}

const char *v_str(struct vctx *v, yajl_val obj, const char *path,
                  const char *key, int required, const struct vstr *rule)
{
  char p[VPATH];
  yajl_val x = v_get(obj, key);
  v_sub(p, path, key);
  if (!x) {
    if (required)
      v_err(v, p, "Required value");
    return NULL;
  }
  if (!YAJL_IS_STRING(x)) {
    type_err(v, p, x, "string");
    return NULL;
  }
  v_check_str(v, p, x->u.string, rule);
  return x->u.string;
}

static void check_bounds(struct vctx *v, const char *path, int64_t x,
                         int64_t min, int64_t max)
{
  if (x < min)
    v_err(v, path,
          "Invalid value: %lld: should be greater than or equal to %lld",
          (long long)x, (long long)min);
  if (x > max)
    v_err(v, path, "Invalid value: %lld: should be less than or equal to %lld",
          (long long)x, (long long)max);
}

int v_int(struct vctx *v, yajl_val obj, const char *path, const char *key,
          int required, int64_t min, int64_t max, int64_t *out)
{
  char p[VPATH];
  yajl_val x = v_get(obj, key);
  v_sub(p, path, key);
  if (!x) {
    if (required)
      v_err(v, p, "Required value");
    return 0;
  }
  if (!YAJL_IS_INTEGER(x)) {
    type_err(v, p, x, "integer");
    return 0;
  }
  check_bounds(v, p, YAJL_GET_INTEGER(x), min, max);
  if (out)
    *out = YAJL_GET_INTEGER(x);
  return 1;
}

int v_bool(struct vctx *v, yajl_val obj, const char *path, const char *key,
           int *out)
{
  char p[VPATH];
  yajl_val x = v_get(obj, key);
  if (!x)
    return 0;
  if (!YAJL_IS_TRUE(x) && !YAJL_IS_FALSE(x)) {
    type_err(v, v_sub(p, path, key), x, "boolean");
    return 0;
  }
  if (out)
    *out = YAJL_IS_TRUE(x);
  return 1;
}

yajl_val v_obj(struct vctx *v, yajl_val obj, const char *path, const char *key,
               int required)
{
  char p[VPATH];
  yajl_val x = v_get(obj, key);
  v_sub(p, path, key);
  if (!x) {
    if (required)
      v_err(v, p, "Required value");
    return NULL;
  }
  if (!YAJL_IS_OBJECT(x)) {
    type_err(v, p, x, "object");
    return NULL;
  }
  return x;
}

yajl_val v_arr(struct vctx *v, yajl_val obj, const char *path, const char *key,
               int required, size_t max_items)
{
  char p[VPATH];
  yajl_val x = v_get(obj, key);
  v_sub(p, path, key);
  if (!x) {
    if (required)
      v_err(v, p, "Required value");
    return NULL;
  }
  if (!YAJL_IS_ARRAY(x)) {
    type_err(v, p, x, "array");
    return NULL;
  }
  if (max_items && x->u.array.len > max_items)
    v_err(v, p, "Too many: %zu: must have at most %zu items", x->u.array.len,
          max_items);
  return x;
}

void v_str_list(struct vctx *v, yajl_val arr, const char *path,
                const struct vstr *rule, int set)
{
  size_t i, j;
  char p[VPATH], q[256];
  for (i = 0; arr && i < arr->u.array.len; i++) {
    yajl_val x = arr->u.array.values[i];
    v_idx(p, path, i);
    if (!YAJL_IS_STRING(x)) {
      type_err(v, p, x, "string");
      continue;
    }
    v_check_str(v, p, x->u.string, rule);
    for (j = 0; set && j < i; j++) {
      yajl_val y = arr->u.array.values[j];
      if (YAJL_IS_STRING(y) && !strcmp(x->u.string, y->u.string)) {
        v_err(v, p, "Duplicate value: %s", quoted(q, sizeof(q), x->u.string));
        break;
      }
    }
  }
}

void v_int_list(struct vctx *v, yajl_val arr, const char *path, int64_t min,
                int64_t max, int set)
{
  size_t i, j;
  char p[VPATH];
  for (i = 0; arr && i < arr->u.array.len; i++) {
    yajl_val x = arr->u.array.values[i];
    v_idx(p, path, i);
    if (!YAJL_IS_INTEGER(x)) {
      type_err(v, p, x, "integer");
      continue;
    }
    check_bounds(v, p, YAJL_GET_INTEGER(x), min, max);
    for (j = 0; set && j < i; j++) {
      yajl_val y = arr->u.array.values[j];
      if (YAJL_IS_INTEGER(y) && YAJL_GET_INTEGER(y) == YAJL_GET_INTEGER(x)) {
        v_err(v, p, "Duplicate value: %lld", (long long)YAJL_GET_INTEGER(x));
        break;
      }
    }
  }
}

yajl_val v_str_map(struct vctx *v, yajl_val obj, const char *path,
                   const char *key, size_t max_props, const struct vstr *rule)
{
  char p[VPATH], pk[VPATH];
  size_t i;
  yajl_val m = v_obj(v, obj, path, key, 0);
  if (!m)
    return NULL;
  v_sub(p, path, key);
  if (max_props && m->u.object.len > max_props)
    v_err(v, p, "Too many: %zu: must have at most %zu items", m->u.object.len,
          max_props);
  for (i = 0; i < m->u.object.len; i++) {
    yajl_val x = m->u.object.values[i];
    v_key(pk, p, m->u.object.keys[i]);
    if (!YAJL_IS_STRING(x)) {
      type_err(v, pk, x, "string");
      continue;
    }
    v_check_str(v, pk, x->u.string, rule);
  }
  return m;
}

void v_quantity(struct vctx *v, const char *path, yajl_val val)
{
  char q[256];
  int64_t milli;
  const char *s;
  if (YAJL_IS_INTEGER(val) || YAJL_IS_NUMBER(val))
    s = val->u.number.r;
  else if (YAJL_IS_STRING(val))
    s = val->u.string;
  else {
    type_err(v, path, val, "integer or string");
    return;
  }
  if (!v_match(V_PAT_QUANTITY, s))
    v_err(v, path, "Invalid value: %s: should match '%s'",
          quoted(q, sizeof(q), s), V_PAT_QUANTITY);
  else if (carp_quantity_parse(s, &milli))
    v_err(v, path, "Invalid value: %s: quantity too large",
          quoted(q, sizeof(q), s));
  else if (milli < 0)
    /* A limit or request below zero can never be met: refused rather
     * than accepted and never launched for. */
    v_err(v, path, "Invalid value: %s: should be greater than or equal to 0",
          quoted(q, sizeof(q), s));
}

const char *v_duration(struct vctx *v, yajl_val obj, const char *path,
                       const char *field, int required, const char *pattern)
{
  const struct vstr rule = {.pattern = pattern};
  char p[VPATH];
  int64_t ms;
  const char *s = v_str(v, obj, path, field, required, &rule);
  if (s && v_match(pattern, s) && carp_duration_parse(s, 1, &ms)) {
    v_err(v, v_sub(p, path, field),
          "Invalid value: \"%s\": duration out of range", s);
    return NULL;
  }
  return s;
}

/* ---- Kubernetes name checks ---- */

static const char PAT_NAME_PART[] =
    "^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
static const char PAT_DNS1123_SUBDOMAIN[] =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

const char *v_qualified_name_error(const char *s)
{
  const char *slash = strchr(s, '/');
  const char *name = s;
  if (slash) {
    size_t plen = (size_t)(slash - s);
    char prefix[256];
    if (strchr(slash + 1, '/'))
      return "a qualified name must consist of alphanumeric characters, '-', "
             "'_' or '.', and must start and end with an alphanumeric "
             "character, with an optional DNS subdomain prefix and '/' (e.g. "
             "'example.com/MyName')";
    if (plen == 0)
      return "prefix part must be non-empty";
    if (plen > 253)
      return "prefix part must be no more than 253 characters";
    memcpy(prefix, s, plen);
    prefix[plen] = '\0';
    if (!v_match(PAT_DNS1123_SUBDOMAIN, prefix))
      return "prefix part a lowercase RFC 1123 subdomain must consist of "
             "lower case alphanumeric characters, '-' or '.', and must start "
             "and end with an alphanumeric character (e.g. 'example.com')";
    name = slash + 1;
  }
  if (!*name)
    return "name part must be non-empty";
  if (strlen(name) > 63)
    return "name part must be no more than 63 characters";
  if (!v_match(PAT_NAME_PART, name))
    return "name part must consist of alphanumeric characters, '-', '_' or "
           "'.', and must start and end with an alphanumeric character (e.g. "
           "'MyName', or 'my.name', or '123-abc')";
  return NULL;
}

const char *v_label_value_error(const char *s)
{
  if (strlen(s) > 63)
    return "must be no more than 63 characters";
  if (!v_match(V_PAT_LABEL_VALUE, s))
    return "a valid label must be an empty string or consist of alphanumeric "
           "characters, '-', '_' or '.', and must start and end with an "
           "alphanumeric character (e.g. 'MyValue', or 'my_value', or "
           "'12345')";
  return NULL;
}

yajl_val v_spec(struct vctx *v, yajl_val obj)
{
  if (!YAJL_IS_OBJECT(obj)) {
    v_err(v, "<root>", "Invalid value: \"%s\": must be of type object",
          v_typename(obj));
    return NULL;
  }
  return v_obj(v, obj, "", "spec", 1);
}
