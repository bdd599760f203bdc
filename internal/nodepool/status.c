/* status.c: what a NodePool's status should say, computed from the cache
 * without I/O - validation and class readiness conditions (Karpenter's
 * nodepool/validation and nodepool/readiness), the counter's resources and
 * node count (nodepool/counter) - and the merge patch that writes it. */
#include <string.h>

#include "carpenter/api_encode.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/nodepool_controller.h"

static int launched(const struct carp_nodeclaim *nc)
{
  return nc->status.capacity.cpu > 0 || nc->status.capacity.memory > 0;
}

/* NodeClassReady, as Karpenter's readiness controller sets it. */
static int set_class_ready(const struct carp_nodepool *np,
                           const struct carp_nodeclass *cls, int64_t gen,
                           int64_t now_ms, struct carp_nodepool_status *st)
{
  const struct carp_nodeclass_ref *ref = &np->tmpl.node_class_ref;
  const struct carp_condition *ready;
  struct carp_conditions *c = &st->conditions;
  const struct carp_condset *set = &carp_condset_nodepool;
  if (strcmp(ref->kind, CARP_NODECLASS_KIND) ||
      strcmp(ref->group, CARP_NODECLASS_GROUP))
    return carp_conditions_set(
        c, set, CARP_COND_NODECLASS_READY, CARP_COND_FALSE, "NodeClassNotFound",
        "nodeClassRef must name a carpenter.dev ProxmoxNodeClass", gen, now_ms);
  if (!cls)
    return carp_conditions_set(c, set, CARP_COND_NODECLASS_READY,
                               CARP_COND_FALSE, "NodeClassNotFound",
                               "NodeClass not found on cluster", gen, now_ms);
  if (cls->meta.deletion_ms)
    return carp_conditions_set(c, set, CARP_COND_NODECLASS_READY,
                               CARP_COND_FALSE, "NodeClassTerminating",
                               "NodeClass is Terminating", gen, now_ms);
  ready = carp_conditions_get(&cls->status.conditions, CARP_COND_READY);
  if (!ready || ready->status == CARP_COND_UNKNOWN)
    return carp_conditions_set(c, set, CARP_COND_NODECLASS_READY,
                               CARP_COND_UNKNOWN, "NodeClassReadinessUnknown",
                               "Node Class Readiness Unknown", gen, now_ms);
  if (ready->status == CARP_COND_FALSE)
    return carp_conditions_set(c, set, CARP_COND_NODECLASS_READY,
                               CARP_COND_FALSE, ready->reason, ready->message,
                               gen, now_ms);
  return carp_conditions_set(c, set, CARP_COND_NODECLASS_READY, CARP_COND_TRUE,
                             NULL, NULL, gen, now_ms);
}

static int resources_equal(const struct carp_resources *a,
                           const struct carp_resources *b)
{
  uint32_t i;
  if (a->cpu != b->cpu || a->memory != b->memory ||
      a->ephemeral != b->ephemeral || a->pods != b->pods ||
      a->nextended != b->nextended)
    return 0;
  for (i = 0; i < a->nextended; i++)
    if (strcmp(a->extended[i].name, b->extended[i].name) ||
        a->extended[i].value != b->extended[i].value)
      return 0;
  return 1;
}

/* NodeRegistrationHealthy is told by the lifecycle controller (True when
 * a NodeClaim registers, False when one times out), once after each
 * reset: back to Unknown whenever the NodePool or its class changes, so
 * that it speaks of the nodes the current spec makes. */
static int registration_health(const struct carp_nodepool *np,
                               const struct carp_nodeclass *cls, int64_t gen,
                               int64_t now_ms, struct carp_nodepool_status *st)
{
  const struct carp_condition *c =
      carp_conditions_get(&st->conditions, CARP_COND_NODE_REG_HEALTHY);
  if (c && c->observed_generation == gen &&
      (!cls ||
       np->status.nodeclass_observed_generation == cls->meta.generation))
    return 0;
  return carp_conditions_set(&st->conditions, &carp_condset_nodepool,
                             CARP_COND_NODE_REG_HEALTHY, CARP_COND_UNKNOWN,
                             NULL, NULL, gen, now_ms);
}

int carp_nodepool_status_compute(const struct carp_nodepool *np,
                                 const struct carp_nodeclass *cls,
                                 struct carp_objmeta *const *claims,
                                 size_t nclaims, int64_t now_ms,
                                 struct carp_nodepool_status *st)
{
  int64_t gen = np->meta.generation;
  int changed = 0;
  size_t i;

  if (np->valid)
    changed |= carp_conditions_set(&st->conditions, &carp_condset_nodepool,
                                   CARP_COND_VALIDATION_SUCCEEDED,
                                   CARP_COND_TRUE, NULL, NULL, gen, now_ms);
  else
    changed |= carp_conditions_set(
        &st->conditions, &carp_condset_nodepool, CARP_COND_VALIDATION_SUCCEEDED,
        CARP_COND_FALSE, CARP_REASON_NODEPOOL_INVALID,
        np->invalid_reason ? np->invalid_reason : "invalid NodePool", gen,
        now_ms);
  changed |= set_class_ready(np, cls, gen, now_ms, st);
  changed |= registration_health(np, cls, gen, now_ms, st);
  changed |= carp_conditions_recompute_root(
      &st->conditions, &carp_condset_nodepool, gen, now_ms);

  carp_resources_cleanup(&st->resources);
  memset(&st->resources, 0, sizeof(st->resources));
  st->nodes = 0;
  for (i = 0; i < nclaims; i++) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)claims[i];
    if (!launched(nc))
      continue;
    carp_resources_add(&st->resources, &nc->status.capacity);
    st->nodes++;
  }
  if (cls)
    st->nodeclass_observed_generation = cls->meta.generation;
  return changed || st->nodes != np->status.nodes ||
         st->nodeclass_observed_generation !=
             np->status.nodeclass_observed_generation ||
         !resources_equal(&st->resources, &np->status.resources);
}

static void kq(struct carp_jw *w, const char *name, int64_t value)
{
  char q[32];
  carp_resource_quantity_format(name, value, q);
  carp_jw_kstr(w, name, q);
}

/* name: value when st has it, null when only old had it. */
static void core(struct carp_jw *w, const char *name, int64_t now,
                 int64_t before)
{
  if (now) {
    kq(w, name, now);
  } else if (before) {
    carp_jw_key(w, name);
    carp_jw_null(w);
  }
}

int carp_nodepool_status_diff_patch(const struct carp_nodepool_status *old,
                                    const struct carp_nodepool_status *st,
                                    const char *rv, struct carp_buf *out)
{
  const struct carp_resources *r = &st->resources, *o = &old->resources;
  struct carp_jw w;
  uint32_t i, j;
  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  if (rv) {
    carp_jw_key(&w, "metadata");
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "resourceVersion", rv);
    carp_jw_obj_end(&w);
  }
  carp_jw_key(&w, "status");
  carp_jw_obj(&w);
  carp_jw_key(&w, "resources");
  carp_jw_obj(&w);
  core(&w, "cpu", r->cpu, o->cpu);
  core(&w, "ephemeral-storage", r->ephemeral, o->ephemeral);
  core(&w, "memory", r->memory, o->memory);
  core(&w, "pods", r->pods, o->pods);
  for (i = 0; i < r->nextended; i++)
    if (strcmp(r->extended[i].name, "nodes"))
      kq(&w, r->extended[i].name, r->extended[i].value);
  for (i = 0; i < o->nextended; i++) {
    int kept = !strcmp(o->extended[i].name, "nodes");
    for (j = 0; j < r->nextended && !kept; j++)
      kept = !strcmp(o->extended[i].name, r->extended[j].name);
    if (!kept) {
      carp_jw_key(&w, o->extended[i].name);
      carp_jw_null(&w);
    }
  }
  kq(&w, "nodes", st->nodes);
  carp_jw_obj_end(&w);
  carp_jw_kint(&w, "nodes", st->nodes);
  if (st->nodeclass_observed_generation)
    carp_jw_kint(&w, "nodeClassObservedGeneration",
                 st->nodeclass_observed_generation);
  carp_jw_key(&w, "conditions");
  carp_conditions_encode(&w, &st->conditions);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}
