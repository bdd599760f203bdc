/* daemonset.c: the cached DaemonSet, kept for its pod template: the
 * scheduler adds the requests of every DaemonSet pod that would land on a
 * new node to that node's size (DaemonSet overhead). */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/json.h"

static void ds_free(struct carp_objmeta *m)
{
  struct carp_daemonset *d = (struct carp_daemonset *)m;
  carp_objmeta_cleanup(&d->meta);
  carp_kvset_release(d->template_labels);
  carp_podspec_release(d->spec);
  carp_free(d);
}

static int ds_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_daemonset *d = CARP_NEW(struct carp_daemonset);
  yajl_val tmpl = carp_json_obj(obj, "spec", "template", NULL);

  if (carp_objmeta_decode(obj, NULL, &d->meta, err)) {
    carp_free(d);
    return CARP_EPARSE;
  }
  d->meta.kind = &carp_kind_daemonset;
  if (!tmpl || !carp_json_obj(tmpl, "spec", NULL)) {
    ds_free(&d->meta);
    return carp_api_error(err, "spec.template.spec", "required");
  }
  if (carp_kvset_from_object(carp_json_get(tmpl, "metadata", "labels", NULL),
                             NULL, &d->template_labels)) {
    ds_free(&d->meta);
    return carp_api_error(err, "spec.template.metadata.labels",
                          "must be a map of strings");
  }
  if (carp_podspec_decode(carp_json_obj(tmpl, "spec", NULL),
                          "spec.template.spec", &d->spec, err)) {
    ds_free(&d->meta);
    return CARP_EPARSE;
  }
  *out = &d->meta;
  return 0;
}

const struct carp_kind carp_kind_daemonset = {
    .name = "DaemonSet",
    .group = "apps",
    .version = "v1",
    .resource = "daemonsets",
    .namespaced = 1,
    .decode = ds_decode,
    .free = ds_free,
};
