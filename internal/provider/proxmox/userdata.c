/* userdata.c: bootstrap mode UserData - the per-node NoCloud seed.
 *
 * The user's template (a Secret value the controller hands over) is plain
 * text with {{ .Name }} placeholders for a fixed set of variables
 * (docs/api.md, Bootstrap): substitution only, no quoting, no logic. An
 * unknown .Name is an error, so a typo fails the launch loudly
 * (UserDataRenderFailed) instead of booting a node that never joins; any
 * other {{ ... }} text - cloud-init's own Jinja, say - is left alone.
 *
 * Next to user-data the seed holds meta-data (instance-id = the VM's SMBIOS
 * uuid, local-hostname = the node name) and a version 2 network-config
 * matching the first NIC by MAC with the NodeClass's DHCP/SLAAC,
 * nameservers and search domains; iso.c packs the three into an image. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "pve_int.h"

static int ident_char(char c)
{
  return isalnum((unsigned char)c) || c == '_';
}

int carp_userdata_render(const char *tmpl, size_t len,
                         const struct carp_userdata_var *vars, size_t nvars,
                         struct carp_buf *out, char **err)
{
  size_t i = 0, k;
  if (err)
    *err = NULL;
  while (i < len) {
    const char *open = NULL;
    size_t j;
    for (j = i; j + 1 < len; j++)
      if (tmpl[j] == '{' && tmpl[j + 1] == '{') {
        open = tmpl + j;
        break;
      }
    if (!open) {
      carp_buf_append(out, tmpl + i, len - i);
      break;
    }
    carp_buf_append(out, tmpl + i, (size_t)(open - tmpl) - i);
    /* {{ <spaces> .Name <spaces> }} */
    {
      size_t p = (size_t)(open - tmpl) + 2, ns, nl;
      while (p < len && (tmpl[p] == ' ' || tmpl[p] == '\t'))
        p++;
      if (p < len && tmpl[p] == '.' && p + 1 < len &&
          (isalpha((unsigned char)tmpl[p + 1]) || tmpl[p + 1] == '_')) {
        ns = p + 1;
        nl = 0;
        while (ns + nl < len && ident_char(tmpl[ns + nl]))
          nl++;
        p = ns + nl;
        while (p < len && (tmpl[p] == ' ' || tmpl[p] == '\t'))
          p++;
        if (p + 1 < len && tmpl[p] == '}' && tmpl[p + 1] == '}') {
          for (k = 0; k < nvars; k++)
            if (strlen(vars[k].name) == nl &&
                !strncmp(vars[k].name, tmpl + ns, nl))
              break;
          if (k == nvars) {
            if (err) {
              struct carp_buf e;
              carp_buf_init(&e, 4096);
              carp_buf_puts(&e, "unknown variable .");
              carp_buf_append(&e, tmpl + ns, nl > 100 ? 100 : nl);
              carp_buf_puts(&e, " in the user-data template (known:");
              for (k = 0; k < nvars; k++)
                carp_buf_printf(&e, " .%s", vars[k].name);
              carp_buf_puts(&e, ")");
              *err = carp_buf_steal(&e, NULL);
            }
            return CARP_EINVALID;
          }
          carp_buf_puts(out, vars[k].value ? vars[k].value : "");
          i = p + 2;
          continue;
        }
      }
      /* Not ours: copy the braces and go on. */
      carp_buf_append(out, open, 2);
      i = (size_t)(open - tmpl) + 2;
    }
  }
  return out->overflowed ? CARP_ETOOBIG : 0;
}

static void yaml_list(struct carp_buf *b, char *const *v, size_t n)
{
  size_t i;
  carp_buf_putc(b, '[');
  for (i = 0; i < n; i++)
    carp_buf_printf(b, "%s\"%s\"", i ? ", " : "", v[i]);
  carp_buf_putc(b, ']');
}

struct kv {
  char key[320];
  char value[128];
};

static void kv_set(struct kv *v, size_t *n, size_t cap, const char *key,
                   size_t klen, const char *value, size_t vlen)
{
  size_t i;
  for (i = 0; i < *n; i++)
    if (strlen(v[i].key) == klen && !strncmp(v[i].key, key, klen))
      break;
  if (i == *n) {
    if (*n == cap)
      return;
    (*n)++;
  }
  snprintf(v[i].key, sizeof(v[i].key), "%.*s", (int)klen, key);
  snprintf(v[i].value, sizeof(v[i].value), "%.*s", (int)vlen, value);
}

static int kv_cmp(const void *a, const void *b)
{
  return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

/* The claim's labels (k=v,k=v) plus what the offering resolved, sorted. */
static void labels(const struct pve_vm_spec *s, const char *region,
                   const char *zone, const struct pve_type *t,
                   struct carp_buf *out)
{
  struct kv v[160];
  size_t n = 0, i;
  const char *p = s->var_labels ? s->var_labels : "";
  char num[32];
  while (*p) {
    size_t len = strcspn(p, ","), eq = strcspn(p, "=");
    if (eq < len)
      kv_set(v, &n, 160, p, eq, p + eq + 1, len - eq - 1);
    p += len;
    if (*p)
      p++;
  }
#define SET(k, val) kv_set(v, &n, 160, k, strlen(k), val, strlen(val))
  SET("node.kubernetes.io/instance-type", t->name);
  SET("topology.kubernetes.io/region", region);
  SET("topology.kubernetes.io/zone", zone);
  SET("karpenter.sh/capacity-type", CARP_CAPACITY_TYPE_ON_DEMAND);
  SET("kubernetes.io/arch", "amd64");
  SET("kubernetes.io/os", "linux");
  if (t->family[0])
    SET("carpenter.dev/instance-family", t->family);
  snprintf(num, sizeof(num), "%d", (int)t->cpu);
  SET("carpenter.dev/instance-cpu", num);
  snprintf(num, sizeof(num), "%lld", (long long)(t->memory / (1024 * 1024)));
  SET("carpenter.dev/instance-memory", num);
#undef SET
  qsort(v, n, sizeof(v[0]), kv_cmp);
  for (i = 0; i < n; i++)
    carp_buf_printf(out, "%s%s=%s", i ? "," : "", v[i].key, v[i].value);
}

int pve_userdata_files(const struct pve_vm_spec *s, const char *provider_id,
                       const char *region, const char *zone,
                       const struct pve_type *t, int64_t vmid, const char *uuid,
                       const char *mac, struct carp_buf *iso, char **err)
{
  struct carp_buf lab;
  struct carp_userdata_var vars[12];
  struct carp_buf ud, md, nc;
  struct carp_iso_file files[3];
  char vmid_s[24], maxpods[16], lower_mac[32];
  size_t i;
  int rc;

  carp_buf_init(&lab, 64 * 1024);
  labels(s, region, zone, t, &lab);
  snprintf(vmid_s, sizeof(vmid_s), "%lld", (long long)vmid);
  snprintf(maxpods, sizeof(maxpods), "%d", (int)s->max_pods);
  vars[0] = (struct carp_userdata_var){"ProviderID", provider_id};
  vars[1] = (struct carp_userdata_var){"NodeName", s->name};
  vars[2] = (struct carp_userdata_var){"Labels", carp_buf_cstr(&lab)};
  vars[3] = (struct carp_userdata_var){"Taints", s->var_taints};
  vars[4] = (struct carp_userdata_var){"Region", region};
  vars[5] = (struct carp_userdata_var){"Zone", zone};
  vars[6] = (struct carp_userdata_var){"InstanceType", t->name};
  vars[7] = (struct carp_userdata_var){"VMID", vmid_s};
  vars[8] = (struct carp_userdata_var){"MaxPods", maxpods};
  vars[9] = (struct carp_userdata_var){"KubeReserved", s->var_kube_reserved};
  vars[10] =
      (struct carp_userdata_var){"SystemReserved", s->var_system_reserved};
  vars[11] = (struct carp_userdata_var){"EvictionHard", s->var_eviction_hard};

  carp_buf_init(&ud, 1024 * 1024);
  carp_buf_init(&md, 64 * 1024);
  carp_buf_init(&nc, 64 * 1024);
  rc = carp_userdata_render(s->userdata ? s->userdata : "", s->userdata_len,
                            vars, CARP_ARRAY_LEN(vars), &ud, err);
  if (rc)
    goto out;
  carp_buf_printf(&md, "instance-id: %s\nlocal-hostname: %s\n",
                  uuid && *uuid ? uuid : s->uid, s->name);
  for (i = 0; mac && mac[i] && i + 1 < sizeof(lower_mac); i++)
    lower_mac[i] = (char)tolower((unsigned char)mac[i]);
  lower_mac[i] = '\0';
  carp_buf_puts(&nc, "version: 2\nethernets:\n  nic0:\n");
  if (lower_mac[0])
    carp_buf_printf(&nc, "    match:\n      macaddress: \"%s\"\n", lower_mac);
  else
    carp_buf_puts(&nc, "    match:\n      name: \"e*\"\n");
  carp_buf_printf(&nc, "    dhcp4: %s\n", s->ipv4_none ? "false" : "true");
  carp_buf_printf(&nc, "    dhcp6: %s\n", s->ipv6 == 1 ? "true" : "false");
  if (s->ipv6 == 2)
    carp_buf_puts(&nc, "    accept-ra: true\n");
  if (s->nnameservers || s->nsearch) {
    carp_buf_puts(&nc, "    nameservers:\n");
    if (s->nnameservers) {
      carp_buf_puts(&nc, "      addresses: ");
      yaml_list(&nc, s->nameservers, s->nnameservers);
      carp_buf_putc(&nc, '\n');
    }
    if (s->nsearch) {
      carp_buf_puts(&nc, "      search: ");
      yaml_list(&nc, s->search, s->nsearch);
      carp_buf_putc(&nc, '\n');
    }
  }
  if (ud.overflowed || md.overflowed || nc.overflowed) {
    rc = CARP_ETOOBIG;
    if (err)
      *err = carp_strdup("user-data too large");
    goto out;
  }
  files[0] = (struct carp_iso_file){"meta-data", md.ptr ? md.ptr : "", md.len};
  files[1] =
      (struct carp_iso_file){"network-config", nc.ptr ? nc.ptr : "", nc.len};
  files[2] = (struct carp_iso_file){"user-data", ud.ptr ? ud.ptr : "", ud.len};
  rc = carp_iso_build("cidata", files, 3, iso);
  if (rc && err)
    *err = carp_strdup("could not build the NoCloud image");
out:
  carp_buf_free(&lab);
  carp_buf_free(&ud);
  carp_buf_free(&md);
  carp_buf_free(&nc);
  return rc;
}
