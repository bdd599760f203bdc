/* Unit tests for status conditions: set (lastTransitionTime moves only on
 * a status change, "no change" is reported), default reasons, the root
 * Ready condition of NodePool, NodeClaim and ProxmoxNodeClass derived from
 * its dependents (reason and message of the first failing one), clear,
 * copy independence, decode and the JSON a status patch carries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_testlib.h"
#include "carpenter/conditions.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"

#define T0 1767323045000LL /* 2026-01-02T03:04:05Z */

static void test_set(void **state)
{
  struct carp_conditions c = {0, NULL};
  const struct carp_condition *x;

  assert_int_equal(carp_conditions_set(&c, NULL, "Launched", CARP_COND_TRUE,
                                       NULL, NULL, 1, T0),
                   1);
  x = carp_conditions_get(&c, "Launched");
  assert_non_null(x);
  assert_int_equal(x->status, CARP_COND_TRUE);
  assert_string_equal(x->reason, "Launched"); /* True: the type */
  assert_string_equal(x->message, "");
  assert_int_equal(x->transition_ms, T0);
  assert_int_equal(x->observed_generation, 1);
  /* Same everything: no change. */
  assert_int_equal(carp_conditions_set(&c, NULL, "Launched", CARP_COND_TRUE,
                                       "Launched", "", 1, T0 + 1000),
                   0);
  /* Same status, new message: changed, time kept. */
  assert_int_equal(carp_conditions_set(&c, NULL, "Launched", CARP_COND_TRUE,
                                       "Launched", "vm 100", 1, T0 + 2000),
                   1);
  x = carp_conditions_get(&c, "Launched");
  assert_int_equal(x->transition_ms, T0);
  assert_string_equal(x->message, "vm 100");
  /* New generation only: changed, time kept. */
  assert_int_equal(carp_conditions_set(&c, NULL, "Launched", CARP_COND_TRUE,
                                       "Launched", "vm 100", 2, T0 + 3000),
                   1);
  assert_int_equal(carp_conditions_get(&c, "Launched")->transition_ms, T0);
  /* Status change: time moves. */
  assert_int_equal(carp_conditions_set(&c, NULL, "Launched", CARP_COND_UNKNOWN,
                                       NULL, "retrying", 2, T0 + 4000),
                   1);
  x = carp_conditions_get(&c, "Launched");
  assert_int_equal(x->status, CARP_COND_UNKNOWN);
  assert_string_equal(x->reason, "AwaitingReconciliation");
  assert_int_equal(x->transition_ms, T0 + 4000);
  assert_int_equal(carp_conditions_set(&c, NULL, "Drifted", CARP_COND_FALSE,
                                       NULL, NULL, 2, T0),
                   1);
  assert_string_equal(carp_conditions_get(&c, "Drifted")->reason, "Drifted");
  /* Sorted by type. */
  assert_int_equal(c.n, 2);
  assert_string_equal(c.items[0].type, "Drifted");
  assert_string_equal(c.items[1].type, "Launched");
  assert_true(carp_conditions_is(&c, "Drifted", CARP_COND_FALSE));
  assert_false(carp_conditions_is_true(&c, "Drifted"));
  assert_false(carp_conditions_is_true(&c, "Missing"));
  assert_int_equal(carp_conditions_clear(&c, "Drifted"), 1);
  assert_int_equal(carp_conditions_clear(&c, "Drifted"), 0);
  assert_int_equal(c.n, 1);
  carp_conditions_cleanup(&c);
  assert_int_equal(c.n, 0);
}

static void test_root_nodepool(void **state)
{
  struct carp_conditions c = {0, NULL};
  const struct carp_condition *r;
  const struct carp_condset *set = &carp_condset_nodepool;

  assert_true(carp_conditions_set(&c, set, CARP_COND_VALIDATION_SUCCEEDED,
                                  CARP_COND_TRUE, NULL, NULL, 1, T0));
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_non_null(r);
  assert_int_equal(r->status, CARP_COND_UNKNOWN);
  assert_string_equal(r->reason, "AwaitingReconciliation");
  assert_string_equal(r->message, "NodeClassReady is not set yet");

  assert_true(carp_conditions_set(
      &c, set, CARP_COND_NODECLASS_READY, CARP_COND_FALSE, "NodeClassNotFound",
      "ProxmoxNodeClass default not found", 1, T0 + 1000));
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_int_equal(r->status, CARP_COND_FALSE);
  assert_string_equal(r->reason, "NodeClassNotFound");
  assert_string_equal(r->message, "ProxmoxNodeClass default not found");
  assert_int_equal(r->transition_ms, T0 + 1000);

  /* NodeRegistrationHealthy is not part of Ready. */
  assert_true(carp_conditions_set(&c, set, CARP_COND_NODE_REG_HEALTHY,
                                  CARP_COND_FALSE, "RegistrationFailed", "x", 1,
                                  T0 + 2000));
  assert_string_equal(carp_conditions_get(&c, CARP_COND_READY)->reason,
                      "NodeClassNotFound");

  assert_true(carp_conditions_set(&c, set, CARP_COND_NODECLASS_READY,
                                  CARP_COND_TRUE, NULL, NULL, 1, T0 + 3000));
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_int_equal(r->status, CARP_COND_TRUE);
  assert_string_equal(r->reason, "Ready");
  assert_int_equal(r->transition_ms, T0 + 3000);

  /* Validation fails: Ready False with its reason. */
  assert_true(carp_conditions_set(&c, set, CARP_COND_VALIDATION_SUCCEEDED,
                                  CARP_COND_FALSE, CARP_REASON_NODEPOOL_INVALID,
                                  "spec.weight: Invalid value", 2, T0 + 4000));
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_int_equal(r->status, CARP_COND_FALSE);
  assert_string_equal(r->reason, "NodePoolValidationFailed");
  assert_string_equal(r->message, "spec.weight: Invalid value");
  assert_int_equal(r->observed_generation, 2);
  assert_int_equal(c.n, 4);
  carp_conditions_cleanup(&c);
}

static void test_root_order(void **state)
{
  struct carp_conditions c = {0, NULL};
  const struct carp_condset *set = &carp_condset_nodeclass;
  const struct carp_condition *r;

  carp_conditions_set(&c, set, "ValidationSucceeded", CARP_COND_TRUE, NULL,
                      NULL, 1, T0);
  carp_conditions_set(&c, set, "RegionsReady", CARP_COND_UNKNOWN,
                      "RegionUnreachable", "pve1: timeout", 1, T0);
  carp_conditions_set(&c, set, "BootstrapReady", CARP_COND_FALSE,
                      "UserDataSecretNotFound", "secret missing", 1, T0);
  carp_conditions_set(&c, set, "TemplatesReady", CARP_COND_FALSE,
                      "TemplateNotFound", "no template", 1, T0);
  /* False beats Unknown; among False, the first in set order. */
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_int_equal(r->status, CARP_COND_FALSE);
  assert_string_equal(r->reason, "TemplateNotFound");
  assert_string_equal(r->message, "no template");
  carp_conditions_set(&c, set, "TemplatesReady", CARP_COND_TRUE, NULL, NULL, 1,
                      T0);
  carp_conditions_set(&c, set, "BootstrapReady", CARP_COND_TRUE, NULL, NULL, 1,
                      T0);
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_int_equal(r->status, CARP_COND_UNKNOWN);
  assert_string_equal(r->reason, "RegionUnreachable");
  carp_conditions_cleanup(&c);

  /* NodeClaim: Launched, Registered, Initialized. */
  set = &carp_condset_nodeclaim;
  carp_conditions_set(&c, set, CARP_COND_LAUNCHED, CARP_COND_TRUE, NULL, NULL,
                      1, T0);
  carp_conditions_set(&c, set, CARP_COND_REGISTERED, CARP_COND_UNKNOWN,
                      "NodeNotFound", "", 1, T0);
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_string_equal(r->reason, "NodeNotFound");
  carp_conditions_set(&c, set, CARP_COND_REGISTERED, CARP_COND_TRUE, NULL, NULL,
                      1, T0);
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_string_equal(r->message, "Initialized is not set yet");
  carp_conditions_set(&c, set, CARP_COND_INITIALIZED, CARP_COND_TRUE, NULL,
                      NULL, 1, T0 + 5000);
  /* Consolidatable is not a dependent. */
  carp_conditions_set(&c, set, CARP_COND_CONSOLIDATABLE, CARP_COND_FALSE, NULL,
                      NULL, 1, T0 + 6000);
  r = carp_conditions_get(&c, CARP_COND_READY);
  assert_int_equal(r->status, CARP_COND_TRUE);
  assert_int_equal(r->transition_ms, T0 + 5000);
  /* Setting the root directly does not recompute it. */
  assert_int_equal(carp_conditions_set(&c, set, CARP_COND_READY,
                                       CARP_COND_FALSE, "Manual", "m", 1, T0),
                   1);
  assert_true(carp_conditions_is(&c, CARP_COND_READY, CARP_COND_FALSE));
  carp_conditions_cleanup(&c);
}

static void test_decode_encode(void **state)
{
  yajl_val v = json_of(
      "[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\","
      "\"message\":\"\",\"lastTransitionTime\":\"2026-01-02T03:04:05Z\","
      "\"observedGeneration\":3},"
      "{\"type\":\"Launched\",\"status\":\"Maybe\",\"lastTransitionTime\":"
      "\"2026-01-02T03:04:05Z\"},"
      "{\"status\":\"True\"},"
      "{\"type\":\"Ready\",\"status\":\"False\"}]");
  struct carp_conditions c, copy;
  struct carp_buf b;
  struct carp_jw w;
  char *err = NULL;

  assert_int_equal(carp_conditions_decode(v, "status.conditions", &c, &err), 0);
  carp_json_free(v);
  /* Entries without a type and duplicate types are skipped; sorted. */
  assert_int_equal(c.n, 2);
  assert_string_equal(c.items[0].type, "Launched");
  assert_int_equal(c.items[0].status, CARP_COND_UNKNOWN);
  assert_string_equal(c.items[0].reason, "");
  assert_int_equal(c.items[1].observed_generation, 3);
  assert_int_equal(c.items[1].transition_ms, T0);

  carp_conditions_copy(&copy, &c);
  carp_conditions_set(&copy, NULL, "Launched", CARP_COND_TRUE, NULL, NULL, 3,
                      T0 + 1000);
  assert_int_equal(c.items[0].status, CARP_COND_UNKNOWN);

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_conditions_encode(&w, &c);
  assert_int_equal(carp_jw_finish(&w), 0);
  /* An empty reason is written as the type (the CRD wants one). */
  assert_string_equal(
      carp_buf_cstr(&b),
      "[{\"type\":\"Launched\",\"status\":\"Unknown\",\"reason\":\"Launched\","
      "\"message\":\"\",\"lastTransitionTime\":\"2026-01-02T03:04:05Z\"},"
      "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\","
      "\"message\":\"\",\"lastTransitionTime\":\"2026-01-02T03:04:05Z\","
      "\"observedGeneration\":3}]");
  carp_buf_free(&b);
  carp_conditions_cleanup(&c);
  carp_conditions_cleanup(&copy);

  v = json_of("[{\"type\":\"Ready\",\"lastTransitionTime\":\"yesterday\"}]");
  assert_int_equal(carp_conditions_decode(v, "status.conditions", &c, &err),
                   CARP_EPARSE);
  assert_string_equal(err, "status.conditions[0]: lastTransitionTime: not a "
                           "valid time");
  carp_free(err);
  carp_json_free(v);
  v = json_of("{\"type\":\"Ready\"}");
  assert_int_equal(carp_conditions_decode(v, "status.conditions", &c, &err),
                   CARP_EPARSE);
  assert_string_equal(err, "status.conditions: must be a list");
  carp_free(err);
  carp_json_free(v);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_set),
      LEAK_TEST(test_root_nodepool),
      LEAK_TEST(test_root_order),
      LEAK_TEST(test_decode_encode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
