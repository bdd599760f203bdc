/* capacitybuffer.c: the cached CapacityBuffer (see
 * include/carpenter/capacitybuffer.h) - decoded with the CRD's default
 * strategy, carrying its validation result - the chunk count rule, and
 * the status patch. */
#include <limits.h>
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/capacitybuffer.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"

void carp_capacitybuffer_status_cleanup(struct carp_capacitybuffer_status *st)
{
  carp_intern_release(st->pod_template);
  carp_intern_release(st->strategy);
  carp_conditions_cleanup(&st->conditions);
  memset(st, 0, sizeof(*st));
}

void carp_capacitybuffer_status_copy(
    struct carp_capacitybuffer_status *dst,
    const struct carp_capacitybuffer_status *src)
{
  *dst = *src;
  dst->pod_template = carp_interns(src->pod_template);
  dst->strategy = carp_interns(src->strategy);
  memset(&dst->conditions, 0, sizeof(dst->conditions));
  carp_conditions_copy(&dst->conditions, &src->conditions);
}

static void buffer_free(struct carp_objmeta *m)
{
  struct carp_capacitybuffer *b = (struct carp_capacitybuffer *)m;
  carp_objmeta_cleanup(&b->meta);
  carp_intern_release(b->strategy);
  carp_intern_release(b->pod_template);
  carp_intern_release(b->scalable_group);
  carp_intern_release(b->scalable_kind);
  carp_intern_release(b->scalable_name);
  carp_resources_cleanup(&b->limits);
  carp_capacitybuffer_status_cleanup(&b->status);
  carp_free(b->invalid_reason);
  carp_free(b);
}

/* A count field (int32 with minimum 0): out of range reads as 0, which
 * validation reports. */
static int count(yajl_val obj, const char *key, const char *path, int *present,
                 int32_t *out, char **err)
{
  int64_t v = 0;
  if (api_int(obj, key, path, present, &v, err))
    return CARP_EPARSE;
  *out = v < 0 || v > INT32_MAX ? 0 : (int32_t)v;
  return 0;
}

static int decode_status(yajl_val obj, struct carp_capacitybuffer_status *st,
                         char **err)
{
  yajl_val status, ref, conds;
  const char *tmpl = NULL, *strategy;
  if (api_obj(obj, "status", "", &status, err) ||
      count(status, "replicas", "status", &st->has_replicas, &st->replicas,
            err) ||
      api_obj(status, "podTemplateRef", "status", &ref, err) ||
      api_str(ref, "name", "status.podTemplateRef", &tmpl, err) ||
      api_int(status, "podTemplateGeneration", "status", &st->has_generation,
              &st->pod_template_generation, err) ||
      api_str(status, "provisioningStrategy", "status", &strategy, err) ||
      api_arr(status, "conditions", "status", &conds, err))
    return CARP_EPARSE;
  st->pod_template = carp_interns(tmpl);
  st->strategy = carp_interns(strategy);
  return carp_conditions_decode(conds, "status.conditions", &st->conditions,
                                err);
}

static int buffer_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_capacitybuffer *b = CARP_NEW(struct carp_capacitybuffer);
  yajl_val spec, tref, sref, limits;
  const char *strategy, *tname = NULL, *group = NULL, *kind = NULL,
                        *sname = NULL;

  if (carp_objmeta_decode(obj, NULL, &b->meta, err)) {
    carp_free(b);
    return CARP_EPARSE;
  }
  b->meta.kind = &carp_kind_capacitybuffer;
  if (api_obj(obj, "spec", "", &spec, err) ||
      api_str(spec, "provisioningStrategy", "spec", &strategy, err) ||
      api_obj(spec, "podTemplateRef", "spec", &tref, err) ||
      api_str(tref, "name", "spec.podTemplateRef", &tname, err) ||
      api_obj(spec, "scalableRef", "spec", &sref, err) ||
      api_str(sref, "apiGroup", "spec.scalableRef", &group, err) ||
      api_str(sref, "kind", "spec.scalableRef", &kind, err) ||
      api_str(sref, "name", "spec.scalableRef", &sname, err) ||
      count(spec, "replicas", "spec", &b->has_replicas, &b->replicas, err) ||
      count(spec, "percentage", "spec", &b->has_percentage, &b->percentage,
            err) ||
      api_obj(spec, "limits", "spec", &limits, err) ||
      api_resources(limits, "spec.limits", &b->limits, NULL, err) ||
      decode_status(obj, &b->status, err)) {
    buffer_free(&b->meta);
    return CARP_EPARSE;
  }
  b->strategy = carp_interns(strategy ? strategy : CARP_BUFFER_STRATEGY_ACTIVE);
  b->pod_template = tref ? carp_interns(tname ? tname : "") : NULL;
  if (sref) {
    b->scalable_group = carp_interns(group ? group : "");
    b->scalable_kind = carp_interns(kind ? kind : "");
    b->scalable_name = carp_interns(sname ? sname : "");
  }
  b->has_limits = limits != NULL;
  b->valid = carp_capacitybuffer_validate(obj, &b->invalid_reason) == 0;
  *out = &b->meta;
  return 0;
}

const struct carp_kind carp_kind_capacitybuffer = {
    .name = CARP_BUFFER_KIND,
    .group = CARP_BUFFER_GROUP,
    .version = CARP_BUFFER_VERSION,
    .resource = "capacitybuffers",
    .namespaced = 1,
    .decode = buffer_decode,
    .free = buffer_free,
};

/* ---- the chunk count ---- */

/* floor(limit / request) over the resources both name and the request
 * asks for; -1 when none does. */
static int64_t limit_replicas(const struct carp_resources *limits,
                              const struct carp_resources *req)
{
  int64_t best = -1;
  uint32_t i;
#define ONE(l, r)                                                              \
  do {                                                                         \
    if ((l) >= 0 && (r) > 0) {                                                 \
      int64_t n = (l) / (r);                                                   \
      if (best < 0 || n < best)                                                \
        best = n;                                                              \
    }                                                                          \
  } while (0)
  if (limits->cpu)
    ONE(limits->cpu, req->cpu);
  if (limits->memory)
    ONE(limits->memory, req->memory);
  if (limits->ephemeral)
    ONE(limits->ephemeral, req->ephemeral);
  for (i = 0; i < limits->nextended; i++)
    ONE(limits->extended[i].value,
        carp_resources_get(req, limits->extended[i].name));
#undef ONE
  return best;
}

int64_t carp_capacitybuffer_replicas(const struct carp_capacitybuffer *b,
                                     const struct carp_resources *requests,
                                     int64_t scalable_replicas)
{
  int64_t want = -1, cap;
  if (b->has_replicas)
    want = b->replicas;
  if (b->has_percentage && b->scalable_name && scalable_replicas > 0) {
    int64_t p = (scalable_replicas * b->percentage + 99) / 100;
    if (p < 1 && b->percentage > 0)
      p = 1;
    if (p > want)
      want = p;
  }
  cap = b->has_limits && requests ? limit_replicas(&b->limits, requests) : -1;
  if (want < 0)
    return cap < 0 ? 0 : cap;
  return cap >= 0 && cap < want ? cap : want;
}

/* ---- status ---- */

int carp_capacitybuffer_status_patch(
    const struct carp_capacitybuffer_status *st, const char *rv,
    struct carp_buf *out)
{
  struct carp_jw w;
  carp_jw_init(&w, out);
  carp_status_patch_begin(&w, rv);
  carp_jw_key(&w, "replicas");
  if (st->has_replicas)
    carp_jw_int(&w, st->replicas);
  else
    carp_jw_null(&w);
  carp_jw_key(&w, "podTemplateRef");
  if (st->pod_template) {
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "name", st->pod_template);
    carp_jw_obj_end(&w);
  } else {
    carp_jw_null(&w);
  }
  carp_jw_key(&w, "podTemplateGeneration");
  if (st->has_generation)
    carp_jw_int(&w, st->pod_template_generation);
  else
    carp_jw_null(&w);
  carp_jw_key(&w, "provisioningStrategy");
  if (st->strategy)
    carp_jw_str(&w, st->strategy);
  else
    carp_jw_null(&w);
  carp_jw_key(&w, "conditions");
  carp_conditions_encode(&w, &st->conditions);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}
