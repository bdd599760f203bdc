/* Private parts of the in-memory API server: store.c (objects, the
 * verbs' semantics, history), serve.c (requests from the REST client:
 * routing, faults, the write log) and deliver.c (answers and watch events
 * on the clock's next tick). */
#ifndef CARP_KUBEMEM_INT_H
#define CARP_KUBEMEM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "carpenter/clock.h"
#include "carpenter/kubemem.h"
#include "carpenter/map.h"
#include "jv.h"

struct km_res {
  const char *group; /* "" for core */
  const char *version;
  const char *resource;
  const char *kind;
  int namespaced;
  int status_sub; /* has a status subresource */
};

struct km_obj {
  char *key; /* "name" or "namespace/name" (the map key) */
  struct jv *obj;
};

struct km_event {
  uint64_t rv;
  size_t res;
  char *ns;   /* NULL for cluster-scoped */
  char *json; /* {"type":...,"object":...} */
  size_t len;
};

struct km_reply {
  struct carp_kube_op *op;
  long status;
  char *body;
  size_t len;
  struct km_reply *next;
};

struct km_watch {
  struct carp_kube_op *op; /* NULL once cancelled or over */
  size_t res;
  char *ns;       /* NULL: every namespace */
  size_t next_ev; /* index into the history */
  struct km_watch *next;
};

struct km_fault {
  char *method;
  char *path_part;
  long status;
  int times; /* -1: forever */
  struct km_fault *next;
};

struct carp_kubemem {
  struct carp_clock *clock;
  struct carp_kube_backend backend;
  struct carp_map *objs; /* one map per resource: key -> struct km_obj */
  uint64_t rv;
  uint64_t uids;
  uint64_t names;
  struct km_event *hist;
  size_t nhist, caphist;
  struct km_reply *replies, *replies_tail;
  struct km_watch *watches;
  struct km_fault *faults;
  struct carp_kubemem_write *writes;
  size_t nwrites, capwrites;
  struct carp_timer tick;
  int delivering;
  int hold_watches; /* carp_kubemem_hold_watches */
  void (*close_cb)(void *arg);
  void *close_arg;
};

/* A verb's outcome: an HTTP status and the body (an object, a list or a
 * metav1.Status), owned by the caller. */
struct km_result {
  long status;
  char *body;
  size_t len;
};

extern const struct km_res carp__km_resources[];
extern const size_t carp__km_nresources;

/* Index of a kind in its apiVersion ("v1", "karpenter.sh/v1"; NULL for
 * any), or (size_t)-1. */
size_t carp__km_res_by_kind(const char *api_version, const char *kind);
size_t carp__km_res_by_name(const char *group, const char *version,
                            const char *resource);

void carp__km_status(struct km_result *r, long code, const char *message);
void carp__km_obj_result(struct km_result *r, long code, const struct jv *obj);

/* The verbs. ns is NULL for cluster-scoped resources. from_client: a
 * request of the REST client (status dropped on create, as the API server
 * does for objects with a status subresource). obj and patch are
 * borrowed. */
void carp__km_create(struct carp_kubemem *m, size_t res, const char *ns,
                     const struct jv *obj, int from_client,
                     struct km_result *r);
void carp__km_update(struct carp_kubemem *m, size_t res, const char *ns,
                     const char *name, const char *sub, const struct jv *obj,
                     struct km_result *r);
void carp__km_patch(struct carp_kubemem *m, size_t res, const char *ns,
                    const char *name, const char *sub, const struct jv *patch,
                    int split_status, struct km_result *r);
/* The test's replace: everything but what the server owns. */
void carp__km_replace(struct carp_kubemem *m, size_t res, const char *ns,
                      const char *name, const struct jv *obj,
                      struct km_result *r);
void carp__km_delete(struct carp_kubemem *m, size_t res, const char *ns,
                     const char *name, const struct jv *options,
                     struct km_result *r);
void carp__km_evict(struct carp_kubemem *m, const char *ns, const char *name,
                    const struct jv *eviction, struct km_result *r);
void carp__km_get(struct carp_kubemem *m, size_t res, const char *ns,
                  const char *name, struct km_result *r);
void carp__km_list(struct carp_kubemem *m, size_t res, const char *ns,
                   struct km_result *r);
struct km_obj *carp__km_find(const struct carp_kubemem *m, size_t res,
                             const char *ns, const char *name);

/* deliver.c */
void carp__km_kick(struct carp_kubemem *m);
void carp__km_queue_reply(struct carp_kubemem *m, struct carp_kube_op *op,
                          struct km_result *r);
void carp__km_add_watch(struct carp_kubemem *m, struct carp_kube_op *op,
                        size_t res, const char *ns, uint64_t from_rv);
void carp__km_forget_op(struct carp_kubemem *m, struct carp_kube_op *op);

#endif
