/* Module server (internal/server). Health endpoints: /healthz answers 200 while
 * the process runs its loop; /readyz answers 200 only when every registered
 * readiness check passes (caches synced, CRDs present), else 503 naming the
 * failing checks, in the style of the Kubernetes API server
 * ("[-]informers-synced failed"). */
#ifndef CARP_HEALTH_H
#define CARP_HEALTH_H

#include "carpenter/buf.h"
#include "carpenter/server.h"

struct carp_health;

/* Returns 1 when ready; may append a reason to why when not. */
typedef int (*carp_health_check_cb)(void *arg, struct carp_buf *why);

struct carp_health *carp_health_new(void);
void carp_health_free(struct carp_health *h);
void carp_health_add_check(struct carp_health *h, const char *name,
                           carp_health_check_cb cb, void *arg);
/* 1 when every check passes. */
int carp_health_ready(struct carp_health *h);
/* Adds /healthz and /readyz to a server. */
int carp_health_install(struct carp_health *h, struct carp_server *s);

#endif
