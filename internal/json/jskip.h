/* jskip.h: the byte scans behind carp_jdec_pass_over (jskip.c), for
 * jdec.c. */
#ifndef CARP_JSKIP_H
#define CARP_JSKIP_H

#include <stddef.h>

/* Where a forward scan of a text is: at, whether that is inside a string,
 * and whether a '/' (a comment, which may hide a quote) was met outside
 * one, after which the scan knows nothing. */
struct carp_jskip_scan {
  size_t at;
  int in_string;
  int comment;
};

/* Scans on to offset to (at may end one past it, when the byte at to is
 * escaped). to is outside any string when !in_string && !comment. */
void carp__jskip_scan(struct carp_jskip_scan *s, const char *text, size_t to);
/* A JSON value starting at i (after optional whitespace), validated as
 * strictly as yajl reads one: the offset just after it, or 0 when it is not
 * one or the scan is not sure (then the parser must read it). */
size_t carp__jskip_value(const char *text, size_t i, size_t n);
/* The last byte before q that is not whitespace ends a value (a string, a
 * container, true, false, null; not a number, which the parser would still
 * hold). */
int carp__jskip_ends_value(const char *text, size_t q);
/* After whitespace from i, the next byte is ',' or '}': another member or
 * the object's end. */
int carp__jskip_member_follows(const char *text, size_t i, size_t n);

#endif
