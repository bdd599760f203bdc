/* quantity.c: exact parsing of Kubernetes quantities.
 *
 * The number is read as an integer mantissa with a power-of-ten exponent
 * (and, for binary suffixes, a power of two), then scaled to millis with
 * 128-bit arithmetic. Digits that do not fit the mantissa only mark the
 * value "inexact", which rounds the result up, as resource.Quantity does. */
#include "carpenter/quantity.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/error.h"

#define MANT_LIMIT ((__int128)1000000000000000000LL * 1000000000000000000LL)

struct suffix {
  const char *text;
  int exp10;
  int exp2;
};

static const struct suffix suffixes[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50},
    {"Ei", 0, 60}, {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},
    {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
};

static int parse_exponent(const char *p, int *out)
{
  int sign = 1, v = 0, any = 0;
  if (*p == '+' || *p == '-') {
    sign = *p == '-' ? -1 : 1;
    p++;
  }
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (*p - '0');
    if (v > 1000)
      return CARP_EPARSE;
    p++;
    any = 1;
  }
  if (!any || *p)
    return CARP_EPARSE;
  *out = sign * v;
  return 0;
}

int carp_quantity_parse(const char *s, int64_t *milli)
{
  __int128 mant = 0, value;
  int exp10 = 0, exp2 = 0, negative = 0, any = 0, inexact = 0, i;
  const char *p = s;

  if (!s)
    return CARP_EPARSE;
  if (*p == '+' || *p == '-') {
    negative = *p == '-';
    p++;
  }
  while (*p >= '0' && *p <= '9') {
    if (mant < MANT_LIMIT)
      mant = mant * 10 + (*p - '0');
    else {
      exp10++;
      inexact |= *p != '0';
    }
    p++;
    any = 1;
  }
  if (*p == '.') {
    p++;
    while (*p >= '0' && *p <= '9') {
      if (mant < MANT_LIMIT) {
        mant = mant * 10 + (*p - '0');
        exp10--;
      } else {
        inexact |= *p != '0';
      }
      p++;
      any = 1;
    }
  }
  if (!any)
    return CARP_EPARSE;
  if (*p) {
    int found = 0;
    if ((*p == 'e' || *p == 'E') && p[1] != '\0') {
      int e;
      if (parse_exponent(p + 1, &e) == 0) {
        exp10 += e;
        found = 1;
      }
    }
    for (i = 0; !found && i < (int)(sizeof(suffixes) / sizeof(suffixes[0]));
         i++) {
      if (strcmp(p, suffixes[i].text) == 0) {
        exp10 += suffixes[i].exp10;
        exp2 = suffixes[i].exp2;
        found = 1;
      }
    }
    if (!found)
      return CARP_EPARSE;
  }

  exp10 += 3; /* to millis */
  value = mant;
  if (value != 0) {
    while (exp10 > 0) {
      if (value > (__int128)INT64_MAX)
        return CARP_ETOOBIG;
      value *= 10;
      exp10--;
    }
    for (i = 0; i < exp2; i++) {
      if (value > (__int128)INT64_MAX)
        return CARP_ETOOBIG;
      value *= 2;
    }
    while (exp10 < 0) {
      if (value % 10)
        inexact = 1;
      value /= 10;
      exp10++;
      if (value == 0) {
        /* Everything left is fraction: the rounding below makes it 1. */
        exp10 = 0;
      }
    }
  } else if (inexact) {
    value = 0;
  }
  if (inexact)
    value += 1; /* round up (away from zero) to the next milli */
  if (value > (__int128)INT64_MAX)
    return CARP_ETOOBIG;
  *milli = negative ? -(int64_t)value : (int64_t)value;
  return 0;
}

int64_t carp_quantity_value(int64_t milli)
{
  if (milli >= 0)
    return milli / 1000 + (milli % 1000 != 0);
  return milli / 1000;
}

void carp_quantity_format(int64_t milli, enum carp_quantity_format fmt,
                          char out[CARP_QUANTITY_LEN])
{
  static const char *const dec[] = {"", "k", "M", "G", "T", "P", "E"};
  static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int64_t v;
  int i = 0;

  if (milli % 1000 != 0) {
    snprintf(out, CARP_QUANTITY_LEN, "%lldm", (long long)milli);
    return;
  }
  v = milli / 1000;
  if (v != 0) {
    if (fmt == CARP_QUANTITY_BINARY) {
      while (i < 6 && v % 1024 == 0) {
        v /= 1024;
        i++;
      }
    } else {
      while (i < 6 && v % 1000 == 0) {
        v /= 1000;
        i++;
      }
    }
  }
  snprintf(out, CARP_QUANTITY_LEN, "%lld%s", (long long)v,
           fmt == CARP_QUANTITY_BINARY ? bin[i] : dec[i]);
}
