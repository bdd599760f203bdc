/* run.c: the two simulations, with the controllers' own code.
 *
 * Provisioning: the pods the provisioner would batch (provisionable:
 * unbound, marked Unschedulable, not gated) go through
 * carp_prov_problem_build and carp_sched_solve exactly as in a batch; the
 * result says which pods land on existing nodes or in-flight NodeClaims,
 * which new NodeClaims would be created, and why each remaining pod fits
 * no NodePool.
 *
 * Consolidation: carp__dis_analyze and carp__dis_decide, the functions the
 * disruption controller calls on each poll, give the command it would
 * start now (after its validation delay) and why the other NodeClaims
 * stay: their blocked reason, the note a failed simulation left, the
 * budget, or consolidateAfter not yet passed. One command, as one poll
 * gives: the controller looks again once it is carried out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../disruption/disruption_int.h"
#include "../provisioning/claim.h"
#include "../provisioning/problem.h"
#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/overlay.h"
#include "carpenter/nodeclass.h"
#include "carpenter/timeutil.h"
#include "sim_int.h"

/* ---- prices ---- */

struct price_cache {
  const char *cls;
  const char *pool; /* NodeOverlays may match the NodePool */
  struct carp_provider_instance_types types;
  int ok;
};

static const struct carp_provider_instance_types *
types_of(struct carp_simulation *s, struct price_cache **cache, size_t *n,
         const char *cls, const char *pool)
{
  const struct carp_nodeclass *nc;
  const struct carp_nodepool *np;
  struct price_cache *p;
  size_t i;
  pool = pool ? pool : "";
  for (i = 0; i < *n; i++)
    if (!strcmp((*cache)[i].cls, cls) && !strcmp((*cache)[i].pool, pool))
      return (*cache)[i].ok ? &(*cache)[i].types : NULL;
  *cache = carp_reallocarray(*cache, *n + 1, sizeof(**cache));
  p = &(*cache)[(*n)++];
  memset(p, 0, sizeof(*p));
  p->cls = cls;
  p->pool = pool;
  nc = carp_cluster_nodeclass(s->cluster, cls);
  np = carp_cluster_nodepool(s->cluster, pool);
  p->ok =
      nc && !(np ? carp_overlays_instance_types(s->cluster, s->provider,
                                                "simulate", np, nc, &p->types)
                 : carp_provider_instance_types(s->provider, "simulate", nc,
                                                &p->types));
  return p->ok ? &p->types : NULL;
}

/* The claim's instance type in its zone; before launch (no type label),
 * the cheapest of the types its requirements list. */
static double claim_price(struct carp_simulation *s, struct price_cache **cache,
                          size_t *ncache, const struct carp_nodeclaim *nc)
{
  const char *type = carp_kvset_get(nc->meta.labels, CARP_LABEL_INSTANCE_TYPE);
  const char *zone = carp_kvset_get(nc->meta.labels, CARP_LABEL_ZONE);
  const struct carp_provider_instance_types *t;
  double best = -1;
  uint32_t i, j;
  if (!nc->spec.node_class_ref.name)
    return -1;
  t = types_of(s, cache, ncache, nc->spec.node_class_ref.name,
               carp_nodeclaim_nodepool(nc));
  if (type)
    return carp_instance_type_price(t, type, zone);
  for (i = 0; i < nc->spec.nrequirements; i++) {
    const struct carp_requirement *r = &nc->spec.requirements[i];
    if (strcmp(r->key, CARP_LABEL_INSTANCE_TYPE) || r->op != CARP_OP_IN)
      continue;
    for (j = 0; j < r->nvalues; j++) {
      double p = carp_instance_type_price(t, r->values[j], zone);
      if (p >= 0 && (best < 0 || p < best))
        best = p;
    }
  }
  return best;
}

static void cache_free(struct price_cache *cache, size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (cache[i].ok)
      carp_provider_instance_types_free(&cache[i].types);
  carp_free(cache);
}

/* ---- provisioning ---- */

static char **split_names(const char *csv, size_t *n)
{
  char **v = NULL;
  const char *p = csv;
  *n = 0;
  while (p && *p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    v = carp_reallocarray(v, *n + 1, sizeof(char *));
    v[(*n)++] = carp_strndup(p, len);
    p = comma ? comma + 1 : NULL;
  }
  return v;
}

/* Where the claim's cheapest option can go: its available offerings in
 * the zones the claim's requirements allow. */
static void claim_zones(struct sim_claim *out,
                        const struct carp_prov_problem *pr,
                        const struct carp_sched_claim *cl)
{
  const struct carp_sched_instance_type *it =
      &pr->p.instance_types[cl->instance_types[0]];
  struct carp_sched_reqs *r = carp_sched_reqs_new();
  size_t i, j;
  for (i = 0; i < cl->nrequirements; i++)
    carp_sched_reqs_add(r, &cl->requirements[i]);
  for (i = 0; i < it->nofferings; i++) {
    const char *z = it->offerings[i].zone;
    int seen = 0;
    if (!it->offerings[i].available ||
        !carp_sched_reqs_allows(r, CARP_LABEL_ZONE, z))
      continue;
    for (j = 0; j < out->nzones && !seen; j++)
      seen = !strcmp(out->zones[j], z);
    if (seen)
      continue;
    out->zones = carp_reallocarray(out->zones, out->nzones + 1, sizeof(char *));
    out->zones[out->nzones++] = carp_strdup(z);
  }
  carp_sched_reqs_free(r);
}

int sim_run_provisioning(struct carp_simulation *s)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  const struct carp_pod **pending = NULL;
  struct carp_prov_problem pr;
  struct carp_prov_input in;
  struct carp_sched_result *res = NULL;
  size_t n = 0, cap = 0, i, j;
  int rc;

  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(s->cluster->pods), &it))) {
    const struct carp_pod *p = (const struct carp_pod *)m;
    if (!carp_pod_is_provisionable(p))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      pending = carp_reallocarray(pending, cap, sizeof(*pending));
    }
    pending[n++] = p;
  }
  s->pending = n;
  if (!n)
    return 0;
  memset(&in, 0, sizeof(in));
  in.pending = pending;
  in.npending = n;
  carp_prov_problem_build(&pr, s->cluster, s->provider, &in);
  rc = carp_sched_solve(&pr.p, &res);
  if (rc) {
    carp_prov_problem_free(&pr);
    carp_free(pending);
    return rc;
  }
  s->claims = carp_calloc(res->nclaims + 1, sizeof(*s->claims));
  for (i = 0; i < res->nclaims; i++) {
    const struct carp_sched_claim *cl = &res->claims[i];
    struct sim_claim *c = &s->claims[s->nclaims++];
    size_t nopt = cl->ninstance_types;
    if (nopt > CARP_PROV_MAX_OPTIONS)
      nopt = CARP_PROV_MAX_OPTIONS;
    c->nodepool = pr.pools[cl->nodepool]->meta.name;
    c->types = carp_calloc(nopt + 1, sizeof(char *));
    for (j = 0; j < nopt; j++)
      c->types[c->ntypes++] =
          carp_strdup(pr.p.instance_types[cl->instance_types[j]].name);
    c->price = cl->price;
    if (nopt)
      claim_zones(c, &pr, cl);
    carp_prov_resources_of(cl->requests, cl->nrequests, &c->requests);
    c->pods = carp_calloc(cl->npods + 1, sizeof(*c->pods));
    for (j = 0; j < cl->npods; j++)
      c->pods[c->npods++] = pr.pods[cl->pods[j]];
  }
  s->placed = carp_calloc(pr.p.npods + 1, sizeof(*s->placed));
  for (i = 0; i < pr.p.npods; i++) {
    const struct carp_sched_assignment *a = &res->assignments[i];
    if (a->target != CARP_SCHED_ON_NODE)
      continue;
    s->placed[s->nplaced].pod = pr.pods[i];
    s->placed[s->nplaced].target = pr.node_names[a->index];
    s->placed[s->nplaced].in_flight = pr.node_is_claim[a->index];
    s->nplaced++;
  }
  s->unplaced = carp_calloc(res->nunschedulable + 1, sizeof(*s->unplaced));
  for (i = 0; i < res->nunschedulable; i++) {
    const struct carp_sched_unschedulable *u = &res->unschedulable[i];
    struct sim_unplaced *o = &s->unplaced[s->nunplaced++];
    o->pod = pr.pods[u->pod];
    o->message = carp_strdup(u->message ? u->message : "");
    o->refusals = carp_calloc(u->nrefusals + 1, sizeof(*o->refusals));
    for (j = 0; j < u->nrefusals; j++) {
      const struct carp_sched_refusal *r = &u->refusals[j];
      struct sim_refusal *x = &o->refusals[o->nrefusals++];
      x->nodepool = carp_strdup(pr.p.nodepools[r->nodepool].name);
      x->reason = carp_strdup(carp_sched_reason_name(r->reason));
      x->detail = carp_strdup(r->detail ? r->detail : "");
      x->message = carp_strdup(r->message ? r->message : "");
    }
  }
  carp_sched_result_free(res);
  carp_prov_problem_free(&pr);
  carp_free(pending);
  return 0;
}

/* ---- consolidation ---- */

static struct sim_node *node_entry(struct carp_simulation *s,
                                   const struct carp_nodeclaim *nc,
                                   const struct carp_node *node)
{
  struct sim_node *e = &s->nodes[s->nnodes++];
  const struct carp_objmeta *m = nc ? &nc->meta : &node->meta;
  memset(e, 0, sizeof(*e));
  e->nodeclaim = nc ? nc->meta.name : NULL;
  e->node = node ? node->meta.name : NULL;
  e->nodepool = carp_kvset_get(m->labels, CARP_LABEL_NODEPOOL_KEY);
  e->instance_type = carp_kvset_get(m->labels, CARP_LABEL_INSTANCE_TYPE);
  e->zone = carp_kvset_get(m->labels, CARP_LABEL_ZONE);
  e->price = -1;
  return e;
}

static struct sim_node *find_entry(struct carp_simulation *s,
                                   const struct carp_nodeclaim *nc)
{
  size_t i;
  for (i = 0; i < s->nnodes; i++)
    if (s->nodes[i].nodeclaim == nc->meta.name)
      return &s->nodes[i];
  return NULL;
}

/* Why a NodeClaim that is neither a candidate nor reported blocked is
 * left alone: not Carpenter's, not initialized, disrupting, or
 * consolidateAfter not yet passed. */
static void why_not_candidate(struct carp_simulation *s, struct sim_node *e,
                              const struct carp_nodeclaim *nc,
                              const struct carp_node *node)
{
  const struct carp_nodepool *np =
      e->nodepool ? carp_cluster_nodepool(s->cluster, e->nodepool) : NULL;
  char buf[256], d1[CARP_DURATION_LEN], d2[CARP_DURATION_LEN];
  size_t resched = 0;
  const char *why;
  int64_t since, left;
  if (carp_conditions_is_true(&nc->status.conditions,
                              CARP_COND_INSTANCE_TERMINATING)) {
    snprintf(e->why, sizeof(e->why), "its instance is terminating");
    return;
  }
  why = carp__dis_blocked(s->cluster, nc, node, np, s->now_ms, &resched, buf);
  e->pods = resched;
  if (why) {
    snprintf(e->why, sizeof(e->why), "%s", why);
    return;
  }
  if (np->has_replicas) {
    snprintf(e->why, sizeof(e->why), "its NodePool is static");
    return;
  }
  if (np->consolidate_after_ms == CARP_DURATION_NEVER) {
    snprintf(e->why, sizeof(e->why),
             "its NodePool has consolidateAfter: Never");
    return;
  }
  since = carp__dis_since(s->cluster, nc, node, 0);
  left = since + np->consolidate_after_ms - s->now_ms;
  left = left > 0 ? (left + 999) / 1000 * 1000 : 0; /* whole seconds */
  carp_duration_format(np->consolidate_after_ms, d1);
  carp_duration_format(left, d2);
  snprintf(e->why, sizeof(e->why),
           "consolidateAfter %s has not passed since its pods last changed "
           "(in %s)",
           d1, d2);
}

static const char *plural(size_t n)
{
  return n == 1 ? "" : "s";
}

static void why_candidate(struct carp_simulation *s,
                          const struct dis_analysis *a,
                          const struct dis_cand *cd, int found,
                          struct sim_node *e)
{
  const struct dis_pool *p = &a->pools[cd->pool];
  enum carp_disruption_reason r =
      cd->empty ? CARP_DISRUPT_EMPTY : CARP_DISRUPT_UNDERUTILIZED;
  e->pods = cd->npods;
  if (cd->drifted && !p->allowed[CARP_DISRUPT_DRIFTED]) {
    snprintf(e->why, sizeof(e->why),
             "drifted; the disruption budgets of NodePool %s allow no "
             "Drifted disruption now",
             p->np->meta.name);
  } else if (cd->drifted) {
    snprintf(e->why, sizeof(e->why),
             "drifted; not replaced in this round (its pool's Drifted "
             "budget, or the room left, takes it in a later one)");
  } else if (!cd->empty &&
             p->np->consolidation_policy == CARP_CONSOLIDATE_WHEN_EMPTY) {
    snprintf(e->why, sizeof(e->why),
             "its NodePool consolidates empty nodes only "
             "(consolidationPolicy: WhenEmpty)");
  } else if (!p->allowed[r]) {
    snprintf(e->why, sizeof(e->why),
             "the disruption budgets of NodePool %s allow no %s disruption "
             "now (%lld of %lld nodes already disrupting)",
             p->np->meta.name, carp_disruption_reason_name(r),
             (long long)p->disrupting, (long long)p->nodes);
  } else if (found) {
    snprintf(e->why, sizeof(e->why),
             "a candidate, not part of this command (the controller looks "
             "again once it is carried out)");
  } else {
    snprintf(e->why, sizeof(e->why), "a candidate; no move found for it");
  }
}

static void record_command(struct carp_simulation *s,
                           const struct dis_analysis *a,
                           const struct dis_command *cmd)
{
  size_t i;
  s->method = carp__dis_method_name(cmd->method);
  s->reason = carp_disruption_reason_name(cmd->reason);
  s->decision = cmd->plan.decision == DIS_REPLACE ? SIM_REPLACE : SIM_DELETE;
  s->savings = cmd->savings;
  if (cmd->plan.decision == DIS_REPLACE) {
    /* A static pool's drift launches its one body once per candidate;
     * otherwise repl, then the further ones drift needs. */
    size_t n = cmd->plan.repl.in_place ? cmd->ncands : 1 + cmd->plan.nmore;
    s->repls = carp_calloc(n, sizeof(*s->repls));
    for (i = 0; i < n; i++) {
      const struct dis_replacement *r = cmd->plan.repl.in_place || !i
                                            ? &cmd->plan.repl
                                            : &cmd->plan.more[i - 1];
      s->repls[i].pool = carp_strdup(r->nodepool);
      s->repls[i].types = split_names(r->types, &s->repls[i].ntypes);
      s->repls[i].price = r->price;
    }
    s->nrepls = n;
  }
  for (i = 0; i < cmd->ncands; i++) {
    const struct dis_cand *cd = &a->cands[cmd->cands[i]];
    struct sim_node *e = find_entry(s, cd->nc);
    if (!e)
      continue;
    e->action = s->decision;
    e->pods = cd->npods;
    if (cmd->method == DIS_DRIFT)
      snprintf(e->why, sizeof(e->why), "drifted: %s",
               cd->npods ? "replaced first, then drained" : "empty");
    else if (cd->empty)
      snprintf(e->why, sizeof(e->why), "empty: no pod to move");
    else if (s->decision == SIM_DELETE)
      snprintf(e->why, sizeof(e->why),
               "%s-node consolidation: its %zu pod%s fit on the other nodes",
               cmd->method == DIS_MULTI ? "multi" : "single", cd->npods,
               plural(cd->npods));
    else
      snprintf(e->why, sizeof(e->why),
               "%s-node consolidation: its %zu pod%s move to one cheaper "
               "NodeClaim (%s, %.4g/h)",
               cmd->method == DIS_MULTI ? "multi" : "single", cd->npods,
               plural(cd->npods),
               s->nrepls && s->repls[0].ntypes ? s->repls[0].types[0] : "?",
               s->nrepls ? s->repls[0].price : -1.0);
  }
}

/* What goes first: the command's NodeClaims, then by name. */
static int by_action_then_name(const void *a, const void *b)
{
  const struct sim_node *x = a, *y = b;
  const char *nx = x->nodeclaim ? x->nodeclaim : x->node;
  const char *ny = y->nodeclaim ? y->nodeclaim : y->node;
  if ((x->action != SIM_KEEP) != (y->action != SIM_KEEP))
    return x->action != SIM_KEEP ? -1 : 1;
  return strcmp(nx, ny);
}

int sim_run_consolidation(struct carp_simulation *s)
{
  struct carp_store *claims = carp_informer_store(s->cluster->nodeclaims);
  struct carp_store *nodes = carp_informer_store(s->cluster->nodes);
  struct price_cache *cache = NULL;
  size_t ncache = 0, i;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct dis_analysis a;
  struct dis_command cmd;
  struct dis_notes notes;
  int found;

  s->nodes = carp_calloc(carp_store_len(claims) + carp_store_len(nodes) + 1,
                         sizeof(*s->nodes));
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    struct sim_node *e =
        node_entry(s, nc, carp_cluster_node_of_nodeclaim(s->cluster, nc));
    e->price = claim_price(s, &cache, &ncache, nc);
    if (!m->deletion_ms && e->price > 0)
      s->price_before += e->price;
  }
  carp_store_iter_init(&it);
  while ((m = carp_store_next(nodes, &it))) {
    const struct carp_node *n = (const struct carp_node *)m;
    if (!carp_cluster_nodeclaim_of_node(s->cluster, n))
      snprintf(node_entry(s, NULL, n)->why, sizeof(s->nodes[0].why),
               "not managed by Carpenter (no NodeClaim)");
  }
  cache_free(cache, ncache);

  memset(&cmd, 0, sizeof(cmd));
  memset(&notes, 0, sizeof(notes));
  carp__dis_analyze(s->cluster, s->provider, s->now_ms, 0, &a);
  found = carp__dis_decide(s->cluster, s->provider, &a, &cmd, &notes);
  /* Blocked, noted, candidates, then the rest. */
  for (i = 0; i < a.nblocked; i++) {
    struct sim_node *e = find_entry(s, a.blocked[i].nc);
    if (e)
      snprintf(e->why, sizeof(e->why), "%s", a.blocked[i].why);
  }
  for (i = 0; i < notes.n; i++) {
    struct sim_node *e = find_entry(s, notes.v[i].nc);
    if (e)
      snprintf(e->why, sizeof(e->why), "%s", notes.v[i].why);
  }
  for (i = 0; i < a.ncands; i++) {
    struct sim_node *e = find_entry(s, a.cands[i].nc);
    if (e && !e->why[0])
      why_candidate(s, &a, &a.cands[i], found, e);
    else if (e)
      e->pods = a.cands[i].npods;
  }
  for (i = 0; i < s->nnodes; i++) {
    struct sim_node *e = &s->nodes[i];
    const struct carp_nodeclaim *nc;
    if (!e->nodeclaim || e->why[0])
      continue;
    nc = carp_cluster_nodeclaim(s->cluster, e->nodeclaim);
    why_not_candidate(s, e, nc, carp_cluster_node_of_nodeclaim(s->cluster, nc));
  }
  if (found) {
    record_command(s, &a, &cmd);
  } else if (!carp_store_len(claims)) {
    snprintf(s->decision_why, sizeof(s->decision_why), "there is no NodeClaim");
  } else if (!a.ncands) {
    snprintf(s->decision_why, sizeof(s->decision_why),
             "no NodeClaim may be consolidated now (see each one's reason)");
  } else {
    snprintf(s->decision_why, sizeof(s->decision_why),
             "no candidate can be deleted, or replaced by a cheaper node");
  }
  qsort(s->nodes, s->nnodes, sizeof(*s->nodes), by_action_then_name);
  carp__dis_command_cleanup(&cmd);
  carp__dis_notes_free(&notes);
  carp__dis_analysis_free(&a);
  return 0;
}

int carp_simulation_run(struct carp_simulation *s, int64_t now_ms)
{
  uint64_t t;
  size_t i;
  int rc;
  if (s->ran)
    return CARP_EINVAL;
  s->ran = 1;
  s->now_ms = now_ms;
  t = carp_time_mono_ms();
  rc = sim_run_provisioning(s);
  s->provisioning_ms = carp_time_mono_ms() - t;
  t = carp_time_mono_ms();
  if (!rc)
    rc = sim_run_consolidation(s);
  s->consolidation_ms = carp_time_mono_ms() - t;
  if (rc)
    return rc;
  s->price_after = s->price_before - s->savings;
  for (i = 0; i < s->nclaims; i++)
    s->price_after += s->claims[i].price;
  return 0;
}
