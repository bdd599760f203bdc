/* pdb.c: the cached PodDisruptionBudget (policy/v1). Carpenter reads the
 * selector and the status the disruption controller keeps current; the
 * Eviction API enforces the budget itself, so this is used only to
 * predict whether a node can be drained now. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/json.h"

static void pdb_free(struct carp_objmeta *m)
{
  struct carp_pdb *p = (struct carp_pdb *)m;
  carp_objmeta_cleanup(&p->meta);
  carp_label_selector_cleanup(&p->selector);
  carp_free(p);
}

static int32_t status_int(yajl_val status, const char *field)
{
  int64_t v = 0;
  carp_json_int(status, &v, field, NULL);
  return (int32_t)v;
}

static int pdb_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_pdb *p = CARP_NEW(struct carp_pdb);
  yajl_val status = carp_json_obj(obj, "status", NULL);

  if (carp_objmeta_decode(obj, NULL, &p->meta, err)) {
    carp_free(p);
    return CARP_EPARSE;
  }
  p->meta.kind = &carp_kind_pdb;
  if (carp_label_selector_decode(carp_json_get(obj, "spec", "selector", NULL),
                                 "spec.selector", &p->selector, err)) {
    pdb_free(&p->meta);
    return CARP_EPARSE;
  }
  p->disruptions_allowed = status_int(status, "disruptionsAllowed");
  p->current_healthy = status_int(status, "currentHealthy");
  p->desired_healthy = status_int(status, "desiredHealthy");
  p->expected_pods = status_int(status, "expectedPods");
  carp_json_int(status, &p->observed_generation, "observedGeneration", NULL);
  *out = &p->meta;
  return 0;
}

const struct carp_kind carp_kind_pdb = {
    .name = "PodDisruptionBudget",
    .group = "policy",
    .version = "v1",
    .resource = "poddisruptionbudgets",
    .namespaced = 1,
    .decode = pdb_decode,
    .free = pdb_free,
};
