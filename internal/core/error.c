/* error.c: names and messages for error codes. Negative errno values (which
 * is also what libuv returns on Unix) use the C library's text. */
#include "carpenter/error.h"

#include <string.h>

struct carp_error_info {
  int code;
  const char *name;
  const char *msg;
};

static const struct carp_error_info infos[] = {
#define CARP_ERROR_INFO(name, value, msg) {(value), #name, (msg)},
    CARP_ERROR_MAP(CARP_ERROR_INFO)
#undef CARP_ERROR_INFO
};

static const struct carp_error_info *lookup(int err)
{
  size_t i;
  for (i = 0; i < sizeof(infos) / sizeof(infos[0]); i++)
    if (infos[i].code == err)
      return &infos[i];
  return NULL;
}

const char *carp_errname(int err)
{
  const struct carp_error_info *info;
  if (err == 0)
    return "OK";
  info = lookup(err);
  if (info)
    return info->name;
  if (err < 0 && err > CARP_ERR_BASE) {
    const char *name = strerrorname_np(-err);
    if (name)
      return name;
  }
  return "EUNKNOWN";
}

const char *carp_strerror(int err)
{
  const struct carp_error_info *info;
  if (err == 0)
    return "success";
  info = lookup(err);
  if (info)
    return info->msg;
  if (err < 0 && err > CARP_ERR_BASE) {
    const char *desc = strerrordesc_np(-err);
    if (desc)
      return desc;
  }
  return "unknown error";
}
