#!/usr/bin/env bash
# Soak: the SIGKILL chaos test (test/e2e-provisioning/test_chaos.py) for
# longer than the suite runs it - scale up and down with Carpenter killed at
# random moments, then no leaked or duplicate VM, every pod scheduled and no
# empty node left. Each round uses a new seed, printed so a failure can be
# replayed with CHAOS_SEED=<seed> CHAOS_RUNS=<runs>.
#   hack/soak.sh                 5 rounds of 100 kills
#   hack/soak.sh ROUNDS RUNS     ROUNDS rounds of RUNS kills
#   hack/soak.sh --asan ...      against the sanitizer build
set -euo pipefail
CARP_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$CARP_ROOT/hack/lib/deps.sh"
cd "$CARP_ROOT"

build=build
cmake_args=()
if [[ ${1:-} == --asan ]]; then
  build=build-asan
  cmake_args=(-DCARP_SANITIZE=ON)
  shift
fi
rounds=${1:-5}
runs=${2:-100}
if ! [[ $rounds =~ ^[1-9][0-9]*$ && $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: hack/soak.sh [--asan] [ROUNDS [RUNS]]" >&2
  exit 2
fi

carp_install_deps
carp_build "$build" "${cmake_args[@]}"

export CARP_BUILD_DIR="$CARP_ROOT/$build"
export CARP_SOURCE_DIR="$CARP_ROOT"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for ((round = 1; round <= rounds; round++)); do
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  echo "== soak round $round/$rounds: CHAOS_SEED=$seed CHAOS_RUNS=$runs"
  if ! CHAOS_SEED=$seed CHAOS_RUNS=$runs \
    python3 test/e2e-provisioning/test_chaos.py; then
    echo "== soak failed in round $round: replay with" \
      "CHAOS_SEED=$seed CHAOS_RUNS=$runs python3 test/e2e-provisioning/test_chaos.py" >&2
    exit 1
  fi
done
echo "== soak passed: $rounds rounds of $runs kills"
