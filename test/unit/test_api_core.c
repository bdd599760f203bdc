/* Unit tests for the cached core models: what a pod, node, PDB and
 * DaemonSet keep, effective requests (init containers, sidecars, overhead),
 * sharing of interned specs and label sets, errors naming the field, and
 * that freeing everything returns the intern tables to where they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"

static struct carp_objmeta *decode(const struct carp_kind *k, const char *text,
                                   char **err)
{
  yajl_val v;
  struct carp_objmeta *m = NULL;
  assert_int_equal(carp_json_parse(text, strlen(text), &v, NULL), 0);
  if (k->decode(v, &m, err))
    m = NULL;
  carp_json_free(v);
  return m;
}

static const char *pod_json =
    "{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\","
    "\"uid\":\"u-1\",\"resourceVersion\":\"42\","
    "\"creationTimestamp\":\"2026-11-22T10:00:00Z\","
    "\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"abc\"},"
    "\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\","
    "\"irrelevant\":\"dropped\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
    "\"ReplicaSet\",\"name\":\"web-abc\",\"uid\":\"rs-1\",\"controller\":true}]"
    "},\"spec\":{"
    "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":"
    "\"500m\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"},\"limits\":{"
    "\"cpu\":\"1\",\"memory\":\"2Gi\"}},\"ports\":[{"
    "\"containerPort\":80,\"hostPort\":8080}]},"
    "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}],"
    "\"initContainers\":[{\"name\":\"big-init\",\"resources\":{\"requests\":"
    "{\"cpu\":\"2\",\"memory\":\"100Mi\"},\"limits\":{\"cpu\":\"3\"}}},"
    "{\"name\":\"sidecar\",\"restartPolicy\":\"Always\",\"resources\":{"
    "\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"},\"limits\":{"
    "\"cpu\":\"200m\"}}}],"
    "\"overhead\":{\"cpu\":\"10m\"},"
    "\"nodeSelector\":{\"kubernetes.io/arch\":\"amd64\"},"
    "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\","
    "\"effect\":\"NoSchedule\"},{\"operator\":\"Exists\"}],"
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
    "Execution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
    "\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[\"pve1\","
    "\"pve2\"]}]}]},\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
    "\"weight\":10,\"preference\":{\"matchExpressions\":[{\"key\":\"x\","
    "\"operator\":\"Exists\"}]}}]},"
    "\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
    "[{\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":{"
    "\"matchLabels\":{\"app\":\"web\"}}}]}},"
    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
    "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
    "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":"
    "\"In\",\"values\":[\"web\"]}]},\"minDomains\":3}],"
    "\"priority\":1000,\"priorityClassName\":\"system-cluster-critical\","
    "\"terminationGracePeriodSeconds\":60},"
    "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
    "\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\","
    "\"lastTransitionTime\":\"2026-11-22T10:00:05Z\"}]}}";

static void test_pod(void **state)
{
  size_t strings = carp_intern_count(), sets = carp_kvset_count();
  struct carp_objmeta *m;
  const struct carp_pod *p;
  const struct carp_podspec *s;

  m = decode(&carp_kind_pod, pod_json, NULL);
  assert_non_null(m);
  p = (const struct carp_pod *)m;
  assert_ptr_equal(m->kind, &carp_kind_pod);
  assert_string_equal(m->name, "web-1");
  assert_string_equal(m->namespace, "default");
  assert_string_equal(m->uid, "u-1");
  assert_string_equal(m->resource_version, "42");
  assert_string_equal(m->key, "default/web-1");
  assert_string_equal(carp_kvset_get(m->labels, "app"), "web");
  assert_string_equal(carp_kvset_get(m->annotations, CARP_ANN_DO_NOT_DISRUPT),
                      "true");
  assert_null(carp_kvset_get(m->annotations, "irrelevant"));
  assert_string_equal(m->owner.kind, "ReplicaSet");
  assert_string_equal(m->owner.uid, "rs-1");
  assert_true(m->owner.controller);
  assert_int_equal(m->creation_ms, 1795341600000LL);
  assert_null(p->node_name);
  assert_true(p->unschedulable);
  assert_int_equal(p->unschedulable_ms, 1795341605000LL);
  assert_int_equal(p->phase, CARP_POD_PENDING);
  assert_false(carp_pod_is_daemon(p));
  assert_true(carp_pod_is_critical(p));

  s = p->spec;
  /* containers: 750m + sidecar 100m = 850m; init: 2000m + 0 sidecars
   * before it = 2000m; max 2000m, plus 10m overhead. Memory: 1Gi + 64Mi vs
   * 100Mi. */
  assert_int_equal(s->requests.cpu, 2010);
  assert_int_equal(s->requests.memory, (1024 + 64) * 1024 * 1024);
  assert_int_equal(s->requests.pods, 1);
  assert_int_equal(s->requests.nextended, 1);
  assert_string_equal(s->requests.extended[0].name, "nvidia.com/gpu");
  assert_int_equal(s->requests.extended[0].value, 1);
  /* Limits the same way: containers 1 + sidecar 0.2 CPU against the init
   * container's 3, plus the 10m overhead (cpu has a limit); memory 2Gi,
   * no overhead for it. */
  assert_int_equal(s->limits.cpu, 3010);
  assert_int_equal(s->limits.memory, 2048LL * 1024 * 1024);
  assert_int_equal(s->limits.pods, 1);
  assert_int_equal(s->limits.nextended, 0);
  assert_string_equal(carp_kvset_get(s->node_selector, "kubernetes.io/arch"),
                      "amd64");
  assert_int_equal(s->nrequired, 1);
  assert_int_equal(s->required[0].n, 1);
  assert_string_equal(s->required[0].reqs[0].key,
                      "topology.kubernetes.io/zone");
  assert_int_equal(s->required[0].reqs[0].op, CARP_OP_IN);
  assert_int_equal(s->required[0].reqs[0].nvalues, 2);
  assert_int_equal(s->npreferred, 1);
  assert_int_equal(s->preferred[0].weight, 10);
  assert_int_equal(s->nanti_affinity, 1);
  assert_string_equal(s->anti_affinity[0].topology_key,
                      "kubernetes.io/hostname");
  assert_true(
      carp_label_selector_matches(&s->anti_affinity[0].selector, m->labels));
  assert_int_equal(s->ntolerations, 2);
  assert_true(s->tolerations[1].exists);
  assert_string_equal(s->tolerations[1].key, "");
  assert_int_equal(s->nspreads, 1);
  assert_int_equal(s->spreads[0].max_skew, 1);
  assert_int_equal(s->spreads[0].min_domains, 3);
  assert_true(s->spreads[0].honor_node_affinity);
  assert_false(s->spreads[0].honor_node_taints);
  assert_int_equal(s->nhost_ports, 1);
  assert_int_equal(s->host_ports[0].port, 8080);
  assert_string_equal(s->host_ports[0].protocol, "TCP");
  assert_int_equal(s->priority, 1000);
  assert_int_equal(s->grace_seconds, 60);

  /* A second pod of the same template shares spec and labels. */
  {
    char *text = carp_strdup(pod_json);
    char *at = strstr(text, "web-1");
    struct carp_objmeta *m2;
    at[4] = '2';
    m2 = decode(&carp_kind_pod, text, NULL);
    carp_free(text);
    assert_non_null(m2);
    assert_ptr_equal(((struct carp_pod *)m2)->spec, s);
    assert_ptr_equal(m2->labels, m->labels);
    assert_ptr_equal(m2->namespace, m->namespace);
    assert_string_equal(m2->name, "web-2");
    carp_obj_unref(m2);
  }
  assert_int_equal(carp_podspec_count(), 1);
  carp_obj_unref(carp_obj_ref(m)); /* balanced ref/unref keeps it */
  assert_string_equal(m->name, "web-1");
  carp_obj_unref(m);
  assert_int_equal(carp_podspec_count(), 0);
  assert_int_equal(carp_intern_count(), strings);
  assert_int_equal(carp_kvset_count(), sets);
}

struct bad {
  const struct carp_kind *kind;
  const char *json;
  const char *want;
};

static void test_errors(void **state)
{
  size_t strings = carp_intern_count(), sets = carp_kvset_count();
  static const struct bad cases[] = {
      {&carp_kind_pod, "{\"spec\":{}}", "metadata.(missing)"},
      {&carp_kind_pod, "{\"metadata\":{\"name\":\"p\"}}", "spec: required"},
      {&carp_kind_pod,
       "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":1}},\"spec\":{}}",
       "metadata.labels"},
      {&carp_kind_pod,
       "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"}},\"spec\":{"
       "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}",
       "spec.containers[0].resources.requests.cpu: not a valid"},
      {&carp_kind_pod,
       "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":[{"
       "\"operator\":\"Maybe\"}]}}",
       "spec.tolerations[0].operator: must be Exists or Equal"},
      {&carp_kind_pod,
       "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"affinity\":{"
       "\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
       "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"k\","
       "\"operator\":\"Gte\",\"values\":[\"1\"]}]}]}}}}}",
       "matchExpressions[0].operator: unsupported value \"Gte\""},
      {&carp_kind_pod,
       "{\"metadata\":{\"name\":\"p\"},\"spec\":{"
       "\"topologySpreadConstraints\":[{\"maxSkew\":0,\"topologyKey\":\"z\","
       "\"whenUnsatisfiable\":\"DoNotSchedule\"}]}}",
       "spec.topologySpreadConstraints[0].maxSkew"},
      {&carp_kind_pod,
       "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"yesterday\"},"
       "\"spec\":{}}",
       "metadata.creationTimestamp"},
      {&carp_kind_node,
       "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"k\","
       "\"effect\":\"Sometimes\"}]}}",
       "spec.taints[0].effect"},
      {&carp_kind_daemonset, "{\"metadata\":{\"name\":\"d\"},\"spec\":{}}",
       "spec.template.spec: required"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *err = NULL;
    struct carp_objmeta *m = decode(cases[i].kind, cases[i].json, &err);
    if (m)
      fail_msg("case %zu decoded but should fail", i);
    if (!err || !strstr(err, cases[i].want))
      fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err ? err : "(none)",
               cases[i].want);
    carp_free(err);
  }
  /* Nothing leaked into the intern tables on the error paths. */
  assert_int_equal(carp_intern_count(), strings);
  assert_int_equal(carp_kvset_count(), sets);
  assert_int_equal(carp_podspec_count(), 0);
}

static void test_node_pdb_daemonset(void **state)
{
  struct carp_objmeta *m;
  const struct carp_node *n;
  const struct carp_pdb *b;
  const struct carp_daemonset *d;
  const struct carp_taint *bad = NULL;
  struct carp_toleration tol = {
      .key = "", .exists = 1, .value = "", .effect = CARP_EFFECT_ANY};

  m = decode(&carp_kind_node,
             "{\"metadata\":{\"name\":\"n1\",\"labels\":{"
             "\"karpenter.sh/nodepool\":\"default\"},\"finalizers\":["
             "\"karpenter.sh/termination\"]},\"spec\":{\"providerID\":"
             "\"proxmox://pve/101\",\"unschedulable\":true,\"taints\":[{"
             "\"key\":\"karpenter.sh/unregistered\",\"effect\":\"NoExecute\"},"
             "{\"key\":\"soft\",\"value\":\"x\",\"effect\":"
             "\"PreferNoSchedule\"}]},\"status\":{\"capacity\":{\"cpu\":\"4\","
             "\"memory\":\"8Gi\",\"pods\":\"110\"},\"allocatable\":{\"cpu\":"
             "\"3900m\",\"memory\":\"7Gi\",\"pods\":\"110\"},\"conditions\":[{"
             "\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":"
             "\"2026-11-22T10:00:00Z\"}]}}",
             NULL);
  assert_non_null(m);
  n = (const struct carp_node *)m;
  assert_null(m->namespace);
  assert_string_equal(n->provider_id, "proxmox://pve/101");
  assert_true(n->unschedulable);
  assert_int_equal(n->ntaints, 2);
  assert_int_equal(n->taints[0].effect, CARP_EFFECT_NO_EXECUTE);
  assert_int_equal(n->capacity.cpu, 4000);
  assert_int_equal(n->allocatable.cpu, 3900);
  assert_int_equal(n->allocatable.memory, 7LL << 30);
  assert_int_equal(n->allocatable.pods, 110);
  assert_int_equal(n->ready.status, 1);
  assert_true(carp_kvset_has(m->finalizers, "karpenter.sh/termination"));
  /* Toleration rules. */
  assert_false(carp_tolerates_all(NULL, 0, n->taints, n->ntaints, 0, &bad));
  assert_string_equal(bad->key, "karpenter.sh/unregistered");
  assert_true(carp_tolerates_all(&tol, 1, n->taints, n->ntaints, 1, NULL));
  carp_obj_unref(m);

  m = decode(&carp_kind_pdb,
             "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"},\"spec\":{"
             "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
             "\"maxUnavailable\":1},\"status\":{\"disruptionsAllowed\":0,"
             "\"currentHealthy\":3,\"desiredHealthy\":3,\"expectedPods\":3}}",
             NULL);
  assert_non_null(m);
  b = (const struct carp_pdb *)m;
  assert_int_equal(b->disruptions_allowed, 0);
  assert_int_equal(b->expected_pods, 3);
  assert_true(b->selector.present);
  carp_obj_unref(m);

  m = decode(&carp_kind_daemonset,
             "{\"metadata\":{\"name\":\"d\",\"namespace\":\"kube-system\"},"
             "\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"k\":\"v\"}},"
             "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{"
             "\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}],\"tolerations\":[{"
             "\"operator\":\"Exists\"}]}}}}",
             NULL);
  assert_non_null(m);
  d = (const struct carp_daemonset *)m;
  assert_int_equal(d->spec->requests.cpu, 100);
  assert_int_equal(d->spec->requests.memory, 128LL << 20);
  assert_string_equal(carp_kvset_get(d->template_labels, "k"), "v");
  carp_obj_unref(m);
}

static void test_selectors_and_tolerations(void **state)
{
  struct carp_kv l1[] = {{"app", "web"}, {"tier", "front"}};
  const struct carp_kvset *labels = carp_kvset_make(l1, 2);
  struct carp_label_selector sel;
  yajl_val v;
  const char *text =
      "{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":"
      "\"tier\",\"operator\":\"NotIn\",\"values\":[\"back\"]},{\"key\":"
      "\"missing\",\"operator\":\"DoesNotExist\"}]}";
  struct carp_taint taint = {
      .key = "k", .value = "v", .effect = CARP_EFFECT_NO_SCHEDULE};
  struct carp_toleration eq = {
      .key = "k", .value = "v", .effect = CARP_EFFECT_NO_SCHEDULE};
  struct carp_toleration other_value = {.key = "k", .value = "w"};
  struct carp_toleration exists_key = {.key = "k", .exists = 1, .value = ""};
  struct carp_toleration wrong_effect = {
      .key = "k", .exists = 1, .value = "", .effect = CARP_EFFECT_NO_EXECUTE};

  assert_int_equal(carp_json_parse(text, strlen(text), &v, NULL), 0);
  assert_int_equal(carp_label_selector_decode(v, "sel", &sel, NULL), 0);
  carp_json_free(v);
  assert_true(carp_label_selector_matches(&sel, labels));
  carp_label_selector_cleanup(&sel);
  /* An absent selector matches nothing; an empty one everything. */
  memset(&sel, 0, sizeof(sel));
  assert_false(carp_label_selector_matches(&sel, labels));
  sel.present = 1;
  assert_true(carp_label_selector_matches(&sel, labels));
  assert_true(carp_label_selector_matches(&sel, NULL));
  carp_kvset_release(labels);

  assert_true(carp_toleration_tolerates(&eq, &taint));
  assert_false(carp_toleration_tolerates(&other_value, &taint));
  assert_true(carp_toleration_tolerates(&exists_key, &taint));
  assert_false(carp_toleration_tolerates(&wrong_effect, &taint));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_node_pdb_daemonset),
      cmocka_unit_test(test_selectors_and_tolerations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
