/* provisioner.c: the provisioning controller (see
 * include/carpenter/provisioner.h).
 *
 * A batch runs synchronously on the loop: collect the provisionable pods,
 * build the problem, solve, then issue every NodeClaim create at once.
 * Expectations and nominations are recorded when a create is sent, not
 * when it succeeds, so a batch that closes while creates are still in
 * flight already counts them (no double provisioning); a failed create
 * withdraws them and starts another batch.
 *
 * A nominated pod is not provisioned for again while its nomination lasts
 * (problem.c's runaway guard). When such a pod has not bound well after
 * its Node came, the provisioner says why: a Warning event on the pod, a
 * log line per batch and a gauge. Batches repeat while pods are headed
 * somewhere, so a lapsed nomination and a late reason are both seen.
 *
 * On the controller skeleton it is a one-key controller: the batcher's
 * window closing queues the key, and a batch that wants another look
 * requeues it after the time it wants. */
#include "carpenter/provisioner.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/batcher.h"
#include "carpenter/controller.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeoverlay.h"
#include "carpenter/rand.h"
#include "buffers.h"
#include "claim.h"
#include "fold.h"
#include "problem.h"

#define RETRY_MS 10000 /* pods left pending: look again */
/* The nomination window: a pod provisioned for is not provisioned for
 * again before it lapses (Karpenter's registration TTL, so a launch that
 * never registers frees its pods when its NodeClaim goes). */
#define NOMINATION_TTL_MS (15 * 60 * 1000)
/* How long a nominated pod may stay unbound after its Node came before it
 * is reported: the not-ready taint's monitor period (5 s) plus the
 * kube-scheduler's longest backoff (10 s), twice over. */
#define WAIT_GRACE_MS       30000
#define MAX_LOG_GROUPS      10 /* folded lines per batch and kind */
#define MAX_CREATE_ATTEMPTS 3  /* name collisions */
#define BATCH_KEY           "batch"
#define NOMINATED_QPS       5.0 /* Nominated events, across pods */
#define NOMINATED_BURST     10

struct carp_provisioner {
  struct carp_controller base;
  struct carp_provisioner_options o;
  struct carp_batcher *batcher;
  struct carp_metric *m_duration;
  struct carp_metric *m_queue;
  struct carp_metric *m_unschedulable;
  double unschedulable; /* the last batch's count, for m_unschedulable */
  struct carp_metric *m_created;
  struct carp_metric *m_waiting;
  double waiting[CARP_PROV_WAIT_N]; /* the last batch's, for m_waiting */
  struct carp_metric *m_ignored;
  double ignored; /* the last batch's, for m_ignored */
  /* karpenter_scheduler_pending_pods_by_effective_zone_count: the last
   * solve's pending pods by effective zone. */
  struct carp_metric *m_zones;
  struct zone_count *zones;
  size_t nzones;
  /* karpenter_pods_scheduling_decision_duration_seconds: at a pod's first
   * decision, from when it was first seen pending (the cluster state's pod
   * times, which the pod metrics read too). */
  struct carp_metric *m_decision;
  /* The first batch since leading acks every pending pod (the cluster
   * state's first sight, as Karpenter's provisioner acks them); after it,
   * the pod events ack the pods that come, which saves a lookup per
   * waiting pod on every batch. */
  int acked;
};

struct zone_count {
  char *zone;
  double pods;
};

#define PROV(c) carp_container_of(c, struct carp_provisioner, base)

struct create {
  struct carp_provisioner *p;
  char *name;
  char *nodepool;
  char *body; /* JSON with "__NAME__" still to fill */
  char **pod_uids;
  size_t npods;
  struct carp_resources capacity;
  int attempts;
};

/* ---- triggers ---- */

static void trigger(struct carp_provisioner *p, const char *key)
{
  if (carp_controller_acting(&p->base))
    carp_batcher_trigger(p->batcher, key);
}

/* The pod's first decision (a node, a NodeClaim or none fits): from when
 * it was first seen pending. Each decision also tells the cluster state
 * whether the pod has a place (Karpenter's MarkPodSchedulingDecisions). */
static void decided(struct carp_provisioner *p, const struct carp_pod *pod,
                    int schedulable)
{
  int64_t waited = 0;
  if (carp_cluster_pod_decide(p->base.env.cluster, pod, schedulable, &waited))
    carp_metric_observe(p->m_decision, NULL, (double)waited / 1000.0);
}

static void zones_clear(struct carp_provisioner *p)
{
  size_t i;
  for (i = 0; i < p->nzones; i++)
    carp_free(p->zones[i].zone);
  CARP_FREE(&p->zones);
  p->nzones = 0;
}

/* The solve's pending pods (not a buffer's, not bound) by effective zone;
 * the zones are few (the cluster's hosts, "flexible", "none"). */
static void count_zones(struct carp_provisioner *p,
                        const struct carp_prov_problem *pr,
                        const struct carp_sched_result *res)
{
  size_t i, k;
  zones_clear(p);
  for (i = 0; i < pr->p.npods; i++) {
    const struct carp_pod *pod = pr->pods[i];
    const char *z = res->effective_zones[i];
    if (carp_pod_is_virtual(pod) || pod->node_name ||
        pod->phase != CARP_POD_PENDING)
      continue;
    for (k = 0; k < p->nzones && strcmp(p->zones[k].zone, z); k++)
      ;
    if (k == p->nzones) {
      p->zones = carp_reallocarray(p->zones, p->nzones + 1, sizeof(*p->zones));
      p->zones[k].zone = carp_strdup(z);
      p->zones[k].pods = 0;
      p->nzones++;
    }
    p->zones[k].pods++;
  }
}

/* Karpenter's validateKarpenterManagedLabelCanExist: a pod that requires
 * karpenter.sh/nodepool DoesNotExist (in the node affinity term Karpenter
 * schedules by, the first) asks not to run on a node of ours - a
 * Karpenter replica, say. It is ignored: not solved, not counted
 * unschedulable, counted in karpenter_scheduler_ignored_pods_count. */
static int ignored_pod(const struct carp_pod *pod)
{
  uint32_t i;
  if (!pod->spec || !pod->spec->nrequired)
    return 0;
  for (i = 0; i < pod->spec->required[0].n; i++)
    if (!strcmp(pod->spec->required[0].reqs[i].key, CARP_LABEL_NODEPOOL_KEY) &&
        pod->spec->required[0].reqs[i].op == CARP_OP_DOES_NOT_EXIST)
      return 1;
  return 0;
}

/* A pending pod whose update changes nothing a batch reads: the
 * kube-scheduler rewrites PodScheduled's message ("0/N nodes are
 * available...") each time it retries a pod and N has moved, so while
 * hundreds of nodes join, each pending pod is updated again and again.
 * Karpenter starts a batch window on each; a pod left pending is looked at
 * again after RETRY_MS anyway. Spec and labels are interned: the same
 * pointers mean the same content. */
static int same_to_a_batch(const struct carp_pod *old, const struct carp_pod *p)
{
  return old && carp_pod_is_provisionable(old) && old->spec == p->spec &&
         old->meta.labels == p->meta.labels &&
         old->meta.annotations == p->meta.annotations;
}

static void pod_event(struct carp_controller *c, const struct carp_objmeta *old,
                      const struct carp_objmeta *obj, int deleted)
{
  const struct carp_pod *p = (const struct carp_pod *)obj;
  size_t nvirtual;
  if (deleted)
    return;
  if (carp_pod_is_provisionable(p)) {
    carp_cluster_pod_ack(c->env.cluster, p);
    if (!same_to_a_batch((const struct carp_pod *)old, p))
      trigger(PROV(c), obj->uid);
    return;
  }
  /* A pod took room on a node: a CapacityBuffer may have held it. */
  carp_cluster_virtual_pods(c->env.cluster, &nvirtual);
  if (nvirtual && p->node_name &&
      (!old || !((const struct carp_pod *)old)->node_name))
    trigger(PROV(c), NULL);
}

static int has_disrupted_taint(const struct carp_node *n)
{
  uint32_t i;
  for (i = 0; i < n->ntaints; i++)
    if (!strcmp(n->taints[i].key, CARP_TAINT_DISRUPTED))
      return 1;
  return 0;
}

/* Capacity went away, or a node started to go (deleted, or tainted for
 * disruption): its pods are provisioned for now, before the drain evicts
 * them. */
static void node_event(struct carp_controller *c,
                       const struct carp_objmeta *old,
                       const struct carp_objmeta *obj, int deleted)
{
  const struct carp_node *o = (const struct carp_node *)old;
  const struct carp_node *n = (const struct carp_node *)obj;
  if (deleted || (o && ((n->meta.deletion_ms && !o->meta.deletion_ms) ||
                        (has_disrupted_taint(n) && !has_disrupted_taint(o)))))
    trigger(PROV(c), NULL);
}

static void claim_event(struct carp_controller *c,
                        const struct carp_objmeta *old,
                        const struct carp_objmeta *obj, int deleted)
{
  if (deleted || (old && obj->deletion_ms && !old->deletion_ms))
    trigger(PROV(c), NULL);
}

/* A NodeOverlay came into force or left it: the types the pending pods
 * were judged against changed (a capacity overlay may make one fit). */
static void overlay_event(struct carp_controller *c,
                          const struct carp_objmeta *old,
                          const struct carp_objmeta *obj, int deleted)
{
  int was =
      old && carp_nodeoverlay_in_force((const struct carp_nodeoverlay *)old);
  int is = !deleted &&
           carp_nodeoverlay_in_force((const struct carp_nodeoverlay *)obj);
  if (was != is)
    trigger(PROV(c), NULL);
}

void carp_provisioner_trigger(struct carp_controller *c)
{
  trigger(PROV(c), NULL);
}

/* The window closed: the batch runs as the key's reconcile. */
static void on_window(size_t triggers, void *arg)
{
  struct carp_provisioner *p = arg;
  (void)triggers;
  carp_controller_enqueue(&p->base, BATCH_KEY);
}

/* ---- creating NodeClaims ---- */

static void random_suffix(char out[6])
{
  static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  int i;
  for (i = 0; i < 5; i++)
    out[i] = chars[carp_rand_below(carp_rand_global(), sizeof(chars) - 1)];
  out[5] = '\0';
}

static void create_free(struct create *cr)
{
  size_t i;
  for (i = 0; i < cr->npods; i++)
    carp_free(cr->pod_uids[i]);
  carp_free(cr->pod_uids);
  carp_free(cr->name);
  carp_free(cr->nodepool);
  carp_free(cr->body);
  carp_resources_cleanup(&cr->capacity);
  carp_free(cr);
}

static int send_create(struct create *cr);

static void withdraw(struct create *cr)
{
  struct carp_cluster *cluster = cr->p->base.env.cluster;
  size_t i;
  /* The claim was never made: free what the batch counted. */
  carp_cluster_forget_claim(cluster, cr->name);
  for (i = 0; i < cr->npods; i++)
    carp_cluster_nominate(cluster, cr->pod_uids[i], cr->name, 0);
}

static void on_created(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  struct create *cr = arg;
  struct carp_provisioner *p = cr->p;
  (void)key;
  if (res->err == CARP_EEXIST && cr->attempts < MAX_CREATE_ATTEMPTS &&
      !c->closing) {
    /* A name taken: pick another and send again. */
    withdraw(cr);
    if (send_create(cr) == 0)
      return;
  }
  if (res->err) {
    CARP_LOG_ERROR("provisioner", "creating nodeclaim failed",
                   CARP_F_STR("nodeclaim", cr->name),
                   CARP_F_STR("nodepool", cr->nodepool), CARP_F_ERR(res->err),
                   CARP_F_STR("message", res->message));
    withdraw(cr);
    carp_controller_enqueue_after(c, BATCH_KEY, 1000);
  } else {
    CARP_LOG_INFO(
        "provisioner", "created nodeclaim", CARP_F_STR("nodeclaim", cr->name),
        CARP_F_STR("nodepool", cr->nodepool), CARP_F_UINT("pods", cr->npods));
    carp_metric_add(p->m_created,
                    CARP_VALUES("provisioning", cr->nodepool, "false"), 1);
  }
  create_free(cr);
}

/* Fills in a fresh name, records the expectation and nominations, and
 * sends the create. */
static int send_create(struct create *cr)
{
  struct carp_provisioner *p = cr->p;
  struct carp_cluster *cluster = p->base.env.cluster;
  struct carp_kube_ref ref = carp_ref_nodeclaim(NULL, NULL);
  struct carp_buf name, body;
  char suffix[6];
  const char *at;
  size_t i;
  int rc;

  random_suffix(suffix);
  carp_buf_init(&name, 512);
  carp_buf_printf(&name, "%s-%s", cr->nodepool, suffix);
  carp_free(cr->name);
  cr->name = carp_buf_steal(&name, NULL);
  /* The body was encoded with a placeholder name. */
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  at = strstr(cr->body, "\"__NAME__\"");
  carp_buf_append(&body, cr->body, (size_t)(at - cr->body));
  carp_buf_printf(&body, "\"%s\"", cr->name);
  carp_buf_puts(&body, at + 10);
  cr->attempts++;
  carp_cluster_expect_claim(cluster, cr->name, cr->nodepool, &cr->capacity);
  for (i = 0; i < cr->npods; i++)
    carp_cluster_nominate(cluster, cr->pod_uids[i], cr->name,
                          NOMINATION_TTL_MS);
  rc = carp_write_create(&p->base, NULL, &ref, body.ptr, body.len, on_created,
                         cr);
  carp_buf_free(&body);
  if (rc)
    withdraw(cr);
  return rc;
}

static void start_create(struct carp_provisioner *p,
                         struct carp_prov_problem *pr,
                         const struct carp_sched_claim *cl)
{
  const struct carp_nodepool *pool = pr->pools[cl->nodepool];
  struct create *cr;
  struct carp_buf body;
  size_t i;
  int rc;

  cr = CARP_NEW(struct create);
  cr->p = p;
  cr->nodepool = carp_strdup(pool->meta.name);
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_prov_claim_encode(pr, p->base.env.cluster, cl, 0, &body,
                              &cr->capacity, NULL, NULL);
  if (rc) {
    CARP_LOG_ERROR("provisioner", "cannot encode nodeclaim", CARP_F_ERR(rc),
                   CARP_F_STR("nodepool", pool->meta.name));
    carp_buf_free(&body);
    create_free(cr);
    return;
  }
  cr->body = carp_buf_steal(&body, NULL);
  cr->pod_uids = carp_calloc(cl->npods + 1, sizeof(char *));
  for (i = 0; i < cl->npods; i++)
    if (!carp_pod_is_virtual(pr->pods[cl->pods[i]]))
      cr->pod_uids[cr->npods++] = carp_strdup(pr->pods[cl->pods[i]]->meta.uid);
  if (send_create(cr)) {
    create_free(cr);
    return;
  }
  /* Tell the pods where they are going (a buffer's are not objects). */
  for (i = 0; i < cl->npods; i++)
    if (!carp_pod_is_virtual(pr->pods[cl->pods[i]]))
      carp_controller_event(&p->base, &pr->pods[cl->pods[i]]->meta, "v1",
                            CARP_EVENT_NORMAL, "Nominated",
                            "Pod should schedule on: nodeclaim/%s", cr->name);
}

/* ---- the batch ---- */

/* One line per group of pods that share a reason. */
static void log_folded(enum carp_log_level level, const char *msg,
                       const struct carp_prov_fold *f)
{
  size_t i;
  for (i = 0; i < f->n && i < MAX_LOG_GROUPS; i++)
    CARP_LOG(level, "provisioner", msg, CARP_F_UINT("pods", f->groups[i].count),
             CARP_F_STR("reason", f->groups[i].key),
             CARP_F_STR("examples", carp_buf_cstr(&f->groups[i].examples)));
  if (f->n > MAX_LOG_GROUPS)
    CARP_LOG(level, "provisioner", msg,
             CARP_F_UINT("moreReasons", f->n - MAX_LOG_GROUPS));
}

/* Returns how many real pods fit nowhere (a buffer's are its status'). */
static size_t report_unschedulable(struct carp_provisioner *p,
                                   struct carp_prov_problem *pr,
                                   const struct carp_sched_result *res)
{
  struct carp_prov_fold f;
  size_t i, n = 0;
  carp_prov_fold_init(&f);
  for (i = 0; i < res->nunschedulable; i++) {
    const struct carp_sched_unschedulable *u = &res->unschedulable[i];
    const struct carp_pod *pod = pr->pods[u->pod];
    if (carp_pod_is_virtual(pod))
      continue;
    n++;
    carp_prov_fold_add(&f, u->message, pod->meta.key);
    carp_controller_event(&p->base, &pod->meta, "v1", CARP_EVENT_WARNING,
                          "FailedScheduling", "Failed to schedule pod, %s",
                          u->message);
  }
  log_folded(CARP_LOG_INFO, "could not schedule pods", &f);
  carp_prov_fold_free(&f);
  return n;
}

/* Pods headed for a Node that has not taken them well after it came:
 * each is told once per nomination (a Warning event naming the node and
 * what keeps it out), the log gets one line per reason, and the gauge the
 * count per kind of reason. A pod is told at the first look-over after its
 * grace, up to RETRY_MS late: waking at each node's own time cost a pass
 * over every pending pod per node joining (32 passes instead of 11 while
 * 5,000 pods bound). */
static void report_waiting(struct carp_provisioner *p,
                           struct carp_prov_problem *pr)
{
  struct carp_prov_fold f;
  struct carp_buf why;
  int64_t now = carp_controller_now(&p->base);
  size_t i;
  memset(p->waiting, 0, sizeof(p->waiting));
  carp_prov_fold_init(&f);
  carp_buf_init(&why, 4096);
  for (i = 0; i < pr->nheaded; i++) {
    const struct carp_prov_headed *h = &pr->headed[i];
    const struct carp_node *node = pr->node_objs[h->slot];
    enum carp_prov_wait w;
    int64_t from;
    if (!node)
      continue;
    from = node->meta.creation_ms > h->since_ms ? node->meta.creation_ms
                                                : h->since_ms;
    if (from + WAIT_GRACE_MS > now)
      continue;
    carp_buf_reset(&why);
    w = carp_prov_why_waiting(pr, h, &why);
    if (w == CARP_PROV_WAIT_NONE)
      continue;
    p->waiting[w]++;
    if (!carp_cluster_nomination_report(p->base.env.cluster, h->pod->meta.uid))
      continue;
    carp_prov_fold_add(&f, carp_buf_cstr(&why), h->pod->meta.key);
    carp_controller_event(
        &p->base, &h->pod->meta, "v1", CARP_EVENT_WARNING, "WaitingForNode",
        "Pod was provisioned for and waits for node %s: %s; no other "
        "capacity is launched for it for %lld s",
        node->meta.name, carp_buf_cstr(&why),
        (long long)((h->until_ms - now) / 1000));
  }
  log_folded(CARP_LOG_WARN, "pods provisioned for are not binding", &f);
  carp_prov_fold_free(&f);
  carp_buf_free(&why);
}

/* The provisionable pods, then every virtual pod (*nvirtual of them). */
static size_t collect_pending(struct carp_provisioner *p,
                              const struct carp_pod ***out, size_t *nvirtual)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  const struct carp_pod **v = NULL;
  size_t n = 0, cap = 0, ignored = 0;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(p->base.env.cluster->pods),
                              &it))) {
    const struct carp_pod *pod = (const struct carp_pod *)m;
    if (!carp_pod_is_provisionable(pod))
      continue;
    if (ignored_pod(pod)) {
      CARP_LOG_DEBUG("provisioner", "ignoring pod",
                     CARP_F_STR("pod", pod->meta.name),
                     CARP_F_STR("namespace", pod->meta.namespace),
                     CARP_F_STR("reason", "configured to not run on a "
                                          "Karpenter provisioned node"));
      ignored++;
      continue;
    }
    if (!p->acked)
      carp_cluster_pod_ack(p->base.env.cluster, pod);
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      v = carp_reallocarray(v, cap, sizeof(*v));
    }
    v[n++] = pod;
  }
  p->ignored = (double)ignored;
  p->acked = 1;
  *nvirtual = carp_prov_add_virtual(p->base.env.cluster, &v, n, &cap);
  *out = v;
  return n + *nvirtual;
}

static void nominate_existing(struct carp_provisioner *p,
                              struct carp_prov_problem *pr,
                              const struct carp_sched_result *res)
{
  size_t i;
  for (i = 0; i < pr->p.npods; i++) {
    const struct carp_sched_assignment *a = &res->assignments[i];
    const char *target;
    if (a->target != CARP_SCHED_ON_NODE || carp_pod_is_virtual(pr->pods[i]))
      continue;
    target = pr->node_names[a->index];
    carp_cluster_nominate(p->base.env.cluster, pr->pods[i]->meta.uid, target,
                          NOMINATION_TTL_MS);
    carp_controller_event(&p->base, &pr->pods[i]->meta, "v1", CARP_EVENT_NORMAL,
                          "Nominated", "Pod should schedule on: %s/%s",
                          pr->node_is_claim[a->index] ? "nodeclaim" : "node",
                          target);
  }
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct carp_provisioner *p = PROV(c);
  struct carp_prov_problem pr;
  struct carp_prov_input in;
  struct carp_sched_result *res = NULL;
  const struct carp_pod **pending = NULL;
  uint64_t start, again = 0;
  size_t npending, nvirtual, buffers_waiting = 0, i;
  int rc;

  npending = collect_pending(p, &pending, &nvirtual);
  carp_metric_set(p->m_queue, CARP_VALUES("provisioner"),
                  (double)(npending - nvirtual));
  start = carp_controller_mono(c);
  memset(&in, 0, sizeof(in));
  in.pending = pending;
  in.npending = npending;
  in.ignore_preferences = p->o.ignore_preferences;
  in.stop_when_all_headed = 1;
  carp_prov_problem_build(&pr, c->env.cluster, c->env.provider, &in);
  report_waiting(p, &pr);
  if (!pr.p.npods) {
    /* Nothing to place: every pod is headed somewhere (or none waits). */
    p->unschedulable = 0;
    zones_clear(p);
    if (pr.nheaded)
      again = RETRY_MS;
    goto done;
  }
  rc = carp_sched_solve(&pr.p, &res);
  carp_metric_observe(p->m_duration, CARP_VALUES("provisioner"),
                      (double)(carp_controller_mono(c) - start) / 1000.0);
  if (rc) {
    CARP_LOG_ERROR("provisioner", "scheduling simulation failed",
                   CARP_F_ERR(rc));
    again = RETRY_MS;
    goto done;
  }
  CARP_LOG(res->nclaims ? CARP_LOG_INFO : CARP_LOG_DEBUG, "provisioner",
           "computed new nodeclaim(s) to fit pod(s)",
           CARP_F_UINT("pods", pr.p.npods - nvirtual),
           CARP_F_UINT("bufferPods", nvirtual),
           CARP_F_UINT("nominatedBefore", pr.nheaded),
           CARP_F_UINT("onDeletingNodes", pr.nmoving),
           CARP_F_UINT("nodeclaims", res->nclaims),
           CARP_F_UINT("unschedulable", res->nunschedulable),
           CARP_F_DURATION("took", carp_controller_mono(c) - start));
  count_zones(p, &pr, res);
  for (i = 0; i < pr.p.npods; i++)
    if (!carp_pod_is_virtual(pr.pods[i]))
      decided(p, pr.pods[i],
              res->assignments[i].target != CARP_SCHED_UNSCHEDULED);
  nominate_existing(p, &pr, res);
  for (i = 0; i < res->nclaims; i++)
    start_create(p, &pr, &res->claims[i]);
  p->unschedulable = (double)report_unschedulable(p, &pr, res);
  /* Pods that fit nowhere are tried again later (capacity may free up,
   * limits may change) without waiting for a pod event; so are pods
   * headed somewhere, whose nomination may lapse or whose node may need
   * reporting, and buffers whose room is not on Ready nodes yet. */
  if (nvirtual)
    buffers_waiting = carp_prov_buffers_placed(c->env.cluster, &pr, res);
  if (res->nunschedulable || pr.nheaded || res->nclaims || buffers_waiting)
    again = RETRY_MS;
  if (nvirtual && p->o.on_buffers_placed)
    p->o.on_buffers_placed(p->o.on_buffers_placed_arg);
done:
  carp_sched_result_free(res);
  carp_prov_problem_free(&pr);
  carp_free(pending);
  if (again)
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER, again);
  else
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
}

/* ---- lifecycle ---- */

static void stream_unschedulable(struct carp_metric_writer *w, void *arg)
{
  struct carp_provisioner *p = arg;
  carp_metric_writer_sample(w, CARP_VALUES("provisioner"), p->unschedulable);
}

static void stream_ignored(struct carp_metric_writer *w, void *arg)
{
  struct carp_provisioner *p = arg;
  carp_metric_writer_sample(w, NULL, p->ignored);
}

static void stream_waiting(struct carp_metric_writer *w, void *arg)
{
  struct carp_provisioner *p = arg;
  int i;
  for (i = 1; i < CARP_PROV_WAIT_N; i++)
    carp_metric_writer_sample(w, CARP_VALUES(carp_prov_wait_name(i)),
                              p->waiting[i]);
}

static void stream_zones(struct carp_metric_writer *w, void *arg)
{
  struct carp_provisioner *p = arg;
  size_t i;
  for (i = 0; i < p->nzones; i++)
    carp_metric_writer_sample(w, CARP_VALUES("provisioner", p->zones[i].zone),
                              p->zones[i].pods);
}

static void activated(struct carp_controller *c)
{
  /* Leading now: whatever is pending gets a batch at once. */
  PROV(c)->acked = 0;
  carp_controller_enqueue(c, BATCH_KEY);
}

static void on_batcher_closed(void *arg)
{
  carp_controller_release(arg);
}

static void cancel(struct carp_controller *c)
{
  struct carp_provisioner *p = PROV(c);
  carp_controller_hold(c);
  carp_batcher_close(p->batcher, on_batcher_closed, c);
}

static void prov_free(struct carp_controller *c)
{
  struct carp_provisioner *p = PROV(c);
  if (p->m_unschedulable)
    carp_metric_stream_detach(p->m_unschedulable);
  if (p->m_waiting)
    carp_metric_stream_detach(p->m_waiting);
  if (p->m_ignored)
    carp_metric_stream_detach(p->m_ignored);
  if (p->m_zones)
    carp_metric_stream_detach(p->m_zones);
  zones_clear(p);
  carp_free(p);
}

static const struct carp_controller_def provisioner_def = {
    .name = "provisioner",
    .log_module = "provisioner",
    .reconcile = reconcile,
    .activated = activated,
    .cancel = cancel,
    .free = prov_free,
};

int carp_provisioner_new(const struct carp_controller_env *env,
                         const struct carp_provisioner_options *o,
                         struct carp_controller **out)
{
  struct carp_provisioner *p;
  int rc;
  if (!env || !env->provider || !o || !out)
    return CARP_EINVAL;
  p = CARP_NEW(struct carp_provisioner);
  p->o = *o;
  rc = carp_batcher_new(env->loop, env->clock, o->batch_idle_ms,
                        o->batch_max_ms, on_window, p, &p->batcher);
  if (rc) {
    carp_free(p);
    return rc;
  }
  rc = carp_controller_init(&p->base, env, &provisioner_def);
  if (rc) {
    carp_batcher_close(p->batcher, NULL, NULL);
    carp_free(p);
    return rc;
  }
  /* Karpenter's PodNominationRateLimiter: every pending pod of a
   * scale-out is nominated, and an event each was a third of the API
   * requests of a 1,000-pod scale-out. */
  if (env->recorder)
    carp_recorder_limit_reason(env->recorder, "Nominated", NOMINATED_QPS,
                               NOMINATED_BURST);
  carp_controller_watch(&p->base, env->cluster->pods, pod_event);
  carp_controller_watch(&p->base, env->cluster->nodeclaims, claim_event);
  carp_controller_watch(&p->base, env->cluster->nodes, node_event);
  if (env->cluster->nodeoverlays)
    carp_controller_watch(&p->base, env->cluster->nodeoverlays, overlay_event);
  if (env->metrics) {
    struct carp_metrics *m = env->metrics;
    p->m_duration = carp_metrics_histogram(
        m, "karpenter_scheduler_scheduling_duration_seconds",
        "Duration of scheduling simulations used for deprovisioning and "
        "provisioning in seconds.",
        CARP_LABELS("controller"), carp_metrics_duration_buckets,
        carp_metrics_duration_buckets_len);
    p->m_queue = carp_metrics_gauge(
        m, "karpenter_scheduler_queue_depth",
        "The number of pods currently waiting to be scheduled.",
        CARP_LABELS("controller"));
    /* Karpenter's name ends in _count, which promtool reserves for
     * histograms and summaries: exported untyped (read as a gauge). */
    p->m_unschedulable = carp_metrics_stream(
        m, "karpenter_scheduler_unschedulable_pods_count",
        "The number of unschedulable Pods.", CARP_METRIC_UNTYPED,
        CARP_LABELS("controller"), stream_unschedulable, p);
    p->m_created = carp_metric_nodeclaims_created(m);
    p->m_waiting = carp_metrics_stream(
        m, "carpenter_provisioner_pods_waiting_for_node",
        "Pods provisioned for that have not bound to their node well after "
        "it came, by what keeps them out (not_registered, not_ready, "
        "taint). No new capacity is launched for them until their "
        "nomination lapses.",
        CARP_METRIC_GAUGE, CARP_LABELS("reason"), stream_waiting, p);
    p->m_ignored = carp_metrics_stream(
        m, "karpenter_scheduler_ignored_pods_count",
        "Number of pods ignored during scheduling by Karpenter",
        CARP_METRIC_UNTYPED, NULL, stream_ignored, p);
    p->m_zones = carp_metrics_stream(
        m, "karpenter_scheduler_pending_pods_by_effective_zone_count",
        "Pending pods dimensioned by effective zone constraint, or the "
        "intersection of pod-level zone signals, volume topology (PVC "
        "zones), and topology constraints. Values: specific zone name (e.g., "
        "'us-west-2a'), 'flexible' (multiple zones), or 'none' (no valid "
        "intersection).",
        CARP_METRIC_UNTYPED, CARP_LABELS("controller", "zone"), stream_zones,
        p);
    p->m_decision = carp_metrics_histogram(
        m, "karpenter_pods_scheduling_decision_duration_seconds",
        "The time it takes for Karpenter to first try to schedule a pod "
        "after it's been seen.",
        NULL, carp_metrics_duration_buckets, carp_metrics_duration_buckets_len);
  }
  *out = &p->base;
  return 0;
}
