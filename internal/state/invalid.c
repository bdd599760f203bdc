/* invalid.c: an object Carpenter cannot decode is left out of its caches,
 * so out of every decision. The informer logs it; this says so on the
 * object too, with a Warning event (the recorder folds repeats), where
 * `kubectl describe` shows it to the user who wrote it. */
#include <stdio.h>

#include "carpenter/cluster.h"
#include "carpenter/events.h"
#include "carpenter/json.h"

static void on_decode_error(const struct carp_kind *kind,
                            const struct carp_obj_id *id, const char *problem,
                            void *arg)
{
  struct carp_recorder *r = arg;
  struct carp_event_target t;
  char api_version[128];
  const char *name = id->name;
  if (!name)
    return; /* nothing to hang an event on */
  if (kind->group && *kind->group)
    snprintf(api_version, sizeof(api_version), "%s/%s", kind->group,
             kind->version);
  else
    snprintf(api_version, sizeof(api_version), "%s", kind->version);
  t.api_version = api_version;
  t.kind = kind->name;
  t.namespace = id->namespace;
  t.name = name;
  t.uid = id->uid;
  carp_recorder_event(r, &t, CARP_EVENT_WARNING, "FailedDecode",
                      "Carpenter cannot read this %s and leaves it out of "
                      "every decision: %s",
                      kind->name, problem);
}

int carp_cluster_report_invalid(struct carp_cluster *c, struct carp_recorder *r)
{
  struct carp_informer_handlers h = {.on_decode_error = on_decode_error,
                                     .arg = r};
  int i, rc;
  for (i = 0; i < c->nall; i++)
    if ((rc = carp_informer_add_handlers(c->all[i], &h)))
      return rc;
  return 0;
}
