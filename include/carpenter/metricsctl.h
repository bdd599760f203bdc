/* Module metricsctl (internal/metricsctl). Cluster-state metrics (Karpenter's
 * metrics/node, metrics/pod, metrics/nodepool and state metrics), with
 * Karpenter's names and labels:
 *
 *   karpenter_nodes_allocatable, _total_pod_requests,
 *   _total_daemon_requests, _total_pod_limits,
 *   _total_daemon_limits, _system_overhead             gauges per node and
 *       resource_type (cpu in cores, memory and ephemeral_storage in bytes,
 *       pods), labels node_name, nodepool, zone, region, instance_type,
 *       arch, os, capacity_type, managed, resource_type
 *   karpenter_nodes_current_lifetime_seconds           per node
 *   karpenter_cluster_utilization_percent              {resource_type}
 *   karpenter_pods_state                               one series per pod
 *   karpenter_pods_startup_duration_seconds            summary
 *   karpenter_pods_bound_duration_seconds              histogram
 *   karpenter_pods_unbound_time_seconds                {name, namespace},
 *       pods not bound yet (capped like karpenter_pods_state)
 *   karpenter_pods_unstarted_time_seconds              {name, namespace},
 *       pods not Ready yet (capped the same way)
 *   karpenter_pods_provisioning_*                      counted from the
 *       provisioner's first placement of the pod (provisioning.c)
 *   karpenter_nodepools_cost_total                     {nodepool}, offering
 *       prices of the pool's NodeClaims (env->provider's, overlays applied)
 *   karpenter_nodepools_usage, karpenter_nodepools_limit {nodepool,
 *       resource_type}
 *   karpenter_cluster_state_node_count, _synced, _unsynced_time_seconds
 *   operator_status_condition_count, _current_status_seconds,
 *       _transitions_total, _transition_seconds   operatorpkg's, for
 *       NodePools, NodeClaims, ProxmoxNodeClasses and CapacityBuffers,
 *       and per kind operator_<kind>_status_condition_* (Nodes too)
 *   operator_termination_*, operator_<kind>_termination_*   operatorpkg's
 *       time terminating and termination duration (conditions.c)
 *   karpenter_cloudprovider_instance_type_cpu_cores, _memory_bytes,
 *       _offering_available, _offering_price_estimate   the instance
 *       types of the NodeClasses in use, from env->provider (offerings.c)
 *
 * Gauges are streamed families (include/carpenter/metrics.h): computed at
 * scrape time from the informer caches, with no per-series memory and no
 * stale series; one snapshot of per-node sums serves every family of a
 * scrape. The two durations are observed from pod informer events while
 * active (the leader), as Karpenter's pod controller does: the startup
 * duration when a pod seen not Ready becomes Ready (Ready time - creation),
 * the bound duration when a pod seen unbound is bound (PodScheduled time -
 * creation). docs/metrics.md lists every metric. */
#ifndef CARP_METRICSCTL_H
#define CARP_METRICSCTL_H

#include <stddef.h>

#include "carpenter/controller.h"

struct carp_metricsctl_options {
  /* karpenter_pods_state series at most (pods needing attention first);
   * 0: 5000. */
  size_t pod_series_limit;
};

/* The controller "metrics.state" (env->metrics required): registers the
 * families; closing it detaches the streamed ones. */
int carp_metricsctl_new(const struct carp_controller_env *env,
                        const struct carp_metricsctl_options *o,
                        struct carp_controller **out);

#endif
