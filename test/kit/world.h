/* world.h: a generated cluster in the disruption controller's caches (see
 * world.c), for the consolidation benchmark and property tests. */
#ifndef CARP_TEST_WORLD_H
#define CARP_TEST_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../../internal/disruption/disruption_int.h"
#include "carpenter/cluster.h"
#include "carpenter/kube.h"
#include "carpenter/provider.h"
#include "carpenter/rand.h"

struct world_options {
  size_t nodes;
  size_t pods; /* placed while nodes stay under their fill target */
  uint64_t seed;
  const char *budget; /* the pool's budget, e.g. "10%" */
  const char *policy; /* consolidationPolicy; NULL: WhenEmptyOrUnderutilized */
};

struct world {
  uv_loop_t loop;
  struct carp_kube *kube;
  struct carp_cluster *cluster;
  struct carp_provider *provider;
  struct carp_metrics *metrics;
  struct carp_rand rng;
  size_t next_node;
  size_t nodes, pods;
};

struct world *world_new(const struct world_options *o);
void world_free(struct world *w);
/* A moment an hour after every object was created. */
int64_t world_now(void);
/* The sum of the nodes' prices. */
double world_price(struct world *w);
/* What the pods' requests cost at the cheapest price per vCPU and per GiB
 * of any instance type, whichever is higher: no packing can beat it. */
double world_lower_bound(struct world *w);
/* Carries a command out as its plan says: the replacement becomes a node
 * of its cheapest option, each moved pod lands where the plan put it, the
 * candidates go. Returns the candidates' pods the plan did not place. */
size_t world_apply(struct world *w, const struct dis_analysis *a,
                   const struct dis_command *cmd);
/* The allocatable and the requests on one node (milli-CPU, MiB, pods). */
struct world_load {
  int64_t cpu, mem, pods;
  int64_t cpu_cap, mem_cap, pods_cap;
};
int world_node_load(struct world *w, const char *node, struct world_load *out);
/* An instance type's price, or -1 when there is no such type. */
double world_type_price(const char *name);

#endif
