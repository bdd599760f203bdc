/* Private parts of the cluster state module. */
#ifndef CARP_STATE_INT_H
#define CARP_STATE_INT_H

#include "carpenter/cluster.h"

struct carp_metrics;

void carp__cluster_book_init(struct carp_cluster *c,
                             struct carp_metrics *metrics);
void carp__cluster_book_free(struct carp_cluster *c);

/* The virtual pods' book (virtual.c), kept in book.c's state. */
struct carp_vbook;
struct carp_vbook *carp__vbook_new(void);
void carp__vbook_free(struct carp_vbook *vb);
struct carp_vbook *carp__cluster_vbook(const struct carp_cluster *c);

#endif
