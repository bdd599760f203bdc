"""`carpenter simulate` as a user runs it: flags and exit codes, snapshots
in several files and formats (a List, single objects, YAML documents,
standard input), what-if NodePools (--nodepool), the time (--now) and the
JSON report's fields."""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from carptest import CARPENTER  # noqa: E402
import scratch  # noqa: E402

T0 = "2026-01-01T00:00:00Z"


def cond(t):
    return {"type": t, "status": "True", "reason": t, "message": "",
            "lastTransitionTime": T0}


NODECLASS = {
    "apiVersion": "carpenter.dev/v1alpha1", "kind": "ProxmoxNodeClass",
    "metadata": {"name": "default", "uid": "c"},
    "spec": {"template": {"name": "k3s-agent"}, "bootDisk": {"size": "20Gi"},
             "instanceTypes": {"families": [
                 {"name": "c1", "memoryPerCPU": "2Gi"},
                 {"name": "s1", "memoryPerCPU": "4Gi"}],
                 "sizes": [2, 4, 8]}},
    "status": {"conditions": [cond("Ready")],
               "templates": [{"region": "homelab", "zone": z, "vmid": 9000}
                             for z in ("pve1", "pve2", "pve3")]}}


def nodepool(name="default", families=("c1", "s1"), consolidate_after="1m",
             status=True, weight=None):
    np = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
          "metadata": {"name": name, "uid": "np-" + name},
          "spec": {"template": {"spec": {
              "nodeClassRef": {"group": "carpenter.dev",
                               "kind": "ProxmoxNodeClass", "name": "default"},
              "requirements": [{"key": "carpenter.dev/instance-family",
                                "operator": "In", "values": list(families)}]}},
              "disruption": {"consolidationPolicy":
                             "WhenEmptyOrUnderutilized",
                             "consolidateAfter": consolidate_after}}}
    if weight:
        np["spec"]["weight"] = weight
    if status:
        np["status"] = {"conditions": [cond("Ready")]}
    return np


def node_and_claim(name, typ, cpu, zone, initialized=T0):
    labels = {"karpenter.sh/nodepool": "default",
              "node.kubernetes.io/instance-type": typ,
              "topology.kubernetes.io/zone": zone,
              "topology.kubernetes.io/region": "homelab",
              "karpenter.sh/capacity-type": "on-demand",
              "karpenter.sh/initialized": "true"}
    res = {"cpu": str(cpu), "memory": "%dGi" % (cpu * 2), "pods": "110"}
    conds = [cond("Launched"), cond("Registered"), cond("Initialized")]
    conds[2]["lastTransitionTime"] = initialized
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
             "metadata": {"name": name, "uid": "nc-" + name,
                          "labels": labels, "creationTimestamp": T0},
             "spec": {"nodeClassRef": {"group": "carpenter.dev",
                                       "kind": "ProxmoxNodeClass",
                                       "name": "default"},
                      "requirements": []},
             "status": {"providerID": "proxmox://homelab/1%s" % name[-2:],
                        "nodeName": name, "capacity": res,
                        "allocatable": res, "conditions": conds}}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "n-" + name, "labels": labels},
            "spec": {"providerID": "proxmox://homelab/1%s" % name[-2:]},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    return [node, claim]


def pod(name, cpu, node=None, selector=None, ns="default"):
    spec = {"containers": [{"name": "c", "resources": {"requests": {
        "cpu": cpu, "memory": "128Mi"}}}]}
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    status = ({"phase": "Running"} if node else
              {"phase": "Pending", "conditions": [{
                  "type": "PodScheduled", "status": "False",
                  "reason": "Unschedulable"}]})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": "u-" + name,
                         "ownerReferences": [{
                             "apiVersion": "apps/v1", "kind": "ReplicaSet",
                             "name": "rs", "uid": "rs", "controller": True}]},
            "spec": spec, "status": status}


def to_yaml(v, ind=0):
    """Enough YAML for these objects (block style, strings quoted)."""
    sp = " " * ind
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                out.append("%s%s:\n%s" % (sp, k, to_yaml(
                    x, ind + 2 if isinstance(x, dict) else ind)))
            else:
                out.append("%s%s: %s\n" % (sp, k, json.dumps(x)))
    else:
        for x in v:
            if isinstance(x, dict) and x:
                body = to_yaml(x, ind + 2)
                out.append(sp + "- " + body[ind + 2:])
            else:
                out.append("%s- %s\n" % (sp, json.dumps(x)))
    return "".join(out)


def run(*args, stdin=None):
    return subprocess.run([CARPENTER, "simulate", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


class SimulateCliTest(unittest.TestCase):
    def setUp(self):
        self.dir = scratch.mkdtemp("carp-simulate-cli-")
        self.addCleanup(scratch.remove, self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def snapshot(self, *objects, name="snap.json"):
        return self.write(name, json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": list(objects),
             "metadata": {"resourceVersion": ""}}, indent=4))

    def simulate(self, *args, stdin=None):
        r = run(*args, stdin=stdin)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def simulate_json(self, *args, stdin=None):
        return json.loads(self.simulate("-o", "json", *args, stdin=stdin))

    # ---- flags ----

    def test_flags(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--output", "--nodepool", "--now", "SNAPSHOT"):
            self.assertIn(flag, r.stdout)
        for args, msg in (((), "no snapshot given"),
                          (("--frobnicate", "x"), "unknown flag --frobnicate"),
                          (("-o", "yaml", "x"), "--output yaml: want text "
                                                "or json"),
                          (("--now", "yesterday", "x"), "--now yesterday: not "
                                                        "an RFC 3339 time"),
                          (("--nodepool",), "--nodepool needs a value"),
                          (("/nonexistent.yaml",), "/nonexistent.yaml: No "
                                                   "such file or directory")):
            r = run(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(msg, r.stderr)
            self.assertEqual(r.stdout, "")

    def test_bad_snapshot_exit_code(self):
        path = self.snapshot(NODECLASS, {"apiVersion": "v1",
                                         "kind": "ConfigMap",
                                         "metadata": {"name": "cm",
                                                      "namespace": "kube"}})
        r = run(path)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "carpenter simulate: %s: document 1, item 1: "
                         "ConfigMap kube/cm: kind ConfigMap is not part of a "
                         "snapshot (carpenter simulate reads Pod, Node, "
                         "NodeClaim, NodePool, ProxmoxNodeClass, "
                         "PodDisruptionBudget and DaemonSet)\n" % path)

    # ---- reading ----

    def test_files_formats_and_stdin(self):
        """The same cluster as one JSON List, or as YAML documents and a
        JSON object in three files, or on standard input: same answer."""
        objs = [NODECLASS, nodepool(), pod("a", "1500m"), pod("b", "1500m")]
        one = self.snapshot(*objs)
        yaml_docs = self.write("pods.yaml", "---\n".join(
            to_yaml(o) for o in objs[2:]))
        cls = self.write("class.json", json.dumps(NODECLASS))
        pool = self.write("pool.yaml", to_yaml(
            {"apiVersion": "v1", "kind": "List", "items": [nodepool()]}))
        with open(one) as f:
            text = f.read()
        want = self.simulate_json(one)
        self.assertEqual(want["objects"]["pods"], 2)
        for args, stdin in (((cls, pool, yaml_docs), None), (("-",), text)):
            got = self.simulate_json(*args, stdin=stdin)
            self.assertEqual(got["provisioning"], want["provisioning"])
            self.assertEqual(got["objects"], want["objects"])
        self.assertEqual(self.simulate_json("-", stdin=text)["files"],
                         ["<stdin>"])

    def test_pending_pods_and_refusals(self):
        path = self.snapshot(
            NODECLASS, nodepool(),
            *[pod("web-%d" % i, "700m") for i in range(12)],
            pod("gpu", "1", selector={"example.org/gpu": "true"}),
            pod("huge", "64"))
        out = self.simulate_json(path)
        prov = out["provisioning"]
        self.assertEqual(prov["pendingPods"], 14)
        # 12 x 700m: eleven on an 8-vCPU node (allocatable 8 CPUs here),
        # the twelfth on the cheapest that fits it.
        claims = sorted(prov["nodeClaims"], key=lambda c: -len(c["pods"]))
        self.assertEqual([len(c["pods"]) for c in claims], [11, 1])
        self.assertEqual(claims[0]["instanceType"], "c1.8VCPU-16GB")
        self.assertEqual(claims[1]["instanceType"], "c1.2VCPU-4GB")
        self.assertEqual(claims[0]["zones"], ["pve1", "pve2", "pve3"])
        self.assertAlmostEqual(claims[0]["price"], 8 * 0.03 + 16 * 0.004)
        self.assertEqual(claims[0]["nodePool"], "default")
        self.assertEqual(claims[0]["requests"]["cpu"], "7700m")
        self.assertIn("c1.8VCPU-16GB", claims[0]["instanceTypes"])
        refused = {u["pod"]: u["refusals"] for u in prov["unschedulable"]}
        self.assertEqual(set(refused), {"default/gpu", "default/huge"})
        self.assertEqual(refused["default/gpu"][0]["reason"], "Requirement")
        self.assertEqual(refused["default/gpu"][0]["detail"],
                         "example.org/gpu")
        self.assertEqual(refused["default/huge"][0]["reason"], "Resources")
        self.assertAlmostEqual(out["price"]["after"], sum(
            c["price"] for c in claims))
        text = self.simulate(path)
        self.assertIn("would create 2 NodeClaims", text)
        self.assertIn("cannot place 2 pods", text)
        self.assertIn("nodepool default: Requirement example.org/gpu", text)

    def test_what_if_nodepool(self):
        """--nodepool replaces the snapshot's pool of that name (here: s1
        only) or adds one; a pool file's NodePool needs no status."""
        path = self.snapshot(NODECLASS, nodepool(), pod("a", "1"))
        self.assertEqual(self.simulate_json(path)["provisioning"]["nodeClaims"]
                         [0]["instanceType"], "c1.2VCPU-4GB")
        s1 = self.write("s1.yaml", to_yaml(nodepool(families=["s1"],
                                                     status=False)))
        out = self.simulate_json("--nodepool", s1, path)
        self.assertEqual(out["provisioning"]["nodeClaims"][0]["instanceType"],
                         "s1.2VCPU-8GB")
        self.assertIn("NodePool default from %s replaces the snapshot's" % s1,
                      out["warnings"])
        # An added pool with a higher weight wins.
        heavy = self.write("heavy.json", json.dumps(nodepool(
            "heavy", families=["s1"], status=False, weight=50)))
        claim = self.simulate_json("--nodepool", heavy, path)[
            "provisioning"]["nodeClaims"][0]
        self.assertEqual(claim["nodePool"], "heavy")
        # A pool that is not valid is refused.
        bad = nodepool(status=False)
        bad["spec"]["weight"] = 0
        r = run("--nodepool", self.write("bad.json", json.dumps(bad)), path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("NodePool default: invalid: spec.weight", r.stderr)

    def test_consolidation_over_time(self):
        """An underutilized node: kept while consolidateAfter has not passed
        since it was initialized, deleted after."""
        objs = [NODECLASS, nodepool(consolidate_after="10m")]
        objs += node_and_claim("big-01", "c1.8VCPU-16GB", 8, "pve1")
        objs += node_and_claim("small-02", "c1.2VCPU-4GB", 2, "pve2")
        objs += [pod("a", "500m", node="big-01"),
                 pod("b", "500m", node="small-02")]
        path = self.snapshot(*objs)
        early = self.simulate_json("--now", "2026-01-01T00:05:00Z", path)
        self.assertEqual(early["consolidation"]["decision"], "none")
        for n in early["consolidation"]["nodes"]:
            self.assertEqual(n["why"], "consolidateAfter 10m has not passed "
                             "since its pods last changed (in 5m)")
        late = self.simulate_json("--now", "2026-01-01T01:00:00Z", path)
        cons = late["consolidation"]
        # The big node goes: its pod moves to the small one (0.5 + 0.5 of
        # 2 CPUs).
        self.assertEqual(cons["decision"], "delete")
        deleted = [n["nodeClaim"] for n in cons["nodes"]
                   if n["action"] == "delete"]
        self.assertEqual(deleted, ["big-01"])
        self.assertAlmostEqual(cons["savings"], 8 * 0.03 + 16 * 0.004)
        self.assertAlmostEqual(late["price"]["before"],
                               0.304 + 2 * 0.03 + 4 * 0.004)
        self.assertAlmostEqual(late["price"]["after"], 0.076)
        text = self.simulate("--now", "2026-01-01T01:00:00Z", path)
        self.assertIn("Consolidation: delete 1 NodeClaim (single-node "
                      "consolidation, "
                      "Underutilized), saving 0.3040/h", text)


if __name__ == "__main__":
    unittest.main()
