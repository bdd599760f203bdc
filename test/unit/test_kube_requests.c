/* test_kube_requests.c: the Kubernetes client hands at most
 * CARP_KUBE_MAX_REQUESTS requests (watches aside) to the HTTP client at
 * once; a burst beyond that waits in its queue, without curl handles,
 * and every request of the burst still gets its answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "../../internal/kube/client_int.h"
#include "carpenter/kube.h"
#include "carpenter/server.h"

#define BURST (3 * CARP_KUBE_MAX_REQUESTS + 5)

struct burst {
  struct carp_kube *k;
  struct carp_server *server;
  int answered, ok, most_in_flight;
};

static void on_event(const struct carp_server_request *req,
                     struct carp_server_response *resp, void *arg)
{
  (void)req;
  (void)arg;
  resp->status = 200;
  resp->content_type = "application/json";
  carp_buf_puts(&resp->body, "{\"kind\":\"Event\"}");
}

static void on_answer(const struct carp_kube_result *res, void *arg)
{
  struct burst *b = arg;
  b->answered++;
  if (!res->err && res->status == 200)
    b->ok++;
  if (b->k->requests > b->most_in_flight)
    b->most_in_flight = b->k->requests;
  if (b->answered == BURST) {
    carp_kube_close(b->k, NULL, NULL);
    carp_server_close(b->server, NULL, NULL);
  }
}

static void test_burst_is_capped(void **state)
{
  struct carp_server_options so;
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct carp_kube_request r;
  struct burst b;
  uv_loop_t loop;
  char url[64];
  int i;
  (void)state;

  memset(&b, 0, sizeof(b));
  assert_int_equal(uv_loop_init(&loop), 0);
  memset(&so, 0, sizeof(so));
  so.max_connections = 2 * CARP_KUBE_MAX_CONNECTIONS;
  assert_int_equal(carp_server_new(&loop, &so, &b.server), 0);
  assert_int_equal(carp_server_route(b.server, "/api/v1/events",
                                     CARP_SERVER_POST, on_event, NULL),
                   0);
  assert_int_equal(carp_server_start(b.server), 0);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", carp_server_port(b.server));
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = url;
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  ko.qps = 1e6;
  ko.burst = 10 * BURST; /* the rate limit stays out of the way */
  assert_int_equal(carp_kube_new(&loop, &ko, &b.k), 0);

  memset(&r, 0, sizeof(r));
  r.method = "POST";
  r.path = "/api/v1/events";
  r.content_type = "application/json";
  r.body = "{}";
  r.body_len = 2;
  for (i = 0; i < BURST; i++) {
    assert_int_equal(carp_kube_call(b.k, &r, on_answer, &b, NULL), 0);
    assert_true(b.k->requests <= CARP_KUBE_MAX_REQUESTS);
  }
  /* Full, with the rest queued, before any answer. */
  assert_int_equal(b.k->requests, CARP_KUBE_MAX_REQUESTS);
  assert_non_null(b.k->rate_head);

  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(b.answered, BURST);
  assert_int_equal(b.ok, BURST);
  assert_true(b.most_in_flight <= CARP_KUBE_MAX_REQUESTS);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_burst_is_capped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
