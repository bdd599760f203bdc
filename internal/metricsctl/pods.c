/* pods.c: karpenter_pods_state, streamed at scrape time with one series
 * per cached pod, and the pod durations observed from informer events.
 *
 * Labels follow Karpenter's pod metrics controller: owner is the self link
 * Karpenter builds from the first owner reference
 * ("/apis/<apiVersion>/namespaces/<ns>/<kind>s/<name>"), the node's
 * nodepool, zone, arch, capacity type and instance type come from its
 * labels ("N/A" when the pod has no node, or the node is not cached, and
 * for a missing nodepool or capacity type label). Nothing is stored per
 * pod: a scrape walks the pod cache once, with pointer-keyed caches for
 * the node and owner of each pod. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/error.h"
#include "carpenter/timeutil.h"
#include "metricsctl_int.h"

static const char *phase_name(enum carp_pod_phase p)
{
  switch (p) {
  case CARP_POD_PENDING:
    return "Pending";
  case CARP_POD_RUNNING:
    return "Running";
  case CARP_POD_SUCCEEDED:
    return "Succeeded";
  case CARP_POD_FAILED:
    return "Failed";
  case CARP_POD_UNKNOWN:
    break;
  }
  return "Unknown";
}

static const char *owner_link(struct carp_metricsctl *m,
                              const struct carp_pod *p)
{
  const struct carp_owner *o = &p->meta.owner;
  size_t slot, i, n;
  char kind[64];
  if (!o->api_version || !o->uid)
    return "";
  slot = ((uintptr_t)o->uid >> 4) % MCTL_OWNER_CACHE;
  if (m->owner_cache[slot].uid == o->uid)
    return m->owner_cache[slot].link;
  n = strlen(o->kind);
  for (i = 0; i < n && i + 1 < sizeof(kind); i++)
    kind[i] = (char)tolower((unsigned char)o->kind[i]);
  kind[i] = '\0';
  snprintf(m->owner_cache[slot].link, sizeof(m->owner_cache[slot].link),
           "/apis/%s/namespaces/%s/%ss/%s", o->api_version,
           p->meta.namespace ? p->meta.namespace : "", kind, o->name);
  m->owner_cache[slot].uid = o->uid;
  return m->owner_cache[slot].link;
}

void carp__mctl_stream_pods(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  struct carp_store *pods = carp_informer_store(m->cluster->pods);
  struct carp_store_iter it;
  struct carp_objmeta *o;
  const char *v[14];
  carp__mctl_snapshot(m, carp_metric_writer_scrape(w));
  v[13] = NULL;
  carp_store_iter_init(&it);
  while ((o = carp_store_next(pods, &it))) {
    const struct carp_pod *p = (const struct carp_pod *)o;
    const struct carp_mctl_node *n = carp__mctl_node_of(m, p->node_name);
    v[0] = o->name;
    v[1] = o->namespace ? o->namespace : "";
    v[2] = owner_link(m, p);
    v[3] = p->node_name ? p->node_name : "";
    v[4] = p->node_name ? "true" : "false";
    if (n) {
      v[5] = *n->labels[NL_NODEPOOL] ? n->labels[NL_NODEPOOL] : "N/A";
      v[6] = n->labels[NL_ZONE];
      v[7] = n->labels[NL_ARCH];
      v[8] = *n->labels[NL_CAPACITY_TYPE] ? n->labels[NL_CAPACITY_TYPE] : "N/A";
      v[9] = n->labels[NL_INSTANCE_TYPE];
      v[12] = n->labels[NL_MANAGED];
    } else {
      v[5] = v[6] = v[7] = v[8] = v[9] = "N/A";
      v[12] = "false";
    }
    v[10] = phase_name(p->phase);
    v[11] = p->ready ? "true" : "false";
    carp_metric_writer_sample(w, v, 1);
  }
}

/* ---- durations ---- */

static void pod_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                        void *arg)
{
  struct carp_metricsctl *m = arg;
  const struct carp_pod *o = (const struct carp_pod *)old;
  const struct carp_pod *p = (const struct carp_pod *)obj;
  int64_t created = p->meta.creation_ms;
  if (!m->active || m->closing || !created)
    return;
  /* Seen unbound, now bound: creation to PodScheduled=True. */
  if (!o->node_name && p->node_name) {
    int64_t at = p->scheduled_ms ? p->scheduled_ms : carp_time_wall_ms();
    if (at >= created)
      carp_metric_observe(m->m_bound, NULL, (double)(at - created) / 1000.0);
  }
  /* Seen not Ready, now Ready: creation to Ready=True. */
  if (!o->ready && p->ready && p->phase == CARP_POD_RUNNING) {
    int64_t at = p->ready_ms ? p->ready_ms : carp_time_wall_ms();
    if (at >= created)
      carp_metric_observe(m->m_startup, NULL, (double)(at - created) / 1000.0);
  }
}

int carp__mctl_pods_init(struct carp_metricsctl *m)
{
  struct carp_informer_handlers h = {.on_update = pod_updated, .arg = m};
  return carp_informer_add_handlers(m->cluster->pods, &h);
}
