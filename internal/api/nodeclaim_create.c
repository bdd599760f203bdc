/* nodeclaim_create.c: the body of a NodeClaim create, stamped from a
 * NodePool's template the way Karpenter's NodeClaimTemplate.ToNodeClaim
 * does it: labels, annotations (with the pool's template hash),
 * ownerReference, the termination finalizer, and the spec. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/duration.h"
#include "carpenter/error.h"
#include "carpenter/nodepool.h"

struct kvlist {
  struct carp_kv *kv;
  size_t n;
};

/* Adds or replaces (later wins). Strings are borrowed. */
static void kv_put(struct kvlist *l, const char *key, const char *value)
{
  size_t i;
  for (i = 0; i < l->n; i++) {
    if (!strcmp(l->kv[i].key, key)) {
      l->kv[i].value = value;
      return;
    }
  }
  l->kv = carp_reallocarray(l->kv, l->n + 1, sizeof(*l->kv));
  l->kv[l->n].key = key;
  l->kv[l->n].value = value;
  l->n++;
}

static void kv_put_set(struct kvlist *l, const struct carp_kvset *s)
{
  uint32_t i;
  for (i = 0; s && i < s->n; i++)
    kv_put(l, s->kv[i].key, s->kv[i].value);
}

static void kv_write(struct carp_jw *w, const char *field,
                     const struct kvlist *l)
{
  size_t i;
  carp_jw_key(w, field);
  carp_jw_obj(w);
  for (i = 0; i < l->n; i++)
    carp_jw_kstr(w, l->kv[i].key, l->kv[i].value ? l->kv[i].value : "");
  carp_jw_obj_end(w);
}

int carp_nodeclaim_encode_create(const struct carp_nodeclaim_create *in,
                                 struct carp_buf *out)
{
  const struct carp_nodepool *np = in->pool;
  const struct carp_claim_spec *t;
  struct kvlist labels = {NULL, 0}, anns = {NULL, 0};
  struct carp_jw w;
  char nc_label[512], d[CARP_DURATION_LEN];
  size_t i, has_pool_req = 0;
  int rc;

  if (!np || !np->meta.name || !*np->meta.name || !np->meta.uid ||
      !*np->meta.uid)
    return CARP_EINVAL;
  t = &np->tmpl;

  kv_put_set(&labels, np->labels);
  for (i = 0; i < in->nlabels; i++)
    kv_put(&labels, in->labels[i].key, in->labels[i].value);
  kv_put(&labels, CARP_LABEL_NODEPOOL_KEY, np->meta.name);
  /* Karpenter's NodeClassLabelKey: <group>/<lower-case kind>. */
  if (*t->node_class_ref.group && *t->node_class_ref.kind) {
    size_t k, n;
    snprintf(nc_label, sizeof(nc_label), "%s/%s", t->node_class_ref.group,
             t->node_class_ref.kind);
    n = strlen(t->node_class_ref.group) + 1;
    for (k = n; nc_label[k]; k++)
      nc_label[k] = (char)tolower((unsigned char)nc_label[k]);
    kv_put(&labels, nc_label, t->node_class_ref.name);
  }
  kv_put_set(&anns, np->annotations);
  for (i = 0; i < in->nannotations; i++)
    kv_put(&anns, in->annotations[i].key, in->annotations[i].value);
  kv_put(&anns, CARP_ANN_NODEPOOL_HASH, np->hash);
  kv_put(&anns, CARP_ANN_NODEPOOL_HASH_VER, CARP_NODEPOOL_HASH_VERSION);

  carp_jw_init(&w, out);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion",
               CARP_KARPENTER_GROUP "/" CARP_KARPENTER_VERSION);
  carp_jw_kstr(&w, "kind", "NodeClaim");
  carp_jw_key(&w, "metadata");
  carp_jw_obj(&w);
  if (in->name && *in->name) {
    carp_jw_kstr(&w, "name", in->name);
  } else {
    struct carp_buf g;
    carp_buf_init(&g, CARP_BUF_UNLIMITED);
    carp_buf_printf(&g, "%s-", np->meta.name);
    carp_jw_kstr(&w, "generateName", carp_buf_cstr(&g));
    carp_buf_free(&g);
  }
  kv_write(&w, "labels", &labels);
  kv_write(&w, "annotations", &anns);
  carp_jw_key(&w, "ownerReferences");
  carp_jw_arr(&w);
  carp_jw_obj(&w);
  carp_jw_kstr(&w, "apiVersion",
               CARP_KARPENTER_GROUP "/" CARP_KARPENTER_VERSION);
  carp_jw_kstr(&w, "kind", "NodePool");
  carp_jw_kstr(&w, "name", np->meta.name);
  carp_jw_kstr(&w, "uid", np->meta.uid);
  carp_jw_kbool(&w, "blockOwnerDeletion", 1);
  carp_jw_obj_end(&w);
  carp_jw_arr_end(&w);
  carp_jw_key(&w, "finalizers");
  carp_jw_arr(&w);
  carp_jw_str(&w, CARP_FINALIZER_TERMINATION);
  carp_jw_arr_end(&w);
  carp_jw_obj_end(&w); /* metadata */

  carp_jw_key(&w, "spec");
  carp_jw_obj(&w);
  carp_jw_key(&w, "nodeClassRef");
  carp_nodeclass_ref_encode(&w, &t->node_class_ref);
  for (i = 0; i < in->nrequirements; i++)
    if (!strcmp(in->requirements[i].key, CARP_LABEL_NODEPOOL_KEY))
      has_pool_req = 1;
  carp_jw_key(&w, "requirements");
  carp_jw_arr(&w);
  for (i = 0; i < in->nrequirements; i++)
    carp_requirement_encode(&w, &in->requirements[i]);
  if (!has_pool_req) {
    struct carp_requirement pool_req;
    const char *pool_value = np->meta.name;
    memset(&pool_req, 0, sizeof(pool_req));
    pool_req.key = CARP_LABEL_NODEPOOL_KEY;
    pool_req.op = CARP_OP_IN;
    pool_req.nvalues = 1;
    pool_req.values = &pool_value;
    carp_requirement_encode(&w, &pool_req);
  }
  carp_jw_arr_end(&w);
  carp_jw_key(&w, "resources");
  carp_jw_obj(&w);
  if (in->requests) {
    carp_jw_key(&w, "requests");
    carp_resources_encode(&w, in->requests, NULL);
  }
  carp_jw_obj_end(&w);
  if (t->ntaints) {
    carp_jw_key(&w, "taints");
    carp_taints_encode(&w, t->taints, t->ntaints);
  }
  if (t->nstartup_taints) {
    carp_jw_key(&w, "startupTaints");
    carp_taints_encode(&w, t->startup_taints, t->nstartup_taints);
  }
  carp_duration_format(t->expire_after_ms, d);
  carp_jw_kstr(&w, "expireAfter", d);
  if (t->termination_grace_ms != CARP_DURATION_NEVER) {
    carp_duration_format(t->termination_grace_ms, d);
    carp_jw_kstr(&w, "terminationGracePeriod", d);
  }
  carp_jw_obj_end(&w); /* spec */
  carp_jw_obj_end(&w);
  rc = carp_jw_finish(&w);
  carp_free(labels.kv);
  carp_free(anns.kv);
  return rc ? CARP_EINVAL : 0;
}
