/* Module api (internal/api). NodePool (karpenter.sh/v1, cluster-scoped): which
 * nodes may be launched for pending pods, their limits, and how they may be
 * disrupted.
 *
 * Decoding applies the CRD defaults (expireAfter 720h, consolidationPolicy
 * WhenEmptyOrUnderutilized, consolidateAfter 0s, budgets [{nodes: "10%"}])
 * so a pool behaves the same whether or not the API server defaulted it.
 * A pool that breaks a rule still decodes, with valid = 0 and the reason,
 * so the NodePool controller can report ValidationSucceeded=False; only a
 * field of the wrong JSON type fails the decode (CARP_EPARSE). Parts of an
 * invalid pool that cannot be represented (an unknown operator, say) are
 * dropped or fail closed (an unreadable budget allows 0 disruptions, an
 * unreadable limit is 0), and nothing may be launched from an invalid
 * pool anyway. */
#ifndef CARP_NODEPOOL_H
#define CARP_NODEPOOL_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/api_types.h"
#include "carpenter/buf.h"
#include "carpenter/conditions.h"
#include "carpenter/cron.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/object.h"
#include "carpenter/spechash.h"

/* NodePool condition types (besides ValidationSucceeded, in conditions.h)
 * and the reason Carpenter uses for a broken spec (Karpenter's). */
#define CARP_COND_NODECLASS_READY    "NodeClassReady"
#define CARP_COND_NODE_REG_HEALTHY   "NodeRegistrationHealthy"
#define CARP_REASON_NODEPOOL_INVALID "NodePoolValidationFailed"

/* The hash-version value Carpenter writes (see carp_nodepool_hash). It is
 * not Karpenter's "v3": a NodeClaim stamped by Karpenter is re-stamped,
 * never drifted, as Karpenter does when the version changes. */
#define CARP_NODEPOOL_HASH_VERSION "carpenter-v1"

enum carp_consolidation_policy {
  CARP_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED = 0,
  CARP_CONSOLIDATE_WHEN_EMPTY,
  CARP_CONSOLIDATE_BALANCED,
};

enum carp_disruption_reason {
  CARP_DISRUPT_UNDERUTILIZED = 0,
  CARP_DISRUPT_EMPTY,
  CARP_DISRUPT_DRIFTED,
};
#define CARP_DISRUPT_NREASONS 3

/* No active budget limits the reason. */
#define CARP_BUDGET_UNLIMITED INT32_MAX

struct carp_budget {
  const char *nodes;    /* interned, as written ("10%", "5") */
  int nodes_ok;         /* nodes matched ^((100|[0-9]{1,2})%|[0-9]+)$ */
  int percent;          /* nodes is a percentage */
  int64_t value;        /* the count, or the percentage */
  const char *schedule; /* interned; NULL: always active */
  int cron_ok;          /* schedule parsed */
  struct carp_cron cron;
  int64_t duration_ms; /* -1 when unset */
  unsigned reasons;    /* bit (1 << reason); 0: every reason */
};

/* spec.limits: a resource is limited only when listed; "nodes" is an
 * extended resource named "nodes". */
struct carp_limits {
  struct carp_resources values; /* cpu millicores, others whole units */
  unsigned present;             /* CARP_LIMIT_* bits for the core names */
};
#define CARP_LIMIT_CPU       1u
#define CARP_LIMIT_MEMORY    2u
#define CARP_LIMIT_EPHEMERAL 4u
#define CARP_LIMIT_PODS      8u

struct carp_nodepool_status {
  struct carp_resources resources; /* "nodes" is left out: see nodes */
  int64_t nodes;
  int64_t nodeclass_observed_generation; /* 0 when unset */
  struct carp_conditions conditions;
};

struct carp_nodepool {
  struct carp_objmeta meta; /* annotations: karpenter.sh/ and carpenter.dev/ */
  /* spec.template */
  const struct carp_kvset *labels;      /* template.metadata.labels */
  const struct carp_kvset *annotations; /* template.metadata.annotations */
  struct carp_claim_spec tmpl;          /* template.spec (no requests) */
  /* spec.disruption */
  enum carp_consolidation_policy consolidation_policy;
  int64_t consolidate_after_ms; /* CARP_DURATION_NEVER for Never */
  uint32_t nbudgets;
  struct carp_budget *budgets;
  struct carp_limits limits;
  int32_t weight;   /* 0 when unset */
  int has_replicas; /* static pool */
  int64_t replicas;
  struct carp_nodepool_status status;
  /* The template hash (carp_nodepool_hash) of this spec. */
  char hash[CARP_HASH_LEN];
  int valid;            /* carp_nodepool_validate() passed */
  char *invalid_reason; /* NULL when valid: "path: problem[; ...]" */
};

extern const struct carp_kind carp_kind_nodepool;

/* Validates a NodePool object (its JSON): the schema and every CEL rule
 * of crds/karpenter.sh_nodepools.yaml with their messages, Karpenter's
 * runtime checks (label keys and values, taints, no karpenter.sh/nodepool
 * requirement) and that budget schedules are valid cron. Returns 0, or
 * CARP_EINVALID with every problem in *reason ("path: problem; ...", free
 * with carp_free). Used by the decoder; usable on its own. */
int carp_nodepool_validate(yajl_val obj, char **reason);
/* Rules that compare with the previous version: nodeClassRef group and
 * kind are immutable, replicas cannot be added or removed. */
int carp_nodepool_validate_update(const struct carp_nodepool *old_np,
                                  const struct carp_nodepool *new_np,
                                  char **reason);

/* Whether the pool limits resource (a name as in a ResourceList: "cpu",
 * "memory", "nodes"...); *value in carp_resources units. */
int carp_nodepool_limit(const struct carp_nodepool *np, const char *resource,
                        int64_t *value);

/* ---- budgets (pure: the time is passed in) ---- */

/* 1 when the budget is active at now_ms (always, without a schedule;
 * otherwise when the schedule's next hit after now - duration is not after
 * now), 0 when not, CARP_EPARSE when its schedule is invalid. */
int carp_budget_is_active(const struct carp_budget *b, int64_t now_ms);
/* Disruptions the budget allows among num_nodes nodes: CARP_BUDGET_UNLIMITED
 * when inactive, 0 when the budget is unreadable (fail closed), else the
 * count or the percentage of num_nodes rounded up. */
int64_t carp_budget_allowed(const struct carp_budget *b, int64_t num_nodes,
                            int64_t now_ms);
/* The minimum over the budgets that apply to reason (those listing it or
 * listing none); CARP_BUDGET_UNLIMITED when none limits it. The caller
 * subtracts the nodes already disrupting (NotReady or marked for deletion)
 * and floors at 0, as Karpenter does. */
int64_t carp_nodepool_allowed_disruptions(const struct carp_nodepool *np,
                                          enum carp_disruption_reason reason,
                                          int64_t num_nodes, int64_t now_ms);
/* "Underutilized", "Empty", "Drifted"; parse returns CARP_EINVAL otherwise. */
const char *carp_disruption_reason_name(enum carp_disruption_reason r);
int carp_disruption_reason_parse(const char *s, enum carp_disruption_reason *r);

/* ---- drift ---- */

/* The hash of spec.template (Karpenter's semantics, Carpenter's encoding):
 * FNV-1a 64 of a canonical JSON of the defaulted template - labels and
 * annotations sorted by key, taints and startup taints sorted (sets),
 * nodeClassRef, expireAfter and terminationGracePeriod in canonical
 * duration form - with empty and unset fields left out and requirements
 * excluded (checked separately). disruption, limits, weight and replicas
 * are outside the template and never drift. Written in decimal. */
void carp_nodepool_hash(const struct carp_nodepool *np,
                        char out[CARP_HASH_LEN]);

enum carp_hash_check {
  CARP_HASH_MATCH = 0, /* same version, same hash */
  CARP_HASH_DRIFTED,   /* same version, different hash */
  CARP_HASH_RESTAMP,   /* other (or no) version: re-stamp, no drift */
};
/* Compares a NodeClaim's hash annotations with the pool's current hash.
 * A claim without the hash annotation never counts as drifted. */
enum carp_hash_check carp_nodepool_hash_check(const struct carp_nodepool *np,
                                              const struct carp_nodeclaim *nc);
/* Whether the NodePool's own hash annotations differ from its current hash
 * and version (then the hash controller stamps it, and re-stamps its
 * NodeClaims whose version differs and that are not drifted). */
int carp_nodepool_hash_stale(const struct carp_nodepool *np);

/* ---- status ---- */

void carp_nodepool_status_copy(struct carp_nodepool_status *dst,
                               const struct carp_nodepool_status *src);
void carp_nodepool_status_cleanup(struct carp_nodepool_status *st);
/* A JSON merge patch for the status subresource: resources (with "nodes"
 * set to st->nodes), nodes, nodeClassObservedGeneration (when not 0) and
 * conditions; metadata.resourceVersion when rv is not NULL. */
int carp_nodepool_status_patch(const struct carp_nodepool_status *st,
                               const char *rv, struct carp_buf *out);

#endif
