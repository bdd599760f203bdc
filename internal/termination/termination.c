/* termination.c: the node termination controller's queue, dispatch and
 * the steps around the drain (see include/carpenter/termination.h).
 *
 * The queue is keyed by Node name. Informer events queue a Node when it
 * is being deleted and carries the termination finalizer; pod events on
 * such a Node and changes to its NodeClaim queue it too. One reconcile
 * looks at the cached state and takes the next step: delete the NodeClaim,
 * let go of a Node whose VM is gone, taint, drain, delete the VM, remove
 * the finalizer. Each step ends the reconcile, now or from a callback. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/scheduling.h"
#include "carpenter/timeutil.h"
#include "termination_int.h"

#define VM_CHECK_MS       5000 /* how long a VM lookup stays fresh */
#define CLAIM_DELETE_WAIT 5000 /* for the cache to show a NodeClaim deleted */
#define EXCLUDE_LB_LABEL                                                       \
  "node.kubernetes.io/exclude-from-external-load-balancers"

/* ---- memory ---- */

static void mem_free(struct node_mem *m)
{
  carp__term_pods_free(m);
  carp_free(m->name);
  carp_free(m->uid);
  carp_free(m);
}

struct node_mem *carp__term_mem(struct carp_termination *t,
                                const struct carp_node *node, int create)
{
  struct node_mem *m = carp_map_gets(&t->mem, node->meta.name);
  if (m && strcmp(m->uid, node->meta.uid)) {
    /* A new Node with an old name. */
    carp__term_mem_drop(t, node->meta.name);
    m = NULL;
  }
  if (m || !create)
    return m;
  m = CARP_NEW(struct node_mem);
  m->name = carp_strdup(node->meta.name);
  m->uid = carp_strdup(node->meta.uid);
  carp_retry_init(&m->del_retry, 1000, 60 * 1000);
  carp_map_init(&m->pods);
  carp_map_puts(&t->mem, m->name, m);
  return m;
}

void carp__term_mem_drop(struct carp_termination *t, const char *name)
{
  struct node_mem *m = carp_map_dels(&t->mem, name);
  if (!m)
    return;
  if (m->busy) {
    /* Callbacks still hold it: the last one frees it. */
    m->dropped = 1;
    return;
  }
  mem_free(m);
}

void carp__term_mem_release(struct carp_termination *t, struct node_mem *m)
{
  if (--m->busy == 0 && m->dropped)
    mem_free(m);
  carp__term_unpend(t);
}

/* ---- helpers ---- */

void carp__term_done(struct carp_termination *t, const char *key,
                     enum carp_reconcile_result r, uint64_t after_ms)
{
  carp_workqueue_done(t->queue, key, r, after_ms);
}

void carp__term_event(struct carp_termination *t, const struct carp_objmeta *m,
                      const char *api_version, int warning, const char *reason,
                      const char *fmt, ...)
{
  struct carp_event_target tg;
  struct carp_buf msg;
  va_list ap;
  if (!t->o.recorder)
    return;
  carp_buf_init(&msg, CARP_BUF_UNLIMITED); /* the recorder cuts it */
  va_start(ap, fmt);
  carp_buf_vprintf(&msg, fmt, ap);
  va_end(ap);
  tg = carp_event_target_of(m, api_version);
  carp_recorder_event(t->o.recorder, &tg,
                      warning ? CARP_EVENT_WARNING : CARP_EVENT_NORMAL, reason,
                      "%s", carp_buf_cstr(&msg));
  carp_buf_free(&msg);
}

static int has_taint(const struct carp_node *n, const char *key,
                     enum carp_taint_effect effect)
{
  uint32_t i;
  for (i = 0; i < n->ntaints; i++)
    if (!strcmp(n->taints[i].key, key) && n->taints[i].effect == effect)
      return 1;
  return 0;
}

static const char *label(const struct carp_kvset *labels, const char *key)
{
  const char *v = carp_kvset_get(labels, key);
  return v ? v : "";
}

/* The hard deadline of the drain: the stamped annotation, else the
 * NodeClaim's deletion time plus its terminationGracePeriod. */
static int64_t deadline_of(const struct carp_nodeclaim *nc)
{
  const char *ann;
  int64_t at;
  if (!nc || !nc->meta.deletion_ms ||
      nc->spec.termination_grace_ms == CARP_DURATION_NEVER)
    return CARP_DURATION_NEVER;
  ann = carp_kvset_get(nc->meta.annotations, CARP_ANN_TERMINATION_TS);
  if (ann && !carp_time_parse_rfc3339(ann, &at))
    return at;
  return nc->meta.deletion_ms + nc->spec.termination_grace_ms;
}

/* ---- step 1: the NodeClaim goes with its Node ---- */

static void on_claim_deleted(struct carp_termination *t, const char *key,
                             const struct carp_kube_result *res)
{
  struct node_mem *m = carp_map_gets(&t->mem, key);
  /* The NodeClaim's update (its deletionTimestamp) queues the Node again;
   * a look before the cache shows it would only delete it a second time. */
  if (!res->err) {
    if (m)
      m->claim_deleted_ms = carp__term_now();
    carp__term_done(t, key, CARP_RECONCILE_REQUEUE_AFTER, CLAIM_DELETE_WAIT);
    return;
  }
  carp__term_after_write(t, key, res);
}

static void delete_claim(struct carp_termination *t,
                         const struct carp_node *node,
                         const struct carp_nodeclaim *nc, const char *key)
{
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims",
                              .name = nc->meta.name};
  struct carp_kube_delete_options o = {.uid = nc->meta.uid,
                                       .grace_seconds = -1};
  CARP_LOG_INFO("termination", "node deleted: deleting its nodeclaim",
                CARP_F_STR("node", node->meta.name),
                CARP_F_STR("nodeclaim", nc->meta.name));
  carp__term_event(t, &nc->meta, "karpenter.sh/v1", 0, "Terminating",
                   "Node %s is being deleted", node->meta.name);
  if (carp__term_delete(t, key, &ref, &o, on_claim_deleted))
    carp__term_done(t, key, CARP_RECONCILE_ERROR, 0);
}

/* The termination timestamp annotation, as Karpenter stamps it. */
static void on_stamped(struct carp_termination *t, const char *key,
                       const struct carp_kube_result *res)
{
  struct node_mem *m = carp_map_gets(&t->mem, key);
  if (m)
    m->stamping = 0;
  (void)res;
}

static void stamp_deadline(struct carp_termination *t, struct node_mem *m,
                           const struct carp_nodeclaim *nc, int64_t deadline)
{
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims",
                              .name = nc->meta.name};
  char ts[CARP_RFC3339_LEN];
  struct carp_buf body;
  struct carp_jw w;
  if (m->stamping ||
      carp_kvset_has(nc->meta.annotations, CARP_ANN_TERMINATION_TS))
    return;
  carp_time_format_rfc3339(deadline, 0, ts);
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
  if (!carp_jw_finish(&w) &&
      !carp__term_patch(t, m->name, &ref, body.ptr, body.len, on_stamped))
    m->stamping = 1;
  carp_buf_free(&body);
}

/* ---- step 2: is the VM still there? ---- */

struct get_ctx {
  struct carp_termination *t;
  struct node_mem *m;
};

static void on_vm_got(int status, const struct carp_provider_instance *inst,
                      const struct carp_provider_error *err, void *arg)
{
  struct get_ctx *g = arg;
  struct carp_termination *t = g->t;
  struct node_mem *m = g->m;
  m->get = NULL;
  m->get_at_ms = carp__term_now();
  if (status == CARP_ENOTFOUND)
    m->vm_gone = 1;
  if (status && status != CARP_ENOTFOUND && status != CARP_ECANCELED)
    CARP_LOG_DEBUG("termination", "VM lookup failed",
                   CARP_F_STR("node", m->name), CARP_F_ERR(status),
                   CARP_F_STR("message", err ? err->message : ""));
  if (!t->closing && !m->dropped)
    carp_workqueue_add(t->queue, m->name);
  (void)inst;
  carp_free(g);
  carp__term_mem_release(t, m);
}

static void check_vm(struct carp_termination *t, struct node_mem *m,
                     const char *provider_id)
{
  struct get_ctx *g;
  if (m->get || m->vm_gone || carp__term_now() - m->get_at_ms < VM_CHECK_MS)
    return;
  g = CARP_NEW(struct get_ctx);
  g->t = t;
  g->m = m;
  t->pending++;
  m->busy++;
  if (carp_provider_get(t->provider, "node.termination", provider_id, on_vm_got,
                        g, &m->get)) {
    m->get = NULL;
    m->get_at_ms = carp__term_now();
    t->pending--;
    m->busy--;
    carp_free(g);
  }
}

/* ---- step 3: taint ---- */

static void put_taint(struct carp_jw *w, const struct carp_taint *t)
{
  carp_jw_obj(w);
  carp_jw_kstr(w, "key", t->key);
  if (t->value && *t->value)
    carp_jw_kstr(w, "value", t->value);
  carp_jw_kstr(w, "effect", carp_taint_effect_name(t->effect));
  carp_jw_obj_end(w);
}

static void on_tainted(struct carp_termination *t, const char *key,
                       const struct carp_kube_result *res)
{
  if (!res->err) {
    CARP_LOG_INFO("termination", "tainted node", CARP_F_STR("node", key),
                  CARP_F_STR("taint", CARP_TAINT_DISRUPTED ":NoSchedule"));
    /* The Node's update queues it again (a look before would only find
     * the cache behind and conflict). */
    carp__term_done(t, key, CARP_RECONCILE_REQUEUE_AFTER, 1000);
    return;
  }
  carp__term_after_write(t, key, res);
}

static void taint(struct carp_termination *t, const struct carp_node *node,
                  const char *key)
{
  struct carp_kube_ref ref = {
      .version = "v1", .resource = "nodes", .name = node->meta.name};
  struct carp_taint disrupted = {.key = CARP_TAINT_DISRUPTED,
                                 .value = "",
                                 .effect = CARP_EFFECT_NO_SCHEDULE};
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", node->meta.resource_version);
  carp_jw_key(&w, "labels");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, EXCLUDE_LB_LABEL, "karpenter");
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  carp_jw_key(&w, "taints");
  carp_jw_arr(&w);
  for (i = 0; i < node->ntaints; i++)
    if (strcmp(node->taints[i].key, CARP_TAINT_DISRUPTED))
      put_taint(&w, &node->taints[i]);
  put_taint(&w, &disrupted);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  if (carp__term_finish_body(t, key, &w, "taint") ||
      carp__term_patch(t, key, &ref, body.ptr, body.len, on_tainted))
    carp__term_done(t, key, CARP_RECONCILE_ERROR, 0);
  carp_buf_free(&body);
}

/* ---- step 6: delete the VM ---- */

struct del_ctx {
  struct carp_termination *t;
  struct node_mem *m;
};

static void on_vm_deleted(int status, const struct carp_provider_error *err,
                          void *arg)
{
  struct del_ctx *d = arg;
  struct carp_termination *t = d->t;
  struct node_mem *m = d->m;
  uint64_t after = 0;
  m->del = NULL;
  m->del_done = 1;
  m->del_status = status;
  if (status == 0)
    carp_retry_reset(&m->del_retry);
  if (status == CARP_ENOTFOUND) {
    m->vm_gone = 1;
  } else if (status && status != CARP_ECANCELED) {
    after = carp_retry_fail(&m->del_retry, carp__term_now());
    CARP_LOG_FOLDED(&t->fold, m->name, CARP_LOG_WARN, "termination",
                    "deleting the VM failed, will retry",
                    CARP_F_STR("node", m->name), CARP_F_ERR(status),
                    CARP_F_STR("message", err ? err->message : ""),
                    CARP_F_DURATION("retry_in", after));
  }
  if (!t->closing && !m->dropped)
    carp_workqueue_add_after(t->queue, m->name, after);
  carp_free(d);
  carp__term_mem_release(t, m);
}

static void delete_vm(struct carp_termination *t, struct node_mem *m,
                      const struct carp_nodeclaim *nc, const char *provider_id,
                      const char *key)
{
  struct carp_provider_delete_req req;
  struct del_ctx *d;
  int repeat = m->del_done;
  memset(&req, 0, sizeof(req));
  req.controller = "node.termination";
  req.provider_id = provider_id;
  req.nodeclaim_uid = nc->meta.uid;
  d = CARP_NEW(struct del_ctx);
  d->t = t;
  d->m = m;
  m->del_done = 0;
  t->pending++;
  m->busy++;
  if (carp_provider_delete(t->provider, &req, on_vm_deleted, d, &m->del)) {
    m->del = NULL;
    t->pending--;
    m->busy--;
    carp_free(d);
    carp__term_done(t, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  if (repeat)
    CARP_LOG_DEBUG("termination", "deleting the VM again until it is gone",
                   CARP_F_STR("node", m->name),
                   CARP_F_STR("providerID", provider_id));
  else
    CARP_LOG_INFO("termination", "deleting the VM", CARP_F_STR("node", m->name),
                  CARP_F_STR("providerID", provider_id));
  carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
}

/* ---- step 7: remove the finalizer ---- */

static void on_finalizer_removed(struct carp_termination *t, const char *key,
                                 const struct carp_kube_result *res)
{
  struct node_mem *m = carp_map_gets(&t->mem, key);
  if (!res->err) {
    /* The Node's deletion event drops the memory; until then a stale
     * cache must not start over. */
    if (m)
      m->finalized = 1;
    carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  carp__term_after_write(t, key, res);
}

static void remove_finalizer(struct carp_termination *t,
                             const struct carp_node *node,
                             const struct carp_nodeclaim *nc, const char *key,
                             int skipped_drain)
{
  struct carp_kube_ref ref = {
      .version = "v1", .resource = "nodes", .name = node->meta.name};
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", node->meta.resource_version);
  carp_jw_key(&w, "finalizers");
  carp_jw_arr(&w);
  for (i = 0; node->meta.finalizers && i < node->meta.finalizers->n; i++)
    if (strcmp(node->meta.finalizers->kv[i].key, CARP_FINALIZER_TERMINATION))
      carp_jw_str(&w, node->meta.finalizers->kv[i].key);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  CARP_LOG_INFO("termination", "deleted node",
                CARP_F_STR("node", node->meta.name),
                CARP_F_STR("nodeclaim", nc ? nc->meta.name : ""),
                CARP_F_BOOL("drain_skipped", skipped_drain));
  carp_metric_add(
      t->m_terminated,
      CARP_VALUES(label(node->meta.labels, CARP_LABEL_NODEPOOL_KEY),
                  label(node->meta.labels, "topology.kubernetes.io/zone")),
      1);
  carp__term_event(t, &node->meta, "v1", 0, "Terminated",
                   skipped_drain ? "Deleted node: its VM is gone"
                                 : "Deleted node: drained and its VM deleted");
  if (carp__term_finish_body(t, key, &w, "finalizer") ||
      carp__term_patch(t, key, &ref, body.ptr, body.len, on_finalizer_removed))
    carp__term_done(t, key, CARP_RECONCILE_ERROR, 0);
  carp_buf_free(&body);
}

/* ---- reconcile ---- */

static void drained(struct carp_termination *t, struct node_mem *m,
                    const struct carp_node *node,
                    const struct carp_nodeclaim *nc)
{
  if (m->drained)
    return;
  m->drained = 1;
  CARP_LOG_INFO("termination", "drained node",
                CARP_F_STR("node", node->meta.name),
                CARP_F_DURATION("took", carp__term_now() - m->drain_start_ms));
  carp_metric_add(
      t->m_drained,
      CARP_VALUES(label(node->meta.labels, CARP_LABEL_NODEPOOL_KEY)), 1);
  carp__term_event(t, &node->meta, "v1", 0, "Drained", "Drained node");
  if (nc) {
    carp__term_event(t, &nc->meta, "karpenter.sh/v1", 0, "Drained",
                     "Drained node %s", node->meta.name);
    carp__term_claim_condition(t, m, nc, CARP_COND_DRAINED, CARP_COND_TRUE,
                               "Drained", "");
  }
}

static void announce(struct carp_termination *t, struct node_mem *m,
                     const struct carp_node *node,
                     const struct carp_nodeclaim *nc, int64_t deadline)
{
  char when[CARP_RFC3339_LEN];
  if (m->announced)
    return;
  m->announced = 1;
  m->drain_start_ms = carp__term_now();
  carp__term_event(t, &node->meta, "v1", 0, "Draining",
                   "Draining node for deletion");
  if (deadline == CARP_DURATION_NEVER)
    return;
  carp_time_format_rfc3339(deadline, 0, when);
  carp__term_event(t, &node->meta, "v1", 1, "TerminationGracePeriodExpiring",
                   "All pods will be deleted by %s", when);
  if (nc)
    carp__term_event(t, &nc->meta, "karpenter.sh/v1", 1,
                     "TerminationGracePeriodExpiring",
                     "All pods will be deleted by %s", when);
}

static void reconcile(struct carp_workqueue *q, const char *key, void *arg)
{
  struct carp_termination *t = arg;
  const struct carp_node *node;
  const struct carp_nodeclaim *nc;
  struct node_mem *m;
  const char *pid;
  int64_t deadline;
  uint64_t retry_ms = 0;
  size_t left;
  (void)q;

  if (!t->active || t->closing) {
    carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  node = carp_cluster_node(t->cluster, key);
  if (!node) {
    carp__term_mem_drop(t, key);
    carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (!node->meta.deletion_ms ||
      !carp_kvset_has(node->meta.finalizers, CARP_FINALIZER_TERMINATION)) {
    carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  m = carp__term_mem(t, node, 1);
  if (m->finalized) {
    carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  nc = carp_cluster_nodeclaim_of_node(t->cluster, node);
  pid =
      nc && nc->status.provider_id ? nc->status.provider_id : node->provider_id;

  /* 1. Deleting a Node deletes its NodeClaim. */
  if (nc && !nc->meta.deletion_ms) {
    if (m->claim_deleted_ms &&
        carp__term_now() - m->claim_deleted_ms < CLAIM_DELETE_WAIT) {
      carp__term_done(t, key, CARP_RECONCILE_REQUEUE_AFTER, 500);
      return;
    }
    delete_claim(t, node, nc, key);
    return;
  }
  deadline = deadline_of(nc);
  if (deadline != CARP_DURATION_NEVER)
    stamp_deadline(t, m, nc, deadline);

  /* 2. A NotReady Node whose VM is gone has nothing left to drain. The
   * first look waits for the provider's answer; later ones (the Node may
   * stop answering while it drains) run beside the drain. */
  if (node->ready.status != 1 && nc && pid) {
    if (m->vm_gone) {
      remove_finalizer(t, node, nc, key, 1);
      return;
    }
    check_vm(t, m, pid);
    if (m->get && !m->get_at_ms) {
      carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
      return;
    }
  }

  /* 3. Taint. */
  if (!has_taint(node, CARP_TAINT_DISRUPTED, CARP_EFFECT_NO_SCHEDULE) ||
      !carp_kvset_get(node->meta.labels, EXCLUDE_LB_LABEL)) {
    taint(t, node, key);
    return;
  }
  announce(t, m, node, nc, deadline);

  /* 4 and 5. Drain, with the deadline. */
  if (!m->drained) {
    left = carp__term_drain(t, m, node, nc, deadline, &retry_ms);
    if (left) {
      char msg[96];
      if (nc) {
        snprintf(msg, sizeof(msg), "%zu pods are waiting to be evicted", left);
        carp__term_claim_condition(t, m, nc, CARP_COND_DRAINED,
                                   CARP_COND_UNKNOWN, "Draining", msg);
      }
      carp__term_done(t, key, CARP_RECONCILE_REQUEUE_AFTER,
                      retry_ms ? retry_ms : 1);
      return;
    }
    drained(t, m, node, nc);
  }
  if (nc) /* again until the cache shows it (the first write may conflict) */
    carp__term_claim_condition(t, m, nc, CARP_COND_DRAINED, CARP_COND_TRUE,
                               "Drained", "");

  /* 6. The drained pods' volumes are detached before the VM stops. */
  if (carp__term_volumes(t, m, node, nc, deadline, &retry_ms)) {
    carp__term_done(t, key, CARP_RECONCILE_REQUEUE_AFTER, retry_ms);
    return;
  }

  /* 7. Delete the VM, until the provider says it is gone. */
  if (nc && pid && !m->vm_gone) {
    uint64_t wait = carp_retry_wait(&m->del_retry, carp__term_now());
    carp__term_claim_condition(t, m, nc, CARP_COND_INSTANCE_TERMINATING,
                               CARP_COND_TRUE, "InstanceTerminating", "");
    if (m->del) {
      carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
      return;
    }
    if (wait) { /* the last delete failed */
      carp__term_done(t, key, CARP_RECONCILE_REQUEUE_AFTER, wait);
      return;
    }
    delete_vm(t, m, nc, pid, key);
    return;
  }

  /* 8. Let the Node go. */
  remove_finalizer(t, node, nc, key, 0);
}

/* ---- informer handlers ---- */

static int terminating(const struct carp_node *n)
{
  return n->meta.deletion_ms &&
         carp_kvset_has(n->meta.finalizers, CARP_FINALIZER_TERMINATION);
}

static void node_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_termination *t = arg;
  if (t->active && !t->closing && terminating((const struct carp_node *)obj))
    carp_workqueue_add(t->queue, obj->name);
}

static void node_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                         void *arg)
{
  node_event(obj, arg);
}

static void node_deleted(struct carp_objmeta *obj, void *arg)
{
  struct carp_termination *t = arg;
  if (t->active && !t->closing)
    carp_workqueue_add(t->queue, obj->name);
}

static void pod_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_termination *t = arg;
  const struct carp_pod *p = (const struct carp_pod *)obj;
  const struct carp_node *n;
  if (!t->active || t->closing || !p->node_name)
    return;
  n = carp_cluster_node(t->cluster, p->node_name);
  if (n && terminating(n))
    carp_workqueue_add(t->queue, n->meta.name);
}

static void pod_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                        void *arg)
{
  pod_event(obj, arg);
}

/* A VolumeAttachment went (or changed): its node may stop now. */
static void va_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_termination *t = arg;
  const struct carp_volumeattachment *va =
      (const struct carp_volumeattachment *)obj;
  const struct carp_node *n;
  if (!t->active || t->closing || !va->node_name || !*va->node_name)
    return;
  n = carp_cluster_node(t->cluster, va->node_name);
  if (n && terminating(n))
    carp_workqueue_add(t->queue, n->meta.name);
}

static void va_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                       void *arg)
{
  va_event(obj, arg);
}

static void claim_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_termination *t = arg;
  const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)obj;
  const struct carp_node *n;
  if (!t->active || t->closing)
    return;
  n = carp_cluster_node_of_nodeclaim(t->cluster, nc);
  if (n && terminating(n))
    carp_workqueue_add(t->queue, n->meta.name);
}

static void claim_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                          void *arg)
{
  claim_event(obj, arg);
}

void carp_termination_set_active(struct carp_termination *t, int active)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  t->active = active;
  if (!active || t->closing)
    return;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(t->cluster->nodes), &it)))
    if (terminating((const struct carp_node *)m))
      carp_workqueue_add(t->queue, m->name);
}

int carp_termination_new(uv_loop_t *loop, struct carp_cluster *cluster,
                         struct carp_kube *kube, struct carp_provider *provider,
                         const struct carp_termination_options *o,
                         struct carp_termination **out)
{
  struct carp_termination *t;
  struct carp_workqueue_options qo;
  struct carp_informer_handlers nh = {.on_add = node_event,
                                      .on_update = node_updated,
                                      .on_delete = node_deleted};
  struct carp_informer_handlers ph = {.on_update = pod_updated,
                                      .on_delete = pod_event};
  struct carp_informer_handlers ch = {.on_add = claim_event,
                                      .on_update = claim_updated};
  struct carp_informer_handlers vh = {.on_update = va_updated,
                                      .on_delete = va_event};
  int rc;
  if (!loop || !cluster || !kube || !provider || !out)
    return CARP_EINVAL;
  t = CARP_NEW(struct carp_termination);
  t->loop = loop;
  t->cluster = cluster;
  t->kube = kube;
  t->provider = provider;
  if (o)
    t->o = *o;
  if (!t->o.concurrency)
    t->o.concurrency = 64;
  carp_map_init(&t->mem);
  carp_logfold_init(&t->fold, 0, 0);
  memset(&qo, 0, sizeof(qo));
  qo.name = "node.termination";
  qo.concurrency = t->o.concurrency;
  qo.base_delay_ms = 100;
  qo.max_delay_ms = 10 * 1000;
  qo.metrics = t->o.metrics;
  qo.reconcile = reconcile;
  qo.arg = t;
  rc = carp_workqueue_new(loop, &qo, &t->queue);
  if (rc) {
    carp_free(t);
    return rc;
  }
  nh.arg = ph.arg = ch.arg = vh.arg = t;
  /* Handlers added before a failure hold t: it is handed out anyway, to
   * be closed and freed like a working one (it never acts). */
  *out = t;
  if ((rc = carp_informer_add_handlers(cluster->nodes, &nh)) ||
      (rc = carp_informer_add_handlers(cluster->pods, &ph)) ||
      (rc = carp_informer_add_handlers(cluster->nodeclaims, &ch)) ||
      (rc = carp_informer_add_handlers(cluster->volumeattachments, &vh)))
    return rc;
  if (t->o.metrics) {
    t->m_terminated = carp_metrics_counter(
        t->o.metrics, "karpenter_nodes_terminated_total",
        "Number of nodes terminated in total by Karpenter. Labeled by owning "
        "nodepool.",
        CARP_LABELS("nodepool", "zone"));
    t->m_drained =
        carp_metrics_counter(t->o.metrics, "karpenter_nodes_drained_total",
                             "The total number of nodes drained by Karpenter",
                             CARP_LABELS("nodepool"));
    t->m_evictions = carp_metrics_counter(
        t->o.metrics, "karpenter_pods_eviction_requests_total",
        "The total number of eviction requests made by Karpenter",
        CARP_LABELS("code"));
    t->m_pods_drained = carp_metrics_counter(
        t->o.metrics, "karpenter_pods_drained_total",
        "The total number of pods drained during node termination by "
        "Karpenter",
        CARP_LABELS("reason"));
  }
  *out = t;
  return 0;
}

/* ---- close ---- */

/* Everything stopped: only the struct itself is left, for the informer
 * handlers that may still run until the cluster state is closed (they see
 * t->closing and return); carp_termination_free() releases it. */
static void finish_close(struct carp_termination *t)
{
  struct carp_map_iter it;
  void *v;
  void (*cb)(void *) = t->close_cb;
  void *arg = t->close_arg;
  carp_map_iter_init(&it);
  while (carp_map_next(&t->mem, &it, NULL, NULL, &v))
    mem_free(v);
  carp_map_free(&t->mem);
  carp_logfold_free(&t->fold);
  t->closed = 1;
  if (cb)
    cb(arg);
}

void carp_termination_free(struct carp_termination *t)
{
  if (!t)
    return;
  if (!t->closed)
    CARP_LOG_ERROR("termination", "freed before it was closed");
  else
    carp_free(t);
}

void carp__term_unpend(struct carp_termination *t)
{
  if (--t->pending == 0 && t->closing && !t->queue)
    finish_close(t);
}

static void on_queue_closed(void *arg)
{
  struct carp_termination *t = arg;
  t->queue = NULL;
  if (t->pending == 0)
    finish_close(t);
}

void carp_termination_close(struct carp_termination *t, void (*cb)(void *arg),
                            void *arg)
{
  struct carp_map_iter it;
  void *v;
  if (!t || t->closing)
    return;
  t->closing = 1;
  t->close_cb = cb;
  t->close_arg = arg;
  carp_map_iter_init(&it);
  while (carp_map_next(&t->mem, &it, NULL, NULL, &v)) {
    struct node_mem *m = v;
    carp__term_drain_cancel(m);
    if (m->get)
      carp_provider_cancel(t->provider, m->get);
    if (m->del)
      carp_provider_cancel(t->provider, m->del);
  }
  carp_workqueue_close(t->queue, on_queue_closed, t);
}
