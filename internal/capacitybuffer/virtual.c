/* virtual.c: a CapacityBuffer's chunks as pods - built as the JSON of a
 * pending, unschedulable pod owned by the buffer and decoded by the Pod
 * kind, so the scheduler sees exactly what it would see for a real pod of
 * that template (and the pods of one buffer share one interned spec).
 * Fields that would tie a placeholder to something that does not exist -
 * a nodeName, volumes (their claims), scheduling gates - are left out, as
 * Karpenter's sanitizeVirtualPodSpec does. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/capacitybuffer_controller.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/timeutil.h"

static int dropped(const char *key)
{
  return !strcmp(key, "nodeName") || !strcmp(key, "volumes") ||
         !strcmp(key, "schedulingGates");
}

static void pod_json(const struct carp_capacitybuffer *b, yajl_val tmpl,
                     size_t i, struct carp_buf *out)
{
  yajl_val labels = carp_json_obj(tmpl, "metadata", "labels", NULL);
  yajl_val spec = carp_json_obj(tmpl, "spec", NULL);
  char ts[CARP_RFC3339_LEN], buf[512];
  struct carp_jw w;
  size_t k;
  carp_time_format_rfc3339(b->meta.creation_ms, 0, ts);
  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", "v1");
  carp_jw_kstr(&w, "kind", "Pod");
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  snprintf(buf, sizeof(buf), "capacity-buffer-%s-%zu", b->meta.name, i + 1);
  carp_jw_kstr(&w, "name", buf);
  carp_jw_kstr(&w, "namespace", b->meta.namespace);
  snprintf(buf, sizeof(buf), "%s-%zu", b->meta.uid, i + 1);
  carp_jw_kstr(&w, "uid", buf);
  carp_jw_kstr(&w, "resourceVersion", b->meta.resource_version);
  carp_jw_kstr(&w, "creationTimestamp", ts);
  if (labels) {
    carp_jw_key(&w, "labels");
    carp_jw_value(&w, labels);
  }
  carp_jw_key(&w, "ownerReferences");
  carp_jw_arr(&w);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion", CARP_BUFFER_API_VERSION);
  carp_jw_kstr(&w, "kind", CARP_BUFFER_KIND);
  carp_jw_kstr(&w, "name", b->meta.name);
  carp_jw_kstr(&w, "uid", b->meta.uid);
  carp_jw_kbool(&w, "controller", 1);
  carp_jw_obj_end(&w);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  for (k = 0; spec && k < spec->u.object.len; k++) {
    if (dropped(spec->u.object.keys[k]))
      continue;
    carp_jw_key(&w, spec->u.object.keys[k]);
    carp_jw_value(&w, spec->u.object.values[k]);
  }
  carp_jw_obj_end(&w);
  carp_jw_key(&w, "status");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "phase", "Pending");
  carp_jw_key(&w, "conditions");
  carp_jw_arr(&w);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "type", "PodScheduled");
  carp_jw_kstr(&w, "status", "False");
  carp_jw_kstr(&w, "reason", "Unschedulable");
  carp_jw_obj_end(&w);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
}

int carp_capacitybuffer_virtual_pods(const struct carp_capacitybuffer *b,
                                     yajl_val tmpl, size_t n,
                                     struct carp_pod **out, char **err)
{
  struct carp_buf text;
  size_t i, j;
  if (!carp_json_obj(tmpl, "spec", NULL))
    return carp_api_error(err, "template.spec", "required");
  carp_buf_init(&text, CARP_BUF_UNLIMITED);
  for (i = 0; i < n; i++) {
    struct carp_objmeta *m = NULL;
    yajl_val v = NULL;
    int rc;
    carp_buf_reset(&text);
    pod_json(b, tmpl, i, &text);
    rc = carp_json_parse(text.ptr, text.len, &v, err);
    if (!rc)
      rc = carp_kind_pod.decode(v, &m, err);
    carp_json_free(v);
    if (rc) {
      for (j = 0; j < i; j++)
        carp_obj_unref(&out[j]->meta);
      carp_buf_free(&text);
      return CARP_EPARSE;
    }
    out[i] = (struct carp_pod *)m;
  }
  carp_buf_free(&text);
  return 0;
}
