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
 * pool at its limit can delete but not replace. CapacityBuffers' virtual
 * pods that have room now must keep it (hold_buffers). Before a solve
 * that may open a replacement, the room bound (room.c) tries to prove the
 * answer is no from cpu, memory and pod slots alone; most late-round
 * questions end there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../provisioning/claim.h"
#include "../provisioning/problem.h"
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/map.h"
#include "carpenter/scheduling.h"
#include "disruption_int.h"

/* Bound pods by "key=value" label. */
struct posting {
  uint32_t *v;
  size_t n, cap;
};

struct dis_sim {
  struct carp_prov_problem pr;
  struct carp_map by_label; /* "key=value" -> struct posting */
  uint32_t *anti;           /* bound pods with an anti-affinity */
  size_t nanti;
  /* One bit per bound pod: selected by this run (read out in index
   * order, and cleared, at the end of the run's selection). */
  uint64_t *chosen;
  size_t nwords;
  const struct carp_cluster *c;
  const struct dis_analysis *a;
  size_t *node_idx;  /* candidate -> index in pr.p.nodes, or SIZE_MAX */
  size_t *pod_start; /* candidate -> its first pod in pr.p.pods */
  size_t *pod_count;
  /* The pods still running on nodes that are going (a command carried out
   * and draining, a Node being deleted), after every candidate's: every
   * move must leave them room. */
  size_t moving_start;
  size_t nmoving;
  size_t pending_start; /* the pending pods, after the moving ones */
  size_t npending;
  /* The first nheld pending pods: CapacityBuffers' virtual pods that have
   * room now. A move must leave them room (see hold_buffers). */
  size_t nheld;
  uint8_t *removed;      /* per problem node, during a run */
  struct dis_room *room; /* the bound tried before each priced solve */
  /* The last solve and its question: the same question asked again (the
   * search's last fit, then priced) is answered without solving twice -
   * the solve is deterministic and the problem the same. */
  struct carp_sched_result *last;
  size_t *last_idx, last_n, last_cap;
  int last_no_new;
  uint32_t last_max_new;
  struct carp_sched_pod *pods_buf;
  struct carp_sched_bound_pod *bound_buf;
};

#define NO_NODE ((size_t)-1)
#define UNKNOWN_PRICE                                                          \
  "its price is unknown (instance type, zone or capacity type label missing)"

static size_t bounded; /* runs the room bound answered */

size_t carp__dis_sim_bounded(void)
{
  return bounded;
}

static int moves(const struct carp_pod *p)
{
  return !carp_pod_is_terminal(p) && carp_pod_is_reschedulable(p) &&
         !carp_pod_is_mirror(p);
}

/* ---- the bound pods' label index ---- */

static void post(struct dis_sim *s, const char *key, const char *value,
                 uint32_t i)
{
  char buf[512];
  struct posting *p;
  int n = snprintf(buf, sizeof(buf), "%s=%s", key, value ? value : "");
  if (n < 0 || (size_t)n >= sizeof(buf))
    return; /* too long to be a label: the fallback covers it */
  p = carp_map_gets(&s->by_label, buf);
  if (!p) {
    p = carp_calloc(1, sizeof(*p) + (size_t)n + 1);
    memcpy(p + 1, buf, (size_t)n + 1);
    carp_map_puts(&s->by_label, (const char *)(p + 1), p);
  }
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 8;
    p->v = carp_reallocarray(p->v, p->cap, sizeof(*p->v));
  }
  p->v[p->n++] = i;
}

static void index_bound(struct dis_sim *s)
{
  size_t i, j;
  carp_map_init(&s->by_label);
  s->anti = carp_calloc(s->pr.p.nbound_pods + 1, sizeof(uint32_t));
  s->nwords = (s->pr.p.nbound_pods + 63) / 64;
  s->chosen = carp_calloc(s->nwords + 1, sizeof(uint64_t));
  for (i = 0; i < s->pr.p.nbound_pods; i++) {
    const struct carp_sched_bound_pod *bp = &s->pr.p.bound_pods[i];
    for (j = 0; j < bp->nlabels; j++)
      post(s, bp->labels[j].key, bp->labels[j].value, (uint32_t)i);
    if (bp->nanti_affinity)
      s->anti[s->nanti++] = (uint32_t)i;
  }
}

static void unindex_bound(struct dis_sim *s)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&s->by_label, &it, NULL, NULL, &v)) {
    carp_free(((struct posting *)v)->v);
    carp_free(v);
  }
  carp_map_free(&s->by_label);
  carp_free(s->anti);
  carp_free(s->chosen);
}

static void pick(struct dis_sim *s, uint32_t i)
{
  s->chosen[i / 64] |= (uint64_t)1 << (i % 64);
}

/* Marks the bound pods sel may select (a superset: the scheduler checks).
 * Returns 0 when the selector cannot be narrowed by the index (then every
 * bound pod counts). */
static int mark_selected(struct dis_sim *s,
                         const struct carp_sched_selector *sel)
{
  const struct posting *best = NULL;
  char buf[512];
  size_t i;
  if (!sel)
    return 1; /* selects nothing */
  for (i = 0; i < sel->nmatch_labels; i++) {
    const struct posting *p;
    snprintf(buf, sizeof(buf), "%s=%s", sel->match_labels[i].key,
             sel->match_labels[i].value ? sel->match_labels[i].value : "");
    p = carp_map_gets(&s->by_label, buf);
    if (!p)
      return 1; /* no bound pod has that label */
    if (!best || p->n < best->n)
      best = p;
  }
  if (!best) {
    /* Only expressions: an In narrows to the union of its values. */
    for (i = 0; i < sel->nmatch_expressions; i++) {
      const struct carp_sched_requirement *e = &sel->match_expressions[i];
      size_t k, j;
      if (e->op != CARP_SCHED_OP_IN || !e->key)
        continue;
      for (k = 0; k < e->nvalues; k++) {
        const struct posting *p;
        snprintf(buf, sizeof(buf), "%s=%s", e->key,
                 e->values[k] ? e->values[k] : "");
        p = carp_map_gets(&s->by_label, buf);
        for (j = 0; p && j < p->n; j++)
          pick(s, p->v[j]);
      }
      return 1;
    }
    return 0;
  }
  for (i = 0; i < best->n; i++)
    pick(s, best->v[i]);
  return 1;
}

static int mark_terms(struct dis_sim *s, const struct carp_sched_pod_term *t,
                      size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (!mark_selected(s, t[i].selector))
      return 0;
  return 1;
}

/* The bound pods this run passes to the scheduler, into bound_buf. */
static size_t relevant_bound(struct dis_sim *s, size_t npods)
{
  const struct carp_sched_bound_pod *all = s->pr.p.bound_pods;
  size_t i, n = 0;
  int narrowed = 1;
  if (!s->pr.p.nbound_pods)
    return 0;
  for (i = 0; i < npods && narrowed; i++) {
    const struct carp_sched_pod *p = &s->pods_buf[i];
    size_t k;
    for (k = 0; k < p->nspreads && narrowed; k++)
      narrowed = mark_selected(s, p->spreads[k].selector);
    narrowed =
        narrowed && mark_terms(s, p->affinity, p->naffinity) &&
        mark_terms(s, p->preferred_affinity, p->npreferred_affinity) &&
        mark_terms(s, p->anti_affinity, p->nanti_affinity) &&
        mark_terms(s, p->preferred_anti_affinity, p->npreferred_anti_affinity);
  }
  if (!narrowed) {
    memset(s->chosen, 0, s->nwords * sizeof(*s->chosen));
    for (i = 0; i < s->pr.p.nbound_pods; i++)
      if (!s->removed[all[i].node])
        s->bound_buf[n++] = all[i];
    return n;
  }
  for (i = 0; i < s->nanti; i++)
    pick(s, s->anti[i]);
  /* In their original order: the solve's result must not depend on how
   * the index found them. */
  for (i = 0; i < s->nwords; i++) {
    uint64_t w = s->chosen[i];
    s->chosen[i] = 0;
    while (w) {
      size_t b = i * 64 + (size_t)__builtin_ctzll(w);
      w &= w - 1;
      if (!s->removed[all[b].node])
        s->bound_buf[n++] = all[b];
    }
  }
  return n;
}

/* CapacityBuffers keep room: their virtual pods that fit now without a
 * new NodeClaim (a solve of the pending pods on the cluster as it is) are
 * moved to the front of the pending pods and counted in nheld; run()
 * treats them like the candidates' pods, so a move must leave them room
 * (or make it in its replacement). Buffers still waiting for capacity
 * are the provisioner's, like other pending pods. */
static void hold_buffers(struct dis_sim *s)
{
  struct carp_sched_problem p = s->pr.p;
  struct carp_sched_result *res = NULL;
  struct carp_sched_pod *pods = (struct carp_sched_pod *)s->pr.p.pods;
  struct carp_sched_pod *sp;
  const struct carp_pod **cp;
  const struct carp_sched_assignment *as;
  size_t i, at, n = s->npending;
  /* The moving pods take their room first, as they will in every run. */
  p.pods = &pods[s->moving_start];
  p.npods = s->nmoving + n;
  if (carp_sched_solve(&p, &res))
    return;
  as = &res->assignments[s->nmoving];
  sp = carp_calloc(n + 1, sizeof(*sp));
  cp = carp_calloc(n + 1, sizeof(*cp));
  for (i = 0, at = 0; i < n; i++)
    if (carp_pod_is_virtual(s->pr.pods[s->pending_start + i]) &&
        as[i].target == CARP_SCHED_ON_NODE) {
      sp[at] = pods[s->pending_start + i];
      cp[at++] = s->pr.pods[s->pending_start + i];
    }
  s->nheld = at;
  for (i = 0; i < n; i++)
    if (!carp_pod_is_virtual(s->pr.pods[s->pending_start + i]) ||
        as[i].target != CARP_SCHED_ON_NODE) {
      sp[at] = pods[s->pending_start + i];
      cp[at++] = s->pr.pods[s->pending_start + i];
    }
  memcpy(&pods[s->pending_start], sp, n * sizeof(*sp));
  memcpy(&s->pr.pods[s->pending_start], cp, n * sizeof(*cp));
  carp_free(sp);
  carp_free(cp);
  carp_sched_result_free(res);
}

/* Each candidate's node in the problem: by name, through a map (a scan
 * per candidate is candidates x nodes string compares). */
static void find_nodes(struct dis_sim *s)
{
  struct carp_map names;
  size_t i, j;
  carp_map_init(&names);
  /* The first node of a name, as a scan from the start would find. */
  for (j = s->pr.p.nnodes; j-- > 0;)
    if (!s->pr.node_is_claim[j])
      carp_map_puts(&names, s->pr.node_names[j], (void *)(j + 1));
  for (i = 0; i < s->a->ncands; i++) {
    uintptr_t at =
        (uintptr_t)carp_map_gets(&names, s->a->cands[i].node->meta.name);
    s->node_idx[i] = at ? (size_t)at - 1 : NO_NODE;
  }
  carp_map_free(&names);
}

/* The pods still running on nodes that are going away, other than the
 * candidates' (a command carried out earlier may still be draining):
 * appended to pending at *k, their nodes' names put in going. */
static void collect_moving(const struct carp_cluster *c,
                           const struct dis_analysis *a,
                           const struct carp_pod **pending, size_t *k,
                           size_t total, struct carp_map *going)
{
  struct carp_map cand_nodes;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  size_t i, j, n;
  carp_map_init(&cand_nodes);
  for (i = 0; i < a->ncands; i++)
    carp_map_puts(&cand_nodes, a->cands[i].node->meta.name, (void *)1);
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->nodes), &it))) {
    const struct carp_node *node = (const struct carp_node *)m;
    struct carp_objmeta *const *pods;
    if (carp_map_gets(&cand_nodes, m->name) ||
        !carp_prov_node_going(c, node, carp_cluster_nodeclaim_of_node(c, node)))
      continue;
    carp_map_puts(going, m->name, (void *)1);
    pods = carp_cluster_pods_on_node(c, m->name, &n);
    for (j = 0; j < n && *k < total; j++)
      if (moves((const struct carp_pod *)pods[j]))
        pending[(*k)++] = (const struct carp_pod *)pods[j];
  }
  carp_map_free(&cand_nodes);
}

/* The going nodes' bound pods are the moving ones, placed anew in every
 * run: they must not count twice in topology. */
static void remove_going(struct dis_sim *s, struct carp_map *going)
{
  size_t j;
  for (j = 0; j < s->pr.p.nnodes; j++)
    if (!s->pr.node_is_claim[j] && carp_map_gets(going, s->pr.node_names[j]))
      s->removed[j] = 1;
}

int carp__dis_sim_new(const struct carp_cluster *c,
                      struct carp_provider *provider,
                      const struct dis_analysis *a, struct dis_sim **out)
{
  struct dis_sim *s = CARP_NEW(struct dis_sim);
  const struct carp_pod **pending;
  const struct carp_pod *const *virt;
  struct carp_prov_input in;
  struct carp_map going;
  size_t total = 0, i, j, k, n, nvirt;
  int rc;

  s->c = c;
  s->a = a;
  for (i = 0; i < a->ncands; i++) {
    carp_cluster_pods_on_node(c, a->cands[i].node->meta.name, &n);
    total += n;
  }
  total += carp_store_len(carp_informer_store(c->pods));
  virt = carp_cluster_virtual_pods(c, &nvirt);
  total += nvirt;
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
  s->moving_start = k;
  carp_map_init(&going);
  collect_moving(c, a, pending, &k, total, &going);
  s->nmoving = k - s->moving_start;
  /* Pods waiting for a place take room too; the provisioner gives them
   * their own nodes. */
  s->pending_start = k;
  {
    struct carp_store_iter it;
    struct carp_objmeta *m;
    carp_store_iter_init(&it);
    while ((m = carp_store_next(carp_informer_store(c->pods), &it)))
      if (carp_pod_is_provisionable((const struct carp_pod *)m) && k < total)
        pending[k++] = (const struct carp_pod *)m;
  }
  for (i = 0; i < nvirt && k < total; i++)
    pending[k++] = virt[i];
  s->npending = k - s->pending_start;
  memset(&in, 0, sizeof(in));
  in.pending = pending;
  in.npending = k;
  in.ignore_nominations = 1;
  rc = carp_prov_problem_build(&s->pr, c, provider, &in);
  carp_free(pending);
  if (rc || s->pr.p.npods != k) {
    /* Every pod given is placed in order: anything else is a bug. */
    carp_map_free(&going);
    carp__dis_sim_free(s);
    return rc ? rc : CARP_EINVAL;
  }
  find_nodes(s);
  if (nvirt)
    hold_buffers(s);
  s->removed = carp_calloc(s->pr.p.nnodes + 1, 1);
  remove_going(s, &going);
  carp_map_free(&going);
  s->room = carp__dis_room_new(&s->pr.p, s->moving_start);
  s->pods_buf = carp_calloc(k + 1, sizeof(*s->pods_buf));
  s->bound_buf = carp_calloc(s->pr.p.nbound_pods + 1, sizeof(*s->bound_buf));
  index_bound(s);
  *out = s;
  return 0;
}

void carp__dis_sim_free(struct dis_sim *s)
{
  if (!s)
    return;
  if (s->chosen)
    unindex_bound(s);
  carp_prov_problem_free(&s->pr);
  carp_sched_result_free(s->last);
  carp_free(s->last_idx);
  carp_free(s->node_idx);
  carp_free(s->pod_start);
  carp_free(s->pod_count);
  carp_free(s->removed);
  carp__dis_room_free(s->room);
  carp_free(s->pods_buf);
  carp_free(s->bound_buf);
  carp_free(s);
}

void carp__dis_replacement_cleanup(struct dis_replacement *r)
{
  carp_free(r->nodepool);
  carp_free(r->body);
  carp_free(r->types);
  carp_resources_cleanup(&r->capacity);
  memset(r, 0, sizeof(*r));
}

void carp__dis_replacements_free(struct dis_replacement *v, size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    carp__dis_replacement_cleanup(&v[i]);
  carp_free(v);
}

void carp__dis_plan_cleanup(struct dis_plan *p)
{
  carp__dis_replacement_cleanup(&p->repl);
  carp__dis_replacements_free(p->more, p->nmore);
  carp_free(p->moves);
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

/* A new claim of the solve as a replacement priced below price_now (0:
 * any price). Returns 0, or CARP_ENOENT when no option is cheaper. */
static int encode_replacement(struct dis_sim *s,
                              const struct carp_sched_claim *cl,
                              double price_now, struct dis_replacement *r)
{
  struct carp_buf body, types;
  int rc;
  memset(r, 0, sizeof(*r));
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  carp_buf_init(&types, 64 * 1024);
  rc = carp_prov_claim_encode(&s->pr, s->c, cl, price_now, &body, &r->capacity,
                              &types, &r->price);
  if (rc) {
    carp_buf_free(&body);
    carp_buf_free(&types);
    carp_resources_cleanup(&r->capacity);
    return rc;
  }
  r->nodepool = carp_strdup(s->pr.pools[cl->nodepool]->meta.name);
  r->body = carp_buf_steal(&body, NULL);
  r->types = carp_buf_steal(&types, NULL);
  return 0;
}

/* Turns the solve's one new claim into a replacement, if it is cheaper. */
static void replacement(struct dis_sim *s, const struct carp_sched_claim *cl,
                        double price_now, struct dis_plan *out)
{
  int rc = encode_replacement(s, cl, price_now, &out->repl);
  if (rc == CARP_ENOENT)
    none(out, "can't replace with a lower-priced node", NULL);
  else if (rc)
    none(out, "can't encode the replacement NodeClaim", NULL);
  else
    out->decision = DIS_REPLACE;
}

static int holds_candidate_pods(const struct carp_sched_claim *cl, size_t ncand)
{
  size_t i;
  for (i = 0; i < cl->npods; i++)
    if (cl->pods[i] < ncand)
      return 1;
  return 0;
}

/* Drift: every new claim that holds candidate pods becomes a replacement,
 * whatever it costs (the first in repl, the others in more). */
static void replacements(struct dis_sim *s, const struct carp_sched_result *res,
                         size_t ncand, struct dis_plan *out)
{
  size_t c, n = 0;
  out->more = carp_calloc(res->nclaims + 1, sizeof(*out->more));
  for (c = 0; c < res->nclaims; c++) {
    struct dis_replacement *r;
    if (!holds_candidate_pods(&res->claims[c], ncand))
      continue; /* pending pods only: the provisioner's */
    r = n ? &out->more[out->nmore] : &out->repl;
    if (encode_replacement(s, &res->claims[c], 0, r)) {
      carp__dis_replacement_cleanup(&out->repl);
      carp__dis_replacements_free(out->more, out->nmore);
      out->more = NULL;
      out->nmore = 0;
      none(out, "can't encode the replacement NodeClaim", NULL);
      return;
    }
    if (n++)
      out->nmore++;
  }
  out->decision = n ? DIS_REPLACE : DIS_DELETE;
}

/* Where the run's candidate pods went (the pending pods after them are
 * the provisioner's business). */
static void record_moves(struct dis_sim *s, const struct carp_sched_problem *p,
                         const struct carp_sched_result *res, size_t ncand,
                         struct dis_plan *out)
{
  size_t i;
  out->moves = carp_calloc(ncand + 1, sizeof(*out->moves));
  out->nmoves = ncand;
  for (i = 0; i < ncand; i++) {
    out->moves[i].pod_uid = p->pods[i].uid;
    out->moves[i].node = res->assignments[i].target == CARP_SCHED_ON_NODE
                             ? s->pr.node_names[res->assignments[i].index]
                             : NULL;
  }
}

/* Whether a new claim of the solve holds one of the pods [lo, hi). */
static int new_claim_holds(const struct carp_sched_result *res, size_t lo,
                           size_t hi)
{
  size_t c, i;
  for (c = 0; c < res->nclaims; c++)
    for (i = 0; i < res->claims[c].npods; i++)
      if (res->claims[c].pods[i] >= lo && res->claims[c].pods[i] < hi)
        return 1;
  return 0;
}

/* The one new claim holding candidate pods (pods below ncand), NULL when
 * none does; *more when several do. */
static const struct carp_sched_claim *
candidate_claim(const struct carp_sched_result *res, size_t ncand, int *more)
{
  const struct carp_sched_claim *found = NULL;
  size_t c;
  *more = 0;
  for (c = 0; c < res->nclaims; c++) {
    if (!holds_candidate_pods(&res->claims[c], ncand))
      continue; /* pending pods only: the provisioner's */
    if (found)
      *more = 1;
    found = &res->claims[c];
  }
  return found;
}

/* The first candidate pod the solve could not place, or NULL. */
static const struct carp_sched_unschedulable *
stuck(const struct carp_sched_result *res, size_t ncand)
{
  size_t i;
  for (i = 0; i < res->nunschedulable; i++)
    if (res->unschedulable[i].pod < ncand)
      return &res->unschedulable[i];
  return NULL;
}

/* The solve of p, the question of the candidates idx[0..n): the last
 * result again when it was the same question. The result stays the
 * simulation's. */
static int solve(struct dis_sim *s, const struct carp_sched_problem *p,
                 const size_t *idx, size_t n, struct carp_sched_result **res)
{
  int rc;
  if (s->last && s->last_n == n && s->last_no_new == p->no_new_claims &&
      s->last_max_new == p->max_new_claims &&
      (!n || !memcmp(s->last_idx, idx, n * sizeof(*idx)))) {
    *res = s->last;
    return 0;
  }
  carp_sched_result_free(s->last);
  s->last = NULL;
  rc = carp_sched_solve(p, res);
  if (rc)
    return rc;
  if (n > s->last_cap) {
    s->last_cap = n;
    s->last_idx = carp_reallocarray(s->last_idx, n, sizeof(*idx));
  }
  memcpy(s->last_idx, idx, n * sizeof(*idx));
  s->last_n = n;
  s->last_no_new = p->no_new_claims;
  s->last_max_new = p->max_new_claims;
  s->last = *res;
  return 0;
}

/* multi: the multi-node price rule; priced 0: any replacement will do (a
 * question of room only); many: as many replacements as the pods need. */
static void run(struct dis_sim *s, const size_t *idx, size_t n,
                int allow_replace, int multi, int priced, int many,
                struct dis_plan *out)
{
  struct carp_sched_problem p = s->pr.p;
  struct carp_sched_result *res = NULL;
  struct carp_sched_node *nodes = (struct carp_sched_node *)s->pr.p.nodes;
  const struct carp_sched_unschedulable *u;
  const struct carp_sched_claim *cl;
  double price_now = 0;
  size_t i, npods = 0, nbound, ncand, nmust;
  int unknown_price = 0, more;

  memset(out, 0, sizeof(*out));
  for (i = 0; i < n; i++)
    if (s->node_idx[idx[i]] == NO_NODE) {
      none(out, "not in the simulation: node ",
           s->a->cands[idx[i]].node->meta.name);
      return;
    }
  for (i = 0; i < n; i++) {
    const struct dis_cand *cd = &s->a->cands[idx[i]];
    s->removed[s->node_idx[idx[i]]] = 1;
    nodes[s->node_idx[idx[i]]].deleting = 1;
    memcpy(&s->pods_buf[npods], &s->pr.p.pods[s->pod_start[idx[i]]],
           s->pod_count[idx[i]] * sizeof(*s->pods_buf));
    npods += s->pod_count[idx[i]];
    if (cd->price < 0)
      unknown_price = 1;
    price_now += cd->price;
  }
  ncand = npods;
  /* A move the room bound rules out needs no solve: its answer would be
   * the same no, for the same reason (room.c). It bounds one new node,
   * so drift (many) is always solved. */
  if (allow_replace && !many) {
    enum dis_room_verdict v =
        carp__dis_room_judge(s->room, s->removed, s->pod_start, s->pod_count,
                             idx, n, priced && !unknown_price ? price_now : 0);
    const char *why = NULL;
    if (v != DIS_ROOM_MAYBE && priced && unknown_price)
      why = UNKNOWN_PRICE; /* deleting was its only way */
    else if (v == DIS_ROOM_TOO_BIG)
      why = "can't remove without creating more than one node";
    else if (v == DIS_ROOM_TOO_DEAR)
      why = "can't replace with a lower-priced node";
    if (why) {
      bounded++;
      none(out, why, NULL);
      goto restore;
    }
  }
  /* The moving pods and the held buffer pods must keep room, like the
   * candidates' pods: they follow them, then the other pending pods. */
  memcpy(&s->pods_buf[npods], &s->pr.p.pods[s->moving_start],
         (s->nmoving + s->npending) * sizeof(*s->pods_buf));
  npods += s->nmoving + s->npending;
  nmust = ncand + s->nmoving + s->nheld;
  nbound = relevant_bound(s, npods);
  p.pods = s->pods_buf;
  p.npods = npods;
  p.bound_pods = s->bound_buf;
  p.nbound_pods = nbound;
  /* A replacement is priced against the candidates: an unknown price
   * rules it out, unless any price will do. */
  p.no_new_claims = !allow_replace || (priced && unknown_price);
  /* Pending pods may need claims of their own: then the count of claims
   * holding candidate pods is checked here instead. */
  p.max_new_claims = s->npending || s->nmoving || many ? 0 : 1;

  if (solve(s, &p, idx, n, &res)) {
    none(out, "the simulation failed", NULL);
  } else if ((u = stuck(res, nmust))) {
    none(out,
         u->pod < ncand                ? "its pods cannot move: "
         : u->pod < ncand + s->nmoving ? "the pods of nodes being disrupted "
                                         "need its room: "
                                       : "it holds room a CapacityBuffer "
                                         "keeps: ",
         u->message);
  } else if (new_claim_holds(res, ncand, ncand + s->nmoving)) {
    /* Their room was found when their own command was decided; a move
     * that takes it waits until they have gone. */
    none(out, "the pods of nodes being disrupted need its room", NULL);
  } else if (many) {
    replacements(s, res, nmust, out);
  } else if (!(cl = candidate_claim(res, nmust, &more))) {
    out->decision = DIS_DELETE;
  } else if (more) {
    none(out, "can't remove without creating more than one node", NULL);
  } else {
    double cap = priced ? price_now : 0;
    if (multi && priced)
      cap = same_type_cap(s, cl, idx, n, cap);
    replacement(s, cl, cap, out);
  }
  if (out->decision == DIS_NONE && unknown_price && allow_replace && res &&
      stuck(res, nmust))
    snprintf(out->why, sizeof(out->why), "%s", UNKNOWN_PRICE);
  if (out->decision != DIS_NONE)
    record_moves(s, &p, res, ncand, out);
restore:
  for (i = 0; i < n; i++) {
    s->removed[s->node_idx[idx[i]]] = 0;
    nodes[s->node_idx[idx[i]]].deleting = 0;
  }
}

void carp__dis_sim_run(struct dis_sim *s, const size_t *idx, size_t n,
                       int allow_replace, struct dis_plan *out)
{
  run(s, idx, n, allow_replace, 0, 1, 0, out);
}

void carp__dis_sim_run_multi(struct dis_sim *s, const size_t *idx, size_t n,
                             struct dis_plan *out)
{
  run(s, idx, n, 1, 1, 1, 0, out);
}

void carp__dis_sim_run_any(struct dis_sim *s, const size_t *idx, size_t n,
                           struct dis_plan *out)
{
  run(s, idx, n, 1, 0, 0, 1, out);
}

int carp__dis_sim_fits(struct dis_sim *s, const size_t *idx, size_t n)
{
  struct dis_plan plan;
  int fits;
  run(s, idx, n, 1, 0, 0, 0, &plan);
  fits = plan.decision != DIS_NONE;
  carp__dis_plan_cleanup(&plan);
  return fits;
}
