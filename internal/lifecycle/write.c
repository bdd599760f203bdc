/* write.c: the lifecycle controller's writes to the API server, on the
 * skeleton's (internal/controller/write.c). What this file adds is
 * memory: the resourceVersion each write to a NodeClaim or to its Node
 * returns is kept, so the next write to the same object - often the very
 * next step, before the cache has caught up - is conditional on it rather
 * than on a version the server has already moved past. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "lifecycle_int.h"

enum { TARGET_OTHER = 0, TARGET_CLAIM, TARGET_NODE, TARGET_STATUS };

/* How long a status write waits for the cache to show the last one (its
 * watch event requeues the claim sooner). */
#define STATUS_CATCH_UP_MS 200

void carp__lc_remember_rv(struct carp_lifecycle *l, const char *key, int node,
                          const char *rv)
{
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  char **slot;
  if (!m)
    return;
  slot = node ? &m->node_rv : &m->claim_rv;
  carp_free(*slot);
  *slot = rv && *rv ? carp_strdup(rv) : NULL;
}

const char *carp__lc_claim_rv(struct carp_lifecycle *l,
                              const struct carp_nodeclaim *nc)
{
  struct claim_mem *m = carp_map_gets(&l->mem, nc->meta.name);
  if (!m || strcmp(m->uid, nc->meta.uid))
    return nc->meta.resource_version;
  return carp_rv_newer(m->claim_rv, nc->meta.resource_version);
}

const char *carp__lc_node_rv(struct carp_lifecycle *l, const char *key,
                             const struct carp_objmeta *node)
{
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  if (!m)
    return node->resource_version;
  return carp_rv_newer(m->node_rv, node->resource_version);
}

/* Every write to the same object re-reads its precondition from here: the
 * version this one produced, or, after a conflict, the cache. */
static void remember_result(struct carp_lifecycle *l, const char *key,
                            int target, const struct carp_kube_result *res)
{
  const char *rv =
      res->err ? NULL
               : carp_json_str(res->body, "metadata", "resourceVersion", NULL);
  struct claim_mem *m;
  if (target == TARGET_OTHER)
    return;
  if (!res->err || res->err == CARP_ECONFLICT)
    carp__lc_remember_rv(l, key, target == TARGET_NODE, rv);
  if (target == TARGET_STATUS && !res->err &&
      (m = carp_map_gets(&l->mem, key))) {
    carp_free(m->status_rv);
    m->status_rv = rv && *rv ? carp_strdup(rv) : NULL;
  }
}

/* The callback argument: which object, and the step's own callback. */
struct lc_write {
  int target;
  carp_lc_write_cb cb;
};

static void on_write(struct carp_controller *c, const char *key,
                     const struct carp_kube_result *res, void *arg)
{
  struct lc_write *w = arg;
  struct carp_lifecycle *l = LC(c);
  remember_result(l, key, w->target, res);
  w->cb(l, key, res);
  carp_free(w);
}

static struct lc_write *lc_write_new(int target, carp_lc_write_cb cb)
{
  struct lc_write *w = CARP_NEW(struct lc_write);
  w->target = target;
  w->cb = cb;
  return w;
}

static int patch(struct carp_lifecycle *l, const char *key, int target,
                 const struct carp_kube_ref *ref, const char *body, size_t len,
                 carp_lc_write_cb cb)
{
  struct lc_write *w = lc_write_new(target, cb);
  int rc = carp_write_patch(&l->base, key, ref, body, len, on_write, w);
  if (rc)
    carp_free(w);
  return rc;
}

int carp__lc_patch_claim(struct carp_lifecycle *l, const char *key,
                         const char *sub, const char *body, size_t len,
                         carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(key, sub);
  return patch(l, key, TARGET_CLAIM, &ref, body, len, cb);
}

int carp__lc_patch_node(struct carp_lifecycle *l, const char *key,
                        const char *node_name, const char *body, size_t len,
                        carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = carp_ref_node(node_name);
  return patch(l, key, TARGET_NODE, &ref, body, len, cb);
}

int carp__lc_wait_for_cache(struct carp_lifecycle *l,
                            const struct carp_nodeclaim *nc, const char *key)
{
  struct claim_mem *m = carp_map_gets(&l->mem, key);
  if (!m || strcmp(m->uid, nc->meta.uid) ||
      !carp_rv_behind(nc->meta.resource_version, m->status_rv))
    return 0;
  carp_controller_done(&l->base, key, CARP_RECONCILE_REQUEUE_AFTER,
                       STATUS_CATCH_UP_MS);
  return 1;
}

int carp__lc_write_status(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc,
                          const struct carp_nodeclaim_status *st,
                          const char *rv, const char *key, carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(key, "status");
  struct carp_buf body;
  int rc;
  if (carp__lc_wait_for_cache(l, nc, key))
    return 0;
  carp_buf_init(&body, CARP_BUF_UNLIMITED);
  rc = carp_nodeclaim_status_patch(st, rv ? rv : carp__lc_claim_rv(l, nc),
                                   &body);
  if (!rc)
    rc = patch(l, key, TARGET_STATUS, &ref, body.ptr, body.len, cb);
  carp_buf_free(&body);
  return rc;
}

static int delete (struct carp_lifecycle *l, const char *key,
                   const struct carp_kube_ref *ref, const char *uid,
                   carp_lc_write_cb cb)
{
  struct carp_kube_delete_options o = {.uid = uid, .grace_seconds = -1};
  struct lc_write *w = lc_write_new(TARGET_OTHER, cb);
  int rc = carp_write_delete(&l->base, key, ref, &o, on_write, w);
  if (rc)
    carp_free(w);
  return rc;
}

int carp__lc_delete_claim(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, const char *key,
                          const char *reason, carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(nc->meta.name, NULL);
  const char *pool = carp_nodeclaim_nodepool(nc);
  CARP_LOG_INFO(LC_LOG, "deleting nodeclaim",
                CARP_F_STR("nodeclaim", nc->meta.name),
                CARP_F_STR("reason", reason));
  carp_metric_add(
      l->m_disrupted,
      CARP_VALUES(reason, pool ? pool : "", "on-demand", "", "forceful"), 1);
  return delete (l, key, &ref, nc->meta.uid, cb);
}

int carp__lc_delete_node(struct carp_lifecycle *l, const char *key,
                         const char *name, const char *uid, carp_lc_write_cb cb)
{
  struct carp_kube_ref ref = carp_ref_node(name);
  return delete (l, key, &ref, uid, cb);
}

int carp__lc_finish_body(struct carp_lifecycle *l, const char *key,
                         struct carp_jw *w, const char *what)
{
  const struct carp_nodeclaim *nc =
      carp_cluster_nodeclaim(l->base.env.cluster, key);
  struct carp_event_target t;
  if (nc)
    t = carp_event_target_of(&nc->meta, "karpenter.sh/v1");
  return carp_recorder_body_finish(w, l->base.env.recorder, nc ? &t : NULL,
                                   &l->fold, LC_LOG, key, what);
}

void carp__lc_pool_health(struct carp_lifecycle *l,
                          const struct carp_nodeclaim *nc, int healthy,
                          const char *reason, const char *message)
{
  const char *name = carp_nodeclaim_nodepool(nc);
  const struct carp_nodepool *np =
      name ? carp_cluster_nodepool(l->base.env.cluster, name) : NULL;
  if (np)
    carp_write_pool_condition_once(&l->base, np, CARP_COND_NODE_REG_HEALTHY,
                                   healthy ? CARP_COND_TRUE : CARP_COND_FALSE,
                                   healthy ? "NodeRegistrationHealthy" : reason,
                                   message);
}

void carp__lc_after_write(struct carp_lifecycle *l, const char *key,
                          const struct carp_kube_result *res)
{
  if (res->err && res->err != CARP_ECONFLICT && res->err != CARP_ENOTFOUND &&
      res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED) {
    /* Folded per claim: a server that refuses every write logs once. */
    CARP_LOG_FOLDED(&l->fold, key, CARP_LOG_WARN, LC_LOG, "write failed",
                    CARP_F_STR("nodeclaim", key), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    carp_controller_done(&l->base, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  carp_write_done(&l->base, key, res);
}

/* ---- the labels an instance gives its NodeClaim ---- */

struct label {
  const char *key;
  char value[96];
};

static size_t instance_labels(const struct carp_provider_instance *in,
                              struct label *out)
{
  size_t n = 0, i;
#define PUT(k, ...)                                                            \
  do {                                                                         \
    out[n].key = k;                                                            \
    snprintf(out[n].value, sizeof(out[n].value), __VA_ARGS__);                 \
    n++;                                                                       \
  } while (0)
  if (in->instance_type[0])
    PUT("node.kubernetes.io/instance-type", "%s", in->instance_type);
  PUT("topology.kubernetes.io/zone", "%s", in->zone);
  PUT("topology.kubernetes.io/region", "%s", in->region);
  PUT(CARP_LABEL_CAPACITY_TYPE_KEY, "%s",
      in->capacity_type[0] ? in->capacity_type : "on-demand");
  PUT("kubernetes.io/arch", "amd64");
  PUT("kubernetes.io/os", "linux");
  if (in->family[0])
    PUT("carpenter.dev/instance-family", "%s", in->family);
  if (in->cpu)
    PUT("carpenter.dev/instance-cpu", "%d", in->cpu);
  if (in->memory)
    PUT("carpenter.dev/instance-memory", "%lld", (long long)(in->memory >> 20));
#undef PUT
  for (i = 0; i < in->nlabels; i++) /* the type's GPU labels */
    if (!in->labels[i].absent) {
      out[n].key = in->labels[i].key;
      snprintf(out[n].value, sizeof(out[n].value), "%s", in->labels[i].value);
      n++;
    }
  return n;
}

#define MAX_INSTANCE_LABELS (9 + CARP_PROVIDER_MAX_LABELS)

void carp__lc_put_instance_labels(struct carp_jw *w,
                                  const struct carp_provider_instance *in)
{
  struct label ls[MAX_INSTANCE_LABELS];
  size_t n = instance_labels(in, ls), i;
  for (i = 0; i < n; i++)
    carp_jw_kstr(w, ls[i].key, ls[i].value);
}

int carp__lc_has_instance_labels(const struct carp_nodeclaim *nc,
                                 const struct carp_provider_instance *in)
{
  struct label ls[MAX_INSTANCE_LABELS];
  size_t n = instance_labels(in, ls), i;
  for (i = 0; i < n; i++) {
    const char *v = carp_kvset_get(nc->meta.labels, ls[i].key);
    if (!v || strcmp(v, ls[i].value))
      return 0;
  }
  return 1;
}
