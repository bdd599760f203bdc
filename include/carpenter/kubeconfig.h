/* Module kube (internal/kube). Where the Kubernetes API server is and how to
 * authenticate to it: from a kubeconfig file (or a colon-separated list, merged
 * as kubectl merges them) or from the in-cluster service account. Exec and
 * auth-provider plugins are refused with a clear message: Carpenter runs
 * in-cluster, and a plugin would mean running arbitrary programs. */
#ifndef CARP_KUBECONFIG_H
#define CARP_KUBECONFIG_H

#include <stddef.h>

struct carp_kube_config {
  char *server;    /* "https://host:port", no trailing slash */
  char *context;   /* context used, or "in-cluster" */
  char *namespace; /* context namespace or the pod's; may be NULL */
  char *ca_file;   /* absolute path */
  char *ca_pem;    /* decoded certificate-authority-data */
  size_t ca_pem_len;
  char *cert_file;
  char *key_file;
  char *cert_pem;
  size_t cert_pem_len;
  char *key_pem;
  size_t key_pem_len;
  char *token;      /* bearer token (secret) */
  char *token_file; /* re-read when it changes (bound tokens rotate) */
  char *tls_server_name;
  int insecure; /* insecure-skip-tls-verify */
};

/* Loads a kubeconfig. paths is one path or several separated by ':'.
 * context NULL means the current-context. On failure returns CARP_ECONFIG
 * (or a negative errno) and a message in *err (free with carp_free). */
int carp_kube_config_load(const char *paths, const char *context,
                          struct carp_kube_config *cfg, char **err);
/* The same from a kubeconfig's text; source names it in messages, and
 * relative paths in it are relative to source's directory. */
int carp_kube_config_parse(const char *text, size_t len, const char *source,
                           const char *context, struct carp_kube_config *cfg,
                           char **err);
/* The in-cluster configuration: KUBERNETES_SERVICE_HOST and _PORT, the
 * service-account token, ca.crt and namespace under dir (NULL: the
 * standard /var/run/secrets/kubernetes.io/serviceaccount). */
int carp_kube_config_incluster(const char *dir, struct carp_kube_config *cfg,
                               char **err);
void carp_kube_config_free(struct carp_kube_config *cfg);

#endif
