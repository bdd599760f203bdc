/* Property tests for the scheduling solve on random, seeded problems: a
 * mix of instance types, NodePools (weights, zone and arch requirements,
 * taints, cpu/memory/nodes limits with usage), existing and in-flight
 * nodes with running pods, DaemonSets, and Deployments with node
 * selectors, affinity terms, tolerations, host ports, zone and hostname
 * spreads, self affinity and self anti-affinity.
 *
 * An independent validator (public API only) checks every placement
 * against every rule: requirements on every instance-type option, taints,
 * resources with DaemonSet overhead on every option, host ports, spreads
 * (final counts), affinity and anti-affinity both ways, prices, and that no
 * NodePool limit is exceeded. For batches of unconstrained pods the plan's
 * price must not exceed a simple first-fit-decreasing packing.
 *
 * CARP_SCHED_SEED=<n> reruns from a given seed; CARP_SCHED_ITERS=<n> sets
 * the number of problems. A failure prints the seed of its problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/rand.h"
#include "test_sched_util.h"

#define ZONE CARP_LABEL_ZONE
#define HOST CARP_LABEL_HOSTNAME

static uint64_t cur_seed;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "seed %llu: ", (unsigned long long)cur_seed);            \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      fail_msg("property violated (seed %llu)", (unsigned long long)cur_seed); \
    }                                                                          \
  } while (0)

static const char *const zones[] = {"z1", "z2", "z3"};
static const char *const cpus[] = {"100m", "250m", "500m", "1", "1500m", "3"};
static const char *const mems[] = {"100Mi", "256Mi", "512Mi",
                                   "1Gi",   "2Gi",   "6Gi"};

static uint64_t rnd(struct carp_rand *r, uint64_t n)
{
  return carp_rand_below(r, n);
}

/* A deployment's kind of constraint. */
enum kind {
  K_PLAIN = 0,
  K_ZONE_SEL,
  K_ZONE_TERMS,
  K_TOLERATE,
  K_PORT,
  K_ZONE_SPREAD,
  K_HOST_SPREAD,
  K_ZONE_AFF,
  K_HOST_ANTI,
  K_ZONE_ANTI,
  K_PREF,
  K_NKINDS
};

struct deploy {
  enum kind kind;
  char app[16];
  int32_t skew;
};

struct gen {
  struct deploy dep[64];
  int ndep;
  int dep_of[TB_MAXPODS];
};

/* ---- the problem ---- */

static void gen_problem(struct tb *t, struct gen *G, struct carp_rand *r,
                        int generic_only)
{
  int ntypes = 3 + (int)rnd(r, 8), npools, nnodes, ndeps;
  char name[64];
  memset(G, 0, sizeof(*G));
  for (int i = 0; i < ntypes; i++) {
    static const char *const cpuq[] = {"1", "2", "4", "8", "16"};
    static const int cpun[] = {1, 2, 4, 8, 16};
    static const int ratio[] = {1, 2, 4, 8};
    int c = (int)rnd(r, 5), g = ratio[rnd(r, 4)];
    char mem[32], pods[16], zl[16] = "";
    uint32_t ti;
    double price = 0.1 * cpun[c] + 0.1 * cpun[c] * g;
    for (int z = 0; z < 3; z++)
      if (rnd(r, 3) || (z == 2 && !zl[0])) {
        if (zl[0])
          strcat(zl, ",");
        strcat(zl, zones[z]);
      }
    snprintf(mem, sizeof(mem), "%dGi", cpun[c] * g);
    snprintf(pods, sizeof(pods), "%d", 8 + (int)rnd(r, 100));
    snprintf(name, sizeof(name), "t%d-%dc-%dg", i, cpun[c], cpun[c] * g);
    ti = tb_type(t, name, cpuq[c], mem, pods, zl,
                 price * (0.8 + 0.4 * (double)rnd(r, 100) / 100.0));
    if (rnd(r, 4) == 0)
      tb_type_label(t, ti, CARP_LABEL_ARCH, "arm64");
    if (rnd(r, 3) == 0)
      t->tx[ti].kube[t->types[ti].nkube_reserved++] =
          (struct carp_sched_quantity){"cpu", 100};
  }
  npools = generic_only ? 1 : 1 + (int)rnd(r, 3);
  for (int i = 0; i < npools; i++) {
    struct carp_sched_nodepool *np;
    snprintf(name, sizeof(name), "pool%d", i);
    np = tb_pool(t, name, (int32_t)rnd(r, 3) * 10);
    if (generic_only)
      break;
    if (rnd(r, 3) == 0)
      tb_pool_req(t, np, ZONE, CARP_SCHED_OP_IN, rnd(r, 2) ? "z1,z2" : "z3", 0);
    if (rnd(r, 3) == 0)
      tb_pool_req(t, np, CARP_LABEL_ARCH, CARP_SCHED_OP_IN, "amd64", 0);
    if (rnd(r, 4) == 0)
      tb_pool_taint(t, np, "dedicated", "x", CARP_SCHED_EFFECT_NO_SCHEDULE, 0);
    if (rnd(r, 5) == 0)
      tb_pool_taint(t, np, "soft", NULL, CARP_SCHED_EFFECT_PREFER_NO_SCHEDULE,
                    0);
    if (rnd(r, 3) == 0) {
      char lim[16], used[16];
      snprintf(lim, sizeof(lim), "%d", 8 + (int)rnd(r, 120));
      snprintf(used, sizeof(used), "%d", (int)rnd(r, 8));
      tb_pool_limit(t, np, "cpu", lim, used);
    }
    if (rnd(r, 3) == 0) {
      char lim[16], used[16];
      snprintf(lim, sizeof(lim), "%d", 1 + (int)rnd(r, 30));
      snprintf(used, sizeof(used), "%d", (int)rnd(r, 2));
      tb_pool_limit(t, np, "nodes", lim, used);
    }
    if (rnd(r, 4) == 0)
      tb_pool_limit(t, np, "memory", "64Gi", "2Gi");
  }
  if (!generic_only && rnd(r, 2)) {
    struct carp_sched_daemon *d = tb_daemon(t, "agent", "100m", "128Mi");
    if (rnd(r, 2))
      tb_daemonx(t, d)->tols[d->ntolerations++] =
          (struct carp_sched_toleration){NULL, CARP_SCHED_TOLERATE_EXISTS, NULL,
                                         CARP_SCHED_EFFECT_ALL};
  }
  nnodes = generic_only ? 0 : (int)rnd(r, 5);
  for (int i = 0; i < nnodes; i++) {
    struct carp_sched_node *n;
    snprintf(name, sizeof(name), "node%d", i);
    n = tb_node(t, name, rnd(r, 2) ? "pool0" : NULL, zones[rnd(r, 3)],
                rnd(r, 2) ? "4" : "2", "8Gi", "20");
    tb_node_used(t, n, "cpu", rnd(r, 2) ? "1" : "1500m");
    tb_node_used(t, n, "memory", "1Gi");
    tb_node_used(t, n, "pods", "2");
    n->in_flight = rnd(r, 4) == 0;
    n->initialized = !n->in_flight;
    n->deleting = rnd(r, 6) == 0;
    if (rnd(r, 4) == 0)
      tb_nodex(t, n)->ports[n->nhost_ports++] =
          (struct carp_sched_host_port){8080, CARP_SCHED_TCP, NULL};
  }
  ndeps = 1 + (int)rnd(r, generic_only ? 8 : 14);
  for (int d = 0; d < ndeps; d++) {
    struct deploy *dp = &G->dep[G->ndep++];
    int replicas = 1 + (int)rnd(r, generic_only ? 60 : 25);
    const char *cpu = cpus[rnd(r, 6)], *mem = mems[rnd(r, 6)];
    dp->kind = generic_only ? K_PLAIN : (enum kind)rnd(r, K_NKINDS);
    dp->skew = 1 + (int32_t)rnd(r, 2);
    snprintf(dp->app, sizeof(dp->app), "app%d", d);
    for (int i = 0; i < replicas && t->p.npods < 1500; i++) {
      struct carp_sched_pod *p = tb_pod(t, dp->app, cpu, mem);
      G->dep_of[tb_pod_index(t, p)] = d;
      tb_pod_label(t, p, "app", dp->app);
      switch (dp->kind) {
      case K_ZONE_SEL:
        tb_pod_selector(t, p, ZONE, zones[d % 3]);
        break;
      case K_ZONE_TERMS:
        tb_pod_required(t, p, 0, ZONE, CARP_SCHED_OP_IN, "z9");
        tb_pod_required(t, p, 1, ZONE, CARP_SCHED_OP_IN, "z1,z3");
        tb_pod_required(t, p, 1, CARP_LABEL_ARCH, CARP_SCHED_OP_IN, "amd64");
        break;
      case K_TOLERATE:
        tb_pod_toleration(t, p, "dedicated", CARP_SCHED_TOLERATE_EQUAL, "x",
                          CARP_SCHED_EFFECT_NO_SCHEDULE);
        break;
      case K_PORT:
        tb_pod_port(t, p, 8080, NULL);
        break;
      case K_ZONE_SPREAD:
        tb_pod_spread(t, p, ZONE, dp->skew, CARP_SCHED_DO_NOT_SCHEDULE, 0,
                      "app", dp->app);
        break;
      case K_HOST_SPREAD:
        tb_pod_spread(t, p, HOST, dp->skew, CARP_SCHED_DO_NOT_SCHEDULE, 0,
                      "app", dp->app);
        break;
      case K_ZONE_AFF:
        tb_pod_term(t, p, TB_AFF, ZONE, "app", dp->app, 0);
        break;
      case K_HOST_ANTI:
        tb_pod_term(t, p, TB_ANTI, HOST, "app", dp->app, 0);
        break;
      case K_ZONE_ANTI:
        tb_pod_term(t, p, TB_ANTI, ZONE, "app", dp->app, 0);
        break;
      case K_PREF:
        tb_pod_preferred(t, p, 0, 10, ZONE, CARP_SCHED_OP_IN, "z2");
        tb_pod_spread(t, p, HOST, 1, CARP_SCHED_SCHEDULE_ANYWAY, 0, "app",
                      dp->app);
        break;
      default:
        break;
      }
    }
  }
  /* pods already running, some of the same apps, some with anti-affinity */
  for (size_t i = 0; i < t->p.nnodes && !generic_only; i++) {
    int d = (int)rnd(r, (uint64_t)G->ndep);
    if (rnd(r, 2))
      tb_bound(t, (uint32_t)i, "app", G->dep[d].app, NULL, NULL, NULL);
    if (rnd(r, 4) == 0)
      tb_bound(t, (uint32_t)i, "app", "guard", HOST, "app", G->dep[d].app);
  }
}

/* ---- helpers for the validator ---- */

static int64_t qty(const struct carp_sched_quantity *q, size_t n,
                   const char *name)
{
  int64_t v = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(q[i].name, name) == 0)
      v += q[i].milli;
  return v;
}

static const char *const dims[] = {"cpu", "memory", "pods"};

static int64_t pod_req(const struct carp_sched_pod *p, int d)
{
  return d == 2 ? 1000 : qty(p->requests, p->nrequests, dims[d]);
}

static const char *label_of(const struct carp_sched_label *l, size_t n,
                            const char *k)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(l[i].key, k) == 0)
      return l[i].value;
  return NULL;
}

static int defines(const struct carp_sched_reqs *s, const char *key)
{
  char buf[4096], want[256];
  carp_sched_reqs_format(s, buf, sizeof(buf));
  snprintf(want, sizeof(want), "%s ", key);
  if (strncmp(buf, want, strlen(want)) == 0)
    return 1;
  snprintf(want, sizeof(want), ", %s ", key);
  return strstr(buf, want) != NULL;
}

/* The labels a node launched for claim c with type it may carry. */
static struct carp_sched_reqs *
node_set(struct tb *t, const struct carp_sched_claim *c, uint32_t ti)
{
  const struct carp_sched_instance_type *it = &t->types[ti];
  struct carp_sched_reqs *s = carp_sched_reqs_new();
  const char *zl[16], *name = it->name;
  size_t nz = 0;
  struct carp_sched_requirement q;
  for (size_t i = 0; i < c->nrequirements; i++)
    assert_int_equal(carp_sched_reqs_add(s, &c->requirements[i]), 0);
  for (size_t i = 0; i < it->nrequirements; i++)
    assert_int_equal(carp_sched_reqs_add(s, &it->requirements[i]), 0);
  for (size_t i = 0; i < it->nofferings; i++)
    if (it->offerings[i].available)
      zl[nz++] = it->offerings[i].zone;
  q = (struct carp_sched_requirement){ZONE, CARP_SCHED_OP_IN, zl, nz, 0};
  carp_sched_reqs_add(s, &q);
  q = (struct carp_sched_requirement){CARP_LABEL_INSTANCE_TYPE,
                                      CARP_SCHED_OP_IN, &name, 1, 0};
  carp_sched_reqs_add(s, &q);
  return s;
}

/* Does every state the node may be in satisfy requirement q? */
static int satisfies(struct tb *t, const struct carp_sched_claim *c,
                     uint32_t ti, const struct carp_sched_requirement *q)
{
  struct carp_sched_reqs *s = node_set(t, c, ti), *s2 = node_set(t, c, ti);
  char a[4096], b[4096];
  int ok;
  if (!defines(s, q->key)) {
    struct carp_sched_reqs *one = carp_sched_reqs_new();
    carp_sched_reqs_add(one, q);
    ok = carp_sched_reqs_allows(one, q->key, NULL);
    carp_sched_reqs_free(one);
  } else {
    carp_sched_reqs_add(s2, q);
    carp_sched_reqs_format(s, a, sizeof(a));
    carp_sched_reqs_format(s2, b, sizeof(b));
    ok = strcmp(a, b) == 0 && !carp_sched_reqs_empty(s);
  }
  carp_sched_reqs_free(s);
  carp_sched_reqs_free(s2);
  return ok;
}

static int pod_fits_claim_type(struct tb *t, const struct carp_sched_pod *p,
                               const struct carp_sched_claim *c, uint32_t ti)
{
  for (size_t i = 0; i < p->nnode_selector; i++) {
    const char *v = p->node_selector[i].value;
    struct carp_sched_requirement q = {p->node_selector[i].key,
                                       CARP_SCHED_OP_IN, &v, 1, 0};
    if (!satisfies(t, c, ti, &q))
      return 0;
  }
  if (!p->nrequired_terms)
    return 1;
  for (size_t k = 0; k < p->nrequired_terms; k++) {
    size_t e;
    for (e = 0; e < p->required_terms[k].nexprs; e++)
      if (!satisfies(t, c, ti, &p->required_terms[k].exprs[e]))
        break;
    if (e == p->required_terms[k].nexprs)
      return 1;
  }
  return 0;
}

static int pod_fits_node(const struct carp_sched_pod *p,
                         const struct carp_sched_node *n)
{
  struct carp_sched_reqs *r = carp_sched_reqs_new();
  int ok = 1;
  for (size_t i = 0; i < p->nnode_selector; i++)
    if (!label_of(n->labels, n->nlabels, p->node_selector[i].key) ||
        strcmp(label_of(n->labels, n->nlabels, p->node_selector[i].key),
               p->node_selector[i].value) != 0)
      ok = 0;
  if (ok && p->nrequired_terms) {
    ok = 0;
    for (size_t k = 0; k < p->nrequired_terms && !ok; k++) {
      struct carp_sched_reqs *tr = carp_sched_reqs_new();
      for (size_t e = 0; e < p->required_terms[k].nexprs; e++)
        carp_sched_reqs_add(tr, &p->required_terms[k].exprs[e]);
      ok = carp_sched_reqs_matches(tr, n->labels, n->nlabels);
      carp_sched_reqs_free(tr);
    }
  }
  carp_sched_reqs_free(r);
  return ok;
}

static int64_t daemon_overhead(struct tb *t,
                               const struct carp_sched_nodepool *np, int d)
{
  int64_t v = 0;
  for (size_t i = 0; i < t->p.ndaemons; i++) {
    const struct carp_sched_daemon *dm = &t->daemons[i];
    if (!carp_sched_taints_tolerated(np->taints, np->ntaints, dm->tolerations,
                                     dm->ntolerations, 1, NULL))
      continue;
    v += d == 2 ? 1000 : qty(dm->requests, dm->nrequests, dims[d]);
  }
  return v;
}

/* The bin of a pod: claims as c, nodes as 10000 + n; -1 unscheduled. */
static int bin_of(struct tb *t, size_t i)
{
  const struct carp_sched_assignment *a = &t->res->assignments[i];
  if (a->target == CARP_SCHED_ON_CLAIM)
    return (int)a->index;
  if (a->target == CARP_SCHED_ON_NODE)
    return 10000 + (int)a->index;
  return -1;
}

/* Zone of a bin, or NULL when not settled. */
static const char *zone_of_bin(struct tb *t, int b)
{
  static char buf[300];
  if (b >= 10000)
    return label_of(t->nodes[b - 10000].labels, t->nodes[b - 10000].nlabels,
                    ZONE);
  {
    const char *r = tb_claim_req(&t->res->claims[b], ZONE);
    if (strncmp(r, "In ", 3) != 0 || strchr(r + 3, ' ') || strchr(r, ';'))
      return NULL;
    snprintf(buf, sizeof(buf), "%s", r + 3);
    return buf;
  }
}

/* May bin b end up in zone z? */
static int bin_may_be_in(struct tb *t, int b, int z)
{
  const struct carp_sched_claim *c;
  const char *r;
  if (b >= 10000)
    return zone_of_bin(t, b) && strcmp(zone_of_bin(t, b), zones[z]) == 0;
  c = &t->res->claims[b];
  r = tb_claim_req(c, ZONE);
  if (!*r) {
    /* any zone an option is offered in */
    for (size_t k = 0; k < c->ninstance_types; k++) {
      const struct carp_sched_instance_type *it =
          &t->types[c->instance_types[k]];
      for (size_t o = 0; o < it->nofferings; o++)
        if (it->offerings[o].available &&
            strcmp(it->offerings[o].zone, zones[z]) == 0)
          return 1;
    }
    return 0;
  }
  if (strncmp(r, "In ", 3) != 0)
    return 1;
  {
    char buf[300], *tok, *save = NULL;
    snprintf(buf, sizeof(buf), "%s", r + 3);
    for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
      if (strcmp(tok, zones[z]) == 0)
        return 1;
  }
  return 0;
}

static int zone_index(const char *z)
{
  for (int i = 0; i < 3; i++)
    if (z && strcmp(z, zones[i]) == 0)
      return i;
  return -1;
}

/* Zones any pool can launch in, plus existing nodes' zones. */
static int universe(struct tb *t, int z)
{
  for (size_t i = 0; i < t->p.nnodes; i++)
    if (zone_index(label_of(t->nodes[i].labels, t->nodes[i].nlabels, ZONE)) ==
        z)
      return 1;
  for (size_t pi = 0; pi < t->p.nnodepools; pi++) {
    const struct carp_sched_nodepool *np = &t->pools[pi];
    struct carp_sched_reqs *pr = carp_sched_reqs_new();
    int pool_ok;
    for (size_t k = 0; k < np->nrequirements; k++)
      carp_sched_reqs_add(pr, &np->requirements[k]);
    pool_ok = carp_sched_reqs_allows(pr, ZONE, zones[z]);
    for (size_t ti = 0; ti < t->p.ninstance_types && pool_ok; ti++) {
      const struct carp_sched_instance_type *it = &t->types[ti];
      struct carp_sched_reqs *tr = carp_sched_reqs_new();
      int arch_ok;
      for (size_t k = 0; k < it->nrequirements; k++)
        carp_sched_reqs_add(tr, &it->requirements[k]);
      arch_ok = carp_sched_reqs_intersects(tr, pr, NULL);
      carp_sched_reqs_free(tr);
      if (!arch_ok)
        continue;
      for (size_t o = 0; o < it->nofferings; o++)
        if (it->offerings[o].available &&
            strcmp(it->offerings[o].zone, zones[z]) == 0) {
          carp_sched_reqs_free(pr);
          return 1;
        }
    }
    carp_sched_reqs_free(pr);
  }
  return 0;
}

/* Pods (new and running) with label app=name on bin b / in zone z. */
static int count_app_bin(struct tb *t, const char *app, int b)
{
  int n = 0;
  for (size_t i = 0; i < t->p.npods; i++)
    if (bin_of(t, i) == b && strcmp(t->pods[i].labels[0].value, app) == 0)
      n++;
  if (b >= 10000)
    for (size_t i = 0; i < t->p.nbound_pods; i++)
      if ((int)t->bound[i].node == b - 10000 &&
          strcmp(t->bound[i].labels[0].value, app) == 0)
        n++;
  return n;
}

static int count_app_zone(struct tb *t, const char *app, int z)
{
  int n = 0;
  for (size_t i = 0; i < t->p.npods; i++) {
    int b = bin_of(t, i);
    if (b >= 0 && zone_index(zone_of_bin(t, b)) == z &&
        strcmp(t->pods[i].labels[0].value, app) == 0)
      n++;
  }
  for (size_t i = 0; i < t->p.nbound_pods; i++) {
    const struct carp_sched_node *n2 = &t->nodes[t->bound[i].node];
    if (zone_index(label_of(n2->labels, n2->nlabels, ZONE)) == z &&
        strcmp(t->bound[i].labels[0].value, app) == 0)
      n++;
  }
  return n;
}

/* ---- the validator ---- */

static void validate(struct tb *t, struct gen *G)
{
  const struct carp_sched_result *res = t->res;
  size_t sched = 0;
  /* every pod once; claims list exactly their pods */
  for (size_t c = 0; c < res->nclaims; c++)
    for (size_t k = 0; k < res->claims[c].npods; k++) {
      uint32_t pi = res->claims[c].pods[k];
      CHECK(res->assignments[pi].target == CARP_SCHED_ON_CLAIM &&
                res->assignments[pi].index == c,
            "claim %zu lists pod %u placed elsewhere", c, pi);
    }
  for (size_t i = 0; i < t->p.npods; i++)
    sched += res->assignments[i].target != CARP_SCHED_UNSCHEDULED;
  CHECK(sched == res->nscheduled, "nscheduled");
  CHECK(res->nscheduled + res->nunschedulable == t->p.npods, "counts");

  /* claims */
  for (size_t c = 0; c < res->nclaims; c++) {
    const struct carp_sched_claim *cl = &res->claims[c];
    const struct carp_sched_nodepool *np = &t->pools[cl->nodepool];
    CHECK(cl->ninstance_types > 0, "claim %zu without options", c);
    CHECK(cl->price == cl->prices[0], "claim price");
    for (size_t k = 1; k < cl->ninstance_types; k++)
      CHECK(cl->prices[k - 1] <= cl->prices[k], "options not by price");
    for (size_t k = 0; k < cl->ninstance_types; k++) {
      uint32_t ti = cl->instance_types[k];
      const struct carp_sched_instance_type *it = &t->types[ti];
      for (int d = 0; d < 3; d++) {
        int64_t sum = daemon_overhead(t, np, d);
        for (size_t m = 0; m < cl->npods; m++)
          sum += pod_req(&t->pods[cl->pods[m]], d);
        CHECK(sum <= carp_sched_allocatable(it, dims[d]),
              "claim %zu option %s: %s %lld > allocatable", c, it->name,
              dims[d], (long long)sum);
      }
      /* pods of one Deployment share their constraints: check once */
      {
        uint8_t seen[64] = {0};
        for (size_t m = 0; m < cl->npods; m++) {
          int d = G->dep_of[cl->pods[m]];
          if (seen[d])
            continue;
          seen[d] = 1;
          CHECK(pod_fits_claim_type(t, &t->pods[cl->pods[m]], cl, ti),
                "claim %zu option %s: pod %u requirements", c, it->name,
                cl->pods[m]);
        }
      }
    }
    for (size_t m = 0; m < cl->npods; m++) {
      const struct carp_sched_pod *p = &t->pods[cl->pods[m]];
      CHECK(carp_sched_taints_tolerated(np->taints, np->ntaints, p->tolerations,
                                        p->ntolerations, 1, NULL),
            "claim %zu: pod %u does not tolerate the pool", c, cl->pods[m]);
      for (size_t m2 = m + 1; m2 < cl->npods; m2++) {
        const struct carp_sched_pod *q = &t->pods[cl->pods[m2]];
        for (size_t a = 0; a < p->nhost_ports; a++)
          for (size_t b = 0; b < q->nhost_ports; b++)
            CHECK(!carp_sched_host_ports_conflict(&p->host_ports[a],
                                                  &q->host_ports[b]),
                  "claim %zu: host port conflict", c);
      }
    }
  }

  /* existing nodes */
  for (size_t n = 0; n < t->p.nnodes; n++) {
    const struct carp_sched_node *nd = &t->nodes[n];
    int64_t sum[3] = {0, 0, 0}, any = 0;
    for (size_t i = 0; i < t->p.npods; i++) {
      if (bin_of(t, i) != 10000 + (int)n)
        continue;
      any = 1;
      CHECK(!nd->deleting, "pod on a deleting node");
      CHECK(pod_fits_node(&t->pods[i], nd), "pod %zu on node %zu labels", i, n);
      for (int d = 0; d < 3; d++)
        sum[d] += pod_req(&t->pods[i], d);
      for (size_t a = 0; a < t->pods[i].nhost_ports; a++)
        for (size_t b = 0; b < nd->nhost_ports; b++)
          CHECK(!carp_sched_host_ports_conflict(&t->pods[i].host_ports[a],
                                                &nd->host_ports[b]),
                "node host port");
    }
    for (int d = 0; d < 3 && any; d++)
      if (sum[d])
        CHECK(qty(nd->requested, nd->nrequested, dims[d]) + sum[d] <=
                  qty(nd->allocatable, nd->nallocatable, dims[d]),
              "node %zu over %s", n, dims[d]);
  }

  /* topology, per deployment */
  for (int d = 0; d < G->ndep; d++) {
    const struct deploy *dp = &G->dep[d];
    int bins[2048], nb = 0, zc[3], elig[3], ne = 0, mn = 1 << 30;
    for (size_t i = 0; i < t->p.npods; i++)
      if (G->dep_of[i] == d && bin_of(t, i) >= 0 && nb < 2048)
        bins[nb++] = bin_of(t, i);
    switch (dp->kind) {
    case K_HOST_ANTI:
      for (int a = 0; a < nb; a++)
        CHECK(count_app_bin(t, dp->app, bins[a]) == 1,
              "%s: anti-affinity broken on bin %d", dp->app, bins[a]);
      break;
    case K_HOST_SPREAD:
      for (int a = 0; a < nb; a++)
        CHECK(count_app_bin(t, dp->app, bins[a]) <= dp->skew,
              "%s: hostname skew on bin %d", dp->app, bins[a]);
      break;
    case K_ZONE_ANTI:
      for (int a = 0; a < nb; a++) {
        int z = zone_index(zone_of_bin(t, bins[a]));
        CHECK(z >= 0, "%s: zone anti-affinity pod in an unsettled zone",
              dp->app);
        CHECK(count_app_zone(t, dp->app, z) == 1, "%s: zone anti-affinity",
              dp->app);
      }
      break;
    case K_ZONE_AFF:
      /* every zone the pod may end up in holds a matching pod */
      for (int a = 0; a < nb; a++)
        for (int z = 0; z < 3; z++)
          if (bin_may_be_in(t, bins[a], z))
            CHECK(count_app_zone(t, dp->app, z) >= 1,
                  "%s: affinity pod may land in %s without a match", dp->app,
                  zones[z]);
      break;
    case K_ZONE_SPREAD:
      for (int z = 0; z < 3; z++) {
        elig[z] = universe(t, z);
        zc[z] = count_app_zone(t, dp->app, z);
        if (elig[z]) {
          ne++;
          if (zc[z] < mn)
            mn = zc[z];
        }
      }
      for (int a = 0; a < nb; a++) {
        int z = zone_index(zone_of_bin(t, bins[a]));
        CHECK(z >= 0 && elig[z], "%s: spread pod outside eligible zones",
              dp->app);
        CHECK(zc[z] - mn <= dp->skew, "%s: zone skew %d-%d > %d", dp->app,
              zc[z], mn, dp->skew);
      }
      (void)ne;
      break;
    default:
      break;
    }
  }
  /* inverse anti-affinity of running pods */
  for (size_t b = 0; b < t->p.nbound_pods; b++) {
    const struct carp_sched_bound_pod *bp = &t->bound[b];
    if (!bp->nanti_affinity)
      continue;
    for (size_t i = 0; i < t->p.npods; i++)
      if (bin_of(t, i) == 10000 + (int)bp->node)
        CHECK(!carp_sched_selector_matches(bp->anti_affinity[0].selector,
                                           t->pods[i].labels,
                                           t->pods[i].nlabels),
              "pod %zu next to a running pod's anti-affinity", i);
  }

  /* limits */
  for (size_t pi = 0; pi < t->p.nnodepools; pi++) {
    const struct carp_sched_nodepool *np = &t->pools[pi];
    int any = 0;
    for (size_t c = 0; c < res->nclaims; c++)
      any |= res->claims[c].nodepool == pi;
    for (size_t l = 0; l < np->nlimits && any; l++) {
      const char *rn = np->limits[l].name;
      int64_t used = qty(np->usage, np->nusage, rn);
      for (size_t c = 0; c < res->nclaims; c++) {
        const struct carp_sched_claim *cl = &res->claims[c];
        int64_t mx = 0;
        if (cl->nodepool != pi)
          continue;
        if (strcmp(rn, "nodes") == 0) {
          used += 1000;
          continue;
        }
        for (size_t k = 0; k < cl->ninstance_types; k++) {
          const struct carp_sched_instance_type *it =
              &t->types[cl->instance_types[k]];
          int64_t v = qty(it->capacity, it->ncapacity, rn);
          if (v > mx)
            mx = v;
        }
        used += mx;
      }
      CHECK(used <= np->limits[l].milli, "pool %s: %s %lld over limit %lld",
            np->name, rn, (long long)used, (long long)np->limits[l].milli);
    }
  }
}

/* ---- first-fit decreasing, for unconstrained batches ---- */

static int ffd_cmp(const void *a, const void *b, void *arg)
{
  const struct carp_sched_pod *pods = arg;
  const struct carp_sched_pod *x = &pods[*(const uint32_t *)a];
  const struct carp_sched_pod *y = &pods[*(const uint32_t *)b];
  int64_t cx = pod_req(x, 0), cy = pod_req(y, 0);
  int64_t mx = pod_req(x, 1), my = pod_req(y, 1);
  if (cx != cy)
    return cx > cy ? -1 : 1;
  if (mx != my)
    return mx > my ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Pods in decreasing order, each into the first bin that some instance
 * type can still hold it in, else a new bin; each bin priced at the
 * cheapest type that holds it. Pods no type holds are left out. */
static int type_holds(struct tb *t, uint32_t ti, const int64_t *used,
                      const struct carp_sched_pod *p)
{
  for (int d = 0; d < 3; d++)
    if (used[d] + (p ? pod_req(p, d) : 0) >
        carp_sched_allocatable(&t->types[ti], dims[d]))
      return 0;
  return 1;
}

static int some_type_holds(struct tb *t, const int64_t *used,
                           const struct carp_sched_pod *p)
{
  for (uint32_t ti = 0; ti < t->p.ninstance_types; ti++)
    if (type_holds(t, ti, used, p))
      return 1;
  return 0;
}

static double ffd_price(struct tb *t)
{
  size_t n = t->p.npods, nb = 0;
  uint32_t *order = calloc(n + 1, sizeof(uint32_t));
  int64_t(*used)[3] = calloc(n + 1, sizeof(*used));
  double total = 0;
  for (uint32_t i = 0; i < n; i++)
    order[i] = i;
  qsort_r(order, n, sizeof(uint32_t), ffd_cmp, t->pods);
  for (size_t k = 0; k < n; k++) {
    const struct carp_sched_pod *p = &t->pods[order[k]];
    size_t b;
    for (b = 0; b < nb; b++)
      if (some_type_holds(t, used[b], p))
        break;
    if (b == nb) {
      if (!some_type_holds(t, used[nb], p))
        continue; /* fits nothing: the solver leaves it too */
      nb++;
    }
    for (int d = 0; d < 3; d++)
      used[b][d] += pod_req(p, d);
  }
  for (size_t b = 0; b < nb; b++) {
    double best = 1e300;
    for (uint32_t ti = 0; ti < t->p.ninstance_types; ti++) {
      const struct carp_sched_instance_type *it = &t->types[ti];
      if (!type_holds(t, ti, used[b], NULL))
        continue;
      for (size_t o = 0; o < it->nofferings; o++)
        if (it->offerings[o].available && it->offerings[o].price < best)
          best = it->offerings[o].price;
    }
    total += best;
  }
  free(order);
  free(used);
  return total;
}

/* ---- the tests ---- */

static uint64_t base_seed(void)
{
  const char *e = getenv("CARP_SCHED_SEED");
  return e ? strtoull(e, NULL, 10) : 20260101;
}

/* Fewer problems under the sanitizers, which are ~50 times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_ITERS 60
#else
#define DEFAULT_ITERS 300
#endif

static int iterations(int dflt)
{
  const char *e = getenv("CARP_SCHED_ITERS");
  (void)dflt;
  return e ? atoi(e) : DEFAULT_ITERS;
}

static void test_random_batches_valid(void **state)
{
  uint64_t seed0 = base_seed();
  int n = iterations(300);
  size_t total_pods = 0, total_sched = 0, total_claims = 0;
  for (int it = 0; it < n; it++) {
    struct tb t;
    struct gen *G = calloc(1, sizeof(*G));
    struct carp_rand r;
    cur_seed = seed0 + (uint64_t)it;
    carp_rand_seed(&r, cur_seed);
    tb_init(&t);
    gen_problem(&t, G, &r, 0);
    tb_solve(&t);
    validate(&t, G);
    total_pods += t.p.npods;
    total_sched += t.res->nscheduled;
    total_claims += t.res->nclaims;
    tb_free(&t);
    free(G);
  }
  /* the generator must not be so hostile that nothing schedules */
  print_message("%d problems, %zu pods, %zu scheduled, %zu claims\n", n,
                total_pods, total_sched, total_claims);
  assert_true(total_sched * 2 > total_pods);
}

static void test_random_generic_not_worse_than_ffd(void **state)
{
  uint64_t seed0 = base_seed() + 1000000;
  int n = iterations(300);
  double sum_solver = 0, sum_ffd = 0;
  for (int it = 0; it < n; it++) {
    struct tb t;
    struct gen *G = calloc(1, sizeof(*G));
    struct carp_rand r;
    double ffd;
    cur_seed = seed0 + (uint64_t)it;
    carp_rand_seed(&r, cur_seed);
    tb_init(&t);
    gen_problem(&t, G, &r, 1);
    tb_solve(&t);
    validate(&t, G);
    ffd = ffd_price(&t);
    CHECK(t.res->price <= ffd + 1e-9, "price %.4f above FFD %.4f", t.res->price,
          ffd);
    sum_solver += t.res->price;
    sum_ffd += ffd;
    tb_free(&t);
    free(G);
  }
  print_message("solver %.2f vs first-fit-decreasing %.2f\n", sum_solver,
                sum_ffd);
}

/* Random pods and limits on one pool: whatever the batch, usage plus what
 * the plan reserves stays within every limit. */
static void test_random_limits(void **state)
{
  uint64_t seed0 = base_seed() + 2000000;
  int n = iterations(300);
  for (int it = 0; it < n; it++) {
    struct tb t;
    struct gen G;
    struct carp_rand r;
    struct carp_sched_nodepool *np;
    char lim[32], used[32];
    cur_seed = seed0 + (uint64_t)it;
    carp_rand_seed(&r, cur_seed);
    tb_init(&t);
    memset(&G, 0, sizeof(G));
    tb_standard(&t);
    np = &t.pools[0];
    snprintf(lim, sizeof(lim), "%d", 4 + (int)rnd(&r, 40));
    snprintf(used, sizeof(used), "%d", (int)rnd(&r, 6));
    tb_pool_limit(&t, np, "cpu", lim, used);
    snprintf(lim, sizeof(lim), "%dGi", 8 + (int)rnd(&r, 80));
    tb_pool_limit(&t, np, "memory", lim, "1Gi");
    snprintf(lim, sizeof(lim), "%d", 1 + (int)rnd(&r, 12));
    tb_pool_limit(&t, np, "nodes", lim, rnd(&r, 2) ? "1" : NULL);
    G.ndep = 1;
    G.dep[0].kind = rnd(&r, 2) ? K_PLAIN : K_HOST_ANTI;
    snprintf(G.dep[0].app, sizeof(G.dep[0].app), "lim");
    for (int i = 0, m = 1 + (int)rnd(&r, 200); i < m; i++) {
      struct carp_sched_pod *p =
          tb_pod(&t, "p", cpus[rnd(&r, 6)], mems[rnd(&r, 6)]);
      tb_pod_label(&t, p, "app", "lim");
      if (G.dep[0].kind == K_HOST_ANTI)
        tb_pod_term(&t, p, TB_ANTI, HOST, "app", "lim", 0);
    }
    tb_solve(&t);
    validate(&t, &G);
    tb_free(&t);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_batches_valid),
      cmocka_unit_test(test_random_generic_not_worse_than_ffd),
      cmocka_unit_test(test_random_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
