/* cron.c: the cron schedules of disruption budgets, parsed and stepped
 * exactly as robfig/cron v3's standard parser and SpecSchedule.Next do
 * (that is what Karpenter runs), always in UTC. */
#include "carpenter/cron.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"

#define STAR_BIT (1ULL << 63)

struct bounds {
  unsigned min, max;
  const char *const *names; /* index = value, NULL-terminated */
};

static const char *const month_names[] = {
    "",    "jan", "feb", "mar", "apr", "may", "jun",
    "jul", "aug", "sep", "oct", "nov", "dec", NULL,
};
static const char *const dow_names[] = {
    "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL,
};

static const struct bounds field_bounds[5] = {
    {0, 59, NULL},        {0, 23, NULL},     {1, 31, NULL},
    {1, 12, month_names}, {0, 6, dow_names},
};

static int fail(char *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(char *err, const char *fmt, ...)
{
  va_list ap;
  if (err) {
    va_start(ap, fmt);
    vsnprintf(err, CARP_CRON_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return CARP_EPARSE;
}

/* A number (optional '+', digits) or, when names is set, a name. */
static int int_or_name(const char *s, size_t len, const struct bounds *b,
                       unsigned *out, char *err)
{
  size_t i = 0;
  unsigned long v = 0;
  if (b->names) {
    unsigned k;
    for (k = 0; b->names[k]; k++) {
      if (*b->names[k] && strlen(b->names[k]) == len &&
          !strncasecmp(b->names[k], s, len)) {
        *out = k;
        return 0;
      }
    }
  }
  if (i < len && s[i] == '+')
    i++;
  if (i == len)
    return fail(err, "failed to parse int from an empty value");
  for (; i < len; i++) {
    if (!isdigit((unsigned char)s[i]) || v > 100000)
      return fail(err, "failed to parse int from '%.*s'", (int)len, s);
    v = v * 10 + (unsigned long)(s[i] - '0');
  }
  *out = (unsigned)v;
  return 0;
}

static uint64_t bits(unsigned lo, unsigned hi, unsigned step)
{
  uint64_t b = 0;
  unsigned i;
  for (i = lo; i <= hi; i += step)
    b |= 1ULL << i;
  return b;
}

/* One comma-separated part of a field (robfig's getRange). */
static int range(const char *s, size_t len, const struct bounds *b,
                 uint64_t *out, char *err)
{
  const char *slash = memchr(s, '/', len);
  size_t rlen = slash ? (size_t)(slash - s) : len;
  const char *dash = memchr(s, '-', rlen);
  unsigned start, end, step = 1;
  uint64_t extra = 0;
  int single = dash == NULL;

  if (slash && memchr(slash + 1, '/', len - rlen - 1))
    return fail(err, "too many slashes: %.*s", (int)len, s);
  if ((rlen == 1 && (s[0] == '*' || s[0] == '?')) ||
      (dash && dash - s == 1 && (s[0] == '*' || s[0] == '?'))) {
    start = b->min;
    end = b->max;
    extra = STAR_BIT;
  } else {
    size_t l1 = dash ? (size_t)(dash - s) : rlen;
    if (int_or_name(s, l1, b, &start, err))
      return CARP_EPARSE;
    if (!dash) {
      end = start;
    } else {
      const char *h = dash + 1;
      size_t l2 = rlen - l1 - 1;
      if (memchr(h, '-', l2))
        return fail(err, "too many hyphens: %.*s", (int)len, s);
      if (int_or_name(h, l2, b, &end, err))
        return CARP_EPARSE;
    }
  }
  if (slash) {
    const struct bounds plain = {0, 0, NULL};
    if (int_or_name(slash + 1, len - rlen - 1, &plain, &step, err))
      return CARP_EPARSE;
    /* "N/step" means "N-max/step". */
    if (single)
      end = b->max;
    if (step > 1)
      extra = 0;
  }
  if (start < b->min)
    return fail(err, "beginning of range (%u) below minimum (%u)", start,
                b->min);
  if (end > b->max)
    return fail(err, "end of range (%u) above maximum (%u)", end, b->max);
  if (start > end)
    return fail(err, "beginning of range (%u) beyond end of range (%u)", start,
                end);
  if (step == 0)
    return fail(err, "step of range should be a positive number");
  *out |= bits(start, end, step) | extra;
  return 0;
}

static int field(const char *s, size_t len, const struct bounds *b,
                 uint64_t *out, char *err)
{
  size_t i = 0;
  *out = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && s[j] != ',')
      j++;
    if (range(s + i, j - i, b, out, err))
      return CARP_EPARSE;
    i = j + 1;
  }
  return 0;
}

static const struct {
  const char *name;
  const char *spec;
} descriptors[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

int carp_cron_parse(const char *s, struct carp_cron *out,
                    char err[CARP_CRON_ERR_LEN])
{
  const char *p, *start[5];
  size_t len[5], n = 0, i, total;
  uint64_t f[5];

  memset(out, 0, sizeof(*out));
  if (err)
    err[0] = '\0';
  if (!s)
    return fail(err, "empty spec string");
  while (isspace((unsigned char)*s))
    s++;
  total = strlen(s);
  while (total && isspace((unsigned char)s[total - 1]))
    total--;
  if (total == 0)
    return fail(err, "empty spec string");
  if (s[0] == '@') {
    for (i = 0; i < CARP_ARRAY_LEN(descriptors); i++)
      if (strlen(descriptors[i].name) == total &&
          !strncmp(s, descriptors[i].name, total))
        return carp_cron_parse(descriptors[i].spec, out, err);
    return fail(err, "unrecognized descriptor: %.*s", (int)total, s);
  }
  for (p = s; p < s + total;) {
    while (p < s + total && isspace((unsigned char)*p))
      p++;
    if (p == s + total)
      break;
    if (n == 5)
      return fail(err, "expected exactly 5 fields, found more");
    start[n] = p;
    while (p < s + total && !isspace((unsigned char)*p))
      p++;
    len[n] = (size_t)(p - start[n]);
    n++;
  }
  if (n != 5)
    return fail(err, "expected exactly 5 fields, found %zu", n);
  for (i = 0; i < 5; i++)
    if (field(start[i], len[i], &field_bounds[i], &f[i], err))
      return CARP_EPARSE;
  out->minutes = f[0] & ~STAR_BIT;
  out->hours = (uint32_t)f[1];
  out->dom = (uint32_t)f[2];
  out->months = (uint16_t)f[3];
  out->dow = (uint8_t)f[4];
  out->dom_star = (f[2] & STAR_BIT) != 0;
  out->dow_star = (f[4] & STAR_BIT) != 0;
  return 0;
}

static int day_matches(const struct carp_cron *c, const struct tm *tm)
{
  int dom = (c->dom >> tm->tm_mday) & 1;
  int dow = (c->dow >> tm->tm_wday) & 1;
  if (c->dom_star || c->dow_star)
    return dom && dow;
  return dom || dow;
}

static int64_t floor_div(int64_t a, int64_t b)
{
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int64_t carp_cron_next(const struct carp_cron *c, int64_t t_ms)
{
  time_t t = (time_t)(floor_div(t_ms, 1000) + 1); /* the upcoming second */
  struct tm tm;
  int added = 0, year_limit;

  gmtime_r(&t, &tm);
  year_limit = tm.tm_year + 5;
wrap:
  if (tm.tm_year > year_limit)
    return -1;
  while (!((c->months >> (tm.tm_mon + 1)) & 1)) {
    if (!added) {
      added = 1;
      tm.tm_mday = 1;
      tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    }
    tm.tm_mon++;
    t = timegm(&tm);
    gmtime_r(&t, &tm);
    if (tm.tm_mon == 0)
      goto wrap;
  }
  while (!day_matches(c, &tm)) {
    if (!added) {
      added = 1;
      tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    }
    tm.tm_mday++;
    t = timegm(&tm);
    gmtime_r(&t, &tm);
    if (tm.tm_mday == 1)
      goto wrap;
  }
  while (!((c->hours >> tm.tm_hour) & 1)) {
    if (!added) {
      added = 1;
      tm.tm_min = tm.tm_sec = 0;
    }
    tm.tm_hour++;
    t = timegm(&tm);
    gmtime_r(&t, &tm);
    if (tm.tm_hour == 0)
      goto wrap;
  }
  while (!((c->minutes >> tm.tm_min) & 1)) {
    if (!added) {
      added = 1;
      tm.tm_sec = 0;
    }
    tm.tm_min++;
    t = timegm(&tm);
    gmtime_r(&t, &tm);
    if (tm.tm_min == 0)
      goto wrap;
  }
  /* The standard parser's seconds field is 0. */
  while (tm.tm_sec != 0) {
    added = 1;
    tm.tm_sec++;
    t = timegm(&tm);
    gmtime_r(&t, &tm);
    if (tm.tm_sec == 0)
      goto wrap;
  }
  return (int64_t)t * 1000;
}
