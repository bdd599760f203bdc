/* Fuzz target: quantities and durations (internal/core), as they come in
 * objects and flags. The input is split at newlines; each line is parsed
 * as both, and what parses must format (each quantity format) to text that
 * parses to the same value. */
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/duration.h"
#include "carpenter/quantity.h"
#include "fuzz.h"

static void one(const char *s)
{
  int64_t q, q2, ms, ms2;
  char out[CARP_DURATION_LEN], qout[CARP_QUANTITY_LEN];
  int fmt;
  if (carp_quantity_parse(s, &q) == 0) {
    carp_quantity_value(q);
    for (fmt = 0; fmt < 2; fmt++) {
      carp_quantity_format(q, (enum carp_quantity_format)fmt, qout);
      if (carp_quantity_parse(qout, &q2) || q2 != q)
        abort();
    }
  }
  if (carp_duration_parse(s, 1, &ms) == 0) {
    carp_duration_format(ms, out);
    if (carp_duration_parse(out, 1, &ms2) || ms2 != ms)
      abort();
  }
  carp_duration_parse(s, 0, &ms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = carp_strndup((const char *)data, size), *line = text, *nl;
  for (;;) {
    nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    one(line);
    if (!nl)
      break;
    line = nl + 1;
  }
  carp_free(text);
  return 0;
}
