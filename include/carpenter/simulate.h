/* Module simulate (internal/simulate). carpenter simulate: what Carpenter would
 * do with a cluster, worked out from a snapshot of its objects without
 * contacting any server.
 *
 * A snapshot is what `kubectl get pods,nodes,nodepools,nodeclaims,
 * proxmoxnodeclasses,daemonsets,pdb -A -o yaml` (or -o json) prints: a v1
 * List of objects, single objects, several YAML documents, in one or more
 * files. The objects go straight into the caches the controllers read (no
 * informer runs), then the provisioner's scheduling simulation and the
 * disruption controller's analysis and consolidation decision run on them
 * as they would on the next batch or poll. Instance types and prices come
 * from each ProxmoxNodeClass's spec (the offline Proxmox provider,
 * include/carpenter/pve.h). docs/simulate.md describes the output. */
#ifndef CARP_SIMULATE_H
#define CARP_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

struct carp_buf;
struct carp_simulation;

/* Loads snapshots into a new simulation. paths[i] is a file, or "-" for
 * standard input; nodepool_paths hold NodePools only, which replace the
 * snapshot's of the same name or are added. On a bad snapshot returns
 * CARP_EINVALID and a message naming the file, document, item and object
 * in *err (free with carp_free); a file that cannot be read gives its
 * errno. */
int carp_simulation_load(const char *const *paths, size_t npaths,
                         const char *const *nodepool_paths, size_t nnodepools,
                         struct carp_simulation **out, char **err);
/* Runs the provisioning and consolidation simulations at now_ms (epoch
 * ms: consolidateAfter, budgets' schedules and expiry are measured from
 * it). */
int carp_simulation_run(struct carp_simulation *s, int64_t now_ms);
/* The result, for people (text) or scripts (JSON). */
void carp_simulation_report_text(const struct carp_simulation *s,
                                 struct carp_buf *out);
void carp_simulation_report_json(const struct carp_simulation *s,
                                 struct carp_buf *out);
/* Wall milliseconds spent loading, provisioning and consolidating. */
void carp_simulation_timings(const struct carp_simulation *s, uint64_t *load,
                             uint64_t *provisioning, uint64_t *consolidation);
void carp_simulation_free(struct carp_simulation *s);

#endif
