/* claim.c: from a solved claim to the body of a NodeClaim create (see
 * claim.h). */
#include "claim.h"

#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"

static enum carp_op op_back(enum carp_sched_op op)
{
  switch (op) {
  case CARP_SCHED_OP_IN:
    return CARP_OP_IN;
  case CARP_SCHED_OP_NOT_IN:
    return CARP_OP_NOT_IN;
  case CARP_SCHED_OP_EXISTS:
    return CARP_OP_EXISTS;
  case CARP_SCHED_OP_DOES_NOT_EXIST:
    return CARP_OP_DOES_NOT_EXIST;
  case CARP_SCHED_OP_GT:
    return CARP_OP_GT;
  case CARP_SCHED_OP_LT:
    return CARP_OP_LT;
  case CARP_SCHED_OP_GTE:
    return CARP_OP_GTE;
  case CARP_SCHED_OP_LTE:
    return CARP_OP_LTE;
  }
  return CARP_OP_IN;
}

/* The class hash the VM is launched with, so a later change of the
 * class's spec shows as drift (Karpenter stamps its EC2NodeClass hash the
 * same way). The status hash is the controller's, which includes the
 * user-data text the provisioner never reads. */
static void class_hash(const struct carp_cluster *c,
                       const struct carp_nodepool *pool, struct carp_kv kv[2],
                       struct carp_nodeclaim_create *in)
{
  const struct carp_nodeclass *nc =
      carp_cluster_nodeclass(c, pool->tmpl.node_class_ref.name);
  if (!nc || !nc->status.spec_hash)
    return;
  kv[0].key = CARP_ANN_NODECLASS_HASH;
  kv[0].value = nc->status.spec_hash;
  kv[1].key = CARP_ANN_NODECLASS_HASH_VER;
  kv[1].value = CARP_NODECLASS_HASH_VERSION;
  in->annotations = kv;
  in->nannotations = 2;
}

int carp_prov_claim_encode_pool(const struct carp_cluster *c,
                                const struct carp_nodepool *pool,
                                const char *name, struct carp_buf *body)
{
  struct carp_nodeclaim_create in;
  struct carp_kv kv[2];
  memset(&in, 0, sizeof(in));
  in.pool = pool;
  in.name = name;
  in.requirements = pool->tmpl.requirements;
  in.nrequirements = pool->tmpl.nrequirements;
  class_hash(c, pool, kv, &in);
  return carp_nodeclaim_encode_create(&in, body);
}

int carp_prov_claim_encode(struct carp_prov_problem *pr,
                           const struct carp_cluster *c,
                           const struct carp_sched_claim *cl,
                           double below_price, struct carp_buf *body,
                           struct carp_resources *capacity,
                           struct carp_buf *types, double *price)
{
  const struct carp_nodepool *pool = pr->pools[cl->nodepool];
  struct carp_requirement *reqs =
      carp_arena_array(&pr->arena, cl->nrequirements + 1, sizeof(*reqs));
  const char **names =
      carp_arena_array(&pr->arena, cl->ninstance_types + 1, sizeof(char *));
  struct carp_nodeclaim_create in;
  struct carp_resources requests;
  struct carp_kv kv[2];
  size_t i, n = 0, nopt = 0;
  int rc;

  for (i = 0; i < cl->ninstance_types && nopt < CARP_PROV_MAX_OPTIONS; i++) {
    if (below_price > 0 && cl->prices[i] >= below_price)
      continue;
    if (!nopt && price)
      *price = cl->prices[i];
    names[nopt++] = pr->p.instance_types[cl->instance_types[i]].name;
    carp_resources_max(capacity, &pr->types[cl->instance_types[i]]->capacity);
    if (types)
      carp_buf_printf(types, "%s%s", nopt > 1 ? "," : "", names[nopt - 1]);
  }
  if (!nopt)
    return CARP_ENOENT;
  for (i = 0; i < cl->nrequirements; i++) {
    const struct carp_sched_requirement *r = &cl->requirements[i];
    /* The instance-type requirement is rewritten from the options. */
    if (!strcmp(r->key, CARP_LABEL_INSTANCE_TYPE))
      continue;
    reqs[n].key = r->key;
    reqs[n].op = op_back(r->op);
    reqs[n].values = (const char **)r->values;
    reqs[n].nvalues = (uint32_t)r->nvalues;
    reqs[n].min_values = r->min_values;
    n++;
  }
  reqs[n].key = CARP_LABEL_INSTANCE_TYPE;
  reqs[n].op = CARP_OP_IN;
  reqs[n].values = names;
  reqs[n].nvalues = (uint32_t)nopt;
  n++;

  carp_prov_resources_of(cl->requests, cl->nrequests, &requests);
  memset(&in, 0, sizeof(in));
  in.pool = pool;
  in.name = "__NAME__";
  in.requirements = reqs;
  in.nrequirements = n;
  in.requests = &requests;
  class_hash(c, pool, kv, &in);
  rc = carp_nodeclaim_encode_create(&in, body);
  carp_resources_cleanup(&requests);
  return rc;
}
