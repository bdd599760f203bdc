/* expiration.c: the nodeclaim.expiration controller (Karpenter's): a
 * NodeClaim is deleted when it reaches creationTimestamp + expireAfter,
 * whatever the budgets say; the termination controller drains it with its
 * terminationGracePeriod as the deadline. Until then its key waits on the
 * clock. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "dis_ctl.h"

struct expiration {
  struct carp_controller base;
  struct carp_metric *m_disrupted;
};

#define EXP(c) carp_container_of(c, struct expiration, base)

static void on_deleted(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  (void)arg;
  /* Gone or going: its deletion event ends it. A failure retries. */
  if (!res->err || res->err == CARP_ENOTFOUND)
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
  else
    carp_write_done(c, key, res);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct expiration *e = EXP(c);
  const struct carp_nodeclaim *nc = carp_cluster_nodeclaim(c->env.cluster, key);
  const char *pool;
  char age[CARP_DURATION_LEN];
  int64_t left;
  if (!nc || nc->meta.deletion_ms || !carp__dis_managed(nc) ||
      nc->spec.expire_after_ms == CARP_DURATION_NEVER) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  left =
      nc->meta.creation_ms + nc->spec.expire_after_ms - carp_controller_now(c);
  if (left > 0) {
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER, (uint64_t)left);
    return;
  }
  pool = carp_nodeclaim_nodepool(nc);
  carp_duration_format(nc->spec.expire_after_ms, age);
  CARP_LOG_INFO("disruption", "deleting expired nodeclaim",
                CARP_F_STR("nodeclaim", nc->meta.name),
                CARP_F_STR("expireAfter", age));
  carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_NORMAL,
                        "Expired", "NodeClaim reached its expireAfter (%s)",
                        age);
  {
    const char *ct =
        carp_kvset_get(nc->meta.labels, CARP_LABEL_CAPACITY_TYPE_KEY);
    carp_metric_add(
        e->m_disrupted,
        CARP_VALUES(
            "expired", pool ? pool : "", ct ? ct : "",
            carp__dis_policy_name(
                pool ? carp_cluster_nodepool(c->env.cluster, pool) : NULL),
            "forceful"),
        1);
  }
  if (carp_write_delete_claim(c, key, nc, on_deleted, NULL))
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
}

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue_all(c, c->env.cluster->nodeclaims);
}

static void exp_free(struct carp_controller *c)
{
  carp_free(EXP(c));
}

static const struct carp_controller_def expiration_def = {
    .name = "nodeclaim.expiration",
    .log_module = "disruption",
    .concurrency = 4,
    .reconcile = reconcile,
    .activated = activated,
    .free = exp_free,
};

int carp_expiration_new(const struct carp_controller_env *env,
                        struct carp_controller **out)
{
  struct expiration *e;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  e = CARP_NEW(struct expiration);
  rc = carp_controller_init(&e->base, env, &expiration_def);
  if (rc) {
    carp_free(e);
    return rc;
  }
  carp_controller_watch(&e->base, env->cluster->nodeclaims,
                        carp_controller_map_name);
  if (env->metrics)
    e->m_disrupted = carp_metric_nodeclaims_disrupted(env->metrics);
  *out = &e->base;
  return 0;
}
