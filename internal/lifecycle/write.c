/* write.c: the lifecycle controller's writes to the API server. Every
 * write names the reconcile key it belongs to and ends that reconcile
 * through its callback; the controller stays alive until each callback
 * has run (l->pending). */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/timeutil.h"
#include "lifecycle_int.h"

struct write_ctx {
  struct carp_lifecycle *l;
  char *key;
  carp_lc_write_cb cb;
  int target; /* what it writes: TARGET_* */
};

enum { TARGET_OTHER = 0, TARGET_CLAIM, TARGET_NODE };

int64_t carp__lc_now(void)
{
  return carp_time_wall_ms();
}

void carp__lc_remember_rv(struct carp_lifecycle *l, const char *key, int node,
                          const char *rv)
{
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  char **slot;
  if (!m)
    return;
  slot = node ? &m->node_rv : &m->claim_rv;
  carp_free(*slot);
  *slot = rv && *rv ? carp_strdup(rv) : NULL;
}

const char *carp__lc_claim_rv(struct carp_lifecycle *l,
                              const struct carp_nodeclaim *nc)
{
  struct claim_mem *m = carp_map_gets(&l->mem, nc->meta.name);
  if (!m || strcmp(m->uid, nc->meta.uid))
    return nc->meta.resource_version;
  return carp_rv_newer(m->claim_rv, nc->meta.resource_version);
}

const char *carp__lc_node_rv(struct carp_lifecycle *l, const char *key,
                             const struct carp_objmeta *node)
{
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  if (!m)
    return node->resource_version;
  return carp_rv_newer(m->node_rv, node->resource_version);
}

static void on_write(const struct carp_kube_result *res, void *arg)
{
  struct write_ctx *w = arg;
  struct carp_lifecycle *l = w->l;
  /* Every write to the same object re-reads its precondition from here:
   * the version this one produced, or, after a conflict, the cache. */
  if (w->target != TARGET_OTHER) {
    if (!res->err)
      carp__lc_remember_rv(
          l, w->key, w->target == TARGET_NODE,
          carp_json_str(res->body, "metadata", "resourceVersion", NULL));
    else if (res->err == CARP_ECONFLICT)
      carp__lc_remember_rv(l, w->key, w->target == TARGET_NODE, NULL);
  }
  w->cb(l, w->key, res);
  carp_free(w->key);
  carp_free(w);
  carp__lc_unpend(l);
}

static struct write_ctx *ctx_new(struct carp_lifecycle *l, const char *key,
                                 carp_lc_write_cb cb)
{
  struct write_ctx *w = CARP_NEW(struct write_ctx);
  w->l = l;
  w->key = carp_strdup(key);
  w->cb = cb;
  return w;
}

static void ctx_fail(struct carp_lifecycle *l, struct write_ctx *w)
{
  l->pending--;
  carp_free(w->key);
  carp_free(w);
}

int carp__lc_patch(struct carp_lifecycle *l, const char *key, const char *group,
                   const char *version, const char *resource, const char *name,
                   const char *subresource, const char *body, size_t len,
                   carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = {.group = group,
                              .version = version,
                              .resource = resource,
                              .name = name,
                              .subresource = subresource};
  struct write_ctx *w = ctx_new(l, key, cb);
  int rc;
  if (!strcmp(resource, "nodeclaims"))
    w->target = TARGET_CLAIM;
  else if (!strcmp(resource, "nodes"))
    w->target = TARGET_NODE;
  l->pending++;
  /* The resourceVersion in the body makes the patch conditional, so it is
   * safe to repeat. */
  rc = carp_kube_patch(l->kube, &ref, CARP_PATCH_MERGE, body, len, 1, on_write,
                       w);
  if (rc)
    ctx_fail(l, w);
  return rc;
}

int carp__lc_write_status(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc,
                          const struct carp_nodeclaim_status *st,
                          const char *rv, const char *key, carp_lc_write_cb cb)
{
  struct carp_buf body;
  int rc;
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_nodeclaim_status_patch(st, rv ? rv : carp__lc_claim_rv(l, nc),
                                   &body);
  if (!rc)
    rc = carp__lc_patch(l, key, CARP_KARPENTER_GROUP, CARP_KARPENTER_VERSION,
                        "nodeclaims", nc->meta.name, "status", body.ptr,
                        body.len, cb);
  carp_buf_free(&body);
  return rc;
}

int carp__lc_delete_claim(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, const char *key,
                          const char *reason, carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims",
                              .name = nc->meta.name};
  struct carp_kube_delete_options o = {.uid = nc->meta.uid,
                                       .grace_seconds = -1};
  struct write_ctx *w = ctx_new(l, key, cb);
  const char *pool = carp_nodeclaim_nodepool(nc);
  int rc;
  CARP_LOG_INFO("lifecycle", "deleting nodeclaim",
                CARP_F_STR("nodeclaim", nc->meta.name),
                CARP_F_STR("reason", reason));
  carp_metric_add(
      l->m_disrupted,
      CARP_VALUES(reason, pool ? pool : "", "on-demand", "", "forceful"), 1);
  l->pending++;
  rc = carp_kube_delete(l->kube, &ref, &o, on_write, w);
  if (rc)
    ctx_fail(l, w);
  return rc;
}

int carp__lc_delete_node(struct carp_lifecycle *l, const char *key,
                         const char *name, const char *uid, carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = {
      .version = "v1", .resource = "nodes", .name = name};
  struct carp_kube_delete_options o = {.uid = uid, .grace_seconds = -1};
  struct write_ctx *w = ctx_new(l, key, cb);
  int rc;
  l->pending++;
  rc = carp_kube_delete(l->kube, &ref, &o, on_write, w);
  if (rc)
    ctx_fail(l, w);
  return rc;
}

int carp__lc_finish_body(struct carp_lifecycle *l, const char *key,
                         struct carp_jw *w, const char *what)
{
  const struct carp_nodeclaim *nc = carp_cluster_nodeclaim(l->cluster, key);
  struct carp_event_target t;
  if (nc)
    t = carp_event_target_of(&nc->meta, "karpenter.sh/v1");
  return carp_recorder_body_finish(w, l->o.recorder, nc ? &t : NULL, &l->fold,
                                   "lifecycle", key, what);
}

void carp__lc_after_write(struct carp_lifecycle *l, const char *key,
                          const struct carp_kube_result *res)
{
  if (!res->err) {
    carp__lc_done(l, key, CARP_RECONCILE_REQUEUE, 0);
    return;
  }
  if (res->err == CARP_ECONFLICT) {
    /* Our cache is behind the server: look again once it has caught up,
     * backing off (a cache that never catches up must not make a conflict
     * every 100 ms). */
    carp__lc_done(l, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  if (res->err == CARP_ENOTFOUND) {
    carp__lc_done(l, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED)
    CARP_LOG_FOLDED(&l->fold, key, CARP_LOG_WARN, "lifecycle", "write failed",
                    CARP_F_STR("nodeclaim", key), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
  carp__lc_done(l, key, CARP_RECONCILE_ERROR, 0);
}
