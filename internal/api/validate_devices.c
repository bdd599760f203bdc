/* validate_devices.c: the rules of a ProxmoxNodeClass's device classes
 * (spec.devices) and of the device lists of its instance types, as
 * crds/carpenter.dev_proxmoxnodeclasses.yaml states them: the item schema,
 * the list-map key, the two CEL rules on an item (pcie and gpu are for PCI
 * only), the CEL rule on resource (an extended resource name), and the two
 * spec-level CEL rules (every listed device names a class; at most one
 * GPU class per type). */
#include <string.h>

#include "carpenter/json.h"
#include "carpenter/nodeclass.h"
#include "validate_int.h"

static const char PAT_DEVICE_NAME[] = "^[a-z]([-a-z0-9]*[a-z0-9])?$";
static const char PAT_MAPPING[] = "^[A-Za-z][A-Za-z0-9_-]+$";
static const char PAT_RESOURCE[] =
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/"
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
static const char PAT_PRICE[] = "^[0-9]+(\\.[0-9]{1,9})?$";
static const char PAT_MEMORY[] = "^[1-9][0-9]*(Mi|Gi)$";

static const char *const type_enum[] = {"PCI", "USB", NULL};

static void gpu(struct vctx *v, yajl_val d, const char *path)
{
  static const struct vstr label_rule = {.pattern = V_PAT_LABEL_VALUE,
                                         .maxlen = 63};
  static const struct vstr memory_rule = {.pattern = PAT_MEMORY};
  char p[VPATH];
  yajl_val g = v_obj(v, d, path, "gpu", 0);
  if (!g)
    return;
  v_sub(p, path, "gpu");
  v_str(v, g, p, "name", 0, &label_rule);
  v_str(v, g, p, "manufacturer", 0, &label_rule);
  v_str(v, g, p, "memory", 0, &memory_rule);
}

static void one(struct vctx *v, yajl_val d, const char *path)
{
  static const struct vstr name_rule = {.pattern = PAT_DEVICE_NAME,
                                        .maxlen = 32};
  static const struct vstr type_rule = {.enums = type_enum};
  static const struct vstr mapping_rule = {.pattern = PAT_MAPPING,
                                           .maxlen = 64};
  static const struct vstr resource_rule = {.pattern = PAT_RESOURCE,
                                            .maxlen = 253};
  static const struct vstr price_rule = {.pattern = PAT_PRICE, .maxlen = 24};
  const char *type, *res, *price;
  char p[VPATH];

  if (!YAJL_IS_OBJECT(d)) {
    v_err(v, path, "Invalid value: \"%s\": must be of type object",
          v_typename(d));
    return;
  }
  v_str(v, d, path, "name", 1, &name_rule);
  type = v_str(v, d, path, "type", 0, &type_rule);
  v_str(v, d, path, "mapping", 1, &mapping_rule);
  v_int(v, d, path, "count", 0, 1, 8, NULL);
  res = v_str(v, d, path, "resource", 1, &resource_rule);
  if (res && (strstr(res, "kubernetes.io/") || !strncmp(res, "requests.", 9)))
    v_err(v, v_sub(p, path, "resource"),
          "Invalid value: \"string\": resource must be an extended resource "
          "outside the kubernetes.io domain, for example nvidia.com/gpu");
  v_bool(v, d, path, "pcie", NULL);
  price = v_str(v, d, path, "price", 0, &price_rule);
  if (price && v_match(PAT_PRICE, price) && strcspn(price, ".") > 9)
    v_err(v, v_sub(p, path, "price"), "Invalid value: \"%s\": price too large",
          price);
  gpu(v, d, path);
  if (type && strcmp(type, "PCI") != 0) {
    if (v_get(d, "pcie"))
      v_err(v, path,
            "Invalid value: \"object\": pcie applies to PCI devices only");
    if (v_get(d, "gpu"))
      v_err(v, path,
            "Invalid value: \"object\": gpu applies to PCI devices only");
  }
}

void v_nodeclass_devices(struct vctx *v, yajl_val spec)
{
  char p[VPATH], pi[VPATH];
  size_t i, j;
  yajl_val arr = v_arr(v, spec, "spec", "devices", 0, CARP_MAX_DEVICE_CLASSES);
  if (!arr)
    return;
  v_sub(p, "spec", "devices");
  for (i = 0; i < arr->u.array.len; i++) {
    const char *a;
    one(v, arr->u.array.values[i], v_idx(pi, p, i));
    a = carp_json_str(arr->u.array.values[i], "name", NULL);
    for (j = 0; a && j < i; j++) {
      const char *b = carp_json_str(arr->u.array.values[j], "name", NULL);
      if (b && !strcmp(a, b)) {
        v_err(v, pi, "Duplicate value: {\"name\":\"%s\"}", a);
        break;
      }
    }
  }
}

/* The device class called name, or NULL. */
static yajl_val device_named(yajl_val devices, const char *name)
{
  size_t i;
  for (i = 0; devices && i < devices->u.array.len; i++) {
    const char *n = carp_json_str(devices->u.array.values[i], "name", NULL);
    if (n && !strcmp(n, name))
      return devices->u.array.values[i];
  }
  return NULL;
}

void v_instance_type_devices(struct vctx *v, yajl_val spec, yajl_val it,
                             const char *path, int *unknown, int *two_gpus)
{
  static const struct vstr name_rule = {.pattern = PAT_DEVICE_NAME,
                                        .maxlen = 32};
  char p[VPATH];
  size_t i, gpus = 0;
  yajl_val devices = v_get(spec, "devices");
  yajl_val refs = v_arr(v, it, path, "devices", 0, 4);
  if (!refs)
    return;
  v_str_list(v, refs, v_sub(p, path, "devices"), &name_rule, 1);
  if (!YAJL_IS_ARRAY(devices))
    devices = NULL;
  for (i = 0; i < refs->u.array.len; i++) {
    yajl_val r = refs->u.array.values[i], d;
    if (!YAJL_IS_STRING(r))
      continue;
    d = device_named(devices, r->u.string);
    if (!d)
      *unknown = 1;
    else if (v_get(d, "gpu"))
      gpus++;
  }
  if (gpus > 1)
    *two_gpus = 1;
}

void v_instance_type_devices_done(struct vctx *v, int unknown, int two_gpus)
{
  if (unknown)
    v_err(v, "spec",
          "Invalid value: \"object\": instanceTypes devices must name an entry "
          "of spec.devices");
  if (two_gpus)
    v_err(v, "spec",
          "Invalid value: \"object\": an instance type may carry at most one "
          "device class with gpu set");
}
