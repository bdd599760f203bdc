/* disruption.c: the disruption controller (see include/carpenter/
 * disruption.h): one key, polled every interval while leading. A poll
 * publishes the budgets, moves the command in progress along
 * (execute.c), and when there is none decides the next one (methods.c),
 * which then waits out the validation delay and is checked again before
 * anything is written.
 *
 * Validation repeats the decision's question on the caches as they are
 * then: the same candidates must still be candidates, the budgets must
 * still allow them, and the same set must still be deletable (or
 * replaceable at no higher price; the new plan is the one carried out). */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/timeutil.h"
#include "dis_ctl.h"

#define KEY              "disruption"
#define MIN_POLL_MS      100
#define EVENT_EVERY_MS   (5 * 60 * 1000)
#define BLOCKED_EVENT_MS 60000

static int64_t now_ms(struct carp_disruption *d)
{
  return carp_controller_now(&d->base);
}

/* ---- events that must not repeat too often ---- */

static int due(struct carp_map *m, const char *key, int64_t now, int64_t every)
{
  int64_t *last = carp_map_gets(m, key);
  if (last && now - *last < every)
    return 0;
  if (!last) {
    char *k = carp_strdup(key);
    last = carp_malloc(sizeof(*last));
    carp_map_puts(m, k, last);
  }
  *last = now;
  return 1;
}

static void map_free(struct carp_map *m)
{
  struct carp_map_iter it;
  const char *k;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(m, &it, &k, NULL, &v)) {
    carp_free((char *)k);
    carp_free(v);
  }
  carp_map_free(m);
}

/* The last Unconsolidatable reason told for a NodeClaim: a new reason is
 * told at once, the same one again after EVENT_EVERY_MS. */
struct told {
  int64_t at;
  uint64_t why; /* hash of the reason */
};

static void unconsolidatable(struct carp_disruption *d,
                             const struct carp_nodeclaim *nc,
                             const struct carp_node *node, const char *why,
                             int64_t now)
{
  struct carp_controller *c = &d->base;
  struct told *t = carp_map_gets(&d->unconsol, nc->meta.name);
  uint64_t h = carp_map_hash(why, strlen(why));
  if (t && t->why == h && now - t->at < EVENT_EVERY_MS)
    return;
  if (!t) {
    char *k = carp_strdup(nc->meta.name);
    t = carp_malloc(sizeof(*t));
    carp_map_puts(&d->unconsol, k, t);
  }
  t->at = now;
  t->why = h;
  if (node)
    carp_controller_event(c, &node->meta, "v1", CARP_EVENT_NORMAL,
                          "Unconsolidatable", "%s", why);
  carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_NORMAL,
                        "Unconsolidatable", "%s", why);
}

static void blocked_event(struct carp_disruption *d, const struct dis_pool *p,
                          enum carp_disruption_reason r, size_t waiting,
                          int64_t now)
{
  char key[300];
  snprintf(key, sizeof(key), "%s/%d", p->np->meta.name, (int)r);
  if (!due(&d->blocked, key, now, BLOCKED_EVENT_MS))
    return;
  CARP_LOG_INFO("disruption", "disruption blocked by the disruption budget",
                CARP_F_STR("nodepool", p->np->meta.name),
                CARP_F_STR("reason", carp__dis_reason_name(r)),
                CARP_F_INT("candidates", (int64_t)waiting),
                CARP_F_INT("disrupting", p->disrupting));
  carp_controller_event(&d->base, &p->np->meta, "karpenter.sh/v1",
                        CARP_EVENT_NORMAL, "DisruptionBlocked",
                        "No allowed disruptions for disruption reason %s due "
                        "to blocking budget",
                        carp__dis_reason_name(r));
}

/* A drifted node whose pods have nowhere to go: said on the Node and the
 * NodeClaim, at most every BLOCKED_EVENT_MS. */
static void drift_blocked(struct carp_disruption *d, const struct dis_note *n,
                          int64_t now)
{
  char key[300];
  snprintf(key, sizeof(key), "drift/%s", n->nc->meta.name);
  if (!due(&d->blocked, key, now, BLOCKED_EVENT_MS))
    return;
  CARP_LOG_INFO("disruption", "drifted node cannot be replaced now",
                CARP_F_STR("nodeclaim", n->nc->meta.name),
                CARP_F_STR("why", n->why));
  carp_controller_event(&d->base, &n->node->meta, "v1", CARP_EVENT_NORMAL,
                        "DisruptionBlocked", "Cannot disrupt Node: %s", n->why);
  carp_controller_event(&d->base, &n->nc->meta, "karpenter.sh/v1",
                        CARP_EVENT_NORMAL, "DisruptionBlocked",
                        "Cannot disrupt NodeClaim: %s", n->why);
}

/* ---- metrics of a poll ---- */

static void publish(struct carp_disruption *d, const struct dis_analysis *a,
                    int64_t now)
{
  size_t p, i, eligible[CARP_DISRUPT_NREASONS] = {0};
  int r;
  for (p = 0; p < a->npools; p++) {
    const struct dis_pool *pool = &a->pools[p];
    size_t nonempty = pool->cands - pool->empty;
    for (r = 0; r < CARP_DISRUPT_NREASONS; r++) {
      const char *rn = carp__dis_reason_name((enum carp_disruption_reason)r);
      carp_metric_set(d->m_allowed, CARP_VALUES(pool->np->meta.name, rn),
                      (double)pool->budget[r]);
      carp_metric_set(d->m_consuming, CARP_VALUES(pool->np->meta.name, rn),
                      (double)pool->disrupting);
    }
    if (pool->empty && !pool->allowed[CARP_DISRUPT_EMPTY])
      blocked_event(d, pool, CARP_DISRUPT_EMPTY, pool->empty, now);
    if (nonempty && !pool->allowed[CARP_DISRUPT_UNDERUTILIZED] &&
        pool->np->consolidation_policy != CARP_CONSOLIDATE_WHEN_EMPTY)
      blocked_event(d, pool, CARP_DISRUPT_UNDERUTILIZED, nonempty, now);
    if (pool->drifted && !pool->allowed[CARP_DISRUPT_DRIFTED])
      blocked_event(d, pool, CARP_DISRUPT_DRIFTED, pool->drifted, now);
  }
  for (i = 0; i < a->ncands; i++) {
    const struct dis_cand *cd = &a->cands[i];
    const struct dis_pool *pool = &a->pools[cd->pool];
    if (cd->drifted)
      eligible[CARP_DISRUPT_DRIFTED]++;
    if (!cd->consolidatable)
      continue;
    if (cd->empty)
      eligible[CARP_DISRUPT_EMPTY]++;
    else if (pool->np->consolidation_policy != CARP_CONSOLIDATE_WHEN_EMPTY)
      eligible[CARP_DISRUPT_UNDERUTILIZED]++;
  }
  for (r = 0; r < CARP_DISRUPT_NREASONS; r++)
    carp_metric_set(
        d->m_eligible,
        CARP_VALUES(carp__dis_reason_label((enum carp_disruption_reason)r)),
        (double)eligible[r]);
  for (i = 0; i < a->nblocked; i++)
    unconsolidatable(d, a->blocked[i].nc, a->blocked[i].node, a->blocked[i].why,
                     now);
}

/* ---- deciding ---- */

static void record(struct carp_disruption *d, const struct dis_analysis *a,
                   struct dis_command *cmd, int64_t now)
{
  struct dis_cmd *k = &d->cmd;
  size_t i;
  memset(k, 0, sizeof(*k));
  k->method = cmd->method;
  k->reason = cmd->reason;
  k->decision = cmd->plan.decision;
  k->c = carp_calloc(cmd->ncands, sizeof(*k->c));
  k->n = cmd->ncands;
  for (i = 0; i < cmd->ncands; i++) {
    const struct dis_cand *cd = &a->cands[cmd->cands[i]];
    const char *ct =
        carp_kvset_get(cd->nc->meta.labels, CARP_LABEL_CAPACITY_TYPE_KEY);
    k->c[i].claim = carp_strdup(cd->nc->meta.name);
    k->c[i].uid = carp_strdup(cd->nc->meta.uid);
    k->c[i].node = carp_strdup(cd->node->meta.name);
    k->c[i].pool = carp_strdup(a->pools[cd->pool].np->meta.name);
    k->c[i].capacity_type = carp_strdup(ct ? ct : "");
  }
  k->repl = cmd->plan.repl;
  memset(&cmd->plan.repl, 0, sizeof(cmd->plan.repl));
  k->more = cmd->plan.more;
  k->nmore = cmd->plan.nmore;
  cmd->plan.more = NULL;
  cmd->plan.nmore = 0;
  k->decided_ms = now;
  k->savings = cmd->savings;
  k->score = cmd->score;
}

static void scored(struct carp_disruption *d, const struct dis_analysis *a,
                   const struct dis_command *cmd, int approved)
{
  const char *pool = a->pools[a->cands[cmd->cands[0]].pool].np->meta.name;
  const char *decision = approved ? "approved" : "rejected";
  if (cmd->score < 0)
    return;
  carp_metric_observe(d->m_score, CARP_VALUES(decision, pool, "Balanced"),
                      cmd->score);
  carp_metric_add(d->m_moves, CARP_VALUES(decision, pool, "Balanced"), 1);
}

static void decide(struct carp_disruption *d, const struct dis_analysis *a,
                   int64_t now)
{
  struct carp_controller *c = &d->base;
  struct dis_command cmd;
  struct dis_notes notes = {0};
  uint64_t t0 = carp_controller_mono(c);
  size_t i;
  int found;
  memset(&cmd, 0, sizeof(cmd));
  found = carp__dis_decide(c->env.cluster, c->env.provider, a, &cmd, &notes);
  carp_metric_observe(
      d->m_eval,
      CARP_VALUES(carp__dis_reason_label(found ? cmd.reason
                                               : CARP_DISRUPT_UNDERUTILIZED),
                  found ? carp__dis_method_name(cmd.method) : "single"),
      (double)(carp_controller_mono(c) - t0) / 1000.0);
  for (i = 0; i < notes.n; i++) {
    if (notes.v[i].drift) {
      drift_blocked(d, &notes.v[i], now);
      continue;
    }
    CARP_LOG_DEBUG("disruption", "not consolidatable",
                   CARP_F_STR("nodeclaim", notes.v[i].nc->meta.name),
                   CARP_F_STR("why", notes.v[i].why));
    unconsolidatable(d, notes.v[i].nc, notes.v[i].node, notes.v[i].why, now);
    if (notes.v[i].score >= 0) {
      carp_metric_observe(d->m_score,
                          CARP_VALUES("rejected", notes.v[i].pool, "Balanced"),
                          notes.v[i].score);
      carp_metric_add(d->m_moves,
                      CARP_VALUES("rejected", notes.v[i].pool, "Balanced"), 1);
    }
  }
  carp__dis_notes_free(&notes);
  if (!found)
    return;
  scored(d, a, &cmd, 1);
  record(d, a, &cmd, now);
  if (cmd.method == DIS_DRIFT) {
    /* As Karpenter: drift is not validated after a delay (the node goes
     * whatever else happens meanwhile; the replacement is checked when it
     * is up). */
    CARP_LOG_INFO("disruption", "disruption command found",
                  CARP_F_STR("reason", carp__dis_reason_name(cmd.reason)),
                  CARP_F_STR("decision", cmd.plan.decision == DIS_REPLACE
                                             ? "replace"
                                             : "delete"),
                  CARP_F_INT("count", (int64_t)cmd.ncands));
    carp__dis_command_cleanup(&cmd);
    carp__dis_execute(d);
    return;
  }
  d->state = ST_VALIDATING;
  CARP_LOG_INFO(
      "disruption", "disruption command found; validating",
      CARP_F_STR("reason", carp__dis_reason_name(cmd.reason)),
      CARP_F_STR("consolidation_type", carp__dis_method_name(cmd.method)),
      CARP_F_STR("decision",
                 cmd.plan.decision == DIS_REPLACE ? "replace" : "delete"),
      CARP_F_INT("count", (int64_t)cmd.ncands),
      CARP_F_DURATION("delay", d->o.validation_delay_ms));
  carp__dis_command_cleanup(&cmd);
}

/* ---- validating ---- */

static int validate(struct carp_disruption *d, const struct dis_analysis *a)
{
  struct carp_controller *c = &d->base;
  struct dis_cmd *k = &d->cmd;
  int64_t *used = carp_calloc(a->npools + 1, sizeof(*used));
  size_t *idx = carp_calloc(k->n + 1, sizeof(size_t));
  const char *why = NULL;
  size_t i, j, nvirt;
  for (i = 0; i < k->n && !why; i++) {
    const struct dis_cand *cd = NULL;
    for (j = 0; j < a->ncands && !cd; j++)
      if (!strcmp(a->cands[j].nc->meta.name, k->c[i].claim) &&
          !strcmp(a->cands[j].nc->meta.uid, k->c[i].uid) &&
          !strcmp(a->cands[j].node->meta.name, k->c[i].node))
        cd = &a->cands[j];
    if (!cd)
      why = "a candidate is no longer one";
    else if (k->reason == CARP_DISRUPT_EMPTY && !cd->empty)
      why = "a candidate is no longer empty";
    else if (used[cd->pool] >= a->pools[cd->pool].allowed[k->reason])
      why = "the budget no longer allows it";
    else {
      used[cd->pool]++;
      idx[i] = (size_t)(cd - a->cands);
    }
  }
  /* Empty nodes are simulated too when CapacityBuffers may need their
   * room. */
  carp_cluster_virtual_pods(c->env.cluster, &nvirt);
  if (!why && (k->reason != CARP_DISRUPT_EMPTY || nvirt)) {
    struct dis_sim *sim = NULL;
    struct dis_plan plan;
    if (carp__dis_sim_new(c->env.cluster, c->env.provider, a, &sim)) {
      why = "the simulation could not be built";
    } else {
      carp__dis_sim_run(sim, idx, k->n, k->decision == DIS_REPLACE, &plan);
      if (plan.decision == DIS_NONE ||
          (k->decision == DIS_DELETE && plan.decision != DIS_DELETE))
        why = "the simulation no longer allows it";
      else if (plan.decision == DIS_REPLACE && plan.repl.price > k->repl.price)
        why = "the replacement would now cost more";
      else if (plan.decision == DIS_REPLACE) {
        /* Carry out the plan that holds now. */
        carp__dis_replacement_cleanup(&k->repl);
        k->repl = plan.repl;
        memset(&plan.repl, 0, sizeof(plan.repl));
      } else {
        k->decision = DIS_DELETE;
      }
      carp__dis_plan_cleanup(&plan);
      carp__dis_sim_free(sim);
    }
  }
  carp_free(used);
  carp_free(idx);
  if (why) {
    CARP_LOG_INFO("disruption", "abandoning command: validation failed",
                  CARP_F_STR("reason", carp__dis_reason_name(k->reason)),
                  CARP_F_STR("why", why));
    carp_metric_add(d->m_failed_validations,
                    CARP_VALUES(carp__dis_method_name(k->method)), 1);
    return 0;
  }
  return 1;
}

/* ---- the poll ---- */

static void reconcile(struct carp_controller *c, const char *key)
{
  struct carp_disruption *d = DIS(c);
  struct dis_analysis a;
  int64_t now = now_ms(d);
  uint64_t after = d->o.poll_interval_ms;
  int rolled_back = carp__dis_progress(d, now);
  carp__dis_analyze(c->env.cluster, c->env.provider, now, d->active_since, &a);
  publish(d, &a, now);
  if (d->state == ST_VALIDATING) {
    int64_t due_at = d->cmd.decided_ms + (int64_t)d->o.validation_delay_ms;
    if (now < due_at) {
      after = (uint64_t)(due_at - now);
    } else if (validate(d, &a)) {
      carp__dis_execute(d);
    } else {
      /* The cluster changed under it: ask again on the cluster as it is
       * now, rather than a poll later. */
      carp__dis_cmd_free(d);
      decide(d, &a, now);
      if (d->state == ST_VALIDATING)
        after = d->o.validation_delay_ms;
    }
  } else if (d->state == ST_IDLE && !rolled_back) {
    decide(d, &a, now);
    if (d->state == ST_VALIDATING)
      after = d->o.validation_delay_ms;
    else if (a.next_quiet_ms > now && (uint64_t)(a.next_quiet_ms - now) < after)
      /* A node's consolidateAfter ends before the next poll: look then,
       * not up to a poll later. */
      after = (uint64_t)(a.next_quiet_ms - now);
  }
  carp__dis_analysis_free(&a);
  if (after > d->o.poll_interval_ms)
    after = d->o.poll_interval_ms;
  carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER, after);
}

/* A command moves on when its NodeClaims do: a replacement that changes
 * (it may be Initialized now) or a candidate that is gone is looked at
 * at once instead of at the next poll, so a run of commands is not paced
 * by the poll interval. */
static void claim_event(struct carp_controller *c,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  struct carp_disruption *d = DIS(c);
  size_t i;
  (void)old;
  if (!obj || !obj->name)
    return;
  if (d->state == ST_LAUNCHING) {
    for (i = 0; i < d->cmd.nr; i++)
      if (d->cmd.r[i].name && !strcmp(d->cmd.r[i].name, obj->name)) {
        carp_controller_enqueue(c, KEY);
        return;
      }
  } else if (deleted && (d->state == ST_IDLE || d->state == ST_SETTLING)) {
    /* A NodeClaim that is gone frees its budget, and may be the last of
     * a command's. */
    carp_controller_enqueue(c, KEY);
  }
}

/* While a command's pods look for a place, each of their moves may be the
 * last one (see execute.c). */
static void pod_event(struct carp_controller *c, const struct carp_objmeta *old,
                      const struct carp_objmeta *obj, int deleted)
{
  (void)old;
  (void)obj;
  (void)deleted;
  carp__dis_pod_event(DIS(c));
}

static void activated(struct carp_controller *c)
{
  struct carp_disruption *d = DIS(c);
  /* The pod history before now is unknown here: consolidateAfter counts
   * from now at the earliest. */
  d->active_since = now_ms(d);
  carp_controller_enqueue_after(c, KEY, d->o.poll_interval_ms);
}

static void deactivated(struct carp_controller *c)
{
  struct carp_disruption *d = DIS(c);
  if (d->state == ST_VALIDATING)
    carp__dis_cmd_free(d);
}

static void dis_free(struct carp_controller *c)
{
  struct carp_disruption *d = DIS(c);
  carp__dis_cmd_free(d);
  map_free(&d->blocked);
  map_free(&d->unconsol);
  carp_free(d);
}

static const struct carp_controller_def disruption_def = {
    .name = "disruption",
    .log_module = "disruption",
    .reconcile = reconcile,
    .activated = activated,
    .deactivated = deactivated,
    .free = dis_free,
};

static const double score_buckets[] = {0.1, 0.25, 0.5, 0.75, 1,
                                       1.5, 2,    3,   5,    10};

static void register_metrics(struct carp_disruption *d, struct carp_metrics *m)
{
  d->m_disrupted = carp_metric_nodeclaims_disrupted(m);
  d->m_created = carp_metric_nodeclaims_created(m);
  d->m_pods_disrupted = carp_metric_pods_disruption_initiated(m);
  d->m_decisions = carp_metrics_counter(
      m, "karpenter_voluntary_disruption_decisions_total",
      "Number of disruption decisions performed. Labeled by disruption "
      "decision, reason, and consolidation type.",
      CARP_LABELS("decision", "reason", "consolidation_type"));
  d->m_decisions_pool = carp_metrics_counter(
      m, "karpenter_voluntary_disruption_decisions_by_nodepool_total",
      "Number of disruption decisions performed, per NodePool. Labeled by "
      "NodePool, disruption decision, reason, and consolidation type.",
      CARP_LABELS("nodepool", "decision", "reason", "consolidation_type"));
  d->m_eligible = carp_metrics_gauge(
      m, "karpenter_voluntary_disruption_eligible_nodes",
      "Number of nodes eligible for disruption by Karpenter. Labeled by "
      "disruption reason.",
      CARP_LABELS("reason"));
  d->m_failed_validations = carp_metrics_counter(
      m, "karpenter_voluntary_disruption_failed_validations_total",
      "Number of candidates that were selected for disruption but failed "
      "validation.",
      CARP_LABELS("consolidation_type"));
  d->m_queue_failures = carp_metrics_counter(
      m, "karpenter_voluntary_disruption_queue_failures_total",
      "Number of times that an enqueued disruption decision failed. Labeled "
      "by disruption decision, reason, and consolidation type.",
      CARP_LABELS("decision", "reason", "consolidation_type"));
  d->m_timeouts = carp_metrics_counter(
      m, "karpenter_voluntary_disruption_consolidation_timeouts_total",
      "Number of times the Consolidation algorithm has reached a timeout. "
      "Labeled by consolidation type.",
      CARP_LABELS("consolidation_type"));
  d->m_eval = carp_metrics_histogram(
      m, "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
      "Duration of the disruption decision evaluation process in seconds. "
      "Labeled by method and consolidation type.",
      CARP_LABELS("reason", "consolidation_type"),
      carp_metrics_duration_buckets, carp_metrics_duration_buckets_len);
  d->m_allowed = carp_metrics_gauge(
      m, "karpenter_nodepools_allowed_disruptions",
      "The number of nodes for a given NodePool that can be concurrently "
      "disrupting at a point in time. Labeled by NodePool. Note that "
      "allowed disruptions can change very rapidly, as new nodes may be "
      "created and others may be deleted at any point.",
      CARP_LABELS("nodepool", "reason"));
  d->m_consuming = carp_metrics_gauge(
      m, "karpenter_nodepools_nodes_consuming_budgets",
      "The number of nodes for a given NodePool that are consuming "
      "disruption budgets. Labeled by NodePool and reason.",
      CARP_LABELS("nodepool", "reason"));
  d->m_score = carp_metrics_histogram(
      m, "karpenter_consolidation_score",
      "Score of balanced consolidation moves. Labeled by decision, NodePool, "
      "and policy.",
      CARP_LABELS("decision", "nodepool", "policy"), score_buckets,
      sizeof(score_buckets) / sizeof(score_buckets[0]));
  d->m_moves = carp_metrics_counter(
      m, "karpenter_consolidation_moves_total",
      "Number of balanced consolidation moves. Labeled by decision, "
      "NodePool, and policy.",
      CARP_LABELS("decision", "nodepool", "policy"));
  /* Carpenter has no timeout (it evaluates every candidate): the series
   * exist at 0 so dashboards show that. */
  carp_metric_add(d->m_timeouts, CARP_VALUES("single"), 0);
  carp_metric_add(d->m_timeouts, CARP_VALUES("multi"), 0);
}

int carp_disruption_new(const struct carp_controller_env *env,
                        const struct carp_disruption_options *o,
                        struct carp_controller **out)
{
  struct carp_disruption *d;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  d = CARP_NEW(struct carp_disruption);
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
  carp_map_init(&d->blocked);
  carp_map_init(&d->unconsol);
  rc = carp_controller_init(&d->base, env, &disruption_def);
  if (rc) {
    map_free(&d->blocked);
    map_free(&d->unconsol);
    carp_free(d);
    return rc;
  }
  if (env->metrics)
    register_metrics(d, env->metrics);
  if (env->cluster) {
    carp_controller_watch(&d->base, env->cluster->nodeclaims, claim_event);
    carp_controller_watch(&d->base, env->cluster->pods, pod_event);
  }
  *out = &d->base;
  return 0;
}
