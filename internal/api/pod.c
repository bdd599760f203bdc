/* pod.c: the cached Pod. Besides metadata and the shared podspec, a pod
 * keeps its binding, phase, and the conditions provisioning and metrics
 * read: PodScheduled (Unschedulable means Carpenter should act) and
 * Ready, with their transition times. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"

static int keep_annotation(const char *key)
{
  return !strcmp(key, CARP_ANN_DO_NOT_DISRUPT) ||
         !strcmp(key, CARP_ANN_POD_DELETION_COST) ||
         !strcmp(key, CARP_ANN_MIRROR);
}

static enum carp_pod_phase phase_of(const char *s)
{
  if (!s)
    return CARP_POD_PENDING;
  if (!strcmp(s, "Running"))
    return CARP_POD_RUNNING;
  if (!strcmp(s, "Succeeded"))
    return CARP_POD_SUCCEEDED;
  if (!strcmp(s, "Failed"))
    return CARP_POD_FAILED;
  if (!strcmp(s, "Pending"))
    return CARP_POD_PENDING;
  return CARP_POD_UNKNOWN;
}

static void pod_free(struct carp_objmeta *m)
{
  struct carp_pod *p = (struct carp_pod *)m;
  carp_objmeta_cleanup(&p->meta);
  carp_podspec_release(p->spec);
  carp_intern_release(p->node_name);
  carp_intern_release(p->nominated_node);
  for (uint32_t i = 0; i < p->npvcs; i++)
    carp_intern_release(p->pvcs[i]);
  carp_free(p->pvcs);
  carp_free(p);
}

/* The claims of spec.volumes (kept on the pod, not in the shared spec: a
 * StatefulSet's pods differ only there). */
static void read_pvcs(yajl_val spec, struct carp_pod *p)
{
  yajl_val vols = carp_json_arr(spec, "volumes", NULL);
  size_t i;
  for (i = 0; vols && i < vols->u.array.len; i++) {
    const char *claim = carp_json_str(
        vols->u.array.values[i], "persistentVolumeClaim", "claimName", NULL);
    if (!claim || !*claim)
      continue;
    p->pvcs = carp_reallocarray(p->pvcs, p->npvcs + 1, sizeof(*p->pvcs));
    p->pvcs[p->npvcs++] = carp_interns(claim);
  }
}

static void read_conditions(yajl_val status, struct carp_pod *p)
{
  yajl_val conds = carp_json_arr(status, "conditions", NULL);
  size_t i;
  for (i = 0; conds && i < conds->u.array.len; i++) {
    yajl_val c = conds->u.array.values[i];
    const char *type = carp_json_str(c, "type", NULL);
    const char *st = carp_json_str(c, "status", NULL);
    const char *reason = carp_json_str(c, "reason", NULL);
    int64_t at = 0;
    if (!type || !st)
      continue;
    carp_json_time(c, &at, "lastTransitionTime");
    if (!strcmp(type, "PodScheduled")) {
      if (!strcmp(st, "False")) {
        p->unschedulable = reason && !strcmp(reason, "Unschedulable");
        p->unschedulable_ms = at;
      } else if (!strcmp(st, "True")) {
        p->scheduled_ms = at;
      }
    } else if (!strcmp(type, "Ready") && !strcmp(st, "True")) {
      p->ready = 1;
      p->ready_ms = at;
    }
  }
}

static int pod_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_pod *p = CARP_NEW(struct carp_pod);
  yajl_val spec = carp_json_obj(obj, "spec", NULL);
  yajl_val status = carp_json_obj(obj, "status", NULL);
  yajl_val gates = carp_json_arr(spec, "schedulingGates", NULL);
  const char *node = carp_json_str(spec, "nodeName", NULL);
  const char *nominated = carp_json_str(status, "nominatedNodeName", NULL);

  if (carp_objmeta_decode(obj, keep_annotation, &p->meta, err)) {
    carp_free(p);
    return CARP_EPARSE;
  }
  p->meta.kind = &carp_kind_pod;
  if (!spec) {
    pod_free(&p->meta);
    return carp_api_error(err, "spec", "required");
  }
  if (carp_podspec_decode(spec, "spec", &p->spec, err)) {
    pod_free(&p->meta);
    return CARP_EPARSE;
  }
  p->node_name = node && *node ? carp_interns(node) : NULL;
  p->nominated_node = nominated && *nominated ? carp_interns(nominated) : NULL;
  p->phase = phase_of(carp_json_str(status, "phase", NULL));
  p->scheduling_gated = gates && gates->u.array.len > 0;
  carp_json_time(status, &p->start_ms, "startTime");
  read_conditions(status, p);
  read_pvcs(spec, p);
  *out = &p->meta;
  return 0;
}

const struct carp_kind carp_kind_pod = {
    .name = "Pod",
    .group = "",
    .version = "v1",
    .resource = "pods",
    .namespaced = 1,
    .decode = pod_decode,
    .free = pod_free,
};

int carp_pod_is_mirror(const struct carp_pod *p)
{
  return carp_kvset_has(p->meta.annotations, CARP_ANN_MIRROR) ||
         (p->meta.owner.kind && !strcmp(p->meta.owner.kind, "Node"));
}

int carp_pod_is_daemon(const struct carp_pod *p)
{
  return (p->meta.owner.kind && !strcmp(p->meta.owner.kind, "DaemonSet")) ||
         carp_pod_is_mirror(p);
}

int carp_pod_is_terminal(const struct carp_pod *p)
{
  return p->phase == CARP_POD_SUCCEEDED || p->phase == CARP_POD_FAILED;
}

int carp_pod_is_critical(const struct carp_pod *p)
{
  const char *pc = p->spec ? p->spec->priority_class : NULL;
  return pc && (!strcmp(pc, "system-cluster-critical") ||
                !strcmp(pc, "system-node-critical"));
}
