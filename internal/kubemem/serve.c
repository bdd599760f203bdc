/* serve.c: requests from the REST client to the in-memory API server -
 * the path is routed to a resource and verb, injected faults are answered
 * first, writes are logged with their answers - and the test's own calls
 * (apply, patch, delete, get), which use the same verbs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "kubemem_int.h"

#define MAX_SEGS 10

struct route {
  size_t res;
  char ns[256];
  char name[256];
  char sub[64];
  int has_ns, has_name, has_sub;
  int watch;
  uint64_t rv;
  int has_rv;
};

static int query_param(const char *q, const char *key, char *out, size_t size)
{
  size_t klen = strlen(key);
  while (q && *q) {
    const char *amp = strchr(q, '&');
    size_t n = amp ? (size_t)(amp - q) : strlen(q);
    if (n > klen && !strncmp(q, key, klen) && q[klen] == '=') {
      size_t vlen = n - klen - 1;
      if (vlen >= size)
        vlen = size - 1;
      memcpy(out, q + klen + 1, vlen);
      out[vlen] = 0;
      return 1;
    }
    q = amp ? amp + 1 : NULL;
  }
  return 0;
}

/* Splits "/api/v1/namespaces/ns/pods/name/sub?query". */
static int route_of(const char *path, struct route *rt)
{
  char buf[1024], *segs[MAX_SEGS], *p, *q, val[64];
  const char *group = "", *version;
  size_t n = 0, i = 0;
  memset(rt, 0, sizeof(*rt));
  snprintf(buf, sizeof(buf), "%s", path);
  q = strchr(buf, '?');
  if (q)
    *q++ = 0;
  p = buf;
  while (*p && n < MAX_SEGS) {
    char *slash;
    while (*p == '/')
      p++;
    if (!*p)
      break;
    segs[n++] = p;
    slash = strchr(p, '/');
    if (!slash)
      break;
    *slash = 0;
    p = slash + 1;
  }
  if (n >= 2 && !strcmp(segs[0], "api")) {
    version = segs[1];
    i = 2;
  } else if (n >= 3 && !strcmp(segs[0], "apis")) {
    group = segs[1];
    version = segs[2];
    i = 3;
  } else {
    return CARP_ENOTFOUND;
  }
  if (n - i >= 3 && !strcmp(segs[i], "namespaces")) {
    snprintf(rt->ns, sizeof(rt->ns), "%s", segs[i + 1]);
    rt->has_ns = 1;
    i += 2;
  }
  if (i >= n)
    return CARP_ENOTFOUND;
  rt->res = carp__km_res_by_name(group, version, segs[i]);
  if (rt->res == (size_t)-1)
    return CARP_ENOTFOUND;
  if (i + 1 < n) {
    snprintf(rt->name, sizeof(rt->name), "%s", segs[i + 1]);
    rt->has_name = 1;
  }
  if (i + 2 < n) {
    snprintf(rt->sub, sizeof(rt->sub), "%s", segs[i + 2]);
    rt->has_sub = 1;
  }
  if (carp__km_resources[rt->res].namespaced != rt->has_ns && rt->has_name)
    return CARP_ENOTFOUND;
  if (q && query_param(q, "watch", val, sizeof(val)))
    rt->watch = !strcmp(val, "1") || !strcmp(val, "true");
  if (q && query_param(q, "resourceVersion", val, sizeof(val)) && *val) {
    rt->rv = strtoull(val, NULL, 10);
    rt->has_rv = 1;
  }
  return 0;
}

static const char *ns_of(const struct route *rt)
{
  return rt->has_ns ? rt->ns : NULL;
}

/* ---- faults and the write log ---- */

static int fault_matches(const struct km_fault *f, const char *method,
                         const char *path)
{
  return f->times != 0 && (!f->method || !strcmp(f->method, method)) &&
         (!f->path_part || strstr(path, f->path_part));
}

void carp_kubemem_fail(struct carp_kubemem *m, const char *method,
                       const char *path_part, long status, int times)
{
  struct km_fault *f = CARP_NEW(struct km_fault);
  f->method = method ? carp_strdup(method) : NULL;
  f->path_part = path_part ? carp_strdup(path_part) : NULL;
  f->status = status;
  f->times = times;
  f->next = m->faults;
  m->faults = f;
}

void carp_kubemem_clear_faults(struct carp_kubemem *m)
{
  while (m->faults) {
    struct km_fault *f = m->faults;
    m->faults = f->next;
    carp_free(f->method);
    carp_free(f->path_part);
    carp_free(f);
  }
}

static void log_write(struct carp_kubemem *m, const char *method,
                      const char *path, const char *body, size_t len,
                      long status)
{
  struct carp_kubemem_write *w;
  if (m->nwrites == m->capwrites) {
    m->capwrites = m->capwrites ? m->capwrites * 2 : 64;
    m->writes = carp_reallocarray(m->writes, m->capwrites, sizeof(*m->writes));
  }
  w = &m->writes[m->nwrites++];
  w->method = carp_strdup(method);
  w->path = carp_strdup(path);
  w->body = carp_strndup(body ? body : "", body ? len : 0);
  w->status = status;
  w->at_ms = carp_clock_wall_ms(m->clock);
}

size_t carp_kubemem_writes(const struct carp_kubemem *m,
                           const struct carp_kubemem_write **out)
{
  *out = m->writes;
  return m->nwrites;
}

size_t carp_kubemem_count_writes(const struct carp_kubemem *m,
                                 const char *method, const char *path_part,
                                 int ok_only)
{
  size_t i, n = 0;
  for (i = 0; i < m->nwrites; i++) {
    const struct carp_kubemem_write *w = &m->writes[i];
    if ((!method || !strcmp(w->method, method)) &&
        (!path_part || strstr(w->path, path_part)) &&
        (!ok_only || (w->status >= 200 && w->status < 300)))
      n++;
  }
  return n;
}

void carp_kubemem_clear_writes(struct carp_kubemem *m)
{
  size_t i;
  for (i = 0; i < m->nwrites; i++) {
    carp_free(m->writes[i].method);
    carp_free(m->writes[i].path);
    carp_free(m->writes[i].body);
  }
  m->nwrites = 0;
}

/* ---- requests from the client ---- */

static void dispatch(struct carp_kubemem *m, const char *method,
                     const struct route *rt, const struct jv *body,
                     struct km_result *r)
{
  const char *ns = ns_of(rt);
  const char *sub = rt->has_sub ? rt->sub : NULL;
  if (!strcmp(method, "GET")) {
    if (rt->has_name)
      carp__km_get(m, rt->res, ns, rt->name, r);
    else
      carp__km_list(m, rt->res, ns, r);
  } else if (!strcmp(method, "POST")) {
    if (rt->has_name && sub && !strcmp(sub, "eviction") &&
        !strcmp(carp__km_resources[rt->res].resource, "pods"))
      carp__km_evict(m, ns, rt->name, body, r);
    else if (rt->has_name)
      carp__km_status(r, 405, "POST on a named object");
    else
      carp__km_create(m, rt->res, ns, body, 1, r);
  } else if (!rt->has_name) {
    carp__km_status(r, 405, "collection verbs other than list and create");
  } else if (!strcmp(method, "PUT")) {
    carp__km_update(m, rt->res, ns, rt->name, sub, body, r);
  } else if (!strcmp(method, "PATCH")) {
    carp__km_patch(m, rt->res, ns, rt->name, sub, body, 1, r);
  } else if (!strcmp(method, "DELETE")) {
    carp__km_delete(m, rt->res, ns, rt->name, body, r);
  } else {
    carp__km_status(r, 405, "method not allowed");
  }
}

static void on_request(void *ctx, struct carp_kube_op *op, const char *method,
                       const char *path, const char *body, size_t len)
{
  struct carp_kubemem *m = ctx;
  struct km_result r = {0};
  struct route rt;
  struct km_fault *f;
  struct jv *doc = NULL;
  int write = strcmp(method, "GET") != 0;
  for (f = m->faults; f; f = f->next)
    if (fault_matches(f, method, path))
      break;
  if (f) {
    if (f->times > 0)
      f->times--;
    carp__km_status(&r, f->status, "injected failure");
  } else if (route_of(path, &rt)) {
    carp__km_status(&r, 404,
                    "the server could not find the requested "
                    "resource");
  } else if (len && !(doc = jv_parse(body, len, NULL))) {
    carp__km_status(&r, 400, "the body is not valid JSON");
  } else {
    dispatch(m, method, &rt, doc, &r);
  }
  if (write)
    log_write(m, method, path, body, len, r.status);
  jv_free(doc);
  carp__km_queue_reply(m, op, &r);
}

static void on_watch(void *ctx, struct carp_kube_op *op, const char *path)
{
  struct carp_kubemem *m = ctx;
  struct route rt;
  struct km_fault *f;
  struct km_result r = {0};
  for (f = m->faults; f; f = f->next)
    if (fault_matches(f, "GET", path))
      break;
  if (f || route_of(path, &rt) || rt.has_name) {
    if (f && f->times > 0)
      f->times--;
    carp__km_status(&r, f ? f->status : 404,
                    f ? "injected failure" : "not found");
    carp__km_queue_reply(m, op, &r);
    return;
  }
  carp__km_add_watch(m, op, rt.res, ns_of(&rt), rt.has_rv ? rt.rv : m->rv);
}

static void on_cancel(void *ctx, struct carp_kube_op *op)
{
  carp__km_forget_op(ctx, op);
}

/* ---- the test's own calls ---- */

static size_t res_of_kind(const char *kind)
{
  return carp__km_res_by_kind(NULL, kind);
}

static void split_key(const char *key, char *ns, size_t nsz, char *name,
                      size_t namesz)
{
  const char *slash = strchr(key, '/');
  if (slash) {
    snprintf(ns, nsz, "%.*s", (int)(slash - key), key);
    snprintf(name, namesz, "%s", slash + 1);
  } else {
    *ns = 0;
    snprintf(name, namesz, "%s", key);
  }
}

static int result_code(struct km_result *r, char **err)
{
  int rc = 0;
  if (r->status >= 300) {
    struct jv *st = jv_parse(r->body, r->len, NULL);
    rc = carp_kube_error_of(r->status, st ? jv_str(st, "reason") : NULL);
    if (err)
      *err = carp_strdup(st && jv_str(st, "message") ? jv_str(st, "message")
                                                     : "failed");
    jv_free(st);
  }
  carp_free(r->body);
  return rc;
}

int carp_kubemem_apply(struct carp_kubemem *m, const char *json, char **err)
{
  struct jv *doc = jv_parse(json, strlen(json), err);
  struct km_result r = {0};
  const char *kind, *av, *name, *ns;
  size_t res;
  struct km_obj *o;
  if (!doc)
    return CARP_EPARSE;
  kind = jv_str(doc, "kind");
  av = jv_str(doc, "apiVersion");
  res = kind ? carp__km_res_by_kind(av, kind) : (size_t)-1;
  if (res == (size_t)-1) {
    if (err)
      *err = carp_strdup("unknown apiVersion and kind");
    jv_free(doc);
    return CARP_EINVAL;
  }
  name = jv_str(doc, "metadata.name");
  ns = carp__km_resources[res].namespaced
           ? (jv_str(doc, "metadata.namespace")
                  ? jv_str(doc, "metadata.namespace")
                  : "default")
           : NULL;
  o = name ? carp__km_find(m, res, ns, name) : NULL;
  if (o)
    carp__km_replace(m, res, ns, name, doc, &r);
  else
    carp__km_create(m, res, ns, doc, 0, &r);
  jv_free(doc);
  return result_code(&r, err);
}

int carp_kubemem_patch(struct carp_kubemem *m, const char *kind,
                       const char *key, const char *json, char **err)
{
  char ns[256], name[256];
  struct km_result r = {0};
  struct jv *patch;
  size_t res = res_of_kind(kind);
  if (res == (size_t)-1)
    return CARP_EINVAL;
  if (!(patch = jv_parse(json, strlen(json), err)))
    return CARP_EPARSE;
  split_key(key, ns, sizeof(ns), name, sizeof(name));
  carp__km_patch(m, res, *ns ? ns : NULL, name, NULL, patch, 0, &r);
  jv_free(patch);
  return result_code(&r, err);
}

int carp_kubemem_delete(struct carp_kubemem *m, const char *kind,
                        const char *key)
{
  char ns[256], name[256];
  struct km_result r = {0};
  size_t res = res_of_kind(kind);
  if (res == (size_t)-1)
    return CARP_EINVAL;
  split_key(key, ns, sizeof(ns), name, sizeof(name));
  carp__km_delete(m, res, *ns ? ns : NULL, name, NULL, &r);
  return result_code(&r, NULL);
}

char *carp_kubemem_get(const struct carp_kubemem *m, const char *kind,
                       const char *key)
{
  char ns[256], name[256];
  struct km_obj *o;
  size_t res = res_of_kind(kind);
  if (res == (size_t)-1)
    return NULL;
  split_key(key, ns, sizeof(ns), name, sizeof(name));
  o = carp__km_find(m, res, *ns ? ns : NULL, name);
  return o ? jv_text(o->obj, NULL) : NULL;
}

size_t carp_kubemem_count(const struct carp_kubemem *m, const char *kind)
{
  size_t res = res_of_kind(kind);
  return res == (size_t)-1 ? 0 : m->objs[res].len;
}

uint64_t carp_kubemem_resource_version(const struct carp_kubemem *m)
{
  return m->rv;
}

/* ---- life ---- */

int carp_kubemem_new(struct carp_clock *clock, struct carp_kubemem **out)
{
  struct carp_kubemem *m;
  size_t i;
  if (!clock || !out)
    return CARP_EINVAL;
  m = CARP_NEW(struct carp_kubemem);
  m->clock = clock;
  m->objs = carp_calloc(carp__km_nresources, sizeof(*m->objs));
  for (i = 0; i < carp__km_nresources; i++)
    carp_map_init(&m->objs[i]);
  m->backend.request = on_request;
  m->backend.watch = on_watch;
  m->backend.cancel = on_cancel;
  m->backend.ctx = m;
  carp_timer_init(clock, &m->tick);
  m->tick.data = m;
  *out = m;
  return 0;
}

const struct carp_kube_backend *carp_kubemem_backend(struct carp_kubemem *m)
{
  return &m->backend;
}

static void on_tick_closed(struct carp_timer *t)
{
  struct carp_kubemem *m = t->data;
  void (*cb)(void *) = m->close_cb;
  void *arg = m->close_arg;
  struct carp_map_iter it;
  size_t i;
  void *v;
  for (i = 0; i < carp__km_nresources; i++) {
    carp_map_iter_init(&it);
    while (carp_map_next(&m->objs[i], &it, NULL, NULL, &v)) {
      struct km_obj *o = v;
      jv_free(o->obj);
      carp_free(o->key);
      carp_free(o);
    }
    carp_map_free(&m->objs[i]);
  }
  carp_free(m->objs);
  for (i = 0; i < m->nhist; i++) {
    carp_free(m->hist[i].ns);
    carp_free(m->hist[i].json);
  }
  carp_free(m->hist);
  while (m->replies) {
    struct km_reply *r = m->replies;
    m->replies = r->next;
    carp_free(r->body);
    carp_free(r);
  }
  while (m->watches) {
    struct km_watch *w = m->watches;
    m->watches = w->next;
    carp_free(w->ns);
    carp_free(w);
  }
  carp_kubemem_clear_faults(m);
  carp_kubemem_clear_writes(m);
  carp_free(m->writes);
  carp_free(m);
  if (cb)
    cb(arg);
}

void carp_kubemem_close(struct carp_kubemem *m, void (*cb)(void *arg),
                        void *arg)
{
  m->close_cb = cb;
  m->close_arg = arg;
  carp_timer_close(&m->tick, on_tick_closed);
}
