/* log.c: the structured logger. A record is built in a local buffer and
 * written with one fwrite, so lines from one process never interleave.
 * Strings are escaped for JSON (control characters, quotes, invalid UTF-8
 * replaced by U+FFFD); text format quotes values that need it. */
#include "carpenter/log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "carpenter/buf.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/timeutil.h"

#define LOG_LINE_MAX (64 * 1024)

static enum carp_log_level log_level = CARP_LOG_INFO;
static enum carp_log_format log_format = CARP_LOG_FORMAT_JSON;
static FILE *log_out;

void carp_log_set_level(enum carp_log_level level)
{
  log_level = level;
}

void carp_log_set_format(enum carp_log_format format)
{
  log_format = format;
}

void carp_log_set_output(FILE *out)
{
  log_out = out;
}

enum carp_log_level carp_log_get_level(void)
{
  return log_level;
}

int carp_log_enabled(enum carp_log_level level)
{
  return level >= log_level;
}

int carp_log_level_parse(const char *s, enum carp_log_level *level)
{
  if (!strcasecmp(s, "debug"))
    *level = CARP_LOG_DEBUG;
  else if (!strcasecmp(s, "info"))
    *level = CARP_LOG_INFO;
  else if (!strcasecmp(s, "warn") || !strcasecmp(s, "warning"))
    *level = CARP_LOG_WARN;
  else if (!strcasecmp(s, "error"))
    *level = CARP_LOG_ERROR;
  else
    return CARP_EINVAL;
  return 0;
}

void carp_log_flush(void)
{
  fflush(log_out ? log_out : stderr);
}

static const char *level_name(enum carp_log_level level)
{
  switch (level) {
  case CARP_LOG_DEBUG:
    return "DEBUG";
  case CARP_LOG_INFO:
    return "INFO";
  case CARP_LOG_WARN:
    return "WARN";
  case CARP_LOG_ERROR:
    return "ERROR";
  }
  return "INFO";
}

/* Length of a valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
  size_t len, i;
  unsigned cp;
  if (p[0] < 0x80)
    return 1;
  if ((p[0] & 0xe0) == 0xc0) {
    len = 2;
    cp = p[0] & 0x1f;
  } else if ((p[0] & 0xf0) == 0xe0) {
    len = 3;
    cp = p[0] & 0x0f;
  } else if ((p[0] & 0xf8) == 0xf0) {
    len = 4;
    cp = p[0] & 0x07;
  } else {
    return 0;
  }
  if (len > n)
    return 0;
  for (i = 1; i < len; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

static void put_json_string(struct carp_buf *b, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  carp_buf_putc(b, '"');
  while (i < n) {
    unsigned char c = p[i];
    size_t len;
    if (c == '"' || c == '\\') {
      carp_buf_putc(b, '\\');
      carp_buf_putc(b, (char)c);
      i++;
    } else if (c == '\n') {
      carp_buf_puts(b, "\\n");
      i++;
    } else if (c == '\t') {
      carp_buf_puts(b, "\\t");
      i++;
    } else if (c == '\r') {
      carp_buf_puts(b, "\\r");
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      carp_buf_printf(b, "\\u%04x", c);
      i++;
    } else if (c < 0x80) {
      carp_buf_putc(b, (char)c);
      i++;
    } else if ((len = utf8_len(p + i, n - i)) > 0) {
      carp_buf_append(b, p + i, len);
      i += len;
    } else {
      carp_buf_puts(b, "\\ufffd");
      i++;
    }
  }
  carp_buf_putc(b, '"');
}

static int text_needs_quotes(const char *s, size_t n)
{
  size_t i;
  if (n == 0)
    return 1;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f)
      return 1;
  }
  return 0;
}

static void put_string(struct carp_buf *b, const char *s, size_t n)
{
  if (log_format == CARP_LOG_FORMAT_JSON || text_needs_quotes(s, n))
    put_json_string(b, s, n);
  else
    carp_buf_append(b, s, n);
}

static void put_key(struct carp_buf *b, const char *key)
{
  if (log_format == CARP_LOG_FORMAT_JSON) {
    carp_buf_putc(b, ',');
    put_json_string(b, key, strlen(key));
    carp_buf_putc(b, ':');
  } else {
    carp_buf_putc(b, ' ');
    carp_buf_puts(b, key);
    carp_buf_putc(b, '=');
  }
}

static void put_field(struct carp_buf *b, const struct carp_log_field *f)
{
  char tmp[CARP_DURATION_LEN];
  const char *s;

  put_key(b, f->key ? f->key : "field");
  switch (f->type) {
  case CARP_LOG_FIELD_STR:
    s = f->v.s ? f->v.s : "";
    put_string(b, s, strlen(s));
    break;
  case CARP_LOG_FIELD_STRN:
    put_string(b, f->v.s ? f->v.s : "", f->v.s ? f->len : 0);
    break;
  case CARP_LOG_FIELD_INT:
    carp_buf_printf(b, "%lld", (long long)f->v.i);
    break;
  case CARP_LOG_FIELD_UINT:
    carp_buf_printf(b, "%llu", (unsigned long long)f->v.u);
    break;
  case CARP_LOG_FIELD_DOUBLE:
    carp_buf_printf(b, "%.6g", f->v.d);
    break;
  case CARP_LOG_FIELD_BOOL:
    carp_buf_puts(b, f->v.i ? "true" : "false");
    break;
  case CARP_LOG_FIELD_ERR:
    s = carp_strerror((int)f->v.i);
    put_string(b, s, strlen(s));
    put_key(b, "errorCode");
    s = carp_errname((int)f->v.i);
    put_string(b, s, strlen(s));
    break;
  case CARP_LOG_FIELD_DURATION:
    carp_duration_format(f->v.i, tmp);
    put_string(b, tmp, strlen(tmp));
    break;
  case CARP_LOG_FIELD_SECRET:
    put_string(b, "<redacted>", 10);
    break;
  case CARP_LOG_FIELD_END:
    put_string(b, "", 0);
    break;
  }
}

void carp_log_emit(enum carp_log_level level, const char *logger,
                   const char *msg, const struct carp_log_field *fields,
                   size_t nfields)
{
  struct carp_buf b;
  char ts[CARP_RFC3339_LEN];
  FILE *out = log_out ? log_out : stderr;
  size_t i;

  if (!carp_log_enabled(level))
    return;
  carp_buf_init(&b, LOG_LINE_MAX);
  carp_time_format_rfc3339(carp_time_wall_ms(), 1, ts);
  if (!logger)
    logger = "carpenter";
  if (!msg)
    msg = "";
  if (log_format == CARP_LOG_FORMAT_JSON) {
    carp_buf_printf(&b, "{\"level\":\"%s\",\"time\":\"%s\",\"logger\":",
                    level_name(level), ts);
    put_json_string(&b, logger, strlen(logger));
    carp_buf_puts(&b, ",\"message\":");
    put_json_string(&b, msg, strlen(msg));
  } else {
    carp_buf_printf(&b, "%s %-5s %s ", ts, level_name(level), logger);
    carp_buf_puts(&b, msg);
  }
  for (i = 0; i < nfields; i++)
    put_field(&b, &fields[i]);
  if (log_format == CARP_LOG_FORMAT_JSON)
    carp_buf_putc(&b, '}');
  if (carp_buf_putc(&b, '\n') != 0) {
    /* Over the line cap: say so rather than print a truncated record. */
    carp_buf_reset(&b);
    carp_buf_printf(&b,
                    "{\"level\":\"%s\",\"time\":\"%s\",\"logger\":\"log\","
                    "\"message\":\"log record too long, dropped\"}\n",
                    level_name(level), ts);
  }
  fwrite(b.ptr, 1, b.len, out);
  if (out != stderr)
    fflush(out);
  carp_buf_free(&b);
}
