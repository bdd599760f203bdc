/* informer.c: the reflector loop of an informer (see informer.h).
 *
 *   LISTING --all pages--> WATCHING --clean end--> WATCHING (from last RV)
 *      ^                      |  410 Gone: relist at once
 *      +------ BACKOFF <------+  other errors: relist, or (a first transport
 *                                 failure) rewatch
 *
 * A list is applied to the store page by page as it arrives (so a very
 * large list never sits in memory twice), each object as soon as the
 * page's parser has passed it (decode.c); every object a list returns is
 * marked with the list's number, and when the last page is in, every
 * stored object without the mark is deleted.
 *
 * A watch is only as good as the resourceVersion it resumes from. One the
 * informer cannot trust - a BOOKMARK or event whose version is not a
 * number, a stream that does not parse, a server that refuses to watch
 * from it (a version "too large", an internal error) - is never watched
 * from again: the informer relists, and until that list is complete it
 * reports itself not synced (so /readyz fails and nothing is decided on a
 * cache that may miss changes). Only a dropped connection is retried as a
 * watch once (so is a watch the server closed at once, empty) before
 * relisting. */
#include "carpenter/informer.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/backoff.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/rand.h"
#include "informer_int.h"

#define MAX_HANDLERS 12

enum inf_state {
  INF_IDLE = 0,
  INF_LISTING,
  INF_WATCHING,
  INF_BACKOFF,
  INF_CLOSED,
};

struct carp_informer {
  uv_loop_t *loop;
  struct carp_kube *kube;
  const struct carp_kind *kind;
  char *namespace;
  char *label_selector;
  char *field_selector;
  unsigned page_size;
  unsigned min_watch, max_watch;
  struct carp_store *store;
  struct carp_informer_handlers handlers[MAX_HANDLERS];
  int nhandlers;
  enum inf_state state;
  int synced;
  int stale;               /* may miss changes until the next full list */
  int untrusted;           /* the watch in flight delivered a bad version */
  unsigned watch_failures; /* transport failures in a row */
  int need_relist;         /* after backoff: list (1) or watch (0) */
  int optional;            /* a 404 on the list means the API is absent */
  int absent;              /* ... and it was, at the last list */
  char *rv;                /* last resourceVersion seen */
  char *cont;              /* continue token of the list in progress */
  uint32_t list_mark;      /* marks the objects the list in progress had */
  struct inf_dec *dec;     /* list pages and watch events into objects */
  struct carp_kube_op *watch_op;
  struct carp_kube_op *list_op;
  int in_flight; /* list page or watch outstanding */
  uint64_t watch_started;
  uint64_t watch_events;
  struct carp_backoff backoff;
  uv_timer_t timer;
  int closing;
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_informer_stats stats;
  char *path; /* collection path */
};

static void start_list(struct carp_informer *inf);
static void start_watch(struct carp_informer *inf);

static const char *kind_name(const struct carp_informer *inf)
{
  return inf->kind->name;
}

static void set_rv(struct carp_informer *inf, const char *rv)
{
  if (!rv || !*rv)
    return;
  carp_free(inf->rv);
  inf->rv = carp_strdup(rv);
}

/* ---- applying changes ---- */

static void notify_add(struct carp_informer *inf, struct carp_objmeta *obj)
{
  int i;
  for (i = 0; i < inf->nhandlers; i++)
    if (inf->handlers[i].on_add)
      inf->handlers[i].on_add(obj, inf->handlers[i].arg);
}

static void notify_update(struct carp_informer *inf, struct carp_objmeta *old,
                          struct carp_objmeta *obj)
{
  int i;
  for (i = 0; i < inf->nhandlers; i++)
    if (inf->handlers[i].on_update)
      inf->handlers[i].on_update(old, obj, inf->handlers[i].arg);
}

static void notify_delete(struct carp_informer *inf, struct carp_objmeta *obj)
{
  int i;
  for (i = 0; i < inf->nhandlers; i++)
    if (inf->handlers[i].on_delete)
      inf->handlers[i].on_delete(obj, inf->handlers[i].arg);
}

static void notify_decode_error(struct carp_informer *inf,
                                const struct carp_obj_id *id,
                                const char *problem)
{
  int i;
  for (i = 0; i < inf->nhandlers; i++)
    if (inf->handlers[i].on_decode_error)
      inf->handlers[i].on_decode_error(inf->kind, id, problem,
                                       inf->handlers[i].arg);
}

/* An object that cannot be decoded: logged, and told to on_decode_error.
 * Takes o->err. */
static void decode_failed(struct carp_informer *inf, struct inf_obj *o)
{
  inf->stats.decode_errors++;
  CARP_LOG_ERROR("informer",
                 "cannot decode object, keeping the cache as "
                 "it was",
                 CARP_F_STR("kind", kind_name(inf)),
                 CARP_F_STR("name", o->id.name),
                 CARP_F_STR("namespace", o->id.namespace),
                 CARP_F_STR("problem", o->err ? o->err : ""));
  notify_decode_error(inf, &o->id, o->err ? o->err : "");
  CARP_FREE(&o->err);
}

/* The store key of what an object's JSON says it is, or NULL. */
static const char *key_of(const struct carp_obj_id *id, struct carp_buf *key)
{
  if (!id->name)
    return NULL;
  carp_buf_init(key, 1024);
  if (id->namespace && *id->namespace)
    carp_buf_printf(key, "%s/", id->namespace);
  carp_buf_puts(key, id->name);
  return carp_buf_cstr(key);
}

/* Stores obj (taking its reference) and tells the handlers. */
static void apply_upsert(struct carp_informer *inf, struct carp_objmeta *obj)
{
  struct carp_objmeta *old = carp_store_put(inf->store, obj);
  if (!old) {
    notify_add(inf, obj);
    return;
  }
  /* The same version again (a relist of an unchanged object) is no news. */
  if (!strcmp(old->resource_version, obj->resource_version) &&
      old->resource_version[0]) {
    carp_obj_unref(old);
    return;
  }
  notify_update(inf, old, obj);
  carp_obj_unref(old);
}

static void apply_delete_key(struct carp_informer *inf, const char *key)
{
  struct carp_objmeta *old = carp_store_remove(inf->store, key);
  if (!old)
    return;
  notify_delete(inf, old);
  carp_obj_unref(old);
}

/* ---- backoff ---- */

static void on_timer(uv_timer_t *t)
{
  struct carp_informer *inf = carp_container_of(t, struct carp_informer, timer);
  if (inf->closing)
    return;
  if (inf->need_relist)
    start_list(inf);
  else
    start_watch(inf);
}

static void backoff(struct carp_informer *inf, int relist)
{
  uint64_t delay = carp_backoff_next(&inf->backoff);
  inf->state = INF_BACKOFF;
  inf->need_relist = relist;
  uv_timer_start(&inf->timer, on_timer, delay, 0);
}

static void maybe_finish_close(struct carp_informer *inf);

/* ---- list ---- */

/* A list (re)starts: objects it returns get a mark of its own. */
static void list_begin(struct carp_informer *inf)
{
  if (++inf->list_mark == 0)
    inf->list_mark = 1;
}

/* The list in progress is complete: what the store holds and the list
 * did not return is deleted, and the informer is synced. */
static void settle_list(struct carp_informer *inf)
{
  struct carp_store_iter it;
  struct carp_objmeta *obj;
  char **gone = NULL;
  size_t ngone = 0, cap = 0, i;
  int first = !inf->synced;

  /* Tombstones: what the store holds but the list did not return. */
  carp_store_iter_init(&it);
  while ((obj = carp_store_next(inf->store, &it))) {
    if (obj->store_mark == inf->list_mark)
      continue;
    if (ngone == cap) {
      cap = cap ? cap * 2 : 16;
      gone = carp_reallocarray(gone, cap, sizeof(char *));
    }
    gone[ngone++] = carp_strdup(obj->key);
  }
  for (i = 0; i < ngone; i++) {
    apply_delete_key(inf, gone[i]);
    carp_free(gone[i]);
  }
  carp_free(gone);
  inf->stats.lists++;
  if (inf->stale)
    CARP_LOG_INFO("informer", "relisted, in sync again",
                  CARP_F_STR("kind", kind_name(inf)));
  inf->stale = 0;
  carp_backoff_reset(&inf->backoff);
  CARP_LOG_DEBUG("informer", "listed", CARP_F_STR("kind", kind_name(inf)),
                 CARP_F_UINT("objects", carp_store_len(inf->store)),
                 CARP_F_UINT("deleted", ngone));
  if (first) {
    inf->synced = 1;
    for (i = 0; i < (size_t)inf->nhandlers; i++)
      if (inf->handlers[i].on_synced)
        inf->handlers[i].on_synced(inf->handlers[i].arg);
  }
}

static void finish_list(struct carp_informer *inf)
{
  if (inf->absent)
    CARP_LOG_INFO("informer", "API served now",
                  CARP_F_STR("kind", kind_name(inf)),
                  CARP_F_STR("path", inf->path));
  inf->absent = 0;
  settle_list(inf);
  if (!inf->closing)
    start_watch(inf);
}

/* An optional informer's API is not served: an empty list, in effect
 * (every cached object goes), and another look later. */
static void list_absent(struct carp_informer *inf)
{
  if (!inf->absent)
    CARP_LOG_INFO("informer", "API not served; running without it until it is",
                  CARP_F_STR("kind", kind_name(inf)),
                  CARP_F_STR("path", inf->path));
  inf->absent = 1;
  CARP_FREE(&inf->cont);
  list_begin(inf); /* a mark no object has: settling deletes them all */
  settle_list(inf);
  inf->state = INF_BACKOFF;
  inf->need_relist = 1;
  uv_timer_start(&inf->timer, on_timer, CARP_INFORMER_ABSENT_RETRY_MS, 0);
}

/* One item of a list page: into the store, or, when it cannot be decoded,
 * the object of its key kept as it was (marked, so that the relist does
 * not delete it). */
static void on_list_item(struct inf_obj *o, void *arg)
{
  struct carp_informer *inf = arg;
  struct carp_objmeta *old;
  struct carp_buf key;
  const char *k;
  if (o->obj) {
    o->obj->store_mark = inf->list_mark;
    apply_upsert(inf, o->obj);
    return;
  }
  decode_failed(inf, o);
  if (!(k = key_of(&o->id, &key)))
    return;
  if ((old = carp_store_get(inf->store, k)))
    old->store_mark = inf->list_mark;
  carp_buf_free(&key);
}

static void on_list_page(const struct carp_kube_result *res, void *arg)
{
  struct carp_informer *inf = arg;
  struct inf_page pg;
  char *perr = NULL;
  int rc;

  inf->in_flight = 0;
  inf->list_op = NULL;
  if (inf->closing) {
    maybe_finish_close(inf);
    return;
  }
  if (res->err) {
    if (res->err == CARP_EGONE && inf->cont) {
      /* The continue token expired: start the list over. */
      CARP_LOG_INFO("informer", "list continue token expired, relisting",
                    CARP_F_STR("kind", kind_name(inf)));
      CARP_FREE(&inf->cont);
      start_list(inf);
      return;
    }
    if (res->err == CARP_ENOTFOUND && inf->optional && !inf->cont) {
      list_absent(inf);
      return;
    }
    CARP_LOG_WARN("informer", "list failed", CARP_F_STR("kind", kind_name(inf)),
                  CARP_F_ERR(res->err), CARP_F_STR("message", res->message));
    /* Until a list succeeds nobody knows what changed meanwhile. */
    if (inf->synced)
      inf->stale = 1;
    CARP_FREE(&inf->cont);
    backoff(inf, 1);
    return;
  }
  rc = res->raw ? inf_dec_page(inf->dec, res->raw, res->raw_len, &pg,
                               on_list_item, inf, &perr)
                : CARP_EPARSE;
  if (rc || !pg.has_items) {
    /* Items decoded before the fault stay in the store; the relist after
     * the backoff settles them. */
    CARP_LOG_WARN("informer",
                  rc ? "list answer is not valid JSON"
                     : "list answer without items",
                  CARP_F_STR("kind", kind_name(inf)),
                  CARP_F_STR("problem", perr ? perr : ""));
    carp_free(perr);
    carp_free(pg.rv);
    carp_free(pg.cont);
    CARP_FREE(&inf->cont);
    backoff(inf, 1);
    return;
  }
  CARP_FREE(&inf->cont);
  if (pg.cont) {
    inf->cont = pg.cont;
    carp_free(pg.rv);
    start_list(inf);
    return;
  }
  set_rv(inf, pg.rv);
  carp_free(pg.rv);
  finish_list(inf);
}

static void add_param(struct carp_buf *q, const char *name, const char *value)
{
  if (!value || !*value)
    return;
  if (q->len)
    carp_buf_putc(q, '&');
  carp_buf_printf(q, "%s=", name);
  carp_http_escape(q, value);
}

static void start_list(struct carp_informer *inf)
{
  struct carp_buf q;
  struct carp_kube_request r;
  char limit[32];
  int rc;

  inf->state = INF_LISTING;
  if (!inf->cont)
    list_begin(inf);
  carp_buf_init(&q, 64 * 1024);
  snprintf(limit, sizeof(limit), "%u", inf->page_size);
  add_param(&q, "limit", limit);
  add_param(&q, "continue", inf->cont);
  add_param(&q, "labelSelector", inf->label_selector);
  add_param(&q, "fieldSelector", inf->field_selector);
  memset(&r, 0, sizeof(r));
  r.method = "GET";
  r.path = inf->path;
  r.query = carp_buf_cstr(&q);
  r.timeout_ms = 120 * 1000;
  r.raw_body = 1;
  inf->in_flight = 1;
  rc = carp_kube_call(inf->kube, &r, on_list_page, inf, &inf->list_op);
  carp_buf_free(&q);
  if (rc) {
    inf->in_flight = 0;
    inf->list_op = NULL;
    backoff(inf, 1);
  }
}

/* ---- watch ---- */

/* A version the informer will not watch from: the watch ends and the
 * informer relists. */
static int untrusted(struct carp_informer *inf, const char *type,
                     const char *rv)
{
  inf->untrusted = 1;
  CARP_LOG_WARN("informer",
                "watch event with a resourceVersion that is not a number, "
                "relisting",
                CARP_F_STR("kind", kind_name(inf)), CARP_F_STR("type", type),
                CARP_F_STR("resourceVersion", rv ? rv : "(none)"));
  return CARP_EPARSE;
}

static int on_frame(const char *json, size_t len, void *arg)
{
  struct carp_informer *inf = arg;
  struct inf_event ev;
  struct inf_obj o;
  char *err = NULL;
  const char *rv;
  if (inf->closing)
    return CARP_ECANCELED;
  if (inf_dec_event(inf->dec, json, len, &ev, &err)) {
    CARP_LOG_WARN("kube", "malformed watch event",
                  CARP_F_STR("kind", kind_name(inf)),
                  CARP_F_STR("error", err ? err : ""));
    carp_free(err);
    return CARP_EPARSE;
  }
  rv = ev.id.resource_version;
  switch (ev.t) {
  case INF_BOOKMARK:
    if (carp_rv_parse(rv, NULL))
      return untrusted(inf, ev.type, rv);
    set_rv(inf, rv);
    return 0;
  case INF_ERROR:
    CARP_LOG_INFO(
        "informer", "watch error event", CARP_F_STR("kind", kind_name(inf)),
        CARP_F_INT("code", ev.code), CARP_F_STR("message", ev.message));
    return ev.code == 410 ? CARP_EGONE : CARP_EUNAVAIL;
  case INF_OTHER:
    return 0;
  default:
    break;
  }
  if (carp_rv_parse(rv, NULL))
    return untrusted(inf, ev.type, rv);
  inf->watch_events++;
  inf->stats.events++;
  if (ev.t == INF_DELETED) {
    struct carp_buf key;
    const char *k = key_of(&ev.id, &key);
    if (!k)
      return 0;
    apply_delete_key(inf, k);
    carp_buf_free(&key);
    set_rv(inf, rv);
    return 0;
  }
  inf_dec_event_object(inf->dec, &o);
  if (o.obj)
    apply_upsert(inf, o.obj);
  else
    decode_failed(inf, &o);
  set_rv(inf, rv);
  return 0;
}

/* A failure of the connection itself (the server's answer, if any, was
 * not a refusal of the watch): the version is still good. */
static int transport_error(int err)
{
  return err == CARP_ECONNECT || err == CARP_EIO || err == CARP_ETIMEDOUT ||
         err == CARP_ETLS || err == CARP_ETOOMANY;
}

/* The watch cannot be resumed: relist after the backoff, not synced until
 * the list is complete. */
static void relist_untrusted(struct carp_informer *inf, int err,
                             const char *message)
{
  if (!inf->stale)
    CARP_LOG_WARN("informer",
                  "watch failed in a way a rewatch cannot fix, relisting",
                  CARP_F_STR("kind", kind_name(inf)), CARP_F_ERR(err),
                  CARP_F_STR("message", message),
                  CARP_F_STR("resourceVersion", inf->rv ? inf->rv : ""));
  inf->stale = 1;
  inf->watch_failures = 0;
  CARP_FREE(&inf->rv);
  backoff(inf, 1);
}

static void on_watch_done(int err, const char *message, void *arg)
{
  struct carp_informer *inf = arg;
  uint64_t lived = uv_now(inf->loop) - inf->watch_started;
  int was_untrusted = inf->untrusted;
  inf->in_flight = 0;
  inf->watch_op = NULL;
  inf->untrusted = 0;
  if (inf->closing) {
    maybe_finish_close(inf);
    return;
  }
  if (err == CARP_EGONE) {
    CARP_LOG_INFO("informer", "resource version too old, relisting",
                  CARP_F_STR("kind", kind_name(inf)));
    inf->watch_failures = 0;
    start_list(inf);
    return;
  }
  if (was_untrusted) {
    relist_untrusted(inf, CARP_EPARSE,
                     "a resourceVersion that is not a number");
    return;
  }
  if (err == 0 && (lived >= 1000 || inf->watch_events > 0)) {
    /* A normal end (the server's timeout): watch again at once. */
    if (lived > 60 * 1000)
      carp_backoff_reset(&inf->backoff);
    inf->watch_failures = 0;
    start_watch(inf);
    return;
  }
  /* A dropped connection is worth one more watch from the same version;
   * anything else - the server refusing to watch from it, a stream that
   * does not parse, a second failure in a row - is not. A watch that
   * worked a while (events, or a minute) before it dropped starts the
   * count over. */
  if (inf->watch_events > 0 || lived >= 60 * 1000)
    inf->watch_failures = 0;
  if ((!err || transport_error(err)) && inf->watch_failures++ == 0) {
    CARP_LOG_WARN(
        "informer", "watch ended", CARP_F_STR("kind", kind_name(inf)),
        CARP_F_ERR(err ? err : CARP_EIO),
        CARP_F_STR("message", err ? message : "closed at once, empty"),
        CARP_F_UINT("ms", lived));
    backoff(inf, 0);
    return;
  }
  relist_untrusted(inf, err ? err : CARP_EIO,
                   err ? message : "the watch closed at once, empty");
}

static void start_watch(struct carp_informer *inf)
{
  struct carp_buf q;
  char num[32];
  unsigned span = inf->max_watch - inf->min_watch;
  unsigned secs =
      inf->min_watch + (unsigned)carp_rand_below(carp_rand_global(), span + 1);
  int rc;

  inf->state = INF_WATCHING;
  carp_buf_init(&q, 64 * 1024);
  add_param(&q, "watch", "true");
  add_param(&q, "allowWatchBookmarks", "true");
  snprintf(num, sizeof(num), "%u", secs);
  add_param(&q, "timeoutSeconds", num);
  add_param(&q, "resourceVersion", inf->rv);
  add_param(&q, "labelSelector", inf->label_selector);
  add_param(&q, "fieldSelector", inf->field_selector);
  inf->watch_started = uv_now(inf->loop);
  inf->watch_events = 0;
  inf->in_flight = 1;
  inf->stats.watches++;
  rc = carp_kube_watch(inf->kube, inf->path, carp_buf_cstr(&q), on_frame,
                       on_watch_done, inf, &inf->watch_op);
  carp_buf_free(&q);
  if (rc) {
    inf->in_flight = 0;
    inf->watch_op = NULL;
    backoff(inf, 0);
  }
}

/* ---- lifecycle ---- */

int carp_informer_new(uv_loop_t *loop, struct carp_kube *kube,
                      const struct carp_informer_options *o,
                      struct carp_informer **out)
{
  struct carp_informer *inf;
  struct carp_buf path;
  struct carp_kube_ref ref;
  if (!loop || !kube || !o || !o->kind || !out)
    return CARP_EINVAL;
  inf = CARP_NEW(struct carp_informer);
  inf->loop = loop;
  inf->kube = kube;
  inf->kind = o->kind;
  inf->namespace = carp_strdup(o->namespace);
  inf->label_selector = carp_strdup(o->label_selector);
  inf->field_selector = carp_strdup(o->field_selector);
  inf->page_size = o->page_size ? o->page_size : 500;
  inf->optional = o->optional;
  inf->min_watch = o->min_watch_seconds ? o->min_watch_seconds : 300;
  inf->max_watch = o->max_watch_seconds ? o->max_watch_seconds : 600;
  if (inf->max_watch < inf->min_watch)
    inf->max_watch = inf->min_watch;
  inf->store = carp_store_new(o->kind);
  inf->dec = inf_dec_new(o->kind);
  carp_backoff_init(&inf->backoff, 800, 30 * 1000, 2.0, 0.5);
  memset(&ref, 0, sizeof(ref));
  ref.group = o->kind->group;
  ref.version = o->kind->version;
  ref.resource = o->kind->resource;
  ref.namespace = o->namespace;
  carp_buf_init(&path, 4096);
  carp_kube_path(&path, &ref);
  inf->path = carp_buf_steal(&path, NULL);
  uv_timer_init(loop, &inf->timer);
  *out = inf;
  return 0;
}

int carp_informer_add_handlers(struct carp_informer *inf,
                               const struct carp_informer_handlers *h)
{
  if (inf->nhandlers == MAX_HANDLERS || inf->state != INF_IDLE)
    return CARP_EINVAL;
  inf->handlers[inf->nhandlers++] = *h;
  return 0;
}

int carp_informer_add_index(struct carp_informer *inf, carp_store_index_fn fn)
{
  if (inf->state != INF_IDLE)
    return CARP_EINVAL;
  return carp_store_add_index(inf->store, fn);
}

int carp_informer_start(struct carp_informer *inf)
{
  if (inf->state != INF_IDLE)
    return CARP_EINVAL;
  start_list(inf);
  return 0;
}

int carp_informer_synced(const struct carp_informer *inf)
{
  return inf->synced && !inf->stale;
}

int carp_informer_absent(const struct carp_informer *inf)
{
  return inf->absent;
}

struct carp_store *carp_informer_store(struct carp_informer *inf)
{
  return inf->store;
}

const struct carp_kind *carp_informer_kind(const struct carp_informer *inf)
{
  return inf->kind;
}

void carp_informer_stats(const struct carp_informer *inf,
                         struct carp_informer_stats *out)
{
  *out = inf->stats;
}

static void on_timer_closed(uv_handle_t *h)
{
  struct carp_informer *inf =
      carp_container_of((uv_timer_t *)h, struct carp_informer, timer);
  void (*cb)(void *) = inf->close_cb;
  void *arg = inf->close_arg;
  inf_dec_free(inf->dec);
  carp_store_free(inf->store);
  carp_free(inf->namespace);
  carp_free(inf->label_selector);
  carp_free(inf->field_selector);
  carp_free(inf->rv);
  carp_free(inf->cont);
  carp_free(inf->path);
  carp_free(inf);
  if (cb)
    cb(arg);
}

static void maybe_finish_close(struct carp_informer *inf)
{
  if (!inf->closing || inf->in_flight || inf->state == INF_CLOSED)
    return;
  inf->state = INF_CLOSED;
  uv_close((uv_handle_t *)&inf->timer, on_timer_closed);
}

void carp_informer_close(struct carp_informer *inf, void (*close_cb)(void *arg),
                         void *arg)
{
  if (!inf || inf->closing)
    return;
  inf->closing = 1;
  inf->close_cb = close_cb;
  inf->close_arg = arg;
  uv_timer_stop(&inf->timer);
  if (inf->watch_op)
    carp_kube_cancel(inf->watch_op);
  if (inf->list_op)
    carp_kube_cancel(inf->list_op);
  /* Their callbacks (with CARP_ECANCELED) finish the close. */
  maybe_finish_close(inf);
}
