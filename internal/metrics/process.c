/* process.c: the standard process_* metrics, read from /proc/self at
 * scrape time, and karpenter_build_info. Names and meaning follow the
 * Prometheus Go client so the usual dashboards work unchanged. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "carpenter/version.h"
#include "metrics_int.h"

struct process_metrics {
  struct carp_metric *rss;
  struct carp_metric *vsize;
  struct carp_metric *cpu;
  struct carp_metric *start;
  struct carp_metric *open_fds;
  struct carp_metric *max_fds;
};

static struct process_metrics pm;

static double boot_time(void)
{
  char line[256];
  double btime = 0;
  FILE *f = fopen("/proc/stat", "r");
  if (!f)
    return 0;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "btime ", 6) == 0) {
      btime = strtod(line + 6, NULL);
      break;
    }
  }
  fclose(f);
  return btime;
}

static void read_stat(void)
{
  char buf[1024];
  unsigned long utime, stime, vsize;
  unsigned long long starttime;
  long rss;
  double ticks = (double)sysconf(_SC_CLK_TCK);
  double page = (double)sysconf(_SC_PAGESIZE);
  size_t n;
  char *p;
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f)
    return;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* The command name may hold spaces or parentheses: skip past the last
   * ')' before counting fields. */
  p = strrchr(buf, ')');
  if (!p)
    return;
  if (sscanf(p + 2,
             "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d "
             "%*d %*d %*d %*d %llu %lu %ld",
             &utime, &stime, &starttime, &vsize, &rss) != 5)
    return;
  carp_metric_set(pm.cpu, NULL, (double)(utime + stime) / ticks);
  carp_metric_set(pm.start, NULL, boot_time() + (double)starttime / ticks);
  carp_metric_set(pm.vsize, NULL, (double)vsize);
  carp_metric_set(pm.rss, NULL, (double)rss * page);
}

static void count_fds(void)
{
  struct rlimit rl;
  struct dirent *e;
  double n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    while ((e = readdir(d)))
      if (e->d_name[0] != '.')
        n++;
    closedir(d);
    carp_metric_set(pm.open_fds, NULL, n - 1); /* minus the DIR's own fd */
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
    carp_metric_set(pm.max_fds, NULL, (double)rl.rlim_cur);
}

static void collect(struct carp_metrics *r, void *arg)
{
  read_stat();
  count_fds();
}

static const char *arch(void)
{
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#else
  return "unknown";
#endif
}

void carp_metrics_register_process(struct carp_metrics *r)
{
  struct carp_metric *info;
  pm.rss = carp_metrics_gauge(r, "process_resident_memory_bytes",
                              "Resident memory size in bytes.", NULL);
  pm.vsize = carp_metrics_gauge(r, "process_virtual_memory_bytes",
                                "Virtual memory size in bytes.", NULL);
  pm.cpu = carp_metrics_counter(r, "process_cpu_seconds_total",
                                "Total user and system CPU time spent in "
                                "seconds.",
                                NULL);
  pm.start = carp_metrics_gauge(r, "process_start_time_seconds",
                                "Start time of the process since unix epoch "
                                "in seconds.",
                                NULL);
  pm.open_fds = carp_metrics_gauge(r, "process_open_fds",
                                   "Number of open file descriptors.", NULL);
  pm.max_fds = carp_metrics_gauge(
      r, "process_max_fds", "Maximum number of open file descriptors.", NULL);
  info = carp_metrics_gauge(
      r, "karpenter_build_info",
      "A metric with a constant '1' value labeled by version from which "
      "carpenter was built.",
      CARP_LABELS("version", "goversion", "goarch", "commit"));
  carp_metric_set(
      info, CARP_VALUES(CARP_VERSION, "gcc-" __VERSION__, arch(), CARP_COMMIT),
      1);
  carp_metrics_add_collector(r, collect, NULL);
}
