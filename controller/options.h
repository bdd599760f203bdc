/* Command-line flags and environment variables of the carpenter binary.
 * Each flag has an environment variable (Karpenter's name where one exists)
 * and a default; a flag beats its variable, which beats the default. */
#ifndef CARP_OPTIONS_H
#define CARP_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "carpenter/log.h"

struct carp_options {
  char *kubeconfig; /* NULL: in-cluster configuration */
  char *kube_context;
  char *pve_config;
  int metrics_port;
  int health_probe_port;
  char *metrics_bind_address;      /* an IP address */
  char *health_probe_bind_address; /* an IP address */
  int leader_elect;
  char *leader_election_namespace;
  char *leader_election_name;
  enum carp_log_level log_level;
  enum carp_log_format log_format;
  int64_t batch_idle_ms;
  int64_t batch_max_ms;
  double kube_client_qps;
  int kube_client_burst;
  char *cluster_name;
  int64_t disruption_poll_ms;            /* --disruption-poll-interval */
  int64_t disruption_validation_ms;      /* --disruption-validation-delay */
  int64_t disruption_command_timeout_ms; /* --disruption-command-timeout */
  int64_t gc_interval_ms;                /* --gc-interval */
  int64_t gc_leaked_vm_grace_ms;         /* --gc-leaked-vm-grace */
  int metrics_pod_series_limit;          /* --metrics-pod-series-limit */
  int64_t launch_timeout_ms;             /* --nodeclaim-launch-timeout */
  int64_t registration_timeout_ms;       /* --nodeclaim-registration-timeout */
  int node_repair;                       /* --node-repair */
  int64_t node_repair_toleration_ms;     /* --node-repair-toleration */
  int node_repair_max_unhealthy;         /* --node-repair-max-unhealthy, % */
};

enum carp_options_result {
  CARP_OPTIONS_RUN = 0, /* options parsed: run the controller */
  CARP_OPTIONS_EXIT_OK, /* --help or --version printed */
  CARP_OPTIONS_ERROR,   /* message printed; exit with status 2 */
};

/* Parses argv and the environment (envp-style lookups go through getenv).
 * Normal output (help, version) goes to out, errors to err. */
enum carp_options_result carp_options_parse(struct carp_options *o, int argc,
                                            char **argv, FILE *out, FILE *err);
void carp_options_free(struct carp_options *o);
void carp_options_usage(FILE *out);

#endif
