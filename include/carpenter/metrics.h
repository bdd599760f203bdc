/* Module metrics (internal/metrics). Metrics registry: counters, gauges and
 * histograms with label sets, rendered in the Prometheus text exposition format
 * 0.0.4.
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
#include <stdint.h>

#include "carpenter/buf.h"

struct carp_metrics;
struct carp_metric;

enum carp_metric_type {
  CARP_METRIC_COUNTER = 0,
  CARP_METRIC_GAUGE,
  CARP_METRIC_HISTOGRAM,
  CARP_METRIC_SUMMARY,
  /* Streamed families only: "# TYPE name untyped", for a gauge whose
   * Karpenter name ends in _count, which promtool reserves for histograms
   * and summaries (PromQL treats both the same). */
  CARP_METRIC_UNTYPED,
};

/* NULL-terminated lists of label names and of values (same length). */
#define CARP_LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define CARP_VALUES(...) ((const char *const[]){__VA_ARGS__, NULL})

struct carp_metrics *carp_metrics_new(void);
void carp_metrics_free(struct carp_metrics *r);

/* Registration. A name registered twice returns the existing family when
 * type and labels agree, NULL otherwise. label_names may be NULL.
 * carp_metric_observe() feeds histograms and summaries. */
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

/* A summary (summary.c): quantiles over the observations of a sliding
 * window (the last max_age_ms, at most max_samples of the newest), with
 * _sum and _count over all time, as the Go client's summaries with MaxAge
 * report them. Quantiles are exact ranks within the window; with an empty
 * window they are NaN. max_age_ms 0 is 10 minutes, max_samples 0 is 4096.
 * quantiles: ascending, each in [0, 1]. "quantile" may not be a label. */
struct carp_metric *carp_metrics_summary(struct carp_metrics *r,
                                         const char *name, const char *help,
                                         const char *const *label_names,
                                         const double *quantiles,
                                         size_t nquantiles, uint64_t max_age_ms,
                                         size_t max_samples);

/* A streamed family (stream.c): no stored series; at each rendering the
 * callback writes the current samples straight into the exposition, so a
 * family of one series per cached pod costs nothing between scrapes. The
 * family is left out when the callback writes no sample. type is
 * CARP_METRIC_GAUGE, CARP_METRIC_COUNTER or CARP_METRIC_UNTYPED. */
struct carp_metric_writer;
typedef void (*carp_metrics_stream_cb)(struct carp_metric_writer *w, void *arg);
struct carp_metric *carp_metrics_stream(struct carp_metrics *r,
                                        const char *name, const char *help,
                                        enum carp_metric_type type,
                                        const char *const *label_names,
                                        carp_metrics_stream_cb cb, void *arg);
/* Writes one sample; values has one entry per label name (NULL for none).
 * The caller keeps label value sets distinct. */
void carp_metric_writer_sample(struct carp_metric_writer *w,
                               const char *const *values, double value);
/* Writes complete sample lines of the family as they are (the caller has
 * formatted and escaped them: "name{l=\"v\"} 1\n"), for callbacks that
 * compose many lines faster than one carp_metric_writer_sample() each. */
void carp_metric_writer_raw(struct carp_metric_writer *w, const char *lines,
                            size_t len);
/* Counts the renderings of the registry: the same number for every family
 * of one scrape, so callbacks can share a snapshot computed once. */
uint64_t carp_metric_writer_scrape(const struct carp_metric_writer *w);
/* Stops calling the callback (the family then renders nothing): call it
 * before freeing what arg points to. */
void carp_metric_stream_detach(struct carp_metric *m);

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
 * histogram or summary, its count. Mostly for tests. */
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

/* Formats a sample value as Prometheus expects: shortest round-trip
 * decimal, +Inf, -Inf or NaN. */
void carp_metrics_format_value(double v, char out[32]);

#endif
