"""Shared pieces of the provisioning end-to-end tests: manifests, waiting
for pods, and the invariants every test checks at the end (no leaked and
no duplicate VM)."""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "integration"))
from carptest import Carpenter  # noqa: E402,F401
from sims import Env, wait_until  # noqa: E402,F401

NODECLASS = """
apiVersion: carpenter.dev/v1alpha1
kind: ProxmoxNodeClass
metadata: {name: default}
spec:
  template: {name: k3s-agent}
  instanceTypes:
    families:
      - {name: c1, memoryPerCPU: 2Gi}
      - {name: s1, memoryPerCPU: 4Gi}
    sizes: [2, 4, 8]
"""


def nodepool(name="default", weight=None, limits=None, taints=None,
             labels=None, consolidate_after="Never", extra_reqs=(),
             startup_taints=None, budgets=None):
    reqs = [{"key": "karpenter.sh/capacity-type", "operator": "In",
             "values": ["on-demand"]}] + list(extra_reqs)
    spec = {"template": {"metadata": {"labels": labels or {}},
                         "spec": {"nodeClassRef": {
                             "group": "carpenter.dev",
                             "kind": "ProxmoxNodeClass",
                             "name": "default"},
                             "requirements": reqs}},
            "disruption": {"consolidateAfter": consolidate_after}}
    if budgets:
        spec["disruption"]["budgets"] = budgets
    if taints:
        spec["template"]["spec"]["taints"] = taints
    if startup_taints:
        spec["template"]["spec"]["startupTaints"] = startup_taints
    if weight is not None:
        spec["weight"] = weight
    if limits:
        spec["limits"] = limits
    return json.dumps({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                       "metadata": {"name": name}, "spec": spec})


def deployment(name, replicas, cpu="1", memory="1Gi", node_selector=None,
               tolerations=None, spread_zone=False, namespace="default"):
    pod_spec = {"containers": [{"name": "c", "image": "registry/app",
                                "resources": {"requests": {
                                    "cpu": cpu, "memory": memory}}}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    if tolerations:
        pod_spec["tolerations"] = tolerations
    if spread_zone:
        pod_spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": name}}}]
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas,
                 "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": pod_spec}}})


def pods(env, app):
    return [p for p in env.get("pods")
            if p["metadata"].get("labels", {}).get("app") == app]


def running(env, app, n):
    ps = pods(env, app)
    return len(ps) == n and all(p.get("status", {}).get("phase") ==
                                "Running" for p in ps)


def nodeclaims(env):
    return env.get("nodeclaims")


def instance_cpu(nc):
    return int(nc["metadata"].get("labels", {}).get(
        "carpenter.dev/instance-cpu", "0"))


def check_vm_invariants(test, env, expect_all_claimed=True):
    """No duplicate VM (two VMs for one NodeClaim) and, when asked, no
    leaked VM (a Carpenter VM whose NodeClaim does not exist)."""
    claims = {nc["metadata"]["uid"]: nc for nc in nodeclaims(env)}
    seen = {}
    for vm in env.pve.vms():
        tags = vm.get("tags") or ""
        if "carpenter-e2e" not in tags:
            continue
        desc = vm.get("description") or vm.get("config", {}).get(
            "description", "")
        uid = None
        for line in desc.splitlines():
            if line.strip().startswith("nodeclaim-uid:"):
                uid = line.split(":", 1)[1].strip()
        test.assertIsNotNone(uid, "VM %s has no nodeclaim-uid" % vm["vmid"])
        test.assertNotIn(uid, seen, "two VMs (%s, %s) for one NodeClaim" %
                         (seen.get(uid), vm["vmid"]))
        seen[uid] = vm["vmid"]
        if expect_all_claimed:
            test.assertIn(uid, claims, "VM %s leaked (no NodeClaim %s)" %
                          (vm["vmid"], uid))
    return seen


def start_carpenter(test, env, *extra, name="carpenter"):
    c = Carpenter(*env.carpenter_args(*extra),
                  log=os.path.join(env.workdir, name + ".log"))
    test.addCleanup(c.stop, signal.SIGKILL)
    return c


def carpenter_errors(c):
    return [r for r in c.records() if r.get("level") == "ERROR"]


def wait_running(env, app, n, timeout=90):
    try:
        wait_until(lambda: running(env, app, n), timeout,
                   what="%d %s pods running" % (n, app))
    except AssertionError:
        print(env.kubectl("get", "pods,nodeclaims,nodes", "-o", "wide",
                          check=False))
        raise


def now():
    return time.monotonic()
