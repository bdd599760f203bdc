/* test_apicheck.c: the API server check's verdicts, from discovery answers
 * shaped as test/kube-sim/recordings/00-*.txt show a real v1.20.2 server
 * answering (no policy/v1, pods/eviction in policy/v1beta1) and as current
 * servers answer: the floor, what is missing and since when, answers not
 * in yet or failing (not ready, but not called missing), CRDs, leases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/apicheck.h"
#include "carpenter/json.h"

#define CORE_V1(eviction_version)                                              \
  "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["      \
  "{\"name\":\"events\",\"namespaced\":true,\"kind\":\"Event\"},"              \
  "{\"name\":\"nodes\",\"namespaced\":false,\"kind\":\"Node\"},"               \
  "{\"name\":\"pods\",\"namespaced\":true,\"kind\":\"Pod\"},"                  \
  "{\"name\":\"pods/eviction\",\"singularName\":\"\",\"namespaced\":true,"     \
  "\"group\":\"policy\",\"version\":\"" eviction_version "\","                 \
  "\"kind\":\"Eviction\",\"verbs\":[\"create\"]}]}"

static const char *const good_docs[CARP_APICHECK_NDOCS] = {
    "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":\"v1.32.0\"}",
    CORE_V1("v1"),
    "{\"groupVersion\":\"apps/v1\",\"resources\":[{\"name\":\"daemonsets\"}]}",
    "{\"groupVersion\":\"policy/v1\",\"resources\":[{\"name\":"
    "\"poddisruptionbudgets\"},{\"name\":\"poddisruptionbudgets/status\"}]}",
    "{\"groupVersion\":\"coordination.k8s.io/v1\",\"resources\":[{\"name\":"
    "\"leases\"}]}",
    "{\"groupVersion\":\"karpenter.sh/v1\",\"resources\":[{\"name\":"
    "\"nodeclaims\"},{\"name\":\"nodepools\"}]}",
    "{\"groupVersion\":\"carpenter.dev/v1alpha1\",\"resources\":[{\"name\":"
    "\"proxmoxnodeclasses\"}]}",
};

struct answers {
  struct carp_apicheck_answer a[CARP_APICHECK_NDOCS];
  struct carp_apicheck_verdict v;
};

static void set(struct answers *s, enum carp_apicheck_doc d, long status,
                const char *body)
{
  carp_json_free(s->a[d].body);
  s->a[d].body = NULL;
  s->a[d].error = NULL;
  s->a[d].status = status;
  if (body)
    assert_int_equal(carp_json_parse(body, strlen(body), &s->a[d].body, NULL),
                     0);
  else if (status != 404 && status)
    s->a[d].error = "forbidden: User \"x\" cannot get path";
}

static int setup(void **state)
{
  struct answers *s = test_calloc(1, sizeof(*s));
  int d;
  for (d = 0; d < CARP_APICHECK_NDOCS; d++)
    set(s, (enum carp_apicheck_doc)d, 200, good_docs[d]);
  carp_apicheck_verdict_init(&s->v);
  *state = s;
  return 0;
}

static int teardown(void **state)
{
  struct answers *s = *state;
  int d;
  for (d = 0; d < CARP_APICHECK_NDOCS; d++)
    carp_json_free(s->a[d].body);
  carp_apicheck_verdict_free(&s->v);
  test_free(s);
  return 0;
}

static const char *why(struct answers *s)
{
  return carp_buf_cstr(&s->v.why);
}

static void test_current_server(void **state)
{
  struct answers *s = *state;
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_true(s->v.server_ok);
  assert_true(s->v.crds_ok);
  assert_string_equal(s->v.version, "v1.32.0");
  /* Managed offerings say "27+": the leading digits count. */
  set(s, CARP_APICHECK_VERSION, 200,
      "{\"major\":\"1\",\"minor\":\"27+\",\"gitVersion\":\"v1.27.3-eks-1\"}");
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_true(s->v.server_ok);
}

/* What a v1.20.2 server answers (recordings/00-*.txt). */
static void test_kubernetes_1_20(void **state)
{
  struct answers *s = *state;
  set(s, CARP_APICHECK_VERSION, 200,
      "{\"major\":\"1\",\"minor\":\"20\",\"gitVersion\":\"v1.20.2\"}");
  set(s, CARP_APICHECK_CORE, 200, CORE_V1("v1beta1"));
  set(s, CARP_APICHECK_POLICY, 404, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.server_ok);
  assert_false(s->v.server_unknown);
  assert_true(s->v.crds_ok);
  assert_string_equal(why(s),
                      "Kubernetes v1.20.2 is older than 1.25, the oldest "
                      "Carpenter supports; the server does not serve policy/v1 "
                      "Eviction (pods/eviction) (Kubernetes 1.22), policy/v1 "
                      "poddisruptionbudgets (Kubernetes 1.21)");
}

/* A current version with an API turned off (--runtime-config). */
static void test_incomplete_server(void **state)
{
  struct answers *s = *state;
  set(s, CARP_APICHECK_POLICY, 404, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.server_ok);
  assert_false(s->v.server_unknown);
  assert_string_equal(why(s), "the server does not serve policy/v1 "
                              "poddisruptionbudgets (Kubernetes 1.21)");
  /* Leases only count with leader election. */
  set(s, CARP_APICHECK_POLICY, 200, good_docs[CARP_APICHECK_POLICY]);
  set(s, CARP_APICHECK_COORDINATION, 404, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.server_ok);
  assert_non_null(strstr(why(s), "coordination.k8s.io/v1 leases"));
  set(s, CARP_APICHECK_COORDINATION, 0, NULL);
  carp_apicheck_evaluate(s->a, 0, &s->v);
  assert_true(s->v.server_ok);
}

/* No answer yet, or an error: not ready, and not called missing. */
static void test_unknown_is_not_missing(void **state)
{
  struct answers *s = *state;
  set(s, CARP_APICHECK_APPS, 0, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.server_ok);
  assert_true(s->v.server_unknown);
  assert_string_equal(why(s), "not read yet: /apis/apps/v1 (no answer yet)");
  set(s, CARP_APICHECK_APPS, 200, good_docs[CARP_APICHECK_APPS]);
  set(s, CARP_APICHECK_VERSION, 403, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_true(s->v.server_unknown);
  assert_non_null(strstr(why(s), "cannot read /version: forbidden"));
  /* An old version is known as soon as /version answers. */
  set(s, CARP_APICHECK_VERSION, 200,
      "{\"major\":\"1\",\"minor\":\"24\",\"gitVersion\":\"v1.24.9\"}");
  set(s, CARP_APICHECK_POLICY, 0, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.server_unknown);
  assert_non_null(strstr(why(s), "Kubernetes v1.24.9 is older than 1.25"));
  /* A /version without numbers is not taken for new enough. */
  set(s, CARP_APICHECK_POLICY, 200, good_docs[CARP_APICHECK_POLICY]);
  set(s, CARP_APICHECK_VERSION, 200, "{\"gitVersion\":\"v1.x\"}");
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.server_ok);
  assert_non_null(strstr(why(s), "no numeric major and minor"));
}

static void test_crds(void **state)
{
  struct answers *s = *state;
  set(s, CARP_APICHECK_KARPENTER, 404, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_true(s->v.server_ok); /* CRDs are their own check */
  assert_false(s->v.crds_ok);
  assert_false(s->v.crds_unknown);
  assert_string_equal(carp_buf_cstr(&s->v.crds_missing),
                      "karpenter.sh/v1 nodepools, karpenter.sh/v1 nodeclaims");
  set(s, CARP_APICHECK_KARPENTER, 200, good_docs[CARP_APICHECK_KARPENTER]);
  set(s, CARP_APICHECK_CARPENTER, 200,
      "{\"groupVersion\":\"carpenter.dev/v1alpha1\",\"resources\":[]}");
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.crds_ok);
  assert_string_equal(carp_buf_cstr(&s->v.crds_missing),
                      "carpenter.dev/v1alpha1 proxmoxnodeclasses");
  set(s, CARP_APICHECK_CARPENTER, 0, NULL);
  carp_apicheck_evaluate(s->a, 1, &s->v);
  assert_false(s->v.crds_ok);
  assert_true(s->v.crds_unknown);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_current_server, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kubernetes_1_20, setup, teardown),
      cmocka_unit_test_setup_teardown(test_incomplete_server, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unknown_is_not_missing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_crds, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
