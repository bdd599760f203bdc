/* Unit tests for decoding from parser events (internal/json/jdec.c) and
 * building trees from them (jtree.c): what handlers see (members by key
 * table, first occurrence only, elements by index, the end), that what is
 * not entered is skipped however deep it goes, that a tree replays the
 * same events as its text, the typed readings, copies as compact JSON,
 * errors, and trees in an arena equal to yajl's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/jdec.h"
#include "carpenter/jtree.h"
#include "carpenter/json.h"

/* A trace of the events a handler gets: "field:type;" per value, "<" for
 * a container entered, ">" for its end. Members named "skip" are left. */
struct trace {
  char text[2048];
  const char *const *keys;
};

static const char *const keys[] = {"a", "b", "skip", NULL};

static void put(struct trace *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(struct trace *t, const char *fmt, ...)
{
  size_t n = strlen(t->text);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->text + n, sizeof(t->text) - n, fmt, ap);
  va_end(ap);
}

static int on_value(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  static const char *const names[] = {"null", "false", "true", "num",
                                      "str",  "obj",   "arr",  "end"};
  struct trace *t = ctx;
  if (v->type == CARP_JEND) {
    put(t, ">");
    return 0;
  }
  if (carp_jdec_in_array(d))
    put(t, "[%zu]", carp_jdec_index(d));
  else
    put(t, "%s#%d", carp_jdec_key(d, NULL), carp_jdec_field(d));
  put(t, ":%s", names[v->type]);
  if (v->s)
    put(t, "(%s/%zu)", v->s, v->len);
  put(t, ";");
  if ((v->type == CARP_JOBJECT || v->type == CARP_JARRAY) &&
      strcmp(carp_jdec_key(d, NULL), "skip")) {
    put(t, "<");
    assert_int_equal(carp_jdec_enter(d, on_value, t, keys), 0);
  }
  return 0;
}

static const char *doc =
    "{\"a\":1,\"b\":\"x\\u0000y\",\"c\":[true,null,{\"a\":-2.5e3}],"
    "\"skip\":{\"deep\":[[[1]]]},\"a\":\"again\",\"b\":false}";

static const char *doc_trace =
    "#-1:obj;<a#0:num(1/1);b#1:str(x/1);c#-1:arr;<[0]:true;[1]:null;"
    "[2]:obj;<a#0:num(-2.5e3/6);>>skip#2:obj;a#-1:str(again/5);b#-1:false;>";

static void test_events(void **state)
{
  struct carp_jdec d;
  struct trace t;
  yajl_val tree;
  (void)state;
  memset(&t, 0, sizeof(t));
  carp_jdec_init(&d, on_value, &t);
  assert_int_equal(carp_jdec_parse(&d, doc, strlen(doc), NULL), 0);
  assert_string_equal(t.text, doc_trace);
  /* The same document as a tree: the same events. */
  memset(&t, 0, sizeof(t));
  assert_int_equal(carp_json_parse(doc, strlen(doc), &tree, NULL), 0);
  assert_int_equal(carp_jdec_replay(&d, tree), 0);
  assert_string_equal(t.text, doc_trace);
  /* And again, on a decoder of its own. */
  memset(&t, 0, sizeof(t));
  assert_int_equal(carp_jdec_tree(tree, on_value, &t), 0);
  assert_string_equal(t.text, doc_trace);
  carp_json_free(tree);
  /* A decoder reads one document after another. */
  memset(&t, 0, sizeof(t));
  assert_int_equal(carp_jdec_parse(&d, "[7]", 3, NULL), 0);
  assert_string_equal(t.text, "#-1:arr;<[0]:num(7/1);>");
  carp_jdec_free(&d);
}

static int stop_at_b(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  int *seen = ctx;
  if (v->type == CARP_JOBJECT && carp_jdec_key(d, NULL)[0] == '\0')
    return carp_jdec_enter(d, stop_at_b, ctx, keys);
  ++*seen;
  return carp_jdec_field(d) == 1 ? CARP_ECANCELED : 0;
}

/* Enters every container; counts the ones it cannot. */
static int enter_all(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  int *failed = ctx;
  if ((v->type == CARP_JOBJECT || v->type == CARP_JARRAY) &&
      carp_jdec_enter(d, enter_all, ctx, NULL))
    ++*failed;
  return 0;
}

static void test_errors_and_depth(void **state)
{
  static const char *bad[] = {
      "",      "{",           "{\"a\":1", "{\"a\" 1}", "{\"a\":1,}",  "{a:1}",
      "[1 2]", "{\"a\":1} x", "{} {}",    "\"\xff\"",  "{\"a\":tru}",
  };
  struct carp_jdec d;
  struct trace t;
  char *err = NULL, *text;
  size_t i, n = 200000;
  int seen = 0;
  (void)state;
  memset(&t, 0, sizeof(t));
  carp_jdec_init(&d, on_value, &t);
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    if (carp_jdec_parse(&d, bad[i], strlen(bad[i]), &err) != CARP_EPARSE)
      fail_msg("accepted \"%s\"", bad[i]);
    assert_non_null(err);
    /* The message names the problem, never the text. */
    assert_null(strstr(err, "tru}"));
    CARP_FREE(&err);
  }
  /* A NUL byte cannot be in JSON text (nor end it early). */
  assert_int_equal(carp_jdec_parse(&d, "{\"a\":\"x\0\"}", 9, &err),
                   CARP_EPARSE);
  assert_string_equal(err, "NUL byte inside JSON text");
  CARP_FREE(&err);
  /* Comments are read, as carp_json_parse reads them. */
  memset(&t, 0, sizeof(t));
  assert_int_equal(carp_jdec_parse(&d, "/* c */ [1]", 11, NULL), 0);
  assert_string_equal(t.text, "#-1:arr;<[0]:num(1/1);>");
  /* A handler's code stops the parse and is returned. */
  carp_jdec_root(&d, stop_at_b, &seen);
  assert_int_equal(carp_jdec_parse(&d, "{\"a\":1,\"b\":2,\"c\":3}", 19, NULL),
                   CARP_ECANCELED);
  assert_int_equal(seen, 2);
  /* Skipped values may nest as deep as they like (no recursion)... */
  text = carp_malloc(2 * n + 32);
  memcpy(text, "{\"skip\":", 8);
  memset(text + 8, '[', n);
  memset(text + 8 + n, ']', n);
  memcpy(text + 8 + 2 * n, "}", 2);
  memset(&t, 0, sizeof(t));
  carp_jdec_root(&d, on_value, &t);
  assert_int_equal(carp_jdec_parse(&d, text, strlen(text), NULL), 0);
  assert_string_equal(t.text, "#-1:obj;<skip#2:arr;>");
  /* ...entered ones stop at CARP_JDEC_MAX_DEPTH: past it, skipped. */
  seen = 0;
  carp_jdec_root(&d, enter_all, &seen);
  assert_int_equal(carp_jdec_parse(&d, text, strlen(text), NULL), 0);
  assert_int_equal(seen, 1);
  carp_free(text);
  carp_jdec_free(&d);
}

static int copy_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  carp_jdec_copy(d, v, ctx);
  return 0;
}

/* Arrays and objects nested 3 * CARP_JDEC_MAX_DEPTH deep, compact; with
 * nul, its keys and strings hold a \u0000 and what follows it. */
static char *deep_text(int nul)
{
  const char *cut = nul ? "\\u0000cut" : "";
  struct carp_buf b;
  int i, n = 3 * CARP_JDEC_MAX_DEPTH;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  for (i = 0; i < n; i++)
    carp_buf_printf(
        &b, i % 2 ? "{\"k%s\":\"s%s\",\"n\":null,\"v\":" : "[1.5e3,true,[],{},",
        cut, cut);
  carp_buf_puts(&b, "false");
  for (i = n - 1; i >= 0; i--)
    carp_buf_putc(&b, i % 2 ? '}' : ']');
  return carp_buf_steal(&b, NULL);
}

static void test_copy(void **state)
{
  static const char *in =
      " { \"k\\\"ey\" : [ 1 , -0.5e+3 , \"t\\tab\\u00e9\\u0001\" , { } , [ ] ,"
      " null , true , false ] , \"o\" : { \"x\" : { \"y\" : 2 } } } ";
  struct carp_buf out;
  struct carp_jcopy c;
  struct carp_jdec d;
  char *deep, *want;
  yajl_val tree;
  (void)state;
  carp_buf_init(&out, CARP_BUF_UNLIMITED);
  carp_buf_puts(&out, "prefix");
  memset(&c, 0, sizeof(c));
  c.out = &out;
  carp_jdec_init(&d, copy_root, &c);
  assert_int_equal(carp_jdec_parse(&d, in, strlen(in), NULL), 0);
  assert_true(c.done);
  assert_int_equal(c.start, 6);
  assert_int_equal(c.len, out.len - 6);
  assert_string_equal(out.ptr + 6,
                      "{\"k\\\"ey\":[1,-0.5e+3,\"t\\tab\xc3\xa9\\u0001\",{},[],"
                      "null,true,false],\"o\":{\"x\":{\"y\":2}}}");
  /* A scalar is done at once. */
  carp_buf_reset(&out);
  assert_int_equal(carp_jdec_parse(&d, "\"s\"", 3, NULL), 0);
  assert_true(c.done);
  assert_string_equal(out.ptr, "\"s\"");
  /* Deeper than the decoder follows (a tree has no limit): the rest is
   * copied as it is skipped, from the parser and from a tree alike, keys
   * and strings cut at a NUL as a tree has them. */
  deep = deep_text(1);
  want = deep_text(0);
  carp_buf_reset(&out);
  assert_int_equal(carp_jdec_parse(&d, deep, strlen(deep), NULL), 0);
  assert_true(c.done);
  assert_string_equal(out.ptr, want);
  assert_int_equal(carp_json_parse(deep, strlen(deep), &tree, NULL), 0);
  carp_buf_reset(&out);
  c.done = 0;
  assert_int_equal(carp_jdec_replay(&d, tree), 0);
  assert_true(c.done);
  assert_string_equal(out.ptr, want);
  carp_json_free(tree);
  carp_free(deep);
  carp_free(want);
  carp_jdec_free(&d);
  carp_buf_free(&out);
}

static void test_readings(void **state)
{
  struct carp_jval v;
  int64_t i = 0;
  int b = 0;
  (void)state;
#define VAL(T, S) (v.type = (T), v.s = (S), v.len = sizeof(S) - 1, &v)
  assert_int_equal(carp_jval_int(VAL(CARP_JNUMBER, "42"), &i), 0);
  assert_int_equal(i, 42);
  assert_int_equal(carp_jval_int(VAL(CARP_JSTRING, "-7"), &i), 0);
  assert_int_equal(i, -7);
  assert_int_equal(carp_jval_int(VAL(CARP_JNUMBER, "1.5"), &i), CARP_EPARSE);
  assert_int_equal(carp_jval_int(VAL(CARP_JNUMBER, "99999999999999999999"), &i),
                   CARP_EPARSE);
  assert_int_equal(carp_jval_int(VAL(CARP_JTRUE, ""), &i), CARP_EPARSE);
  assert_int_equal(i, -7); /* untouched on failure */
  assert_int_equal(carp_jval_bool(VAL(CARP_JTRUE, ""), &b), 0);
  assert_true(b);
  assert_int_equal(carp_jval_bool(VAL(CARP_JSTRING, "0"), &b), 0);
  assert_false(b);
  assert_int_equal(carp_jval_bool(VAL(CARP_JNUMBER, "2"), &b), CARP_EPARSE);
  assert_int_equal(carp_jval_bool(VAL(CARP_JSTRING, "yes"), &b), CARP_EPARSE);
  assert_int_equal(
      carp_jval_time(VAL(CARP_JSTRING, "2026-11-22T10:00:05Z"), &i), 0);
  assert_int_equal(i, 1795341605000LL);
  assert_int_equal(carp_jval_time(VAL(CARP_JNULL, ""), &i), 0);
  assert_int_equal(i, 0);
  assert_int_equal(carp_jval_time(VAL(CARP_JSTRING, "soon"), &i), CARP_EPARSE);
  assert_int_equal(carp_jval_time(VAL(CARP_JNUMBER, "5"), &i), CARP_EPARSE);
  assert_int_equal(i, 0);
#undef VAL
}

/* jtree: a tree built from events equals yajl's, written back out. */
static void written(yajl_val v, struct carp_buf *out)
{
  struct carp_jw w;
  carp_buf_reset(out);
  carp_jw_init(&w, out);
  carp_jw_value(&w, v);
  assert_int_equal(carp_jw_finish(&w), 0);
}

static int tree_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  return carp_jtree_jdec(d, ctx, v);
}

struct hooked {
  int starts, taken;
};

static void on_start(struct carp_jtree *t, yajl_type type, void *arg)
{
  struct hooked *h = arg;
  (void)t;
  (void)type;
  h->starts++;
}

/* Takes the elements of a top-level array out of it. */
static int on_complete(struct carp_jtree *t, yajl_val v, void *arg)
{
  struct hooked *h = arg;
  (void)v;
  if (t->depth == 1 && t->stack[0].v->type == yajl_t_array) {
    h->taken++;
    return 1;
  }
  return 0;
}

static void test_tree(void **state)
{
  static const char *in = "{\"a\":[1,2.5,\"s\\u00e9\",null,true,false,{}],"
                          "\"b\":{\"c\":-9223372036854775808},\"a\":[]}";
  struct carp_arena arena;
  struct carp_jtree t;
  struct carp_jdec d;
  struct carp_buf want, got;
  struct hooked h = {0, 0};
  struct carp_jtree_hooks hooks = {on_start, on_complete, &h};
  yajl_val ref;
  char *deep;
  size_t i;
  (void)state;
  carp_arena_init(&arena);
  carp_buf_init(&want, CARP_BUF_UNLIMITED);
  carp_buf_init(&got, CARP_BUF_UNLIMITED);
  carp_jtree_init(&t, &arena, 10, NULL);
  carp_jdec_init(&d, tree_root, &t);
  assert_int_equal(carp_jdec_parse(&d, in, strlen(in), NULL), 0);
  assert_non_null(t.done);
  assert_int_equal(carp_json_parse(in, strlen(in), &ref, NULL), 0);
  written(ref, &want);
  written(t.done, &got);
  assert_string_equal(got.ptr, want.ptr);
  assert_true(YAJL_IS_INTEGER(carp_json_get(t.done, "b", "c", NULL)));
  carp_json_free(ref);
  /* Too deep for the tree: its error, and no tree. */
  carp_arena_reset(&arena);
  carp_jtree_reset(&t);
  deep = carp_malloc(64);
  for (i = 0; i < 12; i++) {
    deep[i] = '[';
    deep[23 - i] = ']';
  }
  assert_int_equal(carp_jdec_parse(&d, deep, 24, NULL), 0);
  assert_null(t.done);
  assert_non_null(strstr(t.err, "nested more than 10 levels deep"));
  carp_free(deep);
  carp_jtree_free(&t);
  /* Hooks: every value starts through one; taken values stay out. */
  carp_arena_reset(&arena);
  carp_jtree_init(&t, &arena, 10, &hooks);
  assert_int_equal(carp_jdec_parse(&d, "[1,[2],3]", 9, NULL), 0);
  assert_int_equal(h.starts, 5);
  assert_int_equal(h.taken, 3);
  assert_int_equal(carp_json_len(t.done), 0);
  carp_jtree_free(&t);
  carp_jdec_free(&d);
  carp_arena_free(&arena);
  carp_buf_free(&want);
  carp_buf_free(&got);
}

/* carp_jtree_parse: a whole text into the tree yajl would build; what
 * yajl refuses is refused, with no tree. */
static void test_tree_parse(void **state)
{
  static const char *in =
      "/* c */ {\"metadata\":{\"resourceVersion\":\"7\",\"n\":[1,2.5e3,-3]},"
      "\"s\":\"\\u00e9\\n\",\"t\":true,\"z\":null,\"e\":{},\"a\":[]}";
  static const char *bad[] = {"{",         "{\"a\":1}x", "{\"a\":1} {}",
                              "[1,]",      "{'a':1}",    "nul",
                              "{\"a\" 1}", "\"open"};
  struct carp_arena arena;
  struct carp_buf want, got;
  yajl_val v, ref;
  char *err = NULL, deep[400];
  size_t i;
  (void)state;
  carp_arena_init(&arena);
  carp_buf_init(&want, CARP_BUF_UNLIMITED);
  carp_buf_init(&got, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_jtree_parse(&arena, in, strlen(in), &v, &err), 0);
  assert_null(err);
  assert_int_equal(carp_json_parse(in, strlen(in), &ref, NULL), 0);
  written(ref, &want);
  written(v, &got);
  assert_string_equal(got.ptr, want.ptr);
  assert_string_equal(carp_json_str(v, "metadata", "resourceVersion", NULL),
                      "7");
  carp_json_free(ref);
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    v = (yajl_val)&arena; /* not left as it was */
    assert_int_equal(carp_jtree_parse(&arena, bad[i], strlen(bad[i]), &v, &err),
                     CARP_EPARSE);
    assert_null(v);
    assert_non_null(err);
    carp_free(err);
    err = NULL;
    assert_int_equal(carp_json_parse(bad[i], strlen(bad[i]), &ref, NULL),
                     CARP_EPARSE);
  }
  assert_int_equal(carp_jtree_parse(&arena, "", 0, &v, NULL), CARP_EPARSE);
  /* A NUL inside would cut a string short. */
  assert_int_equal(carp_jtree_parse(&arena, "{\"a\":\"x\0y\"}", 11, &v, &err),
                   CARP_EPARSE);
  assert_non_null(strstr(err, "NUL"));
  carp_free(err);
  err = NULL;
  /* Deeper than a decoder goes: refused, not cut. */
  for (i = 0; i < 200; i++) {
    deep[i] = '[';
    deep[399 - i] = ']';
  }
  assert_int_equal(carp_jtree_parse(&arena, deep, sizeof(deep), &v, &err),
                   CARP_EPARSE);
  assert_null(v);
  carp_free(err);
  carp_arena_free(&arena);
  carp_buf_free(&want);
  carp_buf_free(&got);
}

/* carp_jtree_parse_kube: an object's metadata.managedFields is left out
 * of the tree, a label of that name and a member of it elsewhere are not,
 * and a bad managedFields is refused as before. */
static void test_tree_parse_kube(void **state)
{
  static const char *in =
      "{\"metadata\":{\"name\":\"n\",\"managedFields\":[{\"manager\":"
      "\"kubelet\",\"fieldsV1\":{\"f:status\":{}}}],\"labels\":{"
      "\"managedFields\":\"x\"},\"resourceVersion\":\"9\"},"
      "\"spec\":{\"managedFields\":1}}";
  static const char *bad =
      "{\"metadata\":{\"managedFields\":[{\"a\":1,}],\"name\":\"n\"}}";
  struct carp_arena arena;
  yajl_val v, md;
  char *err = NULL;
  (void)state;
  carp_arena_init(&arena);
  assert_int_equal(carp_jtree_parse_kube(&arena, in, strlen(in), &v, &err), 0);
  md = carp_json_get(v, "metadata", NULL);
  assert_non_null(md);
  assert_null(carp_json_get(md, "managedFields", NULL));
  assert_string_equal(carp_json_str(md, "name", NULL), "n");
  assert_string_equal(carp_json_str(md, "resourceVersion", NULL), "9");
  assert_string_equal(carp_json_str(md, "labels", "managedFields", NULL), "x");
  assert_non_null(carp_json_get(v, "spec", "managedFields", NULL));
  /* carp_jtree_parse keeps it. */
  assert_int_equal(carp_jtree_parse(&arena, in, strlen(in), &v, &err), 0);
  assert_non_null(carp_json_get(v, "metadata", "managedFields", NULL));
  assert_int_equal(carp_jtree_parse_kube(&arena, bad, strlen(bad), &v, &err),
                   CARP_EPARSE);
  assert_null(v);
  carp_free(err);
  carp_arena_free(&arena);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events),
      cmocka_unit_test(test_errors_and_depth),
      cmocka_unit_test(test_copy),
      cmocka_unit_test(test_readings),
      cmocka_unit_test(test_tree_parse_kube),
      cmocka_unit_test(test_tree),
      cmocka_unit_test(test_tree_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
