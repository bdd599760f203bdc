/* pod.c: the cached Pod. Besides metadata and the shared podspec, a pod
 * keeps its binding, phase, and the conditions provisioning and metrics
 * read: PodScheduled (Unschedulable means Carpenter should act) and
 * Ready, with their transition times. Pods are the bulk of what the
 * informers read (150,000 in a large cluster), so a pod is decoded from
 * the parser's events: no tree, and of its JSON only what is kept is
 * looked at (see include/carpenter/jdec.h). */
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

/* ---- decoding from parser events ---- */

/* What a pod's JSON says, gathered as it passes; the pod is made once the
 * object has ended. */
struct pod_dec {
  struct carp_objmeta_dec meta;
  struct carp_podspec_dec spec;
  int spec_object;
  enum carp_pod_phase phase;
  struct carp_buf nominated; /* status.nominatedNodeName */
  int has_nominated;
  int64_t start_ms;
  /* status.conditions: what they say, and the one being read. */
  int unschedulable, ready;
  int64_t unschedulable_ms, scheduled_ms, ready_ms;
  int c_type, c_status, c_unschedulable; /* see on_condition */
  int64_t c_ms;
};

enum { P_METADATA = 0, P_SPEC, P_STATUS };
static const char *const pod_keys[] = {"metadata", "spec", "status", NULL};

enum { ST_PHASE = 0, ST_NOMINATED, ST_START, ST_CONDITIONS };
static const char *const status_keys[] = {"phase", "nominatedNodeName",
                                          "startTime", "conditions", NULL};

enum { CD_TYPE = 0, CD_STATUS, CD_REASON, CD_TIME };
static const char *const condition_keys[] = {"type", "status", "reason",
                                             "lastTransitionTime", NULL};

/* c_type: 0 absent, 1 PodScheduled, 2 Ready, 3 other; c_status: 0
 * absent, 1 True, 2 False, 3 other. */
static int on_condition(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct pod_dec *pd = ctx;
  int f = carp_jdec_field(d);
  if (v->type == CARP_JEND) {
    if (!pd->c_type || !pd->c_status)
      return 0;
    if (pd->c_type == 1) {
      if (pd->c_status == 2) {
        pd->unschedulable = pd->c_unschedulable;
        pd->unschedulable_ms = pd->c_ms;
      } else if (pd->c_status == 1) {
        pd->scheduled_ms = pd->c_ms;
      }
    } else if (pd->c_type == 2 && pd->c_status == 1) {
      pd->ready = 1;
      pd->ready_ms = pd->c_ms;
    }
    return 0;
  }
  if (f == CD_TIME) {
    carp_jval_time(v, &pd->c_ms); /* a time that does not parse is 0 */
    return 0;
  }
  if (f < 0 || v->type != CARP_JSTRING)
    return 0;
  if (f == CD_TYPE)
    pd->c_type = !strcmp(v->s, "PodScheduled") ? 1
                 : !strcmp(v->s, "Ready")      ? 2
                                               : 3;
  else if (f == CD_STATUS)
    pd->c_status = !strcmp(v->s, "True") ? 1 : !strcmp(v->s, "False") ? 2 : 3;
  else if (f == CD_REASON)
    pd->c_unschedulable = !strcmp(v->s, "Unschedulable");
  return 0;
}

static int on_conditions(struct carp_jdec *d, void *ctx,
                         const struct carp_jval *v)
{
  struct pod_dec *pd = ctx;
  if (v->type != CARP_JOBJECT)
    return 0;
  pd->c_type = pd->c_status = pd->c_unschedulable = 0;
  pd->c_ms = 0;
  carp_jdec_enter(d, on_condition, pd, condition_keys);
  return 0;
}

static int on_status(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct pod_dec *pd = ctx;
  switch (v->type == CARP_JEND ? -1 : carp_jdec_field(d)) {
  case ST_PHASE:
    pd->phase = phase_of(v->type == CARP_JSTRING ? v->s : NULL);
    break;
  case ST_NOMINATED:
    if (v->type == CARP_JSTRING && v->len) {
      carp_buf_append(&pd->nominated, v->s, v->len);
      pd->has_nominated = 1;
    }
    break;
  case ST_START:
    carp_jval_time(v, &pd->start_ms);
    break;
  case ST_CONDITIONS:
    if (v->type == CARP_JARRAY)
      carp_jdec_enter(d, on_conditions, pd, NULL);
    break;
  default:
    break;
  }
  return 0;
}

static int on_pod(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct pod_dec *pd = ctx;
  switch (v->type == CARP_JEND ? -1 : carp_jdec_field(d)) {
  case P_METADATA:
    return carp_objmeta_dec_value(d, &pd->meta, v);
  case P_SPEC:
    pd->spec_object = v->type == CARP_JOBJECT;
    return carp_podspec_dec_value(d, &pd->spec, v);
  case P_STATUS:
    if (v->type == CARP_JOBJECT)
      carp_jdec_enter(d, on_status, pd, status_keys);
    return 0;
  default:
    return 0;
  }
}

static void *pod_dec_new(void)
{
  struct pod_dec *pd = CARP_NEW(struct pod_dec);
  carp_objmeta_dec_init(&pd->meta, keep_annotation);
  carp_podspec_dec_init(&pd->spec);
  carp_buf_init(&pd->nominated, CARP_BUF_UNLIMITED);
  return pd;
}

static void pod_dec_free(void *state)
{
  struct pod_dec *pd = state;
  carp_objmeta_dec_free(&pd->meta);
  carp_podspec_dec_free(&pd->spec);
  carp_buf_free(&pd->nominated);
  carp_free(pd);
}

static void pod_dec_begin(void *state)
{
  struct pod_dec *pd = state;
  carp_objmeta_dec_reset(&pd->meta);
  carp_podspec_dec_reset(&pd->spec);
  pd->spec_object = 0;
  pd->phase = CARP_POD_PENDING;
  carp_buf_reset(&pd->nominated);
  pd->has_nominated = 0;
  pd->start_ms = 0;
  pd->unschedulable = pd->ready = 0;
  pd->unschedulable_ms = pd->scheduled_ms = pd->ready_ms = 0;
}

static int pod_dec_finish(void *state, struct carp_objmeta **out, char **err)
{
  struct pod_dec *pd = state;
  struct carp_pod *p = CARP_NEW(struct carp_pod);
  const char *node = carp_podspec_dec_node_name(&pd->spec);
  const char *claim = carp_podspec_dec_claims(&pd->spec);
  uint32_t i;

  if (carp_objmeta_dec_finish(&pd->meta, &p->meta, err)) {
    carp_free(p);
    return CARP_EPARSE;
  }
  p->meta.kind = &carp_kind_pod;
  if (!pd->spec_object) {
    pod_free(&p->meta);
    return carp_api_error(err, "spec", "required");
  }
  if (carp_podspec_dec_finish(&pd->spec, "spec", &p->spec, err)) {
    pod_free(&p->meta);
    return CARP_EPARSE;
  }
  p->node_name = node && *node ? carp_interns(node) : NULL;
  p->nominated_node =
      pd->has_nominated ? carp_interns(carp_buf_cstr(&pd->nominated)) : NULL;
  p->phase = pd->phase;
  p->scheduling_gated = carp_podspec_dec_gated(&pd->spec);
  p->start_ms = pd->start_ms;
  p->unschedulable = pd->unschedulable;
  p->unschedulable_ms = pd->unschedulable_ms;
  p->scheduled_ms = pd->scheduled_ms;
  p->ready = pd->ready;
  p->ready_ms = pd->ready_ms;
  /* The claims of spec.volumes (kept on the pod, not in the shared spec:
   * a StatefulSet's pods differ only there). */
  if (pd->spec.nclaims) {
    p->pvcs = carp_calloc(pd->spec.nclaims, sizeof(*p->pvcs));
    for (i = 0; i < pd->spec.nclaims; i++, claim += strlen(claim) + 1)
      p->pvcs[p->npvcs++] = carp_interns(claim);
  }
  *out = &p->meta;
  return 0;
}

static const struct carp_kind_stream pod_stream = {
    .keys = pod_keys,
    .state_new = pod_dec_new,
    .state_free = pod_dec_free,
    .begin = pod_dec_begin,
    .member = on_pod,
    .finish = pod_dec_finish,
};

static int pod_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  return carp_kind_decode_tree(&carp_kind_pod, obj, out, err);
}

const struct carp_kind carp_kind_pod = {
    .name = "Pod",
    .group = "",
    .version = "v1",
    .resource = "pods",
    .namespaced = 1,
    .decode = pod_decode,
    .free = pod_free,
    .stream = &pod_stream,
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
