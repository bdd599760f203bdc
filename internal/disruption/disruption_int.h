/* Private parts of the disruption controller: analyze.c computes, from the
 * cluster state alone (no I/O), the NodePools' budgets and the NodeClaims
 * eligible for disruption; disruption.c holds the controller (poll,
 * validation, execution, expiration). */
#ifndef CARP_DISRUPTION_INT_H
#define CARP_DISRUPTION_INT_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/cluster.h"
#include "carpenter/disruption.h"

/* One NodePool's budget for reason Empty. */
struct dis_pool {
  const struct carp_nodepool *np; /* borrowed from the cache */
  int64_t nodes;                  /* initialized NodeClaims of the pool */
  int64_t disrupting; /* of those: deleting, marked, NotReady or no Node */
  int64_t budget;     /* what the budgets allow (CARP_BUDGET_UNLIMITED) */
  int64_t allowed;    /* budget - disrupting, floored at 0 */
  size_t empty;       /* empty candidates */
};

/* A NodeClaim eligible for voluntary disruption (consolidatable and not
 * blocked); `empty` tells whether it has no pod to reschedule. */
struct dis_cand {
  const struct carp_nodeclaim *nc; /* borrowed */
  const struct carp_node *node;    /* borrowed */
  size_t pool;                     /* index into pools */
  int empty;
};

struct dis_analysis {
  struct dis_pool *pools;
  size_t npools;
  struct dis_cand *cands;
  size_t ncands;
};

/* Whether a NodeClaim is Carpenter's (a ProxmoxNodeClass). */
int carp__dis_managed(const struct carp_nodeclaim *nc);
/* Since when the NodeClaim's node has seen no pod come or go: the latest
 * of the node's last pod event, the Initialized transition,
 * status.lastPodEventTime and active_since_ms. */
int64_t carp__dis_since(const struct carp_cluster *c,
                        const struct carp_nodeclaim *nc,
                        const struct carp_node *node, int64_t active_since_ms);
/* Why a NodeClaim cannot be disrupted voluntarily now (a static string),
 * or NULL when it can. Leaves emptiness and time aside. */
const char *carp__dis_blocked(const struct carp_cluster *c,
                              const struct carp_nodeclaim *nc,
                              const struct carp_node *node,
                              const struct carp_nodepool *np, int64_t now_ms,
                              size_t *reschedulable);
/* Budgets and candidates at now_ms (borrowed pointers: valid until the
 * caches next change, i.e. within one callback). */
void carp__dis_analyze(const struct carp_cluster *c, int64_t now_ms,
                       int64_t active_since_ms, struct dis_analysis *out);
void carp__dis_analysis_free(struct dis_analysis *a);
/* The pool index of a NodePool name in a, or (size_t)-1. */
size_t carp__dis_pool_index(const struct dis_analysis *a, const char *name);

#endif
