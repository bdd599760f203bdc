"""Provisioning end to end on kube-sim and pve-sim: pending pods become
NodeClaims, VMs and Nodes, and every rule of the solve holds in the real
loop: packing onto in-flight capacity, NodePool weights, strict limits
under a 500-pod burst, taints/tolerations/nodeSelector routing, and zone
spread over three Proxmox hosts."""
import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2elib import (NODECLASS, Env, check_vm_invariants,  # noqa: E402
                    deployment, instance_cpu, nodeclaims, nodepool, pods,
                    start_carpenter, wait_running, wait_until)


class ProvisioningTest(unittest.TestCase):
    def env(self, **kw):
        e = Env(**kw)
        self.addCleanup(e.stop)
        e.apply(NODECLASS)
        return e

    def test_scale_up_from_zero(self):
        env = self.env()
        env.apply(nodepool())
        c = start_carpenter(self, env, "--leader-elect=false")
        started = time.monotonic()
        env.apply(deployment("web", 6, cpu="1", memory="2Gi"))
        wait_running(env, "web", 6)
        took = time.monotonic() - started
        claims = nodeclaims(env)
        self.assertGreaterEqual(len(claims), 1)
        klass = env.get("proxmoxnodeclass", "default")
        for nc in claims:
            # Stamped with the class hash so a later spec change drifts.
            ann = nc["metadata"]["annotations"]
            self.assertEqual(ann.get("carpenter.dev/proxmoxnodeclass-hash"),
                             klass["status"]["specHash"])
            self.assertEqual(
                ann.get("carpenter.dev/proxmoxnodeclass-hash-version"), "v1")
            self.assertIn("karpenter.sh/nodepool-hash", ann)
            conds = {x["type"]: x["status"]
                     for x in nc["status"]["conditions"]}
            self.assertEqual(conds.get("Ready"), "True", nc["status"])
            self.assertTrue(nc["status"]["providerID"].startswith(
                "proxmox://homelab/"))
            self.assertIn("karpenter.sh/termination",
                          nc["metadata"]["finalizers"])
            node = env.get("node", nc["status"]["nodeName"])
            self.assertEqual(node["spec"]["providerID"],
                             nc["status"]["providerID"])
            self.assertEqual(node["metadata"]["labels"][
                "karpenter.sh/initialized"], "true")
            self.assertFalse(any(t["key"] == "karpenter.sh/unregistered"
                                 for t in node["spec"].get("taints", [])))
        vms = check_vm_invariants(self, env)
        self.assertEqual(len(vms), len(claims))
        # Cheapest fit: 6 x (1 CPU, 2Gi) needs about 6 vCPU: one 8-vCPU
        # VM, not several small ones.
        self.assertLessEqual(sum(instance_cpu(nc) for nc in claims), 10)
        print("scale-up of 6 pods took %.1f s" % took)
        self.assertFalse([r for r in c.records()
                          if r.get("level") == "ERROR"])
        # One line per transition (a status write that lost to a stale
        # cache told it twice), no warning for a node that is fine.
        for nc in claims:
            for msg in ("registered nodeclaim", "initialized nodeclaim"):
                self.assertEqual(len([r for r in c.records()
                                      if r.get("message") == msg and
                                      r.get("nodeclaim") ==
                                      nc["metadata"]["name"]]), 1, msg)
        self.assertFalse([e for e in env.get("events") if e.get("reason") ==
                          "UnregisteredTaintMissing"])

    def test_packs_onto_in_flight_claim(self):
        # Slow VMs: the first claim is still booting when more pods come.
        env = self.env(clone_seconds=3, boot_seconds=4)
        env.apply(nodepool())
        start_carpenter(self, env, "--leader-elect=false",
                        "--batch-idle-duration=500ms")
        env.apply(deployment("a", 3, cpu="1", memory="1Gi"))
        wait_until(lambda: nodeclaims(env), 20, what="first nodeclaim")
        # 3 CPU went onto a 4-vCPU VM (3.8 allocatable): 500m still fits.
        env.apply(deployment("b", 1, cpu="500m", memory="512Mi"))
        wait_running(env, "a", 3)
        wait_running(env, "b", 1)
        claims = nodeclaims(env)
        self.assertEqual(len(claims), 1, [nc["metadata"]["name"]
                                          for nc in claims])
        node = claims[0]["status"]["nodeName"]
        self.assertTrue(all(p["spec"]["nodeName"] == node
                            for p in pods(env, "a") + pods(env, "b")))

    def test_weights_and_limits_under_burst(self):
        env = self.env()
        # The preferred pool is small; the other takes the rest, up to its
        # own limit. 500 pods want 50 CPU; only 8 + 24 are allowed.
        env.apply(nodepool("preferred", weight=100, limits={"cpu": "8"}))
        env.apply(nodepool("fallback", weight=10,
                           limits={"cpu": "24", "nodes": "6"}))
        c = start_carpenter(self, env, "--leader-elect=false")
        peak = {"preferred": 0, "fallback": 0, "nodes": 0}
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                try:
                    claims = nodeclaims(env)
                except Exception:  # kube-sim busy: sample again
                    continue
                use = {"preferred": 0, "fallback": 0}
                n = 0
                for nc in claims:
                    pool = nc["metadata"]["labels"]["karpenter.sh/nodepool"]
                    cpu = instance_cpu(nc)
                    if not cpu:
                        # Not launched yet: count its largest option.
                        for r in nc["spec"]["requirements"]:
                            if r["key"] == "carpenter.dev/instance-cpu":
                                pass
                        cpu = max(int(t.split(".")[1].split("VCPU")[0])
                                  for r in nc["spec"]["requirements"]
                                  if r["key"] ==
                                  "node.kubernetes.io/instance-type"
                                  for t in r["values"])
                    use[pool] += cpu
                    n += pool == "fallback"
                for k in use:
                    peak[k] = max(peak[k], use[k])
                peak["nodes"] = max(peak["nodes"], n)
                time.sleep(0.3)

        t = threading.Thread(target=sample, daemon=True)
        t.start()
        env.apply(deployment("burst", 500, cpu="100m", memory="128Mi"))
        # Wait until the limits are reached and nothing more happens.
        wait_until(lambda: sum(1 for p in pods(env, "burst")
                               if p.get("status", {}).get("phase") ==
                               "Running") >= 250, 120,
                   what="pods running up to the limits")
        time.sleep(8)
        stop.set()
        t.join(5)
        self.assertGreater(peak["preferred"], 0, "weight ignored")
        self.assertLessEqual(peak["preferred"], 8, peak)
        self.assertLessEqual(peak["fallback"], 24, peak)
        self.assertLessEqual(peak["nodes"], 6, peak)
        pending = [p for p in pods(env, "burst")
                   if p.get("status", {}).get("phase") == "Pending"]
        self.assertTrue(pending, "the limits should leave pods pending")
        check_vm_invariants(self, env)
        # The pods over the limits are logged folded: a line per reason and
        # batch with a count and a few names, not a line per pod.
        folded = [r for r in c.records()
                  if r.get("message") == "could not schedule pods"]
        self.assertTrue(folded)
        self.assertGreaterEqual(max(r["pods"] for r in folded), len(pending))
        self.assertLessEqual(len(folded), 40)
        self.assertEqual(len(folded[-1]["examples"].split(", ")), 3)

    def test_taints_tolerations_and_selectors(self):
        env = self.env()
        env.apply(nodepool("general"))
        env.apply(nodepool("gpu", labels={"workload": "gpu"},
                           taints=[{"key": "gpu", "value": "true",
                                    "effect": "NoSchedule"}]))
        start_carpenter(self, env, "--leader-elect=false")
        env.apply(deployment("plain", 2))
        env.apply(deployment(
            "special", 2, node_selector={"workload": "gpu"},
            tolerations=[{"key": "gpu", "operator": "Equal",
                          "value": "true", "effect": "NoSchedule"}]))
        wait_running(env, "plain", 2)
        wait_running(env, "special", 2)

        def pool_of(p):
            node = env.get("node", p["spec"]["nodeName"])
            return node["metadata"]["labels"]["karpenter.sh/nodepool"]
        self.assertEqual({pool_of(p) for p in pods(env, "plain")},
                         {"general"})
        self.assertEqual({pool_of(p) for p in pods(env, "special")}, {"gpu"})
        for nc in nodeclaims(env):
            if nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "gpu":
                node = env.get("node", nc["status"]["nodeName"])
                self.assertIn({"key": "gpu", "value": "true",
                               "effect": "NoSchedule"},
                              node["spec"]["taints"])

    def test_startup_taints_and_a_taint_written_back(self):
        """Initialization waits for the startup taints to go; a
        karpenter.sh/unregistered taint a stale writer puts back after
        registration is taken off again, and only it: the startup taint
        the node's daemon removed stays removed."""
        startup = {"key": "example.com/agent-not-ready", "effect": "NoSchedule"}
        env = self.env()
        env.apply(nodepool(startup_taints=[startup]))
        start_carpenter(self, env, "--leader-elect=false")
        env.apply(deployment("web", 1))

        def registered():
            for nc in nodeclaims(env):
                conds = {x["type"]: x for x in
                         nc.get("status", {}).get("conditions", [])}
                if conds.get("Registered", {}).get("status") == "True":
                    return nc
            return None
        nc = wait_until(registered, 90, what="a registered NodeClaim")
        name = nc["status"]["nodeName"]
        node = env.get("node", name)
        keys = [t["key"] for t in node["spec"].get("taints", [])]
        self.assertIn(startup["key"], keys)
        self.assertNotIn("karpenter.sh/unregistered", keys)
        conds = {x["type"]: x for x in nc["status"]["conditions"]}
        self.assertNotEqual(conds["Initialized"]["status"], "True")
        # A stale writer restores the taint; then the daemon drops its own.
        unreg = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
        env.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(
            {"spec": {"taints": node["spec"]["taints"] + [unreg]}}))
        env.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(
            {"spec": {"taints": [t for t in node["spec"]["taints"]
                                 if t["key"] != startup["key"]] + [unreg]}}))
        wait_running(env, "web", 1)
        node = env.get("node", name)
        keys = [t["key"] for t in node["spec"].get("taints", [])]
        self.assertNotIn("karpenter.sh/unregistered", keys)
        self.assertNotIn(startup["key"], keys)
        nc = env.get("nodeclaim", nc["metadata"]["name"])
        conds = {x["type"]: x["status"] for x in nc["status"]["conditions"]}
        self.assertEqual(conds["Initialized"], "True")
        self.assertEqual(node["metadata"]["labels"]["karpenter.sh/initialized"],
                         "true")

    def test_zone_spread(self):
        env = self.env()
        env.apply(nodepool())
        start_carpenter(self, env, "--leader-elect=false")
        env.apply(deployment("spread", 6, cpu="500m", memory="512Mi",
                             spread_zone=True))
        wait_running(env, "spread", 6, timeout=120)
        # kube-sim's scheduler does not honour spreads when it binds (the
        # real one does): check Carpenter's decision, one NodeClaim per
        # Proxmox host, each pinned to its zone.
        zones = sorted(nc["metadata"]["labels"]["topology.kubernetes.io/zone"]
                       for nc in nodeclaims(env))
        self.assertEqual(zones, ["pve1", "pve2", "pve3"])
        for nc in nodeclaims(env):
            zreq = [r for r in nc["spec"]["requirements"]
                    if r["key"] == "topology.kubernetes.io/zone"]
            self.assertEqual(len(zreq), 1, nc["spec"]["requirements"])
            self.assertEqual(zreq[0]["values"], [
                nc["metadata"]["labels"]["topology.kubernetes.io/zone"]])


if __name__ == "__main__":
    unittest.main(verbosity=2)
