/* Helpers shared by the scheduling tests: build a struct carp_sched_problem
 * in a few readable lines (quantities as Kubernetes strings, value lists as
 * "a,b,c"), solve it, and look at where pods went. Everything a test
 * allocates lives in one struct tb and is freed by tb_free(). */
#ifndef TEST_SCHED_UTIL_H
#define TEST_SCHED_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/quantity.h"
#include "carpenter/scheduling.h"

#define TB_MAXPODS  2048
#define TB_MAXNODES 512
#define TB_MAXTYPES 512
#define TB_N        8

struct tb_chunk {
  struct tb_chunk *next;
  char data[];
};

struct tb_pod {
  struct carp_sched_label labels[TB_N], nsel[TB_N];
  struct carp_sched_quantity req[TB_N];
  struct carp_sched_node_term rterms[4], pterms[4];
  struct carp_sched_requirement rexprs[4][TB_N], pexprs[4][TB_N];
  struct carp_sched_toleration tols[TB_N];
  struct carp_sched_spread spreads[4];
  struct carp_sched_pod_term terms[4][4]; /* affinity, pref, anti, pref anti */
  struct carp_sched_host_port ports[4];
  char uid[40];
};

struct tb_node {
  struct carp_sched_label labels[TB_N];
  struct carp_sched_requirement reqs[TB_N];
  struct carp_sched_taint taints[TB_N];
  struct carp_sched_quantity alloc[TB_N], used[TB_N];
  struct carp_sched_host_port ports[4];
};

struct tb_type {
  struct carp_sched_requirement reqs[TB_N];
  struct carp_sched_quantity cap[TB_N], kube[TB_N], sys[TB_N], evict[TB_N];
  struct carp_sched_offering off[16];
};

struct tb_pool {
  struct carp_sched_label labels[TB_N];
  struct carp_sched_requirement reqs[TB_N];
  struct carp_sched_taint taints[TB_N], startup[TB_N];
  struct carp_sched_quantity limits[TB_N], usage[TB_N];
  uint32_t types[TB_MAXTYPES];
};

struct tb_daemon {
  struct carp_sched_quantity req[TB_N];
  struct carp_sched_label nsel[TB_N];
  struct carp_sched_toleration tols[TB_N];
  struct carp_sched_node_term terms[2];
  struct carp_sched_requirement exprs[2][TB_N];
};

struct tb {
  struct carp_sched_problem p;
  struct carp_sched_pod *pods;
  struct tb_pod *px;
  struct carp_sched_node *nodes;
  struct tb_node *nx;
  struct carp_sched_bound_pod *bound;
  struct carp_sched_instance_type *types;
  struct tb_type *tx;
  struct carp_sched_nodepool pools[16];
  struct tb_pool px_pools[16];
  struct carp_sched_daemon daemons[16];
  struct tb_daemon dx[16];
  struct tb_chunk *mem;
  struct carp_sched_result *res;
};

static inline void *tb_alloc(struct tb *t, size_t n)
{
  struct tb_chunk *c = calloc(1, sizeof(*c) + n + 16);
  c->next = t->mem;
  t->mem = c;
  return c->data;
}

static inline char *tb_str(struct tb *t, const char *s)
{
  char *d = tb_alloc(t, strlen(s) + 1);
  memcpy(d, s, strlen(s) + 1);
  return d;
}

/* "a,b,c" -> array of strings; "" -> none. */
static inline const char **tb_vals(struct tb *t, const char *csv, size_t *n)
{
  const char **v = tb_alloc(t, 64 * sizeof(*v));
  char *s = tb_str(t, csv), *tok;
  *n = 0;
  if (!*csv)
    return v;
  for (tok = strtok_r(s, ",", &s); tok; tok = strtok_r(NULL, ",", &s))
    v[(*n)++] = tok;
  return v;
}

static inline int64_t tb_q(const char *s)
{
  int64_t v = 0;
  if (carp_quantity_parse(s, &v) != 0) {
    fprintf(stderr, "bad quantity %s\n", s);
    abort();
  }
  return v;
}

static inline void tb_init(struct tb *t)
{
  memset(t, 0, sizeof(*t));
  t->pods = calloc(TB_MAXPODS, sizeof(*t->pods));
  t->px = calloc(TB_MAXPODS, sizeof(*t->px));
  t->nodes = calloc(TB_MAXNODES, sizeof(*t->nodes));
  t->nx = calloc(TB_MAXNODES, sizeof(*t->nx));
  t->bound = calloc(TB_MAXPODS, sizeof(*t->bound));
  t->types = calloc(TB_MAXTYPES, sizeof(*t->types));
  t->tx = calloc(TB_MAXTYPES, sizeof(*t->tx));
  t->p.pods = t->pods;
  t->p.nodes = t->nodes;
  t->p.bound_pods = t->bound;
  t->p.nodepools = t->pools;
  t->p.instance_types = t->types;
  t->p.daemons = t->daemons;
}

static inline void tb_free(struct tb *t)
{
  while (t->mem) {
    struct tb_chunk *n = t->mem->next;
    free(t->mem);
    t->mem = n;
  }
  carp_sched_result_free(t->res);
  free(t->pods);
  free(t->px);
  free(t->nodes);
  free(t->nx);
  free(t->bound);
  free(t->types);
  free(t->tx);
  memset(t, 0, sizeof(*t));
}

static inline void tb_req(struct tb *t, struct carp_sched_requirement *r,
                          const char *key, enum carp_sched_op op,
                          const char *csv)
{
  memset(r, 0, sizeof(*r));
  r->key = tb_str(t, key);
  r->op = op;
  r->values = tb_vals(t, csv, &r->nvalues);
}

/* ---- instance types ---- */

/* A type with cpu/memory/pods capacity, offered on-demand in each zone of
 * zones_csv at price. */
static inline uint32_t tb_type(struct tb *t, const char *name, const char *cpu,
                               const char *mem, const char *pods,
                               const char *zones_csv, double price)
{
  uint32_t i = (uint32_t)t->p.ninstance_types++;
  struct carp_sched_instance_type *it = &t->types[i];
  struct tb_type *x = &t->tx[i];
  size_t nz;
  const char **z = tb_vals(t, zones_csv, &nz);
  it->name = tb_str(t, name);
  x->cap[0] = (struct carp_sched_quantity){"cpu", tb_q(cpu)};
  x->cap[1] = (struct carp_sched_quantity){"memory", tb_q(mem)};
  x->cap[2] = (struct carp_sched_quantity){"pods", tb_q(pods)};
  it->capacity = x->cap;
  it->ncapacity = 3;
  for (size_t k = 0; k < nz; k++)
    x->off[k] = (struct carp_sched_offering){z[k], "on-demand", price, 1};
  it->offerings = x->off;
  it->nofferings = nz;
  tb_req(t, &x->reqs[0], CARP_LABEL_ARCH, CARP_SCHED_OP_IN, "amd64");
  tb_req(t, &x->reqs[1], CARP_LABEL_OS, CARP_SCHED_OP_IN, "linux");
  it->requirements = x->reqs;
  it->nrequirements = 2;
  it->kube_reserved = x->kube;
  it->system_reserved = x->sys;
  it->eviction_threshold = x->evict;
  return i;
}

static inline void tb_type_cap(struct tb *t, uint32_t i, const char *name,
                               const char *q)
{
  struct tb_type *x = &t->tx[i];
  x->cap[t->types[i].ncapacity++] =
      (struct carp_sched_quantity){tb_str(t, name), tb_q(q)};
}

static inline void tb_type_label(struct tb *t, uint32_t i, const char *key,
                                 const char *csv)
{
  struct carp_sched_instance_type *it = &t->types[i];
  size_t k;
  for (k = 0; k < it->nrequirements; k++)
    if (strcmp(t->tx[i].reqs[k].key, key) == 0)
      break;
  tb_req(t, &t->tx[i].reqs[k], key, CARP_SCHED_OP_IN, csv);
  if (k == it->nrequirements)
    it->nrequirements++;
}

static inline void tb_type_offering(struct tb *t, uint32_t i, const char *zone,
                                    const char *ct, double price, int available)
{
  t->tx[i].off[t->types[i].nofferings++] = (struct carp_sched_offering){
      tb_str(t, zone), tb_str(t, ct), price, available};
}

/* ---- node pools ---- */

static inline struct carp_sched_nodepool *
tb_pool(struct tb *t, const char *name, int32_t weight)
{
  size_t i = t->p.nnodepools++;
  struct carp_sched_nodepool *np = &t->pools[i];
  struct tb_pool *x = &t->px_pools[i];
  np->name = tb_str(t, name);
  np->weight = weight;
  np->labels = x->labels;
  np->requirements = x->reqs;
  np->taints = x->taints;
  np->startup_taints = x->startup;
  np->limits = x->limits;
  np->usage = x->usage;
  return np;
}

static inline struct tb_pool *tb_poolx(struct tb *t,
                                       struct carp_sched_nodepool *np)
{
  return &t->px_pools[np - t->pools];
}

static inline void tb_pool_req(struct tb *t, struct carp_sched_nodepool *np,
                               const char *key, enum carp_sched_op op,
                               const char *csv, int32_t min_values)
{
  struct tb_pool *x = tb_poolx(t, np);
  tb_req(t, &x->reqs[np->nrequirements], key, op, csv);
  x->reqs[np->nrequirements++].min_values = min_values;
}

static inline void tb_pool_label(struct tb *t, struct carp_sched_nodepool *np,
                                 const char *k, const char *v)
{
  tb_poolx(t, np)->labels[np->nlabels++] =
      (struct carp_sched_label){tb_str(t, k), tb_str(t, v)};
}

static inline void tb_pool_taint(struct tb *t, struct carp_sched_nodepool *np,
                                 const char *k, const char *v,
                                 enum carp_sched_effect e, int startup)
{
  struct carp_sched_taint taint = {tb_str(t, k), v ? tb_str(t, v) : NULL, e};
  if (startup)
    tb_poolx(t, np)->startup[np->nstartup_taints++] = taint;
  else
    tb_poolx(t, np)->taints[np->ntaints++] = taint;
}

static inline void tb_pool_limit(struct tb *t, struct carp_sched_nodepool *np,
                                 const char *res, const char *limit,
                                 const char *used)
{
  struct tb_pool *x = tb_poolx(t, np);
  x->limits[np->nlimits++] =
      (struct carp_sched_quantity){tb_str(t, res), tb_q(limit)};
  if (used)
    x->usage[np->nusage++] =
        (struct carp_sched_quantity){tb_str(t, res), tb_q(used)};
}

static inline void tb_pool_types(struct tb *t, struct carp_sched_nodepool *np,
                                 const uint32_t *types, size_t n)
{
  struct tb_pool *x = tb_poolx(t, np);
  memcpy(x->types, types, n * sizeof(uint32_t));
  np->instance_types = x->types;
  np->ninstance_types = n;
}

/* ---- pods ---- */

static inline struct carp_sched_pod *tb_pod(struct tb *t, const char *name,
                                            const char *cpu, const char *mem)
{
  size_t i = t->p.npods++;
  struct carp_sched_pod *p = &t->pods[i];
  struct tb_pod *x = &t->px[i];
  snprintf(x->uid, sizeof(x->uid), "uid-%06zu", i);
  p->uid = x->uid;
  p->name = tb_str(t, name);
  p->namespace_ = "default";
  p->created = (int64_t)i;
  p->labels = x->labels;
  p->requests = x->req;
  if (cpu)
    x->req[p->nrequests++] = (struct carp_sched_quantity){"cpu", tb_q(cpu)};
  if (mem)
    x->req[p->nrequests++] = (struct carp_sched_quantity){"memory", tb_q(mem)};
  p->node_selector = x->nsel;
  p->required_terms = x->rterms;
  p->preferred_terms = x->pterms;
  p->tolerations = x->tols;
  p->spreads = x->spreads;
  p->affinity = x->terms[0];
  p->preferred_affinity = x->terms[1];
  p->anti_affinity = x->terms[2];
  p->preferred_anti_affinity = x->terms[3];
  p->host_ports = x->ports;
  return p;
}

static inline struct tb_pod *tb_podx(struct tb *t, struct carp_sched_pod *p)
{
  return &t->px[p - t->pods];
}

static inline void tb_pod_request(struct tb *t, struct carp_sched_pod *p,
                                  const char *name, const char *q)
{
  tb_podx(t, p)->req[p->nrequests++] =
      (struct carp_sched_quantity){tb_str(t, name), tb_q(q)};
}

static inline void tb_pod_label(struct tb *t, struct carp_sched_pod *p,
                                const char *k, const char *v)
{
  tb_podx(t, p)->labels[p->nlabels++] =
      (struct carp_sched_label){tb_str(t, k), tb_str(t, v)};
}

static inline void tb_pod_selector(struct tb *t, struct carp_sched_pod *p,
                                   const char *k, const char *v)
{
  tb_podx(t, p)->nsel[p->nnode_selector++] =
      (struct carp_sched_label){tb_str(t, k), tb_str(t, v)};
}

/* Adds an expression to required term `term` (creating it). */
static inline void tb_pod_required(struct tb *t, struct carp_sched_pod *p,
                                   size_t term, const char *key,
                                   enum carp_sched_op op, const char *csv)
{
  struct tb_pod *x = tb_podx(t, p);
  struct carp_sched_node_term *nt = &x->rterms[term];
  if (term >= p->nrequired_terms)
    p->nrequired_terms = term + 1;
  nt->exprs = x->rexprs[term];
  tb_req(t, &x->rexprs[term][nt->nexprs++], key, op, csv);
}

static inline void tb_pod_preferred(struct tb *t, struct carp_sched_pod *p,
                                    size_t term, int32_t weight,
                                    const char *key, enum carp_sched_op op,
                                    const char *csv)
{
  struct tb_pod *x = tb_podx(t, p);
  struct carp_sched_node_term *nt = &x->pterms[term];
  if (term >= p->npreferred_terms)
    p->npreferred_terms = term + 1;
  nt->exprs = x->pexprs[term];
  nt->weight = weight;
  tb_req(t, &x->pexprs[term][nt->nexprs++], key, op, csv);
}

static inline void tb_pod_toleration(struct tb *t, struct carp_sched_pod *p,
                                     const char *key,
                                     enum carp_sched_toleration_op op,
                                     const char *value,
                                     enum carp_sched_effect e)
{
  tb_podx(t, p)->tols[p->ntolerations++] = (struct carp_sched_toleration){
      key ? tb_str(t, key) : NULL, op, value ? tb_str(t, value) : NULL, e};
}

/* A selector matching labels "k=v" (one pair). */
static inline const struct carp_sched_selector *
tb_sel(struct tb *t, const char *k, const char *v)
{
  struct carp_sched_selector *s = tb_alloc(t, sizeof(*s));
  struct carp_sched_label *l = tb_alloc(t, sizeof(*l));
  l->key = tb_str(t, k);
  l->value = tb_str(t, v);
  s->match_labels = l;
  s->nmatch_labels = 1;
  return s;
}

static inline struct carp_sched_spread *
tb_pod_spread(struct tb *t, struct carp_sched_pod *p, const char *key,
              int32_t skew, enum carp_sched_unsatisfiable when,
              int32_t min_domains, const char *sk, const char *sv)
{
  struct carp_sched_spread *sp = &tb_podx(t, p)->spreads[p->nspreads++];
  sp->topology_key = tb_str(t, key);
  sp->max_skew = skew;
  sp->when_unsatisfiable = when;
  sp->min_domains = min_domains;
  sp->selector = tb_sel(t, sk, sv);
  return sp;
}

enum tb_term { TB_AFF = 0, TB_PAFF, TB_ANTI, TB_PANTI };

static inline struct carp_sched_pod_term *
tb_pod_term(struct tb *t, struct carp_sched_pod *p, enum tb_term kind,
            const char *key, const char *sk, const char *sv, int32_t weight)
{
  size_t *n = kind == TB_AFF    ? &p->naffinity
              : kind == TB_PAFF ? &p->npreferred_affinity
              : kind == TB_ANTI ? &p->nanti_affinity
                                : &p->npreferred_anti_affinity;
  struct carp_sched_pod_term *term = &tb_podx(t, p)->terms[kind][(*n)++];
  term->topology_key = tb_str(t, key);
  term->selector = tb_sel(t, sk, sv);
  term->weight = weight;
  return term;
}

static inline void tb_pod_port(struct tb *t, struct carp_sched_pod *p,
                               uint16_t port, const char *ip)
{
  tb_podx(t, p)->ports[p->nhost_ports++] = (struct carp_sched_host_port){
      port, CARP_SCHED_TCP, ip ? tb_str(t, ip) : NULL};
}

/* ---- nodes and bound pods ---- */

static inline struct carp_sched_node *tb_node(struct tb *t, const char *name,
                                              const char *pool,
                                              const char *zone, const char *cpu,
                                              const char *mem, const char *pods)
{
  size_t i = t->p.nnodes++;
  struct carp_sched_node *n = &t->nodes[i];
  struct tb_node *x = &t->nx[i];
  n->name = tb_str(t, name);
  n->nodepool = pool ? tb_str(t, pool) : NULL;
  n->initialized = 1;
  n->labels = x->labels;
  n->requirements = x->reqs;
  n->taints = x->taints;
  n->allocatable = x->alloc;
  n->requested = x->used;
  n->host_ports = x->ports;
  x->labels[n->nlabels++] =
      (struct carp_sched_label){CARP_LABEL_HOSTNAME, n->name};
  x->labels[n->nlabels++] = (struct carp_sched_label){CARP_LABEL_ARCH, "amd64"};
  x->labels[n->nlabels++] = (struct carp_sched_label){CARP_LABEL_OS, "linux"};
  if (zone)
    x->labels[n->nlabels++] =
        (struct carp_sched_label){CARP_LABEL_ZONE, tb_str(t, zone)};
  if (pool)
    x->labels[n->nlabels++] =
        (struct carp_sched_label){CARP_LABEL_NODEPOOL, n->nodepool};
  x->alloc[n->nallocatable++] = (struct carp_sched_quantity){"cpu", tb_q(cpu)};
  x->alloc[n->nallocatable++] =
      (struct carp_sched_quantity){"memory", tb_q(mem)};
  x->alloc[n->nallocatable++] =
      (struct carp_sched_quantity){"pods", tb_q(pods)};
  return n;
}

static inline struct tb_node *tb_nodex(struct tb *t, struct carp_sched_node *n)
{
  return &t->nx[n - t->nodes];
}

static inline void tb_node_used(struct tb *t, struct carp_sched_node *n,
                                const char *res, const char *q)
{
  tb_nodex(t, n)->used[n->nrequested++] =
      (struct carp_sched_quantity){tb_str(t, res), tb_q(q)};
}

static inline void tb_node_label(struct tb *t, struct carp_sched_node *n,
                                 const char *k, const char *v)
{
  tb_nodex(t, n)->labels[n->nlabels++] =
      (struct carp_sched_label){tb_str(t, k), tb_str(t, v)};
}

static inline void tb_node_taint(struct tb *t, struct carp_sched_node *n,
                                 const char *k, const char *v,
                                 enum carp_sched_effect e)
{
  tb_nodex(t, n)->taints[n->ntaints++] =
      (struct carp_sched_taint){tb_str(t, k), v ? tb_str(t, v) : NULL, e};
}

/* A pod already on node `node` with one label (and, optionally, required
 * anti-affinity to pods labelled ak=av on key akey). */
static inline struct carp_sched_bound_pod *
tb_bound(struct tb *t, uint32_t node, const char *k, const char *v,
         const char *akey, const char *ak, const char *av)
{
  struct carp_sched_bound_pod *b = &t->bound[t->p.nbound_pods++];
  struct carp_sched_label *l = tb_alloc(t, sizeof(*l));
  l->key = tb_str(t, k);
  l->value = tb_str(t, v);
  b->namespace_ = "default";
  b->labels = l;
  b->nlabels = 1;
  b->node = node;
  if (akey) {
    struct carp_sched_pod_term *term = tb_alloc(t, sizeof(*term));
    term->topology_key = tb_str(t, akey);
    term->selector = tb_sel(t, ak, av);
    b->anti_affinity = term;
    b->nanti_affinity = 1;
  }
  return b;
}

/* ---- daemons ---- */

static inline struct carp_sched_daemon *
tb_daemon(struct tb *t, const char *name, const char *cpu, const char *mem)
{
  size_t i = t->p.ndaemons++;
  struct carp_sched_daemon *d = &t->daemons[i];
  struct tb_daemon *x = &t->dx[i];
  d->name = tb_str(t, name);
  d->requests = x->req;
  x->req[d->nrequests++] = (struct carp_sched_quantity){"cpu", tb_q(cpu)};
  x->req[d->nrequests++] = (struct carp_sched_quantity){"memory", tb_q(mem)};
  d->node_selector = x->nsel;
  d->tolerations = x->tols;
  d->required_terms = x->terms;
  return d;
}

static inline struct tb_daemon *tb_daemonx(struct tb *t,
                                           struct carp_sched_daemon *d)
{
  return &t->dx[d - t->daemons];
}

/* ---- solving and looking ---- */

static inline struct carp_sched_result *tb_solve(struct tb *t)
{
  int rc;
  carp_sched_result_free(t->res);
  t->res = NULL;
  rc = carp_sched_solve(&t->p, &t->res);
  if (rc != 0) {
    fprintf(stderr, "carp_sched_solve: %d\n", rc);
    abort();
  }
  return t->res;
}

static inline size_t tb_pod_index(struct tb *t, const struct carp_sched_pod *p)
{
  return (size_t)(p - t->pods);
}

/* Where pod p went: "node:<name>", "claim:<n>" or "-". */
static inline const char *tb_where(struct tb *t, const struct carp_sched_pod *p)
{
  static char buf[64];
  const struct carp_sched_assignment *a =
      &t->res->assignments[tb_pod_index(t, p)];
  if (a->target == CARP_SCHED_ON_NODE)
    snprintf(buf, sizeof(buf), "node:%s", t->nodes[a->index].name);
  else if (a->target == CARP_SCHED_ON_CLAIM)
    snprintf(buf, sizeof(buf), "claim:%u", a->index);
  else
    snprintf(buf, sizeof(buf), "-");
  return buf;
}

/* The claim of pod p, or NULL. */
static inline const struct carp_sched_claim *
tb_claim(struct tb *t, const struct carp_sched_pod *p)
{
  const struct carp_sched_assignment *a =
      &t->res->assignments[tb_pod_index(t, p)];
  return a->target == CARP_SCHED_ON_CLAIM ? &t->res->claims[a->index] : NULL;
}

/* The claim's requirement on key as "Op v1 v2", or "" when absent. */
static inline const char *tb_claim_req(const struct carp_sched_claim *c,
                                       const char *key)
{
  static char buf[256];
  static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist",
                                    "Gt", "Lt",    "Gte",    "Lte"};
  buf[0] = '\0';
  for (size_t i = 0; c && i < c->nrequirements; i++) {
    const struct carp_sched_requirement *r = &c->requirements[i];
    size_t len;
    if (strcmp(r->key, key) != 0)
      continue;
    len = strlen(buf);
    snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? "; " : "", ops[r->op]);
    for (size_t k = 0; k < r->nvalues; k++) {
      len = strlen(buf);
      snprintf(buf + len, sizeof(buf) - len, " %s", r->values[k]);
    }
  }
  return buf;
}

/* Name of the cheapest option of claim c. */
static inline const char *tb_claim_type(struct tb *t,
                                        const struct carp_sched_claim *c)
{
  return c && c->ninstance_types ? t->types[c->instance_types[0]].name : "";
}

/* The refusal of pod p by nodepool `pool`, or NULL. */
static inline const struct carp_sched_refusal *
tb_refusal(struct tb *t, const struct carp_sched_pod *p, const char *pool)
{
  size_t i = tb_pod_index(t, p);
  for (size_t u = 0; u < t->res->nunschedulable; u++) {
    const struct carp_sched_unschedulable *un = &t->res->unschedulable[u];
    if (un->pod != i)
      continue;
    for (size_t k = 0; k < un->nrefusals; k++)
      if (strcmp(t->pools[un->refusals[k].nodepool].name, pool) == 0)
        return &un->refusals[k];
  }
  return NULL;
}

static inline const char *tb_unsched_message(struct tb *t,
                                             const struct carp_sched_pod *p)
{
  size_t i = tb_pod_index(t, p);
  for (size_t u = 0; u < t->res->nunschedulable; u++)
    if (t->res->unschedulable[u].pod == i)
      return t->res->unschedulable[u].message;
  return NULL;
}

/* A standard cluster: one pool "default" and three types (2, 4, 8 vCPU at
 * 2 GiB per vCPU) in zones z1, z2, z3, priced 0.1 per vCPU + 0.1 per GiB. */
static inline struct carp_sched_nodepool *tb_standard(struct tb *t)
{
  tb_type(t, "c2", "2", "4Gi", "20", "z1,z2,z3", 0.6);
  tb_type(t, "c4", "4", "8Gi", "40", "z1,z2,z3", 1.2);
  tb_type(t, "c8", "8", "16Gi", "80", "z1,z2,z3", 2.4);
  return tb_pool(t, "default", 0);
}

#endif
