/* Unit tests for the pure parts of internal/provider/proxmox: the
 * --pve-config parser (errors with file:line:col, secrets never echoed),
 * form encoding (every special byte escaped; sshkeys encoded twice),
 * error classification, UPIDs and exit statuses, user-data rendering, the
 * NoCloud ISO builder (read back like Linux does: Rock Ridge NM names and
 * a Joliet tree), and the VM description / smbios1 helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/base64.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/pve.h"
#include "pve_int.h"
#include "tmpdir.h"

#define FP                                                                     \
  "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:"   \
  "22:33:44:55:66:77:88:99"

/* --- config ------------------------------------------------------------------
 */

static int parse(const char *text, struct carp_pve_config *c, char **err)
{
  return carp_pve_config_parse(text, strlen(text), "pve.yaml", c, err);
}

static void test_config_ok(void **state)
{
  struct carp_pve_config c;
  char *err = NULL;
  (void)state;
  assert_int_equal(parse("clusters:\n"
                         "  - region: lab\n"
                         "    url: https://pve1:8006/api2/json\n"
                         "    tokenID: carpenter@pve!ctl\n"
                         "    tokenSecret: s3cr3t\n"
                         "    fingerprint: \"" FP "\"\n"
                         "  - region: dc2\n"
                         "    url: https://pve9.example.org:8006/\n"
                         "    tokenID: c@pam!x\n"
                         "    tokenSecret: other\n"
                         "    insecure: true\n",
                         &c, &err),
                   0);
  assert_null(err);
  assert_int_equal(c.nclusters, 2);
  assert_string_equal(c.clusters[0].region, "lab");
  assert_string_equal(c.clusters[0].url, "https://pve1:8006/api2/json");
  assert_string_equal(c.clusters[0].token_id, "carpenter@pve!ctl");
  assert_string_equal(c.clusters[0].token_secret, "s3cr3t");
  assert_string_equal(c.clusters[0].fingerprint, FP);
  assert_false(c.clusters[0].insecure);
  assert_string_equal(c.clusters[1].url,
                      "https://pve9.example.org:8006/api2/json");
  assert_true(c.clusters[1].insecure);
  carp_pve_config_free(&c);
}

static void test_config_secret_file(void **state)
{
  char path[300], text[512];
  struct carp_pve_config c;
  char *err = NULL;
  FILE *f;
  snprintf(path, sizeof(path), "%s/secret", (const char *)*state);
  f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs("from-file\n", f) >= 0);
  assert_int_equal(fclose(f), 0);
  snprintf(
      text, sizeof(text),
      "clusters:\n- region: lab\n  url: https://h:8006\n  tokenID: a@pve!b\n"
      "  tokenSecretFile: %s\n",
      path);
  assert_int_equal(parse(text, &c, &err), 0);
  assert_string_equal(c.clusters[0].token_secret, "from-file");
  carp_pve_config_free(&c);
  unlink(path);
  assert_int_equal(parse(text, &c, &err), CARP_ECONFIG);
  assert_non_null(strstr(err, "pve.yaml:5:"));
  assert_non_null(strstr(err, "tokenSecretFile"));
  carp_free(err);
}

static void expect_error(const char *text, const char *where, const char *what)
{
  struct carp_pve_config c;
  char *err = NULL;
  assert_int_equal(parse(text, &c, &err), CARP_ECONFIG);
  assert_non_null(err);
  if (!strstr(err, where) || !strstr(err, what))
    fail_msg("error %s lacks %s / %s", err, where, what);
  assert_null(strstr(err, "hunter2")); /* the secret is never echoed */
  carp_free(err);
}

static void test_config_errors(void **state)
{
  (void)state;
  expect_error("clusters: []\n", "pve.yaml:1:", "non-empty list");
  expect_error("cluster:\n- region: a\n",
               "pve.yaml:2:", "unknown key \"cluster\"");
  expect_error(
      "clusters:\n- url: https://h\n  tokenID: a@b!c\n  tokenSecret: hunter2\n",
      "pve.yaml:2:3", "region is required");
  expect_error("clusters:\n- region: lab\n  url: https://h\n  tokenID: a@b!c\n"
               "  tokenSecret: hunter2\n  tokenSecrt: x\n",
               "pve.yaml:6:", "unknown key \"tokenSecrt\"");
  expect_error("clusters:\n- region: lab\n  url: ftp://h\n  tokenID: a@b!c\n"
               "  tokenSecret: hunter2\n",
               "pve.yaml:3:8", "url: must start with https://");
  expect_error(
      "clusters:\n- region: lab\n  url: http://h:8006\n  tokenID: a@b!c\n"
      "  tokenSecret: hunter2\n",
      "pve.yaml:3:8", "url: must start with https://");
  /* Found by fuzz_pveconfig: "https:///h" passed for a URL. */
  expect_error("clusters:\n- region: lab\n  url: https:///h\n  tokenID: a@b!c\n"
               "  tokenSecret: hunter2\n",
               "pve.yaml:3:8", "url: must name a host after https://");
  expect_error("clusters:\n- region: lab\n  url: \"https://h x\"\n"
               "  tokenID: a@b!c\n  tokenSecret: hunter2\n",
               "pve.yaml:3:8", "hold no spaces");
  expect_error("clusters:\n- region: lab\n  url: https://h\n  tokenID: root\n"
               "  tokenSecret: hunter2\n",
               "pve.yaml:4:", "user@realm!tokenname");
  expect_error("clusters:\n- region: lab\n  url: https://h\n  tokenID: a@b!c\n",
               "pve.yaml:2:", "exactly one of tokenSecret and tokenSecretFile");
  expect_error("clusters:\n- region: lab\n  url: https://h\n  tokenID: a@b!c\n"
               "  tokenSecret: hunter2\n  fingerprint: AA:BB\n",
               "pve.yaml:6:", "SHA-256");
  expect_error(
      "clusters:\n- region: lab\n  url: https://h\n  tokenID: a@b!c\n"
      "  tokenSecret: hunter2\n  insecure: true\n  fingerprint: \"" FP "\"\n",
      "pve.yaml:2:", "at most one of caFile, fingerprint and insecure");
  expect_error("clusters:\n- region: lab\n  url: https://h\n  tokenID: a@b!c\n"
               "  tokenSecret: hunter2\n  caFile: /nonexistent/ca.pem\n",
               "pve.yaml:6:", "caFile: /nonexistent/ca.pem");
  expect_error(
      "clusters:\n- region: \"la b\"\n  url: https://h\n  tokenID: a@b!c\n"
      "  tokenSecret: hunter2\n",
      "pve.yaml:2:", "not a valid label value");
  expect_error("clusters:\n- region: lab\n  url: https://h\n  tokenID: a@b!c\n"
               "  tokenSecret: hunter2\n- region: lab\n  url: https://h\n  "
               "tokenID: a@b!c\n"
               "  tokenSecret: hunter2\n",
               "pve.yaml:6:", "appears twice");
  expect_error(
      "clusters:\n- region: lab\n  url: [https://h]\n  tokenID: a@b!c\n"
      "  tokenSecret: hunter2\n",
      "pve.yaml:3:", "url: must be a string");
}

/* --- forms and errors
 * ----------------------------------------------------------- */

static void test_form(void **state)
{
  struct carp_pve_form f;
  const char *keys[] = {"ssh-ed25519 AAAA+b/c= me@host", "ssh-rsa AAAB x"};
  (void)state;
  carp_pve_form_init(&f);
  carp_pve_form_add(&f, "boot", "order=scsi0;ide2");
  carp_pve_form_add(&f, "tags", "a;b c");
  carp_pve_form_add(&f, "smbios1", "uuid=1,serial=YQ==,base64=1");
  carp_pve_form_add_int(&f, "cores", 4);
  carp_pve_form_add_sshkeys(&f, keys, 2);
  assert_string_equal(
      carp_buf_cstr(&f.buf),
      "boot=order%3Dscsi0%3Bide2&tags=a%3Bb%20c"
      "&smbios1=uuid%3D1%2Cserial%3DYQ%3D%3D%2Cbase64%3D1&cores=4"
      "&sshkeys=ssh-ed25519%2520AAAA%252Bb%252Fc%253D%2520me%2540host"
      "%250Assh-rsa%2520AAAB%2520x");
  carp_pve_form_free(&f);
}

static void test_classify(void **state)
{
  (void)state;
  assert_int_equal(
      carp_pve_classify("unable to create VM 100: config file already exists",
                        CARP_EHTTP),
      CARP_EEXIST);
  assert_int_equal(
      carp_pve_classify("Configuration file 'nodes/pve1/qemu-server/1.conf' "
                        "does not exist",
                        CARP_EHTTP),
      CARP_ENOTFOUND);
  assert_int_equal(carp_pve_classify("VM is locked (clone)", CARP_ETASK),
                   CARP_EAGAIN);
  assert_int_equal(
      carp_pve_classify("can't lock file '/var/lock/qemu-server/lock-1.conf' "
                        "- got timeout",
                        CARP_ETASK),
      CARP_EAGAIN);
  assert_int_equal(
      carp_pve_classify("cluster not ready - no quorum?", CARP_EHTTP),
      CARP_EUNAVAIL);
  assert_int_equal(
      carp_pve_classify("start failed: QEMU exited with code 1", CARP_ETASK),
      CARP_ETASK);
  assert_int_equal(carp_pve_classify(NULL, CARP_ETASK), CARP_ETASK);
}

static void test_upid(void **state)
{
  struct carp_pve_upid u;
  (void)state;
  assert_int_equal(
      carp_pve_upid_parse("UPID:pve-mp:00000ACD:00006AE8:679A423B:qmclone:112:"
                          "capmox@pve!capi:",
                          &u),
      0);
  assert_string_equal(u.node, "pve-mp");
  assert_int_equal(u.pid, 0xACD);
  assert_int_equal(u.pstart, 0x6AE8);
  assert_int_equal(u.starttime, 0x679A423B);
  assert_string_equal(u.type, "qmclone");
  assert_string_equal(u.id, "112");
  assert_string_equal(u.user, "capmox@pve!capi");
  /* 9-digit pstart, empty id */
  assert_int_equal(
      carp_pve_upid_parse("UPID:pve1:0001A2B0:109A409BE:6B02D756:imgcopy::"
                          "root@pam:",
                          &u),
      0);
  assert_int_equal(u.pstart, 0x109A409BEULL);
  assert_string_equal(u.id, "");
  assert_int_equal(
      carp_pve_upid_parse("UPID:pve1:0001A2B0:09A409BE:6B02D756:qmstart:1:"
                          "root@pam",
                          &u),
      CARP_EPARSE); /* no trailing colon */
  assert_int_equal(
      carp_pve_upid_parse("UPID:-bad:0001A2B0:09A409BE:6B02D756:x:1:u:", &u),
      CARP_EPARSE);
  assert_int_equal(
      carp_pve_upid_parse("UPID:pve1:1A2B0:09A409BE:6B02D756:x:1:u:", &u),
      CARP_EPARSE);
  assert_int_equal(
      carp_pve_upid_parse("upid:pve1:0001A2B0:09A409BE:6B02D756:x:1:u:", &u),
      CARP_EPARSE);
  assert_int_equal(carp_pve_upid_parse(NULL, &u), CARP_EPARSE);
}

/* The first poll of a task waits nine tenths of the quickest of the last
 * eight of its kind that succeeded. */
static void test_task_pace(void **state)
{
  static struct pve_region r; /* zeroed: nothing learnt */
  char key[80], other[8];
  int i;
  (void)state;
  pve_pace_key("UPID:pve1:0001A2B0:09A409BE:6B02D756:qmclone:9000:root@pam:",
               key, sizeof(key));
  assert_string_equal(key, "qmclone:9000");
  pve_pace_key("UPID:pve1:0001A2B0:09A409BE:6B02D756:qmstart:104:root@pam:",
               key, sizeof(key));
  assert_string_equal(key, "qmstart");
  pve_pace_key("not a upid", key, sizeof(key));
  assert_string_equal(key, "?");
  assert_int_equal(pve_pace_first_ms(&r, "qmstart", 100), 100);
  pve_pace_learn(&r, "qmstart", 2000);
  pve_pace_learn(&r, "qmstart", 1500);
  pve_pace_learn(&r, "qmstart", 3000);
  assert_int_equal(pve_pace_first_ms(&r, "qmstart", 100), 1350);
  /* Each kind apart. */
  assert_int_equal(pve_pace_first_ms(&r, "qmclone:9000", 100), 100);
  /* A quick one is remembered, and never makes the first poll sooner than
   * the configured one. */
  pve_pace_learn(&r, "qmstart", 50);
  assert_int_equal(pve_pace_first_ms(&r, "qmstart", 100), 100);
  /* Eight later ones push it out. */
  for (i = 0; i < 8; i++)
    pve_pace_learn(&r, "qmstart", 4000 + (uint64_t)i);
  assert_int_equal(pve_pace_first_ms(&r, "qmstart", 100), 3600);
  /* A new kind beyond the table's room takes the oldest kind's place. */
  for (i = 0; i < PVE_PACE_KINDS; i++) {
    snprintf(other, sizeof(other), "k%d", i);
    pve_pace_learn(&r, other, 1000);
  }
  assert_int_equal(pve_pace_first_ms(&r, "qmstart", 100), 100);
  assert_int_equal(pve_pace_first_ms(&r, "k0", 100), 900);
  assert_int_equal(r.npaces, PVE_PACE_KINDS);
}

/* A first poll that found the task running (the next came first_ms or
 * more later) makes the next four wait the whole quickest time; then nine
 * tenths is tried again. */
static void test_task_pace_patience(void **state)
{
  static struct pve_region r;
  uint64_t at;
  int follow, i;
  (void)state;
  pve_pace_learn(&r, "qmconfig", 330);
  at = pve_pace_begin(&r, "qmconfig", 100, &follow);
  assert_false(follow);
  assert_int_equal(at, 297);
  pve_pace_end(&r, "qmconfig", 1, 500, at, 100); /* 297 was too early */
  for (i = 0; i < 4; i++) {
    at = pve_pace_begin(&r, "qmconfig", 100, &follow);
    assert_int_equal(at, 330);
    pve_pace_end(&r, "qmconfig", 1, 332, at, 100); /* seen at once */
  }
  assert_int_equal(pve_pace_first_ms(&r, "qmconfig", 100), 297);
  /* A failed task teaches nothing. */
  at = pve_pace_begin(&r, "qmconfig", 100, &follow);
  pve_pace_end(&r, "qmconfig", 0, 900, at, 100);
  assert_int_equal(pve_pace_first_ms(&r, "qmconfig", 100), 297);
  assert_int_equal(r.paces[0].waiting, 0);
}

/* Tasks of a kind nothing is known of: the first climbs from first_ms, the
 * others follow (poll at the slow pace) until one has succeeded. */
static void test_task_pace_followers(void **state)
{
  static struct pve_region r;
  int follow;
  (void)state;
  assert_int_equal(pve_pace_begin(&r, "qmclone:9000", 100, &follow), 100);
  assert_false(follow);
  assert_int_equal(pve_pace_begin(&r, "qmclone:9000", 100, &follow), 0);
  assert_true(follow);
  assert_int_equal(pve_pace_begin(&r, "qmclone:9001", 100, &follow), 100);
  assert_false(follow); /* another kind */
  /* The first one failing teaches nothing: the next still follows. */
  pve_pace_end(&r, "qmclone:9000", 0, 2000, 100, 100);
  pve_pace_begin(&r, "qmclone:9000", 100, &follow);
  assert_true(follow);
  pve_pace_end(&r, "qmclone:9000", 1, 2200, 0, 100);
  assert_int_equal(pve_pace_begin(&r, "qmclone:9000", 100, &follow), 1980);
  assert_false(follow);
}

static void test_exitstatus(void **state)
{
  (void)state;
  assert_true(carp_pve_exitstatus_ok("OK"));
  assert_true(carp_pve_exitstatus_ok("WARNINGS: 2"));
  assert_false(carp_pve_exitstatus_ok("WARNINGS: "));
  assert_false(carp_pve_exitstatus_ok("WARNINGS: x"));
  assert_false(carp_pve_exitstatus_ok("unexpected status"));
  assert_false(carp_pve_exitstatus_ok("clone failed: got timeout"));
  assert_false(carp_pve_exitstatus_ok(NULL));
}

/* --- user-data
 * ---------------------------------------------------------------- */

static int task_status(const char *json, int *err, const char **msg)
{
  static yajl_val v;
  carp_json_free(v);
  v = NULL;
  assert_int_equal(carp_json_parse(json, strlen(json), &v, NULL), 0);
  return pve_task_status_decode(v, err, msg);
}

static void test_task_status(void **state)
{
  const char *msg = NULL;
  int err = 0;
  (void)state;
  assert_int_equal(task_status("{\"status\":\"running\"}", &err, &msg), 1);
  assert_int_equal(task_status("{\"status\":\"stopped\",\"exitstatus\":"
                               "\"WARNINGS: 2\"}",
                               &err, &msg),
                   0);
  assert_int_equal(err, 0);
  assert_string_equal(msg, "WARNINGS: 2");
  task_status("{\"status\":\"stopped\",\"exitstatus\":\"VM is locked\"}", &err,
              &msg);
  assert_int_equal(err, CARP_EAGAIN);
  task_status("{\"exitstatus\":\"OK\"}", &err, &msg);
  assert_int_equal(err, CARP_EPARSE);
  assert_string_equal(msg, "task status without a status field");
  /* An empty exit status is an error, and an error has a message. */
  task_status("{\"status\":\"stopped\",\"exitstatus\":\"\"}", &err, &msg);
  assert_int_equal(err, CARP_ETASK);
  assert_string_equal(msg, "unexpected status");
  task_status("[]", &err, &msg); /* frees the last parse */
}

static void test_render(void **state)
{
  static const struct carp_userdata_var vars[] = {
      {"ProviderID", "proxmox://lab/101"},
      {"NodeName", "n-1"},
      {"Empty", NULL}};
  const char *t =
      "id={{ .ProviderID }} name={{.NodeName}} x={{   .NodeName   }}"
      " e=[{{ .Empty }}] jinja={{ v1.local_hostname }} {{ not a var }} {{";
  struct carp_buf out;
  char *err = NULL;
  (void)state;
  carp_buf_init(&out, 4096);
  assert_int_equal(carp_userdata_render(t, strlen(t), vars, 3, &out, &err), 0);
  assert_string_equal(
      carp_buf_cstr(&out),
      "id=proxmox://lab/101 name=n-1 x=n-1 e=[] jinja={{ v1.local_hostname }}"
      " {{ not a var }} {{");
  carp_buf_reset(&out);
  t = "a {{ .Nope }} b";
  assert_int_equal(carp_userdata_render(t, strlen(t), vars, 3, &out, &err),
                   CARP_EINVALID);
  assert_non_null(strstr(err, "unknown variable .Nope"));
  assert_non_null(strstr(err, ".ProviderID"));
  carp_free(err);
  carp_buf_free(&out);
}

/* --- ISO
 * ------------------------------------------------------------------------ */

static uint32_t le32(const unsigned char *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Finds a Rock Ridge NM name in a directory record. */
static int rr_name(const unsigned char *rec, char *out, size_t size)
{
  size_t len = rec[0], nlen = rec[32];
  size_t su = 33 + nlen + (nlen % 2 == 0 ? 1 : 0);
  while (su + 4 <= len) {
    size_t l = rec[su + 2];
    if (l < 4)
      break;
    if (rec[su] == 'N' && rec[su + 1] == 'M') {
      snprintf(out, size, "%.*s", (int)(l - 5), (const char *)rec + su + 5);
      return 1;
    }
    su += l;
  }
  return 0;
}

static void test_iso(void **state)
{
  struct carp_iso_file files[] = {
      {"user-data", "#cloud-config\n", 14},
      {"meta-data", "instance-id: x\n", 15},
      {"network-config", "", 0},
  };
  struct carp_buf img;
  const unsigned char *d, *pvd, *svd, *root;
  size_t pos, found = 0, jfound = 0;
  (void)state;
  carp_buf_init(&img, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_iso_build("cidata", files, 3, &img), 0);
  assert_int_equal(img.len % 2048, 0);
  d = (const unsigned char *)img.ptr;
  pvd = d + 16 * 2048;
  svd = d + 17 * 2048;
  assert_int_equal(pvd[0], 1);
  assert_memory_equal(pvd + 1, "CD001", 5);
  assert_memory_equal(pvd + 40, "cidata  ", 8);
  assert_int_equal(le32(pvd + 80) * 2048, img.len);
  assert_int_equal(svd[0], 2);
  assert_memory_equal(svd + 88, "%/E", 3);
  assert_memory_equal(svd + 40, "\0c\0i\0d\0a\0t\0a\0 ", 13);
  assert_int_equal(d[18 * 2048], 255);
  /* primary root: ".", "..", then files with NM names */
  root = d + (size_t)le32(pvd + 156 + 2) * 2048;
  assert_memory_equal(root + 34, "SP\x07\x01\xbe\xef", 6);
  for (pos = 0; pos < 2048 && root[pos];) {
    const unsigned char *rec = root + pos;
    char name[64];
    if (rec[32] == 1 && (rec[33] == 0 || rec[33] == 1)) {
      pos += rec[0];
      continue;
    }
    assert_true(rr_name(rec, name, sizeof(name)));
    if (!strcmp(name, "user-data")) {
      assert_memory_equal(rec + 33, "USER_DAT.;1", 11);
      assert_int_equal(le32(rec + 10), 14);
      assert_memory_equal(d + (size_t)le32(rec + 2) * 2048, "#cloud-config\n",
                          14);
      found++;
    } else if (!strcmp(name, "meta-data") || !strcmp(name, "network-config")) {
      found++;
    }
    pos += rec[0];
  }
  assert_int_equal(found, 3);
  /* Joliet root: UCS-2 names */
  root = d + (size_t)le32(svd + 156 + 2) * 2048;
  for (pos = 0; pos < 2048 && root[pos];) {
    const unsigned char *rec = root + pos;
    if (rec[32] == 22 && !memcmp(rec + 33,
                                 "\0m\0e\0t\0a\0-\0d\0a\0t\0a\0;\0"
                                 "1",
                                 22))
      jfound++;
    if (rec[32] == 22 && !memcmp(rec + 33,
                                 "\0u\0s\0e\0r\0-\0d\0a\0t\0a\0;\0"
                                 "1",
                                 22))
      jfound++;
    pos += rec[0];
  }
  assert_int_equal(jfound, 2);
  carp_buf_free(&img);
}

/* --- descriptions, smbios
 * ----------------------------------------------------- */

static void test_description(void **state)
{
  struct carp_buf b;
  struct pve_desc d;
  char out[64];
  (void)state;
  carp_buf_init(&b, 4096);
  pve_description_build(&b, "default-x7k2p", "5f0e-uid", "default", "pxnc",
                        "prod", "lab/9000");
  assert_string_equal(carp_buf_cstr(&b), "Managed by Carpenter; do not edit.\n"
                                         "nodeclaim: default-x7k2p\n"
                                         "nodeclaim-uid: 5f0e-uid\n"
                                         "nodepool: default\nnodeclass: pxnc\n"
                                         "cluster: prod\nimage: lab/9000\n");
  memset(&d, 0, sizeof(d));
  pve_description_parse(carp_buf_cstr(&b), &d);
  assert_string_equal(d.nodeclaim, "default-x7k2p");
  assert_string_equal(d.uid, "5f0e-uid");
  assert_string_equal(d.nodepool, "default");
  assert_string_equal(d.nodeclass, "pxnc");
  assert_string_equal(d.cluster, "prod");
  assert_string_equal(d.image, "lab/9000");
  pve_description_parse("nodeclaim-uid:   spaced  \r\nother: x", &d);
  assert_string_equal(d.uid, "spaced");
  assert_string_equal(d.nodeclaim, "");
  /* Found by fuzz_pve: a value too long for its field was cut (another
   * name, and one a second read saw differently); it is no value now. */
  carp_buf_reset(&b);
  carp_buf_puts(&b, "nodeclaim: a\nnodeclaim-uid: ");
  for (size_t i = 0; i < sizeof(d.uid); i++)
    carp_buf_puts(&b, i == 62 ? " " : "u");
  carp_buf_puts(&b, "\nnodepool: p\n");
  pve_description_parse(carp_buf_cstr(&b), &d);
  assert_string_equal(d.nodeclaim, "a");
  assert_string_equal(d.uid, "");
  assert_string_equal(d.nodepool, "p");
  carp_buf_free(&b);

  pve_prop_get("virtio=AA:BB,bridge=vmbr0,firewall=1", "bridge", out,
               sizeof(out));
  assert_string_equal(out, "vmbr0");
  pve_prop_get("virtio=AA:BB,bridge=vmbr0", "tag", out, sizeof(out));
  assert_string_equal(out, "");
  pve_smbios_sku("uuid=1,serial=eA==,sku=czEuMlZDUFUtOEdC,base64=1", out,
                 sizeof(out));
  assert_string_equal(out, "s1.2VCPU-8GB");
  pve_smbios_sku("uuid=1,sku=plain", out, sizeof(out));
  assert_string_equal(out, "plain");
  pve_smbios_sku(NULL, out, sizeof(out));
  assert_string_equal(out, "");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_ok),
      cmocka_unit_test_setup_teardown(test_config_secret_file,
                                      carp_test_tmpdir_setup,
                                      carp_test_tmpdir_teardown),
      cmocka_unit_test(test_config_errors),
      cmocka_unit_test(test_form),
      cmocka_unit_test(test_classify),
      cmocka_unit_test(test_upid),
      cmocka_unit_test(test_task_pace),
      cmocka_unit_test(test_task_pace_patience),
      cmocka_unit_test(test_task_pace_followers),
      cmocka_unit_test(test_exitstatus),
      cmocka_unit_test(test_task_status),
      cmocka_unit_test(test_render),
      cmocka_unit_test(test_iso),
      cmocka_unit_test(test_description),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
