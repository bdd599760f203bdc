/* kit.h: the harness of the reconcile-level controller tests, after
 * Karpenter's suite_test.go files: an in-memory API server (kubemem)
 * behind the real REST client and informers, a fake clock, the fake
 * provider, an event recorder and a metrics registry - everything the
 * controllers get in production, with time and the world in the test's
 * hands.
 *
 *   struct kit k;
 *   kit_init(&k, NULL);
 *   kit_add(&k, my_controller_new(&k.env, ...));
 *   kit_apply(&k, "{apiVersion: v1, kind: Node, metadata: {name: n1}}");
 *   kit_start(&k);                  (caches synced, controllers leading)
 *   kit_advance(&k, 30 * 1000);     (30 s pass, every timer on the way)
 *   assert_int_equal(kit_writes(&k, "DELETE", "/nodeclaims/"), 1);
 *   kit_close(&k);
 *
 * Objects are given as YAML (flow style reads well in C strings), with
 * printf formatting. Every step settles: it runs whatever is due until
 * nothing is, and fails the test if that never happens (a hot loop). */
#ifndef CARP_TEST_KIT_H
#define CARP_TEST_KIT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include <yajl/yajl_tree.h>

#include "carpenter/clock.h"
#include "carpenter/cluster.h"
#include "carpenter/controller.h"
#include "carpenter/events.h"
#include "carpenter/kube.h"
#include "carpenter/kubemem.h"
#include "carpenter/metrics.h"
#include "carpenter/provider.h"

#define KIT_MAX_CONTROLLERS 12
/* The fake clock's wall time at start: 2026-01-01T00:00:00Z. */
#define KIT_EPOCH_MS 1767225600000LL

struct kit_options {
  /* The fake provider's; NULL for its defaults (zone-a, a small grid). */
  const struct carp_fake_provider_options *provider;
};

struct kit {
  uv_loop_t loop;
  struct carp_clock *clock;
  struct carp_kubemem *api;
  struct carp_kube *kube;
  struct carp_cluster *cluster;
  struct carp_provider *provider;
  struct carp_recorder *recorder;
  struct carp_metrics *metrics;
  struct carp_controller_env env;
  struct carp_controller *ctls[KIT_MAX_CONTROLLERS];
  size_t nctls;
  int leader; /* the write gate's answer */
};

void kit_init(struct kit *k, const struct kit_options *o);
void kit_add(struct kit *k, struct carp_controller *c);
/* Starts the informers, waits for them to list, makes every controller
 * the leader. */
void kit_start(struct kit *k);
void kit_settle(struct kit *k);
/* Moves the fake clock forward by ms, settling at every timer. */
void kit_advance(struct kit *k, uint64_t ms);
/* Leadership: off stops the controllers and shuts the write gate. */
void kit_set_leader(struct kit *k, int leader);
void kit_close(struct kit *k);

/* The world, as other actors change it (then settled). */
void kit_apply(struct kit *k, const char *yaml_fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kit_patch(struct kit *k, const char *kind, const char *key,
               const char *yaml_fmt, ...) __attribute__((format(printf, 4, 5)));
void kit_delete(struct kit *k, const char *kind, const char *key);
/* The object (carp_json_free it), or NULL when absent. */
yajl_val kit_get(struct kit *k, const char *kind, const char *key);
/* A string at a path of the object ("spec", "providerID"), or NULL; the
 * copy is the kit's until the next call. */
const char *kit_str(struct kit *k, const char *kind, const char *key, ...);
int kit_exists(struct kit *k, const char *kind, const char *key);
size_t kit_count(struct kit *k, const char *kind);
/* A condition's status ("True", "False", "Unknown") and reason on an
 * object's status.conditions, or NULL. */
const char *kit_condition(struct kit *k, const char *kind, const char *key,
                          const char *type, const char **reason);
/* Whether a Node carries a taint with this key. */
int kit_node_tainted(struct kit *k, const char *node, const char *taint_key);

/* Writes that reached the API server (method NULL: any; path_part NULL:
 * any), those answered 2xx. */
size_t kit_writes(struct kit *k, const char *method, const char *path_part);
/* Events recorded with this reason (on any object). */
size_t kit_events(struct kit *k, const char *reason);
double kit_metric(struct kit *k, const char *name, const char *const *values);
/* Prints every write so far to stderr (also at close when KIT_DEBUG is
 * set). */
void kit_dump(struct kit *k);

/* Ready-made objects (YAML), for tests to extend. */
/* A NodePool "name" of the ProxmoxNodeClass "default" with extra spec
 * fields (YAML flow mapping members, or ""). */
void kit_nodepool(struct kit *k, const char *name, const char *extra_spec);
void kit_nodeclass(struct kit *k, const char *name);
/* A launched, registered, initialized NodeClaim with its Ready Node and a
 * VM in the fake provider; created at the current fake time. */
void kit_node(struct kit *k, const char *name, const char *pool,
              const char *type);
/* Does what the lifecycle controller and the kubelet would for an
 * existing NodeClaim: launched as type, registered, initialized, with its
 * Ready Node and VM. */
void kit_node_up(struct kit *k, const char *name, const char *pool,
                 const char *type);
/* Does what the lifecycle controller and the kubelet would for a NodeClaim
 * another controller created: up on the first instance type its
 * requirements allow. */
void kit_claim_up(struct kit *k, const char *claim, const char *pool);
/* The name of the nth NodeClaim a controller created (0 first), or NULL;
 * the kit's until the next call. */
const char *kit_created_claim(struct kit *k, size_t nth);
/* A running pod bound to node (NULL: pending), requesting cpu millicores,
 * with extra metadata members (YAML flow, or ""). */
void kit_pod(struct kit *k, const char *ns, const char *name, const char *node,
             int cpu_milli, const char *extra_meta);

#endif
