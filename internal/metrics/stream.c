/* stream.c: streamed metric families. The family stores no series: at
 * each rendering its callback writes the current samples straight into
 * the exposition buffer. Families whose value set follows a large cache
 * (one series per pod) cost no memory between scrapes this way, and no
 * stale series are ever left behind: what the callback does not write
 * does not exist. The HELP and TYPE lines are written before the first
 * sample, so a family with no sample is left out as usual. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/log.h"
#include "metrics_int.h"

struct carp_metric_writer {
  struct carp_buf *b;
  struct carp_metric *m;
  uint64_t scrape;
  size_t samples;
};

struct carp_metric *carp_metrics_stream(struct carp_metrics *r,
                                        const char *name, const char *help,
                                        enum carp_metric_type type,
                                        const char *const *label_names,
                                        carp_metrics_stream_cb cb, void *arg)
{
  struct carp_metric *m;
  if (type != CARP_METRIC_GAUGE && type != CARP_METRIC_COUNTER) {
    CARP_LOG_ERROR("metrics", "a streamed family is a gauge or a counter",
                   CARP_F_STR("metric", name));
    return NULL;
  }
  m = carp__metrics_register(r, type, name, help, label_names, NULL, 0);
  if (!m)
    return NULL;
  if (m->nseries && !m->streamed) {
    /* An unlabeled family starts with a zero series: drop it. Families
     * registered with series in use are not taken over. */
    if (m->nlabels) {
      CARP_LOG_ERROR("metrics", "metric already has stored series",
                     CARP_F_STR("metric", name));
      return NULL;
    }
    carp_metric_clear(m);
  }
  m->streamed = 1;
  m->stream = cb;
  m->stream_arg = arg;
  return m;
}

void carp_metric_stream_detach(struct carp_metric *m)
{
  if (!m)
    return;
  m->stream = NULL;
  m->stream_arg = NULL;
}

uint64_t carp_metric_writer_scrape(const struct carp_metric_writer *w)
{
  return w->scrape;
}

void carp_metric_writer_sample(struct carp_metric_writer *w,
                               const char *const *values, double value)
{
  size_t n = 0;
  while (values && values[n])
    n++;
  if (n != w->m->nlabels) {
    CARP_LOG_ERROR("metrics", "wrong number of label values",
                   CARP_F_STR("metric", w->m->name),
                   CARP_F_UINT("want", w->m->nlabels), CARP_F_UINT("got", n));
    return;
  }
  if (!w->samples++)
    carp__metrics_put_header(w->b, w->m);
  carp__metrics_put_sample(w->b, w->m, values, "", NULL, NULL, value);
}

void carp__stream_render(struct carp_buf *b, struct carp_metric *m,
                         uint64_t scrape)
{
  struct carp_metric_writer w;
  if (!m->stream)
    return;
  memset(&w, 0, sizeof(w));
  w.b = b;
  w.m = m;
  w.scrape = scrape;
  m->stream(&w, m->stream_arg);
}
