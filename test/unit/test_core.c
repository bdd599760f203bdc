/* Unit tests for internal/core: errors, buffers, logging, time, durations,
 * quantities, backoff and random numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/arena.h"
#include "carpenter/backoff.h"
#include "carpenter/logfold.h"
#include "carpenter/base64.h"
#include "carpenter/buf.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/quantity.h"
#include "carpenter/rand.h"
#include "carpenter/timeutil.h"

static void test_error_names(void **state)
{
  assert_string_equal(carp_errname(CARP_ENOTFOUND), "ENOTFOUND");
  assert_string_equal(carp_strerror(CARP_ENOTFOUND), "not found");
  assert_string_equal(carp_errname(CARP_ETIMEDOUT), "ETIMEDOUT");
  assert_string_equal(carp_strerror(CARP_ENOMEM), "Cannot allocate memory");
  assert_string_equal(carp_errname(0), "OK");
  assert_string_equal(carp_errname(CARP_ERR_BASE - 999), "EUNKNOWN");
  assert_string_equal(carp_errname(CARP_EINSUFFICIENT_CAPACITY),
                      "EINSUFFICIENT_CAPACITY");
}

static void test_buf_cap_and_printf(void **state)
{
  struct carp_buf b;
  char *s;
  size_t len;
  carp_buf_init(&b, 10);
  assert_string_equal(carp_buf_cstr(&b), "");
  assert_int_equal(carp_buf_puts(&b, "hello"), 0);
  assert_int_equal(carp_buf_printf(&b, "%d", 1234), 0);
  assert_string_equal(carp_buf_cstr(&b), "hello1234");
  assert_int_equal(carp_buf_puts(&b, "ab"), CARP_ETOOBIG);
  assert_string_equal(carp_buf_cstr(&b), "hello1234"); /* unchanged */
  assert_int_equal(carp_buf_putc(&b, '!'), 0);
  assert_int_equal(b.len, 10);
  carp_buf_consume(&b, 5);
  assert_string_equal(carp_buf_cstr(&b), "1234!");
  s = carp_buf_steal(&b, &len);
  assert_int_equal(len, 5);
  assert_string_equal(s, "1234!");
  assert_null(b.ptr);
  carp_free(s);

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(carp_buf_printf(&b, "%04d", i), 0);
  assert_int_equal(b.len, 4000);
  assert_memory_equal(b.ptr + 3996, "0999", 4);
  /* A formatted string longer than the stack scratch space. */
  carp_buf_reset(&b);
  assert_int_equal(carp_buf_printf(&b, "%0600d", 7), 0);
  assert_int_equal(b.len, 600);
  carp_buf_free(&b);
}

/* Captures log output in memory. */
static char *log_text;
static size_t log_len;
static FILE *log_stream;

static void log_capture_start(void)
{
  log_stream = open_memstream(&log_text, &log_len);
  carp_log_set_output(log_stream);
}

static const char *log_capture_end(void)
{
  fclose(log_stream);
  carp_log_set_output(NULL);
  return log_text;
}

static void test_log_json(void **state)
{
  const char *out;
  carp_log_set_level(CARP_LOG_INFO);
  carp_log_set_format(CARP_LOG_FORMAT_JSON);
  log_capture_start();
  CARP_LOG_DEBUG("test", "hidden");
  CARP_LOG_INFO("test", "created \"node\"", CARP_F_STR("name", "a\nb"),
                CARP_F_INT("count", -3), CARP_F_BOOL("ok", 1),
                CARP_F_SECRET("token", "s3cr3t-value"),
                CARP_F_ERR(CARP_ENOTFOUND), CARP_F_DURATION("after", 90000));
  CARP_LOG_ERROR("test", "bad bytes", CARP_F_STRN("raw", "\xff\x01z", 3));
  out = log_capture_end();
  assert_null(strstr(out, "hidden"));
  assert_null(strstr(out, "s3cr3t"));
  assert_non_null(strstr(out, "\"level\":\"INFO\""));
  assert_non_null(strstr(out, "\"logger\":\"test\""));
  assert_non_null(strstr(out, "\"message\":\"created \\\"node\\\"\""));
  assert_non_null(strstr(out, "\"name\":\"a\\nb\""));
  assert_non_null(strstr(out, "\"count\":-3"));
  assert_non_null(strstr(out, "\"ok\":true"));
  assert_non_null(strstr(out, "\"token\":\"<redacted>\""));
  assert_non_null(strstr(out, "\"error\":\"not found\""));
  assert_non_null(strstr(out, "\"errorCode\":\"ENOTFOUND\""));
  assert_non_null(strstr(out, "\"after\":\"1m30s\""));
  assert_non_null(strstr(out, "\"raw\":\"\\ufffd\\u0001z\""));
  /* Exactly two lines. */
  assert_int_equal(out[strlen(out) - 1], '\n');
  {
    int lines = 0;
    for (const char *p = out; *p; p++)
      lines += *p == '\n';
    assert_int_equal(lines, 2);
  }
  free(log_text);
}

static void test_log_text_and_levels(void **state)
{
  const char *out;
  enum carp_log_level level;
  assert_int_equal(carp_log_level_parse("debug", &level), 0);
  assert_int_equal(level, CARP_LOG_DEBUG);
  assert_int_equal(carp_log_level_parse("WARNING", &level), 0);
  assert_int_equal(level, CARP_LOG_WARN);
  assert_int_equal(carp_log_level_parse("loud", &level), CARP_EINVAL);

  carp_log_set_level(CARP_LOG_DEBUG);
  carp_log_set_format(CARP_LOG_FORMAT_TEXT);
  log_capture_start();
  CARP_LOG_DEBUG("kube", "watch started", CARP_F_STR("kind", "Pod"),
                 CARP_F_STR("note", "two words"),
                 CARP_F_SECRET("password", "hunter2"));
  out = log_capture_end();
  assert_non_null(strstr(out, " DEBUG kube watch started kind=Pod"));
  assert_non_null(strstr(out, "note=\"two words\""));
  assert_non_null(strstr(out, "password=<redacted>"));
  assert_null(strstr(out, "hunter2"));
  free(log_text);
  carp_log_set_format(CARP_LOG_FORMAT_JSON);
  carp_log_set_level(CARP_LOG_INFO);
}

static void test_rfc3339(void **state)
{
  char out[CARP_RFC3339_LEN];
  int64_t ms;
  carp_time_format_rfc3339(0, 0, out);
  assert_string_equal(out, "1970-01-01T00:00:00Z");
  carp_time_format_rfc3339(1795337400123LL, 1, out);
  assert_string_equal(out, "2026-11-22T08:50:00.123Z");
  assert_int_equal(carp_time_parse_rfc3339("2026-11-22T08:50:00.123Z", &ms), 0);
  assert_int_equal(ms, 1795337400123LL);
  assert_int_equal(carp_time_parse_rfc3339("2026-11-22T09:50:00+01:00", &ms),
                   0);
  assert_int_equal(ms, 1795337400000LL);
  assert_int_equal(carp_time_parse_rfc3339("2024-02-29T00:00:00Z", &ms), 0);
  assert_int_equal(carp_time_parse_rfc3339("2023-02-29T00:00:00Z", &ms),
                   CARP_EPARSE);
  assert_int_equal(carp_time_parse_rfc3339("2026-13-01T00:00:00Z", &ms),
                   CARP_EPARSE);
  assert_int_equal(carp_time_parse_rfc3339("2026-11-22 09:30:00", &ms),
                   CARP_EPARSE);
  assert_int_equal(carp_time_parse_rfc3339("2026-11-22T09:30:00Zjunk", &ms),
                   CARP_EPARSE);
  assert_int_equal(carp_time_parse_rfc3339("", &ms), CARP_EPARSE);
  /* Round trip across a range of instants, including before 1970. */
  for (int64_t t = -86400000LL * 800; t < 86400000LL * 40000;
       t += 86400000LL * 37 + 12345) {
    carp_time_format_rfc3339(t, 1, out);
    assert_int_equal(carp_time_parse_rfc3339(out, &ms), 0);
    assert_int_equal(ms, t);
  }
}

struct duration_case {
  const char *in;
  int allow_never;
  int rc;
  int64_t ms;
  const char *out; /* NULL: same as in */
};

static void test_duration(void **state)
{
  static const struct duration_case cases[] = {
      {"1s", 0, 0, 1000, NULL},
      {"1m30s", 0, 0, 90000, NULL},
      {"720h", 0, 0, 2592000000LL, NULL},
      {"0s", 0, 0, 0, NULL},
      {"0", 0, 0, 0, "0s"},
      {"300ms", 0, 0, 300, NULL},
      {"1.5s", 0, 0, 1500, NULL},
      {"1.5h", 0, 0, 5400000, "1h30m"},
      {"2h45m", 0, 0, 9900000, NULL},
      {"1h0m1s", 0, 0, 3600000 + 1000, "1h1s"},
      {"1500us", 0, 0, 1, "1ms"},
      {"999999ns", 0, 0, 0, "0s"},
      {"10\xc2\xb5s", 0, 0, 0, "0s"},
      {"+5m", 0, 0, 300000, "5m"},
      {"Never", 1, 0, CARP_DURATION_NEVER, NULL},
      {"Never", 0, CARP_EPARSE, 0, NULL},
      {"never", 1, CARP_EPARSE, 0, NULL},
      {"", 0, CARP_EPARSE, 0, NULL},
      {"5", 0, CARP_EPARSE, 0, NULL},
      {"-5s", 0, CARP_EPARSE, 0, NULL},
      {"5d", 0, CARP_EPARSE, 0, NULL},
      {"s", 0, CARP_EPARSE, 0, NULL},
      {".s", 0, CARP_EPARSE, 0, NULL},
      {"1s ", 0, CARP_EPARSE, 0, NULL},
      {"99999999999999999999h", 0, CARP_EPARSE, 0, NULL},
  };
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    int64_t ms = -1;
    char out[CARP_DURATION_LEN];
    int rc = carp_duration_parse(cases[i].in, cases[i].allow_never, &ms);
    if (rc != cases[i].rc)
      fail_msg("parse(%s) = %d, want %d", cases[i].in, rc, cases[i].rc);
    if (rc)
      continue;
    if (ms != cases[i].ms)
      fail_msg("parse(%s) = %lld ms, want %lld", cases[i].in, (long long)ms,
               (long long)cases[i].ms);
    carp_duration_format(ms, out);
    assert_string_equal(out, cases[i].out ? cases[i].out : cases[i].in);
  }
  /* Every formatted value parses back to itself. */
  for (int64_t ms = 0; ms < 400000000LL; ms = ms * 3 + 7) {
    char out[CARP_DURATION_LEN];
    int64_t back;
    carp_duration_format(ms, out);
    assert_int_equal(carp_duration_parse(out, 0, &back), 0);
    assert_int_equal(back, ms);
  }
}

struct quantity_case {
  const char *in;
  int rc;
  int64_t milli;
  enum carp_quantity_format fmt;
  const char *out;
};

static void test_quantity(void **state)
{
  static const struct quantity_case cases[] = {
      {"100m", 0, 100, CARP_QUANTITY_DECIMAL, "100m"},
      {"1", 0, 1000, CARP_QUANTITY_DECIMAL, "1"},
      {"1.5", 0, 1500, CARP_QUANTITY_DECIMAL, "1500m"},
      {"0.1", 0, 100, CARP_QUANTITY_DECIMAL, "100m"},
      {".5", 0, 500, CARP_QUANTITY_DECIMAL, "500m"},
      {"2e3", 0, 2000000, CARP_QUANTITY_DECIMAL, "2k"},
      {"2E3", 0, 2000000, CARP_QUANTITY_DECIMAL, "2k"},
      {"1e-3", 0, 1, CARP_QUANTITY_DECIMAL, "1m"},
      {"1k", 0, 1000000, CARP_QUANTITY_DECIMAL, "1k"},
      {"1M", 0, 1000000000LL, CARP_QUANTITY_DECIMAL, "1M"},
      {"1P", 0, 1000000000000000000LL, CARP_QUANTITY_DECIMAL, "1P"},
      {"1E", CARP_ETOOBIG, 0, 0, NULL},
      {"1Ki", 0, 1024000, CARP_QUANTITY_BINARY, "1Ki"},
      {"1.5Gi", 0, 1610612736000LL, CARP_QUANTITY_BINARY, "1536Mi"},
      {"128974848", 0, 128974848000LL, CARP_QUANTITY_BINARY, "123Mi"},
      {"129e6", 0, 129000000000LL, CARP_QUANTITY_DECIMAL, "129M"},
      {"123Mi", 0, 128974848000LL, CARP_QUANTITY_BINARY, "123Mi"},
      {"3100Mi", 0, 3250585600000LL, CARP_QUANTITY_BINARY, "3100Mi"},
      {"28Gi", 0, 30064771072000LL, CARP_QUANTITY_BINARY, "28Gi"},
      {"0.1m", 0, 1, CARP_QUANTITY_DECIMAL, "1m"},  /* rounded up */
      {"1001u", 0, 2, CARP_QUANTITY_DECIMAL, "2m"}, /* rounded up */
      {"100n", 0, 1, CARP_QUANTITY_DECIMAL, "1m"},
      {"0", 0, 0, CARP_QUANTITY_DECIMAL, "0"},
      {"0Gi", 0, 0, CARP_QUANTITY_BINARY, "0"},
      {"-1", 0, -1000, CARP_QUANTITY_DECIMAL, "-1"},
      {"+2", 0, 2000, CARP_QUANTITY_DECIMAL, "2"},
      {"1.000000000000000000000000000000000000001", 0, 1001,
       CARP_QUANTITY_DECIMAL, "1001m"},
      {"", CARP_EPARSE, 0, 0, NULL},
      {"m", CARP_EPARSE, 0, 0, NULL},
      {"1.5x", CARP_EPARSE, 0, 0, NULL},
      {"1 Gi", CARP_EPARSE, 0, 0, NULL},
      {"1gi", CARP_EPARSE, 0, 0, NULL},
      {"1e", CARP_EPARSE, 0, 0, NULL},
      {"1e+", CARP_EPARSE, 0, 0, NULL},
      {"--1", CARP_EPARSE, 0, 0, NULL},
      {"1..2", CARP_EPARSE, 0, 0, NULL},
      {"10Ei", CARP_ETOOBIG, 0, 0, NULL},
      {"1e100", CARP_ETOOBIG, 0, 0, NULL},
      {"99999999999999999999999", CARP_ETOOBIG, 0, 0, NULL},
  };
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    int64_t milli = -7;
    char out[CARP_QUANTITY_LEN];
    int rc = carp_quantity_parse(cases[i].in, &milli);
    if (rc != cases[i].rc)
      fail_msg("parse(%s) = %d, want %d", cases[i].in, rc, cases[i].rc);
    if (rc)
      continue;
    if (milli != cases[i].milli)
      fail_msg("parse(%s) = %lld, want %lld", cases[i].in, (long long)milli,
               (long long)cases[i].milli);
    carp_quantity_format(milli, cases[i].fmt, out);
    assert_string_equal(out, cases[i].out);
  }
  assert_int_equal(carp_quantity_value(1), 1);
  assert_int_equal(carp_quantity_value(1000), 1);
  assert_int_equal(carp_quantity_value(1001), 2);
  assert_int_equal(carp_quantity_value(0), 0);
}

static void test_backoff(void **state)
{
  struct carp_backoff b;
  struct carp_rand rng;
  carp_backoff_init(&b, 5, 1000, 2.0, 0);
  assert_int_equal(carp_backoff_next(&b), 5);
  assert_int_equal(carp_backoff_next(&b), 10);
  assert_int_equal(carp_backoff_next(&b), 20);
  for (int i = 0; i < 100; i++)
    assert_true(carp_backoff_next(&b) <= 1000);
  assert_int_equal(carp_backoff_next(&b), 1000);
  carp_backoff_reset(&b);
  assert_int_equal(carp_backoff_next(&b), 5);

  /* With jitter the delay stays in [d * (1 - jitter), d]. */
  carp_rand_seed(&rng, 42);
  carp_backoff_init(&b, 800, 30000, 2.0, 0.5);
  b.rng = &rng;
  for (unsigned n = 0; n < 20; n++) {
    uint64_t want = carp_backoff_peek(&b, n);
    uint64_t got = carp_backoff_next(&b);
    assert_true(got <= want);
    assert_true(got >= want / 2);
  }
  assert_int_equal(carp_backoff_peek(&b, 10), 30000);
}

static void test_retry(void **state)
{
  struct carp_retry r;
  struct carp_rand rng;
  uint64_t d, prev = 0;
  carp_rand_seed(&rng, 7);
  carp_retry_init(&r, 1000, 60000);
  r.backoff.rng = &rng;
  assert_int_equal(carp_retry_wait(&r, 5000), 0);
  /* Each failure waits longer (within jitter), never past the cap. */
  for (unsigned n = 0; n < 12; n++) {
    uint64_t want = carp_backoff_peek(&r.backoff, n);
    d = carp_retry_fail(&r, 10000);
    assert_true(d <= want && d >= want / 2);
    assert_true(d <= 60000);
    assert_int_equal(carp_retry_wait(&r, 10000), d);
    assert_int_equal(carp_retry_wait(&r, 10000 + (int64_t)d), 0);
    if (n > 0 && want < 60000)
      assert_true(d >= prev / 2);
    prev = d;
  }
  assert_int_equal(r.failures, 12);
  /* A failure a retry cannot fix waits minutes at once. */
  carp_retry_reset(&r);
  assert_int_equal(r.failures, 0);
  assert_int_equal(carp_retry_wait(&r, 0), 0);
  d = carp_retry_fail_permanent(&r, 0, 5 * 60000);
  assert_true(d >= 5 * 60000 && d <= 5 * 60000 * 5 / 4);
  assert_int_equal(carp_retry_wait(&r, 1000), d - 1000);
}

static void test_logfold(void **state)
{
  struct carp_logfold f;
  uint64_t folded = 99;
  unsigned i, written = 0;
  carp_logfold_init(&f, 1000, 4);
  /* The first line is written, the repeats within the interval are not,
   * and the next line after it carries their count. */
  assert_true(carp_logfold_pass(&f, "a", 0, &folded));
  assert_int_equal(folded, 0);
  for (i = 1; i <= 500; i++)
    assert_false(carp_logfold_pass(&f, "a", i, &folded));
  assert_true(carp_logfold_pass(&f, "a", 1000, &folded));
  assert_int_equal(folded, 500);
  /* Keys fold on their own. */
  assert_true(carp_logfold_pass(&f, "b", 1001, &folded));
  assert_int_equal(folded, 0);
  /* Forgetting a key writes its next line at once. */
  carp_logfold_forget(&f, "a");
  assert_true(carp_logfold_pass(&f, "a", 1002, &folded));
  assert_int_equal(folded, 0);
  /* A flood of distinct keys stays within max_keys and writes one line per
   * interval for the overflow. */
  for (i = 0; i < 1000; i++) {
    char key[32];
    snprintf(key, sizeof(key), "k%u", i);
    written += (unsigned)carp_logfold_pass(&f, key, 1500, &folded);
  }
  assert_true(carp_logfold_len(&f) <= 4);
  assert_int_equal(written, 2 + 1); /* two free slots, then the overflow */
  /* Once intervals pass, old keys make room again. */
  assert_true(carp_logfold_pass(&f, "late", 5000, &folded));
  assert_true(carp_logfold_len(&f) <= 4);
  carp_logfold_free(&f);
}

static void test_rand(void **state)
{
  struct carp_rand a, b;
  int counts[10] = {0};
  carp_rand_seed(&a, 7);
  carp_rand_seed(&b, 7);
  for (int i = 0; i < 100; i++)
    assert_int_equal(carp_rand_u64(&a), carp_rand_u64(&b));
  for (int i = 0; i < 100000; i++) {
    uint64_t x = carp_rand_below(&a, 10);
    assert_true(x < 10);
    counts[x]++;
  }
  for (int i = 0; i < 10; i++)
    assert_in_range(counts[i], 9000, 11000);
  for (int i = 0; i < 1000; i++) {
    double d = carp_rand_double(&a);
    assert_true(d >= 0 && d < 1);
  }
}

static void test_map(void **state)
{
  struct carp_map m;
  struct carp_map_iter it;
  char(*keys)[16] = carp_calloc(20000, 16);
  const char *k;
  size_t klen, seen = 0;
  void *v;

  carp_map_init(&m);
  assert_null(carp_map_gets(&m, "absent"));
  assert_null(carp_map_dels(&m, "absent"));
  for (int i = 0; i < 20000; i++) {
    snprintf(keys[i], 16, "key-%d", i);
    assert_null(carp_map_puts(&m, keys[i], (void *)(intptr_t)(i + 1)));
  }
  assert_int_equal(m.len, 20000);
  for (int i = 0; i < 20000; i++)
    assert_int_equal((intptr_t)carp_map_gets(&m, keys[i]), i + 1);
  /* Replace returns the old value. */
  assert_int_equal((intptr_t)carp_map_puts(&m, keys[5], (void *)7), 6);
  /* Delete every other key, then churn to exercise tombstones. */
  for (int i = 0; i < 20000; i += 2)
    assert_non_null(carp_map_dels(&m, keys[i]));
  assert_int_equal(m.len, 10000);
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 20000; i += 2)
      carp_map_puts(&m, keys[i], (void *)1);
    for (int i = 0; i < 20000; i += 2)
      carp_map_dels(&m, keys[i]);
  }
  assert_int_equal(m.len, 10000);
  assert_true(m.cap <= 65536); /* tombstones did not make it grow forever */
  for (int i = 0; i < 20000; i++) {
    if (i % 2 == 0)
      assert_null(carp_map_gets(&m, keys[i]));
    else
      assert_non_null(carp_map_gets(&m, keys[i]));
  }
  carp_map_iter_init(&it);
  while (carp_map_next(&m, &it, &k, &klen, &v)) {
    assert_int_equal(klen, strlen(k));
    seen++;
  }
  assert_int_equal(seen, 10000);
  /* Keys with embedded NULs and equal prefixes are distinct. */
  assert_null(carp_map_put(&m, "a\0b", 3, (void *)1));
  assert_null(carp_map_put(&m, "a\0c", 3, (void *)2));
  assert_int_equal((intptr_t)carp_map_get(&m, "a\0b", 3), 1);
  assert_int_equal((intptr_t)carp_map_get(&m, "a\0c", 3), 2);
  assert_null(carp_map_get(&m, "a", 1));
  carp_map_free(&m);
  carp_free(keys);
}

static void test_base64(void **state)
{
  static const struct {
    const char *plain;
    const char *enc;
  } cases[] = {{"", ""},
               {"f", "Zg=="},
               {"fo", "Zm8="},
               {"foo", "Zm9v"},
               {"foob", "Zm9vYg=="},
               {"fooba", "Zm9vYmE="},
               {"foobar", "Zm9vYmFy"},
               {"proxmox://pve/105", "cHJveG1veDovL3B2ZS8xMDU="}};
  struct carp_buf b;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  for (size_t i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    carp_buf_reset(&b);
    assert_int_equal(
        carp_base64_encode(&b, cases[i].plain, strlen(cases[i].plain)), 0);
    assert_string_equal(carp_buf_cstr(&b), cases[i].enc);
    carp_buf_reset(&b);
    assert_int_equal(carp_base64_decode(&b, cases[i].enc, strlen(cases[i].enc)),
                     0);
    assert_string_equal(carp_buf_cstr(&b), cases[i].plain);
  }
  carp_buf_reset(&b);
  assert_int_equal(carp_base64_decode(&b, "Zm9v\nYmFy\n", 10), 0);
  assert_string_equal(carp_buf_cstr(&b), "foobar");
  assert_int_equal(carp_base64_decode(&b, "Zm9", 3), CARP_EPARSE);
  assert_int_equal(carp_base64_decode(&b, "Zm=v", 4), CARP_EPARSE);
  assert_int_equal(carp_base64_decode(&b, "Zm9v!!==", 8), CARP_EPARSE);
  assert_int_equal(carp_base64_decode(&b, "Zh==", 4), CARP_EPARSE);
  carp_buf_free(&b);
}

static void test_intern(void **state)
{
  char buf[16];
  const char *a, *b, *c;
  size_t before = carp_intern_count();
  snprintf(buf, sizeof(buf), "zone-a");
  a = carp_interns(buf);
  b = carp_intern("zone-a-extra", 6);
  assert_ptr_equal(a, b); /* same bytes, same pointer */
  assert_ptr_not_equal(a, buf);
  assert_string_equal(a, "zone-a");
  assert_int_equal(carp_intern_len(a), 6);
  c = carp_interns("zone-b");
  assert_ptr_not_equal(a, c);
  assert_int_equal(carp_intern_count(), before + 2);
  assert_ptr_equal(carp_intern_ref(a), a);
  carp_intern_release(a);
  carp_intern_release(b);
  assert_int_equal(carp_intern_count(), before + 2); /* one ref left */
  carp_intern_release(a);
  assert_int_equal(carp_intern_count(), before + 1);
  carp_intern_release(c);
  assert_int_equal(carp_intern_count(), before);
  assert_null(carp_interns(NULL));
  carp_intern_release(NULL);
  /* Empty strings intern too. */
  a = carp_interns("");
  assert_string_equal(a, "");
  carp_intern_release(a);
  assert_int_equal(carp_intern_count(), before);
}

static void test_arena(void **state)
{
  struct carp_arena a;
  char *s;
  carp_arena_init(&a);
  for (int i = 0; i < 10000; i++) {
    int *p = carp_arena_array(&a, (size_t)(i % 37) + 1, sizeof(int));
    assert_int_equal((uintptr_t)p % sizeof(void *), 0);
    assert_int_equal(p[0], 0); /* zeroed */
    p[i % 37] = i;
  }
  s = carp_arena_strdup(&a, "hello");
  assert_string_equal(s, "hello");
  assert_null(carp_arena_strdup(&a, NULL));
  /* Bigger than a chunk. */
  memset(carp_arena_alloc(&a, 5 * 1024 * 1024), 1, 5 * 1024 * 1024);
  assert_true(a.used > 5 * 1024 * 1024);
  carp_arena_free(&a);
  assert_int_equal(a.used, 0);

  /* A reset keeps the memory: the same work again reuses it, and what is
   * handed out is zeroed again (alloc) however it was left. */
  {
    void *first, *again;
    carp_arena_init(&a);
    first = carp_arena_alloc(&a, 100);
    memset(first, 0xff, 100);
    for (int i = 0; i < 1000; i++)
      carp_arena_raw(&a, 1000);
    carp_arena_reset(&a);
    assert_int_equal(a.used, 0);
    assert_null(a.head);
    assert_non_null(a.spare);
    again = carp_arena_alloc(&a, 100);
    assert_ptr_equal(again, first);
    assert_int_equal(((unsigned char *)again)[99], 0);
    carp_arena_free(&a);
    assert_null(a.spare);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_names),
      cmocka_unit_test(test_buf_cap_and_printf),
      cmocka_unit_test(test_log_json),
      cmocka_unit_test(test_log_text_and_levels),
      cmocka_unit_test(test_rfc3339),
      cmocka_unit_test(test_duration),
      cmocka_unit_test(test_quantity),
      cmocka_unit_test(test_backoff),
      cmocka_unit_test(test_rand),
      cmocka_unit_test(test_retry),
      cmocka_unit_test(test_logfold),
      cmocka_unit_test(test_map),
      cmocka_unit_test(test_base64),
      cmocka_unit_test(test_intern),
      cmocka_unit_test(test_arena),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
