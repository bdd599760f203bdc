/* simulation.c: a simulation's lifetime - the caches, the offline provider
 * and the loop they were made on, closed in order when it is freed. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/kube.h"
#include "sim_int.h"

static void on_closed(void *arg)
{
  int *left = arg;
  (*left)--;
}

static void strv_free(char **v, size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    carp_free(v[i]);
  carp_free(v);
}

static void results_free(struct carp_simulation *s)
{
  size_t i, j;
  for (i = 0; i < s->nclaims; i++) {
    strv_free(s->claims[i].types, s->claims[i].ntypes);
    strv_free(s->claims[i].zones, s->claims[i].nzones);
    carp_resources_cleanup(&s->claims[i].requests);
    carp_free(s->claims[i].pods);
  }
  carp_free(s->claims);
  carp_free(s->placed);
  for (i = 0; i < s->nunplaced; i++) {
    for (j = 0; j < s->unplaced[i].nrefusals; j++) {
      carp_free(s->unplaced[i].refusals[j].nodepool);
      carp_free(s->unplaced[i].refusals[j].reason);
      carp_free(s->unplaced[i].refusals[j].detail);
      carp_free(s->unplaced[i].refusals[j].message);
    }
    carp_free(s->unplaced[i].refusals);
    carp_free(s->unplaced[i].message);
  }
  carp_free(s->unplaced);
  for (i = 0; i < s->nrepls; i++) {
    carp_free(s->repls[i].pool);
    strv_free(s->repls[i].types, s->repls[i].ntypes);
  }
  carp_free(s->repls);
  carp_free(s->nodes);
}

void carp_simulation_timings(const struct carp_simulation *s, uint64_t *load,
                             uint64_t *provisioning, uint64_t *consolidation)
{
  *load = s->load_ms;
  *provisioning = s->provisioning_ms;
  *consolidation = s->consolidation_ms;
}

void carp_simulation_free(struct carp_simulation *s)
{
  int left = 0;
  if (!s)
    return;
  results_free(s);
  strv_free(s->files, s->nfiles);
  strv_free(s->warnings, s->nwarnings);
  if (s->cluster) {
    left++;
    carp_cluster_close(s->cluster, on_closed, &left);
  }
  if (s->provider) {
    left++;
    carp_provider_close(s->provider, on_closed, &left);
  }
  if (s->kube) {
    left++;
    carp_kube_close(s->kube, on_closed, &left);
  }
  while (left > 0 && uv_run(&s->loop, UV_RUN_ONCE))
    ;
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_loop_close(&s->loop);
  carp_free(s);
}
