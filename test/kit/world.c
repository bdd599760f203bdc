/* world.c: a generated cluster in the disruption controller's caches,
 * for the consolidation benchmark (hack/bench/consolidation) and the
 * consolidation property test: nodes of mixed sizes 20-60 % full, pods of
 * mixed sizes from 40 apps, some spread over zones, some under
 * PodDisruptionBudgets, put straight into the informer stores (no server),
 * and a way to carry a disruption command out on them as it was planned
 * (see world.h). */
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/json.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"
#include "carpenter/scheduling.h"
#include "carpenter/timeutil.h"

#define EPOCH_TS "2026-01-01T00:00:00Z"
#define NZONES   3

static const char *zones[NZONES + 1] = {"zone-a", "zone-b", "zone-c", NULL};

/* The instance types: families c (1:2), s (1:4), m (1:8) at 2..32 vCPUs,
 * priced per vCPU and per GiB like a small public cloud. */
static struct carp_fake_instance_type types[32];
static size_t ntypes;
static double cpu_price = 0.025, gib_price = 0.0035;

static void make_types(void)
{
  if (ntypes)
    return;
  static const struct {
    const char *fam;
    int ratio;
  } fams[] = {{"c1", 2}, {"s1", 4}, {"m1", 8}};
  static const int sizes[] = {2, 4, 8, 16, 32};
  static char names[32][32];
  size_t f, s;
  for (f = 0; f < 3; f++)
    for (s = 0; s < 5; s++) {
      struct carp_fake_instance_type *t = &types[ntypes];
      snprintf(names[ntypes], sizeof(names[0]), "%s.%dVCPU-%dGB", fams[f].fam,
               sizes[s], sizes[s] * fams[f].ratio);
      t->name = names[ntypes];
      t->cpu = sizes[s];
      t->memory = (int64_t)sizes[s] * fams[f].ratio << 30;
      t->price = sizes[s] * cpu_price + sizes[s] * fams[f].ratio * gib_price;
      ntypes++;
    }
}

/* ---- the caches ---- */

static void put_json(struct world *w, struct carp_informer *inf,
                     const struct carp_kind *kind, const char *json)
{
  yajl_val v = NULL;
  struct carp_objmeta *m = NULL, *old;
  char *err = NULL;
  if (carp_json_parse(json, strlen(json), &v, &err) ||
      kind->decode(v, &m, &err)) {
    fprintf(stderr, "bench: decode: %s\n%s\n", err ? err : "?", json);
    exit(1);
  }
  carp_json_free(v);
  old = carp_store_put(carp_informer_store(inf), m);
  if (old)
    carp_obj_unref(old);
  (void)w;
}

static void del_obj(struct carp_informer *inf, const char *key)
{
  struct carp_objmeta *old = carp_store_remove(carp_informer_store(inf), key);
  if (old)
    carp_obj_unref(old);
}

static const struct carp_fake_instance_type *type_named(const char *name)
{
  size_t i;
  for (i = 0; i < ntypes; i++)
    if (!strcmp(types[i].name, name))
      return &types[i];
  return NULL;
}

static void add_node(struct world *w, const char *name, const char *type,
                     const char *zone)
{
  const struct carp_fake_instance_type *t = type_named(type);
  char json[4096];
  long long mib = (long long)(t->memory >> 20);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"c-%s\","
           "\"resourceVersion\":\"1\",\"generation\":1,"
           "\"creationTimestamp\":\"" EPOCH_TS "\",\"labels\":{"
           "\"karpenter.sh/nodepool\":\"default\","
           "\"node.kubernetes.io/instance-type\":\"%s\","
           "\"topology.kubernetes.io/zone\":\"%s\","
           "\"karpenter.sh/capacity-type\":\"on-demand\"},"
           "\"finalizers\":[\"karpenter.sh/termination\"]},"
           "\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\",\"kind\":"
           "\"ProxmoxNodeClass\",\"name\":\"default\"},\"requirements\":[]},"
           "\"status\":{\"providerID\":\"proxmox://fake/%s\",\"nodeName\":"
           "\"%s\",\"capacity\":{\"cpu\":\"%d\",\"memory\":\"%lldMi\","
           "\"pods\":\"250\"},\"allocatable\":{\"cpu\":\"%d\",\"memory\":"
           "\"%lldMi\",\"pods\":\"250\"},\"conditions\":["
           "{\"type\":\"Launched\",\"status\":\"True\",\"reason\":\"L\","
           "\"message\":\"\",\"lastTransitionTime\":\"" EPOCH_TS "\"},"
           "{\"type\":\"Registered\",\"status\":\"True\",\"reason\":\"R\","
           "\"message\":\"\",\"lastTransitionTime\":\"" EPOCH_TS "\"},"
           "{\"type\":\"Initialized\",\"status\":\"True\",\"reason\":\"I\","
           "\"message\":\"\",\"lastTransitionTime\":\"" EPOCH_TS "\"}]}}",
           name, name, type, zone, name, name, (int)t->cpu, mib, (int)t->cpu,
           mib);
  put_json(w, w->cluster->nodeclaims, &carp_kind_nodeclaim, json);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"n-%s\","
           "\"resourceVersion\":\"1\",\"labels\":{"
           "\"karpenter.sh/nodepool\":\"default\","
           "\"node.kubernetes.io/instance-type\":\"%s\","
           "\"topology.kubernetes.io/zone\":\"%s\","
           "\"kubernetes.io/hostname\":\"%s\","
           "\"karpenter.sh/capacity-type\":\"on-demand\","
           "\"karpenter.sh/initialized\":\"true\"}},"
           "\"spec\":{\"providerID\":\"proxmox://fake/%s\"},"
           "\"status\":{\"capacity\":{\"cpu\":\"%d\",\"memory\":\"%lldMi\","
           "\"pods\":\"250\"},\"allocatable\":{\"cpu\":\"%d\",\"memory\":"
           "\"%lldMi\",\"pods\":\"250\"},\"conditions\":[{\"type\":\"Ready\","
           "\"status\":\"True\"}]}}",
           name, name, type, zone, name, name, (int)t->cpu, mib, (int)t->cpu,
           mib);
  put_json(w, w->cluster->nodes, &carp_kind_node, json);
  w->nodes++;
}

static void remove_node(struct world *w, const char *name)
{
  del_obj(w->cluster->nodeclaims, name);
  del_obj(w->cluster->nodes, name);
  w->nodes--;
}

/* A pod of app `app` (replicas share requests, labels and spreads). */
struct app {
  int cpu_milli;
  int mem_mi;
  int spread;
  int pdb;
};

static struct app apps[64];
static size_t napps;

static void put_pod(struct world *w, const char *name, size_t app,
                    const char *node)
{
  const struct app *a = &apps[app];
  char json[2048], spread[512] = "";
  if (a->spread)
    snprintf(spread, sizeof(spread),
             ",\"topologySpreadConstraints\":[{\"maxSkew\":%d,"
             "\"topologyKey\":\"topology.kubernetes.io/zone\","
             "\"whenUnsatisfiable\":\"ScheduleAnyway\",\"labelSelector\":{"
             "\"matchLabels\":{\"app\":\"a%zu\"}}}]",
             a->spread, app);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
           "\"uid\":\"p-%s\",\"resourceVersion\":\"1\",\"creationTimestamp\":"
           "\"" EPOCH_TS "\",\"labels\":{\"app\":\"a%zu\"},"
           "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
           "\"ReplicaSet\",\"name\":\"a%zu\",\"uid\":\"rs-%zu\","
           "\"controller\":true}]},\"spec\":{\"nodeName\":\"%s\","
           "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
           "\"cpu\":\"%dm\",\"memory\":\"%dMi\"}}}]%s},"
           "\"status\":{\"phase\":\"Running\",\"startTime\":\"" EPOCH_TS "\"}}",
           name, name, app, app, app, node, a->cpu_milli, a->mem_mi, spread);
  put_json(w, w->cluster->pods, &carp_kind_pod, json);
}

static size_t app_of(const struct carp_pod *p)
{
  const char *v = carp_kvset_get(p->meta.labels, "app");
  return v ? (size_t)strtoul(v + 1, NULL, 10) : 0;
}

/* ---- the cluster to start from ---- */

static uint64_t rnd(struct world *w, uint64_t n)
{
  return carp_rand_below(&w->rng, n);
}

static void build(struct world *w, size_t nnodes, size_t npods,
                  const struct world_options *o)
{
  static const char *node_types[] = {
      "c1.8VCPU-16GB",  "s1.8VCPU-32GB",  "m1.8VCPU-64GB",   "c1.16VCPU-32GB",
      "s1.16VCPU-64GB", "c1.32VCPU-64GB", "s1.32VCPU-128GB", "s1.16VCPU-64GB"};
  double *free_cpu = carp_calloc(nnodes, sizeof(double));
  double *free_mem = carp_calloc(nnodes, sizeof(double));
  double *fill = carp_calloc(nnodes, sizeof(double));
  size_t i, placed = 0, tries = 0;
  char name[64], pod[64];
  put_json(w, w->cluster->nodeclasses, &carp_kind_proxmoxnodeclass,
           "{\"metadata\":{\"name\":\"default\",\"uid\":\"cls\","
           "\"resourceVersion\":\"1\",\"generation\":1},\"spec\":{"
           "\"template\":{\"name\":\"t\",\"scope\":\"PerHost\"},"
           "\"instanceTypes\":{\"families\":[{\"name\":\"c1\","
           "\"memoryPerCPU\":\"2Gi\"}]}},\"status\":{\"conditions\":[{"
           "\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\","
           "\"message\":\"\",\"lastTransitionTime\":\"" EPOCH_TS "\"}]}}");
  {
    char pool[2048];
    snprintf(pool, sizeof(pool),
             "{\"metadata\":{\"name\":\"default\",\"uid\":\"np\","
             "\"resourceVersion\":\"1\",\"generation\":1},\"spec\":{"
             "\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":"
             "\"carpenter.dev\",\"kind\":\"ProxmoxNodeClass\",\"name\":"
             "\"default\"},\"requirements\":[]}},\"disruption\":{"
             "\"consolidationPolicy\":\"%s\","
             "\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"%s\"}]}},"
             "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
             "\"True\",\"reason\":\"Ready\",\"message\":\"\","
             "\"lastTransitionTime\":\"" EPOCH_TS "\"}]}}",
             o->policy ? o->policy : "WhenEmptyOrUnderutilized",
             o->budget ? o->budget : "10%");
    put_json(w, w->cluster->nodepools, &carp_kind_nodepool, pool);
  }
  /* 40 apps: requests 50m-400m CPU, 64Mi-768Mi; a quarter spread over
   * zones; a fifth under a PDB that allows one eviction at a time. */
  napps = 40;
  for (i = 0; i < napps; i++) {
    apps[i].cpu_milli = 50 + (int)rnd(w, 8) * 50;
    apps[i].mem_mi = 64 + (int)rnd(w, 12) * 64;
    apps[i].spread = rnd(w, 4) == 0 ? 2 : 0;
    apps[i].pdb = rnd(w, 5) == 0;
    if (apps[i].pdb) {
      char json[1024];
      snprintf(json, sizeof(json),
               "{\"metadata\":{\"name\":\"a%zu\",\"namespace\":\"default\","
               "\"uid\":\"pdb-%zu\",\"resourceVersion\":\"1\","
               "\"generation\":1},\"spec\":{\"selector\":{\"matchLabels\":{"
               "\"app\":\"a%zu\"}},\"maxUnavailable\":1},\"status\":{"
               "\"disruptionsAllowed\":1,\"currentHealthy\":10,"
               "\"desiredHealthy\":9,\"expectedPods\":10,"
               "\"observedGeneration\":1}}",
               i, i, i);
      put_json(w, w->cluster->pdbs, &carp_kind_pdb, json);
    }
  }
  for (i = 0; i < nnodes; i++) {
    const char *t = node_types[rnd(w, 8)];
    const struct carp_fake_instance_type *it = type_named(t);
    snprintf(name, sizeof(name), "n%05zu", w->next_node++);
    add_node(w, name, t, zones[i % NZONES]);
    free_cpu[i] = it->cpu * 1000.0;
    free_mem[i] = (double)(it->memory >> 20);
    fill[i] = 0.2 + (double)rnd(w, 41) / 100.0; /* 20-60 % */
  }
  /* Pods go to random nodes that stay under their fill target. */
  while (placed < npods && tries < npods * 50) {
    size_t n = rnd(w, nnodes), a = rnd(w, napps);
    const struct carp_fake_instance_type *it;
    char *nm;
    tries++;
    snprintf(name, sizeof(name), "n%05zu", n);
    it = type_named(
        carp_kvset_get(carp_cluster_node(w->cluster, name)->meta.labels,
                       "node.kubernetes.io/instance-type"));
    if (free_cpu[n] - apps[a].cpu_milli < it->cpu * 1000.0 * (1 - fill[n]) ||
        free_mem[n] - apps[a].mem_mi <
            (double)(it->memory >> 20) * (1 - fill[n]) * 0.999)
      continue;
    free_cpu[n] -= apps[a].cpu_milli;
    free_mem[n] -= apps[a].mem_mi;
    snprintf(pod, sizeof(pod), "p%06zu", placed);
    nm = name;
    put_pod(w, pod, a, nm);
    placed++;
  }
  w->pods = placed;
  carp_free(free_cpu);
  carp_free(free_mem);
  carp_free(fill);
}

/* ---- figures ---- */

double world_price(struct world *w)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  double sum = 0;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(w->cluster->nodes), &it))) {
    const struct carp_fake_instance_type *t = type_named(
        carp_kvset_get(m->labels, "node.kubernetes.io/instance-type"));
    sum += t ? t->price : 0;
  }
  return sum;
}

double world_lower_bound(struct world *w)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  double cpu = 0, mem = 0, per_cpu = 1e9, per_gib = 1e9;
  size_t i;
  for (i = 0; i < ntypes; i++) {
    double pc = types[i].price / types[i].cpu;
    double pg = types[i].price / (double)(types[i].memory >> 30);
    if (pc < per_cpu)
      per_cpu = pc;
    if (pg < per_gib)
      per_gib = pg;
  }
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(w->cluster->pods), &it))) {
    const struct carp_pod *p = (const struct carp_pod *)m;
    cpu += (double)p->spec->requests.cpu / 1000.0;
    mem += (double)p->spec->requests.memory / (double)(1LL << 30);
  }
  return fmax(cpu * per_cpu, mem * per_gib);
}

/* ---- carrying a command out ---- */

/* Carries a command out as the simulation planned it: the replacement
 * becomes a node of its cheapest option, each moved pod lands where the
 * plan put it, the candidates go. Returns the pods the plan left out. */
size_t world_apply(struct world *w, const struct dis_analysis *a,
                   const struct dis_command *cmd)
{
  struct move {
    char *name;
    size_t app;
    char *target;
  } *mv = carp_calloc(cmd->plan.nmoves + 1, sizeof(*mv));
  char repl[64] = "";
  size_t i, j, k, n, nmv = 0, missing = 0;
  if (cmd->plan.decision == DIS_REPLACE) {
    char type[96];
    const char *comma = strchr(cmd->plan.repl.types, ',');
    snprintf(type, sizeof(type), "%.*s",
             (int)(comma ? (size_t)(comma - cmd->plan.repl.types)
                         : strlen(cmd->plan.repl.types)),
             cmd->plan.repl.types);
    snprintf(repl, sizeof(repl), "n%05zu", w->next_node++);
    add_node(w, repl, type, zones[w->next_node % NZONES]);
  }
  for (i = 0; i < cmd->ncands; i++) {
    struct carp_objmeta *const *pods = carp_cluster_pods_on_node(
        w->cluster, a->cands[cmd->cands[i]].node->meta.name, &n);
    for (j = 0; j < n; j++) {
      const struct carp_pod *p = (const struct carp_pod *)pods[j];
      for (k = 0; k < cmd->plan.nmoves; k++)
        if (!strcmp(cmd->plan.moves[k].pod_uid, p->meta.uid))
          break;
      if (k == cmd->plan.nmoves) {
        missing++;
        continue;
      }
      if (cmd->plan.moves[k].node) {
        /* A plan that puts a pod back on a node it removes places it
         * nowhere. */
        size_t c;
        for (c = 0; c < cmd->ncands; c++)
          if (!strcmp(cmd->plan.moves[k].node,
                      a->cands[cmd->cands[c]].node->meta.name))
            break;
        if (c < cmd->ncands) {
          missing++;
          continue;
        }
      }
      mv[nmv].name = carp_strdup(p->meta.name);
      mv[nmv].app = app_of(p);
      mv[nmv].target =
          carp_strdup(cmd->plan.moves[k].node ? cmd->plan.moves[k].node : repl);
      nmv++;
    }
  }
  {
    char **gone = carp_calloc(cmd->ncands + 1, sizeof(char *));
    for (i = 0; i < cmd->ncands; i++)
      gone[i] = carp_strdup(a->cands[cmd->cands[i]].node->meta.name);
    for (i = 0; i < cmd->ncands; i++) {
      remove_node(w, gone[i]);
      carp_free(gone[i]);
    }
    carp_free(gone);
  }
  for (i = 0; i < nmv; i++) {
    put_pod(w, mv[i].name, mv[i].app, mv[i].target);
    carp_free(mv[i].name);
    carp_free(mv[i].target);
  }
  carp_free(mv);
  return missing;
}

/* ---- life ---- */

struct world *world_new(const struct world_options *o)
{
  struct world *w = CARP_NEW(struct world);
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct carp_fake_provider_options po;
  make_types();
  uv_loop_init(&w->loop);
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = (char *)"http://127.0.0.1:1";
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  w->metrics = carp_metrics_new();
  carp_kube_new(&w->loop, &ko, &w->kube);
  carp_cluster_new(&w->loop, w->kube, w->metrics, &w->cluster);
  memset(&po, 0, sizeof(po));
  po.zones = zones;
  po.types = types;
  po.ntypes = ntypes;
  carp_fake_provider_new(&w->loop, &po, &w->provider);
  carp_rand_seed(&w->rng, o->seed);
  build(w, o->nodes, o->pods, o);
  return w;
}

static void closed(void *arg)
{
  (*(int *)arg)--;
}

void world_free(struct world *w)
{
  int n = 2;
  carp_cluster_close(w->cluster, closed, &n);
  carp_provider_close(w->provider, closed, &n);
  while (n > 0)
    uv_run(&w->loop, UV_RUN_ONCE);
  n = 1;
  carp_kube_close(w->kube, closed, &n);
  while (n > 0)
    uv_run(&w->loop, UV_RUN_ONCE);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_loop_close(&w->loop);
  carp_metrics_free(w->metrics);
  carp_free(w);
}

int64_t world_now(void)
{
  int64_t t = 0;
  carp_time_parse_rfc3339(EPOCH_TS, &t);
  return t + 3600 * 1000;
}

int world_node_load(struct world *w, const char *node, struct world_load *out)
{
  const struct carp_node *n = carp_cluster_node(w->cluster, node);
  struct carp_objmeta *const *pods;
  size_t np, i;
  memset(out, 0, sizeof(*out));
  if (!n)
    return -1;
  out->cpu_cap = n->allocatable.cpu;
  out->mem_cap = n->allocatable.memory >> 20;
  out->pods_cap = n->allocatable.pods;
  pods = carp_cluster_pods_on_node(w->cluster, node, &np);
  for (i = 0; i < np; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    out->cpu += p->spec->requests.cpu;
    out->mem += p->spec->requests.memory >> 20;
    out->pods++;
  }
  return 0;
}

double world_type_price(const char *name)
{
  const struct carp_fake_instance_type *t = type_named(name);
  return t ? t->price : -1;
}
