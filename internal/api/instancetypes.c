/* instancetypes.c: the instance types a ProxmoxNodeClass offers - the
 * family x size grid plus the custom types, named
 * "<family>.<vCPU>VCPU-<GiB>GB" - with their prices from the class's
 * price model, and the capacity and eviction thresholds of a VM of one
 * type (what the provider reports and the scheduler fits pods against).
 * Pure functions of the decoded spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/nodeclass.h"

#define GiB (1024LL * 1024 * 1024)

void carp_instance_type_name(const char *family, int32_t cpu, int64_t memory,
                             char out[96])
{
  char gib[48];
  int64_t whole = memory / GiB, rest = memory % GiB;
  size_t n;
  int digits = 0;
  n = (size_t)snprintf(gib, sizeof(gib), "%lld", (long long)whole);
  if (rest) {
    gib[n++] = '.';
    while (rest && digits < 12 && n + 1 < sizeof(gib)) {
      rest *= 10;
      gib[n++] = (char)('0' + rest / GiB);
      rest %= GiB;
      digits++;
    }
    gib[n] = '\0';
  }
  snprintf(out, 96, "%s.%dVCPU-%sGB", family, (int)cpu, gib);
}

static int64_t price_of(const struct carp_nodeclass_spec *spec, int32_t cpu,
                        int64_t memory, uint32_t devices)
{
  __int128 p = (__int128)cpu * spec->price_per_cpu_nano;
  uint32_t i;
  p += ((__int128)memory * spec->price_per_gib_nano + GiB / 2) / GiB;
  for (i = 0; i < spec->ndevices; i++)
    if (devices & (1u << i))
      p += (__int128)spec->devices[i].price_nano * spec->devices[i].count;
  return p > INT64_MAX ? INT64_MAX : (int64_t)p;
}

static int has_name(const struct carp_instance_type *types, size_t n,
                    const char *name)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (!strcmp(types[i].name, name))
      return 1;
  return 0;
}

static int cmp_int32(const void *a, const void *b)
{
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

int carp_nodeclass_instance_types(const struct carp_nodeclass_spec *spec,
                                  struct carp_instance_type **out, size_t *n)
{
  size_t cap = spec->ncustom, i, j, count = 0;
  struct carp_instance_type *t;

  for (i = 0; i < spec->nfamilies; i++)
    cap += spec->families[i].nsizes ? spec->families[i].nsizes : spec->nsizes;
  t = carp_calloc(cap ? cap : 1, sizeof(*t));
  for (i = 0; i < spec->nfamilies; i++) {
    const struct carp_instance_family *f = &spec->families[i];
    uint32_t ns = f->nsizes ? f->nsizes : spec->nsizes;
    int32_t *sizes = carp_calloc(ns ? ns : 1, sizeof(*sizes));
    memcpy(sizes, f->nsizes ? f->sizes : spec->sizes, ns * sizeof(*sizes));
    qsort(sizes, ns, sizeof(*sizes), cmp_int32);
    for (j = 0; j < ns; j++) {
      struct carp_instance_type *x = &t[count];
      __int128 mem = (__int128)sizes[j] * f->memory_per_cpu;
      if (mem > INT64_MAX)
        continue;
      memset(x, 0, sizeof(*x));
      x->cpu = sizes[j];
      x->memory = (int64_t)mem;
      snprintf(x->family, sizeof(x->family), "%s", f->name);
      carp_instance_type_name(f->name, x->cpu, x->memory, x->name);
      if (has_name(t, count, x->name))
        continue;
      x->devices = f->devices;
      x->price_nano = price_of(spec, x->cpu, x->memory, x->devices);
      x->price = (double)x->price_nano / 1e9;
      count++;
    }
    carp_free(sizes);
  }
  for (i = 0; i < spec->ncustom; i++) {
    const struct carp_custom_instance_type *c = &spec->custom[i];
    struct carp_instance_type *x = &t[count];
    if (has_name(t, count, c->name))
      continue;
    memset(x, 0, sizeof(*x));
    snprintf(x->name, sizeof(x->name), "%s", c->name);
    snprintf(x->family, sizeof(x->family), "%s", c->family);
    x->cpu = c->cpu;
    x->memory = c->memory;
    x->devices = c->devices;
    x->price_nano = c->has_price
                        ? c->price_nano
                        : price_of(spec, c->cpu, c->memory, c->devices);
    x->price = (double)x->price_nano / 1e9;
    x->custom = 1;
    count++;
  }
  *out = t;
  *n = count;
  return 0;
}

void carp_nodeclass_capacity(const struct carp_nodeclass_spec *spec,
                             const struct carp_instance_type *it,
                             int64_t template_disk,
                             struct carp_resources *capacity)
{
  uint32_t i;
  memset(capacity, 0, sizeof(*capacity));
  capacity->cpu = (int64_t)it->cpu * 1000;
  capacity->memory = (int64_t)((__int128)it->memory *
                               (10000 - spec->vm_memory_overhead) / 10000);
  capacity->ephemeral =
      spec->boot_disk_size ? spec->boot_disk_size : template_disk;
  capacity->pods = spec->max_pods;
  for (i = 0; i < spec->ndevices; i++)
    if (it->devices & (1u << i))
      carp_resources_add_extended(capacity, spec->devices[i].resource,
                                  spec->devices[i].count);
}

void carp_instance_type_gpu(const struct carp_nodeclass_spec *spec,
                            const struct carp_instance_type *it,
                            struct carp_instance_gpu *out)
{
  uint32_t i;
  memset(out, 0, sizeof(*out));
  for (i = 0; i < spec->ndevices; i++) {
    const struct carp_device_class *d = &spec->devices[i];
    if (!(it->devices & (1u << i)) || !d->gpu)
      continue;
    out->count += d->count;
    /* Validation allows one GPU class per type; the first wins else. */
    if (!out->name && !out->manufacturer && !out->memory) {
      out->name = d->gpu_name;
      out->manufacturer = d->gpu_manufacturer;
      out->memory = d->gpu_memory;
    }
  }
}

static int64_t amount(const struct carp_eviction_threshold *t, int64_t of)
{
  if (!t->set)
    return 0;
  if (t->percent)
    return (int64_t)(((__int128)of * t->value + 9999) / 10000);
  return t->value;
}

void carp_nodeclass_eviction_threshold(const struct carp_nodeclass_spec *spec,
                                       const struct carp_resources *capacity,
                                       struct carp_resources *out)
{
  memset(out, 0, sizeof(*out));
  out->memory = amount(&spec->eviction_hard[CARP_EVICT_MEMORY_AVAILABLE],
                       capacity->memory);
  out->ephemeral = amount(&spec->eviction_hard[CARP_EVICT_NODEFS_AVAILABLE],
                          capacity->ephemeral);
}

void carp_price_format(int64_t price_nano, char out[32])
{
  int64_t whole = price_nano / 1000000000LL, frac = price_nano % 1000000000LL;
  char f[16];
  size_t n;
  if (price_nano < 0) {
    snprintf(out, 32, "0");
    return;
  }
  if (!frac) {
    snprintf(out, 32, "%lld", (long long)whole);
    return;
  }
  snprintf(f, sizeof(f), "%09lld", (long long)frac);
  n = strlen(f);
  while (n > 0 && f[n - 1] == '0')
    f[--n] = '\0';
  snprintf(out, 32, "%lld.%s", (long long)whole, f);
}
