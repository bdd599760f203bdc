/* summary.c: the summary metric type. Each series keeps its newest
 * observations in a ring (at most max_samples, none older than max_age_ms)
 * and reports, at each rendering, the exact quantiles of what the window
 * holds, plus _sum and _count over all time. That is what the Go client's
 * summary with MaxAge reports (it estimates quantiles within error bounds;
 * an exact rank over a bounded window is simpler and as good at the rates
 * Carpenter observes). Rendering sorts a copy of the window: at most
 * max_samples doubles per series per scrape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "metrics_int.h"

#define DEFAULT_MAX_AGE_MS  (10 * 60 * 1000)
#define DEFAULT_MAX_SAMPLES 4096

struct sample {
  uint64_t at_ms; /* monotonic */
  double v;
};

struct carp__summary_window {
  struct sample *ring;
  size_t cap;
  size_t head; /* oldest */
  size_t len;
};

struct carp_metric *
carp_metrics_summary(struct carp_metrics *r, const char *name, const char *help,
                     const char *const *label_names, const double *quantiles,
                     size_t nquantiles, uint64_t max_age_ms, size_t max_samples)
{
  struct carp_metric *m;
  size_t i;
  for (i = 0; i < nquantiles; i++) {
    if (!(quantiles[i] >= 0 && quantiles[i] <= 1) ||
        (i && !(quantiles[i] > quantiles[i - 1]))) {
      CARP_LOG_ERROR("metrics", "summary quantiles must ascend within [0, 1]",
                     CARP_F_STR("metric", name));
      return NULL;
    }
  }
  m = carp__metrics_register(r, CARP_METRIC_SUMMARY, name, help, label_names,
                             NULL, 0);
  if (!m || m->quantiles || !nquantiles)
    return m; /* registered before: keeps its first objectives */
  m->quantiles = carp_calloc(nquantiles, sizeof(double));
  memcpy(m->quantiles, quantiles, nquantiles * sizeof(double));
  m->nquantiles = nquantiles;
  m->max_age_ms = max_age_ms ? max_age_ms : DEFAULT_MAX_AGE_MS;
  m->max_samples = max_samples ? max_samples : DEFAULT_MAX_SAMPLES;
  return m;
}

void carp__summary_window_free(struct carp__summary_window *w)
{
  if (!w)
    return;
  carp_free(w->ring);
  carp_free(w);
}

/* Drops observations older than the window. */
static void expire(struct carp__summary_window *w, uint64_t max_age_ms,
                   uint64_t now)
{
  while (w->len && now - w->ring[w->head].at_ms > max_age_ms) {
    w->head = (w->head + 1) % w->cap;
    w->len--;
  }
}

void carp__summary_observe(struct carp_metric *m, struct carp_series *s,
                           double value)
{
  struct carp__summary_window *w = s->window;
  uint64_t now = carp_time_mono_ms();
  size_t max = m->max_samples ? m->max_samples : DEFAULT_MAX_SAMPLES;
  s->sum += value;
  s->count++;
  if (!w) {
    w = s->window = CARP_NEW(struct carp__summary_window);
    w->cap = max < 16 ? max : 16;
    w->ring = carp_calloc(w->cap, sizeof(*w->ring));
  }
  expire(w, m->max_age_ms, now);
  if (w->len == w->cap && w->cap < max) {
    /* Grow, unrolling the ring so the oldest comes first. */
    size_t ncap = w->cap * 2 < max ? w->cap * 2 : max, i;
    struct sample *n = carp_calloc(ncap, sizeof(*n));
    for (i = 0; i < w->len; i++)
      n[i] = w->ring[(w->head + i) % w->cap];
    carp_free(w->ring);
    w->ring = n;
    w->cap = ncap;
    w->head = 0;
  }
  if (w->len == w->cap) { /* full at max: the oldest goes */
    w->head = (w->head + 1) % w->cap;
    w->len--;
  }
  w->ring[(w->head + w->len) % w->cap] = (struct sample){now, value};
  w->len++;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void carp__summary_render(struct carp_buf *b, const struct carp_metric *m,
                          const struct carp_series *s)
{
  struct carp__summary_window *w = s->window;
  double *v = NULL;
  size_t n = 0, i;
  char q[32];
  if (w) {
    expire(w, m->max_age_ms, carp_time_mono_ms());
    n = w->len;
  }
  if (n) {
    v = carp_calloc(n, sizeof(double));
    for (i = 0; i < n; i++)
      v[i] = w->ring[(w->head + i) % w->cap].v;
    qsort(v, n, sizeof(double), cmp_double);
  }
  for (i = 0; i < m->nquantiles; i++) {
    double val = NAN;
    if (n) {
      /* Nearest rank: the smallest value with at least q·n values at or
       * below it; q = 0 is the minimum, q = 1 the maximum. */
      double rank = ceil(m->quantiles[i] * (double)n);
      size_t k = rank < 1 ? 0 : (size_t)rank - 1;
      val = v[k < n ? k : n - 1];
    }
    carp_metrics_format_value(m->quantiles[i], q);
    carp__metrics_put_sample(b, m, (const char *const *)s->values, "",
                             "quantile", q, val);
  }
  carp_free(v);
  carp__metrics_put_sample(b, m, (const char *const *)s->values, "_sum", NULL,
                           NULL, s->sum);
  carp__metrics_put_sample(b, m, (const char *const *)s->values, "_count", NULL,
                           NULL, (double)s->count);
}
