/* validate_int.h: the validation toolkit of the Karpenter kinds (private
 * to internal/api). A struct vctx collects problems as the API server
 * words them ("path: Required value", "path: Invalid value: \"x\": should
 * match '...'", "path: Unsupported value: ...", CEL messages verbatim);
 * the helpers check one JSON field against the schema rules of a CRD
 * (type, required, pattern, length, enum, bounds, list and map sizes,
 * set uniqueness). Patterns are the CRD's own strings, compiled once with
 * POSIX extended regular expressions. */
#ifndef CARP_API_VALIDATE_INT_H
#define CARP_API_VALIDATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"

#define VPATH 512

/* Error messages beyond this many are summarised as "and N more". */
#define VCTX_MAX_ERRORS 16

struct vctx {
  struct carp_buf out;
  unsigned n;
};

void v_init(struct vctx *v);
/* Records "path: <formatted>". */
void v_err(struct vctx *v, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Returns 0 when nothing was recorded (*reason = NULL), else CARP_EINVALID
 * and the joined messages in *reason (reason may be NULL). */
int v_done(struct vctx *v, char **reason);

/* path.field, path[i], path[key] into out (VPATH bytes). */
const char *v_sub(char *out, const char *path, const char *field);
const char *v_idx(char *out, const char *path, size_t i);
const char *v_key(char *out, const char *path, const char *key);

/* Longest string checked against a pattern (Carpenter's limit, far above
 * any real value; longer ones are refused as too long). */
#define V_MAX_MATCH_LEN 4096

/* Whether s matches the CRD pattern (an anchored RE2 pattern of the kinds
 * the CRDs use; \d, \s and \/ are translated to POSIX). */
int v_match(const char *pattern, const char *s);

/* The required spec of a whole object: records a root that is not an
 * object, or a spec missing or not an object; NULL then. */
yajl_val v_spec(struct vctx *v, yajl_val obj);

/* Member of obj; JSON null counts as absent. */
yajl_val v_get(yajl_val obj, const char *key);

/* A string rule: pattern, max/min length (0: none), enum (NULL-terminated
 * list, or NULL). */
struct vstr {
  const char *pattern;
  size_t maxlen;
  size_t minlen;
  const char *const *enums;
};

/* The CRD type name of a JSON value ("string", "integer", "object"...). */
const char *v_typename(yajl_val val);
/* Checks one string value at path against rule. */
void v_check_str(struct vctx *v, const char *path, const char *s,
                 const struct vstr *rule);
/* Field key of obj: records Required (when required and absent) or a type
 * error, checks rule (may be NULL); returns the string when it is one. */
const char *v_str(struct vctx *v, yajl_val obj, const char *path,
                  const char *key, int required, const struct vstr *rule);
/* Integer field with bounds; returns 1 and *out when it is an integer. */
int v_int(struct vctx *v, yajl_val obj, const char *path, const char *key,
          int required, int64_t min, int64_t max, int64_t *out);
/* Boolean field; returns 1 and *out when it is a boolean. */
int v_bool(struct vctx *v, yajl_val obj, const char *path, const char *key,
           int *out);
/* Object field (type error recorded); NULL when absent or not an object. */
yajl_val v_obj(struct vctx *v, yajl_val obj, const char *path, const char *key,
               int required);
/* Array field with maxItems (0: none). */
yajl_val v_arr(struct vctx *v, yajl_val obj, const char *path, const char *key,
               int required, size_t max_items);
/* Array of strings: each checked with rule; set = no duplicates. */
void v_str_list(struct vctx *v, yajl_val arr, const char *path,
                const struct vstr *rule, int set);
/* Array of integers in [min, max]; set = no duplicates. */
void v_int_list(struct vctx *v, yajl_val arr, const char *path, int64_t min,
                int64_t max, int set);
/* Map of strings (object field key) with maxProperties (0: none), each
 * value checked with rule; returns the object or NULL. */
yajl_val v_str_map(struct vctx *v, yajl_val obj, const char *path,
                   const char *key, size_t max_props, const struct vstr *rule);
/* An int-or-string quantity (a ResourceList value), not negative. */
void v_quantity(struct vctx *v, const char *path, yajl_val val);
/* A duration string field: the pattern, then a value that fits (every
 * duration field says "duration out of range" the same way). Returns the
 * string when it is one and valid. */
const char *v_duration(struct vctx *v, yajl_val obj, const char *path,
                       const char *field, int required, const char *pattern);

/* Karpenter's runtime checks (Kubernetes' validation.IsQualifiedName and
 * IsValidLabelValue): NULL when valid, else what is wrong. */
const char *v_qualified_name_error(const char *s);
const char *v_label_value_error(const char *s);

/* Patterns and enums shared by the Karpenter kinds. */
extern const char V_PAT_DURATION[];       /* expireAfter, consolidateAfter */
extern const char V_PAT_TGP[];            /* terminationGracePeriod */
extern const char V_PAT_QUANTITY[];       /* ResourceList values */
extern const char V_PAT_LABEL_VALUE[];    /* label and requirement values */
extern const char V_PAT_QUALIFIED_NAME[]; /* requirement and taint keys */

/* Shared parts of NodePool and NodeClaim. nodepool selects the NodePool
 * variant of the key rules (karpenter.sh/nodepool is refused). */
void v_claim_spec_common(struct vctx *v, yajl_val spec, const char *path,
                         int nodepool);
/* The CEL label-key rules for one key (messages at path). */
void v_restricted_key(struct vctx *v, const char *path, const char *key,
                      int nodepool, int requirement);
/* NodePool template labels: the CEL map rules (each reported once, at
 * path) and Karpenter's runtime check that keys are qualified names. */
void v_template_labels(struct vctx *v, yajl_val labels, const char *path);

/* ProxmoxNodeClass device classes (validate_devices.c): spec.devices;
 * an instance type's devices list (it: a family or custom type at path),
 * noting a name that is no class and a second GPU class; then the two
 * spec-level CEL messages once. */
void v_nodeclass_devices(struct vctx *v, yajl_val spec);
void v_instance_type_devices(struct vctx *v, yajl_val spec, yajl_val it,
                             const char *path, int *unknown, int *two_gpus);
void v_instance_type_devices_done(struct vctx *v, int unknown, int two_gpus);

#endif
