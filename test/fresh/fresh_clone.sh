#!/usr/bin/env bash
# The README's promise, checked the way a new user meets it: the repository
# cloned into an empty folder (nothing beside it: no ../shared, no build
# folder) runs `hack/demo.sh --ci` with Debian 12's kubectl 1.20 first on the
# PATH, and renders the chart with hack/chart-render.sh. Also: no absolute
# path of a machine anywhere in the tree.
#
#   fresh_clone.sh   (ctest fresh_clone; CARP_SOURCE_DIR is the repository,
#                    CARP_BUILD_DIR holds debian-kubectl/ from carp_debian_kubectl)
#
# What is cloned is the commit checked out in CARP_SOURCE_DIR (HEAD):
# uncommitted changes are not part of a clone, and the test says so. The
# clone, its build and the demo's files are removed at the end, also when a
# step fails or the test is interrupted.
set -euo pipefail
src=${CARP_SOURCE_DIR:?}
kubectl=${CARP_BUILD_DIR:?}/debian-kubectl/usr/bin/kubectl
[ -x "$kubectl" ] || { echo "fresh_clone: no $kubectl (ctest runs the debian_kubectl fixture first)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/carp-fresh.XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() { echo "fresh_clone: $*" >&2; exit 1; }

echo "== no absolute path of a machine in the tree"
# The folder this project is developed in (work), and home and root: a path
# rooted at one of them names a file of one machine. A word character before
# it is allowed: carpenter/workqueue.h is not such a path.
if git -C "$src" grep -nIE '(^|[^[:alnum:]_./-])/(work|home|root)/'; then
  fail "absolute paths of a machine (above) in the tree"
fi

echo "== clone of $(git -C "$src" rev-parse --short HEAD) into an empty folder"
if ! git -C "$src" diff --quiet HEAD -- 2>/dev/null; then
  echo "   (the working tree has uncommitted changes; they are not in the clone)"
fi
git clone -q "$src" "$work/carpenter"
cd "$work/carpenter"
[ "$(ls -A "$work")" = carpenter ] || fail "something beside the clone"

# Only what a user has: no variables naming this checkout, its build or
# another copy of the schema or the renderer.
unset CARP_SOURCE_DIR CARP_BUILD_DIR PVE_APIDATA HELM_RENDER_SRC KUBECONFIG KUBECTL
export PATH=$(dirname "$kubectl"):$PATH
kubectl version --client 2>/dev/null | grep -q 'GitVersion:"v1\.20\.' || fail "kubectl on the PATH is not 1.20"

echo "== hack/chart-render.sh in the clone"
hack/chart-render.sh --include-crds --name carpenter --namespace kube-system >"$work/chart.yaml"
for kind in CustomResourceDefinition ServiceAccount ClusterRole Deployment; do
  grep -q "^kind: $kind\$" "$work/chart.yaml" || fail "the rendered chart has no $kind"
done
# and kubectl 1.20 reads every document of it
kubectl create --dry-run=client -o name -f "$work/chart.yaml" >"$work/chart.names" 2>"$work/chart.err" ||
  { cat "$work/chart.err" >&2; fail "kubectl 1.20 could not read the rendered chart"; }
echo "   $(wc -l <"$work/chart.names") objects"

echo "== hack/demo.sh --ci in the clone, with kubectl 1.20"
hack/demo.sh --ci
echo "== fresh clone: demo and chart passed"
