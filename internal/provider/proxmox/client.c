/* client.c: the Proxmox VE API client of one cluster, on the async HTTP
 * module (include/carpenter/http.h).
 *
 * It adds what every Proxmox call needs and nothing more: the API token
 * header (never logged), TLS settings from --pve-config (fingerprint
 * pinning, CA file, or insecure), form encoding that escapes every byte
 * PVE could misread (it splits bodies on ';' too, and cuts a value at a
 * second '='), the {"data": ...} envelope, and the three shapes errors
 * arrive in - the reason phrase of the status line (PVE 8, body just
 * {"data":null}), a "message" member (PVE 9) and, for parameter errors, a
 * 400 with an "errors" map - turned into one error code and one message.
 * GETs are retried once when a kept-alive connection turned out dead;
 * nothing else is retried here (a POST may have acted). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/rand.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

struct carp_pve_client {
  uv_loop_t *loop;
  struct carp_http_client *http;
  char *region;
  char *base; /* .../api2/json */
  char *token_id;
  char *auth; /* "PVEAPIToken=<id>=<secret>"; wiped on close */
  uint64_t timeout_ms;
  struct carp_pve_call *calls;
  int closing;
  void (*close_cb)(void *arg);
  void *close_arg;
};

struct carp_pve_call {
  struct carp_pve_client *c;
  struct carp_pve_call *prev, *next;
  struct carp_http_request *req;
  char method[8];
  char *url;
  char *path; /* for logs */
  char *body;
  size_t body_len;
  char *content_type; /* NULL: form */
  uint64_t timeout_ms;
  int retries_left;
  uint64_t start_ms;
  carp_pve_cb cb;
  void *arg;
};

/* --- forms ---------------------------------------------------------------- */

void carp_pve_form_init(struct carp_pve_form *f)
{
  carp_buf_init(&f->buf, 4 * 1024 * 1024);
}

void carp_pve_form_free(struct carp_pve_form *f)
{
  carp_buf_free(&f->buf);
}

int carp_pve_form_add(struct carp_pve_form *f, const char *key,
                      const char *value)
{
  int rc = 0;
  if (f->buf.len)
    rc = carp_buf_putc(&f->buf, '&');
  if (!rc)
    rc = carp_http_escape(&f->buf, key);
  if (!rc)
    rc = carp_buf_putc(&f->buf, '=');
  if (!rc)
    rc = carp_http_escape(&f->buf, value ? value : "");
  return rc;
}

int carp_pve_form_addf(struct carp_pve_form *f, const char *key,
                       const char *fmt, ...)
{
  struct carp_buf v;
  va_list ap;
  int rc;
  carp_buf_init(&v, CARP_BUF_UNLIMITED);
  va_start(ap, fmt);
  rc = carp_buf_vprintf(&v, fmt, ap);
  va_end(ap);
  if (!rc)
    rc = carp_pve_form_add(f, key, carp_buf_cstr(&v));
  carp_buf_free(&v);
  return rc;
}

int carp_pve_form_add_int(struct carp_pve_form *f, const char *key, int64_t v)
{
  return carp_pve_form_addf(f, key, "%lld", (long long)v);
}

int carp_pve_form_add_sshkeys(struct carp_pve_form *f, const char *const *keys,
                              size_t n)
{
  struct carp_buf text, enc;
  size_t i;
  int rc = 0;
  carp_buf_init(&text, CARP_BUF_UNLIMITED);
  carp_buf_init(&enc, CARP_BUF_UNLIMITED);
  for (i = 0; i < n && !rc; i++) {
    if (i)
      rc = carp_buf_putc(&text, '\n');
    if (!rc)
      rc = carp_buf_puts(&text, keys[i]);
  }
  /* The 'urlencoded' format: strict percent-encoding (space %20, '+' %2B,
   * newline %0A...), which PVE stores as is. */
  if (!rc)
    rc = carp_http_escape(&enc, carp_buf_cstr(&text));
  if (!rc)
    rc = carp_pve_form_add(f, "sshkeys", carp_buf_cstr(&enc));
  carp_buf_free(&text);
  carp_buf_free(&enc);
  return rc;
}

/* --- errors -----------------------------------------------------------------
 */

static int contains(const char *text, const char *needle)
{
  return strcasestr(text, needle) != NULL;
}

int carp_pve_classify(const char *text, int fallback)
{
  if (!text)
    return fallback;
  if (contains(text, "already exists"))
    return CARP_EEXIST;
  if (contains(text, "does not exist") ||
      contains(text, "unable to find configuration file") ||
      contains(text, "no such vm") || contains(text, "not found"))
    return CARP_ENOTFOUND;
  if (contains(text, "VM is locked") || contains(text, "got timeout") ||
      contains(text, "can't lock file") ||
      contains(text, "lock request timeout"))
    return CARP_EAGAIN;
  if (contains(text, "no quorum") || contains(text, "cluster not ready"))
    return CARP_EUNAVAIL;
  return fallback;
}

static int status_error(long status, const char *text)
{
  switch (status) {
  case 400:
    return CARP_EBADREQUEST;
  case 401:
    return CARP_EUNAUTHORIZED;
  case 403:
    return CARP_EFORBIDDEN;
  case 404:
    return CARP_ENOTFOUND;
  case 500:
    return carp_pve_classify(text, CARP_EHTTP);
  case 501:
    return CARP_EUNSUPPORTED;
  case 502:
  case 503:
  case 504:
  case 595:
  case 596:
    return CARP_EUNAVAIL;
  default:
    return CARP_EHTTP;
  }
}

static void trim_end(struct carp_buf *b)
{
  while (b->len && isspace((unsigned char)b->ptr[b->len - 1]))
    b->ptr[--b->len] = '\0';
}

/* Builds the message of a failed answer from the envelope and status line. */
static void error_message(struct carp_buf *msg,
                          const struct carp_http_response *resp, yajl_val root,
                          const char *region)
{
  const char *m = root ? carp_json_str(root, "message", NULL) : NULL;
  yajl_val errors = root ? carp_json_obj(root, "errors", NULL) : NULL;
  size_t i;

  if (m && *m)
    carp_buf_puts(msg, m);
  else if (resp->reason && *resp->reason)
    carp_buf_puts(msg, resp->reason);
  else
    carp_buf_printf(msg, "HTTP %ld", resp->status);
  trim_end(msg);
  if (msg->len && msg->ptr[msg->len - 1] == '.' && errors)
    msg->ptr[--msg->len] = '\0';
  if (errors && YAJL_IS_OBJECT(errors)) {
    for (i = 0; i < errors->u.object.len; i++) {
      yajl_val v = errors->u.object.values[i];
      carp_buf_printf(msg, "%s%s: ", i ? "; " : ": ", errors->u.object.keys[i]);
      if (YAJL_IS_STRING(v))
        carp_buf_puts(msg, v->u.string);
      trim_end(msg);
    }
  }
  if (resp->status == 401)
    carp_buf_printf(msg,
                    " (HTTP 401 from region %s: check tokenID and "
                    "tokenSecret)",
                    region);
  else if (resp->status == 595 || resp->status == 596)
    carp_buf_printf(msg, " (HTTP %ld: host unreachable)", resp->status);
  else
    carp_buf_printf(msg, " (HTTP %ld)", resp->status);
}

yajl_val pve_answer_decode(const struct carp_http_response *resp,
                           const char *region, struct carp_pve_result *r,
                           struct carp_buf *msg)
{
  yajl_val root = NULL;
  r->status = resp->status;
  r->err = 0;
  r->data = NULL;
  if (resp->body.len)
    carp_json_parse_cstr(carp_buf_cstr(&resp->body), resp->body.len, &root,
                         NULL);
  if (resp->status == 200) {
    if (!root || !YAJL_IS_OBJECT(root) || !carp_json_get(root, "data", NULL)) {
      r->err = CARP_EPARSE;
      carp_buf_puts(msg, "answer is not a Proxmox API envelope");
    } else {
      r->data = carp_json_get(root, "data", NULL);
      if (YAJL_IS_NULL(r->data))
        r->data = NULL;
    }
  } else {
    error_message(msg, resp, root, region);
    r->err = status_error(resp->status, carp_buf_cstr(msg));
  }
  return root;
}

/* --- calls
 * -------------------------------------------------------------------- */

static void call_free(struct carp_pve_call *call)
{
  struct carp_pve_client *c = call->c;
  if (call->prev)
    call->prev->next = call->next;
  else
    c->calls = call->next;
  if (call->next)
    call->next->prev = call->prev;
  carp_free(call->url);
  carp_free(call->path);
  carp_free(call->body);
  carp_free(call->content_type);
  carp_free(call);
}

static int call_send(struct carp_pve_call *call);

static void on_http_done(struct carp_http_request *req, int status,
                         const struct carp_http_response *resp, void *arg)
{
  struct carp_pve_call *call = arg;
  struct carp_pve_client *c = call->c;
  struct carp_pve_result r;
  struct carp_buf msg;
  yajl_val root = NULL;
  (void)req;

  call->req = NULL;
  if ((status == CARP_EIO || status == CARP_ECONNECT) &&
      call->retries_left > 0 && !c->closing && !strcmp(call->method, "GET")) {
    call->retries_left--;
    CARP_LOG_DEBUG(PVE_LOG, "retrying a GET after a dropped connection",
                   CARP_F_STR("region", c->region),
                   CARP_F_STR("path", call->path), CARP_F_ERR(status));
    if (call_send(call) == 0)
      return;
  }
  memset(&r, 0, sizeof(r));
  carp_buf_init(&msg, 64 * 1024);
  if (status != 0) {
    r.err = status;
    if (status == CARP_ECANCELED)
      carp_buf_puts(&msg, "cancelled");
    else if (status == CARP_ETLS)
      carp_buf_printf(&msg, "TLS to region %s refused: %s%s%s", c->region,
                      carp_strerror(status),
                      resp && resp->errmsg && *resp->errmsg ? ": " : "",
                      resp && resp->errmsg ? resp->errmsg : "");
    else
      carp_buf_printf(&msg, "%s%s%s", carp_strerror(status),
                      resp && resp->errmsg && *resp->errmsg ? ": " : "",
                      resp && resp->errmsg ? resp->errmsg : "");
  } else {
    root = pve_answer_decode(resp, c->region, &r, &msg);
  }
  r.message = carp_buf_cstr(&msg);
  CARP_LOG_DEBUG(
      PVE_LOG, "api call", CARP_F_STR("region", c->region),
      CARP_F_STR("method", call->method), CARP_F_STR("path", call->path),
      CARP_F_INT("status", r.status), CARP_F_INT("err", r.err),
      CARP_F_DURATION("duration", carp_time_mono_ms() - call->start_ms));
  call->cb(&r, call->arg);
  carp_json_free(root);
  carp_buf_free(&msg);
  call_free(call);
}

static int call_send(struct carp_pve_call *call)
{
  struct carp_pve_client *c = call->c;
  struct carp_http_header h[3];
  struct carp_http_request_options o;
  size_t nh = 0;

  h[nh].name = "Authorization";
  h[nh++].value = c->auth;
  h[nh].name = "Accept";
  h[nh++].value = "application/json";
  if (call->content_type) {
    h[nh].name = "Content-Type";
    h[nh++].value = call->content_type;
  }
  memset(&o, 0, sizeof(o));
  o.method = call->method;
  o.url = call->url;
  o.headers = h;
  o.nheaders = nh;
  o.body = call->body;
  o.body_len = call->body_len;
  o.timeout_ms = call->timeout_ms;
  o.max_body = 32 * 1024 * 1024;
  /* Task polls and VM calls answer in a few hundred bytes; the cluster's
   * resource list is larger and simply takes a few more reads. */
  o.small_answer = 1;
  o.on_done = on_http_done;
  o.arg = call;
  return carp_http_request_start(c->http, &o, &call->req);
}

static struct carp_pve_call *call_new(struct carp_pve_client *c,
                                      const char *method, const char *path,
                                      uint64_t timeout_ms, carp_pve_cb cb,
                                      void *arg)
{
  struct carp_pve_call *call = CARP_NEW(struct carp_pve_call);
  call->c = c;
  snprintf(call->method, sizeof(call->method), "%s", method);
  call->path = carp_strdup(path);
  call->timeout_ms = timeout_ms ? timeout_ms : c->timeout_ms;
  call->cb = cb;
  call->arg = arg;
  call->start_ms = carp_time_mono_ms();
  call->next = c->calls;
  if (c->calls)
    c->calls->prev = call;
  c->calls = call;
  return call;
}

int carp_pve_call_start(struct carp_pve_client *c, const char *method,
                        const char *path, const struct carp_pve_form *params,
                        uint64_t timeout_ms, carp_pve_cb cb, void *arg,
                        struct carp_pve_call **out)
{
  struct carp_pve_call *call;
  struct carp_buf url;
  int query, rc;

  if (!c || !method || !path || path[0] != '/' || !cb)
    return CARP_EINVAL;
  if (c->closing)
    return CARP_ECANCELED;
  query = !strcmp(method, "GET") || !strcmp(method, "DELETE");
  call = call_new(c, method, path, timeout_ms, cb, arg);
  call->retries_left = query && !strcmp(method, "GET") ? 1 : 0;
  carp_buf_init(&url, CARP_BUF_UNLIMITED);
  carp_buf_puts(&url, c->base);
  carp_buf_puts(&url, path);
  if (params && params->buf.len) {
    if (query) {
      carp_buf_putc(&url, '?');
      carp_buf_append(&url, params->buf.ptr, params->buf.len);
    } else {
      call->body = carp_strndup(params->buf.ptr, params->buf.len);
      call->body_len = params->buf.len;
    }
  }
  call->url = carp_buf_steal(&url, NULL);
  rc = call_send(call);
  if (rc) {
    call_free(call);
    return rc;
  }
  if (out)
    *out = call;
  return 0;
}

int carp_pve_upload_start(struct carp_pve_client *c, const char *path,
                          const char *const *fields, size_t nfields,
                          const char *file_field, const char *filename,
                          const void *data, size_t len, uint64_t timeout_ms,
                          carp_pve_cb cb, void *arg, struct carp_pve_call **out)
{
  struct carp_pve_call *call;
  struct carp_buf body, url;
  char boundary[64];
  size_t i;
  int rc;

  if (!c || !path || !file_field || !filename || !cb || (nfields & 1))
    return CARP_EINVAL;
  if (c->closing)
    return CARP_ECANCELED;
  snprintf(boundary, sizeof(boundary), "----carpenter%016llx",
           (unsigned long long)carp_rand_u64(carp_rand_global()));
  carp_buf_init(&body, 128 * 1024 * 1024);
  for (i = 0; i + 1 < nfields; i += 2)
    carp_buf_printf(
        &body,
        "--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n"
        "%s\r\n",
        boundary, fields[i], fields[i + 1]);
  carp_buf_printf(
      &body,
      "--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
      "filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n",
      boundary, file_field, filename);
  carp_buf_append(&body, data, len);
  carp_buf_printf(&body, "\r\n--%s--\r\n", boundary);
  if (body.overflowed) {
    carp_buf_free(&body);
    return CARP_ETOOBIG;
  }
  call = call_new(c, "POST", path, timeout_ms, cb, arg);
  carp_buf_init(&url, CARP_BUF_UNLIMITED);
  carp_buf_puts(&url, c->base);
  carp_buf_puts(&url, path);
  call->url = carp_buf_steal(&url, NULL);
  call->body = carp_buf_steal(&body, &call->body_len);
  {
    struct carp_buf ct;
    carp_buf_init(&ct, CARP_BUF_UNLIMITED);
    carp_buf_printf(&ct, "multipart/form-data; boundary=%s", boundary);
    call->content_type = carp_buf_steal(&ct, NULL);
  }
  rc = call_send(call);
  if (rc) {
    call_free(call);
    return rc;
  }
  if (out)
    *out = call;
  return 0;
}

void carp_pve_call_cancel(struct carp_pve_call *call)
{
  if (call && call->req)
    carp_http_request_cancel(call->req);
}

/* --- the client
 * ------------------------------------------------------------------ */

int carp_pve_client_new(uv_loop_t *loop,
                        const struct carp_pve_cluster_config *cfg,
                        const struct carp_pve_client_options *opts,
                        struct carp_pve_client **out)
{
  struct carp_http_client_options ho;
  struct carp_pve_client *c;
  struct carp_buf auth;
  int rc;

  if (!loop || !cfg || !cfg->url || !cfg->token_id || !cfg->token_secret ||
      !out)
    return CARP_EINVAL;
  memset(&ho, 0, sizeof(ho));
  ho.tls.ca_file = cfg->ca_file;
  ho.tls.cert_sha256 = cfg->fingerprint;
  ho.tls.insecure = cfg->insecure;
  ho.user_agent = opts ? opts->user_agent : NULL;
  /* pveproxy serves with three workers by default: a burst of clones and
   * task polls queues here instead of opening (and keeping) a TLS
   * connection per request. Every call is short; clones run as tasks. */
  ho.max_host_connections = 8;
  ho.connect_timeout_ms =
      opts && opts->connect_timeout_ms ? opts->connect_timeout_ms : 10000;
  c = CARP_NEW(struct carp_pve_client);
  rc = carp_http_client_new(loop, &ho, &c->http);
  if (rc) {
    carp_free(c);
    return rc;
  }
  c->loop = loop;
  c->region = carp_strdup(cfg->region ? cfg->region : "");
  c->base = carp_strdup(cfg->url);
  c->token_id = carp_strdup(cfg->token_id);
  carp_buf_init(&auth, CARP_BUF_UNLIMITED);
  carp_buf_printf(&auth, "PVEAPIToken=%s=%s", cfg->token_id, cfg->token_secret);
  c->auth = carp_buf_steal(&auth, NULL);
  c->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 30000;
  if (cfg->insecure)
    CARP_LOG_WARN(PVE_LOG, "TLS certificate checks are off for this region",
                  CARP_F_STR("region", c->region), CARP_F_STR("url", c->base));
  *out = c;
  return 0;
}

static void on_http_closed(void *arg)
{
  struct carp_pve_client *c = arg;
  void (*cb)(void *) = c->close_cb;
  void *cb_arg = c->close_arg;
  explicit_bzero(c->auth, strlen(c->auth));
  carp_free(c->auth);
  carp_free(c->region);
  carp_free(c->base);
  carp_free(c->token_id);
  carp_free(c);
  if (cb)
    cb(cb_arg);
}

void carp_pve_client_close(struct carp_pve_client *c, void (*cb)(void *arg),
                           void *arg)
{
  if (!c || c->closing)
    return;
  c->closing = 1;
  c->close_cb = cb;
  c->close_arg = arg;
  /* The HTTP client cancels every request; each call then reports
   * CARP_ECANCELED from the loop. */
  carp_http_client_close(c->http, on_http_closed, c);
}

const char *carp_pve_client_region(const struct carp_pve_client *c)
{
  return c->region;
}

const char *carp_pve_client_token_id(const struct carp_pve_client *c)
{
  return c->token_id;
}

uv_loop_t *carp_pve_client_loop(const struct carp_pve_client *c)
{
  return c->loop;
}
