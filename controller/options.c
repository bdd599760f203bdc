/* options.c: table-driven flags (after Redis's config table): one row per
 * option with its flag, environment variable, default, parser and help.
 * Defaults are parsed by the same code as user input, so a default can
 * never hold a value a user could not give. */
#include "options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/version.h"

enum opt_type {
  OPT_STRING = 0,
  OPT_PORT,
  OPT_BOOL,
  OPT_DURATION,
  OPT_POSITIVE_DURATION,
  OPT_POSITIVE_FLOAT,
  OPT_POSITIVE_INT,
  OPT_LOG_LEVEL,
  OPT_LOG_FORMAT,
  OPT_NAME,
  OPT_IP,
  OPT_PERCENT,
};

struct opt {
  const char *flag; /* without the leading "--" */
  const char *env;  /* NULL: no environment variable */
  enum opt_type type;
  const char *def; /* NULL: unset */
  size_t offset;
  const char *metavar;
  const char *help;
};

#define OFF(field) offsetof(struct carp_options, field)

static const struct opt opts[] = {
    {"kubeconfig", "KUBECONFIG", OPT_STRING, NULL, OFF(kubeconfig), "PATH",
     "Path to a kubeconfig file. When unset, the in-cluster configuration "
     "(service account) is used."},
    {"kube-context", "KUBE_CONTEXT", OPT_STRING, NULL, OFF(kube_context),
     "NAME", "Kubeconfig context to use instead of its current-context."},
    {"pve-config", "PVE_CONFIG", OPT_STRING, NULL, OFF(pve_config), "PATH",
     "Path to the Proxmox VE configuration (YAML): clusters with region, "
     "url, tokenID, tokenSecret or tokenSecretFile, caFile or fingerprint, "
     "insecure."},
    {"cluster-name", "CLUSTER_NAME", OPT_NAME, "kubernetes", OFF(cluster_name),
     "NAME",
     "Name of this Kubernetes cluster, written as a tag on every VM "
     "Carpenter creates so that several clusters can share a Proxmox "
     "cluster. Lower-case letters, digits and '-'."},
    {"metrics-port", "METRICS_PORT", OPT_PORT, "8080", OFF(metrics_port),
     "PORT", "Port serving Prometheus metrics on /metrics (0 picks one)."},
    {"metrics-bind-address", "METRICS_BIND_ADDRESS", OPT_IP, "127.0.0.1",
     OFF(metrics_bind_address), "IP",
     "Address the metrics port listens on: 127.0.0.1 keeps it on this "
     "host, 0.0.0.0 (or ::) opens it on every interface, as a pod needs "
     "for Prometheus (the Helm chart sets 0.0.0.0)."},
    {"metrics-pod-series-limit", "METRICS_POD_SERIES_LIMIT", OPT_POSITIVE_INT,
     "5000", OFF(metrics_pod_series_limit), "N",
     "Most karpenter_pods_state series a scrape carries (one per pod; pods "
     "pending, not running or not ready come first); "
     "carpenter_pods_state_series_omitted counts the pods left out."},
    {"health-probe-port", "HEALTH_PROBE_PORT", OPT_PORT, "8081",
     OFF(health_probe_port), "PORT",
     "Port serving /healthz and /readyz (0 picks one)."},
    {"health-probe-bind-address", "HEALTH_PROBE_BIND_ADDRESS", OPT_IP,
     "127.0.0.1", OFF(health_probe_bind_address), "IP",
     "Address the health probe port listens on (the kubelet probes the "
     "pod's IP: the Helm chart sets 0.0.0.0)."},
    {"leader-elect", "LEADER_ELECT", OPT_BOOL, "true", OFF(leader_elect),
     "BOOL",
     "Elect a leader through a coordination.k8s.io Lease so that only one "
     "replica acts."},
    {"leader-election-namespace", "LEADER_ELECTION_NAMESPACE", OPT_STRING, NULL,
     OFF(leader_election_namespace), "NAMESPACE",
     "Namespace of the leader election Lease (default: the pod's "
     "namespace)."},
    {"leader-election-name", "LEADER_ELECTION_NAME", OPT_NAME,
     "carpenter-leader-election", OFF(leader_election_name), "NAME",
     "Name of the leader election Lease."},
    {"log-level", "LOG_LEVEL", OPT_LOG_LEVEL, "info", OFF(log_level), "LEVEL",
     "Lowest level logged: debug, info, warn or error."},
    {"log-format", "LOG_FORMAT", OPT_LOG_FORMAT, "json", OFF(log_format),
     "FORMAT", "Log line format: json (one object per line) or text."},
    {"batch-idle-duration", "BATCH_IDLE_DURATION", OPT_DURATION, "1s",
     OFF(batch_idle_ms), "DURATION",
     "Close a provisioning batch once no new pending pod arrived for this "
     "long."},
    {"batch-max-duration", "BATCH_MAX_DURATION", OPT_DURATION, "10s",
     OFF(batch_max_ms), "DURATION",
     "Close a provisioning batch after this long, however busy."},
    {"kube-client-qps", "KUBE_CLIENT_QPS", OPT_POSITIVE_FLOAT, "200",
     OFF(kube_client_qps), "QPS",
     "Sustained rate of requests to the Kubernetes API server."},
    {"kube-client-burst", "KUBE_CLIENT_BURST", OPT_POSITIVE_INT, "300",
     OFF(kube_client_burst), "N",
     "Burst of requests allowed above --kube-client-qps."},
    {"disruption-poll-interval", "DISRUPTION_POLL_INTERVAL",
     OPT_POSITIVE_DURATION, "10s", OFF(disruption_poll_ms), "DURATION",
     "How often the disruption controller looks for empty, underused and "
     "expired nodes."},
    {"disruption-validation-delay", "DISRUPTION_VALIDATION_DELAY",
     OPT_POSITIVE_DURATION, "15s", OFF(disruption_validation_ms), "DURATION",
     "How long a disruption decision waits before it is checked again and "
     "carried out."},
    {"disruption-command-timeout", "DISRUPTION_COMMAND_TIMEOUT",
     OPT_POSITIVE_DURATION, "10m", OFF(disruption_command_timeout_ms),
     "DURATION",
     "How long a consolidation's replacement may take to initialize before "
     "the command is rolled back (and how long disrupted nodes may take to "
     "go before the next decision)."},
    {"gc-interval", "GC_INTERVAL", OPT_POSITIVE_DURATION, "2m",
     OFF(gc_interval_ms), "DURATION",
     "How often VMs are compared with NodeClaims to remove leaked VMs and "
     "NodeClaims whose VM is gone."},
    {"gc-leaked-vm-grace", "GC_LEAKED_VM_GRACE", OPT_POSITIVE_DURATION, "5m",
     OFF(gc_leaked_vm_grace_ms), "DURATION",
     "How long a VM tagged for this cluster may stay without a NodeClaim "
     "before it is deleted."},
    {"nodeclaim-launch-timeout", "NODECLAIM_LAUNCH_TIMEOUT",
     OPT_POSITIVE_DURATION, "5m", OFF(launch_timeout_ms), "DURATION",
     "How long a NodeClaim may take to be launched (its VM created) before "
     "it is deleted and its pods are provisioned for again."},
    {"nodeclaim-registration-timeout", "NODECLAIM_REGISTRATION_TIMEOUT",
     OPT_POSITIVE_DURATION, "15m", OFF(registration_timeout_ms), "DURATION",
     "How long a launched NodeClaim's Node may take to register before the "
     "NodeClaim and its VM are deleted."},
    {"node-repair", "NODE_REPAIR", OPT_BOOL, "true", OFF(node_repair), "BOOL",
     "Replace nodes whose Ready condition has been False or Unknown for "
     "--node-repair-toleration (Karpenter's NodeRepair)."},
    {"node-repair-toleration", "NODE_REPAIR_TOLERATION", OPT_POSITIVE_DURATION,
     "30m", OFF(node_repair_toleration_ms), "DURATION",
     "How long a node may be NotReady before it is repaired (its NodeClaim "
     "deleted forcefully)."},
    {"node-repair-max-unhealthy", "NODE_REPAIR_MAX_UNHEALTHY", OPT_PERCENT,
     "20%", OFF(node_repair_max_unhealthy), "PERCENT",
     "Repair is held while more than this share of a NodePool's nodes "
     "(rounded up) is unhealthy: a whole pool going NotReady is an outage "
     "that new nodes would not fix."},
};

static const char *type_hint(enum opt_type t)
{
  switch (t) {
  case OPT_PORT:
    return "a port number from 0 to 65535";
  case OPT_BOOL:
    return "true or false";
  case OPT_DURATION:
    return "a duration such as 500ms, 1s or 1m30s";
  case OPT_POSITIVE_DURATION:
    return "a duration greater than 0 such as 500ms, 1s or 1m30s";
  case OPT_POSITIVE_FLOAT:
    return "a number greater than 0";
  case OPT_POSITIVE_INT:
    return "an integer greater than 0";
  case OPT_LOG_LEVEL:
    return "debug, info, warn or error";
  case OPT_LOG_FORMAT:
    return "json or text";
  case OPT_NAME:
    return "lower-case letters, digits and '-', starting and ending with a "
           "letter or digit, at most 63 characters";
  case OPT_STRING:
    return "a non-empty string";
  case OPT_IP:
    return "an IP address such as 127.0.0.1, 0.0.0.0 or :: (without a port: "
           "the port has a flag of its own)";
  case OPT_PERCENT:
    return "a percentage from 0% to 100%";
  }
  return "a valid value";
}

static int parse_bool(const char *s, int *out)
{
  if (!strcasecmp(s, "true") || !strcmp(s, "1")) {
    *out = 1;
    return 0;
  }
  if (!strcasecmp(s, "false") || !strcmp(s, "0")) {
    *out = 0;
    return 0;
  }
  return CARP_EINVAL;
}

static int parse_long(const char *s, long min, long max, long *out)
{
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max)
    return CARP_EINVAL;
  *out = v;
  return 0;
}

static int valid_name(const char *s)
{
  size_t i, n = strlen(s);
  if (n == 0 || n > 63)
    return 0;
  for (i = 0; i < n; i++) {
    char c = s[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i < n - 1))
      return 0;
  }
  return 1;
}

static int valid_ip(const char *s)
{
  unsigned char addr[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, s, addr) == 1 || inet_pton(AF_INET6, s, addr) == 1;
}

/* Stores value into the field of o described by opt. */
static int apply(struct carp_options *o, const struct opt *opt,
                 const char *value)
{
  void *field = (char *)o + opt->offset;
  long l;
  double d;
  char *end;

  switch (opt->type) {
  case OPT_STRING:
  case OPT_NAME:
  case OPT_IP:
    if (!*value || (opt->type == OPT_NAME && !valid_name(value)) ||
        (opt->type == OPT_IP && !valid_ip(value)))
      return CARP_EINVAL;
    carp_free(*(char **)field);
    *(char **)field = carp_strdup(value);
    return 0;
  case OPT_PORT:
    if (parse_long(value, 0, 65535, &l))
      return CARP_EINVAL;
    *(int *)field = (int)l;
    return 0;
  case OPT_BOOL:
    return parse_bool(value, (int *)field);
  case OPT_DURATION:
    return carp_duration_parse(value, 0, (int64_t *)field) ? CARP_EINVAL : 0;
  case OPT_POSITIVE_DURATION:
    if (carp_duration_parse(value, 0, (int64_t *)field) ||
        *(int64_t *)field <= 0)
      return CARP_EINVAL;
    return 0;
  case OPT_POSITIVE_FLOAT:
    errno = 0;
    d = strtod(value, &end);
    if (errno || end == value || *end || !(d > 0) || d > 1e9)
      return CARP_EINVAL;
    *(double *)field = d;
    return 0;
  case OPT_POSITIVE_INT:
    if (parse_long(value, 1, 1000000000, &l))
      return CARP_EINVAL;
    *(int *)field = (int)l;
    return 0;
  case OPT_PERCENT: {
    char num[16];
    size_t n = strlen(value);
    if (n < 2 || n >= sizeof(num) || value[n - 1] != '%')
      return CARP_EINVAL;
    memcpy(num, value, n - 1);
    num[n - 1] = 0;
    if (parse_long(num, 0, 100, &l))
      return CARP_EINVAL;
    *(int *)field = (int)l;
    return 0;
  }
  case OPT_LOG_LEVEL:
    return carp_log_level_parse(value, (enum carp_log_level *)field);
  case OPT_LOG_FORMAT:
    if (!strcmp(value, "json"))
      *(enum carp_log_format *)field = CARP_LOG_FORMAT_JSON;
    else if (!strcmp(value, "text"))
      *(enum carp_log_format *)field = CARP_LOG_FORMAT_TEXT;
    else
      return CARP_EINVAL;
    return 0;
  }
  return CARP_EINVAL;
}

static const struct opt *find(const char *flag, size_t len)
{
  size_t i;
  for (i = 0; i < CARP_ARRAY_LEN(opts); i++)
    if (strlen(opts[i].flag) == len && !strncmp(opts[i].flag, flag, len))
      return &opts[i];
  return NULL;
}

void carp_options_usage(FILE *out)
{
  size_t i;
  fprintf(out, "Usage: carpenter [flags]\n"
               "       carpenter simulate [flags] SNAPSHOT...   (what it would "
               "do; see\n"
               "                                                carpenter "
               "simulate --help)\n\n"
               "Carpenter provisions Kubernetes nodes as Proxmox VE virtual "
               "machines for pods\nthat cannot be scheduled, and removes them "
               "when they are no longer needed.\nIt serves Karpenter's "
               "karpenter.sh/v1 NodePool and NodeClaim API.\n\n"
               "Each flag may also be given as the environment variable shown; "
               "the flag wins.\n\nFlags:\n");
  for (i = 0; i < CARP_ARRAY_LEN(opts); i++) {
    const struct opt *o = &opts[i];
    fprintf(out, "  --%s %s", o->flag, o->metavar);
    if (o->env)
      fprintf(out, "   (env %s)", o->env);
    fprintf(out, "\n      %s\n", o->help);
    if (o->def)
      fprintf(out, "      Default: %s\n", o->def);
  }
  fprintf(out, "  --help\n      Print this help and exit.\n"
               "  --version\n      Print the version and exit.\n\n"
               "Exit status: 0 after a clean shutdown (SIGTERM or SIGINT), "
               "2 for invalid\nflags or configuration, 1 for other "
               "failures.\n");
}

static void bad_value(FILE *err, const struct opt *opt, const char *value,
                      int from_env)
{
  if (from_env)
    fprintf(err,
            "carpenter: invalid value \"%s\" in environment variable %s "
            "(flag --%s): want %s\n",
            value, opt->env, opt->flag, type_hint(opt->type));
  else
    fprintf(err, "carpenter: invalid value \"%s\" for flag --%s: want %s\n",
            value, opt->flag, type_hint(opt->type));
  fprintf(err, "Run 'carpenter --help' for usage.\n");
}

enum carp_options_result carp_options_parse(struct carp_options *o, int argc,
                                            char **argv, FILE *out, FILE *err)
{
  size_t i;
  int a;

  memset(o, 0, sizeof(*o));
  for (i = 0; i < CARP_ARRAY_LEN(opts); i++) {
    const char *env;
    if (opts[i].def && apply(o, &opts[i], opts[i].def) != 0) {
      fprintf(err, "carpenter: bad built-in default for --%s\n", opts[i].flag);
      return CARP_OPTIONS_ERROR;
    }
    env = opts[i].env ? getenv(opts[i].env) : NULL;
    /* An empty variable counts as unset, as with most Go flag loaders. */
    if (env && *env && apply(o, &opts[i], env) != 0) {
      bad_value(err, &opts[i], env, 1);
      return CARP_OPTIONS_ERROR;
    }
  }

  for (a = 1; a < argc; a++) {
    const char *arg = argv[a], *name, *eq, *value;
    const struct opt *opt;
    size_t len;

    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      carp_options_usage(out);
      return CARP_OPTIONS_EXIT_OK;
    }
    if (!strcmp(arg, "--version")) {
      fprintf(out, "carpenter %s (commit %s)\n", CARP_VERSION, CARP_COMMIT);
      return CARP_OPTIONS_EXIT_OK;
    }
    if (strncmp(arg, "--", 2) != 0 || !arg[2]) {
      fprintf(err,
              "carpenter: unexpected argument \"%s\"\n"
              "Run 'carpenter --help' for usage.\n",
              arg);
      return CARP_OPTIONS_ERROR;
    }
    name = arg + 2;
    eq = strchr(name, '=');
    len = eq ? (size_t)(eq - name) : strlen(name);
    opt = find(name, len);
    if (!opt) {
      fprintf(err,
              "carpenter: unknown flag --%.*s\n"
              "Run 'carpenter --help' for usage.\n",
              (int)len, name);
      return CARP_OPTIONS_ERROR;
    }
    if (eq) {
      value = eq + 1;
    } else if (opt->type == OPT_BOOL) {
      value = "true"; /* a bare boolean flag turns it on */
    } else if (a + 1 < argc) {
      value = argv[++a];
    } else {
      fprintf(err,
              "carpenter: flag --%s needs a value (%s)\n"
              "Run 'carpenter --help' for usage.\n",
              opt->flag, type_hint(opt->type));
      return CARP_OPTIONS_ERROR;
    }
    if (apply(o, opt, value) != 0) {
      bad_value(err, opt, value, 0);
      return CARP_OPTIONS_ERROR;
    }
  }

  if (o->metrics_port && o->metrics_port == o->health_probe_port &&
      strcmp(o->metrics_bind_address, o->health_probe_bind_address)) {
    fprintf(err, "carpenter: --metrics-port and --health-probe-port are the "
                 "same port, served by one listener: --metrics-bind-address "
                 "and --health-probe-bind-address must then be the same "
                 "too\n");
    return CARP_OPTIONS_ERROR;
  }
  if (o->batch_idle_ms > o->batch_max_ms) {
    fprintf(err, "carpenter: --batch-idle-duration must not exceed "
                 "--batch-max-duration\n");
    return CARP_OPTIONS_ERROR;
  }
  return CARP_OPTIONS_RUN;
}

void carp_options_free(struct carp_options *o)
{
  size_t i;
  for (i = 0; i < CARP_ARRAY_LEN(opts); i++)
    if (opts[i].type == OPT_STRING || opts[i].type == OPT_NAME ||
        opts[i].type == OPT_IP)
      CARP_FREE((char **)((char *)o + opts[i].offset));
}
