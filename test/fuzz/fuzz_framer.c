/* Fuzz target: a watch response's body (internal/kube/framer.c) as it
 * arrives in pieces - the first bytes say where the pieces end - and each
 * framed event through the informer's event decoder for Pods, as a watch
 * has it. The same stream fed whole must frame the same events. */
#include <stdlib.h>
#include <string.h>

#include "../../internal/informer/informer_int.h"
#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/framer.h"
#include "fuzz.h"

struct run {
  struct inf_dec *dec;
  struct carp_buf events; /* what was framed, each followed by NUL */
};

static int on_object(const char *obj, size_t len, void *arg)
{
  struct run *r = arg;
  struct inf_event ev;
  struct inf_obj o;
  char *err = NULL;
  carp_buf_append(&r->events, obj, len + 1);
  if (inf_dec_event(r->dec, obj, len, &ev, &err) == 0 &&
      (ev.t == INF_ADDED || ev.t == INF_MODIFIED)) {
    inf_dec_event_object(r->dec, &o);
    carp_obj_unref(o.obj);
    carp_free(o.err);
  }
  carp_free(err);
  return 0;
}

/* Feeds text in pieces (cuts[i] % 64 + 1 bytes each, cycling; whole when
 * ncuts is 0); the result of the last feed. */
static int feed(struct run *r, const char *text, size_t len,
                const uint8_t *cuts, size_t ncuts)
{
  struct carp_framer f;
  size_t at = 0, i = 0;
  int rc = 0;
  carp_framer_init(&f, 1 << 16);
  while (at < len && rc == 0) {
    size_t n = ncuts ? (size_t)cuts[i++ % ncuts] % 64 + 1 : len;
    if (n > len - at)
      n = len - at;
    rc = carp_framer_feed(&f, text + at, n, on_object, r);
    at += n;
  }
  carp_framer_free(&f);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  size_t ncuts = size ? data[0] % 8 : 0;
  struct run a, b;
  const char *text;
  size_t len;
  int rca, rcb;
  if (size < 1 + ncuts)
    return 0;
  text = (const char *)data + 1 + ncuts;
  len = size - 1 - ncuts;
  a.dec = inf_dec_new(&carp_kind_pod);
  b.dec = a.dec;
  carp_buf_init(&a.events, CARP_BUF_UNLIMITED);
  carp_buf_init(&b.events, CARP_BUF_UNLIMITED);
  rca = feed(&a, text, len, data + 1, ncuts);
  rcb = feed(&b, text, len, NULL, 0);
  /* Where the pieces end changes nothing. */
  if (rca != rcb || a.events.len != b.events.len ||
      (a.events.len && memcmp(a.events.ptr, b.events.ptr, a.events.len)))
    abort();
  carp_buf_free(&a.events);
  carp_buf_free(&b.events);
  inf_dec_free(a.dec);
  return 0;
}
