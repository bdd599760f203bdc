/* hostports.c: host port conflicts.
 *
 * Two pods (or a pod and a DaemonSet pod) that bind the same host port and
 * protocol cannot share a node when their host IPs overlap; an empty IP,
 * 0.0.0.0 or :: binds every address and so overlaps any IP. Port 0 means
 * "no host port" and never conflicts. Inside a solve the IPs are interned
 * and a bin keeps the list of ports its pods use. */
#include <string.h>

#include "carpenter/alloc.h"
#include "schd_int.h"

static int wildcard(const char *ip)
{
  return !ip || !*ip || strcmp(ip, "0.0.0.0") == 0 || strcmp(ip, "::") == 0;
}

int carp_sched_host_ports_conflict(const struct carp_sched_host_port *a,
                                   const struct carp_sched_host_port *b)
{
  if (a->port == 0 || b->port == 0)
    return 0;
  if (a->port != b->port || a->protocol != b->protocol)
    return 0;
  if (wildcard(a->host_ip) || wildcard(b->host_ip))
    return 1;
  return strcmp(a->host_ip, b->host_ip) == 0;
}

void schd_ports_from_public(struct schd_solver *s,
                            const struct carp_sched_host_port *hp, size_t n,
                            struct schd_port **out, uint32_t *nout)
{
  struct schd_port *p = schd_alloc(&s->arena, (n + 1) * sizeof(*p));
  uint32_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (hp[i].port == 0)
      continue;
    p[k].port = hp[i].port;
    p[k].proto = (uint8_t)hp[i].protocol;
    p[k].ip = wildcard(hp[i].host_ip) ? SCHD_NONE
                                      : schd_intern(&s->rc.in, hp[i].host_ip);
    k++;
  }
  *out = p;
  *nout = k;
}

int schd_ports_conflict(const struct schd_port *a, uint32_t na,
                        const struct schd_port *b, uint32_t nb, uint32_t *port)
{
  for (uint32_t i = 0; i < na; i++)
    for (uint32_t k = 0; k < nb; k++) {
      if (a[i].port != b[k].port || a[i].proto != b[k].proto)
        continue;
      if (a[i].ip == SCHD_NONE || b[k].ip == SCHD_NONE || a[i].ip == b[k].ip) {
        if (port)
          *port = a[i].port;
        return 1;
      }
    }
  return 0;
}

void schd_bin_add_ports(struct schd_bin *b, const struct schd_port *p,
                        uint32_t n)
{
  for (uint32_t i = 0; i < n; i++) {
    SCHD_GROW(b->ports, b->nports, b->capports);
    b->ports[b->nports++] = p[i];
  }
}
