/* Metrics registry: counters, gauges and histograms with label sets,
 * rendered in the Prometheus text exposition format 0.0.4.
 *
 * Families are registered at wiring time (no hidden globals); each holds
 * series keyed by their label values. Code that owns a metric keeps the
 * family pointer; the registry owns and frees everything.
 *
 *   struct carp_metric *created = carp_metrics_counter(reg,
 *       "karpenter_nodeclaims_created_total", "Number of nodeclaims created.",
 *       CARP_LABELS("reason", "nodepool"));
 *   carp_metric_add(created, CARP_VALUES("provisioning", "default"), 1);
 */
#ifndef CARP_METRICS_H
#define CARP_METRICS_H

#include <stddef.h>

#include "carpenter/buf.h"

struct carp_metrics;
struct carp_metric;

enum carp_metric_type {
  CARP_METRIC_COUNTER = 0,
  CARP_METRIC_GAUGE,
  CARP_METRIC_HISTOGRAM,
};

/* NULL-terminated lists of label names and of values (same length). */
#define CARP_LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define CARP_VALUES(...) ((const char *const[]){__VA_ARGS__, NULL})

struct carp_metrics *carp_metrics_new(void);
void carp_metrics_free(struct carp_metrics *r);

/* Registration. A name registered twice returns the existing family when
 * type and labels agree, NULL otherwise. label_names may be NULL. */
struct carp_metric *carp_metrics_counter(struct carp_metrics *r,
                                         const char *name, const char *help,
                                         const char *const *label_names);
struct carp_metric *carp_metrics_gauge(struct carp_metrics *r, const char *name,
                                       const char *help,
                                       const char *const *label_names);
/* buckets: ascending upper bounds, without +Inf (added automatically). */
struct carp_metric *carp_metrics_histogram(struct carp_metrics *r,
                                           const char *name, const char *help,
                                           const char *const *label_names,
                                           const double *buckets,
                                           size_t nbuckets);

/* Karpenter's default duration buckets, 0.005 s to 600 s. */
extern const double carp_metrics_duration_buckets[];
extern const size_t carp_metrics_duration_buckets_len;

/* Updates. values has one entry per label name (NULL for no labels); the
 * series is created on first use. Counters refuse negative deltas. */
void carp_metric_add(struct carp_metric *m, const char *const *values,
                     double delta);
void carp_metric_set(struct carp_metric *m, const char *const *values,
                     double value);
void carp_metric_observe(struct carp_metric *m, const char *const *values,
                         double value);
/* Current value of a counter or gauge series (0 when absent); for a
 * histogram, its count. Mostly for tests. */
double carp_metric_value(struct carp_metric *m, const char *const *values);
/* Drops one series, or all of them. */
void carp_metric_remove(struct carp_metric *m, const char *const *values);
void carp_metric_clear(struct carp_metric *m);
size_t carp_metric_series_count(const struct carp_metric *m);

/* A collector runs just before each rendering, to refresh gauges that are
 * cheaper to compute on demand (process figures, cache sizes). */
typedef void (*carp_metrics_collect_cb)(struct carp_metrics *r, void *arg);
void carp_metrics_add_collector(struct carp_metrics *r,
                                carp_metrics_collect_cb cb, void *arg);

/* Appends the exposition text for every family to out. */
int carp_metrics_render(struct carp_metrics *r, struct carp_buf *out);

/* Process metrics (process_resident_memory_bytes, _cpu_seconds_total,
 * _start_time_seconds, _open_fds, _max_fds, _virtual_memory_bytes) and
 * karpenter_build_info, refreshed by a collector. */
void carp_metrics_register_process(struct carp_metrics *r);

struct carp_server;
/* Adds /metrics to a server, rendering the registry on each scrape. */
int carp_metrics_serve(struct carp_metrics *r, struct carp_server *s);

/* Formats a sample value as Prometheus expects: shortest round-trip
 * decimal, +Inf, -Inf or NaN. */
void carp_metrics_format_value(double v, char out[32]);

#endif
