/* lifecycle.c: the NodeClaim lifecycle controller's queue and dispatch
 * (see include/carpenter/lifecycle.h). Informer events on NodeClaims and
 * on Nodes (mapped to their NodeClaim by provider ID) queue the NodeClaim;
 * one reconcile looks at its cached state and takes the next step. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "lifecycle_int.h"

/* ---- memory ---- */

static void mem_free(struct claim_mem *m)
{
  carp_resources_cleanup(&m->inst.capacity);
  carp_resources_cleanup(&m->inst.allocatable);
  carp_free(m->claim_rv);
  carp_free(m->node_rv);
  carp_free(m->name);
  carp_free(m->uid);
  carp_free(m);
}

struct claim_mem *carp__lc_mem(struct carp_lifecycle *l,
                               const struct carp_nodeclaim *nc, int create)
{
  struct claim_mem *m = carp_map_gets(&l->mem, nc->meta.name);
  if (m && strcmp(m->uid, nc->meta.uid) && !m->launch && !m->del &&
      !m->reading_secret) {
    /* A new NodeClaim with an old name. */
    carp__lc_mem_drop(l, nc->meta.name);
    m = NULL;
  }
  if (m || !create)
    return m;
  m = CARP_NEW(struct claim_mem);
  m->name = carp_strdup(nc->meta.name);
  m->uid = carp_strdup(nc->meta.uid);
  /* 1 s doubling to 5 min: a Proxmox that refuses every call sees one
   * create per claim every few minutes, not hundreds per second. */
  carp_retry_init(&m->launch_retry, 1000, 5 * 60 * 1000);
  carp_retry_init(&m->del_retry, 1000, 60 * 1000);
  carp_map_puts(&l->mem, m->name, m);
  return m;
}

void carp__lc_mem_drop(struct carp_lifecycle *l, const char *name)
{
  struct claim_mem *m = carp_map_gets(&l->mem, name);
  if (!m || m->launch || m->del || m->reading_secret)
    return; /* still referenced by a callback */
  carp_map_dels(&l->mem, name);
  carp_logfold_forget(&l->fold, name);
  mem_free(m);
}

/* ---- helpers ---- */

void carp__lc_done(struct carp_lifecycle *l, const char *key,
                   enum carp_reconcile_result r, uint64_t after_ms)
{
  carp_workqueue_done(l->queue, key, r, after_ms);
}

void carp__lc_event(struct carp_lifecycle *l, const struct carp_objmeta *m,
                    const char *api_version, int warning, const char *reason,
                    const char *fmt, ...)
{
  struct carp_event_target t;
  struct carp_buf msg;
  va_list ap;
  if (!l->o.recorder)
    return;
  carp_buf_init(&msg, CARP_BUF_UNLIMITED); /* the recorder cuts it */
  va_start(ap, fmt);
  carp_buf_vprintf(&msg, fmt, ap);
  va_end(ap);
  t = carp_event_target_of(m, api_version);
  carp_recorder_event(l->o.recorder, &t,
                      warning ? CARP_EVENT_WARNING : CARP_EVENT_NORMAL, reason,
                      "%s", carp_buf_cstr(&msg));
  carp_buf_free(&msg);
}

/* ---- reconcile ---- */

static void on_finalizer_added(struct carp_lifecycle *l, const char *key,
                               const struct carp_kube_result *res)
{
  carp__lc_after_write(l, key, res);
}

static void add_finalizer(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, const char *key)
{
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", carp__lc_claim_rv(l, nc));
  carp_jw_key(&w, "finalizers");
  carp_jw_arr(&w);
  for (i = 0; nc->meta.finalizers && i < nc->meta.finalizers->n; i++)
    carp_jw_str(&w, nc->meta.finalizers->kv[i].key);
  carp_jw_str(&w, CARP_FINALIZER_TERMINATION);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  if (carp__lc_finish_body(l, key, &w, "finalizer") ||
      carp__lc_patch(l, key, CARP_KARPENTER_GROUP, CARP_KARPENTER_VERSION,
                     "nodeclaims", nc->meta.name, NULL, body.ptr, body.len,
                     on_finalizer_added))
    carp__lc_done(l, key, CARP_RECONCILE_ERROR, 0);
  carp_buf_free(&body);
}

static void reconcile(struct carp_workqueue *q, const char *key, void *arg)
{
  struct carp_lifecycle *l = arg;
  const struct carp_nodeclaim *nc;
  (void)q;
  if (!l->active || l->closing) {
    carp__lc_done(l, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  /* Nothing is decided before every cache has listed: a NodeClaim seen
   * before its Node would look like one whose Node was deleted. */
  if (!carp_cluster_synced(l->cluster)) {
    carp__lc_done(l, key, CARP_RECONCILE_REQUEUE_AFTER, 500);
    return;
  }
  nc = carp_cluster_nodeclaim(l->cluster, key);
  if (!nc) {
    carp__lc_mem_drop(l, key);
    carp__lc_done(l, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (nc->meta.deletion_ms) {
    carp__lc_finalize(l, nc, key);
    return;
  }
  /* Not our NodeClaim (another provider's class): leave it alone. */
  if (strcmp(nc->spec.node_class_ref.kind, "ProxmoxNodeClass")) {
    carp__lc_done(l, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (!carp_kvset_has(nc->meta.finalizers, CARP_FINALIZER_TERMINATION)) {
    add_finalizer(l, nc, key);
    return;
  }
  if (!carp_conditions_is_true(&nc->status.conditions, CARP_COND_LAUNCHED)) {
    carp__lc_launch(l, nc, key);
    return;
  }
  carp__lc_register(l, nc, key);
}

/* ---- informer handlers ---- */

static void claim_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_lifecycle *l = arg;
  if (l->active && !l->closing)
    carp_workqueue_add(l->queue, obj->name);
}

static void claim_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                          void *arg)
{
  claim_event(obj, arg);
}

static void node_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_lifecycle *l = arg;
  const struct carp_node *n = (const struct carp_node *)obj;
  const struct carp_nodeclaim *nc;
  if (!l->active || l->closing || !n->provider_id)
    return;
  nc = carp_cluster_nodeclaim_by_provider(l->cluster, n->provider_id);
  if (nc)
    carp_workqueue_add(l->queue, nc->meta.name);
}

static void node_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                         void *arg)
{
  node_event(obj, arg);
}

void carp_lifecycle_set_active(struct carp_lifecycle *l, int active)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  l->active = active;
  if (!active)
    return;
  carp_store_iter_init(&it);
  while (
      (m = carp_store_next(carp_informer_store(l->cluster->nodeclaims), &it)))
    carp_workqueue_add(l->queue, m->name);
}

int carp_lifecycle_new(uv_loop_t *loop, struct carp_cluster *cluster,
                       struct carp_kube *kube, struct carp_provider *provider,
                       const struct carp_lifecycle_options *o,
                       struct carp_lifecycle **out)
{
  struct carp_lifecycle *l;
  struct carp_workqueue_options qo;
  struct carp_informer_handlers ch = {.on_add = claim_event,
                                      .on_update = claim_updated,
                                      .on_delete = claim_event};
  struct carp_informer_handlers nh = {
      .on_add = node_event, .on_update = node_updated, .on_delete = node_event};
  int rc;
  if (!loop || !cluster || !kube || !provider || !out)
    return CARP_EINVAL;
  l = CARP_NEW(struct carp_lifecycle);
  l->loop = loop;
  l->cluster = cluster;
  l->kube = kube;
  l->provider = provider;
  if (o)
    l->o = *o;
  if (!l->o.concurrency)
    l->o.concurrency = 64;
  if (!l->o.launch_timeout_ms)
    l->o.launch_timeout_ms = 5 * 60 * 1000;
  if (!l->o.registration_timeout_ms)
    l->o.registration_timeout_ms = 15 * 60 * 1000;
  carp_map_init(&l->mem);
  carp_logfold_init(&l->fold, 0, 0);
  memset(&qo, 0, sizeof(qo));
  qo.name = "nodeclaim.lifecycle";
  qo.concurrency = l->o.concurrency;
  qo.max_delay_ms = 5 * 60 * 1000;
  qo.metrics = l->o.metrics;
  qo.reconcile = reconcile;
  qo.arg = l;
  rc = carp_workqueue_new(loop, &qo, &l->queue);
  if (rc) {
    carp_free(l);
    return rc;
  }
  ch.arg = nh.arg = l;
  carp_informer_add_handlers(cluster->nodeclaims, &ch);
  carp_informer_add_handlers(cluster->nodes, &nh);
  if (l->o.metrics) {
    l->m_terminated = carp_metrics_counter(
        l->o.metrics, "karpenter_nodeclaims_terminated_total",
        "Number of nodeclaims terminated in total by Karpenter. Labeled by "
        "the owning nodepool.",
        CARP_LABELS("nodepool", "capacity_type", "zone"));
    l->m_disrupted = carp_metrics_counter(
        l->o.metrics, "karpenter_nodeclaims_disrupted_total",
        "Number of nodeclaims disrupted in total by Karpenter. Labeled by "
        "reason the nodeclaim was disrupted and the owning nodepool.",
        CARP_LABELS("reason", "nodepool", "capacity_type",
                    "consolidation_policy", "termination_mode"));
    l->m_nodes_created = carp_metrics_counter(
        l->o.metrics, "karpenter_nodes_created_total",
        "Number of nodes created in total by Karpenter. Labeled by owning "
        "nodepool.",
        CARP_LABELS("nodepool", "zone"));
  }
  *out = l;
  return 0;
}

static void finish_close(struct carp_lifecycle *l)
{
  /* Closed; freed by carp_lifecycle_free once the informers that call
   * its handlers are closed too. */
  if (l->close_cb)
    l->close_cb(l->close_arg);
}

void carp_lifecycle_free(struct carp_lifecycle *l)
{
  struct carp_map_iter it;
  void *v;
  if (!l)
    return;
  carp_map_iter_init(&it);
  while (carp_map_next(&l->mem, &it, NULL, NULL, &v))
    mem_free(v);
  carp_map_free(&l->mem);
  carp_logfold_free(&l->fold);
  carp_free(l);
}

void carp__lc_unpend(struct carp_lifecycle *l)
{
  if (--l->pending == 0 && l->closing && !l->queue)
    finish_close(l);
}

static void on_queue_closed(void *arg)
{
  struct carp_lifecycle *l = arg;
  l->queue = NULL;
  /* Provider calls and writes still in flight hold l: they were cancelled
   * above (or by the Kubernetes client's close) and the last one to
   * finish frees it. */
  if (l->pending == 0)
    finish_close(l);
}

void carp_lifecycle_close(struct carp_lifecycle *l, void (*cb)(void *arg),
                          void *arg)
{
  struct carp_map_iter it;
  void *v;
  if (!l || l->closing)
    return;
  l->closing = 1;
  l->close_cb = cb;
  l->close_arg = arg;
  /* Stop launches and deletes in flight; their callbacks end reconciles. */
  carp_map_iter_init(&it);
  while (carp_map_next(&l->mem, &it, NULL, NULL, &v)) {
    struct claim_mem *m = v;
    if (m->launch)
      carp_provider_cancel(l->provider, m->launch);
    if (m->del)
      carp_provider_cancel(l->provider, m->del);
  }
  carp_workqueue_close(l->queue, on_queue_closed, l);
}
