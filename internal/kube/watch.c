/* watch.c: watch streams. The response body is fed to the object framer;
 * each framed event goes to the caller as text, which decodes it from
 * there (no tree: see informer/decode.c). A non-200 answer is collected
 * (capped) and decoded as a metav1.Status when the stream ends. Watches
 * are not retried here: the reflector decides whether to rewatch or
 * relist. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "client_int.h"

/* Longer than any timeoutSeconds a reflector asks for (10 minutes), so
 * only a dead connection trips it. */
#define WATCH_IDLE_MS (11 * 60 * 1000)

static int on_headers(struct carp_http_request *req,
                      const struct carp_http_response *resp, void *arg)
{
  struct carp_kube_op *op = arg;
  op->watch_status = resp->status;
  return 0;
}

int carp__kube_watch_frame(const char *obj, size_t len, void *arg)
{
  struct carp_kube_op *op = arg;
  int rc = op->on_frame(obj, len, op->arg);
  return rc < 0 ? rc : 0;
}

static int on_data(struct carp_http_request *req, const char *data, size_t len,
                   void *arg)
{
  struct carp_kube_op *op = arg;
  int rc;
  if (op->watch_status != 200) {
    /* An error document: keep what fits. */
    carp_buf_append(&op->errbody, data, len);
    return 0;
  }
  rc = carp_framer_feed(&op->framer, data, len, carp__kube_watch_frame, op);
  if (rc) {
    op->watch_err = rc;
    return rc;
  }
  return 0;
}

static void on_done(struct carp_http_request *req, int status,
                    const struct carp_http_response *resp, void *arg)
{
  struct carp_kube_op *op = arg;
  int err = 0;
  const char *message = "";
  yajl_val body = NULL;

  op->req = NULL;
  if (op->counted) {
    op->counted = 0;
    carp__kube_connections(op->k, -1);
  }
  carp__kube_count(op, status < 0 ? 0 : op->watch_status);
  if (op->cancelled) {
    err = CARP_ECANCELED;
  } else if (op->watch_err) {
    err = op->watch_err;
    message = carp_strerror(err);
  } else if (status < 0) {
    err = status;
    message = resp && resp->errmsg[0] ? resp->errmsg : carp_strerror(status);
  } else if (op->watch_status != 200) {
    const char *reason = NULL;
    if (op->errbody.len &&
        carp_json_parse(op->errbody.ptr, op->errbody.len, &body, NULL) == 0) {
      reason = carp_json_str(body, "reason", NULL);
      message = carp_json_str(body, "message", NULL);
    }
    err = carp_kube_error_of(op->watch_status, reason);
    if (!message)
      message = resp->reason;
  } else if (carp_framer_pending(&op->framer)) {
    /* The stream ended inside an object. */
    err = CARP_EIO;
    message = "watch stream ended mid-object";
  }
  if (op->on_watch_done)
    op->on_watch_done(err, message ? message : "", op->arg);
  carp_json_free(body);
  carp__kube_op_finish(op);
}

int carp__kube_watch_send(struct carp_kube_op *op)
{
  struct carp_http_header h[4];
  struct carp_http_request_options o;
  int n = carp__kube_headers(op, h, CARP_ARRAY_LEN(h)), rc;
  memset(&o, 0, sizeof(o));
  o.method = "GET";
  o.url = op->url;
  o.headers = h;
  o.nheaders = (size_t)n;
  o.idle_timeout_ms = WATCH_IDLE_MS;
  o.on_headers = on_headers;
  o.on_data = on_data;
  o.on_done = on_done;
  o.arg = op;
  op->attempts++;
  op->state = OP_IN_FLIGHT;
  rc = carp_http_request_start(op->k->http, &o, &op->req);
  if (!rc) {
    op->counted = 1;
    carp__kube_connections(op->k, +1);
  }
  return rc;
}

void carp__kube_watch_deliver_error(struct carp_kube_op *op, int err)
{
  op->req = NULL;
  if (op->on_watch_done)
    op->on_watch_done(err, carp_strerror(err), op->arg);
  carp__kube_op_finish(op);
}

int carp_kube_watch(struct carp_kube *k, const char *path, const char *query,
                    carp_kube_frame_cb on_frame,
                    carp_kube_watch_done_cb on_done_cb, void *arg,
                    struct carp_kube_op **out)
{
  struct carp_kube_op *op;
  if (!k || !path || !on_frame || !on_done_cb)
    return CARP_EINVAL;
  if (k->closing)
    return CARP_ECANCELED;
  op = carp__kube_op_new(k, "GET", path, query);
  op->watch = 1;
  op->on_frame = on_frame;
  op->on_watch_done = on_done_cb;
  op->arg = arg;
  if (out)
    *out = op;
  carp__kube_op_enqueue(op);
  return 0;
}
