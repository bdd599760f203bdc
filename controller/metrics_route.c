/* metrics_route.c: serves a metrics registry on /metrics in the
 * Prometheus text format. Wiring, not the metrics module's: the registry
 * knows nothing of HTTP, the server nothing of metrics. */
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/server.h"
#include "metrics_route.h"

static void handle_metrics(const struct carp_server_request *req,
                           struct carp_server_response *resp, void *arg)
{
  struct carp_metrics *registry = arg;
  int rc;
  resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
  rc = carp_metrics_render(registry, &resp->body);
  if (rc) {
    CARP_LOG_ERROR("server", "cannot render metrics", CARP_F_ERR(rc));
    resp->status = 500;
  }
}

int carp_metrics_serve(struct carp_metrics *registry, struct carp_server *s)
{
  return carp_server_route(s, "/metrics", CARP_SERVER_GET | CARP_SERVER_HEAD,
                           handle_metrics, registry);
}
