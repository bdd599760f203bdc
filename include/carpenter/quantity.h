/* Module core (internal/core). Kubernetes resource quantities ("100m", "1.5Gi",
 * "2e3", "128974848") held as exact integers in thousandths of the unit:
 * millicores for CPU, millibytes for memory. int64 millis reach 9.2e15 units,
 * about 8 PiB. */
#ifndef CARP_QUANTITY_H
#define CARP_QUANTITY_H

#include <stdint.h>

#define CARP_QUANTITY_LEN 32

enum carp_quantity_format {
  CARP_QUANTITY_DECIMAL = 0, /* 100m, 2, 3k, 4M (CPU, pods) */
  CARP_QUANTITY_BINARY,      /* 128Mi, 1Gi, 1536Mi (memory, storage) */
};

/* Parses s; a value finer than a milli is rounded up, as Kubernetes does. */
int carp_quantity_parse(const char *s, int64_t *milli);
/* Canonical text for milli in the given format. */
void carp_quantity_format(int64_t milli, enum carp_quantity_format fmt,
                          char out[CARP_QUANTITY_LEN]);
/* Whole units, rounded up (Quantity.Value()). */
int64_t carp_quantity_value(int64_t milli);

#endif
