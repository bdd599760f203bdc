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
ks=
cleanup() {
  if [ -n "$ks" ]; then kill "$ks" 2>/dev/null || true; wait "$ks" 2>/dev/null || true; fi
  rm -rf "$work"
}
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
# and kubectl 1.20 takes every document of it (its own validation against
# kube-sim's /openapi/v2, then the server's, without creating anything)
python3 hack/kube-sim --listen 127.0.0.1:0 --tls --tls-dir "$work/kube-sim-tls" \
  --kubeconfig-out "$work/kubeconfig" >"$work/kube-sim.out" 2>"$work/kube-sim.log" &
ks=$!
for _ in $(seq 1 600); do
  grep -q '^kube-sim ready ' "$work/kube-sim.out" && break
  kill -0 "$ks" 2>/dev/null || { cat "$work/kube-sim.log" >&2; fail "kube-sim exited"; }
  sleep 0.1
done
grep -q '^kube-sim ready ' "$work/kube-sim.out" || fail "kube-sim did not start"
KUBECONFIG=$work/kubeconfig kubectl apply --dry-run=server -f "$work/chart.yaml" >"$work/chart.out" 2>&1 ||
  { cat "$work/chart.out" >&2; fail "kubectl 1.20 refused the rendered chart"; }
echo "   $(grep -c 'dry run' "$work/chart.out") objects accepted"
kill "$ks"
wait "$ks" 2>/dev/null || true
ks=

echo "== hack/demo.sh --ci in the clone, with kubectl 1.20"
hack/demo.sh --ci
echo "== fresh clone: demo and chart passed"
