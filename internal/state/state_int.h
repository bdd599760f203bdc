/* Private parts of the cluster state module. */
#ifndef CARP_STATE_INT_H
#define CARP_STATE_INT_H

#include "carpenter/cluster.h"

struct carp_metrics;

void carp__cluster_book_init(struct carp_cluster *c,
                             struct carp_metrics *metrics);
void carp__cluster_book_free(struct carp_cluster *c);

#endif
