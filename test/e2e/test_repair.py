"""End to end: node repair (issue 14) on kube-sim and pve-sim.

A guest's qemu process dies (pve-sim kills it: no shutdown, no task), so
its kubelet stops reporting; kube-sim's node lifecycle controller turns
the Node's Ready to Unknown after the lease grace. After
--node-repair-toleration the NodeClaim is deleted without waiting for a
drain, and the pod runs again on a new node."""
import time

from e2elib import E2ETest, deployment_yaml, nodepool_yaml, wait_until


class RepairTest(E2ETest):

    carpenter_flags = ("--node-repair-toleration=20s",)
    repairs_expected = True

    def test_dead_guest_replaced(self):
        self.apply(nodepool_yaml("sick"))
        self.apply(deployment_yaml("sick", "sick", replicas=1))
        pod = self.wait_running("sick", 1, timeout=120)[0]
        node = pod["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        name = claim["metadata"]["name"]
        self.env.pve.control("POST", "vms/%d/kill" % self.vmid_of(claim))
        start = time.monotonic()

        def ready():
            n = self.exists("nodes", node) or {}
            for c in n.get("status", {}).get("conditions", []):
                if c["type"] == "Ready":
                    return c["status"]
            return None
        wait_until(lambda: ready() not in ("True", None), 60,
                   what="node %s not ready" % node)
        unready = time.monotonic()
        # Not before the toleration.
        time.sleep(10)
        self.assertIsNone((self.exists("nodeclaims", name) or
                           {"metadata": {}})["metadata"].get(
                               "deletionTimestamp"))
        self.wait_gone(claim, 60)
        print("\nrepair: node gone %.1f s after it turned NotReady "
              "(toleration 20 s), %.1f s after the guest died" %
              (time.monotonic() - unready, time.monotonic() - start))
        self.wait_running("sick", 1, timeout=120, exclude_nodes=(node,))
        self.assertEqual(self.metric(
            "karpenter_nodeclaims_unhealthy_disrupted_total",
            condition="ready", nodepool="sick"), 1)
        self.assertTrue(self.events("Node", node, "NodeRepair"))


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
