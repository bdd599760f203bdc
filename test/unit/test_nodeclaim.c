/* Unit tests for NodeClaim: decoding a claim as Carpenter creates it and
 * with a status, validation rules particular to claims (the nodepool key
 * is allowed, requests are quantities), "spec is immutable", the create
 * body stamped from a NodePool (labels, annotations with the hash,
 * ownerReference, finalizer, spec) decoded back, and the status patch
 * round trip with canonical quantities. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_testlib.h"
#include "carpenter/api_encode.h"
#include "carpenter/duration.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodepool.h"

#define GiB (1024LL * 1024 * 1024)

static struct carp_nodeclaim *claim_file(const char *rel)
{
  char path[1024];
  char *text, *err = NULL;
  struct carp_objmeta *m;
  source_path(path, sizeof(path), rel);
  text = read_text(path);
  m = decode_yaml(&carp_kind_nodeclaim, text, &err);
  carp_free(text);
  if (!m)
    fprintf(stderr, "%s\n", err);
  assert_non_null(m);
  return (struct carp_nodeclaim *)m;
}

static void test_decode(void **state)
{
  struct carp_nodeclaim *nc = claim_file("test/crds/nodeclaim.yaml");
  const struct carp_claim_spec *s = &nc->spec;
  assert_true(nc->valid);
  assert_ptr_equal(nc->meta.kind, &carp_kind_nodeclaim);
  assert_string_equal(nc->meta.name, "default-x7k2p");
  assert_string_equal(carp_nodeclaim_nodepool(nc), "default");
  assert_string_equal(
      carp_kvset_get(nc->meta.annotations, CARP_ANN_NODEPOOL_HASH_VER), "v3");
  assert_string_equal(s->node_class_ref.name, "default");
  assert_int_equal(s->nrequirements, 3);
  assert_string_equal(s->requirements[0].key, "karpenter.sh/nodepool");
  assert_int_equal(s->requirements[1].nvalues, 2);
  assert_int_equal(s->requests.cpu, 1500);
  assert_int_equal(s->requests.memory, 3 * GiB);
  assert_int_equal(s->requests.pods, 7);
  assert_int_equal(s->expire_after_ms, 720LL * 3600 * 1000);
  assert_int_equal(s->termination_grace_ms, 2LL * 3600 * 1000);
  assert_null(nc->status.provider_id);
  assert_int_equal(nc->status.conditions.n, 0);
  carp_obj_unref(&nc->meta);
}

static const char claim_with_status[] =
    "metadata: {name: c1, uid: u1, resourceVersion: '9', labels: "
    "{karpenter.sh/nodepool: p}}\n"
    "spec: {nodeClassRef: {group: carpenter.dev, kind: ProxmoxNodeClass, "
    "name: d}, requirements: [{key: karpenter.sh/nodepool, operator: In, "
    "values: [p]}]}\n"
    "status:\n  providerID: proxmox://homelab/20017\n  nodeName: c1\n"
    "  imageID: homelab/9000\n"
    "  capacity: {cpu: '2', memory: 7944Mi, ephemeral-storage: 32Gi, pods: "
    "'110'}\n  allocatable: {cpu: 1900m, memory: 7588Mi, pods: '110'}\n"
    "  lastPodEventTime: '2026-01-02T03:04:05Z'\n"
    "  conditions:\n"
    "    - {type: Launched, status: 'True', reason: Launched, message: '', "
    "lastTransitionTime: '2026-01-02T03:00:00Z'}\n"
    "    - {type: Registered, status: Unknown, reason: NodeNotFound, "
    "message: '', lastTransitionTime: '2026-01-02T03:00:00Z'}\n";

static void test_status_round_trip(void **state)
{
  struct carp_nodeclaim *nc = (struct carp_nodeclaim *)decode_yaml(
      &carp_kind_nodeclaim, claim_with_status, NULL);
  struct carp_nodeclaim_status st;
  struct carp_buf b, doc;
  struct carp_nodeclaim *back;
  yajl_val v;

  assert_non_null(nc);
  assert_true(nc->valid);
  assert_string_equal(nc->status.provider_id, "proxmox://homelab/20017");
  assert_string_equal(nc->status.node_name, "c1");
  assert_string_equal(nc->status.image_id, "homelab/9000");
  assert_int_equal(nc->status.capacity.cpu, 2000);
  assert_int_equal(nc->status.capacity.memory, 7944LL * 1024 * 1024);
  assert_int_equal(nc->status.allocatable.cpu, 1900);
  assert_int_equal(nc->status.last_pod_event_ms, 1767323045000LL);
  assert_true(carp_conditions_is(&nc->status.conditions, "Registered",
                                 CARP_COND_UNKNOWN));

  carp_nodeclaim_status_copy(&st, &nc->status);
  carp_conditions_set(&st.conditions, &carp_condset_nodeclaim,
                      CARP_COND_REGISTERED, CARP_COND_TRUE, NULL, NULL, 1,
                      1767323045000LL);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(
      carp_nodeclaim_status_patch(&st, nc->meta.resource_version, &b), 0);
  /* Quantities are canonical strings, never JSON numbers. */
  assert_non_null(strstr(carp_buf_cstr(&b),
                         "\"capacity\":{\"cpu\":\"2\",\"ephemeral-storage\":"
                         "\"32Gi\",\"memory\":\"7944Mi\",\"pods\":\"110\"},"
                         "\"allocatable\":{\"cpu\":\"1900m\",\"memory\":"
                         "\"7588Mi\",\"pods\":\"110\"}"));
  assert_non_null(strstr(carp_buf_cstr(&b),
                         "{\"metadata\":{\"resourceVersion\":\"9\"},"
                         "\"status\":{\"providerID\":\"proxmox://homelab/"
                         "20017\",\"nodeName\":\"c1\",\"imageID\":"
                         "\"homelab/9000\""));
  assert_non_null(strstr(carp_buf_cstr(&b),
                         "\"lastPodEventTime\":\"2026-01-02T03:04:05Z\""));

  carp_buf_init(&doc, CARP_BUF_UNLIMITED);
  carp_buf_printf(&doc, "{\"metadata\":{\"name\":\"c1\"},%s",
                  strstr(carp_buf_cstr(&b), "\"status\""));
  v = json_of(carp_buf_cstr(&doc));
  back = (struct carp_nodeclaim *)decode_json(&carp_kind_nodeclaim, v, NULL);
  carp_json_free(v);
  assert_non_null(back);
  assert_string_equal(back->status.provider_id, nc->status.provider_id);
  assert_string_equal(back->status.image_id, nc->status.image_id);
  assert_int_equal(back->status.capacity.memory, nc->status.capacity.memory);
  assert_int_equal(back->status.capacity.ephemeral, 32 * GiB);
  assert_int_equal(back->status.allocatable.cpu, 1900);
  assert_int_equal(back->status.last_pod_event_ms, 1767323045000LL);
  assert_int_equal(back->status.conditions.n, 3); /* + Ready */
  assert_true(carp_conditions_is(&back->status.conditions, "Registered",
                                 CARP_COND_TRUE));
  assert_true(
      carp_conditions_is(&back->status.conditions, "Ready", CARP_COND_UNKNOWN));
  carp_obj_unref(&back->meta);
  carp_buf_free(&doc);
  carp_buf_free(&b);
  carp_nodeclaim_status_cleanup(&st);
  carp_obj_unref(&nc->meta);
}

#define CLAIM(S) "metadata: {name: c}\nspec: " S "\n"
#define REF                                                                    \
  "nodeClassRef: {group: carpenter.dev, kind: ProxmoxNodeClass, name: d}"

static void test_validation(void **state)
{
  static const struct {
    const char *yaml, *want;
  } cases[] = {
      {CLAIM("{" REF ", requirements: [{key: karpenter.sh/nodepool, "
             "operator: In, values: [p]}]}"),
       NULL},
      {CLAIM("{" REF ", requirements: [{key: carpenter.dev/proxmoxnodeclass, "
             "operator: In, values: [d]}]}"),
       NULL},
      {CLAIM("{" REF ", requirements: [{key: kubernetes.io/hostname, "
             "operator: In, values: [h]}]}"),
       "spec.requirements[0].key: Invalid value: \"string\": label "
       "\"kubernetes.io/hostname\" is restricted"},
      {CLAIM("{" REF ", requirements: [{key: karpenter.sh/other, operator: "
             "Exists}]}"),
       "spec.requirements[0].key: Invalid value: \"string\": label domain "
       "\"karpenter.sh\" is restricted"},
      {CLAIM("{" REF ", requirements: [{key: a, operator: In}]}"),
       "spec.requirements: Invalid value: \"array\": requirements with "
       "operator 'In' must have a value defined"},
      {CLAIM("{requirements: []}"), "spec.nodeClassRef: Required value"},
      {CLAIM("{" REF "}"), "spec.requirements: Required value"},
      {CLAIM("{" REF ", requirements: [], resources: {requests: {cpu: 1500m, "
             "memory: 3Gi, pods: 7}}}"),
       NULL},
      {CLAIM("{" REF ", requirements: [], resources: {requests: {cpu: "
             "much}}}"),
       "spec.resources.requests[cpu]: Invalid value: \"much\": should match"},
      {CLAIM("{" REF ", requirements: [], resources: {requests: {cpu: "
             "'-1'}}}"),
       "spec.resources.requests[cpu]: Invalid value: \"-1\": should be "
       "greater than or equal to 0"},
      {CLAIM("{" REF ", requirements: [], expireAfter: 1w}"),
       "spec.expireAfter: Invalid value: \"1w\": should match"},
      {"metadata: {name: c}\n", "spec: Required value"},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    yajl_val v = yaml_json(cases[i].yaml);
    char *reason = NULL;
    int rc = carp_nodeclaim_validate(v, &reason);
    if (!cases[i].want) {
      if (rc)
        fprintf(stderr, "case %zu: %s\n", i, reason);
      assert_int_equal(rc, 0);
    } else {
      assert_int_equal(rc, CARP_EINVALID);
      assert_one_problem(reason, cases[i].want);
    }
    carp_free(reason);
    carp_json_free(v);
  }
}

static void test_immutable(void **state)
{
  struct carp_nodeclaim *a = (struct carp_nodeclaim *)decode_yaml(
      &carp_kind_nodeclaim,
      CLAIM("{" REF ", requirements: [{key: a, operator: In, values: [x, "
            "y]}]}"),
      NULL);
  struct carp_nodeclaim *same = (struct carp_nodeclaim *)decode_yaml(
      &carp_kind_nodeclaim,
      CLAIM("{" REF ", expireAfter: 720h, requirements: [{key: a, operator: "
            "In, values: [x, y]}]}"),
      NULL);
  struct carp_nodeclaim *other = (struct carp_nodeclaim *)decode_yaml(
      &carp_kind_nodeclaim,
      CLAIM("{" REF ", requirements: [{key: a, operator: In, values: [y, "
            "x]}]}"),
      NULL);
  struct carp_nodeclaim *taint = (struct carp_nodeclaim *)decode_yaml(
      &carp_kind_nodeclaim,
      CLAIM("{" REF ", taints: [{key: t, effect: NoSchedule}], requirements: "
            "[{key: a, operator: In, values: [x, y]}]}"),
      NULL);
  char *reason = NULL;
  assert_non_null(a);
  assert_int_equal(carp_nodeclaim_validate_update(a, same, &reason), 0);
  assert_null(reason);
  assert_int_equal(carp_nodeclaim_validate_update(a, other, &reason),
                   CARP_EINVALID);
  assert_string_equal(reason, "spec: Invalid value: \"object\": spec is "
                              "immutable");
  carp_free(reason);
  assert_int_equal(carp_nodeclaim_validate_update(a, taint, NULL),
                   CARP_EINVALID);
  carp_obj_unref(&a->meta);
  carp_obj_unref(&same->meta);
  carp_obj_unref(&other->meta);
  carp_obj_unref(&taint->meta);
}

static void test_create(void **state)
{
  char path[1024];
  char *text;
  struct carp_nodepool *np;
  struct carp_nodeclaim *nc;
  struct carp_nodeclaim_create in;
  struct carp_requirement reqs[2];
  const char *families[] = {"s1"}, *types[] = {"s1.2VCPU-8GB", "s1.4VCPU-16GB"};
  struct carp_resources requests;
  struct carp_kv extra_labels[] = {{"example.com/team", "a"}};
  struct carp_kv extra_anns[] = {{CARP_ANN_MIN_VALUES_RELAXED, "false"}};
  struct carp_buf b;
  yajl_val v;
  char *reason = NULL;
  const struct carp_claim_spec *s;

  source_path(path, sizeof(path), "test/crds/karpenter-user-nodepool.yaml");
  text = read_text(path);
  /* Give the pool a uid, as the API server would. */
  {
    struct carp_buf t;
    const char *at = strstr(text, "  name: default");
    assert_non_null(at);
    carp_buf_init(&t, CARP_BUF_UNLIMITED);
    carp_buf_append(&t, text, (size_t)(at - text));
    carp_buf_puts(&t, "  uid: pool-uid-1\n");
    carp_buf_puts(&t, at);
    np = (struct carp_nodepool *)decode_yaml(&carp_kind_nodepool,
                                             carp_buf_cstr(&t), NULL);
    carp_buf_free(&t);
  }
  carp_free(text);
  assert_non_null(np);
  assert_true(np->valid);

  memset(reqs, 0, sizeof(reqs));
  reqs[0].key = "carpenter.dev/instance-family";
  reqs[0].op = CARP_OP_IN;
  reqs[0].nvalues = 1;
  reqs[0].values = families;
  reqs[1].key = "node.kubernetes.io/instance-type";
  reqs[1].op = CARP_OP_IN;
  reqs[1].nvalues = 2;
  reqs[1].values = types;
  reqs[1].min_values = 2;
  memset(&requests, 0, sizeof(requests));
  requests.cpu = 1500;
  requests.memory = 3 * GiB;
  requests.pods = 7;
  memset(&in, 0, sizeof(in));
  in.pool = np;
  in.name = "default-abcde";
  in.requirements = reqs;
  in.nrequirements = 2;
  in.requests = &requests;
  in.labels = extra_labels;
  in.nlabels = 1;
  in.annotations = extra_anns;
  in.nannotations = 1;

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_nodeclaim_encode_create(&in, &b), 0);
  v = json_of(carp_buf_cstr(&b));
  /* What Carpenter creates passes the CRD's rules. */
  if (carp_nodeclaim_validate(v, &reason))
    fprintf(stderr, "%s\n", reason);
  assert_null(reason);
  assert_string_equal(carp_json_str(v, "apiVersion", NULL), "karpenter.sh/v1");
  assert_string_equal(carp_json_str(v, "kind", NULL), "NodeClaim");
  {
    yajl_val owners = carp_json_arr(v, "metadata", "ownerReferences", NULL);
    yajl_val fin = carp_json_arr(v, "metadata", "finalizers", NULL);
    int block = 0;
    assert_int_equal(carp_json_len(owners), 1);
    assert_string_equal(
        carp_json_str(carp_json_at(owners, 0), "apiVersion", NULL),
        "karpenter.sh/v1");
    assert_string_equal(carp_json_str(carp_json_at(owners, 0), "kind", NULL),
                        "NodePool");
    assert_string_equal(carp_json_str(carp_json_at(owners, 0), "uid", NULL),
                        "pool-uid-1");
    assert_int_equal(carp_json_bool(carp_json_at(owners, 0), &block,
                                    "blockOwnerDeletion", NULL),
                     0);
    assert_true(block);
    assert_int_equal(carp_json_len(fin), 1);
    assert_string_equal(carp_json_at(fin, 0)->u.string,
                        "karpenter.sh/termination");
    assert_string_equal(
        carp_json_str(v, "spec", "resources", "requests", "memory", NULL),
        "3Gi");
    assert_string_equal(
        carp_json_str(v, "spec", "resources", "requests", "cpu", NULL),
        "1500m");
  }
  nc = (struct carp_nodeclaim *)decode_json(&carp_kind_nodeclaim, v, NULL);
  carp_json_free(v);
  assert_non_null(nc);
  assert_true(nc->valid);
  assert_string_equal(nc->meta.name, "default-abcde");
  assert_string_equal(nc->meta.owner.name, "default");
  assert_string_equal(nc->meta.owner.uid, "pool-uid-1");
  assert_true(carp_kvset_has(nc->meta.finalizers, CARP_FINALIZER_TERMINATION));
  assert_string_equal(carp_nodeclaim_nodepool(nc), "default");
  assert_string_equal(carp_kvset_get(nc->meta.labels, CARP_LABEL_NODECLASS_KEY),
                      "default");
  assert_string_equal(carp_kvset_get(nc->meta.labels, "billing-team"),
                      "my-team");
  assert_string_equal(carp_kvset_get(nc->meta.labels, "example.com/team"), "a");
  /* Only karpenter.sh/ and carpenter.dev/ annotations are kept. */
  assert_string_equal(
      carp_kvset_get(nc->meta.annotations, CARP_ANN_NODEPOOL_HASH), np->hash);
  assert_string_equal(
      carp_kvset_get(nc->meta.annotations, CARP_ANN_NODEPOOL_HASH_VER),
      CARP_NODEPOOL_HASH_VERSION);
  assert_string_equal(
      carp_kvset_get(nc->meta.annotations, CARP_ANN_MIN_VALUES_RELAXED),
      "false");
  assert_int_equal(carp_nodepool_hash_check(np, nc), CARP_HASH_MATCH);
  s = &nc->spec;
  assert_ptr_equal(s->node_class_ref.name, np->tmpl.node_class_ref.name);
  assert_int_equal(s->nrequirements, 3);
  assert_string_equal(s->requirements[1].key,
                      "node.kubernetes.io/instance-type");
  assert_int_equal(s->requirements[1].min_values, 2);
  assert_string_equal(s->requirements[2].key, "karpenter.sh/nodepool");
  assert_string_equal(s->requirements[2].values[0], "default");
  assert_int_equal(s->ntaints, 1);
  assert_string_equal(s->taints[0].key, "example.com/special-taint");
  assert_int_equal(s->nstartup_taints, 1);
  assert_int_equal(s->expire_after_ms, 720LL * 3600 * 1000);
  assert_int_equal(s->termination_grace_ms, 48LL * 3600 * 1000);
  assert_int_equal(s->requests.cpu, 1500);
  assert_int_equal(s->requests.memory, 3 * GiB);
  assert_int_equal(s->requests.pods, 7);
  carp_obj_unref(&nc->meta);

  /* generateName when no name is given; no TGP when the pool has none. */
  carp_buf_reset(&b);
  in.name = NULL;
  in.nrequirements = 0;
  in.requests = NULL;
  assert_int_equal(carp_nodeclaim_encode_create(&in, &b), 0);
  v = json_of(carp_buf_cstr(&b));
  assert_string_equal(carp_json_str(v, "metadata", "generateName", NULL),
                      "default-");
  assert_null(carp_json_get(v, "metadata", "name", NULL));
  assert_int_equal(
      carp_json_len(carp_json_arr(v, "spec", "requirements", NULL)), 1);
  carp_json_free(v);
  carp_obj_unref(&np->meta);

  np = (struct carp_nodepool *)decode_yaml(
      &carp_kind_nodepool,
      "metadata: {name: p}\nspec: {template: {spec: {nodeClassRef: {group: "
      "carpenter.dev, kind: ProxmoxNodeClass, name: d}, requirements: []}}}\n",
      NULL);
  in.pool = np;
  carp_buf_reset(&b);
  /* The API server gives every pool a uid; without one, refuse. */
  assert_int_equal(carp_nodeclaim_encode_create(&in, &b), CARP_EINVAL);
  carp_obj_unref(&np->meta);
  carp_buf_free(&b);
}

static void test_quantities(void **state)
{
  static const struct {
    const char *name;
    int64_t value;
    const char *want;
  } q[] = {
      {"cpu", 1500, "1500m"},
      {"cpu", 2000, "2"},
      {"cpu", 0, "0"},
      {"memory", 8 * GiB, "8Gi"},
      {"memory", 1536LL * 1024 * 1024, "1536Mi"},
      {"memory", 1000000000, "1000000000"},
      {"ephemeral-storage", 32 * GiB, "32Gi"},
      {"pods", 110, "110"},
      {"nodes", 3000, "3k"},
      {"nvidia.com/gpu", 2, "2"},
      {"hugepages-2Mi", 2 * 1024 * 1024, "2Mi"},
  };
  size_t i;
  for (i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
    char out[32];
    carp_resource_quantity_format(q[i].name, q[i].value, out);
    assert_string_equal(out, q[i].want);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_decode),     LEAK_TEST(test_status_round_trip),
      LEAK_TEST(test_validation), LEAK_TEST(test_immutable),
      LEAK_TEST(test_create),     LEAK_TEST(test_quantities),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
