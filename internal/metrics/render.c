/* render.c: the Prometheus text exposition format, version 0.0.4.
 * HELP text escapes backslash and newline; label values also escape the
 * double quote. Histograms print cumulative _bucket lines ending in
 * le="+Inf", then _sum and _count; summaries their quantile lines, _sum
 * and _count (summary.c), streamed families whatever their callback
 * writes (stream.c). Families with no series are left out, as the Go
 * client does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/error.h"
#include "metrics_int.h"

void carp_metrics_format_value(double v, char out[32])
{
  int prec;
  if (isnan(v)) {
    snprintf(out, 32, "NaN");
    return;
  }
  if (isinf(v)) {
    snprintf(out, 32, v > 0 ? "+Inf" : "-Inf");
    return;
  }
  if (v == 0) {
    snprintf(out, 32, "0");
    return;
  }
  /* Whole numbers print whole ("10", not "1e+01") below 1e15. */
  if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(out, 32, "%.0f", v);
    return;
  }
  /* The shortest precision that reads back as the same double. */
  for (prec = 1; prec <= 17; prec++) {
    snprintf(out, 32, "%.*g", prec, v);
    if (strtod(out, NULL) == v)
      return;
  }
}

static void put_escaped(struct carp_buf *b, const char *s, int quote)
{
  for (; *s; s++) {
    if (*s == '\\')
      carp_buf_puts(b, "\\\\");
    else if (*s == '\n')
      carp_buf_puts(b, "\\n");
    else if (quote && *s == '"')
      carp_buf_puts(b, "\\\"");
    else
      carp_buf_putc(b, *s);
  }
}

/* A label value: copied in one piece unless it needs escaping. */
static void put_value(struct carp_buf *b, const char *s)
{
  size_t n = strcspn(s, "\\\n\"");
  if (!s[n]) {
    carp_buf_append(b, s, n);
    return;
  }
  put_escaped(b, s, 1);
}

/* name{l1="v1",l2="v2"[,le="x"]} */
static void put_series_name(struct carp_buf *b, const struct carp_metric *m,
                            const char *const *values, const char *suffix,
                            const char *extra_name, const char *extra_value)
{
  size_t i;
  carp_buf_puts(b, m->name);
  carp_buf_puts(b, suffix);
  if (m->nlabels == 0 && !extra_name)
    return;
  carp_buf_putc(b, '{');
  for (i = 0; i < m->nlabels; i++) {
    if (i)
      carp_buf_putc(b, ',');
    carp_buf_puts(b, m->labels[i]);
    carp_buf_append(b, "=\"", 2);
    put_value(b, values[i] ? values[i] : "");
    carp_buf_putc(b, '"');
  }
  if (extra_name) {
    if (m->nlabels)
      carp_buf_putc(b, ',');
    carp_buf_puts(b, extra_name);
    carp_buf_append(b, "=\"", 2);
    carp_buf_puts(b, extra_value);
    carp_buf_putc(b, '"');
  }
  carp_buf_putc(b, '}');
}

void carp__metrics_put_sample(struct carp_buf *b, const struct carp_metric *m,
                              const char *const *values, const char *suffix,
                              const char *extra_name, const char *extra_value,
                              double v)
{
  char num[32];
  put_series_name(b, m, values, suffix, extra_name, extra_value);
  carp_metrics_format_value(v, num);
  carp_buf_putc(b, ' ');
  carp_buf_puts(b, num);
  carp_buf_putc(b, '\n');
}

static void put_sample(struct carp_buf *b, const struct carp_metric *m,
                       const struct carp_series *s, const char *suffix,
                       const char *le, double v)
{
  carp__metrics_put_sample(b, m, (const char *const *)s->values, suffix,
                           le ? "le" : NULL, le, v);
}

static const char *type_name(enum carp_metric_type t)
{
  switch (t) {
  case CARP_METRIC_COUNTER:
    return "counter";
  case CARP_METRIC_GAUGE:
    return "gauge";
  case CARP_METRIC_HISTOGRAM:
    return "histogram";
  case CARP_METRIC_SUMMARY:
    return "summary";
  case CARP_METRIC_UNTYPED:
    break;
  }
  return "untyped";
}

void carp__metrics_put_header(struct carp_buf *b, const struct carp_metric *m)
{
  carp_buf_printf(b, "# HELP %s ", m->name);
  put_escaped(b, m->help, 0);
  carp_buf_printf(b, "\n# TYPE %s %s\n", m->name, type_name(m->type));
}

static void render_family(struct carp_buf *b, struct carp_metric *m,
                          uint64_t scrape)
{
  size_t i, j;
  if (m->streamed) {
    carp__stream_render(b, m, scrape);
    return;
  }
  if (m->nseries == 0)
    return;
  carp__metrics_put_header(b, m);
  for (i = 0; i < m->nseries; i++) {
    const struct carp_series *s = m->series[i];
    if (m->type == CARP_METRIC_SUMMARY) {
      carp__summary_render(b, m, s);
      continue;
    }
    if (m->type != CARP_METRIC_HISTOGRAM) {
      put_sample(b, m, s, "", NULL, s->value);
      continue;
    }
    {
      uint64_t cumulative = 0;
      char le[32];
      for (j = 0; j < m->nbounds; j++) {
        cumulative += s->buckets[j];
        carp_metrics_format_value(m->bounds[j], le);
        put_sample(b, m, s, "_bucket", le, (double)cumulative);
      }
      put_sample(b, m, s, "_bucket", "+Inf", (double)s->count);
      put_sample(b, m, s, "_sum", NULL, s->sum);
      put_sample(b, m, s, "_count", NULL, (double)s->count);
    }
  }
}

int carp_metrics_render(struct carp_metrics *r, struct carp_buf *out)
{
  size_t i;
  uint64_t scrape = ++r->renders;
  for (i = 0; i < r->ncollectors; i++)
    r->collectors[i].cb(r, r->collectors[i].arg);
  for (i = 0; i < r->nfamilies; i++)
    render_family(out, r->families[i], scrape);
  return out->overflowed ? CARP_ETOOBIG : 0;
}
