"""`carpenter simulate` against the running controller, on the simulators.

kube-sim and pve-sim play the cluster; Carpenter runs until the
ProxmoxNodeClass and NodePool are Ready and is stopped. Then:

1. Twelve pods are created and left pending (no controller running), the
   state is taken with `kubectl get pods,nodes,nodepools,nodeclaims,
   proxmoxnodeclasses,daemonsets,pdb -A -o yaml`, and `carpenter simulate`
   says which NodeClaims it would create. Carpenter is started on that same
   state: the NodeClaims it creates (pool and instance-type options) and
   the pods it nominates to each must be the simulation's.
2. Once the nodes run, Carpenter is stopped again, the Deployment scaled
   down and the pool allowed to consolidate at once; the simulation's
   consolidation command (decision, method, the NodeClaims that go) must
   be the one Carpenter then carries out."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2elib import FAST_FLAGS, NODECLASS, deployment_yaml  # noqa: E402
from carptest import CARPENTER, Carpenter  # noqa: E402
from sims import Env, wait_until  # noqa: E402

SNAPSHOT_KINDS = "pods,nodes,nodepools,nodeclaims,proxmoxnodeclasses," \
                 "daemonsets,pdb"

NODEPOOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        group: carpenter.dev
        kind: ProxmoxNodeClass
        name: default
      requirements:
        - key: carpenter.dev/instance-family
          operator: In
          values: [c1, s1]
        - key: carpenter.dev/instance-cpu
          operator: Lte
          values: ['8']
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: Never
    budgets:
      - nodes: '100%'
"""


def ready(obj):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in obj.get("status", {}).get("conditions", []))


class SimulateE2ETest(unittest.TestCase):
    def setUp(self):
        self.env = Env()
        self.addCleanup(self.env.stop)
        self.carpenter = None
        self.addCleanup(self.stop_carpenter, signal.SIGKILL)

    def start_carpenter(self):
        self.carpenter = Carpenter(*self.env.carpenter_args(*FAST_FLAGS))

    def stop_carpenter(self, sig=signal.SIGTERM):
        if self.carpenter:
            code, _ = self.carpenter.stop(sig, 10)
            lines = self.carpenter.lines
            self.carpenter = None
            if sig == signal.SIGTERM:
                self.assertEqual(code, 0, "\n".join(lines[-40:]))
            return lines
        return []

    def snapshot(self, name):
        path = os.path.join(self.env.workdir, name)
        with open(path, "w") as f:
            f.write(self.env.kubectl("get", SNAPSHOT_KINDS, "-A", "-o",
                                     "yaml"))
        return path

    def simulate(self, *args):
        r = subprocess.run([CARPENTER, "simulate", "-o", "json", *args],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def nominations(self):
        """pod name -> NodeClaim name, from Carpenter's Nominated events
        (10 come at once, as Karpenter's: the test's pods are no more)."""
        out = {}
        for e in self.env.get("events", namespace="default"):
            m = re.match(r"Pod should schedule on: nodeclaim/(\S+)",
                         e.get("message", ""))
            if e.get("reason") == "Nominated" and m:
                out[e["involvedObject"]["name"]] = m.group(1)
        return out

    def test_simulate_matches_the_controller(self):
        env = self.env
        env.kubectl("apply", "-f", NODECLASS)
        env.apply(NODEPOOL)
        self.start_carpenter()
        wait_until(lambda: ready(env.get("proxmoxnodeclasses", "default")) and
                   ready(env.get("nodepools", "default")), 60,
                   what="ProxmoxNodeClass and NodePool Ready")
        self.stop_carpenter()

        # ---- 1. provisioning ----
        env.apply(deployment_yaml("web", "default", replicas=10, cpu="900m"))
        wait_until(lambda: sum(
            any(c.get("reason") == "Unschedulable"
                for c in p.get("status", {}).get("conditions", []))
            for p in env.get("pods", namespace="default")) == 10, 60,
            what="10 pods unschedulable")
        sim = self.simulate(self.snapshot("pending.yaml"))
        prov = sim["provisioning"]
        self.assertEqual(prov["pendingPods"], 10)
        self.assertEqual(prov["unschedulable"], [])
        self.assertGreaterEqual(len(prov["nodeClaims"]), 2)
        want = sorted((c["nodePool"], tuple(sorted(c["instanceTypes"])),
                       tuple(sorted(p.split("/")[1] for p in c["pods"])))
                      for c in prov["nodeClaims"])

        self.start_carpenter()
        wait_until(lambda: len(self.nominations()) == 10, 60,
                   what="every pod nominated to a NodeClaim")
        nominated = self.nominations()
        claims = {c["metadata"]["name"]: c for c in env.get("nodeclaims")}
        got = []
        for name in set(nominated.values()):
            c = claims[name]
            types = [r["values"] for r in c["spec"]["requirements"]
                     if r["key"] == "node.kubernetes.io/instance-type"][0]
            got.append((c["metadata"]["labels"]["karpenter.sh/nodepool"],
                        tuple(sorted(types)),
                        tuple(sorted(p for p, n in nominated.items()
                                     if n == name))))
        self.assertEqual(sorted(got), want)
        self.assertEqual(len(claims), len(want))

        # ---- 2. consolidation ----
        wait_until(lambda: len(env.get("nodes")) == len(want) and all(
            ready(c) for c in env.get("nodeclaims")) and all(
            p.get("status", {}).get("phase") == "Running"
            for p in env.get("pods", namespace="default")), 120,
            what="the NodeClaims initialized and the pods running")
        self.stop_carpenter()
        env.kubectl("scale", "deployment/web", "--replicas=2")
        wait_until(lambda: len(env.get("pods", namespace="default")) == 2,
                   60, what="the Deployment scaled down to 2 pods")
        env.kubectl("patch", "nodepool", "default", "--type", "merge", "-p",
                    '{"spec":{"disruption":{"consolidateAfter":"0s"}}}')
        sim = self.simulate(self.snapshot("scaled-down.yaml"))
        cons = sim["consolidation"]
        self.assertIn(cons["decision"], ("delete", "replace"), cons)
        going = sorted(n["nodeClaim"] for n in cons["nodes"]
                       if n["action"] != "none")
        self.assertTrue(going)
        self.assertLess(sim["price"]["after"], sim["price"]["before"])

        before = {c["metadata"]["name"] for c in env.get("nodeclaims")}
        self.start_carpenter()
        rec = self.carpenter.wait_for(
            lambda r: r.get("message") ==
            "disruption command found; validating", timeout=60)
        self.assertEqual(rec["decision"], cons["decision"])
        self.assertEqual(rec["consolidation_type"], cons["method"])
        self.assertEqual(rec["count"], len(going))

        def deleted():
            now = {c["metadata"]["name"]: c for c in env.get("nodeclaims")}
            return sorted(n for n in before if n not in now or
                          now[n]["metadata"].get("deletionTimestamp"))
        wait_until(lambda: deleted(), 60, what="a NodeClaim disrupted")
        # What goes is what the simulation said, and nothing else.
        time.sleep(2)
        self.assertEqual(deleted(), going)


if __name__ == "__main__":
    unittest.main()
