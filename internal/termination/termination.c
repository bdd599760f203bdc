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

void carp__term_mem_unbusy(struct node_mem *m)
{
  if (--m->busy == 0 && m->dropped)
    mem_free(m);
}

void carp__term_mem_release(struct carp_termination *t, struct node_mem *m)
{
  carp__term_mem_unbusy(m);
  carp_controller_release(&t->base);
}

/* ---- helpers ---- */

int64_t carp__term_now(const struct carp_termination *t)
{
  return carp_controller_now(&t->base);
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
/* The stamp wins when there is one, as in Karpenter: node repair stamps
 * "now" on NodeClaims of pools without a terminationGracePeriod. */
static int64_t deadline_of(const struct carp_nodeclaim *nc)
{
  const char *ann;
  int64_t at;
  if (!nc || !nc->meta.deletion_ms)
    return CARP_DURATION_NEVER;
  ann = carp_kvset_get(nc->meta.annotations, CARP_ANN_TERMINATION_TS);
  if (ann && !carp_time_parse_rfc3339(ann, &at))
    return at;
  if (nc->spec.termination_grace_ms == CARP_DURATION_NEVER)
    return CARP_DURATION_NEVER;
  return nc->meta.deletion_ms + nc->spec.termination_grace_ms;
}

/* ---- step 1: the NodeClaim goes with its Node ---- */

static void on_claim_deleted(struct carp_controller *c, const char *key,
                             const struct carp_kube_result *res, void *arg)
{
  struct carp_termination *t = TERM(c);
  (void)arg;
  struct node_mem *m = carp_map_gets(&t->mem, key);
  /* The NodeClaim's update (its deletionTimestamp) queues the Node again;
   * a look before the cache shows it would only delete it a second time. */
  if (!res->err) {
    if (m)
      m->claim_deleted_ms = carp__term_now(t);
    carp_controller_done(&t->base, key, CARP_RECONCILE_REQUEUE_AFTER,
                         CLAIM_DELETE_WAIT);
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
  carp_controller_event(&t->base, &nc->meta, "karpenter.sh/v1",
                        CARP_EVENT_NORMAL, "Terminating",
                        "Node %s is being deleted", node->meta.name);
  if (carp_write_delete(&t->base, key, &ref, &o, on_claim_deleted, NULL))
    carp_controller_done(&t->base, key, CARP_RECONCILE_ERROR, 0);
}

/* The termination timestamp annotation, as Karpenter stamps it. */
static void on_stamped(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  struct carp_termination *t = TERM(c);
  (void)arg;
  struct node_mem *m = carp_map_gets(&t->mem, key);
  if (m)
    m->stamping = 0;
  (void)res;
}

static void stamp_deadline(struct carp_termination *t, struct node_mem *m,
                           const struct carp_nodeclaim *nc, int64_t deadline)
{
  if (m->stamping ||
      carp_kvset_has(nc->meta.annotations, CARP_ANN_TERMINATION_TS))
    return;
  if (!carp_write_termination_stamp(&t->base, m->name, nc, deadline, on_stamped,
                                    NULL))
    m->stamping = 1;
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
  m->get_at_ms = carp__term_now(t);
  if (status == CARP_ENOTFOUND)
    m->vm_gone = 1;
  if (status && status != CARP_ENOTFOUND && status != CARP_ECANCELED)
    CARP_LOG_DEBUG("termination", "VM lookup failed",
                   CARP_F_STR("node", m->name), CARP_F_ERR(status),
                   CARP_F_STR("message", err ? err->message : ""));
  if (!m->dropped)
    carp_controller_enqueue(&t->base, m->name);
  (void)inst;
  carp_free(g);
  carp__term_mem_release(t, m);
}

static void check_vm(struct carp_termination *t, struct node_mem *m,
                     const char *provider_id)
{
  struct get_ctx *g;
  if (m->get || m->vm_gone || carp__term_now(t) - m->get_at_ms < VM_CHECK_MS)
    return;
  g = CARP_NEW(struct get_ctx);
  g->t = t;
  g->m = m;
  carp_controller_hold(&t->base);
  m->busy++;
  if (carp_provider_get(t->base.env.provider, "node.termination", provider_id,
                        on_vm_got, g, &m->get)) {
    m->get = NULL;
    m->get_at_ms = carp__term_now(t);
    carp_controller_release(&t->base);
    m->busy--;
    carp_free(g);
  }
}

/* ---- step 3: taint ---- */

static void on_tainted(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  struct carp_termination *t = TERM(c);
  (void)arg;
  if (!res->err) {
    CARP_LOG_INFO("termination", "tainted node", CARP_F_STR("node", key),
                  CARP_F_STR("taint", CARP_TAINT_DISRUPTED ":NoSchedule"));
    /* The Node's update queues it again (a look before would only find
     * the cache behind and conflict). */
    carp_controller_done(&t->base, key, CARP_RECONCILE_REQUEUE_AFTER, 1000);
    return;
  }
  carp__term_after_write(t, key, res);
}

static void taint(struct carp_termination *t, const struct carp_node *node,
                  const char *key)
{
  struct carp_taint disrupted = {.key = CARP_TAINT_DISRUPTED,
                                 .value = "",
                                 .effect = CARP_EFFECT_NO_SCHEDULE};
  int rc = carp_write_node_taint_label(&t->base, key, node, &disrupted, 1,
                                       EXCLUDE_LB_LABEL, "karpenter",
                                       on_tainted, NULL);
  if (rc == 1) /* the cache has both already */
    carp_controller_done(&t->base, key, CARP_RECONCILE_REQUEUE_AFTER, 1);
  else if (rc)
    carp_controller_done(&t->base, key, CARP_RECONCILE_ERROR, 0);
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
    after = carp_retry_fail(&m->del_retry, carp__term_now(t));
    CARP_LOG_FOLDED(&t->fold, m->name, CARP_LOG_WARN, "termination",
                    "deleting the VM failed, will retry",
                    CARP_F_STR("node", m->name), CARP_F_ERR(status),
                    CARP_F_STR("message", err ? err->message : ""),
                    CARP_F_DURATION("retry_in", after));
  }
  if (!m->dropped)
    carp_controller_enqueue_after(&t->base, m->name, after);
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
  carp_controller_hold(&t->base);
  m->busy++;
  if (carp_provider_delete(t->base.env.provider, &req, on_vm_deleted, d,
                           &m->del)) {
    m->del = NULL;
    carp_controller_release(&t->base);
    m->busy--;
    carp_free(d);
    carp_controller_done(&t->base, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  if (repeat)
    CARP_LOG_DEBUG("termination", "deleting the VM again until it is gone",
                   CARP_F_STR("node", m->name),
                   CARP_F_STR("providerID", provider_id));
  else
    CARP_LOG_INFO("termination", "deleting the VM", CARP_F_STR("node", m->name),
                  CARP_F_STR("providerID", provider_id));
  carp_controller_done(&t->base, key, CARP_RECONCILE_DONE, 0);
}

/* ---- step 7: remove the finalizer ---- */

static void on_finalizer_removed(struct carp_controller *c, const char *key,
                                 const struct carp_kube_result *res, void *arg)
{
  struct carp_termination *t = TERM(c);
  (void)arg;
  struct node_mem *m = carp_map_gets(&t->mem, key);
  if (!res->err) {
    /* The Node's deletion event drops the memory; until then a stale
     * cache must not start over. */
    if (m)
      m->finalized = 1;
    carp_controller_done(&t->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  carp__term_after_write(t, key, res);
}

static void remove_finalizer(struct carp_termination *t,
                             const struct carp_node *node,
                             const struct carp_nodeclaim *nc, const char *key,
                             int skipped_drain)
{
  struct carp_kube_ref ref = carp_ref_node(node->meta.name);
  int rc;
  CARP_LOG_INFO("termination", "deleted node",
                CARP_F_STR("node", node->meta.name),
                CARP_F_STR("nodeclaim", nc ? nc->meta.name : ""),
                CARP_F_BOOL("drain_skipped", skipped_drain));
  carp_metric_add(
      t->m_terminated,
      CARP_VALUES(label(node->meta.labels, CARP_LABEL_NODEPOOL_KEY),
                  label(node->meta.labels, "topology.kubernetes.io/zone")),
      1);
  carp_controller_event(
      &t->base, &node->meta, "v1", CARP_EVENT_NORMAL, "Terminated",
      skipped_drain ? "Deleted node: its VM is gone"
                    : "Deleted node: drained and its VM deleted");
  rc = carp_write_finalizer(&t->base, key, &ref, &node->meta,
                            CARP_FINALIZER_TERMINATION, 0, on_finalizer_removed,
                            NULL);
  if (rc) /* 1: already gone from the cache's Node */
    carp_controller_done(
        &t->base, key, rc == 1 ? CARP_RECONCILE_DONE : CARP_RECONCILE_ERROR, 0);
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
                CARP_F_DURATION("took", carp__term_now(t) - m->drain_start_ms));
  carp_metric_add(
      t->m_drained,
      CARP_VALUES(label(node->meta.labels, CARP_LABEL_NODEPOOL_KEY)), 1);
  carp_controller_event(&t->base, &node->meta, "v1", CARP_EVENT_NORMAL,
                        "Drained", "Drained node");
  if (nc) {
    carp_controller_event(&t->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_NORMAL, "Drained", "Drained node %s",
                          node->meta.name);
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
  m->drain_start_ms = carp__term_now(t);
  carp_controller_event(&t->base, &node->meta, "v1", CARP_EVENT_NORMAL,
                        "Draining", "Draining node for deletion");
  if (deadline == CARP_DURATION_NEVER)
    return;
  carp_time_format_rfc3339(deadline, 0, when);
  carp_controller_event(&t->base, &node->meta, "v1", CARP_EVENT_WARNING,
                        "TerminationGracePeriodExpiring",
                        "All pods will be deleted by %s", when);
  if (nc)
    carp_controller_event(&t->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_WARNING, "TerminationGracePeriodExpiring",
                          "All pods will be deleted by %s", when);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct carp_termination *t = TERM(c);
  const struct carp_node *node;
  const struct carp_nodeclaim *nc;
  struct node_mem *m;
  const char *pid;
  int64_t deadline;
  uint64_t retry_ms = 0;
  size_t left;

  node = carp_cluster_node(t->base.env.cluster, key);
  if (!node) {
    carp__term_mem_drop(t, key);
    carp_controller_done(&t->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (!node->meta.deletion_ms ||
      !carp_kvset_has(node->meta.finalizers, CARP_FINALIZER_TERMINATION)) {
    carp_controller_done(&t->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  m = carp__term_mem(t, node, 1);
  if (m->finalized) {
    carp_controller_done(&t->base, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  nc = carp_cluster_nodeclaim_of_node(t->base.env.cluster, node);
  pid =
      nc && nc->status.provider_id ? nc->status.provider_id : node->provider_id;

  /* 1. Deleting a Node deletes its NodeClaim. */
  if (nc && !nc->meta.deletion_ms) {
    if (m->claim_deleted_ms &&
        carp__term_now(t) - m->claim_deleted_ms < CLAIM_DELETE_WAIT) {
      carp_controller_done(&t->base, key, CARP_RECONCILE_REQUEUE_AFTER, 500);
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
      carp_controller_done(&t->base, key, CARP_RECONCILE_DONE, 0);
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
      carp_controller_done(&t->base, key, CARP_RECONCILE_REQUEUE_AFTER,
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
    carp_controller_done(&t->base, key, CARP_RECONCILE_REQUEUE_AFTER, retry_ms);
    return;
  }

  /* 7. Delete the VM, until the provider says it is gone. */
  if (nc && pid && !m->vm_gone) {
    uint64_t wait = carp_retry_wait(&m->del_retry, carp__term_now(t));
    carp__term_claim_condition(t, m, nc, CARP_COND_INSTANCE_TERMINATING,
                               CARP_COND_TRUE, "InstanceTerminating", "");
    if (m->del) {
      carp_controller_done(&t->base, key, CARP_RECONCILE_DONE, 0);
      return;
    }
    if (wait) { /* the last delete failed */
      carp_controller_done(&t->base, key, CARP_RECONCILE_REQUEUE_AFTER, wait);
      return;
    }
    delete_vm(t, m, nc, pid, key);
    return;
  }

  /* 8. Let the Node go. */
  remove_finalizer(t, node, nc, key, 0);
}

/* ---- events ---- */

static int terminating(const struct carp_node *n)
{
  return n && n->meta.deletion_ms &&
         carp_kvset_has(n->meta.finalizers, CARP_FINALIZER_TERMINATION);
}

static void queue_if_terminating(struct carp_controller *c,
                                 const char *node_name)
{
  const struct carp_node *n;
  if (!node_name || !*node_name)
    return;
  n = carp_cluster_node(c->env.cluster, node_name);
  if (terminating(n))
    carp_controller_enqueue(c, n->meta.name);
}

/* A deleted Node is queued too: its memory is dropped. */
static void node_map(struct carp_controller *c, const struct carp_objmeta *old,
                     const struct carp_objmeta *obj, int deleted)
{
  (void)old;
  if (deleted || terminating((const struct carp_node *)obj))
    carp_controller_enqueue(c, obj->name);
}

static void pod_map(struct carp_controller *c, const struct carp_objmeta *old,
                    const struct carp_objmeta *obj, int deleted)
{
  (void)deleted;
  if (old || deleted) /* a new pod is nothing to drain */
    queue_if_terminating(c, ((const struct carp_pod *)obj)->node_name);
}

/* A VolumeAttachment went (or changed): its node may stop now. */
static void va_map(struct carp_controller *c, const struct carp_objmeta *old,
                   const struct carp_objmeta *obj, int deleted)
{
  if (old || deleted)
    queue_if_terminating(
        c, ((const struct carp_volumeattachment *)obj)->node_name);
}

static void claim_map(struct carp_controller *c, const struct carp_objmeta *old,
                      const struct carp_objmeta *obj, int deleted)
{
  const struct carp_node *n;
  (void)old;
  if (deleted)
    return;
  n = carp_cluster_node_of_nodeclaim(c->env.cluster,
                                     (const struct carp_nodeclaim *)obj);
  if (terminating(n))
    carp_controller_enqueue(c, n->meta.name);
}

static void activated(struct carp_controller *c)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->env.cluster->nodes), &it)))
    if (terminating((const struct carp_node *)m))
      carp_controller_enqueue(c, m->name);
}

/* Stops evictions and provider calls in flight; their callbacks release
 * what they hold. */
static void cancel(struct carp_controller *c)
{
  struct carp_termination *t = TERM(c);
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&t->mem, &it, NULL, NULL, &v)) {
    struct node_mem *m = v;
    carp__term_drain_cancel(m);
    if (m->get)
      carp_provider_cancel(c->env.provider, m->get);
    if (m->del)
      carp_provider_cancel(c->env.provider, m->del);
  }
}

static void termination_free(struct carp_controller *c)
{
  struct carp_termination *t = TERM(c);
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&t->mem, &it, NULL, NULL, &v))
    mem_free(v);
  carp_map_free(&t->mem);
  carp_logfold_free(&t->fold);
  carp_free(t);
}

static const struct carp_controller_def termination_def = {
    .name = TERM_NAME,
    .log_module = TERM_LOG,
    /* Evictions refused by a PDB are retried soon: 100 ms doubling to
     * 10 s (the drain's own backoff decides per pod). */
    .max_backoff_ms = 10 * 1000,
    .reconcile = reconcile,
    .activated = activated,
    .cancel = cancel,
    .free = termination_free,
};

static void register_metrics(struct carp_termination *t, struct carp_metrics *m)
{
  t->m_terminated = carp_metrics_counter(
      m, "karpenter_nodes_terminated_total",
      "Number of nodes terminated in total by Karpenter. Labeled by owning "
      "nodepool.",
      CARP_LABELS("nodepool", "zone"));
  t->m_drained =
      carp_metrics_counter(m, "karpenter_nodes_drained_total",
                           "The total number of nodes drained by Karpenter",
                           CARP_LABELS("nodepool"));
  t->m_evictions = carp_metrics_counter(
      m, "karpenter_pods_eviction_requests_total",
      "The total number of eviction requests made by Karpenter",
      CARP_LABELS("code"));
  t->m_pods_drained = carp_metrics_counter(
      m, "karpenter_pods_drained_total",
      "The total number of pods drained during node termination by "
      "Karpenter",
      CARP_LABELS("reason"));
}

int carp_termination_new(const struct carp_controller_env *env,
                         const struct carp_termination_options *o,
                         struct carp_controller **out)
{
  struct carp_termination *t;
  int rc;
  if (!env || !env->provider || !out)
    return CARP_EINVAL;
  t = CARP_NEW(struct carp_termination);
  if (o)
    t->o = *o;
  if (!t->o.concurrency)
    t->o.concurrency = 64;
  t->def = termination_def;
  t->def.concurrency = t->o.concurrency;
  carp_map_init(&t->mem);
  carp_logfold_init(&t->fold, 0, 0);
  rc = carp_controller_init(&t->base, env, &t->def);
  if (rc) {
    carp_map_free(&t->mem);
    carp_logfold_free(&t->fold);
    carp_free(t);
    return rc;
  }
  if (env->metrics)
    register_metrics(t, env->metrics);
  carp_controller_watch(&t->base, env->cluster->nodes, node_map);
  carp_controller_watch(&t->base, env->cluster->pods, pod_map);
  carp_controller_watch(&t->base, env->cluster->nodeclaims, claim_map);
  carp_controller_watch(&t->base, env->cluster->volumeattachments, va_map);
  *out = &t->base;
  return 0;
}
