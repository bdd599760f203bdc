/* Module informer (internal/informer). An informer keeps a store of one kind in
 * step with the API server, the way client-go's reflector does: list in pages
 * (limit 500), then watch from the list's resourceVersion with bookmarks and a
 * random 5-10 minute timeout, rewatch from the last resourceVersion seen, and
 * relist when the server answers 410 Gone. A relist replaces the store and
 * reports a deletion for every object that vanished meanwhile. Errors back off
 * from 800 ms to 30 s with jitter.
 *
 * Handlers run on the loop, after the store has changed; they get the old
 * and the new object, both valid during the call (take a reference to keep
 * one). An object the server sends that cannot be decoded is logged and
 * skipped, leaving the cache as it was. */
#ifndef CARP_INFORMER_H
#define CARP_INFORMER_H

#include <stdint.h>

#include <uv.h>

#include "carpenter/kube.h"
#include "carpenter/object.h"
#include "carpenter/store.h"

struct carp_informer;

struct carp_informer_handlers {
  void (*on_add)(struct carp_objmeta *obj, void *arg);
  void (*on_update)(struct carp_objmeta *old, struct carp_objmeta *obj,
                    void *arg);
  /* obj is the last state known. */
  void (*on_delete)(struct carp_objmeta *obj, void *arg);
  /* The first complete list is in the store. */
  void (*on_synced)(void *arg);
  /* An object that cannot be decoded (it stays out of the store; the
   * informer logs it): id is who its JSON says it is, problem what is
   * wrong. */
  void (*on_decode_error)(const struct carp_kind *kind,
                          const struct carp_obj_id *id, const char *problem,
                          void *arg);
  void *arg;
};

struct carp_informer_options {
  const struct carp_kind *kind;
  const char *namespace;      /* NULL: every namespace */
  const char *label_selector; /* optional */
  const char *field_selector; /* optional */
  unsigned page_size;         /* default 500 */
  /* Watch timeout range in seconds; default 300-600 (tests shorten it). */
  unsigned min_watch_seconds;
  unsigned max_watch_seconds;
  /* The API may not be served (a CRD that is not installed): a list
   * answered 404 empties the store and counts as synced (handlers see
   * deletions as usual), and the list is tried again every
   * CARP_INFORMER_ABSENT_RETRY_MS until the API appears. */
  int optional;
};

#define CARP_INFORMER_ABSENT_RETRY_MS 10000

int carp_informer_new(uv_loop_t *loop, struct carp_kube *kube,
                      const struct carp_informer_options *opts,
                      struct carp_informer **out);
/* Before start. Several handler sets may be added. */
int carp_informer_add_handlers(struct carp_informer *inf,
                               const struct carp_informer_handlers *h);
/* Adds a store index (before start); returns its id. */
int carp_informer_add_index(struct carp_informer *inf, carp_store_index_fn fn);
int carp_informer_start(struct carp_informer *inf);
int carp_informer_synced(const struct carp_informer *inf);
/* An optional informer whose API the server does not serve (its last
 * list was answered 404). */
int carp_informer_absent(const struct carp_informer *inf);
struct carp_store *carp_informer_store(struct carp_informer *inf);
const struct carp_kind *carp_informer_kind(const struct carp_informer *inf);
/* Counters for tests and metrics. */
struct carp_informer_stats {
  uint64_t lists;   /* complete lists (first included) */
  uint64_t watches; /* watch requests started */
  uint64_t events;  /* watch events applied */
  uint64_t decode_errors;
};
void carp_informer_stats(const struct carp_informer *inf,
                         struct carp_informer_stats *out);
/* Stops listing and watching; calls close_cb when nothing is in flight.
 * The store is freed with the informer. */
void carp_informer_close(struct carp_informer *inf, void (*close_cb)(void *arg),
                         void *arg);

#endif
