"""End to end: consolidation (issue 13) on kube-sim and pve-sim.

Four NodePools of the c1 family (2, 4 and 8 vCPUs, priced linearly), each
with a Deployment of 1.2-CPU pods scaled up one pod at a time, so that the
provisioner gives every pod a 2-vCPU node of its own (the cheapest for one
pod): three nodes per pool. Then:

- "fold": multi-node consolidation replaces the three by one 4-vCPU node
  (cheaper than three 2-vCPU nodes); the replacement comes up before any
  candidate is tainted; no pod is ever left without a place. Scaled down to
  one pod, single-node consolidation replaces the 4-vCPU node by a 2-vCPU
  one: the Deployment ends on the cheapest shape.
- "pdb": a PodDisruptionBudget that allows no eviction blocks it
  (Unconsolidatable, naming the PDB).
- "pinned": pods with karpenter.sh/do-not-disrupt block it.
- "frozen": a budget of 0 for Underutilized blocks it.
- "broken": the replacement never registers (pve-sim holds the guests'
  registration): the command is rolled back after the command timeout -
  the replacement deleted, no candidate tainted, drained or deleted."""
import time

from e2elib import E2ETest, deployment_yaml, parse_time, wait_until

POOLS = ("fold", "pdb", "pinned", "frozen")


def pool_yaml(name, budgets=None):
    lines = [
        "apiVersion: karpenter.sh/v1",
        "kind: NodePool",
        "metadata:",
        "  name: %s" % name,
        "spec:",
        "  template:",
        "    spec:",
        "      nodeClassRef:",
        "        group: carpenter.dev",
        "        kind: ProxmoxNodeClass",
        "        name: default",
        "      requirements:",
        "        - key: carpenter.dev/instance-family",
        "          operator: In",
        "          values: [c1]",
        "  disruption:",
        "    consolidationPolicy: WhenEmptyOrUnderutilized",
        "    consolidateAfter: 3s",
        "    budgets:",
    ]
    for b in budgets or ({"nodes": "100%"},):
        lines.append("      - nodes: '%s'" % b["nodes"])
        if "reasons" in b:
            lines.append("        reasons: [%s]" % ", ".join(b["reasons"]))
    return "\n".join(lines) + "\n"


PDB = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: pdb
  namespace: default
spec:
  maxUnavailable: 0
  selector:
    matchLabels:
      app: pdb
"""


class ConsolidationTest(E2ETest):

    carpenter_flags = ("--disruption-command-timeout=25s",)

    # ---- helpers ----

    def claims(self, pool):
        return [c for c in self.claims_of_pool(pool)
                if not c["metadata"].get("deletionTimestamp")]

    def cpus(self, pool):
        return sorted(int(c["metadata"]["labels"].get(
            "carpenter.dev/instance-cpu", "0")) for c in self.claims(pool))

    def scale(self, app, n):
        self.kubectl("scale", "deployment", app, "--replicas=%d" % n)

    def unconsolidatable(self, pool):
        names = {c["metadata"]["name"] for c in self.claims_of_pool(pool)}
        return [e for e in self.events(reason="Unconsolidatable")
                if e["involvedObject"].get("kind") == "NodeClaim" and
                e["involvedObject"]["name"] in names]

    def three_nodes_each(self, apps, annotations=None):
        """Scales every app up one pod at a time: a 2-vCPU node per pod."""
        for n in (1, 2, 3):
            for app in apps:
                if n == 1:
                    self.apply(deployment_yaml(
                        app, app, replicas=1, cpu="1200m",
                        annotations=(annotations or {}).get(app)))
                else:
                    self.scale(app, n)
            for app in apps:
                self.wait_running(app, n, timeout=120)
        for app in apps:
            self.assertEqual(self.cpus(app), [2, 2, 2], self.claims(app))

    # ---- the cases ----

    def test_1_fold_shrink_and_blocks(self):
        self.apply(pool_yaml("fold"))
        self.apply(pool_yaml("pdb"))
        self.apply(pool_yaml("pinned"))
        self.apply(pool_yaml("frozen", budgets=(
            {"nodes": "0", "reasons": ["Underutilized"]},
            {"nodes": "100%"})))
        self.apply(PDB)
        self.three_nodes_each(POOLS, annotations={
            "pinned": {"karpenter.sh/do-not-disrupt": "true"}})
        fold_claims = {c["metadata"]["name"] for c in self.claims("fold")}
        start = time.monotonic()

        # Three 2-vCPU nodes become one 4-vCPU node.
        try:
            wait_until(lambda: self.cpus("fold") == [4], 120,
                       what="fold pool on one 4-vCPU node")
        except AssertionError:
            print("\n".join(l for l in self.carpenter.lines
                            if "disruption" in l)[-6000:])
            print(self.cpus("fold"))
            for e in self.events(reason="Unconsolidatable"):
                print(e["involvedObject"]["name"], e["message"])
            print(self.metric("karpenter_voluntary_disruption_eligible_nodes"))
            print([(p["metadata"]["name"], p["status"]) for p in
                   self.get("pods", namespace="default")
                   if not p["spec"].get("nodeName")])
            raise
        print("\nconsolidation: 3 nodes folded into 1 in %.1f s" %
              (time.monotonic() - start))
        self.wait_running("fold", 3, timeout=60)
        self.assertGreaterEqual(self.metric(
            "karpenter_voluntary_disruption_decisions_total",
            decision="replace", reason="underutilized",
            consolidation_type="multi"), 1)
        # The replacement was up before any candidate was disrupted.
        repl = self.claims("fold")[0]
        up = [c["lastTransitionTime"] for c in repl["status"]["conditions"]
              if c["type"] == "Initialized"][0]
        terminating = [e for e in self.events(kind="NodeClaim",
                                              reason="DisruptionTerminating")
                       if e["involvedObject"]["name"] in fold_claims]
        self.assertEqual(len(terminating), 3, terminating)
        self.assertLessEqual(parse_time(up), min(
            parse_time(e["firstTimestamp"]) for e in terminating))
        # Every pod was evicted (never deleted) and found a place.
        self.assertEqual(self.pod_deletes(), [])

        # Shrunk to one pod: the 4-vCPU node gives way to a 2-vCPU one.
        self.scale("fold", 1)
        wait_until(lambda: self.cpus("fold") == [2], 120,
                   what="fold pool on one 2-vCPU node")
        self.wait_running("fold", 1, timeout=60)
        self.assertGreaterEqual(self.metric(
            "karpenter_voluntary_disruption_decisions_total",
            decision="replace", reason="underutilized",
            consolidation_type="single"), 1)

        # Meanwhile the blocked pools did not move.
        for pool in ("pdb", "pinned", "frozen"):
            self.assertEqual(self.cpus(pool), [2, 2, 2], pool)
        self.assertTrue(any("pdb default/pdb prevents pod evictions" in
                            e.get("message", "")
                            for e in self.unconsolidatable("pdb")),
                        self.unconsolidatable("pdb"))
        self.assertTrue(any("do-not-disrupt" in e.get("message", "")
                            for e in self.unconsolidatable("pinned")))
        self.assertTrue(self.events("NodePool", "frozen",
                                    "DisruptionBlocked"))
        self.assertEqual(self.evictions(
            {p["metadata"]["name"] for pool in ("pdb", "pinned", "frozen")
             for p in self.pods(pool)}), [])

    def test_2_replacement_never_registers_rolls_back(self):
        self.apply(pool_yaml("broken"))
        self.three_nodes_each(("broken",))
        before = {c["metadata"]["name"] for c in self.claims("broken")}
        nodes = self.node_names("broken")
        self.env.pve.control("POST", "guests", {"hold_registration": True})
        try:
            # The replacement is created, then deleted again.
            repl = wait_until(lambda: [
                c for c in self.claims_of_pool("broken")
                if c["metadata"]["name"] not in before], 60,
                what="a replacement NodeClaim")[0]["metadata"]["name"]
            wait_until(lambda: not self.exists("nodeclaims", repl) or
                       self.exists("nodeclaims", repl)["metadata"].get(
                           "deletionTimestamp"), 90,
                       what="the replacement deleted by the rollback")
            self.assertGreaterEqual(self.metric(
                "karpenter_voluntary_disruption_failed_validations_total",
                consolidation_type="multi"), 1)
            # Nothing happened to the candidates.
            self.assertEqual({c["metadata"]["name"]
                              for c in self.claims("broken")} - {repl},
                             before)
            for node in nodes:
                taints = self.exists("nodes", node)["spec"].get("taints", [])
                self.assertNotIn("karpenter.sh/disrupted",
                                 [t["key"] for t in taints])
            self.assertEqual(self.evictions(
                {p["metadata"]["name"] for p in self.pods("broken")}), [])
            self.wait_running("broken", 3, timeout=10)
        finally:
            self.env.pve.control("POST", "guests",
                                 {"hold_registration": False})

    def node_names(self, pool):
        return {c["status"]["nodeName"] for c in self.claims(pool)
                if c.get("status", {}).get("nodeName")}


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
