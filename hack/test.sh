#!/usr/bin/env bash
# Runs every test: format and source checks, then ctest on a normal build and
# again on an AddressSanitizer + UndefinedBehaviorSanitizer build.
#   hack/test.sh            everything
#   hack/test.sh -R regex   only the ctest tests matching regex (both builds)
#   CARP_TEST_LONG=1 hack/test.sh   also the tests labelled long (minutes
#                           each, beyond CI's 30-minute budget; normal build)
# It fails when a test leaves a file behind under $TMPDIR (a folder of the
# run's own). New entries in /tmp itself are listed; they fail the run on CI
# (CI set) or with CARP_TMP_STRICT=1, where no one else writes to /tmp.
set -euo pipefail
CARP_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$CARP_ROOT/hack/lib/deps.sh"
cd "$CARP_ROOT"

carp_install_deps

# Tests make their files under $TMPDIR: a folder of this run's own, so that
# what a test leaves is known to be ours even while others use /tmp. It must
# be empty at the end, and /tmp must hold nothing new that is not explained
# by someone else (an entry made since the start, and not ours, is listed).
tmp_root=${TMPDIR:-/tmp}
run_tmp=$(mktemp -d "$tmp_root/carp-test-run.XXXXXX")
tmp_before=$(mktemp "$tmp_root/carp-test-list.XXXXXX")
ls -A "$tmp_root" | sort >"$tmp_before"
check_tmp() {
  local code=$? left
  trap - EXIT
  left=$(cd "$run_tmp" && ls -A)
  if [ -n "$left" ]; then
    echo "== tests left files in \$TMPDIR:" >&2
    echo "$left" | sed 's/^/   /' >&2
    [ $code -ne 0 ] || code=1
  fi
  rm -rf "$run_tmp"
  new_in_tmp() {
    ls -A "$tmp_root" | sort | comm -13 "$tmp_before" - |
      grep -vxF -e "$(basename "$run_tmp")" -e "$(basename "$tmp_before")" || true
  }
  left=$(new_in_tmp)
  if [ -n "$left" ]; then
    # what others' running tests make comes and goes; a leftover stays
    sleep 5
    left=$(new_in_tmp | grep -xF "$left" || true)
  fi
  rm -f "$tmp_before"
  if [ -n "$left" ]; then
    echo "== new in $tmp_root since the tests started (a test ignoring \$TMPDIR, or another user's):" >&2
    echo "$left" | sed 's/^/   /' >&2
    if [ -n "${CARP_TMP_STRICT:-${CI:-}}" ]; then
      [ $code -ne 0 ] || code=1
    else
      echo "   (not failing on a machine others may share: CI and CARP_TMP_STRICT=1 do)" >&2
    fi
  fi
  [ $code -ne 0 ] || echo "== all tests passed; nothing left behind"
  exit $code
}
trap check_tmp EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export TMPDIR=$run_tmp

echo "== source checks"
hack/format.sh --check
hack/checksrc.sh

jobs=$(nproc)
echo "== build (normal)"
carp_build build
echo "== ctest (normal)"
skip_long=(-LE long)
if [ "${CARP_TEST_LONG:-}" = 1 ]; then
  skip_long=()
fi
(cd build && ctest --output-on-failure -j "$jobs" "${skip_long[@]}" "$@")

echo "== build (address + undefined sanitizers)"
carp_build build-asan -DCARP_SANITIZE=ON
echo "== ctest (sanitizers)"
# Simulator conformance suites exercise only python and kubectl: once is
# enough; so are the five longest e2e runs (label slow), to keep the suite
# within CI's 30 minutes on 2 cores.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j "$jobs" -LE 'sim|slow|long' "$@")
