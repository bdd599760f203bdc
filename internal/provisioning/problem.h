/* The scheduling problem built from the caches for one provisioning batch
 * (or one consolidation question), and the back references needed to act
 * on its result. Everything is carved from one arena and freed at once;
 * strings are borrowed from the caches, which do not change while the
 * problem is alive (one loop, and the solve is synchronous). */
#ifndef CARP_PROV_PROBLEM_H
#define CARP_PROV_PROBLEM_H

#include "carpenter/arena.h"
#include "carpenter/buf.h"
#include "carpenter/cluster.h"
#include "carpenter/provider.h"
#include "carpenter/scheduling.h"

/* A pod left out of the solve because it is headed for a target it was
 * provisioned for (nominated): it counts there instead. */
struct carp_prov_headed {
  const struct carp_pod *pod;
  uint32_t slot;    /* index into p.nodes */
  int64_t since_ms; /* the nomination's (carp_nomination_info) */
  int64_t until_ms;
};

/* Why a pod headed for a Node is not binding there. */
enum carp_prov_wait {
  CARP_PROV_WAIT_NONE = 0, /* nothing Carpenter can see */
  CARP_PROV_WAIT_NOT_REGISTERED,
  CARP_PROV_WAIT_NOT_READY,
  CARP_PROV_WAIT_TAINT,
};
#define CARP_PROV_WAIT_N 4

struct carp_prov_problem {
  struct carp_arena arena;
  struct carp_sched_problem p;
  /* Parallel to p.pods, p.nodes, p.nodepools, p.instance_types. */
  const struct carp_pod **pods;
  const char **node_names; /* the Node's or the in-flight claim's name */
  int *node_is_claim;
  const struct carp_node **node_objs; /* the Node behind a slot, or NULL */
  const struct carp_nodepool **pools;
  const struct carp_provider_instance_type **types;
  /* Provider answers, one per NodeClass used. */
  struct carp_provider_instance_types *classes;
  size_t nclasses;
  /* Pods counted on the target they are nominated to, not placed again. */
  struct carp_prov_headed *headed;
  size_t nheaded;
  /* Pods still running on nodes being deleted, placed (or headed) ahead of
   * their eviction; they are among p.pods or headed. */
  size_t nmoving;
};

struct carp_prov_input {
  const struct carp_pod *const *pending; /* pods to place */
  size_t npending;
  int ignore_preferences;
  /* Place every pod given, nominated or not, and only those: the pods
   * of nodes being deleted are not added (consolidation moves pods that
   * are bound already). */
  int ignore_nominations;
  /* When every pod given turns out headed somewhere, stop there: no solve
   * follows, so what only a solve reads (the bound pods, the pools and
   * their instance types, the daemons) is not built. A provisioner with
   * thousands of pods waiting for their nodes looks them over every few
   * seconds. */
  int stop_when_all_headed;
};

int carp_prov_problem_build(struct carp_prov_problem *pr,
                            const struct carp_cluster *c,
                            struct carp_provider *provider,
                            const struct carp_prov_input *in);
void carp_prov_problem_free(struct carp_prov_problem *pr);

/* Why the headed pod h cannot bind to the Node behind its slot (the first
 * reason found), with a sentence for events and logs in why; NONE when
 * the slot has no Node or nothing is wrong that Carpenter can see. */
enum carp_prov_wait carp_prov_why_waiting(const struct carp_prov_problem *pr,
                                          const struct carp_prov_headed *h,
                                          struct carp_buf *why);
/* "not_registered", "not_ready", "taint" (metric labels). */
const char *carp_prov_wait_name(enum carp_prov_wait w);

/* Whether a Node is going away: deleted, its NodeClaim (may be NULL)
 * deleted or marked by a disruption decision, or tainted for disruption.
 * Its pods will have to move. */
int carp_prov_node_going(const struct carp_cluster *c,
                         const struct carp_node *n,
                         const struct carp_nodeclaim *nc);

/* Scheduler quantities (millis) of a resource list. */
const struct carp_sched_quantity *
carp_prov_quantities(struct carp_arena *a, const struct carp_resources *r,
                     size_t *n);
/* Back from scheduler quantities to a resource list (rounded up). */
void carp_prov_resources_of(const struct carp_sched_quantity *q, size_t n,
                            struct carp_resources *out);

#endif
