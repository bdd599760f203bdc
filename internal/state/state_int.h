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

/* The pods' scheduling times (podtimes.c), kept in book.c's state. */
struct carp_podtimes;
struct carp_store;
struct carp_podtimes *carp__podtimes_new(void);
void carp__podtimes_free(struct carp_podtimes *pt);
void carp__podtimes_forget(struct carp_podtimes *pt, const char *uid);
void carp__podtimes_sweep(struct carp_podtimes *pt, struct carp_store *pods);
struct carp_podtimes *carp__cluster_podtimes(const struct carp_cluster *c);
/* The bookkeeping's clock, epoch ms. */
int64_t carp__cluster_now_ms(const struct carp_cluster *c);

#endif
