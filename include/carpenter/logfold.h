/* Module core (internal/core). Log folding: a line that would repeat per retry,
 * per pod or per request is written once per interval, with the number of lines
 * left out since the previous one in a "repeated" field.
 *
 *   static struct carp_logfold fold; (carp_logfold_init once)
 *   CARP_LOG_FOLDED(&fold, claim_name, CARP_LOG_WARN, "lifecycle",
 *                   "launch failed, will retry", CARP_F_ERR(rc));
 *
 * Each key (typically the object the line is about, or the line's own
 * message for lines about no object) folds on its own. Memory is bounded:
 * past max_keys, keys whose interval has passed are dropped, and when none
 * has, the newcomers share one overflow key, so a flood of distinct keys
 * still writes one line per interval. The count of a burst is reported by
 * the next line of its key (a burst that stops for good is not reported
 * again), which needs no timer and keeps the helper loop-free. */
#ifndef CARP_LOGFOLD_H
#define CARP_LOGFOLD_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/timeutil.h"

struct carp_logfold {
  struct carp_map keys; /* key -> struct carp_logfold_entry */
  uint64_t interval_ms;
  size_t max_keys;
  uint64_t overflow_at;     /* last line written under the overflow key */
  uint64_t overflow_folded; /* lines left out under it since */
  int overflow_seen;
};

/* interval_ms 0: 30 s; max_keys 0: 4096. */
void carp_logfold_init(struct carp_logfold *f, uint64_t interval_ms,
                       size_t max_keys);
void carp_logfold_free(struct carp_logfold *f);
/* Counts one line of key at now_ms (monotonic). Returns 1 when it is to be
 * written - the first for key, or the first after interval_ms since the
 * last written - with *folded set to the lines of key left out since;
 * returns 0 when it is to be left out. */
int carp_logfold_pass(struct carp_logfold *f, const char *key, uint64_t now_ms,
                      uint64_t *folded);
/* Forgets key (its object is gone, or the condition behind the line
 * ended): its next line is written at once. */
void carp_logfold_forget(struct carp_logfold *f, const char *key);
/* Keys tracked (for tests). */
size_t carp_logfold_len(const struct carp_logfold *f);

#define CARP_LOG_FOLDED(fold, key, level, logger, msg, ...)                    \
  do {                                                                         \
    uint64_t carp_folded__;                                                    \
    if (carp_log_enabled(level) &&                                             \
        carp_logfold_pass((fold), (key), carp_time_mono_ms(), &carp_folded__)) \
      CARP_LOG(level, logger, msg __VA_OPT__(, ) __VA_ARGS__,                  \
               CARP_F_UINT("repeated", carp_folded__));                        \
  } while (0)

#endif
