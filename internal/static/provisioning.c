/* provisioning.c: the static.provisioning controller (Karpenter's): a
 * static NodePool with fewer NodeClaims than replicas gets the missing
 * ones, each of the pool's template alone, never beyond limits.nodes.
 *
 * One reconcile sends every create at once and ends when the last answer
 * is in; each NodeClaim created is remembered as expected at once, so the
 * next reconcile counts it even before the cache shows it. */
#include <string.h>

#include "../provisioning/claim.h"
#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/static.h"
#include "static_int.h"

#define RESYNC_MS (60 * 1000)

struct static_prov {
  struct carp_controller base;
  struct carp_metric *m_created;
};

#define SP(c) carp_container_of(c, struct static_prov, base)

/* One reconcile's creates. */
struct batch {
  char *pool;
  size_t left;
  int err;
};

/* One answer (or the sender's hold) less; the last ends the reconcile. */
static void batch_release(struct carp_controller *c, const char *key,
                          struct batch *b)
{
  if (--b->left)
    return;
  carp_controller_done(c, key,
                       b->err ? CARP_RECONCILE_ERROR : CARP_RECONCILE_DONE, 0);
  carp_free(b->pool);
  carp_free(b);
}

static void on_created(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  struct batch *b = arg;
  const char *name = carp_json_str(res->body, "metadata", "name", NULL);
  if (res->err || !name) {
    if (res->err != CARP_ECANCELED && res->err != CARP_ENOTLEADER)
      CARP_LOG_ERROR("static", "creating nodeclaim failed",
                     CARP_F_STR("nodepool", b->pool), CARP_F_ERR(res->err),
                     CARP_F_STR("message", res->message));
    b->err = res->err ? res->err : CARP_EPARSE;
  } else {
    static const struct carp_resources none;
    /* Counted from now on (nodes only: a static pool limits nothing
     * else), until the cache has it. */
    carp_cluster_expect_claim(c->env.cluster, name, b->pool, &none);
    CARP_LOG_INFO("static", "created nodeclaim", CARP_F_STR("nodeclaim", name),
                  CARP_F_STR("nodepool", b->pool));
    carp_metric_add(SP(c)->m_created,
                    CARP_VALUES("provisioning", b->pool, "false"), 1);
  }
  batch_release(c, key, b);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  const struct carp_nodepool *np = carp_cluster_nodepool(c->env.cluster, key);
  struct carp_kube_ref ref = carp_ref_nodeclaim(NULL, NULL);
  struct carp_pool_count n;
  struct carp_buf body;
  struct batch *b;
  int64_t want, limit, i;

  if (!carp__static_pool(np) ||
      !carp_conditions_is_true(&np->status.conditions, CARP_COND_READY)) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  carp_cluster_nodepool_count(c->env.cluster, key, &n);
  want = np->replicas - n.active;
  if (want > 0 && carp_nodepool_limit(np, "nodes", &limit) &&
      n.total + want > limit) {
    want = limit - n.total;
    if (want <= 0) {
      CARP_LOG_INFO("static", "nodepool node limit reached",
                    CARP_F_STR("nodepool", key), CARP_F_INT("limit", limit),
                    CARP_F_INT("nodeclaims", n.total),
                    CARP_F_INT("replicas", np->replicas));
      carp_controller_event(c, &np->meta, "karpenter.sh/v1", CARP_EVENT_WARNING,
                            "NodePoolLimitReached",
                            "replicas is %lld but limits.nodes (%lld) allows "
                            "no more NodeClaims",
                            (long long)np->replicas, (long long)limit);
    }
  }
  if (want <= 0) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  if (carp_prov_claim_encode_pool(c->env.cluster, np, NULL, &body)) {
    CARP_LOG_ERROR("static", "cannot encode nodeclaim",
                   CARP_F_STR("nodepool", key));
    carp_buf_free(&body);
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  CARP_LOG_INFO("static", "provisioning nodeclaims to satisfy replica count",
                CARP_F_STR("nodepool", key), CARP_F_INT("current", n.active),
                CARP_F_INT("desired", np->replicas),
                CARP_F_INT("provision-count", want));
  b = CARP_NEW(struct batch);
  b->pool = carp_strdup(key);
  b->left = 1; /* held while the creates are sent */
  for (i = 0; i < want; i++) {
    b->left++;
    if (carp_write_create(c, key, &ref, body.ptr, body.len, on_created, b)) {
      b->left--;
      b->err = CARP_EIO;
    }
  }
  carp_buf_free(&body);
  batch_release(c, key, b);
}

static void sp_free(struct carp_controller *c)
{
  carp_free(SP(c));
}

static const struct carp_controller_def def = {
    .name = "static.provisioning",
    .log_module = "static",
    .concurrency = 4,
    .reconcile = reconcile,
    .activated = carp__static_activated,
    .free = sp_free,
};

int carp_static_provisioning_new(const struct carp_controller_env *env,
                                 struct carp_controller **out)
{
  struct static_prov *s;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  s = CARP_NEW(struct static_prov);
  rc = carp_controller_init(&s->base, env, &def);
  if (rc) {
    carp_free(s);
    return rc;
  }
  /* Pools whose nodes went meanwhile, in case an event was missed. */
  carp_controller_resync(&s->base, RESYNC_MS);
  carp_controller_watch(&s->base, env->cluster->nodepools,
                        carp__static_map_pool);
  carp_controller_watch(&s->base, env->cluster->nodeclaims,
                        carp__static_map_claim);
  s->m_created = carp_metric_nodeclaims_created(env->metrics);
  *out = &s->base;
  return 0;
}
