/* node.c: the cached Node: provider ID (the link to a NodeClaim and its
 * VM), taints, capacity and allocatable, the Ready condition (with its
 * heartbeat), every condition compactly, and whether it is cordoned. Only
 * Karpenter's and Carpenter's annotations are kept. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/json.h"

static int keep_annotation(const char *key)
{
  return !strncmp(key, "karpenter.sh/", 13) ||
         !strncmp(key, "carpenter.dev/", 14);
}

static void node_free(struct carp_objmeta *m)
{
  struct carp_node *n = (struct carp_node *)m;
  carp_objmeta_cleanup(&n->meta);
  carp_free(n->provider_id);
  carp_taints_free(n->taints, n->ntaints);
  carp_resources_cleanup(&n->capacity);
  carp_resources_cleanup(&n->allocatable);
  carp_kvset_release(n->conds);
  carp_free(n->cond_ms);
  carp_free(n);
}

int carp_node_condition_at(const struct carp_node *n, size_t i,
                           struct carp_node_cond *out)
{
  const char *v;
  if (!n->conds || i >= n->conds->n)
    return 0;
  v = n->conds->kv[i].value;
  out->type = n->conds->kv[i].key;
  out->status = *v == 'T' ? 1 : *v == 'F' ? 0 : -1;
  out->reason = *v ? v + 1 : v;
  out->transition_ms = n->cond_ms[i];
  return 1;
}

/* ---- decoding from parser events ---- */

struct node_dec {
  struct carp_objmeta_dec meta;
  struct carp_taints_dec taints;
  struct carp_resources_dec capacity, allocatable;
  struct carp_buf provider_id;
  int has_provider_id;
  int unschedulable;
  struct carp_node_condition ready;
  int c_ready, c_status; /* the condition being read: see on_condition */
  int64_t c_transition, c_heartbeat;
  /* Every condition with a type: "type\0<T|F|U>reason\0" each in conds,
   * where each starts in cond_at, its lastTransitionTime in cond_ms. The
   * one being read: c_type, c_reason (empty when absent). */
  struct carp_buf conds, c_type, c_reason;
  size_t *cond_at;
  int64_t *cond_ms;
  size_t nconds, capconds;
};

enum { N_METADATA = 0, N_SPEC, N_STATUS };
static const char *const node_keys[] = {"metadata", "spec", "status", NULL};
enum { SP_PROVIDER_ID = 0, SP_UNSCHEDULABLE, SP_TAINTS };
static const char *const spec_keys[] = {"providerID", "unschedulable", "taints",
                                        NULL};
enum { ST_CAPACITY = 0, ST_ALLOCATABLE, ST_CONDITIONS };
static const char *const status_keys[] = {"capacity", "allocatable",
                                          "conditions", NULL};
enum { CD_TYPE = 0, CD_STATUS, CD_TRANSITION, CD_HEARTBEAT, CD_REASON };
static const char *const condition_keys[] = {
    "type",   "status", "lastTransitionTime", "lastHeartbeatTime",
    "reason", NULL};

/* Keeps the condition just read (one with a type) for conds. */
static void keep_condition(struct node_dec *nd)
{
  static const char status_letter[] = {'U', 'F', 'T'};
  if (!nd->c_type.len)
    return;
  if (nd->nconds == nd->capconds) {
    nd->capconds = nd->capconds ? nd->capconds * 2 : 8;
    nd->cond_at =
        carp_reallocarray(nd->cond_at, nd->capconds, sizeof(*nd->cond_at));
    nd->cond_ms =
        carp_reallocarray(nd->cond_ms, nd->capconds, sizeof(*nd->cond_ms));
  }
  nd->cond_at[nd->nconds] = nd->conds.len;
  nd->cond_ms[nd->nconds++] = nd->c_transition;
  carp_buf_append(&nd->conds, nd->c_type.ptr, nd->c_type.len);
  carp_buf_putc(&nd->conds, '\0');
  carp_buf_putc(&nd->conds, status_letter[nd->c_status ? nd->c_status - 1 : 0]);
  if (nd->c_reason.len)
    carp_buf_append(&nd->conds, nd->c_reason.ptr, nd->c_reason.len);
  carp_buf_putc(&nd->conds, '\0');
}

/* c_ready: the type is Ready; c_status: 0 absent, 1 True, 0 False, -1
 * else (+2 so that 0 means absent). */
static int on_condition(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct node_dec *nd = ctx;
  switch (v->type == CARP_JEND ? -1 : carp_jdec_field(d)) {
  case -1:
    if (v->type == CARP_JEND && nd->c_ready && nd->c_status) {
      nd->ready.status = nd->c_status - 2;
      nd->ready.transition_ms = nd->c_transition;
      nd->ready.heartbeat_ms = nd->c_heartbeat;
    }
    if (v->type == CARP_JEND)
      keep_condition(nd);
    break;
  case CD_TYPE:
    nd->c_ready = v->type == CARP_JSTRING && !strcmp(v->s, "Ready");
    carp_buf_reset(&nd->c_type);
    if (v->type == CARP_JSTRING)
      carp_buf_append(&nd->c_type, v->s, v->len);
    break;
  case CD_REASON:
    carp_buf_reset(&nd->c_reason);
    if (v->type == CARP_JSTRING)
      carp_buf_append(&nd->c_reason, v->s, v->len);
    break;
  case CD_STATUS:
    if (v->type == CARP_JSTRING)
      nd->c_status = !strcmp(v->s, "True") ? 3 : !strcmp(v->s, "False") ? 2 : 1;
    break;
  case CD_TRANSITION:
    carp_jval_time(v, &nd->c_transition);
    break;
  case CD_HEARTBEAT:
    carp_jval_time(v, &nd->c_heartbeat);
    break;
  default:
    break;
  }
  return 0;
}

static int on_conditions(struct carp_jdec *d, void *ctx,
                         const struct carp_jval *v)
{
  struct node_dec *nd = ctx;
  if (v->type != CARP_JOBJECT)
    return 0;
  nd->c_ready = nd->c_status = 0;
  nd->c_transition = nd->c_heartbeat = 0;
  carp_buf_reset(&nd->c_type);
  carp_buf_reset(&nd->c_reason);
  carp_jdec_enter(d, on_condition, nd, condition_keys);
  return 0;
}

static int on_status(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct node_dec *nd = ctx;
  switch (v->type == CARP_JEND ? -1 : carp_jdec_field(d)) {
  case ST_CAPACITY:
    return carp_resources_dec_value(d, &nd->capacity, v);
  case ST_ALLOCATABLE:
    return carp_resources_dec_value(d, &nd->allocatable, v);
  case ST_CONDITIONS:
    if (v->type == CARP_JARRAY)
      carp_jdec_enter(d, on_conditions, nd, NULL);
    return 0;
  default:
    return 0;
  }
}

static int on_spec(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct node_dec *nd = ctx;
  switch (v->type == CARP_JEND ? -1 : carp_jdec_field(d)) {
  case SP_PROVIDER_ID:
    if (v->type == CARP_JSTRING && v->len) {
      carp_buf_append(&nd->provider_id, v->s, v->len);
      nd->has_provider_id = 1;
    }
    return 0;
  case SP_UNSCHEDULABLE:
    carp_jval_bool(v, &nd->unschedulable); /* else left 0 */
    return 0;
  case SP_TAINTS:
    return carp_taints_dec_value(d, &nd->taints, v);
  default:
    return 0;
  }
}

static int on_node(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct node_dec *nd = ctx;
  switch (v->type == CARP_JEND ? -1 : carp_jdec_field(d)) {
  case N_METADATA:
    return carp_objmeta_dec_value(d, &nd->meta, v);
  case N_SPEC:
    if (v->type == CARP_JOBJECT)
      carp_jdec_enter(d, on_spec, nd, spec_keys);
    return 0;
  case N_STATUS:
    if (v->type == CARP_JOBJECT)
      carp_jdec_enter(d, on_status, nd, status_keys);
    return 0;
  default:
    return 0;
  }
}

static void *node_dec_new(void)
{
  struct node_dec *nd = CARP_NEW(struct node_dec);
  carp_objmeta_dec_init(&nd->meta, keep_annotation);
  carp_taints_dec_init(&nd->taints);
  carp_buf_init(&nd->provider_id, CARP_BUF_UNLIMITED);
  carp_buf_init(&nd->conds, CARP_BUF_UNLIMITED);
  carp_buf_init(&nd->c_type, CARP_BUF_UNLIMITED);
  carp_buf_init(&nd->c_reason, CARP_BUF_UNLIMITED);
  return nd;
}

/* What the last object left in the resource decoders (a decode that did
 * not finish, or stopped at an earlier error) is released. */
static void node_dec_drop(struct node_dec *nd)
{
  struct carp_resources r;
  carp_resources_dec_finish(&nd->capacity, &r, NULL);
  carp_resources_cleanup(&r);
  carp_resources_dec_finish(&nd->allocatable, &r, NULL);
  carp_resources_cleanup(&r);
}

static void node_dec_free(void *state)
{
  struct node_dec *nd = state;
  node_dec_drop(nd);
  carp_objmeta_dec_free(&nd->meta);
  carp_taints_dec_free(&nd->taints);
  carp_buf_free(&nd->provider_id);
  carp_buf_free(&nd->conds);
  carp_buf_free(&nd->c_type);
  carp_buf_free(&nd->c_reason);
  carp_free(nd->cond_at);
  carp_free(nd->cond_ms);
  carp_free(nd);
}

static void node_dec_begin(void *state)
{
  struct node_dec *nd = state;
  node_dec_drop(nd);
  carp_objmeta_dec_reset(&nd->meta);
  carp_taints_dec_begin(&nd->taints, "spec.taints");
  carp_resources_dec_begin(&nd->capacity, "status.capacity");
  carp_resources_dec_begin(&nd->allocatable, "status.allocatable");
  carp_buf_reset(&nd->provider_id);
  nd->has_provider_id = 0;
  nd->unschedulable = 0;
  nd->ready.status = -1;
  nd->ready.transition_ms = nd->ready.heartbeat_ms = 0;
  carp_buf_reset(&nd->conds);
  nd->nconds = 0;
}

/* The conditions read, interned as a set, and their transition times in
 * the set's order (of a type given twice, the later). */
static void finish_conditions(struct node_dec *nd, struct carp_node *n)
{
  struct carp_kv *kv;
  size_t i, j;
  if (!nd->nconds)
    return;
  kv = carp_calloc(nd->nconds, sizeof(*kv));
  for (i = 0; i < nd->nconds; i++) {
    kv[i].key = nd->conds.ptr + nd->cond_at[i];
    kv[i].value = kv[i].key + strlen(kv[i].key) + 1;
  }
  n->conds = carp_kvset_make(kv, nd->nconds);
  n->cond_ms = carp_calloc(n->conds->n, sizeof(*n->cond_ms));
  for (i = 0; i < n->conds->n; i++)
    for (j = 0; j < nd->nconds; j++)
      if (!strcmp(n->conds->kv[i].key, kv[j].key))
        n->cond_ms[i] = nd->cond_ms[j];
  carp_free(kv);
}

static int node_dec_finish(void *state, struct carp_objmeta **out, char **err)
{
  struct node_dec *nd = state;
  struct carp_node *n = CARP_NEW(struct carp_node);

  if (carp_objmeta_dec_finish(&nd->meta, &n->meta, err)) {
    node_dec_drop(nd);
    carp_free(n);
    return CARP_EPARSE;
  }
  n->meta.kind = &carp_kind_node;
  if (carp_taints_dec_finish(&nd->taints, &n->taints, &n->ntaints, err) ||
      carp_resources_dec_finish(&nd->capacity, &n->capacity, err) ||
      carp_resources_dec_finish(&nd->allocatable, &n->allocatable, err)) {
    node_dec_drop(nd);
    node_free(&n->meta);
    return CARP_EPARSE;
  }
  n->provider_id =
      nd->has_provider_id ? carp_strdup(carp_buf_cstr(&nd->provider_id)) : NULL;
  n->unschedulable = nd->unschedulable;
  n->ready = nd->ready;
  finish_conditions(nd, n);
  *out = &n->meta;
  return 0;
}

static const struct carp_kind_stream node_stream = {
    .keys = node_keys,
    .state_new = node_dec_new,
    .state_free = node_dec_free,
    .begin = node_dec_begin,
    .member = on_node,
    .finish = node_dec_finish,
};

static int node_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  return carp_kind_decode_tree(&carp_kind_node, obj, out, err);
}

const struct carp_kind carp_kind_node = {
    .name = "Node",
    .group = "",
    .version = "v1",
    .resource = "nodes",
    .namespaced = 0,
    .decode = node_decode,
    .free = node_free,
    .stream = &node_stream,
};
