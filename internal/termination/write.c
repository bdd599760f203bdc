/* write.c: the termination controller's writes beyond the skeleton's: the
 * NodeClaim's conditions, written on the side one at a time per Node (a
 * failure is only logged: the next reconcile computes them again), and
 * the usual ending of a write that ends a reconcile. */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "termination_int.h"

static void on_condition_written(struct carp_controller *c, const char *key,
                                 const struct carp_kube_result *res, void *arg)
{
  struct carp_termination *t = TERM(c);
  struct node_mem *m = arg;
  (void)key;
  m->claim_writing = 0;
  /* A conflict only means the cache was behind: the next reconcile
   * computes the condition again from a newer one. */
  if (res->err && res->err != CARP_ECONFLICT && res->err != CARP_ENOTFOUND &&
      res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED)
    CARP_LOG_FOLDED(&t->fold, m->name, CARP_LOG_WARN, TERM_LOG,
                    "nodeclaim condition write failed",
                    CARP_F_STR("node", m->name), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
  if (!res->err && !m->dropped)
    carp_controller_enqueue(c, m->name);
  carp__term_mem_unbusy(m);
}

int carp__term_claim_condition(struct carp_termination *t, struct node_mem *m,
                               const struct carp_nodeclaim *nc,
                               const char *type, enum carp_cond_status status,
                               const char *reason, const char *message)
{
  struct carp_kube_ref ref = carp_ref_nodeclaim(nc->meta.name, "status");
  struct carp_nodeclaim_status st;
  struct carp_buf body;
  int changed;
  carp_nodeclaim_status_copy(&st, &nc->status);
  changed = carp_conditions_set(&st.conditions, &carp_condset_nodeclaim, type,
                                status, reason, message, nc->meta.generation,
                                carp__term_now(t));
  /* One write to the claim at a time, built on the cached status: two at
   * once would conflict, and one built on a status older than the other's
   * would undo it. */
  if (changed && !m->claim_writing) {
    carp_buf_init(&body, CARP_BUF_UNLIMITED);
    if (!carp_nodeclaim_status_patch(&st, nc->meta.resource_version, &body)) {
      m->busy++;
      m->claim_writing = 1;
      if (carp_write_patch(&t->base, m->name, &ref, body.ptr, body.len,
                           on_condition_written, m)) {
        m->busy--;
        m->claim_writing = 0;
      }
    }
    carp_buf_free(&body);
  }
  carp_nodeclaim_status_cleanup(&st);
  return changed;
}

void carp__term_after_write(struct carp_termination *t, const char *key,
                            const struct carp_kube_result *res)
{
  if (res->err && res->err != CARP_ECONFLICT && res->err != CARP_ENOTFOUND &&
      res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED) {
    /* Folded per Node: a server that refuses every write logs once. */
    CARP_LOG_FOLDED(&t->fold, key, CARP_LOG_WARN, TERM_LOG, "write failed",
                    CARP_F_STR("node", key), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
    carp_controller_done(&t->base, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  carp_write_done(&t->base, key, res);
}
