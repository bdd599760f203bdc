/* drain.c: emptying a Node of its pods, as Karpenter's terminator does.
 *
 * Each reconcile looks at the pods the cache has on the Node and sorts
 * them: left alone (mirror and DaemonSet pods go with the Node, finished
 * pods are done, pods tolerating karpenter.sh/disrupted chose to stay,
 * pods stuck terminating for over a minute will never leave), waited for
 * (already terminating), or to be evicted. Ordinary pods are evicted
 * first; critical ones only once no ordinary pod is left. Evictions run
 * beside the reconcile, one per pod at a time, with per-pod backoff from
 * 100 ms doubling to 10 s (with jitter) when refused; an answer a retry
 * cannot fix (400 - a server without policy/v1 Eviction -, 422, a 404 that
 * names no pod) waits three minutes and raises FailedDraining.
 *
 * The deadline (the NodeClaim's terminationGracePeriod) overrides all of
 * that: a pod still there at the deadline minus its own grace period is
 * deleted outright, with its grace cut to what is left. Nothing is deleted
 * before that point - a drain only ever evicts - so no PodDisruptionBudget
 * is ever violated before the deadline. */
#include <inttypes.h>
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

#define EVICT_BASE_MS        100
#define EVICT_MAX_MS         10000
#define STUCK_TERMINATING_MS 60000
#define FAILED_EVENT_MS      30000
#define DRAIN_POLL_MS        1000
#define EVICTED_RECHECK_MS   5000
#define EVICT_REFUSED_MS     (3 * 60 * 1000) /* a retry cannot fix it */

/* ---- pure helpers ---- */

int carp_pod_do_not_disrupt(const struct carp_pod *p, int64_t now_ms)
{
  const char *v = carp_kvset_get(p->meta.annotations, CARP_ANN_DO_NOT_DISRUPT);
  int64_t d;
  if (!v)
    return 0;
  if (!strcmp(v, "true"))
    return 1;
  /* A duration: protected for that long after the pod started running. */
  if (carp_duration_parse(v, 0, &d))
    return 0;
  if (!p->start_ms)
    return 1;
  return now_ms < p->start_ms + d;
}

int carp_pod_tolerates_disrupted(const struct carp_pod *p)
{
  struct carp_taint taint = {.key = CARP_TAINT_DISRUPTED,
                             .value = "",
                             .effect = CARP_EFFECT_NO_SCHEDULE};
  uint32_t i;
  if (!p->spec)
    return 0;
  for (i = 0; i < p->spec->ntolerations; i++)
    if (carp_toleration_tolerates(&p->spec->tolerations[i], &taint))
      return 1;
  return 0;
}

enum carp_drain_class carp_drain_classify(const struct carp_pod *p,
                                          int64_t now_ms)
{
  if (carp_pod_is_mirror(p) || carp_pod_is_daemon(p) ||
      carp_pod_is_terminal(p) || carp_pod_tolerates_disrupted(p))
    return CARP_DRAIN_IGNORE;
  if (p->meta.deletion_ms) {
    /* deletionTimestamp is when the kubelet should have killed it. */
    if (now_ms - p->meta.deletion_ms > STUCK_TERMINATING_MS)
      return CARP_DRAIN_IGNORE;
    return CARP_DRAIN_TERMINATING;
  }
  return CARP_DRAIN_EVICT;
}

int carp_drain_tier(const struct carp_pod *p)
{
  return carp_pod_is_critical(p) ? 1 : 0;
}

int64_t carp_drain_force_at(const struct carp_pod *p, int64_t deadline_ms)
{
  int64_t grace;
  if (deadline_ms == CARP_DURATION_NEVER)
    return CARP_DURATION_NEVER;
  grace = p->spec && p->spec->grace_seconds >= 0 ? p->spec->grace_seconds : 30;
  return deadline_ms - grace * 1000;
}

/* ---- per-pod memory ---- */

static void pod_free(struct pod_drain *d)
{
  carp_free(d->uid);
  carp_free(d->ns);
  carp_free(d->name);
  carp_free(d);
}

static struct pod_drain *pod_mem(struct node_mem *m, const struct carp_pod *p)
{
  struct pod_drain *d = carp_map_gets(&m->pods, p->meta.uid);
  if (d)
    return d;
  d = CARP_NEW(struct pod_drain);
  carp_retry_init(&d->retry, EVICT_BASE_MS, EVICT_MAX_MS);
  carp_retry_init(&d->del_retry, 1000, EVICT_MAX_MS);
  d->uid = carp_strdup(p->meta.uid);
  d->ns = carp_strdup(p->meta.namespace ? p->meta.namespace : "");
  d->name = carp_strdup(p->meta.name);
  carp_map_puts(&m->pods, d->uid, d);
  return d;
}

void carp__term_pods_free(struct node_mem *m)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&m->pods, &it, NULL, NULL, &v))
    pod_free(v);
  carp_map_free(&m->pods);
}

void carp__term_drain_cancel(struct node_mem *m)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&m->pods, &it, NULL, NULL, &v)) {
    struct pod_drain *d = v;
    if (d->evict)
      carp_kube_cancel(d->evict);
  }
}

/* Forgets pods that left the node and have nothing in flight. */
static void prune(struct node_mem *m)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&m->pods, &it, NULL, NULL, &v)) {
    struct pod_drain *d = v;
    if (d->seen || d->evict || d->deleting)
      continue;
    carp_map_dels(&m->pods, d->uid);
    pod_free(d);
  }
}

/* ---- evictions ---- */

struct evict_ctx {
  struct carp_termination *t;
  struct node_mem *m;
  struct pod_drain *d;
  char *reason; /* the drain's reason, for events and metrics */
};

static const char *drain_reason(const struct carp_nodeclaim *nc)
{
  const struct carp_condition *c =
      nc ? carp_conditions_get(&nc->status.conditions,
                               CARP_COND_DISRUPTION_REASON)
         : NULL;
  if (c && c->status == CARP_COND_TRUE && c->reason && *c->reason)
    return c->reason;
  return "Forceful Termination";
}

static void count_code(struct carp_termination *t, long status)
{
  char code[24];
  if (status <= 0)
    return;
  /* Karpenter counts a successful eviction (201) as "200". */
  snprintf(code, sizeof(code), "%ld",
           status >= 200 && status < 300 ? 200L : status);
  carp_metric_add(t->m_evictions, CARP_VALUES(code), 1);
}

static void on_evicted(const struct carp_kube_result *res, void *arg)
{
  struct evict_ctx *e = arg;
  struct carp_termination *t = e->t;
  struct node_mem *m = e->m;
  struct pod_drain *d = e->d;
  int64_t now = carp__term_now(t);

  d->evict = NULL;
  count_code(t, res->status);
  if (!res->err) {
    carp_retry_reset(&d->retry);
    struct carp_event_target tg = {.api_version = "v1",
                                   .kind = "Pod",
                                   .namespace = d->ns,
                                   .name = d->name,
                                   .uid = d->uid};
    /* Give the cache time to show the pod terminating before another
     * eviction (one would be harmless, but noise). */
    d->next_ms = now + EVICTED_RECHECK_MS;
    CARP_LOG_INFO("termination", "evicted pod", CARP_F_STR("node", m->name),
                  CARP_F_STR("namespace", d->ns), CARP_F_STR("pod", d->name));
    if (t->base.env.recorder)
      carp_recorder_event(t->base.env.recorder, &tg, CARP_EVENT_NORMAL,
                          "Evicted", "Evicted pod: Deleting the node (%s)",
                          e->reason);
    carp_metric_add(t->m_pods_drained, CARP_VALUES(e->reason), 1);
  } else if ((res->err == CARP_ENOTFOUND && !carp_kube_error_permanent(res)) ||
             res->err == CARP_ECONFLICT) {
    /* Gone, or not the pod we meant: nothing to evict. */
    carp_retry_reset(&d->retry);
  } else if (res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER) {
    int permanent = carp_kube_error_permanent(res);
    uint64_t delay =
        permanent ? carp_retry_fail_permanent(&d->retry, now, EVICT_REFUSED_MS)
                  : carp_retry_fail(&d->retry, now);
    d->next_ms = d->retry.next_ms;
    if (permanent) {
      /* The API server cannot evict at all (an Eviction kind it does not
       * serve, a request it rejects): trying every few seconds changes
       * nothing, so minutes apart, and say so on the Node. */
      CARP_LOG_FOLDED(&t->fold, m->name, CARP_LOG_WARN, "termination",
                      "eviction refused by the API server, a retry cannot "
                      "fix it",
                      CARP_F_STR("node", m->name),
                      CARP_F_STR("namespace", d->ns),
                      CARP_F_STR("pod", d->name), CARP_F_ERR(res->err),
                      CARP_F_INT("status", res->status),
                      CARP_F_STR("message", res->message),
                      CARP_F_DURATION("retry_in", delay));
      if (!m->dropped) {
        const struct carp_node *node =
            carp_cluster_node(t->base.env.cluster, m->name);
        m->failed_event_ms = now;
        if (node)
          carp_controller_event(
              &t->base, &node->meta, "v1", CARP_EVENT_WARNING, "FailedDraining",
              "Failed to drain node, the API server refused to "
              "evict pod %s/%s (%ld: %s); retrying every few "
              "minutes until the termination deadline",
              d->ns, d->name, res->status, res->message);
      }
    } else if (res->err == CARP_ETOOMANY) {
      CARP_LOG_FOLDED(
          &t->fold, d->uid, CARP_LOG_INFO, "termination",
          "eviction refused by a disruption budget",
          CARP_F_STR("node", m->name), CARP_F_STR("namespace", d->ns),
          CARP_F_STR("pod", d->name), CARP_F_DURATION("retry_in", delay));
      if (now - m->failed_event_ms >= FAILED_EVENT_MS && !m->dropped) {
        const struct carp_node *node =
            carp_cluster_node(t->base.env.cluster, m->name);
        m->failed_event_ms = now;
        if (node)
          carp_controller_event(&t->base, &node->meta, "v1", CARP_EVENT_WARNING,
                                "FailedDraining",
                                "Failed to drain node, evicting pod violates a "
                                "PDB (Pod=%s/%s)",
                                d->ns, d->name);
      }
    } else {
      CARP_LOG_FOLDED(
          &t->fold, d->uid, CARP_LOG_WARN, "termination",
          "eviction failed, will retry", CARP_F_STR("node", m->name),
          CARP_F_STR("namespace", d->ns), CARP_F_STR("pod", d->name),
          CARP_F_ERR(res->err), CARP_F_STR("message", res->message),
          CARP_F_DURATION("retry_in", delay));
    }
  }
  if (!m->dropped)
    carp_controller_enqueue_after(
        &t->base, m->name,
        res->err ? (uint64_t)(d->next_ms > now ? d->next_ms - now : 0) : 0);
  carp_free(e->reason);
  carp_free(e);
  carp__term_mem_release(t, m);
}

static void evict(struct carp_termination *t, struct node_mem *m,
                  struct pod_drain *d, const char *reason)
{
  struct carp_kube_ref ref = {.version = "v1",
                              .resource = "pods",
                              .namespace = d->ns,
                              .name = d->name,
                              .subresource = "eviction"};
  struct carp_kube_request r;
  struct carp_buf path, body;
  struct carp_jw w;
  struct evict_ctx *e;
  int rc;

  carp_buf_init(&path, 4096);
  carp_buf_init(&body, 4096);
  carp_kube_path(&path, &ref);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", "policy/v1");
  carp_jw_kstr(&w, "kind", "Eviction");
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "name", d->name);
  carp_jw_kstr(&w, "namespace", d->ns);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "deleteOptions");
  carp_jw_obj(&w);
  carp_jw_key(&w, "preconditions");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "uid", d->uid);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  rc = carp_jw_finish(&w);
  if (!rc) {
    memset(&r, 0, sizeof(r));
    r.method = "POST";
    r.path = carp_buf_cstr(&path);
    r.content_type = "application/json";
    r.body = body.ptr;
    r.body_len = body.len;
    /* A second eviction of the same pod finds it gone or terminating. */
    r.idempotent = 1;
    e = CARP_NEW(struct evict_ctx);
    e->t = t;
    e->m = m;
    e->d = d;
    e->reason = carp_strdup(reason);
    carp_controller_hold(&t->base);
    m->busy++;
    rc = carp_kube_call(t->base.env.kube, &r, on_evicted, e, &d->evict);
    if (rc) {
      d->evict = NULL;
      carp_controller_release(&t->base);
      m->busy--;
      carp_free(e->reason);
      carp_free(e);
      carp_retry_fail(&d->retry, carp__term_now(t));
      d->next_ms = d->retry.next_ms;
    }
  }
  carp_buf_free(&path);
  carp_buf_free(&body);
}

/* ---- deadline deletes ---- */

struct delete_ctx {
  struct carp_termination *t;
  struct node_mem *m;
  struct pod_drain *d;
};

static void on_pod_deleted(const struct carp_kube_result *res, void *arg)
{
  struct delete_ctx *c = arg;
  struct carp_termination *t = c->t;
  struct node_mem *m = c->m;
  uint64_t after = 0;
  c->d->deleting = 0;
  if (!res->err || res->err == CARP_ENOTFOUND || res->err == CARP_ECONFLICT) {
    c->d->deleted = 1;
  } else if (res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER) {
    after = carp_retry_fail(&c->d->del_retry, carp__term_now(t));
    CARP_LOG_FOLDED(
        &t->fold, c->d->uid, CARP_LOG_WARN, "termination",
        "deleting pod failed, will retry", CARP_F_STR("node", m->name),
        CARP_F_STR("namespace", c->d->ns), CARP_F_STR("pod", c->d->name),
        CARP_F_ERR(res->err), CARP_F_STR("message", res->message),
        CARP_F_DURATION("retry_in", after));
  }
  if (!m->dropped)
    carp_controller_enqueue_after(&t->base, m->name, after);
  carp_free(c);
  carp__term_mem_release(t, m);
}

static void force_delete(struct carp_termination *t, struct node_mem *m,
                         struct pod_drain *d, const struct carp_pod *p,
                         int64_t deadline_ms, int64_t now)
{
  struct carp_kube_ref ref = {
      .version = "v1", .resource = "pods", .namespace = d->ns, .name = d->name};
  struct carp_kube_delete_options o = {.uid = d->uid};
  struct carp_event_target tg = carp_event_target_of(&p->meta, "v1");
  struct delete_ctx *c;
  char when[CARP_RFC3339_LEN];
  int64_t left = (deadline_ms - now) / 1000;
  int64_t own =
      p->spec && p->spec->grace_seconds >= 0 ? p->spec->grace_seconds : 30;
  if (left < 0)
    left = 0;
  o.grace_seconds = left < own ? left : own;
  carp_time_format_rfc3339(deadline_ms, 0, when);
  CARP_LOG_INFO("termination", "deleting pod at the termination deadline",
                CARP_F_STR("node", m->name), CARP_F_STR("namespace", d->ns),
                CARP_F_STR("pod", d->name), CARP_F_STR("deadline", when),
                CARP_F_INT("grace_seconds", o.grace_seconds));
  if (t->base.env.recorder)
    carp_recorder_event(
        t->base.env.recorder, &tg, CARP_EVENT_NORMAL, "Disrupted",
        "Deleting the pod to accommodate the terminationTime %s of the node. "
        "The pod was granted %" PRId64
        " seconds of grace-period of its %" PRId64
        " terminationGracePeriodSeconds. This bypasses the PDB of the pod and "
        "the do-not-disrupt annotation.",
        when, o.grace_seconds, own);
  c = CARP_NEW(struct delete_ctx);
  c->t = t;
  c->m = m;
  c->d = d;
  carp_controller_hold(&t->base);
  m->busy++;
  d->deleting = 1;
  if (carp_kube_delete(t->base.env.kube, &ref, &o, on_pod_deleted, c)) {
    d->deleting = 0;
    carp_controller_release(&t->base);
    m->busy--;
    carp_free(c);
  }
}

/* ---- the drain ---- */

size_t carp__term_drain(struct carp_termination *t, struct node_mem *m,
                        const struct carp_node *node,
                        const struct carp_nodeclaim *nc, int64_t deadline_ms,
                        uint64_t *retry_ms)
{
  struct carp_objmeta *const *pods;
  size_t n, i, left = 0, blocked = 0, tier_left[2] = {0, 0};
  int64_t now = carp__term_now(t), wake = now + DRAIN_POLL_MS;
  const char *reason = drain_reason(nc);
  int tier;
  struct carp_map_iter it;
  void *v;

  carp_map_iter_init(&it);
  while (carp_map_next(&m->pods, &it, NULL, NULL, &v))
    ((struct pod_drain *)v)->seen = 0;

  pods = carp_cluster_pods_on_node(t->base.env.cluster, node->meta.name, &n);
  /* Pass 1: what is left, per tier, and the deadline deletes. */
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    enum carp_drain_class cls = carp_drain_classify(p, now);
    struct pod_drain *d;
    if (cls == CARP_DRAIN_IGNORE)
      continue;
    left++;
    tier_left[carp_drain_tier(p)]++;
    d = pod_mem(m, p);
    d->seen = 1;
    if (cls != CARP_DRAIN_EVICT)
      continue;
    if (deadline_ms != CARP_DURATION_NEVER &&
        now >= carp_drain_force_at(p, deadline_ms)) {
      if (!d->deleting && !d->deleted && !carp_retry_wait(&d->del_retry, now))
        force_delete(t, m, d, p, deadline_ms, now);
      continue;
    }
  }
  /* Pass 2: evict the first tier that still has pods. */
  tier = tier_left[0] ? 0 : 1;
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    struct pod_drain *d;
    if (carp_drain_classify(p, now) != CARP_DRAIN_EVICT ||
        carp_drain_tier(p) != tier)
      continue;
    d = carp_map_gets(&m->pods, p->meta.uid);
    if (!d || d->deleting || d->deleted || d->evict)
      continue;
    if (carp_pod_do_not_disrupt(p, now)) {
      blocked++;
      continue;
    }
    if (d->next_ms > now) {
      if (d->next_ms < wake)
        wake = d->next_ms;
      continue;
    }
    evict(t, m, d, reason);
  }
  prune(m);
  if (blocked && now - m->failed_event_ms >= FAILED_EVENT_MS) {
    m->failed_event_ms = now;
    carp_controller_event(
        &t->base, &node->meta, "v1", CARP_EVENT_WARNING, "FailedDraining",
        "Failed to drain node, %zu pods have the %s annotation "
        "and wait for the termination deadline",
        blocked, CARP_ANN_DO_NOT_DISRUPT);
  }
  *retry_ms = wake > now ? (uint64_t)(wake - now) : 0;
  if (deadline_ms != CARP_DURATION_NEVER && deadline_ms > now &&
      (uint64_t)(deadline_ms - now) < *retry_ms)
    *retry_ms = (uint64_t)(deadline_ms - now);
  return left;
}
