/* controller.c: the capacitybuffer controller (see
 * include/carpenter/capacitybuffer_controller.h).
 *
 * A reconcile either resolves the buffer - reads the object it names,
 * builds its virtual pods, remembers what it found - or, when the last
 * resolution is recent and the buffer's spec has not changed since, only
 * recomputes the status from that resolution and the provisioner's
 * placement. One status write at most per reconcile, with the buffer's
 * resourceVersion as precondition; then the key waits for the next
 * resolution. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/capacitybuffer_controller.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/metrics.h"

#define LOGGER            "capacitybuffer"
#define DEFAULT_RESYNC_MS (30 * 1000)

/* What the last resolution of a buffer found. */
struct resolved {
  char *key; /* the map's key */
  char *uid;
  int64_t generation; /* the buffer's, when resolved */
  int64_t at_ms;
  int64_t replicas; /* chunks kept; -1: none computed */
  enum carp_cond_status ready;
  const char *reason; /* static strings */
  char message[512];
  char *pod_template; /* status.podTemplateRef; NULL for scalableRef */
  int has_generation;
  int64_t template_generation;
};

struct bufctl {
  struct carp_controller base;
  struct carp_capacitybuffer_controller_options o;
  struct carp_map resolved; /* key -> struct resolved */
  struct get *gets;         /* reads in flight */
  struct carp_metric *m_pods;
};

/* A read in flight. */
struct get {
  struct bufctl *bc;
  char *key;
  struct carp_kube_op *op;
  struct get *prev, *next;
};

#define BC(c) carp_container_of(c, struct bufctl, base)

static const struct carp_capacitybuffer *buffer_of(struct carp_controller *c,
                                                   const char *key)
{
  return (const struct carp_capacitybuffer *)carp_store_get(
      carp_informer_store(c->env.cluster->capacitybuffers), key);
}

static void resolved_free(struct resolved *r)
{
  if (!r)
    return;
  carp_free(r->key);
  carp_free(r->uid);
  carp_free(r->pod_template);
  carp_free(r);
}

static void set_pods(struct bufctl *bc, const char *key,
                     struct carp_pod *const *pods, size_t n)
{
  if (carp_cluster_set_virtual_pods(bc->base.env.cluster, key, pods, n) &&
      bc->o.on_change)
    bc->o.on_change(bc->o.on_change_arg);
}

static void forget(struct bufctl *bc, const char *key)
{
  resolved_free(carp_map_dels(&bc->resolved, key));
  set_pods(bc, key, NULL, 0);
}

/* A fresh record for b, replacing the last. */
static struct resolved *record(struct bufctl *bc, const char *key,
                               const struct carp_capacitybuffer *b)
{
  struct resolved *r = CARP_NEW(struct resolved);
  resolved_free(carp_map_dels(&bc->resolved, key));
  r->key = carp_strdup(key);
  r->uid = carp_strdup(b->meta.uid);
  r->generation = b->meta.generation;
  r->at_ms = carp_controller_now(&bc->base);
  r->replicas = -1;
  carp_map_puts(&bc->resolved, r->key, r);
  return r;
}

/* The buffer keeps no room, for the reason given. */
static void not_ready(struct bufctl *bc, const char *key, struct resolved *r,
                      const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void not_ready(struct bufctl *bc, const char *key, struct resolved *r,
                      const char *reason, const char *fmt, ...)
{
  va_list ap;
  r->ready = CARP_COND_FALSE;
  r->reason = reason;
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof(r->message), fmt, ap);
  va_end(ap);
  set_pods(bc, key, NULL, 0);
}

/* ---- status ---- */

/* Sets Provisioning; returns 1 when it changed. */
static int provisioning(struct carp_controller *c, const char *key,
                        const struct resolved *r,
                        struct carp_capacitybuffer_status *st, int64_t gen,
                        int64_t now)
{
  struct carp_virtual_placement pl;
  char msg[512];
  const char *type = CARP_COND_BUFFER_PROVISIONING;
  if (r->ready != CARP_COND_TRUE)
    return carp_conditions_set(&st->conditions, NULL, type, CARP_COND_FALSE,
                               "NotReadyForProvisioning",
                               "Buffer is not ReadyForProvisioning", gen, now);
  if (r->replicas <= 0)
    return carp_conditions_set(&st->conditions, NULL, type, CARP_COND_FALSE,
                               "BufferEmpty",
                               "Buffer has zero desired replicas", gen, now);
  if (carp_cluster_virtual_placement(c->env.cluster, key, &pl)) {
    if (pl.existing == pl.total) {
      snprintf(msg, sizeof(msg), "All %u virtual pods fit on existing capacity",
               pl.total);
      return carp_conditions_set(&st->conditions, NULL, type, CARP_COND_TRUE,
                                 "FitsExistingCapacity", msg, gen, now);
    } else {
      snprintf(msg, sizeof(msg),
               "%u/%u virtual pods require new capacity: %u on nodes being "
               "launched, %u on new NodeClaims, %u fit nowhere%s%s",
               pl.total - pl.existing, pl.total, pl.launching, pl.new_capacity,
               pl.unschedulable, pl.why[0] ? ": " : "", pl.why);
      return carp_conditions_set(&st->conditions, NULL, type, CARP_COND_FALSE,
                                 "RequiresNewCapacity", msg, gen, now);
    }
  }
  if (carp_conditions_get(&st->conditions, type))
    return 0; /* placed before: the next placement says more */
  return carp_conditions_set(&st->conditions, NULL, type, CARP_COND_UNKNOWN,
                             "AwaitingProvisioning",
                             "The provisioner has not placed the buffer's "
                             "virtual pods yet",
                             gen, now);
}

static int same_str(const char *a, const char *b)
{
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Writes the status b should have, or ends the reconcile with the key
 * waiting for the next resolution. */
static void finish(struct carp_controller *c, const char *key,
                   const struct carp_capacitybuffer *b,
                   const struct resolved *r)
{
  struct bufctl *bc = BC(c);
  struct carp_capacitybuffer_status st;
  struct carp_kube_ref ref = {.group = CARP_BUFFER_GROUP,
                              .version = CARP_BUFFER_VERSION,
                              .resource = "capacitybuffers",
                              .namespace = b->meta.namespace,
                              .name = b->meta.name,
                              .subresource = "status"};
  struct carp_buf body;
  int64_t now = carp_controller_now(c), gen = b->meta.generation, left;
  int changed;

  carp_capacitybuffer_status_copy(&st, &b->status);
  changed = carp_conditions_set(&st.conditions, NULL, CARP_COND_BUFFER_READY,
                                r->ready, r->reason, r->message, gen, now);
  changed |= provisioning(c, key, r, &st, gen, now);
  carp_intern_release(st.strategy);
  st.strategy = carp_interns(b->strategy);
  carp_intern_release(st.pod_template);
  st.pod_template = carp_interns(r->pod_template);
  st.has_generation = r->has_generation;
  st.pod_template_generation = r->template_generation;
  st.has_replicas = r->replicas >= 0;
  st.replicas = r->replicas >= 0 ? (int32_t)r->replicas : 0;
  changed |= !same_str(st.strategy, b->status.strategy) ||
             !same_str(st.pod_template, b->status.pod_template) ||
             st.has_generation != b->status.has_generation ||
             (st.has_generation && st.pod_template_generation !=
                                       b->status.pod_template_generation) ||
             st.has_replicas != b->status.has_replicas ||
             (st.has_replicas && st.replicas != b->status.replicas);
  if (changed) {
    carp_buf_init(&body, CARP_BUF_UNLIMITED);
    carp_capacitybuffer_status_patch(&st, b->meta.resource_version, &body);
    carp_capacitybuffer_status_cleanup(&st);
    /* Written: its watch event brings the next look, which queues the
     * resync. */
    if (!carp_write_patch(c, key, &ref, body.ptr, body.len,
                          carp_write_done_until_event, NULL)) {
      carp_buf_free(&body);
      return;
    }
    carp_buf_free(&body);
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  carp_capacitybuffer_status_cleanup(&st);
  left = r->at_ms + (int64_t)bc->o.resync_ms - now;
  carp_controller_done(c, key, CARP_RECONCILE_REQUEUE_AFTER,
                       left > 0 ? (uint64_t)left : 1);
}

/* ---- resolving ---- */

static const char *plural(const char *kind)
{
  if (!strcmp(kind, "Deployment"))
    return "deployments";
  if (!strcmp(kind, "StatefulSet"))
    return "statefulsets";
  return "replicasets";
}

/* Builds the buffer's virtual pods from the object read. */
static void resolve_from(struct bufctl *bc, const char *key,
                         const struct carp_capacitybuffer *b,
                         struct resolved *r, yajl_val obj)
{
  yajl_val tmpl = b->pod_template
                      ? carp_json_obj(obj, "template", NULL)
                      : carp_json_obj(obj, "spec", "template", NULL);
  struct carp_pod *one = NULL, **pods;
  int64_t scalable = -1, gen, n;
  char *err = NULL;
  if (carp_capacitybuffer_virtual_pods(b, tmpl, 1, &one, &err)) {
    not_ready(bc, key, r, "ResolutionFailed",
              "the pod template cannot be used: %s", err);
    carp_free(err);
    return;
  }
  if (!b->pod_template &&
      carp_json_int(obj, &scalable, "spec", "replicas", NULL))
    scalable = 1; /* the workloads' default */
  n = carp_capacitybuffer_replicas(b, &one->spec->requests, scalable);
  carp_obj_unref(&one->meta);
  if (b->pod_template) {
    r->pod_template = carp_strdup(b->pod_template);
    r->has_generation =
        !carp_json_int(obj, &gen, "metadata", "generation", NULL) && gen > 0;
    r->template_generation = r->has_generation ? gen : 0;
  }
  r->replicas = n;
  if (n > CARP_BUFFER_MAX_REPLICAS) {
    char detail[64];
    snprintf(detail, sizeof(detail), "%lld", (long long)n);
    not_ready(bc, key, r, "TooManyReplicas",
              "%s chunks asked for; Carpenter keeps room for at most %d per "
              "CapacityBuffer",
              detail, CARP_BUFFER_MAX_REPLICAS);
    return;
  }
  pods = carp_calloc((size_t)n + 1, sizeof(*pods));
  if (n && carp_capacitybuffer_virtual_pods(b, tmpl, (size_t)n, pods, &err)) {
    not_ready(bc, key, r, "ResolutionFailed",
              "the pod template cannot be used: %s", err);
    carp_free(err);
    carp_free(pods);
    return;
  }
  r->ready = CARP_COND_TRUE;
  r->reason = "Resolved";
  snprintf(r->message, sizeof(r->message), "%s",
           "Pod template resolved successfully");
  set_pods(bc, key, pods, (size_t)n);
  while (n > 0)
    carp_obj_unref(&pods[--n]->meta);
  carp_free(pods);
}

static void get_unlink(struct get *g)
{
  if (g->prev)
    g->prev->next = g->next;
  else
    g->bc->gets = g->next;
  if (g->next)
    g->next->prev = g->prev;
}

static void on_read(struct carp_controller *c, const char *key,
                    const struct carp_kube_result *res, void *arg)
{
  struct get *g = arg;
  struct bufctl *bc = BC(c);
  const struct carp_capacitybuffer *b = buffer_of(c, key);
  struct resolved *r;
  get_unlink(g);
  carp_free(g->key);
  carp_free(g);
  if (res->err == CARP_ECANCELED || !b) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (res->err && res->err != CARP_ENOTFOUND) {
    /* Keep what it had; the backoff tries again. */
    CARP_LOG_WARN(LOGGER, "cannot read what the buffer names",
                  CARP_F_STR("capacitybuffer", key), CARP_F_ERR(res->err),
                  CARP_F_STR("message", res->message));
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  r = record(bc, key, b);
  if (res->err == CARP_ENOTFOUND) {
    char what[512];
    if (b->pod_template)
      snprintf(what, sizeof(what), "PodTemplate %s/%s", b->meta.namespace,
               b->pod_template);
    else
      snprintf(what, sizeof(what), "%s %s/%s", b->scalable_kind,
               b->meta.namespace, b->scalable_name);
    not_ready(bc, key, r,
              b->pod_template ? "PodTemplateNotFound" : "ScalableRefNotFound",
              "%s not found", what);
  } else {
    resolve_from(bc, key, b, r, res->body);
  }
  if (r->ready != CARP_COND_TRUE)
    CARP_LOG_INFO(
        LOGGER, "buffer keeps no room", CARP_F_STR("capacitybuffer", key),
        CARP_F_STR("reason", r->reason), CARP_F_STR("message", r->message));
  finish(c, key, b, r);
}

static void start_read(struct carp_controller *c, const char *key,
                       const struct carp_capacitybuffer *b)
{
  struct bufctl *bc = BC(c);
  struct carp_kube_ref ref;
  struct carp_kube_request req;
  struct carp_buf path;
  struct get *g;
  memset(&ref, 0, sizeof(ref));
  ref.namespace = b->meta.namespace;
  if (b->pod_template) {
    ref.version = "v1";
    ref.resource = "podtemplates";
    ref.name = b->pod_template;
  } else {
    ref.group = "apps";
    ref.version = "v1";
    ref.resource = plural(b->scalable_kind);
    ref.name = b->scalable_name;
  }
  carp_buf_init(&path, 4096);
  carp_kube_path(&path, &ref);
  memset(&req, 0, sizeof(req));
  req.method = "GET";
  req.path = carp_buf_cstr(&path);
  req.idempotent = 1;
  g = CARP_NEW(struct get);
  g->bc = bc;
  g->key = carp_strdup(key);
  g->next = bc->gets;
  if (bc->gets)
    bc->gets->prev = g;
  bc->gets = g;
  if (carp_write_call(c, key, &req, on_read, g, &g->op)) {
    get_unlink(g);
    carp_free(g->key);
    carp_free(g);
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
  }
  carp_buf_free(&path);
}

static void reconcile(struct carp_controller *c, const char *key)
{
  struct bufctl *bc = BC(c);
  const struct carp_capacitybuffer *b = buffer_of(c, key);
  struct resolved *r;
  if (!b || b->meta.deletion_ms) {
    forget(bc, key);
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  r = carp_map_gets(&bc->resolved, key);
  if (r && !strcmp(r->uid, b->meta.uid) &&
      r->generation == b->meta.generation &&
      carp_controller_now(c) - r->at_ms < (int64_t)bc->o.resync_ms) {
    finish(c, key, b, r);
    return;
  }
  if (!b->valid || (!b->pod_template && !b->scalable_name)) {
    r = record(bc, key, b);
    if (!b->valid)
      not_ready(bc, key, r, "ValidationFailed", "%s", b->invalid_reason);
    else
      not_ready(bc, key, r, "ResolutionFailed",
                "Neither podTemplateRef nor scalableRef is set");
    finish(c, key, b, r);
    return;
  }
  start_read(c, key, b);
}

/* ---- events and lifecycle ---- */

static void buffer_event(struct carp_controller *c,
                         const struct carp_objmeta *old,
                         const struct carp_objmeta *obj, int deleted)
{
  (void)old;
  (void)deleted;
  carp_controller_enqueue(c, obj->key);
}

static void enqueue_every(struct carp_controller *c)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(
              carp_informer_store(c->env.cluster->capacitybuffers), &it)))
    carp_controller_enqueue(c, m->key);
}

void carp_capacitybuffer_controller_placed(struct carp_controller *c)
{
  enqueue_every(c);
}

static void deactivated(struct carp_controller *c)
{
  struct bufctl *bc = BC(c);
  struct carp_map_iter it;
  const char *k;
  void *v;
  /* A follower keeps no room: the next leader resolves again. */
  carp_map_iter_init(&it);
  while (carp_map_next(&bc->resolved, &it, &k, NULL, &v)) {
    set_pods(bc, k, NULL, 0);
    resolved_free(v);
  }
  carp_map_free(&bc->resolved);
  carp_map_init(&bc->resolved);
}

static void cancel(struct carp_controller *c)
{
  struct get *g;
  for (g = BC(c)->gets; g; g = g->next)
    if (g->op)
      carp_kube_cancel(g->op);
}

static void stream_pods(struct carp_metric_writer *w, void *arg)
{
  struct bufctl *bc = arg;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  if (!bc->base.env.cluster->capacitybuffers)
    return;
  carp_store_iter_init(&it);
  while (
      (m = carp_store_next(
           carp_informer_store(bc->base.env.cluster->capacitybuffers), &it))) {
    struct carp_virtual_placement pl;
    if (!carp_cluster_virtual_placement(bc->base.env.cluster, m->key, &pl))
      continue;
    carp_metric_writer_sample(w, CARP_VALUES(m->namespace, m->name, "existing"),
                              pl.existing);
    carp_metric_writer_sample(
        w, CARP_VALUES(m->namespace, m->name, "launching"), pl.launching);
    carp_metric_writer_sample(w, CARP_VALUES(m->namespace, m->name, "new"),
                              pl.new_capacity);
    carp_metric_writer_sample(
        w, CARP_VALUES(m->namespace, m->name, "unschedulable"),
        pl.unschedulable);
  }
}

static void bc_free(struct carp_controller *c)
{
  struct bufctl *bc = BC(c);
  struct carp_map_iter it;
  void *v;
  if (bc->m_pods)
    carp_metric_stream_detach(bc->m_pods);
  carp_map_iter_init(&it);
  while (carp_map_next(&bc->resolved, &it, NULL, NULL, &v))
    resolved_free(v);
  carp_map_free(&bc->resolved);
  carp_free(bc);
}

static const struct carp_controller_def def = {
    .name = "capacitybuffer",
    .log_module = LOGGER,
    .concurrency = 4,
    .reconcile = reconcile,
    .activated = enqueue_every,
    .deactivated = deactivated,
    .cancel = cancel,
    .free = bc_free,
};

int carp_capacitybuffer_controller_new(
    const struct carp_controller_env *env,
    const struct carp_capacitybuffer_controller_options *o,
    struct carp_controller **out)
{
  struct bufctl *bc;
  int rc;
  if (!env || !out)
    return CARP_EINVAL;
  bc = CARP_NEW(struct bufctl);
  if (o)
    bc->o = *o;
  if (!bc->o.resync_ms)
    bc->o.resync_ms = DEFAULT_RESYNC_MS;
  carp_map_init(&bc->resolved);
  rc = carp_controller_init(&bc->base, env, &def);
  if (rc) {
    carp_map_free(&bc->resolved);
    carp_free(bc);
    return rc;
  }
  carp_controller_watch(&bc->base, env->cluster->capacitybuffers, buffer_event);
  if (env->metrics)
    bc->m_pods = carp_metrics_stream(
        env->metrics, "carpenter_capacitybuffer_virtual_pods",
        "Virtual pods of a CapacityBuffer by where the provisioner last "
        "placed them: existing (nodes that are up), launching (NodeClaims "
        "not registered yet), new (NodeClaims being created for them), "
        "unschedulable.",
        CARP_METRIC_GAUGE,
        CARP_LABELS("namespace", "capacitybuffer", "placement"), stream_pods,
        bc);
  *out = &bc->base;
  return 0;
}
