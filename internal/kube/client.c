/* client.c: the Kubernetes REST client (see include/carpenter/kube.h).
 *
 * A call becomes an op: it waits for a token of the client-side rate
 * limiter, goes out through the async HTTP client, and on an answer is
 * either retried (after backoff or Retry-After, if the retry rules allow)
 * or delivered. Each op owns a timer for its waits; the op is freed in the
 * timer's close callback, so nothing is freed under a caller's feet. */
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/jtree.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/version.h"

#define TOKEN_RECHECK_MS   (60 * 1000)
#define RETRY_AFTER_CAP_MS (30 * 1000)

int carp_kube_error_of(long http_status, const char *reason)
{
  static const struct {
    const char *reason;
    int err;
  } map[] = {
      {"NotFound", CARP_ENOTFOUND},
      {"AlreadyExists", CARP_EEXIST},
      {"Conflict", CARP_ECONFLICT},
      {"Invalid", CARP_EINVALID},
      {"TooManyRequests", CARP_ETOOMANY},
      {"Gone", CARP_EGONE},
      {"Expired", CARP_EGONE},
      {"Forbidden", CARP_EFORBIDDEN},
      {"Unauthorized", CARP_EUNAUTHORIZED},
      {"BadRequest", CARP_EBADREQUEST},
      {"MethodNotAllowed", CARP_EBADREQUEST},
      {"UnsupportedMediaType", CARP_EBADREQUEST},
      {"RequestEntityTooLarge", CARP_ETOOBIG},
      {"ServiceUnavailable", CARP_EUNAVAIL},
      {"InternalError", CARP_EUNAVAIL},
      {"Timeout", CARP_EUNAVAIL},
      {"ServerTimeout", CARP_EUNAVAIL},
  };
  size_t i;
  if (http_status >= 200 && http_status < 300)
    return 0;
  for (i = 0; reason && *reason && i < CARP_ARRAY_LEN(map); i++)
    if (!strcmp(map[i].reason, reason))
      return map[i].err;
  switch (http_status) {
  case 400:
    return CARP_EBADREQUEST;
  case 401:
    return CARP_EUNAUTHORIZED;
  case 403:
    return CARP_EFORBIDDEN;
  case 404:
    return CARP_ENOTFOUND;
  case 409:
    return CARP_ECONFLICT;
  case 410:
    return CARP_EGONE;
  case 413:
    return CARP_ETOOBIG;
  case 422:
    return CARP_EINVALID;
  case 429:
    return CARP_ETOOMANY;
  }
  return http_status >= 500 ? CARP_EUNAVAIL : CARP_EHTTP;
}

int carp_kube_path(struct carp_buf *out, const struct carp_kube_ref *ref)
{
  if (!ref->version || !ref->resource)
    return CARP_EINVAL;
  if (ref->group && *ref->group)
    carp_buf_printf(out, "/apis/%s/%s", ref->group, ref->version);
  else
    carp_buf_printf(out, "/api/%s", ref->version);
  if (ref->namespace && *ref->namespace)
    carp_buf_printf(out, "/namespaces/%s", ref->namespace);
  carp_buf_printf(out, "/%s", ref->resource);
  if (ref->name && *ref->name)
    carp_buf_printf(out, "/%s", ref->name);
  if (ref->subresource && *ref->subresource)
    carp_buf_printf(out, "/%s", ref->subresource);
  return out->overflowed ? CARP_ETOOBIG : 0;
}

/* ---- credentials ---- */

static void set_token(struct carp_kube *k, const char *token)
{
  struct carp_buf b;
  if (k->auth) {
    volatile char *p = k->auth;
    while (*p)
      *p++ = 0;
    CARP_FREE(&k->auth);
  }
  if (!token || !*token)
    return;
  carp_buf_init(&b, 64 * 1024);
  carp_buf_printf(&b, "Bearer %s", token);
  k->auth = carp_buf_steal(&b, NULL);
}

/* Bound service-account tokens rotate: re-read the file when it changed,
 * checking at most once a minute (or at once when force is set). */
static void refresh_token(struct carp_kube *k, int force)
{
  struct stat st;
  char buf[16 * 1024];
  size_t n;
  FILE *f;
  uint64_t now = uv_now(k->loop);
  if (!k->cfg.token_file)
    return;
  if (!force && k->token_checked_ms &&
      now - k->token_checked_ms < TOKEN_RECHECK_MS)
    return;
  k->token_checked_ms = now;
  if (stat(k->cfg.token_file, &st) != 0)
    return;
  if (!force && k->auth && st.st_mtim.tv_sec == k->token_mtime.tv_sec &&
      st.st_mtim.tv_nsec == k->token_mtime.tv_nsec)
    return;
  f = fopen(k->cfg.token_file, "rb");
  if (!f)
    return;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
    buf[--n] = '\0';
  if (n) {
    set_token(k, buf);
    k->token_mtime = st.st_mtim;
  }
  memset(buf, 0, sizeof(buf));
}

int carp__kube_headers(struct carp_kube_op *op, struct carp_http_header *h,
                       size_t cap)
{
  size_t n = 0;
  struct carp_kube *k = op->k;
  refresh_token(k, 0);
  if (k->auth && n < cap)
    h[n++] = (struct carp_http_header){"Authorization", k->auth};
  if (n < cap)
    h[n++] = (struct carp_http_header){"Accept", "application/json"};
  if (op->content_type && n < cap)
    h[n++] = (struct carp_http_header){"Content-Type", op->content_type};
  return (int)n;
}

/* ---- metrics ---- */

void carp__kube_count(struct carp_kube_op *op, long status)
{
  struct carp_kube *k = op->k;
  char code[24];
  double secs = (double)(uv_now(k->loop) - op->started_ms) / 1000.0;
  k->nrequests++;
  if (!k->m_requests)
    return;
  if (status > 0)
    snprintf(code, sizeof(code), "%ld", status);
  else
    snprintf(code, sizeof(code), "<error>");
  carp_metric_add(k->m_requests, CARP_VALUES(code, op->method, k->host), 1);
  carp_metric_observe(k->m_duration, CARP_VALUES(op->method, k->host), secs);
}

/* ---- op lifecycle ---- */

/* Called as each handle of the client closes; the last one frees it. */
static void handle_closed(struct carp_kube *k)
{
  void (*cb)(void *);
  void *arg;
  if (--k->handles > 0 || !k->closing)
    return;
  cb = k->close_cb;
  arg = k->close_arg;
  carp_free(k->host);
  set_token(k, NULL);
  carp_kube_config_free(&k->cfg);
  carp_free(k);
  if (cb)
    cb(arg);
}

static void op_free(uv_handle_t *h)
{
  struct carp_kube_op *op = h->data;
  struct carp_kube *k = op->k;
  if (op->prev)
    op->prev->next = op->next;
  else
    k->ops = op->next;
  if (op->next)
    op->next->prev = op->prev;
  carp_free(op->method);
  carp_free(op->url);
  carp_free(op->content_type);
  carp_free(op->body);
  carp_framer_free(&op->framer);
  carp_buf_free(&op->errbody);
  carp_free(op);
  handle_closed(k);
}

void carp__kube_op_finish(struct carp_kube_op *op)
{
  op->state = OP_DONE;
  uv_timer_stop(&op->timer);
  uv_close((uv_handle_t *)&op->timer, op_free);
}

struct carp_kube_op *carp__kube_op_new(struct carp_kube *k, const char *method,
                                       const char *path, const char *query)
{
  struct carp_kube_op *op = CARP_NEW(struct carp_kube_op);
  struct carp_buf url;
  op->k = k;
  op->method = carp_strdup(method);
  op->is_read = !strcmp(method, "GET");
  carp_buf_init(&url, 64 * 1024);
  carp_buf_printf(&url, "%s%s%s%s", k->cfg.server, path,
                  query && *query ? "?" : "", query ? query : "");
  op->url = carp_buf_steal(&url, NULL);
  op->timeout_ms = k->timeout_ms;
  op->started_ms = uv_now(k->loop);
  carp_backoff_init(&op->backoff, 200, 10 * 1000, 2.0, 0.5);
  carp_framer_init(&op->framer, 16 * 1024 * 1024);
  carp_buf_init(&op->errbody, 64 * 1024);
  uv_timer_init(k->loop, &op->timer);
  op->timer.data = op;
  k->handles++;
  op->next = k->ops;
  if (k->ops)
    k->ops->prev = op;
  k->ops = op;
  return op;
}

static void rate_pump(struct carp_kube *k);
static void send_op(struct carp_kube_op *op);

void carp__kube_op_enqueue(struct carp_kube_op *op)
{
  struct carp_kube *k = op->k;
  if (k->has_backend) {
    send_op(op);
    return;
  }
  op->state = OP_WAIT_RATE;
  op->rate_next = NULL;
  if (k->rate_tail)
    k->rate_tail->rate_next = op;
  else
    k->rate_head = op;
  k->rate_tail = op;
  rate_pump(k);
}

static void rate_unlink(struct carp_kube *k, struct carp_kube_op *op)
{
  struct carp_kube_op **pp = &k->rate_head, *prev = NULL;
  while (*pp && *pp != op) {
    prev = *pp;
    pp = &(*pp)->rate_next;
  }
  if (!*pp)
    return;
  *pp = op->rate_next;
  if (k->rate_tail == op)
    k->rate_tail = prev;
  op->rate_next = NULL;
}

static void deliver(struct carp_kube_op *op, int err, long status,
                    const char *reason, const char *message, yajl_val body,
                    const char *raw, size_t raw_len)
{
  struct carp_kube_result res;
  res.err = err;
  res.status = status;
  res.reason = reason ? reason : "";
  res.message = message ? message : "";
  res.body = body;
  res.raw = raw ? raw : "";
  res.raw_len = raw_len;
  res.attempts = op->attempts;
  if (op->watch) {
    if (op->on_watch_done)
      op->on_watch_done(err, res.message, op->arg);
  } else if (op->cb) {
    op->cb(&res, op->arg);
  }
  carp__kube_op_finish(op);
}

static void on_deferred(uv_timer_t *t)
{
  struct carp_kube_op *op = t->data;
  deliver(op, op->pending_err, 0, NULL, carp_strerror(op->pending_err), NULL,
          NULL, 0);
}

/* Delivers err on the next loop iteration (never inside the caller). */
static void deliver_later(struct carp_kube_op *op, int err)
{
  op->state = OP_DELIVERING;
  op->pending_err = err;
  uv_timer_start(&op->timer, on_deferred, 0, 0);
}

static void on_rate_timer(uv_timer_t *t)
{
  rate_pump(carp_container_of(t, struct carp_kube, rate_timer));
}

static void rate_pump(struct carp_kube *k)
{
  uint64_t now = uv_now(k->loop);
  k->tokens += (double)(now - k->tokens_at) * k->qps / 1000.0;
  if (k->tokens > k->burst)
    k->tokens = k->burst;
  k->tokens_at = now;
  while (k->rate_head && k->tokens >= 1.0) {
    struct carp_kube_op *op = k->rate_head;
    /* Past the cap a request waits here, as an op, and not in curl with
     * an easy handle, buffers and headers of its own; the next one goes
     * when one of those in flight ends (carp__kube_http_done). */
    if (!op->watch && !k->has_backend && k->requests >= CARP_KUBE_MAX_REQUESTS)
      break;
    k->rate_head = op->rate_next;
    if (!k->rate_head)
      k->rate_tail = NULL;
    op->rate_next = NULL;
    k->tokens -= 1.0;
    send_op(op);
  }
  if (k->rate_head && !k->closing && k->tokens < 1.0) {
    uint64_t wait = (uint64_t)((1.0 - k->tokens) * 1000.0 / k->qps) + 1;
    uv_timer_start(&k->rate_timer, on_rate_timer, wait, 0);
  }
}

static uint64_t retry_after_ms(const struct carp_http_response *resp)
{
  const char *ra = resp ? carp_http_response_header(resp, "Retry-After") : NULL;
  char *end;
  long secs;
  if (!ra)
    return 0;
  errno = 0;
  secs = strtol(ra, &end, 10);
  if (errno || end == ra || secs < 0)
    return 0;
  if (secs * 1000 > RETRY_AFTER_CAP_MS)
    return RETRY_AFTER_CAP_MS;
  return (uint64_t)secs * 1000 + 1;
}

static int should_retry(struct carp_kube_op *op, int status,
                        const struct carp_http_response *resp)
{
  long code = resp ? resp->status : 0;
  int has_retry_after =
      resp && carp_http_response_header(resp, "Retry-After") != NULL;
  if (op->cancelled || op->k->closing || op->attempts >= op->k->max_attempts)
    return 0;
  if (status < 0) {
    if (status == CARP_ECANCELED || status == CARP_ETLS)
      return 0;
    /* Connect failures never reached the server. */
    return status == CARP_ECONNECT || op->is_read || op->idempotent;
  }
  if (code == 429)
    return 1;
  if (code >= 500 && code != 501)
    return op->is_read || op->idempotent || has_retry_after;
  return 0;
}

static void on_retry_timer(uv_timer_t *t)
{
  struct carp_kube_op *op = t->data;
  carp__kube_op_enqueue(op);
}

static void decode_status(yajl_val body, const char **reason,
                          const char **message)
{
  const char *kind = carp_json_str(body, "kind", NULL);
  if (!kind || strcmp(kind, "Status"))
    return;
  *reason = carp_json_str(body, "reason", NULL);
  *message = carp_json_str(body, "message", NULL);
}

void carp__kube_http_done(struct carp_http_request *req, int status,
                          const struct carp_http_response *resp, void *arg)
{
  struct carp_kube_op *op = arg;
  struct carp_kube *k = op->k;
  struct carp_arena mem;
  yajl_val body = NULL;
  const char *reason = NULL, *message = NULL;
  const char *ctype;
  int err;

  op->req = NULL;
  if (op->counted) {
    op->counted = 0;
    k->requests--;
    if (k->rate_head && !k->closing)
      rate_pump(k);
  }
  carp__kube_count(op, status < 0 ? 0 : resp->status);
  if (op->cancelled) {
    deliver(op, CARP_ECANCELED, 0, NULL, "canceled", NULL, NULL, 0);
    return;
  }
  /* A rotated token: re-read it once and try again. */
  if (status == 0 && resp->status == 401 && k->cfg.token_file &&
      !op->retried_auth) {
    op->retried_auth = 1;
    refresh_token(k, 1);
    carp__kube_op_enqueue(op);
    return;
  }
  if (should_retry(op, status, resp)) {
    uint64_t delay = carp_backoff_next(&op->backoff);
    uint64_t ra = status == 0 ? retry_after_ms(resp) : 0;
    if (ra > delay)
      delay = ra;
    CARP_LOG_DEBUG("kube", "retrying request", CARP_F_STR("method", op->method),
                   CARP_F_INT("status", status < 0 ? 0 : resp->status),
                   CARP_F_ERR(status < 0 ? status : 0),
                   CARP_F_DURATION("after", delay));
    op->state = OP_WAIT_RETRY;
    uv_timer_start(&op->timer, on_retry_timer, delay, 0);
    return;
  }
  if (status < 0) {
    deliver(op, status, resp ? resp->status : 0, NULL,
            resp && resp->errmsg[0] ? resp->errmsg : carp_strerror(status),
            NULL, NULL, 0);
    return;
  }
  ctype = carp_http_response_header(resp, "Content-Type");
  /* The answer's tree lives only through its callback: carved from an
   * arena, it costs no malloc per value (a 5 KB Node: 13 us, not 24). */
  carp_arena_init(&mem);
  if (resp->body.len && ctype && strstr(ctype, "json") &&
      !(op->raw_body && resp->status >= 200 && resp->status < 300)) {
    char *perr = NULL;
    if (carp_jtree_parse_kube(&mem, resp->body.ptr, resp->body.len, &body,
                              &perr)) {
      if (resp->status >= 200 && resp->status < 300) {
        deliver(op, CARP_EPARSE, resp->status, NULL,
                perr ? perr : "invalid JSON", NULL, resp->body.ptr,
                resp->body.len);
        carp_free(perr);
        carp_arena_free(&mem);
        return;
      }
      carp_free(perr);
      body = NULL;
    }
  }
  if (resp->status < 200 || resp->status >= 300)
    decode_status(body, &reason, &message);
  err = carp_kube_error_of(resp->status, reason);
  if (err && !message)
    message = resp->reason && *resp->reason ? resp->reason : carp_strerror(err);
  deliver(op, err, resp->status, reason, message, body,
          carp_buf_cstr(&resp->body), resp->body.len);
  carp_arena_free(&mem);
}

static void send_op(struct carp_kube_op *op)
{
  struct carp_http_header h[4];
  struct carp_http_request_options o;
  int n, rc;
  if (!op->is_read && !op->ungated && op->k->gate &&
      !op->k->gate(op->k->gate_arg)) {
    deliver(op, CARP_ENOTLEADER, 0, NULL,
            "not the leader: write refused before sending", NULL, NULL, 0);
    return;
  }
  if (op->k->has_backend) {
    const char *path = op->url + strlen(op->k->cfg.server);
    op->attempts++;
    op->state = OP_IN_FLIGHT;
    if (op->watch) {
      op->watch_status = 200;
      op->k->backend.watch(op->k->backend.ctx, op, path);
    } else {
      op->k->backend.request(op->k->backend.ctx, op, op->method, path, op->body,
                             op->body_len);
    }
    return;
  }
  if (op->watch) {
    rc = carp__kube_watch_send(op);
    if (rc)
      carp__kube_watch_deliver_error(op, rc);
    return;
  }
  n = carp__kube_headers(op, h, CARP_ARRAY_LEN(h));
  memset(&o, 0, sizeof(o));
  o.method = op->method;
  o.url = op->url;
  o.headers = h;
  o.nheaders = (size_t)n;
  o.body = op->body;
  o.body_len = op->body_len;
  o.timeout_ms = op->timeout_ms;
  o.max_body = 256 * 1024 * 1024;
  /* A write answers with one object; reads may be list pages. */
  o.small_answer = !op->is_read;
  o.on_done = carp__kube_http_done;
  o.arg = op;
  op->attempts++;
  op->state = OP_IN_FLIGHT;
  rc = carp_http_request_start(op->k->http, &o, &op->req);
  if (rc) {
    op->req = NULL;
    deliver(op, rc, 0, NULL, carp_strerror(rc), NULL, NULL, 0);
    return;
  }
  op->counted = 1;
  op->k->requests++;
}

void carp__kube_connections(struct carp_kube *k, int watch_delta)
{
  k->watches += watch_delta;
  if (k->http)
    (void)carp_http_client_set_max_host_connections(
        k->http, CARP_KUBE_MAX_REQUESTS + (k->watches > 0 ? k->watches : 0));
}

void carp_kube_cancel(struct carp_kube_op *op)
{
  if (!op || op->cancelled || op->state >= OP_DELIVERING)
    return;
  op->cancelled = 1;
  switch (op->state) {
  case OP_WAIT_RATE:
    rate_unlink(op->k, op);
    deliver_later(op, CARP_ECANCELED);
    break;
  case OP_WAIT_RETRY:
    uv_timer_stop(&op->timer);
    deliver_later(op, CARP_ECANCELED);
    break;
  case OP_IN_FLIGHT:
    if (op->k->has_backend) {
      op->k->backend.cancel(op->k->backend.ctx, op);
      deliver_later(op, CARP_ECANCELED);
    } else if (op->req) {
      carp_http_request_cancel(op->req);
    }
    break;
  default:
    break;
  }
}

int carp_kube_call(struct carp_kube *k, const struct carp_kube_request *r,
                   carp_kube_cb cb, void *arg, struct carp_kube_op **out)
{
  struct carp_kube_op *op;
  if (!k || !r || !r->method || !r->path || !cb)
    return CARP_EINVAL;
  if (k->closing)
    return CARP_ECANCELED;
  op = carp__kube_op_new(k, r->method, r->path, r->query);
  op->cb = cb;
  op->arg = arg;
  op->idempotent = r->idempotent;
  op->ungated = r->ungated;
  op->raw_body = r->raw_body;
  if (r->timeout_ms)
    op->timeout_ms = r->timeout_ms;
  if (r->content_type)
    op->content_type = carp_strdup(r->content_type);
  if (r->body) {
    op->body = carp_strndup(r->body, r->body_len);
    op->body_len = r->body_len;
  }
  if (out)
    *out = op;
  carp__kube_op_enqueue(op);
  return 0;
}

/* ---- verbs ---- */

static int call_ref(struct carp_kube *k, const char *method,
                    const struct carp_kube_ref *ref, const char *query,
                    const char *ctype, const char *body, size_t len,
                    int idempotent, carp_kube_cb cb, void *arg)
{
  struct carp_buf path;
  struct carp_kube_request r;
  int rc;
  carp_buf_init(&path, 8192);
  rc = carp_kube_path(&path, ref);
  if (!rc) {
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.path = carp_buf_cstr(&path);
    r.query = query;
    r.content_type = ctype;
    r.body = body;
    r.body_len = len;
    r.idempotent = idempotent;
    rc = carp_kube_call(k, &r, cb, arg, NULL);
  }
  carp_buf_free(&path);
  return rc;
}

int carp_kube_get(struct carp_kube *k, const struct carp_kube_ref *ref,
                  carp_kube_cb cb, void *arg)
{
  return call_ref(k, "GET", ref, NULL, NULL, NULL, 0, 1, cb, arg);
}

int carp_kube_list(struct carp_kube *k, const struct carp_kube_ref *ref,
                   const char *query, carp_kube_cb cb, void *arg)
{
  return call_ref(k, "GET", ref, query, NULL, NULL, 0, 1, cb, arg);
}

int carp_kube_create(struct carp_kube *k, const struct carp_kube_ref *ref,
                     const char *json, size_t len, carp_kube_cb cb, void *arg)
{
  return call_ref(k, "POST", ref, NULL, "application/json", json, len, 0, cb,
                  arg);
}

int carp_kube_update(struct carp_kube *k, const struct carp_kube_ref *ref,
                     const char *json, size_t len, carp_kube_cb cb, void *arg)
{
  return call_ref(k, "PUT", ref, NULL, "application/json", json, len, 1, cb,
                  arg);
}

int carp_kube_patch(struct carp_kube *k, const struct carp_kube_ref *ref,
                    enum carp_kube_patch type, const char *json, size_t len,
                    int idempotent, carp_kube_cb cb, void *arg)
{
  static const char *const types[] = {
      "application/merge-patch+json",
      "application/json-patch+json",
      "application/strategic-merge-patch+json",
      "application/apply-patch+yaml",
  };
  if ((unsigned)type >= CARP_ARRAY_LEN(types))
    return CARP_EINVAL;
  return call_ref(k, "PATCH", ref,
                  type == CARP_PATCH_APPLY ? "fieldManager=carpenter&force="
                                             "true"
                                           : NULL,
                  types[type], json, len,
                  idempotent || type == CARP_PATCH_APPLY, cb, arg);
}

int carp_kube_delete(struct carp_kube *k, const struct carp_kube_ref *ref,
                     const struct carp_kube_delete_options *o, carp_kube_cb cb,
                     void *arg)
{
  struct carp_buf body;
  struct carp_jw w;
  int rc;
  carp_buf_init(&body, 8192);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "kind", "DeleteOptions");
  carp_jw_kstr(&w, "apiVersion", "v1");
  if (o && o->propagation)
    carp_jw_kstr(&w, "propagationPolicy", o->propagation);
  if (o && o->grace_seconds >= 0)
    carp_jw_kint(&w, "gracePeriodSeconds", o->grace_seconds);
  if (o && (o->uid || o->resource_version)) {
    carp_jw_key(&w, "preconditions");
    carp_jw_obj(&w);
    if (o->uid)
      carp_jw_kstr(&w, "uid", o->uid);
    if (o->resource_version)
      carp_jw_kstr(&w, "resourceVersion", o->resource_version);
    carp_jw_obj_end(&w);
  }
  carp_jw_obj_end(&w);
  rc = carp_jw_finish(&w);
  if (!rc)
    rc = call_ref(k, "DELETE", ref, NULL, "application/json", body.ptr,
                  body.len, 1, cb, arg);
  carp_buf_free(&body);
  return rc;
}

int carp_kube_evict(struct carp_kube *k, const char *namespace,
                    const char *name, const char *uid, carp_kube_cb cb,
                    void *arg)
{
  struct carp_kube_ref ref = {.version = "v1",
                              .resource = "pods",
                              .namespace = namespace,
                              .name = name,
                              .subresource = "eviction"};
  struct carp_buf body;
  struct carp_jw w;
  int rc;
  carp_buf_init(&body, 8192);
  carp_jw_init(&w, &body);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", "policy/v1");
  carp_jw_kstr(&w, "kind", "Eviction");
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "name", name);
  carp_jw_kstr(&w, "namespace", namespace);
  carp_jw_obj_end(&w);
  if (uid) {
    carp_jw_key(&w, "deleteOptions");
    carp_jw_obj(&w);
    carp_jw_key(&w, "preconditions");
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "uid", uid);
    carp_jw_obj_end(&w);
    carp_jw_obj_end(&w);
  }
  carp_jw_obj_end(&w);
  rc = carp_jw_finish(&w);
  /* An eviction of the same pod twice is harmless: the second finds it
   * gone or already terminating. */
  if (!rc)
    rc = call_ref(k, "POST", &ref, NULL, "application/json", body.ptr, body.len,
                  1, cb, arg);
  carp_buf_free(&body);
  return rc;
}

/* ---- client lifecycle ---- */

static char *dup_mem(const char *p, size_t n)
{
  return p ? carp_strndup(p, n) : NULL;
}

static void copy_config(struct carp_kube_config *dst,
                        const struct carp_kube_config *src)
{
  memset(dst, 0, sizeof(*dst));
  dst->server = carp_strdup(src->server);
  dst->context = carp_strdup(src->context);
  dst->namespace = carp_strdup(src->namespace);
  dst->ca_file = carp_strdup(src->ca_file);
  dst->ca_pem = dup_mem(src->ca_pem, src->ca_pem_len);
  dst->ca_pem_len = src->ca_pem_len;
  dst->cert_file = carp_strdup(src->cert_file);
  dst->key_file = carp_strdup(src->key_file);
  dst->cert_pem = dup_mem(src->cert_pem, src->cert_pem_len);
  dst->cert_pem_len = src->cert_pem_len;
  dst->key_pem = dup_mem(src->key_pem, src->key_pem_len);
  dst->key_pem_len = src->key_pem_len;
  dst->token = carp_strdup(src->token);
  dst->token_file = carp_strdup(src->token_file);
  dst->tls_server_name = carp_strdup(src->tls_server_name);
  dst->insecure = src->insecure;
}

static void on_rate_timer_closed(uv_handle_t *h)
{
  handle_closed(h->data);
}

static void on_http_closed(void *arg)
{
  struct carp_kube *k = arg;
  uv_close((uv_handle_t *)&k->rate_timer, on_rate_timer_closed);
}

int carp_kube_new(uv_loop_t *loop, const struct carp_kube_options *opts,
                  struct carp_kube **out)
{
  struct carp_kube *k;
  struct carp_http_client_options ho;
  const struct carp_kube_config *c = opts ? opts->config : NULL;
  char ua[128];
  const char *host_start, *host_end;
  int rc;

  if (!loop || !c || !c->server || !out)
    return CARP_EINVAL;
  k = CARP_NEW(struct carp_kube);
  k->loop = loop;
  copy_config(&k->cfg, c);
  k->qps = opts->qps > 0 ? opts->qps : 200;
  k->burst = opts->burst > 0 ? opts->burst : 300;
  k->tokens = k->burst;
  k->tokens_at = uv_now(loop);
  k->max_attempts = opts->max_attempts > 0 ? opts->max_attempts : 5;
  k->timeout_ms = opts->timeout_ms ? opts->timeout_ms : 30 * 1000;
  host_start = strstr(c->server, "://");
  host_start = host_start ? host_start + 3 : c->server;
  host_end = strchr(host_start, '/');
  k->host = host_end ? carp_strndup(host_start, (size_t)(host_end - host_start))
                     : carp_strdup(host_start);
  if (c->token)
    set_token(k, c->token);
  refresh_token(k, 1);
  /* As kubectl does, a plain-HTTP server is allowed (a local test API
   * server), but never silently when a token would cross the network in
   * clear. Loopback stays quiet: nothing leaves the host. */
  if (!strncmp(c->server, "http://", 7) && (c->token || c->token_file) &&
      strncmp(k->host, "127.", 4) && strncmp(k->host, "localhost", 9) &&
      strncmp(k->host, "[::1]", 5))
    CARP_LOG_WARN("kube",
                  "the API server is reached over plain http://: its bearer "
                  "token crosses the network unencrypted; use https://",
                  CARP_F_STR("server", c->server));

  if (opts->backend) {
    k->backend = *opts->backend;
    k->has_backend = 1;
    goto ready;
  }
  memset(&ho, 0, sizeof(ho));
  ho.tls.ca_file = k->cfg.ca_file;
  ho.tls.ca_pem = k->cfg.ca_pem;
  ho.tls.ca_pem_len = k->cfg.ca_pem_len;
  ho.tls.cert_file = k->cfg.cert_file;
  ho.tls.key_file = k->cfg.key_file;
  ho.tls.cert_pem = k->cfg.cert_pem;
  ho.tls.cert_pem_len = k->cfg.cert_pem_len;
  ho.tls.key_pem = k->cfg.key_pem;
  ho.tls.key_pem_len = k->cfg.key_pem_len;
  ho.tls.insecure = k->cfg.insecure;
  /* Over HTTP/2 everything shares one connection; over HTTP/1.1 each
   * request in flight needs its own, and a burst of creates would open
   * (and keep, each with its TLS state) one per request. The limit grows
   * with the watches (carp__kube_connections). */
  ho.max_host_connections = CARP_KUBE_MAX_REQUESTS;
  /* Watch events wait up to this long to be read together: nothing
   * Carpenter does with them is quicker than its 1 s batch windows, and
   * at 1,000 pods one wake-up per event was a tenth of the CPU. */
  ho.stream_coalesce_ms = CARP_KUBE_WATCH_COALESCE_MS;
  snprintf(ua, sizeof(ua), "carpenter/%s", CARP_VERSION);
  ho.user_agent = opts->user_agent ? opts->user_agent : ua;
  rc = carp_http_client_new(loop, &ho, &k->http);
  if (rc) {
    carp_free(k->host);
    set_token(k, NULL);
    carp_kube_config_free(&k->cfg);
    carp_free(k);
    return rc;
  }
ready:
  uv_timer_init(loop, &k->rate_timer);
  k->rate_timer.data = k;
  k->handles = 1; /* the rate timer; each op adds one */
  if (opts->metrics) {
    k->m_requests = carp_metrics_counter(
        opts->metrics, "rest_client_requests_total",
        "Number of HTTP requests, partitioned by status code, method, and "
        "host.",
        CARP_LABELS("code", "method", "host"));
    k->m_duration = carp_metrics_histogram(
        opts->metrics, "rest_client_request_duration_seconds",
        "Request latency in seconds. Broken down by verb, and host.",
        CARP_LABELS("verb", "host"), carp_metrics_duration_buckets,
        carp_metrics_duration_buckets_len);
  }
  *out = k;
  return 0;
}

void carp_kube_close(struct carp_kube *k, void (*close_cb)(void *arg),
                     void *arg)
{
  struct carp_kube_op *op, *next;
  if (!k || k->closing)
    return;
  k->closing = 1;
  k->close_cb = close_cb;
  k->close_arg = arg;
  uv_timer_stop(&k->rate_timer);
  for (op = k->ops; op; op = next) {
    next = op->next;
    carp_kube_cancel(op);
  }
  /* In-flight requests get their ECANCELED from the HTTP client as it
   * closes; the rate timer closes after it. */
  if (k->http)
    carp_http_client_close(k->http, on_http_closed, k);
  else
    on_http_closed(k);
}

void carp_kube_set_write_gate(struct carp_kube *k, carp_kube_gate_cb gate,
                              void *arg)
{
  k->gate = gate;
  k->gate_arg = arg;
}

const struct carp_kube_config *carp_kube_config_of(const struct carp_kube *k)
{
  return &k->cfg;
}

uint64_t carp_kube_request_count(const struct carp_kube *k)
{
  return k->nrequests;
}
