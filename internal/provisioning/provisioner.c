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
 * somewhere, so a lapsed nomination and a late reason are both seen. */
#include "carpenter/provisioner.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/batcher.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/rand.h"
#include "carpenter/timeutil.h"
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
#define MAX_LOG_GROUPS      10  /* folded lines per batch and kind */
#define MAX_OPTIONS         100 /* instance types written on a claim */
#define MAX_CREATE_ATTEMPTS 3   /* name collisions */

struct carp_provisioner {
  uv_loop_t *loop;
  struct carp_cluster *cluster;
  struct carp_kube *kube;
  struct carp_provider *provider;
  struct carp_provisioner_options o;
  struct carp_batcher *batcher;
  uv_timer_t retry;
  int active;
  int closing;
  int creates; /* in flight */
  int handles;
  void (*close_cb)(void *arg);
  void *close_arg;
  struct carp_metric *m_duration;
  struct carp_metric *m_queue;
  struct carp_metric *m_unschedulable;
  double unschedulable; /* the last batch's count, for m_unschedulable */
  struct carp_metric *m_created;
  struct carp_metric *m_waiting;
  double waiting[CARP_PROV_WAIT_N]; /* the last batch's, for m_waiting */
};

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

static void maybe_closed(struct carp_provisioner *p);

/* ---- triggers ---- */

static void pod_changed(struct carp_objmeta *obj, void *arg)
{
  struct carp_provisioner *p = arg;
  const struct carp_pod *pod = (const struct carp_pod *)obj;
  if (p->active && carp_pod_is_provisionable(pod))
    carp_batcher_trigger(p->batcher, obj->uid);
}

static void pod_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                        void *arg)
{
  pod_changed(obj, arg);
}

/* Capacity went away: pods may need new homes. */
static void capacity_gone(struct carp_objmeta *obj, void *arg)
{
  struct carp_provisioner *p = arg;
  if (p->active)
    carp_batcher_trigger(p->batcher, NULL);
}

static int has_disrupted_taint(const struct carp_node *n)
{
  uint32_t i;
  for (i = 0; i < n->ntaints; i++)
    if (!strcmp(n->taints[i].key, CARP_TAINT_DISRUPTED))
      return 1;
  return 0;
}

/* A node started to go (deleted, or tainted for disruption): its pods
 * are provisioned for now, before the drain evicts them. */
static void node_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                         void *arg)
{
  const struct carp_node *o = (const struct carp_node *)old;
  const struct carp_node *n = (const struct carp_node *)obj;
  if ((n->meta.deletion_ms && !o->meta.deletion_ms) ||
      (has_disrupted_taint(n) && !has_disrupted_taint(o)))
    capacity_gone(obj, arg);
}

static void claim_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                          void *arg)
{
  if (obj->deletion_ms && !old->deletion_ms)
    capacity_gone(obj, arg);
}

static void on_retry(uv_timer_t *t)
{
  struct carp_provisioner *p = t->data;
  if (p->active)
    carp_batcher_trigger(p->batcher, NULL);
}

void carp_provisioner_trigger(struct carp_provisioner *p)
{
  if (p->active && !p->closing)
    carp_batcher_trigger(p->batcher, NULL);
}

void carp_provisioner_set_active(struct carp_provisioner *p, int active)
{
  p->active = active;
  if (active)
    carp_provisioner_trigger(p);
  else
    uv_timer_stop(&p->retry);
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
  struct carp_provisioner *p = cr->p;
  size_t i;
  /* The claim was never made: free the capacity the batch counted. */
  carp_cluster_expect_claim(p->cluster, cr->name, cr->nodepool,
                            &(struct carp_resources){0});
  for (i = 0; i < cr->npods; i++)
    carp_cluster_nominate(p->cluster, cr->pod_uids[i], cr->name, 0);
}

static void on_created(const struct carp_kube_result *res, void *arg)
{
  struct create *cr = arg;
  struct carp_provisioner *p = cr->p;
  p->creates--;
  if (res->err == CARP_EEXIST && cr->attempts < MAX_CREATE_ATTEMPTS &&
      !p->closing) {
    /* A name taken: pick another and send again. */
    withdraw(cr);
    p->creates++;
    if (send_create(cr) == 0)
      return;
    p->creates--;
  }
  if (res->err) {
    CARP_LOG_ERROR("provisioner", "creating nodeclaim failed",
                   CARP_F_STR("nodeclaim", cr->name),
                   CARP_F_STR("nodepool", cr->nodepool), CARP_F_ERR(res->err),
                   CARP_F_STR("message", res->message));
    withdraw(cr);
    if (p->active && !p->closing)
      uv_timer_start(&p->retry, on_retry, 1000, 0);
  } else {
    CARP_LOG_INFO(
        "provisioner", "created nodeclaim", CARP_F_STR("nodeclaim", cr->name),
        CARP_F_STR("nodepool", cr->nodepool), CARP_F_UINT("pods", cr->npods));
    carp_metric_add(p->m_created,
                    CARP_VALUES("provisioning", cr->nodepool, "false"), 1);
  }
  create_free(cr);
  maybe_closed(p);
}

/* Fills in a fresh name, records the expectation and nominations, and
 * sends the create. */
static int send_create(struct create *cr)
{
  struct carp_provisioner *p = cr->p;
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims"};
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
  carp_cluster_expect_claim(p->cluster, cr->name, cr->nodepool, &cr->capacity);
  for (i = 0; i < cr->npods; i++)
    carp_cluster_nominate(p->cluster, cr->pod_uids[i], cr->name,
                          NOMINATION_TTL_MS);
  rc = carp_kube_create(p->kube, &ref, body.ptr, body.len, on_created, cr);
  carp_buf_free(&body);
  if (rc)
    withdraw(cr);
  return rc;
}

static enum carp_op op_back(enum carp_sched_op op)
{
  switch (op) {
  case CARP_SCHED_OP_IN:
    return CARP_OP_IN;
  case CARP_SCHED_OP_NOT_IN:
    return CARP_OP_NOT_IN;
  case CARP_SCHED_OP_EXISTS:
    return CARP_OP_EXISTS;
  case CARP_SCHED_OP_DOES_NOT_EXIST:
    return CARP_OP_DOES_NOT_EXIST;
  case CARP_SCHED_OP_GT:
    return CARP_OP_GT;
  case CARP_SCHED_OP_LT:
    return CARP_OP_LT;
  case CARP_SCHED_OP_GTE:
    return CARP_OP_GTE;
  case CARP_SCHED_OP_LTE:
    return CARP_OP_LTE;
  }
  return CARP_OP_IN;
}

static void start_create(struct carp_provisioner *p,
                         struct carp_prov_problem *pr,
                         const struct carp_sched_result *res,
                         const struct carp_sched_claim *cl)
{
  const struct carp_nodepool *pool = pr->pools[cl->nodepool];
  struct carp_requirement *reqs =
      carp_arena_array(&pr->arena, cl->nrequirements + 1, sizeof(*reqs));
  struct carp_nodeclaim_create in;
  struct carp_resources requests;
  const struct carp_nodeclass *nc;
  struct carp_kv class_hash[2];
  struct create *cr;
  struct carp_buf body;
  const char **names;
  size_t i, n = 0, nopt = cl->ninstance_types;
  int rc;
  (void)res;

  if (nopt > MAX_OPTIONS)
    nopt = MAX_OPTIONS;
  names = carp_arena_array(&pr->arena, nopt + 1, sizeof(char *));
  for (i = 0; i < cl->nrequirements; i++) {
    const struct carp_sched_requirement *r = &cl->requirements[i];
    /* The instance-type requirement is rewritten from the options. */
    if (!strcmp(r->key, CARP_LABEL_INSTANCE_TYPE))
      continue;
    reqs[n].key = r->key;
    reqs[n].op = op_back(r->op);
    reqs[n].values = (const char **)r->values;
    reqs[n].nvalues = (uint32_t)r->nvalues;
    reqs[n].min_values = r->min_values;
    n++;
  }
  for (i = 0; i < nopt; i++)
    names[i] = pr->p.instance_types[cl->instance_types[i]].name;
  reqs[n].key = CARP_LABEL_INSTANCE_TYPE;
  reqs[n].op = CARP_OP_IN;
  reqs[n].values = names;
  reqs[n].nvalues = (uint32_t)nopt;
  n++;

  cr = CARP_NEW(struct create);
  cr->p = p;
  cr->nodepool = carp_strdup(pool->meta.name);
  for (i = 0; i < nopt; i++)
    carp_resources_max(&cr->capacity,
                       &pr->types[cl->instance_types[i]]->capacity);
  carp_prov_resources_of(cl->requests, cl->nrequests, &requests);
  memset(&in, 0, sizeof(in));
  in.pool = pool;
  in.name = "__NAME__";
  in.requirements = reqs;
  in.nrequirements = n;
  in.requests = &requests;
  /* The class hash the VM is launched with, so a later change of the
   * class's spec shows as drift (Karpenter stamps its EC2NodeClass hash
   * the same way). The status hash is the controller's, which includes
   * the user-data text the provisioner never reads. */
  nc = carp_cluster_nodeclass(p->cluster, pool->tmpl.node_class_ref.name);
  if (nc && nc->status.spec_hash) {
    class_hash[0].key = CARP_ANN_NODECLASS_HASH;
    class_hash[0].value = nc->status.spec_hash;
    class_hash[1].key = CARP_ANN_NODECLASS_HASH_VER;
    class_hash[1].value = CARP_NODECLASS_HASH_VERSION;
    in.annotations = class_hash;
    in.nannotations = 2;
  }
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_nodeclaim_encode_create(&in, &body);
  carp_resources_cleanup(&requests);
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
    cr->pod_uids[cr->npods++] = carp_strdup(pr->pods[cl->pods[i]]->meta.uid);
  p->creates++;
  if (send_create(cr)) {
    p->creates--;
    create_free(cr);
    return;
  }
  /* Tell the pods where they are going. */
  for (i = 0; i < cl->npods && p->o.recorder; i++) {
    struct carp_event_target t =
        carp_event_target_of(&pr->pods[cl->pods[i]]->meta, "v1");
    carp_recorder_event(p->o.recorder, &t, CARP_EVENT_NORMAL, "Nominated",
                        "Pod should schedule on: nodeclaim/%s", cr->name);
  }
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

static void report_unschedulable(struct carp_provisioner *p,
                                 struct carp_prov_problem *pr,
                                 const struct carp_sched_result *res)
{
  struct carp_prov_fold f;
  size_t i;
  carp_prov_fold_init(&f);
  for (i = 0; i < res->nunschedulable; i++) {
    const struct carp_sched_unschedulable *u = &res->unschedulable[i];
    const struct carp_pod *pod = pr->pods[u->pod];
    carp_prov_fold_add(&f, u->message, pod->meta.key);
    if (p->o.recorder) {
      struct carp_event_target t = carp_event_target_of(&pod->meta, "v1");
      carp_recorder_event(p->o.recorder, &t, CARP_EVENT_WARNING,
                          "FailedScheduling", "Failed to schedule pod, %s",
                          u->message);
    }
  }
  log_folded(CARP_LOG_INFO, "could not schedule pods", &f);
  carp_prov_fold_free(&f);
}

/* Pods headed for a Node that has not taken them well after it came:
 * each is told once per nomination (a Warning event naming the node and
 * what keeps it out), the log gets one line per reason, and the gauge the
 * count per kind of reason. Returns how long until the next headed pod's
 * grace ends (0: none pending). */
static uint64_t report_waiting(struct carp_provisioner *p,
                               struct carp_prov_problem *pr)
{
  struct carp_prov_fold f;
  struct carp_buf why;
  int64_t now = carp_time_wall_ms(), next = 0;
  size_t i;
  memset(p->waiting, 0, sizeof(p->waiting));
  carp_prov_fold_init(&f);
  carp_buf_init(&why, 4096);
  for (i = 0; i < pr->nheaded; i++) {
    const struct carp_prov_headed *h = &pr->headed[i];
    const struct carp_node *node = pr->node_objs[h->slot];
    struct carp_nomination_info nm;
    enum carp_prov_wait w;
    int64_t due;
    if (!node ||
        !carp_cluster_nomination_info(p->cluster, h->pod->meta.uid, &nm))
      continue;
    due = (node->meta.creation_ms > nm.since_ms ? node->meta.creation_ms
                                                : nm.since_ms) +
          WAIT_GRACE_MS;
    if (due > now) {
      if (!next || due - now < next)
        next = due - now;
      continue;
    }
    carp_buf_reset(&why);
    w = carp_prov_why_waiting(pr, h, &why);
    if (w == CARP_PROV_WAIT_NONE)
      continue;
    p->waiting[w]++;
    if (!carp_cluster_nomination_report(p->cluster, h->pod->meta.uid))
      continue;
    carp_prov_fold_add(&f, carp_buf_cstr(&why), h->pod->meta.key);
    if (p->o.recorder) {
      struct carp_event_target t = carp_event_target_of(&h->pod->meta, "v1");
      carp_recorder_event(
          p->o.recorder, &t, CARP_EVENT_WARNING, "WaitingForNode",
          "Pod was provisioned for and waits for node %s: %s; no other "
          "capacity is launched for it for %lld s",
          node->meta.name, carp_buf_cstr(&why),
          (long long)((nm.until_ms - now) / 1000));
    }
  }
  log_folded(CARP_LOG_WARN, "pods provisioned for are not binding", &f);
  carp_prov_fold_free(&f);
  carp_buf_free(&why);
  return (uint64_t)next;
}

static size_t collect_pending(struct carp_provisioner *p,
                              const struct carp_pod ***out)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  const struct carp_pod **v = NULL;
  size_t n = 0, cap = 0;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(p->cluster->pods), &it))) {
    const struct carp_pod *pod = (const struct carp_pod *)m;
    if (!carp_pod_is_provisionable(pod))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      v = carp_reallocarray(v, cap, sizeof(*v));
    }
    v[n++] = pod;
  }
  *out = v;
  return n;
}

static void nominate_existing(struct carp_provisioner *p,
                              struct carp_prov_problem *pr,
                              const struct carp_sched_result *res)
{
  size_t i;
  for (i = 0; i < pr->p.npods; i++) {
    const struct carp_sched_assignment *a = &res->assignments[i];
    const char *target;
    if (a->target != CARP_SCHED_ON_NODE)
      continue;
    target = pr->node_names[a->index];
    carp_cluster_nominate(p->cluster, pr->pods[i]->meta.uid, target,
                          NOMINATION_TTL_MS);
    if (p->o.recorder) {
      struct carp_event_target t =
          carp_event_target_of(&pr->pods[i]->meta, "v1");
      carp_recorder_event(p->o.recorder, &t, CARP_EVENT_NORMAL, "Nominated",
                          "Pod should schedule on: %s/%s",
                          pr->node_is_claim[a->index] ? "nodeclaim" : "node",
                          target);
    }
  }
}

static void on_batch(size_t triggers, void *arg)
{
  struct carp_provisioner *p = arg;
  struct carp_prov_problem pr;
  struct carp_prov_input in;
  struct carp_sched_result *res = NULL;
  const struct carp_pod **pending = NULL;
  uint64_t start, again = 0, wait_next;
  size_t npending, i;
  int rc;

  if (!p->active || p->closing)
    return;
  if (!carp_cluster_synced(p->cluster)) {
    uv_timer_start(&p->retry, on_retry, 1000, 0);
    return;
  }
  npending = collect_pending(p, &pending);
  carp_metric_set(p->m_queue, CARP_VALUES("provisioner"), (double)npending);
  start = carp_time_mono_ms();
  memset(&in, 0, sizeof(in));
  in.pending = pending;
  in.npending = npending;
  in.ignore_preferences = p->o.ignore_preferences;
  carp_prov_problem_build(&pr, p->cluster, p->provider, &in);
  wait_next = report_waiting(p, &pr);
  if (!pr.p.npods) {
    /* Nothing to place: every pod is headed somewhere (or none waits). */
    p->unschedulable = 0;
    if (pr.nheaded)
      again = wait_next && wait_next < RETRY_MS ? wait_next : RETRY_MS;
    goto done;
  }
  rc = carp_sched_solve(&pr.p, &res);
  carp_metric_observe(p->m_duration, CARP_VALUES("provisioner"),
                      (double)(carp_time_mono_ms() - start) / 1000.0);
  if (rc) {
    CARP_LOG_ERROR("provisioner", "scheduling simulation failed",
                   CARP_F_ERR(rc));
    again = RETRY_MS;
    goto done;
  }
  CARP_LOG(res->nclaims ? CARP_LOG_INFO : CARP_LOG_DEBUG, "provisioner",
           "computed new nodeclaim(s) to fit pod(s)",
           CARP_F_UINT("pods", pr.p.npods),
           CARP_F_UINT("nominatedBefore", pr.nheaded),
           CARP_F_UINT("onDeletingNodes", pr.nmoving),
           CARP_F_UINT("nodeclaims", res->nclaims),
           CARP_F_UINT("unschedulable", res->nunschedulable),
           CARP_F_UINT("triggers", triggers),
           CARP_F_DURATION("took", carp_time_mono_ms() - start));
  nominate_existing(p, &pr, res);
  for (i = 0; i < res->nclaims; i++)
    start_create(p, &pr, res, &res->claims[i]);
  report_unschedulable(p, &pr, res);
  p->unschedulable = (double)res->nunschedulable;
  /* Pods that fit nowhere are tried again later (capacity may free up,
   * limits may change) without waiting for a pod event; so are pods
   * headed somewhere, whose nomination may lapse or whose node may need
   * reporting. */
  if (res->nunschedulable || pr.nheaded || res->nclaims)
    again = RETRY_MS;
  if (wait_next && (!again || wait_next < again))
    again = wait_next;
done:
  if (again)
    uv_timer_start(&p->retry, on_retry, again, 0);
  carp_sched_result_free(res);
  carp_prov_problem_free(&pr);
  carp_free(pending);
}

/* ---- lifecycle ---- */

static void stream_unschedulable(struct carp_metric_writer *w, void *arg)
{
  struct carp_provisioner *p = arg;
  carp_metric_writer_sample(w, CARP_VALUES("provisioner"), p->unschedulable);
}

static void stream_waiting(struct carp_metric_writer *w, void *arg)
{
  struct carp_provisioner *p = arg;
  int i;
  for (i = 1; i < CARP_PROV_WAIT_N; i++)
    carp_metric_writer_sample(w, CARP_VALUES(carp_prov_wait_name(i)),
                              p->waiting[i]);
}

int carp_provisioner_new(uv_loop_t *loop, struct carp_cluster *cluster,
                         struct carp_kube *kube, struct carp_provider *provider,
                         const struct carp_provisioner_options *o,
                         struct carp_provisioner **out)
{
  struct carp_provisioner *p;
  struct carp_informer_handlers ph = {.on_add = pod_changed,
                                      .on_update = pod_updated};
  struct carp_informer_handlers nodes = {.on_update = node_updated,
                                         .on_delete = capacity_gone};
  struct carp_informer_handlers claims = {.on_update = claim_updated,
                                          .on_delete = capacity_gone};
  int rc;
  if (!loop || !cluster || !kube || !provider || !o || !out)
    return CARP_EINVAL;
  p = CARP_NEW(struct carp_provisioner);
  p->loop = loop;
  p->cluster = cluster;
  p->kube = kube;
  p->provider = provider;
  p->o = *o;
  rc = carp_batcher_new(loop, o->batch_idle_ms, o->batch_max_ms, on_batch, p,
                        &p->batcher);
  if (rc) {
    carp_free(p);
    return rc;
  }
  uv_timer_init(loop, &p->retry);
  p->retry.data = p;
  ph.arg = p;
  nodes.arg = p;
  claims.arg = p;
  carp_informer_add_handlers(cluster->pods, &ph);
  carp_informer_add_handlers(cluster->nodeclaims, &claims);
  carp_informer_add_handlers(cluster->nodes, &nodes);
  if (o->metrics) {
    p->m_duration = carp_metrics_histogram(
        o->metrics, "karpenter_scheduler_scheduling_duration_seconds",
        "Duration of scheduling simulations used for deprovisioning and "
        "provisioning in seconds.",
        CARP_LABELS("controller"), carp_metrics_duration_buckets,
        carp_metrics_duration_buckets_len);
    p->m_queue = carp_metrics_gauge(
        o->metrics, "karpenter_scheduler_queue_depth",
        "The number of pods currently waiting to be scheduled.",
        CARP_LABELS("controller"));
    /* Karpenter's name ends in _count, which promtool reserves for
     * histograms and summaries: exported untyped (read as a gauge). */
    p->m_unschedulable = carp_metrics_stream(
        o->metrics, "karpenter_scheduler_unschedulable_pods_count",
        "The number of unschedulable Pods.", CARP_METRIC_UNTYPED,
        CARP_LABELS("controller"), stream_unschedulable, p);
    p->m_created = carp_metrics_counter(
        o->metrics, "karpenter_nodeclaims_created_total",
        "Number of nodeclaims created in total by Karpenter. Labeled by "
        "reason the nodeclaim was created and the owning nodepool.",
        CARP_LABELS("reason", "nodepool", "min_values_relaxed"));
    p->m_waiting = carp_metrics_stream(
        o->metrics, "carpenter_provisioner_pods_waiting_for_node",
        "Pods provisioned for that have not bound to their node well after "
        "it came, by what keeps them out (not_registered, not_ready, "
        "taint). No new capacity is launched for them until their "
        "nomination lapses.",
        CARP_METRIC_GAUGE, CARP_LABELS("reason"), stream_waiting, p);
  }
  *out = p;
  return 0;
}

static void closed_one(struct carp_provisioner *p)
{
  if (--p->handles > 0)
    return;
  /* Closed; freed by carp_provisioner_free once the informers that call
   * its handlers are closed too. */
  if (p->close_cb)
    p->close_cb(p->close_arg);
}

void carp_provisioner_free(struct carp_provisioner *p)
{
  if (!p)
    return;
  if (p->m_unschedulable)
    carp_metric_stream_detach(p->m_unschedulable);
  if (p->m_waiting)
    carp_metric_stream_detach(p->m_waiting);
  carp_free(p);
}

static void on_retry_closed(uv_handle_t *h)
{
  closed_one(h->data);
}

static void on_batcher_closed(void *arg)
{
  closed_one(arg);
}

/* Closes once no create is in flight: their callbacks use p. */
static void maybe_closed(struct carp_provisioner *p)
{
  if (!p->closing || p->creates || p->handles)
    return;
  p->handles = 2;
  carp_batcher_close(p->batcher, on_batcher_closed, p);
  uv_close((uv_handle_t *)&p->retry, on_retry_closed);
}

void carp_provisioner_close(struct carp_provisioner *p, void (*cb)(void *arg),
                            void *arg)
{
  if (!p || p->closing)
    return;
  p->closing = 1;
  p->active = 0;
  p->close_cb = cb;
  p->close_arg = arg;
  uv_timer_stop(&p->retry);
  maybe_closed(p);
}
