/* jskip_trace.h: what handlers see of a text, with and without
 * carp_jdec_pass_over("metadata", "managedFields") - for test_jskip.c and
 * fuzz_jskip.c, which hold that the two never differ. The handler enters
 * every container and writes each key and value down, and reads no
 * managedFields member of an object under a member named metadata (as the
 * informer's decoders read none); any other managedFields it reads. */
#ifndef CARP_JSKIP_TRACE_H
#define CARP_JSKIP_TRACE_H

#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/jdec.h"

static int jskip_trace_value(struct carp_jdec *d, void *ctx,
                             const struct carp_jval *v);

/* The members of an object under a member named metadata. */
static int jskip_trace_meta(struct carp_jdec *d, void *ctx,
                            const struct carp_jval *v)
{
  if (v->type != CARP_JEND && !carp_jdec_in_array(d) &&
      !strcmp(carp_jdec_key(d, NULL), "managedFields"))
    return 0;
  return jskip_trace_value(d, ctx, v);
}

static int jskip_trace_value(struct carp_jdec *d, void *ctx,
                             const struct carp_jval *v)
{
  struct carp_buf *out = ctx;
  const char *k = carp_jdec_key(d, NULL);
  if (v->type == CARP_JEND)
    return carp_buf_putc(out, '>');
  carp_buf_printf(out, "%s:%d", k, (int)v->type);
  if (v->s)
    carp_buf_printf(out, "=%s", v->s);
  carp_buf_putc(out, ';');
  if (v->type == CARP_JOBJECT || v->type == CARP_JARRAY) {
    int meta = v->type == CARP_JOBJECT && !carp_jdec_in_array(d) &&
               !strcmp(k, "metadata");
    if (carp_jdec_enter(d, meta ? jskip_trace_meta : jskip_trace_value, out,
                        NULL) == 0)
      carp_buf_putc(out, '<');
    else
      carp_buf_putc(out, '!');
  }
  return 0;
}

/* The trace of text into out, then "rc=<code> err=<message>"; the members
 * passed over (0 without pass_over). */
static size_t jskip_trace(const char *text, size_t len, int pass_over,
                          struct carp_buf *out)
{
  struct carp_jdec d;
  char *err = NULL;
  int rc;
  size_t passed;
  carp_jdec_init(&d, jskip_trace_value, out);
  if (pass_over)
    carp_jdec_pass_over(&d, "metadata", "managedFields");
  rc = carp_jdec_parse(&d, text, len, &err);
  carp_buf_printf(out, "rc=%d err=%s", rc, err ? err : "");
  carp_free(err);
  passed = d.passed;
  carp_jdec_free(&d);
  return passed;
}

/* 1 when both ways give the same trace; *passed: members passed over. */
static int jskip_same(const char *text, size_t len, size_t *passed)
{
  struct carp_buf a, b;
  int same;
  carp_buf_init(&a, CARP_BUF_UNLIMITED);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  jskip_trace(text, len, 0, &a);
  *passed = jskip_trace(text, len, 1, &b);
  same = a.len == b.len && !memcmp(a.ptr, b.ptr, a.len);
  carp_buf_free(&a);
  carp_buf_free(&b);
  return same;
}

#endif
