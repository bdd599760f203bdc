/* vmid.c: choosing the VMID of a new VM.
 *
 * Proxmox offers GET /cluster/nextid, but it reserves nothing: concurrent
 * callers get the same answer. So Carpenter keeps, per region, the VMIDs it
 * handed out (or deleted) in the last few minutes and never offers one of
 * them again, and marks a candidate as used as it hands it out (so fifty
 * creates started in the same tick get fifty different IDs). Candidates
 * come from the NodeClass's vmidRange, walked round-robin from a cursor,
 * or upward from nextid's answer (it honours the datacenter's next-id
 * bounds), skipping every guest of the last inventory. The answer is asked
 * once per region and minute, by one call that every create of a burst
 * waits for: one per VM cost 77 requests when 77 VMs launched together.
 * No candidate is asked about (/cluster/nextid?vmid=N) before the clone:
 * that check says only what the clone itself says - Proxmox refuses a
 * clone onto an existing VMID at once, and create.c answers that by
 * choosing another - and another client can take an ID between check and
 * clone anyway. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

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

/* Hands out cand, marked used at once: a concurrent allocation skips it. */
static void pick(struct pve_op *op, int64_t cand)
{
  struct pve_region *r = op->vmid_region;
  const struct pve_vm_spec *s = op->vmid_spec;
  char msg[256];

  if (!cand) {
    if (s->has_range)
      snprintf(msg, sizeof(msg),
               "vmidRange %lld-%lld of region %s has no free VMID left",
               (long long)s->vmid_min, (long long)s->vmid_max, r->name);
    else
      snprintf(msg, sizeof(msg), "region %s has no free VMID left", r->name);
    finish(op, CARP_EINSUFFICIENT_CAPACITY, 0, msg);
    return;
  }
  if (s->has_range)
    r->cursor = cand + 1;
  pve_vmid_mark(r, cand);
  finish(op, 0, cand, "");
}

static int floor_fresh(const struct pve_region *r)
{
  return r->nextid_at_ms &&
         carp_time_mono_ms() - r->nextid_at_ms < PVE_NEXTID_FRESH_MS;
}

static void after_floor(struct pve_op *op, int err)
{
  struct pve_region *r = op->vmid_region;
  if (err) {
    finish(op, err, 0, r->nextid_error);
    return;
  }
  pick(op, candidate(r, op->vmid_spec, r->nextid_floor));
}

static void on_nextid(const struct carp_pve_result *res, void *arg)
{
  struct pve_region *r = arg;
  int64_t n = 0;
  int err = res->err;

  r->nextid_call = NULL;
  if (err) {
    snprintf(r->nextid_error, sizeof(r->nextid_error), "%s", res->message);
  } else if (!res->data || carp_json_int(res->data, &n, NULL) || n < 100) {
    /* "data": "105" (a string) - or a number on some versions. */
    err = CARP_EPARSE;
    snprintf(r->nextid_error, sizeof(r->nextid_error),
             "/cluster/nextid answered no VMID");
  } else {
    r->nextid_floor = n;
    r->nextid_at_ms = carp_time_mono_ms();
  }
  pve_waiters_wake(&r->nextid_waiters, err);
}

void pve_vmid_alloc(struct pve_op *op, struct pve_region *r,
                    const struct pve_vm_spec *s,
                    void (*k)(struct pve_op *op, int err, int64_t vmid,
                              const char *msg))
{
  int rc;
  op->k_vmid = k;
  op->vmid_region = r;
  op->vmid_spec = s;
  if (s->has_range) {
    pick(op, candidate(r, s, r->cursor ? r->cursor : s->vmid_min));
    return;
  }
  if (floor_fresh(r)) {
    pick(op, candidate(r, s, r->nextid_floor));
    return;
  }
  pve_op_wait_region(op, r, after_floor);
  op->waiter.next = r->nextid_waiters;
  r->nextid_waiters = &op->waiter;
  if (r->nextid_call)
    return;
  rc = carp_pve_call_start(r->client, "GET", "/cluster/nextid", NULL, 0,
                           on_nextid, r, &r->nextid_call);
  if (rc) {
    snprintf(r->nextid_error, sizeof(r->nextid_error),
             "/cluster/nextid could not be asked");
    pve_waiters_wake(&r->nextid_waiters, rc);
  }
}
