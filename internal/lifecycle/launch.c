/* launch.c: the Launched step. A create runs beside the work queue (it can
 * take minutes: clone, configure, start); the NodeClaim's reconcile ends
 * at once and the create's callback queues the NodeClaim again, which then
 * writes the result in one status patch (Launched=True, provider ID,
 * capacity, Registered=Unknown until the Node comes), conditional on the
 * resourceVersion the previous write returned. The labels the instance
 * gives the claim (zone, instance type, ...) went in before, with the
 * write-ahead record below; only an adopted VM needs a labels patch. The result
 * is kept until the cache shows Launched=True, so a stale cache never starts a
 * second create. A failed create is tried again after a per-claim backoff (1 s
 * doubling to 5 min, kept in the claim's memory so that the status write in
 * between cannot reset it); every write names the resourceVersion our previous
 * write to the claim returned, or the cache's when that is newer
 * (carp__lc_claim_rv).
 *
 * The provider writes the VMID ahead through the reserve hook before it
 * clones; that write carries a resourceVersion precondition too, so a
 * NodeClaim changed or deleted meanwhile is never cloned for. It also
 * adds the termination finalizer and the instance's labels: a VM never
 * exists for a claim that could go without it being deleted. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/base64.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "lifecycle_int.h"

struct launch_ctx {
  struct carp_lifecycle *l;
  char *key;
  struct carp_nodeclaim *nc; /* a reference, held during the create */
  struct carp_nodeclass *cls;
  char *userdata;
  size_t userdata_len;
};

/* ---- the write-ahead hook ---- */

struct reserve_ctx {
  carp_provider_reserved_cb done;
  void *token;
};

static void on_reserved(struct carp_controller *c, const char *key,
                        const struct carp_kube_result *res, void *arg)
{
  struct reserve_ctx *r = arg;
  struct carp_lifecycle *l = LC(c);
  const char *rv =
      carp_json_str(res->body, "metadata", "resourceVersion", NULL);
  if (!res->err && rv)
    carp__lc_remember_rv(l, key, 0, rv);
  else if (res->err == CARP_ECONFLICT)
    carp__lc_remember_rv(l, key, 0, NULL);
  if (res->err)
    CARP_LOG_WARN(LC_LOG, "could not record the VM before cloning",
                  CARP_F_STR("nodeclaim", key), CARP_F_ERR(res->err));
  r->done(r->token, res->err);
  carp_free(r);
}

static void reserve(const struct carp_nodeclaim *nc,
                    const struct carp_provider_reservation *res,
                    carp_provider_reserved_cb done, void *token, void *arg)
{
  struct carp_lifecycle *l = arg;
  const struct carp_nodeclaim *cur =
      carp_cluster_nodeclaim(l->base.env.cluster, nc->meta.name);
  struct reserve_ctx *r;
  struct carp_buf body;
  struct carp_jw w;
  uint32_t i;
  int rc;

  if (!cur || strcmp(cur->meta.uid, nc->meta.uid) || cur->meta.deletion_ms ||
      !carp_controller_acting(&l->base)) {
    done(token, CARP_ECANCELED);
    return;
  }
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  /* Our own last write may be newer than the cache. */
  carp_jw_kstr(&w, "resourceVersion", carp__lc_claim_rv(l, cur));
  carp_jw_key(&w, "annotations");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, CARP_ANN_VM, res->value);
  carp_jw_obj_end(&w);
  if (res->inst) {
    carp_jw_key(&w, "labels");
    carp_jw_obj(&w);
    carp__lc_put_instance_labels(&w, res->inst);
    carp_jw_obj_end(&w);
  }
  if (!carp_kvset_has(cur->meta.finalizers, CARP_FINALIZER_TERMINATION)) {
    carp_jw_key(&w, "finalizers");
    carp_jw_arr(&w);
    for (i = 0; cur->meta.finalizers && i < cur->meta.finalizers->n; i++)
      carp_jw_str(&w, cur->meta.finalizers->kv[i].key);
    carp_jw_str(&w, CARP_FINALIZER_TERMINATION);
    carp_jw_arr_end(&w);
  }
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  rc = carp__lc_finish_body(l, nc->meta.name, &w, "write-ahead annotation");
  if (rc) {
    carp_buf_free(&body);
    done(token, rc);
    return;
  }
  r = CARP_NEW(struct reserve_ctx);
  r->done = done;
  r->token = token;
  rc = carp_write_patch(
      &l->base, nc->meta.name,
      &(struct carp_kube_ref){.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims",
                              .name = nc->meta.name},
      body.ptr, body.len, on_reserved, r);
  carp_buf_free(&body);
  if (rc) {
    carp_free(r);
    done(token, rc);
  }
}

/* ---- the create ---- */

static void launch_ctx_free(struct launch_ctx *c)
{
  carp_obj_unref(&c->nc->meta);
  if (c->cls)
    carp_obj_unref(&c->cls->meta);
  carp_free(c->userdata);
  carp_free(c->key);
  carp_free(c);
}

static void on_created(int status, const struct carp_provider_instance *inst,
                       const struct carp_provider_error *err, void *arg)
{
  struct launch_ctx *c = arg;
  struct carp_lifecycle *l = c->l;
  struct claim_mem *m = carp_map_gets(&l->mem, c->key);
  if (m && m->launch) {
    m->launch = NULL;
    m->launch_done = 1;
    m->launch_status = status;
    if (inst)
      m->inst = *inst;
    memset(&m->inst.capacity, 0, sizeof(m->inst.capacity));
    memset(&m->inst.allocatable, 0, sizeof(m->inst.allocatable));
    if (inst) {
      carp_resources_copy(&m->inst.capacity, &inst->capacity);
      carp_resources_copy(&m->inst.allocatable, &inst->allocatable);
    }
    if (err)
      m->err = *err;
    else
      memset(&m->err, 0, sizeof(m->err));
    if (status == 0)
      CARP_LOG_INFO("lifecycle", "launched nodeclaim",
                    CARP_F_STR("nodeclaim", c->key),
                    CARP_F_STR("providerID", inst ? inst->provider_id : ""),
                    CARP_F_STR("instanceType", inst ? inst->instance_type : ""),
                    CARP_F_STR("zone", inst ? inst->zone : ""));
  }
  carp_controller_enqueue(&l->base, c->key);
  launch_ctx_free(c);
  carp_controller_release(&l->base);
}

static void start_create(struct launch_ctx *c)
{
  struct carp_lifecycle *l = c->l;
  struct claim_mem *m = carp_map_gets(&l->mem, c->key);
  struct carp_provider_create_req req;
  int rc;
  memset(&req, 0, sizeof(req));
  req.controller = "nodeclaim.lifecycle";
  req.nodeclaim = c->nc;
  req.nodeclass = c->cls;
  req.userdata = c->userdata;
  req.userdata_len = c->userdata_len;
  req.reserve = reserve;
  req.reserve_arg = l;
  if (!m) {
    launch_ctx_free(c);
    return;
  }
  carp_controller_hold(&l->base);
  rc = carp_provider_create(l->base.env.provider, &req, on_created, c,
                            &m->launch);
  if (rc) {
    carp_controller_release(&l->base);
    m->launch = NULL;
    m->launch_done = 1;
    m->launch_status = rc;
    snprintf(m->err.reason, sizeof(m->err.reason), "%s",
             CARP_REASON_LAUNCH_FAILED);
    snprintf(m->err.message, sizeof(m->err.message), "%s", carp_strerror(rc));
    carp_controller_enqueue(&l->base, c->key);
    launch_ctx_free(c);
  }
}

static void on_secret(const struct carp_kube_result *res, void *arg)
{
  struct launch_ctx *c = arg;
  struct carp_lifecycle *l = c->l;
  const char *key = c->cls->spec.userdata_secret_key
                        ? c->cls->spec.userdata_secret_key
                        : "user-data";
  const char *b64 = carp_json_str(res->body, "data", key, NULL);
  struct claim_mem *m = carp_map_gets(&l->mem, c->key);
  struct carp_buf data;
  if (m)
    m->reading_secret = 0;
  carp_buf_init(&data, 1024 * 1024);
  if (res->err || !b64 || carp_base64_decode(&data, b64, strlen(b64))) {
    if (m) {
      m->launch_done = 1;
      m->launch_status = res->err ? res->err : CARP_ENOENT;
      snprintf(m->err.reason, sizeof(m->err.reason), "%s",
               CARP_REASON_USERDATA_RENDER_FAILED);
      snprintf(m->err.message, sizeof(m->err.message),
               "cannot read key %s of Secret %s/%s: %s", key,
               c->cls->spec.userdata_secret_namespace,
               c->cls->spec.userdata_secret_name,
               res->err ? res->message : "missing or not base64");
    }
    carp_buf_free(&data);
    carp_controller_enqueue(&l->base, c->key);
    launch_ctx_free(c);
    carp_controller_release(&l->base);
    return;
  }
  c->userdata = carp_buf_steal(&data, &c->userdata_len);
  if (!carp_controller_acting(&l->base) || !m)
    launch_ctx_free(c);
  else
    start_create(c);
  carp_controller_release(&l->base);
}

static void set_unknown(struct carp_lifecycle *l,
                        const struct carp_nodeclaim *nc, const char *key,
                        const char *reason, const char *message,
                        uint64_t retry_ms)
{
  struct carp_nodeclaim_status st;
  int changed;
  carp_nodeclaim_status_copy(&st, &nc->status);
  changed = carp_conditions_set(&st.conditions, &carp_condset_nodeclaim,
                                CARP_COND_LAUNCHED, CARP_COND_UNKNOWN, reason,
                                message, nc->meta.generation, carp__lc_now(l));
  if (changed) {
    carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_WARNING, reason, "%s", message);
    if (carp__lc_write_status(l, nc, &st, NULL, key, carp__lc_after_write))
      carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  } else {
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, retry_ms);
  }
  carp_nodeclaim_status_cleanup(&st);
}

/* ---- writing the result ---- */

static void on_status_written(struct carp_lifecycle *l, const char *key,
                              const struct carp_kube_result *res)
{
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  if (!res->err && m)
    m->launch_status = 1; /* written: wait for the cache to show it */
  carp__lc_after_write(l, key, res);
}

static void write_status(struct carp_lifecycle *l,
                         const struct carp_nodeclaim *nc, const char *key,
                         struct claim_mem *m, const char *rv)
{
  struct carp_nodeclaim_status st;
  int64_t now = carp__lc_now(l);
  carp_nodeclaim_status_copy(&st, &nc->status);
  carp_free(st.provider_id);
  st.provider_id = carp_strdup(m->inst.provider_id);
  carp_free(st.image_id);
  st.image_id = m->inst.image_id[0] ? carp_strdup(m->inst.image_id) : NULL;
  carp_resources_cleanup(&st.capacity);
  carp_resources_copy(&st.capacity, &m->inst.capacity);
  carp_resources_cleanup(&st.allocatable);
  carp_resources_copy(&st.allocatable, &m->inst.allocatable);
  carp_conditions_set(&st.conditions, &carp_condset_nodeclaim,
                      CARP_COND_LAUNCHED, CARP_COND_TRUE, "Launched", "",
                      nc->meta.generation, now);
  /* What registration would write next while it waits for the Node, in
   * this same patch rather than one of its own. */
  if (!carp_conditions_get(&st.conditions, CARP_COND_REGISTERED))
    carp_conditions_set(&st.conditions, &carp_condset_nodeclaim,
                        CARP_COND_REGISTERED, CARP_COND_UNKNOWN,
                        LC_NOT_REGISTERED_REASON, LC_NOT_REGISTERED_MESSAGE,
                        nc->meta.generation, now);
  if (carp__lc_write_status(l, nc, &st, rv, key, on_status_written))
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  carp_nodeclaim_status_cleanup(&st);
}

static void on_labels_written(struct carp_lifecycle *l, const char *key,
                              const struct carp_kube_result *res)
{
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(l->base.env.cluster, key);
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  const char *rv =
      carp_json_str(res->body, "metadata", "resourceVersion", NULL);
  if (res->err || !nc || !m || !rv) {
    carp__lc_after_write(l, key, res);
    return;
  }
  /* The labels are in; the status follows with the new version. */
  write_status(l, nc, key, m, rv);
}

/* Only when the write-ahead record did not carry them (an adopted VM, or
 * a create that ended on another instance than it reserved). */
static void write_labels(struct carp_lifecycle *l,
                         const struct carp_nodeclaim *nc, const char *key,
                         struct claim_mem *m)
{
  struct carp_buf body;
  struct carp_jw w;
  carp_buf_init(&body, CARP_KUBE_MAX_BODY);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", carp__lc_claim_rv(l, nc));
  carp_jw_key(&w, "labels");
  carp_jw_obj(&w);
  carp__lc_put_instance_labels(&w, &m->inst);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  if (carp__lc_finish_body(l, key, &w, "labels") ||
      carp__lc_patch_claim(l, key, NULL, body.ptr, body.len, on_labels_written))
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
  carp_buf_free(&body);
}

static void on_failed_deleted(struct carp_lifecycle *l, const char *key,
                              const struct carp_kube_result *res)
{
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  if (m && (!res->err || res->err == CARP_ENOTFOUND)) {
    /* Deleted: its pods get a new claim. Until the cache shows the
     * deletion, a reconcile must neither launch it again nor delete it a
     * second time. */
    m->claim_deleted = 1;
    m->launch_done = 0;
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 2000);
    return;
  }
  carp__lc_after_write(l, key, res);
}

/* A retry is never put off past the launch timeout: the claim must be
 * looked at when it runs out. */
static uint64_t before_timeout(struct carp_lifecycle *l,
                               const struct carp_nodeclaim *nc, uint64_t delay)
{
  int64_t left = nc->meta.creation_ms + (int64_t)l->o.launch_timeout_ms -
                 carp__lc_now(l) + 1;
  if (left < 1)
    left = 1;
  return delay < (uint64_t)left ? delay : (uint64_t)left;
}

/* Errors a new create cannot fix by itself: they back off to minutes. */
static int launch_error_permanent(int st)
{
  return st == CARP_EBADREQUEST || st == CARP_EINVALID ||
         st == CARP_EFORBIDDEN || st == CARP_EUNAUTHORIZED;
}

static void handle_result(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, const char *key,
                          struct claim_mem *m)
{
  int st = m->launch_status;
  uint64_t delay;
  if (st == 0) {
    carp_retry_reset(&m->launch_retry);
    carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_NORMAL, "Launched",
                          "Launched %s (%s) on %s", m->inst.provider_id,
                          m->inst.instance_type, m->inst.zone);
    if (carp__lc_has_instance_labels(nc, &m->inst))
      write_status(l, nc, key, m, NULL);
    else
      write_labels(l, nc, key, m);
    return;
  }
  if (st == CARP_EINSUFFICIENT_CAPACITY || st == CARP_ENODECLASS_NOT_READY) {
    /* Karpenter deletes the claim: its pods get a new one elsewhere.
     * launch_done stays set until the delete is accepted, so a failed
     * delete is retried (with backoff), never turned into a new create. */
    int ice = st == CARP_EINSUFFICIENT_CAPACITY;
    carp_controller_event(
        &l->base, &nc->meta, "karpenter.sh/v1", CARP_EVENT_WARNING,
        ice ? "InsufficientCapacityError" : "NodeClassNotReadyError",
        "NodeClaim %s event: %s", nc->meta.name, m->err.message);
    if (carp__lc_delete_claim(
            l, nc, key, ice ? "insufficient_capacity" : "nodeclass_not_ready",
            on_failed_deleted))
      carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  m->launch_done = 0;
  /* The next create waits: 1 s doubling to 5 min, or minutes at once for
   * what a retry cannot fix. */
  delay = launch_error_permanent(st)
              ? carp_retry_fail_permanent(&m->launch_retry, carp__lc_now(l),
                                          2 * 60 * 1000)
              : carp_retry_fail(&m->launch_retry, carp__lc_now(l));
  CARP_LOG_FOLDED(&l->fold, nc->meta.name, CARP_LOG_WARN, "lifecycle",
                  "launch failed, will retry",
                  CARP_F_STR("nodeclaim", nc->meta.name),
                  CARP_F_STR("reason", m->err.reason),
                  CARP_F_STR("message", m->err.message), CARP_F_ERR(st),
                  CARP_F_UINT("attempts", m->launch_retry.failures),
                  CARP_F_DURATION("retry_in", delay));
  set_unknown(l, nc, key,
              m->err.reason[0] ? m->err.reason : CARP_REASON_LAUNCH_FAILED,
              m->err.message[0] ? m->err.message : carp_strerror(st),
              before_timeout(l, nc, delay));
}

void carp__lc_launch(struct carp_lifecycle *l, const struct carp_nodeclaim *nc,
                     const char *key)
{
  struct claim_mem *m = carp__lc_mem(l, nc, 1);
  const struct carp_nodeclass *cls;
  struct launch_ctx *c;
  uint64_t wait;

  if (m->launch || m->reading_secret) {
    carp_controller_done(&l->base, key, CARP_RECONCILE_DONE,
                         0); /* its callback requeues */
    return;
  }
  if (m->claim_deleted) {
    /* Deleted after a failed launch; its deletion event comes. */
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 5000);
    return;
  }
  if (m->launch_done) {
    if (m->launch_status == 1) {
      /* Written; the cache has not caught up yet. */
      carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER, 200);
      return;
    }
    handle_result(l, nc, key, m);
    return;
  }
  if (carp__lc_now(l) - nc->meta.creation_ms >
      (int64_t)l->o.launch_timeout_ms) {
    carp_controller_event(&l->base, &nc->meta, "karpenter.sh/v1",
                          CARP_EVENT_WARNING, "LaunchTimeout",
                          "NodeClaim was not launched within %llu s",
                          (unsigned long long)l->o.launch_timeout_ms / 1000);
    {
      const struct carp_condition *why =
          carp_conditions_get(&nc->status.conditions, CARP_COND_LAUNCHED);
      carp__lc_pool_health(
          l, nc, 0, why && why->reason ? why->reason : "LaunchTimeout",
          why && why->message && *why->message ? why->message
                                               : "NodeClaim was not launched "
                                                 "in time");
    }
    if (carp__lc_delete_claim(l, nc, key, "launch_timeout", on_failed_deleted))
      carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  cls =
      carp_cluster_nodeclass(l->base.env.cluster, nc->spec.node_class_ref.name);
  if (!cls || cls->meta.deletion_ms) {
    char msg[256];
    snprintf(msg, sizeof(msg), "ProxmoxNodeClass %s not found",
             nc->spec.node_class_ref.name);
    set_unknown(l, nc, key, "NodeClassNotFound", msg, 10000);
    return;
  }
  wait = carp_retry_wait(&m->launch_retry, carp__lc_now(l));
  if (wait) {
    carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER,
                         before_timeout(l, nc, wait));
    return;
  }
  c = CARP_NEW(struct launch_ctx);
  c->l = l;
  c->key = carp_strdup(key);
  c->nc =
      (struct carp_nodeclaim *)carp_obj_ref((struct carp_objmeta *)&nc->meta);
  c->cls =
      (struct carp_nodeclass *)carp_obj_ref((struct carp_objmeta *)&cls->meta);
  if (cls->spec.bootstrap_mode == CARP_BOOTSTRAP_USERDATA) {
    struct carp_kube_ref ref = {.version = "v1",
                                .resource = "secrets",
                                .namespace =
                                    cls->spec.userdata_secret_namespace,
                                .name = cls->spec.userdata_secret_name};
    /* The launch is under way while the Secret is read. */
    m->reading_secret = 1;
    carp_controller_hold(&l->base);
    if (carp_kube_get(l->base.env.kube, &ref, on_secret, c)) {
      carp_controller_release(&l->base);
      m->reading_secret = 0;
      launch_ctx_free(c);
      carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
      return;
    }
  } else {
    start_create(c);
  }
  carp_controller_done(&l->base, key, CARP_RECONCILE_DONE, 0);
}
