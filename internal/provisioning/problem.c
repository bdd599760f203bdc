/* problem.c: from informer caches to struct carp_sched_problem.
 *
 * Units change on the way: the caches keep memory and storage in bytes
 * and counts as integers, the scheduler wants thousandths of every unit.
 * Pending pods already nominated to a node or in-flight NodeClaim that
 * still exists are not placed again; their requests count against that
 * target instead. Pods bound to nodes go in as "bound pods" only when some
 * pending pod has a topology or affinity rule, or the bound pod has a
 * required anti-affinity (which keeps others away from it): for a plain
 * batch the solve does not need 150,000 bound pods. */
#include "problem.h"

#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/log.h"
#include "carpenter/overlay.h"
#include "carpenter/map.h"

#define A (&pr->arena)

/* ---- small conversions ---- */

const struct carp_sched_quantity *
carp_prov_quantities(struct carp_arena *a, const struct carp_resources *r,
                     size_t *n)
{
  struct carp_sched_quantity *q =
      carp_arena_array(a, 4 + r->nextended, sizeof(*q));
  size_t k = 0;
  uint32_t i;
  if (r->cpu)
    q[k++] = (struct carp_sched_quantity){CARP_RESOURCE_CPU, r->cpu};
  if (r->memory)
    q[k++] =
        (struct carp_sched_quantity){CARP_RESOURCE_MEMORY, r->memory * 1000};
  if (r->ephemeral)
    q[k++] = (struct carp_sched_quantity){CARP_RESOURCE_STORAGE,
                                          r->ephemeral * 1000};
  if (r->pods)
    q[k++] = (struct carp_sched_quantity){CARP_RESOURCE_PODS, r->pods * 1000};
  for (i = 0; i < r->nextended; i++)
    q[k++] = (struct carp_sched_quantity){r->extended[i].name,
                                          r->extended[i].value * 1000};
  *n = k;
  return q;
}

static int64_t up(int64_t milli)
{
  return milli / 1000 + (milli % 1000 > 0);
}

void carp_prov_resources_of(const struct carp_sched_quantity *q, size_t n,
                            struct carp_resources *out)
{
  size_t i;
  memset(out, 0, sizeof(*out));
  for (i = 0; i < n; i++) {
    if (!strcmp(q[i].name, CARP_RESOURCE_CPU)) {
      out->cpu = q[i].milli;
    } else if (!strcmp(q[i].name, CARP_RESOURCE_MEMORY)) {
      out->memory = up(q[i].milli);
    } else if (!strcmp(q[i].name, CARP_RESOURCE_STORAGE)) {
      out->ephemeral = up(q[i].milli);
    } else if (!strcmp(q[i].name, CARP_RESOURCE_PODS)) {
      out->pods = up(q[i].milli);
    } else {
      struct carp_resources one;
      memset(&one, 0, sizeof(one));
      one.nextended = 1;
      one.extended = &(struct carp_resource){q[i].name, up(q[i].milli)};
      carp_resources_add(out, &one);
    }
  }
}

static const struct carp_sched_label *
labels_of(struct carp_prov_problem *pr, const struct carp_kvset *s, size_t *n)
{
  struct carp_sched_label *l;
  uint32_t i;
  *n = carp_kvset_len(s);
  if (!*n)
    return NULL;
  l = carp_arena_array(A, *n, sizeof(*l));
  for (i = 0; i < s->n; i++)
    l[i] = (struct carp_sched_label){s->kv[i].key, s->kv[i].value};
  return l;
}

static enum carp_sched_op op_of(enum carp_op op)
{
  switch (op) {
  case CARP_OP_IN:
    return CARP_SCHED_OP_IN;
  case CARP_OP_NOT_IN:
    return CARP_SCHED_OP_NOT_IN;
  case CARP_OP_EXISTS:
    return CARP_SCHED_OP_EXISTS;
  case CARP_OP_DOES_NOT_EXIST:
    return CARP_SCHED_OP_DOES_NOT_EXIST;
  case CARP_OP_GT:
    return CARP_SCHED_OP_GT;
  case CARP_OP_LT:
    return CARP_SCHED_OP_LT;
  case CARP_OP_GTE:
    return CARP_SCHED_OP_GTE;
  case CARP_OP_LTE:
    return CARP_SCHED_OP_LTE;
  }
  return CARP_SCHED_OP_IN;
}

static struct carp_sched_requirement *reqs_of(struct carp_prov_problem *pr,
                                              const struct carp_requirement *r,
                                              size_t n, size_t extra)
{
  struct carp_sched_requirement *o =
      carp_arena_array(A, n + extra + 1, sizeof(*o));
  size_t i;
  for (i = 0; i < n; i++) {
    o[i].key = r[i].key;
    o[i].op = op_of(r[i].op);
    o[i].values = r[i].values;
    o[i].nvalues = r[i].nvalues;
    o[i].min_values = r[i].min_values;
  }
  return o;
}

static const struct carp_sched_requirement *
one_value(struct carp_prov_problem *pr, struct carp_sched_requirement *slot,
          const char *key, const char *value)
{
  const char **v = carp_arena_array(A, 1, sizeof(char *));
  v[0] = value;
  slot->key = key;
  slot->op = CARP_SCHED_OP_IN;
  slot->values = v;
  slot->nvalues = 1;
  return slot;
}

static enum carp_sched_effect effect_of(enum carp_taint_effect e)
{
  switch (e) {
  case CARP_EFFECT_NO_SCHEDULE:
    return CARP_SCHED_EFFECT_NO_SCHEDULE;
  case CARP_EFFECT_PREFER_NO_SCHEDULE:
    return CARP_SCHED_EFFECT_PREFER_NO_SCHEDULE;
  case CARP_EFFECT_NO_EXECUTE:
    return CARP_SCHED_EFFECT_NO_EXECUTE;
  case CARP_EFFECT_ANY:
    break;
  }
  return CARP_SCHED_EFFECT_ALL;
}

static const struct carp_sched_taint *
taints_of(struct carp_prov_problem *pr, const struct carp_taint *t, size_t n)
{
  struct carp_sched_taint *o;
  size_t i;
  if (!n)
    return NULL;
  o = carp_arena_array(A, n, sizeof(*o));
  for (i = 0; i < n; i++)
    o[i] =
        (struct carp_sched_taint){t[i].key, t[i].value, effect_of(t[i].effect)};
  return o;
}

static const struct carp_sched_toleration *
tolerations_of(struct carp_prov_problem *pr, const struct carp_toleration *t,
               size_t n)
{
  struct carp_sched_toleration *o;
  size_t i;
  if (!n)
    return NULL;
  o = carp_arena_array(A, n, sizeof(*o));
  for (i = 0; i < n; i++) {
    o[i].key = t[i].key;
    o[i].op =
        t[i].exists ? CARP_SCHED_TOLERATE_EXISTS : CARP_SCHED_TOLERATE_EQUAL;
    o[i].value = t[i].value;
    o[i].effect = effect_of(t[i].effect);
  }
  return o;
}

static const struct carp_sched_node_term *
terms_of(struct carp_prov_problem *pr, const struct carp_term *t, size_t n)
{
  struct carp_sched_node_term *o;
  size_t i;
  if (!n)
    return NULL;
  o = carp_arena_array(A, n, sizeof(*o));
  for (i = 0; i < n; i++) {
    o[i].exprs = reqs_of(pr, t[i].reqs, t[i].n, 0);
    o[i].nexprs = t[i].n;
  }
  return o;
}

static const struct carp_sched_node_term *
weighted_terms_of(struct carp_prov_problem *pr,
                  const struct carp_weighted_term *t, size_t n)
{
  struct carp_sched_node_term *o;
  size_t i;
  if (!n)
    return NULL;
  o = carp_arena_array(A, n, sizeof(*o));
  for (i = 0; i < n; i++) {
    o[i].exprs = reqs_of(pr, t[i].term.reqs, t[i].term.n, 0);
    o[i].nexprs = t[i].term.n;
    o[i].weight = t[i].weight;
  }
  return o;
}

/* A label selector; extra requirements (matchLabelKeys) appended. */
static const struct carp_sched_selector *
selector_of(struct carp_prov_problem *pr, const struct carp_label_selector *s,
            const struct carp_sched_requirement *extra, size_t nextra)
{
  struct carp_sched_selector *o;
  struct carp_sched_requirement *e;
  if (!s->present)
    return NULL;
  o = carp_arena_alloc(A, sizeof(*o));
  o->match_labels = labels_of(pr, s->match_labels, &o->nmatch_labels);
  e = reqs_of(pr, s->exprs, s->nexprs, nextra);
  if (nextra)
    memcpy(e + s->nexprs, extra, nextra * sizeof(*e));
  o->match_expressions = e;
  o->nmatch_expressions = s->nexprs + nextra;
  return o;
}

static const struct carp_sched_pod_term *
pod_terms_of(struct carp_prov_problem *pr,
             const struct carp_pod_affinity_term *t, size_t n)
{
  struct carp_sched_pod_term *o;
  size_t i;
  if (!n)
    return NULL;
  o = carp_arena_array(A, n, sizeof(*o));
  for (i = 0; i < n; i++) {
    o[i].topology_key = t[i].topology_key;
    o[i].selector = selector_of(pr, &t[i].selector, NULL, 0);
    o[i].namespaces = t[i].namespaces;
    o[i].nnamespaces = t[i].nnamespaces;
    o[i].all_namespaces = t[i].all_namespaces;
    o[i].weight = t[i].weight;
  }
  return o;
}

static const struct carp_sched_spread *
spreads_of(struct carp_prov_problem *pr, const struct carp_podspec *s,
           const struct carp_kvset *labels)
{
  struct carp_sched_spread *o;
  uint32_t i, k;
  if (!s->nspreads)
    return NULL;
  o = carp_arena_array(A, s->nspreads, sizeof(*o));
  for (i = 0; i < s->nspreads; i++) {
    const struct carp_spread *sp = &s->spreads[i];
    struct carp_sched_requirement *extra = NULL;
    size_t nextra = 0;
    /* matchLabelKeys: "key In [this pod's value]" for each key it has. */
    if (sp->nmatch_label_keys) {
      extra = carp_arena_array(A, sp->nmatch_label_keys, sizeof(*extra));
      for (k = 0; k < sp->nmatch_label_keys; k++) {
        const char *v = carp_kvset_get(labels, sp->match_label_keys[k]);
        if (v)
          one_value(pr, &extra[nextra++], sp->match_label_keys[k], v);
      }
    }
    o[i].topology_key = sp->topology_key;
    o[i].max_skew = sp->max_skew;
    o[i].min_domains = sp->min_domains;
    o[i].when_unsatisfiable = sp->when == CARP_SCHEDULE_ANYWAY
                                  ? CARP_SCHED_SCHEDULE_ANYWAY
                                  : CARP_SCHED_DO_NOT_SCHEDULE;
    o[i].selector = selector_of(pr, &sp->selector, extra, nextra);
    o[i].node_affinity_ignore = !sp->honor_node_affinity;
  }
  return o;
}

static enum carp_sched_protocol proto_of(const char *p)
{
  if (p && !strcmp(p, "UDP"))
    return CARP_SCHED_UDP;
  if (p && !strcmp(p, "SCTP"))
    return CARP_SCHED_SCTP;
  return CARP_SCHED_TCP;
}

static const struct carp_sched_host_port *ports_of(struct carp_prov_problem *pr,
                                                   const struct carp_podspec *s)
{
  struct carp_sched_host_port *o;
  uint32_t i;
  if (!s->nhost_ports)
    return NULL;
  o = carp_arena_array(A, s->nhost_ports, sizeof(*o));
  for (i = 0; i < s->nhost_ports; i++) {
    o[i].port = (uint16_t)s->host_ports[i].port;
    o[i].protocol = proto_of(s->host_ports[i].protocol);
    o[i].host_ip = s->host_ports[i].host_ip;
  }
  return o;
}

static int has_topology(const struct carp_podspec *s)
{
  return s->nspreads || s->naffinity || s->nanti_affinity ||
         s->npref_affinity || s->npref_anti_affinity;
}

/* ---- pods ---- */

static void pod_of(struct carp_prov_problem *pr, const struct carp_pod *p,
                   struct carp_sched_pod *o)
{
  const struct carp_podspec *s = p->spec;
  o->uid = p->meta.uid;
  o->name = p->meta.name;
  o->namespace_ = p->meta.namespace;
  o->created = p->meta.creation_ms;
  o->labels = labels_of(pr, p->meta.labels, &o->nlabels);
  o->requests = carp_prov_quantities(A, &s->requests, &o->nrequests);
  o->node_selector = labels_of(pr, s->node_selector, &o->nnode_selector);
  o->required_terms = terms_of(pr, s->required, s->nrequired);
  o->nrequired_terms = s->nrequired;
  o->preferred_terms = weighted_terms_of(pr, s->preferred, s->npreferred);
  o->npreferred_terms = s->npreferred;
  o->tolerations = tolerations_of(pr, s->tolerations, s->ntolerations);
  o->ntolerations = s->ntolerations;
  o->spreads = spreads_of(pr, s, p->meta.labels);
  o->nspreads = s->nspreads;
  o->affinity = pod_terms_of(pr, s->affinity, s->naffinity);
  o->naffinity = s->naffinity;
  o->preferred_affinity = pod_terms_of(pr, s->pref_affinity, s->npref_affinity);
  o->npreferred_affinity = s->npref_affinity;
  o->anti_affinity = pod_terms_of(pr, s->anti_affinity, s->nanti_affinity);
  o->nanti_affinity = s->nanti_affinity;
  o->preferred_anti_affinity =
      pod_terms_of(pr, s->pref_anti_affinity, s->npref_anti_affinity);
  o->npreferred_anti_affinity = s->npref_anti_affinity;
  o->host_ports = ports_of(pr, s);
  o->nhost_ports = s->nhost_ports;
}

/* ---- nodes and in-flight claims ---- */

struct target {
  struct carp_resources allocatable;
  struct carp_resources requested;
  struct carp_sched_host_port *ports;
  size_t nports, capports;
};

static void add_ports(struct carp_prov_problem *pr, struct target *t,
                      const struct carp_podspec *s)
{
  uint32_t i;
  for (i = 0; i < s->nhost_ports; i++) {
    if (t->nports == t->capports) {
      struct carp_sched_host_port *n;
      t->capports = t->capports ? t->capports * 2 : 4;
      n = carp_arena_array(A, t->capports, sizeof(*n));
      if (t->nports)
        memcpy(n, t->ports, t->nports * sizeof(*n));
      t->ports = n;
    }
    t->ports[t->nports].port = (uint16_t)s->host_ports[i].port;
    t->ports[t->nports].protocol = proto_of(s->host_ports[i].protocol);
    t->ports[t->nports].host_ip = s->host_ports[i].host_ip;
    t->nports++;
  }
}

int carp_prov_node_going(const struct carp_cluster *c,
                         const struct carp_node *n,
                         const struct carp_nodeclaim *nc)
{
  uint32_t i;
  if (n->meta.deletion_ms)
    return 1;
  if (nc && (nc->meta.deletion_ms || carp_cluster_is_marked(c, nc->meta.name)))
    return 1;
  for (i = 0; i < n->ntaints; i++)
    if (!strcmp(n->taints[i].key, CARP_TAINT_DISRUPTED))
      return 1;
  return 0;
}

struct builder {
  struct carp_prov_problem *pr;
  const struct carp_cluster *c;
  struct carp_map target_index; /* name -> index + 1 */
  struct target *targets;
  struct carp_sched_node *nodes;
  size_t nnodes, capnodes;
  /* Pods on nodes that are going away (still running there). */
  const struct carp_pod **moving;
  size_t nmoving, capmoving;
};

static size_t add_node_slot(struct builder *b, const char *name, int is_claim)
{
  struct carp_prov_problem *pr = b->pr;
  if (b->nnodes == b->capnodes) {
    size_t cap = b->capnodes ? b->capnodes * 2 : 64;
    struct carp_sched_node *n = carp_arena_array(A, cap, sizeof(*n));
    struct target *t = carp_arena_array(A, cap, sizeof(*t));
    const char **names = carp_arena_array(A, cap, sizeof(char *));
    int *isc = carp_arena_array(A, cap, sizeof(int));
    const struct carp_node **objs = carp_arena_array(A, cap, sizeof(*objs));
    if (b->nnodes) {
      memcpy(n, b->nodes, b->nnodes * sizeof(*n));
      memcpy(t, b->targets, b->nnodes * sizeof(*t));
      memcpy(names, pr->node_names, b->nnodes * sizeof(char *));
      memcpy(isc, pr->node_is_claim, b->nnodes * sizeof(int));
      memcpy(objs, pr->node_objs, b->nnodes * sizeof(*objs));
    }
    b->nodes = n;
    b->targets = t;
    pr->node_names = names;
    pr->node_is_claim = isc;
    pr->node_objs = objs;
    b->capnodes = cap;
  }
  pr->node_names[b->nnodes] = name;
  pr->node_is_claim[b->nnodes] = is_claim;
  pr->node_objs[b->nnodes] = NULL;
  carp_map_puts(&b->target_index, name, (void *)(uintptr_t)(b->nnodes + 1));
  return b->nnodes++;
}

/* A second name for a slot: a NodeClaim and its Node are one target, and
 * a pod nominated to either (it was nominated to the claim before its
 * Node existed) counts there. */
static void alias_slot(struct builder *b, const char *name, size_t k)
{
  if (name && !carp_map_gets(&b->target_index, name))
    carp_map_puts(&b->target_index, name, (void *)(uintptr_t)(k + 1));
}

static void add_moving(struct builder *b, const struct carp_pod *p)
{
  if (b->nmoving == b->capmoving) {
    b->capmoving = b->capmoving ? b->capmoving * 2 : 16;
    b->moving = carp_reallocarray(b->moving, b->capmoving, sizeof(*b->moving));
  }
  b->moving[b->nmoving++] = p;
}

/* The pods bound to a node count in its slot; those that will have to
 * move when it goes are remembered. */
static void add_bound_requests(struct builder *b, size_t k, const char *node,
                               int going)
{
  struct carp_objmeta *const *pods;
  size_t np, i;
  pods = carp_cluster_pods_on_node(b->c, node, &np);
  for (i = 0; i < np; i++) {
    const struct carp_pod *p = (const struct carp_pod *)pods[i];
    if (carp_pod_is_terminal(p))
      continue;
    carp_resources_add(&b->targets[k].requested, &p->spec->requests);
    add_ports(b->pr, &b->targets[k], p->spec);
    if (going && carp_pod_is_reschedulable(p))
      add_moving(b, p);
  }
}

/* A Node Carpenter launched is read through its NodeClaim until it is
 * registered: before that its labels and taints are the kubelet's raw
 * ones (the NodePool's are not synced yet), and planning around them
 * would find it unusable and launch another claim for the same pods. */
static int node_registered(const struct carp_node *n,
                           const struct carp_nodeclaim *nc)
{
  /* Our registration patch sets the label; the claim's condition is
   * written once it succeeded. */
  return carp_kvset_has(n->meta.labels, CARP_LABEL_REGISTERED) ||
         carp_conditions_is_true(&nc->status.conditions, CARP_COND_REGISTERED);
}

static void add_nodes(struct builder *b)
{
  struct carp_prov_problem *pr = b->pr;
  const struct carp_cluster *c = b->c;
  struct carp_store_iter it;
  struct carp_objmeta *m;

  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->nodes), &it))) {
    const struct carp_node *n = (const struct carp_node *)m;
    const struct carp_nodeclaim *nc = carp_cluster_nodeclaim_of_node(c, n);
    const char *pool = carp_kvset_get(m->labels, CARP_LABEL_NODEPOOL_KEY);
    struct carp_sched_node *o;
    size_t k;
    int going;
    if (nc && !node_registered(n, nc))
      continue; /* add_claims: the claim stands for it */
    going = carp_prov_node_going(c, n, nc);
    k = add_node_slot(b, m->name, 0);
    o = &b->nodes[k];
    pr->node_objs[k] = n;
    if (nc)
      alias_slot(b, nc->meta.name, k);
    o->name = m->name;
    o->nodepool = pool;
    o->initialized = !pool || carp_kvset_has(m->labels, CARP_LABEL_INITIALIZED);
    o->deleting = going || n->unschedulable;
    o->labels = labels_of(pr, m->labels, &o->nlabels);
    o->taints = taints_of(pr, n->taints, n->ntaints);
    o->ntaints = n->ntaints;
    o->allocatable = carp_prov_quantities(A, &n->allocatable, &o->nallocatable);
    carp_resources_copy(&b->targets[k].allocatable, &n->allocatable);
    add_bound_requests(b, k, m->name, going);
  }
}

static void add_claims(struct builder *b)
{
  struct carp_prov_problem *pr = b->pr;
  const struct carp_cluster *c = b->c;
  struct carp_store_iter it;
  struct carp_objmeta *m;

  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->nodeclaims), &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    const struct carp_node *node = carp_cluster_node_of_nodeclaim(c, nc);
    struct carp_sched_node *o;
    struct carp_resources alloc;
    size_t k;
    /* A claim with a registered Node is that Node (add_nodes). */
    if ((node && node_registered(node, nc)) || m->deletion_ms ||
        carp_cluster_is_marked(c, m->name))
      continue;
    k = add_node_slot(b, m->name, 1);
    o = &b->nodes[k];
    o->name = m->name;
    o->nodepool = carp_nodeclaim_nodepool(nc);
    o->in_flight = 1;
    o->labels = labels_of(pr, m->labels, &o->nlabels);
    o->requirements =
        reqs_of(pr, nc->spec.requirements, nc->spec.nrequirements, 0);
    o->nrequirements = nc->spec.nrequirements;
    o->taints = taints_of(pr, nc->spec.taints, nc->spec.ntaints);
    o->ntaints = nc->spec.ntaints;
    if (nc->status.allocatable.cpu || nc->status.allocatable.memory)
      carp_resources_copy(&alloc, &nc->status.allocatable);
    else
      carp_cluster_claim_shape(c, nc, NULL, &alloc);
    o->allocatable = carp_prov_quantities(A, &alloc, &o->nallocatable);
    b->targets[k].allocatable = alloc; /* freed with the targets */
    /* Its pods are counted through their nominations (below), as
     * Karpenter counts an in-flight claim's pods; after a restart they are
     * pending and not nominated, and the solve places them on it again.
     * A Node that joined but is not registered yet may already run a few
     * (DaemonSet pods that tolerate everything). */
    if (node) {
      pr->node_objs[k] = node;
      alias_slot(b, node->meta.name, k);
      add_bound_requests(b, k, node->meta.name, 0);
    }
  }
}

/* ---- instance types and pools ---- */

static const char *amd64_values[] = {"amd64"};
static const char *linux_values[] = {"linux"};

static void add_type(struct carp_prov_problem *pr,
                     struct carp_sched_instance_type *o,
                     const struct carp_provider_instance_type *t)
{
  struct carp_sched_requirement *r =
      carp_arena_array(A, 4 + t->nlabels, sizeof(*r));
  struct carp_sched_offering *off;
  const char **regions, **family;
  size_t i, nregions = 0, j, nr;
  r[0] = (struct carp_sched_requirement){CARP_LABEL_ARCH, CARP_SCHED_OP_IN,
                                         amd64_values, 1, 0};
  r[1] = (struct carp_sched_requirement){CARP_LABEL_OS, CARP_SCHED_OP_IN,
                                         linux_values, 1, 0};
  family = carp_arena_array(A, 1, sizeof(char *));
  family[0] = t->family;
  r[2] = (struct carp_sched_requirement){CARP_LABEL_INSTANCE_FAMILY,
                                         CARP_SCHED_OP_IN, family, 1, 0};
  regions = carp_arena_array(A, t->nofferings + 1, sizeof(char *));
  off = carp_arena_array(A, t->nofferings + 1, sizeof(*off));
  for (i = 0; i < t->nofferings; i++) {
    int seen = 0;
    off[i].zone = t->offerings[i].zone;
    off[i].capacity_type = t->offerings[i].capacity_type;
    off[i].price = t->offerings[i].price;
    off[i].available = t->offerings[i].available;
    for (j = 0; j < nregions && !seen; j++)
      seen = !strcmp(regions[j], t->offerings[i].region);
    if (!seen)
      regions[nregions++] = t->offerings[i].region;
  }
  r[3] = (struct carp_sched_requirement){CARP_LABEL_REGION, CARP_SCHED_OP_IN,
                                         regions, nregions, 0};
  nr = nregions ? 4 : 3;
  /* The type's own labels (its GPUs), or DoesNotExist for those it lacks. */
  for (i = 0; i < t->nlabels; i++) {
    const char **v = carp_arena_array(A, 1, sizeof(char *));
    v[0] = t->labels[i].value;
    r[nr++] = (struct carp_sched_requirement){
        t->labels[i].key,
        t->labels[i].absent ? CARP_SCHED_OP_DOES_NOT_EXIST : CARP_SCHED_OP_IN,
        t->labels[i].absent ? NULL : v, t->labels[i].absent ? 0 : 1, 0};
  }
  o->name = t->name;
  o->requirements = r;
  o->nrequirements = nr;
  o->capacity = carp_prov_quantities(A, &t->capacity, &o->ncapacity);
  o->kube_reserved =
      carp_prov_quantities(A, &t->kube_reserved, &o->nkube_reserved);
  o->system_reserved =
      carp_prov_quantities(A, &t->system_reserved, &o->nsystem_reserved);
  o->eviction_threshold =
      carp_prov_quantities(A, &t->eviction_threshold, &o->neviction_threshold);
  o->offerings = off;
  o->nofferings = t->nofferings;
}

static int pool_usable(const struct carp_cluster *c,
                       const struct carp_nodepool *np,
                       const struct carp_nodeclass **cls)
{
  *cls = carp_cluster_nodeclass(c, np->tmpl.node_class_ref.name);
  /* Ready as the NodePool and NodeClass controllers last saw them
   * (validation, class readiness, regions, templates, bootstrap). */
  return np->valid && !np->meta.deletion_ms && !np->has_replicas && *cls &&
         (*cls)->valid && !(*cls)->meta.deletion_ms &&
         !strcmp(np->tmpl.node_class_ref.kind, CARP_NODECLASS_KIND) &&
         carp_conditions_is_true(&np->status.conditions, CARP_COND_READY) &&
         carp_conditions_is_true(&(*cls)->status.conditions, CARP_COND_READY);
}

static const struct carp_sched_quantity *
limits_of(struct carp_prov_problem *pr, const struct carp_nodepool *np,
          size_t *n)
{
  static const char *const names[] = {"cpu", "memory", "ephemeral-storage",
                                      "pods", "nodes"};
  struct carp_sched_quantity *q =
      carp_arena_array(A, 5 + np->limits.values.nextended, sizeof(*q));
  size_t i, k = 0;
  int64_t v;
  for (i = 0; i < 5; i++) {
    if (carp_nodepool_limit(np, names[i], &v))
      q[k++] = (struct carp_sched_quantity){
          names[i], strcmp(names[i], "cpu") ? v * 1000 : v};
  }
  for (i = 0; i < np->limits.values.nextended; i++) {
    const char *name = np->limits.values.extended[i].name;
    if (!strcmp(name, "nodes"))
      continue;
    q[k++] = (struct carp_sched_quantity){
        name, np->limits.values.extended[i].value * 1000};
  }
  *n = k;
  return q;
}

static int add_pools(struct carp_prov_problem *pr, const struct carp_cluster *c,
                     struct carp_provider *provider)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct carp_sched_nodepool *pools;
  struct carp_sched_instance_type *types = NULL;
  const struct carp_provider_instance_type **tref = NULL;
  const char **class_names;
  size_t *class_start, *class_n;
  size_t npools = 0, cap = carp_store_len(carp_informer_store(c->nodepools));
  size_t ntypes = 0, captypes = 0, j;
  /* With NodeOverlays in force each pool sees its own types (an overlay
   * may match the pool's name or labels); else pools share their class's. */
  const struct carp_nodeoverlay **ovs = NULL;
  size_t novs = carp_overlays_in_force(c, &ovs);

  pools = carp_arena_array(A, cap + 1, sizeof(*pools));
  pr->pools = carp_arena_array(A, cap + 1, sizeof(*pr->pools));
  pr->classes = carp_calloc(cap + 1, sizeof(*pr->classes));
  class_names = carp_arena_array(A, cap + 1, sizeof(char *));
  class_start = carp_arena_array(A, cap + 1, sizeof(size_t));
  class_n = carp_arena_array(A, cap + 1, sizeof(size_t));

  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->nodepools), &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)m;
    const struct carp_nodeclass *cls;
    struct carp_sched_nodepool *o;
    struct carp_sched_requirement *r;
    struct carp_resources usage;
    struct carp_sched_quantity *u;
    size_t ci, nu;
    int64_t nodes;
    uint32_t *idx;
    if (!pool_usable(c, np, &cls))
      continue;
    /* Instance types of its class, fetched once per class (per pool
     * with overlays in force). */
    for (ci = novs ? pr->nclasses : 0; ci < pr->nclasses; ci++)
      if (!strcmp(class_names[ci], cls->meta.name))
        break;
    if (ci == pr->nclasses) {
      struct carp_provider_instance_types *pt = &pr->classes[ci];
      if (carp_provider_instance_types(provider, "provisioner", cls, pt)) {
        CARP_LOG_WARN("provisioner", "no instance types for node class",
                      CARP_F_STR("nodeclass", cls->meta.name));
        continue;
      }
      carp_overlays_apply(ovs, novs, np, cls->meta.name, pt);
      class_names[ci] = cls->meta.name;
      class_start[ci] = ntypes;
      class_n[ci] = pt->n;
      pr->nclasses++;
      if (ntypes + pt->n > captypes) {
        size_t ncap = (ntypes + pt->n) * 2;
        struct carp_sched_instance_type *nt =
            carp_arena_array(A, ncap, sizeof(*nt));
        const struct carp_provider_instance_type **nr =
            carp_arena_array(A, ncap, sizeof(*nr));
        if (ntypes) {
          memcpy(nt, types, ntypes * sizeof(*nt));
          memcpy(nr, tref, ntypes * sizeof(*nr));
        }
        types = nt;
        tref = nr;
        captypes = ncap;
      }
      for (j = 0; j < pt->n; j++) {
        add_type(pr, &types[ntypes], &pt->v[j]);
        tref[ntypes++] = &pt->v[j];
      }
    }
    o = &pools[npools];
    pr->pools[npools++] = np;
    o->name = m->name;
    o->weight = np->weight;
    o->labels = labels_of(pr, np->labels, &o->nlabels);
    r = reqs_of(pr, np->tmpl.requirements, np->tmpl.nrequirements, 2);
    one_value(pr, &r[np->tmpl.nrequirements], CARP_LABEL_NODEPOOL, m->name);
    one_value(pr, &r[np->tmpl.nrequirements + 1], CARP_LABEL_NODECLASS_KEY,
              cls->meta.name);
    o->requirements = r;
    o->nrequirements = np->tmpl.nrequirements + 2;
    o->taints = taints_of(pr, np->tmpl.taints, np->tmpl.ntaints);
    o->ntaints = np->tmpl.ntaints;
    o->startup_taints =
        taints_of(pr, np->tmpl.startup_taints, np->tmpl.nstartup_taints);
    o->nstartup_taints = np->tmpl.nstartup_taints;
    idx = carp_arena_array(A, class_n[ci] + 1, sizeof(uint32_t));
    for (j = 0; j < class_n[ci]; j++)
      idx[j] = (uint32_t)(class_start[ci] + j);
    o->instance_types = idx;
    o->ninstance_types = class_n[ci];
    o->limits = limits_of(pr, np, &o->nlimits);
    carp_cluster_nodepool_usage(c, m->name, &usage, &nodes);
    {
      const struct carp_sched_quantity *q =
          carp_prov_quantities(A, &usage, &nu);
      u = carp_arena_array(A, nu + 1, sizeof(*u));
      memcpy(u, q, nu * sizeof(*u));
      u[nu++] = (struct carp_sched_quantity){CARP_RESOURCE_NODES, nodes * 1000};
    }
    carp_resources_cleanup(&usage);
    o->usage = u;
    o->nusage = nu;
  }
  pr->p.nodepools = pools;
  pr->p.nnodepools = npools;
  pr->p.instance_types = types;
  pr->p.ninstance_types = ntypes;
  pr->types = tref;
  carp_free(ovs);
  return 0;
}

static void add_daemons(struct carp_prov_problem *pr,
                        const struct carp_cluster *c)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  size_t cap = carp_store_len(carp_informer_store(c->daemonsets)), n = 0;
  struct carp_sched_daemon *d = carp_arena_array(A, cap + 1, sizeof(*d));
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->daemonsets), &it))) {
    const struct carp_daemonset *ds = (const struct carp_daemonset *)m;
    const struct carp_podspec *s = ds->spec;
    d[n].name = m->name;
    d[n].requests = carp_prov_quantities(A, &s->requests, &d[n].nrequests);
    d[n].node_selector = labels_of(pr, s->node_selector, &d[n].nnode_selector);
    d[n].required_terms = terms_of(pr, s->required, s->nrequired);
    d[n].nrequired_terms = s->nrequired;
    d[n].tolerations = tolerations_of(pr, s->tolerations, s->ntolerations);
    d[n].ntolerations = s->ntolerations;
    d[n].host_ports = ports_of(pr, s);
    d[n].nhost_ports = s->nhost_ports;
    n++;
  }
  pr->p.daemons = d;
  pr->p.ndaemons = n;
}

/* Whether r still fits on t beside what t already holds. */
static int fits(const struct target *t, const struct carp_resources *r)
{
  uint32_t i;
  if (t->requested.cpu + r->cpu > t->allocatable.cpu ||
      t->requested.memory + r->memory > t->allocatable.memory ||
      (t->allocatable.pods &&
       t->requested.pods + r->pods > t->allocatable.pods))
    return 0;
  for (i = 0; i < r->nextended; i++)
    if (carp_resources_get(&t->requested, r->extended[i].name) +
            r->extended[i].value >
        carp_resources_get(&t->allocatable, r->extended[i].name))
      return 0;
  return 1;
}

/* The runaway guard. A pod nominated to a target that is still there and
 * not going away is headed for it: it counts there and nothing new is
 * launched for it until the nomination lapses, whether or not the target
 * can take it yet (a Node may keep a taint, stay NotReady or be slow to
 * register; the provisioner reports that instead, see
 * carp_prov_why_waiting). The one exception is a target that filled up
 * meanwhile: the kube-scheduler binds pods where it likes, so others may
 * have taken the room this pod was planned into; then it is placed anew. */
static int headed_slot(struct builder *b, const struct carp_pod *p, size_t *k,
                       struct carp_nomination_info *nm, int ignore_nominations)
{
  void *slot =
      !ignore_nominations && carp_cluster_nomination_info(b->c, p->meta.uid, nm)
          ? carp_map_gets(&b->target_index, nm->target)
          : NULL;
  if (!slot)
    return 0;
  *k = (uintptr_t)slot - 1;
  return !b->nodes[*k].deleting && fits(&b->targets[*k], &p->spec->requests);
}

/* ---- putting it together ---- */

static void add_bound_pods(struct builder *b, int all)
{
  struct carp_prov_problem *pr = b->pr;
  const struct carp_cluster *c = b->c;
  struct carp_store_iter it;
  struct carp_objmeta *m;
  struct carp_sched_bound_pod *bp = NULL;
  size_t n = 0, cap = 0;
  carp_store_iter_init(&it);
  while ((m = carp_store_next(carp_informer_store(c->pods), &it))) {
    const struct carp_pod *p = (const struct carp_pod *)m;
    void *slot;
    if (!p->node_name || carp_pod_is_terminal(p))
      continue;
    if (!all && !p->spec->nanti_affinity)
      continue;
    slot = carp_map_gets(&b->target_index, p->node_name);
    if (!slot)
      continue;
    if (n == cap) {
      struct carp_sched_bound_pod *nb;
      cap = cap ? cap * 2 : 256;
      nb = carp_arena_array(A, cap, sizeof(*nb));
      if (n)
        memcpy(nb, bp, n * sizeof(*nb));
      bp = nb;
    }
    bp[n].namespace_ = m->namespace;
    bp[n].labels = labels_of(pr, m->labels, &bp[n].nlabels);
    bp[n].node = (uint32_t)((uintptr_t)slot - 1);
    bp[n].anti_affinity =
        pod_terms_of(pr, p->spec->anti_affinity, p->spec->nanti_affinity);
    bp[n].nanti_affinity = p->spec->nanti_affinity;
    n++;
  }
  pr->p.bound_pods = bp;
  pr->p.nbound_pods = n;
}

int carp_prov_problem_build(struct carp_prov_problem *pr,
                            const struct carp_cluster *c,
                            struct carp_provider *provider,
                            const struct carp_prov_input *in)
{
  struct builder b;
  struct carp_sched_pod *pods;
  size_t i, total, npods = 0;
  int topology = 0;

  memset(pr, 0, sizeof(*pr));
  carp_arena_init(&pr->arena);
  memset(&b, 0, sizeof(b));
  b.pr = pr;
  b.c = c;
  carp_map_init(&b.target_index);

  add_nodes(&b);
  add_claims(&b);

  /* Pending pods first, then those still running on nodes that go (not
   * for a question about given pods only: consolidation's). */
  if (in->ignore_nominations)
    b.nmoving = 0;
  total = in->npending + b.nmoving;
  pods = carp_arena_array(A, total + 1, sizeof(*pods));
  pr->pods = carp_arena_array(A, total + 1, sizeof(*pr->pods));
  pr->headed = carp_arena_array(A, total + 1, sizeof(*pr->headed));
  pr->nmoving = b.nmoving;
  for (i = 0; i < total; i++) {
    const struct carp_pod *p =
        i < in->npending ? in->pending[i] : b.moving[i - in->npending];
    struct carp_nomination_info nm;
    size_t k;
    if (headed_slot(&b, p, &k, &nm, in->ignore_nominations)) {
      struct carp_prov_headed *h = &pr->headed[pr->nheaded++];
      carp_resources_add(&b.targets[k].requested, &p->spec->requests);
      add_ports(pr, &b.targets[k], p->spec);
      h->pod = p;
      h->slot = (uint32_t)k;
      h->since_ms = nm.since_ms;
      h->until_ms = nm.until_ms;
      continue;
    }
    pod_of(pr, p, &pods[npods]);
    pr->pods[npods++] = p;
    topology |= has_topology(p->spec);
  }
  carp_free(b.moving);
  pr->p.pods = pods;
  pr->p.npods = npods;

  for (i = 0; i < b.nnodes; i++) {
    b.nodes[i].requested = carp_prov_quantities(A, &b.targets[i].requested,
                                                &b.nodes[i].nrequested);
    b.nodes[i].host_ports = b.targets[i].ports;
    b.nodes[i].nhost_ports = b.targets[i].nports;
    carp_resources_cleanup(&b.targets[i].requested);
    carp_resources_cleanup(&b.targets[i].allocatable);
  }
  pr->p.nodes = b.nodes;
  pr->p.nnodes = b.nnodes;
  if (!npods && in->stop_when_all_headed) {
    carp_map_free(&b.target_index);
    return 0;
  }
  add_bound_pods(&b, topology);
  add_pools(pr, c, provider);
  add_daemons(pr, c);
  pr->p.ignore_preferences = in->ignore_preferences;
  carp_map_free(&b.target_index);
  return 0;
}

/* ---- why a headed pod waits ---- */

const char *carp_prov_wait_name(enum carp_prov_wait w)
{
  switch (w) {
  case CARP_PROV_WAIT_NOT_REGISTERED:
    return "not_registered";
  case CARP_PROV_WAIT_NOT_READY:
    return "not_ready";
  case CARP_PROV_WAIT_TAINT:
    return "taint";
  case CARP_PROV_WAIT_NONE:
    break;
  }
  return "none";
}

enum carp_prov_wait carp_prov_why_waiting(const struct carp_prov_problem *pr,
                                          const struct carp_prov_headed *h,
                                          struct carp_buf *why)
{
  const struct carp_node *n = pr->node_objs[h->slot];
  const struct carp_podspec *s = h->pod->spec;
  uint32_t i, k;
  if (!n)
    return CARP_PROV_WAIT_NONE;
  if (pr->node_is_claim[h->slot]) {
    carp_buf_printf(why,
                    "node %s has not been registered (its NodePool labels "
                    "and taints are not on it yet)",
                    n->meta.name);
    return CARP_PROV_WAIT_NOT_REGISTERED;
  }
  if (n->ready.status != 1) {
    carp_buf_printf(why, "node %s is not Ready", n->meta.name);
    return CARP_PROV_WAIT_NOT_READY;
  }
  /* The kube-scheduler's rule, with no taint ignored: the solve may count
   * a taint as passing (not-ready, a startup taint), the scheduler does
   * not. */
  for (i = 0; i < n->ntaints; i++) {
    const struct carp_taint *t = &n->taints[i];
    struct carp_sched_taint st = {t->key, t->value, effect_of(t->effect)};
    if (t->effect == CARP_EFFECT_PREFER_NO_SCHEDULE)
      continue;
    for (k = 0; k < s->ntolerations; k++) {
      const struct carp_toleration *tl = &s->tolerations[k];
      struct carp_sched_toleration sl = {tl->key,
                                         tl->exists ? CARP_SCHED_TOLERATE_EXISTS
                                                    : CARP_SCHED_TOLERATE_EQUAL,
                                         tl->value, effect_of(tl->effect)};
      if (carp_sched_tolerates(&sl, &st))
        break;
    }
    if (k < s->ntolerations)
      continue;
    carp_buf_printf(why,
                    "node %s has taint %s%s%s:%s, which the pod does not "
                    "tolerate",
                    n->meta.name, t->key, t->value && *t->value ? "=" : "",
                    t->value ? t->value : "",
                    carp_taint_effect_name(t->effect));
    return CARP_PROV_WAIT_TAINT;
  }
  return CARP_PROV_WAIT_NONE;
}

void carp_prov_problem_free(struct carp_prov_problem *pr)
{
  size_t i;
  for (i = 0; i < pr->nclasses; i++)
    carp_provider_instance_types_free(&pr->classes[i]);
  carp_free(pr->classes);
  carp_arena_free(&pr->arena);
  memset(pr, 0, sizeof(*pr));
}
