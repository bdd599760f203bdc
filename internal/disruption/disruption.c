/* disruption.c: the disruption controller (see
 * include/carpenter/disruption.h): a poll timer, one command at a time
 * through validation and execution, and the forceful expiration of old
 * NodeClaims.
 *
 * States: IDLE (a poll may decide), VALIDATING (a command waits out the
 * validation delay), EXECUTING (its writes are in flight), WAITING (its
 * NodeClaims are being terminated; the next decision waits for them to
 * go). Every write carries a resourceVersion or UID precondition; nothing
 * is written unless active (the leader) and synced. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"
#include "carpenter/nodepool.h"
#include "carpenter/scheduling.h"
#include "carpenter/timeutil.h"
#include "disruption_int.h"

#define MIN_POLL_MS      100
#define BLOCKED_EVENT_MS 60000
#define REASON_EMPTY     "Empty"
#define METRIC_EMPTY     "empty"

enum dis_state { ST_IDLE = 0, ST_VALIDATING, ST_EXECUTING, ST_WAITING };

enum cand_state { C_CHOSEN = 0, C_RUNNING, C_DELETED, C_FAILED };

/* An expired NodeClaim whose delete was sent. */
struct expiring {
  char *name; /* the map key */
  char *uid;
};

struct cand_rec {
  char *claim;
  char *uid;
  char *node;
  char *pool;
  enum cand_state state;
};

struct carp_disruption {
  uv_loop_t *loop;
  struct carp_cluster *cluster;
  struct carp_kube *kube;
  struct carp_disruption_options o;
  uv_timer_t poll;
  uv_timer_t validate;
  int handles; /* open timers */
  int active;
  int closing;
  int pending; /* writes in flight */
  int64_t active_since;
  enum dis_state state;
  struct cand_rec *cmd;
  size_t ncmd;
  size_t running;
  int64_t cmd_at;
  struct carp_map expiring; /* nodeclaim name -> struct expiring */
  struct carp_map blocked;  /* nodepool name (copy) -> last event ms */
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_metric *m_disrupted;
  struct carp_metric *m_decisions;
  struct carp_metric *m_eligible;
  struct carp_metric *m_failed_validations;
  struct carp_metric *m_allowed;
};

static int64_t now_ms(void)
{
  return carp_time_wall_ms();
}

static const char *label(const struct carp_kvset *s, const char *key)
{
  const char *v = carp_kvset_get(s, key);
  return v ? v : "";
}

static const char *policy_name(const struct carp_nodepool *np)
{
  if (!np)
    return "";
  switch (np->consolidation_policy) {
  case CARP_CONSOLIDATE_WHEN_EMPTY:
    return "WhenEmpty";
  case CARP_CONSOLIDATE_BALANCED:
    return "Balanced";
  case CARP_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED:
    break;
  }
  return "WhenEmptyOrUnderutilized";
}

static void event(struct carp_disruption *d, const struct carp_objmeta *m,
                  const char *api_version, int warning, const char *reason,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void event(struct carp_disruption *d, const struct carp_objmeta *m,
                  const char *api_version, int warning, const char *reason,
                  const char *fmt, ...)
{
  struct carp_event_target t;
  struct carp_buf msg;
  va_list ap;
  if (!d->o.recorder || !m)
    return;
  carp_buf_init(&msg, CARP_BUF_UNLIMITED); /* the recorder cuts it */
  va_start(ap, fmt);
  carp_buf_vprintf(&msg, fmt, ap);
  va_end(ap);
  t = carp_event_target_of(m, api_version);
  carp_recorder_event(d->o.recorder, &t,
                      warning ? CARP_EVENT_WARNING : CARP_EVENT_NORMAL, reason,
                      "%s", carp_buf_cstr(&msg));
  carp_buf_free(&msg);
}

/* ---- writes ---- */

typedef void (*write_cb)(struct carp_disruption *d, void *arg,
                         const struct carp_kube_result *res);

struct write_ctx {
  struct carp_disruption *d;
  write_cb cb;
  void *arg;
  char *what; /* for the log of side writes */
};

static void maybe_closed(struct carp_disruption *d);

static void on_write(const struct carp_kube_result *res, void *arg)
{
  struct write_ctx *w = arg;
  struct carp_disruption *d = w->d;
  if (w->cb) {
    w->cb(d, w->arg, res);
  } else if (res->err && res->err != CARP_ECONFLICT &&
             res->err != CARP_ENOTFOUND && res->err != CARP_ENOTLEADER &&
             res->err != CARP_ECANCELED) {
    CARP_LOG_WARN("disruption", "write failed", CARP_F_STR("object", w->what),
                  CARP_F_ERR(res->err), CARP_F_STR("message", res->message));
  }
  carp_free(w->what);
  carp_free(w);
  d->pending--;
  maybe_closed(d);
}

static struct write_ctx *ctx_new(struct carp_disruption *d, const char *what,
                                 write_cb cb, void *arg)
{
  struct write_ctx *w = CARP_NEW(struct write_ctx);
  w->d = d;
  w->cb = cb;
  w->arg = arg;
  w->what = carp_strdup(what);
  d->pending++;
  return w;
}

static void ctx_fail(struct carp_disruption *d, struct write_ctx *w)
{
  d->pending--;
  carp_free(w->what);
  carp_free(w);
}

static int patch(struct carp_disruption *d, const struct carp_kube_ref *ref,
                 const struct carp_buf *body, write_cb cb, void *arg)
{
  struct write_ctx *w = ctx_new(d, ref->name, cb, arg);
  int rc = carp_kube_patch(d->kube, ref, CARP_PATCH_MERGE, body->ptr, body->len,
                           1, on_write, w);
  if (rc)
    ctx_fail(d, w);
  return rc;
}

static int delete_claim(struct carp_disruption *d, const char *name,
                        const char *uid, write_cb cb, void *arg)
{
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims",
                              .name = name};
  struct carp_kube_delete_options o = {.uid = uid, .grace_seconds = -1};
  struct write_ctx *w = ctx_new(d, name, cb, arg);
  int rc = carp_kube_delete(d->kube, &ref, &o, on_write, w);
  if (rc)
    ctx_fail(d, w);
  return rc;
}

/* A NodeClaim status condition, written when it changes (side write).
 * status < 0 clears it. */
static void claim_condition(struct carp_disruption *d,
                            const struct carp_nodeclaim *nc, const char *type,
                            int status, const char *reason, const char *msg)
{
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims",
                              .name = nc->meta.name,
                              .subresource = "status"};
  struct carp_nodeclaim_status st;
  struct carp_buf body;
  int changed;
  carp_nodeclaim_status_copy(&st, &nc->status);
  if (status < 0)
    changed = carp_conditions_clear(&st.conditions, type);
  else
    changed = carp_conditions_set(&st.conditions, &carp_condset_nodeclaim, type,
                                  (enum carp_cond_status)status, reason, msg,
                                  nc->meta.generation, now_ms());
  if (changed) {
    carp_buf_init(&body, CARP_BUF_UNLIMITED);
    if (!carp_nodeclaim_status_patch(&st, nc->meta.resource_version, &body))
      patch(d, &ref, &body, NULL, NULL);
    carp_buf_free(&body);
  }
  carp_nodeclaim_status_cleanup(&st);
}

static void put_taint(struct carp_jw *w, const struct carp_taint *t)
{
  carp_jw_obj(w);
  carp_jw_kstr(w, "key", t->key);
  if (t->value && *t->value)
    carp_jw_kstr(w, "value", t->value);
  carp_jw_kstr(w, "effect", carp_taint_effect_name(t->effect));
  carp_jw_obj_end(w);
}

/* Adds (or removes) karpenter.sh/disrupted:NoSchedule, conditionally. */
static int taint_node(struct carp_disruption *d, const struct carp_node *node,
                      int add, write_cb cb, void *arg)
{
  struct carp_kube_ref ref = {
      .version = "v1", .resource = "nodes", .name = node->meta.name};
  struct carp_taint disrupted = {.key = CARP_TAINT_DISRUPTED,
                                 .value = "",
                                 .effect = CARP_EFFECT_NO_SCHEDULE};
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;
  int rc;
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", node->meta.resource_version);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  carp_jw_key(&w, "taints");
  carp_jw_arr(&w);
  for (i = 0; i < node->ntaints; i++)
    if (strcmp(node->taints[i].key, CARP_TAINT_DISRUPTED))
      put_taint(&w, &node->taints[i]);
  if (add)
    put_taint(&w, &disrupted);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  rc = carp_jw_finish(&w);
  if (!rc)
    rc = patch(d, &ref, &body, cb, arg);
  carp_buf_free(&body);
  return rc;
}

/* ---- commands ---- */

static void cmd_free(struct carp_disruption *d)
{
  size_t i;
  for (i = 0; i < d->ncmd; i++) {
    carp_free(d->cmd[i].claim);
    carp_free(d->cmd[i].uid);
    carp_free(d->cmd[i].node);
    carp_free(d->cmd[i].pool);
  }
  carp_free(d->cmd);
  d->cmd = NULL;
  d->ncmd = 0;
  d->running = 0;
  d->state = ST_IDLE;
}

static void cand_failed(struct carp_disruption *d, struct cand_rec *r,
                        int untaint)
{
  const struct carp_node *node = carp_cluster_node(d->cluster, r->node);
  r->state = C_FAILED;
  carp_cluster_unmark(d->cluster, r->claim);
  if (untaint && node && !node->meta.deletion_ms && !d->closing)
    taint_node(d, node, 0, NULL, NULL);
}

static void cand_finished(struct carp_disruption *d)
{
  size_t i, ok = 0;
  if (--d->running > 0)
    return;
  for (i = 0; i < d->ncmd; i++)
    if (d->cmd[i].state == C_DELETED)
      ok++;
  if (!ok || d->closing) {
    if (!d->closing)
      cmd_free(d);
    return;
  }
  carp_metric_add(d->m_decisions, CARP_VALUES("delete", METRIC_EMPTY, ""), 1);
  d->state = ST_WAITING;
  d->cmd_at = now_ms();
}

static void on_claim_deleted(struct carp_disruption *d, void *arg,
                             const struct carp_kube_result *res)
{
  struct cand_rec *r = arg;
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(d->cluster, r->claim);
  const struct carp_nodepool *np = carp_cluster_nodepool(d->cluster, r->pool);
  if (res->err) {
    if (res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER)
      CARP_LOG_WARN("disruption", "deleting the nodeclaim failed",
                    CARP_F_STR("nodeclaim", r->claim), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    cand_failed(d, r, res->err != CARP_ENOTFOUND);
    cand_finished(d);
    return;
  }
  r->state = C_DELETED;
  carp_metric_add(
      d->m_disrupted,
      CARP_VALUES(METRIC_EMPTY, r->pool,
                  nc ? label(nc->meta.labels, CARP_LABEL_CAPACITY_TYPE_KEY)
                     : "",
                  policy_name(np), "graceful"),
      1);
  cand_finished(d);
}

static void on_node_tainted(struct carp_disruption *d, void *arg,
                            const struct carp_kube_result *res)
{
  struct cand_rec *r = arg;
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(d->cluster, r->claim);
  const struct carp_node *node = carp_cluster_node(d->cluster, r->node);
  if (res->err || !nc || strcmp(nc->meta.uid, r->uid) || d->closing) {
    if (res->err && res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER)
      CARP_LOG_INFO("disruption", "tainting the node failed, skipping it",
                    CARP_F_STR("node", r->node), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    cand_failed(d, r, !res->err);
    cand_finished(d);
    return;
  }
  event(d, node ? &node->meta : NULL, "v1", 0, "DisruptionTerminating",
        "Disrupting Node: %s", REASON_EMPTY);
  event(d, &nc->meta, "karpenter.sh/v1", 0, "DisruptionTerminating",
        "Disrupting NodeClaim: %s", REASON_EMPTY);
  claim_condition(d, nc, CARP_COND_DISRUPTION_REASON, CARP_COND_TRUE,
                  REASON_EMPTY, "");
  if (delete_claim(d, r->claim, r->uid, on_claim_deleted, r)) {
    cand_failed(d, r, 1);
    cand_finished(d);
  }
}

static void execute(struct carp_disruption *d)
{
  size_t i, n = 0;
  struct carp_buf names;
  d->state = ST_EXECUTING;
  d->running = 1; /* held while starting */
  carp_buf_init(&names, 64 * 1024);
  for (i = 0; i < d->ncmd; i++) {
    struct cand_rec *r = &d->cmd[i];
    const struct carp_node *node;
    if (r->state != C_CHOSEN)
      continue;
    node = carp_cluster_node(d->cluster, r->node);
    if (!node) {
      r->state = C_FAILED;
      continue;
    }
    carp_cluster_mark_for_deletion(d->cluster, r->claim);
    r->state = C_RUNNING;
    d->running++;
    if (taint_node(d, node, 1, on_node_tainted, r)) {
      cand_failed(d, r, 0);
      d->running--;
      continue;
    }
    carp_buf_printf(&names, "%s%s", n++ ? "," : "", r->claim);
  }
  if (n)
    CARP_LOG_INFO("disruption", "disrupting nodeclaim(s) via delete",
                  CARP_F_STR("reason", REASON_EMPTY),
                  CARP_F_STR("nodeclaims", carp_buf_cstr(&names)),
                  CARP_F_INT("count", (int64_t)n));
  carp_buf_free(&names);
  cand_finished(d);
}

/* The validation delay is over: keep the candidates that still are, as
 * far as the budgets allow, and act on them. */
static void on_validate(uv_timer_t *timer)
{
  struct carp_disruption *d = timer->data;
  struct dis_analysis a;
  int64_t *used;
  size_t i, j, kept = 0;
  if (d->state != ST_VALIDATING)
    return;
  if (!d->active || d->closing || !carp_cluster_synced(d->cluster)) {
    cmd_free(d);
    return;
  }
  carp__dis_analyze(d->cluster, now_ms(), d->active_since, &a);
  used = carp_calloc(a.npools ? a.npools : 1, sizeof(*used));
  for (i = 0; i < d->ncmd; i++) {
    struct cand_rec *r = &d->cmd[i];
    const struct dis_cand *c = NULL;
    for (j = 0; j < a.ncands && !c; j++)
      if (!strcmp(a.cands[j].nc->meta.name, r->claim) &&
          !strcmp(a.cands[j].nc->meta.uid, r->uid) &&
          !strcmp(a.cands[j].node->meta.name, r->node))
        c = &a.cands[j];
    if (!c || !c->empty || used[c->pool] >= a.pools[c->pool].allowed) {
      CARP_LOG_INFO("disruption", "candidate no longer valid",
                    CARP_F_STR("nodeclaim", r->claim),
                    CARP_F_STR("why", !c          ? "no longer a candidate"
                                      : !c->empty ? "no longer empty"
                                                  : "budget exhausted"));
      r->state = C_FAILED;
      continue;
    }
    used[c->pool]++;
    kept++;
  }
  carp_free(used);
  carp__dis_analysis_free(&a);
  if (!kept) {
    CARP_LOG_INFO("disruption", "abandoning command: validation failed",
                  CARP_F_STR("reason", REASON_EMPTY));
    carp_metric_add(d->m_failed_validations, CARP_VALUES(""), 1);
    cmd_free(d);
    return;
  }
  execute(d);
}

/* ---- expiration ---- */

static void expiring_free(struct expiring *e)
{
  if (!e)
    return;
  carp_free(e->name);
  carp_free(e->uid);
  carp_free(e);
}

static void on_expired_deleted(struct carp_disruption *d, void *arg,
                               const struct carp_kube_result *res)
{
  char *name = arg;
  if (res->err) {
    /* Forget it: the next poll tries again. */
    if (res->err != CARP_ENOTFOUND && res->err != CARP_ECANCELED &&
        res->err != CARP_ENOTLEADER)
      CARP_LOG_WARN("disruption", "deleting an expired nodeclaim failed",
                    CARP_F_STR("nodeclaim", name), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    expiring_free(carp_map_dels(&d->expiring, name));
  }
  carp_free(name);
}

static void expire(struct carp_disruption *d, int64_t now)
{
  struct carp_store *claims = carp_informer_store(d->cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_map_iter mi;
  struct carp_objmeta *m;
  const char *k;
  void *v;
  /* Forget NodeClaims that the cache shows going or gone. */
  carp_map_iter_init(&mi);
  while (carp_map_next(&d->expiring, &mi, &k, NULL, &v)) {
    struct expiring *e = v;
    const struct carp_nodeclaim *nc = carp_cluster_nodeclaim(d->cluster, k);
    if (!nc || nc->meta.deletion_ms || strcmp(nc->meta.uid, e->uid)) {
      carp_map_dels(&d->expiring, k);
      expiring_free(e);
    }
  }
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    const char *pool = carp_nodeclaim_nodepool(nc);
    struct expiring *e;
    char age[CARP_DURATION_LEN];
    if (nc->meta.deletion_ms || !carp__dis_managed(nc) ||
        nc->spec.expire_after_ms == CARP_DURATION_NEVER ||
        now - nc->meta.creation_ms < nc->spec.expire_after_ms ||
        carp_map_gets(&d->expiring, nc->meta.name))
      continue;
    e = CARP_NEW(struct expiring);
    e->uid = carp_strdup(nc->meta.uid);
    e->name = carp_strdup(nc->meta.name);
    carp_map_puts(&d->expiring, e->name, e);
    carp_duration_format(nc->spec.expire_after_ms, age);
    CARP_LOG_INFO("disruption", "deleting expired nodeclaim",
                  CARP_F_STR("nodeclaim", nc->meta.name),
                  CARP_F_STR("expireAfter", age));
    event(d, &nc->meta, "karpenter.sh/v1", 0, "Expired",
          "NodeClaim reached its expireAfter (%s)", age);
    carp_metric_add(
        d->m_disrupted,
        CARP_VALUES(
            "expired", pool ? pool : "",
            label(nc->meta.labels, CARP_LABEL_CAPACITY_TYPE_KEY),
            policy_name(pool ? carp_cluster_nodepool(d->cluster, pool) : NULL),
            "forceful"),
        1);
    /* The callback owns a copy of the name: the map's may go first. */
    {
      char *copy = carp_strdup(e->name);
      if (delete_claim(d, e->name, e->uid, on_expired_deleted, copy)) {
        carp_free(copy);
        expiring_free(carp_map_dels(&d->expiring, nc->meta.name));
      }
    }
  }
}

/* ---- Consolidatable ---- */

static void consolidatable(struct carp_disruption *d, int64_t now)
{
  struct carp_store *claims = carp_informer_store(d->cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    const char *pool = carp_nodeclaim_nodepool(nc);
    const struct carp_nodepool *np =
        pool ? carp_cluster_nodepool(d->cluster, pool) : NULL;
    const struct carp_node *node;
    int want, has;
    if (nc->meta.deletion_ms || !carp__dis_managed(nc) || !np ||
        !carp_conditions_is_true(&nc->status.conditions, CARP_COND_INITIALIZED))
      continue;
    node = carp_cluster_node_of_nodeclaim(d->cluster, nc);
    want = np->consolidate_after_ms != CARP_DURATION_NEVER &&
           now - carp__dis_since(d->cluster, nc, node, d->active_since) >=
               np->consolidate_after_ms;
    has = carp_conditions_is_true(&nc->status.conditions,
                                  CARP_COND_CONSOLIDATABLE);
    if (want && !has)
      claim_condition(d, nc, CARP_COND_CONSOLIDATABLE, CARP_COND_TRUE,
                      "Consolidatable", "");
    else if (!want && carp_conditions_get(&nc->status.conditions,
                                          CARP_COND_CONSOLIDATABLE))
      claim_condition(d, nc, CARP_COND_CONSOLIDATABLE, -1, NULL, NULL);
  }
}

/* ---- the poll ---- */

static int command_settled(struct carp_disruption *d, int64_t now)
{
  size_t i;
  if (now - d->cmd_at >= (int64_t)d->o.command_timeout_ms) {
    CARP_LOG_WARN("disruption",
                  "previous command's nodeclaims still terminating; "
                  "deciding again",
                  CARP_F_DURATION("waited", now - d->cmd_at));
    return 1;
  }
  for (i = 0; i < d->ncmd; i++) {
    const struct carp_nodeclaim *nc;
    if (d->cmd[i].state != C_DELETED)
      continue;
    nc = carp_cluster_nodeclaim(d->cluster, d->cmd[i].claim);
    if (nc && !strcmp(nc->meta.uid, d->cmd[i].uid))
      return 0;
  }
  return 1;
}

static void blocked_event(struct carp_disruption *d, const struct dis_pool *p,
                          int64_t now)
{
  int64_t *last = carp_map_gets(&d->blocked, p->np->meta.name);
  if (last && now - *last < BLOCKED_EVENT_MS)
    return;
  if (!last) {
    char *key = carp_strdup(p->np->meta.name);
    /* The key lives in the map until close. */
    last = carp_malloc(sizeof(*last));
    carp_map_puts(&d->blocked, key, last);
  }
  *last = now;
  CARP_LOG_INFO("disruption", "empty nodes blocked by the disruption budget",
                CARP_F_STR("nodepool", p->np->meta.name),
                CARP_F_INT("empty", (int64_t)p->empty),
                CARP_F_INT("disrupting", p->disrupting));
  event(d, &p->np->meta, "karpenter.sh/v1", 0, "DisruptionBlocked",
        "No allowed disruptions for disruption reason %s due to blocking "
        "budget",
        REASON_EMPTY);
}

static void on_poll(uv_timer_t *timer)
{
  struct carp_disruption *d = timer->data;
  struct dis_analysis a;
  size_t i, p, n = 0;
  int64_t now;
  if (!d->active || d->closing || !carp_cluster_synced(d->cluster))
    return;
  now = now_ms();
  expire(d, now);
  consolidatable(d, now);
  carp__dis_analyze(d->cluster, now, d->active_since, &a);
  for (p = 0; p < a.npools; p++)
    carp_metric_set(d->m_allowed,
                    CARP_VALUES(a.pools[p].np->meta.name, REASON_EMPTY),
                    (double)a.pools[p].budget);
  carp_metric_set(d->m_eligible, CARP_VALUES(METRIC_EMPTY), (double)a.ncands);
  if (d->state == ST_WAITING && command_settled(d, now))
    cmd_free(d);
  if (d->state != ST_IDLE) {
    carp__dis_analysis_free(&a);
    return;
  }
  /* Up to each pool's allowance of its empty candidates. */
  for (p = 0; p < a.npools; p++) {
    struct dis_pool *pool = &a.pools[p];
    int64_t take = pool->allowed;
    if (pool->empty && !take)
      blocked_event(d, pool, now);
    for (i = 0; i < a.ncands && take > 0; i++) {
      struct cand_rec *r;
      if (a.cands[i].pool != p || !a.cands[i].empty)
        continue;
      d->cmd = carp_reallocarray(d->cmd, d->ncmd + 1, sizeof(*d->cmd));
      r = &d->cmd[d->ncmd++];
      memset(r, 0, sizeof(*r));
      r->claim = carp_strdup(a.cands[i].nc->meta.name);
      r->uid = carp_strdup(a.cands[i].nc->meta.uid);
      r->node = carp_strdup(a.cands[i].node->meta.name);
      r->pool = carp_strdup(pool->np->meta.name);
      take--;
      n++;
    }
  }
  carp__dis_analysis_free(&a);
  if (!n)
    return;
  d->state = ST_VALIDATING;
  CARP_LOG_INFO("disruption", "empty nodes found; validating",
                CARP_F_INT("count", (int64_t)n),
                CARP_F_DURATION("delay", d->o.validation_delay_ms));
  uv_timer_start(&d->validate, on_validate, d->o.validation_delay_ms, 0);
}

/* ---- lifecycle ---- */

void carp_disruption_set_active(struct carp_disruption *d, int active)
{
  if (d->closing || active == d->active)
    return;
  d->active = active;
  if (active) {
    d->active_since = now_ms();
    uv_timer_start(&d->poll, on_poll, d->o.poll_interval_ms,
                   d->o.poll_interval_ms);
  } else {
    uv_timer_stop(&d->poll);
    uv_timer_stop(&d->validate);
    if (d->state == ST_VALIDATING)
      cmd_free(d);
  }
}

int carp_disruption_new(uv_loop_t *loop, struct carp_cluster *cluster,
                        struct carp_kube *kube,
                        const struct carp_disruption_options *o,
                        struct carp_disruption **out)
{
  struct carp_disruption *d;
  if (!loop || !cluster || !kube || !out)
    return CARP_EINVAL;
  d = CARP_NEW(struct carp_disruption);
  d->loop = loop;
  d->cluster = cluster;
  d->kube = kube;
  if (o)
    d->o = *o;
  if (!d->o.poll_interval_ms)
    d->o.poll_interval_ms = 10 * 1000;
  if (d->o.poll_interval_ms < MIN_POLL_MS)
    d->o.poll_interval_ms = MIN_POLL_MS;
  if (!d->o.validation_delay_ms)
    d->o.validation_delay_ms = 15 * 1000;
  if (!d->o.command_timeout_ms)
    d->o.command_timeout_ms = 10 * 60 * 1000;
  carp_map_init(&d->expiring);
  carp_map_init(&d->blocked);
  uv_timer_init(loop, &d->poll);
  uv_timer_init(loop, &d->validate);
  d->poll.data = d->validate.data = d;
  d->handles = 2;
  if (d->o.metrics) {
    d->m_disrupted = carp_metrics_counter(
        d->o.metrics, "karpenter_nodeclaims_disrupted_total",
        "Number of nodeclaims disrupted in total by Karpenter. Labeled by "
        "reason the nodeclaim was disrupted and the owning nodepool.",
        CARP_LABELS("reason", "nodepool", "capacity_type",
                    "consolidation_policy", "termination_mode"));
    d->m_decisions = carp_metrics_counter(
        d->o.metrics, "karpenter_voluntary_disruption_decisions_total",
        "Number of disruption decisions performed. Labeled by disruption "
        "decision, reason, and consolidation type.",
        CARP_LABELS("decision", "reason", "consolidation_type"));
    d->m_eligible = carp_metrics_gauge(
        d->o.metrics, "karpenter_voluntary_disruption_eligible_nodes",
        "Number of nodes eligible for disruption by Karpenter. Labeled by "
        "disruption reason.",
        CARP_LABELS("reason"));
    d->m_failed_validations = carp_metrics_counter(
        d->o.metrics, "karpenter_voluntary_disruption_failed_validations_total",
        "Number of candidates that were selected for disruption but failed "
        "validation.",
        CARP_LABELS("consolidation_type"));
    d->m_allowed = carp_metrics_gauge(
        d->o.metrics, "karpenter_nodepools_allowed_disruptions",
        "The number of nodes for a given NodePool that can be concurrently "
        "disrupting at a point in time. Labeled by NodePool. Note that "
        "allowed disruptions can change very rapidly, as new nodes may be "
        "created and others may be deleted at any point.",
        CARP_LABELS("nodepool", "reason"));
  }
  *out = d;
  return 0;
}

static void finish_close(struct carp_disruption *d)
{
  struct carp_map_iter it;
  const char *k;
  void *v;
  void (*cb)(void *) = d->close_cb;
  void *arg = d->close_arg;
  cmd_free(d);
  carp_map_iter_init(&it);
  while (carp_map_next(&d->expiring, &it, NULL, NULL, &v))
    expiring_free(v);
  carp_map_free(&d->expiring);
  carp_map_iter_init(&it);
  while (carp_map_next(&d->blocked, &it, &k, NULL, &v)) {
    carp_free((char *)k);
    carp_free(v);
  }
  carp_map_free(&d->blocked);
  carp_free(d);
  if (cb)
    cb(arg);
}

static void maybe_closed(struct carp_disruption *d)
{
  if (d->closing && d->handles == 0 && d->pending == 0)
    finish_close(d);
}

static void on_timer_closed(uv_handle_t *h)
{
  struct carp_disruption *d = h->data;
  d->handles--;
  maybe_closed(d);
}

void carp_disruption_close(struct carp_disruption *d, void (*cb)(void *arg),
                           void *arg)
{
  if (!d || d->closing)
    return;
  d->closing = 1;
  d->close_cb = cb;
  d->close_arg = arg;
  uv_close((uv_handle_t *)&d->poll, on_timer_closed);
  uv_close((uv_handle_t *)&d->validate, on_timer_closed);
}
