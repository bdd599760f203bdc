/* vmid.c: choosing the VMID of a new VM.
 *
 * Proxmox offers GET /cluster/nextid, but it reserves nothing: concurrent
 * callers get the same answer. So Carpenter keeps, per region, the VMIDs it
 * handed out (or deleted) in the last few minutes and never offers one of
 * them again, marks a candidate as used before asking Proxmox about it (so
 * fifty creates started in the same tick get fifty different IDs), and
 * confirms each candidate with /cluster/nextid?vmid=N (400 when taken).
 * Candidates come from the NodeClass's vmidRange, walked round-robin from a
 * cursor, or upward from nextid's answer. None of this is the real guard
 * against duplicates - another client can take an ID between the check and
 * the clone - that guard is Proxmox refusing to clone onto an existing
 * VMID, which create.c turns into "pick another ID". */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

#define MAX_ATTEMPTS 64

static void prune_recent(struct pve_region *r)
{
  uint64_t now = carp_time_mono_ms();
  size_t i, j;
  for (i = j = 0; i < r->nrecent; i++)
    if (r->recent[i].until_ms > now)
      r->recent[j++] = r->recent[i];
  r->nrecent = j;
}

int pve_vmid_recent(struct pve_region *r, int64_t vmid)
{
  uint64_t now = carp_time_mono_ms();
  size_t i;
  for (i = 0; i < r->nrecent; i++)
    if (r->recent[i].vmid == vmid && r->recent[i].until_ms > now)
      return 1;
  return 0;
}

void pve_vmid_mark(struct pve_region *r, int64_t vmid)
{
  uint64_t until = carp_time_mono_ms() + r->pp->o.vmid_reuse_ms;
  size_t i;
  for (i = 0; i < r->nrecent; i++)
    if (r->recent[i].vmid == vmid) {
      r->recent[i].until_ms = until;
      return;
    }
  prune_recent(r);
  r->recent = carp_reallocarray(r->recent, r->nrecent + 1, sizeof(*r->recent));
  r->recent[r->nrecent].vmid = vmid;
  r->recent[r->nrecent].until_ms = until;
  r->nrecent++;
}

static int usable(struct pve_region *r, int64_t vmid)
{
  return vmid >= 100 && !pve_vmid_recent(r, vmid) && !pve_region_guest(r, vmid);
}

/* The next candidate at or after from (wrapping inside a range); 0 when a
 * range has none left. */
static int64_t candidate(struct pve_region *r, const struct pve_vm_spec *s,
                         int64_t from)
{
  int64_t v, span, i;
  if (!s->has_range) {
    for (v = from < 100 ? 100 : from; v <= 999999999; v++)
      if (usable(r, v))
        return v;
    return 0;
  }
  span = s->vmid_max - s->vmid_min + 1;
  if (from < s->vmid_min || from > s->vmid_max)
    from = s->vmid_min;
  for (i = 0; i < span; i++) {
    v = s->vmid_min + (from - s->vmid_min + i) % span;
    if (usable(r, v))
      return v;
  }
  return 0;
}

static void finish(struct pve_op *op, int err, int64_t vmid, const char *msg)
{
  void (*k)(struct pve_op *, int, int64_t, const char *) = op->k_vmid;
  op->k_vmid = NULL;
  k(op, err, vmid, msg);
}

static void check(struct pve_op *op);

static void on_check(struct pve_op *op, const struct carp_pve_result *res)
{
  struct pve_region *r = op->vmid_region;
  char msg[256];
  if (res->err == 0) {
    if (r->pp->o.vmid_reuse_ms)
      pve_vmid_mark(r, op->vmid_cand);
    finish(op, 0, op->vmid_cand, "");
    return;
  }
  if (res->err != CARP_EBADREQUEST) {
    finish(op, res->err, 0, res->message);
    return;
  }
  /* 400: taken (or outside the datacenter's next-id bounds): next one. */
  CARP_LOG_DEBUG(PVE_LOG, "VMID taken", CARP_F_STR("region", r->name),
                 CARP_F_INT("vmid", op->vmid_cand),
                 CARP_F_STR("reason", res->message));
  if (++op->vmid_attempts >= MAX_ATTEMPTS) {
    snprintf(msg, sizeof(msg),
             "no free VMID found in region %s after %d attempts (last: %s)",
             r->name, op->vmid_attempts, res->message);
    finish(op, CARP_EINSUFFICIENT_CAPACITY, 0, msg);
    return;
  }
  op->vmid_cand = candidate(r, op->vmid_spec, op->vmid_cand + 1);
  check(op);
}

static void check(struct pve_op *op)
{
  struct pve_region *r = op->vmid_region;
  const struct pve_vm_spec *s = op->vmid_spec;
  struct carp_pve_form f;
  char msg[256];

  if (!op->vmid_cand) {
    if (s->has_range)
      snprintf(msg, sizeof(msg),
               "vmidRange %lld-%lld of region %s has no free VMID left",
               (long long)s->vmid_min, (long long)s->vmid_max, r->name);
    else
      snprintf(msg, sizeof(msg), "region %s has no free VMID left", r->name);
    finish(op, CARP_EINSUFFICIENT_CAPACITY, 0, msg);
    return;
  }
  if (s->has_range) {
    r->cursor = op->vmid_cand + 1;
  }
  /* Mark before asking: a concurrent allocation skips it at once. */
  pve_vmid_mark(r, op->vmid_cand);
  carp_pve_form_init(&f);
  carp_pve_form_add_int(&f, "vmid", op->vmid_cand);
  pve_op_call(op, r, "GET", "/cluster/nextid", &f, 0, on_check);
  carp_pve_form_free(&f);
}

static void on_nextid(struct pve_op *op, const struct carp_pve_result *res)
{
  struct pve_region *r = op->vmid_region;
  int64_t n = 0;
  if (res->err) {
    finish(op, res->err, 0, res->message);
    return;
  }
  /* "data": "105" (a string) - or a number on some versions. */
  if (!res->data ||
      (YAJL_IS_STRING(res->data) ? carp_json_int(res->data, &n, NULL)
                                 : carp_json_int(res->data, &n, NULL)) ||
      n < 100) {
    finish(op, CARP_EPARSE, 0, "/cluster/nextid answered no VMID");
    return;
  }
  op->vmid_cand = candidate(r, op->vmid_spec, n);
  check(op);
}

void pve_vmid_alloc(struct pve_op *op, struct pve_region *r,
                    const struct pve_vm_spec *s,
                    void (*k)(struct pve_op *op, int err, int64_t vmid,
                              const char *msg))
{
  op->k_vmid = k;
  op->vmid_region = r;
  op->vmid_spec = s;
  op->vmid_attempts = 0;
  if (s->has_range) {
    op->vmid_cand = candidate(r, s, r->cursor ? r->cursor : s->vmid_min);
    check(op);
    return;
  }
  pve_op_call(op, r, "GET", "/cluster/nextid", NULL, 0, on_nextid);
}
