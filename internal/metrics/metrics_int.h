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
};

#endif
