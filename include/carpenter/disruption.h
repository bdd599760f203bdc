/* Module disruption (internal/disruption): Karpenter's voluntary disruption
 * (the disruption controller), the forceful expiration of NodeClaims
 * (nodeclaim.expiration), and the NodeClaim conditions disruption reads
 * (nodeclaim.disruption). docs/disruption.md tells the rules in full.
 *
 * disruption (one key, polled every 10 s while leading):
 *   Candidates   initialized NodeClaims of existing, non-static pools with
 *                consolidateAfter other than Never, not disrupting, no
 *                do-not-disrupt Node or pod, no pod whose
 *                PodDisruptionBudget allows no eviction, not nominated for
 *                pending pods, quiet (no pod came or went) for
 *                consolidateAfter. Ordered by Karpenter's disruption cost.
 *   Methods      in Karpenter's order, the first that finds something:
 *                empty nodes (budget reason Empty, any policy), then, for
 *                WhenEmptyOrUnderutilized and Balanced pools (pending
 *                pods counted in every simulation), multi-node
 *                consolidation (the longest
 *                prefix of the candidates that can be deleted, or replaced
 *                by one strictly cheaper node) and single-node
 *                consolidation (budget reason Underutilized). Balanced
 *                pools accept a move only when its score (share of price
 *                saved / share of disruption caused) is at least 0.5.
 *   Commands     one at a time: after the validation delay (15 s) the
 *                decision is checked again; a replacement is created and
 *                must initialize before the candidates are tainted
 *                karpenter.sh/disrupted:NoSchedule and deleted (the
 *                termination controller drains them); a replacement that
 *                fails is deleted again and nothing else changed.
 *   Metrics      karpenter_voluntary_disruption_*, karpenter_nodepools_
 *                allowed_disruptions and _nodes_consuming_budgets,
 *                karpenter_consolidation_score and _moves_total,
 *                karpenter_nodeclaims_disrupted_total.
 *   Events       Unconsolidatable (at most every 5 minutes per node),
 *                DisruptionLaunching, DisruptionWaitingReadiness,
 *                DisruptionTerminating, DisruptionBlocked.
 *
 * nodeclaim.expiration (per NodeClaim): deletes a NodeClaim at
 * creationTimestamp + expireAfter, budgets notwithstanding (reason
 * "expired", termination_mode "forceful"), event Expired.
 *
 * nodeclaim.disruption (per NodeClaim): writes Consolidatable=True once
 * the node has been quiet for consolidateAfter (and removes it when a pod
 * comes or goes), and status.lastPodEventTime, so that the quiet time
 * survives a change of leader. */
#ifndef CARP_DISRUPTION_H
#define CARP_DISRUPTION_H

#include <stdint.h>

#include "carpenter/controller.h"

struct carp_disruption_options {
  uint64_t poll_interval_ms;    /* default 10 s */
  uint64_t validation_delay_ms; /* default 15 s (Karpenter's) */
  /* A replacement must initialize, and deleted candidates go, within
   * this; default 10 minutes. */
  uint64_t command_timeout_ms;
};

/* The controllers (env->provider prices candidates and is required). */
int carp_disruption_new(const struct carp_controller_env *env,
                        const struct carp_disruption_options *o,
                        struct carp_controller **out);
int carp_expiration_new(const struct carp_controller_env *env,
                        struct carp_controller **out);
int carp_disruption_conditions_new(const struct carp_controller_env *env,
                                   struct carp_controller **out);

#endif
