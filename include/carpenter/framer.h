/* Module kube (internal/kube). Splits a stream of concatenated JSON objects (a
 * Kubernetes watch response) into whole objects by tracking brace depth outside
 * strings, rather than trusting newlines. Each object is bounded by a hard cap;
 * past it the stream is abandoned (the caller relists). */
#ifndef CARP_FRAMER_H
#define CARP_FRAMER_H

#include <stddef.h>

#include "carpenter/buf.h"

struct carp_framer {
  struct carp_buf buf; /* bytes of the object being assembled */
  size_t max;
  int depth;
  int in_string;
  int escape;
};

/* Called with each complete object (not NUL-terminated past len, but
 * obj[len] is readable and is '\0'). A negative return stops feeding and
 * is returned by carp_framer_feed. */
typedef int (*carp_framer_cb)(const char *obj, size_t len, void *arg);

void carp_framer_init(struct carp_framer *f, size_t max_object);
void carp_framer_free(struct carp_framer *f);
void carp_framer_reset(struct carp_framer *f);
/* Returns 0, CARP_ETOOBIG (an object over the cap), CARP_EPARSE (text
 * between objects that is not whitespace, or a closing brace too many), or
 * the callback's error. After an error the framer must be reset. */
int carp_framer_feed(struct carp_framer *f, const char *data, size_t len,
                     carp_framer_cb cb, void *arg);
/* 1 while part of an object is buffered. */
int carp_framer_pending(const struct carp_framer *f);

#endif
