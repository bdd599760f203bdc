/* duration.c: Go-style durations. Parsing follows time.ParseDuration, with
 * exact integer arithmetic in nanoseconds (via 128-bit intermediates) and
 * overflow checks, then truncation to milliseconds. */
#include "carpenter/duration.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/error.h"

struct unit {
  const char *name;
  int64_t ns;
};

static const struct unit units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* µs, U+00B5 */
    {"\xce\xbcs", 1000}, /* μs, U+03BC */
    {"ms", 1000000},
    {"s", 1000000000LL},
    {"m", 60LL * 1000000000LL},
    {"h", 3600LL * 1000000000LL},
};

static const struct unit *match_unit(const char *p, size_t *len)
{
  const struct unit *best = NULL;
  size_t i, best_len = 0;
  for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    size_t n = strlen(units[i].name);
    if (strncmp(p, units[i].name, n) == 0 && n > best_len) {
      best = &units[i];
      best_len = n;
    }
  }
  *len = best_len;
  return best;
}

int carp_duration_parse(const char *s, int allow_never, int64_t *ms)
{
  const __int128 max_ns = (__int128)INT64_MAX * 1000000;
  __int128 total = 0;
  const char *p = s;

  if (!s || !*s)
    return CARP_EPARSE;
  if (strcmp(s, "Never") == 0) {
    if (!allow_never)
      return CARP_EPARSE;
    *ms = CARP_DURATION_NEVER;
    return 0;
  }
  if (*p == '+')
    p++;
  if (strcmp(p, "0") == 0) {
    *ms = 0;
    return 0;
  }
  if (!*p)
    return CARP_EPARSE;
  while (*p) {
    __int128 whole = 0, frac = 0, scale = 1;
    int any = 0;
    const struct unit *u;
    size_t ulen;
    while (*p >= '0' && *p <= '9') {
      whole = whole * 10 + (*p - '0');
      if (whole > max_ns)
        return CARP_EPARSE;
      p++;
      any = 1;
    }
    if (*p == '.') {
      p++;
      while (*p >= '0' && *p <= '9') {
        if (scale < (__int128)1000000000000000000LL) {
          frac = frac * 10 + (*p - '0');
          scale *= 10;
        }
        p++;
        any = 1;
      }
    }
    if (!any)
      return CARP_EPARSE;
    u = match_unit(p, &ulen);
    if (!u)
      return CARP_EPARSE;
    p += ulen;
    total += whole * u->ns + frac * u->ns / scale;
    if (total > max_ns)
      return CARP_EPARSE;
  }
  *ms = (int64_t)(total / 1000000);
  return 0;
}

void carp_duration_format(int64_t ms, char out[CARP_DURATION_LEN])
{
  char *p = out;
  size_t left = CARP_DURATION_LEN;
  int64_t h, m, s, rest;
  int n;

  if (ms == CARP_DURATION_NEVER) {
    snprintf(out, CARP_DURATION_LEN, "Never");
    return;
  }
  if (ms < 0) {
    /* Never produced by the parser; keep the output well defined. */
    snprintf(out, CARP_DURATION_LEN, "-%lldms", -(long long)ms);
    return;
  }
  if (ms == 0) {
    snprintf(out, CARP_DURATION_LEN, "0s");
    return;
  }
  if (ms < 1000) {
    snprintf(out, CARP_DURATION_LEN, "%lldms", (long long)ms);
    return;
  }
  h = ms / 3600000;
  m = ms / 60000 % 60;
  s = ms / 1000 % 60;
  rest = ms % 1000;
  out[0] = '\0';
  if (h) {
    n = snprintf(p, left, "%lldh", (long long)h);
    p += n;
    left -= (size_t)n;
  }
  if (m) {
    n = snprintf(p, left, "%lldm", (long long)m);
    p += n;
    left -= (size_t)n;
  }
  if (s || rest) {
    if (rest) {
      char frac[8];
      size_t len;
      snprintf(frac, sizeof(frac), "%03lld", (long long)rest);
      len = strlen(frac);
      while (len > 0 && frac[len - 1] == '0')
        frac[--len] = '\0';
      snprintf(p, left, "%lld.%ss", (long long)s, frac);
    } else {
      snprintf(p, left, "%llds", (long long)s);
    }
  }
}
