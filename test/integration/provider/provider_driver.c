/* provider_driver: runs the Proxmox provider against a pve-sim for
 * test_provider.py. It reads a --pve-config and a ProxmoxNodeClass (JSON
 * file), then executes steps given on the command line, each printing JSON
 * lines on stdout that the Python side checks against the simulator's
 * state (/_sim/vms, /_sim/storage, the request log):
 *
 *   create:count=N[,prefix=P][,type=T][,zone=Z][,region=R][,cancel_ms=MS][,name=X]
 *          (cancel_ms: cancel that long after the reserve hook ran)
 *          [,cancel_first_ms=MS] (the step's first create only, that long
 *          after it started: before the VMID, say)
 *          [,uid=U][,annotation=@|VALUE][,steal=TMPLVMID@NODE][,userdata=FILE]
 *   delete            every instance created so far, repeated until NotFound
 *   get | list | types | status | refresh
 *   drift:hash=H      is_drifted with that carpenter.dev/proxmoxnodeclass-hash
 *   zone:name=Z       zone_status of host Z in region lab
 *   pause:name=X      prints {"event":"pause","name":X} and waits for a
 *                     line on stdin (the test changes the simulator meanwhile)
 *   nodeclass:file=F  use another ProxmoxNodeClass from now on
 *   ice:type=T,zone=Z whether the offering is in the ICE cache
 *   sleep:ms=MS
 *
 * The reserve hook records the annotation per NodeClaim name (a stand-in
 * for the lifecycle controller's conditional write). Exit status 0 unless
 * the driver itself failed; outcomes are judged by the Python side. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/object.h"
#include "carpenter/provider.h"
#include "carpenter/pve.h"
#include "carpenter/timeutil.h"

#define MAX_CLAIMS 256

struct claim {
  char name[64];
  char uid[64];
  char annotation[256];
  int reserves;
  char provider_id[128];
  char zone[64];
  char type[96];
  char image[96];
  int64_t vmid;
  struct carp_nodeclaim *obj;
  struct carp_provider_op *op;
  int done;
  int status;
  uint64_t start_ms, create_ms;
  uv_timer_t cancel_timer;
  int cancel_armed; /* cancel_timer runs */
  uint64_t cancel_ms;
  /* steal: clone a VM onto the reserved VMID before answering */
  int64_t steal_tmpl;
  char steal_node[64];
  void *steal_token;
  carp_provider_reserved_cb steal_done;
  struct carp_pve_call *steal_call;
};

static uv_loop_t loop;
static struct carp_provider *prov;
static struct carp_nodeclass *nodeclass;
static struct claim claims[MAX_CLAIMS];
static size_t nclaims;
static int pending;
static struct carp_metrics *metrics;
static char *userdata_text;
static size_t userdata_len;
static struct carp_buf out_line;

static void emit_begin(struct carp_jw *w, const char *event)
{
  carp_buf_reset(&out_line);
  carp_jw_init(w, &out_line);
  carp_jw_obj(w);
  carp_jw_kstr(w, "event", event);
}

static void emit_end(struct carp_jw *w)
{
  carp_jw_obj_end(w);
  carp_jw_finish(w);
  printf("%s\n", carp_buf_cstr(&out_line));
  fflush(stdout);
}

static void emit_err(struct carp_jw *w, int status,
                     const struct carp_provider_error *e)
{
  carp_jw_kint(w, "status", status);
  carp_jw_kstr(w, "errname", carp_errname(status));
  if (e) {
    carp_jw_kstr(w, "reason", e->reason);
    carp_jw_kstr(w, "message", e->message);
  }
}

/* Extended resources of a capacity and the labels of a type. */
static void emit_extras(struct carp_jw *w, const struct carp_resources *cap,
                        const struct carp_provider_label *labels, size_t n)
{
  uint32_t i;
  size_t k;
  carp_jw_key(w, "extended");
  carp_jw_obj(w);
  for (i = 0; i < cap->nextended; i++)
    carp_jw_kint(w, cap->extended[i].name, cap->extended[i].value);
  carp_jw_obj_end(w);
  carp_jw_key(w, "labels");
  carp_jw_obj(w);
  for (k = 0; k < n; k++) {
    carp_jw_key(w, labels[k].key);
    if (labels[k].absent)
      carp_jw_null(w);
    else
      carp_jw_str(w, labels[k].value);
  }
  carp_jw_obj_end(w);
}

static void emit_inst(struct carp_jw *w,
                      const struct carp_provider_instance *in)
{
  carp_jw_kstr(w, "providerID", in->provider_id);
  carp_jw_kstr(w, "region", in->region);
  carp_jw_kstr(w, "zone", in->zone);
  carp_jw_kint(w, "vmid", in->vmid);
  carp_jw_kstr(w, "name", in->name);
  carp_jw_kstr(w, "vmstatus", in->status);
  carp_jw_kstr(w, "type", in->instance_type);
  carp_jw_kint(w, "cpu", in->cpu);
  carp_jw_kint(w, "memory", in->memory);
  carp_jw_kstr(w, "imageID", in->image_id);
  carp_jw_kstr(w, "nodeclaim", in->nodeclaim);
  carp_jw_kstr(w, "uid", in->nodeclaim_uid);
  carp_jw_kstr(w, "nodepool", in->nodepool);
  carp_jw_kstr(w, "nodeclass", in->nodeclass);
  carp_jw_kint(w, "capCPU", in->capacity.cpu);
  carp_jw_kint(w, "capMemory", in->capacity.memory);
  carp_jw_kint(w, "capEphemeral", in->capacity.ephemeral);
  carp_jw_kint(w, "capPods", in->capacity.pods);
  carp_jw_kint(w, "allocMemory", in->allocatable.memory);
  emit_extras(w, &in->capacity, in->labels, in->nlabels);
}

/* --- objects
 * ------------------------------------------------------------------ */

static char *read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  struct carp_buf b;
  char chunk[4096];
  size_t n;
  if (!f)
    return NULL;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    carp_buf_append(&b, chunk, n);
  fclose(f);
  return carp_buf_steal(&b, len);
}

static struct carp_objmeta *decode(const struct carp_kind *k, const char *text)
{
  yajl_val v;
  struct carp_objmeta *m = NULL;
  char *err = NULL;
  if (carp_json_parse(text, strlen(text), &v, &err)) {
    fprintf(stderr, "driver: bad JSON: %s\n", err ? err : "");
    exit(2);
  }
  if (k->decode(v, &m, &err)) {
    fprintf(stderr, "driver: decode %s: %s\n", k->name, err ? err : "");
    exit(2);
  }
  carp_json_free(v);
  return m;
}

static const char *want_region; /* create:region=R */

static struct carp_nodeclaim *make_claim(const struct claim *c,
                                         const char *type, const char *zone,
                                         const char *hash)
{
  struct carp_buf b;
  struct carp_objmeta *m;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_printf(
      &b,
      "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\","
      "\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"1\","
      "\"labels\":{\"karpenter.sh/nodepool\":\"default\","
      "\"carpenter.dev/proxmoxnodeclass\":\"default\",\"team\":\"a\"},"
      "\"annotations\":{",
      c->name, c->uid);
  if (c->annotation[0])
    carp_buf_printf(&b, "\"%s\":\"%s\"", CARP_ANN_VM, c->annotation);
  if (hash)
    carp_buf_printf(&b, "%s\"%s\":\"%s\",\"%s\":\"%s\"",
                    c->annotation[0] ? "," : "", CARP_ANN_NODECLASS_HASH, hash,
                    CARP_ANN_NODECLASS_HASH_VER, CARP_NODECLASS_HASH_VERSION);
  carp_buf_printf(
      &b, "}},\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\","
          "\"kind\":\"ProxmoxNodeClass\",\"name\":\"default\"},"
          "\"taints\":[{\"key\":\"dedicated\",\"value\":\"ci\",\"effect\":"
          "\"NoSchedule\"}],"
          "\"requirements\":[{\"key\":\"karpenter.sh/nodepool\",\"operator\":"
          "\"In\",\"values\":[\"default\"]},{\"key\":\"karpenter.sh/"
          "capacity-type\","
          "\"operator\":\"In\",\"values\":[\"on-demand\"]}");
  if (type)
    carp_buf_printf(
        &b,
        ",{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":"
        "\"In\",\"values\":[\"%s\"]}",
        type);
  if (zone)
    carp_buf_printf(&b,
                    ",{\"key\":\"topology.kubernetes.io/zone\",\"operator\":"
                    "\"In\",\"values\":[\"%s\"]}",
                    zone);
  if (want_region)
    carp_buf_printf(&b,
                    ",{\"key\":\"topology.kubernetes.io/region\",\"operator\":"
                    "\"In\",\"values\":[\"%s\"]}",
                    want_region);
  carp_buf_printf(&b, "],\"resources\":{\"requests\":{\"cpu\":\"100m\","
                      "\"memory\":\"128Mi\"}}}");
  if (c->provider_id[0])
    carp_buf_printf(&b,
                    ",\"status\":{\"providerID\":\"%s\",\"imageID\":\"%s\"}",
                    c->provider_id, c->image);
  carp_buf_puts(&b, "}");
  m = decode(&carp_kind_nodeclaim, carp_buf_cstr(&b));
  carp_buf_free(&b);
  return carp_container_of(m, struct carp_nodeclaim, meta);
}

static struct claim *claim_by_name(const char *name)
{
  size_t i;
  for (i = 0; i < nclaims; i++)
    if (!strcmp(claims[i].name, name))
      return &claims[i];
  return NULL;
}

/* --- the reserve hook
 * ----------------------------------------------------------- */

struct reserve_later {
  uv_timer_t t;
  carp_provider_reserved_cb done;
  void *token;
};

static void reserve_fire_close(uv_handle_t *h)
{
  carp_free(h->data);
}

static void reserve_fire(uv_timer_t *t)
{
  struct reserve_later *r = t->data;
  r->done(r->token, 0);
  uv_close((uv_handle_t *)&r->t, reserve_fire_close);
}

static void on_stolen(const struct carp_pve_result *r, void *arg)
{
  struct claim *c = arg;
  struct carp_jw w;
  c->steal_call = NULL;
  emit_begin(&w, "steal");
  carp_jw_kstr(&w, "nodeclaim", c->name);
  carp_jw_kint(&w, "status", r->err);
  carp_jw_kstr(&w, "message", r->message);
  emit_end(&w);
  c->steal_done(c->steal_token, 0);
}

static void on_cancel_timer(uv_timer_t *t);

static void arm_cancel(struct claim *c, uint64_t ms)
{
  uv_timer_init(&loop, &c->cancel_timer);
  c->cancel_timer.data = c;
  c->cancel_armed = 1;
  uv_timer_start(&c->cancel_timer, on_cancel_timer, ms, 0);
}

static void reserve(const struct carp_nodeclaim *nc,
                    const struct carp_provider_reservation *r,
                    carp_provider_reserved_cb done, void *token, void *arg)
{
  struct claim *c = arg;
  struct reserve_later *later;
  struct carp_jw w;
  (void)nc;
  snprintf(c->annotation, sizeof(c->annotation), "%s", r->value);
  c->reserves++;
  emit_begin(&w, "reserve");
  carp_jw_kstr(&w, "nodeclaim", c->name);
  carp_jw_kstr(&w, "value", r->value);
  carp_jw_kint(&w, "count", c->reserves);
  emit_end(&w);
  if (c->cancel_ms && c->reserves == 1)
    arm_cancel(c, c->cancel_ms); /* the controller dies after the
                                    annotation is stored */
  if (c->steal_tmpl && c->reserves == 1) {
    /* Someone else clones onto the VMID between our check and our clone. */
    struct carp_pve_form f;
    char path[128];
    carp_pve_form_init(&f);
    carp_pve_form_add_int(&f, "newid", r->vmid);
    carp_pve_form_add(&f, "name", "thief");
    snprintf(path, sizeof(path), "/nodes/%s/qemu/%" PRId64 "/clone",
             c->steal_node, c->steal_tmpl);
    c->steal_done = done;
    c->steal_token = token;
    carp_pve_call_start(carp_pve_provider_client(prov, r->region), "POST", path,
                        &f, 0, on_stolen, c, &c->steal_call);
    carp_pve_form_free(&f);
    return;
  }
  /* Answer from the loop, as a real API write would. */
  later = CARP_NEW(struct reserve_later);
  later->done = done;
  later->token = token;
  uv_timer_init(&loop, &later->t);
  later->t.data = later;
  uv_timer_start(&later->t, reserve_fire, 1, 0);
}

/* --- create
 * ------------------------------------------------------------------------ */

static void cancel_close(uv_handle_t *h)
{
  (void)h;
}

static void on_cancel_timer(uv_timer_t *t)
{
  struct claim *c = t->data;
  if (!c->done && c->op)
    carp_provider_cancel(prov, c->op);
  c->cancel_armed = 0;
  uv_close((uv_handle_t *)t, cancel_close);
}

static void on_created(int status, const struct carp_provider_instance *inst,
                       const struct carp_provider_error *err, void *arg)
{
  struct claim *c = arg;
  struct carp_jw w;
  c->done = 1;
  c->status = status;
  c->op = NULL;
  if (c->cancel_armed) { /* done first: no cancel to make */
    c->cancel_armed = 0;
    uv_close((uv_handle_t *)&c->cancel_timer, cancel_close);
  }
  c->create_ms = carp_time_mono_ms() - c->start_ms;
  emit_begin(&w, "create");
  carp_jw_kstr(&w, "nodeclaim", c->name);
  carp_jw_kstr(&w, "annotation", c->annotation);
  carp_jw_kint(&w, "reserves", c->reserves);
  carp_jw_kint(&w, "ms", (int64_t)c->create_ms);
  emit_err(&w, status, err);
  if (inst) {
    emit_inst(&w, inst);
    snprintf(c->provider_id, sizeof(c->provider_id), "%s", inst->provider_id);
    snprintf(c->zone, sizeof(c->zone), "%s", inst->zone);
    snprintf(c->type, sizeof(c->type), "%s", inst->instance_type);
    snprintf(c->image, sizeof(c->image), "%s", inst->image_id);
    c->vmid = inst->vmid;
  }
  emit_end(&w);
  pending--;
}

static const char *opt(const char *opts, const char *key, char *out,
                       size_t size)
{
  const char *p = opts;
  size_t kl = strlen(key);
  while (p && *p) {
    size_t n = strcspn(p, ",");
    if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
      snprintf(out, size, "%.*s", (int)(n - kl - 1), p + kl + 1);
      return out;
    }
    p += n;
    if (*p)
      p++;
  }
  return NULL;
}

static void run_until_done(void)
{
  while (pending > 0)
    uv_run(&loop, UV_RUN_ONCE);
}

static void step_create(const char *opts)
{
  char buf[256], prefix[64] = "nc", type[96], zone[64], name[64], uid[64],
                 ann[256], steal[128], udfile[256], region[64];
  const char *t = opt(opts, "type", type, sizeof(type));
  const char *z = opt(opts, "zone", zone, sizeof(zone));
  int count = 1, i;
  uint64_t cancel_ms = 0, cancel_first_ms = 0;
  if (opt(opts, "count", buf, sizeof(buf)))
    count = atoi(buf);
  want_region = opt(opts, "region", region, sizeof(region));
  opt(opts, "prefix", prefix, sizeof(prefix));
  if (opt(opts, "cancel_ms", buf, sizeof(buf)))
    cancel_ms = (uint64_t)atoll(buf);
  if (opt(opts, "cancel_first_ms", buf, sizeof(buf)))
    cancel_first_ms = (uint64_t)atoll(buf);
  if (opt(opts, "userdata", udfile, sizeof(udfile))) {
    carp_free(userdata_text);
    userdata_text = read_file(udfile, &userdata_len);
  }
  for (i = 0; i < count && nclaims < MAX_CLAIMS; i++) {
    struct claim *c;
    struct carp_provider_create_req req;
    int rc;
    if (opt(opts, "name", name, sizeof(name)) && (c = claim_by_name(name))) {
      /* the same NodeClaim again (adoption) */
    } else {
      c = &claims[nclaims++];
      memset(c, 0, sizeof(*c));
      if (opt(opts, "name", name, sizeof(name)))
        snprintf(c->name, sizeof(c->name), "%s", name);
      else
        snprintf(c->name, sizeof(c->name), "%s-%zu", prefix, nclaims);
      {
        char nm[64];
        memcpy(nm, c->name, sizeof(nm));
        snprintf(c->uid, sizeof(c->uid), "uid-%s-%08x", nm,
                 (unsigned)(carp_time_wall_ms() & 0xffffffff) +
                     (unsigned)nclaims);
      }
    }
    if (opt(opts, "uid", uid, sizeof(uid)))
      snprintf(c->uid, sizeof(c->uid), "%s", uid);
    if (opt(opts, "annotation", ann, sizeof(ann)) && strcmp(ann, "@") != 0)
      snprintf(c->annotation, sizeof(c->annotation), "%s", ann);
    else if (!opt(opts, "annotation", ann, sizeof(ann)))
      c->annotation[0] = '\0';
    if (opt(opts, "steal", steal, sizeof(steal))) {
      char *at = strchr(steal, '@');
      c->steal_tmpl = atoll(steal);
      snprintf(c->steal_node, sizeof(c->steal_node), "%s",
               at ? at + 1 : "pve1");
    }
    c->done = 0;
    c->reserves = 0;
    c->provider_id[0] = '\0';
    if (c->obj)
      carp_obj_unref(&c->obj->meta);
    c->obj = make_claim(c, t, z, NULL);
    memset(&req, 0, sizeof(req));
    req.controller = "nodeclaim.lifecycle";
    req.nodeclaim = c->obj;
    req.nodeclass = nodeclass;
    req.userdata = userdata_text;
    req.userdata_len = userdata_len;
    req.reserve = reserve;
    req.reserve_arg = c;
    c->start_ms = carp_time_mono_ms();
    rc = carp_provider_create(prov, &req, on_created, c, &c->op);
    if (rc) {
      fprintf(stderr, "driver: create start: %s\n", carp_strerror(rc));
      exit(2);
    }
    pending++;
    c->cancel_ms = cancel_ms; /* counted from the reserve hook */
    if (cancel_first_ms && i == 0)
      arm_cancel(c, cancel_first_ms);
  }
  run_until_done();
  want_region = NULL;
}

/* --- delete
 * ------------------------------------------------------------------------ */

struct del {
  struct claim *c;
  int calls;
  uint64_t start_ms;
};

static void delete_once(struct del *d);

static void on_deleted(int status, const struct carp_provider_error *err,
                       void *arg)
{
  struct del *d = arg;
  struct carp_jw w;
  d->calls++;
  if (status == 0) { /* deleted; the next call must say NotFound */
    delete_once(d);
    return;
  }
  emit_begin(&w, "delete");
  carp_jw_kstr(&w, "nodeclaim", d->c->name);
  carp_jw_kstr(&w, "providerID", d->c->provider_id);
  carp_jw_kint(&w, "calls", d->calls);
  carp_jw_kint(&w, "ms", (int64_t)(carp_time_mono_ms() - d->start_ms));
  emit_err(&w, status, err);
  emit_end(&w);
  carp_free(d);
  pending--;
}

static void delete_once(struct del *d)
{
  struct carp_provider_delete_req req;
  memset(&req, 0, sizeof(req));
  req.controller = "nodeclaim.lifecycle";
  req.provider_id = d->c->provider_id;
  req.nodeclaim_uid = d->c->uid;
  if (carp_provider_delete(prov, &req, on_deleted, d, NULL)) {
    fprintf(stderr, "driver: delete start failed\n");
    exit(2);
  }
}

static void step_delete(void)
{
  size_t i;
  for (i = 0; i < nclaims; i++) {
    struct del *d;
    if (!claims[i].provider_id[0])
      continue;
    d = CARP_NEW(struct del);
    d->c = &claims[i];
    d->start_ms = carp_time_mono_ms();
    pending++;
    delete_once(d);
  }
  run_until_done();
}

/* --- get / list / types / drift
 * ---------------------------------------------------- */

static void on_get(int status, const struct carp_provider_instance *inst,
                   const struct carp_provider_error *err, void *arg)
{
  struct carp_jw w;
  (void)arg;
  emit_begin(&w, "get");
  emit_err(&w, status, err);
  if (inst)
    emit_inst(&w, inst);
  emit_end(&w);
  pending--;
}

static void step_get(void)
{
  size_t i;
  for (i = 0; i < nclaims; i++) {
    if (!claims[i].provider_id[0])
      continue;
    pending++;
    carp_provider_get(prov, "gc", claims[i].provider_id, on_get, NULL, NULL);
  }
  run_until_done();
}

static void on_list(int status, const struct carp_provider_instance *v,
                    size_t n, const struct carp_provider_error *err, void *arg)
{
  struct carp_jw w;
  size_t i;
  (void)arg;
  emit_begin(&w, "list");
  emit_err(&w, status, err);
  carp_jw_key(&w, "instances");
  carp_jw_arr(&w);
  for (i = 0; i < n; i++) {
    carp_jw_obj(&w);
    emit_inst(&w, &v[i]);
    carp_jw_obj_end(&w);
  }
  carp_jw_arr_end(&w);
  emit_end(&w);
  pending--;
}

static void step_list(void)
{
  pending++;
  carp_provider_list(prov, "gc", on_list, NULL, NULL);
  run_until_done();
}

static void step_types(void)
{
  struct carp_provider_instance_types t;
  struct carp_jw w;
  size_t i, j;
  int rc = carp_provider_instance_types(prov, "provisioner", nodeclass, &t);
  emit_begin(&w, "types");
  carp_jw_kint(&w, "status", rc);
  carp_jw_key(&w, "types");
  carp_jw_arr(&w);
  for (i = 0; !rc && i < t.n; i++) {
    const struct carp_provider_instance_type *it = &t.v[i];
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "name", it->name);
    carp_jw_kint(&w, "cpu", it->cpu);
    carp_jw_kint(&w, "memory", it->memory);
    carp_jw_kint(&w, "priceMicro", (int64_t)(it->price * 1e6 + 0.5));
    carp_jw_kint(&w, "capMemory", it->capacity.memory);
    carp_jw_kint(&w, "capEphemeral", it->capacity.ephemeral);
    carp_jw_kint(&w, "allocMemory", it->allocatable.memory);
    emit_extras(&w, &it->capacity, it->labels, it->nlabels);
    carp_jw_key(&w, "offerings");
    carp_jw_arr(&w);
    for (j = 0; j < it->nofferings; j++) {
      carp_jw_obj(&w);
      carp_jw_kstr(&w, "region", it->offerings[j].region);
      carp_jw_kstr(&w, "zone", it->offerings[j].zone);
      carp_jw_kbool(&w, "available", it->offerings[j].available);
      carp_jw_obj_end(&w);
    }
    carp_jw_arr_end(&w);
    carp_jw_obj_end(&w);
  }
  carp_jw_arr_end(&w);
  emit_end(&w);
  if (!rc)
    carp_provider_instance_types_free(&t);
}

static void step_drift(const char *opts)
{
  char hash[64] = "";
  size_t i;
  for (i = 0; i < nclaims; i++) {
    struct claim *c = &claims[i];
    struct carp_nodeclaim *obj;
    const char *reason = "";
    struct carp_jw w;
    int rc;
    if (!c->provider_id[0])
      continue;
    opt(opts, "hash", hash, sizeof(hash));
    obj = make_claim(c, NULL, NULL, hash[0] ? hash : NULL);
    rc = carp_provider_is_drifted(prov, "disruption", obj, nodeclass, &reason);
    emit_begin(&w, "drift");
    carp_jw_kstr(&w, "nodeclaim", c->name);
    carp_jw_kint(&w, "status", rc);
    carp_jw_kstr(&w, "reason", reason);
    emit_end(&w);
    carp_obj_unref(&obj->meta);
  }
}

static void step_zone(const char *opts)
{
  char zone[64] = "";
  struct carp_provider_zone_status zs;
  struct carp_jw w;
  int rc;
  opt(opts, "name", zone, sizeof(zone));
  rc = carp_provider_zone_status(prov, "lab", zone, &zs);
  emit_begin(&w, "zone");
  carp_jw_kstr(&w, "zone", zone);
  carp_jw_kint(&w, "status", rc);
  carp_jw_kstr(&w, "state", carp_zone_state_name(zs.state));
  carp_jw_kint(&w, "since_ms", zs.since_ms);
  carp_jw_kint(&w, "now_ms", carp_time_wall_ms());
  emit_end(&w);
}

static void on_refreshed(void *arg, int status)
{
  struct carp_jw w;
  (void)arg;
  emit_begin(&w, "refresh");
  carp_jw_kint(&w, "status", status);
  carp_jw_kstr(&w, "errname", carp_errname(status));
  emit_end(&w);
  pending--;
}

static void step_status(void)
{
  size_t i;
  const char *msg = "";
  (void)i;
  {
    struct carp_jw w;
    int rc = carp_pve_provider_region_status(
        prov, nodeclass->spec.regions.n ? nodeclass->spec.regions.v[0] : "lab",
        &msg);
    emit_begin(&w, "status");
    carp_jw_kint(&w, "status", rc);
    carp_jw_kstr(&w, "errname", carp_errname(rc));
    carp_jw_kstr(&w, "message", msg);
    emit_end(&w);
  }
}

static void timer_noop_close(uv_handle_t *h)
{
  (void)h;
  pending--;
}

static void on_sleep(uv_timer_t *t)
{
  uv_close((uv_handle_t *)t, timer_noop_close);
}

int main(int argc, char **argv)
{
  struct carp_pve_config cfg;
  struct carp_pve_provider_options o;
  char *err = NULL, *nctext;
  int i, rc;
  static uv_timer_t sleep_timer;

  signal(SIGPIPE, SIG_IGN);
  if (argc < 3) {
    fprintf(stderr,
            "usage: provider_driver PVE-CONFIG NODECLASS.json [steps...]\n");
    return 2;
  }
  carp_log_set_level(getenv("DRIVER_DEBUG") ? CARP_LOG_DEBUG : CARP_LOG_WARN);
  carp_buf_init(&out_line, CARP_BUF_UNLIMITED);
  rc = carp_pve_config_load(argv[1], &cfg, &err);
  if (rc) {
    fprintf(stderr, "driver: %s\n", err ? err : carp_strerror(rc));
    return 2;
  }
  nctext = read_file(argv[2], NULL);
  if (!nctext) {
    fprintf(stderr, "driver: cannot read %s\n", argv[2]);
    return 2;
  }
  nodeclass = carp_container_of(decode(&carp_kind_proxmoxnodeclass, nctext),
                                struct carp_nodeclass, meta);
  carp_free(nctext);
  if (!nodeclass->valid)
    fprintf(stderr, "driver: nodeclass invalid: %s\n",
            nodeclass->invalid_reason);
  uv_loop_init(&loop);
  metrics = carp_metrics_new();
  memset(&o, 0, sizeof(o));
  o.config = &cfg;
  o.cluster_name = "test";
  o.task_poll_first_ms = 50;
  o.task_poll_max_ms = 250;
  o.metrics = metrics;
  if (getenv("DRIVER_START_TIMEOUT_MS"))
    o.start_timeout_ms = (uint64_t)atoll(getenv("DRIVER_START_TIMEOUT_MS"));
  if (getenv("DRIVER_CLONE_TIMEOUT_MS"))
    o.clone_timeout_ms = (uint64_t)atoll(getenv("DRIVER_CLONE_TIMEOUT_MS"));
  rc = carp_pve_provider_new(&loop, &o, &prov);
  carp_pve_config_free(&cfg);
  if (rc) {
    fprintf(stderr, "driver: provider: %s\n", carp_strerror(rc));
    return 2;
  }
  for (i = 3; i < argc; i++) {
    const char *step = argv[i], *colon = strchr(step, ':');
    const char *opts = colon ? colon + 1 : "";
    size_t sl = colon ? (size_t)(colon - step) : strlen(step);
    char buf[64];
    if (!strncmp(step, "create", sl) && sl == 6)
      step_create(opts);
    else if (!strncmp(step, "delete", sl) && sl == 6)
      step_delete();
    else if (!strncmp(step, "get", sl) && sl == 3)
      step_get();
    else if (!strncmp(step, "list", sl) && sl == 4)
      step_list();
    else if (!strncmp(step, "types", sl) && sl == 5)
      step_types();
    else if (!strncmp(step, "drift", sl) && sl == 5)
      step_drift(opts);
    else if (!strncmp(step, "zone", sl) && sl == 4)
      step_zone(opts);
    else if (!strncmp(step, "pause", sl) && sl == 5) {
      char name[64] = "", line[16];
      struct carp_jw w;
      opt(opts, "name", name, sizeof(name));
      emit_begin(&w, "pause");
      carp_jw_kstr(&w, "name", name);
      emit_end(&w);
      if (!fgets(line, sizeof(line), stdin)) {
        fprintf(stderr, "driver: stdin closed at pause %s\n", name);
        return 2;
      }
    } else if (!strncmp(step, "status", sl) && sl == 6)
      step_status();
    else if (!strncmp(step, "nodeclass", sl) && sl == 9) {
      /* switch to another ProxmoxNodeClass (drift tests) */
      char path[512];
      char *text;
      if (!opt(opts, "file", path, sizeof(path)) ||
          !(text = read_file(path, NULL))) {
        fprintf(stderr, "driver: nodeclass step needs file=PATH\n");
        return 2;
      }
      carp_obj_unref(&nodeclass->meta);
      nodeclass = carp_container_of(decode(&carp_kind_proxmoxnodeclass, text),
                                    struct carp_nodeclass, meta);
      carp_free(text);
    } else if (!strncmp(step, "refresh", sl) && sl == 7) {
      pending++;
      carp_pve_provider_refresh(prov, on_refreshed, NULL);
      run_until_done();
    } else if (!strncmp(step, "ice", sl) && sl == 3) {
      char type[96] = "", zone[64] = "";
      struct carp_jw w;
      opt(opts, "type", type, sizeof(type));
      opt(opts, "zone", zone, sizeof(zone));
      emit_begin(&w, "ice");
      carp_jw_kstr(&w, "type", type);
      carp_jw_kstr(&w, "zone", zone);
      carp_jw_kbool(&w, "cached",
                    carp_pve_provider_ice_cached(prov, type, "lab", zone));
      emit_end(&w);
    } else if (!strncmp(step, "sleep", sl) && sl == 5) {
      uint64_t ms =
          opt(opts, "ms", buf, sizeof(buf)) ? (uint64_t)atoll(buf) : 100;
      uv_timer_init(&loop, &sleep_timer);
      pending++;
      uv_timer_start(&sleep_timer, on_sleep, ms, 0);
      run_until_done();
    } else {
      fprintf(stderr, "driver: unknown step %s\n", step);
      return 2;
    }
  }
  {
    struct carp_buf m;
    struct carp_jw w;
    carp_buf_init(&m, CARP_BUF_UNLIMITED);
    carp_metrics_render(metrics, &m);
    emit_begin(&w, "metrics");
    carp_jw_kstr(&w, "text", carp_buf_cstr(&m));
    emit_end(&w);
    carp_buf_free(&m);
  }
  carp_provider_close(prov, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  for (i = 0; i < (int)nclaims; i++)
    if (claims[i].obj)
      carp_obj_unref(&claims[i].obj->meta);
  carp_obj_unref(&nodeclass->meta);
  carp_metrics_free(metrics);
  carp_free(userdata_text);
  carp_buf_free(&out_line);
  rc = uv_loop_close(&loop);
  if (rc) {
    fprintf(stderr, "driver: uv_loop_close: %s\n", uv_strerror(rc));
    return 3;
  }
  printf("{\"event\":\"exit\",\"loop_closed\":true}\n");
  return 0;
}
