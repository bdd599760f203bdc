/* Module api (internal/api). Cached models of the core Kubernetes kinds
 * Carpenter reads: Pod, Node, PodDisruptionBudget and DaemonSet. Each starts
 * with struct carp_objmeta and is decoded straight from the API server's JSON
 * by its kind's decode function (see include/carpenter/object.h). Pod
 * scheduling specs are interned: the pods of one owner share one struct
 * carp_podspec. */
#ifndef CARP_API_H
#define CARP_API_H

#include <stdint.h>

#include "carpenter/api_types.h"
#include "carpenter/object.h"

/* Annotations and labels Carpenter reads. */
#define CARP_ANN_DO_NOT_DISRUPT    "karpenter.sh/do-not-disrupt"
#define CARP_ANN_POD_DELETION_COST "controller.kubernetes.io/pod-deletion-cost"
#define CARP_ANN_MIRROR            "kubernetes.io/config.mirror"

enum carp_pod_phase {
  CARP_POD_PENDING = 0,
  CARP_POD_RUNNING,
  CARP_POD_SUCCEEDED,
  CARP_POD_FAILED,
  CARP_POD_UNKNOWN,
};

struct carp_pod_affinity_term {
  struct carp_label_selector selector;
  uint32_t nnamespaces;
  const char **namespaces; /* empty: the pod's own namespace */
  int all_namespaces;      /* an empty namespaceSelector: {} */
  const char *topology_key;
  int32_t weight; /* preferred terms only */
};

enum carp_when_unsatisfiable {
  CARP_DO_NOT_SCHEDULE = 0,
  CARP_SCHEDULE_ANYWAY,
};

struct carp_spread {
  int32_t max_skew;
  const char *topology_key;
  enum carp_when_unsatisfiable when;
  struct carp_label_selector selector;
  int32_t min_domains;     /* 0: unset */
  int honor_node_affinity; /* nodeAffinityPolicy (default Honor) */
  int honor_node_taints;   /* nodeTaintsPolicy (default Ignore) */
  uint32_t nmatch_label_keys;
  const char **match_label_keys;
};

struct carp_host_port {
  int32_t port;
  const char *protocol; /* "TCP", "UDP", "SCTP" */
  const char *host_ip;  /* "" means every address */
};

/* What the scheduler needs of a pod, shared by identical pods. */
struct carp_podspec {
  uint32_t refs;
  char *canon; /* intern key */
  size_t canon_len;
  struct carp_resources requests; /* effective, overhead included */
  struct carp_resources limits;   /* effective (node limit gauges) */
  const struct carp_kvset *node_selector;
  uint32_t nrequired;
  struct carp_term *required; /* node affinity terms, ORed */
  uint32_t npreferred;
  struct carp_weighted_term *preferred;
  uint32_t naffinity, nanti_affinity, npref_affinity, npref_anti_affinity;
  struct carp_pod_affinity_term *affinity, *anti_affinity, *pref_affinity,
      *pref_anti_affinity;
  uint32_t ntolerations;
  struct carp_toleration *tolerations;
  uint32_t nspreads;
  struct carp_spread *spreads;
  uint32_t nhost_ports;
  struct carp_host_port *host_ports;
  int32_t priority;
  const char *priority_class; /* interned, may be NULL */
  const char *scheduler_name; /* interned */
  int64_t grace_seconds;      /* terminationGracePeriodSeconds */
  int has_pvc;                /* uses a PersistentVolumeClaim */
};

struct carp_pod {
  struct carp_objmeta meta;
  const struct carp_podspec *spec;
  const char *node_name;      /* interned; NULL when unbound */
  const char *nominated_node; /* interned; NULL when none */
  enum carp_pod_phase phase;
  int unschedulable;        /* PodScheduled=False, reason Unschedulable */
  int scheduling_gated;     /* spec.schedulingGates not empty */
  int ready;                /* Ready=True */
  int64_t unschedulable_ms; /* when PodScheduled last became False */
  int64_t scheduled_ms;     /* when PodScheduled became True */
  int64_t ready_ms;         /* when Ready became True */
  int64_t start_ms;         /* status.startTime */
  /* spec.volumes[].persistentVolumeClaim.claimName (interned), NULL when
   * none: which attachments a pod that stays on a node still uses. */
  const char **pvcs;
  uint32_t npvcs;
};

struct carp_node_condition {
  int status; /* 1 True, 0 False, -1 Unknown or missing */
  int64_t transition_ms;
  int64_t heartbeat_ms;
};

struct carp_node {
  struct carp_objmeta meta;
  char *provider_id; /* NULL when unset */
  uint32_t ntaints;
  struct carp_taint *taints;
  struct carp_resources capacity;
  struct carp_resources allocatable;
  struct carp_node_condition ready;
  int unschedulable; /* spec.unschedulable (cordoned) */
  /* Every condition (operatorpkg's Node metrics read them), compactly: the
   * set of (type, status, reason) is interned, so nodes in the same state
   * share it (keys the types, each value the status's first letter, T, F
   * or U, then the reason); cond_ms holds the lastTransitionTimes in the
   * set's order. Read them with carp_node_condition_at. */
  const struct carp_kvset *conds;
  int64_t *cond_ms;
};

/* One of a Node's conditions, as carp_node_condition_at gives it. */
struct carp_node_cond {
  const char *type;      /* interned */
  const char *reason;    /* "" when none */
  int status;            /* 1 True, 0 False, -1 Unknown */
  int64_t transition_ms; /* 0 when none */
};

/* The Node's i-th condition (sorted by type); 0 past the last. */
int carp_node_condition_at(const struct carp_node *n, size_t i,
                           struct carp_node_cond *out);

struct carp_pdb {
  struct carp_objmeta meta;
  struct carp_label_selector selector;
  int32_t disruptions_allowed;
  int32_t current_healthy;
  int32_t desired_healthy;
  int32_t expected_pods;
  int64_t observed_generation;
};

struct carp_daemonset {
  struct carp_objmeta meta;
  const struct carp_kvset *template_labels;
  const struct carp_podspec *spec; /* the pod template's */
};

/* storage.k8s.io/v1 VolumeAttachment: a volume attached to a node. */
struct carp_volumeattachment {
  struct carp_objmeta meta;
  const char *node_name; /* spec.nodeName (interned), "" when absent */
  const char *pv_name;   /* spec.source.persistentVolumeName, or NULL */
  const char *attacher;  /* spec.attacher (interned) */
  int attached;          /* status.attached */
};

/* v1 PersistentVolumeClaim: only what maps a pod's claim to its volume. */
struct carp_pvc {
  struct carp_objmeta meta;
  const char *volume_name; /* spec.volumeName (interned), NULL unbound */
};

extern const struct carp_kind carp_kind_pod;
extern const struct carp_kind carp_kind_node;
extern const struct carp_kind carp_kind_pdb;
extern const struct carp_kind carp_kind_daemonset;
extern const struct carp_kind carp_kind_volumeattachment;
extern const struct carp_kind carp_kind_pvc;

/* Decodes a pod spec object (spec of a pod or of a pod template) into an
 * interned podspec. */
int carp_podspec_decode(yajl_val spec, const char *path,
                        const struct carp_podspec **out, char **err);

/* A pod spec from parser events (include/carpenter/jdec.h). What the
 * scheduler reads of it is copied, as it passes, into the canonical text
 * the spec is interned by, and decoded only when no pod had that spec
 * before; the pod's own fields are kept on the way. A handler gives the
 * spec's value (an object) to carp_podspec_dec_value; once it has ended,
 * carp_podspec_dec_finish interns it (errors name fields under path). */
#define CARP_PODSPEC_COPIES 10
struct carp_podspec_dec {
  struct carp_buf part;  /* the values copied */
  struct carp_buf canon; /* the canonical text, made by finish */
  struct carp_jcopy copy[CARP_PODSPEC_COPIES]; /* overhead...gates */
  struct carp_buf list[2]; /* containers, initContainers, canonical */
  int has_list[2];
  struct carp_podspec_dec_list {
    struct carp_podspec_dec *sd;
    int which;
  } lists[2];
  struct carp_jcopy ccopy[4]; /* the container at hand's requests, ports,
                                 restartPolicy, limits */
  int deep;                   /* nested deeper than can be copied */
  int has_pvc;
  /* The pod's own fields. */
  struct carp_buf node_name;
  int has_node_name;
  struct carp_buf claims; /* the claim names, each NUL-terminated */
  uint32_t nclaims;
};
void carp_podspec_dec_init(struct carp_podspec_dec *sd);
void carp_podspec_dec_free(struct carp_podspec_dec *sd);
void carp_podspec_dec_reset(struct carp_podspec_dec *sd);
int carp_podspec_dec_value(struct carp_jdec *d, struct carp_podspec_dec *sd,
                           const struct carp_jval *v);
int carp_podspec_dec_finish(struct carp_podspec_dec *sd, const char *path,
                            const struct carp_podspec **out, char **err);
/* spec.nodeName (NULL when not a string); the names of
 * spec.volumes[].persistentVolumeClaim.claimName, nclaims of them one
 * after the other, each NUL-terminated; whether spec.schedulingGates has
 * any. Valid until the next reset. */
const char *carp_podspec_dec_node_name(const struct carp_podspec_dec *sd);
const char *carp_podspec_dec_claims(const struct carp_podspec_dec *sd);
int carp_podspec_dec_gated(const struct carp_podspec_dec *sd);
const struct carp_podspec *carp_podspec_ref(const struct carp_podspec *s);
void carp_podspec_release(const struct carp_podspec *s);
size_t carp_podspec_count(void);

/* The pod is owned by a DaemonSet (or is a mirror/static pod owned by a
 * Node), so it goes with its node. */
int carp_pod_is_daemon(const struct carp_pod *p);
int carp_pod_is_mirror(const struct carp_pod *p);
/* Terminal: Succeeded or Failed. */
int carp_pod_is_terminal(const struct carp_pod *p);
/* priorityClassName system-cluster-critical or system-node-critical. */
int carp_pod_is_critical(const struct carp_pod *p);

#endif
