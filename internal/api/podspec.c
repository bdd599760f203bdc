/* podspec.c: the scheduling-relevant part of a pod spec, decoded once per
 * distinct spec and shared.
 *
 * The intern key is a canonical JSON rendering of exactly the fields the
 * scheduler reads (requests, ports, selectors, affinity, tolerations,
 * spreads, priority...), copied from the parser's events as the spec
 * passes (the rest of it is skipped). The API server writes the pods of
 * one template identically, so a ReplicaSet's pods find the same key and
 * share one struct; only on a miss is the key parsed and decoded, and as
 * it has the spec's own shape, errors name the spec's own fields.
 *
 * Effective requests follow Kubernetes (1.29+ sidecars included): the
 * larger of the containers' sum plus restartable init containers, and the
 * biggest one-shot init container plus the sidecars started before it;
 * then the pod overhead is added. Effective limits are summed the same
 * way (the pod overhead added to the resources that have a limit), as
 * Karpenter's node limit gauges read them. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/map.h"

static struct carp_map specs;

static void affinity_terms_free(struct carp_pod_affinity_term *t, uint32_t n)
{
  uint32_t i, j;
  for (i = 0; i < n; i++) {
    carp_label_selector_cleanup(&t[i].selector);
    for (j = 0; j < t[i].nnamespaces; j++)
      carp_intern_release(t[i].namespaces[j]);
    carp_free(t[i].namespaces);
    carp_intern_release(t[i].topology_key);
  }
  carp_free(t);
}

static void spec_free(struct carp_podspec *s)
{
  uint32_t i, j;
  carp_resources_cleanup(&s->requests);
  carp_resources_cleanup(&s->limits);
  carp_kvset_release(s->node_selector);
  for (i = 0; i < s->nrequired; i++)
    carp_term_cleanup(&s->required[i]);
  carp_free(s->required);
  for (i = 0; i < s->npreferred; i++)
    carp_term_cleanup(&s->preferred[i].term);
  carp_free(s->preferred);
  affinity_terms_free(s->affinity, s->naffinity);
  affinity_terms_free(s->anti_affinity, s->nanti_affinity);
  affinity_terms_free(s->pref_affinity, s->npref_affinity);
  affinity_terms_free(s->pref_anti_affinity, s->npref_anti_affinity);
  carp_tolerations_free(s->tolerations, s->ntolerations);
  for (i = 0; i < s->nspreads; i++) {
    carp_label_selector_cleanup(&s->spreads[i].selector);
    carp_intern_release(s->spreads[i].topology_key);
    for (j = 0; j < s->spreads[i].nmatch_label_keys; j++)
      carp_intern_release(s->spreads[i].match_label_keys[j]);
    carp_free(s->spreads[i].match_label_keys);
  }
  carp_free(s->spreads);
  for (i = 0; i < s->nhost_ports; i++) {
    carp_intern_release(s->host_ports[i].protocol);
    carp_intern_release(s->host_ports[i].host_ip);
  }
  carp_free(s->host_ports);
  carp_intern_release(s->priority_class);
  carp_intern_release(s->scheduler_name);
  carp_free(s->canon);
  carp_free(s);
}

/* which: "requests" or "limits". */
static int decode_effective(yajl_val spec, const char *path, const char *which,
                            struct carp_resources *out, char **err)
{
  struct carp_resources sum, sidecars, init_max, one, overhead;
  yajl_val containers = carp_json_arr(spec, "containers", NULL);
  yajl_val inits = carp_json_arr(spec, "initContainers", NULL);
  char p[512];
  size_t i;
  int rc = 0;

  memset(&sum, 0, sizeof(sum));
  memset(&sidecars, 0, sizeof(sidecars));
  memset(&init_max, 0, sizeof(init_max));
  memset(&overhead, 0, sizeof(overhead));
  for (i = 0; !rc && containers && i < containers->u.array.len; i++) {
    snprintf(p, sizeof(p), "%s.containers[%zu].resources.%s", path, i, which);
    rc = carp_resources_decode(
        carp_json_get(containers->u.array.values[i], "resources", which, NULL),
        p, &one, err);
    if (!rc) {
      carp_resources_add(&sum, &one);
      carp_resources_cleanup(&one);
    }
  }
  for (i = 0; !rc && inits && i < inits->u.array.len; i++) {
    yajl_val c = inits->u.array.values[i];
    const char *policy = carp_json_str(c, "restartPolicy", NULL);
    snprintf(p, sizeof(p), "%s.initContainers[%zu].resources.%s", path, i,
             which);
    rc = carp_resources_decode(carp_json_get(c, "resources", which, NULL), p,
                               &one, err);
    if (rc)
      break;
    if (policy && !strcmp(policy, "Always")) {
      /* A sidecar runs from its start to the pod's end. */
      carp_resources_add(&sidecars, &one);
      carp_resources_max(&init_max, &sidecars);
    } else {
      carp_resources_add(&one, &sidecars);
      carp_resources_max(&init_max, &one);
    }
    carp_resources_cleanup(&one);
  }
  if (!rc) {
    snprintf(p, sizeof(p), "%s.overhead", path);
    rc = carp_resources_decode(carp_json_get(spec, "overhead", NULL), p,
                               &overhead, err);
  }
  if (!rc) {
    carp_resources_add(&sum, &sidecars);
    carp_resources_max(&sum, &init_max);
    if (strcmp(which, "limits")) {
      carp_resources_add(&sum, &overhead);
    } else {
      /* Kubernetes adds the overhead to limits only where one is set. */
      if (!sum.cpu)
        overhead.cpu = 0;
      if (!sum.memory)
        overhead.memory = 0;
      if (!sum.ephemeral)
        overhead.ephemeral = 0;
      overhead.pods = 0;
      overhead.nextended = 0;
      carp_resources_add(&sum, &overhead);
    }
    sum.pods = 1;
    *out = sum;
  } else {
    carp_resources_cleanup(&sum);
  }
  carp_resources_cleanup(&sidecars);
  carp_resources_cleanup(&init_max);
  carp_resources_cleanup(&overhead);
  return rc;
}

static int decode_affinity_terms(yajl_val arr, const char *path, int weighted,
                                 struct carp_pod_affinity_term **out,
                                 uint32_t *n, char **err)
{
  size_t i, j;
  char p[512], q[600];
  *out = NULL;
  *n = 0;
  if (!arr || YAJL_IS_NULL(arr))
    return 0;
  if (!YAJL_IS_ARRAY(arr))
    return carp_api_error(err, path, "must be a list");
  *out = carp_calloc(arr->u.array.len ? arr->u.array.len : 1, sizeof(**out));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val t = arr->u.array.values[i];
    struct carp_pod_affinity_term *o = &(*out)[*n];
    yajl_val ns, nssel;
    const char *key;
    int64_t weight = 0;
    snprintf(p, sizeof(p), "%s[%zu]", path, i);
    if (weighted) {
      if (carp_json_int(t, &weight, "weight", NULL) || weight < 1 ||
          weight > 100) {
        snprintf(q, sizeof(q), "%s.weight", p);
        affinity_terms_free(*out, *n);
        *out = NULL;
        *n = 0;
        return carp_api_error(err, q, "must be an integer from 1 to 100");
      }
      t = carp_json_obj(t, "podAffinityTerm", NULL);
      snprintf(q, sizeof(q), "%s.podAffinityTerm", p);
      snprintf(p, sizeof(p), "%s", q);
    }
    key = carp_json_str(t, "topologyKey", NULL);
    if (!key || !*key) {
      snprintf(q, sizeof(q), "%s.topologyKey", p);
      affinity_terms_free(*out, *n);
      *out = NULL;
      *n = 0;
      return carp_api_error(err, q, "required");
    }
    snprintf(q, sizeof(q), "%s.labelSelector", p);
    if (carp_label_selector_decode(carp_json_get(t, "labelSelector", NULL), q,
                                   &o->selector, err)) {
      affinity_terms_free(*out, *n);
      *out = NULL;
      *n = 0;
      return CARP_EPARSE;
    }
    o->topology_key = carp_interns(key);
    o->weight = (int32_t)weight;
    ns = carp_json_arr(t, "namespaces", NULL);
    if (ns && ns->u.array.len) {
      o->namespaces = carp_calloc(ns->u.array.len, sizeof(char *));
      for (j = 0; j < ns->u.array.len; j++)
        if (YAJL_IS_STRING(ns->u.array.values[j]))
          o->namespaces[o->nnamespaces++] =
              carp_interns(ns->u.array.values[j]->u.string);
    }
    /* Namespace labels are not cached: any namespaceSelector is taken to
     * select every namespace, which errs on the side of keeping pods
     * apart (for anti-affinity) and is exact for the common "{}". */
    nssel = carp_json_obj(t, "namespaceSelector", NULL);
    o->all_namespaces = nssel != NULL;
    (*n)++;
  }
  return 0;
}

static int decode_spreads(yajl_val arr, const char *path,
                          struct carp_podspec *s, char **err)
{
  size_t i, j;
  char p[512], q[600];
  if (!arr || YAJL_IS_NULL(arr))
    return 0;
  if (!YAJL_IS_ARRAY(arr))
    return carp_api_error(err, path, "must be a list");
  s->spreads =
      carp_calloc(arr->u.array.len ? arr->u.array.len : 1, sizeof(*s->spreads));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val t = arr->u.array.values[i];
    struct carp_spread *o = &s->spreads[s->nspreads];
    const char *key = carp_json_str(t, "topologyKey", NULL);
    const char *when = carp_json_str(t, "whenUnsatisfiable", NULL);
    const char *nap = carp_json_str(t, "nodeAffinityPolicy", NULL);
    const char *ntp = carp_json_str(t, "nodeTaintsPolicy", NULL);
    yajl_val mlk = carp_json_arr(t, "matchLabelKeys", NULL);
    int64_t skew = 0, mind = 0;
    snprintf(p, sizeof(p), "%s[%zu]", path, i);
    if (carp_json_int(t, &skew, "maxSkew", NULL) || skew < 1) {
      snprintf(q, sizeof(q), "%s.maxSkew", p);
      return carp_api_error(err, q, "must be a positive integer");
    }
    if (!key || !*key) {
      snprintf(q, sizeof(q), "%s.topologyKey", p);
      return carp_api_error(err, q, "required");
    }
    if (!when ||
        (strcmp(when, "DoNotSchedule") && strcmp(when, "ScheduleAnyway"))) {
      snprintf(q, sizeof(q), "%s.whenUnsatisfiable", p);
      return carp_api_error(err, q, "must be DoNotSchedule or ScheduleAnyway");
    }
    if (carp_json_get(t, "minDomains", NULL) &&
        (carp_json_int(t, &mind, "minDomains", NULL) || mind < 1)) {
      snprintf(q, sizeof(q), "%s.minDomains", p);
      return carp_api_error(err, q, "must be a positive integer");
    }
    snprintf(q, sizeof(q), "%s.labelSelector", p);
    if (carp_label_selector_decode(carp_json_get(t, "labelSelector", NULL), q,
                                   &o->selector, err))
      return CARP_EPARSE;
    o->max_skew = (int32_t)skew;
    o->min_domains = (int32_t)mind;
    o->topology_key = carp_interns(key);
    o->when = strcmp(when, "ScheduleAnyway") ? CARP_DO_NOT_SCHEDULE
                                             : CARP_SCHEDULE_ANYWAY;
    o->honor_node_affinity = !nap || strcmp(nap, "Ignore") != 0;
    o->honor_node_taints = ntp && !strcmp(ntp, "Honor");
    if (mlk && mlk->u.array.len) {
      o->match_label_keys = carp_calloc(mlk->u.array.len, sizeof(char *));
      for (j = 0; j < mlk->u.array.len; j++)
        if (YAJL_IS_STRING(mlk->u.array.values[j]))
          o->match_label_keys[o->nmatch_label_keys++] =
              carp_interns(mlk->u.array.values[j]->u.string);
    }
    s->nspreads++;
  }
  return 0;
}

static void decode_ports(yajl_val spec, struct carp_podspec *s)
{
  static const char *const lists[] = {"containers", "initContainers"};
  size_t l, i, j;
  for (l = 0; l < 2; l++) {
    yajl_val arr = carp_json_arr(spec, lists[l], NULL);
    for (i = 0; arr && i < arr->u.array.len; i++) {
      yajl_val ports = carp_json_arr(arr->u.array.values[i], "ports", NULL);
      for (j = 0; ports && j < ports->u.array.len; j++) {
        yajl_val port = ports->u.array.values[j];
        const char *proto = carp_json_str(port, "protocol", NULL);
        const char *ip = carp_json_str(port, "hostIP", NULL);
        int64_t hp;
        if (carp_json_int(port, &hp, "hostPort", NULL) || hp <= 0)
          continue;
        s->host_ports = carp_reallocarray(s->host_ports, s->nhost_ports + 1,
                                          sizeof(*s->host_ports));
        s->host_ports[s->nhost_ports].port = (int32_t)hp;
        s->host_ports[s->nhost_ports].protocol =
            carp_interns(proto ? proto : "TCP");
        s->host_ports[s->nhost_ports].host_ip =
            carp_interns(ip && strcmp(ip, "0.0.0.0") ? ip : "");
        s->nhost_ports++;
      }
    }
  }
}

static int decode_node_affinity(yajl_val na, const char *path,
                                struct carp_podspec *s, char **err)
{
  yajl_val terms = carp_json_arr(na,
                                 "requiredDuringSchedulingIgnoredDuring"
                                 "Execution",
                                 "nodeSelectorTerms", NULL);
  yajl_val prefs = carp_json_arr(
      na, "preferredDuringSchedulingIgnoredDuringExecution", NULL);
  char p[512];
  size_t i;
  if (terms) {
    s->required = carp_calloc(terms->u.array.len ? terms->u.array.len : 1,
                              sizeof(*s->required));
    for (i = 0; i < terms->u.array.len; i++) {
      snprintf(p, sizeof(p),
               "%s.requiredDuringSchedulingIgnoredDuringExecution."
               "nodeSelectorTerms[%zu]",
               path, i);
      if (carp_term_decode(terms->u.array.values[i], p,
                           &s->required[s->nrequired], err))
        return CARP_EPARSE;
      s->nrequired++;
    }
  }
  if (prefs) {
    s->preferred = carp_calloc(prefs->u.array.len ? prefs->u.array.len : 1,
                               sizeof(*s->preferred));
    for (i = 0; i < prefs->u.array.len; i++) {
      yajl_val t = prefs->u.array.values[i];
      int64_t w;
      snprintf(p, sizeof(p),
               "%s.preferredDuringSchedulingIgnoredDuringExecution[%zu]", path,
               i);
      if (carp_json_int(t, &w, "weight", NULL) || w < 1 || w > 100)
        return carp_api_error(err, p, "weight must be from 1 to 100");
      if (carp_term_decode(carp_json_get(t, "preference", NULL), p,
                           &s->preferred[s->npreferred].term, err))
        return CARP_EPARSE;
      s->preferred[s->npreferred].weight = (int32_t)w;
      s->npreferred++;
    }
  }
  return 0;
}

static int decode_spec(yajl_val spec, const char *path, struct carp_podspec *s,
                       char **err)
{
  yajl_val aff = carp_json_obj(spec, "affinity", NULL);
  char p[512];
  int64_t prio = 0, grace = 30;
  const char *pc = carp_json_str(spec, "priorityClassName", NULL);
  const char *sn = carp_json_str(spec, "schedulerName", NULL);
  yajl_val vols = carp_json_arr(spec, "volumes", NULL);
  size_t i;

  if (decode_effective(spec, path, "requests", &s->requests, err) ||
      decode_effective(spec, path, "limits", &s->limits, err))
    return CARP_EPARSE;
  snprintf(p, sizeof(p), "%s.nodeSelector", path);
  if (carp_kvset_from_object(carp_json_get(spec, "nodeSelector", NULL), NULL,
                             &s->node_selector))
    return carp_api_error(err, p, "must be a map of strings");
  snprintf(p, sizeof(p), "%s.affinity.nodeAffinity", path);
  if (decode_node_affinity(carp_json_obj(aff, "nodeAffinity", NULL), p, s, err))
    return CARP_EPARSE;
#define TERMS(field, kind, req, weighted, arr, n)                              \
  snprintf(p, sizeof(p), "%s.affinity." kind "." req, path);                   \
  if (decode_affinity_terms(carp_json_get(aff, kind, req, NULL), p, weighted,  \
                            &s->arr, &s->n, err))                              \
    return CARP_EPARSE;
  TERMS(affinity, "podAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution", 0, affinity,
        naffinity)
  TERMS(anti, "podAntiAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution", 0, anti_affinity,
        nanti_affinity)
  TERMS(pref, "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution",
        1, pref_affinity, npref_affinity)
  TERMS(pref_anti, "podAntiAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution", 1,
        pref_anti_affinity, npref_anti_affinity)
#undef TERMS
  snprintf(p, sizeof(p), "%s.tolerations", path);
  if (carp_tolerations_decode(carp_json_get(spec, "tolerations", NULL), p,
                              &s->tolerations, &s->ntolerations, err))
    return CARP_EPARSE;
  snprintf(p, sizeof(p), "%s.topologySpreadConstraints", path);
  if (decode_spreads(carp_json_get(spec, "topologySpreadConstraints", NULL), p,
                     s, err))
    return CARP_EPARSE;
  decode_ports(spec, s);
  if (carp_json_get(spec, "priority", NULL) &&
      carp_json_int(spec, &prio, "priority", NULL)) {
    snprintf(p, sizeof(p), "%s.priority", path);
    return carp_api_error(err, p, "must be an integer");
  }
  if (carp_json_get(spec, "terminationGracePeriodSeconds", NULL) &&
      (carp_json_int(spec, &grace, "terminationGracePeriodSeconds", NULL) ||
       grace < 0)) {
    snprintf(p, sizeof(p), "%s.terminationGracePeriodSeconds", path);
    return carp_api_error(err, p, "must be a non-negative integer");
  }
  s->priority = (int32_t)prio;
  s->grace_seconds = grace;
  s->priority_class = pc && *pc ? carp_interns(pc) : NULL;
  s->scheduler_name = carp_interns(sn && *sn ? sn : "default-scheduler");
  for (i = 0; vols && i < vols->u.array.len; i++)
    if (carp_json_get(vols->u.array.values[i], "persistentVolumeClaim", NULL))
      s->has_pvc = 1;
  return 0;
}

/* ---- the canonical text, from parser events ---- */

/* The spec's members: what is copied into the key (containers' requests,
 * ports and restartPolicy, then the members from overhead to
 * schedulingGates as they are, then whether a volume is a claim), and
 * what the pod keeps. */
enum {
  S_CONTAINERS = 0,
  S_INIT_CONTAINERS,
  S_COPIED, /* the first of CARP_PODSPEC_COPIES copied whole */
  S_GATES = S_COPIED + CARP_PODSPEC_COPIES - 1,
  S_VOLUMES,
  S_NODE_NAME,
};

static const char *const spec_keys[] = {
    "containers",
    "initContainers",
    "overhead",
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "priority",
    "priorityClassName",
    "schedulerName",
    "terminationGracePeriodSeconds",
    "schedulingGates",
    "volumes",
    "nodeName",
    NULL,
};

/* A container's members, and what is copied of each: resources.requests,
 * ports, restartPolicy; then resources.limits. */
enum { C_RESOURCES = 0, C_PORTS, C_RESTART, C_LIMITS, C_COUNT };

static const char *const container_keys[] = {"resources", "ports",
                                             "restartPolicy", NULL};
static const char *const resources_keys[] = {"requests", "limits", NULL};

void carp_podspec_dec_init(struct carp_podspec_dec *sd)
{
  int i;
  memset(sd, 0, sizeof(*sd));
  carp_buf_init(&sd->part, CARP_BUF_UNLIMITED);
  carp_buf_init(&sd->canon, CARP_BUF_UNLIMITED);
  for (i = 0; i < 2; i++) {
    carp_buf_init(&sd->list[i], CARP_BUF_UNLIMITED);
    sd->lists[i].sd = sd;
    sd->lists[i].which = i;
  }
  for (i = 0; i < CARP_PODSPEC_COPIES; i++)
    sd->copy[i].out = &sd->part;
  for (i = 0; i < C_COUNT; i++)
    sd->ccopy[i].out = &sd->part;
  carp_buf_init(&sd->node_name, CARP_BUF_UNLIMITED);
  carp_buf_init(&sd->claims, CARP_BUF_UNLIMITED);
}

void carp_podspec_dec_free(struct carp_podspec_dec *sd)
{
  carp_buf_free(&sd->part);
  carp_buf_free(&sd->canon);
  carp_buf_free(&sd->list[0]);
  carp_buf_free(&sd->list[1]);
  carp_buf_free(&sd->node_name);
  carp_buf_free(&sd->claims);
}

void carp_podspec_dec_reset(struct carp_podspec_dec *sd)
{
  int i;
  carp_buf_reset(&sd->part);
  for (i = 0; i < CARP_PODSPEC_COPIES; i++)
    sd->copy[i].done = 0;
  for (i = 0; i < 2; i++) {
    carp_buf_reset(&sd->list[i]);
    sd->has_list[i] = 0;
  }
  sd->deep = 0;
  sd->has_pvc = 0;
  carp_buf_reset(&sd->node_name);
  sd->has_node_name = 0;
  carp_buf_reset(&sd->claims);
  sd->nclaims = 0;
}

static int enter(struct carp_jdec *d, struct carp_podspec_dec *sd,
                 carp_jdec_fn fn, void *ctx, const char *const *keys)
{
  if (carp_jdec_enter(d, fn, ctx, keys))
    sd->deep = 1;
  return 0;
}

static int on_resources(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct carp_podspec_dec_list *l = ctx;
  int f = carp_jdec_field(d);
  if (v->type != CARP_JEND && f >= 0)
    carp_jdec_copy(d, v, &l->sd->ccopy[f ? C_LIMITS : C_RESOURCES]);
  return 0;
}

/* A copied member of the container at hand, into its canonical form. */
static void put_copied(struct carp_podspec_dec *sd, struct carp_buf *out, int i,
                       const char *open, const char *close, int *n)
{
  const struct carp_jcopy *c = &sd->ccopy[i];
  if (!c->done)
    return;
  if ((*n)++)
    carp_buf_putc(out, ',');
  carp_buf_puts(out, open);
  carp_buf_append(out, sd->part.ptr + c->start, c->len);
  carp_buf_puts(out, close);
}

static int on_container(struct carp_jdec *d, void *ctx,
                        const struct carp_jval *v)
{
  struct carp_podspec_dec_list *l = ctx;
  struct carp_podspec_dec *sd = l->sd;
  struct carp_buf *out = &sd->list[l->which];
  int f = carp_jdec_field(d), n = 0;
  if (v->type == CARP_JEND) {
    carp_buf_putc(out, '{');
    if (sd->ccopy[C_RESOURCES].done || sd->ccopy[C_LIMITS].done) {
      int r = 0;
      carp_buf_puts(out, "\"resources\":{");
      put_copied(sd, out, C_RESOURCES, "\"requests\":", "", &r);
      put_copied(sd, out, C_LIMITS, "\"limits\":", "", &r);
      carp_buf_putc(out, '}');
      n++;
    }
    put_copied(sd, out, C_PORTS, "\"ports\":", "", &n);
    put_copied(sd, out, C_RESTART, "\"restartPolicy\":", "", &n);
    carp_buf_putc(out, '}');
  } else if (f == C_RESOURCES) {
    if (v->type == CARP_JOBJECT)
      return enter(d, sd, on_resources, l, resources_keys);
  } else if (f >= 0) {
    carp_jdec_copy(d, v, &sd->ccopy[f]);
  }
  return 0;
}

static int on_container_list(struct carp_jdec *d, void *ctx,
                             const struct carp_jval *v)
{
  struct carp_podspec_dec_list *l = ctx;
  struct carp_podspec_dec *sd = l->sd;
  int i;
  if (v->type == CARP_JEND)
    return 0;
  if (carp_jdec_index(d) > 0)
    carp_buf_putc(&sd->list[l->which], ',');
  if (v->type != CARP_JOBJECT) {
    /* Nothing the scheduler reads. */
    carp_buf_puts(&sd->list[l->which], "{}");
    return 0;
  }
  for (i = 0; i < C_COUNT; i++)
    sd->ccopy[i].done = 0;
  return enter(d, sd, on_container, l, container_keys);
}

static int on_claim(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct carp_podspec_dec *sd = ctx;
  if (v->type == CARP_JSTRING && carp_jdec_field(d) == 0 && v->len) {
    carp_buf_append(&sd->claims, v->s, v->len + 1);
    sd->nclaims++;
  }
  return 0;
}

static int on_volume(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  static const char *const claim_keys[] = {"claimName", NULL};
  struct carp_podspec_dec *sd = ctx;
  if (v->type == CARP_JEND || carp_jdec_field(d) != 0)
    return 0;
  /* A persistentVolumeClaim member, whatever it holds, makes the pod one
   * that uses a claim (as a tree lookup finds it). */
  sd->has_pvc = 1;
  if (v->type == CARP_JOBJECT)
    return enter(d, sd, on_claim, sd, claim_keys);
  return 0;
}

static int on_volume_list(struct carp_jdec *d, void *ctx,
                          const struct carp_jval *v)
{
  static const char *const volume_keys[] = {"persistentVolumeClaim", NULL};
  if (v->type == CARP_JOBJECT)
    return enter(d, ctx, on_volume, ctx, volume_keys);
  return 0;
}

static int on_spec(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct carp_podspec_dec *sd = ctx;
  int f = carp_jdec_field(d);
  if (v->type == CARP_JEND || f < 0)
    return 0;
  switch (f) {
  case S_CONTAINERS:
  case S_INIT_CONTAINERS:
    if (v->type != CARP_JARRAY)
      return 0;
    sd->has_list[f] = 1;
    return enter(d, sd, on_container_list, &sd->lists[f], NULL);
  case S_VOLUMES:
    if (v->type == CARP_JARRAY)
      return enter(d, sd, on_volume_list, sd, NULL);
    return 0;
  case S_NODE_NAME:
    if (v->type == CARP_JSTRING) {
      carp_buf_append(&sd->node_name, v->s, v->len);
      sd->has_node_name = 1;
    }
    return 0;
  default:
    carp_jdec_copy(d, v, &sd->copy[f - S_COPIED]);
    return 0;
  }
}

int carp_podspec_dec_value(struct carp_jdec *d, struct carp_podspec_dec *sd,
                           const struct carp_jval *v)
{
  if (v->type == CARP_JOBJECT)
    return enter(d, sd, on_spec, sd, spec_keys);
  return 0;
}

const char *carp_podspec_dec_node_name(const struct carp_podspec_dec *sd)
{
  return sd->has_node_name ? carp_buf_cstr(&sd->node_name) : NULL;
}

const char *carp_podspec_dec_claims(const struct carp_podspec_dec *sd)
{
  return carp_buf_cstr(&sd->claims);
}

int carp_podspec_dec_gated(const struct carp_podspec_dec *sd)
{
  const struct carp_jcopy *g = &sd->copy[S_GATES - S_COPIED];
  return g->done && g->len > 2 && sd->part.ptr[g->start] == '[';
}

/* {"containers":[...],"initContainers":[...],"overhead":...,...,
 *  "volumes":[{"persistentVolumeClaim":{}}]}: the members present, in
 * this order, so that equal specs give equal text. */
static void make_canon(struct carp_podspec_dec *sd)
{
  struct carp_buf *out = &sd->canon;
  int i, n = 0;
  carp_buf_reset(out);
  carp_buf_putc(out, '{');
  for (i = 0; i < 2; i++) {
    if (!sd->has_list[i])
      continue;
    if (n++)
      carp_buf_putc(out, ',');
    carp_json_quote(out, spec_keys[i], strlen(spec_keys[i]));
    carp_buf_puts(out, ":[");
    carp_buf_append(out, sd->list[i].ptr, sd->list[i].len);
    carp_buf_putc(out, ']');
  }
  for (i = 0; i < CARP_PODSPEC_COPIES; i++) {
    const struct carp_jcopy *c = &sd->copy[i];
    if (!c->done)
      continue;
    if (n++)
      carp_buf_putc(out, ',');
    carp_json_quote(out, spec_keys[S_COPIED + i],
                    strlen(spec_keys[S_COPIED + i]));
    carp_buf_putc(out, ':');
    carp_buf_append(out, sd->part.ptr + c->start, c->len);
  }
  /* Only whether a claim is used matters to the spec, not which. */
  if (sd->has_pvc)
    carp_buf_puts(out, n ? ",\"volumes\":[{\"persistentVolumeClaim\":{}}]"
                         : "\"volumes\":[{\"persistentVolumeClaim\":{}}]");
  carp_buf_putc(out, '}');
}

int carp_podspec_dec_finish(struct carp_podspec_dec *sd, const char *path,
                            const struct carp_podspec **out, char **err)
{
  struct carp_podspec *s;
  yajl_val tree;
  *out = NULL;
  if (sd->deep)
    return carp_api_error(err, path, "nested too deep");
  make_canon(sd);
  s = carp_map_get(&specs, sd->canon.ptr, sd->canon.len);
  if (s) {
    s->refs++;
    *out = s;
    return 0;
  }
  /* A spec no pod had before: its canonical text has the spec's shape. */
  if (carp_json_parse_cstr(sd->canon.ptr, sd->canon.len, &tree, NULL))
    return carp_api_error(err, path, "cannot be read");
  s = CARP_NEW(struct carp_podspec);
  s->refs = 1;
  s->canon_len = sd->canon.len;
  s->canon = carp_strndup(sd->canon.ptr, sd->canon.len);
  if (decode_spec(tree, path, s, err)) {
    carp_json_free(tree);
    spec_free(s);
    return CARP_EPARSE;
  }
  carp_json_free(tree);
  carp_map_put(&specs, s->canon, s->canon_len, s);
  *out = s;
  return 0;
}

/* A tree's spec: its events through a decoder kept for the next one. */
static int spec_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  return carp_podspec_dec_value(d, ctx, v);
}

int carp_podspec_decode(yajl_val spec, const char *path,
                        const struct carp_podspec **out, char **err)
{
  static struct carp_podspec_dec sd;
  static struct carp_jdec d;
  static int ready;
  if (!YAJL_IS_OBJECT(spec))
    return carp_api_error(err, path, "must be an object");
  if (!ready) {
    carp_podspec_dec_init(&sd);
    carp_jdec_init(&d, spec_root, &sd);
    ready = 1;
  }
  carp_podspec_dec_reset(&sd);
  carp_jdec_replay(&d, spec);
  return carp_podspec_dec_finish(&sd, path, out, err);
}

const struct carp_podspec *carp_podspec_ref(const struct carp_podspec *s)
{
  if (s)
    ((struct carp_podspec *)s)->refs++;
  return s;
}

void carp_podspec_release(const struct carp_podspec *cs)
{
  struct carp_podspec *s = (struct carp_podspec *)cs;
  if (!s || --s->refs > 0)
    return;
  carp_map_del(&specs, s->canon, s->canon_len);
  spec_free(s);
  if (specs.len == 0)
    carp_map_free(&specs);
}

size_t carp_podspec_count(void)
{
  return specs.len;
}
