/* repair.c: node repair (see include/carpenter/repair.h).
 *
 * Keyed by Node name. A reconcile finds the Node's NodeClaim; a Node that
 * is Ready, or not ours, is left alone; one NotReady for less than the
 * toleration waits on the clock for exactly the time left (a Ready update
 * in between requeues it and ends the wait). Past the toleration, the pool
 * is counted: too many unhealthy nodes hold the repair (looked at again a
 * minute later); otherwise the NodeClaim is stamped with the termination
 * timestamp and deleted, two writes each conditional (resourceVersion,
 * then UID). */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/repair.h"
#include "carpenter/timeutil.h"

#define DEFAULT_TOLERATION_MS (30 * 60 * 1000)
#define BLOCKED_RETRY_MS      (60 * 1000)
#define BLOCKED_EVENT_MS      (5 * 60 * 1000)

struct repair {
  struct carp_controller base;
  struct carp_repair_options o;
  struct carp_map blocked_said; /* NodePool -> last NodeRepairBlocked (ms) */
  /* Node -> UID of the NodeClaim whose delete was sent: the cache shows
   * the stamp before the deletionTimestamp, and a second look between the
   * two must not repair (and count) the same node twice. */
  struct carp_map deleting;
  struct carp_metric *m_disrupted;
  struct carp_metric *m_unhealthy;
};

#define REPAIR(c) carp_container_of(c, struct repair, base)

/* A map entry that owns its key (the map keeps only the pointer). */
struct entry {
  char *key;
  char *uid;       /* deleting: the NodeClaim's UID */
  int64_t said_ms; /* blocked_said: the last NodeRepairBlocked */
};

static struct entry *entry_put(struct carp_map *m, const char *key)
{
  struct entry *e = CARP_NEW(struct entry);
  e->key = carp_strdup(key);
  carp_map_puts(m, e->key, e);
  return e;
}

static void entry_free(struct entry *e)
{
  if (!e)
    return;
  carp_free(e->key);
  carp_free(e->uid);
  carp_free(e);
}

static void entries_free(struct carp_map *m)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(m, &it, NULL, NULL, &v))
    entry_free(v);
  carp_map_free(m);
}

static int managed(const struct carp_nodeclaim *nc)
{
  return nc->spec.node_class_ref.kind &&
         !strcmp(nc->spec.node_class_ref.kind, "ProxmoxNodeClass");
}

static const char *label(const struct carp_kvset *l, const char *key)
{
  const char *v = carp_kvset_get(l, key);
  return v ? v : "";
}

/* Since when the Node has been unhealthy (Ready False or Unknown), or 0
 * when it is healthy. A Node that never reported counts from its
 * creation. */
static int64_t unhealthy_since(const struct carp_node *n)
{
  if (n->ready.status == 1)
    return 0;
  return n->ready.transition_ms ? n->ready.transition_ms : n->meta.creation_ms;
}

/* Whether the pool (every managed node when pool is NULL) has room for
 * one more repair: at most max% of its nodes, rounded up, unhealthy. */
static int pool_healthy(struct repair *r, const char *pool, size_t *bad,
                        size_t *all)
{
  struct carp_cluster *c = r->base.env.cluster;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  size_t threshold;
  *bad = *all = 0;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->nodeclaims), &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    const struct carp_node *n;
    const char *p = carp_nodeclaim_nodepool(nc);
    if (!managed(nc) || (pool && (!p || strcmp(p, pool))))
      continue;
    n = carp_cluster_node_of_nodeclaim(c, nc);
    if (!n)
      continue;
    (*all)++;
    *bad += unhealthy_since(n) != 0;
  }
  threshold = (*all * (size_t)r->o.max_unhealthy_percent + 99) / 100;
  return *bad <= threshold;
}

static void blocked(struct repair *r, const struct carp_node *n,
                    const struct carp_nodeclaim *nc, const char *pool,
                    size_t bad, size_t all)
{
  struct carp_controller *c = &r->base;
  int64_t now = carp_controller_now(c);
  struct entry *last = carp_map_gets(&r->blocked_said, pool ? pool : "");
  const struct carp_nodepool *np =
      pool ? carp_cluster_nodepool(c->env.cluster, pool) : NULL;
  char msg[256];
  if (last && now - last->said_ms < BLOCKED_EVENT_MS)
    return;
  if (!last)
    last = entry_put(&r->blocked_said, pool ? pool : "");
  last->said_ms = now;
  snprintf(msg, sizeof(msg),
           "more than %d%% of the nodes are unhealthy in the %s (%zu of %zu)",
           r->o.max_unhealthy_percent, pool ? "nodepool" : "cluster", bad, all);
  CARP_LOG_WARN(
      "repair", "node repair blocked", CARP_F_STR("node", n->meta.name),
      CARP_F_STR("nodepool", pool ? pool : ""), CARP_F_STR("why", msg));
  carp_controller_event(c, &n->meta, "v1", CARP_EVENT_WARNING,
                        "NodeRepairBlocked", "Cannot repair Node: %s", msg);
  carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_WARNING,
                        "NodeRepairBlocked", "Cannot repair NodeClaim: %s",
                        msg);
  if (np)
    carp_controller_event(c, &np->meta, "karpenter.sh/v1", CARP_EVENT_WARNING,
                          "NodeRepairBlocked", "Cannot repair NodePool: %s",
                          msg);
}

/* ---- the two writes ---- */

static void forget(struct repair *r, const char *key)
{
  entry_free(carp_map_dels(&r->deleting, key));
}

static void on_deleted(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  (void)arg;
  if (!res->err || res->err == CARP_ENOTFOUND) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
  } else {
    forget(REPAIR(c), key);
    carp_write_done(c, key, res);
  }
}

static void delete_claim(struct repair *r, const struct carp_node *n,
                         const struct carp_nodeclaim *nc, const char *key)
{
  struct carp_controller *c = &r->base;
  char since[CARP_DURATION_LEN];
  const char *pool = carp_nodeclaim_nodepool(nc);
  const char *ct = label(nc->meta.labels, CARP_LABEL_CAPACITY_TYPE_KEY);
  const char *state = n->ready.status == 0 ? "False" : "Unknown";
  carp_duration_format(carp_controller_now(c) - unhealthy_since(n), since);
  CARP_LOG_INFO("repair", "deleting unhealthy node",
                CARP_F_STR("node", n->meta.name),
                CARP_F_STR("nodeclaim", nc->meta.name),
                CARP_F_STR("ready", state), CARP_F_STR("for", since));
  carp_controller_event(c, &n->meta, "v1", CARP_EVENT_WARNING, "NodeRepair",
                        "Node has been Ready=%s for %s: replacing it", state,
                        since);
  carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_WARNING,
                        "NodeRepair",
                        "Node %s has been Ready=%s for %s: replacing it",
                        n->meta.name, state, since);
  forget(r, key);
  entry_put(&r->deleting, key)->uid = carp_strdup(nc->meta.uid);
  carp_metric_add(
      r->m_disrupted,
      CARP_VALUES("unhealthy", pool ? pool : "", ct, "", "forceful"), 1);
  carp_metric_add(r->m_unhealthy,
                  CARP_VALUES("ready", pool ? pool : "", ct,
                              nc->status.image_id ? nc->status.image_id : ""),
                  1);
  if (carp_write_delete_claim(c, key, nc, on_deleted, NULL)) {
    forget(r, key);
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
  }
}

static void on_stamped(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  const struct carp_node *n = carp_cluster_node(c->env.cluster, key);
  const struct carp_nodeclaim *nc =
      n ? carp_cluster_nodeclaim_of_node(c->env.cluster, n) : NULL;
  (void)arg;
  /* The cache may not show the stamp yet; the delete needs only the UID,
   * and the claim it names is the one just stamped. */
  if (res->err || !nc || nc->meta.deletion_ms) {
    carp_write_done(c, key, res);
    return;
  }
  delete_claim(REPAIR(c), n, nc, key);
}

static void stamp(struct repair *r, const struct carp_node *n,
                  const struct carp_nodeclaim *nc, const char *key)
{
  struct carp_controller *c = &r->base;
  const char *have =
      carp_kvset_get(nc->meta.annotations, CARP_ANN_TERMINATION_TS);
  int64_t at;
  /* A stamp already due stays: the drain is not held any longer by it. */
  if (have && !carp_time_parse_rfc3339(have, &at) &&
      at <= carp_controller_now(c)) {
    delete_claim(r, n, nc, key);
    return;
  }
  if (carp_write_termination_stamp(c, key, nc, carp_controller_now(c),
                                   on_stamped, NULL))
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
}

/* ---- reconcile ---- */

static void reconcile(struct carp_controller *c, const char *key)
{
  struct repair *r = REPAIR(c);
  const struct carp_node *n = carp_cluster_node(c->env.cluster, key);
  const struct carp_nodeclaim *nc;
  const char *pool;
  int64_t since, due;
  size_t bad, all;
  const struct entry *e = carp_map_gets(&r->deleting, key);
  const char *sent = e ? e->uid : NULL;
  nc = n ? carp_cluster_nodeclaim_of_node(c->env.cluster, n) : NULL;
  if (sent && (!nc || strcmp(sent, nc->meta.uid))) {
    forget(r, key);
    sent = NULL;
  }
  if (!n || !nc || sent || !managed(nc) || nc->meta.deletion_ms ||
      n->meta.deletion_ms || !(since = unhealthy_since(n))) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  due = since + (int64_t)r->o.toleration_ms;
  if (carp_controller_now(c) < due) {
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER,
                         (uint64_t)(due - carp_controller_now(c)));
    return;
  }
  pool = carp_nodeclaim_nodepool(nc);
  if (!pool_healthy(r, pool, &bad, &all)) {
    blocked(r, n, nc, pool, bad, all);
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER,
                         BLOCKED_RETRY_MS);
    return;
  }
  stamp(r, n, nc, key);
}

/* A NodeClaim event concerns its Node. */
static void claim_map(struct carp_controller *c, const struct carp_objmeta *old,
                      const struct carp_objmeta *obj, int deleted)
{
  const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)obj;
  (void)old;
  if (!deleted && nc->status.node_name)
    carp_controller_enqueue(c, nc->status.node_name);
}

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue_all(c, c->env.cluster->nodes);
}

static void repair_free(struct carp_controller *c)
{
  struct repair *r = REPAIR(c);
  entries_free(&r->blocked_said);
  entries_free(&r->deleting);
  carp_free(r);
}

static const struct carp_controller_def repair_def = {
    .name = "node.health",
    .log_module = "repair",
    .concurrency = 4,
    .reconcile = reconcile,
    .activated = activated,
    .free = repair_free,
};

int carp_repair_new(const struct carp_controller_env *env,
                    const struct carp_repair_options *o,
                    struct carp_controller **out)
{
  struct repair *r;
  int rc;
  if (!env || !out ||
      (o && (o->max_unhealthy_percent < 0 || o->max_unhealthy_percent > 100)))
    return CARP_EINVAL;
  r = CARP_NEW(struct repair);
  r->o.toleration_ms =
      o && o->toleration_ms ? o->toleration_ms : DEFAULT_TOLERATION_MS;
  r->o.max_unhealthy_percent = o ? o->max_unhealthy_percent : 20;
  carp_map_init(&r->blocked_said);
  carp_map_init(&r->deleting);
  rc = carp_controller_init(&r->base, env, &repair_def);
  if (rc) {
    carp_map_free(&r->blocked_said);
    carp_map_free(&r->deleting);
    carp_free(r);
    return rc;
  }
  if (env->metrics) {
    r->m_disrupted = carp_metric_nodeclaims_disrupted(env->metrics);
    r->m_unhealthy = carp_metrics_counter(
        env->metrics, "karpenter_nodeclaims_unhealthy_disrupted_total",
        "Number of unhealthy nodeclaims disrupted in total by Karpenter. "
        "Labeled by condition on the node was disrupted, the owning "
        "nodepool, and the image ID.",
        CARP_LABELS("condition", "nodepool", "capacity_type", "image_id"));
  }
  carp_controller_watch(&r->base, env->cluster->nodes,
                        carp_controller_map_name);
  carp_controller_watch(&r->base, env->cluster->nodeclaims, claim_map);
  *out = &r->base;
  return 0;
}
