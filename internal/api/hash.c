/* hash.c: spec hashes for drift. FNV-1a 64 over a canonical JSON form;
 * the NodePool template hash with Karpenter's semantics (sets sorted,
 * empty values left out, requirements excluded, only spec.template
 * counts); comparing a NodeClaim's stamp with its pool's hash; and the
 * merge patch that writes a hash and its version.
 *
 * The hash cannot equal Karpenter's (Go's hashstructure over Go structs),
 * so Carpenter writes its own version value (CARP_NODEPOOL_HASH_VERSION);
 * a NodeClaim stamped by Karpenter ("v3") is re-stamped rather than
 * drifted, which is what Karpenter itself does when the version changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/nodepool.h"
#include "carpenter/spechash.h"

uint64_t carp_fnv1a64(uint64_t h, const void *data, size_t len)
{
  const unsigned char *p = data;
  size_t i;
  for (i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

void carp_hash_format(uint64_t h, char out[CARP_HASH_LEN])
{
  snprintf(out, CARP_HASH_LEN, "%llu", (unsigned long long)h);
}

int carp_hash_annotations_patch(const char *hash_key, const char *hash,
                                const char *version_key, const char *version,
                                struct carp_buf *out)
{
  struct carp_jw w;
  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  carp_jw_key(&w, "annotations");
  carp_jw_obj(&w);
  carp_jw_kstr(&w, hash_key, hash);
  carp_jw_kstr(&w, version_key, version);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  return carp_jw_finish(&w);
}

/* ---- the NodePool template hash ---- */

static int cmp_taint(const void *a, const void *b)
{
  const struct carp_taint *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  if (c)
    return c;
  c = strcmp(x->value ? x->value : "", y->value ? y->value : "");
  if (c)
    return c;
  return (int)x->effect - (int)y->effect;
}

static void kvset(struct carp_jw *w, const char *key,
                  const struct carp_kvset *s)
{
  uint32_t i;
  if (!s || !s->n)
    return;
  carp_jw_key(w, key);
  carp_jw_obj(w);
  for (i = 0; i < s->n; i++) /* sorted by key already */
    carp_jw_kstr(w, s->kv[i].key, s->kv[i].value);
  carp_jw_obj_end(w);
}

static void taint_set(struct carp_jw *w, const char *key,
                      const struct carp_taint *t, uint32_t n)
{
  struct carp_taint *sorted;
  if (!n)
    return;
  sorted = carp_calloc(n, sizeof(*sorted));
  memcpy(sorted, t, n * sizeof(*t));
  qsort(sorted, n, sizeof(*sorted), cmp_taint);
  carp_jw_key(w, key);
  carp_taints_encode(w, sorted, n);
  carp_free(sorted);
}

void carp_nodepool_hash(const struct carp_nodepool *np, char out[CARP_HASH_LEN])
{
  struct carp_buf b;
  struct carp_jw w;
  char d[CARP_DURATION_LEN];
  const struct carp_claim_spec *s = &np->tmpl;

  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  /* Keys in sorted order; empty values left out. */
  carp_jw_obj(&w);
  kvset(&w, "annotations", np->annotations);
  carp_duration_format(s->expire_after_ms, d);
  carp_jw_kstr(&w, "expireAfter", d);
  kvset(&w, "labels", np->labels);
  if (*s->node_class_ref.group || *s->node_class_ref.kind ||
      *s->node_class_ref.name) {
    carp_jw_key(&w, "nodeClassRef");
    carp_nodeclass_ref_encode(&w, &s->node_class_ref);
  }
  taint_set(&w, "startupTaints", s->startup_taints, s->nstartup_taints);
  taint_set(&w, "taints", s->taints, s->ntaints);
  if (s->termination_grace_ms != CARP_DURATION_NEVER) {
    carp_duration_format(s->termination_grace_ms, d);
    carp_jw_kstr(&w, "terminationGracePeriod", d);
  }
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
  carp_hash_format(carp_fnv1a64(CARP_FNV1A64_BASIS, b.ptr, b.len), out);
  carp_buf_free(&b);
}

enum carp_hash_check carp_nodepool_hash_check(const struct carp_nodepool *np,
                                              const struct carp_nodeclaim *nc)
{
  const char *ver =
      carp_kvset_get(nc->meta.annotations, CARP_ANN_NODEPOOL_HASH_VER);
  const char *hash =
      carp_kvset_get(nc->meta.annotations, CARP_ANN_NODEPOOL_HASH);
  if (!ver || strcmp(ver, CARP_NODEPOOL_HASH_VERSION))
    return CARP_HASH_RESTAMP;
  if (!hash || !*hash)
    return CARP_HASH_MATCH; /* nothing to compare: never drifted */
  return strcmp(hash, np->hash) ? CARP_HASH_DRIFTED : CARP_HASH_MATCH;
}

int carp_nodepool_hash_stale(const struct carp_nodepool *np)
{
  const char *ver =
      carp_kvset_get(np->meta.annotations, CARP_ANN_NODEPOOL_HASH_VER);
  const char *hash =
      carp_kvset_get(np->meta.annotations, CARP_ANN_NODEPOOL_HASH);
  return !ver || !hash || strcmp(ver, CARP_NODEPOOL_HASH_VERSION) ||
         strcmp(hash, np->hash);
}
