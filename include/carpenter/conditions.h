/* Module api (internal/api). Status conditions, as Kubernetes and operatorpkg
 * (Karpenter's status library) keep them: a list keyed by type, each with a
 * status (True/False/Unknown), a CamelCase reason, a message, the time the
 * status last changed and the generation it was computed from.
 *
 * Cached objects are immutable, so a controller copies the cached list
 * (carp_conditions_copy), changes the copy with carp_conditions_set(), and
 * when that reports a change writes the whole list back with a merge patch
 * on the status subresource (a merge patch replaces a JSON list as a whole,
 * so the patch always carries every condition).
 *
 * A condition set names a root condition ("Ready") and the conditions it is
 * made of: setting a dependent recomputes the root, as operatorpkg does. */
#ifndef CARP_CONDITIONS_H
#define CARP_CONDITIONS_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/json.h"

enum carp_cond_status {
  CARP_COND_UNKNOWN = 0,
  CARP_COND_TRUE,
  CARP_COND_FALSE,
};

struct carp_condition {
  const char *type;   /* interned */
  const char *reason; /* interned; never NULL once set */
  char *message;      /* owned; never NULL once set */
  enum carp_cond_status status;
  int64_t transition_ms;       /* lastTransitionTime, epoch ms */
  int64_t observed_generation; /* 0 when unset */
};

/* Kept sorted by type (operatorpkg sorts them the same way). */
struct carp_conditions {
  uint32_t n;
  struct carp_condition *items;
};

/* A root condition and its dependents, in the order their reasons are
 * reported. */
struct carp_condset {
  const char *root;
  const char *const *deps;
  size_t ndeps;
};

/* NodePool: Ready = ValidationSucceeded ∧ NodeClassReady.
 * NodeClaim: Ready = Launched ∧ Registered ∧ Initialized.
 * ProxmoxNodeClass: Ready = ValidationSucceeded ∧ RegionsReady ∧
 * TemplatesReady ∧ BootstrapReady. */
extern const struct carp_condset carp_condset_nodepool;
extern const struct carp_condset carp_condset_nodeclaim;
extern const struct carp_condset carp_condset_nodeclass;

/* The root condition, and the validation condition of NodePools and
 * ProxmoxNodeClasses. */
#define CARP_COND_READY                "Ready"
#define CARP_COND_VALIDATION_SUCCEEDED "ValidationSucceeded"

/* Parses "True", "False", "Unknown" (anything else is Unknown). */
enum carp_cond_status carp_cond_status_parse(const char *s);
const char *carp_cond_status_name(enum carp_cond_status s);

/* Decodes status.conditions. Entries without a type are skipped; a
 * malformed list (not a list of objects, non-string fields, a bad
 * lastTransitionTime) is CARP_EPARSE with the path in *err. */
int carp_conditions_decode(yajl_val arr, const char *path,
                           struct carp_conditions *out, char **err);
void carp_conditions_cleanup(struct carp_conditions *c);
void carp_conditions_copy(struct carp_conditions *dst,
                          const struct carp_conditions *src);

/* The condition of that type, or NULL. */
const struct carp_condition *
carp_conditions_get(const struct carp_conditions *c, const char *type);
/* Whether the condition exists and has that status. */
int carp_conditions_is(const struct carp_conditions *c, const char *type,
                       enum carp_cond_status status);
int carp_conditions_is_true(const struct carp_conditions *c, const char *type);

/* Sets a condition. lastTransitionTime becomes now_ms when the condition is
 * new or its status changes, and is kept otherwise. A NULL or empty reason
 * becomes the type for True, "AwaitingReconciliation" for Unknown and the
 * type for False; a NULL message is "". When set is not NULL and type is
 * not its root, the root is recomputed (carp_conditions_recompute_root).
 * Returns 1 when anything changed, 0 when the list is as it was. */
int carp_conditions_set(struct carp_conditions *c,
                        const struct carp_condset *set, const char *type,
                        enum carp_cond_status status, const char *reason,
                        const char *message, int64_t generation,
                        int64_t now_ms);
/* Removes a condition; returns 1 when it was there. */
int carp_conditions_clear(struct carp_conditions *c, const char *type);

/* Root = True when every dependent is True. Otherwise False when any
 * dependent is False, else Unknown; the reason and message are those of the
 * first dependent (in set order) with that status. A missing dependent is
 * Unknown with reason AwaitingReconciliation. Returns 1 when the root
 * changed. */
int carp_conditions_recompute_root(struct carp_conditions *c,
                                   const struct carp_condset *set,
                                   int64_t generation, int64_t now_ms);

/* Writes the list as a JSON array (sorted by type; lastTransitionTime in
 * RFC 3339; observedGeneration when not 0). */
void carp_conditions_encode(struct carp_jw *w, const struct carp_conditions *c);

#endif
