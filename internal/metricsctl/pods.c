/* pods.c: karpenter_pods_state, streamed at scrape time with one series
 * per cached pod (up to a limit), and the pod durations observed from
 * informer events.
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

#include "carpenter/alloc.h"
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

/* Appends a label value that needs no escaping (Kubernetes names and
 * label values never do); returns 0 when it would need it. */
static int put(char *buf, size_t *len, const char *v)
{
  size_t n = strcspn(v, "\\\n\"");
  if (v[n])
    return 0;
  memcpy(buf + *len, v, n);
  *len += n;
  return 1;
}

#define PUT_LIT(buf, len, lit)                                                 \
  do {                                                                         \
    memcpy((buf) + *(len), lit, sizeof(lit) - 1);                              \
    *(len) += sizeof(lit) - 1;                                                 \
  } while (0)

static void escape_into(struct carp_buf *b, const char *v)
{
  for (; *v; v++) {
    if (*v == '\\')
      carp_buf_puts(b, "\\\\");
    else if (*v == '\n')
      carp_buf_puts(b, "\\n");
    else if (*v == '"')
      carp_buf_puts(b, "\\\"");
    else
      carp_buf_putc(b, *v);
  }
}

void carp__mctl_pod_labels(struct carp_mctl_node *s)
{
  struct carp_buf b;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_puts(&b, "\",nodepool=\"");
  escape_into(&b, *s->labels[NL_NODEPOOL] ? s->labels[NL_NODEPOOL] : "N/A");
  carp_buf_puts(&b, "\",zone=\"");
  escape_into(&b, s->labels[NL_ZONE]);
  carp_buf_puts(&b, "\",arch=\"");
  escape_into(&b, s->labels[NL_ARCH]);
  carp_buf_puts(&b, "\",capacity_type=\"");
  escape_into(&b, *s->labels[NL_CAPACITY_TYPE] ? s->labels[NL_CAPACITY_TYPE]
                                               : "N/A");
  carp_buf_puts(&b, "\",instance_type=\"");
  escape_into(&b, s->labels[NL_INSTANCE_TYPE]);
  s->pod_labels = carp_buf_steal(&b, &s->pod_labels_len);
}

static const char NA_LABELS[] = "\",nodepool=\"N/A\",zone=\"N/A\",arch=\"N/A\","
                                "capacity_type=\"N/A\",instance_type=\"N/A";

/* The slow path, for a pod whose strings would need escaping. */
static void put_sample(struct carp_metric_writer *w, struct carp_metricsctl *m,
                       const struct carp_pod *p, const struct carp_mctl_node *n)
{
  const char *v[14];
  v[0] = p->meta.name;
  v[1] = p->meta.namespace ? p->meta.namespace : "";
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
  v[13] = NULL;
  carp_metric_writer_sample(w, v, 1);
}

#define BATCH_BYTES (64 * 1024)
#define LINE_BYTES  4096 /* room for one line (names are <= 253 bytes) */

/* A pod someone is likely to look for: not placed, not running or not
 * ready. These get their series first when there are more pods than
 * series allowed. */
static int needs_attention(const struct carp_pod *p)
{
  return !p->node_name || p->phase != CARP_POD_RUNNING || !p->ready;
}

/* Appends one pod's line to buf (flushed to w in BATCH_BYTES pieces). */
static void emit_pod(struct carp_metric_writer *w, struct carp_metricsctl *m,
                     const struct carp_pod *p, char *buf, size_t *lenp)
{
  const struct carp_objmeta *o = &p->meta;
  const struct carp_mctl_node *n = carp__mctl_node_of(m, p->node_name);
  const char *owner = owner_link(m, p);
  size_t len = *lenp, start = len;
  if (strlen(o->name) + strlen(owner) +
          (n ? n->pod_labels_len : sizeof(NA_LABELS)) + 600 >
      LINE_BYTES) {
    put_sample(w, m, p, n);
    return;
  }
  PUT_LIT(buf, &len, "karpenter_pods_state{name=\"");
  if (!put(buf, &len, o->name))
    goto slow;
  PUT_LIT(buf, &len, "\",namespace=\"");
  if (!put(buf, &len, o->namespace ? o->namespace : ""))
    goto slow;
  PUT_LIT(buf, &len, "\",owner=\"");
  if (!put(buf, &len, owner))
    goto slow;
  PUT_LIT(buf, &len, "\",node=\"");
  if (p->node_name) {
    if (!put(buf, &len, p->node_name))
      goto slow;
    PUT_LIT(buf, &len, "\",scheduled=\"true");
  } else {
    PUT_LIT(buf, &len, "\",scheduled=\"false");
  }
  if (n) {
    memcpy(buf + len, n->pod_labels, n->pod_labels_len);
    len += n->pod_labels_len;
  } else {
    PUT_LIT(buf, &len, NA_LABELS);
  }
  PUT_LIT(buf, &len, "\",phase=\"");
  put(buf, &len, phase_name(p->phase));
  if (p->ready)
    PUT_LIT(buf, &len, "\",ready=\"true");
  else
    PUT_LIT(buf, &len, "\",ready=\"false");
  if (n && !strcmp(n->labels[NL_MANAGED], "true"))
    PUT_LIT(buf, &len, "\",managed=\"true\"} 1\n");
  else
    PUT_LIT(buf, &len, "\",managed=\"false\"} 1\n");
  if (len >= BATCH_BYTES) {
    carp_metric_writer_raw(w, buf, len);
    len = 0;
  }
  *lenp = len;
  return;
slow:
  carp_metric_writer_raw(w, buf, start);
  *lenp = 0;
  put_sample(w, m, p, n);
}

/* One line per pod, composed into a batch and written in 64 KiB pieces:
 * the node-derived labels come preformatted from the snapshot. At most
 * pod_series_limit lines: pods that need attention first (pending, not
 * running, not ready), then the others in cache order; the number left
 * out is carpenter_pods_state_series_omitted. */
void carp__mctl_stream_pods(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  struct carp_store *pods = carp_informer_store(m->cluster->pods);
  struct carp_store_iter it;
  struct carp_objmeta *o;
  char *buf = carp_malloc(BATCH_BYTES + LINE_BYTES);
  size_t len = 0, emitted = 0, total = carp_store_len(pods);
  int pass;
  carp__mctl_snapshot(m, carp_metric_writer_scrape(w));
  for (pass = 0; pass < 2 && emitted < m->o.pod_series_limit; pass++) {
    carp_store_iter_init(&it);
    while (emitted < m->o.pod_series_limit &&
           (o = carp_store_next(pods, &it))) {
      const struct carp_pod *p = (const struct carp_pod *)o;
      if (needs_attention(p) != (pass == 0))
        continue;
      emit_pod(w, m, p, buf, &len);
      emitted++;
    }
  }
  carp_metric_writer_raw(w, buf, len);
  carp_free(buf);
  m->pods_omitted = total > emitted ? total - emitted : 0;
}

void carp__mctl_stream_pods_omitted(struct carp_metric_writer *w, void *arg)
{
  struct carp_metricsctl *m = arg;
  carp_metric_writer_sample(w, NULL, (double)m->pods_omitted);
}

/* Time since creation of each pod still waiting for something, computed
 * from the cache at each scrape (a pod done waiting, or deleted, simply has
 * no series), capped like karpenter_pods_state (pods left out are in cache
 * order). */
static void stream_waiting(struct carp_metric_writer *w,
                           struct carp_metricsctl *m,
                           int (*waits)(const struct carp_pod *p))
{
  struct carp_store *pods = carp_informer_store(m->cluster->pods);
  struct carp_store_iter it;
  struct carp_objmeta *o;
  int64_t now = carp_controller_now(&m->base);
  size_t emitted = 0;
  carp_store_iter_init(&it);
  while (emitted < m->o.pod_series_limit && (o = carp_store_next(pods, &it))) {
    const struct carp_pod *p = (const struct carp_pod *)o;
    if (carp_pod_is_terminal(p) || !o->creation_ms || !waits(p))
      continue;
    carp_metric_writer_sample(
        w, CARP_VALUES(o->name, o->namespace ? o->namespace : ""),
        now > o->creation_ms ? (double)(now - o->creation_ms) / 1000.0 : 0);
    emitted++;
  }
}

static int unbound(const struct carp_pod *p)
{
  return !p->node_name;
}

static int unstarted(const struct carp_pod *p)
{
  return !p->ready;
}

/* Karpenter sets the gauge for every pod whose PodScheduled is not True
 * and drops it when the pod binds or goes. */
void carp__mctl_stream_unbound(struct carp_metric_writer *w, void *arg)
{
  stream_waiting(w, arg, unbound);
}

/* Karpenter sets it for pods pending, or seen pending and not Ready yet,
 * and drops it when the pod is Ready, finished or gone. */
void carp__mctl_stream_unstarted(struct carp_metric_writer *w, void *arg)
{
  stream_waiting(w, arg, unstarted);
}

/* ---- durations ---- */

void carp__mctl_pod_event(struct carp_controller *c,
                          const struct carp_objmeta *old,
                          const struct carp_objmeta *obj, int deleted)
{
  struct carp_metricsctl *m = MCTL(c);
  const struct carp_pod *o = (const struct carp_pod *)old;
  const struct carp_pod *p = (const struct carp_pod *)obj;
  int64_t created = p->meta.creation_ms;
  if (!o || deleted || !created)
    return;
  /* Seen unbound, now bound: creation to PodScheduled=True. */
  if (!o->node_name && p->node_name) {
    int64_t at = p->scheduled_ms ? p->scheduled_ms : carp_controller_now(c);
    if (at >= created)
      carp_metric_observe(m->m_bound, NULL, (double)(at - created) / 1000.0);
    carp__mctl_provisioning_observe(m, m->m_prov_bound, p, at);
  }
  /* Seen not Ready, now Ready: creation to Ready=True. */
  if (!o->ready && p->ready && p->phase == CARP_POD_RUNNING) {
    int64_t at = p->ready_ms ? p->ready_ms : carp_controller_now(c);
    if (at >= created)
      carp_metric_observe(m->m_startup, NULL, (double)(at - created) / 1000.0);
    carp__mctl_provisioning_observe(m, m->m_prov_startup, p, at);
  }
  /* Ready or finished: the provisioner's times of the pod have done their
   * job. */
  if ((p->ready && p->phase == CARP_POD_RUNNING) || carp_pod_is_terminal(p))
    carp_cluster_pod_forget(m->cluster, p->meta.uid);
}
