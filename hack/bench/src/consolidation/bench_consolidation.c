/* bench_consolidation.c: the consolidation decision benchmark (run by
 * hack/bench/consolidation; not a timed test).
 *
 * A fragmented cluster - nodes of mixed sizes 20-60 % full, pods of mixed
 * sizes, some in zone spreads, some covered by PodDisruptionBudgets - is
 * put straight into the informer caches the disruption controller reads.
 * Then, round after round, the controller's own analysis and decision
 * code (the functions disruption.c calls on each poll) picks a command,
 * and the benchmark carries it out on the caches the way the cluster
 * would: candidates removed, their pods placed again by the scheduler, a
 * replacement added as a node of its cheapest option. It stops at a fixed
 * point (no further decision). Per size it prints
 *
 *   nodes=N pods=P decision_seconds=S price=X lower_bound=L ratio=X/L
 *     rounds=R max_decision_seconds=M nodes_after=K unplaced=U
 *
 * decision_seconds is the first round's (the largest cluster, the
 * heaviest decision); max_ the slowest round. lower_bound is what the
 * pods' requests cost at the cheapest price per vCPU and per GiB of any
 * instance type, whichever is higher: no packing can beat it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carpenter/log.h"
#include "world.h"

static double cpu_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- one size ---- */

static void run(size_t nnodes, size_t npods, uint64_t seed, int verbose)
{
  struct world_options o = {
      .nodes = nnodes, .pods = npods, .seed = seed, .budget = "10%"};
  struct world *w = world_new(&o);
  double first = -1, slowest = 0, lb = world_lower_bound(w);
  int64_t now = world_now();
  size_t rounds = 0, unplaced = 0;
  for (;;) {
    struct dis_analysis a;
    struct dis_command cmd;
    double t0 = cpu_now(), took;
    int found;
    memset(&cmd, 0, sizeof(cmd));
    carp__dis_analyze(w->cluster, w->provider, now, 0, &a);
    found = carp__dis_decide(w->cluster, w->provider, &a, &cmd, NULL);
    took = cpu_now() - t0;
    if (first < 0)
      first = took;
    if (took > slowest)
      slowest = took;
    if (!found) {
      carp__dis_analysis_free(&a);
      break;
    }
    rounds++;
    if (verbose)
      fprintf(stderr,
              "  round=%zu %s %s candidates=%zu seconds=%.3f nodes=%zu "
              "price=%.2f\n",
              rounds, carp__dis_method_name(cmd.method),
              cmd.plan.decision == DIS_REPLACE ? "replace" : "delete",
              cmd.ncands, took, w->nodes, world_price(w));
    unplaced += world_apply(w, &a, &cmd);
    carp__dis_command_cleanup(&cmd);
    carp__dis_analysis_free(&a);
  }
  printf("nodes=%zu pods=%zu decision_seconds=%.3f price=%.2f lower_bound=%.2f "
         "ratio=%.3f rounds=%zu max_decision_seconds=%.3f nodes_after=%zu "
         "unplaced=%zu\n",
         nnodes, w->pods, first, world_price(w), lb, world_price(w) / lb,
         rounds, slowest, w->nodes, unplaced);
  fflush(stdout);
  world_free(w);
}

int main(int argc, char **argv)
{
  size_t sizes[8] = {500, 1000, 2000, 5000};
  size_t nsizes = 4, i;
  uint64_t seed = 42;
  int verbose = 0;
  for (i = 1; i < (size_t)argc; i++) {
    if (!strcmp(argv[i], "--sizes") && i + 1 < (size_t)argc) {
      char *s = argv[++i], *end;
      nsizes = 0;
      while (*s && nsizes < 8) {
        sizes[nsizes++] = strtoul(s, &end, 10);
        s = *end ? end + 1 : end;
      }
    } else if (!strcmp(argv[i], "--seed") && i + 1 < (size_t)argc) {
      seed = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "-v")) {
      verbose = 1;
    } else {
      fprintf(stderr, "usage: %s [--sizes 500,1000,...] [--seed N] [-v]\n",
              argv[0]);
      return 2;
    }
  }
  carp_log_set_level(CARP_LOG_ERROR);
  for (i = 0; i < nsizes; i++)
    run(sizes[i], sizes[i] * 30, seed, verbose);
  return 0;
}
