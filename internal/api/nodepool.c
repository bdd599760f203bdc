/* nodepool.c: the cached NodePool - decoded with the CRD defaults applied
 * (expireAfter 720h, consolidationPolicy WhenEmptyOrUnderutilized,
 * consolidateAfter 0s, budgets [{nodes: "10%"}]), carrying its validation
 * result and template hash; its limits; its status and the merge patch
 * that writes it. */
#include <stdio.h>
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/nodepool.h"

static void budgets_free(struct carp_budget *b, uint32_t n)
{
  uint32_t i;
  for (i = 0; i < n; i++) {
    carp_intern_release(b[i].nodes);
    carp_intern_release(b[i].schedule);
  }
  carp_free(b);
}

static void nodepool_free(struct carp_objmeta *m)
{
  struct carp_nodepool *np = (struct carp_nodepool *)m;
  carp_objmeta_cleanup(&np->meta);
  carp_kvset_release(np->labels);
  carp_kvset_release(np->annotations);
  api_claim_spec_cleanup(&np->tmpl);
  budgets_free(np->budgets, np->nbudgets);
  carp_resources_cleanup(&np->limits.values);
  carp_nodepool_status_cleanup(&np->status);
  carp_free(np->invalid_reason);
  carp_free(np);
}

/* "10%", "5": the pattern ^((100|[0-9]{1,2})%|[0-9]+)$, read. */
static void budget_nodes(struct carp_budget *b, const char *s)
{
  size_t i, n = strlen(s);
  int percent = n > 0 && s[n - 1] == '%';
  size_t digits = percent ? n - 1 : n;
  int64_t v = 0;
  b->nodes_ok = 0;
  if (digits == 0 || (percent && digits > 3))
    return;
  for (i = 0; i < digits; i++) {
    if (s[i] < '0' || s[i] > '9')
      return;
    if (v < INT64_MAX / 10)
      v = v * 10 + (s[i] - '0');
  }
  if (percent && v > 100)
    return;
  if (percent && digits == 3 && strncmp(s, "100", 3))
    return;
  b->nodes_ok = 1;
  b->percent = percent;
  b->value = v;
}

static int decode_budget(yajl_val o, const char *path, struct carp_budget *b,
                         char **err)
{
  const char *nodes, *sched, *dur;
  yajl_val reasons;
  size_t i;
  if (!YAJL_IS_OBJECT(o))
    return carp_api_error(err, path, "must be an object");
  if (api_str(o, "nodes", path, &nodes, err) ||
      api_str(o, "schedule", path, &sched, err) ||
      api_str(o, "duration", path, &dur, err) ||
      api_arr(o, "reasons", path, &reasons, err))
    return CARP_EPARSE;
  for (i = 0; reasons && i < reasons->u.array.len; i++) {
    yajl_val r = reasons->u.array.values[i];
    enum carp_disruption_reason reason;
    if (!YAJL_IS_STRING(r))
      return carp_api_error(err, path, "reasons: must be a list of strings");
    if (carp_disruption_reason_parse(r->u.string, &reason) == 0)
      b->reasons |= 1u << reason;
  }
  b->nodes = carp_interns(nodes ? nodes : "10%");
  budget_nodes(b, b->nodes);
  b->duration_ms = -1;
  if (dur && carp_duration_parse(dur, 0, &b->duration_ms)) {
    b->duration_ms = -1;
    b->nodes_ok = 0; /* unreadable: fail closed */
  }
  if (sched) {
    b->schedule = carp_interns(sched);
    b->cron_ok = carp_cron_parse(sched, &b->cron, NULL) == 0;
  }
  return 0;
}

static int decode_disruption(yajl_val spec, struct carp_nodepool *np,
                             char **err)
{
  const char *p = "spec.disruption";
  const char *policy, *after;
  yajl_val d, budgets;
  size_t i;
  char pi[64];

  np->consolidation_policy = CARP_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED;
  np->consolidate_after_ms = 0;
  if (api_obj(spec, "disruption", "spec", &d, err) ||
      api_str(d, "consolidationPolicy", p, &policy, err) ||
      api_str(d, "consolidateAfter", p, &after, err) ||
      api_arr(d, "budgets", p, &budgets, err))
    return CARP_EPARSE;
  if (policy && !strcmp(policy, "WhenEmpty"))
    np->consolidation_policy = CARP_CONSOLIDATE_WHEN_EMPTY;
  else if (policy && !strcmp(policy, "Balanced"))
    np->consolidation_policy = CARP_CONSOLIDATE_BALANCED;
  if (after && carp_duration_parse(after, 1, &np->consolidate_after_ms))
    np->consolidate_after_ms = CARP_DURATION_NEVER; /* unreadable: don't */
  if (!budgets) {
    np->budgets = CARP_NEW(struct carp_budget);
    np->nbudgets = 1;
    np->budgets[0].nodes = carp_interns("10%");
    np->budgets[0].duration_ms = -1;
    budget_nodes(&np->budgets[0], np->budgets[0].nodes);
    return 0;
  }
  np->budgets = carp_calloc(budgets->u.array.len ? budgets->u.array.len : 1,
                            sizeof(*np->budgets));
  for (i = 0; i < budgets->u.array.len; i++) {
    snprintf(pi, sizeof(pi), "%s.budgets[%zu]", p, i);
    if (decode_budget(budgets->u.array.values[i], pi,
                      &np->budgets[np->nbudgets], err)) {
      carp_intern_release(np->budgets[np->nbudgets].nodes);
      carp_intern_release(np->budgets[np->nbudgets].schedule);
      return CARP_EPARSE;
    }
    np->nbudgets++;
  }
  return 0;
}

/* Moves the "nodes" entry of a status ResourceList out of it. */
static int64_t take_nodes(struct carp_resources *r)
{
  uint32_t i;
  for (i = 0; i < r->nextended; i++) {
    if (!strcmp(r->extended[i].name, "nodes")) {
      int64_t v = r->extended[i].value;
      carp_intern_release(r->extended[i].name);
      memmove(&r->extended[i], &r->extended[i + 1],
              (r->nextended - i - 1) * sizeof(*r->extended));
      r->nextended--;
      return v;
    }
  }
  return -1;
}

static int decode_status(yajl_val obj, struct carp_nodepool_status *st,
                         char **err)
{
  yajl_val status, res, conds;
  int has_nodes = 0, has_gen = 0;
  int64_t nodes = 0, from_res;
  if (api_obj(obj, "status", "", &status, err) ||
      api_obj(status, "resources", "status", &res, err) ||
      api_int(status, "nodes", "status", &has_nodes, &nodes, err) ||
      api_int(status, "nodeClassObservedGeneration", "status", &has_gen,
              &st->nodeclass_observed_generation, err) ||
      api_arr(status, "conditions", "status", &conds, err))
    return CARP_EPARSE;
  if (api_resources(res, "status.resources", &st->resources, NULL, err))
    return CARP_EPARSE;
  from_res = take_nodes(&st->resources);
  st->nodes = has_nodes ? nodes : from_res > 0 ? from_res : 0;
  return carp_conditions_decode(conds, "status.conditions", &st->conditions,
                                err);
}

static int nodepool_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_nodepool *np = CARP_NEW(struct carp_nodepool);
  yajl_val spec, tmpl, meta, tspec, limits;
  int has_weight, has_replicas;
  int64_t weight = 0;

  if (carp_objmeta_decode(obj, api_keep_annotation, &np->meta, err)) {
    carp_free(np);
    return CARP_EPARSE;
  }
  np->meta.kind = &carp_kind_nodepool;
  np->tmpl.expire_after_ms = CARP_DEFAULT_EXPIRE_AFTER_MS;
  np->tmpl.termination_grace_ms = CARP_DURATION_NEVER;
  if (api_obj(obj, "spec", "", &spec, err) ||
      api_obj(spec, "template", "spec", &tmpl, err) ||
      api_obj(tmpl, "metadata", "spec.template", &meta, err) ||
      api_obj(tmpl, "spec", "spec.template", &tspec, err) ||
      api_obj(spec, "limits", "spec", &limits, err) ||
      api_int(spec, "weight", "spec", &has_weight, &weight, err) ||
      api_int(spec, "replicas", "spec", &has_replicas, &np->replicas, err))
    goto fail;
  if (carp_kvset_from_object(carp_json_get(meta, "labels", NULL), NULL,
                             &np->labels)) {
    carp_api_error(err, "spec.template.metadata.labels",
                   "must be a map of strings");
    goto fail;
  }
  if (carp_kvset_from_object(carp_json_get(meta, "annotations", NULL), NULL,
                             &np->annotations)) {
    carp_api_error(err, "spec.template.metadata.annotations",
                   "must be a map of strings");
    goto fail;
  }
  if (api_claim_spec_decode(tspec, "spec.template.spec", 0, &np->tmpl, err))
    goto fail;
  if (decode_disruption(spec, np, err) ||
      api_resources(limits, "spec.limits", &np->limits.values,
                    &np->limits.present, err) ||
      decode_status(obj, &np->status, err))
    goto fail;
  np->weight = weight < 0 ? 0 : weight > 100 ? 100 : (int32_t)weight;
  np->has_replicas = has_replicas;
  if (np->replicas < 0)
    np->replicas = 0;
  np->valid = carp_nodepool_validate(obj, &np->invalid_reason) == 0;
  carp_nodepool_hash(np, np->hash);
  *out = &np->meta;
  return 0;
fail:
  nodepool_free(&np->meta);
  return CARP_EPARSE;
}

const struct carp_kind carp_kind_nodepool = {
    .name = "NodePool",
    .group = CARP_KARPENTER_GROUP,
    .version = CARP_KARPENTER_VERSION,
    .resource = "nodepools",
    .namespaced = 0,
    .decode = nodepool_decode,
    .free = nodepool_free,
};

int carp_nodepool_limit(const struct carp_nodepool *np, const char *resource,
                        int64_t *value)
{
  static const struct {
    const char *name;
    unsigned bit;
  } core[] = {
      {"cpu", CARP_LIMIT_CPU},
      {"memory", CARP_LIMIT_MEMORY},
      {"ephemeral-storage", CARP_LIMIT_EPHEMERAL},
      {"pods", CARP_LIMIT_PODS},
  };
  const struct carp_resources *r = &np->limits.values;
  size_t i;
  for (i = 0; i < CARP_ARRAY_LEN(core); i++) {
    if (!strcmp(resource, core[i].name)) {
      if (!(np->limits.present & core[i].bit))
        return 0;
      *value = carp_resources_get(r, resource);
      return 1;
    }
  }
  for (i = 0; i < r->nextended; i++) {
    if (!strcmp(r->extended[i].name, resource)) {
      *value = r->extended[i].value;
      return 1;
    }
  }
  return 0;
}

const char *carp_nodepool_mode(const struct carp_nodepool *np)
{
  return np->has_replicas ? CARP_NODEPOOL_MODE_STATIC
                          : CARP_NODEPOOL_MODE_DYNAMIC;
}

const char *carp_nodepool_mode_switched(const struct carp_nodepool *np)
{
  const char *was =
      carp_kvset_get(np->meta.annotations, CARP_ANN_NODEPOOL_MODE);
  if (!was || (strcmp(was, CARP_NODEPOOL_MODE_STATIC) &&
               strcmp(was, CARP_NODEPOOL_MODE_DYNAMIC)))
    return NULL; /* not stamped (the NodePool controller stamps it) */
  return strcmp(was, carp_nodepool_mode(np)) ? was : NULL;
}

void carp_nodepool_status_copy(struct carp_nodepool_status *dst,
                               const struct carp_nodepool_status *src)
{
  carp_resources_copy(&dst->resources, &src->resources);
  dst->nodes = src->nodes;
  dst->nodeclass_observed_generation = src->nodeclass_observed_generation;
  carp_conditions_copy(&dst->conditions, &src->conditions);
}

void carp_nodepool_status_cleanup(struct carp_nodepool_status *st)
{
  carp_resources_cleanup(&st->resources);
  carp_conditions_cleanup(&st->conditions);
  memset(st, 0, sizeof(*st));
}

int carp_nodepool_status_patch(const struct carp_nodepool_status *st,
                               const char *rv, struct carp_buf *out)
{
  struct carp_jw w;
  struct carp_resources res, nodes;
  struct carp_resource n;

  /* resources carries "nodes" too, equal to status.nodes. */
  carp_resources_copy(&res, &st->resources);
  take_nodes(&res);
  memset(&nodes, 0, sizeof(nodes));
  n.name = "nodes";
  n.value = st->nodes;
  nodes.nextended = 1;
  nodes.extended = &n;
  carp_resources_add(&res, &nodes);

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
  carp_resources_encode(&w, &res, NULL);
  carp_jw_kint(&w, "nodes", st->nodes);
  if (st->nodeclass_observed_generation)
    carp_jw_kint(&w, "nodeClassObservedGeneration",
                 st->nodeclass_observed_generation);
  carp_jw_key(&w, "conditions");
  carp_conditions_encode(&w, &st->conditions);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_resources_cleanup(&res);
  return carp_jw_finish(&w);
}
