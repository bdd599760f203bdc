/* unit_metrics.c: the summary type and streamed families of the metrics
 * registry (internal/metrics/summary.c, stream.c): exposition text,
 * quantiles over the window, the window's cap, registration rules. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/buf.h"
#include "carpenter/metrics.h"

static char *render(struct carp_metrics *r, struct carp_buf *b)
{
  carp_buf_reset(b);
  assert_int_equal(carp_metrics_render(r, b), 0);
  return (char *)carp_buf_cstr(b);
}

static void test_summary_text(void **state)
{
  static const double q[] = {0, 0.5, 0.9, 0.99, 1};
  struct carp_metrics *r = carp_metrics_new();
  struct carp_metric *s =
      carp_metrics_summary(r, "karpenter_pods_startup_duration_seconds",
                           "Startup.", NULL, q, 5, 0, 0);
  struct carp_buf b;
  int i;
  assert_non_null(s);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  /* Registered unlabeled: exported before any observation, NaN quantiles. */
  assert_string_equal(
      render(r, &b),
      "# HELP karpenter_pods_startup_duration_seconds Startup.\n"
      "# TYPE karpenter_pods_startup_duration_seconds summary\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0\"} NaN\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0.5\"} NaN\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0.9\"} NaN\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0.99\"} NaN\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"1\"} NaN\n"
      "karpenter_pods_startup_duration_seconds_sum 0\n"
      "karpenter_pods_startup_duration_seconds_count 0\n");
  for (i = 100; i >= 1; i--)
    carp_metric_observe(s, NULL, i);
  assert_string_equal(
      render(r, &b),
      "# HELP karpenter_pods_startup_duration_seconds Startup.\n"
      "# TYPE karpenter_pods_startup_duration_seconds summary\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0\"} 1\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0.5\"} 50\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0.9\"} 90\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"0.99\"} 99\n"
      "karpenter_pods_startup_duration_seconds{quantile=\"1\"} 100\n"
      "karpenter_pods_startup_duration_seconds_sum 5050\n"
      "karpenter_pods_startup_duration_seconds_count 100\n");
  assert_true(carp_metric_value(s, NULL) == 100);
  carp_buf_free(&b);
  carp_metrics_free(r);
}

static void test_summary_window_cap_and_labels(void **state)
{
  static const double q[] = {0, 1};
  struct carp_metrics *r = carp_metrics_new();
  struct carp_metric *s = carp_metrics_summary(
      r, "x_seconds", "x", CARP_LABELS("pool"), q, 2, 60000, 10);
  struct carp_buf b;
  int i;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  for (i = 1; i <= 100; i++)
    carp_metric_observe(s, CARP_VALUES("a"), i);
  carp_metric_observe(s, CARP_VALUES("b\"q"), 0.25);
  /* Only the newest 10 of "a" are in the window; sum and count are all. */
  assert_string_equal(render(r, &b),
                      "# HELP x_seconds x\n"
                      "# TYPE x_seconds summary\n"
                      "x_seconds{pool=\"a\",quantile=\"0\"} 91\n"
                      "x_seconds{pool=\"a\",quantile=\"1\"} 100\n"
                      "x_seconds_sum{pool=\"a\"} 5050\n"
                      "x_seconds_count{pool=\"a\"} 100\n"
                      "x_seconds{pool=\"b\\\"q\",quantile=\"0\"} "
                      "0.25\n"
                      "x_seconds{pool=\"b\\\"q\",quantile=\"1\"} "
                      "0.25\n"
                      "x_seconds_sum{pool=\"b\\\"q\"} 0.25\n"
                      "x_seconds_count{pool=\"b\\\"q\"} 1\n");
  carp_buf_free(&b);
  carp_metrics_free(r);
}

static void test_summary_registration(void **state)
{
  static const double q[] = {0.5, 0.9};
  static const double bad[] = {0.9, 0.5};
  static const double out_of_range[] = {1.5};
  struct carp_metrics *r = carp_metrics_new();
  struct carp_metric *s;
  assert_null(
      carp_metrics_summary(r, "a", "a", CARP_LABELS("quantile"), q, 2, 0, 0));
  assert_null(carp_metrics_summary(r, "b", "b", NULL, bad, 2, 0, 0));
  assert_null(carp_metrics_summary(r, "c", "c", NULL, out_of_range, 1, 0, 0));
  s = carp_metrics_summary(r, "d", "d", NULL, q, 2, 0, 0);
  assert_ptr_equal(carp_metrics_summary(r, "d", "d", NULL, q, 2, 0, 0), s);
  assert_null(carp_metrics_gauge(r, "d", "d", NULL));
  /* Only observations go into a summary. */
  carp_metric_set(s, NULL, 3);
  carp_metric_add(s, NULL, 3);
  assert_true(carp_metric_value(s, NULL) == 0);
  carp_metrics_free(r);
}

struct stream_state {
  int n;
  uint64_t scrapes[2];
  int calls;
};

static void stream_cb(struct carp_metric_writer *w, void *arg)
{
  struct stream_state *st = arg;
  char v[16];
  int i;
  st->scrapes[st->calls++ % 2] = carp_metric_writer_scrape(w);
  for (i = 0; i < st->n; i++) {
    snprintf(v, sizeof(v), "p%d", i);
    carp_metric_writer_sample(w, CARP_VALUES(v, i ? "x" : "a\\b\nc"), i);
  }
}

static void unlabeled_cb(struct carp_metric_writer *w, void *arg)
{
  struct stream_state *st = arg;
  st->scrapes[st->calls++ % 2] = carp_metric_writer_scrape(w);
  carp_metric_writer_sample(w, NULL, 12);
}

static void test_stream(void **state)
{
  struct carp_metrics *r = carp_metrics_new();
  struct stream_state a = {0}, u = {0};
  struct carp_metric *m = carp_metrics_stream(
      r, "karpenter_pods_state", "Pod state.", CARP_METRIC_GAUGE,
      CARP_LABELS("name", "extra"), stream_cb, &a);
  struct carp_metric *one =
      carp_metrics_stream(r, "karpenter_cluster_state_node_count", "Nodes.",
                          CARP_METRIC_GAUGE, NULL, unlabeled_cb, &u);
  struct carp_buf b;
  assert_non_null(m);
  assert_non_null(one);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  /* No sample: the family is left out. */
  assert_string_equal(render(r, &b),
                      "# HELP karpenter_cluster_state_node_count Nodes.\n"
                      "# TYPE karpenter_cluster_state_node_count gauge\n"
                      "karpenter_cluster_state_node_count 12\n");
  assert_int_equal(a.scrapes[0], u.scrapes[0]);
  a.n = 2;
  assert_string_equal(
      render(r, &b),
      "# HELP karpenter_pods_state Pod state.\n"
      "# TYPE karpenter_pods_state gauge\n"
      "karpenter_pods_state{name=\"p0\",extra=\"a\\\\b\\nc\"} 0\n"
      "karpenter_pods_state{name=\"p1\",extra=\"x\"} 1\n"
      "# HELP karpenter_cluster_state_node_count Nodes.\n"
      "# TYPE karpenter_cluster_state_node_count gauge\n"
      "karpenter_cluster_state_node_count 12\n");
  /* One number per rendering, shared by the families of that rendering. */
  assert_int_equal(a.scrapes[1], u.scrapes[1]);
  assert_true(a.scrapes[1] > a.scrapes[0]);
  /* Stored updates are refused; detaching stops the callback. */
  carp_metric_set(m, CARP_VALUES("p9", "y"), 1);
  assert_int_equal(carp_metric_series_count(m), 0);
  carp_metric_stream_detach(m);
  carp_metric_stream_detach(one);
  assert_string_equal(render(r, &b), "");
  assert_null(carp_metrics_stream(r, "h", "h", CARP_METRIC_HISTOGRAM, NULL,
                                  stream_cb, &a));
  carp_buf_free(&b);
  carp_metrics_free(r);
}

static void test_whole_numbers(void **state)
{
  char out[32];
  carp_metrics_format_value(10, out);
  assert_string_equal(out, "10");
  carp_metrics_format_value(20, out);
  assert_string_equal(out, "20");
  carp_metrics_format_value(-300, out);
  assert_string_equal(out, "-300");
  carp_metrics_format_value(8589934592.0, out);
  assert_string_equal(out, "8589934592");
  carp_metrics_format_value(1e21, out);
  assert_string_equal(out, "1e+21");
  carp_metrics_format_value(2.5, out);
  assert_string_equal(out, "2.5");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_text),
      cmocka_unit_test(test_summary_window_cap_and_labels),
      cmocka_unit_test(test_summary_registration),
      cmocka_unit_test(test_stream),
      cmocka_unit_test(test_whole_numbers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
