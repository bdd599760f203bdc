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
#include "carpenter/controller.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/nodeclass_controller.h"

#define LOGGER             "nodeclass"
#define MAX_USERDATA_BYTES (1024 * 1024)
#define AWAIT_REFRESH_MS   1000
/* A region failing with a transient error (network, 5xx, timeouts) for
 * less than this leaves a Ready class as it is: one failed refresh must
 * not stop provisioning. Unauthorized and unconfigured regions count at
 * once. */
#define REGION_GRACE_MS (60 * 1000)

struct nodeclass_ctl {
  struct carp_controller base;
  struct carp_nodeclass_controller_options o;
  char **regions; /* configured, owned */
  size_t nregions;
  struct carp_map failing; /* region -> first transient failure (ms) */
};

#define NCC(c) carp_container_of(c, struct nodeclass_ctl, base)

static void free_failing(struct nodeclass_ctl *c)
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
static int in_grace(struct nodeclass_ctl *c,
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

/* ---- the write ---- */

static void write_status(struct carp_controller *c,
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
  int rc;
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_nodeclass_status_patch(st, cls->meta.resource_version, &body);
  if (!rc) {
    CARP_LOG_DEBUG(
        LOGGER, "writing status", CARP_F_STR("nodeclass", key),
        CARP_F_STR("ready",
                   ready ? carp_cond_status_name(ready->status) : "Unknown"),
        CARP_F_STR("reason", ready ? ready->reason : ""));
    rc = carp_write_patch(c, key, &ref, body.ptr, body.len,
                          carp_write_done_until_event, NULL);
  }
  carp_buf_free(&body);
  if (rc)
    carp_controller_done(c, key, CARP_RECONCILE_ERROR, 0);
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

static void evaluate(struct carp_controller *base, const char *key,
                     int secret_status, const char *secret_message,
                     const char *userdata, size_t userdata_len)
{
  struct nodeclass_ctl *c = NCC(base);
  struct carp_provider *provider = base->env.provider;
  const struct carp_nodeclass *cls =
      carp_cluster_nodeclass(base->env.cluster, key);
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
    carp_controller_done(base, key, CARP_RECONCILE_DONE, 0);
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
    rf[i].status = c->o.region_status
                       ? c->o.region_status(provider, names[i], &rf[i].message)
                       : CARP_EAGAIN;
  }
  /* A Ready class rides out a short transient region failure. */
  {
    int grace = 0;
    uint64_t now = carp_controller_mono(base);
    for (i = 0; i < n; i++)
      grace |= in_grace(c, &rf[i], now);
    if (grace &&
        carp_conditions_is_true(&cls->status.conditions, CARP_COND_READY)) {
      CARP_LOG_DEBUG(LOGGER, "region failing, within the grace period",
                     CARP_F_STR("nodeclass", key));
      carp_controller_done(base, key, CARP_RECONCILE_REQUEUE_AFTER,
                           c->o.retry_ms);
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
  if (!carp_provider_instance_types(provider, "nodeclass", cls, &types)) {
    for (i = 0; i < types.n; i++)
      for (j = 0; j < types.v[i].nofferings; j++)
        add_zone(&zones, &nzones, &capzones, types.v[i].offerings[j].region,
                 types.v[i].offerings[j].zone);
  }
  f.zones = zones;
  f.nzones = nzones;
  if (c->o.templates && !c->o.templates(provider, cls, &tmpls, &ntmpls)) {
    f.templates = tmpls;
    f.ntemplates = ntmpls;
    f.templates_known = 1;
  }
  f.secret_status = secret_status;
  f.secret_message = secret_message;
  f.userdata = userdata;
  f.userdata_len = userdata_len;

  carp_nodeclass_status_copy(&st, &cls->status);
  changed =
      carp_nodeclass_status_compute(cls, &f, carp_controller_now(base), &st);
  ready = carp_conditions_get(&st.conditions, CARP_COND_READY);
  if (changed) {
    write_status(base, cls, &st, key);
  } else if (!ready || ready->status != CARP_COND_TRUE) {
    uint64_t after = c->o.retry_ms;
    for (i = 0; i < n; i++)
      if (rf[i].status == CARP_EAGAIN)
        after = AWAIT_REFRESH_MS;
    carp_controller_done(base, key, CARP_RECONCILE_REQUEUE_AFTER, after);
  } else {
    carp_controller_done(base, key, CARP_RECONCILE_DONE, 0);
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

static void on_secret(struct carp_controller *c, const char *key,
                      const struct carp_kube_result *res, void *arg)
{
  const struct carp_nodeclass *cls;
  struct carp_buf data;
  const char *b64 = NULL, *dkey;
  int ok = 0;
  (void)arg;
  if (!carp_controller_acting(c)) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  cls = carp_cluster_nodeclass(c->env.cluster, key);
  carp_buf_init(&data, MAX_USERDATA_BYTES);
  if (cls && !res->err) {
    dkey = cls->spec.userdata_secret_key ? cls->spec.userdata_secret_key
                                         : "user-data";
    b64 = carp_json_str(res->body, "data", dkey, NULL);
    ok = b64 && !carp_base64_decode(&data, b64, strlen(b64));
  }
  evaluate(c, key, res->err, res->message, ok ? carp_buf_cstr(&data) : NULL,
           ok ? data.len : 0);
  carp_buf_free(&data);
}

/* A read through the write helper: it holds the controller the same way. */
static int read_secret(struct carp_controller *c, const char *key,
                       const struct carp_kube_ref *ref)
{
  struct carp_buf path;
  struct carp_kube_request r;
  int rc;
  carp_buf_init(&path, 8192);
  rc = carp_kube_path(&path, ref);
  if (!rc) {
    memset(&r, 0, sizeof(r));
    r.method = "GET";
    r.path = carp_buf_cstr(&path);
    rc = carp_write_call(c, key, &r, on_secret, NULL, NULL);
  }
  carp_buf_free(&path);
  return rc;
}

static void reconcile(struct carp_controller *c, const char *key)
{
  const struct carp_nodeclass *cls =
      carp_cluster_nodeclass(c->env.cluster, key);
  int rc;
  if (!cls) {
    carp_controller_done(c, key, CARP_RECONCILE_DONE, 0);
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
    rc = read_secret(c, key, &ref);
  }
  if (rc)
    evaluate(c, key, rc, carp_strerror(rc), NULL, 0);
}

/* ---- wiring ---- */

static void activated(struct carp_controller *c)
{
  carp_controller_enqueue_all(c, c->env.cluster->nodeclasses);
}

static void ncc_free(struct carp_controller *base)
{
  struct nodeclass_ctl *c = NCC(base);
  size_t i;
  for (i = 0; i < c->nregions; i++)
    carp_free(c->regions[i]);
  carp_free(c->regions);
  free_failing(c);
  carp_free(c);
}

static const struct carp_controller_def nodeclass_def = {
    .name = "nodeclass.status",
    .log_module = LOGGER,
    .concurrency = 4,
    .max_backoff_ms = 60 * 1000,
    .reconcile = reconcile,
    .activated = activated,
    .free = ncc_free,
};

int carp_nodeclass_controller_new(
    const struct carp_controller_env *env,
    const struct carp_nodeclass_controller_options *o,
    struct carp_controller **out)
{
  struct nodeclass_ctl *c;
  size_t i;
  int rc;
  if (!env || !env->provider || !out)
    return CARP_EINVAL;
  c = CARP_NEW(struct nodeclass_ctl);
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
  rc = carp_controller_init(&c->base, env, &nodeclass_def);
  if (rc) {
    ncc_free(&c->base);
    return rc;
  }
  carp_controller_resync(&c->base, c->o.resync_ms);
  carp_controller_watch(&c->base, env->cluster->nodeclasses,
                        carp_controller_map_name);
  *out = &c->base;
  return 0;
}
