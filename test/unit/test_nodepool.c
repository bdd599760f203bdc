/* Unit tests for NodePool: every validation rule of the CRD (schema, CEL,
 * Karpenter's runtime checks) table-driven with its edge cases, update
 * rules, decoding with defaults and without, errors for wrong JSON types,
 * limits that tell "absent" from 0, the template hash (stable under
 * reordering, blind to requirements and disruption), hash stamps, and the
 * status patch round trip. Every test checks that the intern tables are
 * back where they started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_testlib.h"
#include "carpenter/duration.h"
#include "carpenter/nodepool.h"

#define HDR "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: t}\n"
#define REF                                                                    \
  "nodeClassRef: {group: carpenter.dev, kind: ProxmoxNodeClass, name: "        \
  "default}"
/* A template spec with one requirement (R) and extra fields (X). */
#define TSPEC(R, X)  "{" REF ", requirements: [" R "]" X "}"
#define POOL(R, X)   HDR "spec: {template: {spec: " TSPEC(R, X) "}}\n"
#define POOL_SPEC(S) HDR "spec: {template: {spec: " TSPEC("", "") "}" S "}\n"
#define POOL_META(M)                                                           \
  HDR "spec: {template: {metadata: " M ", spec: " TSPEC("", "") "}}\n"
#define RQ(key, op, vals) "{key: " key ", operator: " op vals "}"
#define BUDGETS(B)                                                             \
  POOL_SPEC(", disruption: {consolidateAfter: 1m, budgets: [" B "]}")

/* want: NULL for valid; else the one problem expected, or, after a
 * leading '+', one of several. */
struct vcase {
  const char *yaml;
  const char *want;
};

static const struct vcase cases[] = {
    /* the minimal pool */
    {POOL("", ""), NULL},
    /* spec, template, template.spec, requirements, nodeClassRef required */
    {HDR "metadata2: x\n", "spec: Required value"},
    {HDR "spec: {weight: 1}\n", "spec.template: Required value"},
    {HDR "spec: {template: {metadata: {}}}\n",
     "spec.template.spec: Required value"},
    {HDR "spec: {template: {spec: {" REF "}}}\n",
     "spec.template.spec.requirements: Required value"},
    {HDR "spec: {template: {spec: {requirements: []}}}\n",
     "spec.template.spec.nodeClassRef: Required value"},
    {HDR "spec: {template: {spec: {requirements: [], nodeClassRef: {group: "
         "carpenter.dev, kind: ProxmoxNodeClass}}}}\n",
     "spec.template.spec.nodeClassRef.name: Required value"},
    {HDR "spec: {template: {spec: {requirements: [], nodeClassRef: {group: "
         "'', kind: ProxmoxNodeClass, name: x}}}}\n",
     "spec.template.spec.nodeClassRef.group: Invalid value: \"string\": group "
     "may not be empty"},
    {HDR "spec: {template: {spec: {requirements: [], nodeClassRef: {group: "
         "a, kind: '', name: x}}}}\n",
     "spec.template.spec.nodeClassRef.kind: Invalid value: \"string\": kind "
     "may not be empty"},
    {HDR "spec: {template: {spec: {requirements: [], nodeClassRef: {group: "
         "a, kind: K, name: ''}}}}\n",
     "spec.template.spec.nodeClassRef.name: Invalid value: \"string\": name "
     "may not be empty"},
    {HDR "spec: {template: {spec: {requirements: [], nodeClassRef: {group: "
         "a/b, kind: K, name: x}}}}\n",
     "spec.template.spec.nodeClassRef.group: Invalid value: \"a/b\": should "
     "match '^[^/]*$'"},
    /* operators */
    {POOL(RQ("a", "Equals", ", values: [x]"), ""),
     "spec.template.spec.requirements[0].operator: Unsupported value: "
     "\"Equals\": supported values: \"In\", \"NotIn\", \"Exists\", "
     "\"DoesNotExist\", \"Gt\", \"Lt\", \"Gte\", \"Lte\""},
    {POOL("{key: a}", ""),
     "spec.template.spec.requirements[0].operator: Required value"},
    {POOL("{operator: Exists}", ""),
     "spec.template.spec.requirements[0].key: Required value"},
    {POOL(RQ("a", "In", ""), ""),
     "spec.template.spec.requirements: Invalid value: \"array\": requirements "
     "with operator 'In' must have a value defined"},
    {POOL(RQ("a", "In", ", values: []"), ""),
     "requirements with operator 'In' must have a value defined"},
    {POOL(RQ("a", "NotIn", ""), ""), NULL},
    {POOL(RQ("a", "Exists", ""), ""), NULL},
    {POOL(RQ("a", "DoesNotExist", ""), ""), NULL},
    {POOL(RQ("a", "Gt", ", values: [four]"), ""),
     "spec.template.spec.requirements: Invalid value: \"array\": requirements "
     "operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive "
     "integer value"},
    /* "-1" also breaks the values pattern. */
    {POOL(RQ("a", "Lt", ", values: ['-1']"), ""),
     "+must have a single positive integer value"},
    {POOL(RQ("a", "Gte", ", values: ['1', '2']"), ""),
     "must have a single positive integer value"},
    {POOL(RQ("a", "Lte", ""), ""), "must have a single positive integer value"},
    {POOL(RQ("a", "Gt", ", values: ['99999999999999999999']"), ""),
     "must have a single positive integer value"},
    {POOL(RQ("a", "Lte", ", values: ['0']"), ""), NULL},
    {POOL(RQ("a", "Gt", ", values: ['05']"), ""), NULL},
    {POOL(RQ("a", "Gte", ", values: ['+5']"), ""),
     "spec.template.spec.requirements[0].values[0]: Invalid value: \"+5\": "
     "should match"},
    /* minValues */
    {POOL(RQ("a", "In", ", values: [x, y], minValues: 3"), ""),
     "spec.template.spec.requirements: Invalid value: \"array\": requirements "
     "with 'minValues' must have at least that many values specified in the "
     "'values' field"},
    {POOL(RQ("a", "In", ", values: [x, y], minValues: 2"), ""), NULL},
    {POOL(RQ("a", "Exists", ", minValues: 5"), ""), NULL},
    {POOL(RQ("a", "In", ", values: [x], minValues: 0"), ""),
     "spec.template.spec.requirements[0].minValues: Invalid value: 0: should "
     "be greater than or equal to 1"},
    {POOL(RQ("a", "Exists", ", minValues: 51"), ""),
     "minValues: Invalid value: 51: should be less than or equal to 50"},
    /* restricted requirement keys */
    {POOL(RQ("karpenter.sh/team", "Exists", ""), ""),
     "spec.template.spec.requirements[0].key: Invalid value: \"string\": "
     "label domain \"karpenter.sh\" is restricted"},
    {POOL(RQ("sub.karpenter.sh/x", "Exists", ""), ""),
     "label domain \"karpenter.sh\" is restricted"},
    {POOL(RQ("karpenter.sh/capacity-type", "In", ", values: [on-demand]"), ""),
     NULL},
    {POOL(RQ("karpenter.sh/nodepool", "In", ", values: [a]"), ""),
     "spec.template.spec.requirements[0].key: Invalid value: \"string\": "
     "label \"karpenter.sh/nodepool\" is restricted"},
    {POOL(RQ("kubernetes.io/hostname", "In", ", values: [a]"), ""),
     "spec.template.spec.requirements[0].key: Invalid value: \"string\": "
     "label \"kubernetes.io/hostname\" is restricted"},
    {POOL(RQ("carpenter.dev/foo", "Exists", ""), ""),
     "spec.template.spec.requirements[0].key: Invalid value: \"string\": "
     "label domain \"carpenter.dev\" is restricted"},
    {POOL(RQ("x.carpenter.dev/foo", "Exists", ""), ""),
     "label domain \"carpenter.dev\" is restricted"},
    {POOL(RQ("carpenter.dev/instance-cpu", "Gt", ", values: ['2']"), ""), NULL},
    {POOL(RQ("carpenter.dev/proxmoxnodeclass", "In", ", values: [d]"), ""),
     NULL},
    {POOL(RQ("node.kubernetes.io/instance-type", "In", ", values: [x]"), ""),
     NULL},
    {POOL(RQ("karpenter.k8s.aws/instance-family", "Exists", ""), ""), NULL},
    {POOL(RQ("'bad key'", "Exists", ""), ""),
     "spec.template.spec.requirements[0].key: Invalid value: \"bad key\": "
     "should match"},
    {POOL(RQ("a234567890123456789012345678901234567890123456789012345678901234",
             "Exists", ""),
          ""),
     "spec.template.spec.requirements[0].key: Invalid value: "
     "\"a234567890123456789012345678901234567890123456789012345678901234\": "
     "name part must be no more than 63 characters"},
    {POOL(RQ("a", "In",
             ", values: "
             "[a234567890123456789012345678901234567890123456789012345678901234"
             "]"),
          ""),
     "spec.template.spec.requirements[0].values[0]: Too long: may not be more "
     "than 63 bytes"},
    {POOL(RQ("a", "In", ", values: ['-x']"), ""),
     "spec.template.spec.requirements[0].values[0]: Invalid value: \"-x\": "
     "should match"},
    /* template labels */
    {POOL_META("{labels: {karpenter.sh/team: a}}"),
     "spec.template.metadata.labels: Invalid value: \"object\": label domain "
     "\"karpenter.sh\" is restricted"},
    {POOL_META("{labels: {karpenter.sh/nodepool: a}}"),
     "spec.template.metadata.labels: Invalid value: \"object\": label "
     "\"karpenter.sh/nodepool\" is restricted"},
    {POOL_META("{labels: {kubernetes.io/hostname: a}}"),
     "spec.template.metadata.labels: Invalid value: \"object\": label "
     "\"kubernetes.io/hostname\" is restricted"},
    {POOL_META("{labels: {carpenter.dev/proxmoxnodeclass: a}}"),
     "spec.template.metadata.labels: Invalid value: \"object\": label domain "
     "\"carpenter.dev\" is restricted"},
    {POOL_META("{labels: {carpenter.dev/instance-family: s1, "
               "karpenter.sh/capacity-type: on-demand, team: a}}"),
     NULL},
    {POOL_META("{labels: {team: 'bad value'}}"),
     "spec.template.metadata.labels[team]: Invalid value: \"bad value\": "
     "should match"},
    {POOL_META(
         "{labels: {team: "
         "a234567890123456789012345678901234567890123456789012345678901234}"
         "}"),
     "spec.template.metadata.labels[team]: Too long: may not be more than 63 "
     "bytes"},
    {POOL_META("{labels: {'bad key': a}}"),
     "spec.template.metadata.labels[bad key]: Invalid value: \"bad key\": name "
     "part must consist of"},
    {POOL_META("{labels: {team: ''}}"), NULL},
    {POOL_META("{annotations: {example.com/owner: team, x: '1'}}"), NULL},
    /* taints */
    {POOL("", ", taints: [{key: a, value: b, effect: NoSchedule}], "
              "startupTaints: [{key: c, effect: NoExecute}]"),
     NULL},
    {POOL("", ", taints: [{key: a, effect: Sometimes}]"),
     "spec.template.spec.taints[0].effect: Unsupported value: \"Sometimes\""},
    {POOL("", ", taints: [{effect: NoSchedule}]"),
     "spec.template.spec.taints[0].key: Required value"},
    {POOL("", ", startupTaints: [{key: a}]"),
     "spec.template.spec.startupTaints[0].effect: Required value"},
    {POOL("", ", taints: [{key: a, value: 'b c', effect: NoSchedule}]"),
     "spec.template.spec.taints[0].value: Invalid value: \"b c\": should "
     "match"},
    {POOL("", ", taints: [{key: a, effect: NoSchedule}], startupTaints: [{key: "
              "a, effect: NoSchedule}]"),
     "spec.template.spec.startupTaints[0]: Invalid value: \"object\": "
     "duplicate taint Key/Effect pair a=NoSchedule"},
    {POOL("", ", taints: [{key: a, effect: NoSchedule}, {key: a, effect: "
              "NoExecute}]"),
     NULL},
    {POOL("", ", taints: [{key: a, effect: NoSchedule, timeAdded: yesterday}]"),
     "spec.template.spec.taints[0].timeAdded: Invalid value: \"yesterday\": "
     "should be a date-time"},
    /* durations */
    {POOL("", ", expireAfter: 30d"),
     "spec.template.spec.expireAfter: Invalid value: \"30d\": should match "
     "'^(([0-9]+(s|m|h))+|Never)$'"},
    {POOL("", ", expireAfter: Never"), NULL},
    {POOL("", ", expireAfter: 1h30m"), NULL},
    {POOL("", ", expireAfter: 1.5h"), "expireAfter: Invalid value: \"1.5h\""},
    {POOL("", ", terminationGracePeriod: Never"),
     "spec.template.spec.terminationGracePeriod: Invalid value: \"Never\": "
     "should match '^([0-9]+(s|m|h))+$'"},
    {POOL("", ", terminationGracePeriod: 48h"), NULL},
    /* Every duration field refuses a value that overflows, the same way. */
    {POOL("", ", expireAfter: 99999999999999999999h"),
     "spec.template.spec.expireAfter: Invalid value: "
     "\"99999999999999999999h\": duration out of range"},
    {POOL("", ", terminationGracePeriod: 99999999999999999999h"),
     "spec.template.spec.terminationGracePeriod: Invalid value: "
     "\"99999999999999999999h\": duration out of range"},
    {POOL_SPEC(", disruption: {consolidateAfter: 99999999999999999999h}"),
     "spec.disruption.consolidateAfter: Invalid value: "
     "\"99999999999999999999h\": duration out of range"},
    {BUDGETS("{nodes: '1', schedule: '@daily', "
             "duration: 99999999999999999999h}"),
     "spec.disruption.budgets[0].duration: Invalid value: "
     "\"99999999999999999999h\": duration out of range"},
    {BUDGETS("{nodes: '1', schedule: '@daily', duration: 1h30m}"), NULL},
    /* disruption */
    {POOL_SPEC(", disruption: {consolidationPolicy: WhenEmpty}"),
     "spec.disruption.consolidateAfter: Required value"},
    {POOL_SPEC(", disruption: {consolidateAfter: Never}"), NULL},
    {POOL_SPEC(", disruption: {consolidateAfter: 1d}"),
     "spec.disruption.consolidateAfter: Invalid value: \"1d\": should match"},
    {POOL_SPEC(", disruption: {consolidateAfter: 0s, consolidationPolicy: "
               "Sometimes}"),
     "spec.disruption.consolidationPolicy: Unsupported value: \"Sometimes\": "
     "supported values: \"WhenEmpty\", \"WhenEmptyOrUnderutilized\", "
     "\"Balanced\""},
    {POOL_SPEC(", disruption: {consolidateAfter: 0s, consolidationPolicy: "
               "Balanced}"),
     NULL},
    /* budgets */
    {BUDGETS("{nodes: '110%'}"),
     "spec.disruption.budgets[0].nodes: Invalid value: \"110%\": should match "
     "'^((100|[0-9]{1,2})%|[0-9]+)$'"},
    {BUDGETS("{nodes: '100%'}, {nodes: '0'}, {nodes: '5'}, {nodes: '7%'}, {}"),
     NULL},
    {BUDGETS("{nodes: '10.5%'}"), "budgets[0].nodes: Invalid value: \"10.5%\""},
    {BUDGETS("{nodes: '-1'}"), "budgets[0].nodes: Invalid value: \"-1\""},
    {BUDGETS("{nodes: '0', schedule: '@daily'}"),
     "spec.disruption.budgets: Invalid value: \"array\": 'schedule' must be "
     "set with 'duration'"},
    {BUDGETS("{nodes: '0', duration: 10m}"),
     "'schedule' must be set with 'duration'"},
    {BUDGETS("{nodes: '0', schedule: '@daily', duration: 10m}, {nodes: '0', "
             "schedule: '0 8 * * mon-fri', duration: 10h}"),
     NULL},
    {BUDGETS("{nodes: '0', schedule: '61 * * * *', duration: 1h}"),
     "spec.disruption.budgets[0].schedule: Invalid value: \"61 * * * *\": not "
     "a valid cron schedule: end of range (61) above maximum (59)"},
    {BUDGETS("{nodes: '0', schedule: '@every 5m', duration: 1h}"),
     "spec.disruption.budgets[0].schedule: Invalid value: \"@every 5m\": "
     "should match"},
    {BUDGETS("{nodes: '0', schedule: '* * * *', duration: 1h}"),
     "spec.disruption.budgets[0].schedule: Invalid value: \"* * * *\": should "
     "match"},
    {BUDGETS("{nodes: '0', schedule: '@daily', duration: 30s}"),
     "spec.disruption.budgets[0].duration: Invalid value: \"30s\": should "
     "match '^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$'"},
    {BUDGETS("{nodes: '0', schedule: '@daily', duration: 1h30m}, {nodes: '0', "
             "schedule: '@hourly', duration: 90m0s}"),
     NULL},
    {BUDGETS("{nodes: '1', reasons: [Empty, Drifted, Underutilized]}"), NULL},
    {BUDGETS("{nodes: '1', reasons: [Empty, Sometimes]}"),
     "spec.disruption.budgets[0].reasons[1]: Unsupported value: \"Sometimes\""},
    {BUDGETS("{nodes: '1', reasons: [Empty, Empty]}"),
     "spec.disruption.budgets[0].reasons[1]: Duplicate value: \"Empty\""},
    /* limits, weight, replicas */
    {POOL_SPEC(", limits: {cpu: '64', memory: 256Gi, nodes: 10, "
               "nvidia.com/gpu: '2'}"),
     NULL},
    {POOL_SPEC(", limits: {cpu: '-10'}"),
     "spec.limits[cpu]: Invalid value: \"-10\": should be greater than or "
     "equal to 0"},
    {POOL_SPEC(", limits: {memory: -1Gi}"),
     "spec.limits[memory]: Invalid value: \"-1Gi\": should be greater than "
     "or equal to 0"},
    {POOL_SPEC(", limits: {cpu: '0'}"), NULL},
    {POOL_SPEC(", limits: {cpu: lots}"),
     "spec.limits[cpu]: Invalid value: \"lots\": should match"},
    {POOL_SPEC(", limits: {cpu: [1]}"),
     "spec.limits[cpu]: Invalid value: \"array\": must be of type integer or "
     "string"},
    {POOL_SPEC(", weight: 101"),
     "spec.weight: Invalid value: 101: should be less than or equal to 100"},
    {POOL_SPEC(", weight: 0"),
     "spec.weight: Invalid value: 0: should be greater than or equal to 1"},
    {POOL_SPEC(", weight: '50'"),
     "spec.weight: Invalid value: \"string\": must be of type integer"},
    {POOL_SPEC(", weight: 100"), NULL},
    {POOL_SPEC(", replicas: -1"),
     "spec.replicas: Invalid value: -1: should be greater than or equal to 0"},
    {POOL_SPEC(", replicas: 3, limits: {nodes: '5'}"), NULL},
    {POOL_SPEC(", replicas: 0"), NULL},
    {POOL_SPEC(", replicas: 3, limits: {cpu: '5'}"),
     "spec: Invalid value: \"object\": only 'limits.nodes' is supported on "
     "static NodePools"},
    {POOL_SPEC(", replicas: 3, weight: 10"),
     "spec: Invalid value: \"object\": 'weight' is not supported on static "
     "NodePools"},
    /* type errors */
    {HDR "spec: {template: {spec: {" REF ", requirements: x}}}\n",
     "spec.template.spec.requirements: Invalid value: \"string\": must be of "
     "type array"},
    {HDR "spec: []\n",
     "spec: Invalid value: \"array\": must be of type object"},
};

static void test_validation_table(void **state)
{
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    yajl_val v = yaml_json(cases[i].yaml);
    char *reason = NULL;
    int rc = carp_nodepool_validate(v, &reason);
    if (!cases[i].want) {
      if (rc) {
        fprintf(stderr, "case %zu: want valid, got: %s\n", i, reason);
        fail();
      }
      assert_null(reason);
    } else {
      if (rc != CARP_EINVALID)
        fprintf(stderr, "case %zu: want invalid (%s)\n", i, cases[i].want);
      assert_int_equal(rc, CARP_EINVALID);
      assert_one_problem(reason, cases[i].want);
    }
    carp_free(reason);
    carp_json_free(v);
  }
}

/* Limits on the number of items and properties. */
static void test_validation_sizes(void **state)
{
  struct carp_buf b;
  yajl_val v;
  char *reason = NULL;
  int i;

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_puts(&b, HDR "spec: {template: {spec: {" REF ", requirements: [");
  for (i = 0; i < 101; i++)
    carp_buf_printf(&b, "%s{key: k%d, operator: Exists}", i ? ", " : "", i);
  carp_buf_puts(&b, "]}}}\n");
  v = yaml_json(carp_buf_cstr(&b));
  assert_int_equal(carp_nodepool_validate(v, &reason), CARP_EINVALID);
  assert_one_problem(reason, "spec.template.spec.requirements: Too many: 101: "
                             "must have at most 100 items");
  carp_free(reason);
  carp_json_free(v);

  carp_buf_reset(&b);
  carp_buf_puts(&b, HDR "spec: {template: {metadata: {labels: {");
  for (i = 0; i < 101; i++)
    carp_buf_printf(&b, "%sl%d: v", i ? ", " : "", i);
  carp_buf_puts(&b, "}}, spec: {" REF ", requirements: []}}}\n");
  v = yaml_json(carp_buf_cstr(&b));
  assert_int_equal(carp_nodepool_validate(v, &reason), CARP_EINVALID);
  assert_one_problem(reason, "spec.template.metadata.labels: Too many: 101: "
                             "must have at most 100 items");
  carp_free(reason);
  carp_json_free(v);

  carp_buf_reset(&b);
  carp_buf_puts(&b, HDR "spec: {template: {spec: {" REF
                        ", requirements: []}}, disruption: {consolidateAfter: "
                        "0s, budgets: [");
  for (i = 0; i < 51; i++)
    carp_buf_printf(&b, "%s{nodes: '1'}", i ? ", " : "");
  carp_buf_puts(&b, "]}}\n");
  v = yaml_json(carp_buf_cstr(&b));
  assert_int_equal(carp_nodepool_validate(v, &reason), CARP_EINVALID);
  assert_one_problem(reason, "spec.disruption.budgets: Too many: 51: must have "
                             "at most 50 items");
  carp_free(reason);
  carp_json_free(v);

  /* A huge schedule is refused as too long, quickly (POSIX regular
   * expressions are not linear on it). */
  carp_buf_reset(&b);
  carp_buf_puts(&b, HDR "spec: {template: {spec: {" REF
                        ", requirements: []}}, disruption: {consolidateAfter: "
                        "0s, budgets: [{nodes: '1', duration: 1h, schedule: '");
  for (i = 0; i < 100000; i++)
    carp_buf_putc(&b, 'a');
  carp_buf_puts(&b, "'}]}}\n");
  v = yaml_json(carp_buf_cstr(&b));
  assert_int_equal(carp_nodepool_validate(v, &reason), CARP_EINVALID);
  assert_one_problem(reason, "spec.disruption.budgets[0].schedule: Too long: "
                             "may not be more than 4096 bytes");
  carp_free(reason);
  carp_json_free(v);
  carp_buf_free(&b);
}

/* Several problems are all reported, and past 16 summarised. */
static void test_validation_many(void **state)
{
  struct carp_buf b;
  yajl_val v;
  char *reason = NULL;
  int i;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_puts(&b, HDR "spec: {weight: 500, template: {spec: {" REF
                        ", requirements: [");
  for (i = 0; i < 20; i++)
    carp_buf_printf(&b, "%s{key: k%d, operator: Bad}", i ? ", " : "", i);
  carp_buf_puts(&b, "]}}}\n");
  v = yaml_json(carp_buf_cstr(&b));
  assert_int_equal(carp_nodepool_validate(v, &reason), CARP_EINVALID);
  assert_non_null(strstr(reason, "requirements[0].operator: Unsupported"));
  assert_non_null(strstr(reason, "; and 5 more"));
  carp_free(reason);
  carp_json_free(v);
  carp_buf_free(&b);
}

static struct carp_nodepool *pool_of(const char *yaml)
{
  char *err = NULL;
  struct carp_objmeta *m = decode_yaml(&carp_kind_nodepool, yaml, &err);
  if (!m)
    fprintf(stderr, "decode: %s\n", err);
  assert_non_null(m);
  return (struct carp_nodepool *)m;
}

static void test_defaults(void **state)
{
  struct carp_nodepool *np = pool_of(POOL("", ""));
  int64_t v;
  assert_true(np->valid);
  assert_null(np->invalid_reason);
  assert_ptr_equal(np->meta.kind, &carp_kind_nodepool);
  assert_string_equal(np->meta.name, "t");
  assert_int_equal(np->tmpl.expire_after_ms, 720LL * 3600 * 1000);
  assert_int_equal(np->tmpl.termination_grace_ms, CARP_DURATION_NEVER);
  assert_string_equal(np->tmpl.node_class_ref.group, "carpenter.dev");
  assert_string_equal(np->tmpl.node_class_ref.kind, "ProxmoxNodeClass");
  assert_string_equal(np->tmpl.node_class_ref.name, "default");
  assert_int_equal(np->consolidation_policy,
                   CARP_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED);
  assert_int_equal(np->consolidate_after_ms, 0);
  assert_int_equal(np->nbudgets, 1);
  assert_string_equal(np->budgets[0].nodes, "10%");
  assert_true(np->budgets[0].nodes_ok);
  assert_true(np->budgets[0].percent);
  assert_int_equal(np->budgets[0].value, 10);
  assert_null(np->budgets[0].schedule);
  assert_int_equal(np->budgets[0].reasons, 0);
  assert_int_equal(np->weight, 0);
  assert_false(np->has_replicas);
  assert_false(carp_nodepool_limit(np, "cpu", &v));
  assert_false(carp_nodepool_limit(np, "nodes", &v));
  assert_int_equal(np->status.nodes, 0);
  assert_int_equal(np->status.conditions.n, 0);
  carp_obj_unref(&np->meta);

  /* The same pool with every default written out reads the same. */
  np = pool_of(HDR "spec:\n  template:\n    spec:\n      " REF
                   "\n      requirements: []\n      expireAfter: 720h\n"
                   "  disruption:\n    consolidationPolicy: "
                   "WhenEmptyOrUnderutilized\n    consolidateAfter: 0s\n"
                   "    budgets: [{nodes: '10%'}]\n");
  assert_true(np->valid);
  {
    struct carp_nodepool *d = pool_of(POOL("", ""));
    assert_string_equal(np->hash, d->hash);
    assert_int_equal(np->nbudgets, d->nbudgets);
    assert_int_equal(np->budgets[0].value, d->budgets[0].value);
    carp_obj_unref(&d->meta);
  }
  carp_obj_unref(&np->meta);

  /* An explicit empty budget list means no budget at all. */
  np = pool_of(BUDGETS(""));
  assert_int_equal(np->nbudgets, 0);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 10, 0),
      CARP_BUDGET_UNLIMITED);
  carp_obj_unref(&np->meta);
}

static void test_decode_example(void **state)
{
  char path[1024];
  char *text;
  struct carp_nodepool *np;
  int64_t v;
  const struct carp_requirement *r;

  source_path(path, sizeof(path), "crds/examples/nodepool-batch.yaml");
  text = read_text(path);
  np = pool_of(text);
  carp_free(text);
  assert_true(np->valid);
  assert_string_equal(np->meta.name, "batch");
  assert_int_equal(np->weight, 50);
  assert_string_equal(carp_kvset_get(np->labels, "workload-class"), "batch");
  assert_int_equal(np->tmpl.ntaints, 1);
  assert_string_equal(np->tmpl.taints[0].key, "workload-class");
  assert_string_equal(np->tmpl.taints[0].value, "batch");
  assert_int_equal(np->tmpl.taints[0].effect, CARP_EFFECT_NO_SCHEDULE);
  assert_int_equal(np->tmpl.nrequirements, 3);
  r = &np->tmpl.requirements[1];
  assert_string_equal(r->key, "carpenter.dev/instance-cpu");
  assert_int_equal(r->op, CARP_OP_GTE);
  assert_int_equal(r->nvalues, 1);
  assert_string_equal(r->values[0], "4");
  assert_int_equal(np->tmpl.expire_after_ms, 168LL * 3600 * 1000);
  assert_int_equal(np->consolidation_policy, CARP_CONSOLIDATE_WHEN_EMPTY);
  assert_int_equal(np->consolidate_after_ms, 10 * 60 * 1000);
  assert_int_equal(np->nbudgets, 2);
  assert_string_equal(np->budgets[0].schedule, "0 8 * * mon-fri");
  assert_true(np->budgets[0].cron_ok);
  assert_int_equal(np->budgets[0].duration_ms, 10LL * 3600 * 1000);
  assert_int_equal(np->budgets[0].reasons,
                   (1u << CARP_DISRUPT_EMPTY) |
                       (1u << CARP_DISRUPT_UNDERUTILIZED));
  assert_false(np->budgets[0].percent);
  assert_int_equal(np->budgets[0].value, 0);
  assert_int_equal(np->budgets[1].value, 1);
  assert_true(carp_nodepool_limit(np, "nodes", &v));
  assert_int_equal(v, 4);
  assert_true(carp_nodepool_limit(np, "cpu", &v));
  assert_int_equal(v, 32000);
  assert_false(carp_nodepool_limit(np, "memory", &v));
  carp_obj_unref(&np->meta);
}

/* A limit of 0 is a limit; an unreadable one is 0 (fail closed). */
static void test_limits(void **state)
{
  struct carp_nodepool *np =
      pool_of(POOL_SPEC(", limits: {cpu: '0', memory: 1Gi, pods: 0}"));
  int64_t v = -1;
  assert_true(carp_nodepool_limit(np, "cpu", &v));
  assert_int_equal(v, 0);
  assert_true(carp_nodepool_limit(np, "memory", &v));
  assert_int_equal(v, 1024 * 1024 * 1024);
  assert_true(carp_nodepool_limit(np, "pods", &v));
  assert_int_equal(v, 0);
  assert_false(carp_nodepool_limit(np, "ephemeral-storage", &v));
  assert_false(carp_nodepool_limit(np, "nodes", &v));
  carp_obj_unref(&np->meta);

  np = pool_of(POOL_SPEC(", limits: {cpu: lots, nodes: 3}"));
  assert_false(np->valid);
  assert_true(carp_nodepool_limit(np, "cpu", &v));
  assert_int_equal(v, 0);
  assert_true(carp_nodepool_limit(np, "nodes", &v));
  assert_int_equal(v, 3);
  carp_obj_unref(&np->meta);
}

/* A pool that breaks rules decodes, invalid, with the reason; parts that
 * cannot be represented are dropped or fail closed. */
static void test_invalid_still_decodes(void **state)
{
  struct carp_nodepool *np = pool_of(
      HDR "spec:\n  weight: 500\n  template:\n    spec:\n      requirements:\n"
          "        - {key: a, operator: Equals, values: [x]}\n"
          "        - {key: b, operator: In, values: [y]}\n"
          "      taints: [{key: t, effect: Sometimes}]\n"
          "      expireAfter: 30d\n"
          "  disruption:\n    consolidateAfter: soon\n"
          "    budgets: [{nodes: '110%'}, {nodes: '1', schedule: '61 * * * "
          "*', duration: 1h}]\n");
  assert_false(np->valid);
  assert_non_null(strstr(np->invalid_reason,
                         "spec.template.spec.requirements[0].operator: "
                         "Unsupported value: \"Equals\""));
  assert_non_null(
      strstr(np->invalid_reason, "spec.template.spec.nodeClassRef: Required"));
  assert_non_null(strstr(np->invalid_reason, "spec.weight: Invalid value"));
  assert_int_equal(np->tmpl.nrequirements, 1);
  assert_string_equal(np->tmpl.requirements[0].key, "b");
  assert_int_equal(np->tmpl.ntaints, 0);
  assert_int_equal(np->tmpl.expire_after_ms, CARP_DEFAULT_EXPIRE_AFTER_MS);
  assert_string_equal(np->tmpl.node_class_ref.name, "");
  assert_int_equal(np->weight, 100);
  assert_int_equal(np->consolidate_after_ms, CARP_DURATION_NEVER);
  assert_false(np->budgets[0].nodes_ok);
  assert_false(np->budgets[1].cron_ok);
  assert_int_equal(
      carp_nodepool_allowed_disruptions(np, CARP_DISRUPT_EMPTY, 10, 0), 0);
  carp_obj_unref(&np->meta);
}

static void test_type_errors(void **state)
{
  static const struct {
    const char *yaml;
    const char *want;
  } bad[] = {
      {HDR "spec: {template: {spec: {requirements: x}}}\n",
       "spec.template.spec.requirements: must be a list"},
      {HDR "spec: {template: {spec: {requirements: [x]}}}\n",
       "spec.template.spec.requirements[0]: must be an object"},
      {HDR "spec: {template: {spec: {requirements: [{key: a, operator: In, "
           "values: [1]}]}}}\n",
       "spec.template.spec.requirements[0].values[0]: must be a string"},
      {HDR "spec: {weight: '5', template: {spec: {}}}\n",
       "spec.weight: must be an integer"},
      {HDR "spec: {template: {metadata: {labels: {a: 1}}, spec: {}}}\n",
       "spec.template.metadata.labels: must be a map of strings"},
      {HDR "spec: {disruption: {budgets: [{nodes: 5}]}, template: {spec: "
           "{}}}\n",
       "spec.disruption.budgets[0].nodes: must be a string"},
      {HDR "spec: {template: {spec: {nodeClassRef: x}}}\n",
       "spec.template.spec.nodeClassRef: must be an object"},
      {HDR "spec: {template: {spec: {}}}\nstatus: {nodes: many}\n",
       "status.nodes: must be an integer"},
      {HDR "spec: {template: {spec: {}}}\nstatus: {conditions: [{type: "
           "Ready, lastTransitionTime: never}]}\n",
       "status.conditions[0]: lastTransitionTime: not a valid time"},
      {"kind: NodePool\nspec: {}\n", "metadata.(missing): invalid"},
  };
  size_t i;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *err = NULL;
    struct carp_objmeta *m =
        decode_yaml(&carp_kind_nodepool, bad[i].yaml, &err);
    assert_null(m);
    assert_non_null(err);
    if (strcmp(err, bad[i].want))
      fprintf(stderr, "case %zu: want %s, got %s\n", i, bad[i].want, err);
    assert_string_equal(err, bad[i].want);
    carp_free(err);
  }
}

static void test_update_rules(void **state)
{
  struct carp_nodepool *a = pool_of(POOL("", ""));
  struct carp_nodepool *b = pool_of(
      HDR "spec: {template: {spec: {nodeClassRef: {group: other.dev, kind: "
          "Other, name: x}, requirements: []}}}\n");
  struct carp_nodepool *c = pool_of(
      HDR "spec: {template: {spec: {nodeClassRef: {group: carpenter.dev, "
          "kind: ProxmoxNodeClass, name: other}, requirements: []}}}\n");
  struct carp_nodepool *s = pool_of(POOL_SPEC(", replicas: 2"));
  char *reason = NULL;

  assert_int_equal(carp_nodepool_validate_update(a, c, &reason), 0);
  assert_null(reason);
  assert_int_equal(carp_nodepool_validate_update(a, b, &reason), CARP_EINVALID);
  assert_string_equal(reason, "spec.template.spec.nodeClassRef: Invalid value: "
                              "\"object\": nodeClassRef.group is immutable; "
                              "spec.template.spec.nodeClassRef: Invalid value: "
                              "\"object\": nodeClassRef.kind is immutable");
  carp_free(reason);
  assert_int_equal(carp_nodepool_validate_update(a, s, &reason), CARP_EINVALID);
  assert_string_equal(reason,
                      "spec: Invalid value: \"object\": Cannot transition "
                      "NodePool between static (replicas set) and dynamic "
                      "(replicas unset) provisioning modes");
  carp_free(reason);
  assert_int_equal(carp_nodepool_validate_update(s, a, NULL), CARP_EINVALID);
  assert_int_equal(carp_nodepool_validate_update(s, s, NULL), 0);
  carp_obj_unref(&a->meta);
  carp_obj_unref(&b->meta);
  carp_obj_unref(&c->meta);
  carp_obj_unref(&s->meta);
}

static const char *hash_of(const char *yaml, char out[CARP_HASH_LEN])
{
  struct carp_nodepool *np = pool_of(yaml);
  char again[CARP_HASH_LEN];
  carp_nodepool_hash(np, again);
  assert_string_equal(np->hash, again);
  memcpy(out, np->hash, CARP_HASH_LEN);
  carp_obj_unref(&np->meta);
  return out;
}

static void test_hash(void **state)
{
  char base[CARP_HASH_LEN], h[CARP_HASH_LEN];
  const char *a =
      HDR "spec:\n  template:\n    metadata:\n      labels: {a: '1', b: '2'}\n"
          "      annotations: {x: y, z: w}\n    spec:\n      " REF "\n"
          "      requirements: [{key: k, operator: In, values: [v]}]\n"
          "      taints: [{key: t1, effect: NoSchedule}, {key: t2, value: v, "
          "effect: NoExecute}]\n      startupTaints: [{key: s, effect: "
          "NoSchedule}]\n      terminationGracePeriod: 2h\n";
  hash_of(a, base);
  /* Stable for the same template in another key and set order. */
  assert_string_equal(
      hash_of(HDR "spec:\n  template:\n    spec:\n      startupTaints: [{key: "
                  "s, effect: NoSchedule}]\n      taints: [{key: t2, value: v, "
                  "effect: NoExecute}, {effect: NoSchedule, key: t1}]\n"
                  "      terminationGracePeriod: 120m\n      requirements: "
                  "[{key: k, operator: In, values: [v]}]\n      " REF "\n"
                  "    metadata:\n      annotations: {z: w, x: y}\n"
                  "      labels: {b: '2', a: '1'}\n",
              h),
      base);
  /* Requirements are compared separately; disruption, limits and weight
   * are outside the template. */
  assert_string_equal(
      hash_of(HDR "spec:\n  weight: 7\n  limits: {cpu: '3'}\n  disruption: "
                  "{consolidateAfter: 1h, budgets: [{nodes: '0'}]}\n"
                  "  template:\n    metadata:\n      labels: {a: '1', b: "
                  "'2'}\n      annotations: {x: y, z: w}\n    spec:\n      " REF
                  "\n      requirements: [{key: other, operator: Exists}]\n"
                  "      taints: [{key: t1, effect: NoSchedule}, {key: t2, "
                  "value: v, effect: NoExecute}]\n      startupTaints: [{key: "
                  "s, effect: NoSchedule}]\n      terminationGracePeriod: 2h\n",
              h),
      base);
  /* A changed taint, label, annotation, startup taint, nodeClassRef,
   * expireAfter or terminationGracePeriod changes the hash. */
  {
    static const char *const variants[][2] = {
        {"effect: NoExecute}]\n      startupTaints",
         "effect: PreferNoSchedule}]\n      startupTaints"},
        {"labels: {a: '1'", "labels: {a: '3'"},
        {"annotations: {x: y", "annotations: {x: q"},
        {"startupTaints: [{key: s", "startupTaints: [{key: s2"},
        {"name: default}", "name: other}"},
        {"terminationGracePeriod: 2h", "terminationGracePeriod: 3h"},
        {"terminationGracePeriod: 2h", "expireAfter: Never\n      "
                                       "terminationGracePeriod: 2h"},
    };
    size_t i;
    for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
      char text[4096];
      const char *at = strstr(a, variants[i][0]);
      assert_non_null(at);
      snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - a), a, variants[i][1],
               at + strlen(variants[i][0]));
      assert_string_not_equal(hash_of(text, h), base);
    }
  }
  /* Taints as a set: a duplicate order swap of equal-key taints is stable. */
  assert_string_equal(
      hash_of(POOL("", ", taints: [{key: a, effect: NoSchedule}, {key: a, "
                       "effect: NoExecute}]"),
              base),
      hash_of(POOL("", ", taints: [{key: a, effect: NoExecute}, {key: a, "
                       "effect: NoSchedule}]"),
              h));
}

static void test_hash_stamps(void **state)
{
  struct carp_nodepool *np = pool_of(POOL("", ""));
  char text[2048];
  struct carp_objmeta *m;
  struct carp_buf b;
  yajl_val v;

  /* The pool's own stamp. */
  assert_true(carp_nodepool_hash_stale(np));
  snprintf(text, sizeof(text),
           "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: t, "
           "annotations: {karpenter.sh/nodepool-hash: '%s', "
           "karpenter.sh/nodepool-hash-version: %s}}\nspec: {template: "
           "{spec: " TSPEC("", "") "}}\n",
           np->hash, CARP_NODEPOOL_HASH_VERSION);
  {
    struct carp_nodepool *stamped = pool_of(text);
    assert_false(carp_nodepool_hash_stale(stamped));
    carp_obj_unref(&stamped->meta);
  }

  /* NodeClaims: Karpenter's v3 stamp is re-stamped, never drifted. */
  static const struct {
    const char *hash, *version;
    enum carp_hash_check want;
  } claims[] = {
      {"6891830284916209387", "v3", CARP_HASH_RESTAMP},
      {NULL, NULL, CARP_HASH_RESTAMP},
      {"", CARP_NODEPOOL_HASH_VERSION, CARP_HASH_MATCH},
      {"123", CARP_NODEPOOL_HASH_VERSION, CARP_HASH_DRIFTED},
      {"self", CARP_NODEPOOL_HASH_VERSION, CARP_HASH_MATCH},
  };
  size_t i;
  for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
    const char *h = claims[i].hash && !strcmp(claims[i].hash, "self")
                        ? np->hash
                        : claims[i].hash;
    if (h)
      snprintf(text, sizeof(text),
               "{\"metadata\":{\"name\":\"c\",\"annotations\":{"
               "\"karpenter.sh/nodepool-hash\":\"%s\","
               "\"karpenter.sh/nodepool-hash-version\":\"%s\"}},\"spec\":{}}",
               h, claims[i].version);
    else
      snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"c\"}}");
    v = json_of(text);
    m = decode_json(&carp_kind_nodeclaim, v, NULL);
    carp_json_free(v);
    assert_non_null(m);
    assert_int_equal(
        carp_nodepool_hash_check(np, (const struct carp_nodeclaim *)m),
        claims[i].want);
    carp_obj_unref(m);
  }

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_hash_annotations_patch(CARP_ANN_NODEPOOL_HASH, np->hash,
                                               CARP_ANN_NODEPOOL_HASH_VER,
                                               CARP_NODEPOOL_HASH_VERSION, &b),
                   0);
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"annotations\":{\"karpenter.sh/nodepool-hash\":"
           "\"%s\",\"karpenter.sh/nodepool-hash-version\":\"carpenter-v1\"}}}",
           np->hash);
  assert_string_equal(carp_buf_cstr(&b), text);
  carp_buf_free(&b);
  carp_obj_unref(&np->meta);
}

static void test_status(void **state)
{
  struct carp_nodepool *np = pool_of(
      POOL("", "") "status:\n  resources: {cpu: 1500m, memory: 8Gi, nodes: "
                   "'3', nvidia.com/gpu: '2'}\n  nodeClassObservedGeneration: "
                   "4\n  conditions:\n    - {type: ValidationSucceeded, "
                   "status: 'True', reason: ValidationSucceeded, message: '', "
                   "lastTransitionTime: '2026-01-02T03:04:05Z', "
                   "observedGeneration: 2}\n");
  struct carp_nodepool_status st;
  struct carp_buf b;
  yajl_val v;
  const struct carp_condition *c;

  assert_int_equal(np->status.resources.cpu, 1500);
  assert_int_equal(np->status.resources.memory, 8LL << 30);
  assert_int_equal(np->status.resources.nextended, 1); /* nodes taken out */
  assert_int_equal(np->status.nodes, 3);
  assert_int_equal(np->status.nodeclass_observed_generation, 4);
  c = carp_conditions_get(&np->status.conditions, "ValidationSucceeded");
  assert_non_null(c);
  assert_int_equal(c->status, CARP_COND_TRUE);
  assert_int_equal(c->observed_generation, 2);

  /* Copy, change, patch; the patch decodes back to what was written. */
  carp_nodepool_status_copy(&st, &np->status);
  st.nodes = 5;
  st.resources.cpu = 5000;
  assert_true(carp_conditions_set(
      &st.conditions, &carp_condset_nodepool, CARP_COND_NODECLASS_READY,
      CARP_COND_FALSE, "NodeClassNotFound", "not found", 3, 1767323045000LL));
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_nodepool_status_patch(&st, "42", &b), 0);
  assert_string_equal(
      carp_buf_cstr(&b),
      "{\"metadata\":{\"resourceVersion\":\"42\"},\"status\":{\"resources\":{"
      "\"cpu\":\"5\",\"memory\":\"8Gi\",\"nodes\":\"5\",\"nvidia.com/gpu\":"
      "\"2\"},\"nodes\":5,\"nodeClassObservedGeneration\":4,\"conditions\":[{"
      "\"type\":\"NodeClassReady\",\"status\":\"False\",\"reason\":"
      "\"NodeClassNotFound\",\"message\":\"not found\",\"lastTransitionTime\":"
      "\"2026-01-02T03:04:05Z\",\"observedGeneration\":3},{\"type\":"
      "\"Ready\",\"status\":\"False\",\"reason\":\"NodeClassNotFound\","
      "\"message\":\"not found\",\"lastTransitionTime\":"
      "\"2026-01-02T03:04:05Z\",\"observedGeneration\":3},{\"type\":"
      "\"ValidationSucceeded\",\"status\":\"True\",\"reason\":"
      "\"ValidationSucceeded\",\"message\":\"\",\"lastTransitionTime\":"
      "\"2026-01-02T03:04:05Z\",\"observedGeneration\":2}]}}");
  {
    /* Round trip through the decoder. */
    struct carp_buf doc;
    struct carp_nodepool *back;
    carp_buf_init(&doc, CARP_BUF_UNLIMITED);
    carp_buf_printf(&doc,
                    "{\"metadata\":{\"name\":\"t\"},\"spec\":{\"template\":{"
                    "\"spec\":{}}},%s",
                    strstr(carp_buf_cstr(&b), "\"status\""));
    v = json_of(carp_buf_cstr(&doc));
    back = (struct carp_nodepool *)decode_json(&carp_kind_nodepool, v, NULL);
    assert_non_null(back);
    assert_int_equal(back->status.nodes, 5);
    assert_int_equal(back->status.resources.cpu, 5000);
    assert_int_equal(back->status.conditions.n, 3);
    assert_true(
        carp_conditions_is(&back->status.conditions, "Ready", CARP_COND_FALSE));
    carp_obj_unref(&back->meta);
    carp_json_free(v);
    carp_buf_free(&doc);
  }
  carp_buf_free(&b);
  carp_nodepool_status_cleanup(&st);
  carp_obj_unref(&np->meta);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_validation_table),      LEAK_TEST(test_validation_sizes),
      LEAK_TEST(test_validation_many),       LEAK_TEST(test_defaults),
      LEAK_TEST(test_decode_example),        LEAK_TEST(test_limits),
      LEAK_TEST(test_invalid_still_decodes), LEAK_TEST(test_type_errors),
      LEAK_TEST(test_update_rules),          LEAK_TEST(test_hash),
      LEAK_TEST(test_hash_stamps),           LEAK_TEST(test_status),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
