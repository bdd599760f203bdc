/* dis_ctl.h: the disruption controller's state, shared by disruption.c
 * (the poll: deciding and validating) and execute.c (carrying a command
 * out). */
#ifndef CARP_DIS_CTL_H
#define CARP_DIS_CTL_H

#include "carpenter/map.h"
#include "disruption_int.h"

/* Where the one command in progress stands. */
enum dis_state {
  ST_IDLE = 0,   /* a poll may decide */
  ST_VALIDATING, /* waiting out the validation delay */
  ST_LAUNCHING,  /* the replacements are being created or initialized */
  ST_EXECUTING,  /* taints and deletes in flight */
  ST_SETTLING,   /* deleted: waiting for their pods to find a place */
};

enum cand_state { C_CHOSEN = 0, C_RUNNING, C_DELETED, C_FAILED };

struct cand_rec {
  char *claim;
  char *uid;
  char *node;
  char *pool;
  char *capacity_type;
  enum cand_state state;
};

/* One replacement NodeClaim being launched. */
struct repl_rec {
  char *name;
  char *uid;  /* once created */
  int failed; /* its create was refused */
};

struct dis_cmd {
  enum dis_method method;
  enum carp_disruption_reason reason;
  enum dis_decision decision;
  struct cand_rec *c;
  size_t n;
  struct dis_replacement repl;  /* DIS_REPLACE */
  struct dis_replacement *more; /* drift's further replacements */
  size_t nmore;
  /* its NodeClaims: repl and each of more, or repl once per candidate
   * (in_place) */
  struct repl_rec *r;
  size_t nr;
  int repl_waiting_said; /* DisruptionWaitingReadiness sent */
  size_t creating;       /* replacement creates in flight */
  int64_t decided_ms;
  int64_t launched_ms;
  double savings;
  double score;
};

struct carp_disruption {
  struct carp_controller base;
  struct carp_disruption_options o;
  int64_t active_since;
  enum dis_state state;
  struct dis_cmd cmd;
  size_t running;           /* candidate writes in flight */
  int64_t deleted_ms;       /* SETTLING since (wall) */
  int64_t pod_event_ms;     /* the last pod event while SETTLING */
  struct carp_map blocked;  /* nodepool (copy) -> last DisruptionBlocked */
  struct carp_map unconsol; /* nodeclaim (copy) -> last Unconsolidatable */
  struct carp_metric *m_disrupted;
  struct carp_metric *m_created;
  struct carp_metric *m_pods_disrupted;
  struct carp_metric *m_decisions;
  struct carp_metric *m_decisions_pool;
  struct carp_metric *m_eligible;
  struct carp_metric *m_failed_validations;
  struct carp_metric *m_queue_failures;
  struct carp_metric *m_timeouts;
  struct carp_metric *m_eval;
  struct carp_metric *m_allowed;
  struct carp_metric *m_consuming;
  struct carp_metric *m_score;
  struct carp_metric *m_moves;
};

#define DIS(c) carp_container_of(c, struct carp_disruption, base)

/* execute.c */
/* Starts a validated command: creates the replacement, or taints and
 * deletes the candidates. */
void carp__dis_execute(struct carp_disruption *d);
/* Moves a command along from the poll: a replacement initialized, failed
 * or late; the candidates' pods settled. Returns 1 when it rolled a command
 * back: the caches do not show that yet, so nothing new is decided in this
 * poll. */
int carp__dis_progress(struct carp_disruption *d, int64_t now);
/* A pod changed: while a command settles, its settling is looked at once
 * pods have been quiet long enough. */
void carp__dis_pod_event(struct carp_disruption *d);
void carp__dis_cmd_free(struct carp_disruption *d);
/* "empty", "underutilized", "drifted" (metric labels); "Empty", ... */
const char *carp__dis_reason_label(enum carp_disruption_reason r);
const char *carp__dis_reason_name(enum carp_disruption_reason r);
const char *carp__dis_policy_name(const struct carp_nodepool *np);

#endif
