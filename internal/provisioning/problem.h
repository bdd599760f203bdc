/* The scheduling problem built from the caches for one provisioning batch
 * (or one consolidation question), and the back references needed to act
 * on its result. Everything is carved from one arena and freed at once;
 * strings are borrowed from the caches, which do not change while the
 * problem is alive (one loop, and the solve is synchronous). */
#ifndef CARP_PROV_PROBLEM_H
#define CARP_PROV_PROBLEM_H

#include "carpenter/arena.h"
#include "carpenter/cluster.h"
#include "carpenter/provider.h"
#include "carpenter/scheduling.h"

struct carp_prov_problem {
  struct carp_arena arena;
  struct carp_sched_problem p;
  /* Parallel to p.pods, p.nodes, p.nodepools, p.instance_types. */
  const struct carp_pod **pods;
  const char **node_names; /* the Node's or the in-flight claim's name */
  int *node_is_claim;
  const struct carp_nodepool **pools;
  const struct carp_provider_instance_type **types;
  /* Provider answers, one per NodeClass used. */
  struct carp_provider_instance_types *classes;
  size_t nclasses;
  /* Pods left out because they are nominated to a live target. */
  size_t nominated;
};

struct carp_prov_input {
  const struct carp_pod *const *pending; /* pods to place */
  size_t npending;
  int ignore_preferences;
  /* Place every pod given, nominated or not (consolidation moves pods
   * that are bound already). */
  int ignore_nominations;
};

int carp_prov_problem_build(struct carp_prov_problem *pr,
                            const struct carp_cluster *c,
                            struct carp_provider *provider,
                            const struct carp_prov_input *in);
void carp_prov_problem_free(struct carp_prov_problem *pr);

/* Scheduler quantities (millis) of a resource list. */
const struct carp_sched_quantity *
carp_prov_quantities(struct carp_arena *a, const struct carp_resources *r,
                     size_t *n);
/* Back from scheduler quantities to a resource list (rounded up). */
void carp_prov_resources_of(const struct carp_sched_quantity *q, size_t n,
                            struct carp_resources *out);

#endif
