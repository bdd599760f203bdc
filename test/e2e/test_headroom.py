"""End to end: static NodePools and CapacityBuffers (issue 15) on kube-sim
and pve-sim, in one Carpenter run.

- "fixed", a static NodePool of 3 (2-vCPU nodes): three nodes come up;
  `kubectl scale nodepool fixed --replicas 5` brings two more, which stay
  although they are empty (static nodes are never consolidated); scaled to
  2, three go (NodeClaim, Node and VM); with a pod on each, a template
  change drifts the two left, replaced one at a time (a Drifted budget of
  1), each replacement initialized before its drifted node is deleted,
  and no pod ever waits for a node (no FailedScheduling).
- "roomy", a NodePool of 4-vCPU nodes capped at 16 CPUs, and a
  CapacityBuffer of 4 chunks of 1.5 CPU pinned to it (two nodes' worth):
  the room comes up and is kept (consolidation runs every second and
  leaves the empty nodes alone); a Deployment of 4 such pods runs at once
  on the nodes that were already there (no VM boot in its path); the
  buffer is refilled with two new nodes; two more pods take room again,
  and the limit stops the refill (the buffer says so)."""
import time

from e2elib import (E2ETest, deployment_yaml, nodepool_yaml, parse_time,
                    wait_until)
from sims import CAPACITYBUFFER_CRD


def initialized(claim):
    return any(c["type"] == "Initialized" and c["status"] == "True"
               for c in claim.get("status", {}).get("conditions", []))


def chunk_spec(pool):
    return ("    spec:\n"
            "      nodeSelector:\n"
            "        karpenter.sh/nodepool: %s\n"
            "      containers:\n"
            "        - name: c\n"
            "          image: registry.k8s.io/pause:3.9\n"
            "          resources:\n"
            "            requests:\n"
            "              cpu: 1500m\n"
            "              memory: 128Mi\n" % pool)


BUFFER = ("apiVersion: v1\n"
          "kind: PodTemplate\n"
          "metadata:\n"
          "  name: chunk\n"
          "  namespace: default\n"
          "template:\n" + chunk_spec("roomy") +
          "---\n"
          "apiVersion: autoscaling.x-k8s.io/v1beta1\n"
          "kind: CapacityBuffer\n"
          "metadata:\n"
          "  name: headroom\n"
          "  namespace: default\n"
          "spec:\n"
          "  podTemplateRef:\n"
          "    name: chunk\n"
          "  replicas: 4\n")


def burst_yaml(replicas):
    return ("apiVersion: apps/v1\n"
            "kind: Deployment\n"
            "metadata:\n"
            "  name: burst\n"
            "  namespace: default\n"
            "spec:\n"
            "  replicas: %d\n"
            "  selector:\n"
            "    matchLabels: {app: burst}\n"
            "  template:\n"
            "    metadata:\n"
            "      labels: {app: burst}\n" % replicas + chunk_spec("roomy"))


class HeadroomTest(E2ETest):

    kube_args = ("--crds", CAPACITYBUFFER_CRD)

    def live(self, pool):
        return [c for c in self.claims_of_pool(pool)
                if not c["metadata"].get("deletionTimestamp")]

    def ready_nodes(self, pool, n):
        """The pool's NodeClaims when exactly n live ones have Ready
        Nodes, else None."""
        claims = self.live(pool)
        if len(claims) != n:
            return None
        nodes = {}
        for node in self.get("nodes"):
            ready = [c for c in node["status"].get("conditions", [])
                     if c["type"] == "Ready" and c["status"] == "True"]
            if ready:
                nodes[node["metadata"]["name"]] = node
        if all(c.get("status", {}).get("nodeName") in nodes for c in claims):
            return claims
        return None

    def status_nodes(self, pool):
        return self.get("nodepools", pool).get("status", {}).get("nodes")

    def buffer_condition(self, type_):
        buf = self.get("capacitybuffers", "headroom", "default")
        for c in buf.get("status", {}).get("conditions", []):
            if c["type"] == type_:
                return c
        return None

    def provisioned(self, status="True"):
        c = self.buffer_condition("Provisioning")
        return c if c and c["status"] == status else None

    # ---- static NodePool ----

    def test_1_static_pool_scales_with_kubectl(self):
        start = time.monotonic()
        self.apply(nodepool_yaml("fixed", consolidate_after="1s", replicas=3,
                                 policy="WhenEmptyOrUnderutilized",
                                 budgets=("1",)))
        wait_until(lambda: self.ready_nodes("fixed", 3), 90,
                   what="3 Ready nodes of the static pool")
        wait_until(lambda: self.status_nodes("fixed") == 3, 20,
                   what="status.nodes 3")
        print("\nstatic: 3 nodes up in %.1f s" % (time.monotonic() - start))

        self.kubectl("scale", "nodepool", "fixed", "--replicas=5")
        five = wait_until(lambda: self.ready_nodes("fixed", 5), 90,
                          what="5 Ready nodes after kubectl scale")
        wait_until(lambda: self.status_nodes("fixed") == 5, 20,
                   what="status.nodes 5")
        # Empty, consolidateAfter 1 s, polled every second: kept.
        time.sleep(6)
        self.assertEqual({c["metadata"]["name"] for c in self.live("fixed")},
                         {c["metadata"]["name"] for c in five})
        self.assertEqual(self.carpenter_requests(method="DELETE",
                                                 resource="nodeclaims"), [])

        self.kubectl("scale", "nodepool", "fixed", "--replicas=2")
        wait_until(lambda: len(self.live("fixed")) == 2, 30,
                   what="2 NodeClaims left")
        kept = {c["metadata"]["name"] for c in self.live("fixed")}
        for claim in five:
            if claim["metadata"]["name"] not in kept:
                self.wait_gone(claim, 60)
        wait_until(lambda: self.status_nodes("fixed") == 2, 20,
                   what="status.nodes 2")
        self.assertEqual(self.metric("karpenter_nodeclaims_created_total",
                                     nodepool="fixed"), 5)
        self.assertGreater(self.metric("controller_runtime_reconcile_total",
                                       controller="static.deprovisioning"),
                           0)

        # A pod on each node (1.2 CPU: one per 2-vCPU node), then a
        # template change drifts both: replaced one at a time (budget 1),
        # each replacement launched and initialized before its drifted
        # node is touched, so no pod ever waits for a node.
        self.apply(deployment_yaml("steady", "fixed", replicas=2,
                                   cpu="1200m"))
        self.wait_running("steady", 2, timeout=30)
        old = kept
        since = time.time() - 1  # events carry whole seconds
        start = time.monotonic()
        self.kubectl("patch", "nodepool", "fixed", "--type=merge", "-p",
                     '{"spec":{"template":{"metadata":{"labels":'
                     '{"team":"blue"}}}}}')
        most = 0
        early = []

        def replaced():
            nonlocal most
            claims = self.claims_of_pool("fixed")
            names = {c["metadata"]["name"] for c in claims}
            going = [c for c in claims if c["metadata"]["name"] in old and
                     c["metadata"].get("deletionTimestamp")]
            up = [c for c in claims if c["metadata"]["name"] not in old and
                  initialized(c)]
            most = max(most, len(going))
            # Every drifted node deleting or gone has its replacement up.
            if len(up) < len(going) + len(old - names):
                early.append(sorted(names))
            if old & names:
                return None
            return self.ready_nodes("fixed", 2)
        fresh = wait_until(replaced, 90, interval=0.5,
                           what="both drifted static nodes replaced")
        print("static drift: 2 nodes replaced in %.1f s" %
              (time.monotonic() - start))
        self.assertEqual(early, [])
        self.assertLessEqual(most, 1)
        for c in fresh:
            self.assertEqual(c["metadata"]["labels"].get("team"), "blue")
        self.assertEqual(self.metric("karpenter_nodeclaims_disrupted_total",
                                     reason="drifted", nodepool="fixed"), 2)
        self.assertEqual(self.metric("karpenter_nodeclaims_created_total",
                                     nodepool="fixed"), 7)
        pods = self.wait_running("steady", 2, timeout=30)
        fresh_nodes = {c["status"]["nodeName"] for c in fresh}
        for p in pods:
            self.assertIn(p["spec"]["nodeName"], fresh_nodes)
        # Replacement first: no evicted pod ever waited for a node.
        self.assertEqual([e for e in self.events(kind="Pod",
                                                 reason="FailedScheduling")
                          if e["involvedObject"]["name"].startswith("steady")
                          and parse_time(e.get("lastTimestamp") or
                                         e["firstTimestamp"]) > since],
                         [])
        self.kubectl("delete", "deployment", "steady")

    # ---- CapacityBuffer ----

    def test_2_buffer_keeps_room_and_refills(self):
        self.apply(nodepool_yaml("roomy", consolidate_after="1s", cpu=4,
                                 limit_cpu=16,
                                 policy="WhenEmptyOrUnderutilized"))
        self.apply(BUFFER)
        wait_until(lambda: self.provisioned(), 120,
                   what="the buffer's room on Ready nodes")
        ready = self.buffer_condition("ReadyForProvisioning")
        self.assertEqual(ready["status"], "True", ready)
        before = {c["status"]["nodeName"] for c in self.live("roomy")}
        self.assertTrue(before)
        # Consolidation runs every second; the empty room stays.
        time.sleep(6)
        self.assertEqual({c["status"].get("nodeName")
                          for c in self.live("roomy")}, before)
        self.assertEqual(self.metric("carpenter_capacitybuffer_virtual_pods",
                                     capacitybuffer="headroom",
                                     placement="existing"), 4)

        # Pods that take the room run on the nodes that were there.
        start = time.monotonic()
        self.apply(burst_yaml(4))
        pods = self.wait_running("burst", 4, timeout=60)
        took = time.monotonic() - start
        self.assertTrue(all(p["spec"]["nodeName"] in before for p in pods),
                        [p["spec"]["nodeName"] for p in pods])
        print("\nheadroom: 4 pods running %.1f s after the Deployment, on "
              "nodes that were up" % took)

        # The buffer is refilled on two new nodes.
        wait_until(lambda: self.ready_nodes("roomy", 4), 120,
                   what="two nodes launched to refill the buffer")
        wait_until(lambda: self.provisioned(), 60,
                   what="the buffer refilled")

        # Two more pods take room again: the limit (16 CPUs, four nodes)
        # stops the refill, and the buffer says why.
        self.kubectl("scale", "deployment", "burst", "--replicas=6")
        self.wait_running("burst", 6, timeout=60)
        wait_until(lambda: self.provisioned("False"), 60,
                   what="Provisioning False once the room is taken")
        time.sleep(5)
        cond = self.buffer_condition("Provisioning")
        self.assertEqual(cond["reason"], "RequiresNewCapacity", cond)
        self.assertNotIn(" 0 fit nowhere", cond["message"])
        self.assertIn("limit", cond["message"])
        claims = self.live("roomy")
        self.assertEqual(len(claims), 4)
        cpus = sum(int(c["status"]["capacity"]["cpu"]) for c in claims)
        self.assertLessEqual(cpus, 16)


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
