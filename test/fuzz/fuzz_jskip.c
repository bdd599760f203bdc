/* Fuzz target: carp_jdec_pass_over (internal/json/jskip.c). Any text must
 * give the handlers the same values, the same code and the same message
 * whether members named managedFields are passed over by the byte scan or
 * read by the parser. */
#include <stdlib.h>

#include "fuzz.h"
#include "jskip_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  size_t passed;
  if (!jskip_same((const char *)data, size, &passed))
    abort();
  return 0;
}
