"""End to end: emptiness and expiration (issue 8, part 3) on kube-sim and
pve-sim.

- A node whose last pod went away is removed once it has been empty for
  consolidateAfter (plus the poll and the validation delay): NodeClaim,
  Node and VM gone, nothing evicted, metrics and events as Karpenter's.
- A budget of nodes: "0" keeps an empty node; relaxing it lets it go.
- A NodeClaim older than expireAfter is deleted whatever the budget says
  and its pods are evicted."""
import time

from e2elib import E2ETest, deployment_yaml, nodepool_yaml, wait_until


class EmptinessTest(E2ETest):

    def test_1_empty_node_removed(self):
        self.apply(nodepool_yaml("empty", consolidate_after="3s"))
        self.apply(deployment_yaml("web", "empty", replicas=2))
        pods = self.wait_running("web", 2, timeout=90)
        node = pods[0]["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        # Consolidatable once nothing moved for consolidateAfter.
        wait_until(lambda: any(
            c["type"] == "Consolidatable" and c["status"] == "True"
            for c in (self.exists("nodeclaims", claim["metadata"]["name"])
                      or {}).get("status", {}).get("conditions", [])), 20,
            what="Consolidatable=True")
        # The default budget, 10% of the pool's one node rounded up; it
        # falls to 0 once the node is gone, as Karpenter's does.
        wait_until(lambda: self.metric(
            "karpenter_nodepools_allowed_disruptions", nodepool="empty",
            reason="Empty") == 1, 10, what="allowed disruptions 1")

        start = time.monotonic()
        self.kubectl("scale", "deployment", "web", "--replicas=0")
        took = self.wait_gone(claim, 45)
        print("\nemptiness: node removed %.1f s after the scale-down "
              "(consolidateAfter 3 s, poll 1 s, validation 2 s)" % took)
        self.assertGreaterEqual(time.monotonic() - start, 3 + 2)
        self.assertEqual(self.evictions(), [])
        self.assertEqual(self.pod_deletes(), [])
        self.assertEqual(self.metric("karpenter_nodeclaims_disrupted_total",
                                     reason="empty", nodepool="empty",
                                     termination_mode="graceful",
                                     consolidation_policy="WhenEmpty"), 1)
        self.assertGreaterEqual(self.metric(
            "karpenter_voluntary_disruption_decisions_total",
            decision="delete", reason="empty"), 1)
        self.assertTrue(self.events("Node", node, "DisruptionTerminating"))
        self.assertTrue(self.events("NodeClaim", claim["metadata"]["name"],
                                    "DisruptionTerminating"))
        # The taint went on before the NodeClaim was deleted.
        taints = self.carpenter_requests(method="PATCH", resource="nodes",
                                         name=node)
        deletes = self.carpenter_requests(method="DELETE",
                                          resource="nodeclaims",
                                          name=claim["metadata"]["name"])
        self.assertEqual(len(deletes), 1, deletes)
        self.assertLess(min(r["time"] for r in taints), deletes[0]["time"])

    def test_2_budget_zero_blocks(self):
        self.apply(nodepool_yaml("frozen", consolidate_after="2s",
                                 budgets=("0",)))
        self.apply(deployment_yaml("cache", "frozen", replicas=1))
        pods = self.wait_running("cache", 1, timeout=90)
        node = pods[0]["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        name = claim["metadata"]["name"]
        self.kubectl("scale", "deployment", "cache", "--replicas=0")
        wait_until(lambda: not self.pods("cache"), 20, what="pod gone")
        # Well past consolidateAfter + poll + validation: still there.
        wait_until(lambda: self.events("NodePool", "frozen",
                                       "DisruptionBlocked"), 20,
                   what="DisruptionBlocked on the NodePool")
        time.sleep(4)
        got = self.exists("nodeclaims", name)
        self.assertIsNotNone(got)
        self.assertNotIn("deletionTimestamp", got["metadata"])
        self.assertEqual(self.metric("karpenter_nodepools_allowed_disruptions",
                                     nodepool="frozen", reason="Empty"), 0)
        self.assertEqual([r for r in self.carpenter_requests(
            method="DELETE", resource="nodeclaims", name=name)], [])

        # Budget relaxed: the node goes.
        self.kubectl("patch", "nodepool", "frozen", "--type=merge", "-p",
                     '{"spec":{"disruption":{"budgets":[{"nodes":"1"}]}}}')
        took = self.wait_gone(claim, 30)
        print("\nbudget: node removed %.1f s after the budget allowed it" %
              took)

    def test_3_expiration(self):
        # Long enough for the pod to be running well before it expires on
        # a loaded machine (the simulated scheduler backs off up to 10 s).
        self.apply(nodepool_yaml("short", expire_after="25s",
                                 budgets=("0",)))
        self.apply(deployment_yaml("batch", "short", replicas=1))
        pod = self.wait_running("batch", 1, timeout=90)[0]
        node = pod["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        created = claim["metadata"]["creationTimestamp"]
        took = self.wait_gone(claim, 45)
        print("\nexpiration: nodeclaim (created %s, expireAfter 25 s) gone "
              "%.1f s after its pod ran" % (created, took))
        # Its pod was evicted (the replacement, on a new node that expires
        # in turn, may be too by now).
        self.assertIn(pod["metadata"]["name"],
                      {r["name"] for r in self.evictions()})
        self.assertTrue(self.events("NodeClaim", claim["metadata"]["name"],
                                    "Expired"))
        self.assertGreaterEqual(self.metric(
            "karpenter_nodeclaims_disrupted_total", reason="expired",
            nodepool="short", termination_mode="forceful"), 1)
        # Stop the churn (every new node would expire too) and let the
        # NodePool's deletion take its NodeClaims (ownerReferences) before
        # the test ends.
        self.kubectl("delete", "deployment", "batch")
        self.kubectl("delete", "nodepool", "short", "--wait=false")
        wait_until(lambda: not self.claims_of_pool("short"), 60,
                   what="the NodePool's NodeClaims gone")


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
