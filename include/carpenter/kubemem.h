/* Module kubemem (internal/kubemem): a Kubernetes API server in memory, for
 * reconcile-level tests (and anything else that wants Carpenter's controllers
 * without a cluster). It plugs into the REST client as its backend (struct
 * carp_kube_backend), so informers, writes and watches run their real
 * code; only the HTTP hop is gone.
 *
 * What it does, as kube-apiserver does it: get, list (one page) and watch
 * with resourceVersions and a replayable history; create (generateName,
 * uid, creationTimestamp, resourceVersion, generation); update and JSON
 * merge patch with resourceVersion preconditions (409 on a stale one),
 * the status subresource kept apart from the main resource, generation
 * bumped when spec changes; delete with uid/resourceVersion
 * preconditions, finalizers holding an object with its
 * deletionTimestamp until the last one is removed; pod eviction checking
 * PodDisruptionBudgets' status.disruptionsAllowed (429 when it is 0, and
 * decremented when an eviction goes through). Timestamps come from the
 * clock it is given, so a fake clock makes them exact.
 *
 * What a test adds: it plays every other actor (users, kubelets, the
 * scheduler) through carp_kubemem_apply/patch/delete, which emit watch
 * events as the client's writes do; it injects failures
 * (carp_kubemem_fail); and it reads the log of the writes that reached
 * the server, with their answers.
 *
 * Answers are delivered from a zero-delay timer of the clock, never
 * inside a call: with a fake clock, carp_clock_fake_fire_due delivers
 * them. */
#ifndef CARP_KUBEMEM_H
#define CARP_KUBEMEM_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/kube.h"

struct carp_kubemem;
struct carp_clock;

int carp_kubemem_new(struct carp_clock *clock, struct carp_kubemem **out);
/* After the REST client that uses it is closed. */
void carp_kubemem_close(struct carp_kubemem *m, void (*cb)(void *arg),
                        void *arg);
const struct carp_kube_backend *carp_kubemem_backend(struct carp_kubemem *m);
/* Requests answered and watch events waiting to be delivered. */
size_t carp_kubemem_pending(const struct carp_kubemem *m);

/* Objects are named by kind ("Node", "NodeClaim") and key: "name" for a
 * cluster-scoped object, "namespace/name" for a namespaced one. Errors
 * are negative CARP_E* codes, with *err (carp_free it) when err given. */

/* Creates the object (JSON; apiVersion, kind and metadata.name or
 * generateName required), or replaces the one of that name as an update
 * without precondition would (uid and creationTimestamp kept). */
int carp_kubemem_apply(struct carp_kubemem *m, const char *json, char **err);
/* A JSON merge patch, status included (no subresource split). */
int carp_kubemem_patch(struct carp_kubemem *m, const char *kind,
                       const char *key, const char *json, char **err);
/* Deletes as a user would: an object with finalizers gets its
 * deletionTimestamp and stays. */
int carp_kubemem_delete(struct carp_kubemem *m, const char *kind,
                        const char *key);
/* The object's JSON (carp_free it), or NULL. */
char *carp_kubemem_get(const struct carp_kubemem *m, const char *kind,
                       const char *key);
size_t carp_kubemem_count(const struct carp_kubemem *m, const char *kind);
/* The current resourceVersion of the whole store. */
uint64_t carp_kubemem_resource_version(const struct carp_kubemem *m);

/* The next `times` requests (-1: all from now on) whose method matches
 * (NULL: any) and whose path contains path_part (NULL: any) are answered
 * with status and a Status body. Later calls are checked first. */
void carp_kubemem_fail(struct carp_kubemem *m, const char *method,
                       const char *path_part, long status, int times);
void carp_kubemem_clear_faults(struct carp_kubemem *m);

/* While held, no watch event is delivered (answers are): every cache lags
 * behind the server, as behind a slow watch. Releasing sends what waited,
 * in order. */
void carp_kubemem_hold_watches(struct carp_kubemem *m, int hold);

/* Requests from clients other than GET, in arrival order. */
struct carp_kubemem_write {
  char *method;
  char *path; /* with its query */
  char *body;
  long status;   /* the answer */
  int64_t at_ms; /* clock wall time */
};
size_t carp_kubemem_writes(const struct carp_kubemem *m,
                           const struct carp_kubemem_write **out);
/* Writes whose method matches (NULL: any) and whose path contains
 * path_part (NULL: any); only those answered 2xx when ok_only. */
size_t carp_kubemem_count_writes(const struct carp_kubemem *m,
                                 const char *method, const char *path_part,
                                 int ok_only);
void carp_kubemem_clear_writes(struct carp_kubemem *m);

#endif
