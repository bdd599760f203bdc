/* claim.h: a NodeClaim to create from a solved claim - shared by the
 * provisioner and by consolidation, whose replacements are the same kind
 * of NodeClaim - or from a NodePool's template alone (static pools). */
#ifndef CARP_PROV_CLAIM_H
#define CARP_PROV_CLAIM_H

#include <stddef.h>

#include "carpenter/buf.h"
#include "carpenter/api_types.h"
#include "problem.h"

/* Instance types written on a NodeClaim at most. */
#define CARP_PROV_MAX_OPTIONS 100

/* Encodes the create body of cl, named "__NAME__" (the caller puts the
 * name in): the solve's requirements with instance-type In the options
 * priced strictly below below_price (every option when below_price <= 0),
 * at most CARP_PROV_MAX_OPTIONS, and the class hash annotations so a later
 * change of the class shows as drift. capacity gets the largest option's
 * capacity, types (may be NULL) the options comma-separated, *price the
 * cheapest option's. Returns 0, CARP_ENOENT when no option is left, or an
 * encoding error. */
int carp_prov_claim_encode(struct carp_prov_problem *pr,
                           const struct carp_cluster *c,
                           const struct carp_sched_claim *cl,
                           double below_price, struct carp_buf *body,
                           struct carp_resources *capacity,
                           struct carp_buf *types, double *price);

/* The create body of a NodeClaim of pool's template alone (static
 * NodePools: no pods, so no requests; the provider launches the cheapest
 * instance type the template's requirements allow), with the class hash
 * annotations, named name, or by generateName "<pool>-" when name is
 * NULL. */
int carp_prov_claim_encode_pool(const struct carp_cluster *c,
                                const struct carp_nodepool *pool,
                                const char *name, struct carp_buf *body);

#endif
