/* timeutil.c: monotonic and wall clocks, RFC 3339 formatting and parsing
 * without the C library's locale- and timezone-dependent functions. */
#include "carpenter/timeutil.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "carpenter/error.h"

uint64_t carp_time_mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t carp_time_wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
  int64_t era;
  unsigned yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = (unsigned)(y - era * 400);
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
  int64_t era;
  unsigned doe, yoe, doy, mp;
  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = (unsigned)(z - era * 146097);
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  *y = (int64_t)yoe + era * 400;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y += *m <= 2;
}

void carp_time_format_rfc3339(int64_t epoch_ms, int with_millis,
                              char out[CARP_RFC3339_LEN])
{
  int64_t secs = epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000;
  int64_t ms = epoch_ms - secs * 1000;
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t rem = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  if (with_millis)
    snprintf(out, CARP_RFC3339_LEN, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ",
             (long long)y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
             (int)(rem % 60), (int)ms);
  else
    snprintf(out, CARP_RFC3339_LEN, "%04lld-%02u-%02uT%02d:%02d:%02dZ",
             (long long)y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
             (int)(rem % 60));
}

static int digits(const char **p, int n, int *out)
{
  int v = 0, i;
  for (i = 0; i < n; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9')
      return CARP_EPARSE;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

static int expect(const char **p, char c)
{
  if (**p != c)
    return CARP_EPARSE;
  (*p)++;
  return 0;
}

int carp_time_parse_rfc3339(const char *s, int64_t *epoch_ms)
{
  static const unsigned mdays[] = {31, 29, 31, 30, 31, 30,
                                   31, 31, 30, 31, 30, 31};
  const char *p = s;
  int y, mo, d, h, mi, se, ms = 0, offset = 0;
  if (!s || digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) ||
      expect(&p, '-') || digits(&p, 2, &d))
    return CARP_EPARSE;
  if (*p != 'T' && *p != 't' && *p != ' ')
    return CARP_EPARSE;
  p++;
  if (digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &mi) ||
      expect(&p, ':') || digits(&p, 2, &se))
    return CARP_EPARSE;
  if (*p == '.') {
    int scale = 100, n = 0;
    p++;
    while (*p >= '0' && *p <= '9') {
      ms += (*p - '0') * scale;
      scale /= 10;
      p++;
      n++;
    }
    if (n == 0)
      return CARP_EPARSE;
  }
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p == '-' ? -1 : 1, oh, om;
    p++;
    if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om))
      return CARP_EPARSE;
    if (oh > 23 || om > 59)
      return CARP_EPARSE;
    offset = sign * (oh * 60 + om);
  } else {
    return CARP_EPARSE;
  }
  if (*p)
    return CARP_EPARSE;
  if (mo < 1 || mo > 12 || d < 1 || (unsigned)d > mdays[mo - 1] || h > 23 ||
      mi > 59 || se > 60)
    return CARP_EPARSE;
  if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
    return CARP_EPARSE;
  *epoch_ms = ((days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
                h * 3600 + mi * 60 + se - offset * 60) *
               1000) +
              ms;
  return 0;
}
