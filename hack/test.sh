#!/usr/bin/env bash
# Runs every test: format and source checks, then ctest on a normal build and
# again on an AddressSanitizer + UndefinedBehaviorSanitizer build.
#   hack/test.sh            everything
#   hack/test.sh -R regex   only the ctest tests matching regex (both builds)
set -euo pipefail
CARP_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$CARP_ROOT/hack/lib/deps.sh"
cd "$CARP_ROOT"

carp_install_deps

echo "== source checks"
hack/format.sh --check
hack/checksrc.sh

jobs=$(nproc)
echo "== build (normal)"
carp_build build
echo "== ctest (normal)"
(cd build && ctest --output-on-failure -j "$jobs" "$@")

echo "== build (address + undefined sanitizers)"
carp_build build-asan -DCARP_SANITIZE=ON
echo "== ctest (sanitizers)"
# Simulator conformance suites exercise only python and kubectl: once is enough.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j "$jobs" -LE sim "$@")
echo "== all tests passed"
