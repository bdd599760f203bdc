/* nodeclaim.c: the cached NodeClaim - its spec (defaults applied), status
 * (providerID, nodeName, imageID, capacity, allocatable, conditions,
 * lastPodEventTime) and validation result - and the merge patch that
 * writes its status. */
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/timeutil.h"

static void nodeclaim_free(struct carp_objmeta *m)
{
  struct carp_nodeclaim *nc = (struct carp_nodeclaim *)m;
  carp_objmeta_cleanup(&nc->meta);
  api_claim_spec_cleanup(&nc->spec);
  carp_nodeclaim_status_cleanup(&nc->status);
  carp_free(nc->invalid_reason);
  carp_free(nc);
}

static char *dup_nonempty(const char *s)
{
  return s && *s ? carp_strdup(s) : NULL;
}

static int decode_status(yajl_val obj, struct carp_nodeclaim_status *st,
                         char **err)
{
  yajl_val status, cap, alloc, conds;
  const char *pid, *node, *image;
  if (api_obj(obj, "status", "", &status, err) ||
      api_str(status, "providerID", "status", &pid, err) ||
      api_str(status, "nodeName", "status", &node, err) ||
      api_str(status, "imageID", "status", &image, err) ||
      api_obj(status, "capacity", "status", &cap, err) ||
      api_obj(status, "allocatable", "status", &alloc, err) ||
      api_arr(status, "conditions", "status", &conds, err))
    return CARP_EPARSE;
  if (carp_json_time(status, &st->last_pod_event_ms, "lastPodEventTime"))
    return carp_api_error(err, "status.lastPodEventTime", "not a valid time");
  st->provider_id = dup_nonempty(pid);
  st->node_name = dup_nonempty(node);
  st->image_id = dup_nonempty(image);
  if (api_resources(cap, "status.capacity", &st->capacity, NULL, err) ||
      api_resources(alloc, "status.allocatable", &st->allocatable, NULL, err))
    return CARP_EPARSE;
  return carp_conditions_decode(conds, "status.conditions", &st->conditions,
                                err);
}

/* Every annotation is kept: registration copies them all to the Node, as
 * Karpenter does (NodePool template annotations included), but kubectl's
 * copy of a whole applied manifest, which is no annotation of the node. */
static int keep_claim_annotation(const char *key)
{
  return strcmp(key, "kubectl.kubernetes.io/last-applied-configuration") != 0;
}

static int nodeclaim_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_nodeclaim *nc = CARP_NEW(struct carp_nodeclaim);
  yajl_val spec;
  if (carp_objmeta_decode(obj, keep_claim_annotation, &nc->meta, err)) {
    carp_free(nc);
    return CARP_EPARSE;
  }
  nc->meta.kind = &carp_kind_nodeclaim;
  if (api_obj(obj, "spec", "", &spec, err) ||
      api_claim_spec_decode(spec, "spec", 1, &nc->spec, err) ||
      decode_status(obj, &nc->status, err)) {
    nodeclaim_free(&nc->meta);
    return CARP_EPARSE;
  }
  nc->valid = carp_nodeclaim_validate(obj, &nc->invalid_reason) == 0;
  *out = &nc->meta;
  return 0;
}

const struct carp_kind carp_kind_nodeclaim = {
    .name = "NodeClaim",
    .group = CARP_KARPENTER_GROUP,
    .version = CARP_KARPENTER_VERSION,
    .resource = "nodeclaims",
    .namespaced = 0,
    .decode = nodeclaim_decode,
    .free = nodeclaim_free,
};

const char *carp_nodeclaim_nodepool(const struct carp_nodeclaim *nc)
{
  return carp_kvset_get(nc->meta.labels, CARP_LABEL_NODEPOOL_KEY);
}

void carp_nodeclaim_status_copy(struct carp_nodeclaim_status *dst,
                                const struct carp_nodeclaim_status *src)
{
  dst->provider_id = dup_nonempty(src->provider_id);
  dst->node_name = dup_nonempty(src->node_name);
  dst->image_id = dup_nonempty(src->image_id);
  carp_resources_copy(&dst->capacity, &src->capacity);
  carp_resources_copy(&dst->allocatable, &src->allocatable);
  carp_conditions_copy(&dst->conditions, &src->conditions);
  dst->last_pod_event_ms = src->last_pod_event_ms;
}

void carp_nodeclaim_status_cleanup(struct carp_nodeclaim_status *st)
{
  carp_free(st->provider_id);
  carp_free(st->node_name);
  carp_free(st->image_id);
  carp_resources_cleanup(&st->capacity);
  carp_resources_cleanup(&st->allocatable);
  carp_conditions_cleanup(&st->conditions);
  memset(st, 0, sizeof(*st));
}

int carp_nodeclaim_status_patch(const struct carp_nodeclaim_status *st,
                                const char *rv, struct carp_buf *out)
{
  struct carp_jw w;
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
  if (st->provider_id)
    carp_jw_kstr(&w, "providerID", st->provider_id);
  if (st->node_name)
    carp_jw_kstr(&w, "nodeName", st->node_name);
  if (st->image_id)
    carp_jw_kstr(&w, "imageID", st->image_id);
  carp_jw_key(&w, "capacity");
  carp_resources_encode(&w, &st->capacity, NULL);
  carp_jw_key(&w, "allocatable");
  carp_resources_encode(&w, &st->allocatable, NULL);
  if (st->last_pod_event_ms) {
    char ts[CARP_RFC3339_LEN];
    carp_time_format_rfc3339(st->last_pod_event_ms, 0, ts);
    carp_jw_kstr(&w, "lastPodEventTime", ts);
  }
  carp_jw_key(&w, "conditions");
  carp_conditions_encode(&w, &st->conditions);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}
