/* write.c: the controllers' writes to the API server (see the writes
 * section of include/carpenter/controller.h). Every write holds its
 * controller until the callback has run, so a closing controller waits
 * for it; the patches that several controllers make - a taint on a Node,
 * a finalizer, a NodeClaim condition - are built here, each conditional
 * on the resourceVersion the decision was made on. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/api.h"
#include "carpenter/controller.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodepool.h"
#include "carpenter/timeutil.h"

struct write_ctx {
  struct carp_controller *c;
  char *key;
  carp_write_cb cb;
  void *arg;
};

static int quiet_error(int err)
{
  return err == CARP_ECONFLICT || err == CARP_ENOTFOUND ||
         err == CARP_ENOTLEADER || err == CARP_ECANCELED;
}

static void on_write(const struct carp_kube_result *res, void *arg)
{
  struct write_ctx *w = arg;
  struct carp_controller *c = w->c;
  if (w->cb)
    w->cb(c, w->key, res, w->arg);
  else if (res->err && !quiet_error(res->err))
    CARP_LOG_WARN(c->def->log_module, "write failed",
                  CARP_F_STR("key", w->key ? w->key : ""), CARP_F_ERR(res->err),
                  CARP_F_STR("message", res->message));
  carp_free(w->key);
  carp_free(w);
  carp_controller_release(c);
}

static struct write_ctx *ctx_new(struct carp_controller *c, const char *key,
                                 carp_write_cb cb, void *arg)
{
  struct write_ctx *w = CARP_NEW(struct write_ctx);
  w->c = c;
  w->key = key ? carp_strdup(key) : NULL;
  w->cb = cb;
  w->arg = arg;
  carp_controller_hold(c);
  return w;
}

/* A write that could not start: no callback will run. */
static int ctx_fail(struct write_ctx *w, int rc)
{
  struct carp_controller *c = w->c;
  carp_free(w->key);
  carp_free(w);
  carp_controller_release(c);
  return rc;
}

int carp_write_patch(struct carp_controller *c, const char *key,
                     const struct carp_kube_ref *ref, const char *body,
                     size_t len, carp_write_cb cb, void *arg)
{
  struct write_ctx *w = ctx_new(c, key, cb, arg);
  /* Patches carry a resourceVersion precondition (or are the same when
   * repeated), so a retry after a lost answer is safe. */
  int rc = carp_kube_patch(c->env.kube, ref, CARP_PATCH_MERGE, body, len, 1,
                           on_write, w);
  return rc ? ctx_fail(w, rc) : 0;
}

int carp_write_create(struct carp_controller *c, const char *key,
                      const struct carp_kube_ref *ref, const char *body,
                      size_t len, carp_write_cb cb, void *arg)
{
  struct write_ctx *w = ctx_new(c, key, cb, arg);
  int rc = carp_kube_create(c->env.kube, ref, body, len, on_write, w);
  return rc ? ctx_fail(w, rc) : 0;
}

int carp_write_delete(struct carp_controller *c, const char *key,
                      const struct carp_kube_ref *ref,
                      const struct carp_kube_delete_options *o,
                      carp_write_cb cb, void *arg)
{
  struct write_ctx *w = ctx_new(c, key, cb, arg);
  int rc = carp_kube_delete(c->env.kube, ref, o, on_write, w);
  return rc ? ctx_fail(w, rc) : 0;
}

int carp_write_call(struct carp_controller *c, const char *key,
                    const struct carp_kube_request *r, carp_write_cb cb,
                    void *arg, struct carp_kube_op **op)
{
  struct write_ctx *w = ctx_new(c, key, cb, arg);
  int rc = carp_kube_call(c->env.kube, r, on_write, w, op);
  return rc ? ctx_fail(w, rc) : 0;
}

/* ---- the common patches ---- */

static void put_taint(struct carp_jw *w, const struct carp_taint *t)
{
  carp_jw_obj(w);
  carp_jw_kstr(w, "key", t->key);
  if (t->value && *t->value)
    carp_jw_kstr(w, "value", t->value);
  carp_jw_kstr(w, "effect", carp_taint_effect_name(t->effect));
  carp_jw_obj_end(w);
}

static int same_taint(const struct carp_taint *a, const struct carp_taint *b)
{
  return !strcmp(a->key, b->key) && a->effect == b->effect;
}

static int send_built(struct carp_controller *c, const char *key,
                      const struct carp_kube_ref *ref, struct carp_jw *jw,
                      struct carp_buf *body, carp_write_cb cb, void *arg)
{
  int rc = carp_jw_finish(jw);
  if (!rc)
    rc = carp_write_patch(c, key, ref, body->ptr, body->len, cb, arg);
  carp_buf_free(body);
  return rc;
}

int carp_write_node_taint_label(struct carp_controller *c, const char *key,
                                const struct carp_node *node,
                                const struct carp_taint *taint, int add,
                                const char *label_key, const char *label_value,
                                carp_write_cb cb, void *arg)
{
  struct carp_kube_ref ref = carp_ref_node(node->meta.name);
  const char *have =
      label_key ? carp_kvset_get(node->meta.labels, label_key) : NULL;
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;
  int found = 0;
  for (i = 0; i < node->ntaints; i++)
    if (same_taint(&node->taints[i], taint) &&
        !strcmp(node->taints[i].value ? node->taints[i].value : "",
                taint->value ? taint->value : ""))
      found = 1;
  if (found == add && (!label_key || (have && !strcmp(have, label_value))))
    return 1;
  /* A merge patch replaces the whole list: it is only right for the
   * version it was computed from. */
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", node->meta.resource_version);
  if (label_key) {
    carp_jw_key(&w, "labels");
    carp_jw_obj(&w);
    carp_jw_kstr(&w, label_key, label_value);
    carp_jw_obj_end(&w);
  }
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  carp_jw_key(&w, "taints");
  carp_jw_arr(&w);
  for (i = 0; i < node->ntaints; i++)
    if (!same_taint(&node->taints[i], taint))
      put_taint(&w, &node->taints[i]);
  if (add)
    put_taint(&w, taint);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return send_built(c, key, &ref, &w, &body, cb, arg);
}

int carp_write_node_taint(struct carp_controller *c, const char *key,
                          const struct carp_node *node,
                          const struct carp_taint *taint, int add,
                          carp_write_cb cb, void *arg)
{
  return carp_write_node_taint_label(c, key, node, taint, add, NULL, NULL, cb,
                                     arg);
}

int carp_write_finalizer(struct carp_controller *c, const char *key,
                         const struct carp_kube_ref *ref,
                         const struct carp_objmeta *m, const char *finalizer,
                         int add, carp_write_cb cb, void *arg)
{
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;
  if (carp_kvset_has(m->finalizers, finalizer) == !!add)
    return 1;
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", m->resource_version);
  carp_jw_key(&w, "finalizers");
  carp_jw_arr(&w);
  for (i = 0; m->finalizers && i < m->finalizers->n; i++)
    if (strcmp(m->finalizers->kv[i].key, finalizer))
      carp_jw_str(&w, m->finalizers->kv[i].key);
  if (add)
    carp_jw_str(&w, finalizer);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return send_built(c, key, ref, &w, &body, cb, arg);
}

int carp_write_claim_condition(struct carp_controller *c, const char *key,
                               const struct carp_nodeclaim *nc,
                               const char *type, int status, const char *reason,
                               const char *message, carp_write_cb cb, void *arg)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(nc->meta.name, "status");
  struct carp_nodeclaim_status st;
  struct carp_buf body;
  int changed, rc = 1;
  carp_nodeclaim_status_copy(&st, &nc->status);
  if (status < 0)
    changed = carp_conditions_clear(&st.conditions, type);
  else
    changed = carp_conditions_set(&st.conditions, &carp_condset_nodeclaim, type,
                                  (enum carp_cond_status)status, reason,
                                  message ? message : "", nc->meta.generation,
                                  carp_controller_now(c));
  if (changed) {
    carp_buf_init(&body, CARP_BUF_UNLIMITED);
    rc = carp_nodeclaim_status_patch(&st, nc->meta.resource_version, &body);
    if (!rc)
      rc = carp_write_patch(c, key, &ref, body.ptr, body.len, cb, arg);
    carp_buf_free(&body);
  }
  carp_nodeclaim_status_cleanup(&st);
  return rc;
}

int carp_write_pool_condition_once(struct carp_controller *c,
                                   const struct carp_nodepool *np,
                                   const char *type, int status,
                                   const char *reason, const char *message)
{
  struct carp_kube_ref ref = carp_ref_nodepool(np->meta.name, "status");
  const struct carp_condition *now =
      carp_conditions_get(&np->status.conditions, type);
  struct carp_conditions conds;
  struct carp_buf body;
  int rc;
  if (now && now->status != CARP_COND_UNKNOWN)
    return 1;
  carp_conditions_copy(&conds, &np->status.conditions);
  carp_conditions_set(&conds, &carp_condset_nodepool, type,
                      (enum carp_cond_status)status, reason,
                      message ? message : "", np->meta.generation,
                      carp_controller_now(c));
  /* A merge patch replaces the whole list: the resourceVersion keeps it
   * from undoing a concurrent change to another condition. */
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_conditions_status_patch(&conds, np->meta.resource_version, &body);
  if (!rc)
    rc = carp_write_patch(c, NULL, &ref, body.ptr, body.len, NULL, NULL);
  carp_buf_free(&body);
  carp_conditions_cleanup(&conds);
  return rc;
}

int carp_write_termination_stamp(struct carp_controller *c, const char *key,
                                 const struct carp_nodeclaim *nc, int64_t at_ms,
                                 carp_write_cb cb, void *arg)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(nc->meta.name, NULL);
  char ts[CARP_RFC3339_LEN];
  struct carp_buf body;
  struct carp_jw w;
  int rc;
  carp_time_format_rfc3339(at_ms, 0, ts);
  carp_buf_init(&body, 4096);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", nc->meta.resource_version);
  carp_jw_key(&w, "annotations");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, CARP_ANN_TERMINATION_TS, ts);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  rc = carp_jw_finish(&w);
  if (!rc)
    rc = carp_write_patch(c, key, &ref, body.ptr, body.len, cb, arg);
  carp_buf_free(&body);
  return rc;
}

int carp_write_delete_claim(struct carp_controller *c, const char *key,
                            const struct carp_nodeclaim *nc, carp_write_cb cb,
                            void *arg)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(nc->meta.name, NULL);
  struct carp_kube_delete_options o = {.uid = nc->meta.uid,
                                       .grace_seconds = -1};
  return carp_write_delete(c, key, &ref, &o, cb, arg);
}

void carp_write_done(struct carp_controller *c, const char *key,
                     const struct carp_kube_result *res)
{
  if (!res->err) {
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE, 0);
    return;
  }
  if (res->err == CARP_ENOTFOUND) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  /* A conflict means the cache was behind: its watch event queues the key
   * again, and the backoff keeps a precondition that can never hold from
   * turning into a loop. */
  if (!quiet_error(res->err))
    CARP_LOG_WARN(c->def->log_module, "write failed", CARP_F_STR("key", key),
                  CARP_F_ERR(res->err), CARP_F_STR("message", res->message));
  carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
}

void carp_write_done_until_event(struct carp_controller *c, const char *key,
                                 const struct carp_kube_result *res, void *arg)
{
  (void)arg;
  if (!res->err)
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
  else
    carp_write_done(c, key, res);
}

/* ---- references ---- */

struct carp_kube_ref carp_ref_nodeclaim(const char *name, const char *sub)
{
  struct carp_kube_ref r = {.group = CARP_KARPENTER_GROUP,
                            .version = CARP_KARPENTER_VERSION,
                            .resource = "nodeclaims",
                            .name = name,
                            .subresource = sub};
  return r;
}

struct carp_kube_ref carp_ref_nodepool(const char *name, const char *sub)
{
  struct carp_kube_ref r = {.group = CARP_KARPENTER_GROUP,
                            .version = CARP_KARPENTER_VERSION,
                            .resource = "nodepools",
                            .name = name,
                            .subresource = sub};
  return r;
}

struct carp_kube_ref carp_ref_node(const char *name)
{
  struct carp_kube_ref r = {.version = "v1", .resource = "nodes", .name = name};
  return r;
}

struct carp_metric *carp_metric_nodeclaims_disrupted(struct carp_metrics *m)
{
  if (!m)
    return NULL;
  return carp_metrics_counter(
      m, "karpenter_nodeclaims_disrupted_total",
      "Number of nodeclaims disrupted in total by Karpenter. Labeled by "
      "reason the nodeclaim was disrupted and the owning nodepool.",
      CARP_LABELS("reason", "nodepool", "capacity_type", "consolidation_policy",
                  "termination_mode"));
}

struct carp_metric *carp_metric_nodeclaims_created(struct carp_metrics *m)
{
  if (!m)
    return NULL;
  return carp_metrics_counter(
      m, "karpenter_nodeclaims_created_total",
      "Number of nodeclaims created in total by Karpenter. Labeled by "
      "reason the nodeclaim was created and the owning nodepool.",
      CARP_LABELS("reason", "nodepool", "min_values_relaxed"));
}

struct carp_metric *
carp_metric_pods_disruption_initiated(struct carp_metrics *m)
{
  if (!m)
    return NULL;
  return carp_metrics_counter(
      m, "karpenter_pods_disruption_initiated_total",
      "The number of pods that Karpenter has initiated disruption for. "
      "Labeled by reason, nodepool, capacity type, consolidation policy and "
      "termination mode.",
      CARP_LABELS("reason", "nodepool", "capacity_type", "consolidation_policy",
                  "termination_mode"));
}

void carp_metric_pods_disrupted_add(struct carp_metric *m,
                                    const struct carp_cluster *c,
                                    const char *node_name,
                                    const char *const *values)
{
  struct carp_objmeta *const *pods;
  size_t n, i, moving = 0;
  if (!m || !node_name)
    return;
  pods = carp_cluster_pods_on_node(c, node_name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    if (!carp_pod_is_terminal(p) && carp_pod_is_reschedulable(p))
      moving++;
  }
  carp_metric_add(m, values, (double)moving);
}
