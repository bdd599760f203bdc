/* The disruption controller (Karpenter's disruption controller, emptiness
 * method, plus the forceful expiration of nodeclaim/expiration).
 *
 * While active (the leader) and with every cache synced, it polls (every
 * 10 s by default):
 *
 *   Expiration   a NodeClaim older than its expireAfter is deleted, budgets
 *                notwithstanding (reason "expired", termination_mode
 *                "forceful"); the termination controller drains it, with
 *                its terminationGracePeriod as the deadline.
 *   Emptiness    a NodeClaim is a candidate when it is Initialized, not
 *                being deleted or marked for deletion, has a Node, its
 *                NodePool exists, is not static and has consolidateAfter
 *                other than Never (any consolidationPolicy), the Node has
 *                no karpenter.sh/do-not-disrupt annotation, neither is
 *                nominated for pending pods, no pod on it must be
 *                rescheduled (DaemonSet and mirror pods do not count) or
 *                carries karpenter.sh/do-not-disrupt, and it has been so
 *                for consolidateAfter: since the latest of its last pod
 *                event, its Initialized transition, status.lastPodEventTime
 *                and the moment this controller became active (the pod
 *                history before that is unknown). Such NodeClaims carry
 *                Consolidatable=True.
 *   Budgets      per NodePool, allowed = carp_nodepool_allowed_disruptions
 *                for reason Empty over its initialized nodes, minus those
 *                already disrupting (being deleted, marked, or NotReady),
 *                floored at 0; published as
 *                karpenter_nodepools_allowed_disruptions{nodepool,reason}
 *                (the budget before the subtraction, as Karpenter does).
 *
 * One decision at a time: up to `allowed` empty candidates per pool form
 * a command, which waits `validation_delay_ms` and is then checked again
 * (still candidates, still empty, budget still allowing); what survives is
 * executed - marked for deletion, Node tainted karpenter.sh/disrupted:
 * NoSchedule, condition DisruptionReason=Empty, NodeClaim deleted - and
 * the next decision waits until those NodeClaims are gone (or for
 * command_timeout_ms).
 *
 * Metrics: karpenter_nodeclaims_disrupted_total, karpenter_voluntary_
 * disruption_decisions_total, _eligible_nodes, _failed_validations_total,
 * karpenter_nodepools_allowed_disruptions. Events: DisruptionTerminating
 * on the Node and NodeClaim, DisruptionBlocked on a NodePool whose budget
 * allows nothing while it has empty nodes, Expired on expired NodeClaims. */
#ifndef CARP_DISRUPTION_H
#define CARP_DISRUPTION_H

#include <stdint.h>

#include <uv.h>

#include "carpenter/cluster.h"
#include "carpenter/events.h"
#include "carpenter/kube.h"

struct carp_disruption;
struct carp_metrics;

struct carp_disruption_options {
  struct carp_recorder *recorder; /* optional */
  struct carp_metrics *metrics;   /* optional */
  uint64_t poll_interval_ms;      /* default 10 s */
  uint64_t validation_delay_ms;   /* default 15 s (Karpenter's) */
  uint64_t command_timeout_ms;    /* default 10 minutes */
};

/* Adds no informer handlers; may be created any time before start. */
int carp_disruption_new(uv_loop_t *loop, struct carp_cluster *cluster,
                        struct carp_kube *kube,
                        const struct carp_disruption_options *o,
                        struct carp_disruption **out);
/* Acts only while active (the leader). */
void carp_disruption_set_active(struct carp_disruption *d, int active);
void carp_disruption_close(struct carp_disruption *d, void (*cb)(void *arg),
                           void *arg);

#endif
