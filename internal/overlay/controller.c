/* controller.c: the NodeOverlay controller ("nodeoverlay.controller"), as
 * Karpenter's: one reconcile looks at every overlay at once - each is
 * checked against the CRD's rules (RuntimeValidation) and against the
 * overlays of the same weight that change the same offering price or type
 * resource in any NodePool (Conflict, Karpenter's rule), and gets
 * ValidationSucceeded and Ready for its generation. Only overlays found
 * Ready are applied (carp_overlays_in_force), so the scheduler never uses
 * one this controller has not looked at.
 *
 * It runs again when an overlay, a NodePool or a ProxmoxNodeClass changes,
 * and every 5 minutes for what no event tells (the hosts, hence the
 * offerings, the provider sees). */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/overlay.h"

#define LOGGER    "nodeoverlay"
#define KEY       "nodeoverlays"
#define RESYNC_MS (5 * 60 * 1000)

struct overlay_ctl {
  struct carp_controller base;
  size_t writes; /* status patches of the reconcile in flight */
  int err;
};

#define OC(c) carp_container_of(c, struct overlay_ctl, base)

static void map_all(struct carp_controller *c, const struct carp_objmeta *old,
                    const struct carp_objmeta *obj, int deleted)
{
  (void)old;
  (void)obj;
  (void)deleted;
  carp_controller_enqueue(c, KEY);
}

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue(c, KEY);
}

static void finish(struct carp_controller *c)
{
  struct overlay_ctl *o = OC(c);
  carp_controller_done(c, KEY,
                       o->err ? CARP_RECONCILE_ERROR : CARP_RECONCILE_DONE, 0);
}

static void on_written(struct carp_controller *c, const char *key,
                       const struct carp_kube_result *res, void *arg)
{
  struct overlay_ctl *o = OC(c);
  (void)key;
  (void)arg;
  /* Gone meanwhile: nothing to say about it. A conflict: the watch event
   * brings the newer object, and the retry looks again. */
  if (res->err && res->err != CARP_ENOTFOUND && !o->err)
    o->err = res->err;
  if (--o->writes == 0)
    finish(c);
}

/* The instance types of each class, read once per reconcile, in an array
 * with room for one class per NodePool (never moved: the pools point into
 * it). */
struct class_types {
  const char *name;
  struct carp_provider_instance_types types;
  int ok;
};

static const struct carp_provider_instance_types *
types_of(struct carp_controller *c, struct class_types *cache, size_t *n,
         const struct carp_nodeclass *nc)
{
  struct class_types *ct;
  size_t i;
  for (i = 0; i < *n; i++)
    if (!strcmp(cache[i].name, nc->meta.name))
      return cache[i].ok ? &cache[i].types : NULL;
  ct = &cache[(*n)++];
  memset(ct, 0, sizeof(*ct));
  ct->name = nc->meta.name;
  ct->ok = c->env.provider &&
           !carp_provider_instance_types(c->env.provider, "nodeoverlay", nc,
                                         &ct->types);
  return ct->ok ? &ct->types : NULL;
}

/* Writes ValidationSucceeded (and Ready) of one overlay when they change. */
static void judge(struct carp_controller *c, const struct carp_nodeoverlay *ov,
                  int conflict)
{
  struct overlay_ctl *o = OC(c);
  struct carp_conditions conds;
  struct carp_buf body;
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_NODEOVERLAY_VERSION,
                              .resource = "nodeoverlays",
                              .name = ov->meta.name,
                              .subresource = "status"};
  const char *reason = NULL, *msg = "";
  enum carp_cond_status st = CARP_COND_TRUE;
  int changed, rc;

  if (!ov->valid) {
    st = CARP_COND_FALSE;
    reason = CARP_REASON_RUNTIME_VALIDATION;
    msg = ov->invalid_reason ? ov->invalid_reason : "";
  } else if (conflict) {
    st = CARP_COND_FALSE;
    reason = CARP_REASON_CONFLICT;
    msg = "conflict with another overlay";
  }
  carp_conditions_copy(&conds, &ov->conditions);
  changed = carp_conditions_set(&conds, &carp_condset_nodeoverlay,
                                CARP_COND_VALIDATION_SUCCEEDED, st, reason, msg,
                                ov->meta.generation, carp_controller_now(c));
  if (changed) {
    CARP_LOG_INFO(LOGGER, "nodeoverlay evaluated",
                  CARP_F_STR("nodeoverlay", ov->meta.name),
                  CARP_F_STR("status", carp_cond_status_name(st)),
                  CARP_F_STR("reason", reason ? reason : "ValidationSucceeded"),
                  CARP_F_STR("detail", msg));
    carp_buf_init(&body, 64 * 1024);
    if (carp_conditions_status_patch(&conds, ov->meta.resource_version,
                                     &body) == 0) {
      o->writes++;
      rc = carp_write_patch(c, KEY, &ref, body.ptr, body.len, on_written, NULL);
      if (rc) {
        o->writes--;
        o->err = rc;
      }
    }
    carp_buf_free(&body);
  }
  carp_conditions_cleanup(&conds);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct overlay_ctl *o = OC(c);
  struct carp_cluster *cl = c->env.cluster;
  struct carp_store *st;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  const struct carp_nodeoverlay **ovs = NULL;
  struct carp_overlay_pool *pools = NULL;
  struct class_types *cache = NULL;
  size_t n = 0, npools = 0, ncache = 0, i;
  int *conflict;

  (void)key;
  if (!cl->nodeoverlays || !carp_informer_synced(cl->nodeoverlays)) {
    /* Its list brings the overlays (and queues this again). */
    carp_controller_done(c, KEY, CARP_RECONCILE_DONE, 0);
    return;
  }
  st = carp_informer_store(cl->nodeoverlays);
  ovs = carp_calloc(carp_store_len(st) + 1, sizeof(*ovs));
  carp_store_iter_init(&it);
  while ((m = carp_store_next(st, &it)))
    if (!m->deletion_ms)
      ovs[n++] = (const struct carp_nodeoverlay *)m;
  carp_overlays_sort(ovs, n);

  st = carp_informer_store(cl->nodepools);
  pools = carp_calloc(carp_store_len(st) + 1, sizeof(*pools));
  cache = carp_calloc(carp_store_len(st) + 1, sizeof(*cache));
  carp_store_iter_init(&it);
  while (n && (m = carp_store_next(st, &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)m;
    const struct carp_nodeclass *nc =
        carp_cluster_nodeclass(cl, np->tmpl.node_class_ref.name);
    const struct carp_provider_instance_types *t =
        nc ? types_of(c, cache, &ncache, nc) : NULL;
    if (!t)
      continue;
    pools[npools].np = np;
    pools[npools].nodeclass = nc->meta.name;
    pools[npools].types = t;
    npools++;
  }
  conflict = carp_calloc(n + 1, sizeof(*conflict));
  carp_overlays_conflicts(ovs, n, pools, npools, conflict);

  o->writes = 1; /* held until every patch has started */
  o->err = 0;
  for (i = 0; i < n; i++)
    judge(c, ovs[i], conflict[i]);

  carp_free(conflict);
  for (i = 0; i < ncache; i++)
    if (cache[i].ok)
      carp_provider_instance_types_free(&cache[i].types);
  carp_free(cache);
  carp_free(pools);
  carp_free(ovs);
  if (--o->writes == 0)
    finish(c);
}

static void overlay_free(struct carp_controller *c)
{
  carp_free(OC(c));
}

static const struct carp_controller_def def = {
    .name = "nodeoverlay.controller",
    .log_module = LOGGER,
    .reconcile = reconcile,
    .activated = activated,
    .free = overlay_free,
};

int carp_nodeoverlay_controller_new(const struct carp_controller_env *env,
                                    struct carp_controller **out)
{
  struct overlay_ctl *o;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  o = CARP_NEW(struct overlay_ctl);
  rc = carp_controller_init(&o->base, env, &def);
  if (rc) {
    carp_free(o);
    return rc;
  }
  if (env->cluster->nodeoverlays)
    carp_controller_watch(&o->base, env->cluster->nodeoverlays, map_all);
  carp_controller_watch(&o->base, env->cluster->nodepools, map_all);
  carp_controller_watch(&o->base, env->cluster->nodeclasses, map_all);
  carp_controller_resync(&o->base, RESYNC_MS);
  *out = &o->base;
  return 0;
}
