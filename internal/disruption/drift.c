/* drift.c: whether a launched NodeClaim has drifted from what its NodePool
 * and ProxmoxNodeClass would make today, in Karpenter's order:
 *
 *   NodePoolDrifted      the NodePool template's hash differs from the one
 *                        stamped on the claim (same hash version only: a
 *                        new version re-stamps instead); weight, limits,
 *                        budgets and the rest outside the template are not
 *                        hashed, so changing them drifts nothing;
 *   RequirementsDrifted  the claim's labels no longer satisfy the
 *                        NodePool's requirements (Karpenter's
 *                        StrictlyCompatible: every key the pool constrains
 *                        must be on the claim with an allowed value);
 *   the provider's       NodeClassDrifted (the class hash differs),
 *                        TemplateDrifted (another template serves the host
 *                        now), and what else the provider knows. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/scheduling.h"
#include "disruption_int.h"

#define REASON_NODEPOOL     "NodePoolDrifted"
#define REASON_REQUIREMENTS "RequirementsDrifted"

/* The api and scheduling operator enums list the same operators in the
 * same order. */
static enum carp_sched_op to_sched_op(enum carp_op op)
{
  return (enum carp_sched_op)op;
}

static int requirements_drifted(const struct carp_nodepool *np,
                                const struct carp_nodeclaim *nc)
{
  struct carp_sched_reqs *pool = carp_sched_reqs_new();
  struct carp_sched_reqs *claim = carp_sched_reqs_new();
  struct carp_sched_label *labels;
  uint32_t i, n = nc->meta.labels ? nc->meta.labels->n : 0;
  int drifted = 0;
  for (i = 0; i < np->tmpl.nrequirements; i++) {
    const struct carp_requirement *r = &np->tmpl.requirements[i];
    struct carp_sched_requirement q = {.key = r->key,
                                       .op = to_sched_op(r->op),
                                       .values = r->values,
                                       .nvalues = r->nvalues};
    carp_sched_reqs_add(pool, &q);
  }
  labels = carp_calloc(n + 1, sizeof(*labels));
  for (i = 0; i < n; i++) {
    labels[i].key = nc->meta.labels->kv[i].key;
    labels[i].value = nc->meta.labels->kv[i].value;
  }
  carp_sched_reqs_add_labels(claim, labels, n);
  /* Strict: a key the pool constrains that the claim lacks is drift,
   * well-known or not. */
  drifted = !carp_sched_reqs_compatible(claim, pool, 0, NULL);
  carp_free(labels);
  carp_sched_reqs_free(pool);
  carp_sched_reqs_free(claim);
  return drifted;
}

static size_t checks;

size_t carp__dis_drift_checks(void)
{
  return checks;
}

const char *carp__dis_drift_reason(const struct carp_cluster *c,
                                   struct carp_provider *provider,
                                   const struct carp_nodeclaim *nc,
                                   const struct carp_nodepool *np)
{
  const struct carp_nodeclass *cls;
  const char *reason = "";
  if (!np || !carp__dis_managed(nc))
    return NULL;
  checks++;
  if (carp_nodepool_hash_check(np, nc) == CARP_HASH_DRIFTED)
    return REASON_NODEPOOL;
  if (requirements_drifted(np, nc))
    return REASON_REQUIREMENTS;
  cls = nc->spec.node_class_ref.name
            ? carp_cluster_nodeclass(c, nc->spec.node_class_ref.name)
            : NULL;
  if (!provider || !cls ||
      carp_provider_is_drifted(provider, "nodeclaim.disruption", nc, cls,
                               &reason) ||
      !reason || !*reason)
    return NULL;
  return reason;
}
