/* Unit tests for the carpenter binary's flags: defaults, environment
 * variables, precedence, and a clear error naming the flag for every kind
 * of bad value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "options.h"

static char *out_text, *err_text;
static size_t out_len, err_len;

static enum carp_options_result parse(struct carp_options *o, int argc,
                                      char **argv)
{
  FILE *out = open_memstream(&out_text, &out_len);
  FILE *err = open_memstream(&err_text, &err_len);
  enum carp_options_result r = carp_options_parse(o, argc, argv, out, err);
  fclose(out);
  fclose(err);
  return r;
}

static void release(struct carp_options *o)
{
  carp_options_free(o);
  free(out_text);
  free(err_text);
  out_text = err_text = NULL;
}

static const char *const env_vars[] = {
    "KUBECONFIG",
    "KUBE_CONTEXT",
    "PVE_CONFIG",
    "CLUSTER_NAME",
    "METRICS_PORT",
    "HEALTH_PROBE_PORT",
    "METRICS_BIND_ADDRESS",
    "METRICS_POD_SERIES_LIMIT",
    "HEALTH_PROBE_BIND_ADDRESS",
    "LEADER_ELECT",
    "LEADER_ELECTION_NAMESPACE",
    "LEADER_ELECTION_NAME",
    "LOG_LEVEL",
    "LOG_FORMAT",
    "BATCH_IDLE_DURATION",
    "BATCH_MAX_DURATION",
    "KUBE_CLIENT_QPS",
    "KUBE_CLIENT_BURST",
    "DISRUPTION_POLL_INTERVAL",
    "DISRUPTION_VALIDATION_DELAY",
    "GC_INTERVAL",
    "GC_LEAKED_VM_GRACE",
    "DISRUPTION_COMMAND_TIMEOUT",
    "NODECLAIM_LAUNCH_TIMEOUT",
    "NODECLAIM_REGISTRATION_TIMEOUT",
    "NODE_REPAIR",
    "NODE_REPAIR_TOLERATION",
    "NODE_REPAIR_MAX_UNHEALTHY",
};

static int clear_env(void **state)
{
  for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
    unsetenv(env_vars[i]);
  return 0;
}

static void test_defaults(void **state)
{
  struct carp_options o;
  char *argv[] = {"carpenter"};
  assert_int_equal(parse(&o, 1, argv), CARP_OPTIONS_RUN);
  assert_null(o.kubeconfig);
  assert_null(o.pve_config);
  assert_int_equal(o.metrics_port, 8080);
  assert_int_equal(o.health_probe_port, 8081);
  assert_string_equal(o.metrics_bind_address, "127.0.0.1");
  assert_string_equal(o.health_probe_bind_address, "127.0.0.1");
  assert_int_equal(o.metrics_pod_series_limit, 5000);
  assert_int_equal(o.leader_elect, 1);
  assert_null(o.leader_election_namespace);
  assert_string_equal(o.leader_election_name, "carpenter-leader-election");
  assert_int_equal(o.log_level, CARP_LOG_INFO);
  assert_int_equal(o.log_format, CARP_LOG_FORMAT_JSON);
  assert_int_equal(o.batch_idle_ms, 1000);
  assert_int_equal(o.batch_max_ms, 10000);
  assert_true(o.kube_client_qps == 200.0);
  assert_int_equal(o.kube_client_burst, 300);
  assert_string_equal(o.cluster_name, "kubernetes");
  assert_int_equal(o.disruption_poll_ms, 10000);
  assert_int_equal(o.disruption_validation_ms, 15000);
  assert_int_equal(o.gc_interval_ms, 120000);
  assert_int_equal(o.gc_leaked_vm_grace_ms, 300000);
  assert_int_equal(o.disruption_command_timeout_ms, 600000);
  assert_int_equal(o.launch_timeout_ms, 300000);
  assert_int_equal(o.registration_timeout_ms, 900000);
  assert_int_equal(o.node_repair, 1);
  assert_int_equal(o.node_repair_toleration_ms, 1800000);
  assert_int_equal(o.node_repair_max_unhealthy, 20);
  assert_string_equal(err_text, "");
  release(&o);
}

static void test_env_and_flags(void **state)
{
  struct carp_options o;
  char *argv[] = {
      "carpenter", "--metrics-port=9090",         "--kubeconfig",
      "/tmp/kc",   "--leader-elect=false",        "--log-format",
      "text",      "--batch-idle-duration=500ms", "--kube-client-qps",
      "12.5"};
  setenv("METRICS_PORT", "7070", 1);
  setenv("HEALTH_PROBE_PORT", "7071", 1);
  setenv("LOG_LEVEL", "debug", 1);
  setenv("PVE_CONFIG", "/etc/pve.yaml", 1);
  setenv("BATCH_MAX_DURATION", "1m", 1);
  setenv("KUBECONFIG", "/from/env", 1);
  setenv("LEADER_ELECTION_NAMESPACE", "", 1); /* empty counts as unset */
  assert_int_equal(parse(&o, 10, argv), CARP_OPTIONS_RUN);
  assert_int_equal(o.metrics_port, 9090);      /* flag beats env */
  assert_int_equal(o.health_probe_port, 7071); /* env beats default */
  assert_int_equal(o.log_level, CARP_LOG_DEBUG);
  assert_string_equal(o.pve_config, "/etc/pve.yaml");
  assert_string_equal(o.kubeconfig, "/tmp/kc");
  assert_int_equal(o.leader_elect, 0);
  assert_null(o.leader_election_namespace);
  assert_int_equal(o.log_format, CARP_LOG_FORMAT_TEXT);
  assert_int_equal(o.batch_idle_ms, 500);
  assert_int_equal(o.batch_max_ms, 60000);
  assert_true(o.kube_client_qps == 12.5);
  release(&o);
  clear_env(state);

  /* The disruption and garbage collection timings. */
  {
    char *argv3[] = {"carpenter", "--disruption-poll-interval=1s",
                     "--disruption-validation-delay", "500ms",
                     "--gc-interval=3s"};
    setenv("GC_LEAKED_VM_GRACE", "45s", 1);
    setenv("GC_INTERVAL", "1m", 1);
    assert_int_equal(parse(&o, 5, argv3), CARP_OPTIONS_RUN);
    assert_int_equal(o.disruption_poll_ms, 1000);
    assert_int_equal(o.disruption_validation_ms, 500);
    assert_int_equal(o.gc_interval_ms, 3000);         /* flag beats env */
    assert_int_equal(o.gc_leaked_vm_grace_ms, 45000); /* env beats default */
    release(&o);
    clear_env(state);
  }

  /* Liveness and repair. */
  {
    char *argv5[] = {"carpenter", "--nodeclaim-launch-timeout=90s",
                     "--node-repair=false", "--node-repair-max-unhealthy",
                     "0%"};
    setenv("NODECLAIM_REGISTRATION_TIMEOUT", "20m", 1);
    setenv("NODE_REPAIR_TOLERATION", "10m", 1);
    setenv("NODE_REPAIR_MAX_UNHEALTHY", "50%", 1);
    assert_int_equal(parse(&o, 5, argv5), CARP_OPTIONS_RUN);
    assert_int_equal(o.launch_timeout_ms, 90000);
    assert_int_equal(o.registration_timeout_ms, 1200000);
    assert_int_equal(o.node_repair, 0);
    assert_int_equal(o.node_repair_toleration_ms, 600000);
    assert_int_equal(o.node_repair_max_unhealthy, 0); /* flag beats env */
    release(&o);
    clear_env(state);
  }

  /* Bind addresses: IPv4 or IPv6. */
  {
    char *argv4[] = {"carpenter", "--metrics-bind-address=::"};
    setenv("HEALTH_PROBE_BIND_ADDRESS", "0.0.0.0", 1);
    assert_int_equal(parse(&o, 2, argv4), CARP_OPTIONS_RUN);
    assert_string_equal(o.metrics_bind_address, "::");
    assert_string_equal(o.health_probe_bind_address, "0.0.0.0");
    release(&o);
    clear_env(state);
  }

  /* A bare boolean flag turns it on. */
  {
    char *argv2[] = {"carpenter", "--leader-elect"};
    setenv("LEADER_ELECT", "false", 1);
    assert_int_equal(parse(&o, 2, argv2), CARP_OPTIONS_RUN);
    assert_int_equal(o.leader_elect, 1);
    release(&o);
  }
}

struct bad_case {
  const char *arg;
  const char *want; /* substring of the error */
};

static void test_bad_flags(void **state)
{
  static const struct bad_case cases[] = {
      {"--metrics-port=abc", "for flag --metrics-port: want a port number"},
      {"--metrics-port=65536", "for flag --metrics-port"},
      {"--health-probe-port=-1", "for flag --health-probe-port"},
      {"--leader-elect=maybe", "for flag --leader-elect: want true or false"},
      {"--log-level=loud", "for flag --log-level: want debug, info"},
      {"--log-format=xml", "for flag --log-format: want json or text"},
      {"--batch-idle-duration=5", "for flag --batch-idle-duration: want a "
                                  "duration"},
      {"--batch-max-duration=-1s", "for flag --batch-max-duration"},
      {"--kube-client-qps=0", "for flag --kube-client-qps: want a number "
                              "greater than 0"},
      {"--kube-client-burst=1.5", "for flag --kube-client-burst: want an "
                                  "integer"},
      {"--cluster-name=Bad_Name", "for flag --cluster-name"},
      {"--kubeconfig=", "for flag --kubeconfig: want a non-empty string"},
      {"--no-such-flag", "unknown flag --no-such-flag"},
      {"positional", "unexpected argument \"positional\""},
      {"--pve-config", "flag --pve-config needs a value"},
      {"--batch-idle-duration=20s", "--batch-idle-duration must not exceed "
                                    "--batch-max-duration"},
      {"--disruption-poll-interval=soon",
       "for flag --disruption-poll-interval: "
       "want a duration"},
      {"--gc-interval=0s", "for flag --gc-interval: want a duration greater "
                           "than 0"},
      {"--disruption-validation-delay=0s",
       "for flag --disruption-validation-delay: want a duration greater"},
      {"--nodeclaim-launch-timeout=0s", "for flag --nodeclaim-launch-timeout"},
      {"--nodeclaim-registration-timeout=-1m",
       "for flag --nodeclaim-registration-timeout"},
      {"--node-repair-toleration=0s", "for flag --node-repair-toleration"},
      {"--node-repair=sometimes", "for flag --node-repair: want true or false"},
      {"--node-repair-max-unhealthy=20",
       "for flag --node-repair-max-unhealthy: "
       "want a percentage"},
      {"--node-repair-max-unhealthy=101%",
       "for flag --node-repair-max-unhealthy"},
      {"--node-repair-max-unhealthy=x%",
       "for flag --node-repair-max-unhealthy"},
      {"--gc-leaked-vm-grace=-5m", "for flag --gc-leaked-vm-grace"},
      {"--metrics-bind-address=:8080",
       "for flag --metrics-bind-address: want an IP address"},
      {"--health-probe-bind-address=localhost",
       "for flag --health-probe-bind-address: want an IP address"},
      {"--health-probe-bind-address=0.0.0.0:8081", "without a port"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct carp_options o;
    char *argv[] = {"carpenter", (char *)cases[i].arg};
    assert_int_equal(parse(&o, 2, argv), CARP_OPTIONS_ERROR);
    if (!strstr(err_text, cases[i].want))
      fail_msg("%s: error \"%s\" lacks \"%s\"", cases[i].arg, err_text,
               cases[i].want);
    release(&o);
  }
}

/* One listener serves both when the ports are equal: two addresses for it
 * cannot both hold. */
static void test_shared_port_addresses(void **state)
{
  struct carp_options o;
  char *same[] = {"carpenter", "--metrics-port=9000",
                  "--health-probe-port=9000",
                  "--health-probe-bind-address=0.0.0.0"};
  char *ok[] = {"carpenter", "--metrics-port=9000", "--health-probe-port=9000",
                "--health-probe-bind-address=0.0.0.0",
                "--metrics-bind-address=0.0.0.0"};
  assert_int_equal(parse(&o, 4, same), CARP_OPTIONS_ERROR);
  assert_non_null(strstr(err_text, "must then be the same too"));
  release(&o);
  assert_int_equal(parse(&o, 5, ok), CARP_OPTIONS_RUN);
  release(&o);
}

static void test_bad_env(void **state)
{
  struct carp_options o;
  char *argv[] = {"carpenter"};
  setenv("BATCH_IDLE_DURATION", "soon", 1);
  assert_int_equal(parse(&o, 1, argv), CARP_OPTIONS_ERROR);
  assert_non_null(strstr(err_text, "in environment variable "
                                   "BATCH_IDLE_DURATION (flag "
                                   "--batch-idle-duration)"));
  release(&o);
}

static void test_help_and_version(void **state)
{
  static const char *const flags[] = {
      "--kubeconfig",
      "--pve-config",
      "--metrics-port",
      "--health-probe-port",
      "--leader-elect",
      "--leader-election-namespace",
      "--log-level",
      "--log-format",
      "--batch-idle-duration",
      "--batch-max-duration",
      "--kube-client-qps",
      "--kube-client-burst",
      "--disruption-poll-interval",
      "--disruption-validation-delay",
      "--gc-interval",
      "--gc-leaked-vm-grace",
      "--help",
      "--version",
  };
  struct carp_options o;
  char *argv[] = {"carpenter", "--help"};
  char *argv2[] = {"carpenter", "--version"};
  assert_int_equal(parse(&o, 2, argv), CARP_OPTIONS_EXIT_OK);
  for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
    if (!strstr(out_text, flags[i]))
      fail_msg("--help does not document %s", flags[i]);
  for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
    if (!strstr(out_text, env_vars[i]))
      fail_msg("--help does not name %s", env_vars[i]);
  assert_non_null(strstr(out_text, "Default: 8080"));
  release(&o);
  assert_int_equal(parse(&o, 2, argv2), CARP_OPTIONS_EXIT_OK);
  assert_true(strncmp(out_text, "carpenter ", 10) == 0);
  release(&o);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_defaults, clear_env),
      cmocka_unit_test_setup(test_env_and_flags, clear_env),
      cmocka_unit_test_setup(test_bad_flags, clear_env),
      cmocka_unit_test_setup(test_shared_port_addresses, clear_env),
      cmocka_unit_test_setup(test_bad_env, clear_env),
      cmocka_unit_test_setup(test_help_and_version, clear_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
