/* interruption.c: the nodeclaim.interruption controller - NodeClaims on a
 * host that has been offline for too long are deleted (see
 * include/carpenter/interruption.h).
 *
 * A polling controller with one key, as garbage collection is: each poll
 * reads the NodeClaim cache and the provider's zone states (both
 * synchronous, so nothing changes in between), deletes what is due and
 * requeues itself at the next deadline or after the poll interval,
 * whichever comes first. The time a zone went offline is the provider's
 * (it polls hosts whether this replica leads or not), so a new leader does
 * not start the toleration over. A NodeClaim whose delete was sent is
 * remembered by UID until the cache shows it going, so a poll that runs
 * before the watch event neither deletes nor counts it twice. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/cluster.h"
#include "carpenter/controller.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/interruption.h"
#include "carpenter/log.h"
#include "carpenter/logfold.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/provider.h"
#include "carpenter/scheduling.h"

#define CONTROLLER      "nodeclaim.interruption"
#define LOGGER          "interruption"
#define POLL_KEY        "hosts"
#define FIRST_POLL_MS   1000
#define MIN_REQUEUE_MS  100
#define DEFAULT_TOL_MS  (5 * 60 * 1000)
#define DEFAULT_POLL_MS (10 * 1000)

struct carp_interruption {
  struct carp_controller base;
  struct carp_interruption_options o;
  struct carp_map issued; /* UID -> its own copy (the key) */
  struct carp_logfold fold;
  struct carp_metric *m_disrupted;
};

#define INT(c) carp_container_of(c, struct carp_interruption, base)

static void forget_gone(struct carp_interruption *in)
{
  struct carp_store *claims =
      carp_informer_store(in->base.env.cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct carp_map live;
  struct carp_map_iter mi;
  const char *k;
  size_t kl;
  void *v;
  if (!in->issued.len)
    return;
  carp_map_init(&live);
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it)))
    if (!m->deletion_ms && m->uid)
      carp_map_puts(&live, m->uid, (void *)1);
  carp_map_iter_init(&mi);
  while (carp_map_next(&in->issued, &mi, &k, &kl, &v))
    if (!carp_map_gets(&live, (const char *)v)) {
      carp_map_dels(&in->issued, (const char *)v);
      carp_free(v);
    }
  carp_map_free(&live);
}

/* arg: the callback's own copy of the UID. */
static void on_deleted(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  struct carp_interruption *in = INT(c);
  char *uid = arg, *mine;
  (void)key;
  /* Refused (not a missing object): the next poll tries again. */
  if (res->err && res->err != CARP_ENOTFOUND &&
      (mine = carp_map_dels(&in->issued, uid))) {
    CARP_LOG_WARN(LOGGER, "deleting the NodeClaim failed; retrying",
                  CARP_F_STR("uid", uid), CARP_F_ERR(res->err),
                  CARP_F_STR("message", res->message));
    carp_free(mine);
  }
  carp_free(uid);
}

static void interrupt(struct carp_interruption *in,
                      const struct carp_nodeclaim *nc,
                      const struct carp_node *node, const char *zone,
                      int64_t offline_ms)
{
  struct carp_controller *c = &in->base;
  const char *pool = carp_nodeclaim_nodepool(nc);
  const char *ct =
      carp_kvset_get(nc->meta.labels, CARP_LABEL_CAPACITY_TYPE_KEY);
  char off[CARP_DURATION_LEN], tol[CARP_DURATION_LEN];
  char *uid = carp_strdup(nc->meta.uid), *arg = carp_strdup(nc->meta.uid);
  carp_duration_format(offline_ms, off);
  carp_duration_format((int64_t)in->o.host_offline_toleration_ms, tol);
  if (carp_write_delete_claim(c, NULL, nc, on_deleted, arg)) {
    carp_free(uid);
    carp_free(arg);
    return;
  }
  carp_map_puts(&in->issued, uid, uid);
  CARP_LOG_INFO(LOGGER, "deleting nodeclaim: its host is offline",
                CARP_F_STR("nodeclaim", nc->meta.name),
                CARP_F_STR("zone", zone),
                CARP_F_STR("node", node ? node->meta.name : ""),
                CARP_F_STR("offline_for", off), CARP_F_STR("toleration", tol));
  carp_controller_event(c, &nc->meta, "karpenter.sh/v1", CARP_EVENT_WARNING,
                        "HostOffline",
                        "Host %s has been offline for %s (toleration %s); "
                        "deleting the NodeClaim, its node cannot be drained",
                        zone, off, tol);
  if (node)
    carp_controller_event(c, &node->meta, "v1", CARP_EVENT_WARNING,
                          "HostOffline",
                          "Host %s has been offline for %s (toleration %s); "
                          "the node is being replaced",
                          zone, off, tol);
  carp_metric_add(in->m_disrupted,
                  CARP_VALUES("host_offline", pool ? pool : "", ct ? ct : "",
                              "", "forceful"),
                  1);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct carp_interruption *in = INT(c);
  struct carp_cluster *cluster = c->env.cluster;
  struct carp_store *claims = carp_informer_store(cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  int64_t now = carp_controller_now(c);
  int64_t tol = (int64_t)in->o.host_offline_toleration_ms;
  uint64_t next = in->o.poll_interval_ms;

  forget_gone(in);
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    struct carp_provider_zone_status zs;
    const struct carp_node *node;
    char region[64], zone[64];
    int64_t offline;
    if (nc->meta.deletion_ms || !nc->meta.uid ||
        !nc->spec.node_class_ref.kind ||
        strcmp(nc->spec.node_class_ref.kind, "ProxmoxNodeClass") ||
        carp_map_gets(&in->issued, nc->meta.uid) ||
        !carp_provider_claim_zone(nc, region, sizeof(region), zone,
                                  sizeof(zone)))
      continue;
    carp_provider_zone_status(c->env.provider, region, zone, &zs);
    if (zs.state != CARP_ZONE_OFFLINE)
      continue;
    offline = now - zs.since_ms;
    if (offline < tol) {
      if ((uint64_t)(tol - offline) < next)
        next = (uint64_t)(tol - offline);
      continue;
    }
    node = carp_cluster_node_of_nodeclaim(cluster, nc);
    if (node && node->ready.status == 1) {
      CARP_LOG_FOLDED(&in->fold, nc->meta.name, CARP_LOG_INFO, LOGGER,
                      "host offline but the node is Ready: keeping its "
                      "nodeclaim",
                      CARP_F_STR("nodeclaim", nc->meta.name),
                      CARP_F_STR("zone", zone),
                      CARP_F_STR("node", node->meta.name));
      continue;
    }
    interrupt(in, nc, node, zone, offline);
  }
  carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER,
                       next < MIN_REQUEUE_MS ? MIN_REQUEUE_MS : next);
}

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue_after(c, POLL_KEY, FIRST_POLL_MS);
}

static void int_free(struct carp_controller *c)
{
  struct carp_interruption *in = INT(c);
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&in->issued, &it, NULL, NULL, &v))
    carp_free(v);
  carp_map_free(&in->issued);
  carp_logfold_free(&in->fold);
  carp_free(in);
}

static const struct carp_controller_def interruption_def = {
    .name = CONTROLLER,
    .log_module = LOGGER,
    .reconcile = reconcile,
    .activated = activated,
    .free = int_free,
};

int carp_interruption_new(const struct carp_controller_env *env,
                          const struct carp_interruption_options *o,
                          struct carp_controller **out)
{
  struct carp_interruption *in;
  int rc;
  if (!env || !env->provider || !out)
    return CARP_EINVAL;
  in = CARP_NEW(struct carp_interruption);
  if (o)
    in->o = *o;
  if (!in->o.host_offline_toleration_ms)
    in->o.host_offline_toleration_ms = DEFAULT_TOL_MS;
  if (!in->o.poll_interval_ms)
    in->o.poll_interval_ms = DEFAULT_POLL_MS;
  if (in->o.poll_interval_ms < MIN_REQUEUE_MS)
    in->o.poll_interval_ms = MIN_REQUEUE_MS;
  carp_map_init(&in->issued);
  carp_logfold_init(&in->fold, 0, 0);
  rc = carp_controller_init(&in->base, env, &interruption_def);
  if (rc) {
    carp_map_free(&in->issued);
    carp_logfold_free(&in->fold);
    carp_free(in);
    return rc;
  }
  if (env->metrics)
    in->m_disrupted = carp_metrics_counter(
        env->metrics, "karpenter_nodeclaims_disrupted_total",
        "Number of nodeclaims disrupted in total by Karpenter. Labeled by "
        "reason the nodeclaim was disrupted and the owning nodepool.",
        CARP_LABELS("reason", "nodepool", "capacity_type",
                    "consolidation_policy", "termination_mode"));
  *out = &in->base;
  return 0;
}
