/* The CRD manifests against the C validation: every file in crds/invalid/
 * is refused, naming the field and the message its header comment gives
 * ("# field: ..." and "# message: ..."), both by the validate function and
 * by decoding (valid = 0, same reason); every NodePool, NodeClaim,
 * ProxmoxNodeClass, CapacityBuffer and NodeOverlay in crds/examples/ and
 * test/crds/ decodes and validates clean. A manifest Kubernetes refuses must
 * never slip past Carpenter. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_testlib.h"
#include "carpenter/capacitybuffer.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodeoverlay.h"
#include "carpenter/nodepool.h"

/* The value of a "# key: value" header line, into out. */
static int header(const char *text, const char *key, char *out, size_t cap)
{
  char pat[64];
  const char *p, *end;
  snprintf(pat, sizeof(pat), "# %s: ", key);
  p = strstr(text, pat);
  if (!p)
    return 0;
  p += strlen(pat);
  end = strchr(p, '\n');
  if (!end)
    end = p + strlen(p);
  snprintf(out, cap, "%.*s", (int)(end - p), p);
  return 1;
}

struct kind_ops {
  const char *kind;
  const struct carp_kind *k;
  int (*validate)(yajl_val obj, char **reason);
};

static const struct kind_ops kinds[] = {
    {"NodePool", &carp_kind_nodepool, carp_nodepool_validate},
    {"NodeClaim", &carp_kind_nodeclaim, carp_nodeclaim_validate},
    {"ProxmoxNodeClass", &carp_kind_proxmoxnodeclass, carp_nodeclass_validate},
    {"CapacityBuffer", &carp_kind_capacitybuffer, carp_capacitybuffer_validate},
    {"NodeOverlay", &carp_kind_nodeoverlay, carp_nodeoverlay_validate},
};

static const struct kind_ops *ops_of(yajl_val v)
{
  const char *kind = carp_json_str(v, "kind", NULL);
  size_t i;
  for (i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (!strcmp(kinds[i].kind, kind))
      return &kinds[i];
  return NULL;
}

/* The decoded object's validation result. */
static const char *decoded_reason(struct carp_objmeta *m, int *valid)
{
  if (m->kind == &carp_kind_nodepool) {
    *valid = ((struct carp_nodepool *)m)->valid;
    return ((struct carp_nodepool *)m)->invalid_reason;
  }
  if (m->kind == &carp_kind_nodeclaim) {
    *valid = ((struct carp_nodeclaim *)m)->valid;
    return ((struct carp_nodeclaim *)m)->invalid_reason;
  }
  if (m->kind == &carp_kind_capacitybuffer) {
    *valid = ((struct carp_capacitybuffer *)m)->valid;
    return ((struct carp_capacitybuffer *)m)->invalid_reason;
  }
  if (m->kind == &carp_kind_nodeoverlay) {
    *valid = ((struct carp_nodeoverlay *)m)->valid;
    return ((struct carp_nodeoverlay *)m)->invalid_reason;
  }
  *valid = ((struct carp_nodeclass *)m)->valid;
  return ((struct carp_nodeclass *)m)->invalid_reason;
}

static int yaml_file(const struct dirent *e)
{
  size_t n = strlen(e->d_name);
  return n > 5 && !strcmp(e->d_name + n - 5, ".yaml");
}

static void test_invalid(void **state)
{
  char dir[1024], path[1400];
  struct dirent **files;
  int n, i, checked = 0;

  source_path(dir, sizeof(dir), "crds/invalid");
  n = scandir(dir, &files, yaml_file, alphasort);
  assert_true(n > 0);
  for (i = 0; i < n; i++) {
    char field[256], message[512], want[800];
    char *text, *reason = NULL, *err = NULL;
    yajl_val v;
    const struct kind_ops *ops;
    struct carp_objmeta *m;
    int valid = 1;

    snprintf(path, sizeof(path), "%s/%s", dir, files[i]->d_name);
    text = read_text(path);
    assert_true(header(text, "field", field, sizeof(field)));
    assert_true(header(text, "message", message, sizeof(message)));
    v = yaml_json(text);
    ops = ops_of(v);
    assert_non_null(ops);
    snprintf(want, sizeof(want), "%s: ", field);
    if (ops->validate(v, &reason) != CARP_EINVALID || !strstr(reason, want) ||
        !strstr(reason, message)) {
      fprintf(stderr, "%s: want \"%s\" and \"%s\", got: %s\n", files[i]->d_name,
              want, message, reason ? reason : "(valid)");
      fail();
    }
    /* Decoding keeps the object and the same verdict. */
    m = decode_json(ops->k, v, &err);
    if (!m)
      fprintf(stderr, "%s: %s\n", files[i]->d_name, err);
    assert_non_null(m);
    assert_string_equal(decoded_reason(m, &valid), reason);
    assert_false(valid);
    carp_obj_unref(m);
    carp_free(reason);
    carp_json_free(v);
    carp_free(text);
    free(files[i]);
    checked++;
  }
  free(files);
  assert_true(checked >= 18);
}

static void check_valid(const char *path)
{
  char *text = read_text(path), *reason = NULL, *err = NULL;
  yajl_val v = yaml_json(text);
  const struct kind_ops *ops = ops_of(v);
  struct carp_objmeta *m;
  int valid = 0;
  if (!ops) { /* a Secret */
    carp_json_free(v);
    carp_free(text);
    return;
  }
  if (ops->validate(v, &reason)) {
    fprintf(stderr, "%s: %s\n", path, reason);
    fail();
  }
  m = decode_json(ops->k, v, &err);
  if (!m)
    fprintf(stderr, "%s: %s\n", path, err);
  assert_non_null(m);
  assert_null(decoded_reason(m, &valid));
  assert_true(valid);
  carp_obj_unref(m);
  carp_json_free(v);
  carp_free(text);
}

static void test_examples(void **state)
{
  char dir[1024], path[1400];
  struct dirent **files;
  int n, i;
  source_path(dir, sizeof(dir), "crds/examples");
  n = scandir(dir, &files, yaml_file, alphasort);
  assert_true(n >= 4);
  for (i = 0; i < n; i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, files[i]->d_name);
    check_valid(path);
    free(files[i]);
  }
  free(files);
  source_path(path, sizeof(path), "test/crds/karpenter-user-nodepool.yaml");
  check_valid(path);
  source_path(path, sizeof(path), "test/crds/nodeclaim.yaml");
  check_valid(path);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_invalid),
      LEAK_TEST(test_examples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
