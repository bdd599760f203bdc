/* lifecycle.c: the NodeClaim lifecycle controller's dispatch (see
 * include/carpenter/lifecycle.h). Informer events on NodeClaims and on
 * Nodes (mapped to their NodeClaim by provider ID) queue the NodeClaim;
 * one reconcile looks at its cached state and takes the next step. The
 * skeleton (internal/controller) carries the queue, leadership, holds and
 * close; this file keeps what the controller remembers per NodeClaim. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "lifecycle_int.h"

/* ---- memory ---- */

static void mem_free(struct claim_mem *m)
{
  carp_resources_cleanup(&m->inst.capacity);
  carp_resources_cleanup(&m->inst.allocatable);
  carp_free(m->claim_rv);
  carp_free(m->node_rv);
  carp_free(m->status_rv);
  carp_free(m->name);
  carp_free(m->uid);
  carp_free(m);
}

struct claim_mem *carp__lc_mem(struct carp_lifecycle *l,
                               const struct carp_nodeclaim *nc, int create)
{
  struct claim_mem *m = carp_map_gets(&l->mem, nc->meta.name);
  if (m && strcmp(m->uid, nc->meta.uid) && !m->launch && !m->del &&
      !m->reading_secret) {
    /* A new NodeClaim with an old name. */
    carp__lc_mem_drop(l, nc->meta.name);
    m = NULL;
  }
  if (m || !create)
    return m;
  m = CARP_NEW(struct claim_mem);
  m->name = carp_strdup(nc->meta.name);
  m->uid = carp_strdup(nc->meta.uid);
  /* 1 s doubling to 5 min: a Proxmox that refuses every call sees one
   * create per claim every few minutes, not hundreds per second. */
  carp_retry_init(&m->launch_retry, 1000, 5 * 60 * 1000);
  carp_retry_init(&m->del_retry, 1000, 60 * 1000);
  carp_map_puts(&l->mem, m->name, m);
  return m;
}

void carp__lc_mem_drop(struct carp_lifecycle *l, const char *name)
{
  struct claim_mem *m = carp_map_gets(&l->mem, name);
  if (!m || m->launch || m->del || m->reading_secret)
    return; /* still referenced by a callback */
  carp_map_dels(&l->mem, name);
  carp_logfold_forget(&l->fold, name);
  mem_free(m);
}

int64_t carp__lc_now(const struct carp_lifecycle *l)
{
  return carp_controller_now(&l->base);
}

/* ---- reconcile ---- */

static void on_finalizer_added(struct carp_controller *c, const char *key,
                               const struct carp_kube_result *res, void *arg)
{
  (void)arg;
  carp__lc_remember_rv(
      LC(c), key, 0,
      res->err ? NULL
               : carp_json_str(res->body, "metadata", "resourceVersion", NULL));
  carp__lc_after_write(LC(c), key, res);
}

static void add_finalizer(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, const char *key)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(nc->meta.name, NULL);
  struct carp_objmeta m = nc->meta;
  /* Our own last write may be newer than the cache. */
  m.resource_version = (char *)carp__lc_claim_rv(l, nc);
  if (carp_write_finalizer(&l->base, key, &ref, &m, CARP_FINALIZER_TERMINATION,
                           1, on_finalizer_added, NULL) < 0)
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct carp_lifecycle *l = LC(c);
  const struct carp_nodeclaim *nc = carp_cluster_nodeclaim(c->env.cluster, key);
  int launched;
  if (!nc) {
    carp__lc_mem_drop(l, key);
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (nc->meta.deletion_ms) {
    carp__lc_finalize(l, nc, key);
    return;
  }
  /* Not our NodeClaim (another provider's class): leave it alone. */
  if (strcmp(nc->spec.node_class_ref.kind, "ProxmoxNodeClass")) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  launched =
      carp_conditions_is_true(&nc->status.conditions, CARP_COND_LAUNCHED);
  /* A new claim gets the finalizer in the write that records its VM before
   * the clone (launch.c); one that names a VM already (launched, or to be
   * adopted) gets it on its own first. */
  if (!carp_kvset_has(nc->meta.finalizers, CARP_FINALIZER_TERMINATION) &&
      (launched || carp_kvset_has(nc->meta.annotations, CARP_ANN_VM))) {
    add_finalizer(l, nc, key);
    return;
  }
  if (!launched) {
    carp__lc_launch(l, nc, key);
    return;
  }
  /* Registration patches the Node before it writes the claim's status:
   * decided on a claim older than our last write, it would do both again. */
  if (carp__lc_wait_for_cache(l, nc, key))
    return;
  carp__lc_register(l, nc, key);
}

/* ---- events ---- */

static void node_map(struct carp_controller *c, const struct carp_objmeta *old,
                     const struct carp_objmeta *obj, int deleted)
{
  const struct carp_node *n = (const struct carp_node *)obj;
  const struct carp_nodeclaim *nc;
  (void)old;
  (void)deleted;
  if (!n->provider_id)
    return;
  nc = carp_cluster_nodeclaim_by_provider(c->env.cluster, n->provider_id);
  if (nc)
    carp_controller_enqueue(c, nc->meta.name);
}

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue_all(c, c->env.cluster->nodeclaims);
}

/* Stops launches and deletes in flight; their callbacks release. */
static void cancel(struct carp_controller *c)
{
  struct carp_lifecycle *l = LC(c);
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&l->mem, &it, NULL, NULL, &v)) {
    struct claim_mem *m = v;
    if (m->launch)
      carp_provider_cancel(c->env.provider, m->launch);
    if (m->del)
      carp_provider_cancel(c->env.provider, m->del);
  }
}

static void lifecycle_free(struct carp_controller *c)
{
  struct carp_lifecycle *l = LC(c);
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&l->mem, &it, NULL, NULL, &v))
    mem_free(v);
  carp_map_free(&l->mem);
  carp_logfold_free(&l->fold);
  carp_free(l);
}

static const struct carp_controller_def lifecycle_def = {
    .name = LC_NAME,
    .log_module = LC_LOG,
    .max_backoff_ms = 5 * 60 * 1000,
    .reconcile = reconcile,
    .activated = activated,
    .cancel = cancel,
    .free = lifecycle_free,
};

static void register_metrics(struct carp_lifecycle *l, struct carp_metrics *m)
{
  /* Karpenter's exponential buckets: 1 s doubling to 1024 s and 2048 s. */
  static const double instance_buckets[] = {1,  2,   4,   8,   16,  32,
                                            64, 128, 256, 512, 1024};
  static const double claim_buckets[] = {1,  2,   4,   8,   16,   32,
                                         64, 128, 256, 512, 1024, 2048};
  l->m_instance_termination = carp_metrics_histogram(
      m, "karpenter_nodeclaims_instance_termination_duration_seconds",
      "Duration of CloudProvider Instance termination in seconds.",
      CARP_LABELS("nodepool"), instance_buckets,
      CARP_ARRAY_LEN(instance_buckets));
  l->m_termination = carp_metrics_histogram(
      m, "karpenter_nodeclaims_termination_duration_seconds",
      "Duration of NodeClaim termination in seconds.", CARP_LABELS("nodepool"),
      claim_buckets, CARP_ARRAY_LEN(claim_buckets));
  l->m_terminated = carp_metrics_counter(
      m, "karpenter_nodeclaims_terminated_total",
      "Number of nodeclaims terminated in total by Karpenter. Labeled by "
      "the owning nodepool.",
      CARP_LABELS("nodepool", "capacity_type", "zone"));
  l->m_disrupted = carp_metric_nodeclaims_disrupted(m);
  l->m_nodes_created = carp_metrics_counter(
      m, "karpenter_nodes_created_total",
      "Number of nodes created in total by Karpenter. Labeled by owning "
      "nodepool.",
      CARP_LABELS("nodepool", "zone"));
}

int carp_lifecycle_new(const struct carp_controller_env *env,
                       const struct carp_lifecycle_options *o,
                       struct carp_controller **out)
{
  struct carp_lifecycle *l;
  int rc;
  if (!env || !env->provider || !out)
    return CARP_EINVAL;
  l = CARP_NEW(struct carp_lifecycle);
  if (o)
    l->o = *o;
  if (!l->o.concurrency)
    l->o.concurrency = 64;
  if (!l->o.launch_timeout_ms)
    l->o.launch_timeout_ms = 5 * 60 * 1000;
  if (!l->o.registration_timeout_ms)
    l->o.registration_timeout_ms = 15 * 60 * 1000;
  l->def = lifecycle_def;
  l->def.concurrency = l->o.concurrency;
  carp_map_init(&l->mem);
  carp_logfold_init(&l->fold, 0, 0);
  rc = carp_controller_init(&l->base, env, &l->def);
  if (rc) {
    carp_map_free(&l->mem);
    carp_logfold_free(&l->fold);
    carp_free(l);
    return rc;
  }
  if (env->metrics)
    register_metrics(l, env->metrics);
  carp_controller_watch(&l->base, env->cluster->nodeclaims,
                        carp_controller_map_name);
  carp_controller_watch(&l->base, env->cluster->nodes, node_map);
  *out = &l->base;
  return 0;
}
