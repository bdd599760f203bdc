/* store.c: the in-memory API server's objects and the semantics of its
 * verbs (see include/carpenter/kubemem.h): server-owned metadata,
 * preconditions, the status subresource, finalizers, eviction against
 * PodDisruptionBudgets, and the history that watches replay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/timeutil.h"
#include "kubemem_int.h"

const struct km_res carp__km_resources[] = {
    {"", "v1", "pods", "Pod", 1, 1},
    {"", "v1", "nodes", "Node", 0, 1},
    {"", "v1", "namespaces", "Namespace", 0, 1},
    {"", "v1", "events", "Event", 1, 0},
    {"", "v1", "secrets", "Secret", 1, 0},
    {"", "v1", "configmaps", "ConfigMap", 1, 0},
    {"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", 1, 1},
    {"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", 1, 1},
    {"apps", "v1", "daemonsets", "DaemonSet", 1, 1},
    {"", "v1", "podtemplates", "PodTemplate", 1, 0},
    {"apps", "v1", "deployments", "Deployment", 1, 1},
    {"apps", "v1", "replicasets", "ReplicaSet", 1, 1},
    {"apps", "v1", "statefulsets", "StatefulSet", 1, 1},
    {"autoscaling.x-k8s.io", "v1beta1", "capacitybuffers", "CapacityBuffer", 1,
     1},
    {"coordination.k8s.io", "v1", "leases", "Lease", 1, 0},
    {"storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", 0, 1},
    {"karpenter.sh", "v1", "nodepools", "NodePool", 0, 1},
    {"karpenter.sh", "v1", "nodeclaims", "NodeClaim", 0, 1},
    {"carpenter.dev", "v1alpha1", "proxmoxnodeclasses", "ProxmoxNodeClass", 0,
     1},
    {"karpenter.sh", "v1alpha1", "nodeoverlays", "NodeOverlay", 0, 1},
    {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
     "CustomResourceDefinition", 0, 1},
};
const size_t carp__km_nresources =
    sizeof(carp__km_resources) / sizeof(carp__km_resources[0]);

static void api_version_of(size_t res, char *out, size_t size)
{
  const struct km_res *r = &carp__km_resources[res];
  if (*r->group)
    snprintf(out, size, "%s/%s", r->group, r->version);
  else
    snprintf(out, size, "%s", r->version);
}

size_t carp__km_res_by_kind(const char *api_version, const char *kind)
{
  char av[128];
  size_t i;
  for (i = 0; i < carp__km_nresources; i++) {
    if (strcmp(carp__km_resources[i].kind, kind))
      continue;
    api_version_of(i, av, sizeof(av));
    if (!api_version || !strcmp(av, api_version))
      return i;
  }
  return (size_t)-1;
}

size_t carp__km_res_by_name(const char *group, const char *version,
                            const char *resource)
{
  size_t i;
  for (i = 0; i < carp__km_nresources; i++) {
    const struct km_res *r = &carp__km_resources[i];
    if (!strcmp(r->group, group) && !strcmp(r->version, version) &&
        !strcmp(r->resource, resource))
      return i;
  }
  return (size_t)-1;
}

/* ---- results ---- */

static const char *reason_of(long code)
{
  switch (code) {
  case 400:
    return "BadRequest";
  case 404:
    return "NotFound";
  case 405:
    return "MethodNotAllowed";
  case 409:
    return "Conflict";
  case 415:
    return "UnsupportedMediaType";
  case 422:
    return "Invalid";
  case 429:
    return "TooManyRequests";
  case 503:
    return "ServiceUnavailable";
  default:
    return code >= 500 ? "InternalError" : "";
  }
}

static void status_reason(struct km_result *r, long code, const char *reason,
                          const char *message)
{
  struct carp_buf b;
  struct carp_jw w;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "kind", "Status");
  carp_jw_kstr(&w, "apiVersion", "v1");
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_obj_end(&w);
  carp_jw_kstr(&w, "status", code < 300 ? "Success" : "Failure");
  carp_jw_kstr(&w, "message", message);
  carp_jw_kstr(&w, "reason", reason);
  carp_jw_kint(&w, "code", code);
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
  r->status = code;
  r->body = carp_buf_steal(&b, &r->len);
}

void carp__km_status(struct km_result *r, long code, const char *message)
{
  status_reason(r, code, reason_of(code), message);
}

void carp__km_obj_result(struct km_result *r, long code, const struct jv *obj)
{
  r->status = code;
  r->body = jv_text(obj, &r->len);
}

/* ---- objects ---- */

static void make_key(const char *ns, const char *name, char *out, size_t size)
{
  if (ns)
    snprintf(out, size, "%s/%s", ns, name);
  else
    snprintf(out, size, "%s", name);
}

struct km_obj *carp__km_find(const struct carp_kubemem *m, size_t res,
                             const char *ns, const char *name)
{
  char key[512];
  make_key(ns, name, key, sizeof(key));
  return carp_map_gets(&m->objs[res], key);
}

static void now_ts(struct carp_kubemem *m, char out[CARP_RFC3339_LEN])
{
  carp_time_format_rfc3339(carp_clock_wall_ms(m->clock), 0, out);
}

static void set_rv(struct carp_kubemem *m, struct jv *obj)
{
  char rv[32];
  snprintf(rv, sizeof(rv), "%llu", (unsigned long long)++m->rv);
  jv_set_str(jv_obj_at(obj, "metadata"), "resourceVersion", rv);
}

/* Appends a watch event for obj (its resourceVersion already set). */
static void record(struct carp_kubemem *m, size_t res, const char *type,
                   const struct jv *obj)
{
  struct carp_buf b;
  struct carp_jw w;
  struct km_event *e;
  const char *ns = jv_str(obj, "metadata.namespace");
  if (m->nhist == m->caphist) {
    m->caphist = m->caphist ? m->caphist * 2 : 64;
    m->hist = carp_reallocarray(m->hist, m->caphist, sizeof(*m->hist));
  }
  e = &m->hist[m->nhist++];
  e->rv = m->rv;
  e->res = res;
  e->ns = carp__km_resources[res].namespaced && ns ? carp_strdup(ns) : NULL;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "type", type);
  carp_jw_key(&w, "object");
  jv_write(obj, &w);
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
  e->json = carp_buf_steal(&b, &e->len);
  carp__km_kick(m);
}

static void obj_free(struct km_obj *o)
{
  jv_free(o->obj);
  carp_free(o->key);
  carp_free(o);
}

static void remove_obj(struct carp_kubemem *m, size_t res, struct km_obj *o)
{
  carp_map_dels(&m->objs[res], o->key);
  set_rv(m, o->obj);
  record(m, res, "DELETED", o->obj);
  obj_free(o);
}

static int has_finalizers(const struct jv *obj)
{
  const struct jv *f = jv_path(obj, "metadata.finalizers");
  return f && f->t == JV_ARR && f->n > 0;
}

static void put_type_meta(size_t res, struct jv *obj)
{
  char av[128];
  api_version_of(res, av, sizeof(av));
  jv_set_str(obj, "apiVersion", av);
  jv_set_str(obj, "kind", carp__km_resources[res].kind);
}

/* ---- create ---- */

void carp__km_create(struct carp_kubemem *m, size_t res, const char *ns,
                     const struct jv *in, int from_client, struct km_result *r)
{
  const struct km_res *rs = &carp__km_resources[res];
  struct jv *obj, *meta;
  const char *name, *gen, *ons;
  char buf[320], ts[CARP_RFC3339_LEN];
  struct km_obj *o;
  if (!in || in->t != JV_OBJ) {
    carp__km_status(r, 400, "the body is not an object");
    return;
  }
  obj = jv_dup(in);
  meta = jv_obj_at(obj, "metadata");
  ons = jv_str(meta, "namespace");
  if (rs->namespaced) {
    if (!ns)
      ns = ons ? ons : "default";
    if (ons && strcmp(ons, ns)) {
      jv_free(obj);
      carp__km_status(r, 400,
                      "the namespace of the object does not match the "
                      "namespace of the request");
      return;
    }
    jv_set_str(meta, "namespace", ns);
  } else {
    ns = NULL;
    jv_del(meta, "namespace");
  }
  name = jv_str(meta, "name");
  gen = jv_str(meta, "generateName");
  if ((!name || !*name) && gen && *gen) {
    snprintf(buf, sizeof(buf), "%s%05llx", gen,
             (unsigned long long)(++m->names * 7919 % 0xfffff));
    jv_set_str(meta, "name", buf);
    name = jv_str(meta, "name");
  }
  if (!name || !*name) {
    jv_free(obj);
    carp__km_status(r, 422, "metadata.name: Required value");
    return;
  }
  if (carp__km_find(m, res, ns, name)) {
    jv_free(obj);
    snprintf(buf, sizeof(buf), "%s \"%s\" already exists", rs->resource, name);
    status_reason(r, 409, "AlreadyExists", buf);
    return;
  }
  snprintf(buf, sizeof(buf), "00000000-0000-4000-8000-%012llx",
           (unsigned long long)++m->uids);
  jv_set_str(meta, "uid", buf);
  now_ts(m, ts);
  jv_set_str(meta, "creationTimestamp", ts);
  jv_set(meta, "generation", jv_new_int(1));
  jv_del(meta, "deletionTimestamp");
  jv_del(meta, "deletionGracePeriodSeconds");
  if (from_client && rs->status_sub)
    jv_del(obj, "status");
  put_type_meta(res, obj);
  set_rv(m, obj);
  o = CARP_NEW(struct km_obj);
  make_key(ns, name, buf, sizeof(buf));
  o->key = carp_strdup(buf);
  o->obj = obj;
  carp_map_puts(&m->objs[res], o->key, o);
  record(m, res, "ADDED", obj);
  carp__km_obj_result(r, 201, obj);
}

/* ---- update and patch ---- */

/* What a write may change: the main resource (status kept when it has a
 * subresource), only the status, or everything (the test's own writes). */
enum km_mode { MODE_MAIN = 0, MODE_STATUS, MODE_ALL };

static enum km_mode mode_of(const char *sub)
{
  return sub && !strcmp(sub, "status") ? MODE_STATUS : MODE_MAIN;
}

/* Replaces o's object with next (owned), keeping what the server owns,
 * and records the change; deletes the object when it was terminating and
 * lost its last finalizer. */
static void commit(struct carp_kubemem *m, size_t res, struct km_obj *o,
                   struct jv *next, enum km_mode mode, struct km_result *r)
{
  const struct km_res *rs = &carp__km_resources[res];
  struct jv *old = o->obj, *meta, *om;
  static const char *const kept[] = {"name",
                                     "namespace",
                                     "uid",
                                     "generation",
                                     "creationTimestamp",
                                     "deletionTimestamp",
                                     "deletionGracePeriodSeconds"};
  size_t i;
  int64_t gen = 1;
  if (mode == MODE_STATUS) {
    struct jv *st = jv_dup(jv_get(next, "status"));
    jv_free(next);
    next = jv_dup(old);
    if (st)
      jv_set(next, "status", st);
    else
      jv_del(next, "status");
  } else if (mode == MODE_MAIN && rs->status_sub) {
    struct jv *st = jv_dup(jv_get(old, "status"));
    if (st)
      jv_set(next, "status", st);
    else
      jv_del(next, "status");
  }
  meta = jv_obj_at(next, "metadata");
  om = jv_obj_at(old, "metadata");
  for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
    struct jv *v = jv_get(om, kept[i]);
    if (v)
      jv_set(meta, kept[i], jv_dup(v));
    else
      jv_del(meta, kept[i]);
  }
  {
    const struct jv *g = jv_get(om, "generation");
    if (g && g->t == JV_NUM)
      gen = strtoll(g->s, NULL, 10);
  }
  if (!jv_equal(jv_get(old, "spec"), jv_get(next, "spec")))
    jv_set(meta, "generation", jv_new_int(gen + 1));
  put_type_meta(res, next);
  jv_set(meta, "resourceVersion", jv_dup(jv_get(om, "resourceVersion")));
  if (jv_equal(old, next)) {
    /* A no-op write: no new resourceVersion, no event. */
    jv_free(next);
    carp__km_obj_result(r, 200, o->obj);
    return;
  }
  o->obj = next;
  jv_free(old);
  set_rv(m, next);
  carp__km_obj_result(r, 200, next);
  if (jv_path(next, "metadata.deletionTimestamp") && !has_finalizers(next)) {
    remove_obj(m, res, o);
    return;
  }
  record(m, res, "MODIFIED", next);
}

static int stale(const struct km_obj *o, const struct jv *body,
                 struct km_result *r)
{
  const char *want = jv_str(body, "metadata.resourceVersion");
  const char *have = jv_str(o->obj, "metadata.resourceVersion");
  if (!want || !*want || (have && !strcmp(want, have)))
    return 0;
  carp__km_status(r, 409,
                  "Operation cannot be fulfilled: the object has been "
                  "modified; please apply your changes to the latest "
                  "version and try again");
  return 1;
}

void carp__km_update(struct carp_kubemem *m, size_t res, const char *ns,
                     const char *name, const char *sub, const struct jv *obj,
                     struct km_result *r)
{
  struct km_obj *o = carp__km_find(m, res, ns, name);
  if (!o) {
    carp__km_status(r, 404, "not found");
    return;
  }
  if (!obj || obj->t != JV_OBJ) {
    carp__km_status(r, 400, "the body is not an object");
    return;
  }
  if (stale(o, obj, r))
    return;
  commit(m, res, o, jv_dup(obj), mode_of(sub), r);
}

void carp__km_patch(struct carp_kubemem *m, size_t res, const char *ns,
                    const char *name, const char *sub, const struct jv *patch,
                    int split_status, struct km_result *r)
{
  struct km_obj *o = carp__km_find(m, res, ns, name);
  struct jv *next;
  if (!o) {
    carp__km_status(r, 404, "not found");
    return;
  }
  if (!patch || patch->t != JV_OBJ) {
    carp__km_status(r, 400, "the patch is not an object");
    return;
  }
  if (stale(o, patch, r))
    return;
  next = jv_merge_patch(jv_dup(o->obj), patch);
  commit(m, res, o, next, split_status ? mode_of(sub) : MODE_ALL, r);
}

void carp__km_replace(struct carp_kubemem *m, size_t res, const char *ns,
                      const char *name, const struct jv *obj,
                      struct km_result *r)
{
  struct km_obj *o = carp__km_find(m, res, ns, name);
  if (!o) {
    carp__km_status(r, 404, "not found");
    return;
  }
  commit(m, res, o, jv_dup(obj), MODE_ALL, r);
}

/* ---- delete ---- */

void carp__km_delete(struct carp_kubemem *m, size_t res, const char *ns,
                     const char *name, const struct jv *options,
                     struct km_result *r)
{
  struct km_obj *o = carp__km_find(m, res, ns, name);
  const char *uid, *rv;
  struct jv *next, *meta;
  char ts[CARP_RFC3339_LEN];
  if (!o) {
    carp__km_status(r, 404, "not found");
    return;
  }
  uid = jv_str(options, "preconditions.uid");
  rv = jv_str(options, "preconditions.resourceVersion");
  if ((uid && strcmp(uid, jv_str(o->obj, "metadata.uid"))) ||
      (rv && strcmp(rv, jv_str(o->obj, "metadata.resourceVersion")))) {
    carp__km_status(r, 409,
                    "Precondition failed: the UID or resourceVersion in the "
                    "precondition does not match the object");
    return;
  }
  if (!has_finalizers(o->obj)) {
    carp__km_obj_result(r, 200, o->obj);
    remove_obj(m, res, o);
    return;
  }
  if (jv_path(o->obj, "metadata.deletionTimestamp")) {
    carp__km_obj_result(r, 200, o->obj);
    return;
  }
  next = jv_dup(o->obj);
  meta = jv_obj_at(next, "metadata");
  now_ts(m, ts);
  jv_set_str(meta, "deletionTimestamp", ts);
  jv_set(meta, "deletionGracePeriodSeconds", jv_new_int(0));
  jv_free(o->obj);
  o->obj = next;
  set_rv(m, next);
  record(m, res, "MODIFIED", next);
  carp__km_obj_result(r, 200, next);
}

/* ---- eviction ---- */

static int selector_matches(const struct jv *sel, const struct jv *labels)
{
  const struct jv *ml = jv_get(sel, "matchLabels");
  const struct jv *me = jv_get(sel, "matchExpressions");
  size_t i, j;
  if (!sel || sel->t != JV_OBJ)
    return 0;
  for (i = 0; ml && ml->t == JV_OBJ && i < ml->n; i++) {
    const struct jv *v = jv_get(labels, ml->k[i]);
    if (!v || v->t != JV_STR || ml->v[i]->t != JV_STR ||
        strcmp(v->s, ml->v[i]->s))
      return 0;
  }
  for (i = 0; me && me->t == JV_ARR && i < me->n; i++) {
    const char *key = jv_str(me->v[i], "key");
    const char *op = jv_str(me->v[i], "operator");
    const struct jv *vals = jv_get(me->v[i], "values");
    const struct jv *v = key ? jv_get(labels, key) : NULL;
    int in = 0;
    for (j = 0; v && v->t == JV_STR && vals && vals->t == JV_ARR && j < vals->n;
         j++)
      if (vals->v[j]->t == JV_STR && !strcmp(vals->v[j]->s, v->s))
        in = 1;
    if (!op || (!strcmp(op, "In") && !in) || (!strcmp(op, "NotIn") && in) ||
        (!strcmp(op, "Exists") && !v) || (!strcmp(op, "DoesNotExist") && v))
      return 0;
  }
  return 1;
}

void carp__km_evict(struct carp_kubemem *m, const char *ns, const char *name,
                    const struct jv *eviction, struct km_result *r)
{
  size_t pods = carp__km_res_by_name("", "v1", "pods");
  size_t pdbs = carp__km_res_by_name("policy", "v1", "poddisruptionbudgets");
  struct km_obj *pod = carp__km_find(m, pods, ns, name);
  const struct jv *labels;
  struct carp_map_iter it;
  void *v;
  const char *uid;
  if (!pod) {
    carp__km_status(r, 404, "pods not found");
    return;
  }
  uid = jv_str(eviction, "deleteOptions.preconditions.uid");
  if (uid && strcmp(uid, jv_str(pod->obj, "metadata.uid"))) {
    carp__km_status(r, 409, "Precondition failed: UID in precondition");
    return;
  }
  labels = jv_path(pod->obj, "metadata.labels");
  /* A pod already being deleted is evicted without a budget check. */
  if (!jv_path(pod->obj, "metadata.deletionTimestamp")) {
    struct km_obj *hit = NULL;
    carp_map_iter_init(&it);
    while (carp_map_next(&m->objs[pdbs], &it, NULL, NULL, &v)) {
      struct km_obj *b = v;
      const struct jv *allowed;
      if (strcmp(jv_str(b->obj, "metadata.namespace"), ns) ||
          !selector_matches(jv_path(b->obj, "spec.selector"), labels))
        continue;
      allowed = jv_path(b->obj, "status.disruptionsAllowed");
      if (!allowed || allowed->t != JV_NUM ||
          strtoll(allowed->s, NULL, 10) < 1) {
        char msg[400];
        snprintf(msg, sizeof(msg),
                 "Cannot evict pod as it would violate the pod's disruption "
                 "budget %s.",
                 jv_str(b->obj, "metadata.name"));
        status_reason(r, 429, "TooManyRequests", msg);
        return;
      }
      hit = b;
    }
    if (hit) {
      struct jv *next = jv_dup(hit->obj);
      struct jv *st = jv_obj_at(next, "status");
      const struct jv *a = jv_get(st, "disruptionsAllowed");
      struct km_result ignored = {0};
      jv_set(st, "disruptionsAllowed", jv_new_int(strtoll(a->s, NULL, 10) - 1));
      commit(m, pdbs, hit, next, MODE_STATUS, &ignored);
      carp_free(ignored.body);
    }
  }
  {
    struct km_result del = {0};
    carp__km_delete(m, pods, ns, name, NULL, &del);
    carp_free(del.body);
  }
  status_reason(r, 201, "", "");
}

/* ---- reads ---- */

void carp__km_get(struct carp_kubemem *m, size_t res, const char *ns,
                  const char *name, struct km_result *r)
{
  struct km_obj *o = carp__km_find(m, res, ns, name);
  if (!o) {
    char msg[300];
    snprintf(msg, sizeof(msg), "%s \"%s\" not found",
             carp__km_resources[res].resource, name);
    carp__km_status(r, 404, msg);
    return;
  }
  carp__km_obj_result(r, 200, o->obj);
}

static int by_key(const void *a, const void *b)
{
  const struct km_obj *x = *(struct km_obj *const *)a;
  const struct km_obj *y = *(struct km_obj *const *)b;
  return strcmp(x->key, y->key);
}

void carp__km_list(struct carp_kubemem *m, size_t res, const char *ns,
                   struct km_result *r)
{
  struct carp_map *objs = &m->objs[res];
  struct km_obj **all = carp_calloc(objs->len + 1, sizeof(*all));
  struct carp_map_iter it;
  struct carp_buf b;
  struct carp_jw w;
  char av[128], kind[160], rv[32];
  size_t n = 0, i;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(objs, &it, NULL, NULL, &v)) {
    struct km_obj *o = v;
    const char *ons = jv_str(o->obj, "metadata.namespace");
    if (!ns || (ons && !strcmp(ons, ns)))
      all[n++] = o;
  }
  qsort(all, n, sizeof(*all), by_key);
  api_version_of(res, av, sizeof(av));
  snprintf(kind, sizeof(kind), "%sList", carp__km_resources[res].kind);
  snprintf(rv, sizeof(rv), "%llu", (unsigned long long)m->rv);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", av);
  carp_jw_kstr(&w, "kind", kind);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "resourceVersion", rv);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "items");
  carp_jw_arr(&w);
  for (i = 0; i < n; i++)
    jv_write(all[i]->obj, &w);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
  carp_free(all);
  r->status = 200;
  r->body = carp_buf_steal(&b, &r->len);
}
