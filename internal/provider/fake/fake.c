/* fake.c: an in-memory provider for controller unit tests, after
 * Karpenter's fake and KWOK providers: no Proxmox, no network, just a
 * table of instances and a few knobs (delays, failures, per-zone capacity,
 * ICE, drift) so the lifecycle, termination, GC and disruption controllers
 * can be tested against the same vtable the Proxmox provider implements.
 *
 * It keeps the contract's shape: create calls the reserve hook before
 * "cloning" and honours the NodeClaim's carpenter.dev/vm annotation
 * (adoption: the same NodeClaim UID gets the same instance back), picks the
 * cheapest configured type and the first zone that its requirements allow
 * and that has room, answers InsufficientCapacity otherwise, and delete
 * answers NotFound once the instance is gone. Zones can be put in
 * maintenance or offline, with the Proxmox provider's consequences
 * (placement, offerings, drift, delete). Every asynchronous call ends
 * from a timer, never inside the start function. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/clock.h"
#include "carpenter/error.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/object.h"
#include "carpenter/provider.h"
#include "carpenter/scheduling.h"

#define MAX_ZONES 16

static const struct carp_fake_instance_type default_types[] = {
    {"c1.1VCPU-2GB", 1, 2LL << 30, 0.038},
    {"c1.2VCPU-4GB", 2, 4LL << 30, 0.076},
    {"s1.2VCPU-8GB", 2, 8LL << 30, 0.092},
    {"c1.4VCPU-8GB", 4, 8LL << 30, 0.152},
    {"m1.4VCPU-32GB", 4, 32LL << 30, 0.248},
};

struct fake_zone {
  char name[64];
  int64_t cpus, memory;
  enum carp_zone_state state;
  int64_t since_ms; /* wall ms on the provider's clock */
};

struct fake_vm {
  struct carp_provider_instance inst;
  struct fake_vm *next;
};

struct fake_ice {
  char type[96];
  char zone[64];
  struct fake_ice *next;
};

struct fake_fail {
  int n;
  int err;
  char reason[40];
};

enum { M_CREATE, M_DELETE, M_GET, M_LIST, M_N };
static const char *const method_names[M_N] = {"create", "delete", "get",
                                              "list"};

struct fake_op;

struct fake {
  struct carp_provider base;
  uv_loop_t *loop;
  struct carp_clock *clock;
  struct carp_clock *own_clock;
  char region[64];
  struct fake_zone zones[MAX_ZONES];
  size_t nzones;
  struct carp_fake_instance_type *types;
  size_t ntypes;
  uint64_t delay[M_N];
  struct fake_vm *vms;
  struct fake_ice *ice;
  struct fake_fail fail[M_N];
  size_t calls[M_N];
  size_t type_calls; /* instance_types: answered at once, not an op */
  char drift_claim[128];
  char drift_reason[40];
  int drift_all;
  int64_t next_vmid;
  struct fake_op *ops;
  int closing;
  void (*close_cb)(void *);
  void *close_arg;
};

struct fake_op {
  struct fake *f;
  int method;
  struct carp_timer timer;
  int canceled;
  int stage; /* create: 0 pick, 1 waiting for reserve, 2 done */
  struct fake_op *next;
  /* request */
  const struct carp_nodeclaim *claim;
  const struct carp_nodeclass *nc;
  carp_provider_reserve_fn reserve;
  void *reserve_arg;
  char provider_id[128];
  char uid[64];
  union {
    carp_provider_create_cb create;
    carp_provider_done_cb done;
    carp_provider_get_cb get;
    carp_provider_list_cb list;
  } cb;
  void *arg;
  /* create state */
  struct carp_provider_instance inst;
  int reserve_status;
  struct fake_token *tok; /* the pending reserve call, or NULL */
};

/* Outlives the op when the reserve hook answers after a cancel. */
struct fake_token {
  struct fake_op *op;
};

static struct fake *F(struct carp_provider *p)
{
  return carp_container_of(p, struct fake, base);
}

static struct fake_vm *vm_find(struct fake *f, const char *provider_id)
{
  struct fake_vm *v;
  for (v = f->vms; v; v = v->next)
    if (!strcmp(v->inst.provider_id, provider_id))
      return v;
  return NULL;
}

static int zone_used(struct fake *f, const char *zone, int64_t *cpu,
                     int64_t *mem)
{
  struct fake_vm *v;
  int n = 0;
  *cpu = *mem = 0;
  for (v = f->vms; v; v = v->next)
    if (!strcmp(v->inst.zone, zone)) {
      *cpu += v->inst.cpu;
      *mem += v->inst.memory;
      n++;
    }
  return n;
}

static int ice_has(struct fake *f, const char *type, const char *zone)
{
  struct fake_ice *i;
  for (i = f->ice; i; i = i->next)
    if (!strcmp(i->type, type) && !strcmp(i->zone, zone))
      return 1;
  return 0;
}

static struct fake_zone *zone_find(struct fake *f, const char *name)
{
  size_t i;
  for (i = 0; name && i < f->nzones; i++)
    if (!strcmp(f->zones[i].name, name))
      return &f->zones[i];
  return NULL;
}

static int fits(struct fake *f, const struct fake_zone *z,
                const struct carp_fake_instance_type *t)
{
  int64_t cpu, mem;
  if (z->state != CARP_ZONE_READY || ice_has(f, t->name, z->name))
    return 0;
  zone_used(f, z->name, &cpu, &mem);
  if (z->cpus && cpu + t->cpu > z->cpus)
    return 0;
  if (z->memory && mem + t->memory > z->memory)
    return 0;
  return 1;
}

/* --- op plumbing ------------------------------------------------------------
 */

static void op_closed(struct carp_timer *h)
{
  struct fake_op *op = h->data;
  struct fake *f = op->f;
  carp_free(op);
  if (f->closing && !f->ops) {
    void (*cb)(void *) = f->close_cb;
    void *arg = f->close_arg;
    size_t i;
    while (f->vms) {
      struct fake_vm *v = f->vms;
      f->vms = v->next;
      carp_free(v);
    }
    while (f->ice) {
      struct fake_ice *x = f->ice;
      f->ice = x->next;
      carp_free(x);
    }
    for (i = 0; i < f->ntypes; i++)
      carp_free((char *)f->types[i].name);
    carp_free(f->types);
    carp_clock_free(f->own_clock);
    carp_free(f);
    if (cb)
      cb(arg);
  }
}

static void op_end(struct fake_op *op)
{
  struct fake *f = op->f;
  struct fake_op **pp;
  for (pp = &f->ops; *pp; pp = &(*pp)->next)
    if (*pp == op) {
      *pp = op->next;
      break;
    }
  if (op->tok) {
    op->tok->op = NULL; /* a late reserve answer finds nothing */
    op->tok = NULL;
  }
  carp_timer_close(&op->timer, op_closed);
}

static int take_failure(struct fake *f, int m, struct carp_provider_error *e)
{
  if (f->fail[m].n <= 0)
    return 0;
  f->fail[m].n--;
  carp_provider_error_set(e, f->fail[m].err, f->fail[m].reason,
                          "injected %s failure", method_names[m]);
  return f->fail[m].err;
}

static void finish(struct fake_op *op, int status,
                   struct carp_provider_error *e)
{
  struct fake *f = op->f;
  struct carp_provider_instance *list = NULL;
  size_t n = 0;
  struct fake_vm *v;
  struct carp_provider_error none;
  memset(&none, 0, sizeof(none));
  switch (op->method) {
  case M_CREATE:
    op->cb.create(status, status ? NULL : &op->inst, status ? e : NULL,
                  op->arg);
    break;
  case M_DELETE:
    op->cb.done(status, status ? e : NULL, op->arg);
    break;
  case M_GET:
    op->cb.get(status, status ? NULL : &op->inst, status ? e : NULL, op->arg);
    break;
  case M_LIST:
    if (!status) {
      for (v = f->vms; v; v = v->next)
        n++;
      list = carp_calloc(n ? n : 1, sizeof(*list));
      n = 0;
      for (v = f->vms; v; v = v->next)
        list[n++] = v->inst;
    }
    op->cb.list(status, list, n, status ? e : NULL, op->arg);
    carp_free(list);
    break;
  }
  op_end(op);
}

/* --- create
 * -------------------------------------------------------------------- */

static int allowed(const struct carp_nodeclaim *c, const char *key,
                   const char *v)
{
  return carp_requirements_allow(c->spec.requirements, c->spec.nrequirements,
                                 key, v);
}

static int pick(struct fake *f, struct fake_op *op,
                struct carp_provider_error *e)
{
  const struct carp_nodeclaim *c = op->claim;
  const struct carp_fake_instance_type *best = NULL;
  const struct fake_zone *bz = NULL;
  size_t i, z;
  for (i = 0; i < f->ntypes; i++) {
    const struct carp_fake_instance_type *t = &f->types[i];
    char cpu[16];
    snprintf(cpu, sizeof(cpu), "%d", (int)t->cpu);
    if (!allowed(c, CARP_LABEL_INSTANCE_TYPE, t->name) ||
        !allowed(c, CARP_LABEL_INSTANCE_CPU, cpu) ||
        !allowed(c, CARP_LABEL_REGION, f->region) ||
        !allowed(c, CARP_LABEL_CAPACITY_TYPE, CARP_CAPACITY_TYPE_ON_DEMAND) ||
        c->spec.requests.cpu > (int64_t)t->cpu * 1000 ||
        c->spec.requests.memory > t->memory)
      continue;
    if (best && best->price <= t->price)
      continue;
    for (z = 0; z < f->nzones; z++)
      if (allowed(c, CARP_LABEL_ZONE, f->zones[z].name) &&
          fits(f, &f->zones[z], t))
        break;
    if (z < f->nzones) {
      best = t;
      bz = &f->zones[z];
    }
  }
  if (!best) {
    carp_provider_error_set(
        e, CARP_EINSUFFICIENT_CAPACITY, CARP_REASON_INSUFFICIENT_CAPACITY,
        "no zone has room for the NodeClaim's instance types");
    return CARP_EINSUFFICIENT_CAPACITY;
  }
  memset(&op->inst, 0, sizeof(op->inst));
  op->inst.vmid = f->next_vmid++;
  carp_provider_id_format(f->region, op->inst.vmid, op->inst.provider_id,
                          sizeof(op->inst.provider_id));
  snprintf(op->inst.region, sizeof(op->inst.region), "%s", f->region);
  snprintf(op->inst.zone, sizeof(op->inst.zone), "%s", bz->name);
  snprintf(op->inst.name, sizeof(op->inst.name), "%s",
           c->meta.name ? c->meta.name : "");
  snprintf(op->inst.status, sizeof(op->inst.status), "running");
  snprintf(op->inst.instance_type, sizeof(op->inst.instance_type), "%s",
           best->name);
  op->inst.cpu = best->cpu;
  op->inst.memory = best->memory;
  snprintf(op->inst.capacity_type, sizeof(op->inst.capacity_type), "%s",
           CARP_CAPACITY_TYPE_ON_DEMAND);
  snprintf(op->inst.image_id, sizeof(op->inst.image_id), "%s/9000", f->region);
  snprintf(op->inst.nodeclaim, sizeof(op->inst.nodeclaim), "%s",
           c->meta.name ? c->meta.name : "");
  snprintf(op->inst.nodeclaim_uid, sizeof(op->inst.nodeclaim_uid), "%s",
           c->meta.uid ? c->meta.uid : "");
  op->inst.capacity.cpu = (int64_t)best->cpu * 1000;
  op->inst.capacity.memory = best->memory;
  op->inst.capacity.pods = 110;
  op->inst.allocatable = op->inst.capacity;
  op->inst.allocatable.memory -= 100LL << 20;
  return 0;
}

static void on_timer(struct carp_timer *t);

static void on_reserved(void *token, int status)
{
  struct fake_token *t = token;
  struct fake_op *op = t->op;
  carp_free(t);
  if (!op)
    return;
  op->tok = NULL;
  op->reserve_status = status;
  op->stage = 2;
  carp_timer_start(&op->timer, on_timer, op->f->delay[M_CREATE], 0);
}

static void create_step(struct fake_op *op)
{
  struct fake *f = op->f;
  struct carp_provider_error e;
  const char *ann;
  memset(&e, 0, sizeof(e));
  if (op->stage == 0) {
    if (take_failure(f, M_CREATE, &e)) {
      finish(op, e.code, &e);
      return;
    }
    ann = carp_kvset_get(op->claim->meta.annotations, CARP_ANN_VM);
    if (ann) {
      char region[64], zone[64], pid[128];
      int64_t vmid;
      if (!carp_provider_vm_annotation_parse(ann, region, sizeof(region), zone,
                                             sizeof(zone), &vmid)) {
        struct fake_vm *v;
        carp_provider_id_format(region, vmid, pid, sizeof(pid));
        v = vm_find(f, pid);
        if (v && !strcmp(v->inst.nodeclaim_uid, op->claim->meta.uid)) {
          op->inst = v->inst; /* adopted */
          finish(op, 0, NULL);
          return;
        }
      }
    }
    if (pick(f, op, &e)) {
      finish(op, e.code, &e);
      return;
    }
    {
      struct carp_provider_reservation r;
      char value[256];
      snprintf(value, sizeof(value), "%s/%s/%" PRId64, op->inst.region,
               op->inst.zone, op->inst.vmid);
      r.region = op->inst.region;
      r.zone = op->inst.zone;
      r.vmid = op->inst.vmid;
      r.value = value;
      r.inst = &op->inst;
      op->stage = 1;
      op->tok = CARP_NEW(struct fake_token);
      op->tok->op = op;
      op->reserve(op->claim, &r, on_reserved, op->tok, op->reserve_arg);
    }
    return;
  }
  if (op->reserve_status) {
    carp_provider_error_set(&e, op->reserve_status, CARP_REASON_LAUNCH_FAILED,
                            "reserve hook failed");
    finish(op, e.code, &e);
    return;
  }
  {
    struct fake_vm *v = CARP_NEW(struct fake_vm);
    v->inst = op->inst;
    v->next = f->vms;
    f->vms = v;
  }
  finish(op, 0, NULL);
}

static void on_timer(struct carp_timer *t)
{
  struct fake_op *op = t->data;
  struct fake *f = op->f;
  struct carp_provider_error e;
  struct fake_vm *v, **pv;
  memset(&e, 0, sizeof(e));
  if (op->canceled) {
    carp_provider_error_set(&e, CARP_ECANCELED, "", "cancelled");
    finish(op, CARP_ECANCELED, &e);
    return;
  }
  switch (op->method) {
  case M_CREATE:
    create_step(op);
    return;
  case M_DELETE:
    if (take_failure(f, M_DELETE, &e)) {
      finish(op, e.code, &e);
      return;
    }
    for (pv = &f->vms; *pv; pv = &(*pv)->next)
      if (!strcmp((*pv)->inst.provider_id, op->provider_id) &&
          (!op->uid[0] || !strcmp((*pv)->inst.nodeclaim_uid, op->uid))) {
        const struct fake_zone *z = zone_find(f, (*pv)->inst.zone);
        if (z && z->state == CARP_ZONE_OFFLINE) {
          carp_provider_error_set(&e, CARP_ENOTFOUND, CARP_REASON_HOST_OFFLINE,
                                  "zone %s is offline", z->name);
          finish(op, CARP_ENOTFOUND, &e);
          return;
        }
        v = *pv;
        *pv = v->next;
        carp_free(v);
        finish(op, 0, NULL);
        return;
      }
    carp_provider_error_set(&e, CARP_ENOTFOUND, "", "instance not found");
    finish(op, CARP_ENOTFOUND, &e);
    return;
  case M_GET:
    if (take_failure(f, M_GET, &e)) {
      finish(op, e.code, &e);
      return;
    }
    v = vm_find(f, op->provider_id);
    if (!v) {
      carp_provider_error_set(&e, CARP_ENOTFOUND, "", "instance not found");
      finish(op, CARP_ENOTFOUND, &e);
      return;
    }
    op->inst = v->inst;
    finish(op, 0, NULL);
    return;
  case M_LIST:
    if (take_failure(f, M_LIST, &e)) {
      finish(op, e.code, &e);
      return;
    }
    finish(op, 0, NULL);
    return;
  }
}

static struct fake_op *op_new(struct fake *f, int method, void *arg)
{
  struct fake_op *op = CARP_NEW(struct fake_op);
  op->f = f;
  op->method = method;
  op->arg = arg;
  carp_timer_init(f->clock, &op->timer);
  op->timer.data = op;
  op->next = f->ops;
  f->ops = op;
  f->calls[method]++;
  carp_timer_start(&op->timer, on_timer, f->delay[method], 0);
  return op;
}

/* --- the vtable
 * ------------------------------------------------------------------ */

static int v_create(struct carp_provider *p,
                    const struct carp_provider_create_req *req,
                    carp_provider_create_cb cb, void *arg,
                    struct carp_provider_op **out)
{
  struct fake *f = F(p);
  struct fake_op *op;
  if (!req->nodeclaim || !req->reserve || !cb)
    return CARP_EINVAL;
  if (f->closing)
    return CARP_ECANCELED;
  op = op_new(f, M_CREATE, arg);
  op->claim = req->nodeclaim;
  op->nc = req->nodeclass;
  op->reserve = req->reserve;
  op->reserve_arg = req->reserve_arg;
  op->cb.create = cb;
  carp_timer_start(&op->timer, on_timer, 0,
                   0); /* pick now, finish after delay */
  if (out)
    *out = (struct carp_provider_op *)op;
  return 0;
}

static int v_delete(struct carp_provider *p,
                    const struct carp_provider_delete_req *req,
                    carp_provider_done_cb cb, void *arg,
                    struct carp_provider_op **out)
{
  struct fake *f = F(p);
  struct fake_op *op;
  char region[64];
  int64_t vmid;
  if (carp_provider_id_parse(req->provider_id, region, sizeof(region), &vmid))
    return CARP_EINVAL;
  if (f->closing)
    return CARP_ECANCELED;
  op = op_new(f, M_DELETE, arg);
  snprintf(op->provider_id, sizeof(op->provider_id), "%s", req->provider_id);
  snprintf(op->uid, sizeof(op->uid), "%s",
           req->nodeclaim_uid ? req->nodeclaim_uid : "");
  op->cb.done = cb;
  if (out)
    *out = (struct carp_provider_op *)op;
  return 0;
}

static int v_get(struct carp_provider *p, const char *provider_id,
                 carp_provider_get_cb cb, void *arg,
                 struct carp_provider_op **out)
{
  struct fake *f = F(p);
  struct fake_op *op;
  if (f->closing)
    return CARP_ECANCELED;
  op = op_new(f, M_GET, arg);
  snprintf(op->provider_id, sizeof(op->provider_id), "%s", provider_id);
  op->cb.get = cb;
  if (out)
    *out = (struct carp_provider_op *)op;
  return 0;
}

static int v_list(struct carp_provider *p, carp_provider_list_cb cb, void *arg,
                  struct carp_provider_op **out)
{
  struct fake *f = F(p);
  struct fake_op *op;
  if (f->closing)
    return CARP_ECANCELED;
  op = op_new(f, M_LIST, arg);
  op->cb.list = cb;
  if (out)
    *out = (struct carp_provider_op *)op;
  return 0;
}

static int v_instance_types(struct carp_provider *p,
                            const struct carp_nodeclass *nc,
                            struct carp_provider_instance_types *out)
{
  struct fake *f = F(p);
  size_t i, z;
  (void)nc;
  f->type_calls++;
  out->n = f->ntypes;
  out->v = carp_calloc(f->ntypes ? f->ntypes : 1, sizeof(*out->v));
  for (i = 0; i < f->ntypes; i++) {
    struct carp_provider_instance_type *o = &out->v[i];
    const struct carp_fake_instance_type *t = &f->types[i];
    snprintf(o->name, sizeof(o->name), "%s", t->name);
    snprintf(o->family, sizeof(o->family), "%.*s", (int)strcspn(t->name, "."),
             t->name);
    o->cpu = t->cpu;
    o->memory = t->memory;
    o->price = t->price;
    o->arch = "amd64";
    o->os = "linux";
    o->capacity.cpu = (int64_t)t->cpu * 1000;
    o->capacity.memory = t->memory;
    o->capacity.pods = 110;
    o->eviction_threshold.memory = 100LL << 20;
    o->allocatable = o->capacity;
    o->allocatable.memory -= o->eviction_threshold.memory;
    o->nofferings = f->nzones;
    o->offerings =
        carp_calloc(f->nzones ? f->nzones : 1, sizeof(*o->offerings));
    for (z = 0; z < f->nzones; z++) {
      struct carp_provider_offering *of = &o->offerings[z];
      snprintf(of->region, sizeof(of->region), "%s", f->region);
      snprintf(of->zone, sizeof(of->zone), "%s", f->zones[z].name);
      of->capacity_type = CARP_CAPACITY_TYPE_ON_DEMAND;
      of->price = t->price;
      of->available = fits(f, &f->zones[z], t);
    }
  }
  return 0;
}

static int v_is_drifted(struct carp_provider *p,
                        const struct carp_nodeclaim *claim,
                        const struct carp_nodeclass *nc, const char **reason)
{
  struct fake *f = F(p);
  const struct fake_vm *v;
  const struct fake_zone *z;
  (void)nc;
  *reason = "";
  if (f->drift_all ||
      (claim->meta.name && !strcmp(f->drift_claim, claim->meta.name)))
    *reason = f->drift_reason;
  if (**reason || !claim->status.provider_id)
    return 0;
  v = vm_find(f, claim->status.provider_id);
  z = v ? zone_find(f, v->inst.zone) : NULL;
  if (z && z->state == CARP_ZONE_MAINTENANCE)
    *reason = CARP_DRIFT_HOST_MAINTENANCE;
  return 0;
}

static int v_zone_status(struct carp_provider *p, const char *region,
                         const char *zone,
                         struct carp_provider_zone_status *out)
{
  struct fake *f = F(p);
  const struct fake_zone *z = zone_find(f, zone);
  if (strcmp(region, f->region) != 0 || !z)
    return CARP_ENOENT;
  out->state = z->state;
  out->since_ms = z->since_ms;
  return 0;
}

static void v_cancel(struct carp_provider *p, struct carp_provider_op *o)
{
  struct fake_op *op = (struct fake_op *)o;
  (void)p;
  if (op->canceled)
    return;
  op->canceled = 1;
  if (op->tok) {
    op->tok->op = NULL;
    op->tok = NULL;
  }
  carp_timer_start(&op->timer, on_timer, 0, 0);
}

static void v_close(struct carp_provider *p, void (*cb)(void *), void *arg)
{
  struct fake *f = F(p);
  struct fake_op *op;
  if (f->closing)
    return;
  f->closing = 1;
  f->close_cb = cb;
  f->close_arg = arg;
  if (!f->ops) {
    /* Nothing pending: free through a throwaway op so cb is asynchronous. */
    op = CARP_NEW(struct fake_op);
    op->f = f;
    carp_timer_init(f->clock, &op->timer);
    op->timer.data = op;
    carp_timer_close(&op->timer, op_closed);
    return;
  }
  for (op = f->ops; op; op = op->next)
    v_cancel(p, (struct carp_provider_op *)op);
}

static const struct carp_provider_ops fake_ops = {
    .name = "fake",
    .create = v_create,
    .del = v_delete,
    .get = v_get,
    .list = v_list,
    .instance_types = v_instance_types,
    .is_drifted = v_is_drifted,
    .zone_status = v_zone_status,
    .cancel = v_cancel,
    .close = v_close,
};

int carp_fake_provider_new(uv_loop_t *loop,
                           const struct carp_fake_provider_options *o,
                           struct carp_provider **out)
{
  struct fake *f;
  const struct carp_fake_instance_type *types = default_types;
  size_t ntypes = CARP_ARRAY_LEN(default_types), i;
  if (!loop || !out)
    return CARP_EINVAL;
  f = CARP_NEW(struct fake);
  f->base.ops = &fake_ops;
  f->loop = loop;
  f->clock = o ? o->clock : NULL;
  if (!f->clock)
    f->clock = f->own_clock = carp_clock_real_new(loop);
  snprintf(f->region, sizeof(f->region), "%s",
           o && o->region ? o->region : "fake");
  if (o && o->zones) {
    for (i = 0; o->zones[i] && f->nzones < MAX_ZONES; i++)
      snprintf(f->zones[f->nzones++].name, sizeof(f->zones[0].name), "%s",
               o->zones[i]);
  }
  if (!f->nzones)
    snprintf(f->zones[f->nzones++].name, sizeof(f->zones[0].name), "zone-a");
  for (i = 0; i < f->nzones; i++) {
    f->zones[i].cpus = o ? o->host_cpus : 0;
    f->zones[i].memory = o ? o->host_memory : 0;
    f->zones[i].state = CARP_ZONE_READY;
    f->zones[i].since_ms = carp_clock_wall_ms(f->clock);
  }
  if (o && o->types && o->ntypes) {
    types = o->types;
    ntypes = o->ntypes;
  }
  f->types = carp_calloc(ntypes, sizeof(*f->types));
  for (i = 0; i < ntypes; i++) {
    f->types[i] = types[i];
    f->types[i].name = carp_strdup(types[i].name);
  }
  f->ntypes = ntypes;
  if (o) {
    f->delay[M_CREATE] = o->create_delay_ms;
    f->delay[M_DELETE] = o->delete_delay_ms;
    f->delay[M_GET] = o->get_delay_ms;
    f->delay[M_LIST] = o->get_delay_ms;
  }
  f->next_vmid = 1000;
  *out = &f->base;
  return 0;
}

static int method_of(const char *m)
{
  int i;
  for (i = 0; i < M_N; i++)
    if (m && !strcmp(m, method_names[i]))
      return i;
  return -1;
}

void carp_fake_provider_fail(struct carp_provider *p, const char *method, int n,
                             int err, const char *reason)
{
  struct fake *f = F(p);
  int m = method_of(method);
  if (m < 0)
    return;
  f->fail[m].n = n;
  f->fail[m].err = err;
  snprintf(f->fail[m].reason, sizeof(f->fail[m].reason), "%s",
           reason ? reason : "");
}

void carp_fake_provider_set_zone_state(struct carp_provider *p,
                                       const char *zone,
                                       enum carp_zone_state state)
{
  struct fake *f = F(p);
  struct fake_zone *z = zone_find(f, zone);
  if (!z || z->state == state)
    return;
  z->state = state;
  z->since_ms = carp_clock_wall_ms(f->clock);
}

void carp_fake_provider_set_capacity(struct carp_provider *p, const char *zone,
                                     int64_t cpus, int64_t memory)
{
  struct fake *f = F(p);
  size_t i;
  for (i = 0; i < f->nzones; i++)
    if (!strcmp(f->zones[i].name, zone)) {
      f->zones[i].cpus = cpus;
      f->zones[i].memory = memory;
    }
}

void carp_fake_provider_set_ice(struct carp_provider *p, const char *type,
                                const char *zone, int ice)
{
  struct fake *f = F(p);
  struct fake_ice **pi, *x;
  for (pi = &f->ice; *pi; pi = &(*pi)->next)
    if (!strcmp((*pi)->type, type) && !strcmp((*pi)->zone, zone)) {
      if (!ice) {
        x = *pi;
        *pi = x->next;
        carp_free(x);
      }
      return;
    }
  if (!ice)
    return;
  x = CARP_NEW(struct fake_ice);
  snprintf(x->type, sizeof(x->type), "%s", type);
  snprintf(x->zone, sizeof(x->zone), "%s", zone);
  x->next = f->ice;
  f->ice = x;
}

void carp_fake_provider_set_drift(struct carp_provider *p,
                                  const char *nodeclaim, const char *reason)
{
  struct fake *f = F(p);
  f->drift_all = nodeclaim == NULL;
  snprintf(f->drift_claim, sizeof(f->drift_claim), "%s",
           nodeclaim ? nodeclaim : "");
  snprintf(f->drift_reason, sizeof(f->drift_reason), "%s",
           reason ? reason : "");
}

int carp_fake_provider_add_instance(struct carp_provider *p, const char *name,
                                    const char *nodeclaim_uid, const char *type,
                                    const char *zone, char *out, size_t size)
{
  struct fake *f = F(p);
  struct fake_vm *v = CARP_NEW(struct fake_vm);
  size_t i;
  v->inst.vmid = f->next_vmid++;
  carp_provider_id_format(f->region, v->inst.vmid, v->inst.provider_id,
                          sizeof(v->inst.provider_id));
  snprintf(v->inst.region, sizeof(v->inst.region), "%s", f->region);
  snprintf(v->inst.zone, sizeof(v->inst.zone), "%s",
           zone ? zone : f->zones[0].name);
  snprintf(v->inst.name, sizeof(v->inst.name), "%s", name ? name : "");
  snprintf(v->inst.nodeclaim, sizeof(v->inst.nodeclaim), "%s",
           name ? name : "");
  snprintf(v->inst.nodeclaim_uid, sizeof(v->inst.nodeclaim_uid), "%s",
           nodeclaim_uid ? nodeclaim_uid : "");
  snprintf(v->inst.status, sizeof(v->inst.status), "running");
  snprintf(v->inst.capacity_type, sizeof(v->inst.capacity_type), "%s",
           CARP_CAPACITY_TYPE_ON_DEMAND);
  for (i = 0; i < f->ntypes; i++)
    if (type && !strcmp(f->types[i].name, type)) {
      snprintf(v->inst.instance_type, sizeof(v->inst.instance_type), "%s",
               type);
      v->inst.cpu = f->types[i].cpu;
      v->inst.memory = f->types[i].memory;
    }
  v->next = f->vms;
  f->vms = v;
  if (out)
    snprintf(out, size, "%s", v->inst.provider_id);
  return 0;
}

const struct carp_fake_instance_type *
carp_fake_provider_type(struct carp_provider *p, const char *name)
{
  struct fake *f = F(p);
  size_t i;
  for (i = 0; i < f->ntypes; i++)
    if (!strcmp(f->types[i].name, name))
      return &f->types[i];
  return NULL;
}

size_t carp_fake_provider_count(struct carp_provider *p)
{
  struct fake *f = F(p);
  struct fake_vm *v;
  size_t n = 0;
  for (v = f->vms; v; v = v->next)
    n++;
  return n;
}

size_t carp_fake_provider_calls(struct carp_provider *p, const char *method)
{
  int m = method_of(method);
  if (!strcmp(method, "instance_types"))
    return F(p)->type_calls;
  return m < 0 ? 0 : F(p)->calls[m];
}
