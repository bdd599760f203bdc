/* Module core (internal/core). Structured logging: one line per record, JSON by
 * default (as Karpenter's zap logger writes: level, time, logger, message, then
 * fields) or text.
 *
 *   CARP_LOG_INFO("provisioner", "created nodeclaim",
 *                 CARP_F_STR("nodeclaim", name), CARP_F_INT("pods", n));
 *
 * The message is a fixed sentence; values go into fields. A field made with
 * CARP_F_SECRET is always printed as "<redacted>". */
#ifndef CARP_LOG_H
#define CARP_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum carp_log_level {
  CARP_LOG_DEBUG = 0,
  CARP_LOG_INFO,
  CARP_LOG_WARN,
  CARP_LOG_ERROR,
};

enum carp_log_format {
  CARP_LOG_FORMAT_JSON = 0,
  CARP_LOG_FORMAT_TEXT,
};

enum carp_log_field_type {
  CARP_LOG_FIELD_END = 0,
  CARP_LOG_FIELD_STR,
  CARP_LOG_FIELD_STRN,
  CARP_LOG_FIELD_INT,
  CARP_LOG_FIELD_UINT,
  CARP_LOG_FIELD_DOUBLE,
  CARP_LOG_FIELD_BOOL,
  CARP_LOG_FIELD_ERR,
  CARP_LOG_FIELD_DURATION,
  CARP_LOG_FIELD_SECRET,
};

struct carp_log_field {
  const char *key;
  enum carp_log_field_type type;
  union {
    const char *s;
    int64_t i;
    uint64_t u;
    double d;
  } v;
  size_t len; /* CARP_LOG_FIELD_STRN only */
};

#define CARP_F_STR(k, val)                                                     \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_STR, .v.s = (val)})
#define CARP_F_STRN(k, val, n)                                                 \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_STRN, .v.s = (val), .len = (n)})
#define CARP_F_INT(k, val)                                                     \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_INT, .v.i = (int64_t)(val)})
#define CARP_F_UINT(k, val)                                                    \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_UINT, .v.u = (uint64_t)(val)})
#define CARP_F_DOUBLE(k, val)                                                  \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_DOUBLE, .v.d = (double)(val)})
#define CARP_F_BOOL(k, val)                                                    \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_BOOL, .v.i = !!(val)})
/* An error code: printed as its message, with the name in "errorCode". */
#define CARP_F_ERR(err)                                                        \
  ((struct carp_log_field){                                                    \
      .key = "error", .type = CARP_LOG_FIELD_ERR, .v.i = (int64_t)(err)})
/* Milliseconds, printed as a Go duration ("1m30s"). */
#define CARP_F_DURATION(k, ms)                                                 \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_DURATION, .v.i = (int64_t)(ms)})
#define CARP_F_SECRET(k, val)                                                  \
  ((struct carp_log_field){                                                    \
      .key = (k), .type = CARP_LOG_FIELD_SECRET, .v.s = (val)})

void carp_log_set_level(enum carp_log_level level);
void carp_log_set_format(enum carp_log_format format);
/* Where lines go (stderr by default). Tests point it at a memory stream. */
void carp_log_set_output(FILE *out);
enum carp_log_level carp_log_get_level(void);
int carp_log_enabled(enum carp_log_level level);
/* "debug", "info", "warn"/"warning", "error". */
int carp_log_level_parse(const char *s, enum carp_log_level *level);
void carp_log_flush(void);

void carp_log_emit(enum carp_log_level level, const char *logger,
                   const char *msg, const struct carp_log_field *fields,
                   size_t nfields);

#define CARP_LOG(level, logger, msg, ...)                                      \
  do {                                                                         \
    if (carp_log_enabled(level)) {                                             \
      const struct carp_log_field carp_log_fields__[] = {                      \
          {.type = CARP_LOG_FIELD_END} __VA_OPT__(, ) __VA_ARGS__};            \
      carp_log_emit((level), (logger), (msg), carp_log_fields__ + 1,           \
                    CARP_ARRAY_LEN(carp_log_fields__) - 1);                    \
    }                                                                          \
  } while (0)

#define CARP_LOG_DEBUG(logger, msg, ...)                                       \
  CARP_LOG(CARP_LOG_DEBUG, logger, msg __VA_OPT__(, ) __VA_ARGS__)
#define CARP_LOG_INFO(logger, msg, ...)                                        \
  CARP_LOG(CARP_LOG_INFO, logger, msg __VA_OPT__(, ) __VA_ARGS__)
#define CARP_LOG_WARN(logger, msg, ...)                                        \
  CARP_LOG(CARP_LOG_WARN, logger, msg __VA_OPT__(, ) __VA_ARGS__)
#define CARP_LOG_ERROR(logger, msg, ...)                                       \
  CARP_LOG(CARP_LOG_ERROR, logger, msg __VA_OPT__(, ) __VA_ARGS__)

#ifndef CARP_ARRAY_LEN
#define CARP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#endif

#endif
