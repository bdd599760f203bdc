/* health.c: /healthz and /readyz. Liveness is deliberately trivial (the
 * loop answered); readiness runs each registered check on every request,
 * so it is never stale. "?verbose" lists every check, as kube-apiserver
 * does. */
#include "carpenter/health.h"

#include <string.h>

#include "carpenter/alloc.h"

struct health_check {
  char *name;
  carp_health_check_cb cb;
  void *arg;
};

struct carp_health {
  struct health_check *checks;
  size_t nchecks;
};

struct carp_health *carp_health_new(void)
{
  return CARP_NEW(struct carp_health);
}

void carp_health_free(struct carp_health *h)
{
  size_t i;
  if (!h)
    return;
  for (i = 0; i < h->nchecks; i++)
    carp_free(h->checks[i].name);
  carp_free(h->checks);
  carp_free(h);
}

void carp_health_add_check(struct carp_health *h, const char *name,
                           carp_health_check_cb cb, void *arg)
{
  h->checks = carp_reallocarray(h->checks, h->nchecks + 1, sizeof(*h->checks));
  h->checks[h->nchecks].name = carp_strdup(name);
  h->checks[h->nchecks].cb = cb;
  h->checks[h->nchecks].arg = arg;
  h->nchecks++;
}

/* Runs every check; writes the kube-apiserver style report into out when
 * it is not NULL. */
static int run_checks(struct carp_health *h, struct carp_buf *out, int verbose)
{
  struct carp_buf why;
  size_t i;
  int ready = 1;
  carp_buf_init(&why, 1024);
  for (i = 0; i < h->nchecks; i++) {
    int ok;
    carp_buf_reset(&why);
    ok = h->checks[i].cb(h->checks[i].arg, &why);
    ready &= ok;
    if (!out || (ok && !verbose))
      continue;
    carp_buf_printf(out, "[%c]%s %s", ok ? '+' : '-', h->checks[i].name,
                    ok ? "ok" : "failed");
    if (!ok && why.len)
      carp_buf_printf(out, ": %s", carp_buf_cstr(&why));
    carp_buf_putc(out, '\n');
  }
  carp_buf_free(&why);
  return ready;
}

int carp_health_ready(struct carp_health *h)
{
  return run_checks(h, NULL, 0);
}

static void handle_healthz(const struct carp_server_request *req,
                           struct carp_server_response *resp, void *arg)
{
  carp_buf_puts(&resp->body, "ok");
}

static void handle_readyz(const struct carp_server_request *req,
                          struct carp_server_response *resp, void *arg)
{
  struct carp_health *h = arg;
  int verbose = strstr(req->query, "verbose") != NULL;
  struct carp_buf report;
  int ready;
  carp_buf_init(&report, 64 * 1024);
  ready = run_checks(h, &report, verbose);
  if (ready) {
    carp_buf_append(&resp->body, report.ptr, report.len);
    carp_buf_puts(&resp->body, verbose ? "readyz check passed\n" : "ok");
  } else {
    resp->status = 503;
    carp_buf_append(&resp->body, report.ptr, report.len);
    carp_buf_puts(&resp->body, "readyz check failed\n");
  }
  carp_buf_free(&report);
}

int carp_health_install(struct carp_health *h, struct carp_server *s)
{
  int rc = carp_server_route(s, "/healthz", CARP_SERVER_GET | CARP_SERVER_HEAD,
                             handle_healthz, h);
  if (rc)
    return rc;
  return carp_server_route(s, "/readyz", CARP_SERVER_GET | CARP_SERVER_HEAD,
                           handle_readyz, h);
}
