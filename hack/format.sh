#!/usr/bin/env bash
# Formats every C file with the repo's .clang-format; --check only reports.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h' | grep -v '^build')
[ ${#files[@]} -eq 0 ] && exit 0
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
      echo "not formatted: $f (run hack/format.sh)" >&2
      bad=1
    fi
  done
  exit $bad
fi
clang-format --style=file -i "${files[@]}"
