/* jdec.c: yajl's parser events (and trees, replayed) to the handlers of
 * include/carpenter/jdec.h.
 *
 * Nothing is allocated per value: a frame per entered container lives in
 * a fixed stack, a skipped container is only a nesting count (however
 * deep it goes), and the scalar at hand is copied into one reused buffer
 * so that handlers get a NUL-terminated string. */
#include "carpenter/jdec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/timeutil.h"
#include "jskip.h"

void carp_jdec_init(struct carp_jdec *d, carp_jdec_fn root, void *ctx)
{
  memset(d, 0, sizeof(*d));
  d->stack[0].fn = root;
  d->stack[0].ctx = ctx;
  d->stack[0].field = -1;
  carp_buf_init(&d->key, CARP_BUF_UNLIMITED);
  carp_buf_init(&d->text, CARP_BUF_UNLIMITED);
}

void carp_jdec_root(struct carp_jdec *d, carp_jdec_fn root, void *ctx)
{
  d->stack[0].fn = root;
  d->stack[0].ctx = ctx;
}

void carp_jdec_free(struct carp_jdec *d)
{
  carp_buf_free(&d->key);
  carp_buf_free(&d->text);
  CARP_FREE(&d->over);
  CARP_FREE(&d->parent);
}

void carp_jdec_pass_over(struct carp_jdec *d, const char *parent,
                         const char *key)
{
  struct carp_buf b;
  CARP_FREE(&d->over);
  CARP_FREE(&d->parent);
  d->parent = carp_strdup(parent);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_printf(&b, ",\"%s\":", key);
  d->over = carp_buf_steal(&b, &d->over_len);
}

/* ---- frames ---- */

int carp_jdec_enter(struct carp_jdec *d, carp_jdec_fn fn, void *ctx,
                    const char *const *keys)
{
  struct carp_jframe *f;
  int over;
  if (d->depth >= CARP_JDEC_MAX_DEPTH || d->entered)
    return CARP_ETOOBIG;
  /* Entered as the value of a member named d->parent (its key is the
   * current one; deliver() tells an array apart once entered). */
  over = d->parent && d->depth > 0 && !d->stack[d->depth].array && d->kp &&
         !strcmp(d->kp, d->parent);
  f = &d->stack[++d->depth];
  f->fn = fn;
  f->ctx = ctx;
  f->keys = keys;
  f->seen = 0;
  f->field = -1;
  f->index = 0;
  f->array = 0; /* set by deliver(), which knows the value's type */
  f->pass_over = over;
  d->entered = 1;
  return 0;
}

int carp_jdec_field(const struct carp_jdec *d)
{
  return d->stack[d->depth].field;
}

const char *carp_jdec_key(const struct carp_jdec *d, size_t *len)
{
  const struct carp_jframe *f = &d->stack[d->depth];
  if (f->array || d->depth == 0 || !d->kp) {
    if (len)
      *len = 0;
    return "";
  }
  if (len)
    *len = d->kn;
  return d->kp;
}

size_t carp_jdec_index(const struct carp_jdec *d)
{
  return d->stack[d->depth].index;
}

int carp_jdec_in_array(const struct carp_jdec *d)
{
  return d->depth > 0 && d->stack[d->depth].array;
}

/* The member's key k (n bytes, NUL-terminated): its place in the table,
 * first occurrence only. */
static void key_is(struct carp_jdec *d, const char *k, size_t n)
{
  struct carp_jframe *f = &d->stack[d->depth];
  size_t i;
  d->kp = k;
  d->kn = n;
  f->field = -1;
  for (i = 0; f->keys && f->keys[i] && i < 64; i++) {
    if (f->keys[i][0] != k[0] || strcmp(f->keys[i], k))
      continue;
    if (!(f->seen & (1ull << i))) {
      f->seen |= 1ull << i;
      f->field = (int)i;
    }
    break;
  }
}

/* A key from the parser: cut at a NUL (as a tree has it) and copied, as
 * the parser's buffer moves on. */
static void set_key(struct carp_jdec *d, const char *k, size_t n)
{
  const void *nul = memchr(k, '\0', n);
  if (nul)
    n = (size_t)((const char *)nul - k);
  carp_buf_reset(&d->key);
  carp_buf_append(&d->key, k, n);
  key_is(d, d->key.ptr, n);
}

/* A value for the frame on top. A container the handler did not enter is
 * skipped (*entered 0). */
static int deliver(struct carp_jdec *d, const struct carp_jval *v, int *entered)
{
  struct carp_jframe *f = &d->stack[d->depth];
  int depth = d->depth, rc;
  d->entered = 0;
  rc = f->fn(d, f->ctx, v);
  if (entered)
    *entered = d->depth > depth;
  if (d->depth > depth)
    d->stack[d->depth].array = v->type == CARP_JARRAY;
  d->entered = 0;
  f->index++;
  if (!f->array)
    f->field = -1;
  return rc;
}

static int end_frame(struct carp_jdec *d)
{
  static const struct carp_jval end = {CARP_JEND, NULL, 0};
  struct carp_jframe *f = &d->stack[d->depth];
  int rc = f->fn(d, f->ctx, &end);
  d->depth--;
  return rc;
}

/* ---- copies past the frames ----
 *
 * A copy (carp_jdec_copy) that reaches a container it cannot enter goes
 * on as d->raw: the container's events are written out as it is skipped.
 * Separators follow from what was written last: a value comes after ':'
 * or '[' (or else a ','), a key after '{' (or else a ','). */

static void raw_sep(struct carp_buf *out, int key)
{
  char last = out->len ? out->ptr[out->len - 1] : 0;
  if (key ? last != '{' : last != ':' && last != '[')
    carp_buf_putc(out, ',');
}

/* Strings and keys as a tree has them: cut at the first NUL. */
static void raw_string(struct carp_buf *out, const char *s, size_t n)
{
  const void *nul = memchr(s, '\0', n);
  if (nul)
    n = (size_t)((const char *)nul - s);
  carp_json_quote(out, s, n);
}

static void raw_key(struct carp_buf *out, const char *s, size_t n)
{
  raw_sep(out, 1);
  raw_string(out, s, n);
  carp_buf_putc(out, ':');
}

static void raw_scalar(struct carp_buf *out, enum carp_jtype t, const char *s,
                       size_t n)
{
  raw_sep(out, 0);
  if (t == CARP_JSTRING)
    raw_string(out, s, n);
  else if (t == CARP_JNUMBER)
    carp_buf_append(out, s, n);
  else
    carp_buf_puts(out, t == CARP_JNULL   ? "null"
                       : t == CARP_JTRUE ? "true"
                                         : "false");
}

static void copy_done(struct carp_jcopy *c);

/* The container the raw copy began with has ended. */
static void raw_end(struct carp_jdec *d)
{
  struct carp_jcopy *c = d->raw;
  d->raw = NULL;
  if (!c->depth)
    copy_done(c);
}

static void raw_tree(struct carp_buf *out, yajl_val v);

/* The members or elements of a tree's container (its start is written),
 * and its end. */
static void raw_children(struct carp_buf *out, yajl_val v)
{
  size_t i;
  if (YAJL_IS_OBJECT(v)) {
    for (i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      raw_key(out, k, strlen(k));
      raw_tree(out, v->u.object.values[i]);
    }
    carp_buf_putc(out, '}');
  } else {
    for (i = 0; i < v->u.array.len; i++)
      raw_tree(out, v->u.array.values[i]);
    carp_buf_putc(out, ']');
  }
}

/* A tree's value. */
static void raw_tree(struct carp_buf *out, yajl_val v)
{
  if (YAJL_IS_OBJECT(v) || YAJL_IS_ARRAY(v)) {
    raw_sep(out, 0);
    carp_buf_putc(out, YAJL_IS_OBJECT(v) ? '{' : '[');
    raw_children(out, v);
  } else if (YAJL_IS_STRING(v)) {
    raw_scalar(out, CARP_JSTRING, v->u.string, strlen(v->u.string));
  } else if (YAJL_IS_NUMBER(v)) {
    raw_scalar(out, CARP_JNUMBER, v->u.number.r, strlen(v->u.number.r));
  } else {
    raw_scalar(out,
               YAJL_IS_TRUE(v)    ? CARP_JTRUE
               : YAJL_IS_FALSE(v) ? CARP_JFALSE
                                  : CARP_JNULL,
               NULL, 0);
  }
}

/* ---- yajl events ---- */

static int stop(struct carp_jdec *d, int rc)
{
  if (!rc)
    return 1;
  d->rc = rc;
  return 0;
}

static int scalar(struct carp_jdec *d, enum carp_jtype t, const char *s,
                  size_t n)
{
  struct carp_jval v;
  d->after_value = 1;
  if (d->skip) {
    if (d->raw)
      raw_scalar(d->raw->out, t, s, n);
    return 1;
  }
  v.type = t;
  v.s = NULL;
  v.len = 0;
  if (s) {
    if (t == CARP_JSTRING) {
      const void *nul = memchr(s, '\0', n);
      if (nul)
        n = (size_t)((const char *)nul - s);
    }
    carp_buf_reset(&d->text);
    carp_buf_append(&d->text, s, n);
    v.s = carp_buf_cstr(&d->text);
    v.len = n;
  }
  return stop(d, deliver(d, &v, NULL));
}

static int on_null(void *ctx)
{
  return scalar(ctx, CARP_JNULL, NULL, 0);
}

static int on_bool(void *ctx, int b)
{
  return scalar(ctx, b ? CARP_JTRUE : CARP_JFALSE, NULL, 0);
}

static int on_number(void *ctx, const char *s, size_t n)
{
  return scalar(ctx, CARP_JNUMBER, s, n);
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
  return scalar(ctx, CARP_JSTRING, (const char *)s, n);
}

static int start(struct carp_jdec *d, enum carp_jtype t)
{
  struct carp_jval v = {t, NULL, 0};
  int entered, rc;
  d->after_value = 0;
  if (d->skip) {
    if (d->raw) {
      raw_sep(d->raw->out, 0);
      carp_buf_putc(d->raw->out, t == CARP_JOBJECT ? '{' : '[');
    }
    d->skip++;
    return 1;
  }
  rc = deliver(d, &v, &entered);
  if (!entered)
    d->skip = 1;
  return stop(d, rc);
}

static int on_start_map(void *ctx)
{
  return start(ctx, CARP_JOBJECT);
}

static int on_start_array(void *ctx)
{
  return start(ctx, CARP_JARRAY);
}

static int on_key(void *ctx, const unsigned char *k, size_t n)
{
  struct carp_jdec *d = ctx;
  d->after_value = 0;
  if (!d->skip)
    set_key(d, (const char *)k, n);
  else if (d->raw)
    raw_key(d->raw->out, (const char *)k, n);
  return 1;
}

static int end(struct carp_jdec *d, char close)
{
  d->after_value = 1;
  if (d->skip) {
    if (d->raw) {
      carp_buf_putc(d->raw->out, close);
      if (d->skip == 1)
        raw_end(d);
    }
    d->skip--;
    return 1;
  }
  return stop(d, end_frame(d));
}

static int on_end_map(void *ctx)
{
  return end(ctx, '}');
}

static int on_end_array(void *ctx)
{
  return end(ctx, ']');
}

static const yajl_callbacks callbacks = {
    on_null,      on_bool, NULL,       NULL,           on_number,    on_string,
    on_start_map, on_key,  on_end_map, on_start_array, on_end_array,
};

char *carp_jdec_yajl_error(yajl_handle h, const char *text, size_t len)
{
  unsigned char *msg = yajl_get_error(h, 0, (const unsigned char *)text, len);
  char *out, *nl;
  out = carp_strdup(msg && *msg ? (const char *)msg : "invalid JSON");
  if (msg)
    yajl_free_error(h, msg);
  if ((nl = strchr(out, '\n')))
    *nl = '\0';
  return out;
}

/* The parser has read up to a ',' that begins a member named d->over, in
 * an object of a frame entered under d->parent (not a skipped container,
 * where no state is kept, nor an array), after a value: the member can be
 * passed over. */
static int at_member(const struct carp_jdec *d, const char *text, size_t q)
{
  const struct carp_jframe *f = &d->stack[d->depth];
  return !d->skip && !d->raw && f->pass_over && !f->array && d->after_value &&
         carp__jskip_ends_value(text, q);
}

/* yajl_parse over the text, each member named d->over that the scan can
 * vouch for left out (jskip.c). */
static yajl_status feed_passing_over(struct carp_jdec *d, const char *text,
                                     size_t len)
{
  struct carp_jskip_scan s = {0, 0, 0};
  size_t fed = 0, from = 0;
  yajl_status st = yajl_status_ok;
  for (;;) {
    const char *hit = memmem(text + from, len - from, d->over, d->over_len);
    size_t q, end;
    if (!hit)
      break;
    q = (size_t)(hit - text);
    from = q + 1;
    carp__jskip_scan(&s, text, q);
    if (s.comment)
      break;
    if (s.in_string)
      continue;
    if (q > fed) {
      st = yajl_parse(d->yajl, (const unsigned char *)text + fed, q - fed);
      fed = q;
      if (st != yajl_status_ok)
        return st;
    }
    if (!at_member(d, text, q))
      continue;
    end = carp__jskip_value(text, q + d->over_len, len);
    if (!end || !carp__jskip_member_follows(text, end, len))
      continue;
    d->passed++;
    fed = from = s.at = end;
  }
  return fed < len
             ? yajl_parse(d->yajl, (const unsigned char *)text + fed, len - fed)
             : st;
}

int carp_jdec_parse(struct carp_jdec *d, const char *text, size_t len,
                    char **err)
{
  yajl_status st;
  int rc = 0;
  d->depth = 0;
  d->skip = 0;
  d->raw = NULL;
  d->rc = 0;
  d->stack[0].index = 0;
  d->stack[0].field = -1;
  if (err)
    *err = NULL;
  /* A raw NUL cannot be in JSON text; carp_json_parse says so too. */
  if (memchr(text, '\0', len)) {
    if (err)
      *err = carp_strdup("NUL byte inside JSON text");
    return CARP_EPARSE;
  }
  d->yajl = yajl_alloc(&callbacks, NULL, d);
  yajl_config(d->yajl, yajl_allow_comments, 1);
  d->after_value = 0;
  st = d->over ? feed_passing_over(d, text, len)
               : yajl_parse(d->yajl, (const unsigned char *)text, len);
  if (st == yajl_status_ok)
    st = yajl_complete_parse(d->yajl);
  if (st == yajl_status_client_canceled) {
    rc = d->rc;
  } else if (st != yajl_status_ok) {
    if (err)
      *err = carp_jdec_yajl_error(d->yajl, text, len);
    rc = CARP_EPARSE;
  }
  yajl_free(d->yajl);
  d->yajl = NULL;
  /* A handler stopped it, or the text ended: leave no frame behind. */
  d->depth = 0;
  d->skip = 0;
  d->raw = NULL;
  return rc;
}

/* ---- trees ---- */

static int replay_value(struct carp_jdec *d, yajl_val v);

static int replay_children(struct carp_jdec *d, yajl_val v)
{
  size_t i;
  int rc = 0;
  if (YAJL_IS_OBJECT(v)) {
    for (i = 0; !rc && i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      /* A tree's key ends at its NUL and outlives the member. */
      key_is(d, k, strlen(k));
      rc = replay_value(d, v->u.object.values[i]);
    }
  } else {
    for (i = 0; !rc && i < v->u.array.len; i++)
      rc = replay_value(d, v->u.array.values[i]);
  }
  return rc;
}

static int replay_value(struct carp_jdec *d, yajl_val v)
{
  struct carp_jval jv = {CARP_JNULL, NULL, 0};
  int entered, rc, depth = d->depth;
  switch (v ? v->type : yajl_t_null) {
  case yajl_t_string:
    jv.type = CARP_JSTRING;
    jv.s = v->u.string;
    jv.len = strlen(v->u.string);
    break;
  case yajl_t_number:
    jv.type = CARP_JNUMBER;
    jv.s = v->u.number.r;
    jv.len = strlen(v->u.number.r);
    break;
  case yajl_t_true:
    jv.type = CARP_JTRUE;
    break;
  case yajl_t_false:
    jv.type = CARP_JFALSE;
    break;
  case yajl_t_object:
    jv.type = CARP_JOBJECT;
    break;
  case yajl_t_array:
    jv.type = CARP_JARRAY;
    break;
  default:
    break;
  }
  rc = deliver(d, &jv, &entered);
  if (!entered && d->raw) {
    raw_children(d->raw->out, v);
    raw_end(d);
  }
  if (rc || !entered)
    return rc;
  rc = replay_children(d, v);
  if (rc) {
    d->depth = depth;
    return rc;
  }
  return end_frame(d);
}

int carp_jdec_replay(struct carp_jdec *d, yajl_val v)
{
  const char *kp = d->kp;
  size_t kn = d->kn;
  int rc;
  if (!v)
    return 0;
  rc = replay_value(d, v);
  /* The tree's keys may go with the tree: the key is the one before. */
  d->kp = kp;
  d->kn = kn;
  return rc;
}

int carp_jdec_tree(yajl_val v, carp_jdec_fn root, void *ctx)
{
  struct carp_jdec d;
  int rc;
  carp_jdec_init(&d, root, ctx);
  rc = carp_jdec_replay(&d, v);
  carp_jdec_free(&d);
  return rc;
}

/* ---- typed readings ---- */

int carp_jval_int(const struct carp_jval *v, int64_t *out)
{
  if (v->type != CARP_JNUMBER && v->type != CARP_JSTRING)
    return CARP_EPARSE;
  return carp_json_int_text(v->s, out);
}

int carp_jval_bool(const struct carp_jval *v, int *out)
{
  int64_t i;
  if (v->type == CARP_JTRUE || v->type == CARP_JFALSE) {
    *out = v->type == CARP_JTRUE;
    return 0;
  }
  if (carp_jval_int(v, &i) == 0 && (i == 0 || i == 1)) {
    *out = (int)i;
    return 0;
  }
  return CARP_EPARSE;
}

int carp_jval_time(const struct carp_jval *v, int64_t *ms)
{
  *ms = 0;
  if (v->type == CARP_JNULL)
    return 0;
  if (v->type != CARP_JSTRING)
    return CARP_EPARSE;
  return carp_time_parse_rfc3339(v->s, ms);
}

/* ---- copies ---- */

static void copy_value(struct carp_jdec *d, const struct carp_jval *v,
                       struct carp_jcopy *c);

static void copy_done(struct carp_jcopy *c)
{
  c->len = c->out->len - c->start;
  c->done = 1;
}

static int copy_fn(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct carp_jcopy *c = ctx;
  if (v->type == CARP_JEND) {
    carp_buf_putc(c->out, carp_jdec_in_array(d) ? ']' : '}');
    if (--c->depth == 0)
      copy_done(c);
    return 0;
  }
  if (carp_jdec_index(d) > 0)
    carp_buf_putc(c->out, ',');
  if (!carp_jdec_in_array(d)) {
    size_t n;
    const char *k = carp_jdec_key(d, &n);
    carp_json_quote(c->out, k, n);
    carp_buf_putc(c->out, ':');
  }
  copy_value(d, v, c);
  return 0;
}

static void copy_value(struct carp_jdec *d, const struct carp_jval *v,
                       struct carp_jcopy *c)
{
  switch (v->type) {
  case CARP_JNULL:
    carp_buf_puts(c->out, "null");
    break;
  case CARP_JFALSE:
    carp_buf_puts(c->out, "false");
    break;
  case CARP_JTRUE:
    carp_buf_puts(c->out, "true");
    break;
  case CARP_JNUMBER:
    carp_buf_append(c->out, v->s, v->len);
    break;
  case CARP_JSTRING:
    carp_json_quote(c->out, v->s, v->len);
    break;
  case CARP_JOBJECT:
  case CARP_JARRAY:
    carp_buf_putc(c->out, v->type == CARP_JOBJECT ? '{' : '[');
    if (carp_jdec_enter(d, copy_fn, c, NULL))
      d->raw = c; /* the rest as it is skipped */
    else
      c->depth++;
    break;
  case CARP_JEND:
    break;
  }
}

void carp_jdec_copy(struct carp_jdec *d, const struct carp_jval *v,
                    struct carp_jcopy *c)
{
  c->start = c->out->len;
  c->len = 0;
  c->depth = 0;
  c->done = 0;
  copy_value(d, v, c);
  if (!c->depth && d->raw != c)
    copy_done(c);
}
