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
#include "carpenter/controller.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/nodepool_controller.h"

#define LOGGER "nodepool"

struct nodepool_ctl {
  struct carp_controller base;
  struct carp_nodepool_controller_options o;
};

#define NPC(c) carp_container_of(c, struct nodepool_ctl, base)

/* One reconcile's writes: one, or one per NodeClaim re-stamped. */
struct write_batch {
  struct carp_controller *c;
  char *key;
  const char *what;
  size_t left;
  int err; /* first error worth a retry */
};

/* ---- writes ---- */

static void batch_finish(struct write_batch *b)
{
  struct carp_controller *c = b->c;
  if (!b->err)
    /* The watch event of the write queues the next step. */
    carp_controller_done(c, b->key, CARP_RECONCILE_DONE, 0);
  else
    carp_controller_done(c, b->key, CARP_RECONCILE_ERROR, 0);
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

static void on_write(struct carp_controller *c, const char *key,
                     const struct carp_kube_result *res, void *arg)
{
  struct write_batch *b = arg;
  (void)c;
  (void)key;
  if (res->err)
    batch_error(b, res->err, res->message);
  if (--b->left == 0)
    batch_finish(b);
}

/* A batch starts with one reference held by its starter (batch_close
 * drops it), so it cannot finish while patches are still being started. */
static struct write_batch *batch_new(struct carp_controller *c, const char *key,
                                     const char *what)
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
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = resource,
                              .name = name,
                              .subresource = subresource};
  int rc;
  b->left++;
  rc = carp_write_patch(b->c, b->key, &ref, body->ptr, body->len, on_write, b);
  if (rc) {
    b->left--;
    batch_error(b, rc, carp_strerror(rc));
  }
}

static void batch_close(struct write_batch *b)
{
  if (--b->left == 0)
    batch_finish(b);
}

/* {"metadata":{"resourceVersion":rv,"annotations":{hash,version[,mode]}}}
 * (mode NULL: left as it is). */
static int hash_patch(const char *rv, const char *hash, const char *mode,
                      struct carp_buf *out)
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
  if (mode)
    carp_jw_kstr(&w, CARP_ANN_NODEPOOL_MODE, mode);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}

/* ---- reconcile ---- */

static const struct carp_nodeclass *class_of(const struct carp_controller *c,
                                             const struct carp_nodepool *np)
{
  if (strcmp(np->tmpl.node_class_ref.kind, CARP_NODECLASS_KIND) ||
      strcmp(np->tmpl.node_class_ref.group, CARP_NODECLASS_GROUP))
    return NULL;
  return carp_cluster_nodeclass(c->env.cluster, np->tmpl.node_class_ref.name);
}

static int write_status(struct carp_controller *c,
                        const struct carp_nodepool *np, const char *key)
{
  struct carp_objmeta *const *claims;
  struct carp_nodepool_status st;
  struct carp_buf body;
  struct write_batch *b;
  size_t n;
  int changed;
  claims = carp_cluster_nodeclaims_of_pool(c->env.cluster, np->meta.name, &n);
  carp_nodepool_status_copy(&st, &np->status);
  changed = carp_nodepool_status_compute(np, class_of(c, np), claims, n,
                                         carp_controller_now(c), &st);
  if (!changed) {
    carp_nodepool_status_cleanup(&st);
    return 0;
  }
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  if (carp_nodepool_status_diff_patch(&np->status, &st,
                                      np->meta.resource_version, &body)) {
    carp_buf_free(&body);
    carp_nodepool_status_cleanup(&st);
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
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

/* The mode annotation is missing (or not a mode): stamp the spec's. A
 * switched pool keeps its stamp (the status says why it is refused). */
static const char *mode_to_stamp(const struct carp_nodepool *np)
{
  const char *was =
      carp_kvset_get(np->meta.annotations, CARP_ANN_NODEPOOL_MODE);
  if (was && (!strcmp(was, CARP_NODEPOOL_MODE_STATIC) ||
              !strcmp(was, CARP_NODEPOOL_MODE_DYNAMIC)))
    return NULL;
  return carp_nodepool_mode(np);
}

static int stamp_pool(struct carp_controller *c, const struct carp_nodepool *np,
                      const char *key)
{
  struct carp_buf body;
  struct write_batch *b;
  const char *mode = mode_to_stamp(np);
  if (!carp_nodepool_hash_stale(np) && !mode)
    return 0;
  carp_buf_init(&body, 4096);
  hash_patch(np->meta.resource_version, np->hash, mode, &body);
  CARP_LOG_INFO(LOGGER, "stamping the template hash",
                CARP_F_STR("nodepool", key), CARP_F_STR("hash", np->hash));
  b = batch_new(c, key, "hash");
  batch_patch(b, "nodepools", np->meta.name, NULL, &body);
  batch_close(b);
  carp_buf_free(&body);
  return 1;
}

static int stamp_claims(struct carp_controller *c,
                        const struct carp_nodepool *np, const char *key)
{
  struct carp_objmeta *const *claims;
  struct write_batch *b = NULL;
  size_t n, i;
  claims = carp_cluster_nodeclaims_of_pool(c->env.cluster, np->meta.name, &n);
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
    hash_patch(nc->meta.resource_version, np->hash, NULL, &body);
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

static void reconcile(struct carp_controller *c, const char *key)
{
  const struct carp_nodepool *np = carp_cluster_nodepool(c->env.cluster, key);
  if (!np) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (write_status(c, np, key) || stamp_pool(c, np, key) ||
      stamp_claims(c, np, key))
    return;
  carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
}

/* ---- events ---- */

static int pool_ready(const struct carp_objmeta *m)
{
  return m && carp_conditions_is_true(
                  &((const struct carp_nodepool *)m)->status.conditions,
                  CARP_COND_READY);
}

static void pool_event(struct carp_controller *c,
                       const struct carp_objmeta *old,
                       const struct carp_objmeta *obj, int deleted)
{
  struct nodepool_ctl *n = NPC(c);
  if (deleted)
    return;
  if (old && n->o.on_ready && !pool_ready(old) && pool_ready(obj))
    n->o.on_ready(n->o.on_ready_arg, obj->name);
  carp_controller_enqueue(c, obj->name);
}

/* A class changed: every pool that names it. */
static void class_event(struct carp_controller *c,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  (void)old;
  (void)deleted;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->env.cluster->nodepools),
                              &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)m;
    if (!strcmp(np->tmpl.node_class_ref.name, obj->name))
      carp_controller_enqueue(c, m->name);
  }
}

/* A NodeClaim came, went or changed: its pool's counter, debounced. */
static void claim_event(struct carp_controller *c,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  struct nodepool_ctl *n = NPC(c);
  const char *a =
      old ? carp_nodeclaim_nodepool((const struct carp_nodeclaim *)old) : NULL;
  const char *b = carp_nodeclaim_nodepool((const struct carp_nodeclaim *)obj);
  (void)deleted;
  if (a && (!b || strcmp(a, b)))
    carp_controller_enqueue_after(c, a, n->o.debounce_ms);
  if (b)
    carp_controller_enqueue_after(c, b, n->o.debounce_ms);
}

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue_all(c, c->env.cluster->nodepools);
}

static void npc_free(struct carp_controller *c)
{
  carp_free(NPC(c));
}

static const struct carp_controller_def nodepool_def = {
    .name = "nodepool",
    .log_module = LOGGER,
    .concurrency = 4,
    .max_backoff_ms = 60 * 1000,
    .reconcile = reconcile,
    .activated = activated,
    .free = npc_free,
};

int carp_nodepool_controller_new(
    const struct carp_controller_env *env,
    const struct carp_nodepool_controller_options *o,
    struct carp_controller **out)
{
  struct nodepool_ctl *n;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  n = CARP_NEW(struct nodepool_ctl);
  if (o)
    n->o = *o;
  if (!n->o.debounce_ms)
    n->o.debounce_ms = 1000;
  if (!n->o.resync_ms)
    n->o.resync_ms = 60 * 1000;
  rc = carp_controller_init(&n->base, env, &nodepool_def);
  if (rc) {
    carp_free(n);
    return rc;
  }
  carp_controller_resync(&n->base, n->o.resync_ms);
  carp_controller_watch(&n->base, env->cluster->nodepools, pool_event);
  carp_controller_watch(&n->base, env->cluster->nodeclasses, class_event);
  carp_controller_watch(&n->base, env->cluster->nodeclaims, claim_event);
  *out = &n->base;
  return 0;
}
