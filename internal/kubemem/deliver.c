/* deliver.c: the in-memory API server's answers, handed over on a
 * zero-delay timer of its clock so that no callback runs inside the call
 * that caused it. Replies go first, then watch events in history order:
 * a writer hears back before the caches see its write, the usual order
 * against a real API server, so controllers meet the stale cache that
 * follows their own writes in every test. */
#include <string.h>

#include "carpenter/alloc.h"
#include "kubemem_int.h"

static int event_for(const struct km_watch *w, const struct km_event *e)
{
  return e->res == w->res && (!w->ns || (e->ns && !strcmp(e->ns, w->ns)));
}

/* The first live watch with an event to send, its next_ev moved there. */
static struct km_watch *ready_watch(struct carp_kubemem *m)
{
  struct km_watch *w;
  if (m->hold_watches)
    return NULL;
  for (w = m->watches; w; w = w->next) {
    if (!w->op)
      continue;
    while (w->next_ev < m->nhist && !event_for(w, &m->hist[w->next_ev]))
      w->next_ev++;
    if (w->next_ev < m->nhist)
      return w;
  }
  return NULL;
}

static void sweep_watches(struct carp_kubemem *m)
{
  struct km_watch **pp = &m->watches;
  while (*pp) {
    struct km_watch *w = *pp;
    if (w->op) {
      pp = &w->next;
      continue;
    }
    *pp = w->next;
    carp_free(w->ns);
    carp_free(w);
  }
}

static void on_tick(struct carp_timer *t)
{
  struct carp_kubemem *m = t->data;
  m->delivering = 1;
  for (;;) {
    struct km_watch *w;
    if (m->replies) {
      struct km_reply *r = m->replies;
      m->replies = r->next;
      if (!m->replies)
        m->replies_tail = NULL;
      carp_kube_backend_reply(r->op, r->status, r->body, r->len);
      carp_free(r->body);
      carp_free(r);
      continue;
    }
    if ((w = ready_watch(m))) {
      struct carp_kube_op *op = w->op;
      const struct km_event *e = &m->hist[w->next_ev++];
      /* The event's text outlives a history that grows meanwhile. */
      if (carp_kube_backend_event(op, e->json, e->len) < 0 && w->op == op)
        w->op = NULL;
      continue;
    }
    break;
  }
  sweep_watches(m);
  m->delivering = 0;
}

void carp__km_kick(struct carp_kubemem *m)
{
  if (!carp_timer_is_active(&m->tick))
    carp_timer_start(&m->tick, on_tick, 0, 0);
}

void carp_kubemem_hold_watches(struct carp_kubemem *m, int hold)
{
  m->hold_watches = hold;
  if (!hold)
    carp__km_kick(m);
}

void carp__km_queue_reply(struct carp_kubemem *m, struct carp_kube_op *op,
                          struct km_result *r)
{
  struct km_reply *rep = CARP_NEW(struct km_reply);
  rep->op = op;
  rep->status = r->status;
  rep->body = r->body;
  rep->len = r->len;
  r->body = NULL;
  if (m->replies_tail)
    m->replies_tail->next = rep;
  else
    m->replies = rep;
  m->replies_tail = rep;
  carp__km_kick(m);
}

void carp__km_add_watch(struct carp_kubemem *m, struct carp_kube_op *op,
                        size_t res, const char *ns, uint64_t from_rv)
{
  struct km_watch *w = CARP_NEW(struct km_watch);
  size_t i = m->nhist;
  while (i > 0 && m->hist[i - 1].rv > from_rv)
    i--;
  w->op = op;
  w->res = res;
  w->ns = ns ? carp_strdup(ns) : NULL;
  w->next_ev = i;
  w->next = m->watches;
  m->watches = w;
  carp__km_kick(m);
}

void carp__km_forget_op(struct carp_kubemem *m, struct carp_kube_op *op)
{
  struct km_reply **pp = &m->replies, *prev = NULL;
  struct km_watch *w;
  while (*pp) {
    struct km_reply *r = *pp;
    if (r->op != op) {
      prev = r;
      pp = &r->next;
      continue;
    }
    *pp = r->next;
    if (m->replies_tail == r)
      m->replies_tail = prev;
    carp_free(r->body);
    carp_free(r);
  }
  for (w = m->watches; w; w = w->next)
    if (w->op == op)
      w->op = NULL;
  if (!m->delivering)
    sweep_watches(m);
}

size_t carp_kubemem_pending(const struct carp_kubemem *m)
{
  const struct km_reply *r;
  const struct km_watch *w;
  size_t n = 0, i;
  for (r = m->replies; r; r = r->next)
    n++;
  for (w = m->watches; w; w = w->next)
    for (i = w->next_ev; w->op && i < m->nhist; i++)
      if (event_for(w, &m->hist[i]))
        n++;
  return n;
}
