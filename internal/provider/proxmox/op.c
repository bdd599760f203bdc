/* op.c: the skeleton every asynchronous provider call (create, delete,
 * get, list) is built on.
 *
 * An operation is a chain of steps; at any time it waits for exactly one
 * thing - an API call, a task, an inventory refresh, a full-clone slot,
 * the reserve hook, or its own timer - and names the continuation to run
 * when that thing ends. Keeping that single "what am I waiting for" in one
 * place is what makes cancellation simple and safe: cancel() stops the one
 * pending thing, and the operation then always ends with exactly one
 * CARP_ECANCELED callback, from the loop, never inside cancel() or the
 * start function. Continuations never run inside the call that scheduled
 * them: failures to start a request and answers given synchronously by
 * the reserve hook are bounced through the operation's timer. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

static void on_timer(uv_timer_t *t)
{
  struct pve_op *op = t->data;
  pve_fn fn = op->k_timer;
  op->k_timer = NULL;
  op->wait = PVE_W_NONE;
  if (!fn)
    return;
  if (op->canceled && fn != op->on_canceled) {
    op->on_canceled(op);
    return;
  }
  fn(op);
}

void pve_op_init(struct pve_op *op, struct pve_provider *pp, pve_fn on_canceled,
                 pve_fn on_free)
{
  op->pp = pp;
  op->on_canceled = on_canceled;
  op->on_free = on_free;
  uv_timer_init(pp->loop, &op->timer);
  op->timer.data = op;
  op->next = pp->ops;
  if (pp->ops)
    pp->ops->prev = op;
  pp->ops = op;
  pp->nops++;
}

void pve_op_defer(struct pve_op *op, uint64_t ms, pve_fn fn)
{
  op->wait = PVE_W_TIMER;
  op->k_timer = fn;
  uv_timer_start(&op->timer, on_timer, ms, 0);
}

/* A step continuation run from the timer with a stored status. */
static void run_step(struct pve_op *op)
{
  pve_step_k k = op->k_step;
  op->k_step = NULL;
  k(op, op->step_err);
}

static void defer_step(struct pve_op *op, int err, pve_step_k k)
{
  op->k_step = k;
  op->step_err = err;
  pve_op_defer(op, 0, run_step);
}

/* --- calls -------------------------------------------------------------------
 */

static void on_call(const struct carp_pve_result *r, void *arg)
{
  struct pve_op *op = arg;
  pve_call_k k = op->k_call;
  op->call = NULL;
  op->wait = PVE_W_NONE;
  op->k_call = NULL;
  if (op->canceled) {
    op->on_canceled(op);
    return;
  }
  k(op, r);
}

static void run_failed_call(struct pve_op *op)
{
  struct carp_pve_result r;
  pve_call_k k = op->k_call;
  op->k_call = NULL;
  memset(&r, 0, sizeof(r));
  r.err = op->step_err;
  r.message = carp_strerror(op->step_err);
  k(op, &r);
}

void pve_op_call(struct pve_op *op, struct pve_region *r, const char *method,
                 const char *path, const struct carp_pve_form *params,
                 uint64_t timeout_ms, pve_call_k k)
{
  int rc;
  op->k_call = k;
  if (op->canceled) {
    pve_op_defer(op, 0, op->on_canceled);
    return;
  }
  op->wait = PVE_W_CALL;
  rc = carp_pve_call_start(r->client, method, path, params, timeout_ms, on_call,
                           op, &op->call);
  if (rc) {
    op->step_err = rc;
    pve_op_defer(op, 0, run_failed_call);
  }
}

void pve_op_upload(struct pve_op *op, struct pve_region *r, const char *path,
                   const char *const *fields, size_t nfields,
                   const char *filename, const void *data, size_t len,
                   pve_call_k k)
{
  int rc;
  op->k_call = k;
  if (op->canceled) {
    pve_op_defer(op, 0, op->on_canceled);
    return;
  }
  op->wait = PVE_W_CALL;
  rc = carp_pve_upload_start(r->client, path, fields, nfields, "filename",
                             filename, data, len, 120000, on_call, op,
                             &op->call);
  if (rc) {
    op->step_err = rc;
    pve_op_defer(op, 0, run_failed_call);
  }
}

/* --- tasks -------------------------------------------------------------------
 */

static void on_task(int err, const char *msg, void *arg)
{
  struct pve_op *op = arg;
  pve_task_k k = op->k_task;
  op->task = NULL;
  op->wait = PVE_W_NONE;
  op->k_task = NULL;
  if (op->task_upid) {
    uint64_t took = carp_time_mono_ms() - op->task_start_ms;
    char kind[80];
    if (err != CARP_ECANCELED)
      pve_metrics_task(op->pp, op->task_region->name, op->task_upid, err,
                       (double)took / 1000.0);
    pve_pace_key(op->task_upid, kind, sizeof(kind));
    pve_pace_end(op->task_region, kind, !err, took, op->task_first_at,
                 op->pp->o.task_poll_first_ms);
  }
  CARP_FREE(&op->task_upid);
  if (op->canceled) {
    op->on_canceled(op);
    return;
  }
  k(op, err, msg);
}

static void run_failed_task(struct pve_op *op)
{
  pve_task_k k = op->k_task;
  op->k_task = NULL;
  k(op, op->step_err, carp_strerror(op->step_err));
}

void pve_op_task(struct pve_op *op, struct pve_region *r, const char *upid,
                 uint64_t timeout_ms, int stop_on_timeout, pve_task_k k)
{
  struct carp_pve_task_options o;
  char kind[80];
  int rc, follow;
  op->k_task = k;
  if (op->canceled) {
    pve_op_defer(op, 0, op->on_canceled);
    return;
  }
  memset(&o, 0, sizeof(o));
  o.timeout_ms = timeout_ms;
  o.first_ms = op->pp->o.task_poll_first_ms;
  o.max_delay_ms = op->pp->o.task_poll_max_ms;
  pve_pace_key(upid, kind, sizeof(kind));
  o.expect_ms = pve_pace_begin(r, kind, o.first_ms, &follow);
  op->task_first_at = o.expect_ms;
  /* Another task of this unknown kind climbs from first_ms: this one
   * polls at the cap until that one has taught the kind. */
  if (follow && o.max_delay_ms > o.first_ms)
    o.first_ms = o.max_delay_ms;
  o.stop_on_timeout = stop_on_timeout;
  op->wait = PVE_W_TASK;
  carp_free(op->task_upid);
  op->task_upid = carp_strdup(upid);
  op->task_region = r;
  op->task_start_ms = carp_time_mono_ms();
  rc = carp_pve_task_wait_start(r->client, upid, &o, on_task, op, &op->task);
  if (rc) {
    pve_pace_end(r, kind, 0, 0, 0, 0);
    op->step_err = rc;
    pve_op_defer(op, 0, run_failed_task);
  }
}

/* --- refresh -----------------------------------------------------------------
 */

static void on_refreshed(struct pve_waiter *w, int err)
{
  struct pve_op *op = carp_container_of(w, struct pve_op, waiter);
  /* Called from the refresh's HTTP callback: bounce through the timer so
   * every waiter of the region sees the new inventory first. */
  op->wait_region = NULL;
  defer_step(op, err, op->k_step);
}

void pve_op_wait_region(struct pve_op *op, struct pve_region *r, pve_step_k k)
{
  op->k_step = k;
  op->waiter.cb = on_refreshed;
  op->wait_region = r;
  op->wait = PVE_W_REFRESH;
}

void pve_op_refresh(struct pve_op *op, struct pve_region *r, pve_step_k k)
{
  int rc;
  if (op->canceled) {
    op->k_step = k;
    pve_op_defer(op, 0, op->on_canceled);
    return;
  }
  pve_op_wait_region(op, r, k);
  rc = pve_region_refresh_start(r, &op->waiter);
  if (rc) {
    op->wait_region = NULL;
    defer_step(op, rc, k);
  }
}

/* --- full-clone slots -------------------------------------------------------
 */

static void on_slot(struct pve_slot_waiter *w)
{
  struct pve_op *op = carp_container_of(w, struct pve_op, slot_waiter);
  op->slot_held = 1; /* handed over by pve_slot_release */
  defer_step(op, 0, op->k_step);
}

void pve_op_slot(struct pve_op *op, const char *key, int limit, pve_step_k k)
{
  op->k_step = k;
  if (op->canceled) {
    pve_op_defer(op, 0, op->on_canceled);
    return;
  }
  snprintf(op->slot_key, sizeof(op->slot_key), "%s", key);
  op->slot_waiter.cb = on_slot;
  if (pve_slot_acquire(op->pp, key, limit, &op->slot_waiter)) {
    op->slot_held = 1;
    defer_step(op, 0, k);
    return;
  }
  op->wait = PVE_W_SLOT;
}

/* --- the reserve hook
 * ---------------------------------------------------------- */

static void on_reserved(void *token, int status)
{
  struct pve_reserve_token *t = token;
  struct pve_op *op = t->op;
  carp_free(t);
  if (!op)
    return; /* the op was cancelled meanwhile */
  op->token = NULL;
  defer_step(op, status, op->k_step);
}

void pve_op_reserve(struct pve_op *op, carp_provider_reserve_fn fn, void *arg,
                    const struct carp_nodeclaim *nc,
                    const struct carp_provider_reservation *res, pve_step_k k)
{
  struct pve_reserve_token *t;
  op->k_step = k;
  if (op->canceled) {
    pve_op_defer(op, 0, op->on_canceled);
    return;
  }
  t = CARP_NEW(struct pve_reserve_token);
  t->op = op;
  op->token = t;
  op->wait = PVE_W_RESERVE;
  fn(nc, res, on_reserved, t, arg);
}

/* --- cancel and done
 * ------------------------------------------------------------ */

void pve_op_cancel(struct pve_op *op)
{
  if (op->canceled || op->finished)
    return;
  op->canceled = 1;
  switch (op->wait) {
  case PVE_W_CALL:
    carp_pve_call_cancel(op->call);
    break;
  case PVE_W_TASK:
    carp_pve_task_wait_cancel(op->task);
    break;
  case PVE_W_REFRESH:
    if (op->wait_region)
      pve_region_unwait(op->wait_region, &op->waiter);
    op->wait_region = NULL;
    pve_op_defer(op, 0, op->on_canceled);
    break;
  case PVE_W_SLOT:
    pve_slot_unwait(op->pp, op->slot_key, &op->slot_waiter);
    pve_op_defer(op, 0, op->on_canceled);
    break;
  case PVE_W_RESERVE:
    if (op->token)
      op->token->op = NULL;
    op->token = NULL;
    pve_op_defer(op, 0, op->on_canceled);
    break;
  case PVE_W_TIMER:
    /* A pending continuation that is not yet a cancel: replace it. A
     * deferred step already on its way keeps its slot/reservation
     * bookkeeping to on_canceled. */
    pve_op_defer(op, 0, op->on_canceled);
    break;
  case PVE_W_NONE:
    /* Inside a continuation: the next step sees op->canceled. */
    break;
  }
}

static void on_closed(uv_handle_t *h)
{
  struct pve_op *op = h->data;
  struct pve_provider *pp = op->pp;
  CARP_FREE(&op->task_upid);
  op->on_free(op);
  pp->nops--;
  pve_provider_maybe_closed(pp);
}

void pve_op_done(struct pve_op *op)
{
  struct pve_provider *pp = op->pp;
  if (op->finished)
    return;
  op->finished = 1;
  if (op->prev)
    op->prev->next = op->next;
  else
    pp->ops = op->next;
  if (op->next)
    op->next->prev = op->prev;
  op->prev = op->next = NULL;
  uv_timer_stop(&op->timer);
  uv_close((uv_handle_t *)&op->timer, on_closed);
}
