/* encode.c: JSON encoders for the pieces the Karpenter kinds share -
 * resource lists with canonical quantity strings (never JSON numbers),
 * requirements with minValues, taints and nodeClassRef. */
#include "carpenter/api_encode.h"

#include <string.h>

#include "carpenter/conditions.h"
#include "carpenter/quantity.h"

static int binary_resource(const char *name)
{
  return !strcmp(name, "memory") || !strcmp(name, "ephemeral-storage") ||
         !strncmp(name, "hugepages-", 10);
}

void carp_resource_quantity_format(const char *name, int64_t value,
                                   char out[32])
{
  int64_t milli;
  if (!strcmp(name, "cpu")) {
    carp_quantity_format(value, CARP_QUANTITY_DECIMAL, out);
    return;
  }
  if (value > INT64_MAX / 1000)
    value = INT64_MAX / 1000;
  milli = value * 1000;
  carp_quantity_format(milli,
                       binary_resource(name) ? CARP_QUANTITY_BINARY
                                             : CARP_QUANTITY_DECIMAL,
                       out);
}

static void kq(struct carp_jw *w, const char *name, int64_t value)
{
  char q[32];
  carp_resource_quantity_format(name, value, q);
  carp_jw_kstr(w, name, q);
}

void carp_resources_encode(struct carp_jw *w, const struct carp_resources *r,
                           const char *skip_name)
{
  uint32_t i;
  carp_jw_obj(w);
  if (r->cpu)
    kq(w, "cpu", r->cpu);
  if (r->ephemeral)
    kq(w, "ephemeral-storage", r->ephemeral);
  if (r->memory)
    kq(w, "memory", r->memory);
  if (r->pods)
    kq(w, "pods", r->pods);
  for (i = 0; i < r->nextended; i++)
    if (!skip_name || strcmp(r->extended[i].name, skip_name))
      kq(w, r->extended[i].name, r->extended[i].value);
  carp_jw_obj_end(w);
}

void carp_requirement_encode(struct carp_jw *w,
                             const struct carp_requirement *r)
{
  uint32_t j;
  carp_jw_obj(w);
  carp_jw_kstr(w, "key", r->key);
  carp_jw_kstr(w, "operator", carp_op_name(r->op));
  if (r->nvalues) {
    carp_jw_key(w, "values");
    carp_jw_arr(w);
    for (j = 0; j < r->nvalues; j++)
      carp_jw_str(w, r->values[j]);
    carp_jw_arr_end(w);
  }
  if (r->min_values > 0)
    carp_jw_kint(w, "minValues", r->min_values);
  carp_jw_obj_end(w);
}

void carp_requirements_encode(struct carp_jw *w,
                              const struct carp_requirement *r, size_t n)
{
  size_t i;
  carp_jw_arr(w);
  for (i = 0; i < n; i++)
    carp_requirement_encode(w, &r[i]);
  carp_jw_arr_end(w);
}

void carp_taints_encode(struct carp_jw *w, const struct carp_taint *t, size_t n)
{
  size_t i;
  carp_jw_arr(w);
  for (i = 0; i < n; i++) {
    carp_jw_obj(w);
    carp_jw_kstr(w, "key", t[i].key);
    if (t[i].value && *t[i].value)
      carp_jw_kstr(w, "value", t[i].value);
    carp_jw_kstr(w, "effect", carp_taint_effect_name(t[i].effect));
    carp_jw_obj_end(w);
  }
  carp_jw_arr_end(w);
}

void carp_nodeclass_ref_encode(struct carp_jw *w,
                               const struct carp_nodeclass_ref *ref)
{
  carp_jw_obj(w);
  carp_jw_kstr(w, "group", ref->group ? ref->group : "");
  carp_jw_kstr(w, "kind", ref->kind ? ref->kind : "");
  carp_jw_kstr(w, "name", ref->name ? ref->name : "");
  carp_jw_obj_end(w);
}

void carp_status_patch_begin(struct carp_jw *w, const char *rv)
{
  carp_jw_obj(w);
  if (rv) {
    carp_jw_key(w, "metadata");
    carp_jw_obj(w);
    carp_jw_kstr(w, "resourceVersion", rv);
    carp_jw_obj_end(w);
  }
  carp_jw_key(w, "status");
  carp_jw_obj(w);
}

int carp_conditions_status_patch(const struct carp_conditions *conds,
                                 const char *rv, struct carp_buf *out)
{
  struct carp_jw w;
  carp_jw_init(&w, out);
  carp_status_patch_begin(&w, rv);
  carp_jw_key(&w, "conditions");
  carp_conditions_encode(&w, conds);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}
