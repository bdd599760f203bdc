/* logfold.c: folding of repeated log lines (see logfold.h). One small
 * entry per key: when its last line was written and how many were left
 * out since. */
#include "carpenter/logfold.h"

#include <string.h>

#include "carpenter/alloc.h"

struct carp_logfold_entry {
  char *key;
  uint64_t written_at;
  uint64_t folded;
};

void carp_logfold_init(struct carp_logfold *f, uint64_t interval_ms,
                       size_t max_keys)
{
  memset(f, 0, sizeof(*f));
  carp_map_init(&f->keys);
  f->interval_ms = interval_ms ? interval_ms : 30 * 1000;
  f->max_keys = max_keys ? max_keys : 4096;
}

static void entry_free(struct carp_logfold_entry *e)
{
  carp_free(e->key);
  carp_free(e);
}

void carp_logfold_free(struct carp_logfold *f)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&f->keys, &it, NULL, NULL, &v))
    entry_free(v);
  carp_map_free(&f->keys);
}

/* Drops the keys whose interval has passed: their next line is written at
 * once anyway, so only the count of an unreported burst is lost. */
static void purge(struct carp_logfold *f, uint64_t now_ms)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&f->keys, &it, NULL, NULL, &v)) {
    struct carp_logfold_entry *e = v;
    if (now_ms - e->written_at >= f->interval_ms) {
      carp_map_dels(&f->keys, e->key);
      entry_free(e);
    }
  }
}

static int pass(uint64_t *written_at, uint64_t *count, int *seen,
                uint64_t interval, uint64_t now_ms, uint64_t *folded)
{
  if (*seen && now_ms - *written_at < interval) {
    (*count)++;
    return 0;
  }
  *folded = *seen ? *count : 0;
  *seen = 1;
  *count = 0;
  *written_at = now_ms;
  return 1;
}

int carp_logfold_pass(struct carp_logfold *f, const char *key, uint64_t now_ms,
                      uint64_t *folded)
{
  struct carp_logfold_entry *e = carp_map_gets(&f->keys, key);
  int seen = 1;
  *folded = 0;
  if (!e && f->keys.len >= f->max_keys)
    purge(f, now_ms);
  if (!e && f->keys.len >= f->max_keys)
    return pass(&f->overflow_at, &f->overflow_folded, &f->overflow_seen,
                f->interval_ms, now_ms, folded);
  if (!e) {
    e = CARP_NEW(struct carp_logfold_entry);
    e->key = carp_strdup(key);
    carp_map_puts(&f->keys, e->key, e);
    seen = 0;
  }
  return pass(&e->written_at, &e->folded, &seen, f->interval_ms, now_ms,
              folded);
}

void carp_logfold_forget(struct carp_logfold *f, const char *key)
{
  struct carp_logfold_entry *e = carp_map_dels(&f->keys, key);
  if (e)
    entry_free(e);
}

size_t carp_logfold_len(const struct carp_logfold *f)
{
  return f->keys.len;
}
