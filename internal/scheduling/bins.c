/* bins.c: the places a pod can go.
 *
 * A bin is an existing Node, an in-flight NodeClaim, or a NodeClaim this
 * solve opens. Bins are numbered in the order pods try them: initialized
 * nodes, other nodes, in-flight claims, then new claims as they open, so a
 * first-fit scan is a scan of increasing bin numbers. Many bitsets are
 * indexed by bin (open bins, a group's rejected bins, a hostname topology
 * group's occupied bins, the bins settled in each domain); they are
 * registered here and grow together when bins outgrow them. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "schd_int.h"

void schd_breg(struct schd_solver *s, uint64_t **bs)
{
  *bs = carp_calloc(s->bwords ? s->bwords : 1, sizeof(uint64_t));
  SCHD_GROW(s->breg, s->nbreg, s->capbreg);
  s->breg[s->nbreg++] = bs;
}

static void grow_bitsets(struct schd_solver *s)
{
  size_t nw = s->bwords ? s->bwords * 2 : 4;
  for (uint32_t i = 0; i < s->nbreg; i++) {
    uint64_t **p = s->breg[i];
    *p = carp_reallocarray(*p, nw, sizeof(uint64_t));
    memset(*p + s->bwords, 0, (nw - s->bwords) * sizeof(uint64_t));
  }
  for (uint32_t i = 0; i < s->ntgs; i++) {
    struct schd_tg *t = &s->tgs[i];
    if (t->hostname && t->cnt) {
      t->cnt = carp_reallocarray(t->cnt, nw * 64, sizeof(int32_t));
      memset(t->cnt + s->bwords * 64, 0,
             (nw - s->bwords) * 64 * sizeof(int32_t));
    }
  }
  s->bwords = nw;
}

uint32_t schd_bin_new(struct schd_solver *s, uint8_t kind)
{
  struct schd_bin *b;
  uint32_t bi;
  if (s->nbins >= s->bwords * 64)
    grow_bitsets(s);
  SCHD_GROW(s->bins, s->nbins, s->capbins);
  bi = s->nbins++;
  b = &s->bins[bi];
  memset(b, 0, sizeof(*b));
  b->kind = kind;
  b->pool = -1;
  b->node = SCHD_NONE;
  b->used = schd_zalloc(&s->arena, s->R * sizeof(int64_t));
  if (s->topo_ready) {
    b->dom = schd_alloc(&s->arena, (s->ndkeys + 1) * sizeof(int32_t));
    for (uint32_t k = 0; k < s->ndkeys; k++)
      b->dom[k] = -3;
  }
  return bi;
}

void schd_bin_discard(struct schd_solver *s, uint32_t bi)
{
  struct schd_bin *b = &s->bins[bi];
  for (uint32_t i = 0; i < s->nbreg; i++)
    bs_clr(*s->breg[i], bi);
  for (uint32_t i = 0; i < s->ntgs; i++)
    if (s->tgs[i].hostname && s->tgs[i].cnt)
      s->tgs[i].cnt[bi] = 0;
  carp_free(b->ports);
  memset(b, 0, sizeof(*b));
  s->nbins--;
}

int schd_bin_full(const struct schd_solver *s, const struct schd_bin *b)
{
  const uint32_t R = s->R;
  for (uint32_t r = 0; r < R; r++) {
    int64_t avail = 0;
    if (s->minreq[r] <= 0)
      continue;
    if (b->kind != BIN_CLAIM) {
      avail = b->alloc[r] - b->used[r];
    } else {
      const struct schd_pool *pool = &s->pools[b->pool];
      const uint32_t *order = pool->order[r];
      /* the largest option in this dimension */
      for (uint32_t i = pool->ntypes; i > 0; i--)
        if (bs_get(b->opts, order[i - 1])) {
          avail = pool->cap[(size_t)order[i - 1] * R + r] - b->used[r];
          break;
        }
    }
    if (avail < s->minreq[r])
      return 1;
  }
  return 0;
}

void schd_bins_free(struct schd_solver *s)
{
  for (uint32_t i = 0; i < s->nbins; i++)
    carp_free(s->bins[i].ports);
  carp_free(s->bins);
  for (uint32_t i = 0; i < s->nbreg; i++)
    carp_free(*s->breg[i]);
  carp_free(s->breg);
  s->bins = NULL;
  s->breg = NULL;
  s->nbins = s->nbreg = 0;
}

static int has_label(const struct carp_sched_node *n, const char *key)
{
  for (size_t i = 0; i < n->nlabels; i++)
    if (n->labels[i].key && strcmp(n->labels[i].key, key) == 0)
      return 1;
  return 0;
}

static int has_taint(const struct carp_sched_node *n, const char *key)
{
  for (size_t i = 0; i < n->ntaints; i++)
    if (n->taints[i].key && strcmp(n->taints[i].key, key) == 0)
      return 1;
  return 0;
}

static int node_rank(const struct carp_sched_node *n)
{
  if (!n->in_flight && n->initialized)
    return 0;
  if (!n->in_flight)
    return 1;
  return 2;
}

int schd_bins_setup(struct schd_solver *s)
{
  const struct carp_sched_problem *p = s->p;
  const uint32_t R = s->R;
  s->node_bin = schd_alloc(&s->arena, (p->nnodes + 1) * sizeof(uint32_t));
  schd_breg(s, &s->open);
  schd_breg(s, &s->bscr);
  schd_breg(s, &s->bscr2);
  for (int rank = 0; rank < 3; rank++) {
    for (size_t i = 0; i < p->nnodes; i++) {
      const struct carp_sched_node *n = &p->nodes[i];
      const struct carp_sched_nodepool *np = NULL;
      struct schd_bin *b;
      uint32_t bi;
      if (node_rank(n) != rank)
        continue;
      if (!n->name)
        return CARP_EINVAL;
      bi = schd_bin_new(s, n->in_flight ? BIN_INFLIGHT : BIN_NODE);
      b = &s->bins[bi];
      b->node = (uint32_t)i;
      s->node_bin[i] = bi;
      if (n->nodepool) {
        for (uint32_t pi = 0; pi < s->npools; pi++)
          if (strcmp(p->nodepools[s->pools[pi].idx].name, n->nodepool) == 0) {
            b->pool = (int32_t)pi;
            np = &p->nodepools[s->pools[pi].idx];
            break;
          }
      }
      schd_rbuild_reset(&s->rb);
      for (size_t k = 0; k < n->nlabels; k++) {
        if (!n->labels[k].key)
          return CARP_EINVAL;
        schd_rbuild_label(&s->rc, &s->rb,
                          schd_intern(&s->rc.in, n->labels[k].key),
                          schd_intern(&s->rc.in, n->labels[k].value));
      }
      for (size_t k = 0; k < n->nrequirements; k++) {
        int rc = schd_rbuild_public(&s->rc, &s->rb, &n->requirements[k]);
        if (rc < 0)
          return rc;
      }
      if (!has_label(n, CARP_LABEL_HOSTNAME))
        schd_rbuild_label(&s->rc, &s->rb, s->rc.k_hostname,
                          schd_intern(&s->rc.in, n->name));
      b->rset = schd_rbuild_intern(&s->rc, &s->rb);
      /* The kubelet's and the node lifecycle controller's taints go away
       * by themselves on a node Carpenter launched, initialized or not
       * (a real cluster keeps not-ready for a monitor period after the
       * node is Ready): a pod headed there is not given another node. */
      b->taintset = schd_taintset(
          s, n->taints, n->ntaints, np ? np->startup_taints : NULL,
          np && !n->initialized ? np->nstartup_taints : 0,
          !n->initialized || n->nodepool);
      b->alloc = schd_zalloc(&s->arena, R * sizeof(int64_t));
      schd_vec_add(s, b->alloc, n->allocatable, n->nallocatable, 1);
      schd_vec_add(s, b->used, n->requested, n->nrequested, 1);
      if (n->nhost_ports) {
        struct schd_port *pp;
        uint32_t npp;
        schd_ports_from_public(s, n->host_ports, n->nhost_ports, &pp, &npp);
        schd_bin_add_ports(b, pp, npp);
      }
      if (!n->deleting && !has_taint(n, CARP_TAINT_DISRUPTED))
        bs_set(s->open, bi);
    }
  }
  return 0;
}
