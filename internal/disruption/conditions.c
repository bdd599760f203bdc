/* conditions.c: the nodeclaim.disruption controller, which keeps on each
 * NodeClaim what the disruption controller and a user read:
 *
 *   status.lastPodEventTime  the last time a pod came to or left its node,
 *                            for users and other tools (the quiet time is
 *                            measured from the events themselves, and a
 *                            new leader waits consolidateAfter from its
 *                            start whatever was written); written once the
 *                            node has been quiet for 30 s, with any other
 *                            change, or when what is written is a minute
 *                            behind - not on every pod, as Karpenter's
 *                            podevents controller does: pods bound one by
 *                            one over minutes cost a write and a watch
 *                            event each;
 *   Consolidatable           True once the node has been quiet for its
 *                            pool's consolidateAfter, removed when a pod
 *                            comes or goes;
 *   Drifted                  True, with the reason (drift.c), on a
 *                            launched NodeClaim that its NodePool or class
 *                            would no longer make; removed when that
 *                            changes back, or while it is not launched.
 *
 * All go in one status write. A NodeClaim that is not quiet yet waits on
 * the clock for exactly the time left; drift is looked at again on every
 * change of the claim, its NodePool or its class, and every 5 minutes for
 * what only the provider sees (a template replaced in Proxmox); a host's
 * state (maintenance) every HOSTS_POLL_MS (hostwatch.c). A claim is
 * reconciled far more often than any of those change: its drift is
 * remembered (struct drift_memo) until the claim or its class has a new
 * resourceVersion, its NodePool a new spec (generation), or the epoch
 * moves on (every resync, and every host poll that saw a change). */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "disruption_int.h"

/* Half a minute: pods bound one by one to hundreds of nodes over minutes
 * (a large scale-out, kube-scheduler spreading them) come with gaps of a
 * few seconds, and with a 5 s window every gap cost each claim a status
 * write, its watch event and a reconcile in every NodeClaim controller
 * (4.7 writes per claim at 5,000 pods). The field waits no longer than
 * this once pods stop coming, and is written at once with any condition
 * change, so Consolidatable never shows next to an older time. */
#define POD_EVENT_QUIET_MS (30 * 1000)
#define POD_EVENT_STALE_MS (60 * 1000)
#define DRIFT_RESYNC_MS    (5 * 60 * 1000)
#define HOSTS_POLL_MS      (5 * 1000)
#define CACHE_CATCH_UP_MS  200
/* The key of the host poll: not a NodeClaim name (DNS subdomains have no
 * '~'). */
#define HOSTS_KEY "~hosts"

struct claim_conditions {
  struct carp_controller base;
  int64_t active_since;
  struct carp_map hosts;   /* the host poll's last states */
  struct carp_map memos;   /* claim name (the memo's) -> struct drift_memo */
  struct carp_map written; /* claim name (its) -> struct written */
  uint64_t epoch;
};

/* The resourceVersion our last status write to a claim produced, kept
 * until the cache shows it. */
struct written {
  char *rv;
  char name[];
};

/* A claim's drift as last worked out, and from what. */
struct drift_memo {
  char *claim_rv, *pool_uid, *class_rv; /* "" when absent */
  int64_t pool_generation;
  uint64_t epoch;
  char *reason; /* NULL: not drifted */
  char name[];
};

static void memo_free(struct drift_memo *m)
{
  carp_free(m->claim_rv);
  carp_free(m->pool_uid);
  carp_free(m->class_rv);
  carp_free(m->reason);
  carp_free(m);
}

static void written_drop(struct claim_conditions *cc, const char *name)
{
  struct written *w = carp_map_dels(&cc->written, name);
  if (w) {
    carp_free(w->rv);
    carp_free(w);
  }
}

static void memo_drop(struct claim_conditions *cc, const char *name)
{
  struct drift_memo *m = carp_map_gets(&cc->memos, name);
  if (m) {
    carp_map_dels(&cc->memos, name);
    memo_free(m);
  }
  written_drop(cc, name);
}

/* Whether the cache does not show our last status write to nc yet.
 * Deciding on the older claim (the next pod event comes at once) would
 * send again what was just written, conditional on a version the server
 * has moved past: a 409 and a retry. The write's own watch event queues
 * the claim. */
static int cache_behind(struct claim_conditions *cc,
                        const struct carp_nodeclaim *nc)
{
  const struct written *w = carp_map_gets(&cc->written, nc->meta.name);
  if (!w)
    return 0;
  if (!carp_rv_behind(nc->meta.resource_version, w->rv)) {
    written_drop(cc, nc->meta.name);
    return 0;
  }
  return 1;
}

static int same(const char *memo, const char *rv)
{
  return !strcmp(memo, rv ? rv : "");
}

/* carp__dis_drift_reason, remembered. */
static const char *drift_reason(struct claim_conditions *cc,
                                const struct carp_nodeclaim *nc,
                                const struct carp_nodepool *np)
{
  const struct carp_cluster *c = cc->base.env.cluster;
  const struct carp_nodeclass *cls =
      nc->spec.node_class_ref.name
          ? carp_cluster_nodeclass(c, nc->spec.node_class_ref.name)
          : NULL;
  const char *pool_uid = np ? np->meta.uid : NULL;
  int64_t pool_generation = np ? np->meta.generation : 0;
  const char *class_rv = cls ? cls->meta.resource_version : NULL;
  struct drift_memo *m = carp_map_gets(&cc->memos, nc->meta.name);
  const char *reason;
  if (m && m->epoch == cc->epoch &&
      same(m->claim_rv, nc->meta.resource_version) &&
      same(m->pool_uid, pool_uid) && m->pool_generation == pool_generation &&
      same(m->class_rv, class_rv))
    return m->reason;
  reason = carp__dis_drift_reason(c, cc->base.env.provider, nc, np);
  if (!m) {
    size_t n = strlen(nc->meta.name);
    m = carp_calloc(1, sizeof(*m) + n + 1);
    memcpy(m->name, nc->meta.name, n + 1);
    carp_map_puts(&cc->memos, m->name, m);
  } else {
    carp_free(m->claim_rv);
    carp_free(m->pool_uid);
    carp_free(m->class_rv);
    carp_free(m->reason);
  }
  m->claim_rv =
      carp_strdup(nc->meta.resource_version ? nc->meta.resource_version : "");
  m->pool_uid = carp_strdup(pool_uid ? pool_uid : "");
  m->pool_generation = pool_generation;
  m->class_rv = carp_strdup(class_rv ? class_rv : "");
  m->reason = reason ? carp_strdup(reason) : NULL;
  m->epoch = cc->epoch;
  return m->reason;
}

#define CC(c) carp_container_of(c, struct claim_conditions, base)

/* Drifted on a launched claim, as drift.c finds it; 1 when st changed. */
static int set_drifted(struct carp_controller *c,
                       const struct carp_nodeclaim *nc,
                       const struct carp_nodepool *np,
                       struct carp_nodeclaim_status *st, int64_t now)
{
  const char *reason = NULL;
  if (carp_conditions_is_true(&nc->status.conditions, CARP_COND_LAUNCHED))
    reason = drift_reason(CC(c), nc, np);
  if (!reason)
    return carp_conditions_clear(&st->conditions, CARP_COND_DRIFTED);
  return carp_conditions_set(&st->conditions, &carp_condset_nodeclaim,
                             CARP_COND_DRIFTED, CARP_COND_TRUE, reason, reason,
                             nc->meta.generation, now);
}

/* Remembers what our write produced (cache_behind). */
static void on_written(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  const char *rv =
      res->err ? NULL
               : carp_json_str(res->body, "metadata", "resourceVersion", NULL);
  written_drop(CC(c), key);
  if (rv && *rv) {
    size_t n = strlen(key);
    struct written *w = carp_calloc(1, sizeof(*w) + n + 1);
    memcpy(w->name, key, n + 1);
    w->rv = carp_strdup(rv);
    carp_map_puts(&CC(c)->written, w->name, w);
  }
  carp_write_done_until_event(c, key, res, arg);
}

/* Writes st when it changed, else waits after_ms (0: for an event). */
static void finish(struct carp_controller *c, const char *key,
                   const struct carp_nodeclaim *nc,
                   struct carp_nodeclaim_status *st, int changed,
                   uint64_t after)
{
  struct carp_buf body;
  int rc;
  if (!changed) {
    carp_nodeclaim_status_cleanup(st);
    if (after)
      carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER, after);
    else
      carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_nodeclaim_status_patch(st, nc->meta.resource_version, &body);
  if (!rc) {
    struct carp_kube_ref ref = carp_ref_nodeclaim(nc->meta.name, "status");
    rc = carp_write_patch(c, key, &ref, body.ptr, body.len, on_written, NULL);
  }
  carp_buf_free(&body);
  carp_nodeclaim_status_cleanup(st);
  if (rc)
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct claim_conditions *cc = CC(c);
  const struct carp_nodeclaim *nc = carp_cluster_nodeclaim(c->env.cluster, key);
  const struct carp_nodepool *np;
  const struct carp_node *node;
  struct carp_nodeclaim_status st;
  const char *pool;
  int64_t now = carp_controller_now(c), event, since;
  uint64_t after = 0;
  int changed, want;

  if (!strcmp(key, HOSTS_KEY)) {
    if (carp__dis_hosts_poll(c, &cc->hosts))
      cc->epoch++;
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER, HOSTS_POLL_MS);
    return;
  }
  if (!nc || nc->meta.deletion_ms || !carp__dis_managed(nc)) {
    memo_drop(cc, key);
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (cache_behind(cc, nc)) {
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER,
                         CACHE_CATCH_UP_MS);
    return;
  }
  pool = carp_nodeclaim_nodepool(nc);
  np = pool ? carp_cluster_nodepool(c->env.cluster, pool) : NULL;
  node = carp_cluster_node_of_nodeclaim(c->env.cluster, nc);
  carp_nodeclaim_status_copy(&st, &nc->status);
  changed = set_drifted(c, nc, np, &st, now);
  if (!carp_conditions_is_true(&nc->status.conditions, CARP_COND_INITIALIZED)) {
    finish(c, key, nc, &st, changed, 0);
    return;
  }
  since = carp__dis_since(c->env.cluster, nc, node, cc->active_since);
  want = np && !np->has_replicas &&
         np->consolidate_after_ms != CARP_DURATION_NEVER &&
         now - since >= np->consolidate_after_ms;
  if (want)
    changed |= carp_conditions_set(
        &st.conditions, &carp_condset_nodeclaim, CARP_COND_CONSOLIDATABLE,
        CARP_COND_TRUE, "Consolidatable", "", nc->meta.generation, now);
  else
    changed |= carp_conditions_clear(&st.conditions, CARP_COND_CONSOLIDATABLE);
  if (!want && np && !np->has_replicas &&
      np->consolidate_after_ms != CARP_DURATION_NEVER) {
    uint64_t left = (uint64_t)(since + np->consolidate_after_ms - now);
    if (!after || left < after)
      after = left;
  }
  event =
      node ? carp_cluster_last_pod_event(c->env.cluster, node->meta.name) : 0;
  /* The API keeps whole seconds: compared in milliseconds, what comes
   * back would be older than what was written, and written again. */
  event -= event % 1000;
  if (event > st.last_pod_event_ms) {
    const struct carp_condition *init =
        carp_conditions_get(&st.conditions, CARP_COND_INITIALIZED);
    int64_t base = st.last_pod_event_ms ? st.last_pod_event_ms
                   : init               ? init->transition_ms
                                        : event;
    int64_t due = event + POD_EVENT_QUIET_MS;
    if (base + POD_EVENT_STALE_MS < due)
      due = base + POD_EVENT_STALE_MS;
    if (changed || now >= due) {
      st.last_pod_event_ms = event;
      changed = 1;
    } else if (!after || (uint64_t)(due - now) < after) {
      after = (uint64_t)(due - now);
    }
  }
  finish(c, key, nc, &st, changed, after);
}

/* ---- events ---- */

static const struct carp_nodeclaim *claim_of_node(struct carp_controller *c,
                                                  const char *node_name)
{
  const struct carp_node *node =
      node_name ? carp_cluster_node(c->env.cluster, node_name) : NULL;
  return node ? carp_cluster_nodeclaim_of_node(c->env.cluster, node) : NULL;
}

static void queue_node_claim(struct carp_controller *c, const char *node_name)
{
  const struct carp_nodeclaim *nc = claim_of_node(c, node_name);
  if (nc)
    carp_controller_enqueue(c, nc->meta.name);
}

/* A pod came to, left or finished on the claim's node. Only a claim that
 * shows Consolidatable needs a reconcile at once (the condition goes);
 * otherwise nothing is due before the quiet time ends - lastPodEventTime
 * after POD_EVENT_QUIET_MS, Consolidatable after the pool's
 * consolidateAfter - and the workqueue keeps the earliest of the times a
 * key is asked for. Reconciling on every pod cost a claim 45 reconciles
 * while 5,000 pods bound, each working out that nothing was due yet. */
static void queue_pod_claim(struct carp_controller *c, const char *node_name)
{
  const struct carp_nodeclaim *nc = claim_of_node(c, node_name);
  const struct carp_nodepool *np;
  const char *pool;
  uint64_t after = POD_EVENT_QUIET_MS;
  if (!nc)
    return;
  if (carp_conditions_is_true(&nc->status.conditions,
                              CARP_COND_CONSOLIDATABLE)) {
    carp_controller_enqueue(c, nc->meta.name);
    return;
  }
  pool = carp_nodeclaim_nodepool(nc);
  np = pool ? carp_cluster_nodepool(c->env.cluster, pool) : NULL;
  if (np && np->consolidate_after_ms != CARP_DURATION_NEVER &&
      (uint64_t)np->consolidate_after_ms < after)
    after = (uint64_t)np->consolidate_after_ms;
  carp_controller_enqueue_after(c, nc->meta.name, after);
}

static void pod_event(struct carp_controller *c, const struct carp_objmeta *old,
                      const struct carp_objmeta *obj, int deleted)
{
  const struct carp_pod *p = (const struct carp_pod *)obj;
  const struct carp_pod *o = (const struct carp_pod *)old;
  if (deleted || !o) {
    queue_pod_claim(c, p->node_name);
    return;
  }
  if (o->node_name != p->node_name ||
      carp_pod_is_terminal(o) != carp_pod_is_terminal(p) ||
      !o->meta.deletion_ms != !p->meta.deletion_ms) {
    queue_pod_claim(c, o->node_name);
    queue_pod_claim(c, p->node_name);
  }
}

static void node_event(struct carp_controller *c,
                       const struct carp_objmeta *old,
                       const struct carp_objmeta *obj, int deleted)
{
  (void)old;
  (void)deleted;
  queue_node_claim(c, obj->name);
}

/* consolidateAfter or the template may have changed: every claim of the
 * pool. The spec is all this controller reads of a pool, and a status
 * write changes nothing here: the NodePool controller writes one as nodes
 * join, and queueing every claim on each of those made this controller's
 * work grow with claims times nodes joining (42 reconciles a claim at
 * 5,000 pods, against 13 at 1,000). */
static void pool_event(struct carp_controller *c,
                       const struct carp_objmeta *old,
                       const struct carp_objmeta *obj, int deleted)
{
  struct carp_objmeta *const *claims;
  size_t n, i;
  if (!deleted && old && old->generation == obj->generation &&
      !strcmp(old->uid, obj->uid))
    return;
  claims = carp_cluster_nodeclaims_of_pool(c->env.cluster, obj->name, &n);
  for (i = 0; i < n; i++)
    carp_controller_enqueue(c, claims[i]->name);
}

/* The class's hash may have changed: its claims drift. */
static void class_event(struct carp_controller *c,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  (void)old;
  (void)deleted;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->env.cluster->nodeclaims),
                              &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    if (nc->spec.node_class_ref.name &&
        !strcmp(nc->spec.node_class_ref.name, obj->name))
      carp_controller_enqueue(c, m->name);
  }
}

/* On gaining the lead, and every DRIFT_RESYNC_MS after: quiet time counts
 * from the first. */
static void activated(struct carp_controller *c)
{
  CC(c)->epoch++; /* what only the provider sees is asked again */
  if (!CC(c)->active_since)
    CC(c)->active_since = carp_controller_now(c);
  carp_controller_enqueue_all(c, c->env.cluster->nodeclaims);
  if (c->env.provider)
    carp_controller_enqueue(c, HOSTS_KEY);
}

static void deactivated(struct carp_controller *c)
{
  CC(c)->active_since = 0;
}

static void cc_free(struct carp_controller *c)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&CC(c)->memos, &it, NULL, NULL, &v))
    memo_free(v);
  carp_map_free(&CC(c)->memos);
  carp_map_iter_init(&it);
  while (carp_map_next(&CC(c)->written, &it, NULL, NULL, &v)) {
    carp_free(((struct written *)v)->rv);
    carp_free(v);
  }
  carp_map_free(&CC(c)->written);
  carp__dis_hosts_free(&CC(c)->hosts);
  carp_free(CC(c));
}

static const struct carp_controller_def conditions_def = {
    .name = "nodeclaim.disruption",
    .log_module = "disruption",
    .concurrency = 4,
    .reconcile = reconcile,
    .activated = activated,
    .deactivated = deactivated,
    .free = cc_free,
};

int carp_disruption_conditions_new(const struct carp_controller_env *env,
                                   struct carp_controller **out)
{
  struct claim_conditions *cc;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  cc = CARP_NEW(struct claim_conditions);
  carp_map_init(&cc->hosts);
  carp_map_init(&cc->memos);
  carp_map_init(&cc->written);
  rc = carp_controller_init(&cc->base, env, &conditions_def);
  if (rc) {
    carp_map_free(&cc->hosts);
    carp_map_free(&cc->memos);
    carp_map_free(&cc->written);
    carp_free(cc);
    return rc;
  }
  carp_controller_watch(&cc->base, env->cluster->nodeclaims,
                        carp_controller_map_name);
  carp_controller_watch(&cc->base, env->cluster->pods, pod_event);
  carp_controller_watch(&cc->base, env->cluster->nodes, node_event);
  carp_controller_watch(&cc->base, env->cluster->nodepools, pool_event);
  carp_controller_watch(&cc->base, env->cluster->nodeclasses, class_event);
  carp_controller_resync(&cc->base, DRIFT_RESYNC_MS);
  *out = &cc->base;
  return 0;
}
