/* adopt.c: how Carpenter recognises its own VMs and takes over one it
 * started building before a restart.
 *
 * Ownership lives in the VM itself: the clone call writes a description of
 * "key: value" lines naming the NodeClaim and its UID (plus NodePool,
 * NodeClass, cluster and the template image), and configuration adds the
 * tags carpenter and carpenter-<cluster> and an SMBIOS serial/sku carrying
 * the providerID and instance type. Names are never used to identify a VM:
 * a fresh clone shows in /cluster/resources without one.
 *
 * Adoption: a NodeClaim whose carpenter.dev/vm annotation names
 * <region>/<zone>/<vmid> was written before the clone was sent, so on a
 * later create the VM is looked up by VMID. If it is missing, the clone is
 * sent onto that VMID; if its description carries this NodeClaim's UID the
 * create resumes from the VM's state (wait for the clone lock, configure,
 * start - or just report it when already running); if it carries another
 * UID the VMID was taken by someone else and a new one is chosen (and
 * written to the annotation again). This file holds the parsing those
 * decisions need; create.c runs them. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "carpenter/base64.h"
#include "carpenter/buf.h"
#include "pve_int.h"

void pve_description_build(struct carp_buf *out, const char *nodeclaim,
                           const char *uid, const char *nodepool,
                           const char *nodeclass, const char *cluster,
                           const char *image)
{
  carp_buf_puts(out, "Managed by Carpenter; do not edit.\n");
  carp_buf_printf(out, "nodeclaim: %s\n", nodeclaim ? nodeclaim : "");
  carp_buf_printf(out, "nodeclaim-uid: %s\n", uid ? uid : "");
  if (nodepool && *nodepool)
    carp_buf_printf(out, "nodepool: %s\n", nodepool);
  if (nodeclass && *nodeclass)
    carp_buf_printf(out, "nodeclass: %s\n", nodeclass);
  if (cluster && *cluster)
    carp_buf_printf(out, "cluster: %s\n", cluster);
  if (image && *image)
    carp_buf_printf(out, "image: %s\n", image);
}

static void field(const char *line, size_t len, const char *key, char *out,
                  size_t size)
{
  size_t kl = strlen(key);
  const char *v;
  size_t vl;
  if (len <= kl || strncmp(line, key, kl) != 0 || line[kl] != ':')
    return;
  v = line + kl + 1;
  vl = len - kl - 1;
  while (vl && (*v == ' ' || *v == '\t')) {
    v++;
    vl--;
  }
  while (vl && isspace((unsigned char)v[vl - 1]))
    vl--;
  /* Cut short, a name would be another name (and end in a space that a
   * second read drops): a value too long is no value. */
  if (vl >= size) {
    out[0] = '\0';
    return;
  }
  memcpy(out, v, vl);
  out[vl] = '\0';
}

void pve_description_parse(const char *text, struct pve_desc *d)
{
  const char *p = text;
  d->nodeclaim[0] = d->uid[0] = d->nodepool[0] = d->nodeclass[0] = '\0';
  d->cluster[0] = d->image[0] = '\0';
  while (p && *p) {
    size_t n = strcspn(p, "\n");
    field(p, n, "nodeclaim", d->nodeclaim, sizeof(d->nodeclaim));
    field(p, n, "nodeclaim-uid", d->uid, sizeof(d->uid));
    field(p, n, "nodepool", d->nodepool, sizeof(d->nodepool));
    field(p, n, "nodeclass", d->nodeclass, sizeof(d->nodeclass));
    field(p, n, "cluster", d->cluster, sizeof(d->cluster));
    field(p, n, "image", d->image, sizeof(d->image));
    p += n;
    if (*p)
      p++;
  }
}

void pve_prop_get(const char *propstr, const char *key, char *out, size_t size)
{
  const char *p = propstr;
  size_t kl = strlen(key);
  out[0] = '\0';
  while (p && *p) {
    size_t n = strcspn(p, ",");
    if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
      size_t vl = n - kl - 1;
      if (vl >= size)
        vl = size - 1;
      memcpy(out, p + kl + 1, vl);
      out[vl] = '\0';
      return;
    }
    p += n;
    if (*p)
      p++;
  }
}

void pve_smbios_sku(const char *smbios1, char *out, size_t size)
{
  char enc[256], b64flag[8];
  struct carp_buf dec;
  out[0] = '\0';
  if (!smbios1)
    return;
  pve_prop_get(smbios1, "sku", enc, sizeof(enc));
  pve_prop_get(smbios1, "base64", b64flag, sizeof(b64flag));
  if (!enc[0])
    return;
  if (strcmp(b64flag, "1") != 0) {
    snprintf(out, size, "%s", enc);
    return;
  }
  carp_buf_init(&dec, 1024);
  if (carp_base64_decode(&dec, enc, strlen(enc)) == 0)
    snprintf(out, size, "%s", carp_buf_cstr(&dec));
  carp_buf_free(&dec);
}
