/* config.c: kubeconfig and in-cluster configuration.
 *
 * Several kubeconfig files merge as kubectl merges them: the first file to
 * define a cluster, user or context wins, and the first current-context
 * set wins. Relative file paths inside a kubeconfig are relative to that
 * file's directory. Every error names the file and, where there is one,
 * the line and column. */
#include "carpenter/kubeconfig.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "carpenter/alloc.h"
#include "carpenter/base64.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/yaml.h"

#define SA_DIR    "/var/run/secrets/kubernetes.io/serviceaccount"
#define MAX_FILES 16

struct kc_file {
  struct carp_yaml_doc doc;
  char *dir; /* directory of the file, for relative paths */
};

static int errorf(char **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int errorf(char **err, const char *fmt, ...)
{
  va_list ap;
  struct carp_buf b;
  if (!err)
    return CARP_ECONFIG;
  carp_buf_init(&b, 4096);
  va_start(ap, fmt);
  carp_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  *err = carp_buf_steal(&b, NULL);
  return CARP_ECONFIG;
}

void carp_kube_config_free(struct carp_kube_config *cfg)
{
  if (!cfg)
    return;
  carp_free(cfg->server);
  carp_free(cfg->context);
  carp_free(cfg->namespace);
  carp_free(cfg->ca_file);
  carp_free(cfg->ca_pem);
  carp_free(cfg->cert_file);
  carp_free(cfg->key_file);
  carp_free(cfg->cert_pem);
  carp_free(cfg->key_pem);
  if (cfg->token) {
    /* Do not leave the credential in freed memory. */
    volatile char *p = cfg->token;
    while (*p)
      *p++ = 0;
  }
  carp_free(cfg->token);
  carp_free(cfg->token_file);
  carp_free(cfg->tls_server_name);
  memset(cfg, 0, sizeof(*cfg));
}

/* Finds the entry named name in a list such as clusters: [{name, cluster}]
 * across all files; returns the inner object (the value of field). */
static struct carp_yaml_node *find_named(struct kc_file *files, size_t n,
                                         const char *list, const char *name,
                                         const char *field, size_t *file)
{
  size_t i, j;
  for (i = 0; i < n; i++) {
    struct carp_yaml_node *seq = carp_yaml_get(files[i].doc.root, list);
    if (!seq || seq->type != CARP_YAML_SEQUENCE)
      continue;
    for (j = 0; j < seq->len; j++) {
      const char *nm = carp_yaml_str(carp_yaml_get(seq->items[j], "name"));
      if (nm && !strcmp(nm, name)) {
        *file = i;
        return carp_yaml_get(seq->items[j], field);
      }
    }
  }
  return NULL;
}

static char *resolve_path(const struct kc_file *f, const char *p)
{
  struct carp_buf b;
  if (p[0] == '/' || !f->dir)
    return carp_strdup(p);
  carp_buf_init(&b, 8192);
  carp_buf_printf(&b, "%s/%s", f->dir, p);
  return carp_buf_steal(&b, NULL);
}

/* Reads a string field; refuses non-scalars with the position. */
static int get_str(struct kc_file *f, struct carp_yaml_node *obj,
                   const char *key, const char **out, char **err)
{
  struct carp_yaml_node *n = carp_yaml_get(obj, key);
  *out = NULL;
  if (carp_yaml_is_null(n))
    return 0;
  if (n->type != CARP_YAML_SCALAR)
    return errorf(err, "%s:%zu:%zu: %s: must be a string", f->doc.source,
                  n->line, n->col, key);
  *out = n->scalar;
  return 0;
}

static int get_data(struct kc_file *f, struct carp_yaml_node *obj,
                    const char *key, char **out, size_t *len, char **err)
{
  const char *s;
  struct carp_buf b;
  int rc = get_str(f, obj, key, &s, err);
  if (rc || !s)
    return rc;
  carp_buf_init(&b, 1024 * 1024);
  if (carp_base64_decode(&b, s, strlen(s)) != 0) {
    struct carp_yaml_node *n = carp_yaml_get(obj, key);
    carp_buf_free(&b);
    return errorf(err, "%s:%zu:%zu: %s: not valid base64", f->doc.source,
                  n->line, n->col, key);
  }
  *out = carp_buf_steal(&b, len);
  return 0;
}

static int read_small_file(const char *path, char **out, char **err)
{
  struct carp_buf b;
  char chunk[4096];
  size_t n;
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    int rc = -errno;
    errorf(err, "%s: %s", path, carp_strerror(rc));
    return rc;
  }
  carp_buf_init(&b, 1024 * 1024);
  while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
    if (carp_buf_append(&b, chunk, n)) {
      fclose(fp);
      carp_buf_free(&b);
      return errorf(err, "%s: file too large", path);
    }
  }
  fclose(fp);
  /* Tokens and namespaces end with a newline more often than not. */
  while (b.len && (b.ptr[b.len - 1] == '\n' || b.ptr[b.len - 1] == '\r' ||
                   b.ptr[b.len - 1] == ' '))
    b.ptr[--b.len] = '\0';
  *out = carp_buf_steal(&b, NULL);
  return 0;
}

static int fill_cluster(struct kc_file *f, struct carp_yaml_node *cluster,
                        struct carp_kube_config *cfg, char **err)
{
  const char *server, *ca, *name;
  int insecure = 0, rc;
  struct carp_yaml_node *n;

  if ((rc = get_str(f, cluster, "server", &server, err)))
    return rc;
  if (!server || !*server)
    return errorf(err, "%s:%zu:%zu: cluster has no server", f->doc.source,
                  cluster->line, cluster->col);
  if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
    return errorf(err, "%s: server \"%s\" must start with https://",
                  f->doc.source, server);
  cfg->server = carp_strdup(server);
  while (strlen(cfg->server) > 8 && cfg->server[strlen(cfg->server) - 1] == '/')
    cfg->server[strlen(cfg->server) - 1] = '\0';
  if ((rc = get_str(f, cluster, "certificate-authority", &ca, err)))
    return rc;
  if (ca)
    cfg->ca_file = resolve_path(f, ca);
  if ((rc = get_data(f, cluster, "certificate-authority-data", &cfg->ca_pem,
                     &cfg->ca_pem_len, err)))
    return rc;
  if ((rc = get_str(f, cluster, "tls-server-name", &name, err)))
    return rc;
  if (name)
    cfg->tls_server_name = carp_strdup(name);
  n = carp_yaml_get(cluster, "insecure-skip-tls-verify");
  if (!carp_yaml_is_null(n) && carp_yaml_bool(n, &insecure) != 0)
    return errorf(err,
                  "%s:%zu:%zu: insecure-skip-tls-verify: must be true "
                  "or false",
                  f->doc.source, n->line, n->col);
  cfg->insecure = insecure;
  return 0;
}

static int fill_user(struct kc_file *f, struct carp_yaml_node *user,
                     struct carp_kube_config *cfg, char **err)
{
  const char *s;
  struct carp_yaml_node *n;
  int rc;

  if (!user)
    return 0;
  n = carp_yaml_get(user, "exec");
  if (!carp_yaml_is_null(n))
    return errorf(err,
                  "%s:%zu:%zu: exec credential plugins are not supported; "
                  "use a token, a token file or client certificates",
                  f->doc.source, n->line, n->col);
  n = carp_yaml_get(user, "auth-provider");
  if (!carp_yaml_is_null(n))
    return errorf(err,
                  "%s:%zu:%zu: auth-provider plugins are not supported; "
                  "use a token, a token file or client certificates",
                  f->doc.source, n->line, n->col);
  n = carp_yaml_get(user, "username");
  if (!carp_yaml_is_null(n))
    return errorf(err,
                  "%s:%zu:%zu: basic authentication (username/password) is "
                  "not supported",
                  f->doc.source, n->line, n->col);
  if ((rc = get_str(f, user, "token", &s, err)))
    return rc;
  if (s)
    cfg->token = carp_strdup(s);
  if ((rc = get_str(f, user, "tokenFile", &s, err)))
    return rc;
  if (s)
    cfg->token_file = resolve_path(f, s);
  if ((rc = get_str(f, user, "client-certificate", &s, err)))
    return rc;
  if (s)
    cfg->cert_file = resolve_path(f, s);
  if ((rc = get_str(f, user, "client-key", &s, err)))
    return rc;
  if (s)
    cfg->key_file = resolve_path(f, s);
  if ((rc = get_data(f, user, "client-certificate-data", &cfg->cert_pem,
                     &cfg->cert_pem_len, err)))
    return rc;
  if ((rc = get_data(f, user, "client-key-data", &cfg->key_pem,
                     &cfg->key_pem_len, err)))
    return rc;
  if ((cfg->cert_file || cfg->cert_pem) != (cfg->key_file || cfg->key_pem))
    return errorf(err,
                  "%s:%zu:%zu: a client certificate needs its key and "
                  "a key its certificate",
                  f->doc.source, user->line, user->col);
  return 0;
}

/* The directory relative paths in the file at path are relative to. */
static char *dir_of(const char *path)
{
  const char *slash = strrchr(path, '/');
  if (!slash)
    return NULL;
  if (slash == path)
    return carp_strdup("/");
  return carp_strndup(path, (size_t)(slash - path));
}

static int load_files(const char *paths, struct kc_file *files, size_t *n,
                      char **err)
{
  const char *p = paths;
  *n = 0;
  while (*p) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    if (len) {
      char *path = carp_strndup(p, len);
      int rc;
      if (*n == MAX_FILES) {
        carp_free(path);
        return errorf(err, "too many kubeconfig files (at most %d)", MAX_FILES);
      }
      rc = carp_yaml_load_file(path, &files[*n].doc, err);
      if (rc == -ENOENT && (colon || p != paths)) {
        /* In a list, kubectl skips files that do not exist. */
        carp_free(*err);
        *err = NULL;
        carp_free(path);
      } else if (rc) {
        carp_free(path);
        return rc == CARP_EPARSE ? CARP_ECONFIG : rc;
      } else {
        files[*n].dir = dir_of(path);
        carp_free(path);
        (*n)++;
      }
    }
    p += len;
    if (*p == ':')
      p++;
  }
  if (*n == 0)
    return errorf(err, "no kubeconfig file found in \"%s\"", paths);
  return 0;
}

/* The configuration of context (NULL: the current one) in the loaded
 * files (paths names them in messages); frees the files. */
static int resolve(struct kc_file *files, size_t n, const char *paths,
                   const char *context, struct carp_kube_config *cfg,
                   char **err)
{
  struct carp_yaml_node *ctx, *cluster, *user;
  const char *cluster_name = NULL, *user_name = NULL, *ns = NULL;
  size_t i, ctx_file = 0, cl_file = 0, user_file = 0;
  int rc = 0;

  for (i = 0; i < n; i++) {
    struct carp_yaml_node *root = files[i].doc.root;
    if (root && root->type != CARP_YAML_MAPPING) {
      rc = errorf(err, "%s: not a kubeconfig (expected a mapping)",
                  files[i].doc.source);
      goto out;
    }
  }
  for (i = 0; !context && i < n; i++) {
    const char *cur =
        carp_yaml_str(carp_yaml_get(files[i].doc.root, "current-context"));
    if (cur && *cur)
      context = cur;
  }
  if (!context) {
    rc = errorf(err,
                "kubeconfig %s has no current-context; pick one with "
                "--kube-context",
                paths);
    goto out;
  }
  ctx = find_named(files, n, "contexts", context, "context", &ctx_file);
  if (!ctx) {
    rc = errorf(err, "context \"%s\" not found in kubeconfig %s", context,
                paths);
    goto out;
  }
  if ((rc = get_str(&files[ctx_file], ctx, "cluster", &cluster_name, err)) ||
      (rc = get_str(&files[ctx_file], ctx, "user", &user_name, err)) ||
      (rc = get_str(&files[ctx_file], ctx, "namespace", &ns, err)))
    goto out;
  if (!cluster_name) {
    rc = errorf(err, "%s: context \"%s\" names no cluster",
                files[ctx_file].doc.source, context);
    goto out;
  }
  cluster = find_named(files, n, "clusters", cluster_name, "cluster", &cl_file);
  if (!cluster) {
    rc = errorf(err,
                "cluster \"%s\" (of context \"%s\") not found in "
                "kubeconfig %s",
                cluster_name, context, paths);
    goto out;
  }
  if ((rc = fill_cluster(&files[cl_file], cluster, cfg, err)))
    goto out;
  if (user_name) {
    user = find_named(files, n, "users", user_name, "user", &user_file);
    if (!user) {
      rc = errorf(err,
                  "user \"%s\" (of context \"%s\") not found in "
                  "kubeconfig %s",
                  user_name, context, paths);
      goto out;
    }
    if ((rc = fill_user(&files[user_file], user, cfg, err)))
      goto out;
  }
  cfg->context = carp_strdup(context);
  cfg->namespace = ns ? carp_strdup(ns) : NULL;

out:
  for (i = 0; i < n; i++) {
    carp_yaml_free(&files[i].doc);
    carp_free(files[i].dir);
  }
  if (rc)
    carp_kube_config_free(cfg);
  return rc;
}

int carp_kube_config_load(const char *paths, const char *context,
                          struct carp_kube_config *cfg, char **err)
{
  struct kc_file files[MAX_FILES];
  size_t n = 0, i;
  int rc;

  memset(cfg, 0, sizeof(*cfg));
  memset(files, 0, sizeof(files));
  if (err)
    *err = NULL;
  if (!paths || !*paths)
    return errorf(err, "no kubeconfig path given");
  rc = load_files(paths, files, &n, err);
  if (rc) {
    for (i = 0; i < n; i++) {
      carp_yaml_free(&files[i].doc);
      carp_free(files[i].dir);
    }
    return rc;
  }
  return resolve(files, n, paths, context, cfg, err);
}

int carp_kube_config_parse(const char *text, size_t len, const char *source,
                           const char *context, struct carp_kube_config *cfg,
                           char **err)
{
  struct kc_file f;
  int rc;

  memset(cfg, 0, sizeof(*cfg));
  memset(&f, 0, sizeof(f));
  if (err)
    *err = NULL;
  if (!source)
    source = "kubeconfig";
  rc = carp_yaml_load(text, len, source, &f.doc, err);
  if (rc)
    return rc == CARP_EPARSE ? CARP_ECONFIG : rc;
  f.dir = dir_of(source);
  return resolve(&f, 1, source, context, cfg, err);
}

int carp_kube_config_incluster(const char *dir, struct carp_kube_config *cfg,
                               char **err)
{
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  struct carp_buf b;
  struct stat st;
  char *ns = NULL;
  int rc;

  memset(cfg, 0, sizeof(*cfg));
  if (err)
    *err = NULL;
  if (!dir)
    dir = SA_DIR;
  if (!host || !*host || !port || !*port)
    return errorf(err, "not running in a cluster: KUBERNETES_SERVICE_HOST "
                       "and KUBERNETES_SERVICE_PORT are not set; give "
                       "--kubeconfig");
  carp_buf_init(&b, 4096);
  /* An IPv6 service address needs brackets in a URL. */
  if (strchr(host, ':'))
    carp_buf_printf(&b, "https://[%s]:%s", host, port);
  else
    carp_buf_printf(&b, "https://%s:%s", host, port);
  cfg->server = carp_buf_steal(&b, NULL);
  cfg->context = carp_strdup("in-cluster");

  carp_buf_init(&b, 4096);
  carp_buf_printf(&b, "%s/token", dir);
  cfg->token_file = carp_buf_steal(&b, NULL);
  rc = read_small_file(cfg->token_file, &cfg->token, err);
  if (rc)
    goto fail;
  carp_buf_init(&b, 4096);
  carp_buf_printf(&b, "%s/ca.crt", dir);
  cfg->ca_file = carp_buf_steal(&b, NULL);
  if (stat(cfg->ca_file, &st) != 0) {
    rc = errorf(err, "%s: %s", cfg->ca_file, carp_strerror(-errno));
    goto fail;
  }
  carp_buf_init(&b, 4096);
  carp_buf_printf(&b, "%s/namespace", dir);
  if (read_small_file(carp_buf_cstr(&b), &ns, NULL) == 0 && *ns)
    cfg->namespace = ns;
  else
    carp_free(ns);
  carp_buf_free(&b);
  return 0;
fail:
  carp_kube_config_free(cfg);
  return rc < 0 && rc != CARP_ECONFIG ? rc : CARP_ECONFIG;
}
