/* backend.c: answers from an in-process API server (see struct
 * carp_kube_backend in include/carpenter/kube.h). A reply is turned into
 * the HTTP response the network would have given, so it takes exactly the
 * path a real one takes: status decoding, error codes, retries, JSON
 * parsing. Watch events go through the same frame handler as a stream. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "client_int.h"

void carp_kube_backend_reply(struct carp_kube_op *op, long status,
                             const char *body, size_t len)
{
  struct carp_http_header h = {"Content-Type", "application/json"};
  struct carp_http_response resp;
  if (op->state != OP_IN_FLIGHT)
    return;
  memset(&resp, 0, sizeof(resp));
  resp.status = status;
  resp.reason = "";
  resp.errmsg = "";
  resp.headers = &h;
  resp.nheaders = 1;
  carp_buf_init(&resp.body, CARP_BUF_UNLIMITED);
  carp_buf_append(&resp.body, body ? body : "", body ? len : 0);
  carp__kube_http_done(NULL, 0, &resp, op);
  carp_buf_free(&resp.body);
}

static void watch_over(struct carp_kube_op *op, int err, const char *message)
{
  if (op->on_watch_done)
    op->on_watch_done(err, message ? message : "", op->arg);
  carp__kube_op_finish(op);
}

int carp_kube_backend_event(struct carp_kube_op *op, const char *json,
                            size_t len)
{
  int rc;
  if (op->state != OP_IN_FLIGHT || op->cancelled)
    return CARP_ECANCELED;
  rc = carp__kube_watch_frame(json, len, op);
  if (rc < 0)
    watch_over(op, rc, carp_strerror(rc));
  return rc;
}

void carp_kube_backend_end(struct carp_kube_op *op, long status,
                           const char *body, size_t len)
{
  yajl_val v = NULL;
  const char *reason = NULL, *message = NULL;
  int err = 0;
  if (op->state != OP_IN_FLIGHT)
    return;
  if (status != 200) {
    if (body && len && !carp_json_parse(body, len, &v, NULL)) {
      reason = carp_json_str(v, "reason", NULL);
      message = carp_json_str(v, "message", NULL);
    }
    err = carp_kube_error_of(status, reason);
  }
  watch_over(op, err, message);
  carp_json_free(v);
}
