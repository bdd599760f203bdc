/* stream.c: streamed metric families. The family stores no series: at
 * each rendering its callback writes the current samples straight into
 * the exposition buffer. Families whose value set follows a large cache
 * (one series per pod) cost no memory between scrapes this way, and no
 * stale series are ever left behind: what the callback does not write
 * does not exist. The HELP and TYPE lines are written before the first
 * sample, so a family with no sample is left out as usual. */
#include <math.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/log.h"
#include "metrics_int.h"

/* Label name pieces, built once per rendering: `name{l0="`, `",l1="`,
 * ..., and the closing `"} ` (or `name ` without labels). */
struct piece {
  char *s;
  size_t n;
};

struct carp_metric_writer {
  struct carp_buf *b;
  struct carp_metric *m;
  uint64_t scrape;
  size_t samples;
  struct piece *pre; /* nlabels + 1 */
};

#define LINE_MAX_BYTES 4096

struct carp_metric *carp_metrics_stream(struct carp_metrics *r,
                                        const char *name, const char *help,
                                        enum carp_metric_type type,
                                        const char *const *label_names,
                                        carp_metrics_stream_cb cb, void *arg)
{
  struct carp_metric *m;
  if (type != CARP_METRIC_GAUGE && type != CARP_METRIC_COUNTER &&
      type != CARP_METRIC_UNTYPED) {
    CARP_LOG_ERROR("metrics",
                   "a streamed family is a gauge, a counter or untyped",
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

/* Whole numbers below 1e15 without printf (most samples are counts). */
static size_t put_number(char *out, double v)
{
  char tmp[32];
  size_t n = 0, i;
  uint64_t u;
  int neg = v < 0;
  if (!(v == (double)(int64_t)v) || v >= 1e15 || v <= -1e15 ||
      (v == 0 && signbit(v))) {
    carp_metrics_format_value(v, tmp);
    n = strlen(tmp);
    memcpy(out, tmp, n);
    return n;
  }
  u = (uint64_t)(neg ? -(int64_t)v : (int64_t)v);
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  i = 0;
  if (neg)
    out[i++] = '-';
  while (n)
    out[i++] = tmp[--n];
  return i;
}

void carp_metric_writer_sample(struct carp_metric_writer *w,
                               const char *const *values, double value)
{
  const struct carp_metric *m = w->m;
  char line[LINE_MAX_BYTES];
  size_t n = 0, i, len = 0;
  while (values && values[n])
    n++;
  if (n != m->nlabels) {
    CARP_LOG_ERROR("metrics", "wrong number of label values",
                   CARP_F_STR("metric", m->name),
                   CARP_F_UINT("want", m->nlabels), CARP_F_UINT("got", n));
    return;
  }
  if (!w->samples++)
    carp__metrics_put_header(w->b, m);
  /* Fast path: the whole line in one buffer, values needing no escape. */
  for (i = 0; i <= n; i++) {
    size_t vl = 0;
    if (i < n) {
      vl = strcspn(values[i], "\\\n\"");
      if (values[i][vl])
        goto slow; /* needs escaping */
    }
    if (len + w->pre[i].n + vl + 40 > sizeof(line))
      goto slow;
    memcpy(line + len, w->pre[i].s, w->pre[i].n);
    len += w->pre[i].n;
    if (i < n) {
      memcpy(line + len, values[i], vl);
      len += vl;
    }
  }
  len += put_number(line + len, value);
  line[len++] = '\n';
  carp_buf_append(w->b, line, len);
  return;
slow:
  carp__metrics_put_sample(w->b, m, values, "", NULL, NULL, value);
}

void carp_metric_writer_raw(struct carp_metric_writer *w, const char *lines,
                            size_t len)
{
  if (!len)
    return;
  if (!w->samples++)
    carp__metrics_put_header(w->b, w->m);
  carp_buf_append(w->b, lines, len);
}

static void pieces_build(struct carp_metric_writer *w)
{
  const struct carp_metric *m = w->m;
  struct carp_buf b;
  size_t i;
  w->pre = carp_calloc(m->nlabels + 1, sizeof(*w->pre));
  for (i = 0; i <= m->nlabels; i++) {
    carp_buf_init(&b, CARP_BUF_UNLIMITED);
    if (i == 0)
      carp_buf_puts(&b, m->name);
    if (i < m->nlabels)
      carp_buf_printf(&b, "%s%s=\"", i ? "\"," : "{", m->labels[i]);
    else
      carp_buf_puts(&b, m->nlabels ? "\"} " : " ");
    w->pre[i].s = carp_buf_steal(&b, &w->pre[i].n);
  }
}

static void pieces_free(struct carp_metric_writer *w)
{
  size_t i;
  for (i = 0; w->pre && i <= w->m->nlabels; i++)
    carp_free(w->pre[i].s);
  carp_free(w->pre);
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
  pieces_build(&w);
  m->stream(&w, m->stream_arg);
  pieces_free(&w);
}
