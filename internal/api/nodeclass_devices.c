/* nodeclass_devices.c: the device classes of a ProxmoxNodeClass
 * (spec.devices) and the device lists of its instance types
 * (instanceTypes.families[].devices, .custom[].devices), decoded with the
 * CRD's defaults: type PCI, count 1, pcie on for PCI, price 0. Like the
 * rest of the class, decoding is lenient about values (an entry that
 * breaks a rule is skipped; carp_nodeclass_validate() reports it) and
 * strict about JSON types. Kept apart from nodeclass.c so that file only
 * calls in here. */
#include <stdio.h>
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/nodeclass.h"

static int opt_str(yajl_val obj, const char *key, const char *path,
                   const char **out, char **err)
{
  const char *s = NULL;
  if (api_str(obj, key, path, &s, err))
    return CARP_EPARSE;
  *out = s && *s ? carp_interns(s) : NULL;
  return 0;
}

static int one_device(yajl_val d, const char *path, struct carp_device_class *o,
                      char **err)
{
  const char *name, *type, *mapping, *resource, *price, *mem = NULL;
  int present, has_pcie;
  int64_t count;
  yajl_val gpu;

  if (!YAJL_IS_OBJECT(d))
    return carp_api_error(err, path, "must be an object");
  if (api_str(d, "name", path, &name, err) ||
      api_str(d, "type", path, &type, err) ||
      api_str(d, "mapping", path, &mapping, err) ||
      api_int(d, "count", path, &present, &count, err) ||
      api_str(d, "resource", path, &resource, err) ||
      api_bool(d, "pcie", path, &has_pcie, &o->pcie, err) ||
      api_str(d, "price", path, &price, err) ||
      api_obj(d, "gpu", path, &gpu, err))
    return CARP_EPARSE;
  if (!name || !*name || !mapping || !*mapping || !resource || !*resource)
    return 1; /* invalid: reported by validation */
  o->type = type && !strcmp(type, "USB") ? CARP_DEVICE_USB : CARP_DEVICE_PCI;
  o->count = present && count >= 1 && count <= 8 ? (int32_t)count : 1;
  if (!has_pcie || o->type == CARP_DEVICE_USB)
    o->pcie = o->type == CARP_DEVICE_PCI;
  if (!price || api_decimal_nano(price, &o->price_nano))
    o->price_nano = 0;
  if (gpu) {
    char p[512];
    snprintf(p, sizeof(p), "%s.gpu", path);
    o->gpu = 1;
    if (opt_str(gpu, "name", p, &o->gpu_name, err) ||
        opt_str(gpu, "manufacturer", p, &o->gpu_manufacturer, err) ||
        api_str(gpu, "memory", p, &mem, err))
      return CARP_EPARSE;
    if (mem && api_bytes(mem, &o->gpu_memory))
      o->gpu_memory = 0;
  }
  o->name = carp_interns(name);
  o->mapping = carp_interns(mapping);
  o->resource = carp_interns(resource);
  return 0;
}

void api_device_class_cleanup(struct carp_device_class *d)
{
  carp_intern_release(d->name);
  carp_intern_release(d->mapping);
  carp_intern_release(d->resource);
  carp_intern_release(d->gpu_name);
  carp_intern_release(d->gpu_manufacturer);
  memset(d, 0, sizeof(*d));
}

int api_devices_decode(yajl_val spec, struct carp_nodeclass_spec *s, char **err)
{
  yajl_val arr;
  size_t i;
  char p[512];
  if (api_arr(spec, "devices", "spec", &arr, err))
    return CARP_EPARSE;
  if (!arr || !arr->u.array.len)
    return 0;
  s->devices = carp_calloc(arr->u.array.len, sizeof(*s->devices));
  for (i = 0; i < arr->u.array.len; i++) {
    struct carp_device_class *o = &s->devices[s->ndevices];
    int rc;
    if (s->ndevices == CARP_MAX_DEVICE_CLASSES)
      break; /* more: refused by validation */
    snprintf(p, sizeof(p), "spec.devices[%zu]", i);
    rc = one_device(arr->u.array.values[i], p, o, err);
    if (rc < 0) {
      api_device_class_cleanup(o);
      return rc;
    }
    if (rc == 0)
      s->ndevices++;
    else
      api_device_class_cleanup(o);
  }
  return 0;
}

int api_device_refs(yajl_val obj, const char *path,
                    const struct carp_nodeclass_spec *s, uint32_t *mask,
                    char **err)
{
  yajl_val arr;
  size_t i;
  uint32_t j;
  char p[512];
  *mask = 0;
  if (api_arr(obj, "devices", path, &arr, err))
    return CARP_EPARSE;
  for (i = 0; arr && i < arr->u.array.len; i++) {
    yajl_val x = arr->u.array.values[i];
    if (!YAJL_IS_STRING(x)) {
      snprintf(p, sizeof(p), "%s.devices[%zu]", path, i);
      return carp_api_error(err, p, "must be a string");
    }
    /* A name no device class has is refused by validation. */
    for (j = 0; j < s->ndevices; j++)
      if (!strcmp(s->devices[j].name, x->u.string))
        *mask |= 1u << j;
  }
  return 0;
}
