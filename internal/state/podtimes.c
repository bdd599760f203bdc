/* podtimes.c: when the provisioner first saw each pending pod, first
 * decided about it, and first found it a place (Karpenter's cluster state
 * podAcks, podsSchedulingAttempted and podsSchedulableTimes). The pod
 * metrics read them: the "provisioning" durations and gauges count from
 * when Karpenter first thought the pod could schedule, not from its
 * creation, and only for pods it found a place for.
 *
 * A record lives from the pod's first sight until the pod goes, is Ready
 * or has finished: the pod metrics drop it once they have observed the
 * pod Ready or finished (as Karpenter's pod metrics controller clears the
 * mappings), a deletion drops it at once, and the book's sweep drops what
 * is left (where the metrics are not acting, the pod's Ready update is
 * long seen by every handler when the sweep comes). */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/clock.h"
#include "carpenter/map.h"
#include "state_int.h"

struct rec {
  char *uid; /* the map key */
  char *key; /* the pod's store key */
  struct carp_pod_times t;
};

struct carp_podtimes {
  struct carp_map recs; /* pod uid -> struct rec */
};

struct carp_podtimes *carp__podtimes_new(void)
{
  struct carp_podtimes *pt = CARP_NEW(struct carp_podtimes);
  carp_map_init(&pt->recs);
  return pt;
}

static void rec_free(struct rec *r)
{
  carp_free(r->uid);
  carp_free(r->key);
  carp_free(r);
}

void carp__podtimes_free(struct carp_podtimes *pt)
{
  struct carp_map_iter it;
  void *v;
  if (!pt)
    return;
  carp_map_iter_init(&it);
  while (carp_map_next(&pt->recs, &it, NULL, NULL, &v))
    rec_free(v);
  carp_map_free(&pt->recs);
  carp_free(pt);
}

void carp__podtimes_forget(struct carp_podtimes *pt, const char *uid)
{
  struct rec *r = uid ? carp_map_dels(&pt->recs, uid) : NULL;
  if (r)
    rec_free(r);
}

/* A record whose pod is gone (or replaced by one of the same name), Ready
 * or finished has no more use. */
void carp__podtimes_sweep(struct carp_podtimes *pt, struct carp_store *pods)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&pt->recs, &it, NULL, NULL, &v)) {
    struct rec *r = v;
    const struct carp_pod *p =
        (const struct carp_pod *)carp_store_get(pods, r->key);
    if (p && p->meta.uid && !strcmp(p->meta.uid, r->uid) && !p->ready &&
        !carp_pod_is_terminal(p))
      continue;
    carp_map_dels(&pt->recs, r->uid);
    rec_free(r);
  }
}

static struct rec *rec_of(struct carp_cluster *c, const struct carp_pod *pod)
{
  struct carp_podtimes *pt = carp__cluster_podtimes(c);
  struct rec *r;
  if (!pod->meta.uid || !pod->meta.key || pod->node_name)
    return NULL;
  r = carp_map_gets(&pt->recs, pod->meta.uid);
  if (!r) {
    r = CARP_NEW(struct rec);
    r->uid = carp_strdup(pod->meta.uid);
    r->key = carp_strdup(pod->meta.key);
    r->t.ack_ms = carp__cluster_now_ms(c);
    carp_map_puts(&pt->recs, r->uid, r);
  }
  return r;
}

void carp_cluster_pod_forget(struct carp_cluster *c, const char *pod_uid)
{
  carp__podtimes_forget(carp__cluster_podtimes(c), pod_uid);
}

void carp_cluster_pod_ack(struct carp_cluster *c, const struct carp_pod *pod)
{
  rec_of(c, pod);
}

int carp_cluster_pod_decide(struct carp_cluster *c, const struct carp_pod *pod,
                            int schedulable, int64_t *waited_ms)
{
  struct rec *r = rec_of(c, pod);
  int64_t now = carp__cluster_now_ms(c);
  int first;
  if (!r)
    return 0;
  if (!schedulable)
    r->t.schedulable_ms = 0;
  else if (!r->t.schedulable_ms)
    r->t.schedulable_ms = now;
  first = !r->t.decided_ms;
  if (first) {
    r->t.decided_ms = now;
    if (waited_ms)
      *waited_ms = now > r->t.ack_ms ? now - r->t.ack_ms : 0;
  }
  return first;
}

int carp_cluster_pod_times(const struct carp_cluster *c, const char *pod_uid,
                           struct carp_pod_times *out)
{
  const struct rec *r =
      pod_uid ? carp_map_gets(&carp__cluster_podtimes(c)->recs, pod_uid) : NULL;
  if (!r)
    return 0;
  *out = r->t;
  return 1;
}

void carp_cluster_pod_times_each(const struct carp_cluster *c,
                                 carp_pod_times_fn fn, void *arg)
{
  const struct carp_podtimes *pt = carp__cluster_podtimes(c);
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&pt->recs, &it, NULL, NULL, &v)) {
    const struct rec *r = v;
    const struct carp_pod *p = (const struct carp_pod *)carp_store_get(
        carp_informer_store(c->pods), r->key);
    if (p && p->meta.uid && !strcmp(p->meta.uid, r->uid) && !fn(p, &r->t, arg))
      return;
  }
}
