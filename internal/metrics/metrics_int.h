/* Private structures of the metrics module, shared by registry.c (updates)
 * and render.c (exposition). */
#ifndef CARP_METRICS_INT_H
#define CARP_METRICS_INT_H

#include <stdint.h>

#include "carpenter/map.h"
#include "carpenter/metrics.h"

struct carp_series {
  char *key; /* label values joined by 0xff (never in UTF-8) */
  size_t klen;
  char **values; /* nlabels pointers into one allocation */
  size_t index;  /* position in the family's series array */
  double value;  /* counter and gauge */
  double sum;    /* histogram */
  uint64_t count;
  uint64_t *buckets; /* histogram: per-bucket (not cumulative) counts */
  struct carp__summary_window *window; /* summary: recent observations */
};

struct carp_metric {
  struct carp_metrics *reg;
  enum carp_metric_type type;
  char *name;
  char *help;
  char **labels;
  size_t nlabels;
  double *bounds; /* histogram upper bounds, without +Inf */
  size_t nbounds;
  struct carp_map index; /* key -> struct carp_series */
  struct carp_series **series;
  size_t nseries;
  size_t capseries;
  /* summary (summary.c) */
  double *quantiles;
  size_t nquantiles;
  uint64_t max_age_ms;
  size_t max_samples;
  /* streamed family (stream.c): rendered by the callback, no series */
  carp_metrics_stream_cb stream;
  void *stream_arg;
  int streamed;
};

struct carp_metrics_collector {
  carp_metrics_collect_cb cb;
  void *arg;
};

struct carp_metrics {
  struct carp_metric **families;
  size_t nfamilies;
  struct carp_map by_name;
  struct carp_metrics_collector *collectors;
  size_t ncollectors;
  uint64_t renders; /* renderings so far (carp_metric_writer_scrape) */
};

struct carp__summary_window;

/* registry.c: registers a family (NULL on a bad name, label or shape). */
struct carp_metric *carp__metrics_register(struct carp_metrics *r,
                                           enum carp_metric_type type,
                                           const char *name, const char *help,
                                           const char *const *label_names,
                                           const double *bounds,
                                           size_t nbounds);
/* render.c: one sample line; extra_name/extra_value (e.g. le, quantile)
 * follow the family's labels when not NULL. */
void carp__metrics_put_sample(struct carp_buf *b, const struct carp_metric *m,
                              const char *const *values, const char *suffix,
                              const char *extra_name, const char *extra_value,
                              double v);
void carp__metrics_put_header(struct carp_buf *b, const struct carp_metric *m);

/* summary.c */
void carp__summary_observe(struct carp_metric *m, struct carp_series *s,
                           double value);
void carp__summary_render(struct carp_buf *b, const struct carp_metric *m,
                          const struct carp_series *s);
void carp__summary_window_free(struct carp__summary_window *w);

/* stream.c */
void carp__stream_render(struct carp_buf *b, struct carp_metric *m,
                         uint64_t scrape);

#endif
