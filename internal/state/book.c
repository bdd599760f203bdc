/* book.c: what the cluster state remembers beyond the caches.
 *
 * Expected NodeClaims close the window between a create and the informer
 * seeing it; their remembered capacity also stands for a claim's size
 * until it is launched. A claim this process did not create (a previous
 * leader's) and not launched yet is sized from its NodeClass: the largest
 * of the instance types its requirements allow, so NodePool limits hold
 * across restarts too. Nominations and marks expire by time, swept once a
 * second. Pod arrivals and departures stamp their node's activity time. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/clock.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/log.h"
#include "carpenter/map.h"
#include "carpenter/timeutil.h"
#include "state_int.h"

#define EXPECT_TTL_MS (60 * 1000)
#define SWEEP_MS      1000
/* Pod times are dropped by the pod metrics once they see the pod Ready;
 * the sweep only frees what they never saw, so it can be rare: a pass
 * looks up every pending pod, thousands while a big scale-out waits. */
#define PODTIMES_SWEEP_EVERY 30

struct expect {
  char *name;
  const char *nodepool; /* interned */
  struct carp_resources capacity;
  int64_t at_ms;
  int seen; /* the informer has it: it stays while not launched */
};

struct nomination {
  char *uid;
  const char *target; /* interned */
  int64_t since_ms;
  int64_t until_ms;
  int reported; /* told the pod it is waiting */
};

struct book {
  struct carp_map expects;     /* name -> struct expect */
  struct carp_map nominations; /* pod uid -> struct nomination */
  struct carp_map targets;     /* target -> count (intptr) */
  struct carp_map activity;    /* node name (interned) -> int64 ms */
  struct carp_map marks;       /* nodeclaim name -> name copy */
  struct carp_map replaced;    /* nodeclaim name -> name copy */
  struct carp_clock *clock;    /* NULL: the system clock */
  struct carp_vbook *virt;     /* virtual.c */
  struct carp_podtimes *times; /* podtimes.c */
  /* No nomination lapses before this (0: none held): the sweep passes
   * over them only then, not every second. */
  int64_t nominations_due_ms;
  unsigned sweeps;
  uv_timer_t sweep;
};

static struct book *book_of(const struct carp_cluster *c)
{
  return c->priv;
}

static int64_t now_ms(const struct book *b)
{
  return carp_clock_wall_ms(b->clock);
}

struct carp_vbook *carp__cluster_vbook(const struct carp_cluster *c)
{
  return book_of(c)->virt;
}

struct carp_podtimes *carp__cluster_podtimes(const struct carp_cluster *c)
{
  return book_of(c)->times;
}

int64_t carp__cluster_now_ms(const struct carp_cluster *c)
{
  return now_ms(book_of(c));
}

void carp_cluster_set_clock(struct carp_cluster *c, struct carp_clock *clock)
{
  book_of(c)->clock = clock;
}

/* ---- expected claims ---- */

static void expect_free(struct expect *e)
{
  carp_free(e->name);
  carp_intern_release(e->nodepool);
  carp_resources_cleanup(&e->capacity);
  carp_free(e);
}

void carp_cluster_expect_claim(struct carp_cluster *c, const char *name,
                               const char *nodepool,
                               const struct carp_resources *max_capacity)
{
  struct book *b = book_of(c);
  struct expect *e = carp_map_gets(&b->expects, name);
  if (e) {
    carp_map_dels(&b->expects, name);
    expect_free(e);
  }
  e = CARP_NEW(struct expect);
  e->name = carp_strdup(name);
  e->nodepool = carp_interns(nodepool);
  carp_resources_copy(&e->capacity, max_capacity);
  e->at_ms = now_ms(b);
  e->seen = carp_cluster_nodeclaim(c, name) != NULL;
  carp_map_puts(&b->expects, e->name, e);
}

const struct carp_resources *
carp_cluster_expected_capacity(const struct carp_cluster *c, const char *name)
{
  struct expect *e = carp_map_gets(&book_of(c)->expects, name);
  return e ? &e->capacity : NULL;
}

static void drop_expect(struct book *b, const char *name)
{
  struct expect *e = carp_map_dels(&b->expects, name);
  if (e)
    expect_free(e);
}

void carp_cluster_forget_claim(struct carp_cluster *c, const char *name)
{
  drop_expect(book_of(c), name);
}

static int launched(const struct carp_nodeclaim *nc)
{
  return nc->status.capacity.cpu > 0 || nc->status.capacity.memory > 0;
}

static void resources_min(struct carp_resources *acc, int *first,
                          const struct carp_resources *r)
{
  if (*first) {
    carp_resources_cleanup(acc);
    carp_resources_copy(acc, r);
    *first = 0;
    return;
  }
#define MIN_FIELD(f)                                                           \
  if (r->f < acc->f)                                                           \
  acc->f = r->f
  MIN_FIELD(cpu);
  MIN_FIELD(memory);
  MIN_FIELD(ephemeral);
  MIN_FIELD(pods);
#undef MIN_FIELD
}

int carp_cluster_claim_shape(const struct carp_cluster *c,
                             const struct carp_nodeclaim *nc,
                             struct carp_resources *max_capacity,
                             struct carp_resources *min_allocatable)
{
  const struct carp_nodeclass *cls =
      carp_cluster_nodeclass(c, nc->spec.node_class_ref.name);
  const struct carp_requirement *types = NULL;
  struct carp_instance_type *its = NULL;
  size_t n = 0, i;
  uint32_t r, v;
  int first = 1;
  if (max_capacity)
    memset(max_capacity, 0, sizeof(*max_capacity));
  if (min_allocatable)
    memset(min_allocatable, 0, sizeof(*min_allocatable));
  if (!cls || carp_nodeclass_instance_types(&cls->spec, &its, &n))
    return CARP_ENOENT;
  for (r = 0; r < nc->spec.nrequirements; r++)
    if (!strcmp(nc->spec.requirements[r].key,
                "node.kubernetes.io/instance-type") &&
        nc->spec.requirements[r].op == CARP_OP_IN)
      types = &nc->spec.requirements[r];
  for (i = 0; i < n; i++) {
    struct carp_resources cap, evict, alloc;
    int allowed = !types;
    for (v = 0; types && v < types->nvalues && !allowed; v++)
      allowed = !strcmp(types->values[v], its[i].name);
    if (!allowed)
      continue;
    carp_nodeclass_capacity(&cls->spec, &its[i], 0, &cap);
    if (max_capacity)
      carp_resources_max(max_capacity, &cap);
    if (min_allocatable) {
      carp_nodeclass_eviction_threshold(&cls->spec, &cap, &evict);
      carp_resources_copy(&alloc, &cap);
      alloc.cpu -= cls->spec.kube_reserved.cpu + cls->spec.system_reserved.cpu +
                   evict.cpu;
      alloc.memory -= cls->spec.kube_reserved.memory +
                      cls->spec.system_reserved.memory + evict.memory;
      alloc.ephemeral -= cls->spec.kube_reserved.ephemeral +
                         cls->spec.system_reserved.ephemeral + evict.ephemeral;
      resources_min(min_allocatable, &first, &alloc);
      carp_resources_cleanup(&alloc);
      carp_resources_cleanup(&evict);
    }
    carp_resources_cleanup(&cap);
  }
  carp_free(its);
  return 0;
}

void carp_cluster_nodepool_usage(const struct carp_cluster *c,
                                 const char *nodepool,
                                 struct carp_resources *usage, int64_t *nodes)
{
  struct book *b = book_of(c);
  struct carp_objmeta *const *claims;
  struct carp_map_iter it;
  size_t n, i;
  void *v;
  memset(usage, 0, sizeof(*usage));
  *nodes = 0;
  claims = carp_cluster_nodeclaims_of_pool(c, nodepool, &n);
  for (i = 0; i < n; i++) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)claims[i];
    const struct carp_resources *exp;
    (*nodes)++;
    if (launched(nc)) {
      carp_resources_add(usage, &nc->status.capacity);
    } else if ((exp = carp_cluster_expected_capacity(c, nc->meta.name))) {
      carp_resources_add(usage, exp);
    } else {
      struct carp_resources est;
      carp_cluster_claim_shape(c, nc, &est, NULL);
      carp_resources_add(usage, &est);
      carp_resources_cleanup(&est);
    }
  }
  /* Created but not yet in the cache. */
  carp_map_iter_init(&it);
  while (carp_map_next(&b->expects, &it, NULL, NULL, &v)) {
    struct expect *e = v;
    if (e->seen || strcmp(e->nodepool, nodepool) ||
        carp_cluster_nodeclaim(c, e->name))
      continue;
    (*nodes)++;
    carp_resources_add(usage, &e->capacity);
  }
}

/* ---- nominations ---- */

static void target_count(struct book *b, const char *target, int delta)
{
  intptr_t n = (intptr_t)carp_map_gets(&b->targets, target) + delta;
  if (n <= 0)
    carp_map_dels(&b->targets, target);
  else
    carp_map_puts(&b->targets, target, (void *)n);
}

static void nomination_free(struct book *b, struct nomination *n)
{
  target_count(b, n->target, -1);
  carp_intern_release(n->target);
  carp_free(n->uid);
  carp_free(n);
}

void carp_cluster_nominate(struct carp_cluster *c, const char *pod_uid,
                           const char *target, uint64_t ttl_ms)
{
  struct book *b = book_of(c);
  struct nomination *n = carp_map_dels(&b->nominations, pod_uid);
  if (n)
    nomination_free(b, n);
  n = CARP_NEW(struct nomination);
  n->uid = carp_strdup(pod_uid);
  n->target = carp_interns(target);
  n->since_ms = now_ms(b);
  n->until_ms = n->since_ms + (int64_t)ttl_ms;
  carp_map_puts(&b->nominations, n->uid, n);
  target_count(b, n->target, +1);
  if (!b->nominations_due_ms || n->until_ms < b->nominations_due_ms)
    b->nominations_due_ms = n->until_ms;
}

const char *carp_cluster_nomination(const struct carp_cluster *c,
                                    const char *pod_uid)
{
  struct nomination *n = carp_map_gets(&book_of(c)->nominations, pod_uid);
  return n && n->until_ms > now_ms(book_of(c)) ? n->target : NULL;
}

int carp_cluster_nomination_info(const struct carp_cluster *c,
                                 const char *pod_uid,
                                 struct carp_nomination_info *out)
{
  struct nomination *n = carp_map_gets(&book_of(c)->nominations, pod_uid);
  if (!n || n->until_ms <= now_ms(book_of(c)))
    return 0;
  out->target = n->target;
  out->since_ms = n->since_ms;
  out->until_ms = n->until_ms;
  return 1;
}

int carp_cluster_nomination_report(struct carp_cluster *c, const char *pod_uid)
{
  struct nomination *n = carp_map_gets(&book_of(c)->nominations, pod_uid);
  if (!n || n->until_ms <= now_ms(book_of(c)) || n->reported)
    return 0;
  n->reported = 1;
  return 1;
}

int carp_cluster_is_nominated(const struct carp_cluster *c, const char *target)
{
  return carp_map_gets(&book_of(c)->targets, target) != NULL;
}

/* ---- activity ---- */

static void touch(struct book *b, const char *node)
{
  /* Keys are interned node names: the pods hold them too. */
  const char *key;
  int64_t *slot;
  if (!node)
    return;
  slot = carp_map_gets(&b->activity, node);
  if (!slot) {
    key = carp_interns(node);
    slot = carp_malloc(sizeof(*slot));
    carp_map_puts(&b->activity, key, slot);
  }
  *slot = now_ms(b);
}

int64_t carp_cluster_last_pod_event(const struct carp_cluster *c,
                                    const char *node)
{
  int64_t *slot = node ? carp_map_gets(&book_of(c)->activity, node) : NULL;
  return slot ? *slot : 0;
}

/* ---- marks ---- */

static void mark_put(struct carp_map *m, const char *nodeclaim)
{
  char *copy;
  if (carp_map_gets(m, nodeclaim))
    return;
  copy = carp_strdup(nodeclaim);
  carp_map_puts(m, copy, copy);
}

static void marks_free(struct carp_map *m)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(m, &it, NULL, NULL, &v))
    carp_free(v);
  carp_map_free(m);
}

void carp_cluster_mark_for_deletion(struct carp_cluster *c,
                                    const char *nodeclaim)
{
  mark_put(&book_of(c)->marks, nodeclaim);
}

void carp_cluster_unmark(struct carp_cluster *c, const char *nodeclaim)
{
  carp_free(carp_map_dels(&book_of(c)->marks, nodeclaim));
}

int carp_cluster_is_marked(const struct carp_cluster *c, const char *nodeclaim)
{
  return carp_map_gets(&book_of(c)->marks, nodeclaim) != NULL;
}

void carp_cluster_mark_replaced(struct carp_cluster *c, const char *nodeclaim)
{
  mark_put(&book_of(c)->replaced, nodeclaim);
}

void carp_cluster_unmark_replaced(struct carp_cluster *c, const char *nodeclaim)
{
  carp_free(carp_map_dels(&book_of(c)->replaced, nodeclaim));
}

int carp_cluster_is_replaced(const struct carp_cluster *c,
                             const char *nodeclaim)
{
  return carp_map_gets(&book_of(c)->replaced, nodeclaim) != NULL;
}

void carp_cluster_nodepool_count(const struct carp_cluster *c,
                                 const char *nodepool,
                                 struct carp_pool_count *out)
{
  struct carp_objmeta *const *claims;
  struct carp_resources usage;
  int64_t deleting = 0;
  size_t n, i;
  memset(out, 0, sizeof(*out));
  carp_cluster_nodepool_usage(c, nodepool, &usage, &out->total);
  carp_resources_cleanup(&usage);
  claims = carp_cluster_nodeclaims_of_pool(c, nodepool, &n);
  for (i = 0; i < n; i++) {
    const char *name = claims[i]->name;
    if (claims[i]->deletion_ms) {
      deleting++;
      continue;
    }
    if (!carp_cluster_is_marked(c, name) && !carp_cluster_is_replaced(c, name))
      out->running++;
  }
  out->active = out->total - deleting;
}

/* ---- informer handlers ---- */

static void pod_added(struct carp_objmeta *obj, void *arg)
{
  struct carp_cluster *c = arg;
  const struct carp_pod *p = (const struct carp_pod *)obj;
  if (p->node_name && !carp_pod_is_terminal(p))
    touch(book_of(c), p->node_name);
}

static void pod_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                        void *arg)
{
  struct carp_cluster *c = arg;
  struct book *b = book_of(c);
  const struct carp_pod *o = (const struct carp_pod *)old;
  const struct carp_pod *p = (const struct carp_pod *)obj;
  if (p->node_name != o->node_name) {
    struct nomination *n;
    touch(b, p->node_name);
    touch(b, o->node_name);
    /* Bound: the nomination has done its job. */
    n = carp_map_dels(&b->nominations, p->meta.uid);
    if (n)
      nomination_free(b, n);
  } else if (p->node_name && carp_pod_is_terminal(p) &&
             !carp_pod_is_terminal(o)) {
    touch(b, p->node_name);
  }
}

static void pod_deleted(struct carp_objmeta *obj, void *arg)
{
  struct carp_cluster *c = arg;
  struct book *b = book_of(c);
  const struct carp_pod *p = (const struct carp_pod *)obj;
  struct nomination *n = carp_map_dels(&b->nominations, p->meta.uid);
  if (n)
    nomination_free(b, n);
  carp__podtimes_forget(b->times, p->meta.uid);
  if (p->node_name && !carp_pod_is_terminal(p))
    touch(b, p->node_name);
}

static void claim_seen(struct carp_objmeta *obj, void *arg)
{
  struct carp_cluster *c = arg;
  struct book *b = book_of(c);
  const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)obj;
  struct expect *e = carp_map_gets(&b->expects, nc->meta.name);
  if (!e)
    return;
  if (launched(nc))
    drop_expect(b, nc->meta.name);
  else
    e->seen = 1;
}

static void claim_updated(struct carp_objmeta *old, struct carp_objmeta *obj,
                          void *arg)
{
  claim_seen(obj, arg);
}

static void claim_deleted(struct carp_objmeta *obj, void *arg)
{
  struct carp_cluster *c = arg;
  drop_expect(book_of(c), obj->name);
  carp_cluster_unmark(c, obj->name);
  carp_cluster_unmark_replaced(c, obj->name);
}

/* Drops the nominations that lapsed and finds when the next one does. */
static void sweep_nominations(struct book *b, int64_t now)
{
  struct carp_map_iter it;
  void *v;
  char **drop = NULL;
  size_t n = 0, cap = 0, i;
  carp_map_iter_init(&it);
  while (carp_map_next(&b->nominations, &it, NULL, NULL, &v)) {
    struct nomination *nm = v;
    if (nm->until_ms > now)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      drop = carp_reallocarray(drop, cap, sizeof(*drop));
    }
    drop[n++] = nm->uid;
  }
  for (i = 0; i < n; i++)
    nomination_free(b, carp_map_dels(&b->nominations, drop[i]));
  carp_free(drop);
  b->nominations_due_ms = 0;
  carp_map_iter_init(&it);
  while (carp_map_next(&b->nominations, &it, NULL, NULL, &v)) {
    struct nomination *nm = v;
    if (!b->nominations_due_ms || nm->until_ms < b->nominations_due_ms)
      b->nominations_due_ms = nm->until_ms;
  }
}

static void on_sweep(uv_timer_t *t)
{
  struct carp_cluster *c = t->data;
  struct book *b = book_of(c);
  struct carp_map_iter it;
  void *v;
  int64_t now = now_ms(b);
  char **drop = NULL;
  size_t n = 0, cap = 0, i;

  if (b->nominations_due_ms && b->nominations_due_ms <= now)
    sweep_nominations(b, now);
  carp_map_iter_init(&it);
  while (carp_map_next(&b->expects, &it, NULL, NULL, &v)) {
    struct expect *e = v;
    /* Never seen after a minute: the create was lost. Seen ones stay
     * until launched or deleted (handlers drop them). */
    if (e->seen || now - e->at_ms < EXPECT_TTL_MS)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      drop = carp_reallocarray(drop, cap, sizeof(*drop));
    }
    drop[n++] = e->name;
  }
  for (i = 0; i < n; i++)
    drop_expect(b, drop[i]);
  carp_free(drop);
  if (++b->sweeps % PODTIMES_SWEEP_EVERY == 0)
    carp__podtimes_sweep(b->times, carp_informer_store(c->pods));
}

void carp__cluster_book_init(struct carp_cluster *c,
                             struct carp_metrics *metrics)
{
  struct book *b = CARP_NEW(struct book);
  struct carp_informer_handlers ph = {.on_add = pod_added,
                                      .on_update = pod_updated,
                                      .on_delete = pod_deleted,
                                      .arg = c};
  struct carp_informer_handlers ch = {.on_add = claim_seen,
                                      .on_update = claim_updated,
                                      .on_delete = claim_deleted,
                                      .arg = c};
  (void)metrics;
  carp_map_init(&b->expects);
  carp_map_init(&b->nominations);
  carp_map_init(&b->targets);
  carp_map_init(&b->activity);
  carp_map_init(&b->marks);
  carp_map_init(&b->replaced);
  b->virt = carp__vbook_new();
  b->times = carp__podtimes_new();
  c->priv = b;
  carp_informer_add_handlers(c->pods, &ph);
  carp_informer_add_handlers(c->nodeclaims, &ch);
  uv_timer_init(c->loop, &b->sweep);
  b->sweep.data = c;
  uv_timer_start(&b->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
  uv_unref((uv_handle_t *)&b->sweep);
}

static void on_sweep_closed(uv_handle_t *h)
{
  carp_free(carp_container_of((uv_timer_t *)h, struct book, sweep));
}

void carp__cluster_book_free(struct carp_cluster *c)
{
  struct book *b = book_of(c);
  struct carp_map_iter it;
  const char *k;
  void *v;
  if (!b)
    return;
  carp_map_iter_init(&it);
  while (carp_map_next(&b->expects, &it, NULL, NULL, &v))
    expect_free(v);
  carp_map_free(&b->expects);
  carp_map_iter_init(&it);
  while (carp_map_next(&b->nominations, &it, NULL, NULL, &v)) {
    struct nomination *n = v;
    carp_intern_release(n->target);
    carp_free(n->uid);
    carp_free(n);
  }
  carp_map_free(&b->nominations);
  carp_map_free(&b->targets);
  carp_map_iter_init(&it);
  while (carp_map_next(&b->activity, &it, &k, NULL, &v)) {
    carp_intern_release(k);
    carp_free(v);
  }
  carp_map_free(&b->activity);
  marks_free(&b->marks);
  marks_free(&b->replaced);
  carp__vbook_free(b->virt);
  b->virt = NULL;
  carp__podtimes_free(b->times);
  b->times = NULL;
  c->priv = NULL;
  uv_close((uv_handle_t *)&b->sweep, on_sweep_closed);
}
