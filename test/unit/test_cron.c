/* Unit tests for cron schedules and disruption budgets: parsing (fields,
 * ranges, steps, lists, names, descriptors, errors), next times (strictly
 * after, month and year wraps, leap days, the day-of-month/day-of-week OR
 * rule, schedules that never fire), whether a budget is active, and
 * allowed disruptions per reason (percentages rounded up, the minimum over
 * applicable budgets, inactive = unlimited, unreadable = 0), including the
 * documentation's examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_testlib.h"
#include "carpenter/cron.h"
#include "carpenter/nodepool.h"
#include "carpenter/timeutil.h"

static int64_t at(const char *rfc3339)
{
  int64_t ms;
  assert_int_equal(carp_time_parse_rfc3339(rfc3339, &ms), 0);
  return ms;
}

static const char *fmt(int64_t ms, char out[CARP_RFC3339_LEN])
{
  if (ms < 0) {
    snprintf(out, CARP_RFC3339_LEN, "never");
    return out;
  }
  carp_time_format_rfc3339(ms, 0, out);
  return out;
}

static void test_parse(void **state)
{
  static const struct {
    const char *spec;
    const char *err; /* NULL: valid */
  } cases[] = {
      {"* * * * *", NULL},
      {"0 8 * * mon-fri", NULL},
      {"0 0 1 jan,JUL *", NULL},
      {"*/15 0-6/2 1,15 * sun", NULL},
      {"5/20 * * * *", NULL},
      {"? ? ? ? ?", NULL},
      {"  0 0 * * *  ", NULL},
      {"@yearly", NULL},
      {"@annually", NULL},
      {"@monthly", NULL},
      {"@weekly", NULL},
      {"@daily", NULL},
      {"@midnight", NULL},
      {"@hourly", NULL},
      {"61 * * * *", "end of range (61) above maximum (59)"},
      {"* 24 * * *", "end of range (24) above maximum (23)"},
      {"* * 0 * *", "beginning of range (0) below minimum (1)"},
      {"* * 32 * *", "end of range (32) above maximum (31)"},
      {"* * * 13 *", "end of range (13) above maximum (12)"},
      {"* * * * 7", "end of range (7) above maximum (6)"},
      {"5-1 * * * *", "beginning of range (5) beyond end of range (1)"},
      {"*/0 * * * *", "step of range should be a positive number"},
      {"1-2-3 * * * *", "too many hyphens: 1-2-3"},
      {"*/2/3 * * * *", "too many slashes: */2/3"},
      {"a * * * *", "failed to parse int from 'a'"},
      {"1,,2 * * * *", "failed to parse int from an empty value"},
      {"* * * * funday", "failed to parse int from 'funday'"},
      {"* * * *", "expected exactly 5 fields, found 4"},
      {"* * * * * *", "expected exactly 5 fields, found more"},
      {"", "empty spec string"},
      {"@every 5m", "unrecognized descriptor: @every 5m"},
      {"@reboot", "unrecognized descriptor: @reboot"},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct carp_cron c;
    char err[CARP_CRON_ERR_LEN];
    int rc = carp_cron_parse(cases[i].spec, &c, err);
    if (!cases[i].err) {
      if (rc)
        fprintf(stderr, "%s: %s\n", cases[i].spec, err);
      assert_int_equal(rc, 0);
    } else {
      assert_int_equal(rc, CARP_EPARSE);
      if (strcmp(err, cases[i].err))
        fprintf(stderr, "%s: want %s, got %s\n", cases[i].spec, cases[i].err,
                err);
      assert_string_equal(err, cases[i].err);
    }
  }
}

static void test_fields(void **state)
{
  struct carp_cron c;
  assert_int_equal(carp_cron_parse("*/15 0-6/2 1,15 jan-mar mon-fri", &c, NULL),
                   0);
  assert_int_equal(c.minutes,
                   (1ULL << 0) | (1ULL << 15) | (1ULL << 30) | (1ULL << 45));
  assert_int_equal(c.hours, (1u << 0) | (1u << 2) | (1u << 4) | (1u << 6));
  assert_int_equal(c.dom, (1u << 1) | (1u << 15));
  assert_int_equal(c.months, (1u << 1) | (1u << 2) | (1u << 3));
  assert_int_equal(c.dow, 0x3e);
  assert_false(c.dom_star);
  assert_false(c.dow_star);
  /* "*" and "*\/1" are unrestricted; "*\/2" is not (robfig). */
  assert_int_equal(carp_cron_parse("0 0 * * */1", &c, NULL), 0);
  assert_true(c.dom_star);
  assert_true(c.dow_star);
  assert_int_equal(carp_cron_parse("0 0 */2 * 1", &c, NULL), 0);
  assert_false(c.dom_star);
  /* "a/n" runs from a to the maximum. */
  assert_int_equal(carp_cron_parse("50/4 * * * *", &c, NULL), 0);
  assert_int_equal(c.minutes, (1ULL << 50) | (1ULL << 54) | (1ULL << 58));
}

static void test_next(void **state)
{
  static const struct {
    const char *spec, *from, *want;
  } cases[] = {
      {"0 * * * *", "2026-03-04T10:30:00Z", "2026-03-04T11:00:00Z"},
      /* strictly after */
      {"0 * * * *", "2026-03-04T11:00:00Z", "2026-03-04T12:00:00Z"},
      {"0 * * * *", "2026-03-04T10:59:59.999Z", "2026-03-04T11:00:00Z"},
      {"*/15 * * * *", "2026-03-04T10:07:30Z", "2026-03-04T10:15:00Z"},
      {"* * * * *", "2026-03-04T10:07:30Z", "2026-03-04T10:08:00Z"},
      {"@daily", "2026-12-31T23:59:00Z", "2027-01-01T00:00:00Z"},
      {"@hourly", "2026-12-31T23:30:00Z", "2027-01-01T00:00:00Z"},
      {"@weekly", "2026-03-04T00:00:00Z", "2026-03-08T00:00:00Z"},
      {"@monthly", "2026-01-31T12:00:00Z", "2026-02-01T00:00:00Z"},
      {"@yearly", "2026-03-04T00:00:00Z", "2027-01-01T00:00:00Z"},
      /* Friday 09:00 -> Monday 08:00 */
      {"0 8 * * mon-fri", "2026-03-06T09:00:00Z", "2026-03-09T08:00:00Z"},
      {"0 8 * * mon-fri", "2026-03-09T07:59:00Z", "2026-03-09T08:00:00Z"},
      /* both day fields restricted: the 13th OR a Friday */
      {"0 0 13 * 5", "2026-03-01T00:00:00Z", "2026-03-06T00:00:00Z"},
      {"0 0 13 * 5", "2026-03-07T00:00:00Z", "2026-03-13T00:00:00Z"},
      /* day-of-month starred: Mondays only */
      {"0 0 * * 1", "2026-03-04T00:00:00Z", "2026-03-09T00:00:00Z"},
      /* "*\/2" restricts: odd days OR Mondays */
      {"0 0 */2 * 1", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"},
      {"0 0 */2 * 1", "2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z"},
      {"0 0 31 * *", "2026-04-01T00:00:00Z", "2026-05-31T00:00:00Z"},
      {"0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
      {"0 0 30 2 *", "2026-03-01T00:00:00Z", NULL},
      {"30 23 * 12 sun", "2026-01-01T00:00:00Z", "2026-12-06T23:30:00Z"},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct carp_cron c;
    char got[CARP_RFC3339_LEN];
    int64_t n;
    assert_int_equal(carp_cron_parse(cases[i].spec, &c, NULL), 0);
    n = carp_cron_next(&c, at(cases[i].from));
    fmt(n, got);
    if (strcmp(got, cases[i].want ? cases[i].want : "never"))
      fprintf(stderr, "%s from %s: want %s, got %s\n", cases[i].spec,
              cases[i].from, cases[i].want ? cases[i].want : "never", got);
    assert_string_equal(got, cases[i].want ? cases[i].want : "never");
  }
}

static struct carp_nodepool *pool(const char *budgets)
{
  char text[4096];
  struct carp_objmeta *m;
  char *err = NULL;
  snprintf(text, sizeof(text),
           "metadata: {name: p}\nspec:\n  template: {spec: {nodeClassRef: "
           "{group: carpenter.dev, kind: ProxmoxNodeClass, name: d}, "
           "requirements: []}}\n  disruption:\n    consolidateAfter: 0s\n"
           "    budgets: %s\n",
           budgets);
  m = decode_yaml(&carp_kind_nodepool, text, &err);
  if (!m)
    fprintf(stderr, "%s\n", err);
  assert_non_null(m);
  return (struct carp_nodepool *)m;
}

static void test_active(void **state)
{
  struct carp_nodepool *np =
      pool("[{nodes: '0', schedule: '0 8 * * mon-fri', duration: 10h}, "
           "{nodes: '0', schedule: '@daily', duration: 10m}, "
           "{nodes: '0', schedule: '0 0 30 2 *', duration: 1h}, "
           "{nodes: '1'}]");
  const struct carp_budget *office = &np->budgets[0], *daily = &np->budgets[1];
  /* Monday 2026-03-09 */
  assert_int_equal(carp_budget_is_active(office, at("2026-03-09T07:59:59Z")),
                   0);
  assert_int_equal(carp_budget_is_active(office, at("2026-03-09T08:00:00Z")),
                   1);
  assert_int_equal(carp_budget_is_active(office, at("2026-03-09T17:59:59Z")),
                   1);
  assert_int_equal(carp_budget_is_active(office, at("2026-03-09T18:00:00Z")),
                   0);
  assert_int_equal(carp_budget_is_active(office, at("2026-03-07T09:00:00Z")),
                   0); /* Saturday */
  assert_int_equal(carp_budget_is_active(daily, at("2026-03-07T00:00:00Z")), 1);
  assert_int_equal(carp_budget_is_active(daily, at("2026-03-07T00:09:59Z")), 1);
  assert_int_equal(carp_budget_is_active(daily, at("2026-03-07T00:10:00Z")), 0);
  /* Never firing: robfig's zero time is not after now, so active. */
  assert_int_equal(carp_budget_is_active(&np->budgets[2], at("2026-03-07T00:00:"
                                                             "00Z")),
                   1);
  assert_int_equal(carp_budget_is_active(&np->budgets[3], 0), 1);
  carp_obj_unref(&np->meta);
}

static void test_allowed(void **state)
{
  struct carp_nodepool *np;
  int64_t now = at("2026-03-07T12:00:00Z"); /* Saturday noon */

  /* docs: 19 nodes at 20% -> ceil(3.8) = 4 */
  np = pool("[{nodes: '20%'}]");
  assert_int_equal(carp_budget_allowed(&np->budgets[0], 19, now), 4);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_DRIFTED, 19, now), 4);
  assert_int_equal(carp_budget_allowed(&np->budgets[0], 0, now), 0);
  assert_int_equal(carp_budget_allowed(&np->budgets[0], 5, now), 1);
  carp_obj_unref(&np->meta);

  /* "0" blocks every reason; percentages round up (10% of 1 is 1). */
  np = pool("[{nodes: '0'}]");
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 100, now), 0);
  carp_obj_unref(&np->meta);
  np = pool("[{nodes: '10%'}]");
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 1, now), 1);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 10, now), 1);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 11, now), 2);
  carp_obj_unref(&np->meta);
  np = pool("[{nodes: '100%'}]");
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 7, now), 7);
  carp_obj_unref(&np->meta);

  /* The karpenter-user-nodepool budgets: minimum over applicable ones. */
  np = pool("[{nodes: '20%', reasons: [Empty, Drifted]}, {nodes: '5'}, "
            "{nodes: '0', schedule: '@daily', duration: 10m, reasons: "
            "[Underutilized]}]");
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 10, now), 2);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_DRIFTED, 100, now), 5);
  assert_int_equal(carp_nodepool_allowed_disruptions(
                       np, CARP_DISRUPT_UNDERUTILIZED, 100, now),
                   5);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_UNDERUTILIZED, 100,
                                        at("2026-03-07T00:05:00Z")),
      0);
  assert_int_equal(carp_nodepool_allowed_disruptions(
                       np, CARP_DISRUPT_EMPTY, 100, at("2026-03-07T00:05:00Z")),
                   5);
  carp_obj_unref(&np->meta);

  /* Inactive budgets do not limit; with none active, unlimited. */
  np = pool("[{nodes: '0', schedule: '0 8 * * mon-fri', duration: 10h}]");
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 10, now),
      CARP_BUDGET_UNLIMITED);
  assert_int_equal(carp_nodepool_allowed_disruptions(
                       np, CARP_DISRUPT_EMPTY, 10, at("2026-03-09T09:00:00Z")),
                   0);
  carp_obj_unref(&np->meta);

  /* A bad schedule fails closed, for the reasons it applies to only. */
  np = pool("[{nodes: '50%', schedule: '0 25 * * *', duration: 1h, reasons: "
            "[Drifted]}, {nodes: '3'}]");
  assert_false(np->valid);
  assert_int_equal(carp_budget_is_active(&np->budgets[0], now), CARP_EPARSE);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_DRIFTED, 10, now), 0);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 10, now), 3);
  carp_obj_unref(&np->meta);

  /* Half a window (schedule without duration) never activates, as in
   * Karpenter; a duration without a schedule fails closed. */
  np = pool("[{nodes: '0', schedule: '* * * * *'}, {nodes: '1', duration: "
            "1h, reasons: [Drifted]}]");
  assert_false(np->valid);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 10, now),
      CARP_BUDGET_UNLIMITED);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_DRIFTED, 10, now), 0);
  carp_obj_unref(&np->meta);
}

static void test_reason_names(void **state)
{
  enum carp_disruption_reason r;
  assert_string_equal(carp_disruption_reason_name(CARP_DISRUPT_EMPTY), "Empty");
  assert_int_equal(carp_disruption_reason_parse("Drifted", &r), 0);
  assert_int_equal(r, CARP_DISRUPT_DRIFTED);
  assert_int_equal(carp_disruption_reason_parse("drifted", &r), CARP_EINVAL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_parse),   LEAK_TEST(test_fields),
      LEAK_TEST(test_next),    LEAK_TEST(test_active),
      LEAK_TEST(test_allowed), LEAK_TEST(test_reason_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
