/* apicheck.c: the Kubernetes API server checked against what Carpenter
 * needs (see include/carpenter/apicheck.h).
 *
 * A round reads every document at once; when the last answer is in, the
 * answers are evaluated and a change of verdict is logged (once, not per
 * round). Once the version and the built-in APIs have been found good,
 * later rounds read only the CRD groups: a server is not downgraded under
 * a running process, CRDs are deleted and installed at any time. */
#include "carpenter/apicheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"

#define DEFAULT_INTERVAL_MS 10000

enum need_kind { BUILTIN, LEASES, CRD };

struct need {
  enum carp_apicheck_doc doc;
  const char *name; /* the resource in the document */
  /* A subresource served by another group version (pods/eviction): the
   * group and version its entry must name. */
  const char *group;
  const char *version;
  const char *what;  /* named when missing */
  const char *since; /* the Kubernetes release that added it */
  enum need_kind kind;
};

static const struct need needs[] = {
    {CARP_APICHECK_CORE, "pods", NULL, NULL, "v1 pods", NULL, BUILTIN},
    {CARP_APICHECK_CORE, "nodes", NULL, NULL, "v1 nodes", NULL, BUILTIN},
    {CARP_APICHECK_CORE, "events", NULL, NULL, "v1 events", NULL, BUILTIN},
    {CARP_APICHECK_CORE, "pods/eviction", "policy", "v1",
     "policy/v1 Eviction (pods/eviction)", "1.22", BUILTIN},
    {CARP_APICHECK_APPS, "daemonsets", NULL, NULL, "apps/v1 daemonsets", "1.9",
     BUILTIN},
    {CARP_APICHECK_POLICY, "poddisruptionbudgets", NULL, NULL,
     "policy/v1 poddisruptionbudgets", "1.21", BUILTIN},
    {CARP_APICHECK_COORDINATION, "leases", NULL, NULL,
     "coordination.k8s.io/v1 leases", "1.14", LEASES},
    {CARP_APICHECK_KARPENTER, "nodepools", NULL, NULL,
     "karpenter.sh/v1 nodepools", NULL, CRD},
    {CARP_APICHECK_KARPENTER, "nodeclaims", NULL, NULL,
     "karpenter.sh/v1 nodeclaims", NULL, CRD},
    {CARP_APICHECK_CARPENTER, "proxmoxnodeclasses", NULL, NULL,
     "carpenter.dev/v1alpha1 proxmoxnodeclasses", NULL, CRD},
};

static const char *const paths[CARP_APICHECK_NDOCS] = {
    "/version",
    "/api/v1",
    "/apis/apps/v1",
    "/apis/policy/v1",
    "/apis/coordination.k8s.io/v1",
    "/apis/karpenter.sh/v1",
    "/apis/carpenter.dev/v1alpha1",
};

const char *carp_apicheck_path(enum carp_apicheck_doc doc)
{
  return (unsigned)doc < CARP_APICHECK_NDOCS ? paths[doc] : "";
}

static int crd_doc(int doc)
{
  return doc == CARP_APICHECK_KARPENTER || doc == CARP_APICHECK_CARPENTER;
}

/* ---- the pure part ---- */

void carp_apicheck_verdict_init(struct carp_apicheck_verdict *v)
{
  memset(v, 0, sizeof(*v));
  carp_buf_init(&v->why, 4096);
  carp_buf_init(&v->crds_missing, 4096);
}

void carp_apicheck_verdict_free(struct carp_apicheck_verdict *v)
{
  carp_buf_free(&v->why);
  carp_buf_free(&v->crds_missing);
}

static int served(yajl_val list, const struct need *n)
{
  yajl_val res = carp_json_arr(list, "resources", NULL);
  size_t i;
  for (i = 0; res && i < res->u.array.len; i++) {
    yajl_val r = res->u.array.values[i];
    const char *name = carp_json_str(r, "name", NULL);
    const char *group = carp_json_str(r, "group", NULL);
    const char *version = carp_json_str(r, "version", NULL);
    if (!name || strcmp(name, n->name))
      continue;
    if (!n->group)
      return 1;
    /* The entry says which group version serves it (1.20 answers
     * policy/v1beta1 for pods/eviction). */
    return group && version && !strcmp(group, n->group) &&
           !strcmp(version, n->version);
  }
  return 0;
}

/* "1", "25+", "25-gke.100": the leading digits. */
static long leading_int(const char *s)
{
  if (!s || *s < '0' || *s > '9')
    return -1;
  return strtol(s, NULL, 10);
}

static void list_add(struct carp_buf *b, const char *head, const char *item)
{
  carp_buf_printf(b, "%s%s", b->len ? ", " : head, item);
}

/* The version, or a reason in why; 1 when it meets the floor. */
static int check_version(const struct carp_apicheck_answer *a,
                         struct carp_apicheck_verdict *out)
{
  const char *git, *major, *minor;
  long ma, mi;
  if (!a->status) {
    carp_buf_puts(&out->why, "the server's version was not read yet");
    return 0;
  }
  if (a->status != 200) {
    carp_buf_printf(&out->why, "cannot read /version: %s",
                    a->error ? a->error : "no answer");
    return 0;
  }
  git = carp_json_str(a->body, "gitVersion", NULL);
  major = carp_json_str(a->body, "major", NULL);
  minor = carp_json_str(a->body, "minor", NULL);
  snprintf(out->version, sizeof(out->version), "%s", git ? git : "");
  ma = leading_int(major);
  mi = leading_int(minor);
  if (ma < 0 || mi < 0) {
    carp_buf_printf(&out->why,
                    "the server's /version has no numeric major and minor "
                    "(gitVersion \"%s\")",
                    out->version);
    return 0;
  }
  if (ma < CARP_KUBE_MIN_MAJOR ||
      (ma == CARP_KUBE_MIN_MAJOR && mi < CARP_KUBE_MIN_MINOR)) {
    carp_buf_printf(&out->why,
                    "Kubernetes %s is older than %d.%d, the oldest Carpenter "
                    "supports",
                    *out->version ? out->version : "(unknown)",
                    CARP_KUBE_MIN_MAJOR, CARP_KUBE_MIN_MINOR);
    return 0;
  }
  return 1;
}

/* Appends "path: error" (or "path (no answer yet)") once per path. */
static void add_unread(struct carp_buf *b, enum carp_apicheck_doc doc,
                       const struct carp_apicheck_answer *a)
{
  if (strstr(carp_buf_cstr(b), paths[doc]))
    return;
  carp_buf_printf(b, "%s%s%s%s", b->len ? ", " : "", paths[doc],
                  a->error ? ": " : " (no answer yet)",
                  a->error ? a->error : "");
}

void carp_apicheck_evaluate(const struct carp_apicheck_answer *answers,
                            int need_leases, struct carp_apicheck_verdict *out)
{
  struct carp_buf missing, unread, crds_unread;
  size_t i;
  int version_ok, version_known;

  carp_buf_reset(&out->why);
  carp_buf_reset(&out->crds_missing);
  out->version[0] = '\0';
  carp_buf_init(&missing, 4096);
  carp_buf_init(&unread, 4096);
  carp_buf_init(&crds_unread, 4096);
  version_ok = check_version(&answers[CARP_APICHECK_VERSION], out);
  version_known = answers[CARP_APICHECK_VERSION].status == 200;
  for (i = 0; i < CARP_ARRAY_LEN(needs); i++) {
    const struct need *n = &needs[i];
    const struct carp_apicheck_answer *a = &answers[n->doc];
    char item[160];
    if (n->kind == LEASES && !need_leases)
      continue;
    if (a->status != 200 && a->status != 404) {
      /* Not answered (yet): not ready, but not called missing either. */
      add_unread(n->kind == CRD ? &crds_unread : &unread, n->doc, a);
      continue;
    }
    if (a->status == 200 && served(a->body, n))
      continue;
    if (n->since)
      snprintf(item, sizeof(item), "%s (Kubernetes %s)", n->what, n->since);
    else
      snprintf(item, sizeof(item), "%s", n->what);
    list_add(n->kind == CRD ? &out->crds_missing : &missing, "", item);
  }
  out->server_ok = version_ok && !missing.len && !unread.len;
  /* Definitely wrong (an old version, an API not served) or only not
   * known yet (no answer, an error): only the first is an ERROR. */
  out->server_unknown =
      !out->server_ok && !missing.len && (version_ok || !version_known);
  if (missing.len)
    carp_buf_printf(&out->why, "%sthe server does not serve %s",
                    out->why.len ? "; " : "", carp_buf_cstr(&missing));
  if (unread.len)
    carp_buf_printf(&out->why, "%snot read yet: %s", out->why.len ? "; " : "",
                    carp_buf_cstr(&unread));
  out->crds_ok = !out->crds_missing.len && !crds_unread.len;
  out->crds_unknown = !out->crds_ok && !out->crds_missing.len;
  if (out->crds_unknown)
    carp_buf_printf(&out->crds_missing, "not read yet: %s",
                    carp_buf_cstr(&crds_unread));
  carp_buf_free(&missing);
  carp_buf_free(&unread);
  carp_buf_free(&crds_unread);
}

/* ---- the checker ---- */

struct slot {
  struct carp_apicheck *a;
  enum carp_apicheck_doc doc;
  struct carp_kube_op *op;
  char *error;
};

struct carp_apicheck {
  uv_loop_t *loop;
  struct carp_kube *kube;
  struct carp_apicheck_options o;
  uv_timer_t timer;
  struct slot slots[CARP_APICHECK_NDOCS];
  struct carp_apicheck_answer answers[CARP_APICHECK_NDOCS];
  int inflight;
  int server_good; /* seen good once: only the CRD groups are reread */
  int evaluated;   /* a round has finished */
  struct carp_apicheck_verdict verdict;
  char *logged_server; /* the last verdicts logged */
  char *logged_crds;
  int closing;
  int timer_closed;
  void (*close_cb)(void *arg);
  void *close_arg;
};

static void maybe_freed(struct carp_apicheck *a)
{
  void (*cb)(void *);
  void *arg;
  int i;
  if (!a->closing || a->inflight || !a->timer_closed)
    return;
  cb = a->close_cb;
  arg = a->close_arg;
  for (i = 0; i < CARP_APICHECK_NDOCS; i++) {
    carp_json_free(a->answers[i].body);
    carp_free(a->slots[i].error);
  }
  carp_apicheck_verdict_free(&a->verdict);
  carp_free(a->logged_server);
  carp_free(a->logged_crds);
  carp_free(a);
  if (cb)
    cb(arg);
}

/* Logs what changed since the last round (a verdict is logged once). */
static void log_verdict(struct carp_apicheck *a)
{
  const struct carp_apicheck_verdict *v = &a->verdict;
  const char *server = v->server_ok ? "" : carp_buf_cstr(&v->why);
  const char *crds = v->crds_ok ? "" : carp_buf_cstr(&v->crds_missing);
  if (!a->logged_server || strcmp(a->logged_server, server)) {
    if (v->server_ok)
      CARP_LOG_INFO("apicheck", "Kubernetes API server supported",
                    CARP_F_STR("version", v->version));
    else if (v->server_unknown)
      CARP_LOG_WARN("apicheck", "cannot check the Kubernetes API server yet",
                    CARP_F_STR("problem", server));
    else
      CARP_LOG_ERROR("apicheck",
                     "the Kubernetes API server lacks what Carpenter needs; "
                     "not ready",
                     CARP_F_STR("version", v->version),
                     CARP_F_STR("problem", server));
    carp_free(a->logged_server);
    a->logged_server = carp_strdup(server);
  }
  if (!a->logged_crds || strcmp(a->logged_crds, crds)) {
    if (v->crds_ok)
      CARP_LOG_INFO("apicheck", "CRDs found");
    else if (v->crds_unknown)
      CARP_LOG_WARN("apicheck", "cannot check the CRDs yet",
                    CARP_F_STR("problem", crds));
    else
      CARP_LOG_INFO("apicheck", "CRDs not found", CARP_F_STR("missing", crds));
    carp_free(a->logged_crds);
    a->logged_crds = carp_strdup(crds);
  }
}

static void round_done(struct carp_apicheck *a)
{
  carp_apicheck_evaluate(a->answers, a->o.need_leases, &a->verdict);
  a->evaluated = 1;
  if (a->verdict.server_ok)
    a->server_good = 1;
  log_verdict(a);
}

static void on_answer(const struct carp_kube_result *res, void *arg)
{
  struct slot *s = arg;
  struct carp_apicheck *a = s->a;
  struct carp_apicheck_answer *ans = &a->answers[s->doc];
  s->op = NULL;
  a->inflight--;
  if (a->closing) {
    maybe_freed(a);
    return;
  }
  carp_json_free(ans->body);
  ans->body = NULL;
  carp_free(s->error);
  s->error = NULL;
  ans->error = NULL;
  if (!res->err && res->raw &&
      carp_json_parse(res->raw, res->raw_len, &ans->body, NULL) == 0) {
    ans->status = 200;
  } else if (res->status == 404) {
    ans->status = 404;
  } else {
    char msg[512];
    snprintf(msg, sizeof(msg), "%s%s%s",
             carp_strerror(res->err ? res->err : CARP_EPARSE),
             res->message && *res->message ? ": " : "",
             res->message ? res->message : "");
    s->error = carp_strdup(msg);
    ans->status = res->status && res->status != 200 ? res->status : 599;
    ans->error = s->error;
  }
  if (!a->inflight)
    round_done(a);
}

static void on_timer(uv_timer_t *t)
{
  struct carp_apicheck *a = t->data;
  int i;
  if (a->closing || a->inflight)
    return;
  for (i = 0; i < CARP_APICHECK_NDOCS; i++) {
    struct carp_kube_request r;
    struct slot *s = &a->slots[i];
    if (a->server_good && !crd_doc(i))
      continue;
    if (i == CARP_APICHECK_COORDINATION && !a->o.need_leases)
      continue;
    memset(&r, 0, sizeof(r));
    r.method = "GET";
    r.path = paths[i];
    r.idempotent = 1;
    r.ungated = 1;
    a->inflight++;
    if (carp_kube_call(a->kube, &r, on_answer, s, &s->op)) {
      a->inflight--;
      s->op = NULL;
    }
  }
  if (!a->inflight)
    round_done(a);
}

int carp_apicheck_new(uv_loop_t *loop, struct carp_kube *kube,
                      const struct carp_apicheck_options *o,
                      struct carp_apicheck **out)
{
  struct carp_apicheck *a;
  int i;
  if (!loop || !kube || !out)
    return CARP_EINVAL;
  a = CARP_NEW(struct carp_apicheck);
  a->loop = loop;
  a->kube = kube;
  if (o)
    a->o = *o;
  if (!a->o.interval_ms)
    a->o.interval_ms = DEFAULT_INTERVAL_MS;
  for (i = 0; i < CARP_APICHECK_NDOCS; i++) {
    a->slots[i].a = a;
    a->slots[i].doc = (enum carp_apicheck_doc)i;
  }
  carp_apicheck_verdict_init(&a->verdict);
  uv_timer_init(loop, &a->timer);
  a->timer.data = a;
  *out = a;
  return 0;
}

void carp_apicheck_start(struct carp_apicheck *a)
{
  uv_timer_start(&a->timer, on_timer, 0, a->o.interval_ms);
}

static void on_timer_closed(uv_handle_t *h)
{
  struct carp_apicheck *a = h->data;
  a->timer_closed = 1;
  maybe_freed(a);
}

void carp_apicheck_close(struct carp_apicheck *a, void (*cb)(void *arg),
                         void *arg)
{
  int i;
  if (!a || a->closing)
    return;
  a->closing = 1;
  a->close_cb = cb;
  a->close_arg = arg;
  for (i = 0; i < CARP_APICHECK_NDOCS; i++)
    if (a->slots[i].op)
      carp_kube_cancel(a->slots[i].op);
  uv_close((uv_handle_t *)&a->timer, on_timer_closed);
}

int carp_apicheck_server_ready(void *arg, struct carp_buf *why)
{
  struct carp_apicheck *a = arg;
  if (!a->evaluated) {
    carp_buf_puts(why, "the API server has not been checked yet");
    return 0;
  }
  if (!a->verdict.server_ok)
    carp_buf_puts(why, carp_buf_cstr(&a->verdict.why));
  return a->verdict.server_ok;
}

int carp_apicheck_crds_ready(void *arg, struct carp_buf *why)
{
  struct carp_apicheck *a = arg;
  if (!a->evaluated) {
    carp_buf_puts(why, "the CRDs have not been checked yet");
    return 0;
  }
  if (!a->verdict.crds_ok)
    carp_buf_printf(why, "%s%s",
                    a->verdict.crds_unknown ? "" : "CRDs not installed: ",
                    carp_buf_cstr(&a->verdict.crds_missing));
  return a->verdict.crds_ok;
}
