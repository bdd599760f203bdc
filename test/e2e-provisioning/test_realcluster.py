"""What a real control plane does to Carpenter, on kube-sim playing it:

- node.kubernetes.io/not-ready stays on a new node for a monitor period
  after it is Ready: the NodeClaim is Registered, Initialized only once
  the taint is gone (KnownEphemeralTaintsExist meanwhile), no NodeClaim is
  added for the pods waiting for it, and registration and initialization
  are told once each, without a warning for a node that is fine;
- it never goes (a broken CNI): no VM is added at all, and the pods get a
  Warning event naming the node and the taint (plus a log line and a
  gauge);
- a node being deleted with pods a PodDisruptionBudget keeps from being
  evicted: their new home is provisioned while they still run there;
- a slow API server: a new Node stays for seconds with the kubelet's raw
  labels before Carpenter's registration patch lands; no NodeClaim is
  added meanwhile (issue 20.5 saw 4 VMs for 3 pods).

(An old or incomplete API server: test/integration/test_binary.py.)"""
import json
import os
import re
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2elib import (NODECLASS, Env, check_vm_invariants,  # noqa: E402
                    deployment, nodeclaims, nodepool, pods, start_carpenter,
                    wait_running, wait_until)
from carptest import http_get  # noqa: E402

NOT_READY = "node.kubernetes.io/not-ready"


def events(env, reason):
    return [e for e in env.get("events")
            if e.get("reason") == reason]


def created_claims(c):
    return [r["nodeclaim"] for r in c.records()
            if r.get("message") == "created nodeclaim"]


class RealClusterTest(unittest.TestCase):
    def env(self, *kube_args):
        e = Env(kube_args=kube_args)
        # Cleanups run last first: the simulators stop, then their files go.
        self.addCleanup(shutil.rmtree, e.workdir, ignore_errors=True)
        self.addCleanup(e.stop)
        e.apply(NODECLASS)
        e.apply(nodepool())
        return e

    def test_not_ready_taint_that_lingers(self):
        # The first monitor pass comes 30 s after kube-sim started: the
        # node is Ready long before its taint goes. The taint is one of
        # Karpenter's known ephemeral taints, so the NodeClaim is
        # Registered but not Initialized until it goes.
        env = self.env("--node-monitor-period", "30")
        c = start_carpenter(self, env, "--leader-elect=false")
        env.apply(deployment("web", 4, cpu="250m", memory="256Mi"))

        def conds(nc):
            return {x["type"]: x for x in nc.get("status", {}).get(
                "conditions", [])}
        def node_ready(nc):
            n = env.get("node", nc["status"]["nodeName"])
            return any(c["type"] == "Ready" and c["status"] == "True"
                       for c in n.get("status", {}).get("conditions", []))
        registered = wait_until(lambda: [
            nc for nc in nodeclaims(env)
            if conds(nc).get("Registered", {}).get("status") == "True" and
            node_ready(nc)], 90, what="a registered NodeClaim, Node Ready")[0]
        node = env.get("node", registered["status"]["nodeName"])
        self.assertIn(NOT_READY, [t["key"] for t in node["spec"]["taints"]],
                      "the taint should still be there")
        # Registered while NotReady, the reason may still say so.
        init = conds(nodeclaims(env)[0])["Initialized"]
        self.assertNotEqual(init["status"], "True", init)
        self.assertIn(init["reason"], ("KnownEphemeralTaintsExist",
                                       "NodeNotReady"), init)
        wait_running(env, "web", 4)
        wait_until(lambda: conds(nodeclaims(env)[0]).get(
            "Initialized", {}).get("status") == "True", 60,
            what="the NodeClaim initialized once the taint is gone")
        # One batch, one NodeClaim: nothing launched for pods that wait
        # for a node that is coming.
        self.assertEqual(len(created_claims(c)), 1, created_claims(c))
        self.assertEqual(len(nodeclaims(env)), 1)
        self.assertEqual(len(check_vm_invariants(self, env)), 1)
        # Each transition told once; no warning for a node that is fine;
        # no error fields on a success.
        name = nodeclaims(env)[0]["metadata"]["name"]
        for msg in ("registered nodeclaim", "initialized nodeclaim"):
            self.assertEqual(len([r for r in c.records()
                                  if r.get("message") == msg and
                                  r.get("nodeclaim") == name]), 1, msg)
        self.assertEqual(events(env, "UnregisteredTaintMissing"), [])
        found = [r for r in c.records() if r.get("message") == "CRDs found"]
        self.assertEqual(len(found), 1)
        self.assertNotIn("error", found[0])
        self.assertNotIn("errorCode", found[0])
        self.assertEqual(len(events(env, "Registered")), 1)
        self.assertEqual(len(events(env, "Initialized")), 1)

    def test_not_ready_taint_that_never_goes(self):
        env = self.env("--keep-not-ready-taint")
        c = start_carpenter(self, env, "--leader-elect=false")
        env.apply(deployment("stuck", 4, cpu="250m", memory="256Mi"))
        # The pods wait for their node; after the grace each is told why.
        evs = wait_until(lambda: len(events(env, "WaitingForNode")) >= 4 and
                         events(env, "WaitingForNode"), 120,
                         what="WaitingForNode events on the 4 pods")
        node = nodeclaims(env)[0]["status"]["nodeName"]
        for e in evs:
            self.assertEqual(e["type"], "Warning")
            self.assertEqual(e["involvedObject"]["kind"], "Pod")
            self.assertIn("waits for node %s: node %s has taint %s:"
                          "NoSchedule, which the pod does not tolerate" %
                          (node, node, NOT_READY), e["message"])
        self.assertEqual({e["involvedObject"]["name"] for e in evs},
                         {p["metadata"]["name"] for p in pods(env, "stuck")})
        warn = [r for r in c.records()
                if r.get("message") == "pods provisioned for are not binding"]
        self.assertEqual(len(warn), 1, warn)
        self.assertEqual(warn[0]["pods"], 4)
        self.assertIn(NOT_READY, warn[0]["reason"])
        port = c.port("metrics")
        _, _, body = http_get("http://127.0.0.1:%d/metrics" % port)
        self.assertRegex(body, r'(?m)^carpenter_provisioner_pods_waiting_for_'
                         r'node\{reason="taint"\} 4$')
        # More batches come (every 10 s while pods are headed somewhere):
        # still the one VM, and no second line for the same pods.
        time.sleep(12)
        self.assertEqual(len(created_claims(c)), 1, created_claims(c))
        self.assertEqual(len(check_vm_invariants(self, env)), 1)
        self.assertEqual(len([r for r in c.records() if r.get("message") ==
                              "pods provisioned for are not binding"]), 1)
        self.assertTrue(all(not p["spec"].get("nodeName")
                            for p in pods(env, "stuck")))

    def test_pods_of_a_deleted_node_are_provisioned_before_eviction(self):
        env = self.env()
        start_carpenter(self, env, "--leader-elect=false")
        env.apply(deployment("held", 2, cpu="250m", memory="256Mi"))
        wait_running(env, "held", 2)
        old = nodeclaims(env)
        self.assertEqual(len(old), 1)
        old_node = old[0]["status"]["nodeName"]
        # A PDB lets none of them go: the drain can evict nothing.
        env.apply(json.dumps({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "held", "namespace": "default"},
            "spec": {"maxUnavailable": 0,
                     "selector": {"matchLabels": {"app": "held"}}}}))
        env.kubectl("delete", "nodeclaim", old[0]["metadata"]["name"],
                    "--wait=false")
        new = wait_until(lambda: [nc for nc in nodeclaims(env)
                                  if nc["metadata"]["name"] !=
                                  old[0]["metadata"]["name"]], 60,
                         what="a NodeClaim for the pods of the deleted node")
        self.assertEqual(len(new), 1)
        # Their new home is coming while they still run on the old node.
        held = pods(env, "held")
        self.assertEqual(len(held), 2)
        self.assertTrue(all(p["spec"].get("nodeName") == old_node and
                            not p["metadata"].get("deletionTimestamp")
                            for p in held), held)
        evs = [e for e in env.get("events") if e.get("reason") == "Nominated"
               and re.search(new[0]["metadata"]["name"], e["message"])]
        self.assertEqual({e["involvedObject"]["name"] for e in evs},
                         {p["metadata"]["name"] for p in held})

    def test_slow_registration_adds_no_nodeclaim(self):
        # Every write to a single Node (Carpenter's registration patch,
        # the initialized label) waits 10 s: the Node is there, unsynced.
        env = self.env("--fault-delay-ms", "10000",
                       "--fault-match", "^/api/v1/nodes/[^/]+$")
        c = start_carpenter(self, env, "--leader-elect=false")
        env.apply(deployment("slow", 3, cpu="250m", memory="256Mi"))
        def unsynced():
            ids = {nc.get("status", {}).get("providerID")
                   for nc in nodeclaims(env)} - {None}
            return [n for n in env.get("nodes")
                    if n["spec"].get("providerID") in ids and
                    "karpenter.sh/registered" not in
                    n["metadata"].get("labels", {})]
        wait_until(unsynced, 90, what="the claim's Node, not registered yet")
        time.sleep(1)  # Carpenter's caches have both
        # A batch while it is so: one more small pod fits the same claim.
        env.apply(deployment("late", 1, cpu="250m", memory="256Mi"))
        wait_running(env, "slow", 3, timeout=150)
        wait_running(env, "late", 1, timeout=60)
        self.assertEqual(len(created_claims(c)), 1, created_claims(c))
        self.assertEqual(len(check_vm_invariants(self, env)), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
