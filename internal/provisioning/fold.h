/* Folding per-pod log lines: a batch can hold 20,000 pods that fail for
 * the same reason, and one line per pod per batch buries everything else
 * (235,000 lines in 100 s were seen). Lines are grouped by their text
 * (the reason); each group keeps its count and the first few pod names,
 * and the caller writes one line per group. */
#ifndef CARP_PROV_FOLD_H
#define CARP_PROV_FOLD_H

#include <stddef.h>

#include "carpenter/buf.h"
#include "carpenter/map.h"

#define CARP_PROV_FOLD_EXAMPLES 3 /* pod names kept per group */

struct carp_prov_fold_group {
  char *key;
  size_t count;
  struct carp_buf examples; /* "ns/a, ns/b, ns/c" */
};

struct carp_prov_fold {
  struct carp_map index; /* key -> group index + 1 */
  struct carp_prov_fold_group *groups;
  size_t n, cap;
  size_t total; /* lines folded */
};

void carp_prov_fold_init(struct carp_prov_fold *f);
void carp_prov_fold_add(struct carp_prov_fold *f, const char *key,
                        const char *example);
void carp_prov_fold_free(struct carp_prov_fold *f);

#endif
