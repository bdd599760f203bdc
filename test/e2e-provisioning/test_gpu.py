"""GPUs end to end on kube-sim and pve-sim: pve-sim has one GPU (a PCI
resource mapping with one device, on pve2). As users set it up, a "gpu"
NodePool (weight 10) takes only GPU types and taints its nodes; "default"
may launch any type. A pod that requests nvidia.com/gpu (and tolerates the
taint) gets a GPU instance type, its VM is placed on pve2 with the mapped
device (hostpciN: mapping=..., q35, no balloon), the Node reports
nvidia.com/gpu once the guest boots with the device, and the pod binds. A
pod without a GPU request goes to "default" and gets a plain type there
(GPU types cost more). A second GPU pod finds the
device taken: it stays pending with an event that says so, and binds once
the first GPU node is removed and its device is free again. One NodeOverlay
raises the price of the plain family so that the plain pod's NodeClaim
goes to the other one."""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2elib import (Env, check_vm_invariants, nodeclaims,  # noqa: E402
                    nodepool, pods, start_carpenter, wait_until)

NODECLASS = """
apiVersion: carpenter.dev/v1alpha1
kind: ProxmoxNodeClass
metadata: {name: default}
spec:
  template: {name: k3s-agent}
  devices:
    - name: rtx
      mapping: gpu
      resource: nvidia.com/gpu
      price: "0.5"
      gpu: {name: rtx-4090, manufacturer: nvidia, memory: 24Gi}
  instanceTypes:
    families:
      - {name: c1, memoryPerCPU: 2Gi}
      - {name: s1, memoryPerCPU: 4Gi}
      - {name: g1, memoryPerCPU: 4Gi, devices: [rtx]}
    sizes: [2, 4]
"""

# c1 is the cheapest family; this overlay makes it dearer than s1.
OVERLAY = """
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: c1-costs-more}
spec:
  requirements:
    - {key: carpenter.dev/instance-family, operator: In, values: [c1]}
  priceAdjustment: "+200%"
"""


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def pod(name, gpu=0):
    res = {"cpu": "500m", "memory": "512Mi"}
    if gpu:
        res["nvidia.com/gpu"] = str(gpu)
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"app": name}},
        "spec": {"containers": [{
            "name": "c", "image": "registry/cuda",
            "resources": {"requests": res,
                          "limits": {"nvidia.com/gpu": str(gpu)} if gpu else {}}}],
            "tolerations": [dict(GPU_TAINT, operator="Equal")] if gpu else []}})


class GpuTest(unittest.TestCase):
    def test_gpu_pods(self):
        env = Env(pve_args=("--pci-mapping", "gpu=pve2:1"))
        self.addCleanup(env.stop)
        env.apply(NODECLASS)
        env.apply(OVERLAY)
        env.apply(nodepool())
        env.apply(nodepool("gpu", weight=10, taints=[GPU_TAINT], extra_reqs=[
            {"key": "carpenter.dev/instance-gpu-count", "operator": "Exists"}]))
        c = start_carpenter(self, env, "--leader-elect=false")

        def ready(kind, name):
            o = env.get(kind, name)
            return any(x["type"] == "Ready" and x["status"] == "True"
                       for x in o.get("status", {}).get("conditions", []))
        # both pools in service first, so the first batch sees both
        wait_until(lambda: ready("nodepool", "gpu") and ready("nodepool", "default"),
                   60, what="both NodePools Ready")

        def phase(name):
            p = env.get("pod", name, namespace="default")
            return p["status"].get("phase"), p["spec"].get("nodeName")

        def claim_of(node):
            return next(nc for nc in nodeclaims(env)
                        if nc["status"].get("nodeName") == node)

        env.apply(pod("train", gpu=1))
        env.apply(pod("web"))
        wait_until(lambda: phase("train")[0] == "Running", 120,
                   what="the GPU pod running")
        wait_until(lambda: phase("web")[0] == "Running", 120,
                   what="the plain pod running")
        gpu_node = env.get("node", phase("train")[1])
        labels = gpu_node["metadata"]["labels"]
        self.assertEqual(labels["carpenter.dev/instance-family"], "g1")
        self.assertEqual(labels["karpenter.sh/nodepool"], "gpu")
        self.assertEqual(labels["topology.kubernetes.io/zone"], "pve2")
        self.assertEqual(labels["carpenter.dev/instance-gpu-count"], "1")
        self.assertEqual(labels["carpenter.dev/instance-gpu-name"], "rtx-4090")
        self.assertEqual(labels["carpenter.dev/instance-gpu-manufacturer"], "nvidia")
        self.assertEqual(gpu_node["status"]["allocatable"]["nvidia.com/gpu"], "1")
        gpu_claim = claim_of(gpu_node["metadata"]["name"])
        self.assertEqual(gpu_claim["status"]["capacity"]["nvidia.com/gpu"], "1")
        vmid = int(gpu_claim["status"]["providerID"].rsplit("/", 1)[1])
        vm = env.pve.control("GET", "vms/%d" % vmid)
        self.assertEqual(vm["config"]["hostpci0"], "mapping=gpu,pcie=1")
        self.assertEqual((vm["config"]["machine"], vm["config"]["balloon"]), ("q35", "0"))
        self.assertEqual(vm["devices"][0]["path"], "0000:01:00.0")
        # the plain pod: no GPU type, and the overlay steered it off c1
        web_node = env.get("node", phase("web")[1])
        self.assertNotIn("carpenter.dev/instance-gpu-count", web_node["metadata"]["labels"])
        web_claim = claim_of(web_node["metadata"]["name"])
        self.assertEqual(web_node["metadata"]["labels"]["karpenter.sh/nodepool"], "default")
        types = next(r["values"] for r in web_claim["spec"]["requirements"]
                     if r["key"] == "node.kubernetes.io/instance-type")
        self.assertTrue(types[0].startswith("s1."), types)
        self.assertEqual(web_node["metadata"]["labels"]["carpenter.dev/instance-family"], "s1")
        overlay = env.get("nodeoverlay", "c1-costs-more")
        conds = {x["type"]: x["status"] for x in overlay["status"]["conditions"]}
        self.assertEqual(conds, {"ValidationSucceeded": "True", "Ready": "True"})

        # the only device is taken: the next GPU pod waits and says why
        env.apply(pod("train2", gpu=1))

        def told():
            return [e for e in env.get("events", namespace="default")
                    if e["involvedObject"].get("name") == "train2" and
                    e.get("reason") == "FailedScheduling" and
                    "nvidia.com/gpu are unavailable" in e.get("message", "")]
        ev = wait_until(told, 60, what="a FailedScheduling event for train2")
        self.assertIn("no capacity or devices free", ev[0]["message"])
        self.assertEqual(phase("train2"), ("Pending", None))
        self.assertEqual(len([nc for nc in nodeclaims(env)
                              if nc["metadata"]["labels"].get(
                                  "carpenter.dev/instance-family") == "g1"]), 1)

        # the first GPU node goes: its device is free, the pod gets it
        env.kubectl("delete", "pod", "train", "--wait=false")
        env.kubectl("delete", "nodeclaim", gpu_claim["metadata"]["name"], "--wait=false")
        wait_until(lambda: phase("train2")[0] == "Running", 180,
                   what="the second GPU pod running on a new GPU node")
        node2 = env.get("node", phase("train2")[1])
        self.assertNotEqual(node2["metadata"]["name"], gpu_node["metadata"]["name"])
        self.assertEqual(node2["metadata"]["labels"]["topology.kubernetes.io/zone"], "pve2")
        check_vm_invariants(self, env)
        self.assertFalse([r for r in c.records() if r.get("level") == "ERROR"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
