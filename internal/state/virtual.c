/* virtual.c: the virtual pods of CapacityBuffers in the cluster state -
 * the chunks each buffer keeps room for, as the CapacityBuffer controller
 * resolved them - and where the provisioner last placed them.
 *
 * Buffers are kept in key order and their pods flattened into one array
 * after every change, so the provisioner and consolidation read them in a
 * stable order without copying (the order feeds the scheduler, whose
 * answer must not depend on hashing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/capacitybuffer.h"
#include "state_int.h"

struct ventry {
  char *key; /* "namespace/name" */
  struct carp_pod **pods;
  size_t n;
  int placed;
  struct carp_virtual_placement placement;
};

struct carp_vbook {
  struct ventry **v; /* by key */
  size_t n;
  const struct carp_pod **flat;
  size_t nflat;
};

struct carp_vbook *carp__vbook_new(void)
{
  return CARP_NEW(struct carp_vbook);
}

static void entry_free(struct ventry *e)
{
  size_t i;
  for (i = 0; i < e->n; i++)
    carp_obj_unref(&e->pods[i]->meta);
  carp_free(e->pods);
  carp_free(e->key);
  carp_free(e);
}

void carp__vbook_free(struct carp_vbook *vb)
{
  size_t i;
  if (!vb)
    return;
  for (i = 0; i < vb->n; i++)
    entry_free(vb->v[i]);
  carp_free(vb->v);
  carp_free(vb->flat);
  carp_free(vb);
}

int carp_pod_is_virtual(const struct carp_pod *p)
{
  return p->meta.owner.kind && !strcmp(p->meta.owner.kind, CARP_BUFFER_KIND) &&
         p->meta.owner.api_version &&
         !strncmp(p->meta.owner.api_version, CARP_BUFFER_GROUP "/",
                  sizeof(CARP_BUFFER_GROUP));
}

void carp_cluster_virtual_owner(const struct carp_pod *p, char *out,
                                size_t size)
{
  snprintf(out, size, "%s/%s", p->meta.namespace ? p->meta.namespace : "",
           p->meta.owner.name ? p->meta.owner.name : "");
}

/* The index of key, or where it would go (*found 0). */
static size_t find(const struct carp_vbook *vb, const char *key, int *found)
{
  size_t lo = 0, hi = vb->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(vb->v[mid]->key, key);
    if (!c) {
      *found = 1;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = 0;
  return lo;
}

static void flatten(struct carp_vbook *vb)
{
  size_t i, j, total = 0;
  for (i = 0; i < vb->n; i++)
    total += vb->v[i]->n;
  carp_free(vb->flat);
  vb->flat = carp_calloc(total + 1, sizeof(*vb->flat));
  vb->nflat = 0;
  for (i = 0; i < vb->n; i++)
    for (j = 0; j < vb->v[i]->n; j++)
      vb->flat[vb->nflat++] = vb->v[i]->pods[j];
}

/* Same pods: same count and each the same UID and (interned) spec. */
static int same_pods(const struct ventry *e, struct carp_pod *const *pods,
                     size_t n)
{
  size_t i;
  if (e->n != n)
    return 0;
  for (i = 0; i < n; i++)
    if (strcmp(e->pods[i]->meta.uid, pods[i]->meta.uid) ||
        e->pods[i]->spec != pods[i]->spec ||
        e->pods[i]->meta.labels != pods[i]->meta.labels)
      return 0;
  return 1;
}

int carp_cluster_set_virtual_pods(struct carp_cluster *c, const char *buffer,
                                  struct carp_pod *const *pods, size_t n)
{
  struct carp_vbook *vb = carp__cluster_vbook(c);
  struct ventry *e;
  size_t at, i;
  int found;
  at = find(vb, buffer, &found);
  if (found ? same_pods(vb->v[at], pods, n) : !n)
    return 0;
  if (found) {
    entry_free(vb->v[at]);
    memmove(&vb->v[at], &vb->v[at + 1], (vb->n - at - 1) * sizeof(*vb->v));
    vb->n--;
  }
  if (n) {
    e = CARP_NEW(struct ventry);
    e->key = carp_strdup(buffer);
    e->pods = carp_calloc(n, sizeof(*e->pods));
    for (i = 0; i < n; i++)
      e->pods[i] = (struct carp_pod *)carp_obj_ref(&pods[i]->meta);
    e->n = n;
    vb->v = carp_reallocarray(vb->v, vb->n + 1, sizeof(*vb->v));
    memmove(&vb->v[at + 1], &vb->v[at], (vb->n - at) * sizeof(*vb->v));
    vb->v[at] = e;
    vb->n++;
  }
  flatten(vb);
  return 1;
}

const struct carp_pod *const *
carp_cluster_virtual_pods(const struct carp_cluster *c, size_t *n)
{
  const struct carp_vbook *vb = carp__cluster_vbook(c);
  *n = vb->nflat;
  return vb->flat;
}

void carp_cluster_virtual_placed(struct carp_cluster *c, const char *buffer,
                                 const struct carp_virtual_placement *p)
{
  struct carp_vbook *vb = carp__cluster_vbook(c);
  int found;
  size_t at = find(vb, buffer, &found);
  if (!found)
    return;
  vb->v[at]->placement = *p;
  vb->v[at]->placed = 1;
}

int carp_cluster_virtual_placement(const struct carp_cluster *c,
                                   const char *buffer,
                                   struct carp_virtual_placement *out)
{
  const struct carp_vbook *vb = carp__cluster_vbook(c);
  int found;
  size_t at = find(vb, buffer, &found);
  if (!found || !vb->v[at]->placed)
    return 0;
  *out = vb->v[at]->placement;
  return 1;
}
