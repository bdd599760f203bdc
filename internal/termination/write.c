/* write.c: the termination controller's writes to the API server. A write
 * either ends the reconcile of its key (through its callback) or runs on
 * the side (condition updates, the termination timestamp), whose failure
 * is only logged: the next reconcile computes it again. The controller
 * stays alive until every callback has run (t->pending). */
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "carpenter/timeutil.h"
#include "termination_int.h"

struct write_ctx {
  struct carp_termination *t;
  char *key;
  carp_term_write_cb cb;
};

int64_t carp__term_now(void)
{
  return carp_time_wall_ms();
}

static void on_write(const struct carp_kube_result *res, void *arg)
{
  struct write_ctx *w = arg;
  struct carp_termination *t = w->t;
  if (w->cb) {
    w->cb(t, w->key, res);
  } else if (res->err && res->err != CARP_ECONFLICT &&
             res->err != CARP_ENOTFOUND && res->err != CARP_ENOTLEADER &&
             res->err != CARP_ECANCELED) {
    CARP_LOG_WARN("termination", "write failed", CARP_F_STR("object", w->key),
                  CARP_F_ERR(res->err), CARP_F_STR("message", res->message));
  }
  carp_free(w->key);
  carp_free(w);
  carp__term_unpend(t);
}

static struct write_ctx *ctx_new(struct carp_termination *t, const char *key,
                                 carp_term_write_cb cb)
{
  struct write_ctx *w = CARP_NEW(struct write_ctx);
  w->t = t;
  w->key = carp_strdup(key);
  w->cb = cb;
  t->pending++;
  return w;
}

static void ctx_fail(struct carp_termination *t, struct write_ctx *w)
{
  t->pending--;
  carp_free(w->key);
  carp_free(w);
}

int carp__term_patch(struct carp_termination *t, const char *key,
                     const struct carp_kube_ref *ref, const char *body,
                     size_t len, carp_term_write_cb cb)
{
  struct write_ctx *w = ctx_new(t, key, cb);
  /* The resourceVersion in the body makes the patch conditional, so it is
   * safe to repeat. */
  int rc = carp_kube_patch(t->kube, ref, CARP_PATCH_MERGE, body, len, 1,
                           on_write, w);
  if (rc)
    ctx_fail(t, w);
  return rc;
}

int carp__term_delete(struct carp_termination *t, const char *key,
                      const struct carp_kube_ref *ref,
                      const struct carp_kube_delete_options *o,
                      carp_term_write_cb cb)
{
  struct write_ctx *w = ctx_new(t, key, cb);
  int rc = carp_kube_delete(t->kube, ref, o, on_write, w);
  if (rc)
    ctx_fail(t, w);
  return rc;
}

struct cond_ctx {
  struct carp_termination *t;
  struct node_mem *m;
};

static void on_condition_written(const struct carp_kube_result *res, void *arg)
{
  struct cond_ctx *c = arg;
  struct carp_termination *t = c->t;
  struct node_mem *m = c->m;
  m->claim_writing = 0;
  /* A conflict only means the cache was behind: the next reconcile
   * computes the condition again from a newer one. */
  if (res->err && res->err != CARP_ECONFLICT && res->err != CARP_ENOTFOUND &&
      res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED)
    CARP_LOG_FOLDED(&t->fold, m->name, CARP_LOG_WARN, "termination",
                    "nodeclaim condition write failed",
                    CARP_F_STR("node", m->name), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
  if (!res->err && !t->closing && !m->dropped)
    carp_workqueue_add(t->queue, m->name);
  carp_free(c);
  carp__term_mem_release(t, m);
}

int carp__term_claim_condition(struct carp_termination *t, struct node_mem *m,
                               const struct carp_nodeclaim *nc,
                               const char *type, enum carp_cond_status status,
                               const char *reason, const char *message)
{
  struct carp_kube_ref ref = {.group = CARP_KARPENTER_GROUP,
                              .version = CARP_KARPENTER_VERSION,
                              .resource = "nodeclaims",
                              .name = nc->meta.name,
                              .subresource = "status"};
  struct carp_nodeclaim_status st;
  struct carp_buf body;
  struct cond_ctx *c;
  int changed;
  carp_nodeclaim_status_copy(&st, &nc->status);
  changed = carp_conditions_set(&st.conditions, &carp_condset_nodeclaim, type,
                                status, reason, message, nc->meta.generation,
                                carp__term_now());
  /* One write to the claim at a time, built on the cached status: two at
   * once would conflict, and one built on a status older than the other's
   * would undo it. */
  if (changed && !m->claim_writing) {
    carp_buf_init(&body, CARP_BUF_UNLIMITED);
    if (!carp_nodeclaim_status_patch(&st, nc->meta.resource_version, &body)) {
      c = CARP_NEW(struct cond_ctx);
      c->t = t;
      c->m = m;
      t->pending++;
      m->busy++;
      m->claim_writing = 1;
      if (carp_kube_patch(t->kube, &ref, CARP_PATCH_MERGE, body.ptr, body.len,
                          1, on_condition_written, c)) {
        t->pending--;
        m->busy--;
        m->claim_writing = 0;
        carp_free(c);
      }
    }
    carp_buf_free(&body);
  }
  carp_nodeclaim_status_cleanup(&st);
  return changed;
}

int carp__term_finish_body(struct carp_termination *t, const char *key,
                           struct carp_jw *w, const char *what)
{
  const struct carp_node *node = carp_cluster_node(t->cluster, key);
  struct carp_event_target tg;
  if (node)
    tg = carp_event_target_of(&node->meta, "v1");
  return carp_recorder_body_finish(w, t->o.recorder, node ? &tg : NULL,
                                   &t->fold, "termination", key, what);
}

void carp__term_after_write(struct carp_termination *t, const char *key,
                            const struct carp_kube_result *res)
{
  if (!res->err) {
    carp__term_done(t, key, CARP_RECONCILE_REQUEUE, 0);
    return;
  }
  if (res->err == CARP_ECONFLICT) {
    /* Our cache is behind the server: look again once it caught up,
     * backing off (100 ms doubling) if it does not. */
    carp__term_done(t, key, CARP_RECONCILE_ERROR, 0);
    return;
  }
  if (res->err == CARP_ENOTFOUND) {
    carp__term_done(t, key, CARP_RECONCILE_DONE, 0);
    return;
  }
  if (res->err != CARP_ENOTLEADER && res->err != CARP_ECANCELED)
    CARP_LOG_FOLDED(&t->fold, key, CARP_LOG_WARN, "termination", "write failed",
                    CARP_F_STR("node", key), CARP_F_ERR(res->err),
                    CARP_F_STR("message", res->message));
  carp__term_done(t, key, CARP_RECONCILE_ERROR, 0);
}
