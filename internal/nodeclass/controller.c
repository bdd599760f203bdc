/* controller.c: the ProxmoxNodeClass status controller's queue, handlers
 * and reconcile (see include/carpenter/nodeclass_controller.h). A
 * reconcile reads the user-data Secret when the class bootstraps from
 * one, gathers what the provider knows (region states, the hosts its
 * instance types are offered on, templates when reported), computes the
 * status (status.c) and writes it when it differs, with the cached
 * resourceVersion as precondition. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/base64.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/nodeclass_controller.h"
#include "carpenter/timeutil.h"
#include "carpenter/workqueue.h"

#define LOGGER             "nodeclass"
#define MAX_USERDATA_BYTES (1024 * 1024)
#define AWAIT_REFRESH_MS   1000
/* A region failing with a transient error (network, 5xx, timeouts) for
 * less than this leaves a Ready class as it is: one failed refresh must
 * not stop provisioning. Unauthorized and unconfigured regions count at
 * once. */
#define REGION_GRACE_MS (60 * 1000)

struct carp_nodeclass_controller {
  uv_loop_t *loop;
  struct carp_cluster *cluster;
  struct carp_kube *kube;
  struct carp_provider *provider;
  struct carp_nodeclass_controller_options o;
  char **regions; /* configured, owned */
  size_t nregions;
  struct carp_map failing; /* region -> first transient failure (ms) */
  struct carp_workqueue *queue;
  uv_timer_t resync;
  int active;
  int closing;
  int timer_open;
  int pending; /* reads and writes in flight */
  int closed;  /* close finished: only the handlers' flag checks remain */
  void (*close_cb)(void *arg);
  void *close_arg;
};

struct call_ctx {
  struct carp_nodeclass_controller *c;
  char *key;
};

static void free_failing(struct carp_nodeclass_controller *c)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&c->failing, &it, NULL, NULL, &v))
    carp_free(v);
  carp_map_free(&c->failing);
}

struct failure {
  uint64_t since_ms;
  char name[];
};

/* Whether region r's transient failure is still within the grace period
 * (and remembers when it started); clears the record on success. */
static int in_grace(struct carp_nodeclass_controller *c,
                    const struct carp_nodeclass_region_fact *r, uint64_t now)
{
  struct failure *f = carp_map_gets(&c->failing, r->name);
  if (!r->status || r->status == CARP_EAGAIN ||
      !carp_provider_error_transient(r->status)) {
    if (f && !r->status) {
      carp_map_dels(&c->failing, r->name);
      carp_free(f);
    }
    return 0;
  }
  if (!f) {
    size_t n = strlen(r->name);
    f = carp_malloc(sizeof(*f) + n + 1);
    memcpy(f->name, r->name, n + 1);
    f->since_ms = now;
    carp_map_puts(&c->failing, f->name, f);
  }
  return now - f->since_ms < REGION_GRACE_MS;
}

/* Ends a close once nothing is in flight (the struct itself is freed by
 * carp_nodeclass_controller_free). */
static void maybe_free(struct carp_nodeclass_controller *c)
{
  if (!c->closing || c->closed || c->queue || c->pending || c->timer_open)
    return;
  c->closed = 1;
  if (c->close_cb)
    c->close_cb(c->close_arg);
}

void carp_nodeclass_controller_free(struct carp_nodeclass_controller *c)
{
  size_t i;
  if (!c)
    return;
  for (i = 0; i < c->nregions; i++)
    carp_free(c->regions[i]);
  carp_free(c->regions);
  free_failing(c);
  carp_free(c);
}

static void done(struct carp_nodeclass_controller *c, const char *key,
                 enum carp_reconcile_result r, uint64_t after_ms)
{
  carp_workqueue_done(c->queue, key, r, after_ms);
}

static struct call_ctx *ctx_new(struct carp_nodeclass_controller *c,
                                const char *key)
{
  struct call_ctx *x = CARP_NEW(struct call_ctx);
  x->c = c;
  x->key = carp_strdup(key);
  c->pending++;
  return x;
}

/* Frees the context; the controller may be freed with it when closing. */
static void ctx_end(struct call_ctx *x)
{
  struct carp_nodeclass_controller *c = x->c;
  carp_free(x->key);
  carp_free(x);
  c->pending--;
  maybe_free(c);
}

/* ---- the write ---- */

static void on_written(const struct carp_kube_result *res, void *arg)
{
  struct call_ctx *x = arg;
  struct carp_nodeclass_controller *c = x->c;
  if (!res->err || res->err == CARP_ENOTFOUND) {
    done(c, x->key, CARP_RECONCILE_DONE, 0); /* the watch event follows */
  } else if (res->err == CARP_ECONFLICT) {
    /* The cache was behind: the next look re-reads it, backing off. */
    done(c, x->key, CARP_RECONCILE_ERROR, 0);
  } else {
    if (res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED)
      CARP_LOG_WARN(LOGGER, "status write failed",
                    CARP_F_STR("nodeclass", x->key), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    done(c, x->key, CARP_RECONCILE_ERROR, 0);
  }
  ctx_end(x);
}

static void write_status(struct carp_nodeclass_controller *c,
                         const struct carp_nodeclass *cls,
                         const struct carp_nodeclass_status *st,
                         const char *key)
{
  struct carp_kube_ref ref = {.group = CARP_NODECLASS_GROUP,
                              .version = CARP_NODECLASS_VERSION,
                              .resource = "proxmoxnodeclasses",
                              .name = cls->meta.name,
                              .subresource = "status"};
  const struct carp_condition *ready =
      carp_conditions_get(&st->conditions, CARP_COND_READY);
  struct carp_buf body;
  struct call_ctx *x;
  int rc;
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_nodeclass_status_patch(st, cls->meta.resource_version, &body);
  if (rc) {
    carp_buf_free(&body);
    done(c, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  CARP_LOG_DEBUG(LOGGER, "writing status", CARP_F_STR("nodeclass", key),
                 CARP_F_STR("ready", ready
                                         ? carp_cond_status_name(ready->status)
                                         : "Unknown"),
                 CARP_F_STR("reason", ready ? ready->reason : ""));
  x = ctx_new(c, key);
  rc = carp_kube_patch(c->kube, &ref, CARP_PATCH_MERGE, body.ptr, body.len, 1,
                       on_written, x);
  carp_buf_free(&body);
  if (rc) {
    done(c, key, CARP_RECONCILE_ERROR, 0);
    ctx_end(x);
  }
}

/* ---- evaluation ---- */

static void add_zone(struct carp_nodeclass_zone_fact **v, size_t *n,
                     size_t *cap, const char *region, const char *zone)
{
  size_t i;
  for (i = 0; i < *n; i++)
    if (!strcmp((*v)[i].region, region) && !strcmp((*v)[i].zone, zone))
      return;
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 8;
    *v = carp_reallocarray(*v, *cap, sizeof(**v));
  }
  (*v)[*n].region = region;
  (*v)[(*n)++].zone = zone;
}

static void evaluate(struct carp_nodeclass_controller *c, const char *key,
                     int secret_status, const char *secret_message,
                     const char *userdata, size_t userdata_len)
{
  const struct carp_nodeclass *cls = carp_cluster_nodeclass(c->cluster, key);
  struct carp_nodeclass_region_fact *rf;
  struct carp_nodeclass_zone_fact *zones = NULL;
  struct carp_nodeclass_template *tmpls = NULL;
  struct carp_provider_instance_types types;
  struct carp_nodeclass_facts f;
  struct carp_nodeclass_status st;
  const char *const *names;
  size_t n, i, j, nzones = 0, capzones = 0, ntmpls = 0;
  const struct carp_condition *ready;
  int changed;

  if (!cls) {
    done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  memset(&f, 0, sizeof(f));
  memset(&types, 0, sizeof(types));
  if (cls->spec.regions.n) {
    names = cls->spec.regions.v;
    n = cls->spec.regions.n;
  } else {
    names = (const char *const *)c->regions;
    n = c->nregions;
  }
  rf = carp_calloc(n + 1, sizeof(*rf));
  for (i = 0; i < n; i++) {
    rf[i].name = names[i];
    rf[i].message = "";
    rf[i].status =
        c->o.region_status
            ? c->o.region_status(c->provider, names[i], &rf[i].message)
            : CARP_EAGAIN;
  }
  /* A Ready class rides out a short transient region failure. */
  {
    int grace = 0;
    uint64_t now = carp_time_mono_ms();
    for (i = 0; i < n; i++)
      grace |= in_grace(c, &rf[i], now);
    if (grace &&
        carp_conditions_is_true(&cls->status.conditions, CARP_COND_READY)) {
      CARP_LOG_DEBUG(LOGGER, "region failing, within the grace period",
                     CARP_F_STR("nodeclass", key));
      done(c, key, CARP_RECONCILE_REQUEUE_AFTER, c->o.retry_ms);
      carp_free(rf);
      return;
    }
  }
  f.regions = rf;
  f.nregions = n;
  f.configured = (const char *const *)c->regions;
  f.nconfigured = c->nregions;
  /* Usable hosts: where the provider offers the class's instance types
   * (online, allowed, template present). */
  if (!carp_provider_instance_types(c->provider, "nodeclass", cls, &types)) {
    for (i = 0; i < types.n; i++)
      for (j = 0; j < types.v[i].nofferings; j++)
        add_zone(&zones, &nzones, &capzones, types.v[i].offerings[j].region,
                 types.v[i].offerings[j].zone);
  }
  f.zones = zones;
  f.nzones = nzones;
  if (c->o.templates && !c->o.templates(c->provider, cls, &tmpls, &ntmpls)) {
    f.templates = tmpls;
    f.ntemplates = ntmpls;
    f.templates_known = 1;
  }
  f.secret_status = secret_status;
  f.secret_message = secret_message;
  f.userdata = userdata;
  f.userdata_len = userdata_len;

  carp_nodeclass_status_copy(&st, &cls->status);
  changed = carp_nodeclass_status_compute(cls, &f, carp_time_wall_ms(), &st);
  ready = carp_conditions_get(&st.conditions, CARP_COND_READY);
  if (changed) {
    write_status(c, cls, &st, key);
  } else if (!ready || ready->status != CARP_COND_TRUE) {
    uint64_t after = c->o.retry_ms;
    for (i = 0; i < n; i++)
      if (rf[i].status == CARP_EAGAIN)
        after = AWAIT_REFRESH_MS;
    done(c, key, CARP_RECONCILE_REQUEUE_AFTER, after);
  } else {
    done(c, key, CARP_RECONCILE_DONE, 0);
  }
  carp_nodeclass_status_cleanup(&st);
  for (i = 0; i < ntmpls; i++) {
    carp_intern_release(tmpls[i].region);
    carp_intern_release(tmpls[i].zone);
    carp_intern_release(tmpls[i].name);
    carp_intern_release(tmpls[i].node);
    carp_intern_release(tmpls[i].storage);
  }
  carp_free(tmpls);
  carp_free(zones);
  carp_provider_instance_types_free(&types);
  carp_free(rf);
}

/* ---- the user-data Secret ---- */

static void on_secret(const struct carp_kube_result *res, void *arg)
{
  struct call_ctx *x = arg;
  struct carp_nodeclass_controller *c = x->c;
  const struct carp_nodeclass *cls;
  struct carp_buf data;
  const char *b64 = NULL, *key;
  int ok = 0;
  if (c->closing || !c->active) {
    done(c, x->key, CARP_RECONCILE_DONE, 0);
    ctx_end(x);
    return;
  }
  cls = carp_cluster_nodeclass(c->cluster, x->key);
  carp_buf_init(&data, MAX_USERDATA_BYTES);
  if (cls && !res->err) {
    key = cls->spec.userdata_secret_key ? cls->spec.userdata_secret_key
                                        : "user-data";
    b64 = carp_json_str(res->body, "data", key, NULL);
    ok = b64 && !carp_base64_decode(&data, b64, strlen(b64));
  }
  evaluate(c, x->key, res->err, res->message, ok ? carp_buf_cstr(&data) : NULL,
           ok ? data.len : 0);
  carp_buf_free(&data);
  ctx_end(x);
}

static void reconcile(struct carp_workqueue *q, const char *key, void *arg)
{
  struct carp_nodeclass_controller *c = arg;
  const struct carp_nodeclass *cls;
  struct call_ctx *x;
  int rc;
  (void)q;
  if (!c->active || c->closing) {
    done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  cls = carp_cluster_nodeclass(c->cluster, key);
  if (!cls) {
    done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (cls->spec.bootstrap_mode != CARP_BOOTSTRAP_USERDATA ||
      !cls->spec.userdata_secret_name) {
    evaluate(c, key,
             cls->spec.bootstrap_mode == CARP_BOOTSTRAP_USERDATA
                 ? CARP_ENOTFOUND
                 : 0,
             "", NULL, 0);
    return;
  }
  {
    struct carp_kube_ref ref = {.version = "v1",
                                .resource = "secrets",
                                .namespace =
                                    cls->spec.userdata_secret_namespace
                                        ? cls->spec.userdata_secret_namespace
                                        : "default",
                                .name = cls->spec.userdata_secret_name};
    x = ctx_new(c, key);
    rc = carp_kube_get(c->kube, &ref, on_secret, x);
  }
  if (rc) {
    evaluate(c, key, rc, carp_strerror(rc), NULL, 0);
    ctx_end(x);
  }
}

/* ---- handlers, timers, lifetime ---- */

static void class_event(struct carp_objmeta *obj, void *arg)
{
  struct carp_nodeclass_controller *c = arg;
  if (c->active && !c->closing)
    carp_workqueue_add(c->queue, obj->name);
}

static void class_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                          void *arg)
{
  class_event(obj, arg);
}

static void queue_all(struct carp_nodeclass_controller *c)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while (
      (m = carp_store_next(carp_informer_store(c->cluster->nodeclasses), &it)))
    carp_workqueue_add(c->queue, m->name);
}

static void on_resync(uv_timer_t *t)
{
  struct carp_nodeclass_controller *c = t->data;
  if (c->active && !c->closing)
    queue_all(c);
}

void carp_nodeclass_controller_set_active(struct carp_nodeclass_controller *c,
                                          int active)
{
  c->active = active;
  if (active && !c->closing)
    queue_all(c);
}

int carp_nodeclass_controller_new(
    uv_loop_t *loop, struct carp_cluster *cluster, struct carp_kube *kube,
    struct carp_provider *provider,
    const struct carp_nodeclass_controller_options *o,
    struct carp_nodeclass_controller **out)
{
  struct carp_nodeclass_controller *c;
  struct carp_workqueue_options qo;
  struct carp_informer_handlers h = {.on_add = class_event,
                                     .on_update = class_updated};
  size_t i;
  int rc;
  if (!loop || !cluster || !kube || !provider || !out)
    return CARP_EINVAL;
  c = CARP_NEW(struct carp_nodeclass_controller);
  c->loop = loop;
  c->cluster = cluster;
  c->kube = kube;
  c->provider = provider;
  if (o)
    c->o = *o;
  if (!c->o.resync_ms)
    c->o.resync_ms = 60 * 1000;
  if (!c->o.retry_ms)
    c->o.retry_ms = 10 * 1000;
  c->regions = carp_calloc(c->o.nregions + 1, sizeof(char *));
  for (i = 0; i < c->o.nregions; i++)
    if (c->o.regions[i])
      c->regions[c->nregions++] = carp_strdup(c->o.regions[i]);
  c->o.regions = NULL;
  carp_map_init(&c->failing);
  memset(&qo, 0, sizeof(qo));
  qo.name = "nodeclass.status";
  qo.concurrency = 4;
  qo.max_delay_ms = 60 * 1000;
  qo.metrics = c->o.metrics;
  qo.reconcile = reconcile;
  qo.arg = c;
  rc = carp_workqueue_new(loop, &qo, &c->queue);
  if (rc) {
    for (i = 0; i < c->nregions; i++)
      carp_free(c->regions[i]);
    carp_free(c->regions);
    free_failing(c);
    carp_free(c);
    return rc;
  }
  h.arg = c;
  rc = carp_informer_add_handlers(cluster->nodeclasses, &h);
  if (rc) {
    /* A wiring error (too many handlers): c stays allocated. */
    CARP_LOG_ERROR(LOGGER, "cannot add informer handlers", CARP_F_ERR(rc));
    return rc;
  }
  uv_timer_init(loop, &c->resync);
  c->resync.data = c;
  c->timer_open = 1;
  uv_timer_start(&c->resync, on_resync, c->o.resync_ms, c->o.resync_ms);
  uv_unref((uv_handle_t *)&c->resync);
  *out = c;
  return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
  struct carp_nodeclass_controller *c = h->data;
  c->timer_open = 0;
  maybe_free(c);
}

static void on_queue_closed(void *arg)
{
  struct carp_nodeclass_controller *c = arg;
  c->queue = NULL;
  maybe_free(c);
}

void carp_nodeclass_controller_close(struct carp_nodeclass_controller *c,
                                     void (*cb)(void *arg), void *arg)
{
  if (!c || c->closing)
    return;
  c->closing = 1;
  c->close_cb = cb;
  c->close_arg = arg;
  uv_close((uv_handle_t *)&c->resync, on_timer_closed);
  carp_workqueue_close(c->queue, on_queue_closed, c);
}
