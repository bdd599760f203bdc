/* Private parts of the simulate module, shared by its files:
 *
 *   tree.c      parser events (JSON or YAML) into yajl trees kept in
 *               reusable memory, handed over in batches as each item of
 *               a List (or each document) is complete;
 *   pipe.c      the parser on a thread of its own, the decoding on the
 *               caller's, batches between them;
 *   readjson.c  JSON text into tree events (its own parser: speed);
 *   readyaml.c  YAML text (libyaml's event parser) into tree events;
 *   snapshot.c  files into the cluster caches: kinds, checks, decoding,
 *               --nodepool overrides, the offline provider's zones;
 *   run.c       the provisioning and consolidation simulations;
 *   report.c    the result as text and as JSON. */
#ifndef CARP_SIM_INT_H
#define CARP_SIM_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>
#include <yajl/yajl_tree.h>

#include "carpenter/api_types.h"
#include "carpenter/arena.h"
#include "carpenter/cluster.h"
#include "carpenter/jtree.h"
#include "carpenter/provider.h"
#include "carpenter/simulate.h"

/* ---- tree.c ---- */

#define SIM_MAX_DEPTH 100
#define SIM_NO_ITEM   ((size_t)-1)

/* Where a value came from, for messages. */
struct sim_where {
  const char *file;
  size_t doc;  /* 1-based document of the file */
  size_t item; /* 0-based item of the document's List, or SIM_NO_ITEM */
  size_t line; /* 1-based line where it starts; 0 when unknown */
};

/* A complete value: an item of a List, or a whole document (doc; its
 * List items, if any, came before it). */
struct sim_value {
  yajl_val v;
  struct sim_where w;
  int doc;
  int had_items; /* doc: it had a top-level "items" array */
};

/* Complete values and the memory they live in. */
struct sim_batch {
  struct carp_arena mem;
  struct sim_value *v;
  size_t n, cap;
  struct sim_batch *next; /* in a queue */
};

struct sim_batch *sim_batch_new(void);
void sim_batch_reset(struct sim_batch *b);
void sim_batch_free(struct sim_batch *b);

/* Where full batches go, and where empty ones come from. sink returns
 * non-zero to stop the parse (the caller keeps its own message); the
 * batch is the sink's from then on. */
struct sim_sink {
  int (*take)(struct sim_batch *b, void *arg);
  struct sim_batch *(*fresh)(void *arg);
  void *arg;
};

/* Parser events into trees (carp_jtree), each item of a document's
 * top-level "items" array and each document handed over on its own. */
struct sim_tree {
  struct carp_jtree jt;
  struct sim_batch *items; /* items of the List being built */
  struct sim_batch *doc;   /* the document itself */
  int in_items;            /* inside the document's top-level "items" array */
  int had_items;           /* the document had one */
  struct sim_where where;
  size_t line; /* where the reader is now (YAML); 0 when unknown */
  struct sim_sink sink;
  char err[256]; /* the tree's own errors (depth) */
};

void sim_tree_init(struct sim_tree *t, const char *file,
                   const struct sim_sink *sink);
/* Hands over the items still held (the text ended inside a List). */
int sim_tree_finish(struct sim_tree *t);
void sim_tree_free(struct sim_tree *t);
/* Events. Each returns 0, CARP_EPARSE (t->err says why) or the sink's
 * non-zero result. number is the literal text; string and key any bytes. */
int sim_tree_null(struct sim_tree *t);
int sim_tree_bool(struct sim_tree *t, int value);
int sim_tree_number(struct sim_tree *t, const char *s, size_t len);
int sim_tree_string(struct sim_tree *t, const char *s, size_t len);
int sim_tree_key(struct sim_tree *t, const char *s, size_t len);
int sim_tree_start_map(struct sim_tree *t);
int sim_tree_start_array(struct sim_tree *t);
int sim_tree_end(struct sim_tree *t);

/* ---- pipe.c ---- */

/* Parses a whole file (JSON when json, else YAML) and gives each complete
 * value to fn, in order, from the calling thread. Large files are parsed
 * on a second thread while fn decodes on this one. Returns 0, fn's
 * non-zero result (fn keeps its message), or CARP_EPARSE with
 * "file:line:col: problem" in err. */
typedef int (*sim_value_fn)(const struct sim_value *v, void *arg);
int sim_parse(const char *file, const char *text, size_t len, int json,
              sim_value_fn fn, void *arg, char *err, size_t errsz);

/* ---- readjson.c, readyaml.c ---- */

/* Feeds a whole file (text, len bytes) to t. JSON: one or more values one
 * after the other; YAML: one or more documents. On a syntax error returns
 * CARP_EPARSE with "file:line:col: problem" in err; a callback's non-zero
 * result is returned as it is. */
int sim_read_json(struct sim_tree *t, const char *text, size_t len, char *err,
                  size_t errsz);
int sim_read_yaml(struct sim_tree *t, const char *text, size_t len, char *err,
                  size_t errsz);

/* ---- the simulation ---- */

/* A new NodeClaim the provisioner would create. */
struct sim_claim {
  const char *nodepool;
  char **types; /* its instance-type options, cheapest first */
  size_t ntypes;
  double price; /* of the cheapest */
  char **zones; /* where the cheapest can go */
  size_t nzones;
  struct carp_resources requests; /* pods + DaemonSet overhead */
  const struct carp_pod **pods;
  size_t npods;
};

/* A pending pod placed on existing capacity. */
struct sim_placed {
  const struct carp_pod *pod;
  const char *target;
  int in_flight; /* a NodeClaim without a Node */
};

struct sim_refusal {
  char *nodepool;
  char *reason; /* carp_sched_reason_name */
  char *detail;
  char *message;
};

struct sim_unplaced {
  const struct carp_pod *pod;
  char *message;
  struct sim_refusal *refusals;
  size_t nrefusals;
};

enum sim_action {
  SIM_KEEP = 0,
  SIM_DELETE,
  SIM_REPLACE,
};

/* One NodeClaim (or unmanaged Node) and what consolidation does with it. */
struct sim_node {
  const char *nodeclaim; /* NULL: a Node without a NodeClaim */
  const char *node;      /* NULL: no Node yet */
  const char *nodepool;
  const char *instance_type;
  const char *zone;
  double price; /* < 0: unknown */
  size_t pods;  /* pods that would have to move */
  enum sim_action action;
  char why[320];
};

/* One NodeClaim a replace command would launch. */
struct sim_repl {
  char *pool;
  char **types; /* its options, cheapest first */
  size_t ntypes;
  double price; /* of its cheapest option */
};

struct carp_simulation {
  uv_loop_t loop;
  struct carp_kube *kube;
  struct carp_cluster *cluster;
  struct carp_provider *provider;
  char **files;
  size_t nfiles;
  size_t counts[7]; /* objects per cache, in cluster->all order */
  char **warnings;  /* things the reader assumed */
  size_t nwarnings;
  int64_t now_ms;
  int ran;
  /* provisioning */
  size_t pending;
  struct sim_claim *claims;
  size_t nclaims;
  struct sim_placed *placed;
  size_t nplaced;
  struct sim_unplaced *unplaced;
  size_t nunplaced;
  /* consolidation */
  const char *method; /* NULL: no command */
  const char *reason; /* Empty, Underutilized */
  enum sim_action decision;
  char decision_why[320];
  /* SIM_REPLACE: every NodeClaim launched (drift launches as many as its
   * pods need; consolidation one). */
  struct sim_repl *repls;
  size_t nrepls;
  double savings;
  struct sim_node *nodes;
  size_t nnodes;
  double price_before, price_after;
  /* CPU-bound phases, wall milliseconds. */
  uint64_t load_ms, provisioning_ms, consolidation_ms;
};

void sim_warn(struct carp_simulation *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int sim_run_provisioning(struct carp_simulation *s);
int sim_run_consolidation(struct carp_simulation *s);

#endif
