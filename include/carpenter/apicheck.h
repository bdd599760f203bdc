/* Module apicheck (internal/apicheck). The Kubernetes API server, checked
 * against what Carpenter needs.
 *
 * Carpenter needs Kubernetes 1.25 or newer: PodDisruptionBudgets in
 * policy/v1 (1.21), the Eviction API in policy/v1 (1.22) and the CRD
 * validation rules (x-kubernetes-validations, on by default since 1.25)
 * its CRDs carry. At start, and every ten seconds until all is there, the
 * checker reads /version and the discovery documents of the API groups
 * Carpenter uses (core v1, apps/v1, policy/v1, coordination.k8s.io/v1
 * with leader election, karpenter.sh/v1 and carpenter.dev/v1alpha1), so an
 * old or incomplete server is named at once instead of leaving Carpenter
 * unready with an informer retrying a list that cannot succeed.
 *
 * Two readiness checks come of it: "kubernetes" (the version and the
 * built-in APIs; one ERROR line names what is missing) and "crds"
 * (Carpenter's CRDs, which may be installed later and are rechecked every
 * ten seconds for good). */
#ifndef CARP_APICHECK_H
#define CARP_APICHECK_H

#include <stdint.h>

#include <uv.h>
#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"
#include "carpenter/kube.h"

#define CARP_KUBE_MIN_MAJOR 1
#define CARP_KUBE_MIN_MINOR 25

/* The documents read, in this order. */
enum carp_apicheck_doc {
  CARP_APICHECK_VERSION = 0, /* /version */
  CARP_APICHECK_CORE,        /* /api/v1 */
  CARP_APICHECK_APPS,        /* /apis/apps/v1 */
  CARP_APICHECK_POLICY,      /* /apis/policy/v1 */
  CARP_APICHECK_COORDINATION,
  CARP_APICHECK_KARPENTER, /* /apis/karpenter.sh/v1 */
  CARP_APICHECK_CARPENTER, /* /apis/carpenter.dev/v1alpha1 */
  CARP_APICHECK_NDOCS
};

const char *carp_apicheck_path(enum carp_apicheck_doc doc);

/* One document's answer: status 0 when not answered yet, the HTTP status
 * otherwise (404: the group version is not served), body when 200, error
 * a sentence when neither 200 nor 404. */
struct carp_apicheck_answer {
  long status;
  yajl_val body;
  const char *error;
};

struct carp_apicheck_verdict {
  int server_ok;                /* version and built-in APIs */
  int server_unknown;           /* not ok, but only for want of answers */
  int crds_ok;                  /* Carpenter's CRDs */
  int crds_unknown;             /* not ok for want of answers */
  struct carp_buf why;          /* server_ok == 0: what is wrong */
  struct carp_buf crds_missing; /* crds_ok == 0: which (or why unknown) */
  char version[64];             /* gitVersion, "" when unknown */
};

void carp_apicheck_verdict_init(struct carp_apicheck_verdict *v);
void carp_apicheck_verdict_free(struct carp_apicheck_verdict *v);
/* The pure part: what the answers say. need_leases when leader election
 * is on. A document not answered yet or answered with an error leaves its
 * check failing with that reason. */
void carp_apicheck_evaluate(const struct carp_apicheck_answer *answers,
                            int need_leases, struct carp_apicheck_verdict *out);

struct carp_apicheck;

struct carp_apicheck_options {
  int need_leases;      /* --leader-elect */
  uint64_t interval_ms; /* between checks; 0: 10 s */
};

int carp_apicheck_new(uv_loop_t *loop, struct carp_kube *kube,
                      const struct carp_apicheck_options *o,
                      struct carp_apicheck **out);
/* Reads the documents now and then every interval. */
void carp_apicheck_start(struct carp_apicheck *a);
/* Cancels what is in flight and frees the checker, then calls cb. */
void carp_apicheck_close(struct carp_apicheck *a, void (*cb)(void *arg),
                         void *arg);
/* Readiness checks (carp_health_check_cb) with the checker as arg. */
int carp_apicheck_server_ready(void *a, struct carp_buf *why);
int carp_apicheck_crds_ready(void *a, struct carp_buf *why);

#endif
