/* conditions.c: operatorpkg's status condition metrics (its status
 * controller, which Karpenter runs for NodeClaims and NodePools and the
 * AWS provider for its NodeClass), for Carpenter's NodePools, NodeClaims
 * and ProxmoxNodeClasses:
 *
 *   operator_status_condition_count                 one series per object
 *   operator_status_condition_current_status_seconds  and condition
 *       {namespace, name, group, kind, type, status, reason}: 1, and the
 *       time since the condition's lastTransitionTime
 *   operator_status_condition_transitions_total     counter {group, kind,
 *       type, status, reason}: a condition seen with a new status (or new)
 *   operator_status_condition_transition_seconds    histogram {group, kind,
 *       type, status}: how long the condition had its previous status
 *
 * The two gauges are streamed from the caches at scrape time (an object
 * that is gone has no series left, as operatorpkg deletes them). The
 * transitions come from informer updates, compared with the object's
 * previous state, while this replica leads (operatorpkg's controller runs
 * on the leader and compares with what it saw last). */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/conditions.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"
#include "metricsctl_int.h"

enum { K_NODEPOOL, K_NODECLAIM, K_NODECLASS, K_COUNT };

static const struct {
  const char *group, *kind;
} kinds[K_COUNT] = {
    [K_NODEPOOL] = {"karpenter.sh", "NodePool"},
    [K_NODECLAIM] = {"karpenter.sh", "NodeClaim"},
    [K_NODECLASS] = {"carpenter.dev", "ProxmoxNodeClass"},
};

/* Prometheus's default buckets: operatorpkg's histogram sets none. */
static const double default_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5,   1,    2.5,   5,    10};

static const struct carp_conditions *conditions_of(int kind,
                                                   const struct carp_objmeta *o)
{
  switch (kind) {
  case K_NODEPOOL:
    return &((const struct carp_nodepool *)o)->status.conditions;
  case K_NODECLAIM:
    return &((const struct carp_nodeclaim *)o)->status.conditions;
  default:
    return &((const struct carp_nodeclass *)o)->status.conditions;
  }
}

static struct carp_informer *informer_of(struct carp_metricsctl *m, int kind)
{
  switch (kind) {
  case K_NODEPOOL:
    return m->cluster->nodepools;
  case K_NODECLAIM:
    return m->cluster->nodeclaims;
  default:
    return m->cluster->nodeclasses;
  }
}

/* One sample per condition of every cached object; current: the seconds
 * since its last transition (conditions without one have none), else 1. */
static void stream_conditions(struct carp_metric_writer *w,
                              struct carp_metricsctl *m, int current)
{
  int64_t now = carp_controller_now(&m->base);
  int k;
  for (k = 0; k < K_COUNT; k++) {
    struct carp_informer *inf = informer_of(m, k);
    struct carp_store_iter it;
    struct carp_objmeta *o;
    if (!inf)
      continue;
    carp_store_iter_init(&it);
    while ((o = carp_store_next(carp_informer_store(inf), &it))) {
      const struct carp_conditions *cs = conditions_of(k, o);
      uint32_t i;
      for (i = 0; i < cs->n; i++) {
        const struct carp_condition *c = &cs->items[i];
        const char *v[] = {o->namespace ? o->namespace : "",
                           o->name,
                           kinds[k].group,
                           kinds[k].kind,
                           c->type,
                           carp_cond_status_name(c->status),
                           c->reason ? c->reason : "",
                           NULL};
        if (!current)
          carp_metric_writer_sample(w, v, 1);
        else if (c->transition_ms)
          carp_metric_writer_sample(w, v,
                                    (double)(now - c->transition_ms) / 1000.0);
      }
    }
  }
}

static void stream_count(struct carp_metric_writer *w, void *arg)
{
  stream_conditions(w, arg, 0);
}

static void stream_current(struct carp_metric_writer *w, void *arg)
{
  stream_conditions(w, arg, 1);
}

/* Compares an object's conditions with its previous state (old NULL: an
 * object created while this replica leads, every condition new). */
static void transitions(struct carp_metricsctl *m, int kind,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  const struct carp_conditions *now, *before;
  uint32_t i;
  if (deleted)
    return;
  now = conditions_of(kind, obj);
  before = old ? conditions_of(kind, old) : NULL;
  for (i = 0; i < now->n; i++) {
    const struct carp_condition *c = &now->items[i];
    const struct carp_condition *was =
        before ? carp_conditions_get(before, c->type) : NULL;
    if (was && was->status == c->status)
      continue;
    carp_metric_add(m->m_cond_transitions,
                    CARP_VALUES(kinds[kind].group, kinds[kind].kind, c->type,
                                carp_cond_status_name(c->status),
                                c->reason ? c->reason : ""),
                    1);
    if (was && c->transition_ms >= was->transition_ms && was->transition_ms)
      carp_metric_observe(
          m->m_cond_durations,
          CARP_VALUES(kinds[kind].group, kinds[kind].kind, was->type,
                      carp_cond_status_name(was->status)),
          (double)(c->transition_ms - was->transition_ms) / 1000.0);
  }
}

static void on_nodepool(struct carp_controller *c,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  transitions(MCTL(c), K_NODEPOOL, old, obj, deleted);
}

static void on_nodeclaim(struct carp_controller *c,
                         const struct carp_objmeta *old,
                         const struct carp_objmeta *obj, int deleted)
{
  transitions(MCTL(c), K_NODECLAIM, old, obj, deleted);
}

static void on_nodeclass(struct carp_controller *c,
                         const struct carp_objmeta *old,
                         const struct carp_objmeta *obj, int deleted)
{
  transitions(MCTL(c), K_NODECLASS, old, obj, deleted);
}

void carp__mctl_conditions_register(struct carp_metricsctl *m)
{
  struct carp_metrics *r = m->base.env.metrics;
  carp__mctl_stream(
      m, "operator_status_condition_count",
      "The number of an condition for a given object, type and status. e.g. "
      "Alarm := Available=False > 0",
      CARP_LABELS("namespace", "name", "group", "kind", "type", "status",
                  "reason"),
      stream_count);
  carp__mctl_stream(
      m, "operator_status_condition_current_status_seconds",
      "The current amount of time in seconds that a status condition has "
      "been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes",
      CARP_LABELS("namespace", "name", "group", "kind", "type", "status",
                  "reason"),
      stream_current);
  m->m_cond_transitions = carp_metrics_counter(
      r, "operator_status_condition_transitions_total",
      "The count of transitions of a given object, type and status.",
      CARP_LABELS("group", "kind", "type", "status", "reason"));
  m->m_cond_durations = carp_metrics_histogram(
      r, "operator_status_condition_transition_seconds",
      "The amount of time a condition was in a given state before "
      "transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes",
      CARP_LABELS("group", "kind", "type", "status"), default_buckets,
      CARP_ARRAY_LEN(default_buckets));
  if (m->cluster->nodepools)
    carp_controller_watch(&m->base, m->cluster->nodepools, on_nodepool);
  if (m->cluster->nodeclaims)
    carp_controller_watch(&m->base, m->cluster->nodeclaims, on_nodeclaim);
  if (m->cluster->nodeclasses)
    carp_controller_watch(&m->base, m->cluster->nodeclasses, on_nodeclass);
}
