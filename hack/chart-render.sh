#!/usr/bin/env bash
# Renders charts/carpenter the way `helm template` does, without helm: Go's
# text/template with the sprig functions (the engine Helm uses), through
# the workplace's helm-render (HELM_RENDER_SRC, else ../shared/tools/helm-render
# beside the checkout, else /work/shared/tools/helm-render - the same places
# pve-sim looks for apidata.js), built here from Debian's packages on first use.
#
#   hack/chart-render.sh [--include-crds] [--name NAME] [--namespace NS]
#                        [-f values.yaml]... [--set key.path=value]...
#
# The renderer goes to $CARP_BUILD_DIR (default build/) as helm-render and is
# rebuilt when its source is newer. --include-crds prints the chart's crds/
# first, as `helm template --include-crds` does. Output: YAML documents on
# stdout, each after a "# Source:" line.
set -euo pipefail
CARP_ROOT=$(cd "$(dirname "$0")/.." && pwd)
src=${HELM_RENDER_SRC:-}
if [ -z "$src" ]; then
  for cand in "$CARP_ROOT/../shared/tools/helm-render" /work/shared/tools/helm-render; do
    if [ -f "$cand/main.go" ]; then src=$cand; break; fi
  done
fi
build=${CARP_BUILD_DIR:-$CARP_ROOT/build}
out=$build/helm-render
chart=$CARP_ROOT/charts/carpenter

if [ ! -f "$src/main.go" ]; then
  echo "chart-render: helm-render's source not found (looked in ${src:-$CARP_ROOT/../shared/tools/helm-render and /work/shared/tools/helm-render}; set HELM_RENDER_SRC)" >&2
  exit 1
fi
mkdir -p "$build"
# One build at a time when tests run in parallel.
exec 9>"$out.lock"
flock 9
if [ ! -x "$out" ] || [ "$src/main.go" -nt "$out" ] || [ "$src/build.sh" -nt "$out" ]; then
  "$src/build.sh" "$out.tmp" >&2
  mv -f "$out.tmp" "$out"
fi
flock -u 9

crds=0
args=()
for a in "$@"; do
  if [ "$a" = --include-crds ]; then crds=1; else args+=("$a"); fi
done
if [ $crds = 1 ]; then
  for f in "$chart"/crds/*.yaml; do
    printf -- '---\n# Source: carpenter/crds/%s\n' "$(basename "$f")"
    # One CRD per file: its own "---" markers are dropped.
    sed -e '/^---$/d' "$f"
  done
fi
exec "$out" "${args[@]}" "$chart"
