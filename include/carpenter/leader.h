/* Module leader (internal/leader). Leader election on a coordination.k8s.io/v1
 * Lease, with client-go's timings and rules: a 15 s lease, renewed every 2 s,
 * given up 10 s after the last successful renewal. Expiry of another holder's
 * lease is judged by the local clock from when its record last changed, so
 * clock skew between replicas does not matter.
 *
 * A Lease gives no fencing. So that a deposed leader is silent before
 * anyone else can take over, carp_leader_is_leader() turns false as soon as
 * the renew deadline passes without a renewal (10 s < 15 s), and the
 * elector installs itself as the Kubernetes client's write gate. */
#ifndef CARP_LEADER_H
#define CARP_LEADER_H

#include <stdint.h>

#include <uv.h>

#include "carpenter/kube.h"

struct carp_leader;
struct carp_metrics;

struct carp_leader_options {
  const char *namespace;      /* required */
  const char *name;           /* default "carpenter-leader-election" */
  const char *identity;       /* default hostname + "_" + random suffix */
  uint64_t lease_ms;          /* default 15 s */
  uint64_t renew_deadline_ms; /* default 10 s */
  uint64_t retry_ms;          /* default 2 s */
  void (*on_started_leading)(void *arg);
  /* Leadership was lost (renew deadline passed or another holder took
   * the lease). Writes are already refused; the process should exit. */
  void (*on_stopped_leading)(void *arg);
  void *arg;
  struct carp_metrics *metrics; /* leader_election_master_status */
};

int carp_leader_new(uv_loop_t *loop, struct carp_kube *kube,
                    const struct carp_leader_options *opts,
                    struct carp_leader **out);
int carp_leader_start(struct carp_leader *l);
/* True only while the lease was renewed within the renew deadline. */
int carp_leader_is_leader(const struct carp_leader *l);
const char *carp_leader_identity(const struct carp_leader *l);
/* Stops campaigning. When leading, first releases the lease (empty holder,
 * so a standby takes over at once), then calls close_cb. */
void carp_leader_close(struct carp_leader *l, void (*close_cb)(void *arg),
                       void *arg);

#endif
