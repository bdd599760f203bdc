/* simulate.c: the consolidation question, answered by the scheduler the
 * provisioner uses. The round's base problem is built once from the
 * caches, with the pods of every candidate among the pods to place. Each
 * question (a set of candidates) then only switches those candidates'
 * nodes to "deleting", keeps their pods and leaves the others out, and
 * drops the bound pods of the removed nodes from topology counting: an
 * O(nodes + pods moved) preparation, then one solve.
 *
 * A set can go when all its pods find room on the rest of the cluster
 * (delete), or when they need exactly one new NodeClaim and some of that
 * claim's instance types cost strictly less than the set does now
 * (replace, with only those types allowed). NodePool limits still count
 * the candidates, which are removed only after the replacement is up: a
 * pool at its limit can delete but not replace. */
#include <stdio.h>
#include <string.h>

#include "../provisioning/claim.h"
#include "../provisioning/problem.h"
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/scheduling.h"
#include "disruption_int.h"

struct dis_sim {
  struct carp_prov_problem pr;
  const struct carp_cluster *c;
  const struct dis_analysis *a;
  size_t *node_idx;  /* candidate -> index in pr.p.nodes, or SIZE_MAX */
  size_t *pod_start; /* candidate -> its first pod in pr.p.pods */
  size_t *pod_count;
  uint8_t *removed; /* per problem node, during a run */
  struct carp_sched_pod *pods_buf;
  struct carp_sched_bound_pod *bound_buf;
};

#define NO_NODE ((size_t)-1)

static int moves(const struct carp_pod *p)
{
  return !carp_pod_is_terminal(p) && carp_pod_is_reschedulable(p) &&
         !carp_pod_is_mirror(p);
}

int carp__dis_sim_new(const struct carp_cluster *c,
                      struct carp_provider *provider,
                      const struct dis_analysis *a, struct dis_sim **out)
{
  struct dis_sim *s = CARP_NEW(struct dis_sim);
  const struct carp_pod **pending;
  struct carp_prov_input in;
  size_t total = 0, i, j, k, n;
  int rc;

  s->c = c;
  s->a = a;
  for (i = 0; i < a->ncands; i++) {
    carp_cluster_pods_on_node(c, a->cands[i].node->meta.name, &n);
    total += n;
  }
  pending = carp_calloc(total + 1, sizeof(*pending));
  s->pod_start = carp_calloc(a->ncands + 1, sizeof(size_t));
  s->pod_count = carp_calloc(a->ncands + 1, sizeof(size_t));
  s->node_idx = carp_calloc(a->ncands + 1, sizeof(size_t));
  for (i = 0, k = 0; i < a->ncands; i++) {
    struct carp_objmeta *const *pods =
        carp_cluster_pods_on_node(c, a->cands[i].node->meta.name, &n);
    s->pod_start[i] = k;
    for (j = 0; j < n; j++)
      if (moves((const struct carp_pod *)pods[j]))
        pending[k++] = (const struct carp_pod *)pods[j];
    s->pod_count[i] = k - s->pod_start[i];
  }
  memset(&in, 0, sizeof(in));
  in.pending = pending;
  in.npending = k;
  in.ignore_nominations = 1;
  rc = carp_prov_problem_build(&s->pr, c, provider, &in);
  carp_free(pending);
  if (rc || s->pr.p.npods != k) {
    /* Every pod given is placed in order: anything else is a bug. */
    carp__dis_sim_free(s);
    return rc ? rc : CARP_EINVAL;
  }
  for (i = 0; i < a->ncands; i++) {
    s->node_idx[i] = NO_NODE;
    for (j = 0; j < s->pr.p.nnodes; j++)
      if (!s->pr.node_is_claim[j] &&
          !strcmp(s->pr.node_names[j], a->cands[i].node->meta.name)) {
        s->node_idx[i] = j;
        break;
      }
  }
  s->removed = carp_calloc(s->pr.p.nnodes + 1, 1);
  s->pods_buf = carp_calloc(k + 1, sizeof(*s->pods_buf));
  s->bound_buf = carp_calloc(s->pr.p.nbound_pods + 1, sizeof(*s->bound_buf));
  *out = s;
  return 0;
}

void carp__dis_sim_free(struct dis_sim *s)
{
  if (!s)
    return;
  carp_prov_problem_free(&s->pr);
  carp_free(s->node_idx);
  carp_free(s->pod_start);
  carp_free(s->pod_count);
  carp_free(s->removed);
  carp_free(s->pods_buf);
  carp_free(s->bound_buf);
  carp_free(s);
}

void carp__dis_plan_cleanup(struct dis_plan *p)
{
  carp_free(p->repl.nodepool);
  carp_free(p->repl.body);
  carp_free(p->repl.types);
  carp_resources_cleanup(&p->repl.capacity);
  memset(p, 0, sizeof(*p));
}

/* No: why, and the detail it names (may be NULL). */
static void none(struct dis_plan *out, const char *why, const char *detail)
{
  out->decision = DIS_NONE;
  snprintf(out->why, sizeof(out->why), "%s%s", why, detail ? detail : "");
}

/* The price of the cheapest candidate of idx whose instance type is one
 * of cl's options, or max when none is. */
static double same_type_cap(struct dis_sim *s,
                            const struct carp_sched_claim *cl,
                            const size_t *idx, size_t n, double max)
{
  size_t i, j;
  for (i = 0; i < n; i++) {
    const struct dis_cand *cd = &s->a->cands[idx[i]];
    const char *type =
        carp_kvset_get(cd->nc->meta.labels, CARP_LABEL_INSTANCE_TYPE);
    for (j = 0; type && j < cl->ninstance_types; j++)
      if (!strcmp(s->pr.p.instance_types[cl->instance_types[j]].name, type) &&
          cd->price >= 0 && cd->price < max)
        max = cd->price;
  }
  return max;
}

/* Turns the solve's one new claim into a replacement, if it is cheaper. */
static void replacement(struct dis_sim *s, const struct carp_sched_claim *cl,
                        double price_now, struct dis_plan *out)
{
  struct carp_buf body, types;
  int rc;
  memset(&out->repl, 0, sizeof(out->repl));
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  carp_buf_init(&types, 64 * 1024);
  rc = carp_prov_claim_encode(&s->pr, s->c, cl, price_now, &body,
                              &out->repl.capacity, &types, &out->repl.price);
  if (rc) {
    carp_buf_free(&body);
    carp_buf_free(&types);
    carp_resources_cleanup(&out->repl.capacity);
    if (rc == CARP_ENOENT)
      none(out, "can't replace with a lower-priced node", NULL);
    else
      none(out, "can't encode the replacement NodeClaim", NULL);
    return;
  }
  out->decision = DIS_REPLACE;
  out->repl.nodepool = carp_strdup(s->pr.pools[cl->nodepool]->meta.name);
  out->repl.body = carp_buf_steal(&body, NULL);
  out->repl.types = carp_buf_steal(&types, NULL);
}

static void run(struct dis_sim *s, const size_t *idx, size_t n,
                int allow_replace, int multi, struct dis_plan *out)
{
  struct carp_sched_problem p = s->pr.p;
  struct carp_sched_result *res = NULL;
  struct carp_sched_node *nodes = (struct carp_sched_node *)s->pr.p.nodes;
  double price_now = 0;
  size_t i, j, npods = 0, nbound = 0;
  int unknown_price = 0;

  memset(out, 0, sizeof(*out));
  for (i = 0; i < n; i++) {
    const struct dis_cand *cd = &s->a->cands[idx[i]];
    if (s->node_idx[idx[i]] == NO_NODE) {
      none(out, "not in the simulation: node ", cd->node->meta.name);
      return;
    }
    s->removed[s->node_idx[idx[i]]] = 1;
    nodes[s->node_idx[idx[i]]].deleting = 1;
    memcpy(&s->pods_buf[npods], &s->pr.p.pods[s->pod_start[idx[i]]],
           s->pod_count[idx[i]] * sizeof(*s->pods_buf));
    npods += s->pod_count[idx[i]];
    if (cd->price < 0)
      unknown_price = 1;
    price_now += cd->price;
  }
  for (j = 0; j < s->pr.p.nbound_pods; j++)
    if (!s->removed[s->pr.p.bound_pods[j].node])
      s->bound_buf[nbound++] = s->pr.p.bound_pods[j];
  p.pods = s->pods_buf;
  p.npods = npods;
  p.bound_pods = s->bound_buf;
  p.nbound_pods = nbound;
  p.no_new_claims = !allow_replace || unknown_price;
  p.max_new_claims = 1;

  if (carp_sched_solve(&p, &res)) {
    none(out, "the simulation failed", NULL);
  } else if (res->nunschedulable) {
    none(out, "its pods cannot move: ", res->unschedulable[0].message);
  } else if (res->nclaims == 0) {
    out->decision = DIS_DELETE;
  } else if (res->nclaims > 1) {
    none(out, "can't remove without creating more than one node", NULL);
  } else {
    double cap = price_now;
    if (multi)
      cap = same_type_cap(s, &res->claims[0], idx, n, cap);
    replacement(s, &res->claims[0], cap, out);
  }
  if (out->decision == DIS_NONE && unknown_price && allow_replace && res &&
      res->nunschedulable)
    snprintf(out->why, sizeof(out->why), "%s",
             "its price is unknown (instance type, zone or capacity type "
             "label missing)");
  carp_sched_result_free(res);
  for (i = 0; i < n; i++) {
    s->removed[s->node_idx[idx[i]]] = 0;
    nodes[s->node_idx[idx[i]]].deleting = 0;
  }
}

void carp__dis_sim_run(struct dis_sim *s, const size_t *idx, size_t n,
                       int allow_replace, struct dis_plan *out)
{
  run(s, idx, n, allow_replace, 0, out);
}

void carp__dis_sim_run_multi(struct dis_sim *s, const size_t *idx, size_t n,
                             struct dis_plan *out)
{
  run(s, idx, n, 1, 1, out);
}
