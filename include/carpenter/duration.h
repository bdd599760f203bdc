/* Module core (internal/core). Durations in Go's notation ("300ms", "1s",
 * "1m30s", "720h", "1.5h"), as Kubernetes and Karpenter write them, held as
 * integer milliseconds. "Never" is CARP_DURATION_NEVER. */
#ifndef CARP_DURATION_H
#define CARP_DURATION_H

#include <stdint.h>

#define CARP_DURATION_NEVER INT64_MAX
#define CARP_DURATION_LEN   40

/* Parses s into *ms. Negative values are refused; units are ns, us, µs, ms,
 * s, m and h; fractions below a millisecond are truncated. "Never" is
 * accepted only when allow_never is set. */
int carp_duration_parse(const char *s, int allow_never, int64_t *ms);
/* Shortest form that parses back to the same value: "1m30s", "720h", "1.5s",
 * "250ms", "0s", "Never". */
void carp_duration_format(int64_t ms, char out[CARP_DURATION_LEN]);

#endif
