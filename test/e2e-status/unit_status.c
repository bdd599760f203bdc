/* unit_status.c: the pure parts of the NodePool and ProxmoxNodeClass
 * status controllers - conditions and their reasons, the counter, the
 * status patch with removed resources, the class's regions, zones,
 * templates, bootstrap and hash - and the user-data variable check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../unit/api_testlib.h"
#include "carpenter/nodeclass_controller.h"
#include "carpenter/nodepool_controller.h"

#define NOW 1795000000000LL

#define POOL                                                                   \
  "apiVersion: karpenter.sh/v1\n"                                              \
  "kind: NodePool\n"                                                           \
  "metadata: {name: p, uid: u1, generation: 3}\n"                              \
  "spec:\n"                                                                    \
  "  template:\n"                                                              \
  "    metadata:\n"                                                            \
  "      labels: {%s}\n"                                                       \
  "    spec:\n"                                                                \
  "      nodeClassRef: {group: carpenter.dev, kind: "                          \
  "ProxmoxNodeClass, name: c}\n"                                               \
  "      requirements: []\n"                                                   \
  "%s"

static struct carp_nodepool *pool(const char *labels, const char *status)
{
  char text[4096];
  char *err = NULL;
  struct carp_objmeta *m;
  snprintf(text, sizeof(text), POOL, labels, status);
  m = decode_yaml(&carp_kind_nodepool, text, &err);
  if (!m) {
    fprintf(stderr, "decode: %s\n", err ? err : "?");
    fail();
  }
  return (struct carp_nodepool *)m;
}

static struct carp_nodeclass *nodeclass(const char *extra_meta,
                                        const char *spec, const char *status)
{
  char text[4096];
  char *err = NULL;
  struct carp_objmeta *m;
  snprintf(text, sizeof(text),
           "apiVersion: carpenter.dev/v1alpha1\n"
           "kind: ProxmoxNodeClass\n"
           "metadata: {name: c, uid: u2, generation: 7%s}\n"
           "spec:\n"
           "  template: {name: k3s-agent}\n"
           "%s"
           "%s",
           extra_meta, spec, status);
  m = decode_yaml(&carp_kind_proxmoxnodeclass, text, &err);
  if (!m) {
    fprintf(stderr, "decode: %s\n", err ? err : "?");
    fail();
  }
  return (struct carp_nodeclass *)m;
}

static struct carp_objmeta *claim(const char *name, const char *capacity)
{
  char text[2048];
  char *err = NULL;
  struct carp_objmeta *m;
  snprintf(text, sizeof(text),
           "apiVersion: karpenter.sh/v1\n"
           "kind: NodeClaim\n"
           "metadata: {name: %s, uid: %s-uid, labels: "
           "{karpenter.sh/nodepool: p}}\n"
           "spec:\n"
           "  nodeClassRef: {group: carpenter.dev, kind: ProxmoxNodeClass, "
           "name: c}\n"
           "  requirements: []\n"
           "status: {capacity: {%s}}\n",
           name, name, capacity);
  m = decode_yaml(&carp_kind_nodeclaim, text, &err);
  if (!m) {
    fprintf(stderr, "decode: %s\n", err ? err : "?");
    fail();
  }
  return m;
}

static const struct carp_condition *cond(const struct carp_conditions *c,
                                         const char *type)
{
  const struct carp_condition *x = carp_conditions_get(c, type);
  if (!x) {
    fprintf(stderr, "no condition %s\n", type);
    fail();
  }
  return x;
}

static void assert_cond(const struct carp_conditions *c, const char *type,
                        enum carp_cond_status s, const char *reason)
{
  const struct carp_condition *x = cond(c, type);
  if (x->status != s || strcmp(x->reason, reason)) {
    fprintf(stderr, "%s: got %s/%s, want %s/%s (%s)\n", type,
            carp_cond_status_name(x->status), x->reason,
            carp_cond_status_name(s), reason, x->message);
    fail();
  }
}

/* ---- NodePool ---- */

static int pool_compute(struct carp_nodepool *np, struct carp_nodeclass *cls,
                        struct carp_objmeta **claims, size_t n,
                        struct carp_nodepool_status *st)
{
  carp_nodepool_status_copy(st, &np->status);
  return carp_nodepool_status_compute(np, cls, claims, n, NOW, st);
}

static void test_pool_ready(void **state)
{
  struct carp_nodepool *np = pool("team: a", "");
  struct carp_nodeclass *cls = nodeclass(
      "", "",
      "status:\n  conditions:\n  - {type: Ready, status: 'True', reason: "
      "Ready, message: '', lastTransitionTime: '2026-11-22T10:00:00Z'}\n");
  struct carp_nodepool_status st;
  assert_int_equal(pool_compute(np, cls, NULL, 0, &st), 1);
  assert_cond(&st.conditions, CARP_COND_VALIDATION_SUCCEEDED, CARP_COND_TRUE,
              "ValidationSucceeded");
  assert_cond(&st.conditions, CARP_COND_NODECLASS_READY, CARP_COND_TRUE,
              "NodeClassReady");
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_TRUE, "Ready");
  assert_int_equal(cond(&st.conditions, CARP_COND_READY)->observed_generation,
                   3);
  /* Told by the lifecycle controller; Unknown until then. */
  assert_cond(&st.conditions, CARP_COND_NODE_REG_HEALTHY, CARP_COND_UNKNOWN,
              "AwaitingReconciliation");
  assert_int_equal(st.nodeclass_observed_generation, 7);
  assert_int_equal(st.nodes, 0);
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&np->meta);

  /* The same status again: nothing to write. */
  np = pool("team: a",
            "status:\n"
            "  nodes: 0\n"
            "  resources: {nodes: '0'}\n"
            "  nodeClassObservedGeneration: 7\n"
            "  conditions:\n"
            "  - {type: Ready, status: 'True', reason: Ready, message: '', "
            "lastTransitionTime: '2026-11-22T10:00:00Z', observedGeneration: "
            "3}\n"
            "  - {type: NodeClassReady, status: 'True', reason: "
            "NodeClassReady, message: '', lastTransitionTime: "
            "'2026-11-22T10:00:00Z', observedGeneration: 3}\n"
            "  - {type: ValidationSucceeded, status: 'True', reason: "
            "ValidationSucceeded, message: '', lastTransitionTime: "
            "'2026-11-22T10:00:00Z', observedGeneration: 3}\n"
            "  - {type: NodeRegistrationHealthy, status: 'False', reason: "
            "RegistrationFailed, message: 'Failed to register node', "
            "lastTransitionTime: '2026-11-22T10:00:00Z', observedGeneration: "
            "3}\n");
  assert_int_equal(pool_compute(np, cls, NULL, 0, &st), 0);
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&np->meta);

  /* The class changed since (generation 7 -> 8): the registration health
   * speaks of nodes of the old class, it is Unknown again. */
  np = pool("team: a",
            "status:\n"
            "  nodeClassObservedGeneration: 6\n"
            "  conditions:\n"
            "  - {type: NodeRegistrationHealthy, status: 'False', reason: "
            "RegistrationFailed, message: 'Failed to register node', "
            "lastTransitionTime: '2026-11-22T10:00:00Z', observedGeneration: "
            "3}\n");
  assert_int_equal(pool_compute(np, cls, NULL, 0, &st), 1);
  assert_cond(&st.conditions, CARP_COND_NODE_REG_HEALTHY, CARP_COND_UNKNOWN,
              "AwaitingReconciliation");
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&np->meta);

  /* So does a change of the NodePool (generation 3, told at 2). */
  np = pool("team: a",
            "status:\n"
            "  nodeClassObservedGeneration: 7\n"
            "  conditions:\n"
            "  - {type: NodeRegistrationHealthy, status: 'True', reason: "
            "NodeRegistrationHealthy, message: '', "
            "lastTransitionTime: '2026-11-22T10:00:00Z', observedGeneration: "
            "2}\n");
  assert_int_equal(pool_compute(np, cls, NULL, 0, &st), 1);
  assert_cond(&st.conditions, CARP_COND_NODE_REG_HEALTHY, CARP_COND_UNKNOWN,
              "AwaitingReconciliation");
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&np->meta);
  carp_obj_unref(&cls->meta);
}

static void test_pool_invalid(void **state)
{
  struct carp_nodepool *np = pool("karpenter.sh/custom: x", "");
  struct carp_nodepool_status st;
  const struct carp_condition *c;
  assert_false(np->valid);
  pool_compute(np, NULL, NULL, 0, &st);
  assert_cond(&st.conditions, CARP_COND_VALIDATION_SUCCEEDED, CARP_COND_FALSE,
              CARP_REASON_NODEPOOL_INVALID);
  c = cond(&st.conditions, CARP_COND_VALIDATION_SUCCEEDED);
  assert_non_null(strstr(c->message, "karpenter.sh"));
  /* The first failing dependent names the root's reason. */
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_FALSE,
              CARP_REASON_NODEPOOL_INVALID);
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&np->meta);
}

static void test_pool_class_states(void **state)
{
  struct carp_nodepool *np = pool("team: a", "");
  struct carp_nodepool_status st;
  struct carp_nodeclass *cls;

  pool_compute(np, NULL, NULL, 0, &st);
  assert_cond(&st.conditions, CARP_COND_NODECLASS_READY, CARP_COND_FALSE,
              "NodeClassNotFound");
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_FALSE,
              "NodeClassNotFound");
  assert_int_equal(st.nodeclass_observed_generation, 0);
  carp_nodepool_status_cleanup(&st);

  cls = nodeclass(", deletionTimestamp: '2026-11-22T10:00:00Z', finalizers: "
                  "[x]",
                  "", "");
  pool_compute(np, cls, NULL, 0, &st);
  assert_cond(&st.conditions, CARP_COND_NODECLASS_READY, CARP_COND_FALSE,
              "NodeClassTerminating");
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&cls->meta);

  cls = nodeclass("", "", "");
  pool_compute(np, cls, NULL, 0, &st);
  assert_cond(&st.conditions, CARP_COND_NODECLASS_READY, CARP_COND_UNKNOWN,
              "NodeClassReadinessUnknown");
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_UNKNOWN,
              "NodeClassReadinessUnknown");
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&cls->meta);

  cls = nodeclass("", "",
                  "status:\n  conditions:\n  - {type: Ready, status: 'False', "
                  "reason: Unauthorized, message: 'region r: 401', "
                  "lastTransitionTime: '2026-11-22T10:00:00Z'}\n");
  pool_compute(np, cls, NULL, 0, &st);
  assert_cond(&st.conditions, CARP_COND_NODECLASS_READY, CARP_COND_FALSE,
              "Unauthorized");
  assert_string_equal(cond(&st.conditions, CARP_COND_NODECLASS_READY)->message,
                      "region r: 401");
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&cls->meta);
  carp_obj_unref(&np->meta);
}

static void test_pool_counter_and_patch(void **state)
{
  struct carp_nodepool *np =
      pool("team: a", "status:\n"
                      "  resources: {cpu: '8', memory: 16Gi, nvidia.com/gpu: "
                      "'1', nodes: '3'}\n"
                      "  nodes: 3\n");
  struct carp_objmeta *claims[3];
  struct carp_nodepool_status st;
  struct carp_buf b;
  claims[0] = claim("a", "cpu: '2', memory: 4Gi, pods: '110'");
  claims[1] = claim("b", "cpu: 1500m, memory: 4Gi, pods: '110'");
  claims[2] = claim("c", ""); /* not launched */
  assert_int_equal(pool_compute(np, NULL, claims, 3, &st), 1);
  assert_int_equal(st.nodes, 2);
  assert_int_equal(st.resources.cpu, 3500);
  assert_int_equal(st.resources.memory, 8LL << 30);
  assert_int_equal(st.resources.pods, 220);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_nodepool_status_diff_patch(&np->status, &st, "42", &b),
                   0);
  assert_non_null(strstr(carp_buf_cstr(&b), "\"resourceVersion\":\"42\""));
  assert_non_null(strstr(carp_buf_cstr(&b), "\"cpu\":\"3500m\""));
  assert_non_null(strstr(carp_buf_cstr(&b), "\"memory\":\"8Gi\""));
  assert_non_null(strstr(carp_buf_cstr(&b), "\"pods\":\"220\""));
  assert_non_null(strstr(carp_buf_cstr(&b), "\"nvidia.com/gpu\":null"));
  assert_non_null(strstr(carp_buf_cstr(&b), "\"nodes\":\"2\""));
  assert_non_null(strstr(carp_buf_cstr(&b), "\"nodes\":2"));
  carp_buf_free(&b);
  carp_nodepool_status_cleanup(&st);

  /* Scale to zero: the resources go away, nodes stays. */
  assert_int_equal(pool_compute(np, NULL, NULL, 0, &st), 1);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_nodepool_status_diff_patch(&np->status, &st, NULL, &b);
  assert_non_null(strstr(carp_buf_cstr(&b),
                         "\"resources\":{\"cpu\":null,\"memory\":null,"
                         "\"nvidia.com/gpu\":null,\"nodes\":\"0\"}"));
  assert_null(strstr(carp_buf_cstr(&b), "resourceVersion"));
  carp_buf_free(&b);
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(claims[0]);
  carp_obj_unref(claims[1]);
  carp_obj_unref(claims[2]);
  carp_obj_unref(&np->meta);
}

/* ---- ProxmoxNodeClass ---- */

static const char *const configured[] = {"homelab", "lab2"};

static void facts_init(struct carp_nodeclass_facts *f,
                       const struct carp_nodeclass_region_fact *r, size_t nr,
                       const struct carp_nodeclass_zone_fact *z, size_t nz)
{
  memset(f, 0, sizeof(*f));
  f->regions = r;
  f->nregions = nr;
  f->configured = configured;
  f->nconfigured = 2;
  f->zones = z;
  f->nzones = nz;
}

static int class_compute(struct carp_nodeclass *cls,
                         const struct carp_nodeclass_facts *f,
                         struct carp_nodeclass_status *st)
{
  carp_nodeclass_status_copy(st, &cls->status);
  return carp_nodeclass_status_compute(cls, f, NOW, st);
}

static const struct carp_nodeclass_region_fact OK_REGION[] = {
    {"homelab", 0, ""}};
static const struct carp_nodeclass_zone_fact ZONES[] = {
    {"homelab", "pve2"}, {"homelab", "pve1"}, {"homelab", "pve2"}};

static void test_class_ready(void **state)
{
  struct carp_nodeclass *cls =
      nodeclass("",
                "  instanceTypes:\n"
                "    families: [{name: c1, memoryPerCPU: 2Gi}]\n"
                "    sizes: [2, 4]\n",
                "");
  struct carp_nodeclass_facts f;
  struct carp_nodeclass_status st;
  char hash[CARP_HASH_LEN];
  facts_init(&f, OK_REGION, 1, ZONES, 3);
  assert_int_equal(class_compute(cls, &f, &st), 1);
  assert_cond(&st.conditions, CARP_COND_VALIDATION_SUCCEEDED, CARP_COND_TRUE,
              "ValidationSucceeded");
  assert_cond(&st.conditions, CARP_COND_REGIONS_READY, CARP_COND_TRUE,
              "RegionsReady");
  assert_cond(&st.conditions, CARP_COND_TEMPLATES_READY, CARP_COND_TRUE,
              "TemplatesReady");
  assert_cond(&st.conditions, CARP_COND_BOOTSTRAP_READY, CARP_COND_TRUE,
              "BootstrapReady");
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_TRUE, "Ready");
  assert_int_equal(st.observed_generation, 7);
  assert_int_equal(st.regions.n, 1);
  assert_string_equal(st.regions.v[0], "homelab");
  assert_int_equal(st.zones.n, 2);
  assert_string_equal(st.zones.v[0], "pve1");
  assert_string_equal(st.zones.v[1], "pve2");
  assert_int_equal(st.ninstance_types, 2);
  assert_string_equal(st.instance_types[0].name, "c1.2VCPU-4GB");
  assert_int_equal(st.ntemplates, 0);
  carp_nodeclass_hash(&cls->spec, NULL, 0, hash);
  assert_string_equal(st.spec_hash, hash);
  carp_nodeclass_status_cleanup(&st);
  carp_obj_unref(&cls->meta);
}

static void test_class_regions(void **state)
{
  struct carp_nodeclass *cls = nodeclass("", "", "");
  struct carp_nodeclass_facts f;
  struct carp_nodeclass_status st;
  const struct carp_condition *c;
  struct carp_nodeclass_region_fact r[3] = {
      {"homelab", CARP_EAGAIN, "region homelab: not refreshed yet"},
      {"ghost", CARP_ENOENT, ""},
      {"lab2", CARP_EUNAUTHORIZED, "401 authentication failure"}};

  /* Not refreshed yet: Unknown, and templates wait. */
  facts_init(&f, r, 1, NULL, 0);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_REGIONS_READY, CARP_COND_UNKNOWN,
              CARP_REASON_AWAITING_REFRESH);
  assert_cond(&st.conditions, CARP_COND_TEMPLATES_READY, CARP_COND_UNKNOWN,
              CARP_REASON_REGIONS_NOT_READY);
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_UNKNOWN,
              CARP_REASON_AWAITING_REFRESH);
  assert_int_equal(st.regions.n, 0);
  carp_nodeclass_status_cleanup(&st);

  /* False wins over Unknown; the first False names the reason; every
   * failing region is in the message. */
  facts_init(&f, r, 3, NULL, 0);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_REGIONS_READY, CARP_COND_FALSE,
              "RegionNotConfigured");
  c = cond(&st.conditions, CARP_COND_REGIONS_READY);
  assert_non_null(strstr(c->message, "region ghost is not in --pve-config "
                                     "(configured: homelab, lab2)"));
  assert_non_null(strstr(c->message, "region lab2: 401 authentication"));
  assert_null(strstr(c->message, "not refreshed"));
  carp_nodeclass_status_cleanup(&st);

  facts_init(&f, r + 2, 1, NULL, 0);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_REGIONS_READY, CARP_COND_FALSE,
              "Unauthorized");
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_FALSE, "Unauthorized");
  carp_nodeclass_status_cleanup(&st);

  r[0].status = CARP_ECONNECT;
  r[0].message = "could not connect";
  facts_init(&f, r, 1, NULL, 0);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_REGIONS_READY, CARP_COND_FALSE,
              "RegionUnreachable");
  assert_string_equal(cond(&st.conditions, CARP_COND_REGIONS_READY)->message,
                      "region homelab: could not connect");
  carp_nodeclass_status_cleanup(&st);

  facts_init(&f, NULL, 0, NULL, 0);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_REGIONS_READY, CARP_COND_FALSE,
              "RegionNotConfigured");
  carp_nodeclass_status_cleanup(&st);
  carp_obj_unref(&cls->meta);
}

static void test_class_templates(void **state)
{
  struct carp_nodeclass *cls = nodeclass("", "  zones: [pve7]\n", "");
  struct carp_nodeclass_facts f;
  struct carp_nodeclass_status st;
  const struct carp_condition *c;
  struct carp_nodeclass_template t = {0};
  facts_init(&f, OK_REGION, 1, NULL, 0);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_TEMPLATES_READY, CARP_COND_FALSE,
              "TemplateNotFound");
  c = cond(&st.conditions, CARP_COND_TEMPLATES_READY);
  assert_non_null(strstr(c->message, "among zones [pve7]"));
  assert_non_null(strstr(c->message, "named k3s-agent"));
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_FALSE,
              "TemplateNotFound");
  carp_nodeclass_status_cleanup(&st);

  /* Templates reported by the provider go to the status. */
  t.region = carp_interns("homelab");
  t.zone = carp_interns("pve1");
  t.node = carp_interns("pve1");
  t.name = carp_interns("k3s-agent");
  t.vmid = 9000;
  facts_init(&f, OK_REGION, 1, ZONES, 1);
  f.templates = &t;
  f.ntemplates = 1;
  f.templates_known = 1;
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_TEMPLATES_READY, CARP_COND_TRUE,
              "TemplatesReady");
  assert_int_equal(st.ntemplates, 1);
  assert_int_equal(st.templates[0].vmid, 9000);
  assert_string_equal(st.templates[0].zone, "pve1");
  carp_nodeclass_status_cleanup(&st);
  carp_intern_release(t.region);
  carp_intern_release(t.zone);
  carp_intern_release(t.node);
  carp_intern_release(t.name);
  carp_obj_unref(&cls->meta);
}

static void test_class_bootstrap(void **state)
{
  static const char *ud_spec = "  bootstrap:\n"
                               "    mode: UserData\n"
                               "    userDataSecretRef: {name: s, namespace: "
                               "ns}\n"
                               "    isoStorage: local\n";
  struct carp_nodeclass *cls =
      nodeclass("", ud_spec, "status: {specHash: '123'}\n");
  struct carp_nodeclass_facts f;
  struct carp_nodeclass_status st;
  char h1[CARP_HASH_LEN], h2[CARP_HASH_LEN];
  const char *good = "#cloud-config\nhostname: {{ .NodeName }}\n";

  facts_init(&f, OK_REGION, 1, ZONES, 1);
  f.secret_status = CARP_ENOTFOUND;
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_BOOTSTRAP_READY, CARP_COND_FALSE,
              "UserDataSecretNotFound");
  assert_string_equal(cond(&st.conditions, CARP_COND_BOOTSTRAP_READY)->message,
                      "Secret ns/s not found");
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_FALSE,
              "UserDataSecretNotFound");
  assert_string_equal(st.spec_hash, "123"); /* unknown text: kept */
  carp_nodeclass_status_cleanup(&st);

  f.secret_status = CARP_EFORBIDDEN;
  f.secret_message = "secrets \"s\" is forbidden";
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_BOOTSTRAP_READY, CARP_COND_UNKNOWN,
              CARP_REASON_SECRET_UNREADABLE);
  assert_string_equal(st.spec_hash, "123");
  carp_nodeclass_status_cleanup(&st);

  f.secret_status = 0;
  f.userdata = NULL;
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_BOOTSTRAP_READY, CARP_COND_FALSE,
              "UserDataKeyNotFound");
  carp_nodeclass_status_cleanup(&st);

  f.userdata = "hostname: {{ .Bogus }}";
  f.userdata_len = strlen(f.userdata);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_BOOTSTRAP_READY, CARP_COND_FALSE,
              "UserDataTemplateInvalid");
  assert_non_null(strstr(
      cond(&st.conditions, CARP_COND_BOOTSTRAP_READY)->message, ".Bogus"));
  carp_nodeclass_status_cleanup(&st);

  f.userdata = good;
  f.userdata_len = strlen(good);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_BOOTSTRAP_READY, CARP_COND_TRUE,
              "BootstrapReady");
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_TRUE, "Ready");
  carp_nodeclass_hash(&cls->spec, good, strlen(good), h1);
  carp_nodeclass_hash(&cls->spec, NULL, 0, h2);
  assert_string_equal(st.spec_hash, h1);
  assert_string_not_equal(h1, h2);
  carp_nodeclass_status_cleanup(&st);
  carp_obj_unref(&cls->meta);
}

static void test_class_invalid(void **state)
{
  struct carp_nodeclass *cls =
      nodeclass("", "  instanceTypes: {sizes: [0]}\n", "");
  struct carp_nodeclass_facts f;
  struct carp_nodeclass_status st;
  assert_false(cls->valid);
  facts_init(&f, OK_REGION, 1, ZONES, 1);
  class_compute(cls, &f, &st);
  assert_cond(&st.conditions, CARP_COND_VALIDATION_SUCCEEDED, CARP_COND_FALSE,
              CARP_REASON_INVALID_SPEC);
  assert_cond(&st.conditions, CARP_COND_READY, CARP_COND_FALSE,
              CARP_REASON_INVALID_SPEC);
  carp_nodeclass_status_cleanup(&st);
  carp_obj_unref(&cls->meta);
}

static void test_userdata_check(void **state)
{
  static const struct {
    const char *text;
    int ok;
    const char *bad;
  } cases[] = {
      {"{{ .NodeName }} {{.Zone}} {{\t.VMID\t}}", 1, ""},
      {"{{ v1.local_hostname }} {{ .NodeName | quote }} {{", 1, ""},
      {"{{ .Bogus }}", 0, "Bogus"},
      {"a {{ .ProviderID }} b {{.nodeName}}", 0, "nodeName"},
      {"{{ .Foo", 1, ""},
      {"", 1, ""},
  };
  size_t i;
  char bad[64];
  for (i = 0; i < CARP_ARRAY_LEN(cases); i++) {
    int rc = carp_userdata_check(cases[i].text, strlen(cases[i].text), bad,
                                 sizeof(bad));
    if ((rc == 0) != cases[i].ok || strcmp(bad, cases[i].bad)) {
      fprintf(stderr, "case %zu: rc %d bad '%s'\n", i, rc, bad);
      fail();
    }
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_pool_ready),        LEAK_TEST(test_pool_invalid),
      LEAK_TEST(test_pool_class_states), LEAK_TEST(test_pool_counter_and_patch),
      LEAK_TEST(test_class_ready),       LEAK_TEST(test_class_regions),
      LEAK_TEST(test_class_templates),   LEAK_TEST(test_class_bootstrap),
      LEAK_TEST(test_class_invalid),     cmocka_unit_test(test_userdata_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
