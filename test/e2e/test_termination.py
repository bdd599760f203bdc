"""End to end: termination of a node (issue 8, part 2) on kube-sim and
pve-sim.

- Deleting a NodeClaim taints its Node, evicts its pods through the
  Eviction API (the ReplicaSet recreates them on a new node), leaves
  DaemonSet pods alone, deletes the VM, the Node and the NodeClaim.
- A PodDisruptionBudget that allows nothing holds the drain (429s in
  kube-sim's request log, retried) until it is relaxed; nothing is ever
  deleted outright.
- A pod annotated karpenter.sh/do-not-disrupt is not evicted: it is
  deleted at the NodeClaim's terminationGracePeriod minus its own grace
  period, and then the node goes.
- Deleting a Node deletes its NodeClaim, and the same drain follows."""
import time

from e2elib import (E2ETest, daemonset_yaml, deployment_yaml, item_list,
                    nodepool_yaml, parse_time, wait_until)


class TerminationTest(E2ETest):

    @classmethod
    def prepare(cls):
        cls.env.apply(nodepool_yaml("drain"))
        cls.env.apply(nodepool_yaml("grace", tgp="12s"))

    def test_1_delete_nodeclaim_drains(self):
        self.apply(daemonset_yaml("agent", "drain"))
        self.apply(deployment_yaml("web", "drain", replicas=3))
        pods = self.wait_running("web", 3, timeout=90)
        node = pods[0]["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        self.assertIsNotNone(claim)
        wait_until(lambda: [p for p in self.pods("agent")
                            if p["spec"].get("nodeName") == node and
                            p["status"].get("phase") == "Running"],
                   30, what="the DaemonSet pod on %s" % node)
        agent = [p["metadata"]["name"] for p in self.pods("agent")
                 if p["spec"].get("nodeName") == node]
        web = {p["metadata"]["name"] for p in pods}

        start = time.monotonic()
        self.kubectl("delete", "nodeclaim", claim["metadata"]["name"],
                     "--wait=false")
        took = self.wait_gone(claim, 60)
        print("\ndrain: nodeclaim, node and VM gone %.1f s after the "
              "delete" % took)
        self.wait_running("web", 3, timeout=60, exclude_nodes=(node,))
        print("drain: pods running elsewhere %.1f s after the delete" %
              (time.monotonic() - start))

        # Every web pod went through the Eviction API, once, successfully.
        ev = self.evictions(web)
        self.assertEqual({r["name"] for r in ev}, web)
        self.assertEqual(len(ev), len(web), ev)
        self.assertTrue(all(r["code"] == 201 for r in ev), ev)
        # The DaemonSet pod was left alone, and nothing was deleted
        # outright.
        self.assertEqual(self.evictions(agent), [])
        self.assertEqual(self.pod_deletes(), [])
        # The taint came before the first eviction.
        taints = [r for r in self.carpenter_requests(method="PATCH",
                                                     resource="nodes",
                                                     name=node)]
        self.assertTrue(taints)
        self.assertLess(min(r["time"] for r in taints),
                        min(r["time"] for r in ev))
        # Events and metrics.
        self.assertTrue(self.events("Pod", reason="Evicted"))
        self.assertTrue(self.events("Node", node, "Drained"))
        self.assertTrue(self.events("Node", node, "Terminated"))
        self.assertEqual(self.metric("karpenter_nodes_drained_total",
                                     nodepool="drain"), 1)
        self.assertEqual(self.metric("karpenter_nodes_terminated_total",
                                     nodepool="drain"), 1)
        self.assertGreaterEqual(self.metric(
            "karpenter_pods_eviction_requests_total", code="200"), 3)

    def test_2_pdb_holds_the_drain(self):
        self.kubectl("create", "namespace", "guarded")
        self.apply(deployment_yaml("db", "drain", replicas=2,
                                   namespace="guarded"))
        self.apply("""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: guarded}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: db}}
""")
        pods = self.wait_running("db", 2, timeout=90, namespace="guarded")
        wait_until(lambda: self.get("pdb", "db", "guarded").get(
            "status", {}).get("currentHealthy") == 2, 30,
            what="the PDB to see two healthy pods")
        # The replicas on one node (usually both): none may go.
        node = pods[0]["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        names = {p["metadata"]["name"] for p in pods
                 if p["spec"]["nodeName"] == node}

        self.kubectl("delete", "nodeclaim", claim["metadata"]["name"],
                     "--wait=false")
        # The budget refuses: 429s, retried, and the node stays.
        wait_until(lambda: len([r for r in self.evictions(names)
                                if r["code"] == 429]) >= 4, 30,
                   what="evictions refused by the PDB")
        time.sleep(3)
        self.assertIsNotNone(self.exists("nodes", node))
        self.assertIsNotNone(self.running("db", 2, namespace="guarded"))
        self.assertEqual([r for r in self.evictions(names)
                          if r["code"] == 201], [])
        self.assertTrue(self.events("Node", node, "FailedDraining"))
        self.assertGreater(self.metric(
            "karpenter_pods_eviction_requests_total", code="429"), 0)

        # Relaxed: the drain finishes.
        start = time.monotonic()
        self.kubectl("patch", "pdb", "db", "-n", "guarded", "--type=merge",
                     "-p", '{"spec":{"minAvailable":0}}')
        took = self.wait_gone(claim, 60)
        print("\npdb: drain finished %.1f s after the PDB was relaxed" % took)
        ok = [r["name"] for r in self.evictions(names) if r["code"] == 201]
        self.assertEqual(sorted(ok), sorted(names))
        self.assertEqual(self.pod_deletes(), [])
        self.wait_running("db", 2, timeout=60, namespace="guarded",
                          exclude_nodes=(node,))

    def test_3_do_not_disrupt_waits_for_the_grace_period(self):
        # One apply, so that both land in one provisioning batch (one node).
        self.apply(item_list(
            deployment_yaml("pinned", "grace", replicas=1, grace=3,
                            annotations={"karpenter.sh/do-not-disrupt":
                                         "true"}),
            deployment_yaml("free", "grace", replicas=1, grace=1)))
        pinned = self.wait_running("pinned", 1, timeout=90)[0]
        free = self.wait_running("free", 1, timeout=30)[0]
        node = pinned["spec"]["nodeName"]
        self.assertEqual(free["spec"]["nodeName"], node)
        claim = self.claim_of_node(node)
        name = claim["metadata"]["name"]
        self.kubectl("delete", "nodeclaim", name, "--wait=false")

        deleting = wait_until(
            lambda: (self.exists("nodeclaims", name) or {}).get(
                "metadata", {}).get("deletionTimestamp") and
            self.exists("nodeclaims", name), 10, what="nodeclaim deleting")
        deleted_at = parse_time(deleting["metadata"]["deletionTimestamp"])
        stamp = wait_until(
            lambda: ((self.exists("nodeclaims", name) or {}).get(
                "metadata", {}).get("annotations") or {}).get(
                "karpenter.sh/nodeclaim-termination-timestamp"), 10,
            what="the termination timestamp annotation")
        self.assertAlmostEqual(parse_time(stamp), deleted_at + 12, delta=1.5)

        # The ordinary pod is evicted at once; the pinned one is not.
        wait_until(lambda: self.evictions({free["metadata"]["name"]}), 20,
                   what="the free pod evicted")
        self.wait_gone(claim, 40)
        self.assertEqual(self.evictions({pinned["metadata"]["name"]}), [])
        deletes = [r for r in self.pod_deletes()
                   if r["name"] == pinned["metadata"]["name"]]
        self.assertEqual(len(deletes), 1, deletes)
        at = parse_time(deletes[0]["time"])
        # Deleted at deadline - 3 s (its own grace), not before.
        print("\ndo-not-disrupt: pod deleted %.1f s after the nodeclaim's "
              "deletion (deadline 12 s, pod grace 3 s)" % (at - deleted_at))
        # (No upper bound: how late a loaded machine acts is not the point.)
        self.assertGreaterEqual(at, parse_time(stamp) - 3 - 0.5)
        self.assertTrue(self.events("Pod", pinned["metadata"]["name"],
                                    "Disrupted"))
        self.assertTrue(self.events("Node", node,
                                    "TerminationGracePeriodExpiring"))

    def test_4_delete_node_deletes_its_nodeclaim(self):
        self.kubectl("create", "namespace", "solo")
        self.apply(deployment_yaml("api", "drain", replicas=1, cpu="1200m",
                                   namespace="solo"))
        pod = self.wait_running("api", 1, timeout=90, namespace="solo")[0]
        node = pod["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        self.kubectl("delete", "node", node, "--wait=false")
        took = self.wait_gone(claim, 60)
        print("\nnode delete: nodeclaim, node and VM gone %.1f s after the "
              "node's delete" % took)
        self.assertEqual(len(self.carpenter_requests(
            method="DELETE", resource="nodeclaims",
            name=claim["metadata"]["name"])), 1)
        self.assertEqual({r["name"] for r in self.evictions()
                          if r["namespace"] == "solo"},
                         {pod["metadata"]["name"]})
        self.wait_running("api", 1, timeout=60, namespace="solo",
                          exclude_nodes=(node,))


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
