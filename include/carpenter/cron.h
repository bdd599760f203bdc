/* Module api (internal/api). Cron schedules of NodePool disruption budgets,
 * parsed the way Karpenter parses them (robfig/cron's standard parser,
 * evaluated in UTC):
 *
 *   minute hour day-of-month month day-of-week
 *
 * Each field takes "*" (or "?"), a value, a range "a-b", a step "*\/n",
 * "a-b/n" or "a/n" (a to the field's maximum), and comma-separated lists of
 * those. Months and weekdays also take names (jan..dec, sun..sat, any
 * case); weekdays run 0 (Sunday) to 6. The descriptors @yearly, @annually,
 * @monthly, @weekly, @daily, @midnight and @hourly stand for their usual
 * five fields. As in cron (and robfig), when both day fields are
 * restricted a day matches if either does; a field that starts with "*" or
 * "?" counts as unrestricted. Time zones are not supported. */
#ifndef CARP_CRON_H
#define CARP_CRON_H

#include <stdint.h>

struct carp_cron {
  uint64_t minutes; /* bit m: minute m (0..59) */
  uint32_t hours;   /* bit h (0..23) */
  uint32_t dom;     /* bit d (1..31) */
  uint16_t months;  /* bit m (1..12) */
  uint8_t dow;      /* bit d (0..6, 0 = Sunday) */
  uint8_t dom_star; /* the field started with '*' or '?' */
  uint8_t dow_star;
};

#define CARP_CRON_ERR_LEN 128

/* Parses s. On error returns CARP_EPARSE and, when err is not NULL, a short
 * reason ("expected exactly 5 fields, found 4"). */
int carp_cron_parse(const char *s, struct carp_cron *out,
                    char err[CARP_CRON_ERR_LEN]);

/* The first time strictly after t (epoch ms, UTC) that matches, on a whole
 * minute, or -1 when nothing matches within five years (for example
 * "0 0 30 2 *"), as robfig's Next returns the zero time. */
int64_t carp_cron_next(const struct carp_cron *c, int64_t t_ms);

#endif
