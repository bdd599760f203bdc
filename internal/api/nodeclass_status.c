/* nodeclass_status.c: the status of a ProxmoxNodeClass - conditions,
 * observedGeneration, specHash, the regions and zones in use, the
 * templates found per host and the instance types offered - decoded,
 * copied, and written back as a merge patch on the status subresource. */
#include <stdio.h>
#include <string.h>

#include "api_int.h"
#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/nodeclass.h"
#include "carpenter/quantity.h"

static const char *intern_or_null(const char *s)
{
  return s ? carp_interns(s) : NULL;
}

static int decode_templates(yajl_val arr, struct carp_nodeclass_status *st,
                            char **err)
{
  size_t i;
  char p[128];
  if (!arr || !arr->u.array.len)
    return 0;
  st->templates = carp_calloc(arr->u.array.len, sizeof(*st->templates));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val t = arr->u.array.values[i];
    struct carp_nodeclass_template *o = &st->templates[st->ntemplates];
    const char *region, *zone, *name, *node, *storage;
    int has_vmid, has_shared, shared = 0;
    int64_t vmid = 0;
    snprintf(p, sizeof(p), "status.templates[%zu]", i);
    if (!YAJL_IS_OBJECT(t))
      return carp_api_error(err, p, "must be an object");
    if (api_str(t, "region", p, &region, err) ||
        api_str(t, "zone", p, &zone, err) ||
        api_int(t, "vmid", p, &has_vmid, &vmid, err) ||
        api_str(t, "name", p, &name, err) ||
        api_str(t, "node", p, &node, err) ||
        api_str(t, "storage", p, &storage, err) ||
        api_bool(t, "shared", p, &has_shared, &shared, err))
      return CARP_EPARSE;
    o->region = carp_interns(region ? region : "");
    o->zone = carp_interns(zone ? zone : "");
    o->vmid = vmid;
    o->name = intern_or_null(name);
    o->node = intern_or_null(node);
    o->storage = intern_or_null(storage);
    o->shared = has_shared && shared;
    st->ntemplates++;
  }
  return 0;
}

static int decode_types(yajl_val arr, struct carp_nodeclass_status *st,
                        char **err)
{
  size_t i;
  char p[128];
  if (!arr || !arr->u.array.len)
    return 0;
  st->instance_types =
      carp_calloc(arr->u.array.len, sizeof(*st->instance_types));
  for (i = 0; i < arr->u.array.len; i++) {
    yajl_val t = arr->u.array.values[i];
    struct carp_instance_type *o = &st->instance_types[st->ninstance_types];
    const char *name, *family, *memory, *price;
    int has_cpu;
    int64_t cpu = 0;
    snprintf(p, sizeof(p), "status.instanceTypes[%zu]", i);
    if (!YAJL_IS_OBJECT(t))
      return carp_api_error(err, p, "must be an object");
    if (api_str(t, "name", p, &name, err) ||
        api_str(t, "family", p, &family, err) ||
        api_int(t, "cpu", p, &has_cpu, &cpu, err) ||
        api_str(t, "memory", p, &memory, err) ||
        api_str(t, "price", p, &price, err))
      return CARP_EPARSE;
    if (!name)
      continue;
    snprintf(o->name, sizeof(o->name), "%s", name);
    snprintf(o->family, sizeof(o->family), "%s", family ? family : "");
    o->cpu = cpu > 0 && cpu <= INT32_MAX ? (int32_t)cpu : 0;
    if (memory)
      api_bytes(memory, &o->memory);
    if (price && api_decimal_nano(price, &o->price_nano) == 0)
      o->price = (double)o->price_nano / 1e9;
    st->ninstance_types++;
  }
  return 0;
}

int api_nodeclass_status_decode(yajl_val obj, struct carp_nodeclass_status *st,
                                char **err)
{
  yajl_val status, conds, templates, types;
  const char *hash;
  int present;
  if (api_obj(obj, "status", "", &status, err) ||
      api_arr(status, "conditions", "status", &conds, err) ||
      api_int(status, "observedGeneration", "status", &present,
              &st->observed_generation, err) ||
      api_str(status, "specHash", "status", &hash, err) ||
      api_strlist(status, "regions", "status", &st->regions, err) ||
      api_strlist(status, "zones", "status", &st->zones, err) ||
      api_arr(status, "templates", "status", &templates, err) ||
      api_arr(status, "instanceTypes", "status", &types, err))
    return CARP_EPARSE;
  st->spec_hash = hash && *hash ? carp_strdup(hash) : NULL;
  if (decode_templates(templates, st, err) || decode_types(types, st, err))
    return CARP_EPARSE;
  return carp_conditions_decode(conds, "status.conditions", &st->conditions,
                                err);
}

void carp_nodeclass_status_cleanup(struct carp_nodeclass_status *st)
{
  uint32_t i;
  carp_conditions_cleanup(&st->conditions);
  carp_free(st->spec_hash);
  carp_strlist_cleanup(&st->regions);
  carp_strlist_cleanup(&st->zones);
  for (i = 0; i < st->ntemplates; i++) {
    carp_intern_release(st->templates[i].region);
    carp_intern_release(st->templates[i].zone);
    carp_intern_release(st->templates[i].name);
    carp_intern_release(st->templates[i].node);
    carp_intern_release(st->templates[i].storage);
  }
  carp_free(st->templates);
  carp_free(st->instance_types);
  memset(st, 0, sizeof(*st));
}

void carp_nodeclass_status_copy(struct carp_nodeclass_status *dst,
                                const struct carp_nodeclass_status *src)
{
  uint32_t i;
  memset(dst, 0, sizeof(*dst));
  carp_conditions_copy(&dst->conditions, &src->conditions);
  dst->observed_generation = src->observed_generation;
  dst->spec_hash = src->spec_hash ? carp_strdup(src->spec_hash) : NULL;
  carp_strlist_copy(&dst->regions, &src->regions);
  carp_strlist_copy(&dst->zones, &src->zones);
  if (src->ntemplates) {
    dst->templates = carp_calloc(src->ntemplates, sizeof(*dst->templates));
    for (i = 0; i < src->ntemplates; i++) {
      dst->templates[i] = src->templates[i];
      dst->templates[i].region = carp_intern_ref(src->templates[i].region);
      dst->templates[i].zone = carp_intern_ref(src->templates[i].zone);
      dst->templates[i].name = carp_intern_ref(src->templates[i].name);
      dst->templates[i].node = carp_intern_ref(src->templates[i].node);
      dst->templates[i].storage = carp_intern_ref(src->templates[i].storage);
    }
    dst->ntemplates = src->ntemplates;
  }
  if (src->ninstance_types) {
    dst->instance_types =
        carp_calloc(src->ninstance_types, sizeof(*dst->instance_types));
    memcpy(dst->instance_types, src->instance_types,
           src->ninstance_types * sizeof(*dst->instance_types));
    dst->ninstance_types = src->ninstance_types;
  }
}

static void strlist(struct carp_jw *w, const char *key,
                    const struct carp_strlist *l)
{
  uint32_t i;
  carp_jw_key(w, key);
  carp_jw_arr(w);
  for (i = 0; i < l->n; i++)
    carp_jw_str(w, l->v[i]);
  carp_jw_arr_end(w);
}

int carp_nodeclass_status_patch(const struct carp_nodeclass_status *st,
                                const char *rv, struct carp_buf *out)
{
  struct carp_jw w;
  uint32_t i;
  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  if (rv) {
    carp_jw_key(&w, "metadata");
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "resourceVersion", rv);
    carp_jw_obj_end(&w);
  }
  carp_jw_key(&w, "status");
  carp_jw_obj(&w);
  carp_jw_key(&w, "conditions");
  carp_conditions_encode(&w, &st->conditions);
  if (st->observed_generation)
    carp_jw_kint(&w, "observedGeneration", st->observed_generation);
  if (st->spec_hash)
    carp_jw_kstr(&w, "specHash", st->spec_hash);
  strlist(&w, "regions", &st->regions);
  strlist(&w, "zones", &st->zones);
  carp_jw_key(&w, "templates");
  carp_jw_arr(&w);
  for (i = 0; i < st->ntemplates; i++) {
    const struct carp_nodeclass_template *t = &st->templates[i];
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "region", t->region ? t->region : "");
    carp_jw_kstr(&w, "zone", t->zone ? t->zone : "");
    carp_jw_kint(&w, "vmid", t->vmid);
    if (t->name)
      carp_jw_kstr(&w, "name", t->name);
    if (t->node)
      carp_jw_kstr(&w, "node", t->node);
    if (t->storage)
      carp_jw_kstr(&w, "storage", t->storage);
    carp_jw_kbool(&w, "shared", t->shared);
    carp_jw_obj_end(&w);
  }
  carp_jw_arr_end(&w);
  carp_jw_key(&w, "instanceTypes");
  carp_jw_arr(&w);
  for (i = 0; i < st->ninstance_types; i++) {
    const struct carp_instance_type *t = &st->instance_types[i];
    char q[CARP_QUANTITY_LEN], price[32];
    carp_quantity_format(t->memory > INT64_MAX / 1000 ? INT64_MAX / 1000 * 1000
                                                      : t->memory * 1000,
                         CARP_QUANTITY_BINARY, q);
    carp_price_format(t->price_nano, price);
    carp_jw_obj(&w);
    carp_jw_kstr(&w, "name", t->name);
    carp_jw_kstr(&w, "family", t->family);
    carp_jw_kint(&w, "cpu", t->cpu);
    carp_jw_kstr(&w, "memory", q);
    carp_jw_kstr(&w, "price", price);
    carp_jw_obj_end(&w);
  }
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}
