/* analyze.c: which NodeClaims may be disrupted voluntarily, what each
 * costs and how many each NodePool's budgets allow, computed from the
 * cluster state alone (and the provider's price list).
 *
 * Budgets follow Karpenter's BuildDisruptionBudgetMapping: a pool's nodes
 * are its initialized NodeClaims (not yet InstanceTerminating); those
 * being deleted, marked for deletion, without a Node or with a NotReady
 * Node are already disrupting and use up every reason's budget.
 * Candidates follow NewCandidate: initialized, not disrupting, the pool
 * exists, no do-not-disrupt on the Node or its pods, no pod whose
 * PodDisruptionBudget allows no eviction, no nomination for pending pods;
 * and either drifted (Drifted=True) or consolidatable (the pool is not
 * static, consolidates - consolidateAfter not Never - and nothing moved on
 * the Node for consolidateAfter). They are ordered by Karpenter's
 * disruption cost - the eviction cost of their pods (priority and
 * pod-deletion-cost) times the share of their lifetime left - cheapest
 * first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/duration.h"
#include "carpenter/nodepool.h"
#include "carpenter/overlay.h"
#include "carpenter/scheduling.h"
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

double carp__dis_eviction_cost(const struct carp_pod *p)
{
  const char *ann =
      carp_kvset_get(p->meta.annotations, CARP_ANN_POD_DELETION_COST);
  double cost = 1.0;
  if (ann) {
    char *end;
    long long v = strtoll(ann, &end, 10);
    if (end != ann && !*end)
      cost += (double)v / (double)(1 << 27);
  }
  cost += (double)p->spec->priority / (double)(1 << 25);
  if (cost < -10)
    cost = -10;
  if (cost > 10)
    cost = 10;
  return cost;
}

/* The PodDisruptionBudget that allows this pod no eviction, if any. */
static const struct carp_pdb *blocking_pdb(const struct carp_cluster *c,
                                           const struct carp_pod *p)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->pdbs), &it))) {
    const struct carp_pdb *b = (const struct carp_pdb *)m;
    if (strcmp(m->namespace ? m->namespace : "",
               p->meta.namespace ? p->meta.namespace : "") ||
        b->disruptions_allowed > 0 ||
        !carp_label_selector_matches(&b->selector, p->meta.labels))
      continue;
    return b;
  }
  return NULL;
}

const char *carp__dis_blocked(const struct carp_cluster *c,
                              const struct carp_nodeclaim *nc,
                              const struct carp_node *node,
                              const struct carp_nodepool *np, int64_t now_ms,
                              size_t *reschedulable, char *why_buf)
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
  ann = carp_kvset_get(node->meta.annotations, CARP_ANN_DO_NOT_DISRUPT);
  if (ann && !strcmp(ann, "true"))
    return "the node has the karpenter.sh/do-not-disrupt annotation";
  if (carp_cluster_is_nominated(c, node->meta.name) ||
      carp_cluster_is_nominated(c, nc->meta.name))
    return "the node is nominated for pending pods";
  pods = carp_cluster_pods_on_node(c, node->meta.name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    const struct carp_pdb *pdb;
    if (carp_pod_is_terminal(p))
      continue;
    if (carp_pod_do_not_disrupt(p, now_ms)) {
      snprintf(why_buf, 256,
               "pod %s/%s has the karpenter.sh/do-not-disrupt annotation",
               p->meta.namespace, p->meta.name);
      return why_buf;
    }
    /* A pod still leaving is a pod event in progress: the consolidateAfter
     * clock starts once it is gone (one stuck for a minute past its
     * deletion time no longer counts). */
    if (p->meta.deletion_ms && !carp_pod_is_daemon(p) &&
        now_ms < p->meta.deletion_ms + TERMINATING_GRACE_MS)
      return "pods are terminating";
    if (!carp_pod_is_reschedulable(p) || carp_pod_is_mirror(p))
      continue;
    if ((pdb = blocking_pdb(c, p))) {
      snprintf(why_buf, 256, "pdb %s/%s prevents pod evictions",
               pdb->meta.namespace, pdb->meta.name);
      return why_buf;
    }
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

/* ---- the analysis ---- */

static int by_cost(const void *a, const void *b)
{
  const struct dis_cand *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  if (x->price != y->price)
    return x->price > y->price ? -1 : 1;
  return strcmp(x->nc->meta.name, y->nc->meta.name);
}

/* Disruption cost (Karpenter's) and Balanced's node disruption. */
static void costs(const struct carp_cluster *c, const struct carp_nodeclaim *nc,
                  const struct carp_node *node, int64_t now_ms,
                  struct dis_cand *out)
{
  struct carp_objmeta *const *pods;
  double lifetime = 1.0, sum = 0, positive = 0;
  size_t n, i;
  if (nc->spec.expire_after_ms != CARP_DURATION_NEVER &&
      nc->spec.expire_after_ms > 0) {
    lifetime =
        (double)(nc->meta.creation_ms + nc->spec.expire_after_ms - now_ms) /
        (double)nc->spec.expire_after_ms;
    if (lifetime < 0)
      lifetime = 0;
    if (lifetime > 1)
      lifetime = 1;
  }
  pods = carp_cluster_pods_on_node(c, node->meta.name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    double e;
    if (carp_pod_is_terminal(p) || !carp_pod_is_reschedulable(p) ||
        carp_pod_is_mirror(p))
      continue;
    e = carp__dis_eviction_cost(p);
    sum += e;
    if (e > 0)
      positive += e;
  }
  out->cost = sum * lifetime;
  out->disruption = 1 + positive;
}

double carp__dis_disruption_cost(const struct carp_cluster *c,
                                 const struct carp_nodeclaim *nc,
                                 const struct carp_node *node, int64_t now_ms)
{
  struct dis_cand cd;
  memset(&cd, 0, sizeof(cd));
  costs(c, nc, node, now_ms, &cd);
  return cd.cost;
}

static void add_blocked(struct dis_analysis *out, size_t *cap,
                        const struct carp_nodeclaim *nc,
                        const struct carp_node *node, const char *why,
                        const char *why_buf)
{
  struct dis_blocked *b;
  if (out->nblocked == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    out->blocked = carp_reallocarray(out->blocked, *cap, sizeof(*out->blocked));
  }
  b = &out->blocked[out->nblocked++];
  b->nc = nc;
  b->node = node;
  if (why == why_buf) {
    snprintf(b->why_buf, sizeof(b->why_buf), "%s", why_buf);
    b->why = b->why_buf;
  } else {
    b->why = why;
  }
}

void carp__dis_analyze(const struct carp_cluster *c,
                       struct carp_provider *provider, int64_t now_ms,
                       int64_t active_since_ms, struct dis_analysis *out)
{
  struct carp_store *pools = carp_informer_store(c->nodepools);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct carp_price_book *pl = carp_price_book_new(c, provider, "disruption");
  size_t npools = carp_store_len(pools), cap = 0, bcap = 0, pi;
  char why_buf[256];

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
    int r;
    claims = carp_cluster_nodeclaims_of_pool(c, p->np->meta.name, &n);
    for (i = 0; i < n; i++) {
      const struct carp_nodeclaim *nc =
          (const struct carp_nodeclaim *)claims[i];
      const struct carp_node *node = carp_cluster_node_of_nodeclaim(c, nc);
      const struct carp_condition *drift;
      struct dis_cand cand;
      const char *why;
      size_t resched;
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
      memset(&cand, 0, sizeof(cand));
      cand.price = carp_price_book_claim(pl, nc);
      costs(c, nc, node, now_ms, &cand);
      if (cand.price >= 0) {
        p->cost += cand.price;
        p->disruption += cand.disruption;
      }
      why = carp__dis_blocked(c, nc, node, p->np, now_ms, &resched, why_buf);
      cand.consolidatable = 0;
      if (!p->np->has_replicas &&
          p->np->consolidate_after_ms != CARP_DURATION_NEVER) {
        int64_t quiet = carp__dis_since(c, nc, node, active_since_ms) +
                        p->np->consolidate_after_ms;
        cand.consolidatable = now_ms >= quiet;
        if (!cand.consolidatable && !why &&
            (!out->next_quiet_ms || quiet < out->next_quiet_ms))
          out->next_quiet_ms = quiet;
      }
      drift = carp_conditions_get(&nc->status.conditions, CARP_COND_DRIFTED);
      /* Static pools too: drift is how their nodes follow the template
       * (consolidation never takes them). */
      cand.drifted = drift && drift->status == CARP_COND_TRUE;
      cand.drifted_ms = drift ? drift->transition_ms : 0;
      /* Not yet, or never: nothing to report. */
      if (!cand.consolidatable && !cand.drifted)
        continue;
      if (why) {
        if (cand.consolidatable)
          add_blocked(out, &bcap, nc, node, why, why_buf);
        continue;
      }
      if (out->ncands == cap) {
        cap = cap ? cap * 2 : 16;
        out->cands = carp_reallocarray(out->cands, cap, sizeof(*out->cands));
      }
      cand.nc = nc;
      cand.node = node;
      cand.pool = pi;
      cand.empty = resched == 0;
      cand.npods = resched;
      out->cands[out->ncands++] = cand;
      p->cands += cand.consolidatable;
      p->empty += cand.consolidatable && resched == 0;
      p->drifted += cand.drifted;
    }
    for (r = 0; r < CARP_DISRUPT_NREASONS; r++) {
      p->budget[r] = carp_nodepool_allowed_disruptions(
          p->np, (enum carp_disruption_reason)r, p->nodes, now_ms);
      p->allowed[r] = p->budget[r] - p->disrupting;
      if (p->allowed[r] < 0)
        p->allowed[r] = 0;
    }
  }
  if (out->ncands > 1)
    qsort(out->cands, out->ncands, sizeof(*out->cands), by_cost);
  carp_price_book_free(pl);
}

void carp__dis_analysis_free(struct dis_analysis *a)
{
  carp_free(a->pools);
  carp_free(a->cands);
  carp_free(a->blocked);
  memset(a, 0, sizeof(*a));
}
