/* Module api (internal/api). Spec hashes for drift: a stable 64-bit FNV-1a hash
 * of a canonical JSON form of a spec, written in decimal, and the merge patch
 * that stamps a hash and its version onto an object's annotations. The NodePool
 * template hash is in nodepool.h, the ProxmoxNodeClass hash in nodeclass.h. */
#ifndef CARP_SPECHASH_H
#define CARP_SPECHASH_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/buf.h"

#define CARP_HASH_LEN      24 /* decimal uint64 + NUL */
#define CARP_FNV1A64_BASIS 14695981039346656037ULL

/* FNV-1a 64 of len bytes, continuing from h (start with CARP_FNV1A64_BASIS). */
uint64_t carp_fnv1a64(uint64_t h, const void *data, size_t len);
void carp_hash_format(uint64_t h, char out[CARP_HASH_LEN]);

/* {"metadata":{"annotations":{hash_key:hash,version_key:version}}}: the
 * merge patch that stamps a hash and its version on an object. */
int carp_hash_annotations_patch(const char *hash_key, const char *hash,
                                const char *version_key, const char *version,
                                struct carp_buf *out);

#endif
