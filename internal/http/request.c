/* request.c: one HTTP transfer. Builds the easy handle (a duplicate of the
 * client's template plus method, URL, headers, body and timeouts), feeds
 * curl's header and write callbacks into the response, maps CURLcode to
 * Carpenter errors, and delivers the result.
 *
 * A request's result is decided once: by curl finishing the transfer, or
 * earlier by an abort (a callback's negative return, the body cap, the idle
 * timeout, a cancel). Cancel overrides any result not yet delivered; other
 * aborts keep the first. Inside curl callbacks an aborted request only makes
 * the callback return an error to curl; the easy handle is removed later by
 * the client's dispatcher, and on_done runs from there, exactly once. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "carpenter/error.h"
#include "carpenter/log.h"
#include "http_int.h"

/* curl's receive buffer for an answer known to be small (see
 * small_answer in http.h); curl allows 1 KB at the least. */
#define SMALL_ANSWER_BUFFER 4096L

int carp__http_setopt_failed(const char *opt, CURLcode cc)
{
  CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_easy_setopt failed",
                 CARP_F_STR("option", opt),
                 CARP_F_STR("detail", curl_easy_strerror(cc)));
  switch (cc) {
  case CURLE_OUT_OF_MEMORY:
    return CARP_ENOMEM;
  case CURLE_UNKNOWN_OPTION:
  case CURLE_NOT_BUILT_IN:
    return CARP_EUNSUPPORTED;
  default:
    return CARP_EINVAL;
  }
}

int carp__http_error_from_curl(CURLcode cc)
{
  switch (cc) {
  case CURLE_OK:
    return 0;
  case CURLE_OPERATION_TIMEDOUT:
    return CARP_ETIMEDOUT;
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
    return CARP_ECONNECT;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_ENGINE_SETFAILED:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_ENGINE_INITFAILED:
  case CURLE_USE_SSL_FAILED:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_SHUTDOWN_FAILED:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_CLIENTCERT:
    return CARP_ETLS;
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
  case CURLE_BAD_FUNCTION_ARGUMENT:
    return CARP_EINVAL;
  case CURLE_OUT_OF_MEMORY:
    return CARP_ENOMEM;
  case CURLE_FILESIZE_EXCEEDED:
    return CARP_ETOOBIG;
  case CURLE_WEIRD_SERVER_REPLY:
    return CARP_EHTTP;
  case CURLE_ABORTED_BY_CALLBACK:
    return CARP_ECANCELED;
  default:
    /* CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE,
     * CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM... */
    return CARP_EIO;
  }
}

void carp__http_request_finish(struct carp_http_request *req, int result,
                               const char *msg, int override)
{
  struct carp_http_client *c = req->client;

  if (req->delivering)
    return;
  if (!req->has_result || override) {
    req->result = result;
    req->abort_msg = msg;
    req->has_result = 1;
  }
  if (!req->queued) {
    req->queued = 1;
    carp__http_list_remove(&req->link);
    carp__http_list_push(&c->finished, &req->link);
    carp__http_client_kick(c);
  }
}

void carp__http_request_curl_done(struct carp_http_request *req, CURLcode cc)
{
  carp__http_request_finish(req, carp__http_error_from_curl(cc), NULL, 0);
}

void carp_http_request_cancel(struct carp_http_request *req)
{
  if (!req || req->delivering)
    return;
  carp__http_request_finish(req, CARP_ECANCELED, "canceled", 1);
}

char *carp_http_request_take_body(struct carp_http_request *req, size_t *len)
{
  if (!req || !req->delivering) {
    if (len)
      *len = 0;
    return NULL;
  }
  return carp_buf_steal(&req->resp.body, len);
}

/* --- curl callbacks ---------------------------------------------------- */

/* A buffered response announcing more than max_body fails at once. */
static int check_content_length(struct carp_http_request *req)
{
  const char *cl;
  char *end;
  unsigned long long n;

  if (req->on_data || req->is_head)
    return 0;
  cl = carp_http_response_header(&req->resp, "content-length");
  if (!cl)
    return 0;
  n = strtoull(cl, &end, 10);
  if (end == cl || *end != '\0')
    return 0; /* curl judges malformed lengths */
  return n > req->resp.body.max ? CARP_ETOOBIG : 0;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata)
{
  struct carp_http_request *req = userdata;
  size_t len = size * nitems;
  int rc;

  if (req->queued)
    return 0; /* anything but len fails the transfer */
  req->last_rx = uv_now(req->client->loop);
  rc = carp__http_response_header_line(req, buf, len);
  if (rc < 0) {
    carp__http_request_finish(req, rc, "malformed or oversized headers", 0);
    return 0;
  }
  if (rc == 0)
    return len;
  rc = check_content_length(req);
  if (rc < 0) {
    carp__http_request_finish(req, rc, "response body over max_body", 0);
    return 0;
  }
  if (req->on_headers) {
    rc = req->on_headers(req, &req->resp, req->arg);
    if (rc < 0)
      carp__http_request_finish(req, rc, "aborted by on_headers", 0);
    if (req->queued) /* aborted, cancelled or client closed */
      return 0;
  }
  return len;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
  struct carp_http_request *req = userdata;
  size_t len = size * nmemb;
  int rc;

  if (req->queued)
    return CURL_WRITEFUNC_ERROR;
  req->last_rx = uv_now(req->client->loop);
  if (req->on_data) {
    req->client->streamed++;
    rc = req->on_data(req, ptr, len, req->arg);
    if (rc < 0)
      carp__http_request_finish(req, rc, "aborted by on_data", 0);
    return req->queued ? CURL_WRITEFUNC_ERROR : len;
  }
  rc = carp_buf_append(&req->resp.body, ptr, len);
  if (rc < 0) {
    carp__http_request_finish(req, rc, "response body over max_body", 0);
    return CURL_WRITEFUNC_ERROR;
  }
  return len;
}

/* --- starting ---------------------------------------------------------- */

static int is_tchar(unsigned char ch)
{
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static int is_token(const char *s)
{
  if (!s || !*s)
    return 0;
  for (; *s; s++)
    if (!is_tchar((unsigned char)*s))
      return 0;
  return 1;
}

/* Only absolute http and https URLs that curl's parser accepts. */
static int check_url(const char *url)
{
  CURLU *u = curl_url();
  char *scheme = NULL;
  int rc = 0;

  if (!u)
    return CARP_ENOMEM;
  if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0))
    rc = CARP_EINVAL;
  curl_free(scheme);
  curl_url_cleanup(u);
  return rc;
}

static int build_headers(struct carp_http_request *req,
                         const struct carp_http_request_options *opts)
{
  struct carp_buf line;
  int has_expect = 0;
  int rc = 0;
  size_t i;

  carp_buf_init(&line, CARP_BUF_UNLIMITED);
  for (i = 0; i < opts->nheaders && !rc; i++) {
    const struct carp_http_header *h = &opts->headers[i];
    struct curl_slist *l;
    if (!is_token(h->name) || !h->value || strpbrk(h->value, "\r\n")) {
      rc = CARP_EINVAL;
      break;
    }
    if (!strcasecmp(h->name, "expect"))
      has_expect = 1;
    carp_buf_reset(&line);
    /* "Name;" is curl's syntax for a header with an empty value. */
    rc = *h->value ? carp_buf_printf(&line, "%s: %s", h->name, h->value)
                   : carp_buf_printf(&line, "%s;", h->name);
    if (rc)
      break;
    l = curl_slist_append(req->headers, carp_buf_cstr(&line));
    if (!l)
      rc = CARP_ENOMEM;
    else
      req->headers = l;
  }
  if (!rc && !has_expect) {
    /* No "Expect: 100-continue" round trip before large bodies. */
    struct curl_slist *l = curl_slist_append(req->headers, "Expect:");
    if (!l)
      rc = CARP_ENOMEM;
    else
      req->headers = l;
  }
  carp_buf_free(&line);
  return rc;
}

static int easy_setup(struct carp_http_request *req,
                      const struct carp_http_request_options *opts,
                      const char *method)
{
  CURL *h = req->easy;
  int has_body = opts->body_len > 0;
  int rc;

  CARP_HTTP_SETOPT(h, CURLOPT_PRIVATE, (void *)req);
  CARP_HTTP_SETOPT(h, CURLOPT_ERRORBUFFER, req->errbuf);
  CARP_HTTP_SETOPT(h, CURLOPT_URL, opts->url);
  CARP_HTTP_SETOPT(h, CURLOPT_HEADERFUNCTION, on_header);
  CARP_HTTP_SETOPT(h, CURLOPT_HEADERDATA, (void *)req);
  CARP_HTTP_SETOPT(h, CURLOPT_WRITEFUNCTION, on_write);
  CARP_HTTP_SETOPT(h, CURLOPT_WRITEDATA, (void *)req);
  if (opts->small_answer && !opts->on_data)
    CARP_HTTP_SETOPT(h, CURLOPT_BUFFERSIZE, SMALL_ANSWER_BUFFER);
  if (opts->timeout_ms)
    CARP_HTTP_SETOPT(h, CURLOPT_TIMEOUT_MS,
                     opts->timeout_ms > (uint64_t)LONG_MAX
                         ? LONG_MAX
                         : (long)opts->timeout_ms);

  if (!strcmp(method, "HEAD")) {
    if (has_body)
      return CARP_EINVAL;
    CARP_HTTP_SETOPT(h, CURLOPT_NOBODY, 1L);
  } else if (!strcmp(method, "GET") && !has_body) {
    CARP_HTTP_SETOPT(h, CURLOPT_HTTPGET, 1L);
  } else {
    if (has_body || !strcmp(method, "POST") || !strcmp(method, "PUT") ||
        !strcmp(method, "PATCH")) {
      /* The size first: COPYPOSTFIELDS copies that many bytes. */
      CARP_HTTP_SETOPT(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       (curl_off_t)opts->body_len);
      CARP_HTTP_SETOPT(h, CURLOPT_COPYPOSTFIELDS,
                       has_body ? (const char *)opts->body : "");
    }
    if (strcmp(method, "POST") != 0)
      CARP_HTTP_SETOPT(h, CURLOPT_CUSTOMREQUEST, method);
  }

  rc = build_headers(req, opts);
  if (rc)
    return rc;
  CARP_HTTP_SETOPT(h, CURLOPT_HTTPHEADER, req->headers);
  return 0;
}

static void request_free(struct carp_http_request *req)
{
  if (req->easy)
    curl_easy_cleanup(req->easy);
  curl_slist_free_all(req->headers);
  carp__http_response_cleanup(req);
  carp_free(req);
}

int carp_http_request_start(struct carp_http_client *c,
                            const struct carp_http_request_options *opts,
                            struct carp_http_request **out)
{
  struct carp_http_request *req;
  const char *method;
  int rc;

  if (out)
    *out = NULL;
  if (!c || !opts || !opts->url || !opts->on_done ||
      (opts->body_len && !opts->body) || (opts->nheaders && !opts->headers))
    return CARP_EINVAL;
  if (c->closing)
    return CARP_ECANCELED;
  method = opts->method ? opts->method : "GET";
  if (!is_token(method))
    return CARP_EINVAL;
  rc = check_url(opts->url);
  if (rc)
    return rc;

  req = CARP_NEW(struct carp_http_request);
  req->client = c;
  carp__http_list_init(&req->link);
  req->on_headers = opts->on_headers;
  req->on_data = opts->on_data;
  req->on_done = opts->on_done;
  req->arg = opts->arg;
  req->idle_timeout_ms = opts->idle_timeout_ms;
  req->is_head = !strcmp(method, "HEAD");
  carp__http_response_init(req, opts->max_body ? opts->max_body
                                               : CARP_HTTP_MAX_BODY_DEFAULT);
  req->easy = curl_easy_duphandle(c->tmpl);
  rc = req->easy ? easy_setup(req, opts, method) : CARP_ENOMEM;
  if (!rc)
    rc = carp__http_client_acquire(c);
  if (rc) {
    request_free(req);
    return rc;
  }
  /* Added to the multi by the defer timer: never from here, because the
   * caller may be inside a curl callback of another request. */
  carp__http_list_push(&c->pending, &req->link);
  carp__http_client_kick(c);
  if (out)
    *out = req;
  return 0;
}

void carp__http_request_add(struct carp_http_request *req)
{
  struct carp_http_client *c = req->client;
  CURLMcode mc;

  carp__http_list_remove(&req->link);
  carp__http_list_push(&c->running, &req->link);
  mc = curl_multi_add_handle(c->multi, req->easy);
  if (mc != CURLM_OK) {
    CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_multi_add_handle failed",
                   CARP_F_STR("detail", curl_multi_strerror(mc)));
    /* A failing timer callback leaves the handle added: take it out. */
    (void)curl_multi_remove_handle(c->multi, req->easy);
    carp__http_request_finish(
        req, mc == CURLM_OUT_OF_MEMORY ? CARP_ENOMEM : CARP_EIO,
        "cannot add transfer", 0);
    return;
  }
  req->added = 1;
  req->last_rx = uv_now(c->loop);
  if (req->idle_timeout_ms)
    carp__http_client_arm_idle(c, req->idle_timeout_ms);
}

/* --- delivering -------------------------------------------------------- */

static void log_done(struct carp_http_request *req)
{
  char *method = NULL, *url = NULL;
  curl_off_t us = 0;
  size_t urllen;

  if (!carp_log_enabled(CARP_LOG_DEBUG) || !req->easy)
    return;
  (void)curl_easy_getinfo(req->easy, CURLINFO_EFFECTIVE_METHOD, &method);
  (void)curl_easy_getinfo(req->easy, CURLINFO_EFFECTIVE_URL, &url);
  (void)curl_easy_getinfo(req->easy, CURLINFO_TOTAL_TIME_T, &us);
  url = url ? url : "";
  urllen = strcspn(url, "?"); /* queries may carry selectors, not secrets,
                                 but keep lines short */
  CARP_LOG_DEBUG(
      CARP_HTTP_LOG, "request done", CARP_F_STR("method", method ? method : ""),
      CARP_F_STRN("url", url, urllen), CARP_F_INT("status", req->resp.status),
      CARP_F_ERR(req->result), CARP_F_DURATION("took", us / 1000));
}

void carp__http_request_deliver(struct carp_http_request *req)
{
  struct carp_http_client *c = req->client;

  if (req->added) {
    CURLMcode mc = curl_multi_remove_handle(c->multi, req->easy);
    req->added = 0;
    if (mc != CURLM_OK) {
      CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_multi_remove_handle failed",
                     CARP_F_STR("detail", curl_multi_strerror(mc)));
      req->easy = NULL; /* leak it rather than free what curl holds */
    }
  }
  if (req->abort_msg)
    req->resp.errmsg = req->abort_msg;
  else if (req->result)
    req->resp.errmsg =
        req->errbuf[0] ? req->errbuf : carp_strerror(req->result);
  else
    req->resp.errmsg = "";
  log_done(req);
  req->delivering = 1;
  req->on_done(req, req->result, &req->resp, req->arg);
  request_free(req);
  carp__http_client_release(c);
}
