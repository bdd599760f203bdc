/* execute.c: carrying a validated command out.
 *
 * Delete: each candidate is marked for deletion (the provisioner counts
 * its pods as needing a place from then on), its Node tainted
 * karpenter.sh/disrupted:NoSchedule, its NodeClaim given the
 * DisruptionReason condition and deleted; termination drains it through
 * the Eviction API. The next decision waits until their pods have found
 * a place again: none still runs on a candidate (evicted ones are
 * terminating), no pod created since the deletes is pending, and no pod
 * has changed for SETTLE_QUIET_MS (an evicted pod's replacement is
 * created a moment after the eviction, not with it). A
 * decision taken while they move is taken on a cluster about to change:
 * the kube-scheduler places them as it likes, and the nodes they land on
 * start their consolidateAfter again, so its validation would mostly
 * fail. The wait does not cover the VMs' shutdown, and lasts at most
 * SETTLE_MAX_MS: a drain a PodDisruptionBudget holds back does not stop
 * consolidation elsewhere. The marks keep the candidates out of later
 * decisions and count them against the budgets until their NodeClaims
 * are gone, and every simulation places the pods still on them first
 * (simulate.c), so no later move takes the room they are going to.
 *
 * Replace: the replacement NodeClaim is created first and nothing else
 * happens until it is Initialized. Then the candidates' pods are simulated
 * once more onto the cluster as it is now (the replacement included, the
 * pods that arrived meanwhile counted); if they fit, the candidates go as
 * above. If the replacement is deleted, never initializes within the
 * command timeout, or the pods no longer fit, the command is rolled back:
 * the replacement is deleted and nothing was tainted. No pod is ever left
 * without a place because of a consolidation.
 *
 * A static NodePool's drift replaces in place (Karpenter's StaticDrift):
 * one NodeClaim of the pool's template per candidate, all created first;
 * from then on each candidate is marked replaced, so the pool counts the
 * replacement instead of it (static.provisioning launches nothing more,
 * static.deprovisioning sees no extra node). Once every replacement is
 * Initialized the candidates go as above, without simulating their pods
 * again; if one fails, all are deleted and the candidates count again. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/rand.h"
#include "carpenter/scheduling.h"
#include "dis_ctl.h"

/* A replacement the cache has not shown yet after this long is gone. */
#define REPLACEMENT_SEEN_MS 30000
/* The longest wait for a command's pods to find a place again. */
#define SETTLE_MAX_MS   (2 * 60 * 1000)
#define SETTLE_QUIET_MS 2000
/* Pods created this long before the deletes may be the evicted ones'
 * replacements (the API server's clock is not ours). */
#define CLOCK_SKEW_MS 5000

const char *carp__dis_reason_label(enum carp_disruption_reason r)
{
  switch (r) {
  case CARP_DISRUPT_EMPTY:
    return "empty";
  case CARP_DISRUPT_DRIFTED:
    return "drifted";
  case CARP_DISRUPT_UNDERUTILIZED:
    break;
  }
  return "underutilized";
}

const char *carp__dis_reason_name(enum carp_disruption_reason r)
{
  switch (r) {
  case CARP_DISRUPT_EMPTY:
    return "Empty";
  case CARP_DISRUPT_DRIFTED:
    return "Drifted";
  case CARP_DISRUPT_UNDERUTILIZED:
    break;
  }
  return "Underutilized";
}

const char *carp__dis_policy_name(const struct carp_nodepool *np)
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

static const char *decision_name(enum dis_decision d)
{
  return d == DIS_REPLACE ? "replace" : "delete";
}

void carp__dis_cmd_free(struct carp_disruption *d)
{
  struct dis_cmd *cmd = &d->cmd;
  size_t i;
  for (i = 0; i < cmd->n; i++) {
    carp_free(cmd->c[i].claim);
    carp_free(cmd->c[i].uid);
    carp_free(cmd->c[i].node);
    carp_free(cmd->c[i].pool);
    carp_free(cmd->c[i].capacity_type);
  }
  carp_free(cmd->c);
  carp__dis_replacement_cleanup(&cmd->repl);
  carp__dis_replacements_free(cmd->more, cmd->nmore);
  for (i = 0; i < cmd->nr; i++) {
    carp_free(cmd->r[i].name);
    carp_free(cmd->r[i].uid);
  }
  carp_free(cmd->r);
  memset(cmd, 0, sizeof(*cmd));
  d->running = 0;
  d->state = ST_IDLE;
}

/* An event on every candidate's Node and NodeClaim. */
static void cand_events(struct carp_disruption *d, const char *reason,
                        const char *message)
{
  struct carp_controller *c = &d->base;
  size_t i;
  for (i = 0; i < d->cmd.n; i++) {
    const struct carp_node *node =
        carp_cluster_node(c->env.cluster, d->cmd.c[i].node);
    const struct carp_nodeclaim *nc =
        carp_cluster_nodeclaim(c->env.cluster, d->cmd.c[i].claim);
    if (node)
      carp_controller_event(c, &node->meta, "v1", CARP_EVENT_NORMAL, reason,
                            "%s", message);
    if (nc)
      carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_NORMAL,
                            reason, "%s", message);
  }
}

/* ---- deleting the candidates ---- */

static void cand_failed(struct carp_disruption *d, struct cand_rec *r,
                        int untaint)
{
  struct carp_controller *c = &d->base;
  const struct carp_node *node = carp_cluster_node(c->env.cluster, r->node);
  struct carp_taint t = {.key = CARP_TAINT_DISRUPTED,
                         .value = "",
                         .effect = CARP_EFFECT_NO_SCHEDULE};
  r->state = C_FAILED;
  carp_cluster_unmark(c->env.cluster, r->claim);
  carp_cluster_unmark_replaced(c->env.cluster, r->claim);
  if (untaint && node && !node->meta.deletion_ms && !c->closing)
    carp_write_node_taint(c, NULL, node, &t, 0, NULL, NULL);
}

static void cand_finished(struct carp_disruption *d)
{
  size_t i, ok = 0;
  if (--d->running > 0)
    return;
  for (i = 0; i < d->cmd.n; i++)
    if (d->cmd.c[i].state == C_DELETED)
      ok++;
  if (d->base.closing)
    return;
  if (!ok) {
    carp_metric_add(d->m_queue_failures,
                    CARP_VALUES(decision_name(d->cmd.decision),
                                carp__dis_reason_label(d->cmd.reason),
                                carp__dis_method_name(d->cmd.method)),
                    1);
    carp__dis_cmd_free(d);
    carp_controller_enqueue(&d->base, "disruption");
    return;
  }
  d->state = ST_SETTLING;
  d->deleted_ms = carp_controller_now(&d->base);
}

static void on_claim_deleted(struct carp_controller *c, const char *key,
                             const struct carp_kube_result *res, void *arg)
{
  struct carp_disruption *d = DIS(c);
  struct cand_rec *r = arg;
  const struct carp_nodepool *np =
      carp_cluster_nodepool(c->env.cluster, r->pool);
  (void)key;
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
  {
    const char *const values[] = {carp__dis_reason_label(d->cmd.reason),
                                  r->pool,
                                  r->capacity_type,
                                  carp__dis_policy_name(np),
                                  "graceful",
                                  NULL};
    carp_metric_add(d->m_disrupted, values, 1);
    carp_metric_pods_disrupted_add(d->m_pods_disrupted, c->env.cluster, r->node,
                                   values);
  }
  cand_finished(d);
}

static void on_node_tainted(struct carp_controller *c, const char *key,
                            const struct carp_kube_result *res, void *arg)
{
  struct carp_disruption *d = DIS(c);
  struct cand_rec *r = arg;
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(c->env.cluster, r->claim);
  const struct carp_node *node = carp_cluster_node(c->env.cluster, r->node);
  const char *reason = carp__dis_reason_name(d->cmd.reason);
  (void)key;
  if (res->err || !nc || strcmp(nc->meta.uid, r->uid) || c->closing) {
    if (res->err && res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER)
      CARP_LOG_INFO("disruption", "tainting the node failed, skipping it",
                    CARP_F_STR("node", r->node), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    cand_failed(d, r, !res->err);
    cand_finished(d);
    return;
  }
  if (node)
    carp_controller_event(
        c, &node->meta, "v1", CARP_EVENT_NORMAL, "DisruptionTerminating",
        "Disrupting Node: %s/%s", reason,
        d->cmd.decision == DIS_REPLACE ? "Replace" : "Delete");
  carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_NORMAL,
                        "DisruptionTerminating", "Disrupting NodeClaim: %s/%s",
                        reason,
                        d->cmd.decision == DIS_REPLACE ? "Replace" : "Delete");
  carp_write_claim_condition(c, NULL, nc, CARP_COND_DISRUPTION_REASON,
                             CARP_COND_TRUE, reason, "", NULL, NULL);
  if (carp_write_delete_claim(c, NULL, nc, on_claim_deleted, r)) {
    cand_failed(d, r, 1);
    cand_finished(d);
  }
}

static void start_deletes(struct carp_disruption *d)
{
  struct carp_controller *c = &d->base;
  struct carp_taint t = {.key = CARP_TAINT_DISRUPTED,
                         .value = "",
                         .effect = CARP_EFFECT_NO_SCHEDULE};
  struct carp_buf names;
  size_t i, n = 0;
  d->state = ST_EXECUTING;
  d->running = 1; /* held while starting */
  carp_buf_init(&names, 64 * 1024);
  for (i = 0; i < d->cmd.n; i++) {
    struct cand_rec *r = &d->cmd.c[i];
    const struct carp_node *node;
    int rc;
    if (r->state != C_CHOSEN)
      continue;
    node = carp_cluster_node(c->env.cluster, r->node);
    if (!node) {
      cand_failed(d, r, 0);
      continue;
    }
    carp_cluster_mark_for_deletion(c->env.cluster, r->claim);
    r->state = C_RUNNING;
    d->running++;
    /* Taint even when the taint is there already: the write's answer is
     * what moves the candidate on. */
    rc = carp_write_node_taint(c, NULL, node, &t, 1, on_node_tainted, r);
    if (rc == 1) {
      struct carp_kube_result ok;
      memset(&ok, 0, sizeof(ok));
      on_node_tainted(c, NULL, &ok, r);
    } else if (rc) {
      cand_failed(d, r, 0);
      d->running--;
      continue;
    }
    carp_buf_printf(&names, "%s%s", n++ ? "," : "", r->claim);
  }
  if (n)
    CARP_LOG_INFO(
        "disruption", "disrupting nodeclaim(s) via delete",
        CARP_F_STR("reason", carp__dis_reason_name(d->cmd.reason)),
        CARP_F_STR("consolidation_type", carp__dis_method_name(d->cmd.method)),
        CARP_F_STR("decision", decision_name(d->cmd.decision)),
        CARP_F_STR("nodeclaims", carp_buf_cstr(&names)),
        CARP_F_INT("count", (int64_t)n));
  carp_buf_free(&names);
  cand_finished(d);
}

/* ---- the replacements ---- */

static void rollback(struct carp_disruption *d, const char *why)
{
  struct carp_controller *c = &d->base;
  size_t i;
  CARP_LOG_INFO(
      "disruption", "abandoning command: rolling back", CARP_F_STR("why", why),
      CARP_F_STR("replacement",
                 d->cmd.nr && d->cmd.r[0].name ? d->cmd.r[0].name : ""),
      CARP_F_INT("replacements", (int64_t)d->cmd.nr));
  for (i = 0; i < d->cmd.nr; i++) {
    const struct repl_rec *r = &d->cmd.r[i];
    const struct carp_nodeclaim *nc =
        r->name ? carp_cluster_nodeclaim(c->env.cluster, r->name) : NULL;
    if (nc && !nc->meta.deletion_ms && r->uid &&
        !strcmp(nc->meta.uid, r->uid)) {
      /* Not capacity from now on, before the cache shows the delete. */
      carp_cluster_mark_for_deletion(c->env.cluster, nc->meta.name);
      carp_write_delete_claim(c, NULL, nc, NULL, NULL);
    }
  }
  /* The candidates count as themselves again. */
  for (i = 0; i < d->cmd.n; i++)
    carp_cluster_unmark_replaced(c->env.cluster, d->cmd.c[i].claim);
  carp_metric_add(d->m_failed_validations,
                  CARP_VALUES(carp__dis_method_name(d->cmd.method)), 1);
  carp_metric_add(d->m_queue_failures,
                  CARP_VALUES(decision_name(d->cmd.decision),
                              carp__dis_reason_label(d->cmd.reason),
                              carp__dis_method_name(d->cmd.method)),
                  1);
  carp__dis_cmd_free(d);
}

/* What replacement NodeClaim i is made of. */
static const struct dis_replacement *repl_of(const struct dis_cmd *cmd,
                                             size_t i)
{
  return cmd->repl.in_place || !i ? &cmd->repl : &cmd->more[i - 1];
}

/* arg: the replacement's index. A command is never rolled back or freed
 * while its creates are in flight (the poll waits for them), so the
 * index still names this command's replacement. */
static void on_replacement_created(struct carp_controller *c, const char *key,
                                   const struct carp_kube_result *res,
                                   void *arg)
{
  struct carp_disruption *d = DIS(c);
  size_t i = (size_t)(uintptr_t)arg;
  struct repl_rec *r;
  const struct dis_replacement *rp;
  const char *uid;
  (void)key;
  if (c->closing || d->state != ST_LAUNCHING || i >= d->cmd.nr)
    return;
  d->cmd.creating--;
  r = &d->cmd.r[i];
  rp = repl_of(&d->cmd, i);
  if (res->err) {
    if (res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER)
      CARP_LOG_WARN("disruption", "creating the replacement failed",
                    CARP_F_STR("nodeclaim", r->name), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    carp_cluster_forget_claim(c->env.cluster, r->name);
    r->failed = 1;
    return;
  }
  uid = carp_json_str(res->body, "metadata", "uid", NULL);
  r->uid = carp_strdup(uid ? uid : "");
  d->cmd.launched_ms = carp_controller_now(c);
  carp_metric_add(
      d->m_created,
      CARP_VALUES(carp__dis_reason_label(d->cmd.reason), rp->nodepool, "false"),
      1);
  CARP_LOG_INFO("disruption", "created replacement nodeclaim",
                CARP_F_STR("nodeclaim", r->name),
                CARP_F_STR("nodepool", rp->nodepool),
                CARP_F_STR("instance-types", rp->types ? rp->types : ""));
}

static char *replacement_name(const char *pool)
{
  static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  struct carp_buf name;
  char suffix[6];
  size_t i;
  for (i = 0; i < 5; i++)
    suffix[i] =
        alphabet[carp_rand_u64(carp_rand_global()) % (sizeof(alphabet) - 1)];
  suffix[5] = 0;
  carp_buf_init(&name, 512);
  carp_buf_printf(&name, "%s-%s", pool, suffix);
  return carp_buf_steal(&name, NULL);
}

/* Creates the replacements; the poll (carp__dis_progress) goes on once
 * every create has its answer. */
static void launch(struct carp_disruption *d)
{
  struct carp_controller *c = &d->base;
  struct carp_kube_ref ref = carp_ref_nodeclaim(NULL, NULL);
  char msg[128];
  size_t i;
  d->cmd.nr = d->cmd.repl.in_place ? d->cmd.n : 1 + d->cmd.nmore;
  d->cmd.r = carp_calloc(d->cmd.nr, sizeof(*d->cmd.r));
  d->state = ST_LAUNCHING;
  d->cmd.launched_ms = carp_controller_now(c);
  /* A static pool counts each replacement instead of its candidate from
   * now on: neither static controller acts on the pool meanwhile. */
  if (d->cmd.repl.in_place)
    for (i = 0; i < d->cmd.n; i++)
      carp_cluster_mark_replaced(c->env.cluster, d->cmd.c[i].claim);
  for (i = 0; i < d->cmd.nr; i++) {
    struct repl_rec *r = &d->cmd.r[i];
    const struct dis_replacement *rp = repl_of(&d->cmd, i);
    const char *at = strstr(rp->body, "\"__NAME__\"");
    struct carp_buf body;
    int rc;
    r->name = replacement_name(rp->nodepool);
    carp_buf_init(&body, CARP_BUF_UNLIMITED);
    carp_buf_append(&body, rp->body, (size_t)(at - rp->body));
    carp_buf_printf(&body, "\"%s\"", r->name);
    carp_buf_puts(&body, at + 10);
    /* Counted by the provisioner from now on, as an in-flight claim. */
    carp_cluster_expect_claim(c->env.cluster, r->name, rp->nodepool,
                              &rp->capacity);
    d->cmd.creating++;
    rc = carp_write_create(c, NULL, &ref, body.ptr, body.len,
                           on_replacement_created, (void *)(uintptr_t)i);
    carp_buf_free(&body);
    if (rc) {
      d->cmd.creating--;
      carp_cluster_forget_claim(c->env.cluster, r->name);
      r->failed = 1;
    }
  }
  snprintf(msg, sizeof(msg), "Launching NodeClaim: %s",
           carp__dis_reason_name(d->cmd.reason));
  cand_events(d, "DisruptionLaunching", msg);
}

void carp__dis_execute(struct carp_disruption *d)
{
  size_t i;
  carp_metric_add(d->m_decisions,
                  CARP_VALUES(decision_name(d->cmd.decision),
                              carp__dis_reason_label(d->cmd.reason),
                              carp__dis_method_name(d->cmd.method)),
                  1);
  for (i = 0; i < d->cmd.n; i++)
    carp_metric_add(d->m_decisions_pool,
                    CARP_VALUES(d->cmd.c[i].pool,
                                decision_name(d->cmd.decision),
                                carp__dis_reason_label(d->cmd.reason),
                                carp__dis_method_name(d->cmd.method)),
                    1);
  if (d->cmd.decision == DIS_REPLACE)
    launch(d);
  else
    start_deletes(d);
}

/* The candidates still there, unchanged, and their pods still fit now
 * that the replacement is part of the cluster. */
static const char *still_fits(struct carp_disruption *d, int64_t now)
{
  struct carp_controller *c = &d->base;
  struct dis_analysis a;
  struct dis_sim *sim = NULL;
  struct dis_plan plan;
  size_t *idx = carp_calloc(d->cmd.n + 1, sizeof(size_t));
  size_t i, j, n = 0;
  const char *why = NULL;
  carp__dis_analyze(c->env.cluster, c->env.provider, now, 0, &a);
  for (i = 0; i < d->cmd.n && !why; i++) {
    for (j = 0; j < a.ncands; j++)
      if (!strcmp(a.cands[j].nc->meta.name, d->cmd.c[i].claim) &&
          !strcmp(a.cands[j].nc->meta.uid, d->cmd.c[i].uid))
        break;
    if (j == a.ncands)
      why = "a candidate is no longer one";
    else
      idx[n++] = j;
  }
  if (!why && carp__dis_sim_new(c->env.cluster, c->env.provider, &a, &sim))
    why = "the simulation could not be built";
  if (!why) {
    carp__dis_sim_run(sim, idx, n, 0, &plan);
    if (plan.decision != DIS_DELETE)
      why = "the candidates' pods no longer fit";
    carp__dis_plan_cleanup(&plan);
  }
  carp__dis_sim_free(sim);
  carp__dis_analysis_free(&a);
  carp_free(idx);
  return why;
}

/* Where the replacements stand: NULL while some are not up yet, "" when
 * all are Initialized, else why the command is given up. */
static const char *replacements_up(struct carp_disruption *d, int64_t now)
{
  struct carp_controller *c = &d->base;
  size_t i;
  int waiting = 0;
  for (i = 0; i < d->cmd.nr; i++) {
    const struct repl_rec *r = &d->cmd.r[i];
    const struct carp_nodeclaim *nc;
    if (r->failed)
      return "the replacement could not be created";
    nc = carp_cluster_nodeclaim(c->env.cluster, r->name);
    if (!nc || strcmp(nc->meta.uid, r->uid) || nc->meta.deletion_ms) {
      if (nc || now - d->cmd.launched_ms >= REPLACEMENT_SEEN_MS)
        return "the replacement NodeClaim was deleted before it initialized";
      waiting = 1;
    } else if (!carp_conditions_is_true(&nc->status.conditions,
                                        CARP_COND_INITIALIZED)) {
      if (now - d->cmd.launched_ms >= (int64_t)d->o.command_timeout_ms)
        return "the replacement did not initialize in time";
      waiting = 1;
    }
  }
  return waiting ? NULL : "";
}

/* Whether the deleted candidates' pods have found a place again (see
 * the top of this file). */
static int settled(struct carp_disruption *d, int64_t now)
{
  const struct carp_cluster *c = d->base.env.cluster;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  size_t i, j, n;
  if (now - d->pod_event_ms < SETTLE_QUIET_MS) {
    carp_controller_enqueue_after(
        &d->base, "disruption",
        (uint64_t)(d->pod_event_ms + SETTLE_QUIET_MS - now));
    return 0;
  }
  for (i = 0; i < d->cmd.n; i++) {
    struct carp_objmeta *const *pods;
    if (d->cmd.c[i].state != C_DELETED)
      continue;
    pods = carp_cluster_pods_on_node(c, d->cmd.c[i].node, &n);
    for (j = 0; j < n; j++)
      if (carp_pod_is_reschedulable((const struct carp_pod *)pods[j]))
        return 0;
  }
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->pods), &it)))
    if (m->creation_ms >= d->deleted_ms - CLOCK_SKEW_MS &&
        carp_pod_is_provisionable((const struct carp_pod *)m))
      return 0;
  return 1;
}

void carp__dis_pod_event(struct carp_disruption *d)
{
  if (d->state != ST_SETTLING)
    return;
  /* Settling needs SETTLE_QUIET_MS without a pod event: look once that
   * may have passed, not once per event (a drain moves many pods). */
  d->pod_event_ms = carp_controller_now(&d->base);
  carp_controller_enqueue_after(&d->base, "disruption", SETTLE_QUIET_MS);
}

int carp__dis_progress(struct carp_disruption *d, int64_t now)
{
  if (d->state == ST_LAUNCHING && !d->cmd.creating) {
    const char *why = replacements_up(d, now);
    if (!why) {
      if (!d->cmd.repl_waiting_said) {
        d->cmd.repl_waiting_said = 1;
        cand_events(d, "DisruptionWaitingReadiness",
                    "Waiting on readiness to continue disruption");
      }
      return 0;
    }
    /* A static pool's replacements stand for their candidates whatever
     * the pods do; a consolidation's must still hold their pods. */
    if (!*why && !d->cmd.repl.in_place)
      why = still_fits(d, now);
    if (why && *why) {
      rollback(d, why);
      return 1;
    }
    start_deletes(d);
    return 0;
  }
  if (d->state == ST_SETTLING) {
    int done = settled(d, now);
    if (done || now - d->deleted_ms >= SETTLE_MAX_MS) {
      CARP_LOG_INFO("disruption",
                    done ? "command settled: its pods have a place again"
                         : "command still settling; deciding again",
                    CARP_F_DURATION("waited", now - d->deleted_ms));
      carp__dis_cmd_free(d);
    }
  }
  return 0;
}
