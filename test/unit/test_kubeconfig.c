/* Unit tests for kubeconfig and in-cluster configuration: the fields
 * Carpenter uses, merging of several files, relative paths, and a clear
 * error (with position) for every broken or unsupported file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/kube.h"
#include "carpenter/kubeconfig.h"
#include "carpenter/log.h"
#include "tmpdir.h"

static char dir[64];

static void write_file(const char *name, const char *text)
{
  char path[256];
  FILE *f;
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static char *path_of(const char *name)
{
  static char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  return path;
}

static int setup(void **state)
{
  return carp_test_tmpdir(dir, sizeof(dir), "kc");
}

/* cmocka runs it after the group's tests, also when one failed. */
static int teardown(void **state)
{
  carp_test_rmtree(dir);
  return 0;
}

static const char *good =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: sim\n"
    "  cluster:\n"
    "    server: https://127.0.0.1:6443/\n"
    "    certificate-authority-data: "
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
    "- name: other\n"
    "  cluster:\n"
    "    server: https://10.0.0.1\n"
    "    certificate-authority: certs/ca.pem\n"
    "    insecure-skip-tls-verify: true\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: sim, user: bob, namespace: team}\n"
    "- name: ops\n"
    "  context: {cluster: other, user: certs}\n"
    "users:\n"
    "- name: bob\n"
    "  user:\n"
    "    token: abc.def\n"
    "- name: certs\n"
    "  user:\n"
    "    client-certificate: c.pem\n"
    "    client-key: /abs/k.pem\n"
    "    tokenFile: tok\n";

static void test_current_context(void **state)
{
  struct carp_kube_config c;
  char *err = NULL;
  write_file("config", good);
  assert_int_equal(carp_kube_config_load(path_of("config"), NULL, &c, &err), 0);
  assert_string_equal(c.server, "https://127.0.0.1:6443");
  assert_string_equal(c.context, "dev");
  assert_string_equal(c.namespace, "team");
  assert_string_equal(c.token, "abc.def");
  assert_int_equal(c.ca_pem_len, 28);
  assert_memory_equal(c.ca_pem, "-----BEGIN CERTIFICATE-----\n", 28);
  assert_int_equal(c.insecure, 0);
  assert_null(c.cert_file);
  carp_kube_config_free(&c);
}

static void test_named_context_and_paths(void **state)
{
  struct carp_kube_config c;
  char *err = NULL;
  char want[512];
  write_file("config", good);
  assert_int_equal(carp_kube_config_load(path_of("config"), "ops", &c, &err),
                   0);
  assert_string_equal(c.server, "https://10.0.0.1");
  snprintf(want, sizeof(want), "%s/certs/ca.pem", dir);
  assert_string_equal(c.ca_file, want);
  snprintf(want, sizeof(want), "%s/c.pem", dir);
  assert_string_equal(c.cert_file, want);
  assert_string_equal(c.key_file, "/abs/k.pem");
  snprintf(want, sizeof(want), "%s/tok", dir);
  assert_string_equal(c.token_file, want);
  assert_int_equal(c.insecure, 1);
  assert_null(c.namespace);
  carp_kube_config_free(&c);
}

/* From text (what the fuzz target uses): the same answers as from the
 * file, paths relative to the source's directory, errors naming it. */
static void test_parse_text(void **state)
{
  struct carp_kube_config c;
  char *err = NULL;
  (void)state;
  assert_int_equal(carp_kube_config_parse(good, strlen(good), "/etc/kc/config",
                                          "ops", &c, &err),
                   0);
  assert_null(err);
  assert_string_equal(c.server, "https://10.0.0.1");
  assert_string_equal(c.ca_file, "/etc/kc/certs/ca.pem");
  assert_string_equal(c.key_file, "/abs/k.pem");
  carp_kube_config_free(&c);
  assert_int_equal(carp_kube_config_parse(good, strlen(good), "/etc/kc/config",
                                          "nope", &c, &err),
                   CARP_ECONFIG);
  assert_non_null(strstr(err, "context \"nope\" not found"));
  assert_non_null(strstr(err, "/etc/kc/config"));
  assert_null(c.server);
  carp_free(err);
  assert_int_equal(
      carp_kube_config_parse("a: [", 4, "/etc/kc/config", NULL, &c, &err),
      CARP_ECONFIG);
  assert_non_null(strstr(err, "/etc/kc/config"));
  carp_free(err);
}

static void test_merge(void **state)
{
  struct carp_kube_config c;
  char *err = NULL;
  char paths[1024];
  /* The first file sets the context and a user; the second defines the
   * cluster and a clashing user, which loses. */
  write_file("a", "current-context: x\n"
                  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                  "users: [{name: u, user: {token: first}}]\n");
  write_file("b", "current-context: y\n"
                  "clusters: [{name: c, cluster: {server: "
                  "'https://merged:1'}}]\n"
                  "users: [{name: u, user: {token: second}}]\n");
  snprintf(paths, sizeof(paths), "%s/a:%s/missing:%s/b", dir, dir, dir);
  assert_int_equal(carp_kube_config_load(paths, NULL, &c, &err), 0);
  assert_string_equal(c.context, "x");
  assert_string_equal(c.server, "https://merged:1");
  assert_string_equal(c.token, "first");
  carp_kube_config_free(&c);
}

struct bad_case {
  const char *text;
  const char *context;
  const char *want;
};

static void test_bad_files(void **state)
{
  const struct bad_case cases[] = {
      {"current-context: x\n", NULL, "context \"x\" not found"},
      {"clusters: []\n", NULL, "has no current-context"},
      {"- just\n- a list\n", NULL, "not a kubeconfig"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n",
       NULL, "cluster \"c\" (of context \"x\") not found"},
      {"current-context: x\ncontexts: [{name: x, context: {user: u}}]\n", NULL,
       "names no cluster"},
      {"current-context: x\n"
       "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
       "users:\n- name: u\n  user:\n    exec:\n      command: aws\n",
       NULL, "config:8:7: exec credential plugins are not supported"},
      {"current-context: x\n"
       "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
       "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
       NULL, "auth-provider plugins are not supported"},
      {"current-context: x\n"
       "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
       "users: [{name: u, user: {client-certificate-data: '%%%'}}]\n",
       NULL, "client-certificate-data: not valid base64"},
      {"current-context: x\n"
       "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
       "users: [{name: u, user: {client-certificate: c.pem}}]\n",
       NULL, "a client certificate needs its key"},
      {"current-context: x\n"
       "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: 'ftp://a'}}]\n",
       NULL, "must start with https://"},
      {"current-context: x\n"
       "contexts: [{name: x, context: {cluster: c}}]\n"
       "clusters: [{name: c, cluster: {server: [a]}}]\n",
       NULL, "server: must be a string"},
      {"current-context: x\n"
       "contexts: [{name: x, context: {cluster: c}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://a', "
       "insecure-skip-tls-verify: maybe}}]\n",
       NULL, "insecure-skip-tls-verify: must be true or false"},
      {"a: [unclosed\n", NULL, "config:"},
      {good, "nope", "context \"nope\" not found"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct carp_kube_config c;
    char *err = NULL;
    int rc;
    write_file("config", cases[i].text);
    rc = carp_kube_config_load(path_of("config"), cases[i].context, &c, &err);
    if (rc == 0)
      fail_msg("case %zu loaded but should fail", i);
    assert_non_null(err);
    if (!strstr(err, cases[i].want))
      fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err, cases[i].want);
    carp_free(err);
  }
  {
    struct carp_kube_config c;
    char *err = NULL;
    assert_int_equal(carp_kube_config_load("/no/such/file", NULL, &c, &err),
                     -ENOENT);
    assert_non_null(strstr(err, "/no/such/file"));
    carp_free(err);
  }
}

static void test_incluster(void **state)
{
  struct carp_kube_config c;
  char *err = NULL;
  char want[512];
  unsetenv("KUBERNETES_SERVICE_HOST");
  assert_int_equal(carp_kube_config_incluster(dir, &c, &err), CARP_ECONFIG);
  assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
  carp_free(err);

  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  assert_int_equal(carp_kube_config_incluster(dir, &c, &err), -ENOENT);
  assert_non_null(strstr(err, "/token"));
  carp_free(err);

  write_file("token", "eyJhbGciOi.token\n");
  write_file("ca.crt", "pem");
  write_file("namespace", "karpenter\n");
  assert_int_equal(carp_kube_config_incluster(dir, &c, &err), 0);
  assert_string_equal(c.server, "https://10.96.0.1:443");
  assert_string_equal(c.token, "eyJhbGciOi.token");
  assert_string_equal(c.namespace, "karpenter");
  snprintf(want, sizeof(want), "%s/ca.crt", dir);
  assert_string_equal(c.ca_file, want);
  snprintf(want, sizeof(want), "%s/token", dir);
  assert_string_equal(c.token_file, want);
  carp_kube_config_free(&c);

  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  assert_int_equal(carp_kube_config_incluster(dir, &c, &err), 0);
  assert_string_equal(c.server, "https://[fd00::1]:443");
  carp_kube_config_free(&c);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

/* What creating a client for server logs (its warnings). */
static char *client_log(const char *server, const char *token)
{
  struct carp_kube_config c;
  struct carp_kube_options o;
  struct carp_kube *k = NULL;
  uv_loop_t loop;
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  memset(&c, 0, sizeof(c));
  c.server = (char *)server;
  c.token = (char *)token;
  memset(&o, 0, sizeof(o));
  o.config = &c;
  carp_log_set_output(out);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(carp_kube_new(&loop, &o, &k), 0);
  carp_kube_close(k, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  carp_log_flush();
  carp_log_set_output(NULL);
  fclose(out);
  return text;
}

/* A bearer token sent in clear over the network is never silent. */
static void test_plain_http_warns(void **state)
{
  char *log = client_log("http://10.0.0.1:8080", "secret-token");
  assert_non_null(strstr(log, "over plain http://"));
  assert_null(strstr(log, "secret-token"));
  free(log);
  log = client_log("https://10.0.0.1:6443", "secret-token");
  assert_null(strstr(log, "plain http"));
  free(log);
  /* Loopback: nothing leaves the host. */
  log = client_log("http://127.0.0.1:8080", "secret-token");
  assert_null(strstr(log, "plain http"));
  free(log);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_current_context),
      cmocka_unit_test(test_named_context_and_paths),
      cmocka_unit_test(test_parse_text),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_incluster),
      cmocka_unit_test(test_plain_http_warns),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
