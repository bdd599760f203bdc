/* finalize.c: a NodeClaim being deleted. In order: stop a launch still in
 * flight; delete the Node and wait until it is gone (its own finalizer
 * makes the termination controller drain it first); delete the VM, again
 * and again until the provider says it is gone (InstanceTerminating=True
 * is written first, as Karpenter does); then remove the
 * karpenter.sh/termination finalizer. A NodeClaim that only carries the
 * write-ahead annotation (its create never finished) is guarded by its
 * UID: a VM that names another NodeClaim is never touched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "lifecycle_int.h"

struct delete_ctx {
  struct carp_lifecycle *l;
  char *key;
};

/* The provider ID of the claim's VM: from its status, else from the
 * write-ahead annotation "<region>/<zone>/<vmid>". */
static int provider_id_of(const struct carp_nodeclaim *nc, char *out,
                          size_t cap, int *from_annotation)
{
  const char *ann = carp_kvset_get(nc->meta.annotations, CARP_ANN_VM);
  const char *slash1, *slash2;
  *from_annotation = 0;
  if (nc->status.provider_id && *nc->status.provider_id) {
    snprintf(out, cap, "%s", nc->status.provider_id);
    return 1;
  }
  if (!ann)
    return 0;
  slash1 = strchr(ann, '/');
  slash2 = slash1 ? strchr(slash1 + 1, '/') : NULL;
  if (!slash2)
    return 0;
  snprintf(out, cap, "proxmox://%.*s/%s", (int)(slash1 - ann), ann, slash2 + 1);
  *from_annotation = 1;
  return 1;
}

static void on_vm_deleted(int status, const struct carp_provider_error *err,
                          void *arg)
{
  struct delete_ctx *d = arg;
  struct carp_lifecycle *l = d->l;
  struct claim_mem *m = carp_map_gets(&l->mem, d->key);
  uint64_t after = 1000; /* accepted: look again until it is gone */
  if (m) {
    m->del = NULL;
    /* Remember the outcome for the next reconcile: NotFound finishes. */
    m->del_status = status;
    m->del_done = 1;
  }
  if (m && status == 0)
    carp_retry_reset(&m->del_retry);
  if (status && status != CARP_ENOTFOUND && status != CARP_ECANCELED) {
    /* 1 s doubling to a minute, per claim. */
    after = m ? carp_retry_fail(&m->del_retry, carp__lc_now(l)) : 1000;
    CARP_LOG_FOLDED(&l->fold, d->key, CARP_LOG_WARN, "lifecycle",
                    "deleting the VM failed, will retry",
                    CARP_F_STR("nodeclaim", d->key), CARP_F_ERR(status),
                    CARP_F_STR("message", err ? err->message : ""),
                    CARP_F_DURATION("retry_in", after));
  } else if (status == CARP_ENOTFOUND) {
    after = 0;
  }
  carp_controller_enqueue_after(&l->base, d->key, after);
  carp_free(d->key);
  carp_free(d);
  carp_controller_release(&l->base);
}

static void on_finalizer_removed(struct carp_lifecycle *l, const char *key,
                                 const struct carp_kube_result *res)
{
  if (!res->err)
    carp__lc_mem_drop(l, key);
  carp__lc_after_write(l, key, res);
}

static void remove_finalizer(struct carp_lifecycle *l,
                             const struct carp_nodeclaim *nc, const char *key)
{
  struct carp_buf body;
  struct carp_jw w;
  const char *pool = carp_nodeclaim_nodepool(nc);
  const char *zone =
      carp_kvset_get(nc->meta.labels, "topology.kubernetes.io/zone");
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
    if (strcmp(nc->meta.finalizers->kv[i].key, CARP_FINALIZER_TERMINATION))
      carp_jw_str(&w, nc->meta.finalizers->kv[i].key);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  if (carp__lc_finish_body(l, key, &w, "finalizer")) {
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
    carp_buf_free(&body);
    return;
  }
  CARP_LOG_INFO("lifecycle", "deleted nodeclaim",
                CARP_F_STR("nodeclaim", nc->meta.name),
                CARP_F_STR("providerID", nc->status.provider_id));
  carp_metric_add(l->m_terminated,
                  CARP_VALUES(pool ? pool : "", "on-demand", zone ? zone : ""),
                  1);
  if (carp__lc_patch_claim(l, key, NULL, body.ptr, body.len,
                           on_finalizer_removed))
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  carp_buf_free(&body);
}

static void on_node_deleted(struct carp_lifecycle *l, const char *key,
                            const struct carp_kube_result *res)
{
  if (!res->err || res->err == CARP_ENOTFOUND) {
    /* Wait for it to go; node events wake us sooner. */
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 2000);
    return;
  }
  carp__lc_after_write(l, key, res);
}

void carp__lc_finalize(struct carp_lifecycle *l,
                       const struct carp_nodeclaim *nc, const char *key)
{
  struct claim_mem *m = carp__lc_mem(l, nc, 1);
  const struct carp_node *node;
  char pid[160];
  int from_annotation;

  if (!carp_kvset_has(nc->meta.finalizers, CARP_FINALIZER_TERMINATION)) {
    carp_controller_done(&l->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (m->reading_secret) {
    carp_controller_done(&l->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (m->launch) {
    /* The create's callback (with CARP_ECANCELED) queues us again. */
    carp_provider_cancel(l->base.env.provider, m->launch);
    carp_controller_done(&l->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  node = carp_cluster_node_of_nodeclaim(l->base.env.cluster, nc);
  if (!node && nc->status.node_name)
    node = carp_cluster_node(l->base.env.cluster, nc->status.node_name);
  if (node) {
    if (node->meta.deletion_ms) {
      carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 2000);
      return;
    }
    carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_NORMAL, "Terminating", "Deleting node %s",
                          node->meta.name);
    if (carp__lc_delete_node(l, key, node->meta.name, node->meta.uid,
                             on_node_deleted))
      carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  if (!provider_id_of(nc, pid, sizeof(pid), &from_annotation)) {
    /* Nothing was ever created for it. */
    remove_finalizer(l, nc, key);
    return;
  }
  if (m->del) {
    carp_controller_done(&l->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (m->del_done && m->del_status == CARP_ENOTFOUND) {
    remove_finalizer(l, nc, key);
    return;
  }
  if (carp_retry_wait(&m->del_retry, carp__lc_now(l))) {
    /* The last delete failed: its callback queued us for later. */
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER,
                         carp_retry_wait(&m->del_retry, carp__lc_now(l)));
    return;
  }
  if (!carp_conditions_is_true(&nc->status.conditions,
                               CARP_COND_INSTANCE_TERMINATING)) {
    /* As Karpenter: the condition says the delete was asked for. */
    struct carp_nodeclaim_status st;
    carp_nodeclaim_status_copy(&st, &nc->status);
    carp_conditions_set(&st.conditions, &carp_condset_nodeclaim,
                        CARP_COND_INSTANCE_TERMINATING, CARP_COND_TRUE,
                        "InstanceTerminating", "", nc->meta.generation,
                        carp__lc_now(l));
    if (carp__lc_write_status(l, nc, &st, NULL, key, carp__lc_after_write))
      carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
    carp_nodeclaim_status_cleanup(&st);
    return;
  }
  {
    struct carp_provider_delete_req req;
    struct delete_ctx *d = CARP_NEW(struct delete_ctx);
    memset(&req, 0, sizeof(req));
    req.controller = "nodeclaim.lifecycle";
    req.provider_id = pid;
    req.nodeclaim_uid = nc->meta.uid;
    d->l = l;
    d->key = carp_strdup(key);
    m->del_done = 0;
    carp_controller_hold(&l->base);
    if (carp_provider_delete(l->base.env.provider, &req, on_vm_deleted, d,
                             &m->del)) {
      carp_controller_release(&l->base);
      m->del = NULL;
      carp_free(d->key);
      carp_free(d);
      carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
      return;
    }
  }
  carp_controller_done(&l->base, key, CARP_RECONCILE_DONE, 0);
}
