/* rv.c: what Carpenter trusts about resourceVersions and error answers.
 *
 * The API server documents resourceVersions as opaque, but every server
 * (etcd's revision) writes them as decimal uint64s, and the informer and
 * the controllers rely on two facts that only hold for such values: a
 * version can be compared with another, and a watch from it is possible.
 * A version that is not a decimal number is therefore untrusted: the
 * informer relists rather than watching from it. */
#include <string.h>

#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/kube.h"

int carp_rv_parse(const char *rv, uint64_t *out)
{
  uint64_t v = 0;
  size_t i, n = rv ? strlen(rv) : 0;
  if (n == 0 || n > 20 || (n > 1 && rv[0] == '0'))
    return CARP_EINVAL;
  for (i = 0; i < n; i++) {
    unsigned d = (unsigned)(rv[i] - '0');
    if (d > 9 || v > (UINT64_MAX - d) / 10)
      return CARP_EINVAL;
    v = v * 10 + d;
  }
  if (out)
    *out = v;
  return 0;
}

const char *carp_rv_newer(const char *a, const char *b)
{
  uint64_t x, y;
  if (!a || !*a)
    return b;
  if (!b || !*b)
    return a;
  if (carp_rv_parse(a, &x) || carp_rv_parse(b, &y))
    return a; /* not comparable: the first (the caller's own) wins */
  return y > x ? b : a;
}

int carp_rv_behind(const char *have, const char *written)
{
  return have && written && *written && strcmp(written, have) &&
         carp_rv_newer(written, have) == written;
}

int carp_kube_error_permanent(const struct carp_kube_result *res)
{
  switch (res->err) {
  case CARP_EBADREQUEST: /* 400: e.g. "no kind Eviction is registered" */
  case CARP_EINVALID:    /* 422 */
    return 1;
  case CARP_ENOTFOUND:
    /* A missing object names itself in the Status details; a 404 without
     * them is a path the server does not serve (a kind or subresource it
     * does not have). */
    return res->status == 404 && res->body &&
           !carp_json_str(res->body, "details", "name", NULL);
  default:
    return 0;
  }
}
