/* Module capacitybuffer (internal/capacitybuffer). The CapacityBuffer
 * controller ("capacitybuffer", Karpenter's name), keyed by "namespace/name":
 * resolves each buffer's pod template (a PodTemplate, or the template of the
 * Deployment, StatefulSet or ReplicaSet scalableRef names, read with a GET),
 * computes how many chunks to keep (carp_capacitybuffer_replicas), puts that
 * many virtual pods in the cluster state (carp_cluster_set_virtual_pods) and
 * writes the buffer's status: replicas, the PodTemplate seen,
 * ReadyForProvisioning, and Provisioning from where the provisioner last placed
 * the virtual pods. A buffer is resolved again every resync (30 s) and whenever
 * it changes; status alone is recomputed when the provisioner reports
 * placements (carp_capacitybuffer_controller_placed).
 *
 * A buffer that is invalid, names nothing, names an object that does not
 * exist or asks for more than CARP_BUFFER_MAX_REPLICAS chunks keeps no
 * room and says why in ReadyForProvisioning; a read that fails otherwise
 * keeps the virtual pods it had and is retried with backoff. Without the
 * CapacityBuffer API in the cluster there is nothing to reconcile.
 *
 * Metrics: carpenter_capacitybuffer_virtual_pods{namespace,
 * capacitybuffer,placement} (existing, launching, new, unschedulable),
 * read at scrape time. */
#ifndef CARP_CAPACITYBUFFER_CONTROLLER_H
#define CARP_CAPACITYBUFFER_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/api.h"
#include "carpenter/capacitybuffer.h"
#include "carpenter/controller.h"

struct carp_capacitybuffer_controller_options {
  uint64_t resync_ms; /* each buffer resolved again; default 30 s */
  /* The virtual pods changed: the provisioner should look (optional). */
  void (*on_change)(void *arg);
  void *on_change_arg;
};

int carp_capacitybuffer_controller_new(
    const struct carp_controller_env *env,
    const struct carp_capacitybuffer_controller_options *o,
    struct carp_controller **out);
/* The provisioner recorded new placements: every buffer's status is
 * looked at again (without reading its template). */
void carp_capacitybuffer_controller_placed(struct carp_controller *c);

/* ---- pure parts (tests) ---- */

/* n virtual pods of buffer b from a pod template (an object with metadata
 * and spec, as PodTemplate.template and a workload's spec.template are):
 * named capacity-buffer-<buffer>-<i>, UID <buffer uid>-<i>, the
 * template's labels, owned by the buffer, pending and unschedulable, the
 * template's spec without nodeName, volumes and scheduling gates. out
 * gets n references. Returns 0, or CARP_EPARSE with *err. */
int carp_capacitybuffer_virtual_pods(const struct carp_capacitybuffer *b,
                                     yajl_val tmpl, size_t n,
                                     struct carp_pod **out, char **err);

#endif
