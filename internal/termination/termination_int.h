/* Private parts of the node termination controller, shared by
 * termination.c (dispatch, the steps around the drain), drain.c (pod
 * classification, evictions, deadline deletes), volumes.c and write.c (the
 * NodeClaim's conditions, written on the side). */
#ifndef CARP_TERMINATION_INT_H
#define CARP_TERMINATION_INT_H

#include "carpenter/backoff.h"
#include "carpenter/buf.h"
#include "carpenter/controller.h"
#include "carpenter/json.h"
#include "carpenter/logfold.h"
#include "carpenter/map.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/provider.h"
#include "carpenter/termination.h"

#define TERM_NAME "node.termination"
#define TERM_LOG  "termination"

struct carp_metric;
struct carp_kube_op;

/* One pod being drained. */
struct pod_drain {
  char *uid; /* the map key */
  char *ns;
  char *name;
  struct carp_kube_op *evict; /* eviction in flight */
  int deleting;               /* a deadline delete in flight */
  int deleted;                /* a deadline delete was accepted */
  /* Refused evictions back off: 100 ms doubling to 10 s, with jitter; an
   * answer a retry cannot fix (400, 422, a 404 without the pod) waits
   * minutes. next_ms is also set after a success, to give the cache time. */
  struct carp_retry retry;
  int64_t next_ms; /* no new eviction before this (wall ms) */
  /* A failed deadline delete backs off on its own: the evictions' backoff
   * (minutes after a 400) must not hold the deadline. */
  struct carp_retry del_retry;
  int seen; /* still on the node at the last reconcile */
};

/* What the controller remembers of one Node being terminated. */
struct node_mem {
  char *name;
  char *uid;
  unsigned busy;                /* callbacks that hold this struct */
  int dropped;                  /* out of the map: freed when busy reaches 0 */
  struct carp_map pods;         /* pod uid -> struct pod_drain */
  struct carp_provider_op *get; /* VM lookup in flight */
  int64_t get_at_ms;            /* when the last lookup ended */
  int vm_gone;                  /* the provider says the VM is gone */
  struct carp_provider_op *del; /* VM delete in flight */
  int del_done;
  int del_status;
  struct carp_retry del_retry; /* failed VM deletes back off */
  int64_t drain_start_ms;
  int64_t failed_event_ms;  /* last FailedDraining event */
  int announced;            /* Draining / deadline events sent */
  int drained;              /* Drained reported */
  int stamping;             /* termination timestamp annotation in flight */
  int finalized;            /* finalizer removed: waiting for the Node to go */
  int64_t claim_deleted_ms; /* when its NodeClaim's delete was accepted */
  int claim_writing;        /* a NodeClaim condition write in flight */
  int volumes_done;         /* attachments gone, or the deadline passed */
  int64_t volumes_event_ms; /* last AwaitingVolumeDetachment event */
};

struct carp_termination {
  struct carp_controller base;
  struct carp_controller_def def; /* concurrency is an option */
  struct carp_termination_options o;
  struct carp_map mem; /* node name -> struct node_mem */
  struct carp_metric *m_terminated;
  struct carp_metric *m_drained;
  struct carp_metric *m_evictions;
  struct carp_metric *m_pods_drained;
  struct carp_logfold fold; /* lines that repeat per retry */
};

#define TERM(c) carp_container_of(c, struct carp_termination, base)

struct node_mem *carp__term_mem(struct carp_termination *t,
                                const struct carp_node *node, int create);
void carp__term_mem_drop(struct carp_termination *t, const char *name);
/* Ends a callback that held m (busy); _release also the controller (a
 * call started with carp_controller_hold). */
void carp__term_mem_unbusy(struct node_mem *m);
void carp__term_mem_release(struct carp_termination *t, struct node_mem *m);
int64_t carp__term_now(const struct carp_termination *t);

/* The drain (drain.c). Returns the number of pods still to go (0:
 * drained); starts evictions and deadline deletes as needed and sets
 * *retry_ms to when it wants to look again. */
size_t carp__term_drain(struct carp_termination *t, struct node_mem *m,
                        const struct carp_node *node,
                        const struct carp_nodeclaim *nc, int64_t deadline_ms,
                        uint64_t *retry_ms);
/* After the drain (volumes.c): the VolumeAttachments still to be deleted
 * before the VM may stop (0: none, or the deadline passed); sets the
 * VolumesDetached condition and *retry_ms. */
size_t carp__term_volumes(struct carp_termination *t, struct node_mem *m,
                          const struct carp_node *node,
                          const struct carp_nodeclaim *nc, int64_t deadline_ms,
                          uint64_t *retry_ms);
/* Cancels the evictions in flight (close). */
void carp__term_drain_cancel(struct node_mem *m);
void carp__term_pods_free(struct node_mem *m);

/* Writes the NodeClaim's condition when it changes (a side write, one at
 * a time per Node; a success queues the Node again). Returns whether the
 * cached condition differs from the one wanted. */
int carp__term_claim_condition(struct carp_termination *t, struct node_mem *m,
                               const struct carp_nodeclaim *nc,
                               const char *type, enum carp_cond_status status,
                               const char *reason, const char *message);
/* The usual ending of a write: requeue on success, back off on a conflict
 * (the cache is re-read) and on errors. */
void carp__term_after_write(struct carp_termination *t, const char *key,
                            const struct carp_kube_result *res);

#endif
