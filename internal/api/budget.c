/* budget.c: NodePool disruption budgets as Karpenter evaluates them
 * (nodepool.go GetAllowedDisruptionsByReason): a budget is active when its
 * schedule's next hit after now - duration is not after now; an inactive
 * budget allows everything, an unreadable one nothing (fail closed); a
 * percentage of the pool's nodes is rounded up; the most restrictive
 * budget that applies to a reason wins. Pure: time is an argument. */
#include <string.h>

#include "carpenter/error.h"
#include "carpenter/nodepool.h"

static const char *const reason_names[CARP_DISRUPT_NREASONS] = {
    "Underutilized",
    "Empty",
    "Drifted",
};

const char *carp_disruption_reason_name(enum carp_disruption_reason r)
{
  return (unsigned)r < CARP_DISRUPT_NREASONS ? reason_names[r] : "";
}

int carp_disruption_reason_parse(const char *s, enum carp_disruption_reason *r)
{
  unsigned i;
  for (i = 0; s && i < CARP_DISRUPT_NREASONS; i++) {
    if (!strcmp(s, reason_names[i])) {
      *r = (enum carp_disruption_reason)i;
      return 0;
    }
  }
  return CARP_EINVAL;
}

int carp_budget_is_active(const struct carp_budget *b, int64_t now_ms)
{
  int64_t next;
  if (!b->schedule && b->duration_ms < 0)
    return 1;
  /* Karpenter parses the (possibly missing) schedule and walks back by
   * the (possibly missing, so zero) duration. */
  if (!b->schedule || !b->cron_ok)
    return CARP_EPARSE;
  next = carp_cron_next(&b->cron,
                        now_ms - (b->duration_ms > 0 ? b->duration_ms : 0));
  /* A schedule that never fires gives robfig's zero time, which is not
   * after now: Karpenter then counts the budget as active. */
  return next <= now_ms;
}

int64_t carp_budget_allowed(const struct carp_budget *b, int64_t num_nodes,
                            int64_t now_ms)
{
  int active = carp_budget_is_active(b, now_ms);
  if (active < 0 || !b->nodes_ok)
    return 0;
  if (!active)
    return CARP_BUDGET_UNLIMITED;
  if (b->percent) {
    int64_t n = num_nodes < 0 ? 0 : num_nodes;
    return (b->value * n + 99) / 100;
  }
  return b->value > CARP_BUDGET_UNLIMITED ? CARP_BUDGET_UNLIMITED : b->value;
}

int64_t carp_nodepool_allowed_disruptions(const struct carp_nodepool *np,
                                          enum carp_disruption_reason reason,
                                          int64_t num_nodes, int64_t now_ms)
{
  int64_t allowed = CARP_BUDGET_UNLIMITED;
  uint32_t i;
  for (i = 0; i < np->nbudgets; i++) {
    const struct carp_budget *b = &np->budgets[i];
    int64_t v;
    if (b->reasons && !(b->reasons & (1u << reason)))
      continue;
    v = carp_budget_allowed(b, num_nodes, now_ms);
    if (v < allowed)
      allowed = v;
  }
  return allowed;
}
