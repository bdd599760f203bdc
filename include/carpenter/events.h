/* Module kube (internal/kube). Kubernetes Events (core/v1), as client-go's
 * recorder makes them: an event repeated for the same object, reason and
 * message within ten minutes is folded into the first one (its count and
 * lastTimestamp are patched) rather than created again, and events are
 * rate-limited per object (a burst of 25, then one per 5 minutes) and overall,
 * so an event storm cannot flood the API server. Dropped events are counted,
 * not queued. Creating events is a write: only the leader's get through. */
#ifndef CARP_EVENTS_H
#define CARP_EVENTS_H

#include <stdint.h>

#include <uv.h>

#include "carpenter/kube.h"

struct carp_recorder;
struct carp_clock;
struct carp_metrics;

enum carp_event_type {
  CARP_EVENT_NORMAL = 0,
  CARP_EVENT_WARNING,
};

struct carp_event_target {
  const char *api_version; /* "v1", "karpenter.sh/v1" */
  const char *kind;
  const char *namespace; /* NULL for cluster-scoped objects */
  const char *name;
  const char *uid;
};

struct carp_recorder_options {
  const char *component;     /* source.component; default "karpenter" */
  const char *instance;      /* reportingInstance, e.g. the replica identity */
  unsigned per_object_burst; /* default 25 */
  uint64_t per_object_refill_ms; /* default 5 minutes per token */
  double qps;                    /* overall; default 10 */
  unsigned burst;                /* overall; default 100 */
  struct carp_metrics *metrics;
  struct carp_clock *clock; /* optional: the buckets' and folds' time (a
                               test's fake clock); default libuv's */
};

int carp_recorder_new(uv_loop_t *loop, struct carp_kube *kube,
                      const struct carp_recorder_options *o,
                      struct carp_recorder **out);
void carp_recorder_event(struct carp_recorder *r,
                         const struct carp_event_target *t,
                         enum carp_event_type type, const char *reason,
                         const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Limits events of one reason across all objects, before the per-object
 * and overall limits: at most burst at once, then qps a second. Karpenter
 * does so for Nominated (5 a second, a burst of 10): a scale-out nominates
 * every pending pod, and an event each would be a write each. Setting a
 * reason again replaces its limit. Returns 0 or CARP_EINVAL. */
int carp_recorder_limit_reason(struct carp_recorder *r, const char *reason,
                               double qps, unsigned burst);
/* Finishes a request body built with w. One that cannot be built (over
 * its buffer's cap) is an error users must see, not a silent failed
 * reconcile: it is logged under logger (folded per key when fold is not
 * NULL) and raised as a WriteFailed Warning event on t (r and t may be
 * NULL). Returns carp_jw_finish()'s result. */
struct carp_jw;
struct carp_logfold;
int carp_recorder_body_finish(struct carp_jw *w, struct carp_recorder *r,
                              const struct carp_event_target *t,
                              struct carp_logfold *fold, const char *logger,
                              const char *key, const char *what);
/* Events created, folded (patched) and dropped, for tests and metrics. */
struct carp_recorder_stats {
  uint64_t created;
  uint64_t folded;
  uint64_t dropped;
  uint64_t failed;
};
void carp_recorder_stats(const struct carp_recorder *r,
                         struct carp_recorder_stats *out);
void carp_recorder_close(struct carp_recorder *r, void (*cb)(void *arg),
                         void *arg);

#endif
