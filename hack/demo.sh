#!/usr/bin/env bash
# The main job on the simulators: kube-sim plays the Kubernetes API server
# (with a scheduler and kubelets), pve-sim plays a three-host Proxmox VE
# cluster whose VMs boot and join as Nodes, and Carpenter sits between
# them. A Deployment's pods are pending; Carpenter launches VMs for them;
# the pods run; the Deployment scales to zero; the empty nodes go away.
#
#   hack/demo.sh         with pauses and commentary
#   hack/demo.sh --ci    no pauses; exits non-zero if a step times out, and
#                        removes its logs then too (after printing their ends)
#
# Everything runs on loopback and stops when the script exits.
set -euo pipefail
CARP_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$CARP_ROOT/hack/lib/deps.sh"
cd "$CARP_ROOT"

CI=0
[ "${1:-}" = "--ci" ] && CI=1
REPLICAS=${DEMO_REPLICAS:-8}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
pause() { [ $CI = 1 ] || sleep "${1:-2}"; }
die() { echo "demo: $*" >&2; exit 1; }

carp_install_deps
say "building Carpenter"
carp_build_target build carpenter >/dev/null

WORK=$(mktemp -d "${TMPDIR:-/tmp}/carpenter-demo.XXXXXX")
PIDS=()
cleanup() {
  local code=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ $code -ne 0 ]; then
    local f
    for f in carpenter.log kube-sim.log pve-sim.log; do
      [ -s "$WORK/$f" ] || continue
      echo "--- last lines of $f" >&2
      tail -n 20 "$WORK/$f" >&2
    done
  fi
  if [ $code -ne 0 ] && [ $CI = 0 ]; then
    echo "demo failed; logs kept in $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME READY-PREFIX CMD... : runs CMD in the background and waits for
# its "READY-PREFIX <url>" line.
start() {
  local name=$1 prefix=$2
  shift 2
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    grep -q "^$prefix " "$WORK/$name.out" 2>/dev/null && return 0
    sleep 0.1
  done
  die "$name did not start (see $WORK/$name.log)"
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls until COMMAND succeeds.
wait_for() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "timed out after ${secs}s: $what"
    sleep 1
  done
}

say "starting kube-sim (Kubernetes API stand-in with scheduler and kubelets)"
start kube-sim "kube-sim ready" python3 hack/kube-sim --listen 127.0.0.1:0 \
  --tls --scheduler --kubelet --kubeconfig-out "$WORK/kubeconfig" \
  --node-lease-grace 15
export KUBECONFIG=$WORK/kubeconfig
head -n1 "$WORK/kube-sim.out"

say "starting pve-sim (three Proxmox hosts, a k3s-agent template on each)"
start pve-sim "pve-sim ready" python3 hack/pve-sim --listen 127.0.0.1:0 \
  --cluster homelab --hosts pve1,pve2,pve3 --host-cpus 32 \
  --host-memory 128Gi --template k3s-agent:9000@pve1 \
  --template k3s-agent:9001@pve2 --template k3s-agent:9002@pve3 \
  --pools k8s-nodes --clone-seconds 2 --boot-seconds 3 \
  --kubeconfig "$WORK/kubeconfig" --config-out "$WORK/pve.yaml"
head -n1 "$WORK/pve-sim.out"

say "installing the CRDs and the example ProxmoxNodeClass and NodePool"
kubectl apply -f crds/karpenter.sh_nodepools.yaml \
  -f crds/karpenter.sh_nodeclaims.yaml \
  -f crds/carpenter.dev_proxmoxnodeclasses.yaml \
  -f crds/karpenter.sh_nodeoverlays.yaml
kubectl apply -f crds/examples/proxmoxnodeclass.yaml \
  -f crds/examples/nodepool.yaml
# The example waits 5 minutes before removing an empty node; the demo
# does not have that long.
kubectl patch nodepool default --type merge \
  -p '{"spec":{"disruption":{"consolidateAfter":"10s"}}}'

say "starting Carpenter"
build/carpenter --kubeconfig "$WORK/kubeconfig" \
  --pve-config "$WORK/pve.yaml" --cluster-name demo \
  --metrics-port 0 --health-probe-port 0 --log-format text \
  >"$WORK/carpenter.log" 2>&1 &
PIDS+=($!)
wait_for 30 "Carpenter ready" grep -q "became the leader" "$WORK/carpenter.log"
kubectl get nodepools,proxmoxnodeclasses
pause

say "creating a Deployment of $REPLICAS pods (1 CPU, 2Gi each); no node can run them"
kubectl create deployment web --image=nginx --replicas="$REPLICAS"
kubectl set resources deployment web --requests=cpu=1,memory=2Gi
sleep 2
kubectl get pods
pause 3

say "Carpenter picks VM sizes, clones them from the template and the guests join"
all_running() {
  [ "$(kubectl get pods -l app=web --field-selector=status.phase=Running \
        -o name | wc -l)" -eq "$REPLICAS" ]
}
deadline=$((SECONDS + 120))
until all_running; do
  [ $SECONDS -lt $deadline ] || die "pods not running after 120s"
  [ $CI = 1 ] || kubectl get nodeclaims,nodes 2>/dev/null | sed 's/^/  /'
  sleep 3
done
kubectl get nodeclaims -o wide
kubectl get nodes
kubectl get pods -o wide
pause 3

say "scaling the Deployment to zero: the nodes become empty and are removed"
kubectl scale deployment web --replicas=0
no_claims() { [ -z "$(kubectl get nodeclaims -o name)" ]; }
deadline=$((SECONDS + 150))
until no_claims; do
  [ $SECONDS -lt $deadline ] || die "nodeclaims still present after 150s"
  [ $CI = 1 ] || kubectl get nodeclaims,nodes 2>/dev/null | sed 's/^/  /'
  sleep 3
done
kubectl get nodeclaims,nodes
say "every VM Carpenter created is gone from Proxmox"
# Asked of the Proxmox API itself, with the token Carpenter uses.
pve_field() { sed -n "s/^ *$1: *\"\{0,1\}\([^\"]*\)\"\{0,1\}$/\1/p" "$WORK/pve.yaml"; }
pve_vms() {
  curl -sfk -H "Authorization: PVEAPIToken=$(pve_field tokenID)=$(pve_field tokenSecret)" \
    "$(pve_field url)/cluster/resources?type=vm" |
    python3 -c 'import json, sys
vms = [v for v in json.load(sys.stdin)["data"] if not v.get("template")]
for v in vms:
    print("  left: VM %s %s on %s" % (v["vmid"], v.get("name", ""), v["node"]))
sys.exit(1 if vms else 0)'
}
echo "  VMs created: $(grep -c "created VM" "$WORK/carpenter.log")"
deadline=$((SECONDS + 60))
until pve_vms; do
  [ $SECONDS -lt $deadline ] || die "VMs still on Proxmox after the nodes went"
  sleep 2
done
echo "  VMs left on Proxmox (templates aside): 0"
say "demo finished"
