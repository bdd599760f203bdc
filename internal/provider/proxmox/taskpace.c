/* taskpace.c: how long each kind of Proxmox task has been taking, so that
 * the first status poll of the next one goes out about when it should be
 * done instead of at 100 ms.
 *
 * Every status poll is a request pveproxy answers with a perl worker, and
 * most tasks take far longer than the first poll's 100 ms: a start of half
 * a second cost four polls, a linked clone of two seconds six. Tasks of one
 * kind take about as long as each other, so the first poll goes out at
 * nine tenths of the quickest of the last few of that kind that succeeded;
 * the usual doubling from 100 ms follows it. A kind is the UPID's type,
 * and for a clone also its source VMID: a full clone of a big template and
 * a linked one of a small template take very different times. The quickest
 * rather than the mean, so that one slow task (a busy storage) does not
 * make the next quick one wait; what is learnt is the time until a poll
 * saw the task stopped, never less than it ran, so a first poll that comes
 * too early is followed by a short wait, and one that came late teaches a
 * shorter time next.
 *
 * Two refinements, each worth about a poll a task in a scale-out:
 * - Tasks of one kind often take the same time to the tenth, so nine
 *   tenths comes too early every time: a first poll that found the task
 *   still running makes the next PACE_PATIENCE tasks wait the whole
 *   quickest time before theirs (and then nine tenths is tried again, so
 *   that tasks getting quicker are still seen).
 * - Tasks of a kind nothing is known of yet, started together (the first
 *   batch's clones), each climbed from 100 ms - five or six polls for a
 *   two-second clone. While one of them does, the others poll at the slow
 *   pace (the poll cap) until it has taught the kind. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "pve_int.h"

void pve_pace_key(const char *upid, char *out, size_t size)
{
  struct carp_pve_upid u;
  if (carp_pve_upid_parse(upid, &u)) {
    snprintf(out, size, "?");
    return;
  }
  if (!strcmp(u.type, "qmclone"))
    snprintf(out, size, "%s:%s", u.type, u.id);
  else
    snprintf(out, size, "%s", u.type);
}

#define PACE_PATIENCE 4

static size_t find(const struct pve_region *r, const char *key)
{
  size_t i;
  for (i = 0; i < r->npaces; i++)
    if (!strcmp(r->paces[i].key, key))
      break;
  return i;
}

static uint64_t first_poll(const struct pve_pace *p, uint64_t first_ms)
{
  uint64_t quickest = UINT64_MAX, at;
  size_t i;
  for (i = 0; p && i < p->n; i++)
    if (p->ms[i] < quickest)
      quickest = p->ms[i];
  if (quickest == UINT64_MAX)
    return first_ms;
  at = p->patient ? quickest : quickest / 10 * 9;
  return at > first_ms ? at : first_ms;
}

uint64_t pve_pace_first_ms(const struct pve_region *r, const char *key,
                           uint64_t first_ms)
{
  size_t k = find(r, key);
  return first_poll(k < r->npaces ? &r->paces[k] : NULL, first_ms);
}

static struct pve_pace *kind(struct pve_region *r, const char *key)
{
  size_t k = find(r, key);
  struct pve_pace *p = k < r->npaces ? &r->paces[k] : NULL;
  if (!p) {
    if (r->npaces == PVE_PACE_KINDS) /* the oldest kind makes room */
      memmove(&r->paces[0], &r->paces[1], (--r->npaces) * sizeof(r->paces[0]));
    p = &r->paces[r->npaces++];
    memset(p, 0, sizeof(*p));
    snprintf(p->key, sizeof(p->key), "%s", key);
  }
  return p;
}

static void record(struct pve_pace *p, uint64_t ms)
{
  p->ms[p->next] = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
  p->next = (uint8_t)((p->next + 1) % PVE_PACE_SAMPLES);
  if (p->n < PVE_PACE_SAMPLES)
    p->n++;
}

void pve_pace_learn(struct pve_region *r, const char *key, uint64_t ms)
{
  record(kind(r, key), ms);
}

uint64_t pve_pace_begin(struct pve_region *r, const char *key,
                        uint64_t first_ms, int *follow)
{
  struct pve_pace *p = kind(r, key);
  *follow = !p->n && p->waiting;
  if (p->waiting < UINT16_MAX)
    p->waiting++;
  return *follow ? 0 : first_poll(p, first_ms);
}

void pve_pace_end(struct pve_region *r, const char *key, int ok, uint64_t ms,
                  uint64_t first_at, uint64_t first_ms)
{
  size_t k = find(r, key);
  struct pve_pace *p;
  if (k < r->npaces && r->paces[k].waiting) /* else it made room, forgot */
    r->paces[k].waiting--;
  if (!ok)
    return;
  p = kind(r, key);
  record(p, ms);
  /* The next poll comes at least first_ms after a first one that found
   * the task running: a wait that long means it came too early. */
  if (first_at > first_ms && ms >= first_at + first_ms)
    p->patient = PACE_PATIENCE;
  else if (first_at > first_ms && p->patient)
    p->patient--;
}
