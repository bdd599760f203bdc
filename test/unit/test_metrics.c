/* Unit tests for internal/metrics: registration rules, updates, series
 * removal, and the exact exposition text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"

static char *render(struct carp_metrics *r)
{
  struct carp_buf b;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_metrics_render(r, &b), 0);
  return carp_buf_steal(&b, NULL);
}

static void test_counter_and_gauge_text(void **state)
{
  struct carp_metrics *r = carp_metrics_new();
  struct carp_metric *c = carp_metrics_counter(
      r, "karpenter_nodeclaims_created_total", "Number of nodeclaims created.",
      CARP_LABELS("reason", "nodepool"));
  struct carp_metric *g =
      carp_metrics_gauge(r, "karpenter_cluster_state_synced",
                         "Returns 1 if cluster state is synced.", NULL);
  struct carp_metric *empty =
      carp_metrics_gauge(r, "carp_empty", "No series yet.", CARP_LABELS("x"));
  char *out;

  assert_non_null(c);
  assert_non_null(empty);
  carp_metric_add(c, CARP_VALUES("provisioning", "default"), 1);
  carp_metric_add(c, CARP_VALUES("provisioning", "default"), 2);
  carp_metric_add(c, CARP_VALUES("drift", "gpu \"big\"\n\\"), 1);
  carp_metric_add(c, CARP_VALUES("provisioning", "default"), -1); /* refused */
  carp_metric_add(c, CARP_VALUES("only-one"), 1); /* wrong arity: refused */
  carp_metric_set(g, NULL, 1);
  out = render(r);
  assert_string_equal(
      out, "# HELP karpenter_nodeclaims_created_total Number of nodeclaims "
           "created.\n"
           "# TYPE karpenter_nodeclaims_created_total counter\n"
           "karpenter_nodeclaims_created_total{reason=\"provisioning\","
           "nodepool=\"default\"} 3\n"
           "karpenter_nodeclaims_created_total{reason=\"drift\","
           "nodepool=\"gpu \\\"big\\\"\\n\\\\\"} 1\n"
           "# HELP karpenter_cluster_state_synced Returns 1 if cluster state "
           "is synced.\n"
           "# TYPE karpenter_cluster_state_synced gauge\n"
           "karpenter_cluster_state_synced 1\n");
  carp_free(out);
  assert_true(carp_metric_value(c, CARP_VALUES("provisioning", "default")) ==
              3);
  assert_true(carp_metric_value(c, CARP_VALUES("absent", "x")) == 0);

  /* Removing and clearing series. */
  carp_metric_remove(c, CARP_VALUES("provisioning", "default"));
  assert_int_equal(carp_metric_series_count(c), 1);
  carp_metric_clear(c);
  assert_int_equal(carp_metric_series_count(c), 0);
  out = render(r);
  assert_null(strstr(out, "nodeclaims_created"));
  carp_free(out);
  carp_metrics_free(r);
}

static void test_registration_rules(void **state)
{
  struct carp_metrics *r = carp_metrics_new();
  struct carp_metric *a, *b;
  carp_log_set_level(CARP_LOG_ERROR + 1); /* the refusals log errors */
  a = carp_metrics_counter(r, "x_total", "x", CARP_LABELS("a"));
  b = carp_metrics_counter(r, "x_total", "x", CARP_LABELS("a"));
  assert_ptr_equal(a, b);
  assert_null(carp_metrics_gauge(r, "x_total", "x", CARP_LABELS("a")));
  assert_null(carp_metrics_counter(r, "x_total", "x", CARP_LABELS("b")));
  assert_null(carp_metrics_counter(r, "1bad", "x", NULL));
  assert_null(carp_metrics_counter(r, "bad-name", "x", NULL));
  assert_null(carp_metrics_counter(r, "ok", "x", CARP_LABELS("__reserved")));
  assert_null(carp_metrics_histogram(r, "h", "x", CARP_LABELS("le"),
                                     (double[]){1, 2}, 2));
  assert_null(carp_metrics_histogram(r, "h2", "x", NULL, (double[]){2, 1}, 2));
  assert_non_null(carp_metrics_counter(r, "ns:sub_total", "x", NULL));
  carp_log_set_level(CARP_LOG_INFO);
  carp_metrics_free(r);
}

static void test_histogram_text(void **state)
{
  struct carp_metrics *r = carp_metrics_new();
  struct carp_metric *h = carp_metrics_histogram(
      r, "karpenter_scheduler_scheduling_duration_seconds",
      "Duration of scheduling simulations.", CARP_LABELS("controller"),
      (const double[]){0.1, 0.5, 1}, 3);
  char *out;
  carp_metric_observe(h, CARP_VALUES("provisioner"), 0.05);
  carp_metric_observe(h, CARP_VALUES("provisioner"), 0.1); /* le is <= */
  carp_metric_observe(h, CARP_VALUES("provisioner"), 0.7);
  carp_metric_observe(h, CARP_VALUES("provisioner"), 30);
  out = render(r);
  assert_string_equal(
      out, "# HELP karpenter_scheduler_scheduling_duration_seconds Duration of "
           "scheduling simulations.\n"
           "# TYPE karpenter_scheduler_scheduling_duration_seconds histogram\n"
           "karpenter_scheduler_scheduling_duration_seconds_bucket{controller="
           "\"provisioner\",le=\"0.1\"} 2\n"
           "karpenter_scheduler_scheduling_duration_seconds_bucket{controller="
           "\"provisioner\",le=\"0.5\"} 2\n"
           "karpenter_scheduler_scheduling_duration_seconds_bucket{controller="
           "\"provisioner\",le=\"1\"} 3\n"
           "karpenter_scheduler_scheduling_duration_seconds_bucket{controller="
           "\"provisioner\",le=\"+Inf\"} 4\n"
           "karpenter_scheduler_scheduling_duration_seconds_sum{controller="
           "\"provisioner\"} 30.85\n"
           "karpenter_scheduler_scheduling_duration_seconds_count{controller="
           "\"provisioner\"} 4\n");
  assert_true(carp_metric_value(h, CARP_VALUES("provisioner")) == 4);
  carp_free(out);
  carp_metrics_free(r);
}

static void test_value_format(void **state)
{
  char out[32];
  carp_metrics_format_value(0.1, out);
  assert_string_equal(out, "0.1");
  carp_metrics_format_value(1e21, out);
  assert_string_equal(out, "1e+21");
  carp_metrics_format_value(123456789, out);
  assert_string_equal(out, "123456789");
  carp_metrics_format_value(1.0 / 0.0, out);
  assert_string_equal(out, "+Inf");
  carp_metrics_format_value(-1.0 / 0.0, out);
  assert_string_equal(out, "-Inf");
  carp_metrics_format_value(0.0 / 0.0, out);
  assert_string_equal(out, "NaN");
  carp_metrics_format_value(2.0 / 3.0, out);
  assert_string_equal(out, "0.6666666666666666");
}

static void test_process_metrics(void **state)
{
  struct carp_metrics *r = carp_metrics_new();
  char *out;
  carp_metrics_register_process(r);
  out = render(r);
  assert_non_null(strstr(out, "\nprocess_resident_memory_bytes "));
  assert_non_null(strstr(out, "\nprocess_cpu_seconds_total "));
  assert_non_null(strstr(out, "\nprocess_start_time_seconds "));
  assert_non_null(strstr(out, "\nprocess_open_fds "));
  assert_non_null(strstr(out, "karpenter_build_info{version=\""));
  /* RSS is real: more than a megabyte for any process. */
  {
    const char *p = strstr(out, "\nprocess_resident_memory_bytes ");
    double rss = strtod(p + strlen("\nprocess_resident_memory_bytes "), NULL);
    assert_true(rss > 1e6);
  }
  carp_free(out);
  carp_metrics_free(r);
}

static void test_render_cap(void **state)
{
  struct carp_metrics *r = carp_metrics_new();
  struct carp_metric *g = carp_metrics_gauge(r, "g", "h", CARP_LABELS("k"));
  struct carp_buf b;
  char v[16];
  for (int i = 0; i < 100; i++) {
    snprintf(v, sizeof(v), "%d", i);
    carp_metric_set(g, CARP_VALUES(v), i);
  }
  carp_buf_init(&b, 64);
  assert_int_equal(carp_metrics_render(r, &b), CARP_ETOOBIG);
  carp_buf_free(&b);
  carp_metrics_free(r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counter_and_gauge_text),
      cmocka_unit_test(test_registration_rules),
      cmocka_unit_test(test_histogram_text),
      cmocka_unit_test(test_value_format),
      cmocka_unit_test(test_process_metrics),
      cmocka_unit_test(test_render_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
