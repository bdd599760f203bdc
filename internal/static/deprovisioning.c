/* deprovisioning.c: the static.deprovisioning controller (Karpenter's): a
 * static NodePool with more running NodeClaims than replicas loses the
 * extra ones (a drifted node being replaced is not counted: its
 * replacement stands for it), in Karpenter's order - not launched yet, then
 * nodes with no pod to move (and none that must not be disrupted), then the
 * cheapest to disrupt, nodes with do-not-disrupt pods last.
 *
 * Each chosen NodeClaim is marked for deletion in the cluster state
 * before its delete is sent (so a reconcile that runs before the cache
 * shows the deletion does not pick another), and unmarked if the delete
 * fails. Budgets do not apply: the user asked for fewer nodes, as in
 * Karpenter. Termination drains them through the Eviction API. */
#include <stdlib.h>
#include <string.h>

#include "../disruption/disruption_int.h"
#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/static.h"
#include "carpenter/termination.h"
#include "static_int.h"

#define RESYNC_MS (60 * 1000)

enum rank {
  RANK_UNLAUNCHED = 0,
  RANK_EMPTY,
  RANK_COST,
  RANK_DO_NOT_DISRUPT,
};

struct cand {
  const struct carp_nodeclaim *nc;
  enum rank rank;
  double cost;
};

struct batch {
  size_t left;
  int err;
};

static int cand_cmp(const void *a, const void *b)
{
  const struct cand *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return strcmp(x->nc->meta.name, y->nc->meta.name);
}

static void rank_of(struct carp_controller *c, struct cand *cd)
{
  const struct carp_node *node =
      carp_cluster_node_of_nodeclaim(c->env.cluster, cd->nc);
  struct carp_objmeta *const *pods;
  int64_t now = carp_controller_now(c);
  size_t n, i, moving = 0;
  if (!cd->nc->status.provider_id || !*cd->nc->status.provider_id || !node) {
    cd->rank = RANK_UNLAUNCHED;
    return;
  }
  pods = carp_cluster_pods_on_node(c->env.cluster, node->meta.name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    if (carp_pod_is_terminal(p))
      continue;
    if (carp_pod_do_not_disrupt(p, now)) {
      cd->rank = RANK_DO_NOT_DISRUPT;
      return;
    }
    if (carp_pod_is_reschedulable(p) && !carp_pod_is_mirror(p))
      moving++;
  }
  cd->rank = moving ? RANK_COST : RANK_EMPTY;
  if (moving)
    cd->cost = carp__dis_disruption_cost(c->env.cluster, cd->nc, node, now);
}

static void on_deleted(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  struct batch *b = arg;
  if (res && res->err && res->err != CARP_ENOTFOUND)
    b->err = res->err;
  if (--b->left)
    return;
  carp_controller_done(c, key,
                       b->err ? CARP_RECONCILE_ERROR : CARP_RECONCILE_DONE, 0);
  carp_free(b);
}

struct del {
  struct batch *b;
  char *name;
};

static void on_claim_deleted(struct carp_controller *c, const char *key,
                             const struct carp_kube_result *res, void *arg)
{
  struct del *d = arg;
  if (res->err && res->err != CARP_ENOTFOUND) {
    /* Not going after all: counted as running again. */
    carp_cluster_unmark(c->env.cluster, d->name);
    if (res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER)
      CARP_LOG_WARN("static", "deleting nodeclaim failed",
                    CARP_F_STR("nodeclaim", d->name), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
  }
  on_deleted(c, key, res, d->b);
  carp_free(d->name);
  carp_free(d);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  const struct carp_nodepool *np = carp_cluster_nodepool(c->env.cluster, key);
  struct carp_objmeta *const *claims;
  struct carp_pool_count n;
  struct cand *cands;
  struct batch *b;
  size_t nclaims, ncands = 0, i;
  int64_t excess;

  if (!carp__static_pool(np)) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  carp_cluster_nodepool_count(c->env.cluster, key, &n);
  excess = n.running - np->replicas;
  if (excess <= 0) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  claims = carp_cluster_nodeclaims_of_pool(c->env.cluster, key, &nclaims);
  cands = carp_calloc(nclaims + 1, sizeof(*cands));
  for (i = 0; i < nclaims; i++) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)claims[i];
    /* A drifted NodeClaim being replaced goes when its replacement is
     * up; the replacement counts in its place. */
    if (nc->meta.deletion_ms ||
        carp_cluster_is_marked(c->env.cluster, nc->meta.name) ||
        carp_cluster_is_replaced(c->env.cluster, nc->meta.name))
      continue;
    cands[ncands].nc = nc;
    rank_of(c, &cands[ncands]);
    ncands++;
  }
  qsort(cands, ncands, sizeof(*cands), cand_cmp);
  if ((size_t)excess > ncands)
    excess = (int64_t)ncands;
  CARP_LOG_INFO("static", "deprovisioning nodeclaims to satisfy replica count",
                CARP_F_STR("nodepool", key), CARP_F_INT("current", n.running),
                CARP_F_INT("desired", np->replicas),
                CARP_F_INT("deprovision-count", excess));
  b = CARP_NEW(struct batch);
  b->left = 1; /* held while the deletes are sent */
  for (i = 0; i < (size_t)excess; i++) {
    const struct carp_nodeclaim *nc = cands[i].nc;
    struct del *d = CARP_NEW(struct del);
    d->b = b;
    d->name = carp_strdup(nc->meta.name);
    carp_cluster_mark_for_deletion(c->env.cluster, nc->meta.name);
    CARP_LOG_INFO("static", "deleting nodeclaim",
                  CARP_F_STR("nodeclaim", nc->meta.name),
                  CARP_F_STR("nodepool", key));
    carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_NORMAL,
                          "Overprovisioned",
                          "NodePool %s has more nodes than its %lld replicas",
                          key, (long long)np->replicas);
    b->left++;
    if (carp_write_delete_claim(c, key, nc, on_claim_deleted, d)) {
      carp_cluster_unmark(c->env.cluster, d->name);
      carp_free(d->name);
      carp_free(d);
      b->left--;
      b->err = CARP_EIO;
    }
  }
  carp_free(cands);
  on_deleted(c, key, NULL, b);
}

static void sd_free(struct carp_controller *c)
{
  carp_free(c);
}

static const struct carp_controller_def def = {
    .name = "static.deprovisioning",
    .log_module = "static",
    .concurrency = 4,
    .reconcile = reconcile,
    .activated = carp__static_activated,
    .free = sd_free,
};

int carp_static_deprovisioning_new(const struct carp_controller_env *env,
                                   struct carp_controller **out)
{
  struct carp_controller *c;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  c = CARP_NEW(struct carp_controller);
  rc = carp_controller_init(c, env, &def);
  if (rc) {
    carp_free(c);
    return rc;
  }
  carp_controller_resync(c, RESYNC_MS);
  carp_controller_watch(c, env->cluster->nodepools, carp__static_map_pool);
  carp_controller_watch(c, env->cluster->nodeclaims, carp__static_map_claim);
  *out = c;
  return 0;
}
