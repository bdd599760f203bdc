/* The fuzz targets' one entry point, libFuzzer's: each target decodes
 * data as what it parses would meet it from the network; anything the
 * sanitizers or an abort catch is a finding. Built with libFuzzer when
 * CARP_FUZZ is on (clang, hack/fuzz.sh), else with driver.c. */
#ifndef CARP_FUZZ_H
#define CARP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
