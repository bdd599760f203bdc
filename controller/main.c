/* main.c: the carpenter binary. Parses flags, wires the modules together
 * (the only place that does), runs one libuv loop, and shuts down cleanly
 * on SIGTERM or SIGINT: stop work, close every handle, flush logs, exit 0,
 * all within five seconds or the process exits anyway.
 *
 * Exit status: 0 after a clean shutdown, 2 for invalid flags or
 * configuration, 1 for anything else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/health.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/server.h"
#include "carpenter/version.h"
#include "options.h"

#define SHUTDOWN_DEADLINE_MS 5000

struct app {
  struct carp_options opts;
  uv_loop_t loop;
  uv_signal_t sigterm;
  uv_signal_t sigint;
  uv_timer_t deadline;
  struct carp_metrics *metrics;
  struct carp_health *health;
  struct carp_server *metrics_server;
  struct carp_server *health_server; /* NULL when sharing the metrics port */
  int stopping;
  int exit_code;
};

static void on_deadline(uv_timer_t *t)
{
  CARP_LOG_ERROR("main", "shutdown did not finish in time, exiting",
                 CARP_F_DURATION("deadline", SHUTDOWN_DEADLINE_MS));
  carp_log_flush();
  _exit(1);
}

/* Stops every piece of work; the loop then runs dry and main returns. */
static void app_stop(struct app *a, int exit_code)
{
  if (a->stopping)
    return;
  a->stopping = 1;
  a->exit_code = exit_code;
  /* The deadline timer does not keep the loop alive: it only fires when
   * something else does. */
  uv_timer_start(&a->deadline, on_deadline, SHUTDOWN_DEADLINE_MS, 0);
  uv_unref((uv_handle_t *)&a->deadline);
  if (a->metrics_server)
    carp_server_close(a->metrics_server, NULL, NULL);
  if (a->health_server)
    carp_server_close(a->health_server, NULL, NULL);
  a->metrics_server = a->health_server = NULL;
  uv_close((uv_handle_t *)&a->sigterm, NULL);
  uv_close((uv_handle_t *)&a->sigint, NULL);
  uv_close((uv_handle_t *)&a->deadline, NULL);
}

static void on_signal(uv_signal_t *s, int signum)
{
  struct app *a = s->data;
  CARP_LOG_INFO("main", "shutting down",
                CARP_F_STR("signal", signum == SIGTERM ? "SIGTERM" : "SIGINT"));
  app_stop(a, 0);
}

static int start_servers(struct app *a)
{
  struct carp_server_options so = {.port = a->opts.metrics_port,
                                   .name = "metrics"};
  int rc, shared = a->opts.metrics_port == a->opts.health_probe_port &&
                   a->opts.metrics_port != 0;

  rc = carp_server_new(&a->loop, &so, &a->metrics_server);
  if (!rc)
    rc = carp_metrics_serve(a->metrics, a->metrics_server);
  if (!rc && shared)
    rc = carp_health_install(a->health, a->metrics_server);
  if (!rc)
    rc = carp_server_start(a->metrics_server);
  if (rc || shared)
    return rc;
  so.port = a->opts.health_probe_port;
  so.name = "health";
  rc = carp_server_new(&a->loop, &so, &a->health_server);
  if (!rc)
    rc = carp_health_install(a->health, a->health_server);
  if (!rc)
    rc = carp_server_start(a->health_server);
  return rc;
}

static int app_init(struct app *a)
{
  int rc = uv_loop_init(&a->loop);
  if (rc)
    return rc;
  a->metrics = carp_metrics_new();
  carp_metrics_register_process(a->metrics);
  a->health = carp_health_new();

  uv_signal_init(&a->loop, &a->sigterm);
  uv_signal_init(&a->loop, &a->sigint);
  uv_timer_init(&a->loop, &a->deadline);
  a->sigterm.data = a->sigint.data = a;
  rc = uv_signal_start(&a->sigterm, on_signal, SIGTERM);
  if (!rc)
    rc = uv_signal_start(&a->sigint, on_signal, SIGINT);
  if (!rc)
    rc = start_servers(a);
  return rc;
}

int main(int argc, char **argv)
{
  struct app a;
  int rc;

  memset(&a, 0, sizeof(a));
  switch (carp_options_parse(&a.opts, argc, argv, stdout, stderr)) {
  case CARP_OPTIONS_EXIT_OK:
    carp_options_free(&a.opts);
    return 0;
  case CARP_OPTIONS_ERROR:
    carp_options_free(&a.opts);
    return 2;
  case CARP_OPTIONS_RUN:
    break;
  }
  carp_log_set_level(a.opts.log_level);
  carp_log_set_format(a.opts.log_format);
  CARP_LOG_INFO("main", "starting carpenter",
                CARP_F_STR("version", CARP_VERSION),
                CARP_F_STR("commit", CARP_COMMIT));

  rc = app_init(&a);
  if (rc) {
    CARP_LOG_ERROR("main", "cannot start", CARP_F_ERR(rc));
    app_stop(&a, 1);
  }
  uv_run(&a.loop, UV_RUN_DEFAULT);
  /* Anything still open here is a bug in a module's close path: say so
   * rather than hang or leak silently. */
  rc = uv_loop_close(&a.loop);
  if (rc) {
    CARP_LOG_ERROR("main", "handles left open at exit", CARP_F_ERR(rc));
    a.exit_code = a.exit_code ? a.exit_code : 1;
  }
  carp_health_free(a.health);
  carp_metrics_free(a.metrics);
  CARP_LOG_INFO("main", "stopped", CARP_F_INT("exitCode", a.exit_code));
  carp_log_flush();
  carp_options_free(&a.opts);
  return a.exit_code;
}
