#!/usr/bin/env bash
# Runs the fuzz targets (test/fuzz) under libFuzzer for longer than the
# few seconds ctest gives each: builds build-fuzz with clang, ASan/UBSan
# and CARP_FUZZ=ON, then runs every target (or those named) for SECONDS
# each on a copy of its corpus (test/fuzz/corpus/<target>, kept in the
# tree). Findings go to build-fuzz/artifacts/<target>/; --keep merges the
# new inputs that cover more into the tree's corpus.
#
# usage: hack/fuzz.sh [--seconds N] [--keep] [TARGET...]
#        (targets: informer framer jskip yaml units kubeconfig pveconfig pve;
#        default 60 seconds)
set -euo pipefail
CARP_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$CARP_ROOT/hack/lib/deps.sh"
cd "$CARP_ROOT"

seconds=60
keep=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
  --seconds) seconds=$2; shift 2 ;;
  --keep) keep=1; shift ;;
  -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
  -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
  *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(informer framer jskip yaml units kubeconfig pveconfig pve)

carp_install_debs clang
dir=$CARP_ROOT/build-fuzz
CC=clang cmake -S "$CARP_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCARP_SANITIZE=ON -DCARP_FUZZ=ON \
  -DCMAKE_C_FLAGS=-Wno-unknown-warning-option >/dev/null # gcc-only -Wno-s
for t in "${targets[@]}"; do
  [ -d "test/fuzz/corpus/$t" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
  cmake --build "$dir" -j "$(nproc)" --target "fuzz_${t}_lf" >/dev/null
done

failed=0
for t in "${targets[@]}"; do
  work=$dir/corpus/$t
  art=$dir/artifacts/$t
  mkdir -p "$work" "$art"
  echo "== $t: $seconds s"
  if ! "$dir/test/fuzz/fuzz_${t}_lf" -max_total_time="$seconds" \
    -max_len=65536 -artifact_prefix="$art/" -print_final_stats=1 \
    "$work" "test/fuzz/corpus/$t" 2>"$dir/$t.log"; then
    echo "   FAILED: see $dir/$t.log and $art/" >&2
    failed=1
  fi
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$dir/$t.log" | sed 's/^/   /' || true
  if [ $keep -eq 1 ]; then
    "$dir/test/fuzz/fuzz_${t}_lf" -merge=1 "test/fuzz/corpus/$t" "$work" \
      2>>"$dir/$t.log" >/dev/null
  fi
done
exit $failed
