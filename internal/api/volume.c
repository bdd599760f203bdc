/* volume.c: the cached VolumeAttachment (storage.k8s.io/v1) and
 * PersistentVolumeClaim (v1), as much of them as node termination needs:
 * which volumes are still attached to a node, and which of them belong to
 * pods that stay on it (their claims' volumes). */
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"

static const char *intern_or_null(const char *s)
{
  return s && *s ? carp_interns(s) : NULL;
}

static void va_free(struct carp_objmeta *m)
{
  struct carp_volumeattachment *v = (struct carp_volumeattachment *)m;
  carp_objmeta_cleanup(&v->meta);
  carp_intern_release(v->node_name);
  carp_intern_release(v->pv_name);
  carp_intern_release(v->attacher);
  carp_free(v);
}

static int va_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_volumeattachment *v = CARP_NEW(struct carp_volumeattachment);
  yajl_val spec = carp_json_obj(obj, "spec", NULL);
  const char *node = carp_json_str(spec, "nodeName", NULL);
  if (carp_objmeta_decode(obj, NULL, &v->meta, err)) {
    carp_free(v);
    return CARP_EPARSE;
  }
  v->meta.kind = &carp_kind_volumeattachment;
  v->node_name = carp_interns(node ? node : "");
  v->pv_name = intern_or_null(
      carp_json_str(spec, "source", "persistentVolumeName", NULL));
  v->attacher = intern_or_null(carp_json_str(spec, "attacher", NULL));
  carp_json_bool(obj, &v->attached, "status", "attached", NULL);
  *out = &v->meta;
  return 0;
}

const struct carp_kind carp_kind_volumeattachment = {
    .name = "VolumeAttachment",
    .group = "storage.k8s.io",
    .version = "v1",
    .resource = "volumeattachments",
    .namespaced = 0,
    .decode = va_decode,
    .free = va_free,
};

static void pvc_free(struct carp_objmeta *m)
{
  struct carp_pvc *p = (struct carp_pvc *)m;
  carp_objmeta_cleanup(&p->meta);
  carp_intern_release(p->volume_name);
  carp_free(p);
}

static int pvc_decode(yajl_val obj, struct carp_objmeta **out, char **err)
{
  struct carp_pvc *p = CARP_NEW(struct carp_pvc);
  if (carp_objmeta_decode(obj, NULL, &p->meta, err)) {
    carp_free(p);
    return CARP_EPARSE;
  }
  p->meta.kind = &carp_kind_pvc;
  p->volume_name =
      intern_or_null(carp_json_str(obj, "spec", "volumeName", NULL));
  *out = &p->meta;
  return 0;
}

const struct carp_kind carp_kind_pvc = {
    .name = "PersistentVolumeClaim",
    .group = "",
    .version = "v1",
    .resource = "persistentvolumeclaims",
    .namespaced = 1,
    .decode = pvc_decode,
    .free = pvc_free,
};
