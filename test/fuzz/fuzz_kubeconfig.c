/* Fuzz target: kubeconfig files (internal/kube/config.c), which a user or
 * a mounted Secret hands Carpenter. Beyond not crashing: a load either
 * succeeds with a usable configuration (a server URL, the context, a
 * client certificate only with its key) and no message, or fails with a
 * message naming the source and leaves nothing half-filled. */
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/kubeconfig.h"
#include "fuzz.h"

#define SOURCE "/fuzz/kubeconfig"

static int all_zero(const void *p, size_t n)
{
  const unsigned char *b = p;
  size_t i;
  for (i = 0; i < n; i++)
    if (b[i])
      return 0;
  return 1;
}

static void check(int rc, const struct carp_kube_config *cfg, const char *err)
{
  if (rc) {
    if (!err || !*err || !all_zero(cfg, sizeof(*cfg)))
      abort();
    return;
  }
  if (err || !cfg->server || !cfg->context || !*cfg->context)
    abort();
  if (strncmp(cfg->server, "https://", 8) && strncmp(cfg->server, "http://", 7))
    abort();
  if ((cfg->cert_file || cfg->cert_pem) != (cfg->key_file || cfg->key_pem))
    abort();
  /* Relative paths are resolved against the file's directory. */
  if ((cfg->ca_file && cfg->ca_file[0] != '/') ||
      (cfg->cert_file && cfg->cert_file[0] != '/') ||
      (cfg->key_file && cfg->key_file[0] != '/') ||
      (cfg->token_file && cfg->token_file[0] != '/'))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct carp_kube_config cfg;
  char *text = carp_strndup((const char *)data, size), *err = NULL;
  int rc = carp_kube_config_parse(text, size, SOURCE, NULL, &cfg, &err);
  check(rc, &cfg, err);
  if (rc && !strstr(err, SOURCE))
    abort(); /* every message names the file */
  carp_free(err);
  carp_kube_config_free(&cfg);
  /* A context named explicitly takes the same path through the lists. */
  err = NULL;
  rc = carp_kube_config_parse(text, size, SOURCE, "dev", &cfg, &err);
  check(rc, &cfg, err);
  carp_free(err);
  carp_kube_config_free(&cfg);
  carp_free(text);
  return 0;
}
