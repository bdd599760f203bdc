/* register.c: Registered and Initialized, and registration liveness.
 *
 * Registration syncs the Node once, in one conditional patch: the
 * NodeClaim's labels and annotations, its taints and startup taints
 * (unless the Node opts out with karpenter.sh/do-not-sync-taints=true),
 * the owner reference and termination finalizer, label
 * karpenter.sh/registered=true, and the karpenter.sh/unregistered taint
 * removed. The NodeClaim's status follows (nodeName, Registered=True).
 * Initialization waits for Ready and for the startup taints to go, then
 * labels the Node karpenter.sh/initialized=true. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/scheduling.h"
#include "lifecycle_int.h"

/* How long a registered NodeClaim's Node must be missing from a synced
 * cache before the NodeClaim is deleted after it. */
#define NODE_GONE_MS 10000
/* How long after registration the karpenter.sh/unregistered taint may still
 * show before it is taken for re-added (by a stale writer) rather than for
 * our patch not yet in the cache. */
#define TAINT_RESYNC_MS 5000

/* How long the NodeClaim's Registered write may wait for a Node that
 * joined but is not initialized yet (NotReady, the not-ready taint, startup
 * taints), counted from the Node's creation. A kubelet usually goes Ready
 * within seconds of joining: one write then says Registered and
 * Initialized together, which keeps a claim at three writes from creation
 * to initialized. The Node itself is synced at once, and Carpenter links it
 * to its claim by provider ID and the registered label, not by this
 * status. */
#define REGISTER_HOLD_MS 15000

static int has_taint(const struct carp_taint *t, uint32_t n, const char *key,
                     enum carp_taint_effect effect)
{
  uint32_t i;
  for (i = 0; i < n; i++)
    if (!strcmp(t[i].key, key) &&
        (effect == CARP_EFFECT_ANY || t[i].effect == effect))
      return 1;
  return 0;
}

static void put_taint(struct carp_jw *w, const struct carp_taint *t)
{
  carp_jw_obj(w);
  carp_jw_kstr(w, "key", t->key);
  if (t->value && *t->value)
    carp_jw_kstr(w, "value", t->value);
  carp_jw_kstr(w, "effect", carp_taint_effect_name(t->effect));
  carp_jw_obj_end(w);
}

/* ---- status writes ---- */

/* Writes one condition; cb ends the reconcile once
 * the write is answered (NULL: the usual carp__lc_after_write). */
static void set_condition(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, const char *key,
                          const char *type, enum carp_cond_status status,
                          const char *reason, const char *message,
                          uint64_t idle_requeue_ms, carp_lc_write_cb cb)
{
  struct carp_nodeclaim_status st;
  int changed;
  carp_nodeclaim_status_copy(&st, &nc->status);
  changed = carp_conditions_set(&st.conditions, &carp_condset_nodeclaim, type,
                                status, reason, message, nc->meta.generation,
                                carp__lc_now(l));
  if (!changed) {
    carp_controller_done(&l->base, key,
                         idle_requeue_ms ? CARP_RECONCILE_REQUEUE_AFTER
                                         : CARP_RECONCILE_DONE,
                         idle_requeue_ms);
  } else if (carp__lc_write_status(l, nc, &st, NULL, key,
                                   cb ? cb : carp__lc_after_write)) {
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  }
  carp_nodeclaim_status_cleanup(&st);
}

/* ---- registration ---- */

/* Why the Node is not initialized yet (reason and message), or NULL when
 * it is: Ready, and none of the claim's startup taints left. synced says
 * whether our registration patch (which adds them) is in node already. */
static const char *not_initialized(const struct carp_nodeclaim *nc,
                                   const struct carp_node *node, int synced,
                                   char *msg, size_t cap)
{
  uint32_t i;
  if (node->ready.status != 1) {
    snprintf(msg, cap, "Node status is NotReady");
    return "NodeNotReady";
  }
  /* As Karpenter: pods cannot land before the node lifecycle controller
   * takes its not-ready taint off, a while after Ready. */
  for (i = 0; i < node->ntaints; i++)
    if (carp_sched_taint_ephemeral(node->taints[i].key) &&
        node->taints[i].effect != CARP_EFFECT_PREFER_NO_SCHEDULE) {
      snprintf(msg, cap, "KnownEphemeralTaint \"%s\" still exists",
               node->taints[i].key);
      return "KnownEphemeralTaintsExist";
    }
  for (i = 0; i < nc->spec.nstartup_taints; i++) {
    const struct carp_taint *t = &nc->spec.startup_taints[i];
    /* Before the sync adds them, a startup taint counts as present unless
     * the Node opts out of taint syncing. */
    int present =
        has_taint(node->taints, node->ntaints, t->key, t->effect) ||
        (!synced &&
         !carp_kvset_get(node->meta.labels, "karpenter.sh/do-not-sync-taints"));
    if (present) {
      snprintf(msg, cap, "StartupTaint \"%s\" still exists", t->key);
      return "StartupTaintsExist";
    }
  }
  return NULL;
}

static int initialized_in(const struct carp_kube_result *res)
{
  yajl_val conds = carp_json_arr(res->body, "status", "conditions", NULL);
  size_t i;
  for (i = 0; conds && i < carp_json_len(conds); i++) {
    yajl_val c = carp_json_at(conds, i);
    const char *type = carp_json_str(c, "type", NULL);
    const char *status = carp_json_str(c, "status", NULL);
    if (type && status && !strcmp(type, CARP_COND_INITIALIZED) &&
        !strcmp(status, "True"))
      return 1;
  }
  return 0;
}

static void tell_initialized(struct carp_lifecycle *l,
                             const struct carp_nodeclaim *nc,
                             const struct carp_kube_result *res)
{
  const char *node = carp_json_str(res->body, "status", "nodeName", NULL);
  CARP_LOG_INFO(LC_LOG, "initialized nodeclaim",
                CARP_F_STR("nodeclaim", nc->meta.name),
                CARP_F_STR("node", node ? node : ""));
  carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                        CARP_EVENT_NORMAL, "Initialized",
                        "Status condition transitioned, Type: Initialized, "
                        "Status: True");
}

/* The transitions are told (log line, event, metric) when the status
 * write that makes them succeeds: that happens once, because every status
 * write carries the resourceVersion it was computed from, while the steps
 * before it may run again from a cache that has not caught up. */
static void on_registered_written(struct carp_lifecycle *l, const char *key,
                                  const struct carp_kube_result *res)
{
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(l->base.env.cluster, key);
  const char *node = carp_json_str(res->body, "status", "nodeName", NULL);
  if (!res->err && nc) {
    const char *pool = carp_nodeclaim_nodepool(nc);
    const char *zone =
        carp_kvset_get(nc->meta.labels, "topology.kubernetes.io/zone");
    carp_metric_add(l->m_nodes_created,
                    CARP_VALUES(pool ? pool : "", zone ? zone : ""), 1);
    CARP_LOG_INFO(LC_LOG, "registered nodeclaim",
                  CARP_F_STR("nodeclaim", nc->meta.name),
                  CARP_F_STR("node", node ? node : ""));
    carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_NORMAL, "Registered",
                          "Status condition transitioned, Type: Registered, "
                          "Status: True, Node: %s",
                          node ? node : "");
    if (initialized_in(res))
      tell_initialized(l, nc, res);
    carp__lc_pool_health(l, nc, 1, NULL, NULL);
  }
  carp__lc_after_write(l, key, res);
}

static void on_initialized_written(struct carp_lifecycle *l, const char *key,
                                   const struct carp_kube_result *res)
{
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(l->base.env.cluster, key);
  if (!res->err && nc)
    tell_initialized(l, nc, res);
  carp__lc_after_write(l, key, res);
}

/* Milliseconds the Registered write should still wait for node to be
 * initialized (see REGISTER_HOLD_MS); 0: write now. */
static uint64_t registration_hold(struct carp_lifecycle *l,
                                  const struct carp_nodeclaim *nc,
                                  const struct carp_node *node, int synced)
{
  char msg[300];
  int64_t age = carp__lc_now(l) - node->meta.creation_ms;
  if (!not_initialized(nc, node, synced, msg, sizeof(msg)))
    return 0;
  if (age < 0) /* the API server's clock is ahead of ours */
    age = 0;
  return age < REGISTER_HOLD_MS ? (uint64_t)(REGISTER_HOLD_MS - age) : 0;
}

/* Registered=True with the Node's name, and Initialized as the Node
 * stands, in one write: a Node that joins Ready is initialized at once. */
static void set_registered(struct carp_lifecycle *l,
                           const struct carp_nodeclaim *nc, const char *key,
                           const struct carp_node *node, int initialized,
                           int synced)
{
  struct carp_nodeclaim_status st;
  int64_t now = carp__lc_now(l);
  char msg[300];
  const char *why = NULL;
  carp_nodeclaim_status_copy(&st, &nc->status);
  carp_conditions_set(&st.conditions, &carp_condset_nodeclaim,
                      CARP_COND_REGISTERED, CARP_COND_TRUE, "Registered", "",
                      nc->meta.generation, now);
  carp_free(st.node_name);
  st.node_name = carp_strdup(node->meta.name);
  if (!initialized)
    why = not_initialized(nc, node, synced, msg, sizeof(msg));
  if (initialized || why)
    carp_conditions_set(&st.conditions, &carp_condset_nodeclaim,
                        CARP_COND_INITIALIZED,
                        initialized ? CARP_COND_TRUE : CARP_COND_UNKNOWN,
                        initialized ? "Initialized" : why,
                        initialized ? "" : msg, nc->meta.generation, now);
  if (carp__lc_write_status(l, nc, &st, NULL, key, on_registered_written))
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  carp_nodeclaim_status_cleanup(&st);
}

static void on_node_synced(struct carp_lifecycle *l, const char *key,
                           const struct carp_kube_result *res)
{
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(l->base.env.cluster, key);
  const struct carp_node *node =
      nc ? carp_cluster_node_of_nodeclaim(l->base.env.cluster, nc) : NULL;
  const char *name = carp_json_str(res->body, "metadata", "name", NULL);
  int initialized;
  if (res->err || !nc || !node || !name || strcmp(name, node->meta.name)) {
    carp__lc_after_write(l, key, res);
    return;
  }
  /* The cache's Node may not show our patch yet: its result says whether
   * the initialized label went on with it. */
  initialized = carp_json_str(res->body, "metadata", "labels",
                              CARP_LABEL_INITIALIZED, NULL) != NULL;
  if (!initialized && registration_hold(l, nc, node, 0)) {
    /* Once the cache shows the sync, the claim waits for its Node there. */
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 200);
    return;
  }
  set_registered(l, nc, key, node, initialized, 0);
}

/* The patch could not be built (over CARP_KUBE_MAX_BODY): it never will
 * be, so say so where users look and wait long before trying again. */
static void sync_failed(struct carp_lifecycle *l,
                        const struct carp_nodeclaim *nc,
                        const struct carp_node *node, const char *key, int rc)
{
  char msg[512];
  snprintf(msg, sizeof(msg),
           "cannot build the patch that registers Node %s (%u labels, %u "
           "annotations, %u taints and %u startup taints to copy): %s",
           node->meta.name, nc->meta.labels ? nc->meta.labels->n : 0,
           nc->meta.annotations ? nc->meta.annotations->n : 0, nc->spec.ntaints,
           nc->spec.nstartup_taints, carp_strerror(rc));
  CARP_LOG_FOLDED(&l->fold, key, CARP_LOG_ERROR, "lifecycle",
                  "cannot register the node", CARP_F_STR("nodeclaim", key),
                  CARP_F_STR("node", node->meta.name),
                  CARP_F_STR("problem", msg));
  carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                        CARP_EVENT_WARNING, "NodeSyncFailed", "%s", msg);
  set_condition(l, nc, key, CARP_COND_REGISTERED, CARP_COND_FALSE,
                "NodeSyncFailed", msg, 5 * 60 * 1000, NULL);
}

static void sync_node(struct carp_lifecycle *l, const struct carp_nodeclaim *nc,
                      const struct carp_node *node, const char *key)
{
  struct carp_buf body;
  struct carp_jw w;
  char msg[300];
  uint32_t i;
  int rc;
  int sync_taints =
      !carp_kvset_get(node->meta.labels, "karpenter.sh/do-not-sync-taints");

  if (!has_taint(node->taints, node->ntaints, CARP_TAINT_UNREGISTERED,
                 CARP_EFFECT_NO_EXECUTE))
    carp_controller_event(
        &l->base, &node->meta, "v1", CARP_EVENT_WARNING,
        "UnregisteredTaintMissing",
        "Node %s registered without the %s:NoExecute taint; pods "
        "may have landed before its labels and taints were set",
        node->meta.name, CARP_TAINT_UNREGISTERED);
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", carp__lc_node_rv(l, key, &node->meta));
  carp_jw_key(&w, "labels");
  carp_jw_obj(&w);
  for (i = 0; nc->meta.labels && i < nc->meta.labels->n; i++)
    carp_jw_kstr(&w, nc->meta.labels->kv[i].key, nc->meta.labels->kv[i].value);
  carp_jw_kstr(&w, CARP_LABEL_REGISTERED, "true");
  if (!not_initialized(nc, node, 0, msg, sizeof(msg)))
    carp_jw_kstr(&w, CARP_LABEL_INITIALIZED, "true");
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "annotations");
  carp_jw_obj(&w);
  for (i = 0; nc->meta.annotations && i < nc->meta.annotations->n; i++)
    carp_jw_kstr(&w, nc->meta.annotations->kv[i].key,
                 nc->meta.annotations->kv[i].value);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "finalizers");
  carp_jw_arr(&w);
  for (i = 0; node->meta.finalizers && i < node->meta.finalizers->n; i++)
    if (strcmp(node->meta.finalizers->kv[i].key, CARP_FINALIZER_TERMINATION))
      carp_jw_str(&w, node->meta.finalizers->kv[i].key);
  carp_jw_str(&w, CARP_FINALIZER_TERMINATION);
  carp_jw_arr_end(&w);
  carp_jw_key(&w, "ownerReferences");
  carp_jw_arr(&w);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", "karpenter.sh/v1");
  carp_jw_kstr(&w, "kind", "NodeClaim");
  carp_jw_kstr(&w, "name", nc->meta.name);
  carp_jw_kstr(&w, "uid", nc->meta.uid);
  carp_jw_kbool(&w, "blockOwnerDeletion", 1);
  carp_jw_obj_end(&w);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  carp_jw_key(&w, "taints");
  carp_jw_arr(&w);
  for (i = 0; i < node->ntaints; i++) {
    if (!strcmp(node->taints[i].key, CARP_TAINT_UNREGISTERED))
      continue;
    put_taint(&w, &node->taints[i]);
  }
  for (i = 0; sync_taints && i < nc->spec.ntaints; i++)
    if (!has_taint(node->taints, node->ntaints, nc->spec.taints[i].key,
                   nc->spec.taints[i].effect))
      put_taint(&w, &nc->spec.taints[i]);
  for (i = 0; sync_taints && i < nc->spec.nstartup_taints; i++)
    if (!has_taint(node->taints, node->ntaints, nc->spec.startup_taints[i].key,
                   nc->spec.startup_taints[i].effect) &&
        !has_taint(nc->spec.taints, nc->spec.ntaints,
                   nc->spec.startup_taints[i].key,
                   nc->spec.startup_taints[i].effect))
      put_taint(&w, &nc->spec.startup_taints[i]);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  rc = carp_jw_finish(&w);
  if (rc)
    sync_failed(l, nc, node, key, rc);
  else if (carp__lc_patch_node(l, key, node->meta.name, body.ptr, body.len,
                               on_node_synced))
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  carp_buf_free(&body);
}

/* ---- initialization ---- */

/* Only the taint goes: the startup taints a daemon may already have
 * removed are not put back, as a full sync_node would. */
static void drop_unregistered_taint(struct carp_lifecycle *l,
                                    const struct carp_node *node,
                                    const char *key)
{
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;

  CARP_LOG_WARN("lifecycle", "unregistered taint is back on a registered node",
                CARP_F_STR("node", node->meta.name));
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", carp__lc_node_rv(l, key, &node->meta));
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  carp_jw_key(&w, "taints");
  carp_jw_arr(&w);
  for (i = 0; i < node->ntaints; i++)
    if (strcmp(node->taints[i].key, CARP_TAINT_UNREGISTERED))
      put_taint(&w, &node->taints[i]);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  if (carp_jw_finish(&w) ||
      carp__lc_patch_node(l, key, node->meta.name, body.ptr, body.len,
                          carp__lc_after_write))
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  carp_buf_free(&body);
}

static void on_node_initialized(struct carp_lifecycle *l, const char *key,
                                const struct carp_kube_result *res)
{
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(l->base.env.cluster, key);
  if (res->err || !nc) {
    carp__lc_after_write(l, key, res);
    return;
  }
  set_condition(l, nc, key, CARP_COND_INITIALIZED, CARP_COND_TRUE,
                "Initialized", "", 0, on_initialized_written);
}

static int label_initialized(struct carp_lifecycle *l,
                             const struct carp_node *node, const char *key,
                             carp_lc_write_cb cb)
{
  char body[512];
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"resourceVersion\":\"%s\",\"labels\":{\"%s\":"
           "\"true\"}}}",
           carp__lc_node_rv(l, key, &node->meta), CARP_LABEL_INITIALIZED);
  return carp__lc_patch_node(l, key, node->meta.name, body, strlen(body), cb);
}

/* The Node was initialized while the Registered write waited for it: it is
 * labelled, and one write says both. */
static void on_labeled_before_registered(struct carp_lifecycle *l,
                                         const char *key,
                                         const struct carp_kube_result *res)
{
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(l->base.env.cluster, key);
  const struct carp_node *node =
      nc ? carp_cluster_node_of_nodeclaim(l->base.env.cluster, nc) : NULL;
  if (res->err || !nc || !node) {
    carp__lc_after_write(l, key, res);
    return;
  }
  set_registered(l, nc, key, node, 1, 1);
}

static void initialize(struct carp_lifecycle *l,
                       const struct carp_nodeclaim *nc,
                       const struct carp_node *node, const char *key)
{
  char msg[300];
  const char *why = not_initialized(nc, node, 1, msg, sizeof(msg));
  const struct carp_condition *init =
      carp_conditions_get(&nc->status.conditions, CARP_COND_INITIALIZED);
  if (why && init && init->status == CARP_COND_UNKNOWN) {
    /* Still waiting, for one thing or the next: one write says so (a write
     * per reason would cost the claim more than it tells). */
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 10000);
    return;
  }
  if (why) {
    set_condition(l, nc, key, CARP_COND_INITIALIZED, CARP_COND_UNKNOWN, why,
                  msg, 10000, NULL);
    return;
  }
  if (has_taint(node->taints, node->ntaints, CARP_TAINT_UNREGISTERED,
                CARP_EFFECT_ANY)) {
    const struct carp_condition *reg =
        carp_conditions_get(&nc->status.conditions, CARP_COND_REGISTERED);
    if (reg && carp__lc_now(l) - reg->transition_ms > TAINT_RESYNC_MS) {
      /* Someone wrote the taint back: take it off again, or the node
       * would stay unschedulable for good. */
      drop_unregistered_taint(l, node, key);
      return;
    }
    /* Our own registration patch is not in the cache yet. */
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 200);
    return;
  }
  if (carp_kvset_has(node->meta.labels, CARP_LABEL_INITIALIZED)) {
    on_node_initialized(l, key, &(struct carp_kube_result){0});
    return;
  }
  if (label_initialized(l, node, key, on_node_initialized))
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
}

static void on_deleted(struct carp_lifecycle *l, const char *key,
                       const struct carp_kube_result *res)
{
  carp__lc_after_write(l, key, res);
}

void carp__lc_register(struct carp_lifecycle *l,
                       const struct carp_nodeclaim *nc, const char *key)
{
  const struct carp_node *node =
      carp_cluster_node_of_nodeclaim(l->base.env.cluster, nc);
  const struct carp_condition *launched =
      carp_conditions_get(&nc->status.conditions, CARP_COND_LAUNCHED);
  int registered =
      carp_conditions_is_true(&nc->status.conditions, CARP_COND_REGISTERED);

  if (!node) {
    int64_t since = launched ? launched->transition_ms : nc->meta.creation_ms;
    int64_t waited = carp__lc_now(l) - since;
    const struct carp_condition *reg =
        carp_conditions_get(&nc->status.conditions, CARP_COND_REGISTERED);
    if (registered && carp__lc_now(l) - reg->transition_ms < NODE_GONE_MS) {
      /* Just registered: our cache may not show the Node yet. */
      carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER,
                           NODE_GONE_MS);
      return;
    }
    if (registered) {
      /* Its Node went away without us: the NodeClaim follows it. */
      carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                            CARP_EVENT_WARNING, "NodeDeleted",
                            "Node of NodeClaim %s was deleted", nc->meta.name);
      if (carp__lc_delete_claim(l, nc, key, "node_deleted", on_deleted))
        carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
      return;
    }
    if (waited > (int64_t)l->o.registration_timeout_ms) {
      carp_controller_event(
          &l->base, &nc->meta, "karpenter.sh/v1", CARP_EVENT_WARNING,
          "RegistrationTimeout", "Node did not register within %llu s",
          (unsigned long long)l->o.registration_timeout_ms / 1000);
      carp__lc_pool_health(l, nc, 0, "RegistrationFailed",
                           "Failed to register node");
      if (carp__lc_delete_claim(l, nc, key, "registration_timeout", on_deleted))
        carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
      return;
    }
    /* Look again when the timeout would pass (Node events come sooner). */
    set_condition(
        l, nc, key, CARP_COND_REGISTERED, CARP_COND_UNKNOWN,
        LC_NOT_REGISTERED_REASON, LC_NOT_REGISTERED_MESSAGE,
        (uint64_t)((int64_t)l->o.registration_timeout_ms - waited) + 100, NULL);
    return;
  }
  if (!registered) {
    /* Synced already (our patch is in the cache, the status write is
     * not, or a previous leader stopped in between): only the status is
     * left. Syncing again would patch a Node that is fine and take the
     * missing karpenter.sh/unregistered taint for a kubelet that never
     * set it. */
    if (carp_kvset_has(node->meta.labels, CARP_LABEL_REGISTERED) &&
        !has_taint(node->taints, node->ntaints, CARP_TAINT_UNREGISTERED,
                   CARP_EFFECT_ANY)) {
      int initialized =
          carp_kvset_has(node->meta.labels, CARP_LABEL_INITIALIZED);
      char msg[300];
      uint64_t hold = initialized ? 0 : registration_hold(l, nc, node, 1);
      if (!initialized && !not_initialized(nc, node, 1, msg, sizeof(msg))) {
        if (label_initialized(l, node, key, on_labeled_before_registered))
          carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
      } else if (hold) /* the Node's events come sooner when it goes Ready */
        carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, hold);
      else
        set_registered(l, nc, key, node, initialized, 1);
    } else {
      sync_node(l, nc, node, key);
    }
    return;
  }
  if (!carp_conditions_is_true(&nc->status.conditions, CARP_COND_INITIALIZED)) {
    initialize(l, nc, node, key);
    return;
  }
  carp_controller_done(&l->base, key, CARP_RECONCILE_DONE, 0);
}
