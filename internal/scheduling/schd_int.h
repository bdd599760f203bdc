/* Internal declarations shared by the scheduling module's files.
 *
 * The solve works on integers: every label key and value is interned to a
 * uint32 id, requirement sets are interned to ids too (so "is this pod
 * compatible with that claim" becomes a memoised lookup on two ids), and
 * instance-type candidates, bins and domains are bitsets. Strings only come
 * back when the result is written. See docs/scheduling.md for the design. */
#ifndef CARP_SCHED_INT_H
#define CARP_SCHED_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "carpenter/buf.h"
#include "carpenter/map.h"
#include "carpenter/scheduling.h"

#define SCHD_NONE UINT32_MAX

/* ---- arena.c: bump allocation, integer hash map, hashing ---------- */

struct schd_chunk;

/* Memory that lives as long as one solve (or one requirement set). */
struct schd_arena {
  struct schd_chunk *head;
  char *cur;
  size_t left;
  size_t bytes; /* total allocated in chunks */
};

void schd_arena_init(struct schd_arena *a);
void schd_arena_free(struct schd_arena *a);
void *schd_alloc(struct schd_arena *a, size_t n); /* 16-byte aligned */
void *schd_zalloc(struct schd_arena *a, size_t n);
char *schd_strdup(struct schd_arena *a, const char *s);
void *schd_memdup(struct schd_arena *a, const void *p, size_t n);

/* uint64 -> uint64 open-addressing map. UINT64_MAX marks empty slots and
 * is stored as UINT64_MAX - 1: maps keyed by hashes check equality anyway,
 * and maps keyed by ids never reach it. */
struct schd_map {
  uint64_t *keys;
  uint64_t *vals;
  size_t cap;
  size_t len;
};

void schd_map_init(struct schd_map *m);
void schd_map_free(struct schd_map *m);
int schd_map_get(const struct schd_map *m, uint64_t key, uint64_t *val);
void schd_map_put(struct schd_map *m, uint64_t key, uint64_t val);
size_t schd_map_bytes(const struct schd_map *m);

uint64_t schd_mix(uint64_t h, uint64_t v);
uint64_t schd_hash_str(uint64_t h, const char *s); /* NULL hashes as "" */
uint64_t schd_hash_bytes(uint64_t h, const void *p, size_t n);

/* Growable arrays: SCHD_GROW(p, n, cap) makes room for one more. */
#define SCHD_GROW(p, n, cap)                                                   \
  do {                                                                         \
    if ((n) >= (cap)) {                                                        \
      (cap) = (cap) ? (cap)*2 : 8;                                             \
      (p) = carp_reallocarray((p), (cap), sizeof(*(p)));                       \
    }                                                                          \
  } while (0)

/* ---- bitsets ------------------------------------------------------ */

#define SCHD_WORDS(n) (((size_t)(n) + 63) / 64)

static inline void bs_set(uint64_t *w, size_t i)
{
  w[i >> 6] |= (uint64_t)1 << (i & 63);
}
static inline void bs_clr(uint64_t *w, size_t i)
{
  w[i >> 6] &= ~((uint64_t)1 << (i & 63));
}
static inline int bs_get(const uint64_t *w, size_t i)
{
  return (int)((w[i >> 6] >> (i & 63)) & 1);
}
static inline int bs_any(const uint64_t *w, size_t nw)
{
  for (size_t i = 0; i < nw; i++)
    if (w[i])
      return 1;
  return 0;
}
static inline size_t bs_count(const uint64_t *w, size_t nw)
{
  size_t c = 0;
  for (size_t i = 0; i < nw; i++)
    c += (size_t)__builtin_popcountll(w[i]);
  return c;
}
/* Next set bit at or after i, or SIZE_MAX. */
static inline size_t bs_next(const uint64_t *w, size_t nw, size_t i)
{
  size_t wi = i >> 6;
  uint64_t v;
  if (wi >= nw)
    return SIZE_MAX;
  v = w[wi] & (~(uint64_t)0 << (i & 63));
  for (;;) {
    if (v)
      return (wi << 6) + (size_t)__builtin_ctzll(v);
    if (++wi >= nw)
      return SIZE_MAX;
    v = w[wi];
  }
}

/* ---- intern.c: strings to ids ------------------------------------- */

enum {
  SCHD_STR_INT = 1,        /* parses as a base-10 int64 */
  SCHD_STR_WELL_KNOWN = 2, /* a well-known label key */
};

struct schd_intern {
  struct carp_map map; /* string -> id + 1 */
  struct schd_map ptr; /* pointer -> id, a cache in front of map */
  const char **str;    /* id -> string (borrowed) */
  int64_t *ival;       /* id -> integer value when SCHD_STR_INT */
  uint8_t *flags;      /* id -> SCHD_STR_* */
  uint32_t n, cap;
};

void schd_intern_init(struct schd_intern *in);
void schd_intern_free(struct schd_intern *in);
/* The string must outlive the table (it is borrowed). NULL is "". */
uint32_t schd_intern(struct schd_intern *in, const char *s);
/* SCHD_NONE when absent. */
uint32_t schd_intern_find(const struct schd_intern *in, const char *s);
/* strconv.ParseInt(s, 10, 64): 0 on success. */
int schd_parse_int(const char *s, int64_t *v);

/* ---- requirements.c: the algebra on ids --------------------------- */

/* The set of label states a key may take. Non-complement: one of vals.
 * Complement: any value not in vals and, with bounds, an integer strictly
 * between gt and lt. missing: the label may also be absent. */
struct schd_req {
  uint32_t key;
  uint32_t nvals;
  const uint32_t *vals; /* sorted, distinct */
  int64_t gt, lt;       /* exclusive bounds when has_gt / has_lt */
  int32_t min_values;
  uint8_t complement, missing, has_gt, has_lt;
};

struct schd_rset {
  uint64_t hash;
  uint32_t n;
  uint8_t has_min_values;
  const struct schd_req *reqs; /* sorted by key */
};

/* A builder: requirements being intersected, sorted by key. */
struct schd_rbuild {
  struct schd_req *r;
  uint32_t n, cap;
};

struct schd_rctx {
  struct schd_intern in;
  struct schd_arena arena;
  const struct schd_rset **sets; /* id -> set; id 0 is the empty set */
  uint32_t *chain;               /* id -> next id with the same hash */
  uint32_t nsets, capsets;
  struct schd_map byhash;  /* hash -> first id */
  struct schd_map memo;    /* (node, pod, lenient) -> result */
  struct schd_map memo_ix; /* (a, b) -> intersection */
  struct schd_rbuild tmp;
  uint32_t *vtmp;
  size_t capvtmp;
  /* well-known ids */
  uint32_t k_hostname, k_zone, k_ct, k_itype, k_nodepool, k_cpu, k_mem;
  uint32_t v_new_host; /* the hostname of a claim not launched yet */
};

void schd_rctx_init(struct schd_rctx *c);
void schd_rctx_free(struct schd_rctx *c);

void schd_rbuild_init(struct schd_rbuild *b);
void schd_rbuild_free(struct schd_rbuild *b);
void schd_rbuild_reset(struct schd_rbuild *b);
/* Intersect one requirement into b. CARP_EINVAL on malformed input. */
int schd_rbuild_public(struct schd_rctx *c, struct schd_rbuild *b,
                       const struct carp_sched_requirement *req);
void schd_rbuild_label(struct schd_rctx *c, struct schd_rbuild *b, uint32_t key,
                       uint32_t value);
void schd_rbuild_req(struct schd_rctx *c, struct schd_rbuild *b,
                     const struct schd_req *r);
void schd_rbuild_set(struct schd_rctx *c, struct schd_rbuild *b, uint32_t set);
uint32_t schd_rbuild_intern(struct schd_rctx *c, struct schd_rbuild *b);

static inline const struct schd_rset *schd_rset(const struct schd_rctx *c,
                                                uint32_t id)
{
  return c->sets[id];
}
const struct schd_req *schd_rset_get(const struct schd_rset *s, uint32_t key);
int schd_req_empty(const struct schd_req *r);
/* value SCHD_NONE: the label is absent. */
int schd_req_allows(const struct schd_rctx *c, const struct schd_req *r,
                    uint32_t value);
void schd_req_intersect(struct schd_rctx *c, const struct schd_req *a,
                        const struct schd_req *b, struct schd_req *out);
int schd_rset_compatible(const struct schd_rctx *c, uint32_t node, uint32_t pod,
                         int lenient, uint32_t *badkey);
/* schd_rset_intersects, not looking at keys skip1 and skip2. */
int schd_rset_intersects_but(const struct schd_rctx *c, uint32_t a, uint32_t b,
                             uint32_t skip1, uint32_t skip2, uint32_t *badkey);
int schd_rset_intersects(const struct schd_rctx *c, uint32_t a, uint32_t b,
                         uint32_t *badkey);
uint32_t schd_rset_intersect(struct schd_rctx *c, uint32_t a, uint32_t b);
/* Compatible(node, pod) then node ∩ pod, memoised: the new set's id, or
 * SCHD_NONE and *badkey. */
uint32_t schd_rset_add(struct schd_rctx *c, uint32_t node, uint32_t pod,
                       int lenient, uint32_t *badkey);
/* Do exact node labels (a set made only of labels) satisfy pod? */
int schd_rset_empty(const struct schd_rctx *c, uint32_t id);
/* Writes the canonical text of one requirement. */
void schd_req_format(const struct schd_rctx *c, const struct schd_req *r,
                     struct carp_buf *b);

/* ---- resources ---------------------------------------------------- */

enum {
  SCHD_DIM_CPU = 0,
  SCHD_DIM_MEMORY,
  SCHD_DIM_PODS,
  SCHD_DIM_STORAGE,
  SCHD_FIXED_DIMS,
};

/* ---- the solver --------------------------------------------------- */

struct schd_offering {
  uint32_t zone, ct;
  double price;
};

struct schd_type {
  uint32_t name;
  uint32_t rset;
  int64_t *alloc;            /* [R] */
  int64_t *cap;              /* [R] capacity, for limits */
  struct schd_offering *off; /* available offerings only */
  uint32_t noff;
  double base_price; /* cheapest available offering; INFINITY if none */
};

struct schd_taintset {
  struct carp_sched_taint *t;
  uint32_t n;
  uint32_t next; /* next set with the same hash */
};

struct schd_port {
  uint16_t port;
  uint8_t proto;
  uint32_t ip; /* interned; SCHD_NONE = every address */
};

struct schd_pool {
  uint32_t idx; /* index in problem.nodepools */
  uint32_t name;
  uint32_t tmpl; /* template requirements */
  uint32_t taintset;
  uint32_t ntypes;
  uint64_t *types;    /* bitset over types usable by this pool */
  uint64_t *listed;   /* the pool's types, offerings available or not */
  int64_t *cap;       /* [ntypes_total * R]: allocatable - daemon overhead */
  int64_t *daemon;    /* [ntypes_total * R]: daemon overhead */
  uint32_t **order;   /* per dim: pool types by cap ascending */
  uint32_t *by_size;  /* pool types, largest first */
  uint32_t *by_price; /* pool types, cheapest base price first */
  int64_t *remaining; /* [R + 1] (last: nodes); INT64_MAX unlimited */
  uint8_t limited;
  struct schd_port *dports; /* DaemonSet host ports */
  uint32_t ndports;
  uint64_t **reach;       /* per domain key: domains its types can reach */
  struct schd_map compat; /* rset -> type bitset (arena) */
};

/* A domain key: a topology key other than hostname. Its domains are fixed
 * at setup (existing nodes plus what the NodePools can launch). */
struct schd_dkey {
  uint32_t key;
  uint32_t ndom, capdom;
  uint32_t *vals;       /* domain -> value id */
  struct schd_map idx;  /* value id -> domain */
  size_t dwords;        /* words of a domain bitset */
  uint64_t **bins_in;   /* per domain: bins settled in it */
  uint64_t *unres;      /* bins that may still pick among domains */
  struct schd_map poss; /* rset -> domain bitset (arena) */
  struct schd_map xset; /* one-word domain bitset -> "key In" rset */
};

enum {
  TG_SPREAD = 0,
  TG_AFFINITY,
  TG_ANTI,
  TG_INVERSE, /* counts the placements of pods owning an anti-affinity */
};

/* A topology group: one count per domain of pods its selector matches. */
struct schd_tg {
  uint8_t type;
  uint8_t hostname; /* domains are bins */
  uint8_t all_ns;
  int32_t dkey; /* -1 for hostname */
  uint32_t key;
  int32_t max_skew, min_domains;
  uint32_t filter; /* spread node filter rset; SCHD_NONE: none */
  const struct carp_sched_selector *sel;
  uint32_t *ns;
  uint32_t nns;
  uint64_t hash;
  int32_t *cnt; /* per domain, or per bin when hostname */
  int64_t total;
  uint32_t next;   /* next TG with the same hash */
  uint64_t *occ;   /* hostname: bins with count > 0 */
  uint64_t *atmax; /* hostname spread: bins with count >= max_skew */
  uint64_t *over;  /* hostname spread: bins with count > max_skew */
  uint64_t *owned; /* hostname spread: bins hosting one of its owners */
};

enum {
  OWN_REQUIRED = 0,
  OWN_SCHEDULE_ANYWAY,
  OWN_PREF_AFFINITY,
  OWN_PREF_ANTI,
};

struct schd_owned {
  uint32_t tg;
  uint8_t cls;
  uint8_t active;
  uint8_t self; /* the TG's selector matches the owner */
  int32_t weight;
  uint32_t order; /* position within its class, for relaxation */
};

/* One topology rule a group must respect on this attempt. */
struct schd_rule {
  uint32_t tg;
  uint8_t type; /* TG_* (TG_INVERSE: another pod's anti-affinity) */
  uint8_t self; /* the TG's selector matches the group */
};

/* Why a NodePool refused a group; the text is written at the end. */
struct schd_refusal {
  uint8_t reason;  /* CARP_SCHED_REASON_* */
  uint32_t detail; /* interned key, dimension (RESOURCES, LIMIT) or port */
  uint32_t a, b;   /* TAINT: taint set and index; RESOURCES and
                      INSTANCE_TYPE: a = 1 when a type that fits has no
                      available offering */
};

struct schd_group {
  uint32_t rep;   /* representative pod */
  uint32_t *pods; /* in queue order */
  uint32_t npods, next;
  int64_t *req; /* [R] */
  uint32_t ns;
  /* relaxation state */
  uint32_t pref_dropped, req_dropped, sa_dropped, paff_dropped, panti_dropped;
  uint8_t tol_pns;
  uint32_t *pref_order; /* preferred node terms, heaviest first */
  uint32_t rset;        /* current requirements */
  uint32_t strict;      /* without preferences: the pod's domains */
  struct schd_owned *own;
  uint32_t nown;
  uint32_t *sel_by, nsel_by;   /* forward TGs that select the group */
  uint32_t *inv_by, ninv_by;   /* inverse TGs that select it */
  uint32_t *inv_own, ninv_own; /* inverse TGs it owns */
  struct schd_rule *rules;     /* active rules: owned + inverse */
  uint32_t nrules;
  uint64_t **allow; /* per rule on a domain key: allowed domains */
  uint8_t *sig;     /* grouping signature */
  size_t nsig;
  uint32_t sig_labels_end; /* the signature past this ignores labels */
  uint32_t next_same;      /* next group with the same signature hash */
  struct schd_port *ports;
  uint32_t nports;
  uint8_t inert, batch, done;
  uint8_t bad;              /* malformed requirement: never placed */
  uint64_t *rej;            /* bins that can never take it (bin bitset) */
  uint8_t *taint_ok;        /* per taintset: 0 unknown, 1 yes, 2 no */
  struct schd_refusal *ref; /* per pool */
  uint8_t *ref_set;
  int64_t sort_cpu, sort_mem, sort_created;
  int sort_extended; /* requests an extended resource (a GPU, say) */
  const char *sort_uid;
};

enum {
  BIN_NODE = 0,
  BIN_INFLIGHT,
  BIN_CLAIM,
};

struct schd_bin {
  uint8_t kind;
  uint8_t phase2; /* opened while packing free pods */
  int32_t pool;   /* sched pool index, -1 when unmanaged */
  uint32_t node;  /* problem node index for NODE / INFLIGHT */
  uint32_t rset;
  uint32_t taintset;
  uint32_t npods;
  int64_t *used;    /* [R] */
  int64_t *alloc;   /* [R] nodes only */
  uint64_t *opts;   /* claims: candidate types */
  uint32_t *thr;    /* claims: per dim, position in pool order */
  int32_t *dom;     /* per dkey: domain, -1 unsettled, -2 absent */
  int64_t *reserve; /* claims of limited pools: [R + 1] */
  struct schd_port *ports;
  uint32_t nports, capports;
};

struct schd_solver {
  const struct carp_sched_problem *p;
  struct schd_rctx rc;
  struct schd_arena arena;
  /* resource dimensions */
  uint32_t R;
  const char **dim_names;
  /* instance types */
  struct schd_type *types;
  uint32_t ntypes;
  size_t twords;
  /* pools, in try order */
  struct schd_pool *pools;
  uint32_t npools;
  uint32_t *pool_of; /* problem pool index -> sched pool */
  /* taint sets */
  struct schd_taintset *tsets;
  uint32_t ntsets, captsets;
  struct schd_map tset_by_hash;
  /* topology */
  struct schd_dkey *dkeys;
  uint32_t ndkeys;
  struct schd_tg *tgs;
  uint32_t ntgs, captgs;
  struct schd_map tg_by_hash;
  struct schd_map tgidx; /* first matchLabel pair -> chain head + 1 */
  uint32_t *tgchain, *tgalways, *tgcand;
  uint32_t ntgalways;
  struct schd_map sel_memo; /* selector-relevant label keys */
  const char *selc_ptr[64]; /* cache: label key pointer -> in sel_memo */
  uint8_t selc_val[64];
  uint32_t *sel_keys;
  uint32_t nsel_keys, capsel_keys;
  /* groups */
  struct schd_group *groups;
  uint32_t ngroups;
  uint32_t *pod_group; /* pod -> group */
  /* bins */
  struct schd_bin *bins;
  uint32_t nbins, capbins;
  size_t bwords;    /* capacity of every bin bitset, in words */
  uint64_t ***breg; /* registered bin bitsets, resized together */
  uint32_t nbreg, capbreg;
  uint64_t *open;     /* bins that may still take a pod */
  uint32_t *assign;   /* pod -> bin or SCHD_NONE */
  const char **ezone; /* pod -> effective zone (zones.c), borrowed */
  uint32_t *node_bin; /* problem node -> bin */
  uint8_t topo_ready;
  uint64_t *bscr, *bscr2; /* bin-sized scratch */
  int64_t *minreq;        /* [R] smallest request of any group */
  uint32_t nnew;          /* claims opened */
  /* scratch */
  uint64_t *scr, *scr2, *scr_lim;
  int64_t *vtmp;
  uint32_t *thrtmp;
  uint64_t *dtmp, *dtmp2; /* domain bitsets */
  size_t dtmp_words;
  struct schd_rbuild rb;
  struct carp_sched_stats stats;
};

/* resources.c */
int schd_dims_setup(struct schd_solver *s);
int schd_dim(const struct schd_solver *s, const char *name);
void schd_vec_add(const struct schd_solver *s, int64_t *v,
                  const struct carp_sched_quantity *q, size_t n, int sign);
/* Largest k <= kmax with used + k * req <= cap in every dimension. */
int64_t schd_fit_count(const struct schd_solver *s, const int64_t *used,
                       const int64_t *req, const int64_t *cap, int64_t kmax);
/* Options of a claim after its usage grows to used: clears in out (a copy
 * of opts) every type that no longer fits; thr is advanced in newthr. */
void schd_opts_shrink(const struct schd_solver *s, const struct schd_pool *pool,
                      const uint32_t *thr, const int64_t *used, uint64_t *out,
                      uint32_t *newthr);

/* instancetypes.c */
int schd_types_setup(struct schd_solver *s);
int schd_pools_setup(struct schd_solver *s);
/* Types of pool compatible with rset (requirements and an offering). */
const uint64_t *schd_pool_compat(struct schd_solver *s, struct schd_pool *pool,
                                 uint32_t rset);
/* Cheapest offering of type t that rset allows; INFINITY if none. */
double schd_type_price(const struct schd_solver *s, uint32_t t, uint32_t rset);
/* Does every min_values requirement of rset still hold over opts? On
 * failure *badkey is the key. */
int schd_min_values_ok(struct schd_solver *s, uint32_t rset,
                       const uint64_t *opts, uint32_t *badkey);
/* Limits: recompute a claim's reservation after its options changed. */
void schd_claim_reserve(struct schd_solver *s, struct schd_bin *b);

/* taints.c */
uint32_t schd_taintset(struct schd_solver *s, const struct carp_sched_taint *t,
                       size_t n, const struct carp_sched_taint *ignore,
                       size_t nignore, int ignore_ephemeral);
int schd_group_tolerates(struct schd_solver *s, struct schd_group *g,
                         uint32_t taintset, uint32_t *bad);

/* hostports.c */
void schd_ports_from_public(struct schd_solver *s,
                            const struct carp_sched_host_port *hp, size_t n,
                            struct schd_port **out, uint32_t *nout);
int schd_ports_conflict(const struct schd_port *a, uint32_t na,
                        const struct schd_port *b, uint32_t nb, uint32_t *port);
void schd_bin_add_ports(struct schd_bin *b, const struct schd_port *p,
                        uint32_t n);

/* topology.c */
int schd_topology_setup(struct schd_solver *s);
/* zones.c: s->ezone, from the groups as applied before the first pass. */
void schd_effective_zones(struct schd_solver *s);
uint32_t schd_tg_get(struct schd_solver *s, uint8_t type, uint32_t key,
                     int32_t max_skew, int32_t min_domains, uint32_t filter,
                     const struct carp_sched_selector *sel, uint32_t podns,
                     const struct carp_sched_pod_term *term);
/* The index of topology groups by their selector's first label, and the
 * groups that may select a pod with these labels (into s->tgcand). */
void schd_tg_index_build(struct schd_solver *s);
void schd_tg_index_free(struct schd_solver *s);
size_t schd_tg_candidates(struct schd_solver *s,
                          const struct carp_sched_label *labels,
                          size_t nlabels);
int schd_tg_selects(const struct schd_solver *s, const struct schd_tg *tg,
                    uint32_t ns, const struct carp_sched_label *labels,
                    size_t nlabels);
/* Domains a bin may still settle in for a key (bitset, dkey->dwords). */
const uint64_t *schd_bin_possible(struct schd_solver *s,
                                  const struct schd_bin *b, uint32_t dk,
                                  uint32_t rset);
void schd_bin_settle(struct schd_solver *s, uint32_t bi);
/* Records n pods of group g (or a bound pod) placed on bin bi. */
void schd_record(struct schd_solver *s, struct schd_group *g, uint32_t bi,
                 uint32_t n);
void schd_record_bound(struct schd_solver *s,
                       const struct carp_sched_bound_pod *bp, uint32_t bi);
/* Domains allowed for g by one topology group (dkey TGs only). */
void schd_tg_allowed(struct schd_solver *s, struct schd_group *g,
                     const struct schd_tg *tg, uint8_t self, uint64_t *out);
/* Domains for a key allowed by rset: mode 0 a pod's (absent key: every
 * domain), 1 an existing node's, 2 + pool a claim's of that pool. */
const uint64_t *schd_domains(struct schd_solver *s, uint32_t dk, uint32_t rset,
                             uint32_t mode);
/* The set "key In [domains]" as an interned requirement set. */
uint32_t schd_domain_rset(struct schd_solver *s, uint32_t dk,
                          const uint64_t *doms);

/* affinity.c: the per-bin topology check. Narrows *rset (claims) and
 * returns 1, or 0 with the failing reason/key and whether the refusal can
 * never change (monotone). */
int schd_topology_check(struct schd_solver *s, struct schd_group *g,
                        uint32_t bi, uint32_t *rset, uint8_t *reason,
                        uint32_t *key, int *monotone);
/* Computes g's allowed domains for this attempt (before a scan). */
void schd_topology_prepare(struct schd_solver *s, struct schd_group *g);
/* AND-s into mask the bins g's topology rules may allow. */
void schd_topology_mask(struct schd_solver *s, struct schd_group *g,
                        uint64_t *mask, size_t nw);

/* groups.c */
int schd_groups_setup(struct schd_solver *s);
/* Recomputes g's requirements and owned rules from its relaxation state. */
int schd_group_apply(struct schd_solver *s, struct schd_group *g);
/* One relaxation step; 0 when nothing is left to relax. */
int schd_group_relax(struct schd_solver *s, struct schd_group *g);

/* bins.c */
uint32_t schd_bin_new(struct schd_solver *s, uint8_t kind);
/* Removes the last bin (a claim that could not take its first pod). */
void schd_bin_discard(struct schd_solver *s, uint32_t bi);
/* 1 when the bin cannot take even the smallest pod of the batch. */
int schd_bin_full(const struct schd_solver *s, const struct schd_bin *b);
void schd_bins_free(struct schd_solver *s);
void schd_breg(struct schd_solver *s, uint64_t **bs);
int schd_bins_setup(struct schd_solver *s);

/* solve.c */
/* Tries to place up to kmax pods of g on bin bi; returns how many. On 0,
 * *monotone says the bin can never take g. */
struct schd_fail {
  uint8_t reason;  /* CARP_SCHED_REASON_* */
  uint32_t detail; /* interned id, dimension (RESOURCES/LIMIT) or port */
  int monotone;    /* the bin can never take the group */
};
uint32_t schd_try_place(struct schd_solver *s, struct schd_group *g,
                        uint32_t bi, uint32_t kmax, struct schd_fail *f);
void schd_reject(struct schd_solver *s, struct schd_group *g, uint32_t bi);
/* Opens a claim for g from the first NodePool that can take it and places
 * at least one pod; the bin, or SCHD_NONE with refusals recorded. */
uint32_t schd_open_claim(struct schd_solver *s, struct schd_group *g,
                         uint32_t kmax);
void schd_refuse(struct schd_solver *s, struct schd_group *g, uint32_t pool,
                 uint8_t reason, uint32_t detail, uint32_t a, uint32_t b);

/* pack.c: packs the inert groups (no topology ties) with balance. */
void schd_pack_inert(struct schd_solver *s, uint32_t *groups, uint32_t n);

/* result.c */
int schd_result_build(struct schd_solver *s, struct carp_sched_result *r);

#endif
