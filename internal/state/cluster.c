/* cluster.c: the informers, their indexes and the lookups every
 * controller shares (see include/carpenter/cluster.h). Bookkeeping that
 * the caches cannot show lives in book.c. */
#include "state_int.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/capacitybuffer.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/nodeoverlay.h"

static const char *pod_node(const struct carp_objmeta *m)
{
  return ((const struct carp_pod *)m)->node_name;
}

static const char *node_provider(const struct carp_objmeta *m)
{
  return ((const struct carp_node *)m)->provider_id;
}

static const char *claim_provider(const struct carp_objmeta *m)
{
  return ((const struct carp_nodeclaim *)m)->status.provider_id;
}

static const char *claim_pool(const struct carp_objmeta *m)
{
  return carp_nodeclaim_nodepool((const struct carp_nodeclaim *)m);
}

static const char *va_node(const struct carp_objmeta *m)
{
  const char *n = ((const struct carp_volumeattachment *)m)->node_name;
  return n && *n ? n : NULL;
}

static int add(struct carp_cluster *c, const struct carp_kind *kind,
               struct carp_informer **slot)
{
  struct carp_informer_options o;
  int rc;
  if (c->nall == sizeof(c->all) / sizeof(c->all[0]))
    return CARP_ETOOBIG; /* all[] is too small for the informers added */
  memset(&o, 0, sizeof(o));
  o.kind = kind;
  /* CapacityBuffers are Cluster Autoscaler's API, NodeOverlays an alpha
   * Karpenter one: a cluster may not have their CRDs, and Carpenter runs
   * without them then (an API not served counts as synced and empty). */
  o.optional =
      kind == &carp_kind_capacitybuffer || kind == &carp_kind_nodeoverlay;
  rc = carp_informer_new(c->loop, c->kube, &o, slot);
  if (!rc)
    c->all[c->nall++] = *slot;
  return rc;
}

int carp_cluster_new(uv_loop_t *loop, struct carp_kube *kube,
                     struct carp_metrics *metrics, struct carp_cluster **out)
{
  struct carp_cluster *c;
  int rc;
  if (!loop || !kube || !out)
    return CARP_EINVAL;
  c = CARP_NEW(struct carp_cluster);
  c->loop = loop;
  c->kube = kube;
  if ((rc = add(c, &carp_kind_pod, &c->pods)) ||
      (rc = add(c, &carp_kind_node, &c->nodes)) ||
      (rc = add(c, &carp_kind_nodeclaim, &c->nodeclaims)) ||
      (rc = add(c, &carp_kind_nodepool, &c->nodepools)) ||
      (rc = add(c, &carp_kind_proxmoxnodeclass, &c->nodeclasses)) ||
      (rc = add(c, &carp_kind_pdb, &c->pdbs)) ||
      (rc = add(c, &carp_kind_daemonset, &c->daemonsets)) ||
      (rc = add(c, &carp_kind_volumeattachment, &c->volumeattachments)) ||
      (rc = add(c, &carp_kind_pvc, &c->pvcs)) ||
      (rc = add(c, &carp_kind_capacitybuffer, &c->capacitybuffers)) ||
      (rc = add(c, &carp_kind_nodeoverlay, &c->nodeoverlays))) {
    carp_cluster_close(c, NULL, NULL);
    return rc;
  }
  c->nrequired = c->nall;
  carp_informer_add_index(c->pods, pod_node);
  carp_informer_add_index(c->nodes, node_provider);
  carp_informer_add_index(c->nodeclaims, claim_provider);
  carp_informer_add_index(c->nodeclaims, claim_pool);
  carp_informer_add_index(c->volumeattachments, va_node);
  carp__cluster_book_init(c, metrics);
  *out = c;
  return 0;
}

int carp_cluster_start(struct carp_cluster *c)
{
  int i, rc;
  for (i = 0; i < c->nall; i++) {
    rc = carp_informer_start(c->all[i]);
    if (rc)
      return rc;
  }
  return 0;
}

int carp_cluster_synced(const struct carp_cluster *c)
{
  int i;
  for (i = 0; i < c->nrequired; i++)
    if (!carp_informer_synced(c->all[i]))
      return 0;
  return c->nrequired > 0;
}

struct closing {
  struct carp_cluster *c;
  int left;
  void (*cb)(void *arg);
  void *arg;
};

static void on_informer_closed(void *arg)
{
  struct closing *cl = arg;
  if (--cl->left > 0)
    return;
  carp__cluster_book_free(cl->c);
  carp_free(cl->c);
  if (cl->cb)
    cl->cb(cl->arg);
  carp_free(cl);
}

void carp_cluster_close(struct carp_cluster *c, void (*cb)(void *arg),
                        void *arg)
{
  struct closing *cl;
  int i;
  if (!c)
    return;
  cl = CARP_NEW(struct closing);
  cl->c = c;
  cl->cb = cb;
  cl->arg = arg;
  cl->left = c->nall + 1;
  for (i = 0; i < c->nall; i++)
    carp_informer_close(c->all[i], on_informer_closed, cl);
  on_informer_closed(cl);
}

static struct carp_objmeta *get(struct carp_informer *inf, const char *key)
{
  return key && inf ? carp_store_get(carp_informer_store(inf), key) : NULL;
}

static struct carp_objmeta *by_index(struct carp_informer *inf, int idx,
                                     const char *value)
{
  size_t n;
  struct carp_objmeta *const *v;
  if (!value || !inf)
    return NULL;
  v = carp_store_by_index(carp_informer_store(inf), idx, value, &n);
  return n ? v[0] : NULL;
}

const struct carp_node *carp_cluster_node(const struct carp_cluster *c,
                                          const char *name)
{
  return (const struct carp_node *)get(c->nodes, name);
}

const struct carp_node *
carp_cluster_node_by_provider(const struct carp_cluster *c,
                              const char *provider_id)
{
  return (const struct carp_node *)by_index(c->nodes, CARP_IDX_NODE_PROVIDER,
                                            provider_id);
}

const struct carp_nodeclaim *
carp_cluster_nodeclaim(const struct carp_cluster *c, const char *name)
{
  return (const struct carp_nodeclaim *)get(c->nodeclaims, name);
}

const struct carp_nodeclaim *
carp_cluster_nodeclaim_by_provider(const struct carp_cluster *c,
                                   const char *provider_id)
{
  return (const struct carp_nodeclaim *)by_index(
      c->nodeclaims, CARP_IDX_CLAIM_PROVIDER, provider_id);
}

const struct carp_nodeclaim *
carp_cluster_nodeclaim_of_node(const struct carp_cluster *c,
                               const struct carp_node *node)
{
  return node ? carp_cluster_nodeclaim_by_provider(c, node->provider_id) : NULL;
}

const struct carp_node *
carp_cluster_node_of_nodeclaim(const struct carp_cluster *c,
                               const struct carp_nodeclaim *nc)
{
  return nc ? carp_cluster_node_by_provider(c, nc->status.provider_id) : NULL;
}

const struct carp_nodepool *carp_cluster_nodepool(const struct carp_cluster *c,
                                                  const char *name)
{
  return (const struct carp_nodepool *)get(c->nodepools, name);
}

const struct carp_nodeclass *
carp_cluster_nodeclass(const struct carp_cluster *c, const char *name)
{
  return (const struct carp_nodeclass *)get(c->nodeclasses, name);
}

struct carp_objmeta *const *
carp_cluster_pods_on_node(const struct carp_cluster *c, const char *node,
                          size_t *n)
{
  return carp_store_by_index(carp_informer_store(c->pods), CARP_IDX_POD_NODE,
                             node, n);
}

struct carp_objmeta *const *
carp_cluster_volumeattachments_on_node(const struct carp_cluster *c,
                                       const char *node, size_t *n)
{
  return carp_store_by_index(carp_informer_store(c->volumeattachments),
                             CARP_IDX_VA_NODE, node, n);
}

const struct carp_pvc *carp_cluster_pvc(const struct carp_cluster *c,
                                        const char *namespace, const char *name)
{
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", namespace ? namespace : "", name);
  return (const struct carp_pvc *)get(c->pvcs, key);
}

struct carp_objmeta *const *
carp_cluster_nodeclaims_of_pool(const struct carp_cluster *c,
                                const char *nodepool, size_t *n)
{
  return carp_store_by_index(carp_informer_store(c->nodeclaims),
                             CARP_IDX_CLAIM_NODEPOOL, nodepool, n);
}

int carp_pod_is_reschedulable(const struct carp_pod *p)
{
  return !carp_pod_is_daemon(p) && !carp_pod_is_terminal(p) &&
         !p->meta.deletion_ms;
}

int carp_pod_is_provisionable(const struct carp_pod *p)
{
  return !p->node_name && !p->nominated_node && p->unschedulable &&
         !p->scheduling_gated && !p->meta.deletion_ms &&
         !carp_pod_is_terminal(p) && !carp_pod_is_daemon(p);
}
