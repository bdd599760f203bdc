/* Private parts of the disruption module, shared by its files:
 *
 *   analyze.c     from the caches alone: each NodePool's budgets, the
 *                 NodeClaims that may be disrupted voluntarily (with their
 *                 price, pods and disruption cost) and why others may not;
 *   drift.c       why a NodeClaim has drifted, if it has;
 *   simulate.c    the consolidation question - can these candidates' pods
 *                 go elsewhere, with no new node or one cheaper one? -
 *                 answered by the scheduler;
 *   room.c        a cheap proof, before a solve, that the answer is no;
 *   methods.c     emptiness, drift, multi-node and single-node
 *                 consolidation, and Balanced's score;
 *   execute.c     carrying a command out: replacement first, then taint and
 *                 delete, or roll back;
 *   disruption.c  the controller: poll, validation, metrics, events;
 *   expiration.c  the nodeclaim.expiration controller;
 *   conditions.c  the nodeclaim.disruption controller (Consolidatable,
 *                 Drifted, status.lastPodEventTime). */
#ifndef CARP_DISRUPTION_INT_H
#define CARP_DISRUPTION_INT_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/cluster.h"
#include "carpenter/controller.h"
#include "carpenter/disruption.h"
#include "carpenter/map.h"
#include "carpenter/nodepool.h"
#include "carpenter/provider.h"

/* One NodePool's nodes and budgets. */
struct dis_pool {
  const struct carp_nodepool *np; /* borrowed from the cache */
  int64_t nodes;                  /* initialized NodeClaims of the pool */
  int64_t disrupting; /* of those: deleting, marked, NotReady or no Node */
  /* What the budgets allow per reason (CARP_BUDGET_UNLIMITED), and that
   * less what is already disrupting, floored at 0. */
  int64_t budget[CARP_DISRUPT_NREASONS];
  int64_t allowed[CARP_DISRUPT_NREASONS];
  size_t empty;   /* empty consolidation candidates */
  size_t cands;   /* consolidation candidates */
  size_t drifted; /* drifted candidates */
  /* Balanced: the pool's price and disruption over its initialized nodes
   * with a known price. */
  double cost;
  double disruption;
};

/* A NodeClaim eligible for voluntary disruption. */
struct dis_cand {
  const struct carp_nodeclaim *nc; /* borrowed */
  const struct carp_node *node;    /* borrowed */
  size_t pool;                     /* index into pools */
  int empty;                       /* no pod to reschedule */
  size_t npods;                    /* pods to reschedule */
  double price;                    /* its offering's; < 0 when unknown */
  double cost;                     /* Karpenter's disruption cost */
  double disruption;               /* 1 + sum of positive eviction costs */
  /* Which methods may take it: consolidation (its pool consolidates and
   * the node has been quiet for consolidateAfter) and drift (Drifted=True,
   * since drifted_ms). */
  int consolidatable;
  int drifted;
  int64_t drifted_ms;
};

/* A NodeClaim that is not a candidate, and why (for Unconsolidatable). */
struct dis_blocked {
  const struct carp_nodeclaim *nc;
  const struct carp_node *node;
  const char *why; /* a static string, or one in why_buf */
  char why_buf[256];
};

struct dis_analysis {
  struct dis_pool *pools;
  size_t npools;
  struct dis_cand *cands; /* by disruption cost, cheapest first */
  size_t ncands;
  struct dis_blocked *blocked; /* consolidatable in time but blocked */
  size_t nblocked;
  /* When the next NodeClaim that could be a consolidation candidate has
   * been quiet for its pool's consolidateAfter; 0: none is waiting. */
  int64_t next_quiet_ms;
};

/* Whether a NodeClaim is Carpenter's (a ProxmoxNodeClass). */
int carp__dis_managed(const struct carp_nodeclaim *nc);
/* Since when the NodeClaim's node has seen no pod come or go: the latest
 * of the node's last pod event, the Initialized transition,
 * status.lastPodEventTime and active_since_ms. */
int64_t carp__dis_since(const struct carp_cluster *c,
                        const struct carp_nodeclaim *nc,
                        const struct carp_node *node, int64_t active_since_ms);
/* Why a NodeClaim cannot be disrupted voluntarily now, or NULL when it
 * can. Leaves emptiness and time aside. why_buf (256 bytes) holds
 * messages that name an object. */
const char *carp__dis_blocked(const struct carp_cluster *c,
                              const struct carp_nodeclaim *nc,
                              const struct carp_node *node,
                              const struct carp_nodepool *np, int64_t now_ms,
                              size_t *reschedulable, char *why_buf);
/* Why a launched NodeClaim has drifted (a condition reason), or NULL when
 * it has not; provider may be NULL (its reasons are then not asked). */
const char *carp__dis_drift_reason(const struct carp_cluster *c,
                                   struct carp_provider *provider,
                                   const struct carp_nodeclaim *nc,
                                   const struct carp_nodepool *np);
/* Queues the NodeClaims of every host whose provider state (maintenance,
 * offline, ready) changed since the last call, and returns how many; last
 * holds the states seen (a carp_map, empty at first), freed by
 * carp__dis_hosts_free. */
size_t carp__dis_hosts_poll(struct carp_controller *c, struct carp_map *last);
/* How many times drift was worked out, since the start (tests). */
size_t carp__dis_drift_checks(void);
void carp__dis_hosts_free(struct carp_map *last);
/* Karpenter's eviction cost of a pod: 1 + deletion cost / 2^27 + priority
 * / 2^25, within [-10, 10]. */
double carp__dis_eviction_cost(const struct carp_pod *p);
/* Karpenter's disruption cost of a node: the eviction costs of its pods
 * times the share of its expireAfter left (static deprovisioning orders
 * by it too). */
double carp__dis_disruption_cost(const struct carp_cluster *c,
                                 const struct carp_nodeclaim *nc,
                                 const struct carp_node *node, int64_t now_ms);
/* Budgets and candidates at now_ms. provider (may be NULL) prices the
 * candidates from their instance-type, zone and capacity-type labels.
 * Borrowed pointers: valid until the caches next change. */
void carp__dis_analyze(const struct carp_cluster *c,
                       struct carp_provider *provider, int64_t now_ms,
                       int64_t active_since_ms, struct dis_analysis *out);
void carp__dis_analysis_free(struct dis_analysis *a);
/* The pool index of a NodePool name in a, or (size_t)-1. */
size_t carp__dis_pool_index(const struct dis_analysis *a, const char *name);

/* ---- the simulation (simulate.c) ---- */

struct dis_sim;

enum dis_decision {
  DIS_NONE = 0,
  DIS_DELETE,
  DIS_REPLACE,
};

/* A replacement NodeClaim, ready to create. */
struct dis_replacement {
  char *nodepool;
  char *body; /* the NodeClaim's JSON with the name "__NAME__" */
  struct carp_resources capacity; /* its largest option */
  double price;                   /* its cheapest option */
  char *types;                    /* its options, comma-separated */
  /* A static NodePool's drift: one NodeClaim of this body for each
   * candidate, standing in for it (the pool counts the replacement, not
   * the candidate) from its launch on; the candidates' pods are not
   * simulated again once they are up. */
  int in_place;
};

/* Where the simulation put one moved pod. */
struct dis_move {
  const char *pod_uid; /* borrowed from the cache */
  const char *node;    /* borrowed; NULL: the replacement */
};

struct dis_plan {
  enum dis_decision decision;
  struct dis_replacement repl; /* DIS_REPLACE */
  /* Drift only: the further replacements its pods need (Karpenter's drift
   * launches as many as the simulation asks for). */
  struct dis_replacement *more;
  size_t nmore;
  struct dis_move *moves; /* DIS_DELETE, DIS_REPLACE: every pod */
  size_t nmoves;
  char why[256]; /* DIS_NONE: the reason */
};

/* The round's simulation base: the cluster as the scheduler sees it, with
 * every candidate's pods ready to be moved. */
int carp__dis_sim_new(const struct carp_cluster *c,
                      struct carp_provider *provider,
                      const struct dis_analysis *a, struct dis_sim **out);
void carp__dis_sim_free(struct dis_sim *s);
/* Can the candidates idx[0..n) go: their pods onto the rest of the
 * cluster (DIS_DELETE), or with one new NodeClaim priced below theirs
 * together (DIS_REPLACE, when allow_replace)? */
void carp__dis_sim_run(struct dis_sim *s, const size_t *idx, size_t n,
                       int allow_replace, struct dis_plan *out);
/* Multi-node replacements also leave out every option at or above the
 * price of a candidate of the same instance type: deleting all but that
 * candidate would do as well with fewer pods moved (Karpenter's
 * filterOutSameInstanceType). */
void carp__dis_sim_run_multi(struct dis_sim *s, const size_t *idx, size_t n,
                             struct dis_plan *out);
/* Whether the candidates' pods have room on the rest of the cluster plus
 * at most one new NodeClaim, whatever it costs. */
int carp__dis_sim_fits(struct dis_sim *s, const size_t *idx, size_t n);
/* Drift: the candidates' pods onto the rest of the cluster, or with as many
 * new NodeClaims of any price as they need (DIS_REPLACE: repl, then more). */
void carp__dis_sim_run_any(struct dis_sim *s, const size_t *idx, size_t n,
                           struct dis_plan *out);
void carp__dis_plan_cleanup(struct dis_plan *p);
void carp__dis_replacement_cleanup(struct dis_replacement *r);
void carp__dis_replacements_free(struct dis_replacement *v, size_t n);

/* ---- the room bound (room.c) ---- */

struct dis_room;
struct carp_sched_problem;

/* The bound's view of a solve's base problem, whose first ncand_pods pods
 * are the candidates'. p must outlive it. */
struct dis_room *carp__dis_room_new(const struct carp_sched_problem *p,
                                    size_t ncand_pods);
void carp__dis_room_free(struct dis_room *r);
/* What the room bound proves about the candidates idx[0..n) (their pods
 * the pod_start/pod_count ranges of the problem's pods, their nodes
 * flagged in removed), from cpu, memory and pod count alone. */
enum dis_room_verdict {
  DIS_ROOM_MAYBE = 0, /* nothing: a solve must tell */
  DIS_ROOM_NO_DELETE, /* some pods need a new node */
  DIS_ROOM_TOO_BIG,   /* ... and no one instance type holds them */
  DIS_ROOM_TOO_DEAR,  /* ... and only types priced at or above below_price
                       * (> 0; 0: any price will do) */
};
enum dis_room_verdict
carp__dis_room_judge(struct dis_room *r, const uint8_t *removed,
                     const size_t *pod_start, const size_t *pod_count,
                     const size_t *idx, size_t n, double below_price);
/* On by default; tests turn it off to compare with the solves alone. */
void carp__dis_room_enable(int on);
/* How many runs the bound answered without a solve, since the start. */
size_t carp__dis_sim_bounded(void);

/* ---- the methods (methods.c) ---- */

enum dis_method {
  DIS_EMPTY = 0,
  DIS_DRIFT,
  DIS_MULTI,
  DIS_SINGLE,
};

struct dis_command {
  enum dis_method method;
  enum carp_disruption_reason reason;
  size_t *cands; /* indices into the analysis */
  size_t ncands;
  struct dis_plan plan;
  double savings; /* price of the candidates less the replacement's */
  double score;   /* Balanced: -1 when not scored */
};

/* Why candidates that were tried could not go, one per NodeClaim:
 * Unconsolidatable reasons, or (drift set) why a drifted node waits. */
struct dis_note {
  const struct carp_nodeclaim *nc;
  const struct carp_node *node;
  char why[256];
  double score;     /* a move Balanced rejected: its score; else -1 */
  const char *pool; /* its NodePool */
  int drift;        /* a drifted node that cannot be replaced now */
};

struct dis_notes {
  struct dis_note *v;
  size_t n, cap;
};

/* The first method, in Karpenter's order, that finds something to do.
 * Returns 1 with *cmd filled, or 0; notes gets why candidates that were
 * tried could not be consolidated. */
int carp__dis_decide(const struct carp_cluster *c,
                     struct carp_provider *provider,
                     const struct dis_analysis *a, struct dis_command *cmd,
                     struct dis_notes *notes);
void carp__dis_command_cleanup(struct dis_command *cmd);
void carp__dis_notes_free(struct dis_notes *n);
/* Balanced's score of moving these candidates: (savings / pool cost) /
 * (their disruption / pool disruption), over the pools involved. */
double carp__dis_balanced_score(const struct dis_analysis *a, const size_t *idx,
                                size_t n, double savings);
const char *carp__dis_method_name(enum dis_method m);

#endif
