/* api_int.h: decode helpers private to the Karpenter kinds of
 * internal/api. They are lenient about values (a value that breaks a rule
 * is skipped or defaulted; validation reports it) and strict about JSON
 * types (a field of the wrong type is CARP_EPARSE with its path). */
#ifndef CARP_API_INT_H
#define CARP_API_INT_H

#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/api_types.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"

/* Annotations the Karpenter kinds keep in their metadata. */
int api_keep_annotation(const char *key);

/* A field of obj that must be of one type when present (JSON null counts
 * as absent). Each returns 0 (*out NULL / unchanged when absent) or
 * CARP_EPARSE with "path.key: must be a ..." in *err. */
int api_str(yajl_val obj, const char *key, const char *path, const char **out,
            char **err);
int api_obj(yajl_val obj, const char *key, const char *path, yajl_val *out,
            char **err);
int api_arr(yajl_val obj, const char *key, const char *path, yajl_val *out,
            char **err);
int api_int(yajl_val obj, const char *key, const char *path, int *present,
            int64_t *out, char **err);
int api_bool(yajl_val obj, const char *key, const char *path, int *present,
             int *out, char **err);

/* A ResourceList: an unreadable or negative quantity reads as 0 (fail
 * closed: validation reports it); present bits say which core names were
 * listed (CARP_LIMIT_* of nodepool.h); a value that is neither a string
 * nor a number is CARP_EPARSE. */
int api_resources(yajl_val obj, const char *path, struct carp_resources *out,
                  unsigned *present, char **err);

/* A list of strings into interned strings (CARP_EPARSE when not). */
int api_strlist(yajl_val obj, const char *key, const char *path,
                struct carp_strlist *out, char **err);

/* NodeClaim.spec / NodePool.spec.template.spec, defaults applied. */
int api_claim_spec_decode(yajl_val spec, const char *path, int with_requests,
                          struct carp_claim_spec *out, char **err);
void api_claim_spec_cleanup(struct carp_claim_spec *s);

/* Strict decimal "123.456" (up to 9 fractional digits) into 1e-9 units. */
int api_decimal_nano(const char *s, int64_t *out);
/* A quantity in whole units (bytes): 0 and CARP_EPARSE when unreadable. */
int api_bytes(const char *s, int64_t *out);

/* ProxmoxNodeClass status (nodeclass_status.c). */
int api_nodeclass_status_decode(yajl_val obj, struct carp_nodeclass_status *st,
                                char **err);
/* spec.devices of a ProxmoxNodeClass, and an instance type's devices
 * list as a mask over them (nodeclass_devices.c). */
int api_devices_decode(yajl_val spec, struct carp_nodeclass_spec *s,
                       char **err);
int api_device_refs(yajl_val obj, const char *path,
                    const struct carp_nodeclass_spec *s, uint32_t *mask,
                    char **err);
void api_device_class_cleanup(struct carp_device_class *d);

/* "7.5" or "1.25" (at most 2 decimals) in hundredths. */
int api_hundredths(const char *s, int32_t *out);

#endif
