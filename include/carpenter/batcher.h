/* Module provisioning (internal/provisioning). The provisioning batcher
 * (Karpenter's batcher.go): the first trigger opens a window; the window closes
 * once no new trigger arrived for the idle duration (1 s), or at the max
 * duration (10 s) however busy; then the callback runs once with the number of
 * distinct triggers. A trigger while the callback's work is still running opens
 * the next window. */
#ifndef CARP_BATCHER_H
#define CARP_BATCHER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct carp_batcher;
struct carp_clock;

typedef void (*carp_batcher_cb)(size_t triggers, void *arg);

/* clock: the windows' (NULL: the system clock). */
int carp_batcher_new(uv_loop_t *loop, struct carp_clock *clock,
                     uint64_t idle_ms, uint64_t max_ms, carp_batcher_cb cb,
                     void *arg, struct carp_batcher **out);
/* A trigger, deduplicated by key within a window (e.g. a pod UID); key may
 * be NULL for an anonymous trigger. */
void carp_batcher_trigger(struct carp_batcher *b, const char *key);
/* 1 while a window is open. */
int carp_batcher_open(const struct carp_batcher *b);
void carp_batcher_close(struct carp_batcher *b, void (*cb)(void *arg),
                        void *arg);

#endif
