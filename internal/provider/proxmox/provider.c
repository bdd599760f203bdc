/* provider.c: the Proxmox VE provider object - the vtable of
 * include/carpenter/provider.h over the pieces in this directory.
 *
 * It owns one API client and one inventory per configured cluster
 * (region), the periodic capacity refresh, the insufficient-capacity cache
 * (instance type x region x zone, 3 minutes, as Karpenter's AWS provider
 * keeps its unavailable offerings), and the full-clone slots that keep
 * at most clone.maxConcurrentFullClones full clones per host and storage in
 * flight (the rest queue in order). Closing cancels every operation, waits
 * for their callbacks, then closes the clients and timers. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

static struct pve_provider *PP(struct carp_provider *p)
{
  return carp_container_of(p, struct pve_provider, base);
}

struct pve_region *pve_region_find(struct pve_provider *pp, const char *name)
{
  size_t i;
  for (i = 0; i < pp->nregions; i++)
    if (!strcmp(pp->regions[i].name, name))
      return &pp->regions[i];
  return NULL;
}

/* --- the ICE cache ---------------------------------------------------------
 */

static void ice_key(char *out, size_t size, const char *type,
                    const char *region, const char *zone)
{
  snprintf(out, size, "%s\n%s\n%s", type, region, zone);
}

void pve_ice_add(struct pve_provider *pp, const char *type, const char *region,
                 const char *zone)
{
  char key[256];
  struct pve_ice *e;
  ice_key(key, sizeof(key), type, region, zone);
  e = carp_map_gets(&pp->ice, key);
  if (!e) {
    e = CARP_NEW(struct pve_ice);
    snprintf(e->key, sizeof(e->key), "%s", key);
    carp_map_puts(&pp->ice, e->key, e);
  }
  e->until_ms = carp_time_mono_ms() + pp->o.ice_ttl_ms;
  CARP_LOG_INFO(PVE_LOG, "offering marked unavailable (insufficient capacity)",
                CARP_F_STR("instanceType", type), CARP_F_STR("region", region),
                CARP_F_STR("zone", zone),
                CARP_F_DURATION("ttl", pp->o.ice_ttl_ms));
}

int pve_ice_has(struct pve_provider *pp, const char *type, const char *region,
                const char *zone)
{
  char key[256];
  struct pve_ice *e;
  ice_key(key, sizeof(key), type, region, zone);
  e = carp_map_gets(&pp->ice, key);
  if (!e)
    return 0;
  if (e->until_ms > carp_time_mono_ms())
    return 1;
  carp_map_dels(&pp->ice, e->key);
  carp_free(e);
  return 0;
}

int carp_pve_provider_ice_cached(struct carp_provider *p, const char *type,
                                 const char *region, const char *zone)
{
  return pve_ice_has(PP(p), type, region, zone);
}

/* --- full-clone slots -------------------------------------------------------
 */

static struct pve_slot *slot_get(struct pve_provider *pp, const char *key,
                                 int create)
{
  struct pve_slot *s;
  for (s = pp->slots; s; s = s->next)
    if (!strcmp(s->key, key))
      return s;
  if (!create)
    return NULL;
  s = CARP_NEW(struct pve_slot);
  snprintf(s->key, sizeof(s->key), "%s", key);
  s->next = pp->slots;
  pp->slots = s;
  return s;
}

static void slot_drop(struct pve_provider *pp, struct pve_slot *s)
{
  struct pve_slot **pps;
  if (s->active || s->head)
    return;
  for (pps = &pp->slots; *pps; pps = &(*pps)->next)
    if (*pps == s) {
      *pps = s->next;
      carp_free(s);
      return;
    }
}

int pve_slot_acquire(struct pve_provider *pp, const char *key, int limit,
                     struct pve_slot_waiter *w)
{
  struct pve_slot *s = slot_get(pp, key, 1);
  if (s->active < limit && !s->head) {
    s->active++;
    return 1;
  }
  w->next = NULL;
  if (s->tail)
    s->tail->next = w;
  else
    s->head = w;
  s->tail = w;
  return 0;
}

void pve_slot_release(struct pve_provider *pp, const char *key)
{
  struct pve_slot *s = slot_get(pp, key, 0);
  struct pve_slot_waiter *w;
  if (!s)
    return;
  w = s->head;
  if (w) {
    /* The slot passes straight to the next waiter. */
    s->head = w->next;
    if (!s->head)
      s->tail = NULL;
    w->cb(w);
    return;
  }
  if (s->active > 0)
    s->active--;
  slot_drop(pp, s);
}

void pve_slot_unwait(struct pve_provider *pp, const char *key,
                     struct pve_slot_waiter *w)
{
  struct pve_slot *s = slot_get(pp, key, 0);
  struct pve_slot_waiter **pw, *prev = NULL;
  if (!s)
    return;
  for (pw = &s->head; *pw; prev = *pw, pw = &(*pw)->next)
    if (*pw == w) {
      *pw = w->next;
      if (s->tail == w)
        s->tail = prev;
      break;
    }
  slot_drop(pp, s);
}

/* --- spec
 * ---------------------------------------------------------------------- */

char **pve_strv_dup(const char *const *v, size_t n)
{
  char **out;
  size_t i;
  if (!n)
    return NULL;
  out = carp_calloc(n, sizeof(*out));
  for (i = 0; i < n; i++)
    out[i] = carp_strdup(v[i] ? v[i] : "");
  return out;
}

void pve_strv_free(char **v, size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    carp_free(v[i]);
  carp_free(v);
}

void pve_vm_spec_free(struct pve_vm_spec *s)
{
  if (!s)
    return;
  carp_free(s->name);
  carp_free(s->uid);
  carp_free(s->nodepool);
  carp_free(s->nodeclass);
  carp_free(s->types);
  pve_strv_free(s->regions, s->nregions);
  pve_strv_free(s->zones, s->nzones);
  carp_free(s->tmpl_name);
  pve_strv_free(s->tmpl_tags, s->ntmpl_tags);
  carp_free(s->clone_storage);
  carp_free(s->clone_format);
  carp_free(s->pool);
  carp_free(s->boot_disk_device);
  carp_free(s->cpu_type);
  carp_free(s->net_iface);
  carp_free(s->net_bridge);
  carp_free(s->net_model);
  pve_strv_free(s->tags, s->ntags);
  carp_free(s->ci_user);
  pve_strv_free(s->ssh_keys, s->nssh_keys);
  pve_strv_free(s->nameservers, s->nnameservers);
  pve_strv_free(s->search, s->nsearch);
  carp_free(s->userdata);
  carp_free(s->iso_storage);
  carp_free(s->var_labels);
  carp_free(s->var_taints);
  carp_free(s->var_kube_reserved);
  carp_free(s->var_system_reserved);
  carp_free(s->var_eviction_hard);
  memset(s, 0, sizeof(*s));
}

/* --- refresh
 * ------------------------------------------------------------------- */

static void on_refresh_timer(uv_timer_t *t)
{
  struct pve_provider *pp = t->data;
  size_t i;
  if (pp->closing)
    return;
  for (i = 0; i < pp->nregions; i++)
    (void)pve_region_refresh_start(&pp->regions[i], NULL);
}

struct refresh_all {
  void *w; /* struct ra_waiter[nregions] */
  size_t pending;
  int status;
  void (*cb)(void *arg, int status);
  void *arg;
  uv_timer_t timer; /* delivers a start failure asynchronously */
};

static void refresh_all_free(uv_handle_t *h)
{
  struct refresh_all *ra = h->data;
  carp_free(ra->w);
  carp_free(ra);
}

static void refresh_all_fire(uv_timer_t *t)
{
  struct refresh_all *ra = t->data;
  ra->cb(ra->arg, ra->status);
  uv_close((uv_handle_t *)&ra->timer, refresh_all_free);
}

/* Waiter records need a back pointer: pack them after a header. */
struct ra_waiter {
  struct pve_waiter w;
  struct refresh_all *ra;
};

static void ra_cb(struct pve_waiter *w, int err)
{
  struct ra_waiter *rw = (struct ra_waiter *)w;
  struct refresh_all *ra = rw->ra;
  if (err && !ra->status)
    ra->status = err;
  if (--ra->pending == 0)
    uv_timer_start(&ra->timer, refresh_all_fire, 0, 0);
}

int carp_pve_provider_refresh(struct carp_provider *p,
                              void (*cb)(void *arg, int status), void *arg)
{
  struct pve_provider *pp = PP(p);
  struct refresh_all *ra;
  struct ra_waiter *ws;
  size_t i;
  if (!cb)
    return CARP_EINVAL;
  if (pp->closing)
    return CARP_ECANCELED;
  ra = CARP_NEW(struct refresh_all);
  ws = carp_calloc(pp->nregions ? pp->nregions : 1, sizeof(*ws));
  ra->w = ws;
  ra->cb = cb;
  ra->arg = arg;
  uv_timer_init(pp->loop, &ra->timer);
  ra->timer.data = ra;
  for (i = 0; i < pp->nregions; i++) {
    int rc;
    ws[i].w.cb = ra_cb;
    ws[i].ra = ra;
    ra->pending++;
    rc = pve_region_refresh_start(&pp->regions[i], &ws[i].w);
    if (rc) {
      ra->pending--;
      if (!ra->status)
        ra->status = rc;
    }
  }
  if (ra->pending == 0)
    uv_timer_start(&ra->timer, refresh_all_fire, 0, 0);
  return 0;
}

int carp_pve_provider_region_status(struct carp_provider *p, const char *region,
                                    const char **message)
{
  struct pve_region *r = pve_region_find(PP(p), region);
  if (!r)
    return CARP_ENOENT;
  if (message)
    *message = r->message;
  return r->status;
}

int carp_pve_provider_templates(struct carp_provider *p,
                                const struct carp_nodeclass *nc,
                                struct carp_nodeclass_template **out, size_t *n)
{
  return pve_templates(PP(p), nc, out, n);
}

struct carp_pve_client *carp_pve_provider_client(struct carp_provider *p,
                                                 const char *region)
{
  struct pve_region *r = pve_region_find(PP(p), region);
  return r ? r->client : NULL;
}

/* --- close
 * ---------------------------------------------------------------------- */

static void free_provider(struct pve_provider *pp)
{
  void (*cb)(void *) = pp->close_cb;
  void *arg = pp->close_arg;
  struct carp_map_iter it;
  const char *k;
  size_t kl, i;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&pp->ice, &it, &k, &kl, &v))
    carp_free(v);
  carp_map_free(&pp->ice);
  carp_logfold_free(&pp->fold);
  while (pp->slots) {
    struct pve_slot *s = pp->slots;
    pp->slots = s->next;
    carp_free(s);
  }
  for (i = 0; i < pp->nregions; i++) {
    struct pve_region *r = &pp->regions[i];
    struct pve_hold *h = r->holds, *next;
    pve_inventory_free(&r->inv);
    for (; h; h = next) {
      next = h->next;
      carp_free(h);
    }
    carp_free(r->gone);
    carp_free(r->recent);
    carp_free(r->descs);
  }
  carp_free(pp->regions);
  carp_pve_config_free(&pp->config);
  carp_free(pp);
  if (cb)
    cb(arg);
}

static void on_handle_closed(uv_handle_t *h)
{
  struct pve_provider *pp = h->data;
  if (--pp->handles_open == 0 && pp->clients_open == 0)
    free_provider(pp);
}

static void on_client_closed(void *arg)
{
  struct pve_provider *pp = arg;
  if (--pp->clients_open == 0 && pp->handles_open == 0)
    free_provider(pp);
}

void pve_provider_maybe_closed(struct pve_provider *pp)
{
  size_t i;
  if (!pp->closing || pp->nops || pp->closing > 1)
    return;
  pp->closing = 2;
  /* Every operation has delivered its callback; close the rest. */
  pp->handles_open = 2;
  uv_close((uv_handle_t *)&pp->refresh_timer, on_handle_closed);
  uv_close((uv_handle_t *)&pp->slot_timer, on_handle_closed);
  pp->clients_open = (int)pp->nregions;
  for (i = 0; i < pp->nregions; i++)
    carp_pve_client_close(pp->regions[i].client, on_client_closed, pp);
}

/* --- the vtable
 * -------------------------------------------------------------------- */

int pve_spec_build(struct pve_provider *pp, const struct carp_nodeclass *nc,
                   const struct carp_nodeclaim *claim, const char *userdata,
                   size_t userdata_len, struct pve_vm_spec *out, char *msg,
                   size_t msg_size);
int pve_nodeclass_ready(const struct carp_nodeclass *nc, char *msg,
                        size_t msg_size);
void pve_fill_resources(const struct carp_nodeclass *nc,
                        struct carp_provider_instance *inst);
int pve_instance_types(struct pve_provider *pp, const struct carp_nodeclass *nc,
                       struct carp_provider_instance_types *out);
int pve_is_drifted(struct pve_provider *pp, const struct carp_nodeclaim *claim,
                   const struct carp_nodeclass *nc, const char **reason);
const char *pve_claim_annotation(const struct carp_nodeclaim *claim);

/* Create: the provider.h wrapper's callback gets resources filled in from
 * the NodeClass (capacity, allocatable) before it runs. */
struct create_ctx {
  const struct carp_nodeclass *nc;
  carp_provider_create_cb cb;
  void *arg;
};

static void on_created(int status, const struct carp_provider_instance *inst,
                       const struct carp_provider_error *err, void *arg)
{
  struct create_ctx *x = arg;
  if (status == 0 && inst) {
    struct carp_provider_instance full = *inst;
    pve_fill_resources(x->nc, &full);
    x->cb(0, &full, NULL, x->arg);
  } else {
    x->cb(status, NULL, err, x->arg);
  }
  carp_free(x);
}

/* A create refused before it starts still answers through the callback
 * (Karpenter's typed errors travel that way), from a timer. */
struct early_fail {
  uv_timer_t timer;
  struct carp_provider_error err;
  carp_provider_create_cb cb;
  void *arg;
};

static void early_free(uv_handle_t *h)
{
  carp_free(h->data);
}

static void early_fire(uv_timer_t *t)
{
  struct early_fail *e = t->data;
  e->cb(e->err.code, NULL, &e->err, e->arg);
  uv_close((uv_handle_t *)&e->timer, early_free);
}

static int fail_early(struct pve_provider *pp,
                      const struct carp_provider_create_req *req, int code,
                      const char *reason, const char *msg,
                      carp_provider_create_cb cb, void *arg)
{
  struct early_fail *e = CARP_NEW(struct early_fail);
  char key[320];
  carp_provider_error_set(&e->err, code, reason, "%s", msg);
  e->cb = cb;
  e->arg = arg;
  uv_timer_init(pp->loop, &e->timer);
  e->timer.data = e;
  uv_timer_start(&e->timer, early_fire, 0, 0);
  /* Every claim of a class that is not ready is refused the same way:
   * one line per interval says so. */
  snprintf(key, sizeof(key), "%s/%s", reason, req->nodeclass->meta.name);
  CARP_LOG_FOLDED(&pp->fold, key, CARP_LOG_WARN, PVE_LOG, "create refused",
                  CARP_F_STR("reason", reason), CARP_F_STR("message", msg),
                  CARP_F_STR("nodeclaim", req->nodeclaim->meta.name));
  return 0;
}

static int v_create(struct carp_provider *p,
                    const struct carp_provider_create_req *req,
                    carp_provider_create_cb cb, void *arg,
                    struct carp_provider_op **out)
{
  struct pve_provider *pp = PP(p);
  struct pve_vm_spec *spec;
  struct create_ctx *x;
  struct pve_op *op = NULL;
  char msg[512];
  int rc;

  if (!req->nodeclaim || !req->nodeclass || !req->reserve)
    return CARP_EINVAL;
  if (pp->closing)
    return CARP_ECANCELED;
  if (out)
    *out = NULL;
  if (pve_nodeclass_ready(req->nodeclass, msg, sizeof(msg)))
    return fail_early(pp, req, CARP_ENODECLASS_NOT_READY,
                      CARP_REASON_NODECLASS_NOT_READY, msg, cb, arg);
  spec = CARP_NEW(struct pve_vm_spec);
  rc = pve_spec_build(pp, req->nodeclass, req->nodeclaim, req->userdata,
                      req->userdata_len, spec, msg, sizeof(msg));
  if (rc) {
    pve_vm_spec_free(spec);
    carp_free(spec);
    return fail_early(pp, req, rc,
                      rc == CARP_EINSUFFICIENT_CAPACITY
                          ? CARP_REASON_INSUFFICIENT_CAPACITY
                          : CARP_REASON_LAUNCH_FAILED,
                      msg, cb, arg);
  }
  x = CARP_NEW(struct create_ctx);
  x->nc = req->nodeclass;
  x->cb = cb;
  x->arg = arg;
  rc = pve_create_start(pp, spec, req->nodeclaim,
                        pve_claim_annotation(req->nodeclaim), req->reserve,
                        req->reserve_arg, on_created, x, &op);
  if (rc) {
    pve_vm_spec_free(spec);
    carp_free(spec);
    carp_free(x);
    return rc;
  }
  if (out)
    *out = (struct carp_provider_op *)op;
  return 0;
}

static int v_delete(struct carp_provider *p,
                    const struct carp_provider_delete_req *req,
                    carp_provider_done_cb cb, void *arg,
                    struct carp_provider_op **out)
{
  char region[64];
  int64_t vmid;
  struct pve_op *op = NULL;
  int rc;
  if (carp_provider_id_parse(req->provider_id, region, sizeof(region), &vmid))
    return CARP_EINVAL;
  rc = pve_delete_start(PP(p), region, vmid, req->nodeclaim_uid, cb, arg, &op);
  if (!rc && out)
    *out = (struct carp_provider_op *)op;
  return rc;
}

static int v_get(struct carp_provider *p, const char *provider_id,
                 carp_provider_get_cb cb, void *arg,
                 struct carp_provider_op **out)
{
  char region[64];
  int64_t vmid;
  struct pve_op *op = NULL;
  int rc;
  if (carp_provider_id_parse(provider_id, region, sizeof(region), &vmid))
    return CARP_EINVAL;
  rc = pve_get_start(PP(p), region, vmid, cb, arg, &op);
  if (!rc && out)
    *out = (struct carp_provider_op *)op;
  return rc;
}

static int v_list(struct carp_provider *p, carp_provider_list_cb cb, void *arg,
                  struct carp_provider_op **out)
{
  struct pve_op *op = NULL;
  int rc = pve_list_start(PP(p), cb, arg, &op);
  if (!rc && out)
    *out = (struct carp_provider_op *)op;
  return rc;
}

static int v_instance_types(struct carp_provider *p,
                            const struct carp_nodeclass *nc,
                            struct carp_provider_instance_types *out)
{
  return pve_instance_types(PP(p), nc, out);
}

static int v_is_drifted(struct carp_provider *p,
                        const struct carp_nodeclaim *claim,
                        const struct carp_nodeclass *nc, const char **reason)
{
  return pve_is_drifted(PP(p), claim, nc, reason);
}

static void v_cancel(struct carp_provider *p, struct carp_provider_op *op)
{
  (void)p;
  pve_op_cancel((struct pve_op *)op);
}

static void v_close(struct carp_provider *p, void (*cb)(void *arg), void *arg)
{
  struct pve_provider *pp = PP(p);
  struct pve_op *op, *next;
  if (pp->closing)
    return;
  pp->closing = 1;
  pp->close_cb = cb;
  pp->close_arg = arg;
  pve_metrics_detach(pp);
  uv_timer_stop(&pp->refresh_timer);
  for (op = pp->ops; op; op = next) {
    next = op->next;
    pve_op_cancel(op);
  }
  pve_provider_maybe_closed(pp);
}

static const struct carp_provider_ops pve_ops = {
    .name = "proxmox",
    .create = v_create,
    .del = v_delete,
    .get = v_get,
    .list = v_list,
    .instance_types = v_instance_types,
    .is_drifted = v_is_drifted,
    .cancel = v_cancel,
    .close = v_close,
};

/* --- construction
 * ------------------------------------------------------------------- */

static void cluster_tag(const char *name, char *cluster, size_t csize,
                        char *tag, size_t tsize)
{
  size_t i, n = 0;
  for (i = 0; name[i] && n + 1 < csize; i++) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.' || c == '+'))
      c = '-';
    cluster[n++] = c;
  }
  cluster[n] = '\0';
  snprintf(tag, tsize, "carpenter-%s", cluster);
}

int carp_pve_provider_new(uv_loop_t *loop,
                          const struct carp_pve_provider_options *opts,
                          struct carp_provider **out)
{
  struct pve_provider *pp;
  struct carp_pve_client_options co;
  size_t i;
  int rc;

  if (!loop || !opts || !opts->config || !opts->config->nclusters || !out)
    return CARP_EINVAL;
  pp = CARP_NEW(struct pve_provider);
  pp->base.ops = &pve_ops;
  pp->loop = loop;
  pp->o = *opts;
  pp->o.config = NULL;
#define DEF(f, v)                                                              \
  if (!pp->o.f)                                                                \
  pp->o.f = (v)
  DEF(refresh_interval_ms, 30000);
  DEF(ice_ttl_ms, 180000);
  DEF(vmid_reuse_ms, 300000);
  DEF(request_timeout_ms, 30000);
  DEF(clone_timeout_ms, 300000);
  DEF(start_timeout_ms, 120000);
  DEF(stop_timeout_ms, 120000);
  DEF(delete_timeout_ms, 300000);
  DEF(config_timeout_ms, 120000);
  DEF(task_poll_first_ms, 100);
  DEF(task_poll_max_ms, 750);
#undef DEF
  cluster_tag(opts->cluster_name && *opts->cluster_name ? opts->cluster_name
                                                        : "kubernetes",
              pp->cluster, sizeof(pp->cluster), pp->cluster_tag,
              sizeof(pp->cluster_tag));
  /* A deep copy of the configuration (secrets included). */
  pp->config.nclusters = opts->config->nclusters;
  pp->config.clusters =
      carp_calloc(pp->config.nclusters, sizeof(*pp->config.clusters));
  for (i = 0; i < pp->config.nclusters; i++) {
    const struct carp_pve_cluster_config *s = &opts->config->clusters[i];
    struct carp_pve_cluster_config *d = &pp->config.clusters[i];
    d->region = carp_strdup(s->region ? s->region : "");
    d->url = carp_strdup(s->url ? s->url : "");
    d->token_id = carp_strdup(s->token_id ? s->token_id : "");
    d->token_secret = carp_strdup(s->token_secret ? s->token_secret : "");
    d->ca_file = s->ca_file ? carp_strdup(s->ca_file) : NULL;
    d->fingerprint = s->fingerprint ? carp_strdup(s->fingerprint) : NULL;
    d->insecure = s->insecure;
  }
  carp_map_init(&pp->ice);
  carp_logfold_init(&pp->fold, 0, 0);
  pp->regions = carp_calloc(pp->config.nclusters, sizeof(*pp->regions));
  memset(&co, 0, sizeof(co));
  co.timeout_ms = pp->o.request_timeout_ms;
  for (i = 0; i < pp->config.nclusters; i++) {
    struct pve_region *r = &pp->regions[i];
    r->pp = pp;
    snprintf(r->name, sizeof(r->name), "%s", pp->config.clusters[i].region);
    r->status = CARP_EAGAIN;
    snprintf(r->message, sizeof(r->message), "region %s: not refreshed yet",
             r->name);
    rc = carp_pve_client_new(loop, &pp->config.clusters[i], &co, &r->client);
    if (rc) {
      size_t j;
      /* Clients made so far close asynchronously; nothing else started. */
      for (j = 0; j < i; j++)
        carp_pve_client_close(pp->regions[j].client, NULL, NULL);
      carp_map_free(&pp->ice);
      carp_free(pp->regions);
      carp_pve_config_free(&pp->config);
      carp_free(pp);
      return rc;
    }
    pp->nregions++;
  }
  uv_timer_init(loop, &pp->refresh_timer);
  pp->refresh_timer.data = pp;
  uv_timer_init(loop, &pp->slot_timer);
  pp->slot_timer.data = pp;
  uv_unref((uv_handle_t *)&pp->refresh_timer);
  uv_unref((uv_handle_t *)&pp->slot_timer);
  uv_timer_start(&pp->refresh_timer, on_refresh_timer, 0,
                 pp->o.refresh_interval_ms);
  if (opts->metrics) {
    carp_provider_set_metrics(&pp->base, opts->metrics);
    pve_metrics_init(pp, opts->metrics);
  }
  CARP_LOG_INFO(PVE_LOG, "Proxmox provider started",
                CARP_F_UINT("regions", pp->nregions),
                CARP_F_STR("cluster", pp->cluster));
  *out = &pp->base;
  return 0;
}
