/* Module api (internal/api). Building blocks shared by the cached models:
 * resource lists, node selector requirements, label selectors, taints and
 * tolerations. All strings are interned (include/carpenter/intern.h). */
#ifndef CARP_API_TYPES_H
#define CARP_API_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"
#include "carpenter/object.h"

/* An extended resource (nvidia.com/gpu: 2). */
struct carp_resource {
  const char *name; /* interned */
  int64_t value;    /* whole units, rounded up */
};

struct carp_resources {
  int64_t cpu;       /* millicores */
  int64_t memory;    /* bytes */
  int64_t ephemeral; /* bytes (ephemeral-storage) */
  int64_t pods;
  uint32_t nextended;
  struct carp_resource *extended; /* sorted by name */
};

enum carp_op {
  CARP_OP_IN = 0,
  CARP_OP_NOT_IN,
  CARP_OP_EXISTS,
  CARP_OP_DOES_NOT_EXIST,
  CARP_OP_GT,
  CARP_OP_LT,
  CARP_OP_GTE, /* Karpenter NodePools only */
  CARP_OP_LTE,
};

struct carp_requirement {
  const char *key;
  enum carp_op op;
  uint32_t nvalues;
  const char **values;
  int32_t min_values; /* 0: unset */
};

/* A node selector term: requirements ANDed together. */
struct carp_term {
  uint32_t n;
  struct carp_requirement *reqs;
};

struct carp_weighted_term {
  int32_t weight;
  struct carp_term term;
};

/* A metav1.LabelSelector. A NULL selector (field absent) selects nothing
 * where Kubernetes says so; an empty one selects everything. */
struct carp_label_selector {
  int present;
  const struct carp_kvset *match_labels;
  uint32_t nexprs;
  struct carp_requirement *exprs;
};

enum carp_taint_effect {
  CARP_EFFECT_ANY = 0, /* tolerations only: empty effect */
  CARP_EFFECT_NO_SCHEDULE,
  CARP_EFFECT_PREFER_NO_SCHEDULE,
  CARP_EFFECT_NO_EXECUTE,
};

struct carp_taint {
  const char *key;
  const char *value; /* "" when unset */
  enum carp_taint_effect effect;
};

struct carp_toleration {
  const char *key; /* "" matches every key when op is Exists */
  int exists;      /* operator Exists (else Equal) */
  const char *value;
  enum carp_taint_effect effect;
  int64_t seconds; /* tolerationSeconds, -1 when unset */
};

/* Decoders: each reports the failing field relative to `path` in *err
 * (free with carp_free) and returns CARP_EPARSE. */
int carp_resources_decode(yajl_val list, const char *path,
                          struct carp_resources *out, char **err);
/* The same from parser events (include/carpenter/jdec.h): a handler hands
 * the value to carp_resources_dec_value, and once it has ended
 * carp_resources_dec_finish gives what carp_resources_decode would. */
struct carp_resources_dec {
  const char *path; /* borrowed */
  struct carp_resources r;
  char *err; /* the first problem */
};
void carp_resources_dec_begin(struct carp_resources_dec *rd, const char *path);
int carp_resources_dec_value(struct carp_jdec *d, struct carp_resources_dec *rd,
                             const struct carp_jval *v);
int carp_resources_dec_finish(struct carp_resources_dec *rd,
                              struct carp_resources *out, char **err);
void carp_resources_cleanup(struct carp_resources *r);
void carp_resources_add(struct carp_resources *sum,
                        const struct carp_resources *r);
/* Adds value to the extended resource name (created when absent). */
void carp_resources_add_extended(struct carp_resources *r, const char *name,
                                 int64_t value);
/* Per resource, the larger of a and b. */
void carp_resources_max(struct carp_resources *acc,
                        const struct carp_resources *r);
int64_t carp_resources_get(const struct carp_resources *r, const char *name);
void carp_resources_copy(struct carp_resources *dst,
                         const struct carp_resources *src);

int carp_op_parse(const char *s, int allow_gte, enum carp_op *op);
const char *carp_op_name(enum carp_op op);
int carp_requirement_decode(yajl_val v, const char *path, int allow_gte,
                            struct carp_requirement *out, char **err);
void carp_requirement_cleanup(struct carp_requirement *r);
int carp_requirements_decode(yajl_val arr, const char *path, int allow_gte,
                             struct carp_requirement **out, uint32_t *n,
                             char **err);
void carp_requirements_free(struct carp_requirement *r, uint32_t n);
int carp_term_decode(yajl_val v, const char *path, struct carp_term *out,
                     char **err);
void carp_term_cleanup(struct carp_term *t);

int carp_label_selector_decode(yajl_val v, const char *path,
                               struct carp_label_selector *out, char **err);
void carp_label_selector_cleanup(struct carp_label_selector *s);
/* Whether labels match the selector (an absent selector matches none). */
int carp_label_selector_matches(const struct carp_label_selector *s,
                                const struct carp_kvset *labels);

int carp_taint_effect_parse(const char *s, enum carp_taint_effect *e);
const char *carp_taint_effect_name(enum carp_taint_effect e);
int carp_taints_decode(yajl_val arr, const char *path, struct carp_taint **out,
                       uint32_t *n, char **err);
/* Taints from parser events, as carp_resources_dec. */
struct carp_taints_dec {
  const char *path;     /* borrowed */
  struct carp_buf strs; /* the strings of the taints, NUL-terminated */
  struct carp_taints_dec_item {
    size_t key, value; /* in strs; value (size_t)-1 when unset */
    enum carp_taint_effect effect;
  } * items;
  uint32_t n, cap;
  char *err;
  size_t cur[2]; /* the taint being read: key, value in strs */
  unsigned cur_have;
  enum carp_taint_effect cur_effect;
  int cur_effect_ok;
  size_t cur_index;
};
void carp_taints_dec_init(struct carp_taints_dec *td);
void carp_taints_dec_free(struct carp_taints_dec *td);
void carp_taints_dec_begin(struct carp_taints_dec *td, const char *path);
int carp_taints_dec_value(struct carp_jdec *d, struct carp_taints_dec *td,
                          const struct carp_jval *v);
int carp_taints_dec_finish(struct carp_taints_dec *td, struct carp_taint **out,
                           uint32_t *n, char **err);
void carp_taints_free(struct carp_taint *t, uint32_t n);
int carp_tolerations_decode(yajl_val arr, const char *path,
                            struct carp_toleration **out, uint32_t *n,
                            char **err);
void carp_tolerations_free(struct carp_toleration *t, uint32_t n);
/* Whether tol tolerates taint (Kubernetes' ToleratesTaint). */
int carp_toleration_tolerates(const struct carp_toleration *tol,
                              const struct carp_taint *taint);
/* Whether every NoSchedule/NoExecute taint (and PreferNoSchedule when
 * prefer is set) is tolerated; on failure *untolerated is the taint. */
int carp_tolerates_all(const struct carp_toleration *tols, uint32_t ntols,
                       const struct carp_taint *taints, uint32_t ntaints,
                       int prefer, const struct carp_taint **untolerated);

/* Writes "path: message" into *err; returns CARP_EPARSE. */
int carp_api_error(char **err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
