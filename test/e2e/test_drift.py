"""End to end: drift (issue 14) on kube-sim and pve-sim.

- "blue": three 2-vCPU nodes, one 1.2-CPU pod each. A label added to the
  NodePool's template drifts all three; with a budget of one node they are
  replaced one at a time, each replacement up before its drifted node is
  touched, and no pod ever waits for a place (no FailedScheduling).
- "img": a new template of the same name on the host of one node (the
  highest VMID wins, as an image update in Proxmox would be done): that
  node drifts (TemplateDrifted) and is replaced by a VM cloned from the
  new template; nodes on other hosts are left alone."""
import time

from e2elib import (E2ETest, deployment_yaml, nodepool_yaml, parse_time,
                    wait_until)


class DriftTest(E2ETest):

    def live_claims(self, pool):
        return [c for c in self.claims_of_pool(pool)
                if not c["metadata"].get("deletionTimestamp")]

    def drifted(self, claim):
        c = self.exists("nodeclaims", claim) or {}
        for cond in c.get("status", {}).get("conditions", []):
            if cond["type"] == "Drifted" and cond["status"] == "True":
                return cond["reason"]
        return None

    def test_1_template_label_replaces_one_at_a_time(self):
        self.apply(nodepool_yaml("blue", budgets=("1",)))
        self.apply(deployment_yaml("blue", "blue", replicas=3, cpu="1200m"))
        self.wait_running("blue", 3, timeout=120)
        old = {c["metadata"]["name"] for c in self.claims_of_pool("blue")}
        self.assertEqual(len(old), 3)
        start = time.monotonic()
        since = time.time() - 1  # events carry whole seconds
        self.kubectl("patch", "nodepool", "blue", "--type=merge", "-p",
                     '{"spec":{"template":{"metadata":{"labels":'
                     '{"team":"blue"}}}}}')
        most = 0

        def done():
            nonlocal most
            claims = self.claims_of_pool("blue")
            deleting = [c for c in claims if c["metadata"]["name"] in old and
                        c["metadata"].get("deletionTimestamp")]
            most = max(most, len(deleting))
            fresh = [c for c in claims if c["metadata"]["name"] not in old]
            return (not any(c["metadata"]["name"] in old for c in claims) and
                    len(fresh) == 3 and
                    self.running("blue", 3) is not None)
        wait_until(done, 240, interval=0.5,
                   what="every drifted node replaced")
        print("\ndrift: 3 nodes replaced in %.1f s, at most %d at once" %
              (time.monotonic() - start, most))
        self.assertLessEqual(most, 1)
        for c in self.claims_of_pool("blue"):
            self.assertEqual(c["metadata"]["labels"].get("team"), "blue")
        pods = self.running("blue", 3)
        nodes = {n["metadata"]["name"]: n for n in self.get("nodes")}
        for p in pods:
            self.assertEqual(nodes[p["spec"]["nodeName"]]["metadata"]
                             ["labels"].get("team"), "blue")
        self.assertEqual(self.metric("karpenter_nodeclaims_disrupted_total",
                                     reason="drifted", nodepool="blue"), 3)
        # Replacement first: no evicted pod ever waited for a node.
        self.assertEqual([e for e in self.events(kind="Pod",
                                                 reason="FailedScheduling")
                          if e["involvedObject"]["name"].startswith("blue")
                          and parse_time(e.get("lastTimestamp") or
                                         e["firstTimestamp"]) > since],
                         [])
        self.assertEqual(self.pod_deletes(), [])

    def test_2_new_template_on_one_host(self):
        self.apply(nodepool_yaml("img"))
        self.apply(deployment_yaml("img", "img", replicas=2, cpu="1200m"))
        self.wait_running("img", 2, timeout=120)
        claims = self.live_claims("img")
        target = claims[0]
        host = target["metadata"]["labels"]["topology.kubernetes.io/zone"]
        region, vmid = target["status"]["imageID"].split("/")
        others = [c["metadata"]["name"] for c in claims[1:]
                  if c["metadata"]["labels"]["topology.kubernetes.io/zone"] !=
                  host]
        # A new image: clone the template on that host, make it one.
        newid = int(vmid) + 500
        upid = self.pve_api("POST", "/nodes/%s/qemu/%s/clone" % (host, vmid),
                            {"newid": newid, "name": "k3s-agent",
                             "full": 1})
        self.pve_wait_task(host, upid, timeout=60)
        upid = self.pve_api("POST", "/nodes/%s/qemu/%d/template" %
                            (host, newid))
        self.pve_wait_task(host, upid)
        name = target["metadata"]["name"]
        # The class's status shows the new template within its resync.
        reason = wait_until(lambda: self.drifted(name), 150,
                            what="the node on %s drifted" % host)
        self.assertEqual(reason, "TemplateDrifted")
        wait_until(lambda: not self.exists("nodeclaims", name), 120,
                   what="the drifted node replaced")
        # Whatever is on that host was cloned from the new template once
        # drift is through (the other node may have been there too: it
        # drifts as well and is replaced in its turn).
        def old_image_on_host():
            return [c["metadata"]["name"] for c in self.live_claims("img")
                    if c["metadata"].get("labels", {}).get(
                        "topology.kubernetes.io/zone") == host and
                    c.get("status", {}).get("imageID") !=
                    "%s/%d" % (region, newid)]
        wait_until(lambda: not old_image_on_host(), 180,
                   what="no node on %s from the old template" % host)
        self.wait_running("img", 2, timeout=60)
        for other in others:
            self.assertIsNotNone(self.exists("nodeclaims", other))
            self.assertIsNone(self.drifted(other))


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
