/* Module core (internal/core). Base64 (RFC 4648, standard alphabet with
 * padding), used for kubeconfig certificate data and Proxmox smbios1 fields. */
#ifndef CARP_BASE64_H
#define CARP_BASE64_H

#include <stddef.h>

#include "carpenter/buf.h"

int carp_base64_encode(struct carp_buf *out, const void *data, size_t len);
/* Decodes; whitespace (line breaks in PEM-ish input) is skipped. Returns
 * CARP_EPARSE on any other invalid character or bad padding. */
int carp_base64_decode(struct carp_buf *out, const char *text, size_t len);

#endif
