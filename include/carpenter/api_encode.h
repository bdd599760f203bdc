/* Module api (internal/api). JSON encoders for the pieces the Karpenter kinds
 * share: resource lists (quantities as canonical strings, never JSON numbers:
 * CPU and counts in decimal form, memory and storage in binary form), node
 * selector requirements with minValues, taints and node class references. They
 * write through a struct carp_jw, whose errors are sticky. */
#ifndef CARP_API_ENCODE_H
#define CARP_API_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/api_types.h"
#include "carpenter/json.h"
#include "carpenter/nodeclaim.h"

/* A ResourceList object: cpu, memory, ephemeral-storage and pods when not
 * 0, then every extended resource (skip_name, when not NULL, is left out).
 */
void carp_resources_encode(struct carp_jw *w, const struct carp_resources *r,
                           const char *skip_name);
/* One quantity of the named resource in canonical form ("1500m", "8Gi"),
 * value in carp_resources units (millicores for cpu, whole units else). */
void carp_resource_quantity_format(const char *name, int64_t value,
                                   char out[32]);
void carp_requirement_encode(struct carp_jw *w,
                             const struct carp_requirement *r);
void carp_requirements_encode(struct carp_jw *w,
                              const struct carp_requirement *r, size_t n);
void carp_taints_encode(struct carp_jw *w, const struct carp_taint *t,
                        size_t n);
void carp_nodeclass_ref_encode(struct carp_jw *w,
                               const struct carp_nodeclass_ref *ref);
/* Opens a status merge patch: {"metadata":{"resourceVersion":rv} (only
 * when rv is not NULL), "status":{ - the caller writes the status fields
 * and closes both objects. */
void carp_status_patch_begin(struct carp_jw *w, const char *rv);

struct carp_conditions;
/* A whole status merge patch that sets only the conditions (the list is
 * replaced whole: pass rv so that the write cannot undo another's). */
int carp_conditions_status_patch(const struct carp_conditions *conds,
                                 const char *rv, struct carp_buf *out);

#endif
