/* analyze.c: which NodeClaims may be disrupted voluntarily and how many
 * each NodePool's budgets allow, computed from the cluster state alone.
 *
 * Budgets follow Karpenter's BuildDisruptionBudgetMapping: a pool's nodes
 * are its initialized NodeClaims (not yet InstanceTerminating); those
 * being deleted, marked for deletion, without a Node or with a NotReady
 * Node are already disrupting and use up the budget. Candidates follow
 * NewCandidate and the emptiness method: initialized, not disrupting, the
 * pool exists, is not static and consolidates (consolidateAfter not
 * Never), no do-not-disrupt on the Node or its pods, no nomination, and
 * nothing moved on the Node for consolidateAfter. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/duration.h"
#include "carpenter/nodepool.h"
#include "carpenter/termination.h"
#include "disruption_int.h"

#define TERMINATING_GRACE_MS 60000

int carp__dis_managed(const struct carp_nodeclaim *nc)
{
  return nc->spec.node_class_ref.kind &&
         !strcmp(nc->spec.node_class_ref.kind, "ProxmoxNodeClass");
}

int64_t carp__dis_since(const struct carp_cluster *c,
                        const struct carp_nodeclaim *nc,
                        const struct carp_node *node, int64_t active_since_ms)
{
  const struct carp_condition *init =
      carp_conditions_get(&nc->status.conditions, CARP_COND_INITIALIZED);
  int64_t since = active_since_ms, t;
  if (init && init->transition_ms > since)
    since = init->transition_ms;
  if (nc->status.last_pod_event_ms > since)
    since = nc->status.last_pod_event_ms;
  t = node ? carp_cluster_last_pod_event(c, node->meta.name) : 0;
  if (t > since)
    since = t;
  return since;
}

static int disrupting(const struct carp_cluster *c,
                      const struct carp_nodeclaim *nc,
                      const struct carp_node *node)
{
  return !node || node->ready.status != 1 || nc->meta.deletion_ms ||
         node->meta.deletion_ms || carp_cluster_is_marked(c, nc->meta.name);
}

const char *carp__dis_blocked(const struct carp_cluster *c,
                              const struct carp_nodeclaim *nc,
                              const struct carp_node *node,
                              const struct carp_nodepool *np, int64_t now_ms,
                              size_t *reschedulable)
{
  struct carp_objmeta *const *pods;
  const char *ann;
  size_t n, i;
  *reschedulable = 0;
  if (!carp__dis_managed(nc))
    return "not managed by Carpenter";
  if (!carp_conditions_is_true(&nc->status.conditions, CARP_COND_INITIALIZED))
    return "not initialized";
  if (disrupting(c, nc, node))
    return "already disrupting";
  if (!np)
    return "its NodePool does not exist";
  if (np->has_replicas)
    return "its NodePool is static";
  if (np->consolidate_after_ms == CARP_DURATION_NEVER)
    return "its NodePool has consolidateAfter: Never";
  ann = carp_kvset_get(node->meta.annotations, CARP_ANN_DO_NOT_DISRUPT);
  if (ann && !strcmp(ann, "true"))
    return "the node has the karpenter.sh/do-not-disrupt annotation";
  if (carp_cluster_is_nominated(c, node->meta.name) ||
      carp_cluster_is_nominated(c, nc->meta.name))
    return "the node is nominated for pending pods";
  pods = carp_cluster_pods_on_node(c, node->meta.name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    if (carp_pod_is_terminal(p))
      continue;
    if (carp_pod_do_not_disrupt(p, now_ms))
      return "a pod has the karpenter.sh/do-not-disrupt annotation";
    /* A pod still leaving is a pod event in progress: the consolidateAfter
     * clock starts once it is gone (one stuck for a minute past its
     * deletion time no longer counts). */
    if (p->meta.deletion_ms && !carp_pod_is_daemon(p) &&
        now_ms < p->meta.deletion_ms + TERMINATING_GRACE_MS)
      return "pods are terminating";
    if (carp_pod_is_reschedulable(p) && !carp_pod_is_mirror(p))
      (*reschedulable)++;
  }
  return NULL;
}

size_t carp__dis_pool_index(const struct dis_analysis *a, const char *name)
{
  size_t i;
  for (i = 0; name && i < a->npools; i++)
    if (!strcmp(a->pools[i].np->meta.name, name))
      return i;
  return (size_t)-1;
}

void carp__dis_analyze(const struct carp_cluster *c, int64_t now_ms,
                       int64_t active_since_ms, struct dis_analysis *out)
{
  struct carp_store *pools = carp_informer_store(c->nodepools);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  size_t npools = carp_store_len(pools), cap = 0, pi;

  memset(out, 0, sizeof(*out));
  out->pools = carp_calloc(npools ? npools : 1, sizeof(*out->pools));
  carp_store_iter_init(&it);
  while ((m = carp_store_next(pools, &it)) && out->npools < npools) {
    struct dis_pool *p = &out->pools[out->npools++];
    p->np = (const struct carp_nodepool *)m;
  }
  for (pi = 0; pi < out->npools; pi++) {
    struct dis_pool *p = &out->pools[pi];
    struct carp_objmeta *const *claims;
    size_t n, i;
    claims = carp_cluster_nodeclaims_of_pool(c, p->np->meta.name, &n);
    for (i = 0; i < n; i++) {
      const struct carp_nodeclaim *nc =
          (const struct carp_nodeclaim *)claims[i];
      const struct carp_node *node = carp_cluster_node_of_nodeclaim(c, nc);
      size_t resched;
      int64_t since;
      if (!carp__dis_managed(nc) ||
          !carp_conditions_is_true(&nc->status.conditions,
                                   CARP_COND_INITIALIZED) ||
          carp_conditions_is_true(&nc->status.conditions,
                                  CARP_COND_INSTANCE_TERMINATING))
        continue;
      p->nodes++;
      if (disrupting(c, nc, node)) {
        p->disrupting++;
        continue;
      }
      if (carp__dis_blocked(c, nc, node, p->np, now_ms, &resched))
        continue;
      since = carp__dis_since(c, nc, node, active_since_ms);
      if (now_ms - since < p->np->consolidate_after_ms)
        continue;
      if (out->ncands == cap) {
        cap = cap ? cap * 2 : 16;
        out->cands = carp_reallocarray(out->cands, cap, sizeof(*out->cands));
      }
      out->cands[out->ncands].nc = nc;
      out->cands[out->ncands].node = node;
      out->cands[out->ncands].pool = pi;
      out->cands[out->ncands].empty = resched == 0;
      out->ncands++;
      if (resched == 0)
        p->empty++;
    }
    p->budget = carp_nodepool_allowed_disruptions(p->np, CARP_DISRUPT_EMPTY,
                                                  p->nodes, now_ms);
    p->allowed = p->budget - p->disrupting;
    if (p->allowed < 0)
      p->allowed = 0;
  }
}

void carp__dis_analysis_free(struct dis_analysis *a)
{
  carp_free(a->pools);
  carp_free(a->cands);
  memset(a, 0, sizeof(*a));
}
