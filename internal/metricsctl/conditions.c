/* conditions.c: operatorpkg's status condition and termination metrics
 * (its status controller), as Karpenter v1.14 configures it, for
 * Carpenter's NodePools, NodeClaims, Nodes, ProxmoxNodeClasses and
 * CapacityBuffers.
 *
 * Each kind has its own families, operator_<kind>_status_condition_*
 * (<kind> lower case):
 *
 *   _count, _current_status_seconds   one series per object and condition
 *       {namespace, name, type, status, reason, extra labels}: 1, and the
 *       time since the condition's lastTransitionTime
 *   _transitions_total   counter {type, status, reason, extra labels}: a
 *       condition seen with a new status (or new)
 *   _transition_seconds  histogram {type, status, extra labels}: how long
 *       the condition had its previous status
 *
 * The extra labels are object labels (operatorpkg's WithLabels, the key
 * with '/', '.' and '-' made '_'): Karpenter gives NodeClaims the
 * NodeClass label and the NodePool label; the other kinds have none. The
 * histogram's buckets are ExponentialBuckets(0.5, 2, 15) (0.5 s ... 8192 s)
 * where Karpenter sets them (NodePool, NodeClaim, CapacityBuffer) and
 * Prometheus's defaults for the NodeClass (the AWS provider sets none).
 *
 * Every kind also goes into the kind-independent families
 * operator_status_condition_* {group, kind} (operatorpkg's
 * EmitDeprecatedMetrics, which Karpenter and the AWS provider set), whose
 * histogram always has Prometheus's default buckets.
 *
 * The gauges are streamed from the caches at scrape time (an object that
 * is gone has no series left, as operatorpkg deletes them). The
 * transitions come from informer updates, compared with the object's
 * previous state, while this replica leads (operatorpkg's controller runs
 * on the leader and compares with what it saw last).
 *
 * Nodes have the per-kind families only (Karpenter does not set
 * EmitDeprecatedMetrics for them), with the NodeClass, NodePool and
 * initialized labels, from every condition the Node cache keeps.
 *
 * The same controller's termination metrics, for every kind:
 *
 *   operator_<kind>_termination_current_time_seconds {namespace, name,
 *       extra labels}: time since the object's deletionTimestamp, while it
 *       is terminating (streamed from the caches)
 *   operator_<kind>_termination_duration_seconds {extra labels}: from the
 *       deletionTimestamp to the object gone, for an object this replica
 *       saw terminating while it led (the kind's buckets)
 *
 * and their kind-independent copies operator_termination_* {group, kind}
 * for the kinds with EmitDeprecatedMetrics. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/capacitybuffer.h"
#include "carpenter/conditions.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"
#include "metricsctl_int.h"

enum { K_NODEPOOL, K_NODECLAIM, K_NODECLASS, K_BUFFER, K_NODE, K_COUNT };
_Static_assert(K_COUNT == MCTL_COND_KINDS, "one cond_kinds slot per kind");

#define MAX_EXTRA 3

static const struct {
  const char *group, *kind;
  const char *lower; /* the per-kind families' <kind> */
  /* Object labels added as metric labels (operatorpkg's WithLabels). */
  const char *extra[MAX_EXTRA + 1];
  int exponential; /* ExponentialBuckets(0.5, 2, 15), else the defaults */
  int deprecated;  /* EmitDeprecatedMetrics: also operator_status_* */
} kinds[K_COUNT] = {
    [K_NODEPOOL] = {"karpenter.sh", "NodePool", "nodepool", {NULL}, 1, 1},
    [K_NODECLAIM] = {"karpenter.sh",
                     "NodeClaim",
                     "nodeclaim",
                     {CARP_LABEL_NODECLASS_KEY, CARP_LABEL_NODEPOOL_KEY, NULL},
                     1,
                     1},
    [K_NODECLASS] =
        {"carpenter.dev", "ProxmoxNodeClass", "proxmoxnodeclass", {NULL}, 0, 1},
    [K_BUFFER] = {"autoscaling.x-k8s.io",
                  "CapacityBuffer",
                  "capacitybuffer",
                  {NULL},
                  1,
                  1},
    [K_NODE] = {"",
                "Node",
                "node",
                {CARP_LABEL_NODECLASS_KEY, CARP_LABEL_NODEPOOL_KEY,
                 CARP_LABEL_INITIALIZED, NULL},
                1,
                0},
};

/* One condition, whichever way its kind keeps it. */
struct cond {
  const char *type, *reason;
  enum carp_cond_status status;
  int64_t transition_ms;
};

/* Prometheus's default buckets: operatorpkg's when none are given. */
static const double default_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5,   1,    2.5,   5,    10};

#define HELP_COUNT                                                             \
  "The number of a condition for a given object, type and status. e.g. "       \
  "Alarm := Available=False > 0"
#define HELP_CURRENT                                                           \
  "The current amount of time in seconds that a status condition has been "    \
  "in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes"
#define HELP_TRANSITIONS                                                       \
  "The count of transitions of a given object, type and status."
#define HELP_DURATION                                                          \
  "The amount of time a condition was in a given state before "                \
  "transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes"
#define HELP_TERMINATING                                                       \
  "The current amount of time in seconds that an object has been in "          \
  "terminating state."
#define HELP_TERMINATED                                                        \
  "The amount of time taken by an object to terminate completely."

static const struct carp_conditions *conditions_of(int kind,
                                                   const struct carp_objmeta *o)
{
  switch (kind) {
  case K_NODEPOOL:
    return &((const struct carp_nodepool *)o)->status.conditions;
  case K_NODECLAIM:
    return &((const struct carp_nodeclaim *)o)->status.conditions;
  case K_NODECLASS:
    return &((const struct carp_nodeclass *)o)->status.conditions;
  default:
    return &((const struct carp_capacitybuffer *)o)->status.conditions;
  }
}

/* The object's i-th condition; 0 past the last. */
static int cond_at(int kind, const struct carp_objmeta *o, size_t i,
                   struct cond *out)
{
  const struct carp_conditions *cs;
  if (kind == K_NODE) {
    struct carp_node_cond nc;
    if (!carp_node_condition_at((const struct carp_node *)o, i, &nc))
      return 0;
    out->type = nc.type;
    out->reason = nc.reason;
    out->status = nc.status > 0    ? CARP_COND_TRUE
                  : nc.status == 0 ? CARP_COND_FALSE
                                   : CARP_COND_UNKNOWN;
    out->transition_ms = nc.transition_ms;
    return 1;
  }
  cs = conditions_of(kind, o);
  if (i >= cs->n)
    return 0;
  out->type = cs->items[i].type;
  out->reason = cs->items[i].reason ? cs->items[i].reason : "";
  out->status = cs->items[i].status;
  out->transition_ms = cs->items[i].transition_ms;
  return 1;
}

/* The object's condition of that type; 0 when it has none. */
static int cond_get(int kind, const struct carp_objmeta *o, const char *type,
                    struct cond *out)
{
  size_t i;
  for (i = 0; cond_at(kind, o, i, out); i++)
    if (!strcmp(out->type, type))
      return 1;
  return 0;
}

static struct carp_informer *informer_of(struct carp_metricsctl *m, int kind)
{
  switch (kind) {
  case K_NODEPOOL:
    return m->cluster->nodepools;
  case K_NODECLAIM:
    return m->cluster->nodeclaims;
  case K_NODECLASS:
    return m->cluster->nodeclasses;
  case K_NODE:
    return m->cluster->nodes;
  default:
    return m->cluster->capacitybuffers;
  }
}

/* The extra labels' values for o: its labels ("" when it has none). */
static void extra_values(int kind, const struct carp_objmeta *o, const char **v)
{
  int i;
  for (i = 0; kinds[kind].extra[i]; i++) {
    const char *x = carp_kvset_get(o->labels, kinds[kind].extra[i]);
    v[i] = x ? x : "";
  }
  v[i] = NULL;
}

/* The informer of kind k when a stream of only (a kind, or K_COUNT: the
 * kind-independent families) covers it, else NULL. */
static struct carp_informer *streamed(struct carp_metricsctl *m, int k,
                                      int only)
{
  if (only == K_COUNT ? !kinds[k].deprecated : only != k)
    return NULL;
  return informer_of(m, k);
}

/* One sample per condition of every cached object of kind (K_COUNT: of
 * every kind, in the kind-independent families); current: the seconds
 * since its last transition (conditions without one have none), else 1. */
static void stream_conditions(struct carp_metric_writer *w,
                              struct carp_metricsctl *m, int only, int current)
{
  int64_t now = carp_controller_now(&m->base);
  int k;
  for (k = 0; k < K_COUNT; k++) {
    struct carp_informer *inf = streamed(m, k, only);
    struct carp_store_iter it;
    struct carp_objmeta *o;
    if (!inf)
      continue;
    carp_store_iter_init(&it);
    while ((o = carp_store_next(carp_informer_store(inf), &it))) {
      struct cond c;
      const char *v[7 + MAX_EXTRA + 1];
      size_t i;
      v[0] = o->namespace ? o->namespace : "";
      v[1] = o->name;
      if (only == K_COUNT) {
        v[2] = kinds[k].group;
        v[3] = kinds[k].kind;
        v[7] = NULL;
      } else {
        extra_values(k, o, &v[5]);
      }
      for (i = 0; cond_at(k, o, i, &c); i++) {
        const char **tsr = only == K_COUNT ? &v[4] : &v[2];
        tsr[0] = c.type;
        tsr[1] = carp_cond_status_name(c.status);
        tsr[2] = c.reason;
        if (!current)
          carp_metric_writer_sample(w, v, 1);
        else if (c.transition_ms)
          carp_metric_writer_sample(w, v,
                                    (double)(now - c.transition_ms) / 1000.0);
      }
    }
  }
}

static void stream_count(struct carp_metric_writer *w, void *arg)
{
  stream_conditions(w, arg, K_COUNT, 0);
}

static void stream_current(struct carp_metric_writer *w, void *arg)
{
  stream_conditions(w, arg, K_COUNT, 1);
}

static void stream_kind_count(struct carp_metric_writer *w, void *arg)
{
  struct carp_mctl_cond_kind *ck = arg;
  stream_conditions(w, ck->m, ck->kind, 0);
}

static void stream_kind_current(struct carp_metric_writer *w, void *arg)
{
  struct carp_mctl_cond_kind *ck = arg;
  stream_conditions(w, ck->m, ck->kind, 1);
}

/* Streams each terminating object's seconds since its deletionTimestamp
 * (only == K_COUNT: every kind with the kind-independent family). */
static void stream_terminating(struct carp_metric_writer *w,
                               struct carp_metricsctl *m, int only)
{
  int64_t now = carp_controller_now(&m->base);
  int k;
  for (k = 0; k < K_COUNT; k++) {
    struct carp_informer *inf = streamed(m, k, only);
    struct carp_store_iter it;
    struct carp_objmeta *o;
    if (!inf)
      continue;
    carp_store_iter_init(&it);
    while ((o = carp_store_next(carp_informer_store(inf), &it))) {
      const char *v[4 + MAX_EXTRA + 1];
      if (!o->deletion_ms)
        continue;
      v[0] = o->namespace ? o->namespace : "";
      v[1] = o->name;
      if (only == K_COUNT) {
        v[2] = kinds[k].group;
        v[3] = kinds[k].kind;
        v[4] = NULL;
      } else {
        extra_values(k, o, &v[2]);
      }
      carp_metric_writer_sample(w, v, (double)(now - o->deletion_ms) / 1000.0);
    }
  }
}

static void stream_term_current(struct carp_metric_writer *w, void *arg)
{
  stream_terminating(w, arg, K_COUNT);
}

static void stream_kind_term_current(struct carp_metric_writer *w, void *arg)
{
  struct carp_mctl_cond_kind *ck = arg;
  stream_terminating(w, ck->m, ck->kind);
}

/* An object gone: the time it took from its deletionTimestamp, when its
 * last state known had one (operatorpkg observes objects it saw
 * terminating). */
static void terminated(struct carp_metricsctl *m, int kind,
                       const struct carp_objmeta *obj)
{
  const char *v[MAX_EXTRA + 1];
  double s;
  if (!obj->deletion_ms)
    return;
  s = (double)(carp_controller_now(&m->base) - obj->deletion_ms) / 1000.0;
  if (s < 0)
    s = 0;
  extra_values(kind, obj, v);
  carp_metric_observe(m->cond_kinds[kind].terminations, v, s);
  if (kinds[kind].deprecated)
    carp_metric_observe(m->m_term_durations,
                        CARP_VALUES(kinds[kind].group, kinds[kind].kind), s);
}

/* Compares an object's conditions with its previous state (old NULL: an
 * object created while this replica leads, every condition new). */
static void transitions(struct carp_metricsctl *m, int kind,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  const struct carp_mctl_cond_kind *ck = &m->cond_kinds[kind];
  const char *v[5 + MAX_EXTRA + 1];
  struct cond c, was;
  size_t i;
  if (deleted) {
    terminated(m, kind, obj);
    return;
  }
  for (i = 0; cond_at(kind, obj, i, &c); i++) {
    int had = old && cond_get(kind, old, c.type, &was);
    const char *status = carp_cond_status_name(c.status);
    if (had && was.status == c.status)
      continue;
    if (kinds[kind].deprecated)
      carp_metric_add(m->m_cond_transitions,
                      CARP_VALUES(kinds[kind].group, kinds[kind].kind, c.type,
                                  status, c.reason),
                      1);
    v[0] = c.type;
    v[1] = status;
    v[2] = c.reason;
    extra_values(kind, obj, &v[3]);
    carp_metric_add(ck->transitions, v, 1);
    if (had && c.transition_ms >= was.transition_ms && was.transition_ms) {
      double s = (double)(c.transition_ms - was.transition_ms) / 1000.0;
      if (kinds[kind].deprecated)
        carp_metric_observe(m->m_cond_durations,
                            CARP_VALUES(kinds[kind].group, kinds[kind].kind,
                                        was.type,
                                        carp_cond_status_name(was.status)),
                            s);
      v[0] = was.type;
      v[1] = carp_cond_status_name(was.status);
      extra_values(kind, obj, &v[2]);
      carp_metric_observe(ck->durations, v, s);
    }
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

static void on_buffer(struct carp_controller *c, const struct carp_objmeta *old,
                      const struct carp_objmeta *obj, int deleted)
{
  transitions(MCTL(c), K_BUFFER, old, obj, deleted);
}

static void on_node(struct carp_controller *c, const struct carp_objmeta *old,
                    const struct carp_objmeta *obj, int deleted)
{
  transitions(MCTL(c), K_NODE, old, obj, deleted);
}

/* An object label as operatorpkg makes it a metric label. */
static void prom_label(const char *key, char *out, size_t size)
{
  size_t i;
  snprintf(out, size, "%s", key);
  for (i = 0; out[i]; i++)
    if (out[i] == '/' || out[i] == '.' || out[i] == '-')
      out[i] = '_';
}

/* Label names: first the fixed ones (NULL-terminated), then the kind's
 * extra labels, into names (storage for their text in buf). */
static void label_names(int kind, const char *const *fixed, const char **names,
                        char (*buf)[64])
{
  int n = 0, i;
  while (fixed[n]) {
    names[n] = fixed[n];
    n++;
  }
  for (i = 0; kinds[kind].extra[i]; i++) {
    prom_label(kinds[kind].extra[i], buf[i], sizeof(buf[i]));
    names[n++] = buf[i];
  }
  names[n] = NULL;
}

static void register_kind(struct carp_metricsctl *m, int kind)
{
  struct carp_metrics *r = m->base.env.metrics;
  struct carp_mctl_cond_kind *ck = &m->cond_kinds[kind];
  double exponential[15];
  const char *names[5 + MAX_EXTRA + 1];
  char buf[MAX_EXTRA][64], name[128];
  int i;
  ck->m = m;
  ck->kind = kind;
  for (i = 0; i < 15; i++)
    exponential[i] = 0.5 * (double)(1 << i);
  label_names(kind,
              CARP_LABELS("namespace", "name", "type", "status", "reason"),
              names, buf);
  snprintf(name, sizeof(name), "operator_%s_status_condition_count",
           kinds[kind].lower);
  carp__mctl_stream_arg(m, name, HELP_COUNT, names, stream_kind_count, ck);
  snprintf(name, sizeof(name),
           "operator_%s_status_condition_current_status_seconds",
           kinds[kind].lower);
  carp__mctl_stream_arg(m, name, HELP_CURRENT, names, stream_kind_current, ck);
  label_names(kind, CARP_LABELS("type", "status", "reason"), names, buf);
  snprintf(name, sizeof(name), "operator_%s_status_condition_transitions_total",
           kinds[kind].lower);
  ck->transitions = carp_metrics_counter(r, name, HELP_TRANSITIONS, names);
  label_names(kind, CARP_LABELS("type", "status"), names, buf);
  snprintf(name, sizeof(name),
           "operator_%s_status_condition_transition_seconds",
           kinds[kind].lower);
  ck->durations = carp_metrics_histogram(
      r, name, HELP_DURATION, names,
      kinds[kind].exponential ? exponential : default_buckets,
      kinds[kind].exponential ? CARP_ARRAY_LEN(exponential)
                              : CARP_ARRAY_LEN(default_buckets));
  label_names(kind, CARP_LABELS("namespace", "name"), names, buf);
  snprintf(name, sizeof(name), "operator_%s_termination_current_time_seconds",
           kinds[kind].lower);
  carp__mctl_stream_arg(m, name, HELP_TERMINATING, names,
                        stream_kind_term_current, ck);
  label_names(kind, CARP_LABELS(NULL), names, buf);
  snprintf(name, sizeof(name), "operator_%s_termination_duration_seconds",
           kinds[kind].lower);
  ck->terminations = carp_metrics_histogram(
      r, name, HELP_TERMINATED, names,
      kinds[kind].exponential ? exponential : default_buckets,
      kinds[kind].exponential ? CARP_ARRAY_LEN(exponential)
                              : CARP_ARRAY_LEN(default_buckets));
}

void carp__mctl_conditions_register(struct carp_metricsctl *m)
{
  struct carp_metrics *r = m->base.env.metrics;
  static const carp_event_map_fn watch[K_COUNT] = {
      [K_NODEPOOL] = on_nodepool,   [K_NODECLAIM] = on_nodeclaim,
      [K_NODECLASS] = on_nodeclass, [K_BUFFER] = on_buffer,
      [K_NODE] = on_node,
  };
  int k;
  carp__mctl_stream(m, "operator_status_condition_count", HELP_COUNT,
                    CARP_LABELS("namespace", "name", "group", "kind", "type",
                                "status", "reason"),
                    stream_count);
  carp__mctl_stream(m, "operator_status_condition_current_status_seconds",
                    HELP_CURRENT,
                    CARP_LABELS("namespace", "name", "group", "kind", "type",
                                "status", "reason"),
                    stream_current);
  m->m_cond_transitions = carp_metrics_counter(
      r, "operator_status_condition_transitions_total", HELP_TRANSITIONS,
      CARP_LABELS("group", "kind", "type", "status", "reason"));
  m->m_cond_durations = carp_metrics_histogram(
      r, "operator_status_condition_transition_seconds", HELP_DURATION,
      CARP_LABELS("group", "kind", "type", "status"), default_buckets,
      CARP_ARRAY_LEN(default_buckets));
  carp__mctl_stream(
      m, "operator_termination_current_time_seconds", HELP_TERMINATING,
      CARP_LABELS("namespace", "name", "group", "kind"), stream_term_current);
  m->m_term_durations =
      carp_metrics_histogram(r, "operator_termination_duration_seconds",
                             HELP_TERMINATED, CARP_LABELS("group", "kind"),
                             default_buckets, CARP_ARRAY_LEN(default_buckets));
  for (k = 0; k < K_COUNT; k++) {
    register_kind(m, k);
    if (informer_of(m, k))
      carp_controller_watch(&m->base, informer_of(m, k), watch[k]);
  }
}
