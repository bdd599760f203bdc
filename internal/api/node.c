/* node.c: the cached Node: provider ID (the link to a NodeClaim and its
 * VM), taints, capacity and allocatable, the Ready condition and whether
 * it is cordoned. Only Karpenter's and Carpenter's annotations are kept. */
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
  carp_free(n);
}

static int node_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_node *n = CARP_NEW(struct carp_node);
  yajl_val spec = carp_json_obj(obj, "spec", NULL);
  yajl_val status = carp_json_obj(obj, "status", NULL);
  yajl_val conds = carp_json_arr(status, "conditions", NULL);
  const char *pid = carp_json_str(spec, "providerID", NULL);
  size_t i;

  if (carp_objmeta_decode(obj, keep_annotation, &n->meta, err)) {
    carp_free(n);
    return CARP_EPARSE;
  }
  n->meta.kind = &carp_kind_node;
  n->ready.status = -1;
  if (carp_taints_decode(carp_json_get(spec, "taints", NULL), "spec.taints",
                         &n->taints, &n->ntaints, err) ||
      carp_resources_decode(carp_json_get(status, "capacity", NULL),
                            "status.capacity", &n->capacity, err) ||
      carp_resources_decode(carp_json_get(status, "allocatable", NULL),
                            "status.allocatable", &n->allocatable, err)) {
    node_free(&n->meta);
    return CARP_EPARSE;
  }
  n->provider_id = pid && *pid ? carp_strdup(pid) : NULL;
  carp_json_bool(spec, &n->unschedulable, "unschedulable", NULL);
  for (i = 0; conds && i < conds->u.array.len; i++) {
    yajl_val c = conds->u.array.values[i];
    const char *type = carp_json_str(c, "type", NULL);
    const char *st = carp_json_str(c, "status", NULL);
    if (!type || strcmp(type, "Ready") || !st)
      continue;
    n->ready.status = !strcmp(st, "True") ? 1 : !strcmp(st, "False") ? 0 : -1;
    carp_json_time(c, &n->ready.transition_ms, "lastTransitionTime");
    carp_json_time(c, &n->ready.heartbeat_ms, "lastHeartbeatTime");
  }
  *out = &n->meta;
  return 0;
}

const struct carp_kind carp_kind_node = {
    .name = "Node",
    .group = "",
    .version = "v1",
    .resource = "nodes",
    .namespaced = 0,
    .decode = node_decode,
    .free = node_free,
};
