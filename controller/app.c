/* app.c: wiring. Builds the modules in dependency order, starts them, and
 * stops them in reverse: controllers first, then what they use (leader
 * election releases its lease, informers stop watching, the event recorder
 * drains), and only then the Kubernetes client they all share. SIGTERM or
 * SIGINT starts that shutdown; a hard deadline of five seconds ends the
 * process if some piece hangs. Losing leadership also stops everything,
 * with exit code 1, so Kubernetes restarts the replica as a follower. */
#include "app.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/apicheck.h"
#include "carpenter/capacitybuffer_controller.h"
#include "carpenter/clock.h"
#include "carpenter/cluster.h"
#include "carpenter/controller.h"
#include "carpenter/disruption.h"
#include "carpenter/error.h"
#include "carpenter/events.h"
#include "carpenter/gc.h"
#include "carpenter/health.h"
#include "carpenter/http.h"
#include "carpenter/informer.h"
#include "carpenter/interruption.h"
#include "carpenter/kube.h"
#include "carpenter/kubeconfig.h"
#include "carpenter/leader.h"
#include "carpenter/lifecycle.h"
#include "carpenter/log.h"
#include "carpenter/metrics.h"
#include "carpenter/metricsctl.h"
#include "carpenter/nodeclass_controller.h"
#include "carpenter/overlay.h"
#include "carpenter/nodepool_controller.h"
#include "carpenter/provisioner.h"
#include "carpenter/repair.h"
#include "carpenter/pve.h"
#include "carpenter/rand.h"
#include "carpenter/server.h"
#include "carpenter/static.h"
#include "carpenter/termination.h"
#include "carpenter/version.h"
#include "metrics_route.h"

#define SHUTDOWN_DEADLINE_MS 5000
#define MAX_INFORMERS        8
#define MAX_CONTROLLERS      32

struct app {
  const struct carp_options *opts;
  uv_loop_t loop;
  uv_signal_t sigterm;
  uv_signal_t sigint;
  uv_timer_t deadline;
  struct carp_metrics *metrics;
  struct carp_health *health;
  struct carp_server *metrics_server;
  struct carp_server *health_server;
  struct carp_kube_config kcfg;
  struct carp_kube *kube;
  struct carp_cluster *cluster;
  struct carp_provider *provider;
  struct carp_controller *provisioner; /* also in ctls */
  struct carp_controller *buffers;     /* also in ctls */
  struct carp_clock *clock;
  struct carp_controller_env env; /* what every controller gets */
  struct carp_controller *ctls[MAX_CONTROLLERS]; /* on the skeleton */
  size_t nctls;
  char **pve_regions; /* --pve-config regions, for the NodeClass status */
  size_t npve_regions;
  struct carp_leader *leader;
  char *lease_namespace;
  char identity[320]; /* this replica: hostname_random */
  char user_agent[400];
  struct carp_recorder *recorder;
  struct carp_apicheck *apicheck;
  int stopping;
  int exit_code;
  int config_error;        /* exit 2 */
  int closing_controllers; /* phase 1 of shutdown */
  int closing_users;       /* phase 2: what the controllers use */
};

/* ---- shutdown ---- */

static void on_deadline(uv_timer_t *t)
{
  CARP_LOG_ERROR("main", "shutdown did not finish in time, exiting",
                 CARP_F_DURATION("deadline", SHUTDOWN_DEADLINE_MS));
  carp_log_flush();
  _exit(1);
}

static void on_kube_closed(void *arg)
{
  (void)arg;
}

/* Phase 3: the Kubernetes client, once nothing uses it. */
static void on_user_closed(void *arg)
{
  struct app *a = arg;
  if (--a->closing_users > 0)
    return;
  /* Its informer handlers are gone with the cluster state now. */
  while (a->nctls)
    carp_controller_free(a->ctls[--a->nctls]);
  a->provisioner = NULL;
  a->buffers = NULL;
  if (a->kube)
    carp_kube_close(a->kube, on_kube_closed, a);
  a->kube = NULL;
}

/* Phase 2: what the controllers use (the cluster state, the provider,
 * leader election, events), once every controller has stopped. */
static void on_controller_closed(void *arg)
{
  struct app *a = arg;
  if (--a->closing_controllers > 0)
    return;
  a->closing_users = 1; /* held until every close below is started */
  if (a->provider) {
    a->closing_users++;
    carp_provider_close(a->provider, on_user_closed, a);
  }
  if (a->leader) {
    a->closing_users++;
    carp_leader_close(a->leader, on_user_closed, a);
  }
  if (a->cluster) {
    a->closing_users++;
    carp_cluster_close(a->cluster, on_user_closed, a);
  }
  if (a->recorder) {
    a->closing_users++;
    carp_recorder_close(a->recorder, on_user_closed, a);
  }
  if (a->apicheck) {
    a->closing_users++;
    carp_apicheck_close(a->apicheck, on_user_closed, a);
    a->apicheck = NULL;
  }
  on_user_closed(a);
}

static void app_stop(struct app *a, int exit_code)
{
  size_t i;
  if (a->stopping)
    return;
  a->stopping = 1;
  a->exit_code = exit_code;
  uv_timer_start(&a->deadline, on_deadline, SHUTDOWN_DEADLINE_MS, 0);
  uv_unref((uv_handle_t *)&a->deadline);

  /* Phase 1: controllers stop acting and finish what is in flight. */
  a->closing_controllers = 1;
  for (i = 0; i < a->nctls; i++) {
    a->closing_controllers++;
    carp_controller_close(a->ctls[i], on_controller_closed, a);
  }
  on_controller_closed(a);

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

/* ---- readiness ---- */

static int check_synced(void *arg, struct carp_buf *why)
{
  struct app *a = arg;
  int i, ok = a->cluster && carp_cluster_synced(a->cluster);
  for (i = 0; a->cluster && i < a->cluster->nrequired; i++)
    if (!carp_informer_synced(a->cluster->all[i]))
      carp_buf_printf(why, "%s%s", why->len ? ", " : "not synced: ",
                      carp_informer_kind(a->cluster->all[i])->name);
  return ok;
}

/* The checker is gone once shutdown closes it; /readyz may still ask. */
static int check_kubernetes(void *arg, struct carp_buf *why)
{
  struct app *a = arg;
  if (!a->apicheck) {
    carp_buf_puts(why, a->stopping ? "stopping" : "not started");
    return 0;
  }
  return carp_apicheck_server_ready(a->apicheck, why);
}

static int check_crds(void *arg, struct carp_buf *why)
{
  struct app *a = arg;
  if (!a->apicheck) {
    carp_buf_puts(why, a->stopping ? "stopping" : "not started");
    return 0;
  }
  return carp_apicheck_crds_ready(a->apicheck, why);
}

/* ---- leadership ---- */

static void set_controllers_active(struct app *a)
{
  size_t i;
  for (i = 0; i < a->nctls; i++)
    carp_controller_set_active(a->ctls[i], 1);
}

static void on_started_leading(void *arg)
{
  struct app *a = arg;
  struct carp_event_target t = {.api_version = "coordination.k8s.io/v1",
                                .kind = "Lease",
                                .namespace = a->lease_namespace,
                                .name = a->opts->leader_election_name,
                                .uid = NULL};
  set_controllers_active(a);
  /* As client-go's leader election does, say so on the Lease. */
  carp_recorder_event(a->recorder, &t, CARP_EVENT_NORMAL, "LeaderElection",
                      "%s became leader", carp_leader_identity(a->leader));
}

static void on_stopped_leading(void *arg)
{
  struct app *a = arg;
  CARP_LOG_ERROR("main", "leadership lost; stopping so the replica restarts "
                         "as a follower");
  app_stop(a, 1);
}

/* ---- start-up ---- */

static int start_servers(struct app *a)
{
  struct carp_server_options so = {.host = a->opts->metrics_bind_address,
                                   .port = a->opts->metrics_port,
                                   .name = "metrics"};
  int rc, shared = a->opts->metrics_port == a->opts->health_probe_port &&
                   a->opts->metrics_port != 0;

  rc = carp_server_new(&a->loop, &so, &a->metrics_server);
  if (!rc)
    rc = carp_metrics_serve(a->metrics, a->metrics_server);
  /* Concurrent scrapes share one rendering (see carp_server_route_cache). */
  if (!rc)
    rc = carp_server_route_cache(a->metrics_server, "/metrics", 1000);
  if (!rc && shared)
    rc = carp_health_install(a->health, a->metrics_server);
  if (!rc)
    rc = carp_server_start(a->metrics_server);
  if (rc || shared)
    return rc;
  so.host = a->opts->health_probe_bind_address;
  so.port = a->opts->health_probe_port;
  so.name = "health";
  rc = carp_server_new(&a->loop, &so, &a->health_server);
  if (!rc)
    rc = carp_health_install(a->health, a->health_server);
  if (!rc)
    rc = carp_server_start(a->health_server);
  return rc;
}

static int load_kube_config(struct app *a)
{
  char *err = NULL;
  int rc;
  if (a->opts->kubeconfig)
    rc = carp_kube_config_load(a->opts->kubeconfig, a->opts->kube_context,
                               &a->kcfg, &err);
  else
    rc = carp_kube_config_incluster(NULL, &a->kcfg, &err);
  if (rc) {
    CARP_LOG_ERROR("main", "invalid Kubernetes client configuration",
                   CARP_F_STR("problem", err ? err : carp_strerror(rc)));
    carp_free(err);
    return rc;
  }
  CARP_LOG_INFO("main", "Kubernetes API server",
                CARP_F_STR("server", a->kcfg.server),
                CARP_F_STR("context", a->kcfg.context));
  return 0;
}

static int start_provider(struct app *a)
{
  struct carp_pve_config cfg;
  struct carp_pve_provider_options po;
  char *err = NULL;
  int rc;
  if (!a->opts->pve_config) {
    CARP_LOG_WARN("main", "no --pve-config given: watching the cluster but "
                          "not provisioning");
    return 0;
  }
  rc = carp_pve_config_load(a->opts->pve_config, &cfg, &err);
  if (rc) {
    CARP_LOG_ERROR("main", "invalid Proxmox VE configuration",
                   CARP_F_STR("problem", err ? err : carp_strerror(rc)));
    carp_free(err);
    a->config_error = 1;
    return rc;
  }
  memset(&po, 0, sizeof(po));
  po.config = &cfg;
  po.cluster_name = a->opts->cluster_name;
  po.metrics = a->metrics; /* the Proxmox view's carpenter_proxmox_* */
  rc = carp_pve_provider_new(&a->loop, &po, &a->provider);
  a->pve_regions = carp_calloc(cfg.nclusters + 1, sizeof(char *));
  for (a->npve_regions = 0; a->npve_regions < cfg.nclusters; a->npve_regions++)
    a->pve_regions[a->npve_regions] =
        carp_strdup(cfg.clusters[a->npve_regions].region
                        ? cfg.clusters[a->npve_regions].region
                        : "");
  carp_pve_config_free(&cfg);
  if (rc) {
    CARP_LOG_ERROR("main", "cannot start the Proxmox provider", CARP_F_ERR(rc));
    return rc;
  }
  carp_provider_set_metrics(a->provider, a->metrics);
  return 0;
}

/* A NodePool became Ready: pods left pending may fit now. */
static void on_pool_ready(void *arg, const char *nodepool)
{
  struct app *a = arg;
  (void)nodepool;
  if (a->provisioner)
    carp_provisioner_trigger(a->provisioner);
}

/* A CapacityBuffer's virtual pods changed: provision for them. */
static void on_buffers_changed(void *arg)
{
  struct app *a = arg;
  if (a->provisioner)
    carp_provisioner_trigger(a->provisioner);
}

/* A batch placed virtual pods: the buffers' status may change. */
static void on_buffers_placed(void *arg)
{
  struct app *a = arg;
  if (a->buffers)
    carp_capacitybuffer_controller_placed(a->buffers);
}

/* Where the next controller goes; NULL when the list is full (every
 * constructor refuses a NULL out with CARP_EINVAL). */
static struct carp_controller **slot(struct app *a)
{
  return a->nctls < MAX_CONTROLLERS ? &a->ctls[a->nctls] : NULL;
}

/* Keeps a controller built into a->ctls[a->nctls] (rc 0). */
static int add_controller(struct app *a, int rc)
{
  if (!rc)
    a->nctls++;
  return rc;
}

/* Termination, disruption, interruption (hosts gone offline) and garbage
 * collection. */
static int start_disruption(struct app *a)
{
  struct carp_termination_options to;
  struct carp_disruption_options dopt;
  struct carp_interruption_options io;
  struct carp_gc_options go;
  int rc;
  memset(&to, 0, sizeof(to));
  rc = add_controller(a, carp_termination_new(&a->env, &to, slot(a)));
  if (rc)
    return rc;
  memset(&dopt, 0, sizeof(dopt));
  dopt.poll_interval_ms = (uint64_t)a->opts->disruption_poll_ms;
  dopt.validation_delay_ms = (uint64_t)a->opts->disruption_validation_ms;
  dopt.command_timeout_ms = (uint64_t)a->opts->disruption_command_timeout_ms;
  if ((rc = add_controller(a, carp_disruption_new(&a->env, &dopt, slot(a)))) ||
      (rc = add_controller(a, carp_expiration_new(&a->env, slot(a)))) ||
      (rc =
           add_controller(a, carp_disruption_conditions_new(&a->env, slot(a)))))
    return rc;
  memset(&io, 0, sizeof(io));
  io.host_offline_toleration_ms = (uint64_t)a->opts->host_offline_toleration_ms;
  if ((rc = add_controller(a, carp_interruption_new(&a->env, &io, slot(a)))))
    return rc;
  if (a->opts->node_repair) {
    struct carp_repair_options ro = {
        .toleration_ms = (uint64_t)a->opts->node_repair_toleration_ms,
        .max_unhealthy_percent = a->opts->node_repair_max_unhealthy};
    rc = add_controller(a, carp_repair_new(&a->env, &ro, slot(a)));
    if (rc)
      return rc;
  }
  memset(&go, 0, sizeof(go));
  go.interval_ms = (uint64_t)a->opts->gc_interval_ms;
  go.leaked_vm_grace_ms = (uint64_t)a->opts->gc_leaked_vm_grace_ms;
  if ((rc = add_controller(a, carp_gc_new(&a->env, &go, slot(a)))))
    return rc;
  if ((rc = add_controller(a, carp_static_provisioning_new(&a->env, slot(a)))))
    return rc;
  return add_controller(a, carp_static_deprovisioning_new(&a->env, slot(a)));
}

static int start_controllers(struct app *a)
{
  struct carp_provisioner_options po;
  struct carp_capacitybuffer_controller_options bo;
  struct carp_lifecycle_options lo;
  struct carp_nodepool_controller_options npo;
  struct carp_nodeclass_controller_options nco;
  struct carp_metricsctl_options mo;
  int rc;
  memset(&mo, 0, sizeof(mo));
  mo.pod_series_limit = (size_t)a->opts->metrics_pod_series_limit;
  memset(&npo, 0, sizeof(npo));
  npo.on_ready = on_pool_ready;
  npo.on_ready_arg = a;
  if ((rc = add_controller(a, carp_metricsctl_new(&a->env, &mo, slot(a)))) ||
      (rc = add_controller(
           a, carp_nodepool_controller_new(&a->env, &npo, slot(a)))))
    return rc;
  if (!a->provider)
    return 0;
  memset(&nco, 0, sizeof(nco));
  nco.regions = (const char *const *)a->pve_regions;
  nco.nregions = a->npve_regions;
  nco.region_status = carp_pve_provider_region_status;
  nco.templates = carp_pve_provider_templates;
  rc = add_controller(a, carp_nodeclass_controller_new(&a->env, &nco, slot(a)));
  if (!rc)
    rc = add_controller(a, carp_nodeoverlay_controller_new(&a->env, slot(a)));
  if (rc)
    return rc;
  memset(&po, 0, sizeof(po));
  po.batch_idle_ms = (uint64_t)a->opts->batch_idle_ms;
  po.batch_max_ms = (uint64_t)a->opts->batch_max_ms;
  po.on_buffers_placed = on_buffers_placed;
  po.on_buffers_placed_arg = a;
  rc = add_controller(a, carp_provisioner_new(&a->env, &po, slot(a)));
  if (rc)
    return rc;
  a->provisioner = a->ctls[a->nctls - 1];
  memset(&bo, 0, sizeof(bo));
  bo.on_change = on_buffers_changed;
  bo.on_change_arg = a;
  rc = add_controller(
      a, carp_capacitybuffer_controller_new(&a->env, &bo, slot(a)));
  if (rc)
    return rc;
  a->buffers = a->ctls[a->nctls - 1];
  memset(&lo, 0, sizeof(lo));
  lo.launch_timeout_ms = (uint64_t)a->opts->launch_timeout_ms;
  lo.registration_timeout_ms = (uint64_t)a->opts->registration_timeout_ms;
  rc = add_controller(a, carp_lifecycle_new(&a->env, &lo, slot(a)));
  if (rc)
    return rc;
  return start_disruption(a);
}

/* The replica's identity names it in the Lease, in events and in the
 * User-Agent of every request, so the API server's audit log (and
 * kube-sim's request log) tells which replica did what. */
static void make_identity(struct app *a)
{
  char host[256];
  if (gethostname(host, sizeof(host)) != 0)
    snprintf(host, sizeof(host), "carpenter");
  host[sizeof(host) - 1] = '\0';
  snprintf(
      a->identity, sizeof(a->identity), "%s_%08llx", host,
      (unsigned long long)(carp_rand_u64(carp_rand_global()) & 0xffffffffull));
  snprintf(a->user_agent, sizeof(a->user_agent), "carpenter/%s (%s)",
           CARP_VERSION, a->identity);
}

static int start_kube(struct app *a)
{
  struct carp_kube_options ko;
  struct carp_recorder_options ro;
  const char *ns;
  int rc;

  make_identity(a);
  memset(&ko, 0, sizeof(ko));
  ko.config = &a->kcfg;
  ko.user_agent = a->user_agent;
  ko.qps = a->opts->kube_client_qps;
  ko.burst = a->opts->kube_client_burst;
  ko.metrics = a->metrics;
  rc = carp_kube_new(&a->loop, &ko, &a->kube);
  if (rc) {
    CARP_LOG_ERROR("main", "cannot create the Kubernetes client",
                   CARP_F_ERR(rc));
    return rc;
  }
  rc = carp_cluster_new(&a->loop, a->kube, a->metrics, &a->cluster);
  if (rc)
    return rc;
  carp_cluster_set_clock(a->cluster, a->clock);
  memset(&ro, 0, sizeof(ro));
  ro.metrics = a->metrics;
  ro.instance = a->identity;
  rc = carp_recorder_new(&a->loop, a->kube, &ro, &a->recorder);
  if (!rc)
    rc = carp_cluster_report_invalid(a->cluster, a->recorder);
  if (rc)
    return rc;
  if ((rc = start_provider(a)))
    return rc;
  a->env.loop = &a->loop;
  a->env.clock = a->clock;
  a->env.cluster = a->cluster;
  a->env.kube = a->kube;
  a->env.provider = a->provider;
  a->env.recorder = a->recorder;
  a->env.metrics = a->metrics;
  if ((rc = start_controllers(a)))
    return rc;
  /* Handlers are in: the caches may fill now. */
  rc = carp_cluster_start(a->cluster);
  if (rc)
    return rc;

  {
    struct carp_apicheck_options co = {.need_leases = a->opts->leader_elect};
    rc = carp_apicheck_new(&a->loop, a->kube, &co, &a->apicheck);
    if (rc)
      return rc;
    carp_apicheck_start(a->apicheck);
  }

  if (!a->opts->leader_elect) {
    CARP_LOG_INFO("main", "leader election disabled: acting as the only "
                          "replica");
    set_controllers_active(a);
    return 0;
  }
  ns = a->opts->leader_election_namespace;
  if (!ns)
    ns = getenv("POD_NAMESPACE");
  if (!ns)
    ns = a->kcfg.namespace;
  if (!ns)
    ns = "default";
  a->lease_namespace = carp_strdup(ns);
  {
    struct carp_leader_options lo;
    memset(&lo, 0, sizeof(lo));
    lo.namespace = ns;
    lo.name = a->opts->leader_election_name;
    lo.identity = a->identity;
    lo.on_started_leading = on_started_leading;
    lo.on_stopped_leading = on_stopped_leading;
    lo.arg = a;
    lo.metrics = a->metrics;
    rc = carp_leader_new(&a->loop, a->kube, &lo, &a->leader);
    if (!rc)
      rc = carp_leader_start(a->leader);
  }
  return rc;
}

static int app_init(struct app *a)
{
  int rc;
  a->metrics = carp_metrics_new();
  carp_metrics_register_process(a->metrics);
  a->health = carp_health_new();
  carp_health_add_check(a->health, "kubernetes", check_kubernetes, a);
  carp_health_add_check(a->health, "crds", check_crds, a);
  carp_health_add_check(a->health, "informers-synced", check_synced, a);

  uv_signal_init(&a->loop, &a->sigterm);
  uv_signal_init(&a->loop, &a->sigint);
  uv_timer_init(&a->loop, &a->deadline);
  a->sigterm.data = a->sigint.data = a;
  rc = uv_signal_start(&a->sigterm, on_signal, SIGTERM);
  if (!rc)
    rc = uv_signal_start(&a->sigint, on_signal, SIGINT);
  if (!rc)
    rc = start_servers(a);
  if (!rc)
    rc = start_kube(a);
  return rc;
}

int carp_app_run(const struct carp_options *opts)
{
  struct app *a = CARP_NEW(struct app);
  int rc, code;

  a->opts = opts;
  signal(SIGPIPE, SIG_IGN);
  rc = carp_http_global_init();
  if (rc) {
    CARP_LOG_ERROR("main", "cannot initialise libcurl", CARP_F_ERR(rc));
    carp_free(a);
    return 1;
  }
  if (load_kube_config(a)) {
    carp_free(a);
    return 2;
  }
  rc = uv_loop_init(&a->loop);
  if (rc) {
    carp_kube_config_free(&a->kcfg);
    carp_free(a);
    return 1;
  }
  a->clock = carp_clock_real_new(&a->loop);
  rc = app_init(a);
  if (rc) {
    CARP_LOG_ERROR("main", "cannot start", CARP_F_ERR(rc));
    app_stop(a, a->config_error ? 2 : 1);
  }
  uv_run(&a->loop, UV_RUN_DEFAULT);
  /* Anything still open here is a bug in a module's close path: say so
   * rather than hang or leak silently. */
  rc = uv_loop_close(&a->loop);
  if (rc) {
    CARP_LOG_ERROR("main", "handles left open at exit", CARP_F_ERR(rc));
    if (!a->exit_code)
      a->exit_code = 1;
  }
  carp_clock_free(a->clock);
  carp_health_free(a->health);
  carp_metrics_free(a->metrics);
  carp_kube_config_free(&a->kcfg);
  carp_free(a->lease_namespace);
  while (a->npve_regions)
    carp_free(a->pve_regions[--a->npve_regions]);
  carp_free(a->pve_regions);
  code = a->exit_code;
  carp_free(a);
  carp_http_global_cleanup();
  return code;
}
