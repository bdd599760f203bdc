"""End to end: garbage collection (issue 8, part 4) on kube-sim and pve-sim.

- A VM tagged as this cluster's Carpenter VM whose NodeClaim UID matches no
  NodeClaim is deleted once the (shortened) grace period has passed; a VM
  whose NodeClaim exists and a VM tagged for another cluster are kept.
- A NodeClaim whose VM was deleted behind Carpenter's back (through the
  Proxmox API) is deleted once its Node is NotReady; the drain is skipped
  (nothing is evicted) and Node and NodeClaim go."""
import time
import uuid

from e2elib import (E2ETest, deployment_yaml, nodepool_yaml, parse_time,
                    wait_until)

GRACE = 6  # --gc-leaked-vm-grace in FAST_FLAGS


class GarbageCollectionTest(E2ETest):

    def make_vm(self, vmid, name, tags, uid):
        """A VM cloned from pve1's template outside Carpenter, tagged and
        described as Carpenter does."""
        upid = self.pve_api("POST", "/nodes/pve1/qemu/9000/clone",
                            {"newid": vmid, "name": name})
        self.pve_wait_task("pve1", upid)
        self.pve_api("PUT", "/nodes/pve1/qemu/%d/config" % vmid, {
            "tags": tags,
            "description": "Managed by Carpenter; do not edit.\n"
                           "nodeclaim: %s\nnodeclaim-uid: %s\n"
                           "nodepool: default\n" % (name, uid)})

    def test_1_leaked_vm_deleted(self):
        self.apply(nodepool_yaml("gc"))
        self.apply(deployment_yaml("web", "gc", replicas=1))
        pod = self.wait_running("web", 1, timeout=90)[0]
        owned = self.vmid_of(self.claim_of_node(pod["spec"]["nodeName"]))

        self.make_vm(500, "ghost", "carpenter;carpenter-e2e", uuid.uuid4())
        self.make_vm(501, "elsewhere", "carpenter;carpenter-other",
                     uuid.uuid4())
        start = time.monotonic()
        wait_until(lambda: 500 not in self.vm_ids(), GRACE + 20,
                   what="the leaked VM deleted")
        took = time.monotonic() - start
        print("\ngc: leaked VM deleted %.1f s after it appeared (grace %d s)"
              % (took, GRACE))
        self.assertGreaterEqual(took, GRACE - 1)
        # Seen unowned, then deleted no sooner than the grace period.
        seen = [r for r in self.log_records(
            "VM owned by no NodeClaim; deleting it after the grace period "
            "unless one claims it") if r.get("providerID") ==
            "proxmox://homelab/500"]
        deleted = [r for r in self.log_records("deleting leaked VM")
                   if r.get("providerID") == "proxmox://homelab/500"]
        self.assertEqual(len(seen), 1)
        self.assertEqual(len(deleted), 1)
        self.assertGreaterEqual(parse_time(deleted[0]["time"]) -
                                parse_time(seen[0]["time"]), GRACE - 0.1)
        self.assertIn(owned, self.vm_ids())
        self.assertIn(501, self.vm_ids())
        # Counted when Carpenter sees the delete task finish, which can be
        # a poll after the VM left pve-sim's list.
        wait_until(lambda: self.metric("carpenter_garbage_collected_vms_total",
                                       region="homelab") == 1, 5,
                   what="carpenter_garbage_collected_vms_total 1")
        # Nothing else was touched for a few more sweeps.
        time.sleep(5)
        self.assertIn(owned, self.vm_ids())
        self.assertIn(501, self.vm_ids())

    def test_2_nodeclaim_without_vm_deleted(self):
        pod = self.wait_running("web", 1, timeout=90)[0]
        node = pod["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        vmid = self.vmid_of(claim)
        host = claim["metadata"]["labels"]["topology.kubernetes.io/zone"]
        # Gone behind Carpenter's back.
        upid = self.pve_api("POST", "/nodes/%s/qemu/%d/status/stop" %
                            (host, vmid))
        self.pve_wait_task(host, upid)
        upid = self.pve_api("DELETE", "/nodes/%s/qemu/%d" % (host, vmid))
        self.pve_wait_task(host, upid)
        start = time.monotonic()
        wait_until(lambda: not self.exists("nodeclaims",
                                           claim["metadata"]["name"]) and
                   not self.exists("nodes", node), 60,
                   what="nodeclaim and node gone")
        print("\ngc: nodeclaim of a deleted VM gone %.1f s after the VM "
              "(node lease grace 10 s, gc interval 2 s)" %
              (time.monotonic() - start))
        self.assertTrue([r for r in self.log_records(
            "garbage collecting nodeclaim with no VM")
            if r.get("nodeclaim") == claim["metadata"]["name"]])
        self.assertTrue([r for r in self.log_records("deleted node")
                         if r.get("node") == node and r.get("drain_skipped")])
        self.assertEqual(self.evictions({pod["metadata"]["name"]}), [])
        self.assertTrue(self.events("NodeClaim", claim["metadata"]["name"],
                                    "GarbageCollected"))
        self.assertEqual(self.metric("karpenter_nodeclaims_disrupted_total",
                                     reason="garbage_collected",
                                     nodepool="gc"), 1)
        # (Its pod stays bound to the deleted Node: a real cluster's pod
        # garbage collector deletes such pods, kube-sim has none.)


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
