/* podspec.c: the scheduling-relevant part of a pod spec, decoded once per
 * distinct spec and shared.
 *
 * The intern key is a canonical JSON rendering of exactly the fields the
 * scheduler reads (requests, ports, selectors, affinity, tolerations,
 * spreads, priority...). The API server writes the pods of one template
 * identically, so a ReplicaSet's pods find the same key and share one
 * struct; decoding happens only on a miss.
 *
 * Effective requests follow Kubernetes (1.29+ sidecars included): the
 * larger of the containers' sum plus restartable init containers, and the
 * biggest one-shot init container plus the sidecars started before it;
 * then the pod overhead is added. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/map.h"

static struct carp_map specs;

static void put_member(struct carp_jw *w, const char *key, yajl_val v)
{
  if (!v)
    return;
  carp_jw_key(w, key);
  carp_jw_value(w, v);
}

/* The canonical key. */
static void canon_of(yajl_val spec, struct carp_buf *out)
{
  static const char *const fields[] = {
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
  };
  static const char *const lists[] = {"containers", "initContainers"};
  struct carp_jw w;
  size_t i, l;
  yajl_val vols;
  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  for (l = 0; l < 2; l++) {
    yajl_val arr = carp_json_arr(spec, lists[l], NULL);
    if (!arr)
      continue;
    carp_jw_key(&w, lists[l]);
    carp_jw_arr(&w);
    for (i = 0; i < arr->u.array.len; i++) {
      yajl_val c = arr->u.array.values[i];
      carp_jw_obj(&w);
      put_member(&w, "r", carp_json_get(c, "resources", "requests", NULL));
      put_member(&w, "p", carp_json_get(c, "ports", NULL));
      put_member(&w, "rp", carp_json_get(c, "restartPolicy", NULL));
      carp_jw_obj_end(&w);
    }
    carp_jw_arr_end(&w);
  }
  for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    put_member(&w, fields[i], carp_json_get(spec, fields[i], NULL));
  /* Only whether a PVC is used matters, not which one. */
  vols = carp_json_arr(spec, "volumes", NULL);
  for (i = 0; vols && i < vols->u.array.len; i++) {
    if (carp_json_get(vols->u.array.values[i], "persistentVolumeClaim", NULL)) {
      carp_jw_kbool(&w, "pvc", 1);
      break;
    }
  }
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
}

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

static int decode_requests(yajl_val spec, const char *path,
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
    snprintf(p, sizeof(p), "%s.containers[%zu].resources.requests", path, i);
    rc = carp_resources_decode(carp_json_get(containers->u.array.values[i],
                                             "resources", "requests", NULL),
                               p, &one, err);
    if (!rc) {
      carp_resources_add(&sum, &one);
      carp_resources_cleanup(&one);
    }
  }
  for (i = 0; !rc && inits && i < inits->u.array.len; i++) {
    yajl_val c = inits->u.array.values[i];
    const char *policy = carp_json_str(c, "restartPolicy", NULL);
    snprintf(p, sizeof(p), "%s.initContainers[%zu].resources.requests", path,
             i);
    rc = carp_resources_decode(carp_json_get(c, "resources", "requests", NULL),
                               p, &one, err);
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
    carp_resources_add(&sum, &overhead);
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

  if (decode_requests(spec, path, &s->requests, err))
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

int carp_podspec_decode(yajl_val spec, const char *path,
                        const struct carp_podspec **out, char **err)
{
  struct carp_buf canon;
  struct carp_podspec *s;

  if (!YAJL_IS_OBJECT(spec))
    return carp_api_error(err, path, "must be an object");
  carp_buf_init(&canon, CARP_BUF_UNLIMITED);
  canon_of(spec, &canon);
  s = carp_map_get(&specs, carp_buf_cstr(&canon), canon.len);
  if (s) {
    carp_buf_free(&canon);
    s->refs++;
    *out = s;
    return 0;
  }
  s = CARP_NEW(struct carp_podspec);
  s->refs = 1;
  s->canon_len = canon.len;
  s->canon = carp_buf_steal(&canon, NULL);
  if (decode_spec(spec, path, s, err)) {
    spec_free(s);
    return CARP_EPARSE;
  }
  carp_map_put(&specs, s->canon, s->canon_len, s);
  *out = s;
  return 0;
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
