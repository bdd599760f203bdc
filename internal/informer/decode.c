/* decode.c: list pages and watch events straight into cached objects.
 *
 * A page (up to 500 objects, a megabyte of JSON) and each watch event run
 * through yajl's event parser once (include/carpenter/jdec.h); each item
 * goes to its kind's decoder as its events pass, and is made the moment
 * it ends. Kinds with a streaming decoder (pods and nodes: the bulk of
 * any cluster) build no tree at all and skip what they do not keep;
 * the others get a tree of the one object, carved from an arena that the
 * next object reuses (include/carpenter/jtree.h), and their tree decoder.
 * Either way nothing is allocated per value, which is what made a cold
 * sync's cost grow faster than the pods: glibc's malloc, asked for and
 * given back the nodes of a tree per item, between the long-lived objects
 * of the cache, slowed as the heap grew.
 *
 * Strictness is the tree decoders': the text must be JSON (as
 * carp_json_parse reads it), and an object is refused for what its tree
 * decode would refuse, with the same message. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/jtree.h"
#include "informer_int.h"

/* How deep the tree of an object of a kind without a stream may go. */
#define TREE_DEPTH 100

struct inf_dec {
  const struct carp_kind *kind;
  struct carp_jdec d;
  /* The object being read: by its kind's stream, or into a tree. */
  void *state;
  struct carp_arena arena;
  struct carp_jtree tree;
  yajl_val root;
  int ended; /* it has ended */
  /* Who a DELETED or BOOKMARK event's object is. */
  struct carp_objmeta_dec idm;
  /* A page. */
  struct inf_page *pg;
  inf_item_fn fn;
  void *arg;
  /* An event. */
  struct inf_event *ev;
  struct carp_buf type;
  struct carp_buf message;
  int object_seen; /* its "object" member, and where it went: */
  enum { OBJ_NONE, OBJ_KIND, OBJ_ID } object;
  int late; /* "object" came before "type" */
};

struct inf_dec *inf_dec_new(const struct carp_kind *kind)
{
  struct inf_dec *dec = CARP_NEW(struct inf_dec);
  dec->kind = kind;
  carp_jdec_init(&dec->d, NULL, dec);
  /* No decoder reads it, and it is a quarter to a half of each object. A
   * label or a spec field of that name is read as ever. */
  carp_jdec_pass_over(&dec->d, "metadata", "managedFields");
  if (kind->stream)
    dec->state = kind->stream->state_new();
  carp_arena_init(&dec->arena);
  carp_jtree_init(&dec->tree, &dec->arena, TREE_DEPTH, NULL);
  carp_objmeta_dec_init(&dec->idm, NULL);
  carp_buf_init(&dec->type, 64);
  carp_buf_init(&dec->message, 64 * 1024);
  return dec;
}

size_t inf_dec_passed_over(const struct inf_dec *dec)
{
  return dec->d.passed;
}

void inf_dec_free(struct inf_dec *dec)
{
  if (!dec)
    return;
  carp_jdec_free(&dec->d);
  if (dec->state)
    dec->kind->stream->state_free(dec->state);
  carp_jtree_free(&dec->tree);
  carp_arena_free(&dec->arena);
  carp_objmeta_dec_free(&dec->idm);
  carp_buf_free(&dec->type);
  carp_buf_free(&dec->message);
  carp_free(dec);
}

/* ---- one object ---- */

static void object_ended(struct inf_dec *dec);

static int kind_member(struct carp_jdec *d, void *ctx,
                       const struct carp_jval *v)
{
  struct inf_dec *dec = ctx;
  int rc = dec->kind->stream->member(d, dec->state, v);
  if (v->type == CARP_JEND)
    object_ended(dec);
  return rc;
}

/* The members of a tree kind's object into its tree. */
static int tree_member(struct carp_jdec *d, void *ctx,
                       const struct carp_jval *v)
{
  struct inf_dec *dec = ctx;
  struct carp_jtree *t = &dec->tree;
  if (v->type != CARP_JEND) {
    carp_jtree_jdec_member(d, t, v);
    return 0;
  }
  if (!t->err[0] && carp_jtree_end(t) == 0)
    dec->root = t->done;
  object_ended(dec);
  return 0;
}

/* An object (any value: one that is not an object is refused as its tree
 * decode refuses it) starts. */
static void object_begin(struct carp_jdec *d, struct inf_dec *dec,
                         const struct carp_jval *v)
{
  int container = v->type == CARP_JOBJECT || v->type == CARP_JARRAY;
  dec->ended = 0;
  dec->root = NULL;
  if (dec->state) {
    dec->kind->stream->begin(dec->state);
    if (v->type == CARP_JOBJECT &&
        !carp_jdec_enter(d, kind_member, dec, dec->kind->stream->keys))
      return;
    object_ended(dec);
    return;
  }
  carp_arena_reset(&dec->arena);
  carp_jtree_reset(&dec->tree);
  if (!container) {
    carp_jtree_jdec(d, &dec->tree, v);
    dec->root = dec->tree.done;
    object_ended(dec);
    return;
  }
  if (v->type == CARP_JOBJECT ? carp_jtree_start_map(&dec->tree)
                              : carp_jtree_start_array(&dec->tree))
    return;
  if (carp_jdec_enter(d, tree_member, dec, NULL))
    object_ended(dec);
}

static void object_id(struct inf_dec *dec, struct carp_obj_id *id)
{
  if (dec->state) {
    /* A stream's state starts with its metadata decoder. */
    carp_objmeta_dec_id(dec->state, id);
    return;
  }
  id->name = carp_json_str(dec->root, "metadata", "name", NULL);
  id->namespace = carp_json_str(dec->root, "metadata", "namespace", NULL);
  id->uid = carp_json_str(dec->root, "metadata", "uid", NULL);
  id->resource_version =
      carp_json_str(dec->root, "metadata", "resourceVersion", NULL);
}

/* Makes the object that has ended (or says why it cannot). */
static void object_finish(struct inf_dec *dec, struct inf_obj *o)
{
  o->obj = NULL;
  o->err = NULL;
  object_id(dec, &o->id);
  if (dec->state) {
    if (dec->kind->stream->finish(dec->state, &o->obj, &o->err))
      o->obj = NULL;
    return;
  }
  if (dec->tree.err[0]) {
    o->err = carp_strdup(dec->tree.err);
    return;
  }
  if (dec->kind->decode(dec->root, &o->obj, &o->err))
    o->obj = NULL;
}

/* ---- list pages ---- */

static void object_ended(struct inf_dec *dec)
{
  struct inf_obj o;
  dec->ended = 1;
  if (!dec->pg)
    return; /* an event's: made when the caller asks */
  object_finish(dec, &o);
  dec->fn(&o, dec->arg);
}

static int on_item(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  if (v->type != CARP_JEND)
    object_begin(d, ctx, v);
  return 0;
}

static int on_list_meta(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct inf_dec *dec = ctx;
  int f = carp_jdec_field(d);
  if (v->type != CARP_JSTRING || f < 0)
    return 0;
  if (f == 0) {
    carp_free(dec->pg->rv);
    dec->pg->rv = carp_strdup(v->s);
  } else if (v->len) {
    carp_free(dec->pg->cont);
    dec->pg->cont = carp_strdup(v->s);
  }
  return 0;
}

/* The page's members: every "items" (as a walk of the members finds each)
 * and every "metadata", the last one's fields winning. */
static int on_page(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  static const char *const meta_keys[] = {"resourceVersion", "continue", NULL};
  struct inf_dec *dec = ctx;
  const char *key;
  if (v->type == CARP_JEND)
    return 0;
  key = carp_jdec_key(d, NULL);
  if (!strcmp(key, "items")) {
    dec->pg->has_items = 1;
    if (v->type == CARP_JNULL)
      return 0; /* an empty list, as Go marshals it */
    if (v->type != CARP_JARRAY)
      return CARP_EPARSE;
    return carp_jdec_enter(d, on_item, dec, NULL);
  }
  if (!strcmp(key, "metadata") && v->type == CARP_JOBJECT)
    return carp_jdec_enter(d, on_list_meta, dec, meta_keys);
  return 0;
}

static int page_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  if (v->type != CARP_JOBJECT)
    return CARP_EPARSE;
  return carp_jdec_enter(d, on_page, ctx, NULL);
}

int inf_dec_page(struct inf_dec *dec, const char *text, size_t len,
                 struct inf_page *pg, inf_item_fn fn, void *arg, char **err)
{
  int rc;
  memset(pg, 0, sizeof(*pg));
  dec->pg = pg;
  dec->fn = fn;
  dec->arg = arg;
  carp_jdec_root(&dec->d, page_root, dec);
  rc = carp_jdec_parse(&dec->d, text, len, err);
  dec->pg = NULL;
  if (rc && err && !*err)
    *err = carp_strdup("not a list");
  return rc ? CARP_EPARSE : 0;
}

/* ---- watch events ---- */

static const struct {
  const char *name;
  enum inf_type t;
} types[] = {
    {"ADDED", INF_ADDED},     {"MODIFIED", INF_MODIFIED},
    {"DELETED", INF_DELETED}, {"BOOKMARK", INF_BOOKMARK},
    {"ERROR", INF_ERROR},
};

static int on_status(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct inf_dec *dec = ctx;
  int f = carp_jdec_field(d);
  if (f == 0)
    carp_jval_int(v, &dec->ev->code);
  else if (f == 1 && v->type == CARP_JSTRING) {
    carp_buf_reset(&dec->message);
    carp_buf_append(&dec->message, v->s, v->len);
    dec->ev->message = carp_buf_cstr(&dec->message);
  }
  return 0;
}

static int on_id(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct inf_dec *dec = ctx;
  if (v->type != CARP_JEND && carp_jdec_field(d) == 0)
    return carp_objmeta_dec_value(d, &dec->idm, v);
  return 0;
}

/* The event's object, given its type. */
static int event_object(struct carp_jdec *d, struct inf_dec *dec,
                        const struct carp_jval *v)
{
  static const char *const status_keys[] = {"code", "message", NULL};
  static const char *const id_keys[] = {"metadata", NULL};
  switch (dec->ev->t) {
  case INF_ADDED:
  case INF_MODIFIED:
    dec->object = OBJ_KIND;
    object_begin(d, dec, v);
    return 0;
  case INF_DELETED:
  case INF_BOOKMARK:
    dec->object = OBJ_ID;
    if (v->type == CARP_JOBJECT)
      return carp_jdec_enter(d, on_id, dec, id_keys);
    return 0;
  case INF_ERROR:
    if (v->type == CARP_JOBJECT)
      return carp_jdec_enter(d, on_status, dec, status_keys);
    return 0;
  default:
    return 0;
  }
}

static void set_type(struct inf_dec *dec, const char *s, size_t len)
{
  size_t i;
  carp_buf_reset(&dec->type);
  if (carp_buf_append(&dec->type, s, len))
    carp_buf_puts(&dec->type, "(too long)");
  dec->ev->type = carp_buf_cstr(&dec->type);
  dec->ev->t = INF_OTHER;
  for (i = 0; i < CARP_ARRAY_LEN(types); i++)
    if (!strcmp(types[i].name, dec->ev->type))
      dec->ev->t = types[i].t;
}

static int on_event(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct inf_dec *dec = ctx;
  switch (v->type == CARP_JEND ? -1 : carp_jdec_field(d)) {
  case 0: /* type */
    if (v->type == CARP_JSTRING && !dec->ev->type)
      set_type(dec, v->s, v->len);
    return 0;
  case 1: /* object */
    dec->object_seen = 1;
    if (!dec->ev->type) {
      dec->late = 1; /* read again once the type is known */
      return 0;
    }
    return event_object(d, dec, v);
  default:
    return 0;
  }
}

static int event_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  static const char *const keys[] = {"type", "object", NULL};
  if (v->type != CARP_JOBJECT)
    return CARP_EPARSE;
  return carp_jdec_enter(d, on_event, ctx, keys);
}

static int event_pass(struct inf_dec *dec, const char *text, size_t len,
                      char **err)
{
  dec->object_seen = 0;
  dec->object = OBJ_NONE;
  dec->late = 0;
  dec->ended = 0;
  carp_objmeta_dec_reset(&dec->idm);
  carp_jdec_root(&dec->d, event_root, dec);
  return carp_jdec_parse(&dec->d, text, len, err);
}

int inf_dec_event(struct inf_dec *dec, const char *text, size_t len,
                  struct inf_event *ev, char **err)
{
  int rc;
  memset(ev, 0, sizeof(*ev));
  dec->ev = ev;
  rc = event_pass(dec, text, len, err);
  if (!rc && dec->late && ev->type) {
    /* The object came first (no API server writes it so): again, now
     * that the type is known. */
    rc = event_pass(dec, text, len, err);
  }
  if (!rc && !ev->type) {
    if (err)
      *err = carp_strdup("a watch event without a type");
    rc = CARP_EPARSE;
  }
  if (rc) {
    if (err && !*err)
      *err = carp_strdup("a watch event that is not an object");
    return CARP_EPARSE;
  }
  if (dec->object == OBJ_KIND && dec->ended)
    object_id(dec, &ev->id);
  else if (dec->object == OBJ_ID)
    carp_objmeta_dec_id(&dec->idm, &ev->id);
  return 0;
}

void inf_dec_event_object(struct inf_dec *dec, struct inf_obj *o)
{
  if (dec->object == OBJ_KIND && dec->ended) {
    object_finish(dec, o);
    return;
  }
  /* No object: the event's is missing, which its decode refuses. */
  memset(o, 0, sizeof(*o));
  dec->ended = 0;
  if (dec->state) {
    dec->kind->stream->begin(dec->state);
  } else {
    carp_jtree_reset(&dec->tree);
    dec->root = NULL;
  }
  object_finish(dec, o);
}
