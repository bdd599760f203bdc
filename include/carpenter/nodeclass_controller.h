/* Module nodeclass (internal/nodeclass). The ProxmoxNodeClass status controller
 * (Karpenter's nodeclass status controllers, for Proxmox VE). For each class it
 * writes:
 *
 *   ValidationSucceeded  True, or False InvalidSpec with the broken rules.
 *   RegionsReady         every selected region (spec.regions, or every
 *                        configured one) answered its last refresh: False
 *                        RegionNotConfigured, Unauthorized (401/403) or
 *                        RegionUnreachable; Unknown AwaitingRefresh before
 *                        a region's first refresh.
 *   TemplatesReady       some allowed, online host of a ready region has
 *                        the template (False TemplateNotFound otherwise;
 *                        Unknown while no region answers).
 *   BootstrapReady       Template mode: True. UserData: the Secret exists
 *                        (UserDataSecretNotFound), has the key
 *                        (UserDataKeyNotFound) and its text uses only known
 *                        variables (UserDataTemplateInvalid).
 *   Ready                all of them (carp_condset_nodeclass).
 *
 * and status.observedGeneration, specHash (carp_nodeclass_hash, with the
 * user-data text in UserData mode; kept as it was while the Secret cannot
 * be read, so a read error never looks like drift), regions (those that
 * answered), zones (hosts where a VM can be launched now), templates (when
 * the provider reports them) and instanceTypes (the grid with prices).
 *
 * A class is looked at when it changes, every resync period (hosts,
 * templates and capacity change without any Kubernetes event), and
 * sooner while it is not Ready. Only the leader writes.
 *
 * The controller knows the provider only through the generic interface
 * (instance types and their offerings give the usable zones) plus the few
 * Proxmox facts passed in the options as function pointers, so it does not
 * depend on the Proxmox module. */
#ifndef CARP_NODECLASS_CONTROLLER_H
#define CARP_NODECLASS_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "carpenter/cluster.h"
#include "carpenter/controller.h"
#include "carpenter/kube.h"
#include "carpenter/nodeclass.h"
#include "carpenter/provider.h"

/* Condition reasons besides docs/api.md's (Unknown states). */
#define CARP_REASON_AWAITING_REFRESH  "AwaitingRefresh"
#define CARP_REASON_REGIONS_NOT_READY "RegionsNotReady"
#define CARP_REASON_SECRET_UNREADABLE "UserDataSecretUnreadable"

struct carp_nodeclass_controller_options {
  /* The configured regions (--pve-config clusters), copied: used when a
   * class lists none. */
  const char *const *regions;
  size_t nregions;
  /* A region's state: 0 after a successful refresh, CARP_EAGAIN before the
   * first one, CARP_ENOENT when not configured, else the last error with a
   * message. carp_pve_provider_region_status() fits. Required. */
  int (*region_status)(struct carp_provider *p, const char *region,
                       const char **message);
  /* Optional: the template each usable host would clone (status.templates);
   * *out freed with carp_free, its strings interned (released here). */
  int (*templates)(struct carp_provider *p, const struct carp_nodeclass *nc,
                   struct carp_nodeclass_template **out, size_t *n);
  uint64_t resync_ms; /* default 60 s */
  uint64_t retry_ms;  /* while not Ready; default 10 s */
};

/* The controller "nodeclass.status" (env->provider required; adds
 * informer handlers: call before carp_cluster_start). */
int carp_nodeclass_controller_new(
    const struct carp_controller_env *env,
    const struct carp_nodeclass_controller_options *o,
    struct carp_controller **out);

/* ---- pure parts (tests) ---- */

struct carp_nodeclass_region_fact {
  const char *name;
  int status; /* as region_status returns it */
  const char *message;
};

struct carp_nodeclass_zone_fact {
  const char *region;
  const char *zone;
};

/* What the controller found out about a class. */
struct carp_nodeclass_facts {
  const struct carp_nodeclass_region_fact *regions; /* the selected ones */
  size_t nregions;
  const char *const *configured; /* for messages */
  size_t nconfigured;
  /* Hosts (region, zone) where a VM of the class can be launched now. */
  const struct carp_nodeclass_zone_fact *zones;
  size_t nzones;
  const struct carp_nodeclass_template *templates; /* borrowed */
  size_t ntemplates;
  int templates_known;
  /* UserData mode: the Secret read (0, CARP_ENOTFOUND or another error),
   * its message, and the decoded text of the key (NULL when the key is
   * missing or not base64). */
  int secret_status;
  const char *secret_message;
  const char *userdata;
  size_t userdata_len;
};

/* The status the class should have: st starts as a copy of the cached
 * status. Returns 1 when st differs from cls->status. */
int carp_nodeclass_status_compute(const struct carp_nodeclass *cls,
                                  const struct carp_nodeclass_facts *f,
                                  int64_t now_ms,
                                  struct carp_nodeclass_status *st);

/* Checks the {{ .Name }} variables of a user-data template the way the
 * Proxmox provider renders it (spaces inside the braces optional; other
 * {{ ... }} text is not a variable). Returns 0, or CARP_EINVALID with the
 * first unknown name in bad. */
int carp_userdata_check(const char *text, size_t len, char *bad,
                        size_t bad_size);

#endif
