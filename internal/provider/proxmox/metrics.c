/* metrics.c: the Proxmox view - what the provider knows of each host, and
 * how its tasks go (docs/metrics.md, "Proxmox"; the chart's Grafana
 * dashboard draws them).
 *
 * Host figures are streamed at each scrape from the inventory the provider
 * refreshes anyway (/cluster/resources every 30 s and around each create),
 * with the host state hosts.c keeps (maintenance, offline since), in the
 * terms placement uses: committed vCPUs and memory are those of the
 * host's running VMs plus the creates in flight (holds), and a host's VMs
 * are counted with managed="true" when they carry this cluster's tag.
 * Tasks are counted and timed as the provider waits for them (op.c): their
 * type is the UPID's (qmclone, qmconfig, qmstart, qmshutdown, qmstop,
 * qmdestroy, resize, ...), result ok, failed or timeout. */
#include <stdio.h>
#include <string.h>

#include "carpenter/error.h"
#include "carpenter/metrics.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

#define HOST_LABELS CARP_LABELS("region", "zone")

/* One streamed family: a name, help, labels and what each host gives. */
enum host_figure {
  FIG_UP = 0,
  FIG_MAINTENANCE,
  FIG_OFFLINE_SECONDS,
  FIG_CPUS,
  FIG_MEMORY,
  FIG_VCPUS,
  FIG_COMMITTED_MEMORY,
  FIG_UTILIZATION,
  FIG_N,
};

_Static_assert(FIG_N == PVE_HOST_FIGURES, "pve_int.h sizes m_figs");

static const struct {
  const char *name;
  const char *help;
} figures[FIG_N] = {
    {"carpenter_proxmox_host_up",
     "Whether the Proxmox host (zone) is online, as the provider's last "
     "inventory of its region saw it."},
    {"carpenter_proxmox_host_maintenance",
     "Whether the Proxmox host is in HA maintenance mode: no new VM goes "
     "there and its nodes are replaced as drifted (reason HostMaintenance)."},
    {"carpenter_proxmox_host_offline_seconds",
     "How long the Proxmox host has been offline as the provider saw it (0 "
     "while it is not): past --host-offline-toleration its NodeClaims are "
     "replaced."},
    {"carpenter_proxmox_host_cpus", "CPU threads of the Proxmox host."},
    {"carpenter_proxmox_host_memory_bytes", "Memory of the Proxmox host."},
    {"carpenter_proxmox_host_committed_vcpus",
     "vCPUs of the running VMs on the Proxmox host, plus those of VMs "
     "Carpenter is creating there."},
    {"carpenter_proxmox_host_committed_memory_bytes",
     "Memory of the running VMs on the Proxmox host, plus that of VMs "
     "Carpenter is creating there."},
    {"carpenter_proxmox_host_cpu_utilization",
     "CPU load of the Proxmox host, 0 to 1."},
};

static double figure(const struct pve_region *r, const struct pve_host *h,
                     enum host_figure fig)
{
  struct pve_capacity c;
  switch (fig) {
  case FIG_UP:
    return h->online ? 1 : 0;
  case FIG_MAINTENANCE:
    return h->maintenance ? 1 : 0;
  case FIG_OFFLINE_SECONDS: {
    const struct pve_host_state *st = pve_region_host_state(r, h->name);
    int64_t ms;
    if (!st || st->state != CARP_ZONE_OFFLINE)
      return 0;
    ms = carp_time_wall_ms() - st->since_ms;
    return ms > 0 ? (double)ms / 1000.0 : 0;
  }
  case FIG_CPUS:
    return (double)h->maxcpu;
  case FIG_MEMORY:
    return (double)h->maxmem;
  case FIG_VCPUS:
    /* Free at ratio 1 and no reserve: what is committed is the rest. */
    pve_region_capacity(r, h, 100, 100, 0, &c);
    return (double)(h->maxcpu - c.cpu_free);
  case FIG_COMMITTED_MEMORY:
    pve_region_capacity(r, h, 100, 100, 0, &c);
    return (double)(h->maxmem - c.mem_free);
  case FIG_UTILIZATION:
  case FIG_N:
    break;
  }
  return h->cpu;
}

static void stream_host(struct carp_metric_writer *w, void *arg)
{
  const struct pve_stream_arg *a = arg;
  size_t ri, hi;
  for (ri = 0; ri < a->pp->nregions; ri++) {
    const struct pve_region *r = &a->pp->regions[ri];
    if (!r->inv.fetched_ms)
      continue;
    for (hi = 0; hi < r->inv.nhosts; hi++) {
      const struct pve_host *h = &r->inv.hosts[hi];
      carp_metric_writer_sample(w, CARP_VALUES(r->name, h->name),
                                figure(r, h, (enum host_figure)a->fig));
    }
  }
}

static void stream_vms(struct carp_metric_writer *w, void *arg)
{
  struct pve_provider *pp = arg;
  size_t ri, hi, gi;
  for (ri = 0; ri < pp->nregions; ri++) {
    const struct pve_region *r = &pp->regions[ri];
    if (!r->inv.fetched_ms)
      continue;
    for (hi = 0; hi < r->inv.nhosts; hi++) {
      const struct pve_host *h = &r->inv.hosts[hi];
      double managed = 0, other = 0;
      for (gi = 0; gi < r->inv.nguests; gi++) {
        const struct pve_guest *g = &r->inv.guests[gi];
        if (g->template_ || strcmp(g->node, h->name))
          continue;
        if (pve_tags_have(g->tags, pp->cluster_tag))
          managed++;
        else
          other++;
      }
      carp_metric_writer_sample(w, CARP_VALUES(r->name, h->name, "true"),
                                managed);
      carp_metric_writer_sample(w, CARP_VALUES(r->name, h->name, "false"),
                                other);
    }
  }
}

static void stream_regions(struct carp_metric_writer *w, void *arg)
{
  struct pve_provider *pp = arg;
  size_t ri;
  for (ri = 0; ri < pp->nregions; ri++)
    carp_metric_writer_sample(w, CARP_VALUES(pp->regions[ri].name),
                              pp->regions[ri].status == 0 ? 1 : 0);
}

void pve_metrics_init(struct pve_provider *pp, struct carp_metrics *reg)
{
  int f;
  if (!reg)
    return;
  pp->m_streams[pp->nstreams++] = carp_metrics_stream(
      reg, "carpenter_proxmox_region_up",
      "Whether the provider's last refresh of the region's inventory "
      "succeeded (1) or failed (0: connection, TLS, authorization or 5xx "
      "errors; the NodeClass's RegionsReady condition says which).",
      CARP_METRIC_GAUGE, CARP_LABELS("region"), stream_regions, pp);
  for (f = 0; f < FIG_N; f++) {
    pp->m_figs[f].pp = pp;
    pp->m_figs[f].fig = f;
    pp->m_streams[pp->nstreams++] = carp_metrics_stream(
        reg, figures[f].name, figures[f].help, CARP_METRIC_GAUGE, HOST_LABELS,
        stream_host, &pp->m_figs[f]);
  }
  pp->m_streams[pp->nstreams++] = carp_metrics_stream(
      reg, "carpenter_proxmox_host_vms",
      "VMs on the Proxmox host (templates left out); managed: whether they "
      "carry this cluster's carpenter-<cluster> tag.",
      CARP_METRIC_GAUGE, CARP_LABELS("region", "zone", "managed"), stream_vms,
      pp);
  pp->m_tasks = carp_metrics_counter(
      reg, "carpenter_proxmox_tasks_total",
      "Proxmox tasks the provider waited for, by host (zone), task type (the "
      "UPID's: qmclone, qmconfig, qmstart, qmstop, qmdestroy...) and result "
      "(ok, failed, timeout).",
      CARP_LABELS("region", "zone", "type", "result"));
  pp->m_task_duration = carp_metrics_histogram(
      reg, "carpenter_proxmox_task_duration_seconds",
      "Duration of Proxmox tasks the provider waited for, from the call that "
      "started them to the end seen by polling, by task type.",
      CARP_LABELS("region", "type"), carp_metrics_duration_buckets,
      carp_metrics_duration_buckets_len);
}

void pve_metrics_detach(struct pve_provider *pp)
{
  size_t i;
  for (i = 0; i < pp->nstreams; i++)
    if (pp->m_streams[i])
      carp_metric_stream_detach(pp->m_streams[i]);
  pp->nstreams = 0;
}

void pve_metrics_task(struct pve_provider *pp, const char *region,
                      const char *upid, int err, double seconds)
{
  struct carp_pve_upid u;
  const char *result = err == 0                ? "ok"
                       : err == CARP_ETIMEDOUT ? "timeout"
                                               : "failed";
  if (!pp->m_tasks || carp_pve_upid_parse(upid, &u))
    return;
  carp_metric_add(pp->m_tasks, CARP_VALUES(region, u.node, u.type, result), 1);
  carp_metric_observe(pp->m_task_duration, CARP_VALUES(region, u.type),
                      seconds);
}
