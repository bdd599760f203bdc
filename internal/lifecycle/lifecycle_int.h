/* Private parts of the lifecycle controller, shared by its files:
 * lifecycle.c (dispatch and memory), launch.c, register.c, finalize.c and
 * write.c (the writes, with the resourceVersions they return). */
#ifndef CARP_LIFECYCLE_INT_H
#define CARP_LIFECYCLE_INT_H

#include "carpenter/backoff.h"
#include "carpenter/buf.h"
#include "carpenter/controller.h"
#include "carpenter/json.h"
#include "carpenter/lifecycle.h"
#include "carpenter/logfold.h"
#include "carpenter/map.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/provider.h"

#define LC_NAME "nodeclaim.lifecycle"
#define LC_LOG  "lifecycle"

/* Registered while the Node is not there yet. */
#define LC_NOT_REGISTERED_REASON  "NodeNotFound"
#define LC_NOT_REGISTERED_MESSAGE "Node not registered with cluster"

struct carp_metric;

/* What the controller remembers of one NodeClaim beyond the cache. */
struct claim_mem {
  char *name;
  char *uid;
  struct carp_provider_op *launch; /* create in flight */
  int launch_done;                 /* create finished, not written yet */
  int launch_status;
  struct carp_provider_instance inst; /* the create's result */
  struct carp_provider_error err;
  struct carp_provider_op *del; /* delete in flight */
  int del_done;                 /* a delete finished: del_status holds it */
  int del_status;
  /* The resourceVersions our last writes to the NodeClaim and to its Node
   * returned: a write that follows another to the same object uses the
   * newer of this and the cache's (carp__lc_claim_rv/node_rv); a conflict
   * forgets it, so the next try re-reads. */
  char *claim_rv;
  char *node_rv;
  /* The resourceVersion our last status write returned: a status write
   * is computed from the cached status, which must show that one first
   * (or the write would undo it, and tell its transitions twice). */
  char *status_rv;
  int reading_secret; /* a launch waits for its user-data */
  /* Failed launches back off across reconciles (a status write in between
   * ends its reconcile as a success for the work queue). */
  struct carp_retry launch_retry;
  struct carp_retry del_retry; /* failed VM deletes, likewise */
  int claim_deleted;      /* a failed launch deleted it: never launched again */
  int instance_gone_told; /* instance termination duration observed */
  /* For the termination duration, kept while the finalizer's removal is
   * in flight: the NodeClaim's deletion time and NodePool. */
  int64_t finalizing_deletion_ms;
  char finalizing_pool[256];
};

struct carp_lifecycle {
  struct carp_controller base;
  struct carp_controller_def def; /* concurrency is an option */
  struct carp_lifecycle_options o;
  struct carp_map mem; /* name -> struct claim_mem */
  struct carp_metric *m_terminated;
  struct carp_metric *m_disrupted;
  struct carp_metric *m_nodes_created;
  struct carp_metric *m_termination;          /* histogram */
  struct carp_metric *m_instance_termination; /* histogram */
  struct carp_logfold fold; /* lines that repeat per retry, per claim */
};

#define LC(c) carp_container_of(c, struct carp_lifecycle, base)

struct claim_mem *carp__lc_mem(struct carp_lifecycle *l,
                               const struct carp_nodeclaim *nc, int create);
void carp__lc_mem_drop(struct carp_lifecycle *l, const char *name);
int64_t carp__lc_now(const struct carp_lifecycle *l);

/* Steps: each ends the reconcile itself (now or from a callback). */
void carp__lc_launch(struct carp_lifecycle *l, const struct carp_nodeclaim *nc,
                     const char *key);
void carp__lc_register(struct carp_lifecycle *l,
                       const struct carp_nodeclaim *nc, const char *key);
void carp__lc_finalize(struct carp_lifecycle *l,
                       const struct carp_nodeclaim *nc, const char *key);

/* Writes (write.c). Each calls cb(l, key, res) when the write ends. */
typedef void (*carp_lc_write_cb)(struct carp_lifecycle *l, const char *key,
                                 const struct carp_kube_result *res);
/* A merge patch of the NodeClaim key (sub NULL or "status") or of its Node
 * (node_name set): the resourceVersion it returns is remembered for the
 * next write to the same object. */
int carp__lc_patch_claim(struct carp_lifecycle *l, const char *key,
                         const char *sub, const char *body, size_t len,
                         carp_lc_write_cb cb);
int carp__lc_patch_node(struct carp_lifecycle *l, const char *key,
                        const char *node_name, const char *body, size_t len,
                        carp_lc_write_cb cb);
/* Whether the cache does not show our last status write to nc yet; then
 * the reconcile has ended with a short requeue (the write's watch event
 * queues the claim sooner). A step decided on the older claim would be
 * taken a second time: its status write would pass, conditional on the
 * version our own write produced. */
int carp__lc_wait_for_cache(struct carp_lifecycle *l,
                            const struct carp_nodeclaim *nc, const char *key);
/* Writes the NodeClaim's status (conditions and fields) with the newest
 * resourceVersion we know (or rv when not NULL) as precondition. When the
 * cache does not show our last status write yet, nothing is written: the
 * reconcile ends with a short requeue and 0 is returned (no callback). */
int carp__lc_write_status(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc,
                          const struct carp_nodeclaim_status *st,
                          const char *rv, const char *key, carp_lc_write_cb cb);
int carp__lc_delete_claim(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, const char *key,
                          const char *reason, carp_lc_write_cb cb);
int carp__lc_delete_node(struct carp_lifecycle *l, const char *key,
                         const char *name, const char *uid,
                         carp_lc_write_cb cb);
/* The precondition for a write to the NodeClaim or to its Node: the newer
 * of the cached resourceVersion and the one our last write returned. */
const char *carp__lc_claim_rv(struct carp_lifecycle *l,
                              const struct carp_nodeclaim *nc);
const char *carp__lc_node_rv(struct carp_lifecycle *l, const char *key,
                             const struct carp_objmeta *node);
/* Records the resourceVersion a write to the NodeClaim (node 0) or its
 * Node (node 1) returned; NULL forgets it. */
void carp__lc_remember_rv(struct carp_lifecycle *l, const char *key, int node,
                          const char *rv);
/* Finishes a body built with w; on failure (a buffer overflow, a builder
 * error) logs it and raises a WriteFailed event on the claim, and returns
 * the error: the caller ends its reconcile with CARP_RECONCILE_ERROR. */
int carp__lc_finish_body(struct carp_lifecycle *l, const char *key,
                         struct carp_jw *w, const char *what);
/* The usual ending of a write: requeue at once on success, back off on
 * errors (a conflict means the cache was stale: it is re-read). */
void carp__lc_after_write(struct carp_lifecycle *l, const char *key,
                          const struct carp_kube_result *res);
/* The labels a NodeClaim gets from its instance, as JSON members of the
 * open labels object; whether nc carries them all already. */
/* The NodePool's NodeRegistrationHealthy, told once after each reset:
 * True when a NodeClaim registers, False with reason and message when one
 * times out. */
void carp__lc_pool_health(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, int healthy,
                          const char *reason, const char *message);
void carp__lc_put_instance_labels(struct carp_jw *w,
                                  const struct carp_provider_instance *in);
int carp__lc_has_instance_labels(const struct carp_nodeclaim *nc,
                                 const struct carp_provider_instance *in);

#endif
