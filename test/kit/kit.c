/* kit.c: the reconcile-level test harness (see kit.h). */
#include "kit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/buf.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "carpenter/yaml.h"

/* Beyond this many steps without the world going quiet, something loops
 * without waiting: a retry without backoff, a requeue without end. */
#define SETTLE_LIMIT 200000

static int gate(void *arg)
{
  return ((struct kit *)arg)->leader;
}

void kit_init(struct kit *k, const struct kit_options *o)
{
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct carp_recorder_options ro;
  struct carp_fake_provider_options po;
  memset(k, 0, sizeof(*k));
  /* Warnings and errors only, unless the writes are wanted too. */
  carp_log_set_level(getenv("KIT_DEBUG") ? CARP_LOG_DEBUG : CARP_LOG_WARN);
  assert_int_equal(uv_loop_init(&k->loop), 0);
  k->clock = carp_clock_fake_new(&k->loop, KIT_EPOCH_MS);
  assert_int_equal(carp_kubemem_new(k->clock, &k->api), 0);
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = (char *)"http://kubemem";
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  ko.backend = carp_kubemem_backend(k->api);
  /* An injected error reaches the controller at once: the client's own
   * retries run on libuv's clock, not the test's. */
  ko.max_attempts = 1;
  k->metrics = carp_metrics_new();
  ko.metrics = k->metrics;
  assert_int_equal(carp_kube_new(&k->loop, &ko, &k->kube), 0);
  k->leader = 1;
  carp_kube_set_write_gate(k->kube, gate, k);
  memset(&ro, 0, sizeof(ro));
  ro.metrics = k->metrics;
  ro.instance = "kit";
  ro.clock = k->clock;
  assert_int_equal(carp_recorder_new(&k->loop, k->kube, &ro, &k->recorder), 0);
  assert_int_equal(carp_cluster_new(&k->loop, k->kube, k->metrics, &k->cluster),
                   0);
  carp_cluster_set_clock(k->cluster, k->clock);
  memset(&po, 0, sizeof(po));
  if (o && o->provider)
    po = *o->provider;
  po.clock = k->clock;
  assert_int_equal(carp_fake_provider_new(&k->loop, &po, &k->provider), 0);
  carp_provider_set_metrics(k->provider, k->metrics);
  k->env.loop = &k->loop;
  k->env.clock = k->clock;
  k->env.cluster = k->cluster;
  k->env.kube = k->kube;
  k->env.provider = k->provider;
  k->env.recorder = k->recorder;
  k->env.metrics = k->metrics;
}

void kit_add(struct kit *k, struct carp_controller *c)
{
  assert_non_null(c);
  assert_true(k->nctls < KIT_MAX_CONTROLLERS);
  k->ctls[k->nctls++] = c;
}

void kit_settle(struct kit *k)
{
  unsigned steps;
  for (steps = 0; steps < SETTLE_LIMIT; steps++) {
    unsigned fired = carp_clock_fake_fire_due(k->clock);
    uv_run(&k->loop, UV_RUN_NOWAIT);
    if (!fired && carp_clock_fake_next(k->clock) != 0 &&
        !(uv_loop_alive(&k->loop) && uv_backend_timeout(&k->loop) == 0))
      return;
  }
  fail_msg("the world did not settle after %u steps: something loops "
           "without waiting",
           steps);
}

void kit_advance(struct kit *k, uint64_t ms)
{
  kit_settle(k);
  while (ms) {
    uint64_t next = carp_clock_fake_next(k->clock);
    uint64_t step = next < ms ? next : ms;
    carp_clock_fake_advance(k->clock, step);
    ms -= step;
    kit_settle(k);
  }
}

void kit_start(struct kit *k)
{
  size_t i;
  int tries;
  assert_int_equal(carp_cluster_start(k->cluster), 0);
  for (tries = 0; tries < 100 && !carp_cluster_synced(k->cluster); tries++)
    kit_settle(k);
  assert_true(carp_cluster_synced(k->cluster));
  for (i = 0; i < k->nctls; i++)
    carp_controller_set_active(k->ctls[i], 1);
  kit_settle(k);
}

void kit_set_leader(struct kit *k, int leader)
{
  size_t i;
  k->leader = leader;
  for (i = 0; i < k->nctls; i++)
    carp_controller_set_active(k->ctls[i], leader);
  kit_settle(k);
}

static void count_down(void *arg)
{
  (*(int *)arg)--;
}

static void run_until_zero(struct kit *k, int *n)
{
  int rounds;
  for (rounds = 0; *n > 0 && rounds < 10000; rounds++) {
    carp_clock_fake_fire_due(k->clock);
    uv_run(&k->loop, UV_RUN_NOWAIT);
  }
  assert_int_equal(*n, 0);
}

/* KIT_DEBUG=1 prints every write the test made the server take. */
void kit_dump(struct kit *k)
{
  const struct carp_kubemem_write *w;
  size_t n = carp_kubemem_writes(k->api, &w), i;
  for (i = 0; i < n; i++)
    fprintf(stderr, "kit: +%llds %s %s -> %ld %.400s\n",
            (long long)((w[i].at_ms - KIT_EPOCH_MS) / 1000), w[i].method,
            w[i].path, w[i].status, w[i].body);
}

void kit_close(struct kit *k)
{
  size_t i;
  int n;
  if (getenv("KIT_DEBUG"))
    kit_dump(k);
  kit_settle(k);
  n = (int)k->nctls;
  for (i = 0; i < k->nctls; i++)
    carp_controller_close(k->ctls[i], count_down, &n);
  run_until_zero(k, &n);
  n = 3;
  carp_provider_close(k->provider, count_down, &n);
  carp_cluster_close(k->cluster, count_down, &n);
  carp_recorder_close(k->recorder, count_down, &n);
  run_until_zero(k, &n);
  for (i = 0; i < k->nctls; i++)
    carp_controller_free(k->ctls[i]);
  n = 1;
  carp_kube_close(k->kube, count_down, &n);
  run_until_zero(k, &n);
  n = 1;
  carp_kubemem_close(k->api, count_down, &n);
  run_until_zero(k, &n);
  uv_run(&k->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&k->loop), 0);
  carp_clock_free(k->clock);
  carp_metrics_free(k->metrics);
}

/* ---- the world ---- */

static char *yaml_json(const char *fmt, va_list ap)
{
  struct carp_buf text, json;
  struct carp_yaml_doc doc;
  char *err = NULL;
  carp_buf_init(&text, CARP_BUF_UNLIMITED);
  carp_buf_vprintf(&text, fmt, ap);
  if (carp_yaml_load(text.ptr, text.len, "test", &doc, &err))
    fail_msg("bad YAML in the test: %s\n%s", err, carp_buf_cstr(&text));
  carp_buf_init(&json, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_yaml_to_json_text(doc.root, &json), 0);
  carp_yaml_free(&doc);
  carp_buf_free(&text);
  return carp_buf_steal(&json, NULL);
}

void kit_apply(struct kit *k, const char *fmt, ...)
{
  va_list ap;
  char *json, *err = NULL;
  va_start(ap, fmt);
  json = yaml_json(fmt, ap);
  va_end(ap);
  if (carp_kubemem_apply(k->api, json, &err))
    fail_msg("apply failed: %s\n%s", err ? err : "?", json);
  carp_free(json);
  kit_settle(k);
}

void kit_patch(struct kit *k, const char *kind, const char *key,
               const char *fmt, ...)
{
  va_list ap;
  char *json, *err = NULL;
  va_start(ap, fmt);
  json = yaml_json(fmt, ap);
  va_end(ap);
  if (carp_kubemem_patch(k->api, kind, key, json, &err))
    fail_msg("patch of %s %s failed: %s", kind, key, err ? err : "?");
  carp_free(json);
  kit_settle(k);
}

void kit_delete(struct kit *k, const char *kind, const char *key)
{
  assert_int_equal(carp_kubemem_delete(k->api, kind, key), 0);
  kit_settle(k);
}

yajl_val kit_get(struct kit *k, const char *kind, const char *key)
{
  char *json = carp_kubemem_get(k->api, kind, key);
  yajl_val v = NULL;
  if (!json)
    return NULL;
  assert_int_equal(carp_json_parse(json, strlen(json), &v, NULL), 0);
  carp_free(json);
  return v;
}

int kit_exists(struct kit *k, const char *kind, const char *key)
{
  char *json = carp_kubemem_get(k->api, kind, key);
  carp_free(json);
  return json != NULL;
}

size_t kit_count(struct kit *k, const char *kind)
{
  return carp_kubemem_count(k->api, kind);
}

static char kit_strbuf[4096];

const char *kit_str(struct kit *k, const char *kind, const char *key, ...)
{
  yajl_val v = kit_get(k, kind, key), at;
  const char *s;
  va_list ap;
  if (!v)
    return NULL;
  va_start(ap, key);
  at = carp_json_vget(v, ap);
  va_end(ap);
  s = at && YAJL_IS_STRING(at) ? at->u.string : NULL;
  if (s)
    snprintf(kit_strbuf, sizeof(kit_strbuf), "%s", s);
  carp_json_free(v);
  return s ? kit_strbuf : NULL;
}

static char kit_reasonbuf[256];

const char *kit_condition(struct kit *k, const char *kind, const char *key,
                          const char *type, const char **reason)
{
  yajl_val v = kit_get(k, kind, key);
  yajl_val conds = carp_json_arr(v, "status", "conditions", NULL);
  const char *out = NULL;
  size_t i;
  for (i = 0; conds && i < carp_json_len(conds); i++) {
    yajl_val c = carp_json_at(conds, i);
    const char *t = carp_json_str(c, "type", NULL);
    if (!t || strcmp(t, type))
      continue;
    snprintf(kit_strbuf, sizeof(kit_strbuf), "%s",
             carp_json_str(c, "status", NULL) ? carp_json_str(c, "status", NULL)
                                              : "");
    snprintf(kit_reasonbuf, sizeof(kit_reasonbuf), "%s",
             carp_json_str(c, "reason", NULL) ? carp_json_str(c, "reason", NULL)
                                              : "");
    out = kit_strbuf;
  }
  if (reason)
    *reason = out ? kit_reasonbuf : NULL;
  carp_json_free(v);
  return out;
}

int kit_node_tainted(struct kit *k, const char *node, const char *taint_key)
{
  yajl_val v = kit_get(k, "Node", node);
  yajl_val taints = carp_json_arr(v, "spec", "taints", NULL);
  size_t i;
  int found = 0;
  for (i = 0; taints && i < carp_json_len(taints); i++) {
    const char *key = carp_json_str(carp_json_at(taints, i), "key", NULL);
    if (key && !strcmp(key, taint_key))
      found = 1;
  }
  carp_json_free(v);
  return found;
}

size_t kit_writes(struct kit *k, const char *method, const char *path_part)
{
  return carp_kubemem_count_writes(k->api, method, path_part, 1);
}

size_t kit_events(struct kit *k, const char *reason)
{
  const struct carp_kubemem_write *w;
  size_t n = carp_kubemem_writes(k->api, &w), i, hits = 0;
  char needle[300];
  snprintf(needle, sizeof(needle), "\"reason\":\"%s\"", reason);
  for (i = 0; i < n; i++)
    if (!strcmp(w[i].method, "POST") && strstr(w[i].path, "/events") &&
        strstr(w[i].body, needle))
      hits++;
  return hits;
}

double kit_metric(struct kit *k, const char *name, const char *const *values)
{
  struct carp_buf out;
  const char *line;
  double sum = 0;
  size_t nlen = strlen(name);
  carp_buf_init(&out, CARP_BUF_UNLIMITED);
  carp_metrics_render(k->metrics, &out);
  for (line = carp_buf_cstr(&out); line && *line;) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    if (len > nlen && !strncmp(line, name, nlen) &&
        (line[nlen] == '{' || line[nlen] == ' ')) {
      char copy[2048];
      size_t i;
      int all = 1;
      snprintf(copy, sizeof(copy), "%.*s", (int)len, line);
      for (i = 0; values && values[i]; i++)
        if (!strstr(copy, values[i]))
          all = 0;
      if (all)
        sum += strtod(strrchr(copy, ' ') + 1, NULL);
    }
    line = eol ? eol + 1 : NULL;
  }
  carp_buf_free(&out);
  return sum;
}

/* ---- ready-made objects ---- */

void kit_nodeclass(struct kit *k, const char *name)
{
  char ts[CARP_RFC3339_LEN];
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  kit_apply(k,
            "{apiVersion: carpenter.dev/v1alpha1, kind: ProxmoxNodeClass,"
            " metadata: {name: %s},"
            " spec: {template: {name: k3s-agent, scope: PerHost},"
            "  instanceTypes: {families: [{name: c1, memoryPerCPU: 2Gi}]}},"
            " status: {conditions: [{type: Ready, status: 'True',"
            "  reason: Ready, message: '', lastTransitionTime: '%s'}]}}",
            name, ts);
}

void kit_nodepool(struct kit *k, const char *name, const char *extra_spec)
{
  char ts[CARP_RFC3339_LEN];
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  kit_apply(k,
            "{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: "
            "%s},"
            " spec: {template: {spec: {nodeClassRef: {group: carpenter.dev,"
            "  kind: ProxmoxNodeClass, name: default}, requirements: []}}%s%s},"
            " status: {conditions: [{type: Ready, status: 'True', reason: "
            "Ready,"
            "  message: '', lastTransitionTime: '%s'}]}}",
            name, extra_spec && *extra_spec ? ", " : "",
            extra_spec ? extra_spec : "", ts);
}

void kit_node_up(struct kit *k, const char *name, const char *pool,
                 const char *type)
{
  kit_node_up_in(k, name, pool, type, "zone-a");
}

void kit_node_up_in(struct kit *k, const char *name, const char *pool,
                    const char *type, const char *zone)
{
  const struct carp_fake_instance_type *it =
      carp_fake_provider_type(k->provider, type);
  char ts[CARP_RFC3339_LEN], pid[128], res[160];
  const char *uid;
  assert_non_null(it);
  snprintf(res, sizeof(res), "{cpu: '%d', memory: '%lldMi', pods: '110'}",
           (int)it->cpu, (long long)(it->memory >> 20));
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  uid = kit_str(k, "NodeClaim", name, "metadata", "uid", NULL);
  assert_non_null(uid);
  assert_int_equal(carp_fake_provider_add_instance(k->provider, name, uid, type,
                                                   zone, pid, sizeof(pid)),
                   0);
  kit_patch(k, "NodeClaim", name,
            "{metadata: {labels: {karpenter.sh/nodepool: %s,"
            "   node.kubernetes.io/instance-type: %s,"
            "   karpenter.sh/capacity-type: on-demand,"
            "   topology.kubernetes.io/zone: %s,"
            "   karpenter.sh/registered: 'true', karpenter.sh/initialized: "
            "'true'}},"
            " status: {providerID: '%s', nodeName: %s, imageID: template,"
            " capacity: %s, allocatable: %s,"
            " conditions: ["
            " {type: Launched, status: 'True', reason: Launched, message: '',"
            "  lastTransitionTime: '%s'},"
            " {type: Registered, status: 'True', reason: Registered, message: "
            "'',"
            "  lastTransitionTime: '%s'},"
            " {type: Initialized, status: 'True', reason: Initialized, "
            "message: '',"
            "  lastTransitionTime: '%s'},"
            " {type: Ready, status: 'True', reason: Ready, message: '',"
            "  lastTransitionTime: '%s'}]}}",
            pool, type, zone, pid, name, res, res, ts, ts, ts, ts);
  kit_apply(k,
            "{apiVersion: v1, kind: Node, metadata: {name: %s,"
            "  labels: {karpenter.sh/nodepool: %s, "
            "node.kubernetes.io/instance-type: %s,"
            "   karpenter.sh/capacity-type: on-demand, "
            "topology.kubernetes.io/zone: %s,"
            "   kubernetes.io/hostname: %s, karpenter.sh/registered: 'true',"
            "   karpenter.sh/initialized: 'true'},"
            "  finalizers: [karpenter.sh/termination]},"
            " spec: {providerID: '%s'},"
            " status: {capacity: %s, allocatable: %s,"
            "  conditions: [{type: Ready, status: 'True', reason: KubeletReady,"
            "   message: '', lastTransitionTime: '%s', lastHeartbeatTime: "
            "'%s'}]}}",
            name, pool, type, zone, name, pid, res, res, ts, ts);
}

void kit_node(struct kit *k, const char *name, const char *pool,
              const char *type)
{
  kit_node_in(k, name, pool, type, "zone-a");
}

void kit_node_in(struct kit *k, const char *name, const char *pool,
                 const char *type, const char *zone)
{
  kit_apply(k,
            "{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: {name: "
            "%s, labels: {karpenter.sh/nodepool: %s},"
            "  finalizers: [karpenter.sh/termination]},"
            " spec: {nodeClassRef: {group: carpenter.dev, kind: "
            "ProxmoxNodeClass,"
            "  name: default}, requirements: []}}",
            name, pool);
  kit_node_up_in(k, name, pool, type, zone);
}

void kit_claim_up(struct kit *k, const char *claim, const char *pool)
{
  yajl_val v = kit_get(k, "NodeClaim", claim);
  yajl_val reqs = carp_json_arr(v, "spec", "requirements", NULL);
  char type[128] = "";
  size_t i;
  for (i = 0; reqs && i < carp_json_len(reqs); i++) {
    yajl_val r = carp_json_at(reqs, i);
    const char *key = carp_json_str(r, "key", NULL);
    const char *first =
        carp_json_str(carp_json_at(carp_json_arr(r, "values", NULL), 0), NULL);
    if (key && first && !strcmp(key, "node.kubernetes.io/instance-type"))
      snprintf(type, sizeof(type), "%s", first);
  }
  carp_json_free(v);
  assert_true(type[0] != 0);
  kit_node_up(k, claim, pool, type);
}

const char *kit_created_claim(struct kit *k, size_t nth)
{
  const struct carp_kubemem_write *w;
  size_t n = carp_kubemem_writes(k->api, &w), i;
  static char name[128];
  for (i = 0; i < n; i++) {
    const char *at;
    if (strcmp(w[i].method, "POST") || !strstr(w[i].path, "/nodeclaims") ||
        w[i].status != 201)
      continue;
    if (nth-- > 0)
      continue;
    at = strstr(w[i].body, "\"name\":\"");
    assert_non_null(at);
    snprintf(name, sizeof(name), "%.*s", (int)(strchr(at + 8, '"') - (at + 8)),
             at + 8);
    return name;
  }
  return NULL;
}

void kit_pod(struct kit *k, const char *ns, const char *name, const char *node,
             int cpu_milli, const char *extra_meta)
{
  char ts[CARP_RFC3339_LEN];
  carp_time_format_rfc3339(carp_clock_wall_ms(k->clock), 0, ts);
  if (node)
    kit_apply(k,
              "{apiVersion: v1, kind: Pod, metadata: {name: %s, namespace: "
              "%s%s%s},"
              " spec: {nodeName: %s, containers: [{name: c, image: x,"
              "  resources: {requests: {cpu: %dm}}}]},"
              " status: {phase: Running, startTime: '%s', conditions: ["
              "  {type: PodScheduled, status: 'True'}]}}",
              name, ns, extra_meta && *extra_meta ? ", " : "",
              extra_meta ? extra_meta : "", node, cpu_milli, ts);
  else
    kit_apply(k,
              "{apiVersion: v1, kind: Pod, metadata: {name: %s, namespace: "
              "%s%s%s},"
              " spec: {containers: [{name: c, image: x,"
              "  resources: {requests: {cpu: %dm}}}]},"
              " status: {phase: Pending, conditions: [{type: PodScheduled,"
              "  status: 'False', reason: Unschedulable,"
              "  lastTransitionTime: '%s'}]}}",
              name, ns, extra_meta && *extra_meta ? ", " : "",
              extra_meta ? extra_meta : "", cpu_milli, ts);
}
