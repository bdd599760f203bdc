/* config.c: the --pve-config file, which names the Proxmox clusters
 * (regions) Carpenter may use and how to reach each one: API URL, API
 * token, and how to trust its TLS certificate (a CA file, the SHA-256
 * fingerprint Proxmox shows, or - only when asked - not at all).
 *
 * Everything is checked here, at startup, with the file, line and column
 * of the problem, so a typo fails fast instead of surfacing later as a
 * confusing API error. Unknown keys are refused for the same reason. The
 * token secret may sit in the file or in a separate file (a mounted
 * Secret); either way it is never printed. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/pve.h"
#include "carpenter/yaml.h"

static int fail(char **err, const struct carp_yaml_doc *doc,
                const struct carp_yaml_node *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char **err, const struct carp_yaml_doc *doc,
                const struct carp_yaml_node *n, const char *fmt, ...)
{
  struct carp_buf b;
  va_list ap;
  carp_buf_init(&b, 4096);
  if (n)
    carp_buf_printf(&b,
                    "%s:%zu:%zu: ", doc->source ? doc->source : "pve-config",
                    n->line, n->col);
  else
    carp_buf_printf(&b, "%s: ", doc->source ? doc->source : "pve-config");
  va_start(ap, fmt);
  carp_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (err)
    *err = carp_buf_steal(&b, NULL);
  else
    carp_buf_free(&b);
  return CARP_ECONFIG;
}

/* Kubernetes label-value syntax (the region is a label value). */
static int label_value_ok(const char *s)
{
  size_t n = strlen(s), i;
  if (n == 0 || n > 63)
    return 0;
  if (!isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
    return 0;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!isalnum(c) && c != '-' && c != '_' && c != '.')
      return 0;
  }
  return 1;
}

/* user@realm!tokenname (PVE's pve-tokenid format, loosely). */
static int token_id_ok(const char *s)
{
  const char *at = strchr(s, '@'), *bang = strchr(s, '!');
  size_t i;
  if (!at || !bang || at == s || bang < at + 2 || !bang[1])
    return 0;
  for (i = 0; s[i]; i++)
    if (isspace((unsigned char)s[i]) || s[i] == '=')
      return 0;
  return strchr(bang + 1, '!') == NULL && strchr(bang + 1, '@') == NULL;
}

static int fingerprint_ok(const char *s)
{
  size_t n = strlen(s), i, hex = 0;
  for (i = 0; i < n; i++) {
    if (isxdigit((unsigned char)s[i]))
      hex++;
    else if (s[i] != ':')
      return 0;
  }
  if (hex != 64)
    return 0;
  if (strchr(s, ':')) { /* AA:BB:... exactly */
    if (n != 95)
      return 0;
    for (i = 2; i < n; i += 3)
      if (s[i] != ':')
        return 0;
  }
  return 1;
}

static int url_has_space(const char *s)
{
  for (; *s; s++)
    if ((unsigned char)*s <= ' ' || *s == 0x7f)
      return 1;
  return 0;
}

static char *read_secret_file(const char *path, int *rc)
{
  FILE *f = fopen(path, "r");
  struct carp_buf b;
  char chunk[512];
  size_t n;
  if (!f) {
    *rc = -errno;
    return NULL;
  }
  carp_buf_init(&b, 64 * 1024);
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    if (carp_buf_append(&b, chunk, n)) {
      *rc = CARP_ETOOBIG;
      break;
    }
  fclose(f);
  if (b.overflowed) {
    carp_buf_free(&b);
    return NULL;
  }
  while (b.len && isspace((unsigned char)b.ptr[b.len - 1]))
    b.ptr[--b.len] = '\0';
  *rc = 0;
  return carp_buf_steal(&b, NULL);
}

static const char *const known_keys[] = {
    "region", "url",         "tokenID",  "tokenSecret", "tokenSecretFile",
    "caFile", "fingerprint", "insecure", NULL};

static int str_field(const struct carp_yaml_doc *doc,
                     const struct carp_yaml_node *map, const char *key,
                     const char **out, char **err)
{
  const struct carp_yaml_node *v = carp_yaml_get(map, key);
  *out = NULL;
  if (!v || carp_yaml_is_null(v))
    return 0;
  if (v->type != CARP_YAML_SCALAR)
    return fail(err, doc, v, "%s: must be a string", key);
  *out = v->scalar;
  if (!**out)
    return fail(err, doc, v, "%s: must not be empty", key);
  return 0;
}

static int parse_cluster(const struct carp_yaml_doc *doc,
                         const struct carp_yaml_node *m, size_t idx,
                         struct carp_pve_cluster_config *c, char **err)
{
  const char *region, *url, *tid, *sec, *secfile, *ca, *fp;
  const struct carp_yaml_node *ins;
  size_t i, k;
  int rc;

  if (m->type != CARP_YAML_MAPPING)
    return fail(err, doc, m, "clusters[%zu]: must be a mapping", idx);
  for (i = 0; i < m->len; i++) {
    int known = 0;
    for (k = 0; known_keys[k]; k++)
      if (!strcmp(m->keys[i], known_keys[k]))
        known = 1;
    if (!known)
      return fail(err, doc, m->items[i],
                  "clusters[%zu]: unknown key \"%s\" (known: region, url, "
                  "tokenID, tokenSecret, tokenSecretFile, caFile, "
                  "fingerprint, insecure)",
                  idx, m->keys[i]);
  }
  if ((rc = str_field(doc, m, "region", &region, err)) ||
      (rc = str_field(doc, m, "url", &url, err)) ||
      (rc = str_field(doc, m, "tokenID", &tid, err)) ||
      (rc = str_field(doc, m, "tokenSecret", &sec, err)) ||
      (rc = str_field(doc, m, "tokenSecretFile", &secfile, err)) ||
      (rc = str_field(doc, m, "caFile", &ca, err)) ||
      (rc = str_field(doc, m, "fingerprint", &fp, err)))
    return rc;
  if (!region)
    return fail(err, doc, m, "clusters[%zu]: region is required", idx);
  if (!label_value_ok(region))
    return fail(err, doc, carp_yaml_get(m, "region"),
                "region: \"%s\" is not a valid label value (letters, digits, "
                "'-', '_', '.', at most 63, alphanumeric at both ends)",
                region);
  if (!url)
    return fail(err, doc, m, "clusters[%zu]: url is required", idx);
  /* Never plain http: the token would travel in clear. */
  if (strncmp(url, "https://", 8) != 0)
    return fail(err, doc, carp_yaml_get(m, "url"),
                "url: must start with https:// (e.g. "
                "https://pve1.example.org:8006/api2/json)");
  if (!url[8] || strchr("/?#@:", url[8]) || url_has_space(url))
    return fail(err, doc, carp_yaml_get(m, "url"),
                "url: must name a host after https:// and hold no spaces "
                "(e.g. https://pve1.example.org:8006/api2/json)");
  if (!tid)
    return fail(err, doc, m, "clusters[%zu]: tokenID is required", idx);
  if (!token_id_ok(tid))
    return fail(err, doc, carp_yaml_get(m, "tokenID"),
                "tokenID: must look like user@realm!tokenname");
  if (!sec == !secfile)
    return fail(err, doc, m,
                "clusters[%zu]: exactly one of tokenSecret and tokenSecretFile "
                "is required",
                idx);
  ins = carp_yaml_get(m, "insecure");
  c->insecure = 0;
  if (ins && !carp_yaml_is_null(ins) && carp_yaml_bool(ins, &c->insecure))
    return fail(err, doc, ins, "insecure: must be true or false");
  if ((ca ? 1 : 0) + (fp ? 1 : 0) + (c->insecure ? 1 : 0) > 1)
    return fail(err, doc, m,
                "clusters[%zu]: set at most one of caFile, fingerprint and "
                "insecure",
                idx);
  if (fp && !fingerprint_ok(fp))
    return fail(err, doc, carp_yaml_get(m, "fingerprint"),
                "fingerprint: must be the certificate's SHA-256 as "
                "AA:BB:...:FF (32 bytes)");
  if (ca) {
    FILE *f = fopen(ca, "r");
    if (!f)
      return fail(err, doc, carp_yaml_get(m, "caFile"), "caFile: %s: %s", ca,
                  strerror(errno));
    fclose(f);
  }
  c->region = carp_strdup(region);
  {
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
      n--;
    if (n >= 10 && !strncmp(url + n - 10, "/api2/json", 10)) {
      c->url = carp_strndup(url, n);
    } else {
      struct carp_buf b;
      carp_buf_init(&b, CARP_BUF_UNLIMITED);
      carp_buf_append(&b, url, n);
      carp_buf_puts(&b, "/api2/json");
      c->url = carp_buf_steal(&b, NULL);
    }
  }
  c->token_id = carp_strdup(tid);
  if (sec) {
    c->token_secret = carp_strdup(sec);
  } else {
    c->token_secret = read_secret_file(secfile, &rc);
    if (!c->token_secret)
      return fail(err, doc, carp_yaml_get(m, "tokenSecretFile"),
                  "tokenSecretFile: %s: %s", secfile, carp_strerror(rc));
    if (!c->token_secret[0])
      return fail(err, doc, carp_yaml_get(m, "tokenSecretFile"),
                  "tokenSecretFile: %s is empty", secfile);
  }
  c->ca_file = ca ? carp_strdup(ca) : NULL;
  c->fingerprint = fp ? carp_strdup(fp) : NULL;
  return 0;
}

static int parse_doc(const struct carp_yaml_doc *doc,
                     struct carp_pve_config *out, char **err)
{
  const struct carp_yaml_node *root = doc->root, *cl;
  size_t i, j;
  int rc;

  if (!root || root->type != CARP_YAML_MAPPING)
    return fail(err, doc, root, "must be a mapping with a clusters list");
  for (i = 0; i < root->len; i++)
    if (strcmp(root->keys[i], "clusters") != 0)
      return fail(err, doc, root->items[i],
                  "unknown key \"%s\" (known: clusters)", root->keys[i]);
  cl = carp_yaml_get(root, "clusters");
  if (!cl || cl->type != CARP_YAML_SEQUENCE || cl->len == 0)
    return fail(err, doc, cl ? cl : root, "clusters: must be a non-empty list");
  out->clusters = carp_calloc(cl->len, sizeof(*out->clusters));
  out->nclusters = cl->len;
  for (i = 0; i < cl->len; i++) {
    rc = parse_cluster(doc, cl->items[i], i, &out->clusters[i], err);
    if (rc)
      return rc;
    for (j = 0; j < i; j++)
      if (!strcmp(out->clusters[j].region, out->clusters[i].region))
        return fail(err, doc, carp_yaml_get(cl->items[i], "region"),
                    "region: \"%s\" appears twice", out->clusters[i].region);
  }
  return 0;
}

int carp_pve_config_parse(const char *text, size_t len, const char *source,
                          struct carp_pve_config *out, char **err)
{
  struct carp_yaml_doc doc;
  int rc;
  memset(out, 0, sizeof(*out));
  if (err)
    *err = NULL;
  rc = carp_yaml_load(text, len, source ? source : "pve-config", &doc, err);
  if (rc)
    return CARP_ECONFIG;
  rc = parse_doc(&doc, out, err);
  carp_yaml_free(&doc);
  if (rc)
    carp_pve_config_free(out);
  return rc;
}

int carp_pve_config_load(const char *path, struct carp_pve_config *out,
                         char **err)
{
  struct carp_yaml_doc doc;
  int rc;
  memset(out, 0, sizeof(*out));
  if (err)
    *err = NULL;
  rc = carp_yaml_load_file(path, &doc, err);
  if (rc)
    return rc == CARP_EPARSE ? CARP_ECONFIG : rc;
  rc = parse_doc(&doc, out, err);
  carp_yaml_free(&doc);
  if (rc)
    carp_pve_config_free(out);
  return rc;
}

void carp_pve_config_free(struct carp_pve_config *c)
{
  size_t i;
  if (!c)
    return;
  for (i = 0; i < c->nclusters; i++) {
    struct carp_pve_cluster_config *x = &c->clusters[i];
    carp_free(x->region);
    carp_free(x->url);
    carp_free(x->token_id);
    if (x->token_secret) {
      explicit_bzero(x->token_secret, strlen(x->token_secret));
      carp_free(x->token_secret);
    }
    carp_free(x->ca_file);
    carp_free(x->fingerprint);
  }
  carp_free(c->clusters);
  c->clusters = NULL;
  c->nclusters = 0;
}
