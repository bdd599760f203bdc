/* metrics_route.h: the /metrics route of the carpenter binary. */
#ifndef CARP_METRICS_ROUTE_H
#define CARP_METRICS_ROUTE_H

struct carp_metrics;
struct carp_server;

/* Adds /metrics to a server, rendering the registry on each scrape. */
int carp_metrics_serve(struct carp_metrics *r, struct carp_server *s);

#endif
