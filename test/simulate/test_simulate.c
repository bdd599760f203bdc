/* Unit tests for internal/simulate and the offline Proxmox provider: the
 * JSON parser against yajl, YAML read the way kubectl reads it, Lists
 * handed over item by item in batches, the parse thread (order, errors,
 * stopping), the offline provider's zones and shapes, bad snapshots (each
 * error names the file, document, item and object), and a small cluster
 * simulated end to end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/nodeclass.h"
#include "carpenter/provider.h"
#include "carpenter/pve.h"
#include "carpenter/simulate.h"
#include "carpenter/timeutil.h"
#include "sim_int.h"
#include "tmpdir.h"

/* ---- collecting what the parser hands over ---- */

struct collect {
  struct carp_buf out; /* each value as JSON, one a line */
  size_t items, docs, stop_at;
  struct sim_where last;
};

static int collect_fn(const struct sim_value *v, void *arg)
{
  struct collect *c = arg;
  struct carp_jw w;
  carp_buf_printf(&c->out, "%s%zu:%zu:", v->doc ? "doc" : "item", v->w.doc,
                  v->w.item == SIM_NO_ITEM ? 0 : v->w.item);
  carp_jw_init(&w, &c->out);
  carp_jw_value(&w, v->v);
  carp_jw_finish(&w);
  carp_buf_putc(&c->out, '\n');
  c->last = v->w;
  if (v->doc)
    c->docs++;
  else
    c->items++;
  if (c->stop_at && c->items + c->docs == c->stop_at)
    return CARP_EINVALID;
  return 0;
}

static int parse_text(const char *text, int json, struct collect *c, char *err,
                      size_t errsz)
{
  memset(c, 0, sizeof(*c) - sizeof(c->last));
  carp_buf_init(&c->out, CARP_BUF_UNLIMITED);
  err[0] = '\0';
  return sim_parse("t", text, strlen(text), json, collect_fn, c, err, errsz);
}

/* The same text through yajl, written the same way. */
static char *yajl_form(const char *text)
{
  struct carp_buf b;
  struct carp_jw w;
  yajl_val v;
  char *err = NULL;
  if (carp_json_parse(text, strlen(text), &v, &err)) {
    carp_free(err);
    return NULL;
  }
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_jw_init(&w, &b);
  carp_jw_value(&w, v);
  carp_jw_finish(&w);
  carp_json_free(v);
  return carp_buf_steal(&b, NULL);
}

static void test_json_matches_yajl(void **state)
{
  static const char *const docs[] = {
      "{}",
      "[]",
      "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}",
      "  {\n    \"indented\": [\n        1,\n        2\n    ]\n}\n",
      "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\"",
      "\"raw UTF-8: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
      "[0,-0,1.5,-2.25e-3,1E+5,9223372036854775807,"
      "92233720368547758070,-9223372036854775808]",
      "{\"deep\":[[[[[[[[[[{\"x\":[]}]]]]]]]]]]}",
      "{\"dup\":1,\"dup\":2}",
  };
  size_t i;
  char err[256];
  (void)state;
  for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
    struct collect c;
    char *want = yajl_form(docs[i]), *got;
    assert_non_null(want);
    assert_int_equal(parse_text(docs[i], 1, &c, err, sizeof(err)), 0);
    assert_int_equal(c.docs, 1);
    got = carp_buf_steal(&c.out, NULL);
    /* "doc1:0:" + the value + "\n" */
    assert_true(strlen(got) > 8);
    got[strlen(got) - 1] = '\0';
    assert_string_equal(got + strlen("doc1:0:"), want);
    carp_free(got);
    carp_free(want);
  }
}

static void test_json_rejects(void **state)
{
  static const struct {
    const char *text;
    const char *where; /* "line:col" */
    const char *what;
  } bad[] = {
      {"{", "1:2", "an object key must be a string"},
      {"[1,]", "1:4", "not a JSON value"},
      {"[1 2]", "1:4", "must follow an array element"},
      {"{\"a\" 1}", "1:6", "a ':' must follow"},
      {"{\"a\":1,}", "1:8", "an object key must be a string"},
      {"\"a\x01\"", "1:3", "a control character"},
      {"\"a\xff\"", "1:3", "invalid UTF-8"},
      {"\"\xed\xa0\x80\"", "1:2", "invalid UTF-8"},
      {"\"\\x\"", "1:2", "an unknown escape"},
      {"\"\\ud800\"", "1:2", "a lone UTF-16 surrogate"},
      {"\"\\u12\"", "1:2", "four hex digits"},
      {"[tru]", "1:2", "not a JSON value"},
      {"[1.]", "1:4", "digits after the point"},
      {"[1e]", "1:4", "digits in its exponent"},
      {"[-]", "1:2", "not a JSON value"},
      {"{\"a\":\n  [1,\n   2", "3:5", "must follow an array element"},
      {"\"open", "1:6", "ends inside a string"},
  };
  size_t i;
  char err[256], want[64];
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct collect c;
    char *y = yajl_form(bad[i].text);
    /* yajl refuses it too, but for lone UTF-16 surrogates, escaped or
     * encoded in UTF-8 (RFC 8259 and 3629 do not allow them; Go's encoder,
     * which writes kubectl's JSON, never writes them). */
    if (y && !strstr(bad[i].what, "surrogate") &&
        !strstr(bad[i].text, "\xed\xa0"))
      fail_msg("yajl accepts %s", bad[i].text);
    carp_free(y);
    assert_int_equal(parse_text(bad[i].text, 1, &c, err, sizeof(err)),
                     CARP_EPARSE);
    carp_buf_free(&c.out);
    snprintf(want, sizeof(want), "t:%s: invalid JSON: ", bad[i].where);
    if (strncmp(err, want, strlen(want)) || !strstr(err, bad[i].what))
      fail_msg("%s: got \"%s\", want \"%s...%s\"", bad[i].text, err, want,
               bad[i].what);
  }
}

static void test_lists_and_documents(void **state)
{
  const char *json = "{\"apiVersion\":\"v1\",\"items\":[{\"a\":1},{\"a\":2},"
                     "\"s\"],\"kind\":\"List\"}\n"
                     "{\"kind\":\"Pod\",\"items\":{\"not\":\"an array\"}}\n"
                     "[{\"items\":[1]}]";
  const char *yaml = "apiVersion: v1\n"
                     "items:\n"
                     "- a: 1\n"
                     "- a: 2\n"
                     "- s\n"
                     "kind: List\n"
                     "---\n"
                     "kind: Pod\n"
                     "items: {not: an array}\n"
                     "---\n"
                     "---\n"
                     "- items: [1]\n";
  struct collect a, b;
  char err[256], *x, *y;
  (void)state;
  assert_int_equal(parse_text(json, 1, &a, err, sizeof(err)), 0);
  assert_int_equal(parse_text(yaml, 0, &b, err, sizeof(err)), 0);
  x = carp_buf_steal(&a.out, NULL);
  y = carp_buf_steal(&b.out, NULL);
  assert_string_equal(x, "item1:0:{\"a\":1}\n"
                         "item1:1:{\"a\":2}\n"
                         "item1:2:\"s\"\n"
                         "doc1:0:{\"apiVersion\":\"v1\",\"kind\":\"List\"}\n"
                         "doc2:0:{\"kind\":\"Pod\",\"items\":{\"not\":\"an "
                         "array\"}}\n"
                         "doc3:0:[{\"items\":[1]}]\n");
  /* YAML: the same values; the empty document between is a null. */
  assert_string_equal(y, "item1:0:{\"a\":1}\n"
                         "item1:1:{\"a\":2}\n"
                         "item1:2:\"s\"\n"
                         "doc1:0:{\"apiVersion\":\"v1\",\"kind\":\"List\"}\n"
                         "doc2:0:{\"kind\":\"Pod\",\"items\":{\"not\":\"an "
                         "array\"}}\n"
                         "doc3:0:null\n"
                         "doc4:0:[{\"items\":[1]}]\n");
  carp_free(x);
  carp_free(y);
}

static void test_yaml_scalars(void **state)
{
  const char *yaml = "a: 123\n"
                     "b: \"123\"\n"
                     "c: '0x1f'\n"
                     "d: 0x1f\n"
                     "e: 0o17\n"
                     "f: 1.50\n"
                     "g: yes\n"
                     "h: ~\n"
                     "i:\n"
                     "j: True\n"
                     "k: !!str 42\n"
                     "l: .inf\n"
                     "m: |\n  two\n  lines\n"
                     "n: 007\n";
  struct collect c;
  char err[256], *x;
  (void)state;
  assert_int_equal(parse_text(yaml, 0, &c, err, sizeof(err)), 0);
  x = carp_buf_steal(&c.out, NULL);
  assert_string_equal(x, "doc1:0:{\"a\":123,\"b\":\"123\",\"c\":\"0x1f\","
                         "\"d\":31,\"e\":15,\"f\":1.50,\"g\":\"yes\","
                         "\"h\":null,\"i\":null,\"j\":true,\"k\":\"42\","
                         "\"l\":\".inf\",\"m\":\"two\\nlines\\n\",\"n\":7}\n");
  carp_free(x);
}

static void test_yaml_rejects(void **state)
{
  static const struct {
    const char *text;
    const char *want;
  } bad[] = {
      {"a: &x 1\nb: *x\n", "t:2:4: aliases (*x) are not read in snapshots"},
      {"? [a, b]\n: c\n", "t:1:3: mapping keys must be plain values"},
      {"a: [1, 2\nb: 3\n", "t:2:2: invalid YAML: did not find expected ',' "
                           "or ']' while parsing a flow sequence"},
      {"a:\n\tb: 1\n", "t:2:1: invalid YAML: found character that cannot "
                       "start any token while scanning for the next token"},
  };
  size_t i;
  char err[256];
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct collect c;
    assert_int_equal(parse_text(bad[i].text, 0, &c, err, sizeof(err)),
                     CARP_EPARSE);
    carp_buf_free(&c.out);
    assert_string_equal(err, bad[i].want);
  }
}

/* A List of n small items, each on its own lines, as kubectl indents. */
static char *big_list(size_t n, const char *bad_item, size_t bad_at)
{
  struct carp_buf b;
  size_t i;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_puts(&b, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n");
  for (i = 0; i < n; i++) {
    if (i == bad_at)
      carp_buf_printf(&b, "        %s,\n", bad_item);
    else
      carp_buf_printf(&b,
                      "        {\n            \"i\": %zu,\n"
                      "            \"pad\": \"%0100zu\"\n        }%s\n",
                      i, i, i + 1 < n ? "," : "");
  }
  carp_buf_puts(&b, "    ],\n    \"kind\": \"List\"\n}\n");
  return carp_buf_steal(&b, NULL);
}

static void test_threaded_order(void **state)
{
  /* About 6 MB: parsed on the second thread. */
  char *text = big_list(40000, NULL, (size_t)-1), err[256], *out;
  struct collect c;
  size_t i;
  const char *p;
  (void)state;
  assert_true(strlen(text) > 4 * 1024 * 1024);
  if (parse_text(text, 1, &c, err, sizeof(err)))
    fail_msg("%s", err);
  assert_int_equal(c.items, 40000);
  assert_int_equal(c.docs, 1);
  out = carp_buf_steal(&c.out, NULL);
  /* Every item, in order, then the List. */
  for (i = 0, p = out; i < 40000; i++) {
    char want[64];
    int n = snprintf(want, sizeof(want), "item1:%zu:{\"i\":%zu,", i, i);
    assert_memory_equal(p, want, (size_t)n);
    p = strchr(p, '\n') + 1;
  }
  assert_string_equal(p, "doc1:0:{\"apiVersion\":\"v1\",\"kind\":\"List\"}\n");
  carp_free(out);
  carp_free(text);
}

static void test_threaded_errors(void **state)
{
  char *text = big_list(40000, "{\"i\": oops}", 39000), err[256];
  struct collect c;
  (void)state;
  /* A syntax error late in the file: every item before it is decoded
   * first, then the error (with its line) is reported. */
  assert_int_equal(parse_text(text, 1, &c, err, sizeof(err)), CARP_EPARSE);
  carp_buf_free(&c.out);
  assert_int_equal(c.items, 39000);
  assert_string_equal(err, "t:156004:15: invalid JSON: not a JSON value");
  carp_free(text);
  /* The decoder stops early: the parser stops too, and the decoder's error
   * is the one returned. */
  text = big_list(40000, NULL, (size_t)-1);
  memset(&c, 0, sizeof(c));
  carp_buf_init(&c.out, CARP_BUF_UNLIMITED);
  c.stop_at = 100;
  assert_int_equal(
      sim_parse("t", text, strlen(text), 1, collect_fn, &c, err, sizeof(err)),
      CARP_EINVALID);
  assert_int_equal(c.items, 100);
  assert_int_equal(c.last.item, 99);
  carp_buf_free(&c.out);
  carp_free(text);
}

/* ---- the offline provider ---- */

static struct carp_nodeclass *nodeclass(const char *json)
{
  struct carp_objmeta *m = NULL;
  yajl_val v;
  char *err = NULL;
  assert_int_equal(carp_json_parse(json, strlen(json), &v, &err), 0);
  assert_int_equal(carp_kind_proxmoxnodeclass.decode(v, &m, &err), 0);
  carp_json_free(v);
  return (struct carp_nodeclass *)m;
}

static void closed(void *arg)
{
  *(int *)arg = 1;
}

static const char *zone_list(const struct carp_provider_instance_type *t,
                             char *buf, size_t size)
{
  size_t i, n = 0;
  buf[0] = '\0';
  for (i = 0; i < t->nofferings; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s/%s%s", i ? " " : "",
                          t->offerings[i].region, t->offerings[i].zone,
                          t->offerings[i].available ? "" : "(full)");
  return buf;
}

static void no_list(int status, const struct carp_provider_instance *v,
                    size_t n, const struct carp_provider_error *err, void *arg)
{
  fail_msg("list called back");
}

static void test_offline_provider(void **state)
{
  uv_loop_t loop;
  struct carp_provider *p;
  struct carp_provider_instance_types types;
  struct carp_nodeclass *with_status, *bare, *filtered;
  char buf[256];
  int done = 0;
  (void)state;
  uv_loop_init(&loop);
  assert_int_equal(carp_pve_offline_new(&loop, &p), 0);
  with_status = nodeclass(
      "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"template\":{\"name\":\"t\"},"
      "\"instanceTypes\":{\"families\":[{\"name\":\"c1\",\"memoryPerCPU\":"
      "\"2Gi\"}],\"sizes\":[2,4]},\"kubelet\":{\"kubeReserved\":{\"cpu\":"
      "\"100m\"}}},\"status\":{\"templates\":[{\"region\":\"r1\",\"zone\":"
      "\"h1\",\"vmid\":9000},{\"region\":\"r1\",\"zone\":\"h2\",\"vmid\":"
      "9001}]}}");
  bare =
      nodeclass("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"regions\":[\"r2\"],"
                "\"zones\":[\"x\",\"y\"],\"template\":{\"name\":\"t\"}}}");
  filtered = nodeclass(
      "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"zones\":[\"h2\"],"
      "\"template\":{\"name\":\"t\"}},\"status\":{\"templates\":[{\"region\":"
      "\"r1\",\"zone\":\"h1\",\"vmid\":9000},{\"region\":\"r1\",\"zone\":"
      "\"h2\",\"vmid\":9001}]}}");

  /* status.templates gives the zones; the nodes' zones are not needed. */
  carp_pve_offline_add_zone(p, "a", "r1", "h9");
  assert_int_equal(carp_provider_instance_types(p, "t", with_status, &types),
                   0);
  assert_int_equal(types.n, 2);
  assert_string_equal(types.v[0].name, "c1.2VCPU-4GB");
  assert_string_equal(types.v[1].name, "c1.4VCPU-8GB");
  assert_string_equal(zone_list(&types.v[0], buf, sizeof(buf)), "r1/h1 r1/h2");
  /* Prices and shapes as the live provider computes them. */
  assert_true(types.v[0].price > 0.0759 && types.v[0].price < 0.0761);
  assert_true(types.v[0].offerings[1].price == types.v[0].price);
  assert_int_equal(types.v[0].capacity.cpu, 2000);
  assert_int_equal(types.v[0].allocatable.cpu, 1900);
  assert_int_equal(types.v[0].capacity.pods, 110);
  assert_int_equal(types.v[0].capacity.ephemeral, 0); /* disk unknown yet */
  carp_provider_instance_types_free(&types);

  /* Without templates: spec.zones in spec.regions; then the zones its
   * nodes run in, once known; a template disk size from a NodeClaim. */
  assert_int_equal(carp_provider_instance_types(p, "t", bare, &types), 0);
  assert_string_equal(zone_list(&types.v[0], buf, sizeof(buf)), "r2/x r2/y");
  carp_provider_instance_types_free(&types);
  carp_pve_offline_add_zone(p, "b", "r2", "y");
  carp_pve_offline_set_template_disk(p, "b", 10LL << 30);
  carp_pve_offline_set_template_disk(p, "b", 8LL << 30);
  assert_int_equal(carp_provider_instance_types(p, "t", bare, &types), 0);
  assert_string_equal(zone_list(&types.v[0], buf, sizeof(buf)), "r2/y");
  assert_int_equal(types.v[0].capacity.ephemeral, 10LL << 30);
  carp_provider_instance_types_free(&types);

  /* spec.zones filters the templates' hosts. */
  assert_int_equal(carp_provider_instance_types(p, "t", filtered, &types), 0);
  assert_string_equal(zone_list(&types.v[0], buf, sizeof(buf)), "r1/h2");
  carp_provider_instance_types_free(&types);

  /* Nothing that would need Proxmox. */
  assert_int_equal(carp_provider_list(p, "t", no_list, NULL, NULL),
                   CARP_EUNSUPPORTED);

  carp_obj_unref(&with_status->meta);
  carp_obj_unref(&bare->meta);
  carp_obj_unref(&filtered->meta);
  carp_provider_close(p, closed, &done);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_true(done);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- whole snapshots ---- */

static void write_file(const char *dir, const char *name, const char *text,
                       char *path, size_t size)
{
  FILE *f;
  snprintf(path, size, "%s/%s", dir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static const char *const CLASS =
    "{\"apiVersion\":\"carpenter.dev/v1alpha1\",\"kind\":\"ProxmoxNodeClass\","
    "\"metadata\":{\"name\":\"default\",\"uid\":\"c1\"},\"spec\":{"
    "\"template\":{\"name\":\"t\"},\"bootDisk\":{\"size\":\"20Gi\"},"
    "\"instanceTypes\":{\"families\":[{\"name\":\"c1\",\"memoryPerCPU\":"
    "\"2Gi\"}],\"sizes\":[2,4,8]}},\"status\":{\"conditions\":[{\"type\":"
    "\"Ready\",\"status\":\"True\",\"reason\":\"Ready\",\"message\":\"\","
    "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}],\"templates\":["
    "{\"region\":\"pve\",\"zone\":\"h1\",\"vmid\":9000},{\"region\":\"pve\","
    "\"zone\":\"h2\",\"vmid\":9001}]}}";

/* A NodePool; status Ready unless bare. */
static void pool(struct carp_buf *b, const char *name, const char *extra,
                 int bare)
{
  carp_buf_printf(
      b,
      "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\","
      "\"metadata\":{\"name\":\"%s\",\"uid\":\"p-%s\"},\"spec\":{%s"
      "\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\","
      "\"kind\":\"ProxmoxNodeClass\",\"name\":\"default\"},"
      "\"requirements\":[]}},\"disruption\":{\"consolidationPolicy\":"
      "\"WhenEmptyOrUnderutilized\",\"consolidateAfter\":\"30s\"}}%s}",
      name, name, extra,
      bare ? ""
           : ",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
             "\"True\",\"reason\":\"Ready\",\"message\":\"\","
             "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}");
}

static void condition(char *out, size_t size, const char *type)
{
  snprintf(out, size,
           "{\"type\":\"%s\",\"status\":\"True\",\"reason\":\"%s\","
           "\"message\":\"\",\"lastTransitionTime\":"
           "\"2026-01-01T00:00:00Z\"}",
           type, type);
}

/* A launched, initialized NodeClaim and its Node of type c1.<cpu>VCPU;
 * marked Drifted when drifted. */
static void node_as(struct carp_buf *b, const char *name, int cpu,
                    const char *zone, int drifted)
{
  char labels[512], c1[256], c2[256], c3[320];
  snprintf(labels, sizeof(labels),
           "\"karpenter.sh/nodepool\":\"default\","
           "\"node.kubernetes.io/instance-type\":\"c1.%dVCPU-%dGB\","
           "\"topology.kubernetes.io/zone\":\"%s\","
           "\"topology.kubernetes.io/region\":\"pve\","
           "\"karpenter.sh/capacity-type\":\"on-demand\","
           "\"karpenter.sh/initialized\":\"true\"",
           cpu, cpu * 2, zone);
  condition(c1, sizeof(c1), "Launched");
  condition(c2, sizeof(c2), "Registered");
  condition(c3, sizeof(c3), "Initialized");
  if (drifted) {
    size_t len = strlen(c3);
    c3[len] = ',';
    condition(c3 + len + 1, sizeof(c3) - len - 1, "Drifted");
  }
  carp_buf_printf(
      b,
      ",{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\","
      "\"metadata\":{\"name\":\"%s\",\"uid\":\"nc-%s\",\"creationTimestamp\":"
      "\"2026-01-01T00:00:00Z\",\"labels\":{%s}},\"spec\":{\"nodeClassRef\":{"
      "\"group\":\"carpenter.dev\",\"kind\":\"ProxmoxNodeClass\",\"name\":"
      "\"default\"},\"requirements\":[]},\"status\":{\"providerID\":"
      "\"proxmox://pve/%s\",\"nodeName\":\"%s\",\"capacity\":{\"cpu\":\"%d\","
      "\"memory\":\"%dGi\",\"pods\":\"110\"},\"allocatable\":{\"cpu\":\"%d\","
      "\"memory\":\"%dGi\",\"pods\":\"110\"},\"conditions\":[%s,%s,%s]}}",
      name, name, labels, name + 1, name, cpu, cpu * 2, cpu, cpu * 2, c1, c2,
      c3);
  carp_buf_printf(b,
                  ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
                  "\"name\":\"%s\",\"uid\":\"n-%s\",\"labels\":{%s}},\"spec\":{"
                  "\"providerID\":\"proxmox://pve/%s\"},\"status\":{"
                  "\"capacity\":{\"cpu\":\"%d\",\"memory\":\"%dGi\",\"pods\":"
                  "\"110\"},\"allocatable\":{\"cpu\":\"%d\",\"memory\":"
                  "\"%dGi\",\"pods\":\"110\"},\"conditions\":[{\"type\":"
                  "\"Ready\",\"status\":\"True\"}]}}",
                  name, name, labels, name + 1, cpu, cpu * 2, cpu, cpu * 2);
}

static void node(struct carp_buf *b, const char *name, int cpu,
                 const char *zone)
{
  node_as(b, name, cpu, zone, 0);
}

static void pod(struct carp_buf *b, const char *name, const char *node_name,
                const char *cpu, const char *extra_spec)
{
  carp_buf_printf(
      b,
      ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
      "\"namespace\":\"default\",\"uid\":\"u-%s\",\"ownerReferences\":[{"
      "\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\","
      "\"uid\":\"rs\",\"controller\":true}]},\"spec\":{%s%s%s%s"
      "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
      "\"%s\",\"memory\":\"100Mi\"}}}]},\"status\":%s}",
      name, name, node_name ? "\"nodeName\":\"" : "",
      node_name ? node_name : "", node_name ? "\"," : "", extra_spec, cpu,
      node_name ? "{\"phase\":\"Running\"}"
                : "{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
                  "\"PodScheduled\",\"status\":\"False\",\"reason\":"
                  "\"Unschedulable\"}]}");
}

static int64_t at(const char *t)
{
  int64_t ms;
  assert_int_equal(carp_time_parse_rfc3339(t, &ms), 0);
  return ms;
}

static void test_simulation(void **state)
{
  const char *dir = *state;
  struct carp_simulation *s = NULL;
  struct carp_buf b, report;
  char path[512], *err = NULL;
  const char *paths[1];
  (void)state;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_printf(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s,",
                  CLASS);
  pool(&b, "default", "", 0);
  node(&b, "n1", 4, "h1");
  node(&b, "n2", 4, "h2");
  node(&b, "n3", 2, "h1");
  pod(&b, "a1", "n1", "1500m", "");
  pod(&b, "a2", "n2", "1", "");
  /* n3 is empty; two pending pods need 3.5 CPUs together; one asks for a
   * label no pool has. */
  pod(&b, "p1", NULL, "1500m", "");
  pod(&b, "p2", NULL, "2", "");
  pod(&b, "p3", NULL, "100m", "\"nodeSelector\":{\"disk\":\"ssd\"},");
  carp_buf_puts(&b, "]}");
  write_file(dir, "snap.json", b.ptr, path, sizeof(path));
  paths[0] = path;
  assert_int_equal(carp_simulation_load(paths, 1, NULL, 0, &s, &err), 0);
  assert_int_equal(carp_simulation_run(s, at("2026-01-01T01:00:00Z")), 0);

  /* The pending pods fit on n1, n2 (2.5 and 3 CPUs free of 4, less the
   * requests there) or the empty n3; p3 fits no pool. */
  assert_int_equal(s->pending, 3);
  assert_int_equal(s->nclaims, 0);
  assert_int_equal(s->nplaced, 2);
  assert_int_equal(s->nunplaced, 1);
  assert_string_equal(s->unplaced[0].pod->meta.name, "p3");
  assert_int_equal(s->unplaced[0].nrefusals, 1);
  assert_string_equal(s->unplaced[0].refusals[0].nodepool, "default");
  assert_string_equal(s->unplaced[0].refusals[0].reason, "Requirement");
  assert_string_equal(s->unplaced[0].refusals[0].detail, "disk");
  /* Consolidation: n3 is empty, and emptiness comes first; n1 is a
   * candidate left for a later command. */
  assert_int_equal(s->decision, SIM_DELETE);
  assert_string_equal(s->method, "empty");
  assert_string_equal(s->nodes[0].nodeclaim, "n3");
  assert_int_equal(s->nodes[0].action, SIM_DELETE);
  assert_string_equal(s->nodes[1].nodeclaim, "n1");
  assert_non_null(strstr(s->nodes[1].why, "not part of this command"));
  /* c1.4VCPU-8GB: 4 x 0.03 + 8 x 0.004 = 0.152; c1.2VCPU-4GB: 0.076. */
  assert_true(s->price_before > 0.3799 && s->price_before < 0.3801);
  assert_true(s->price_after > 0.3039 && s->price_after < 0.3041);
  carp_buf_init(&report, CARP_BUF_UNLIMITED);
  carp_simulation_report_text(s, &report);
  assert_non_null(strstr(report.ptr, "  delete   n3 [default c1.2VCPU-4GB h1 "
                                     "0.0760/h, 0 pods]: empty: no pod to "
                                     "move\n"));
  assert_non_null(strstr(report.ptr, "    default/p3\n      nodepool default: "
                                     "Requirement disk: "));
  assert_non_null(strstr(report.ptr, "Price per hour: 0.3800 now, 0.3040 "
                                     "after (-0.0760 consolidation)\n"));
  carp_buf_reset(&report);
  carp_simulation_report_json(s, &report);
  assert_non_null(strstr(report.ptr, "\"decision\": \"delete\""));
  carp_buf_free(&report);
  carp_simulation_free(s);

  /* What if the pool held only 2-CPU nodes and the pods were bigger? A
   * --nodepool of that name replaces it: nothing fits p2 any more. */
  carp_buf_reset(&b);
  pool(&b, "default", "\"limits\":{\"cpu\":\"5\"},", 1);
  {
    char pool_path[512];
    const char *pools[1];
    write_file(dir, "pool.json", b.ptr, pool_path, sizeof(pool_path));
    pools[0] = pool_path;
    assert_int_equal(carp_simulation_load(paths, 1, pools, 1, &s, &err), 0);
    assert_int_equal(carp_simulation_run(s, at("2026-01-01T01:00:00Z")), 0);
    /* 10 CPUs in use already: the limit of 5 leaves no room for a new
     * NodeClaim, but the pods still fit on the existing nodes. */
    assert_int_equal(s->nplaced, 2);
    assert_int_equal(s->nclaims, 0);
    assert_int_equal(s->nwarnings, 1);
    assert_non_null(strstr(s->warnings[0], "replaces the snapshot's"));
    carp_simulation_free(s);
  }
  carp_buf_free(&b);
}

/* A drifted node whose pods need two of the pool's (now smaller) nodes:
 * the command replaces it with both, and the reports say so. */
static void test_drift_replacements(void **state)
{
  const char *dir = *state;
  struct carp_simulation *s = NULL;
  struct carp_buf b, report;
  char path[512], *err = NULL;
  const char *paths[1];
  const char *at_text;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  carp_buf_printf(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s,",
                  CLASS);
  carp_buf_puts(
      &b,
      "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\","
      "\"metadata\":{\"name\":\"default\",\"uid\":\"p-default\"},\"spec\":{"
      "\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"carpenter.dev\","
      "\"kind\":\"ProxmoxNodeClass\",\"name\":\"default\"},"
      "\"requirements\":[{\"key\":\"node.kubernetes.io/instance-type\","
      "\"operator\":\"In\",\"values\":[\"c1.2VCPU-4GB\"]}]}},"
      "\"disruption\":{\"consolidationPolicy\":\"WhenEmpty\","
      "\"consolidateAfter\":\"30s\"}},\"status\":{\"conditions\":[{"
      "\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\","
      "\"message\":\"\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
  node_as(&b, "n1", 4, "h1", 1);
  pod(&b, "a1", "n1", "1200m", "");
  pod(&b, "a2", "n1", "1200m", "");
  carp_buf_puts(&b, "]}");
  write_file(dir, "drift.json", b.ptr, path, sizeof(path));
  paths[0] = path;
  assert_int_equal(carp_simulation_load(paths, 1, NULL, 0, &s, &err), 0);
  assert_int_equal(carp_simulation_run(s, at("2026-01-01T01:00:00Z")), 0);
  assert_int_equal(s->decision, SIM_REPLACE);
  assert_string_equal(s->method, "drift");
  assert_int_equal(s->nrepls, 2);
  assert_string_equal(s->repls[0].types[0], "c1.2VCPU-4GB");
  assert_string_equal(s->repls[1].types[0], "c1.2VCPU-4GB");

  carp_buf_init(&report, CARP_BUF_UNLIMITED);
  carp_simulation_report_text(s, &report);
  assert_non_null(strstr(report.ptr, "Consolidation: replace 1 NodeClaim "
                                     "(drift), saving 0.0000/h\n"));
  at_text = strstr(report.ptr, "  2 replacements:\n");
  assert_non_null(at_text);
  at_text = strstr(at_text, "    - nodepool default, 0.0760/h, options "
                            "c1.2VCPU-4GB\n");
  assert_non_null(at_text);
  assert_non_null(strstr(at_text + 1, "    - nodepool default, 0.0760/h, "
                                      "options c1.2VCPU-4GB\n"));
  carp_buf_reset(&report);
  carp_simulation_report_json(s, &report);
  {
    yajl_val root = yajl_tree_parse(report.ptr, NULL, 0);
    const char *rp[] = {"consolidation", "replacements", NULL};
    const char *first[] = {"consolidation", "replacement", "nodePool", NULL};
    yajl_val v;
    assert_non_null(root);
    v = yajl_tree_get(root, rp, yajl_t_array);
    assert_non_null(v);
    assert_int_equal(v->u.array.len, 2);
    v = yajl_tree_get(root, first, yajl_t_string);
    assert_non_null(v);
    assert_string_equal(v->u.string, "default");
    yajl_tree_free(root);
  }
  carp_buf_free(&report);
  carp_buf_free(&b);
  carp_simulation_free(s);
}

struct bad {
  const char *name;
  const char *text;
  int as_nodepool;
  const char *want; /* the message after "<dir>/" */
};

static void test_bad_snapshots(void **state)
{
  const char *dir = *state;
  static const struct bad bad[] = {
      {"garbage.yaml", "a: [1,\n", 0,
       "garbage.yaml:2:1: invalid YAML: did not find expected node content "
       "while parsing a flow node"},
      {"scalar.yaml", "just words\n", 0,
       "scalar.yaml: document 1 (line 1): not an object"},
      {"service.yaml",
       "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: "
       "{name: a, namespace: x}\n  spec: {containers: []}\n- apiVersion: v1\n"
       "  kind: Service\n  metadata: {name: web, namespace: shop}\nkind: "
       "List\n",
       0,
       "service.yaml: document 1, item 1 (line 7): Service shop/web: kind "
       "Service is not part of a snapshot (carpenter simulate reads Pod, "
       "Node, NodeClaim, NodePool, ProxmoxNodeClass, PodDisruptionBudget and "
       "DaemonSet)"},
      {"v1beta1.yaml",
       "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: "
       "old}\n",
       0,
       "v1beta1.yaml: document 1 (line 1): NodePool old: apiVersion "
       "karpenter.sh/v1beta1: carpenter simulate reads NodePool "
       "karpenter.sh/v1"},
      {"nokind.json", "{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}",
       0, "nokind.json: document 1: object x: missing kind"},
      {"noname.yaml", "---\n---\napiVersion: v1\nkind: Node\nmetadata: {}\n", 0,
       "noname.yaml: document 2 (line 3): Node (no name): missing "
       "metadata.name"},
      {"badcpu.json",
       "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[{\"apiVersion\":"
       "\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
       "\"n\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
       "\"requests\":{\"cpu\":\"lots\"}}}]}}]}",
       0, "badcpu.json: document 1, item 0: Pod n/p: "},
      {"nospec.json",
       "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}",
       0, "nospec.json: document 1: Pod p: spec: required"},
      {"twice.yaml",
       "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\napiVersion: "
       "v1\nkind: Node\nmetadata: {name: n}\n",
       0,
       "twice.yaml: document 2 (line 5): Node n: appears twice in the "
       "snapshot"},
      {"array.json", "[{\"kind\":\"Pod\"}]", 0,
       "array.json: document 1: a JSON array: a snapshot is a List (kubectl "
       "get -o json) or single objects"},
      {"items.yaml", "kind: Pod\napiVersion: v1\nitems: []\n", 0,
       "items.yaml: document 1 (line 1): has items but is not a List (kind "
       "Pod): a snapshot is a List or single objects"},
      {"pod-as-pool.yaml",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", 1,
       "pod-as-pool.yaml: document 1 (line 1): Pod p: --nodepool files hold "
       "NodePools only"},
      {"bad-pool.yaml",
       "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\n"
       "spec:\n  weight: 500\n  template:\n    spec:\n      nodeClassRef: "
       "{group: carpenter.dev, kind: ProxmoxNodeClass, name: default}\n"
       "      requirements: []\n",
       1,
       "bad-pool.yaml: document 1 (line 1): NodePool np: invalid: "
       "spec.weight: Invalid value: 500: should be less than or equal to "
       "100"},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct carp_simulation *s = NULL;
    char path[512], want[1024], *err = NULL;
    const char *paths[1];
    write_file(dir, bad[i].name, bad[i].text, path, sizeof(path));
    paths[0] = path;
    if (bad[i].as_nodepool)
      assert_int_equal(carp_simulation_load(NULL, 0, paths, 1, &s, &err),
                       CARP_EINVALID);
    else
      assert_int_equal(carp_simulation_load(paths, 1, NULL, 0, &s, &err),
                       CARP_EINVALID);
    assert_null(s);
    assert_non_null(err);
    snprintf(want, sizeof(want), "%s/%s", dir, bad[i].want);
    if (strncmp(err, want, strlen(want)))
      fail_msg("%s:\n got: %s\nwant: %s", bad[i].name, err, want);
    carp_free(err);
  }
  {
    struct carp_simulation *s = NULL;
    char *err = NULL;
    const char *paths[1] = {"/nonexistent/snap.yaml"};
    assert_int_equal(carp_simulation_load(paths, 1, NULL, 0, &s, &err),
                     CARP_ENOENT);
    assert_string_equal(err, "/nonexistent/snap.yaml: No such file or "
                             "directory");
    carp_free(err);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_matches_yajl),
      cmocka_unit_test(test_json_rejects),
      cmocka_unit_test(test_lists_and_documents),
      cmocka_unit_test(test_yaml_scalars),
      cmocka_unit_test(test_yaml_rejects),
      cmocka_unit_test(test_threaded_order),
      cmocka_unit_test(test_threaded_errors),
      cmocka_unit_test(test_offline_provider),
      cmocka_unit_test_setup_teardown(test_simulation, carp_test_tmpdir_setup,
                                      carp_test_tmpdir_teardown),
      cmocka_unit_test_setup_teardown(test_drift_replacements,
                                      carp_test_tmpdir_setup,
                                      carp_test_tmpdir_teardown),
      cmocka_unit_test_setup_teardown(test_bad_snapshots,
                                      carp_test_tmpdir_setup,
                                      carp_test_tmpdir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
