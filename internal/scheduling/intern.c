/* intern.c: label keys and values to integer ids.
 *
 * Inside a solve every string that takes part in a decision is an id, so
 * set operations compare integers. Each id also carries what the algebra
 * asks of it again and again: whether the string is an integer (for Gt/Lt)
 * and whether it is a well-known label key. Strings are borrowed from the
 * input; a pointer cache in front of the string map makes the common case
 * (many pods sharing the same string pointers) a single integer lookup. */
#include <limits.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "schd_int.h"

static const char *const well_known[] = {
    CARP_LABEL_INSTANCE_TYPE,
    CARP_LABEL_ARCH,
    CARP_LABEL_OS,
    CARP_LABEL_ZONE,
    CARP_LABEL_REGION,
    CARP_LABEL_WINDOWS_BUILD,
    CARP_LABEL_CAPACITY_TYPE,
    CARP_LABEL_NODEPOOL,
    CARP_LABEL_INSTANCE_FAMILY,
    CARP_LABEL_INSTANCE_CPU,
    CARP_LABEL_INSTANCE_MEMORY,
    CARP_LABEL_INSTANCE_GPU_COUNT,
    CARP_LABEL_INSTANCE_GPU_NAME,
    CARP_LABEL_INSTANCE_GPU_MANUFACTURER,
    CARP_LABEL_INSTANCE_GPU_MEMORY,
};

int carp_sched_well_known(const char *key)
{
  if (!key)
    return 0;
  for (size_t i = 0; i < CARP_ARRAY_LEN(well_known); i++)
    if (strcmp(key, well_known[i]) == 0)
      return 1;
  return 0;
}

int schd_parse_int(const char *s, int64_t *v)
{
  int neg = 0;
  uint64_t acc = 0, limit;
  if (!s || !*s)
    return -1;
  if (*s == '+' || *s == '-') {
    neg = *s == '-';
    s++;
  }
  if (!*s)
    return -1;
  limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (acc > (limit - (uint64_t)(*s - '0')) / 10)
      return -1;
    acc = acc * 10 + (uint64_t)(*s - '0');
  }
  if (neg)
    *v = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
  else
    *v = (int64_t)acc;
  return 0;
}

void schd_intern_init(struct schd_intern *in)
{
  memset(in, 0, sizeof(*in));
  carp_map_init(&in->map);
  schd_map_init(&in->ptr);
}

void schd_intern_free(struct schd_intern *in)
{
  carp_map_free(&in->map);
  schd_map_free(&in->ptr);
  carp_free(in->str);
  carp_free(in->ival);
  carp_free(in->flags);
  memset(in, 0, sizeof(*in));
}

uint32_t schd_intern_find(const struct schd_intern *in, const char *s)
{
  void *v;
  if (!s)
    s = "";
  v = carp_map_gets(&in->map, s);
  return v ? (uint32_t)((uintptr_t)v - 1) : SCHD_NONE;
}

uint32_t schd_intern(struct schd_intern *in, const char *s)
{
  uint64_t cached;
  uint32_t id;
  int64_t iv = 0;
  if (!s)
    s = "";
  if (schd_map_get(&in->ptr, (uint64_t)(uintptr_t)s, &cached))
    return (uint32_t)cached;
  id = schd_intern_find(in, s);
  if (id == SCHD_NONE) {
    if (in->n == in->cap) {
      in->cap = in->cap ? in->cap * 2 : 64;
      in->str = carp_reallocarray(in->str, in->cap, sizeof(*in->str));
      in->ival = carp_reallocarray(in->ival, in->cap, sizeof(*in->ival));
      in->flags = carp_reallocarray(in->flags, in->cap, sizeof(*in->flags));
    }
    id = in->n++;
    in->str[id] = s;
    in->flags[id] = 0;
    in->ival[id] = 0;
    if (schd_parse_int(s, &iv) == 0) {
      in->flags[id] |= SCHD_STR_INT;
      in->ival[id] = iv;
    }
    if (carp_sched_well_known(s))
      in->flags[id] |= SCHD_STR_WELL_KNOWN;
    carp_map_puts(&in->map, s, (void *)(uintptr_t)(id + 1));
  }
  schd_map_put(&in->ptr, (uint64_t)(uintptr_t)s, id);
  return id;
}
