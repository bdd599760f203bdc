/* provider.c: the provider-independent half of include/carpenter/provider.h.
 *
 * Controllers call carp_provider_*(), never the vtable directly, so that
 * every call is measured the same way whatever the provider: the duration
 * of each call (from start to callback, for asynchronous ones) goes into
 * karpenter_cloudprovider_duration_seconds and each failure into
 * karpenter_cloudprovider_errors_total with Karpenter's error type names,
 * as Karpenter's metrics decorator (pkg/cloudprovider/metrics) does. The
 * wrapper sits between the caller's callback and the provider's: it keeps
 * the caller's callback and argument in a small record freed when the
 * call ends. Also here: typed-error helpers, providerID and annotation
 * parsing, and requirement matching for instance-type labels. */
#include "carpenter/provider.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/object.h"
#include "carpenter/scheduling.h"
#include "carpenter/timeutil.h"

struct call {
  struct carp_provider *p;
  const char *method;
  char controller[64];
  uint64_t start_ms;
  union {
    carp_provider_create_cb create;
    carp_provider_done_cb done;
    carp_provider_get_cb get;
    carp_provider_list_cb list;
  } cb;
  void *arg;
};

void carp_provider_set_metrics(struct carp_provider *p,
                               struct carp_metrics *reg)
{
  if (!p || !reg)
    return;
  p->m_duration = carp_metrics_histogram(
      reg, "karpenter_cloudprovider_duration_seconds",
      "Duration of cloud provider method calls. Labeled by the controller, "
      "method name and provider.",
      CARP_LABELS("controller", "method", "provider"),
      carp_metrics_duration_buckets, carp_metrics_duration_buckets_len);
  p->m_errors = carp_metrics_counter(
      reg, "karpenter_cloudprovider_errors_total",
      "Total number of errors returned from CloudProvider calls.",
      CARP_LABELS("controller", "method", "provider", "error"));
}

static void record(struct carp_provider *p, const char *controller,
                   const char *method, uint64_t start_ms, int status)
{
  const char *name = carp_provider_name(p);
  if (p->m_duration) {
    double secs = (double)(carp_time_mono_ms() - start_ms) / 1000.0;
    carp_metric_observe(p->m_duration, CARP_VALUES(controller, method, name),
                        secs);
  }
  if (status != 0 && status != CARP_ECANCELED && p->m_errors)
    carp_metric_add(p->m_errors,
                    CARP_VALUES(controller, method, name,
                                carp_provider_error_label(status)),
                    1);
}

static struct call *call_new(struct carp_provider *p, const char *method,
                             const char *controller, void *arg)
{
  struct call *c = CARP_NEW(struct call);
  c->p = p;
  c->method = method;
  snprintf(c->controller, sizeof(c->controller), "%s",
           controller ? controller : "");
  c->start_ms = carp_time_mono_ms();
  c->arg = arg;
  return c;
}

static void on_create(int status, const struct carp_provider_instance *inst,
                      const struct carp_provider_error *err, void *arg)
{
  struct call *c = arg;
  record(c->p, c->controller, c->method, c->start_ms, status);
  c->cb.create(status, inst, err, c->arg);
  carp_free(c);
}

static void on_done(int status, const struct carp_provider_error *err,
                    void *arg)
{
  struct call *c = arg;
  /* Delete reports the end of the VM as NotFound; Karpenter counts it. */
  record(c->p, c->controller, c->method, c->start_ms, status);
  c->cb.done(status, err, c->arg);
  carp_free(c);
}

static void on_get(int status, const struct carp_provider_instance *inst,
                   const struct carp_provider_error *err, void *arg)
{
  struct call *c = arg;
  record(c->p, c->controller, c->method, c->start_ms, status);
  c->cb.get(status, inst, err, c->arg);
  carp_free(c);
}

static void on_list(int status, const struct carp_provider_instance *v,
                    size_t n, const struct carp_provider_error *err, void *arg)
{
  struct call *c = arg;
  record(c->p, c->controller, c->method, c->start_ms, status);
  c->cb.list(status, v, n, err, c->arg);
  carp_free(c);
}

int carp_provider_create(struct carp_provider *p,
                         const struct carp_provider_create_req *req,
                         carp_provider_create_cb cb, void *arg,
                         struct carp_provider_op **out)
{
  struct call *c;
  int rc;
  if (!p || !req || !cb)
    return CARP_EINVAL;
  c = call_new(p, "Create", req->controller, arg);
  c->cb.create = cb;
  rc = p->ops->create(p, req, on_create, c, out);
  if (rc) {
    record(p, c->controller, c->method, c->start_ms, rc);
    carp_free(c);
  }
  return rc;
}

int carp_provider_delete(struct carp_provider *p,
                         const struct carp_provider_delete_req *req,
                         carp_provider_done_cb cb, void *arg,
                         struct carp_provider_op **out)
{
  struct call *c;
  int rc;
  if (!p || !req || !cb)
    return CARP_EINVAL;
  c = call_new(p, "Delete", req->controller, arg);
  c->cb.done = cb;
  rc = p->ops->del(p, req, on_done, c, out);
  if (rc) {
    record(p, c->controller, c->method, c->start_ms, rc);
    carp_free(c);
  }
  return rc;
}

int carp_provider_get(struct carp_provider *p, const char *controller,
                      const char *provider_id, carp_provider_get_cb cb,
                      void *arg, struct carp_provider_op **out)
{
  struct call *c;
  int rc;
  if (!p || !provider_id || !cb)
    return CARP_EINVAL;
  c = call_new(p, "Get", controller, arg);
  c->cb.get = cb;
  rc = p->ops->get(p, provider_id, on_get, c, out);
  if (rc) {
    record(p, c->controller, c->method, c->start_ms, rc);
    carp_free(c);
  }
  return rc;
}

int carp_provider_list(struct carp_provider *p, const char *controller,
                       carp_provider_list_cb cb, void *arg,
                       struct carp_provider_op **out)
{
  struct call *c;
  int rc;
  if (!p || !cb)
    return CARP_EINVAL;
  c = call_new(p, "List", controller, arg);
  c->cb.list = cb;
  rc = p->ops->list(p, on_list, c, out);
  if (rc) {
    record(p, c->controller, c->method, c->start_ms, rc);
    carp_free(c);
  }
  return rc;
}

int carp_provider_instance_types(struct carp_provider *p,
                                 const char *controller,
                                 const struct carp_nodeclass *nc,
                                 struct carp_provider_instance_types *out)
{
  uint64_t start = carp_time_mono_ms();
  int rc;
  if (!p || !nc || !out)
    return CARP_EINVAL;
  rc = p->ops->instance_types(p, nc, out);
  record(p, controller ? controller : "", "GetInstanceTypes", start, rc);
  return rc;
}

int carp_provider_is_drifted(struct carp_provider *p, const char *controller,
                             const struct carp_nodeclaim *claim,
                             const struct carp_nodeclass *nc,
                             const char **reason)
{
  uint64_t start = carp_time_mono_ms();
  int rc;
  if (!p || !claim || !nc || !reason)
    return CARP_EINVAL;
  *reason = "";
  rc = p->ops->is_drifted(p, claim, nc, reason);
  record(p, controller ? controller : "", "IsDrifted", start, rc);
  return rc;
}

int carp_provider_zone_status(struct carp_provider *p, const char *region,
                              const char *zone,
                              struct carp_provider_zone_status *out)
{
  int rc;
  if (!out)
    return CARP_EINVAL;
  memset(out, 0, sizeof(*out));
  if (!p || !region || !zone)
    return CARP_EINVAL;
  if (!p->ops->zone_status)
    return 0;
  rc = p->ops->zone_status(p, region, zone, out);
  if (rc || out->state == CARP_ZONE_UNKNOWN)
    out->since_ms = 0;
  if (rc)
    out->state = CARP_ZONE_UNKNOWN;
  return rc;
}

const char *carp_zone_state_name(enum carp_zone_state s)
{
  switch (s) {
  case CARP_ZONE_READY:
    return "Ready";
  case CARP_ZONE_MAINTENANCE:
    return "Maintenance";
  case CARP_ZONE_OFFLINE:
    return "Offline";
  case CARP_ZONE_UNKNOWN:
    break;
  }
  return "Unknown";
}

void carp_provider_cancel(struct carp_provider *p, struct carp_provider_op *op)
{
  if (p && op)
    p->ops->cancel(p, op);
}

void carp_provider_close(struct carp_provider *p, void (*cb)(void *arg),
                         void *arg)
{
  if (p)
    p->ops->close(p, cb, arg);
}

const char *carp_provider_name(const struct carp_provider *p)
{
  return p && p->ops && p->ops->name ? p->ops->name : "";
}

void carp_provider_instance_types_free(struct carp_provider_instance_types *t)
{
  size_t i;
  if (!t)
    return;
  for (i = 0; i < t->n; i++) {
    carp_free(t->v[i].offerings);
    carp_resources_cleanup(&t->v[i].capacity);
    carp_resources_cleanup(&t->v[i].allocatable);
  }
  carp_free(t->v);
  t->v = NULL;
  t->n = 0;
}

/* --- errors ------------------------------------------------------------- */

int carp_provider_error_transient(int err)
{
  switch (err) {
  case CARP_ETIMEDOUT:
  case CARP_EAGAIN:
  case CARP_EIO:
  case CARP_ECONNECT:
  case CARP_EUNAVAIL:
  case CARP_ETOOMANY:
  case CARP_ECONFLICT:
  case CARP_EHTTP:
  case CARP_ENOTLEADER:
    return 1;
  default:
    return 0;
  }
}

const char *carp_provider_error_label(int err)
{
  switch (err) {
  case CARP_ENOTFOUND:
    return "NodeClaimNotFoundError";
  case CARP_EINSUFFICIENT_CAPACITY:
    return "InsufficientCapacityError";
  case CARP_ENODECLASS_NOT_READY:
    return "NodeClassNotReadyError";
  default:
    return "";
  }
}

void carp_provider_error_set(struct carp_provider_error *e, int code,
                             const char *reason, const char *fmt, ...)
{
  va_list ap;
  if (!e)
    return;
  e->code = code;
  snprintf(e->reason, sizeof(e->reason), "%s", reason ? reason : "");
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof(e->message), fmt, ap);
  va_end(ap);
}

/* --- identifiers -------------------------------------------------------- */

static int parse_vmid(const char *s, int64_t *out)
{
  char *end;
  long long v;
  if (!*s || *s < '0' || *s > '9')
    return CARP_EINVAL;
  v = strtoll(s, &end, 10);
  if (*end || v < 100 || v > 999999999LL)
    return CARP_EINVAL;
  *out = v;
  return 0;
}

int carp_provider_id_parse(const char *provider_id, char *region,
                           size_t region_size, int64_t *vmid)
{
  static const char prefix[] = "proxmox://";
  const char *r, *slash;
  size_t rlen;
  if (!provider_id || strncmp(provider_id, prefix, sizeof(prefix) - 1) != 0)
    return CARP_EINVAL;
  r = provider_id + sizeof(prefix) - 1;
  slash = strchr(r, '/');
  if (!slash || slash == r)
    return CARP_EINVAL;
  rlen = (size_t)(slash - r);
  if (rlen >= region_size || strchr(slash + 1, '/'))
    return CARP_EINVAL;
  if (parse_vmid(slash + 1, vmid))
    return CARP_EINVAL;
  memcpy(region, r, rlen);
  region[rlen] = '\0';
  return 0;
}

void carp_provider_id_format(const char *region, int64_t vmid, char *out,
                             size_t size)
{
  snprintf(out, size, "proxmox://%s/%" PRId64, region, vmid);
}

int carp_provider_vm_annotation_parse(const char *value, char *region,
                                      size_t region_size, char *zone,
                                      size_t zone_size, int64_t *vmid)
{
  const char *s1, *s2;
  size_t rlen, zlen;
  if (!value)
    return CARP_EINVAL;
  s1 = strchr(value, '/');
  if (!s1)
    return CARP_EINVAL;
  s2 = strchr(s1 + 1, '/');
  if (!s2 || strchr(s2 + 1, '/'))
    return CARP_EINVAL;
  rlen = (size_t)(s1 - value);
  zlen = (size_t)(s2 - s1 - 1);
  if (!rlen || !zlen || rlen >= region_size || zlen >= zone_size)
    return CARP_EINVAL;
  if (parse_vmid(s2 + 1, vmid))
    return CARP_EINVAL;
  memcpy(region, value, rlen);
  region[rlen] = '\0';
  memcpy(zone, s1 + 1, zlen);
  zone[zlen] = '\0';
  return 0;
}

int carp_provider_claim_zone(const struct carp_nodeclaim *nc, char *region,
                             size_t region_size, char *zone, size_t zone_size)
{
  const char *r = carp_kvset_get(nc->meta.labels, CARP_LABEL_REGION);
  const char *z = carp_kvset_get(nc->meta.labels, CARP_LABEL_ZONE);
  const char *ann = carp_kvset_get(nc->meta.annotations, CARP_ANN_VM);
  int64_t vmid;
  if (z && (r || (nc->status.provider_id &&
                  !carp_provider_id_parse(nc->status.provider_id, region,
                                          region_size, &vmid)))) {
    if (r)
      snprintf(region, region_size, "%s", r);
    snprintf(zone, zone_size, "%s", z);
    return 1;
  }
  return ann && !carp_provider_vm_annotation_parse(ann, region, region_size,
                                                   zone, zone_size, &vmid);
}

/* --- requirements ------------------------------------------------------- */

static int parse_int(const char *s, long long *out)
{
  char *end;
  if (!s || !*s)
    return -1;
  *out = strtoll(s, &end, 10);
  return *end ? -1 : 0;
}

static int allows_one(const struct carp_requirement *r, const char *value)
{
  uint32_t i;
  long long a, b;
  switch (r->op) {
  case CARP_OP_IN:
    if (!value)
      return 0;
    for (i = 0; i < r->nvalues; i++)
      if (strcmp(r->values[i], value) == 0)
        return 1;
    return 0;
  case CARP_OP_NOT_IN:
    if (!value)
      return 1;
    for (i = 0; i < r->nvalues; i++)
      if (strcmp(r->values[i], value) == 0)
        return 0;
    return 1;
  case CARP_OP_EXISTS:
    return value != NULL;
  case CARP_OP_DOES_NOT_EXIST:
    return value == NULL;
  case CARP_OP_GT:
  case CARP_OP_LT:
  case CARP_OP_GTE:
  case CARP_OP_LTE:
    if (!value || r->nvalues != 1 || parse_int(value, &a) ||
        parse_int(r->values[0], &b))
      return 0;
    if (r->op == CARP_OP_GT)
      return a > b;
    if (r->op == CARP_OP_LT)
      return a < b;
    if (r->op == CARP_OP_GTE)
      return a >= b;
    return a <= b;
  }
  return 0;
}

int carp_requirements_allow(const struct carp_requirement *reqs, size_t n,
                            const char *key, const char *value)
{
  size_t i;
  for (i = 0; i < n; i++) {
    if (!reqs[i].key || strcmp(reqs[i].key, key) != 0)
      continue;
    if (!allows_one(&reqs[i], value))
      return 0;
  }
  return 1;
}
