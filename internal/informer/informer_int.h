/* Private parts of the informer: decode.c turns list pages and watch
 * events into cached objects for informer.c. */
#ifndef CARP_INFORMER_INT_H
#define CARP_INFORMER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/object.h"

/* One object of a list page or a watch event. */
struct inf_obj {
  struct carp_objmeta *obj; /* decoded (the caller's reference), or NULL */
  char *err;                /* why not (the caller frees it) */
  struct carp_obj_id id;    /* what its JSON says; valid during the call */
};

struct inf_dec;

struct inf_dec *inf_dec_new(const struct carp_kind *kind);
void inf_dec_free(struct inf_dec *dec);
/* The metadata.managedFields passed over unparsed so far (jdec.h's
 * carp_jdec_pass_over), for tests. */
size_t inf_dec_passed_over(const struct inf_dec *dec);

/* A list page: each item goes to fn as soon as it has ended, then the
 * page's own fields are in *pg (rv and cont to free). Returns 0, or
 * CARP_EPARSE (*err, when not NULL, says why) when the page is not JSON,
 * not an object, or has items that are not a list. */
struct inf_page {
  int has_items;
  char *rv;   /* metadata.resourceVersion */
  char *cont; /* metadata.continue, when not empty */
};
typedef void (*inf_item_fn)(struct inf_obj *o, void *arg);
int inf_dec_page(struct inf_dec *dec, const char *text, size_t len,
                 struct inf_page *pg, inf_item_fn fn, void *arg, char **err);

/* A watch event. The object of an ADDED or MODIFIED event is decoded as
 * the event is read, and made (or refused) by inf_dec_event_object, which
 * the caller calls when it wants it; DELETED and BOOKMARK events only say
 * who (id), an ERROR event its Status's code and message. */
enum inf_type {
  INF_OTHER = 0,
  INF_ADDED,
  INF_MODIFIED,
  INF_DELETED,
  INF_BOOKMARK,
  INF_ERROR,
};
struct inf_event {
  const char *type; /* as sent */
  enum inf_type t;
  struct carp_obj_id id;
  int64_t code;        /* ERROR: its code, 0 when it has none */
  const char *message; /* ERROR: its message, or NULL */
};
/* Returns 0 (the event's fields valid until the next call), or
 * CARP_EPARSE with *err when the text is not a JSON object with a string
 * "type". */
int inf_dec_event(struct inf_dec *dec, const char *text, size_t len,
                  struct inf_event *ev, char **err);
void inf_dec_event_object(struct inf_dec *dec, struct inf_obj *o);

#endif
