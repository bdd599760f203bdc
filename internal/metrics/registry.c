/* registry.c: metric families and their series. A series is found by its
 * label values through a hash map and kept in an array as well, so
 * rendering walks series in a stable order without touching the map.
 * Misuse (wrong label count, a negative counter increment) is a programming
 * error: it is logged once per family and the update is ignored. */
#include <math.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/log.h"
#include "metrics_int.h"

const double carp_metrics_duration_buckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
    1.25,  1.5,  1.75,  2,    2.5, 3,   3.5, 4,   4.5, 5,   6,   7,   8,   9,
    10,    15,   20,    25,   30,  40,  50,  60,  120, 150, 300, 450, 600,
};
const size_t carp_metrics_duration_buckets_len =
    sizeof(carp_metrics_duration_buckets) /
    sizeof(carp_metrics_duration_buckets[0]);

struct carp_metrics *carp_metrics_new(void)
{
  struct carp_metrics *r = CARP_NEW(struct carp_metrics);
  carp_map_init(&r->by_name);
  return r;
}

static void series_free(struct carp_series *s)
{
  if (!s)
    return;
  carp_free(s->key);
  carp_free(s->values);
  carp_free(s->buckets);
  carp__summary_window_free(s->window);
  carp_free(s);
}

static void metric_free(struct carp_metric *m)
{
  size_t i;
  for (i = 0; i < m->nseries; i++)
    series_free(m->series[i]);
  carp_free(m->series);
  carp_map_free(&m->index);
  for (i = 0; i < m->nlabels; i++)
    carp_free(m->labels[i]);
  carp_free(m->labels);
  carp_free(m->bounds);
  carp_free(m->quantiles);
  carp_free(m->name);
  carp_free(m->help);
  carp_free(m);
}

void carp_metrics_free(struct carp_metrics *r)
{
  size_t i;
  if (!r)
    return;
  for (i = 0; i < r->nfamilies; i++)
    metric_free(r->families[i]);
  carp_free(r->families);
  carp_free(r->collectors);
  carp_map_free(&r->by_name);
  carp_free(r);
}

static int valid_name(const char *s, int allow_colon)
{
  size_t i;
  if (!s || !*s)
    return 0;
  for (i = 0; s[i]; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
             (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok)
      return 0;
  }
  return 1;
}

static size_t count_labels(const char *const *labels)
{
  size_t n = 0;
  while (labels && labels[n])
    n++;
  return n;
}

static struct carp_series *series_get(struct carp_metric *m,
                                      const char *const *values, int create);

struct carp_metric *carp__metrics_register(struct carp_metrics *r,
                                           enum carp_metric_type type,
                                           const char *name, const char *help,
                                           const char *const *label_names,
                                           const double *bounds, size_t nbounds)
{
  struct carp_metric *m;
  size_t i, n = count_labels(label_names);

  if (!valid_name(name, 1)) {
    CARP_LOG_ERROR("metrics", "invalid metric name",
                   CARP_F_STR("metric", name));
    return NULL;
  }
  for (i = 0; i < n; i++) {
    if (!valid_name(label_names[i], 0) ||
        strncmp(label_names[i], "__", 2) == 0 ||
        (type == CARP_METRIC_HISTOGRAM && !strcmp(label_names[i], "le")) ||
        (type == CARP_METRIC_SUMMARY && !strcmp(label_names[i], "quantile"))) {
      CARP_LOG_ERROR("metrics", "invalid label name",
                     CARP_F_STR("metric", name),
                     CARP_F_STR("label", label_names[i]));
      return NULL;
    }
  }
  for (i = 1; i < nbounds; i++) {
    if (!(bounds[i] > bounds[i - 1])) {
      CARP_LOG_ERROR("metrics", "histogram buckets must ascend",
                     CARP_F_STR("metric", name));
      return NULL;
    }
  }
  m = carp_map_gets(&r->by_name, name);
  if (m) {
    int same = m->type == type && m->nlabels == n;
    for (i = 0; same && i < n; i++)
      same = !strcmp(m->labels[i], label_names[i]);
    if (!same) {
      CARP_LOG_ERROR("metrics",
                     "metric registered twice with a different "
                     "shape",
                     CARP_F_STR("metric", name));
      return NULL;
    }
    return m;
  }

  m = CARP_NEW(struct carp_metric);
  m->reg = r;
  m->type = type;
  m->name = carp_strdup(name);
  m->help = carp_strdup(help ? help : "");
  m->nlabels = n;
  m->labels = carp_calloc(n ? n : 1, sizeof(char *));
  for (i = 0; i < n; i++)
    m->labels[i] = carp_strdup(label_names[i]);
  if (nbounds) {
    m->bounds = carp_calloc(nbounds, sizeof(double));
    memcpy(m->bounds, bounds, nbounds * sizeof(double));
    m->nbounds = nbounds;
  }
  carp_map_init(&m->index);
  r->families =
      carp_reallocarray(r->families, r->nfamilies + 1, sizeof(*r->families));
  r->families[r->nfamilies++] = m;
  carp_map_puts(&r->by_name, m->name, m);
  /* An unlabeled metric is exported at zero from the start, as the Go
   * client does, so a rate() over it works before the first event. */
  if (n == 0)
    series_get(m, NULL, 1);
  return m;
}

struct carp_metric *carp_metrics_counter(struct carp_metrics *r,
                                         const char *name, const char *help,
                                         const char *const *label_names)
{
  return carp__metrics_register(r, CARP_METRIC_COUNTER, name, help, label_names,
                                NULL, 0);
}

struct carp_metric *carp_metrics_gauge(struct carp_metrics *r, const char *name,
                                       const char *help,
                                       const char *const *label_names)
{
  return carp__metrics_register(r, CARP_METRIC_GAUGE, name, help, label_names,
                                NULL, 0);
}

struct carp_metric *carp_metrics_histogram(struct carp_metrics *r,
                                           const char *name, const char *help,
                                           const char *const *label_names,
                                           const double *buckets,
                                           size_t nbuckets)
{
  return carp__metrics_register(r, CARP_METRIC_HISTOGRAM, name, help,
                                label_names, buckets, nbuckets);
}

/* Builds the lookup key; returns 0 when values has the wrong length. */
static int build_key(const struct carp_metric *m, const char *const *values,
                     struct carp_buf *key)
{
  size_t i;
  if (count_labels(values) != m->nlabels) {
    CARP_LOG_ERROR("metrics", "wrong number of label values",
                   CARP_F_STR("metric", m->name),
                   CARP_F_UINT("want", m->nlabels),
                   CARP_F_UINT("got", count_labels(values)));
    return 0;
  }
  for (i = 0; i < m->nlabels; i++) {
    if (i)
      carp_buf_putc(key, '\xff');
    carp_buf_puts(key, values[i]);
  }
  return 1;
}

static struct carp_series *series_get(struct carp_metric *m,
                                      const char *const *values, int create)
{
  struct carp_buf key;
  struct carp_series *s;
  size_t i, total = 0;
  char *p;

  carp_buf_init(&key, CARP_BUF_UNLIMITED);
  if (!build_key(m, values, &key)) {
    carp_buf_free(&key);
    return NULL;
  }
  s = carp_map_get(&m->index, carp_buf_cstr(&key), key.len);
  if (s || !create) {
    carp_buf_free(&key);
    return s;
  }
  s = CARP_NEW(struct carp_series);
  s->klen = key.len;
  s->key = carp_buf_steal(&key, NULL);
  for (i = 0; i < m->nlabels; i++)
    total += strlen(values[i]) + 1;
  /* One allocation: the pointer array followed by the strings. */
  s->values = carp_malloc(m->nlabels * sizeof(char *) + total + 1);
  p = (char *)(s->values + m->nlabels);
  for (i = 0; i < m->nlabels; i++) {
    size_t len = strlen(values[i]);
    memcpy(p, values[i], len + 1);
    s->values[i] = p;
    p += len + 1;
  }
  if (m->type == CARP_METRIC_HISTOGRAM)
    s->buckets = carp_calloc(m->nbounds + 1, sizeof(uint64_t));
  if (m->nseries == m->capseries) {
    m->capseries = m->capseries ? m->capseries * 2 : 4;
    m->series = carp_reallocarray(m->series, m->capseries, sizeof(*m->series));
  }
  s->index = m->nseries;
  m->series[m->nseries++] = s;
  carp_map_put(&m->index, s->key, s->klen, s);
  return s;
}

void carp_metric_add(struct carp_metric *m, const char *const *values,
                     double delta)
{
  struct carp_series *s;
  if (!m)
    return;
  if (m->type == CARP_METRIC_HISTOGRAM || m->type == CARP_METRIC_SUMMARY ||
      m->streamed || (m->type == CARP_METRIC_COUNTER && !(delta >= 0))) {
    CARP_LOG_ERROR("metrics", "invalid add", CARP_F_STR("metric", m->name),
                   CARP_F_DOUBLE("delta", delta));
    return;
  }
  s = series_get(m, values, 1);
  if (s)
    s->value += delta;
}

void carp_metric_set(struct carp_metric *m, const char *const *values,
                     double value)
{
  struct carp_series *s;
  if (!m)
    return;
  if (m->type == CARP_METRIC_HISTOGRAM || m->type == CARP_METRIC_SUMMARY ||
      m->streamed) {
    CARP_LOG_ERROR("metrics", "set on a histogram, summary or stream",
                   CARP_F_STR("metric", m->name));
    return;
  }
  s = series_get(m, values, 1);
  if (s)
    s->value = value;
}

void carp_metric_observe(struct carp_metric *m, const char *const *values,
                         double value)
{
  struct carp_series *s;
  size_t lo = 0, hi;
  if (!m)
    return;
  if ((m->type != CARP_METRIC_HISTOGRAM && m->type != CARP_METRIC_SUMMARY) ||
      m->streamed || isnan(value)) {
    CARP_LOG_ERROR("metrics", "invalid observe", CARP_F_STR("metric", m->name));
    return;
  }
  s = series_get(m, values, 1);
  if (!s)
    return;
  if (m->type == CARP_METRIC_SUMMARY) {
    carp__summary_observe(m, s, value);
    return;
  }
  /* First bucket whose bound is >= value; nbounds is the +Inf bucket. */
  hi = m->nbounds;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (value <= m->bounds[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  s->buckets[lo]++;
  s->sum += value;
  s->count++;
}

double carp_metric_value(struct carp_metric *m, const char *const *values)
{
  struct carp_series *s = m ? series_get(m, values, 0) : NULL;
  if (!s)
    return 0;
  return m->type == CARP_METRIC_HISTOGRAM || m->type == CARP_METRIC_SUMMARY
             ? (double)s->count
             : s->value;
}

static void remove_series(struct carp_metric *m, struct carp_series *s)
{
  size_t i = s->index;
  carp_map_del(&m->index, s->key, s->klen);
  m->series[i] = m->series[--m->nseries];
  m->series[i]->index = i;
  series_free(s);
}

void carp_metric_remove(struct carp_metric *m, const char *const *values)
{
  struct carp_series *s = m ? series_get(m, values, 0) : NULL;
  if (s)
    remove_series(m, s);
}

void carp_metric_clear(struct carp_metric *m)
{
  if (!m)
    return;
  while (m->nseries)
    remove_series(m, m->series[m->nseries - 1]);
}

size_t carp_metric_series_count(const struct carp_metric *m)
{
  return m ? m->nseries : 0;
}

void carp_metrics_add_collector(struct carp_metrics *r,
                                carp_metrics_collect_cb cb, void *arg)
{
  r->collectors = carp_reallocarray(r->collectors, r->ncollectors + 1,
                                    sizeof(*r->collectors));
  r->collectors[r->ncollectors].cb = cb;
  r->collectors[r->ncollectors].arg = arg;
  r->ncollectors++;
}
