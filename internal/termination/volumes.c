/* volumes.c: waiting for a drained node's volumes to be detached before
 * its VM stops, as Karpenter's terminator does. A VM stopped with a Ceph
 * RBD or Longhorn volume still attached strands it until a force-detach,
 * and the pod that moved cannot start meanwhile.
 *
 * What is waited for: every VolumeAttachment of the node, but those of
 * volumes that pods staying on the node still use (DaemonSet, mirror and
 * other pods the drain leaves alone keep theirs; a claim names the
 * volume). The attach/detach controller deletes the others once their pods
 * are gone. The NodeClaim's terminationGracePeriod bounds the wait: past
 * the deadline the VM stops anyway (VolumesDetached=False,
 * TerminationGracePeriodElapsed). Without one, the wait is as long as it
 * takes, as in Karpenter. */
#include <stdio.h>
#include <string.h>

#include "carpenter/api.h"
#include "carpenter/duration.h"
#include "carpenter/log.h"
#include "termination_int.h"

#define VOLUMES_POLL_MS 5000 /* VolumeAttachment events come sooner */
#define VOLUMES_EVENT_MS                                                       \
  30000 /* AwaitingVolumeDetachment at most this often                         \
         */

/* Whether a pod that stays on the node (the drain is over: whatever is
 * left and not finished) still uses volume pv. */
static int kept(struct carp_termination *t, const struct carp_node *node,
                const char *pv)
{
  struct carp_objmeta *const *pods;
  size_t n, i;
  uint32_t j;
  if (!pv)
    return 0;
  pods = carp_cluster_pods_on_node(t->base.env.cluster, node->meta.name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    if (carp_pod_is_terminal(p))
      continue;
    for (j = 0; j < p->npvcs; j++) {
      const struct carp_pvc *c =
          carp_cluster_pvc(t->base.env.cluster, p->meta.namespace, p->pvcs[j]);
      if (c && c->volume_name && !strcmp(c->volume_name, pv))
        return 1;
    }
  }
  return 0;
}

size_t carp__term_volumes(struct carp_termination *t, struct node_mem *m,
                          const struct carp_node *node,
                          const struct carp_nodeclaim *nc, int64_t deadline_ms,
                          uint64_t *retry_ms)
{
  struct carp_objmeta *const *vas;
  char names[512], msg[640];
  size_t n, i, left = 0, len = 0;
  int64_t now = carp__term_now(t);

  if (m->volumes_done)
    return 0;
  names[0] = '\0';
  vas = carp_cluster_volumeattachments_on_node(t->base.env.cluster,
                                               node->meta.name, &n);
  for (i = 0; i < n; i++) {
    const struct carp_volumeattachment *va =
        (const struct carp_volumeattachment *)vas[i];
    if (kept(t, node, va->pv_name))
      continue;
    if (left++ < 8 && len + strlen(va->meta.name) + 3 < sizeof(names))
      len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
                              len ? ", " : "", va->meta.name);
  }
  if (!left) {
    m->volumes_done = 1;
    if (nc)
      carp__term_claim_condition(t, m, nc, CARP_COND_VOLUMES_DETACHED,
                                 CARP_COND_TRUE, "VolumesDetached", "");
    return 0;
  }
  if (deadline_ms != CARP_DURATION_NEVER && now >= deadline_ms) {
    snprintf(msg, sizeof(msg),
             "%zu volume attachments still there at the termination "
             "deadline (%s%s): stopping the VM anyway",
             left, names, left > 8 ? ", ..." : "");
    m->volumes_done = 1;
    CARP_LOG_WARN("termination", "volumes not detached by the deadline",
                  CARP_F_STR("node", node->meta.name),
                  CARP_F_UINT("attachments", left),
                  CARP_F_STR("volumeattachments", names));
    carp_controller_event(&t->base, &node->meta, "v1", CARP_EVENT_WARNING,
                          "VolumesNotDetached", "%s", msg);
    if (nc)
      carp__term_claim_condition(t, m, nc, CARP_COND_VOLUMES_DETACHED,
                                 CARP_COND_FALSE,
                                 "TerminationGracePeriodElapsed", msg);
    return 0;
  }
  snprintf(msg, sizeof(msg),
           "Awaiting deletion of bound volumeattachments (%s%s)", names,
           left > 8 ? ", ..." : "");
  if (now - m->volumes_event_ms >= VOLUMES_EVENT_MS) {
    m->volumes_event_ms = now;
    CARP_LOG_INFO("termination", "waiting for volumes to detach",
                  CARP_F_STR("node", node->meta.name),
                  CARP_F_UINT("attachments", left),
                  CARP_F_STR("volumeattachments", names));
    carp_controller_event(&t->base, &node->meta, "v1", CARP_EVENT_NORMAL,
                          "AwaitingVolumeDetachment", "%s", msg);
    if (nc)
      carp_controller_event(&t->base, &nc->meta, "karpenter.sh/v1",
                            CARP_EVENT_NORMAL, "AwaitingVolumeDetachment", "%s",
                            msg);
  }
  if (nc)
    carp__term_claim_condition(t, m, nc, CARP_COND_VOLUMES_DETACHED,
                               CARP_COND_UNKNOWN, "AwaitingVolumeDetachment",
                               msg);
  *retry_ms = VOLUMES_POLL_MS;
  if (deadline_ms != CARP_DURATION_NEVER && deadline_ms - now < VOLUMES_POLL_MS)
    *retry_ms = (uint64_t)(deadline_ms - now) + 1;
  return left;
}
