/* Module scheduling (internal/scheduling). Scheduling: the pure simulation at
 * the heart of provisioning (and, later, consolidation). Given pending pods,
 * the cluster's nodes and in-flight NodeClaims, the NodePools and their
 * instance types, it decides where every pod goes: onto an existing node, onto
 * an in-flight claim, or onto a new NodeClaim it plans, and it says why a pod
 * cannot go anywhere.
 *
 * Everything here is plain data: strings, integers and arrays with counts.
 * Nothing refers to Kubernetes JSON or to informer caches, and nothing does
 * I/O. The caller (the provisioner) fills a struct carp_sched_problem from
 * its caches, calls carp_sched_solve() and turns the result into NodeClaims
 * and events. The same input with the same order gives the same output.
 *
 * Units: every resource amount is an int64 in thousandths of its unit, as
 * carp_quantity_parse() returns it: CPU in millicores, memory and storage in
 * millibytes (1Gi = 1073741824000), "pods" and "nodes" in thousandths of a
 * pod or node (10 pods = 10000). No floating point is used to decide a fit;
 * only prices are doubles.
 *
 * Strings and arrays in the problem are borrowed for the duration of the
 * call; the result owns copies of everything it returns. */
#ifndef CARP_SCHEDULING_H
#define CARP_SCHEDULING_H

#include <stddef.h>
#include <stdint.h>

/* Well-known labels: instance types always define them, so a pod may
 * require them even when a NodePool says nothing about them. */
#define CARP_LABEL_INSTANCE_TYPE   "node.kubernetes.io/instance-type"
#define CARP_LABEL_ARCH            "kubernetes.io/arch"
#define CARP_LABEL_OS              "kubernetes.io/os"
#define CARP_LABEL_ZONE            "topology.kubernetes.io/zone"
#define CARP_LABEL_REGION          "topology.kubernetes.io/region"
#define CARP_LABEL_HOSTNAME        "kubernetes.io/hostname"
#define CARP_LABEL_WINDOWS_BUILD   "node.kubernetes.io/windows-build"
#define CARP_LABEL_CAPACITY_TYPE   "karpenter.sh/capacity-type"
#define CARP_LABEL_NODEPOOL        "karpenter.sh/nodepool"
#define CARP_LABEL_INSTANCE_FAMILY "carpenter.dev/instance-family"
#define CARP_LABEL_INSTANCE_CPU    "carpenter.dev/instance-cpu"    /* vCPUs */
#define CARP_LABEL_INSTANCE_MEMORY "carpenter.dev/instance-memory" /* MiB */
/* GPUs of an instance type (Karpenter's instance-gpu-* labels): types
 * without GPUs say DoesNotExist for them, so a pod that asks for a GPU
 * label never gets a type without GPUs. */
#define CARP_LABEL_INSTANCE_GPU_COUNT "carpenter.dev/instance-gpu-count"
#define CARP_LABEL_INSTANCE_GPU_NAME  "carpenter.dev/instance-gpu-name"
#define CARP_LABEL_INSTANCE_GPU_MANUFACTURER                                   \
  "carpenter.dev/instance-gpu-manufacturer"
#define CARP_LABEL_INSTANCE_GPU_MEMORY                                         \
  "carpenter.dev/instance-gpu-memory" /* MiB */

/* Taints Carpenter itself manages. */
#define CARP_TAINT_UNREGISTERED "karpenter.sh/unregistered"
#define CARP_TAINT_DISRUPTED    "karpenter.sh/disrupted"

/* Resource names with a fixed meaning; any other name is an extended
 * resource, matched by exact name. */
#define CARP_RESOURCE_CPU     "cpu"
#define CARP_RESOURCE_MEMORY  "memory"
#define CARP_RESOURCE_PODS    "pods"
#define CARP_RESOURCE_STORAGE "ephemeral-storage"
#define CARP_RESOURCE_NODES   "nodes" /* NodePool limits only */

/* ------------------------------------------------------------------ */
/* Building blocks                                                     */
/* ------------------------------------------------------------------ */

enum carp_sched_op {
  CARP_SCHED_OP_IN = 0,
  CARP_SCHED_OP_NOT_IN,
  CARP_SCHED_OP_EXISTS,
  CARP_SCHED_OP_DOES_NOT_EXIST,
  CARP_SCHED_OP_GT,  /* integer comparisons: a label value that is not */
  CARP_SCHED_OP_LT,  /* an integer never matches, nor does a missing    */
  CARP_SCHED_OP_GTE, /* label */
  CARP_SCHED_OP_LTE,
};

/* A node selector requirement (NodePool, NodeClaim, pod affinity term). */
struct carp_sched_requirement {
  const char *key;
  enum carp_sched_op op;
  const char *const *values;
  size_t nvalues;
  int32_t min_values; /* 0: none; else at least this many distinct values of
                         key must remain among a claim's instance types */
};

struct carp_sched_label {
  const char *key;
  const char *value;
};

/* One entry of a resource list: a name and an amount in millis. */
struct carp_sched_quantity {
  const char *name;
  int64_t milli;
};

enum carp_sched_effect {
  CARP_SCHED_EFFECT_ALL = 0, /* tolerations only: every effect */
  CARP_SCHED_EFFECT_NO_SCHEDULE,
  CARP_SCHED_EFFECT_PREFER_NO_SCHEDULE,
  CARP_SCHED_EFFECT_NO_EXECUTE,
};

struct carp_sched_taint {
  const char *key;
  const char *value; /* NULL is "" */
  enum carp_sched_effect effect;
};

enum carp_sched_toleration_op {
  CARP_SCHED_TOLERATE_EQUAL = 0,
  CARP_SCHED_TOLERATE_EXISTS,
};

struct carp_sched_toleration {
  const char *key; /* NULL or "" with EXISTS: tolerates every taint */
  enum carp_sched_toleration_op op;
  const char *value; /* EQUAL only; NULL is "" */
  enum carp_sched_effect effect;
};

/* A metav1.LabelSelector. Expressions use In, NotIn, Exists and
 * DoesNotExist. An empty selector matches every pod; terms point to it, and
 * a NULL pointer there matches no pod, as in Kubernetes. */
struct carp_sched_selector {
  const struct carp_sched_label *match_labels;
  size_t nmatch_labels;
  const struct carp_sched_requirement *match_expressions;
  size_t nmatch_expressions;
};

/* One nodeSelectorTerm: expressions AND-ed. weight: preferred terms only. */
struct carp_sched_node_term {
  const struct carp_sched_requirement *exprs;
  size_t nexprs;
  int32_t weight;
};

enum carp_sched_unsatisfiable {
  CARP_SCHED_DO_NOT_SCHEDULE = 0,
  CARP_SCHED_SCHEDULE_ANYWAY,
};

/* A topologySpreadConstraint. matchLabelKeys must already be folded into
 * the selector by the caller (they add "key In [the pod's value]"). */
struct carp_sched_spread {
  const char *topology_key;
  int32_t max_skew;
  int32_t min_domains; /* 0: unset */
  enum carp_sched_unsatisfiable when_unsatisfiable;
  const struct carp_sched_selector *selector;
  int node_affinity_ignore; /* nodeAffinityPolicy: Ignore (default Honor) */
};

/* A pod (anti-)affinity term. namespaces empty and all_namespaces 0: the
 * pod's own namespace. A namespaceSelector is resolved by the caller into
 * namespaces, except the empty one, which is all_namespaces. */
struct carp_sched_pod_term {
  const char *topology_key;
  const struct carp_sched_selector *selector;
  const char *const *namespaces;
  size_t nnamespaces;
  int all_namespaces;
  int32_t weight; /* preferred terms only */
};

enum carp_sched_protocol {
  CARP_SCHED_TCP = 0,
  CARP_SCHED_UDP,
  CARP_SCHED_SCTP,
};

struct carp_sched_host_port {
  uint16_t port;
  enum carp_sched_protocol protocol;
  const char *host_ip; /* NULL, "", "0.0.0.0" or "::": every address */
};

/* ------------------------------------------------------------------ */
/* The problem                                                         */
/* ------------------------------------------------------------------ */

/* A pod to place. requests are the effective requests (max of init
 * containers and the sum of containers, plus pod overhead); "pods" is
 * implied (each pod takes one) and ignored when listed. */
struct carp_sched_pod {
  const char *uid;
  const char *name;
  const char *namespace_;
  int64_t created; /* creation time in any unit; queue-order tie-break */
  const struct carp_sched_label *labels;
  size_t nlabels;
  const struct carp_sched_quantity *requests;
  size_t nrequests;
  const struct carp_sched_label *node_selector;
  size_t nnode_selector;
  const struct carp_sched_node_term *required_terms; /* OR-ed */
  size_t nrequired_terms;
  const struct carp_sched_node_term *preferred_terms;
  size_t npreferred_terms;
  const struct carp_sched_toleration *tolerations;
  size_t ntolerations;
  const struct carp_sched_spread *spreads;
  size_t nspreads;
  const struct carp_sched_pod_term *affinity; /* required */
  size_t naffinity;
  const struct carp_sched_pod_term *preferred_affinity;
  size_t npreferred_affinity;
  const struct carp_sched_pod_term *anti_affinity; /* required */
  size_t nanti_affinity;
  const struct carp_sched_pod_term *preferred_anti_affinity;
  size_t npreferred_anti_affinity;
  const struct carp_sched_host_port *host_ports;
  size_t nhost_ports;
};

struct carp_sched_offering {
  const char *zone;
  const char *capacity_type; /* "on-demand", "spot", "reserved" */
  double price;
  int available;
};

/* An instance type. Its labels are requirements (arch, os, region, family,
 * anything); node.kubernetes.io/instance-type, the zone and capacity type
 * of its available offerings, carpenter.dev/instance-cpu (whole vCPUs) and
 * carpenter.dev/instance-memory (MiB) are added from the other fields when
 * the list does not define them. allocatable = capacity - kube_reserved -
 * system_reserved - eviction_threshold. */
struct carp_sched_instance_type {
  const char *name;
  const struct carp_sched_requirement *requirements;
  size_t nrequirements;
  const struct carp_sched_quantity *capacity;
  size_t ncapacity;
  const struct carp_sched_quantity *kube_reserved;
  size_t nkube_reserved;
  const struct carp_sched_quantity *system_reserved;
  size_t nsystem_reserved;
  const struct carp_sched_quantity *eviction_threshold;
  size_t neviction_threshold;
  const struct carp_sched_offering *offerings;
  size_t nofferings;
};

/* The pod template of a DaemonSet: its requests are added to every new
 * NodeClaim whose NodePool and instance type it would run on. */
struct carp_sched_daemon {
  const char *name;
  const struct carp_sched_quantity *requests;
  size_t nrequests;
  const struct carp_sched_label *node_selector;
  size_t nnode_selector;
  const struct carp_sched_node_term *required_terms;
  size_t nrequired_terms;
  const struct carp_sched_toleration *tolerations;
  size_t ntolerations;
  const struct carp_sched_host_port *host_ports;
  size_t nhost_ports;
};

struct carp_sched_nodepool {
  const char *name;
  int32_t weight;                        /* higher first; ties by name */
  const struct carp_sched_label *labels; /* template.metadata.labels */
  size_t nlabels;
  const struct carp_sched_requirement *requirements;
  size_t nrequirements;
  const struct carp_sched_taint *taints;
  size_t ntaints;
  const struct carp_sched_taint *startup_taints; /* ignored for placement */
  size_t nstartup_taints;
  /* Indices into problem.instance_types; NULL: every instance type. */
  const uint32_t *instance_types;
  size_t ninstance_types;
  /* spec.limits (absent name: unlimited; "nodes" counts nodes) and the
   * capacity already used by this pool's nodes and in-flight claims, with
   * "nodes" their number. Never exceeded: see carp_sched_solve(). */
  const struct carp_sched_quantity *limits;
  size_t nlimits;
  const struct carp_sched_quantity *usage;
  size_t nusage;
};

/* An existing Node, or an in-flight NodeClaim that has no registered Node
 * yet. requested must include every pod bound or nominated to it (with
 * "pods" = their number) and, for in-flight claims, the DaemonSet pods
 * expected there. Taints that go away by themselves are not counted:
 * karpenter.sh/unregistered, the ephemeral node.kubernetes.io/not-ready,
 * unreachable, network-unavailable and
 * node.cloudprovider.kubernetes.io/uninitialized on a managed (nodepool
 * set) or uninitialized node, and the NodePool's startup taints until the
 * node is initialized. */
struct carp_sched_node {
  const char *name;
  const char *nodepool; /* NULL: not managed by Carpenter */
  int in_flight;        /* a NodeClaim without a registered Node */
  int initialized;
  int deleting; /* going away or cordoned: never a target */
  const struct carp_sched_label *labels;
  size_t nlabels;
  /* In-flight claims: their spec requirements (labels may be partial). */
  const struct carp_sched_requirement *requirements;
  size_t nrequirements;
  const struct carp_sched_taint *taints;
  size_t ntaints;
  const struct carp_sched_quantity *allocatable;
  size_t nallocatable;
  const struct carp_sched_quantity *requested;
  size_t nrequested;
  const struct carp_sched_host_port *host_ports; /* in use */
  size_t nhost_ports;
};

/* A pod already running on (or nominated to) a node: counted by topology
 * spread and pod affinity, and its required anti-affinity keeps matching
 * pods away from its domain. Its requests are in the node's requested. */
struct carp_sched_bound_pod {
  const char *namespace_;
  const struct carp_sched_label *labels;
  size_t nlabels;
  uint32_t node; /* index into problem.nodes */
  const struct carp_sched_pod_term *anti_affinity;
  size_t nanti_affinity;
};

struct carp_sched_problem {
  const struct carp_sched_pod *pods;
  size_t npods;
  const struct carp_sched_node *nodes;
  size_t nnodes;
  const struct carp_sched_bound_pod *bound_pods;
  size_t nbound_pods;
  const struct carp_sched_nodepool *nodepools;
  size_t nnodepools;
  const struct carp_sched_instance_type *instance_types;
  size_t ninstance_types;
  const struct carp_sched_daemon *daemons;
  size_t ndaemons;
  int ignore_preferences;  /* PREFERENCE_POLICY=Ignore */
  int no_new_claims;       /* existing capacity only (consolidation) */
  uint32_t max_new_claims; /* 0: unlimited */
};

/* ------------------------------------------------------------------ */
/* The result                                                          */
/* ------------------------------------------------------------------ */

enum carp_sched_target {
  CARP_SCHED_UNSCHEDULED = 0,
  CARP_SCHED_ON_NODE,  /* index into problem.nodes */
  CARP_SCHED_ON_CLAIM, /* index into result.claims */
};

struct carp_sched_assignment {
  enum carp_sched_target target;
  uint32_t index;
};

/* A new NodeClaim. requirements are the NodePool's narrowed by its pods'
 * (the provisioner adds instance-type In [options]); options are every
 * instance type that still fits all its pods plus DaemonSet overhead and
 * has an available offering its requirements allow, cheapest first. */
struct carp_sched_claim {
  uint32_t nodepool;
  const struct carp_sched_requirement *requirements;
  size_t nrequirements;
  const uint32_t *instance_types; /* indices into problem.instance_types */
  const double *prices;           /* cheapest allowed offering, per option */
  size_t ninstance_types;
  double price; /* prices[0] */
  /* Sum of the pods' requests plus the DaemonSet overhead of the cheapest
   * option; "pods" included. */
  const struct carp_sched_quantity *requests;
  size_t nrequests;
  const uint32_t *pods; /* indices into problem.pods */
  size_t npods;
};

enum carp_sched_reason {
  CARP_SCHED_REASON_NONE = 0,
  CARP_SCHED_REASON_REQUIREMENT,   /* detail: label key */
  CARP_SCHED_REASON_TAINT,         /* detail: taint key */
  CARP_SCHED_REASON_HOST_PORT,     /* detail: port */
  CARP_SCHED_REASON_LIMIT,         /* detail: resource name */
  CARP_SCHED_REASON_RESOURCES,     /* detail: resource no type has enough of */
  CARP_SCHED_REASON_INSTANCE_TYPE, /* no type meets requirements/offering */
  CARP_SCHED_REASON_MIN_VALUES,    /* detail: label key */
  CARP_SCHED_REASON_SPREAD,        /* detail: topology key */
  CARP_SCHED_REASON_AFFINITY,      /* detail: topology key */
  CARP_SCHED_REASON_ANTI_AFFINITY, /* detail: topology key */
  CARP_SCHED_REASON_CLAIM_LIMIT,   /* no_new_claims or max_new_claims */
};

/* Why one NodePool refused a pod: the first rule that failed. */
struct carp_sched_refusal {
  uint32_t nodepool;
  enum carp_sched_reason reason;
  const char *detail;  /* key, resource or port, as above */
  const char *message; /* e.g. did not tolerate taint "a=b:NoSchedule" */
};

struct carp_sched_unschedulable {
  uint32_t pod;
  const struct carp_sched_refusal *refusals; /* one per NodePool tried */
  size_t nrefusals;
  /* One line for an event or log: 'incompatible with nodepool "a", ...'. */
  const char *message;
};

struct carp_sched_stats {
  size_t groups; /* pod groups identical for scheduling */
  size_t passes; /* queue passes, relaxations included */
  size_t relaxations;
  size_t bytes; /* peak memory of the solve's own allocations */
};

struct carp_sched_result {
  struct carp_sched_assignment *assignments; /* one per problem pod */
  struct carp_sched_claim *claims;
  size_t nclaims;
  struct carp_sched_unschedulable *unschedulable;
  size_t nunschedulable;
  size_t nscheduled;
  double price; /* sum of the claims' prices */
  /* Per problem pod, its effective zone before placement (Karpenter's
   * computeEffectiveZoneFromPod): the one zone its required zones and
   * zone topology rules leave, "flexible" for several or no constraint,
   * "none" when nothing is left. */
  const char **effective_zones;
  struct carp_sched_stats stats;
  void *priv;
};

/* Places the problem's pods. Pods are taken in Karpenter's queue order (CPU
 * then memory descending, then creation time and uid), grouped when they are
 * identical for scheduling. Each goes to the first existing node or in-flight
 * claim that takes it, then to a claim opened earlier in this solve, then to
 * a new claim from the first NodePool by weight that can hold it; pods that
 * no constraint ties to others are packed last, balancing resources, into
 * the least costly place. A pod that fails is relaxed one preference step
 * (preferred node affinity heaviest first, extra required node-affinity
 * terms, ScheduleAnyway spreads, preferred pod affinity, preferred pod
 * anti-affinity, then PreferNoSchedule taints) and retried after the
 * others, until a whole pass makes no progress.
 *
 * NodePool limits are strict: usage + every new claim's largest option never
 * exceeds a limit. Returns 0 and *out (free with carp_sched_result_free), or
 * CARP_EINVAL for malformed input (an index out of range, a NULL name). */
int carp_sched_solve(const struct carp_sched_problem *problem,
                     struct carp_sched_result **out);
void carp_sched_result_free(struct carp_sched_result *result);

/* "Requirement", "Taint", ...; never NULL. */
const char *carp_sched_reason_name(enum carp_sched_reason reason);

/* ------------------------------------------------------------------ */
/* Rules on their own (also used by the solve)                         */
/* ------------------------------------------------------------------ */

/* Does t tolerate taint? */
int carp_sched_tolerates(const struct carp_sched_toleration *t,
                         const struct carp_sched_taint *taint);
/* 1 when every NoSchedule and NoExecute taint (and PreferNoSchedule unless
 * prefer_ok) is tolerated; else 0 and *first the first one that is not. */
int carp_sched_taints_tolerated(const struct carp_sched_taint *taints,
                                size_t ntaints,
                                const struct carp_sched_toleration *tols,
                                size_t ntols, int prefer_ok, size_t *first);
/* Does a pod with these labels match the selector? */
int carp_sched_selector_matches(const struct carp_sched_selector *sel,
                                const struct carp_sched_label *labels,
                                size_t nlabels);
/* Can two pods using a and b share a node? 0 if they can. */
int carp_sched_host_ports_conflict(const struct carp_sched_host_port *a,
                                   const struct carp_sched_host_port *b);
/* Allocatable amount of resource name, in millis. */
int64_t carp_sched_allocatable(const struct carp_sched_instance_type *it,
                               const char *name);
/* Is key one of the taints the kubelet and the node lifecycle controller
 * set and remove by themselves (node.kubernetes.io/not-ready, unreachable,
 * network-unavailable, node.cloudprovider.kubernetes.io/uninitialized)? */
int carp_sched_taint_ephemeral(const char *key);
/* Is key one of the well-known labels above (minus hostname)? */
int carp_sched_well_known(const char *key);
/* Does a label value satisfy an integer operator (GT, LT, GTE, LTE)? The
 * value must be a base-10 int64; anything else never matches. */
int carp_sched_int_matches(enum carp_sched_op op, const char *bound,
                           const char *value);

/* ------------------------------------------------------------------ */
/* The requirements algebra                                            */
/* ------------------------------------------------------------------ */

/* A set of requirements, at most one per key after intersection: the
 * exact set of label states (a value, or the label being absent) each key
 * may take. It owns copies of its strings. Sets are independent of each
 * other, but one set must not be used from two threads at once: queries
 * against another set import that set's strings into it. */
struct carp_sched_reqs;

struct carp_sched_reqs *carp_sched_reqs_new(void);
void carp_sched_reqs_free(struct carp_sched_reqs *r);
/* Intersects r with one requirement (or with key In [value] per label).
 * CARP_EINVAL on a NULL key or an integer operator without one value. */
int carp_sched_reqs_add(struct carp_sched_reqs *r,
                        const struct carp_sched_requirement *req);
int carp_sched_reqs_add_labels(struct carp_sched_reqs *r,
                               const struct carp_sched_label *labels,
                               size_t nlabels);
/* dst = dst ∩ src. */
int carp_sched_reqs_intersect(struct carp_sched_reqs *dst,
                              const struct carp_sched_reqs *src);

enum {
  /* Compatible(): a key the node side does not define is allowed when it is
   * well-known (instance types always define those). */
  CARP_SCHED_ALLOW_UNDEFINED_WELL_KNOWN = 1,
};
/* Karpenter's Compatible(): may a pod with requirements pod land on a node
 * or claim with requirements node? Every key pod constrains must be defined
 * by node (see flags) unless pod allows the label to be absent, and on
 * common keys the two must share a value or both allow absence. Returns 1,
 * or 0 with *bad_key (may be NULL) set to the first failing key, a string
 * owned by node. */
int carp_sched_reqs_compatible(const struct carp_sched_reqs *node,
                               const struct carp_sched_reqs *pod,
                               unsigned flags, const char **bad_key);
/* Karpenter's Intersects(): common keys only. */
int carp_sched_reqs_intersects(const struct carp_sched_reqs *a,
                               const struct carp_sched_reqs *b,
                               const char **bad_key);
/* Does the label state (value, or NULL for absent) satisfy r on key? A key
 * r does not constrain allows anything. */
int carp_sched_reqs_allows(const struct carp_sched_reqs *r, const char *key,
                           const char *value);
/* Do these node labels satisfy every requirement of r? */
int carp_sched_reqs_matches(const struct carp_sched_reqs *r,
                            const struct carp_sched_label *labels,
                            size_t nlabels);
/* 1 when some key admits no state at all (nothing can satisfy r). */
int carp_sched_reqs_empty(const struct carp_sched_reqs *r);
size_t carp_sched_reqs_len(const struct carp_sched_reqs *r);
/* Canonical text, keys sorted: "a In [x y], b Exists, c Gt 4, d NotIn [z]".
 * Returns the length it needed (snprintf-style). */
size_t carp_sched_reqs_format(const struct carp_sched_reqs *r, char *buf,
                              size_t cap);

#endif
