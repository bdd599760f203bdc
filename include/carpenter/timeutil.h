/* Module core (internal/core). Clocks and timestamps. Decisions use monotonic
 * milliseconds; wall-clock time appears only in Kubernetes timestamps (RFC
 * 3339, UTC). */
#ifndef CARP_TIMEUTIL_H
#define CARP_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

uint64_t carp_time_mono_ms(void);
/* Milliseconds since the Unix epoch. */
int64_t carp_time_wall_ms(void);

#define CARP_RFC3339_LEN 64
/* "2026-11-22T10:50:00Z", or with millis "2026-11-22T10:50:00.123Z". */
void carp_time_format_rfc3339(int64_t epoch_ms, int with_millis,
                              char out[CARP_RFC3339_LEN]);
/* Parses RFC 3339 (Z or a numeric offset, optional fraction) into epoch ms. */
int carp_time_parse_rfc3339(const char *s, int64_t *epoch_ms);

#endif
