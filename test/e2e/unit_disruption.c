/* unit_disruption.c: the pure parts of termination and disruption, on
 * caches filled by hand (the informers are never started):
 *  - the drain's view of a pod (left alone, waited for, evicted), its tier
 *    and its deadline, and do-not-disrupt as "true" or a duration;
 *  - the emptiness analysis: a NodePool's nodes, those already disrupting,
 *    the budget (a percentage rounded up, "0"), and which NodeClaims are
 *    candidates - not NotReady, marked, nominated, annotated, with a
 *    do-not-disrupt or terminating pod, or recently active - and which of
 *    them are empty (DaemonSet pods do not count). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../internal/disruption/disruption_int.h"
#include "../unit/cache_testlib.h"
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/cluster.h"
#include "carpenter/duration.h"
#include "carpenter/json.h"
#include "carpenter/metrics.h"
#include "carpenter/termination.h"
#include "carpenter/timeutil.h"

struct env {
  uv_loop_t loop;
  struct carp_kube *kube;
  struct carp_cluster *cluster;
  struct carp_metrics *metrics;
  int64_t now;
};

static void del(struct carp_informer *inf, const char *key)
{
  struct carp_objmeta *old = carp_store_remove(carp_informer_store(inf), key);
  if (old)
    carp_obj_unref(old);
}

static void ts(int64_t ms, char out[CARP_RFC3339_LEN])
{
  carp_time_format_rfc3339(ms, 0, out);
}

/* ---- objects ---- */

static char *pod_json(const char *name, const char *node, const char *owner,
                      const char *extra_meta, const char *extra_spec,
                      const char *phase)
{
  char *json = carp_malloc(4096);
  snprintf(json, 4096,
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
           "\"uid\":\"u-%s\",\"resourceVersion\":\"1\","
           "\"creationTimestamp\":\"2026-11-22T10:00:00Z\"%s%s%s%s},"
           "\"spec\":{\"nodeName\":\"%s\"%s,\"containers\":[{\"name\":\"c\","
           "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]},"
           "\"status\":{\"phase\":\"%s\","
           "\"startTime\":\"2026-11-22T10:00:00Z\"}}",
           name, name,
           owner ? ",\"ownerReferences\":[{\"apiVersion\":\"v1\","
                   "\"kind\":\""
                 : "",
           owner ? owner : "",
           owner ? "\",\"name\":\"o\",\"uid\":\"uo\",\"controller\":true}]"
                 : "",
           extra_meta ? extra_meta : "", node, extra_spec ? extra_spec : "",
           phase ? phase : "Running");
  return json;
}

static struct carp_pod *pod(const char *owner, const char *extra_meta,
                            const char *extra_spec, const char *phase)
{
  char *json = pod_json("p", "n1", owner, extra_meta, extra_spec, phase);
  struct carp_pod *p = (struct carp_pod *)cache_decode(&carp_kind_pod, json);
  carp_free(json);
  return p;
}

static void put_pod(struct env *e, const char *name, const char *node,
                    const char *owner, const char *extra_meta)
{
  char *json = pod_json(name, node, owner, extra_meta, NULL, NULL);
  cache_put(e->cluster->pods, &carp_kind_pod, json);
  carp_free(json);
}

static void put_pool(struct env *e, const char *name, const char *after,
                     const char *budget)
{
  char json[2048];
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\","
           "\"resourceVersion\":\"1\",\"generation\":1},"
           "\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":"
           "\"carpenter.dev\",\"kind\":\"ProxmoxNodeClass\",\"name\":"
           "\"default\"},\"requirements\":[]}},\"disruption\":{"
           "\"consolidationPolicy\":\"WhenEmpty\",\"consolidateAfter\":\"%s\","
           "\"budgets\":[{\"nodes\":\"%s\"}]}}}",
           name, name, after, budget);
  cache_put(e->cluster->nodepools, &carp_kind_nodepool, json);
}

/* A NodeClaim initialized `age_ms` ago with its Node (Ready or not). */
static void put_claim(struct env *e, const char *name, const char *pool,
                      int64_t age_ms, int ready, const char *node_ann)
{
  char json[4096], when[CARP_RFC3339_LEN];
  ts(e->now - age_ms, when);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\","
           "\"resourceVersion\":\"1\",\"generation\":1,"
           "\"creationTimestamp\":\"%s\",\"labels\":{"
           "\"karpenter.sh/nodepool\":\"%s\"},\"finalizers\":["
           "\"karpenter.sh/termination\"]},"
           "\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\",\"kind\":"
           "\"ProxmoxNodeClass\",\"name\":\"default\"},\"requirements\":[]},"
           "\"status\":{\"providerID\":\"proxmox://homelab/%s\","
           "\"nodeName\":\"%s\",\"conditions\":["
           "{\"type\":\"Launched\",\"status\":\"True\",\"reason\":\"Launched\","
           "\"message\":\"\",\"lastTransitionTime\":\"%s\"},"
           "{\"type\":\"Registered\",\"status\":\"True\",\"reason\":"
           "\"Registered\",\"message\":\"\",\"lastTransitionTime\":\"%s\"},"
           "{\"type\":\"Initialized\",\"status\":\"True\",\"reason\":"
           "\"Initialized\",\"message\":\"\",\"lastTransitionTime\":\"%s\"}]}}",
           name, name, when, pool, name, name, when, when, when);
  cache_put(e->cluster->nodeclaims, &carp_kind_nodeclaim, json);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"un-%s\","
           "\"resourceVersion\":\"1\",\"labels\":{\"karpenter.sh/nodepool\":"
           "\"%s\"}%s},\"spec\":{\"providerID\":\"proxmox://homelab/%s\"},"
           "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
           "\"%s\"}]}}",
           name, name, pool, node_ann ? node_ann : "", name,
           ready ? "True" : "False");
  cache_put(e->cluster->nodes, &carp_kind_node, json);
}

static int env_open(void **state)
{
  struct env *e = carp_calloc(1, sizeof(*e));
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = (char *)"http://127.0.0.1:1";
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  assert_int_equal(uv_loop_init(&e->loop), 0);
  assert_int_equal(carp_kube_new(&e->loop, &ko, &e->kube), 0);
  e->metrics = carp_metrics_new();
  assert_int_equal(carp_cluster_new(&e->loop, e->kube, e->metrics, &e->cluster),
                   0);
  e->now = carp_time_wall_ms();
  *state = e;
  return 0;
}

static void on_closed(void *arg)
{
  (*(int *)arg)++;
}

static int env_close(void **state)
{
  struct env *e = *state;
  int n = 0;
  carp_cluster_close(e->cluster, on_closed, &n);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  carp_kube_close(e->kube, on_closed, &n);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  assert_int_equal(n, 2);
  assert_int_equal(uv_loop_close(&e->loop), 0);
  carp_metrics_free(e->metrics);
  carp_free(e);
  return 0;
}

/* ---- the drain's view of a pod ---- */

static void test_do_not_disrupt(void **state)
{
  struct carp_pod *p;
  int64_t start;
  (void)state;
  assert_int_equal(carp_time_parse_rfc3339("2026-11-22T10:00:00Z", &start), 0);
  p = pod("ReplicaSet", NULL, NULL, NULL);
  assert_false(carp_pod_do_not_disrupt(p, start));
  carp_obj_unref(&p->meta);
  p = pod("ReplicaSet",
          ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}", NULL,
          NULL);
  assert_true(carp_pod_do_not_disrupt(p, start + 365LL * 86400 * 1000));
  carp_obj_unref(&p->meta);
  /* A duration counts from the pod's start. */
  p = pod("ReplicaSet",
          ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"30m\"}", NULL,
          NULL);
  assert_true(carp_pod_do_not_disrupt(p, start + 29 * 60 * 1000));
  assert_false(carp_pod_do_not_disrupt(p, start + 30 * 60 * 1000));
  carp_obj_unref(&p->meta);
  /* Anything else is ignored. */
  p = pod("ReplicaSet",
          ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"yes\"}", NULL,
          NULL);
  assert_false(carp_pod_do_not_disrupt(p, start));
  carp_obj_unref(&p->meta);
  p = pod("ReplicaSet",
          ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"false\"}", NULL,
          NULL);
  assert_false(carp_pod_do_not_disrupt(p, start));
  carp_obj_unref(&p->meta);
}

static void test_drain_classify(void **state)
{
  struct carp_pod *p;
  int64_t now = carp_time_wall_ms();
  char del[CARP_RFC3339_LEN], meta[256];
  (void)state;
  p = pod("ReplicaSet", NULL, NULL, NULL);
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_EVICT);
  assert_int_equal(carp_drain_tier(p), 0);
  carp_obj_unref(&p->meta);
  p = pod(NULL, NULL, NULL, NULL); /* a bare pod is evicted too */
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_EVICT);
  carp_obj_unref(&p->meta);
  p = pod("DaemonSet", NULL, NULL, NULL);
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_IGNORE);
  carp_obj_unref(&p->meta);
  p = pod("Node", NULL, NULL, NULL); /* static */
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_IGNORE);
  carp_obj_unref(&p->meta);
  p = pod(NULL, ",\"annotations\":{\"kubernetes.io/config.mirror\":\"x\"}",
          NULL, NULL);
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_IGNORE);
  carp_obj_unref(&p->meta);
  p = pod("Job", NULL, NULL, "Succeeded");
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_IGNORE);
  carp_obj_unref(&p->meta);
  /* Tolerating karpenter.sh/disrupted: by key, or everything. */
  p = pod("ReplicaSet", NULL,
          ",\"tolerations\":[{\"key\":\"karpenter.sh/disrupted\","
          "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]",
          NULL);
  assert_true(carp_pod_tolerates_disrupted(p));
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_IGNORE);
  carp_obj_unref(&p->meta);
  p = pod("ReplicaSet", NULL, ",\"tolerations\":[{\"operator\":\"Exists\"}]",
          NULL);
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_IGNORE);
  carp_obj_unref(&p->meta);
  p = pod("ReplicaSet", NULL,
          ",\"tolerations\":[{\"key\":\"other\",\"operator\":\"Exists\"}]",
          NULL);
  assert_false(carp_pod_tolerates_disrupted(p));
  carp_obj_unref(&p->meta);
  /* Terminating: waited for, unless stuck for over a minute. */
  ts(now + 5000, del);
  snprintf(meta, sizeof(meta), ",\"deletionTimestamp\":\"%s\"", del);
  p = pod("ReplicaSet", meta, NULL, NULL);
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_TERMINATING);
  assert_int_equal(carp_drain_classify(p, now + 64000), CARP_DRAIN_TERMINATING);
  assert_int_equal(carp_drain_classify(p, now + 66000), CARP_DRAIN_IGNORE);
  carp_obj_unref(&p->meta);
  /* Critical pods go last. */
  p = pod("ReplicaSet", NULL, ",\"priorityClassName\":\"system-node-critical\"",
          NULL);
  assert_int_equal(carp_drain_tier(p), 1);
  assert_int_equal(carp_drain_classify(p, now), CARP_DRAIN_EVICT);
  carp_obj_unref(&p->meta);
  p = pod("ReplicaSet", NULL,
          ",\"priorityClassName\":\"system-cluster-critical\"", NULL);
  assert_int_equal(carp_drain_tier(p), 1);
  carp_obj_unref(&p->meta);
}

static void test_drain_deadline(void **state)
{
  struct carp_pod *p;
  int64_t deadline = 1800000000000LL;
  (void)state;
  p = pod("ReplicaSet", NULL, NULL, NULL); /* default grace: 30 s */
  assert_true(carp_drain_force_at(p, CARP_DURATION_NEVER) ==
              CARP_DURATION_NEVER);
  assert_true(carp_drain_force_at(p, deadline) == deadline - 30000);
  carp_obj_unref(&p->meta);
  p = pod("ReplicaSet", NULL, ",\"terminationGracePeriodSeconds\":3", NULL);
  assert_true(carp_drain_force_at(p, deadline) == deadline - 3000);
  carp_obj_unref(&p->meta);
  p = pod("ReplicaSet", NULL, ",\"terminationGracePeriodSeconds\":0", NULL);
  assert_true(carp_drain_force_at(p, deadline) == deadline);
  carp_obj_unref(&p->meta);
}

/* ---- the emptiness analysis ---- */

static const struct dis_cand *cand(const struct dis_analysis *a,
                                   const char *name)
{
  size_t i;
  for (i = 0; i < a->ncands; i++)
    if (!strcmp(a->cands[i].nc->meta.name, name))
      return &a->cands[i];
  return NULL;
}

static const struct dis_pool *pool(const struct dis_analysis *a,
                                   const char *name)
{
  size_t i = carp__dis_pool_index(a, name);
  assert_true(i != (size_t)-1);
  return &a->pools[i];
}

#define HOUR (3600LL * 1000)

static void test_budgets_and_candidates(void **state)
{
  struct env *e = *state;
  struct dis_analysis a;
  const struct dis_pool *p;

  put_pool(e, "p", "30s", "50%");
  put_claim(e, "empty", "p", HOUR, 1, NULL); /* only a DaemonSet pod */
  put_claim(e, "busy", "p", HOUR, 1, NULL);  /* a Deployment's pod */
  put_claim(e, "pinned", "p", HOUR, 1,       /* node do-not-disrupt */
            ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}");
  put_claim(e, "sick", "p", HOUR, 0, NULL);  /* NotReady */
  put_claim(e, "young", "p", 5000, 1, NULL); /* initialized 5 s ago */
  put_pod(e, "ds", "empty", "DaemonSet", NULL);
  put_pod(e, "web", "busy", "ReplicaSet", NULL);

  carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
  p = pool(&a, "p");
  assert_int_equal(p->nodes, 5);
  assert_int_equal(p->disrupting, 1);
  assert_int_equal(p->budget[CARP_DISRUPT_EMPTY], 3); /* 50% of 5, rounded up */
  assert_int_equal(p->allowed[CARP_DISRUPT_EMPTY], 2);
  assert_int_equal(a.ncands, 2);
  assert_non_null(cand(&a, "empty"));
  assert_true(cand(&a, "empty")->empty);
  assert_non_null(cand(&a, "busy"));
  assert_false(cand(&a, "busy")->empty);
  assert_null(cand(&a, "pinned"));
  assert_null(cand(&a, "sick"));
  assert_null(cand(&a, "young"));
  assert_int_equal(p->empty, 1);
  carp__dis_analysis_free(&a);

  /* History before the controller became active is unknown. */
  carp__dis_analyze(e->cluster, NULL, e->now, e->now - 10000, &a);
  assert_int_equal(a.ncands, 0);
  carp__dis_analysis_free(&a);

  /* Marked for deletion: disrupting, not a candidate. */
  carp_cluster_mark_for_deletion(e->cluster, "busy");
  carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
  p = pool(&a, "p");
  assert_int_equal(p->disrupting, 2);
  assert_int_equal(p->allowed[CARP_DISRUPT_EMPTY], 1);
  assert_null(cand(&a, "busy"));
  carp__dis_analysis_free(&a);
  carp_cluster_unmark(e->cluster, "busy");

  /* Nominated for a pending pod: left alone. */
  carp_cluster_nominate(e->cluster, "u-pending", "empty", 60000);
  carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
  assert_null(cand(&a, "empty"));
  carp__dis_analysis_free(&a);
  carp_cluster_nominate(e->cluster, "u-pending", "busy", 60000);

  /* A do-not-disrupt pod blocks its node. */
  put_pod(e, "precious", "empty", "ReplicaSet",
          ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}");
  carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
  assert_null(cand(&a, "empty"));
  carp__dis_analysis_free(&a);
  del(e->cluster->pods, "default/precious");

  /* A pod still terminating: not yet empty. */
  {
    char meta[128], when[CARP_RFC3339_LEN];
    ts(e->now + 5000, when);
    snprintf(meta, sizeof(meta), ",\"deletionTimestamp\":\"%s\"", when);
    put_pod(e, "leaving", "empty", "ReplicaSet", meta);
    carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
    assert_null(cand(&a, "empty"));
    carp__dis_analysis_free(&a);
    del(e->cluster->pods, "default/leaving");
  }
  carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
  assert_non_null(cand(&a, "empty"));
  carp__dis_analysis_free(&a);
}

static void test_budget_zero_and_never(void **state)
{
  struct env *e = *state;
  struct dis_analysis a;
  const struct dis_pool *p;

  put_pool(e, "frozen", "1s", "0");
  put_pool(e, "never", "Never", "100%");
  put_pool(e, "few", "1s", "1");
  put_claim(e, "f1", "frozen", HOUR, 1, NULL);
  put_claim(e, "n1", "never", HOUR, 1, NULL);
  put_claim(e, "a1", "few", HOUR, 1, NULL);
  put_claim(e, "a2", "few", HOUR, 1, NULL);
  put_claim(e, "a3", "few", HOUR, 1, NULL);
  put_claim(e, "orphan", "gone", HOUR, 1, NULL); /* no such NodePool */

  carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
  p = pool(&a, "frozen");
  assert_int_equal(p->nodes, 1);
  assert_int_equal(p->budget[CARP_DISRUPT_EMPTY], 0);
  assert_int_equal(p->allowed[CARP_DISRUPT_EMPTY], 0);
  assert_int_equal(p->empty, 1); /* a candidate, that the budget holds */
  assert_null(cand(&a, "n1"));   /* consolidateAfter: Never */
  assert_null(cand(&a, "orphan"));
  p = pool(&a, "few");
  assert_int_equal(p->budget[CARP_DISRUPT_EMPTY], 1);
  assert_int_equal(p->allowed[CARP_DISRUPT_EMPTY], 1);
  assert_int_equal(p->empty, 3);
  carp__dis_analysis_free(&a);

  /* Already one deleting: the budget of 1 is used up. */
  carp_cluster_mark_for_deletion(e->cluster, "a1");
  carp__dis_analyze(e->cluster, NULL, e->now, 0, &a);
  p = pool(&a, "few");
  assert_int_equal(p->disrupting, 1);
  assert_int_equal(p->allowed[CARP_DISRUPT_EMPTY], 0);
  carp__dis_analysis_free(&a);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_do_not_disrupt),
      cmocka_unit_test(test_drain_classify),
      cmocka_unit_test(test_drain_deadline),
      cmocka_unit_test_setup_teardown(test_budgets_and_candidates, env_open,
                                      env_close),
      cmocka_unit_test_setup_teardown(test_budget_zero_and_never, env_open,
                                      env_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
