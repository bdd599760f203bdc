/* fold.c: grouping per-pod log lines by reason (see fold.h). Groups keep
 * the order in which their first line came, so the output is stable. */
#include "fold.h"

#include <stdint.h>
#include <string.h>

#include "carpenter/alloc.h"

void carp_prov_fold_init(struct carp_prov_fold *f)
{
  memset(f, 0, sizeof(*f));
  carp_map_init(&f->index);
}

void carp_prov_fold_add(struct carp_prov_fold *f, const char *key,
                        const char *example)
{
  void *slot = carp_map_gets(&f->index, key);
  struct carp_prov_fold_group *g;
  f->total++;
  if (slot) {
    g = &f->groups[(uintptr_t)slot - 1];
  } else {
    if (f->n == f->cap) {
      f->cap = f->cap ? f->cap * 2 : 8;
      f->groups = carp_reallocarray(f->groups, f->cap, sizeof(*f->groups));
    }
    g = &f->groups[f->n++];
    g->key = carp_strdup(key);
    g->count = 0;
    carp_buf_init(&g->examples, CARP_BUF_UNLIMITED);
    carp_map_puts(&f->index, g->key, (void *)(uintptr_t)f->n);
  }
  if (g->count++ < CARP_PROV_FOLD_EXAMPLES && example)
    carp_buf_printf(&g->examples, "%s%s", g->examples.len ? ", " : "", example);
}

void carp_prov_fold_free(struct carp_prov_fold *f)
{
  size_t i;
  for (i = 0; i < f->n; i++) {
    carp_free(f->groups[i].key);
    carp_buf_free(&f->groups[i].examples);
  }
  carp_free(f->groups);
  carp_map_free(&f->index);
  memset(f, 0, sizeof(*f));
}
