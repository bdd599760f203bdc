/* gc.c: garbage collection of leaked VMs and of NodeClaims whose VM is
 * gone (see include/carpenter/gc.h).
 *
 * A controller with one key: its reconcile starts a provider list, and
 * the list's callback compares the VMs with the NodeClaim cache (both
 * views are read in the same callback, so nothing changes in between),
 * starts the deletes and requeues the key after the interval. Leaked VMs
 * are remembered by provider ID with the time they were first seen
 * unowned, so the grace period spans sweeps; a VM that an owner claims
 * again (a NodeClaim that the cache had not shown yet) is forgotten. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/controller.h"
#include "carpenter/error.h"
#include "carpenter/gc.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/provider.h"
#include "carpenter/timeutil.h"

#define FIRST_SWEEP_MS  1000
#define MIN_INTERVAL_MS 100
#define CONTROLLER      "nodeclaim.garbagecollection"
#define SWEEP_KEY       "sweep"

/* A VM seen without an owner. */
struct leak {
  char *provider_id; /* the map key */
  char *uid;         /* from its description; "" when absent */
  char *region;
  char *name;
  int64_t first_ms;
  struct carp_provider_op *del;
  int seen;
  int dropped; /* out of the map: freed by the delete's callback */
};

struct carp_gc {
  struct carp_controller base;
  struct carp_gc_options o;
  struct carp_provider_op *list;
  int64_t list_started;
  struct carp_map leaks; /* provider ID -> struct leak */
  struct carp_metric *m_vms;
  struct carp_metric *m_disrupted;
};

#define GC(c) carp_container_of(c, struct carp_gc, base)

static int64_t now_ms(const struct carp_gc *g)
{
  return carp_controller_now(&g->base);
}

static void leak_free(struct leak *l)
{
  carp_free(l->provider_id);
  carp_free(l->uid);
  carp_free(l->region);
  carp_free(l->name);
  carp_free(l);
}

/* Removes a leak from the map; one with a delete in flight is freed by its
 * callback. */
static void leak_drop(struct carp_gc *g, struct leak *l)
{
  carp_map_dels(&g->leaks, l->provider_id);
  if (l->del)
    l->dropped = 1;
  else
    leak_free(l);
}

/* ---- leaked VMs ---- */

struct vm_del {
  struct carp_gc *g;
  struct leak *l;
};

static void on_vm_deleted(int status, const struct carp_provider_error *err,
                          void *arg)
{
  struct vm_del *v = arg;
  struct carp_gc *g = v->g;
  struct leak *l = v->l;
  l->del = NULL;
  if (status == 0 || status == CARP_ENOTFOUND) {
    if (status == 0) {
      CARP_LOG_INFO(
          "gc", "deleted leaked VM", CARP_F_STR("providerID", l->provider_id),
          CARP_F_STR("name", l->name), CARP_F_STR("nodeclaimUID", l->uid));
      carp_metric_add(g->m_vms, CARP_VALUES(l->region), 1);
    }
    if (!l->dropped)
      carp_map_dels(&g->leaks, l->provider_id);
    l->dropped = 1;
  } else if (status != CARP_ECANCELED) {
    CARP_LOG_WARN("gc", "deleting leaked VM failed, will retry",
                  CARP_F_STR("providerID", l->provider_id), CARP_F_ERR(status),
                  CARP_F_STR("message", err ? err->message : ""));
  }
  if (l->dropped)
    leak_free(l);
  carp_free(v);
  carp_controller_release(&g->base);
}

static void delete_leak(struct carp_gc *g, struct leak *l)
{
  struct carp_provider_delete_req req;
  struct vm_del *v;
  memset(&req, 0, sizeof(req));
  req.controller = CONTROLLER;
  req.provider_id = l->provider_id;
  /* Only the VM as we saw it: one that names another NodeClaim now is
   * left alone. */
  req.nodeclaim_uid = *l->uid ? l->uid : NULL;
  v = CARP_NEW(struct vm_del);
  v->g = g;
  v->l = l;
  CARP_LOG_INFO("gc", "deleting leaked VM",
                CARP_F_STR("providerID", l->provider_id),
                CARP_F_STR("name", l->name), CARP_F_STR("nodeclaimUID", l->uid),
                CARP_F_DURATION("unowned_for", now_ms(g) - l->first_ms));
  carp_controller_hold(&g->base);
  if (carp_provider_delete(g->base.env.provider, &req, on_vm_deleted, v,
                           &l->del)) {
    l->del = NULL;
    carp_free(v);
    carp_controller_release(&g->base);
  }
}

/* ---- the sweep ---- */

static const char *annotation_pid(const struct carp_nodeclaim *nc, char *out,
                                  size_t size)
{
  const char *ann = carp_kvset_get(nc->meta.annotations, CARP_ANN_VM);
  char region[64], zone[64];
  int64_t vmid;
  if (!ann || carp_provider_vm_annotation_parse(ann, region, sizeof(region),
                                                zone, sizeof(zone), &vmid))
    return NULL;
  carp_provider_id_format(region, vmid, out, size);
  return out;
}

static void sweep_vms(struct carp_gc *g, const struct carp_provider_instance *v,
                      size_t n, int64_t now)
{
  struct carp_store *claims =
      carp_informer_store(g->base.env.cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct carp_map owned; /* UIDs and provider IDs of NodeClaims */
  struct carp_map_iter mi;
  char(*ann)[128];
  size_t nclaims = carp_store_len(claims), na = 0, i;
  void *val;

  carp_map_init(&owned);
  ann = carp_calloc(nclaims ? nclaims : 1, sizeof(*ann));
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    carp_map_puts(&owned, nc->meta.uid, (void *)1);
    if (nc->status.provider_id && *nc->status.provider_id)
      carp_map_puts(&owned, nc->status.provider_id, (void *)1);
    if (na < nclaims && annotation_pid(nc, ann[na], sizeof(ann[na])))
      carp_map_puts(&owned, ann[na++], (void *)1);
  }
  carp_map_iter_init(&mi);
  while (carp_map_next(&g->leaks, &mi, NULL, NULL, &val))
    ((struct leak *)val)->seen = 0;
  for (i = 0; i < n; i++) {
    const struct carp_provider_instance *vm = &v[i];
    struct leak *l = carp_map_gets(&g->leaks, vm->provider_id);
    int is_owned =
        (vm->nodeclaim_uid[0] && carp_map_gets(&owned, vm->nodeclaim_uid)) ||
        carp_map_gets(&owned, vm->provider_id);
    if (is_owned) {
      if (l && !l->del)
        leak_drop(g, l);
      continue;
    }
    if (!l) {
      l = CARP_NEW(struct leak);
      l->provider_id = carp_strdup(vm->provider_id);
      l->uid = carp_strdup(vm->nodeclaim_uid);
      l->region = carp_strdup(vm->region);
      l->name = carp_strdup(vm->name);
      l->first_ms = now;
      carp_map_puts(&g->leaks, l->provider_id, l);
      CARP_LOG_INFO("gc",
                    "VM owned by no NodeClaim; deleting it after the "
                    "grace period unless one claims it",
                    CARP_F_STR("providerID", vm->provider_id),
                    CARP_F_STR("name", vm->name),
                    CARP_F_STR("nodeclaimUID", vm->nodeclaim_uid),
                    CARP_F_DURATION("grace", g->o.leaked_vm_grace_ms));
    }
    l->seen = 1;
    if (!l->del && now - l->first_ms >= (int64_t)g->o.leaked_vm_grace_ms)
      delete_leak(g, l);
  }
  /* VMs that left the list are no longer our business. */
  carp_map_iter_init(&mi);
  while (carp_map_next(&g->leaks, &mi, NULL, NULL, &val)) {
    struct leak *l = val;
    if (!l->seen && !l->del)
      leak_drop(g, l);
  }
  carp_map_free(&owned);
  carp_free(ann);
}

static void sweep_claims(struct carp_gc *g,
                         const struct carp_provider_instance *v, size_t n)
{
  struct carp_cluster *cluster = g->base.env.cluster;
  struct carp_store *claims = carp_informer_store(cluster->nodeclaims);
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct carp_map vms; /* provider IDs listed */
  size_t i;

  carp_map_init(&vms);
  for (i = 0; i < n; i++)
    carp_map_puts(&vms, v[i].provider_id, (void *)1);
  carp_store_iter_init(&it);
  while ((m = carp_store_next(claims, &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    const struct carp_condition *launched =
        carp_conditions_get(&nc->status.conditions, CARP_COND_LAUNCHED);
    const struct carp_node *node;
    const char *pool = carp_nodeclaim_nodepool(nc);
    const char *ct =
        carp_kvset_get(nc->meta.labels, CARP_LABEL_CAPACITY_TYPE_KEY);
    int registered;

    if (nc->meta.deletion_ms || !nc->spec.node_class_ref.kind ||
        strcmp(nc->spec.node_class_ref.kind, "ProxmoxNodeClass") || !launched ||
        launched->status != CARP_COND_TRUE || !nc->status.provider_id ||
        !*nc->status.provider_id || carp_map_gets(&vms, nc->status.provider_id))
      continue;
    /* Launched after the list began: the list may not show it. */
    if (launched->transition_ms >= g->list_started)
      continue;
    registered =
        carp_conditions_is_true(&nc->status.conditions, CARP_COND_REGISTERED);
    if (!registered && g->list_started - launched->transition_ms <
                           (int64_t)g->o.launch_grace_ms)
      continue;
    node = carp_cluster_node_of_nodeclaim(cluster, nc);
    if (node && node->ready.status == 1)
      continue;
    CARP_LOG_INFO("gc", "garbage collecting nodeclaim with no VM",
                  CARP_F_STR("nodeclaim", nc->meta.name),
                  CARP_F_STR("providerID", nc->status.provider_id),
                  CARP_F_STR("node", node ? node->meta.name : ""));
    carp_controller_event(&g->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_WARNING, "GarbageCollected",
                          "VM %s no longer exists; deleting the NodeClaim",
                          nc->status.provider_id);
    carp_metric_add(g->m_disrupted,
                    CARP_VALUES("garbage_collected", pool ? pool : "",
                                ct ? ct : "", "", "forceful"),
                    1);
    /* A side write: a failure shows at the next sweep. */
    carp_write_delete_claim(&g->base, NULL, nc, NULL, NULL);
  }
  carp_map_free(&vms);
}

static void on_list(int status, const struct carp_provider_instance *v,
                    size_t n, const struct carp_provider_error *err, void *arg)
{
  struct carp_gc *g = arg;
  g->list = NULL;
  if (status || (err && err->code)) {
    if (status != CARP_ECANCELED)
      CARP_LOG_WARN("gc",
                    "listing VMs failed or was partial; skipping this "
                    "sweep",
                    CARP_F_ERR(status ? status : err->code),
                    CARP_F_STR("message", err ? err->message : ""));
  } else if (carp_controller_acting(&g->base)) {
    sweep_vms(g, v, n, now_ms(g));
    sweep_claims(g, v, n);
  }
  carp_controller_done(&g->base, SWEEP_KEY, CARP_RECONCILE_REQUEUE_AFTER,
                       g->o.interval_ms);
  carp_controller_release(&g->base);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct carp_gc *g = GC(c);
  g->list_started = now_ms(g);
  carp_controller_hold(c);
  if (carp_provider_list(c->env.provider, CONTROLLER, on_list, g, &g->list)) {
    g->list = NULL;
    carp_controller_release(c);
    carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER,
                         g->o.interval_ms);
  }
}

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue_after(c, SWEEP_KEY, FIRST_SWEEP_MS);
}

static void cancel(struct carp_controller *c)
{
  struct carp_gc *g = GC(c);
  struct carp_map_iter it;
  void *v;
  if (g->list)
    carp_provider_cancel(c->env.provider, g->list);
  carp_map_iter_init(&it);
  while (carp_map_next(&g->leaks, &it, NULL, NULL, &v)) {
    struct leak *l = v;
    if (l->del)
      carp_provider_cancel(c->env.provider, l->del);
  }
}

static void gc_free(struct carp_controller *c)
{
  struct carp_gc *g = GC(c);
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&g->leaks, &it, NULL, NULL, &v))
    leak_free(v);
  carp_map_free(&g->leaks);
  carp_free(g);
}

static const struct carp_controller_def gc_def = {
    .name = CONTROLLER,
    .log_module = "gc",
    .reconcile = reconcile,
    .activated = activated,
    .cancel = cancel,
    .free = gc_free,
};

int carp_gc_new(const struct carp_controller_env *env,
                const struct carp_gc_options *o, struct carp_controller **out)
{
  struct carp_gc *g;
  int rc;
  if (!env || !env->provider || !out)
    return CARP_EINVAL;
  g = CARP_NEW(struct carp_gc);
  if (o)
    g->o = *o;
  if (!g->o.interval_ms)
    g->o.interval_ms = 2 * 60 * 1000;
  if (g->o.interval_ms < MIN_INTERVAL_MS)
    g->o.interval_ms = MIN_INTERVAL_MS;
  if (!g->o.leaked_vm_grace_ms)
    g->o.leaked_vm_grace_ms = 5 * 60 * 1000;
  if (!g->o.launch_grace_ms)
    g->o.launch_grace_ms = 60 * 1000;
  carp_map_init(&g->leaks);
  rc = carp_controller_init(&g->base, env, &gc_def);
  if (rc) {
    carp_map_free(&g->leaks);
    carp_free(g);
    return rc;
  }
  if (env->metrics) {
    g->m_vms = carp_metrics_counter(
        env->metrics, "carpenter_garbage_collected_vms_total",
        "Number of VMs deleted because no NodeClaim owned them. Labeled by "
        "region.",
        CARP_LABELS("region"));
    g->m_disrupted = carp_metric_nodeclaims_disrupted(env->metrics);
  }
  *out = &g->base;
  return 0;
}
