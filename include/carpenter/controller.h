/* Module controller (internal/controller): the one skeleton every controller is
 * built on, as controller-runtime gives Karpenter's controllers theirs.
 *
 * A controller is a table of callbacks (struct carp_controller_def) plus
 * its own state, in a struct that embeds struct carp_controller. The
 * skeleton brings the rest:
 *
 *  - a work queue keyed by object (de-duplicated, one reconcile in flight
 *    per key, rate-limited retries, requeue-after), fed by informer
 *    handlers that map events to keys (carp_controller_watch);
 *  - leadership: nothing is queued or reconciled while the replica is not
 *    the leader, and gaining the lead runs the `activated` callback (queue
 *    what must be looked at); reconciles wait until every cache has
 *    listed once unless the definition says otherwise;
 *  - time from the clock in the environment (carp_controller_now), and
 *    timers on it that close with the controller;
 *  - an event recorder helper and, in write.c, the writes: each holds the
 *    controller until its callback has run, and the patches every
 *    controller needs (taints, finalizers, NodeClaim conditions) exist in
 *    one place with their preconditions;
 *  - an orderly close: stop handling events, cancel work in flight
 *    (the `cancel` callback), drain the queue, wait for every write and
 *    held callback, close the timers, then report; free comes after the
 *    informers that call the handlers are closed;
 *  - controller-runtime's metrics, labelled with the controller's name:
 *    controller_runtime_reconcile_total{controller,result},
 *    _reconcile_errors_total, _reconcile_time_seconds, _active_workers,
 *    _max_concurrent_reconciles.
 *
 * A reconcile is asynchronous: it ends, now or from a callback, with
 * carp_controller_done(). Polling controllers use one fixed key that
 * requeues itself after its interval. */
#ifndef CARP_CONTROLLER_H
#define CARP_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/clock.h"
#include "carpenter/cluster.h"
#include "carpenter/events.h"
#include "carpenter/informer.h"
#include "carpenter/kube.h"
#include "carpenter/workqueue.h"

struct carp_controller;
struct carp_provider;
struct carp_metrics;
struct carp_metric;

/* What every controller gets: built once by the wiring (or a test). */
struct carp_controller_env {
  uv_loop_t *loop;
  struct carp_clock *clock;
  struct carp_cluster *cluster;
  struct carp_kube *kube;
  struct carp_provider *provider; /* for those that talk to it */
  struct carp_recorder *recorder; /* optional */
  struct carp_metrics *metrics;   /* optional */
};

typedef void (*carp_reconcile_fn)(struct carp_controller *c, const char *key);
/* An informer event: old is NULL for an add; obj is the last state known
 * for a delete (deleted set). Queue the keys it concerns. */
typedef void (*carp_event_map_fn)(struct carp_controller *c,
                                  const struct carp_objmeta *old,
                                  const struct carp_objmeta *obj, int deleted);

struct carp_controller_def {
  const char *name;        /* Karpenter's controller name: metrics label */
  const char *log_module;  /* log lines' module */
  unsigned concurrency;    /* reconciles in flight; default 1 */
  uint64_t max_backoff_ms; /* retry delay cap; default 1000 s */
  int before_sync;         /* reconcile before every cache has listed */
  carp_reconcile_fn reconcile;
  /* Optional: leadership gained (queue what must be looked at). */
  void (*activated)(struct carp_controller *c);
  /* Optional: leadership lost (drop what was decided, keep memory). */
  void (*deactivated)(struct carp_controller *c);
  /* Optional, at close: cancel work in flight; its callbacks still run
   * (with CARP_ECANCELED) and release what they hold. */
  void (*cancel)(struct carp_controller *c);
  /* Frees the embedding struct, after close and after the informers. */
  void (*free)(struct carp_controller *c);
};

#define CARP_CONTROLLER_MAX_TIMERS  4
#define CARP_CONTROLLER_MAX_WATCHES 8

/* The informer handlers' argument: lives in the controller. */
struct carp_controller_watch {
  struct carp_controller *c;
  carp_event_map_fn map;
};

struct carp_controller {
  const struct carp_controller_def *def;
  struct carp_controller_env env;
  /* private */
  struct carp_workqueue *queue;
  int active;
  int closing;
  int closed;
  unsigned held; /* writes and callbacks that use the controller */
  int timers_closing;
  int timers_open;
  struct carp_timer *timers[CARP_CONTROLLER_MAX_TIMERS];
  size_t ntimers;
  struct carp_timer resync;
  struct carp_controller_watch watches[CARP_CONTROLLER_MAX_WATCHES];
  size_t nwatches;
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_metric *m_total, *m_errors, *m_time, *m_active, *m_max;
};

/* Sets up the skeleton inside the controller's own struct. */
int carp_controller_init(struct carp_controller *c,
                         const struct carp_controller_env *env,
                         const struct carp_controller_def *def);
/* Routes an informer's events to map (before the cluster starts). */
void carp_controller_watch(struct carp_controller *c, struct carp_informer *inf,
                           carp_event_map_fn map);
/* A map that queues the object's own name. */
void carp_controller_map_name(struct carp_controller *c,
                              const struct carp_objmeta *old,
                              const struct carp_objmeta *obj, int deleted);
void carp_controller_set_active(struct carp_controller *c, int active);
/* Active and not closing: events are handled and writes may start. */
int carp_controller_acting(const struct carp_controller *c);
void carp_controller_close(struct carp_controller *c, void (*cb)(void *arg),
                           void *arg);
/* After close, once the informers are closed too. */
void carp_controller_free(struct carp_controller *c);

/* ---- the queue ---- */
void carp_controller_enqueue(struct carp_controller *c, const char *key);
void carp_controller_enqueue_after(struct carp_controller *c, const char *key,
                                   uint64_t delay_ms);
/* Every object of an informer's cache, by name. */
void carp_controller_enqueue_all(struct carp_controller *c,
                                 struct carp_informer *inf);
/* Ends the reconcile of key; after_ms goes with REQUEUE_AFTER. */
void carp_controller_done(struct carp_controller *c, const char *key,
                          enum carp_reconcile_result result, uint64_t after_ms);

/* ---- time ---- */
int64_t carp_controller_now(const struct carp_controller *c); /* wall ms */
uint64_t carp_controller_mono(const struct carp_controller *c);
/* A timer on the controller's clock, closed by carp_controller_close. */
void carp_controller_timer(struct carp_controller *c, struct carp_timer *t);
/* Runs the `activated` callback again every period_ms while leading, so
 * that what no event announces (time passing, a provider's view) is
 * looked at again (client-go's resync). */
void carp_controller_resync(struct carp_controller *c, uint64_t period_ms);

/* ---- holding: asynchronous work whose callback uses the controller ---- */
void carp_controller_hold(struct carp_controller *c);
/* Call last in that callback: a closing controller may finish here. */
void carp_controller_release(struct carp_controller *c);

/* ---- events ---- */
/* The event target of a cached object (api_version as given). */
struct carp_event_target carp_event_target_of(const struct carp_objmeta *m,
                                              const char *api_version);
void carp_controller_event(struct carp_controller *c,
                           const struct carp_objmeta *m,
                           const char *api_version, enum carp_event_type type,
                           const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* ---- writes (write.c) ----
 * Each holds the controller until its callback has run. key names the
 * reconcile the write belongs to (copied; may be NULL); cb may be NULL
 * for a side write, whose failure is logged (a conflict, a missing
 * object or a lost lead only at debug level: the next reconcile looks
 * again). Returns 0, or an error when the write could not start (no
 * callback then). */
typedef void (*carp_write_cb)(struct carp_controller *c, const char *key,
                              const struct carp_kube_result *res, void *arg);

int carp_write_patch(struct carp_controller *c, const char *key,
                     const struct carp_kube_ref *ref, const char *body,
                     size_t len, carp_write_cb cb, void *arg);
int carp_write_create(struct carp_controller *c, const char *key,
                      const struct carp_kube_ref *ref, const char *body,
                      size_t len, carp_write_cb cb, void *arg);
int carp_write_delete(struct carp_controller *c, const char *key,
                      const struct carp_kube_ref *ref,
                      const struct carp_kube_delete_options *o,
                      carp_write_cb cb, void *arg);
/* Any request (evictions); *op (may be NULL) can cancel it. */
int carp_write_call(struct carp_controller *c, const char *key,
                    const struct carp_kube_request *r, carp_write_cb cb,
                    void *arg, struct carp_kube_op **op);

/* The patches every controller writes, each conditional on the object's
 * cached resourceVersion. add 1 adds (or replaces the one with that key
 * and effect), 0 removes. Return 1 when there was nothing to change (no
 * write, no callback). */
int carp_write_node_taint(struct carp_controller *c, const char *key,
                          const struct carp_node *node,
                          const struct carp_taint *taint, int add,
                          carp_write_cb cb, void *arg);
/* The same, setting a label in the same write (label_key NULL: none). */
int carp_write_node_taint_label(struct carp_controller *c, const char *key,
                                const struct carp_node *node,
                                const struct carp_taint *taint, int add,
                                const char *label_key, const char *label_value,
                                carp_write_cb cb, void *arg);
int carp_write_finalizer(struct carp_controller *c, const char *key,
                         const struct carp_kube_ref *ref,
                         const struct carp_objmeta *m, const char *finalizer,
                         int add, carp_write_cb cb, void *arg);
/* A NodeClaim status condition (status < 0 clears it). */
int carp_write_claim_condition(struct carp_controller *c, const char *key,
                               const struct carp_nodeclaim *nc,
                               const char *type, int status, const char *reason,
                               const char *message, carp_write_cb cb,
                               void *arg);
struct carp_nodepool;
/* A NodePool status condition, only when the cached one is Unknown (or
 * absent): the first word after a reset wins, as Karpenter's
 * NodeRegistrationHealthy. A side write (no callback). Returns 1 when
 * there was nothing to change. */
int carp_write_pool_condition_once(struct carp_controller *c,
                                   const struct carp_nodepool *np,
                                   const char *type, int status,
                                   const char *reason, const char *message);
/* Stamps karpenter.sh/nodeclaim-termination-timestamp (at_ms) on a
 * NodeClaim, conditional on its cached resourceVersion. */
int carp_write_termination_stamp(struct carp_controller *c, const char *key,
                                 const struct carp_nodeclaim *nc, int64_t at_ms,
                                 carp_write_cb cb, void *arg);
/* Deletes a NodeClaim with its UID as precondition. */
int carp_write_delete_claim(struct carp_controller *c, const char *key,
                            const struct carp_nodeclaim *nc, carp_write_cb cb,
                            void *arg);

/* The usual end of a reconcile whose write finished: requeue on success;
 * on a conflict (the cache was behind) or another error, retry with the
 * queue's backoff; a missing object ends it. */
void carp_write_done(struct carp_controller *c, const char *key,
                     const struct carp_kube_result *res);
/* A write callback (arg unused) for a reconcile whose write's own watch
 * event brings the next look: success ends it (done); anything else as
 * carp_write_done. */
void carp_write_done_until_event(struct carp_controller *c, const char *key,
                                 const struct carp_kube_result *res, void *arg);

/* karpenter_nodeclaims_disrupted_total{reason, nodepool, capacity_type,
 * consolidation_policy, termination_mode}: every controller that takes a
 * NodeClaim away counts it here (NULL without a registry). */
struct carp_metric *carp_metric_nodeclaims_disrupted(struct carp_metrics *m);
/* karpenter_nodeclaims_created_total{reason, nodepool, min_values_relaxed}:
 * every controller that creates a NodeClaim counts it here, reason
 * "provisioning" or the disruption reason of a replacement (NULL without
 * a registry). */
struct carp_metric *carp_metric_nodeclaims_created(struct carp_metrics *m);
/* karpenter_pods_disruption_initiated_total, with the same labels: the
 * pods a disruption (a command, expiration, repair) starts to move, as
 * Karpenter counts them next to the NodeClaim. */
struct carp_metric *
carp_metric_pods_disruption_initiated(struct carp_metrics *m);
/* Adds to it the pods of node_name that must move (reschedulable, not
 * finished); nothing when node_name is NULL or m is. */
void carp_metric_pods_disrupted_add(struct carp_metric *m,
                                    const struct carp_cluster *c,
                                    const char *node_name,
                                    const char *const *values);

/* The references of the kinds controllers write. */
struct carp_kube_ref carp_ref_nodeclaim(const char *name, const char *sub);
struct carp_kube_ref carp_ref_node(const char *name);
struct carp_kube_ref carp_ref_nodepool(const char *name, const char *sub);

#endif
