/* Module core (internal/core). Errors: functions return 0 on success or a
 * negative code. System and libuv errors are negative errno values and pass
 * through unchanged; Carpenter's own codes sit below CARP_ERR_BASE so the two
 * ranges never meet. */
#ifndef CARP_ERROR_H
#define CARP_ERROR_H

#include <errno.h>

#define CARP_ERR_BASE (-20000)

/* X(name, value, message) */
#define CARP_ERROR_MAP(X)                                                      \
  X(EPARSE, CARP_ERR_BASE - 1, "malformed input")                              \
  X(ETOOBIG, CARP_ERR_BASE - 2, "input or buffer too large")                   \
  X(ETLS, CARP_ERR_BASE - 3,                                                   \
    "TLS handshake or certificate verification "                               \
    "failed")                                                                  \
  X(ECONNECT, CARP_ERR_BASE - 4, "could not connect")                          \
  X(EHTTP, CARP_ERR_BASE - 5, "unexpected HTTP response")                      \
  X(EBADREQUEST, CARP_ERR_BASE - 6, "bad request")                             \
  X(EUNAUTHORIZED, CARP_ERR_BASE - 7, "unauthorized")                          \
  X(EFORBIDDEN, CARP_ERR_BASE - 8, "forbidden")                                \
  X(ENOTFOUND, CARP_ERR_BASE - 9, "not found")                                 \
  X(ECONFLICT, CARP_ERR_BASE - 10, "conflict")                                 \
  X(EEXIST, CARP_ERR_BASE - 11, "already exists")                              \
  X(EGONE, CARP_ERR_BASE - 12, "gone: resource version too old")               \
  X(EINVALID, CARP_ERR_BASE - 13, "invalid object")                            \
  X(ETOOMANY, CARP_ERR_BASE - 14, "too many requests")                         \
  X(EUNAVAIL, CARP_ERR_BASE - 15, "service unavailable")                       \
  X(EINSUFFICIENT_CAPACITY, CARP_ERR_BASE - 16, "insufficient capacity")       \
  X(ENODECLASS_NOT_READY, CARP_ERR_BASE - 17, "node class not ready")          \
  X(ENOTLEADER, CARP_ERR_BASE - 18, "not the leader")                          \
  X(ECONFIG, CARP_ERR_BASE - 19, "invalid configuration")                      \
  X(EUNSUPPORTED, CARP_ERR_BASE - 20, "not supported")                         \
  X(ETASK, CARP_ERR_BASE - 21, "task failed")

enum carp_error {
  CARP_OK = 0,
  CARP_ENOMEM = -ENOMEM,
  CARP_EINVAL = -EINVAL,
  CARP_ENOENT = -ENOENT,
  CARP_ECANCELED = -ECANCELED,
  CARP_ETIMEDOUT = -ETIMEDOUT,
  CARP_EAGAIN = -EAGAIN,
  CARP_EIO = -EIO,
#define CARP_ERROR_ENUM(name, value, msg) CARP_##name = (value),
  CARP_ERROR_MAP(CARP_ERROR_ENUM)
#undef CARP_ERROR_ENUM
};

/* "ENOTFOUND", "ETIMEDOUT"...; never NULL. */
const char *carp_errname(int err);
/* A human sentence for err; never NULL. */
const char *carp_strerror(int err);

#endif
