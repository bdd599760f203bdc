/* bench_scheduling: the scheduling micro-benchmark, Karpenter's shape.
 *
 * One NodePool without limits and 400 instance types (fake-it-i: i+1 vCPU,
 * 2(i+1) GiB, 10(i+1) pods, 100m/10Mi kube-reserved, spot in two zones and
 * on-demand in three, price 0.1 per vCPU + 0.1 per GiB), as in Karpenter's
 * scheduling_benchmark_test.go with fake.InstanceTypes(400). Pods, seeded:
 * CPU in {100, 250, 500, 1000, 1500}m, memory in {100, 256, 512, 1024,
 * 2048, 4096}Mi; the "diverse" mix has 1/5 each of generic pods, zone
 * spread, hostname spread, zone self-affinity and hostname anti-affinity,
 * the "generic" mix only generic pods. Prints one line per size:
 *
 *   pods=N seconds=S pods_per_s=P nodes=C price=X lower_bound=L ratio=X/L
 *   mix=M cpu_seconds=... mem_mb=... unscheduled=U runs=R
 *
 * seconds is the mean wall time of carp_sched_solve() over repeated runs
 * (at least 3, and at least 0.3 s in total), cpu_seconds the mean CPU time
 * of the process over the same runs (steadier on a shared machine).
 * lower_bound prices every request at the cheapest price per vCPU and per
 * GiB. Not a timed test.
 *
 * By default the process keeps the memory it frees (glibc's trim and mmap
 * thresholds raised), as a long-running controller should: otherwise glibc
 * hands freed memory back to the kernel after every solve and the next solve
 * pays the page faults again. --default-malloc measures without that.
 *
 * usage: bench_scheduling [--mix diverse|generic|both] [--sizes 1,50,...]
 *                         [--seed N] [--min-seconds S] [--default-malloc] */
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallopt */
#endif
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "carpenter/rand.h"
#include "carpenter/scheduling.h"

#define NTYPES 400
#define MI     (1048576LL * 1000)
#define GI     (1073741824LL * 1000)

static const char *const label_values[] = {"a", "b", "c", "d", "e", "f", "g"};
static const int cpus[] = {100, 250, 500, 1000, 1500};
static const int mems[] = {100, 256, 512, 1024, 2048, 4096};

struct type_data {
  char name[32];
  struct carp_sched_quantity cap[3];
  struct carp_sched_quantity kube[2];
  struct carp_sched_offering off[5];
  struct carp_sched_requirement reqs[2];
};

static const char *arch_vals[] = {"amd64"};
static const char *os_vals[] = {"linux"};

static struct type_data types_data[NTYPES];
static struct carp_sched_instance_type types[NTYPES];

static void make_types(void)
{
  for (int i = 0; i < NTYPES; i++) {
    struct type_data *d = &types_data[i];
    double price = 0.1 * (i + 1) + 0.1 * 2 * (i + 1);
    snprintf(d->name, sizeof(d->name), "fake-it-%d", i);
    d->cap[0] = (struct carp_sched_quantity){"cpu", (int64_t)(i + 1) * 1000};
    d->cap[1] =
        (struct carp_sched_quantity){"memory", (int64_t)(i + 1) * 2 * GI};
    d->cap[2] =
        (struct carp_sched_quantity){"pods", (int64_t)(i + 1) * 10 * 1000};
    d->kube[0] = (struct carp_sched_quantity){"cpu", 100};
    d->kube[1] = (struct carp_sched_quantity){"memory", 10 * MI};
    d->off[0] = (struct carp_sched_offering){"test-zone-1", "spot", price, 1};
    d->off[1] = (struct carp_sched_offering){"test-zone-2", "spot", price, 1};
    d->off[2] =
        (struct carp_sched_offering){"test-zone-1", "on-demand", price, 1};
    d->off[3] =
        (struct carp_sched_offering){"test-zone-2", "on-demand", price, 1};
    d->off[4] =
        (struct carp_sched_offering){"test-zone-3", "on-demand", price, 1};
    d->reqs[0] = (struct carp_sched_requirement){
        CARP_LABEL_ARCH, CARP_SCHED_OP_IN, arch_vals, 1, 0};
    d->reqs[1] = (struct carp_sched_requirement){
        CARP_LABEL_OS, CARP_SCHED_OP_IN, os_vals, 1, 0};
    memset(&types[i], 0, sizeof(types[i]));
    types[i].name = d->name;
    types[i].requirements = d->reqs;
    types[i].nrequirements = 2;
    types[i].capacity = d->cap;
    types[i].ncapacity = 3;
    types[i].kube_reserved = d->kube;
    types[i].nkube_reserved = 2;
    types[i].offerings = d->off;
    types[i].nofferings = 5;
  }
}

/* Everything one pod points to. */
struct pod_data {
  char uid[24];
  struct carp_sched_label labels[1];
  struct carp_sched_quantity requests[2];
  struct carp_sched_label sel_labels[1];
  struct carp_sched_selector sel;
  struct carp_sched_spread spread;
  struct carp_sched_pod_term term;
};

enum kind { GENERIC, ZONE_SPREAD, HOST_SPREAD, ZONE_AFFINITY, HOST_ANTI };

static void make_pod(struct carp_sched_pod *p, struct pod_data *d,
                     struct carp_rand *r, enum kind kind, int i)
{
  const char *v;
  memset(p, 0, sizeof(*p));
  memset(d, 0, sizeof(*d));
  snprintf(d->uid, sizeof(d->uid), "pod-%06d", i);
  p->uid = d->uid;
  p->name = d->uid;
  p->namespace_ = "default";
  p->created = i;
  p->labels = d->labels;
  p->nlabels = 1;
  p->requests = d->requests;
  p->nrequests = 2;
  d->sel.match_labels = d->sel_labels;
  d->sel.nmatch_labels = 1;
  switch (kind) {
  case GENERIC:
  case ZONE_SPREAD:
  case HOST_SPREAD:
    d->labels[0] = (struct carp_sched_label){
        "my-label", label_values[carp_rand_below(r, 7)]};
    if (kind != GENERIC) {
      d->sel_labels[0] = (struct carp_sched_label){
          "my-label", label_values[carp_rand_below(r, 7)]};
      d->spread.topology_key =
          kind == ZONE_SPREAD ? CARP_LABEL_ZONE : CARP_LABEL_HOSTNAME;
      d->spread.max_skew = 1;
      d->spread.when_unsatisfiable = CARP_SCHED_DO_NOT_SCHEDULE;
      d->spread.selector = &d->sel;
      p->spreads = &d->spread;
      p->nspreads = 1;
    }
    break;
  case ZONE_AFFINITY:
    v = label_values[carp_rand_below(r, 7)];
    d->labels[0] = (struct carp_sched_label){"my-affininity", v};
    d->sel_labels[0] = d->labels[0];
    d->term.topology_key = CARP_LABEL_ZONE;
    d->term.selector = &d->sel;
    p->affinity = &d->term;
    p->naffinity = 1;
    break;
  case HOST_ANTI:
    d->labels[0] = (struct carp_sched_label){"app", "nginx"};
    d->sel_labels[0] = d->labels[0];
    d->term.topology_key = CARP_LABEL_HOSTNAME;
    d->term.selector = &d->sel;
    p->anti_affinity = &d->term;
    p->nanti_affinity = 1;
    break;
  }
  d->requests[0] = (struct carp_sched_quantity){
      "cpu", cpus[carp_rand_below(r, (sizeof(cpus) / sizeof(*cpus)))]};
  d->requests[1] = (struct carp_sched_quantity){
      "memory",
      (int64_t)mems[carp_rand_below(r, (sizeof(mems) / sizeof(*mems)))] * MI};
}

static double clock_s(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(const char *mix, size_t n, uint64_t seed, double min_seconds)
{
  struct carp_sched_pod *pods = calloc(n + 1, sizeof(*pods));
  struct pod_data *data = calloc(n + 1, sizeof(*data));
  struct carp_sched_nodepool pool;
  struct carp_sched_problem prob;
  struct carp_sched_result *res = NULL;
  struct carp_rand r;
  double t0, c0, total = 0, cpu_total = 0, cpu_sum = 0, mem_sum = 0, lb;
  int runs = 0, rc;
  size_t per = n / 5, i = 0;
  int diverse = strcmp(mix, "diverse") == 0;

  carp_rand_seed(&r, seed);
  if (diverse) {
    for (int k = 0; k < 5; k++)
      for (size_t j = 0; j < per; j++, i++)
        make_pod(&pods[i], &data[i], &r, (enum kind)k, (int)i);
  }
  for (; i < n; i++)
    make_pod(&pods[i], &data[i], &r, GENERIC, (int)i);
  for (i = 0; i < n; i++) {
    cpu_sum += (double)pods[i].requests[0].milli / 1000.0;
    mem_sum += (double)pods[i].requests[1].milli / (double)GI;
  }
  lb = 0.1 * cpu_sum + 0.1 * mem_sum;

  memset(&pool, 0, sizeof(pool));
  pool.name = "default";
  memset(&prob, 0, sizeof(prob));
  prob.pods = pods;
  prob.npods = n;
  prob.nodepools = &pool;
  prob.nnodepools = 1;
  prob.instance_types = types;
  prob.ninstance_types = NTYPES;

  do {
    if (res)
      carp_sched_result_free(res);
    res = NULL;
    t0 = clock_s(CLOCK_MONOTONIC);
    c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    rc = carp_sched_solve(&prob, &res);
    total += clock_s(CLOCK_MONOTONIC) - t0;
    cpu_total += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    runs++;
    if (rc < 0) {
      fprintf(stderr, "solve failed: %d\n", rc);
      return 1;
    }
  } while (runs < 3 || total < min_seconds);
  {
    double secs = total / runs;
    printf("pods=%zu seconds=%.6f pods_per_s=%.0f nodes=%zu price=%.2f "
           "lower_bound=%.2f ratio=%.4f mix=%s cpu_seconds=%.6f "
           "mem_mb=%.1f unscheduled=%zu runs=%d\n",
           n, secs, (double)n / secs, res->nclaims, res->price, lb,
           lb > 0 ? res->price / lb : 0, mix, cpu_total / runs,
           (double)res->stats.bytes / 1048576.0, res->nunschedulable, runs);
    fflush(stdout);
  }
  carp_sched_result_free(res);
  free(pods);
  free(data);
  return 0;
}

int main(int argc, char **argv)
{
  static const size_t default_sizes[] = {1,    50,   100,   500,  1000,
                                         2000, 5000, 10000, 20000};
  size_t sizes[64], nsizes = 0;
  const char *mix = "both";
  uint64_t seed = 42;
  double min_seconds = 0.3;
  int keep_memory = 1;
  struct rusage ru;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--mix") == 0 && i + 1 < argc) {
      mix = argv[++i];
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--min-seconds") == 0 && i + 1 < argc) {
      min_seconds = strtod(argv[++i], NULL);
    } else if (strcmp(argv[i], "--default-malloc") == 0) {
      keep_memory = 0;
    } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      char *s = argv[++i], *end;
      while (*s && nsizes < 64) {
        sizes[nsizes++] = strtoull(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s)
          break;
      }
    } else {
      fprintf(stderr,
              "usage: %s [--mix diverse|generic|both] [--sizes 1,50,...] "
              "[--seed N] [--min-seconds S] [--default-malloc]\n",
              argv[0]);
      return 2;
    }
  }
  if (!nsizes)
    for (size_t i = 0; i < sizeof(default_sizes) / sizeof(*default_sizes); i++)
      sizes[nsizes++] = default_sizes[i];
#ifdef __GLIBC__
  if (keep_memory) {
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
  }
#else
  keep_memory = 0;
#endif
  make_types();
  if (strcmp(mix, "both") == 0 || strcmp(mix, "diverse") == 0)
    for (size_t i = 0; i < nsizes; i++)
      if (run("diverse", sizes[i], seed, min_seconds))
        return 1;
  if (strcmp(mix, "both") == 0 || strcmp(mix, "generic") == 0)
    for (size_t i = 0; i < nsizes; i++)
      if (run("generic", sizes[i], seed, min_seconds))
        return 1;
  getrusage(RUSAGE_SELF, &ru);
  printf("peak_rss_mb=%.1f malloc=%s\n", (double)ru.ru_maxrss / 1024.0,
         keep_memory ? "keep" : "default");
  return 0;
}
