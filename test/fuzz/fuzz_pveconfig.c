/* Fuzz target: the --pve-config file (internal/provider/proxmox/config.c).
 * Beyond not crashing: a load either gives clusters that are complete (a
 * unique region, a URL ending in /api2/json, a token ID and a non-empty
 * secret) and no message, or fails with a message that names the file and
 * leaves nothing behind - and never quotes a token secret. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/pve.h"
#include "carpenter/yaml.h"
#include "fuzz.h"

#define SOURCE "/fuzz/pve-config"

/* Whether some tokenSecret of the input appears in msg: one shaped like
 * Proxmox's (a UUID: hex digits and '-', so no message's own words match
 * it) and found nowhere else in the text. */
#define HEX "0123456789abcdefABCDEF-"
static int leaks_secret(const char *text, const char *msg)
{
  struct carp_yaml_doc doc;
  struct carp_yaml_node *cl;
  char *err = NULL;
  size_t i;
  int leak = 0;
  if (carp_yaml_load(text, strlen(text), SOURCE, &doc, &err)) {
    carp_free(err);
    return 0;
  }
  cl = carp_yaml_get(doc.root, "clusters");
  for (i = 0; cl && cl->type == CARP_YAML_SEQUENCE && i < cl->len; i++) {
    const char *sec = carp_yaml_str(carp_yaml_get(cl->items[i], "tokenSecret"));
    const char *at = sec ? strstr(text, sec) : NULL;
    if (!sec || strlen(sec) < 12 || strspn(sec, HEX) != strlen(sec) ||
        !strpbrk(sec, "0123456789") || !at || strstr(at + 1, sec))
      continue;
    if (strstr(msg, sec))
      leak = 1;
  }
  carp_yaml_free(&doc);
  return leak;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static int once;
  struct carp_pve_config c;
  char *text = carp_strndup((const char *)data, size), *err = NULL;
  size_t i, j;
  int rc;
  if (!once) {
    /* tokenSecretFile: /dev/stdin must not wait for a terminal. */
    if (!freopen("/dev/null", "r", stdin))
      abort();
    once = 1;
  }
  rc = carp_pve_config_parse(text, size, SOURCE, &c, &err);
  if (rc) {
    if (!err || !strstr(err, SOURCE) || c.nclusters || c.clusters)
      abort();
    if (leaks_secret(text, err))
      abort();
  } else {
    if (err || !c.nclusters)
      abort();
    for (i = 0; i < c.nclusters; i++) {
      const struct carp_pve_cluster_config *k = &c.clusters[i];
      size_t ul;
      if (!k->region || !*k->region || !k->url || !k->token_id ||
          !*k->token_id || !k->token_secret || !*k->token_secret)
        abort();
      /* https://, a host, then the API path */
      if (strncmp(k->url, "https://", 8) || !k->url[8] || k->url[8] == '/')
        abort();
      ul = strlen(k->url);
      if (ul < 10 || strcmp(k->url + ul - 10, "/api2/json") != 0)
        abort();
      for (j = 0; j < i; j++)
        if (!strcmp(c.clusters[j].region, k->region))
          abort();
    }
  }
  carp_free(err);
  carp_pve_config_free(&c);
  carp_free(text);
  return 0;
}
