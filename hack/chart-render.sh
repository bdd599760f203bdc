#!/usr/bin/env bash
# Renders charts/carpenter the way `helm template` does, without helm:
# hack/helm-render (Go's text/template with the sprig functions, the engine
# Helm uses), built here from Debian's Go packages on first use.
#
#   hack/chart-render.sh [--include-crds] [--name NAME] [--namespace NS]
#                        [-f values.yaml]... [--set key.path=value]...
#
# The renderer goes to $CARP_BUILD_DIR (default build/) as helm-render, with
# Go's build cache beside it, and is rebuilt when a source is newer.
# --include-crds prints the chart's crds/ first, as `helm template
# --include-crds` does. Output: YAML documents on stdout, each after a
# "# Source:" line, in the order Helm installs them.
set -euo pipefail
CARP_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$CARP_ROOT/hack/lib/deps.sh"
src=$CARP_ROOT/hack/helm-render
build=${CARP_BUILD_DIR:-$CARP_ROOT/build}
out=$build/helm-render

mkdir -p "$build"
# One build at a time when tests run in parallel.
exec 9>"$out.lock"
flock 9
stale=0
[ -x "$out" ] || stale=1
for f in "$src"/*.go; do [ "$f" -nt "$out" ] && stale=1; done
if [ $stale = 1 ]; then
  carp_install_debs golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev >&2
  # GOPATH mode: the libraries are Debian's, under /usr/share/gocode.
  (cd "$src" && GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= \
    GOCACHE="$build/go-cache" go build -o "$out.tmp" .) >&2
  mv -f "$out.tmp" "$out"
fi
flock -u 9
exec 9>&-

exec "$out" "$@" "$CARP_ROOT/charts/carpenter"
