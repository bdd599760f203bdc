/* controller.c: the NodePool controller's queue, informer handlers and
 * reconcile (see include/carpenter/nodepool_controller.h). A reconcile
 * takes the first step that is due - the status (conditions and counter),
 * the NodePool's hash annotations, then the hash annotations of its
 * NodeClaims - and makes one write for it, or one write per NodeClaim for
 * the last step. A successful write ends the reconcile: its watch event
 * queues the pool again for the next step, so every decision is taken on
 * a cache that has seen the previous write. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/nodepool_controller.h"
#include "carpenter/timeutil.h"
#include "carpenter/workqueue.h"

#define LOGGER "nodepool"

struct carp_nodepool_controller {
  uv_loop_t *loop;
  struct carp_cluster *cluster;
  struct carp_kube *kube;
  struct carp_nodepool_controller_options o;
  struct carp_workqueue *queue;
  uv_timer_t resync;
  int active;
  int closing;
  int timer_open;
  int pending; /* writes in flight */
  int closed;  /* close finished: only the handlers' flag checks remain */
  void (*close_cb)(void *arg);
  void *close_arg;
};

/* One reconcile's writes: one, or one per NodeClaim re-stamped. */
struct write_batch {
  struct carp_nodepool_controller *c;
  char *key;
  const char *what;
  size_t left;
  int err; /* first error worth a retry */
};

/* Ends a close once nothing is in flight (the struct itself is freed by
 * carp_nodepool_controller_free). */
static void maybe_free(struct carp_nodepool_controller *c)
{
  if (!c->closing || c->closed || c->queue || c->pending || c->timer_open)
    return;
  c->closed = 1;
  if (c->close_cb)
    c->close_cb(c->close_arg);
}

void carp_nodepool_controller_free(struct carp_nodepool_controller *c)
{
  carp_free(c);
}

static void done(struct carp_nodepool_controller *c, const char *key,
                 enum carp_reconcile_result r, uint64_t after_ms)
{
  carp_workqueue_done(c->queue, key, r, after_ms);
}

/* ---- writes ---- */

static void batch_finish(struct write_batch *b)
{
  struct carp_nodepool_controller *c = b->c;
  if (!b->err)
    done(c, b->key, CARP_RECONCILE_DONE, 0); /* the watch event follows */
  else /* a conflict too: the cache is re-read, backing off */
    done(c, b->key, CARP_RECONCILE_ERROR, 0);
  carp_free(b->key);
  carp_free(b);
}

static void batch_error(struct write_batch *b, int err, const char *message)
{
  if (err == CARP_ENOTFOUND)
    return;
  if (err != CARP_ECONFLICT && err != CARP_ENOTLEADER && err != CARP_ECANCELED)
    CARP_LOG_WARN(LOGGER, "write failed", CARP_F_STR("nodepool", b->key),
                  CARP_F_STR("write", b->what), CARP_F_ERR(err),
                  CARP_F_STR("message", message));
  if (!b->err || b->err == CARP_ECONFLICT)
    b->err = err;
}

static void on_write(const struct carp_kube_result *res, void *arg)
{
  struct write_batch *b = arg;
  struct carp_nodepool_controller *c = b->c;
  if (res->err)
    batch_error(b, res->err, res->message);
  c->pending--;
  if (--b->left == 0)
    batch_finish(b);
  maybe_free(c);
}

/* A batch starts with one reference held by its starter (batch_close
 * drops it), so it cannot finish while patches are still being started. */
static struct write_batch *batch_new(struct carp_nodepool_controller *c,
                                     const char *key, const char *what)
{
  struct write_batch *b = CARP_NEW(struct write_batch);
  b->c = c;
  b->key = carp_strdup(key);
  b->what = what;
  b->left = 1;
  return b;
}

static void batch_patch(struct write_batch *b, const char *resource,
                        const char *name, const char *subresource,
                        const struct carp_buf *body)
{
  struct carp_nodepool_controller *c = b->c;
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = resource,
                              .name = name,
                              .subresource = subresource};
  int rc;
  b->left++;
  c->pending++;
  /* The resourceVersion in the body makes the patch conditional, so it is
   * safe to repeat. */
  rc = carp_kube_patch(c->kube, &ref, CARP_PATCH_MERGE, body->ptr, body->len, 1,
                       on_write, b);
  if (rc) {
    b->left--;
    c->pending--;
    batch_error(b, rc, carp_strerror(rc));
  }
}

static void batch_close(struct write_batch *b)
{
  if (--b->left == 0)
    batch_finish(b);
}

/* {"metadata":{"resourceVersion":rv,"annotations":{hash,version}}} */
static int hash_patch(const char *rv, const char *hash, struct carp_buf *out)
{
  struct carp_jw w;
  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", rv);
  carp_jw_key(&w, "annotations");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, CARP_ANN_NODEPOOL_HASH, hash);
  carp_jw_kstr(&w, CARP_ANN_NODEPOOL_HASH_VER, CARP_NODEPOOL_HASH_VERSION);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}

/* ---- reconcile ---- */

static const struct carp_nodeclass *
class_of(const struct carp_nodepool_controller *c,
         const struct carp_nodepool *np)
{
  if (strcmp(np->tmpl.node_class_ref.kind, CARP_NODECLASS_KIND) ||
      strcmp(np->tmpl.node_class_ref.group, CARP_NODECLASS_GROUP))
    return NULL;
  return carp_cluster_nodeclass(c->cluster, np->tmpl.node_class_ref.name);
}

static int write_status(struct carp_nodepool_controller *c,
                        const struct carp_nodepool *np, const char *key)
{
  struct carp_objmeta *const *claims;
  struct carp_nodepool_status st;
  struct carp_buf body;
  struct write_batch *b;
  size_t n;
  int changed;
  claims = carp_cluster_nodeclaims_of_pool(c->cluster, np->meta.name, &n);
  carp_nodepool_status_copy(&st, &np->status);
  changed = carp_nodepool_status_compute(np, class_of(c, np), claims, n,
                                         carp_time_wall_ms(), &st);
  if (!changed) {
    carp_nodepool_status_cleanup(&st);
    return 0;
  }
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  if (carp_nodepool_status_diff_patch(&np->status, &st,
                                      np->meta.resource_version, &body)) {
    carp_buf_free(&body);
    carp_nodepool_status_cleanup(&st);
    done(c, key, CARP_RECONCILE_ERROR, 0);
    return 1;
  }
  CARP_LOG_DEBUG(LOGGER, "writing status", CARP_F_STR("nodepool", key),
                 CARP_F_INT("nodes", st.nodes));
  b = batch_new(c, key, "status");
  batch_patch(b, "nodepools", np->meta.name, "status", &body);
  batch_close(b);
  carp_buf_free(&body);
  carp_nodepool_status_cleanup(&st);
  return 1;
}

static int stamp_pool(struct carp_nodepool_controller *c,
                      const struct carp_nodepool *np, const char *key)
{
  struct carp_buf body;
  struct write_batch *b;
  if (!carp_nodepool_hash_stale(np))
    return 0;
  carp_buf_init(&body, 4096);
  hash_patch(np->meta.resource_version, np->hash, &body);
  CARP_LOG_INFO(LOGGER, "stamping the template hash",
                CARP_F_STR("nodepool", key), CARP_F_STR("hash", np->hash));
  b = batch_new(c, key, "hash");
  batch_patch(b, "nodepools", np->meta.name, NULL, &body);
  batch_close(b);
  carp_buf_free(&body);
  return 1;
}

static int stamp_claims(struct carp_nodepool_controller *c,
                        const struct carp_nodepool *np, const char *key)
{
  struct carp_objmeta *const *claims;
  struct write_batch *b = NULL;
  size_t n, i;
  claims = carp_cluster_nodeclaims_of_pool(c->cluster, np->meta.name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)claims[i];
    struct carp_buf body;
    if (nc->meta.deletion_ms ||
        carp_nodepool_hash_check(np, nc) != CARP_HASH_RESTAMP ||
        carp_conditions_get(&nc->status.conditions, CARP_COND_DRIFTED))
      continue;
    if (!b)
      b = batch_new(c, key, "nodeclaim hash");
    carp_buf_init(&body, 4096);
    hash_patch(nc->meta.resource_version, np->hash, &body);
    CARP_LOG_INFO(LOGGER, "re-stamping the template hash",
                  CARP_F_STR("nodepool", key),
                  CARP_F_STR("nodeclaim", nc->meta.name));
    batch_patch(b, "nodeclaims", nc->meta.name, NULL, &body);
    carp_buf_free(&body);
  }
  if (!b)
    return 0;
  batch_close(b);
  return 1;
}

static void reconcile(struct carp_workqueue *q, const char *key, void *arg)
{
  struct carp_nodepool_controller *c = arg;
  const struct carp_nodepool *np;
  (void)q;
  if (!c->active || c->closing) {
    done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  np = carp_cluster_nodepool(c->cluster, key);
  if (!np) {
    done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  /* The counter needs every NodeClaim in the cache. */
  if (!carp_cluster_synced(c->cluster)) {
    done(c, key, CARP_RECONCILE_REQUEUE_AFTER, 1000);
    return;
  }
  if (write_status(c, np, key) || stamp_pool(c, np, key) ||
      stamp_claims(c, np, key))
    return;
  done(c, key, CARP_RECONCILE_DONE, 0);
}

/* ---- informer handlers ---- */

static int acting(const struct carp_nodepool_controller *c)
{
  return c->active && !c->closing;
}

static int pool_ready(const struct carp_objmeta *m)
{
  return m && carp_conditions_is_true(
                  &((const struct carp_nodepool *)m)->status.conditions,
                  CARP_COND_READY);
}

static void pool_added(struct carp_objmeta *obj, void *arg)
{
  struct carp_nodepool_controller *c = arg;
  if (acting(c))
    carp_workqueue_add(c->queue, obj->name);
}

static void pool_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                         void *arg)
{
  struct carp_nodepool_controller *c = arg;
  if (c->closing)
    return;
  if (c->o.on_ready && !pool_ready(old) && pool_ready(obj))
    c->o.on_ready(c->o.on_ready_arg, obj->name);
  pool_added(obj, arg);
}

/* A class changed: every pool that names it. */
static void class_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_nodepool_controller *c = arg;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  if (!acting(c))
    return;
  carp_store_iter_init(&it);
  while (
      (m = carp_store_next(carp_informer_store(c->cluster->nodepools), &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)m;
    if (!strcmp(np->tmpl.node_class_ref.name, obj->name))
      carp_workqueue_add(c->queue, m->name);
  }
}

static void class_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                          void *arg)
{
  class_event(obj, arg);
}

static void claim_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_nodepool_controller *c = arg;
  const char *pool =
      carp_nodeclaim_nodepool((const struct carp_nodeclaim *)obj);
  if (acting(c) && pool)
    carp_workqueue_add_after(c->queue, pool, c->o.debounce_ms);
}

static void claim_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                          void *arg)
{
  const char *a = carp_nodeclaim_nodepool((const struct carp_nodeclaim *)old);
  const char *b = carp_nodeclaim_nodepool((const struct carp_nodeclaim *)obj);
  if (a && (!b || strcmp(a, b)))
    claim_event(old, arg);
  claim_event(obj, arg);
}

static void queue_all(struct carp_nodepool_controller *c)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->cluster->nodepools), &it)))
    carp_workqueue_add(c->queue, m->name);
}

static void on_resync(uv_timer_t *t)
{
  struct carp_nodepool_controller *c = t->data;
  if (acting(c))
    queue_all(c);
}

void carp_nodepool_controller_set_active(struct carp_nodepool_controller *c,
                                         int active)
{
  c->active = active;
  if (acting(c))
    queue_all(c);
}

int carp_nodepool_controller_new(
    uv_loop_t *loop, struct carp_cluster *cluster, struct carp_kube *kube,
    const struct carp_nodepool_controller_options *o,
    struct carp_nodepool_controller **out)
{
  struct carp_nodepool_controller *c;
  struct carp_workqueue_options qo;
  struct carp_informer_handlers ph = {.on_add = pool_added,
                                      .on_update = pool_updated};
  struct carp_informer_handlers kh = {.on_add = class_event,
                                      .on_update = class_updated,
                                      .on_delete = class_event};
  struct carp_informer_handlers ch = {.on_add = claim_event,
                                      .on_update = claim_updated,
                                      .on_delete = claim_event};
  int rc;
  if (!loop || !cluster || !kube || !out)
    return CARP_EINVAL;
  c = CARP_NEW(struct carp_nodepool_controller);
  c->loop = loop;
  c->cluster = cluster;
  c->kube = kube;
  if (o)
    c->o = *o;
  if (!c->o.debounce_ms)
    c->o.debounce_ms = 1000;
  if (!c->o.resync_ms)
    c->o.resync_ms = 60 * 1000;
  memset(&qo, 0, sizeof(qo));
  qo.name = "nodepool";
  qo.concurrency = 4;
  qo.max_delay_ms = 60 * 1000;
  qo.metrics = c->o.metrics;
  qo.reconcile = reconcile;
  qo.arg = c;
  rc = carp_workqueue_new(loop, &qo, &c->queue);
  if (rc) {
    carp_free(c);
    return rc;
  }
  ph.arg = kh.arg = ch.arg = c;
  if ((rc = carp_informer_add_handlers(cluster->nodepools, &ph)) ||
      (rc = carp_informer_add_handlers(cluster->nodeclasses, &kh)) ||
      (rc = carp_informer_add_handlers(cluster->nodeclaims, &ch))) {
    /* A wiring error (too many handlers). Handlers already added point
     * at c, so c is left allocated rather than freed under them. */
    CARP_LOG_ERROR(LOGGER, "cannot add informer handlers", CARP_F_ERR(rc));
    return rc;
  }
  uv_timer_init(loop, &c->resync);
  c->resync.data = c;
  c->timer_open = 1;
  uv_timer_start(&c->resync, on_resync, c->o.resync_ms, c->o.resync_ms);
  uv_unref((uv_handle_t *)&c->resync);
  *out = c;
  return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
  struct carp_nodepool_controller *c = h->data;
  c->timer_open = 0;
  maybe_free(c);
}

static void on_queue_closed(void *arg)
{
  struct carp_nodepool_controller *c = arg;
  c->queue = NULL;
  maybe_free(c);
}

void carp_nodepool_controller_close(struct carp_nodepool_controller *c,
                                    void (*cb)(void *arg), void *arg)
{
  if (!c || c->closing)
    return;
  c->closing = 1;
  c->close_cb = cb;
  c->close_arg = arg;
  uv_close((uv_handle_t *)&c->resync, on_timer_closed);
  carp_workqueue_close(c->queue, on_queue_closed, c);
}
