"""End to end: termination against storage and an API server that cannot
evict (issue 20).

- A node whose pod used a CSI volume keeps its VM until the volume's
  VolumeAttachment is gone (kube-sim's attach/detach controller deletes it
  --detach-delay seconds after the pod left): the VM is never stopped while
  the attachment exists. The NodeClaim says so (VolumesDetached Unknown,
  AwaitingVolumeDetachment events).
- With a volume stuck attached, the terminationGracePeriod bounds the wait:
  the VM goes at the deadline (VolumesDetached=False,
  TerminationGracePeriodElapsed; a VolumesNotDetached event).
- An API server without policy/v1 Eviction answers every eviction with 400:
  the drain backs off to minutes (a handful of evictions, not one every
  few hundred milliseconds), says so (FailedDraining), and the
  terminationGracePeriod still ends it.
- A Proxmox that refuses to destroy the VM: the deletes back off per node
  (a handful in 20 s), and the node goes once Proxmox heals."""
import json
import shutil
import time

from e2elib import E2ETest, nodepool_yaml, wait_until

DRIVER = "rbd.csi.ceph.com"


def volume_deployment(name, pool, claim, grace=None):
    spec = {
        "nodeSelector": {"karpenter.sh/nodepool": pool},
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "500m",
                                                   "memory": "128Mi"}}}],
        "volumes": [{"name": "data",
                     "persistentVolumeClaim": {"claimName": claim}}],
    }
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": spec}}})


class TerminationFaultsTest(E2ETest):
    kube_args = ("--detach-delay", "8")

    @classmethod
    def prepare(cls):
        cls.env.apply(nodepool_yaml("vol"))
        cls.env.apply(nodepool_yaml("volgrace", tgp="25s"))
        cls.env.apply(nodepool_yaml("noevict", tgp="25s"))
        cls.env.apply(nodepool_yaml("vmdelete"))

    @classmethod
    def tearDownClass(cls):
        workdir = cls.env.workdir
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def faults(self, **kw):
        st, body = self.kube("POST", "/_sim/faults", kw)
        self.assertEqual(st, 200, body)

    def volume(self, pv, claim):
        st, body = self.kube("POST", "/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {"capacity": {"storage": "1Gi"},
                     "accessModes": ["ReadWriteOnce"],
                     "csi": {"driver": DRIVER, "volumeHandle": pv},
                     "claimRef": {"namespace": "default", "name": claim}}})
        self.assertEqual(st, 201, body)
        st, body = self.kube(
            "POST", "/api/v1/namespaces/default/persistentvolumeclaims", {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}},
                         "volumeName": pv}})
        self.assertEqual(st, 201, body)

    def attachments(self, node, pv):
        st, body = self.kube(
            "GET", "/apis/storage.k8s.io/v1/volumeattachments")
        self.assertEqual(st, 200, body)
        return [v["metadata"]["name"] for v in body["items"]
                if v["spec"].get("nodeName") == node and
                v["spec"]["source"].get("persistentVolumeName") == pv]

    def vm(self, vmid):
        for v in self.env.pve.vms():
            if v["vmid"] == vmid:
                return v
        return None

    def start(self, app, pool, pv, claim):
        """A pod of app on a node of pool, using volume pv; returns the
        pod's NodeClaim once the volume is attached to its node."""
        self.volume(pv, claim)
        self.apply(volume_deployment(app, pool, claim))
        pods = self.wait_running(app, 1, timeout=90)
        node = pods[0]["spec"]["nodeName"]
        wait_until(lambda: self.attachments(node, pv), 30,
                   what="the volume attached to %s" % node)
        claim_obj = self.claim_of_node(node)
        self.assertIsNotNone(claim_obj)
        return claim_obj

    def test_1_vm_waits_for_the_volume(self):
        claim = self.start("db", "vol", "pv-a", "data-a")
        node = claim["status"]["nodeName"]
        vmid = self.vmid_of(claim)
        self.kubectl("delete", "nodeclaim", claim["metadata"]["name"],
                     "--wait=false")
        # The pod is evicted; its attachment stays for --detach-delay (8 s)
        # more. As long as it is there, the VM is there and running.
        checks = 0
        reasons = set()
        deadline = time.monotonic() + 90
        while True:
            self.assertLess(time.monotonic(), deadline,
                            "the attachment never went")
            if not self.attachments(node, "pv-a"):
                break
            vm = self.vm(vmid)
            c = self.exists("nodeclaims", claim["metadata"]["name"])
            if self.attachments(node, "pv-a"):
                self.assertIsNotNone(vm, "VM deleted while the volume was "
                                     "still attached")
                self.assertEqual(vm.get("status"), "running",
                                 "VM stopped while the volume was still "
                                 "attached")
                checks += 1
            for cond in (c or {}).get("status", {}).get("conditions", []):
                if cond["type"] == "VolumesDetached":
                    reasons.add((cond["status"], cond.get("reason")))
            time.sleep(0.3)
        self.assertGreater(checks, 5)
        took = self.wait_gone(claim, 60)
        print("\nvolume: VM gone %.1f s after the attachment" % took)
        self.assertIn(("Unknown", "AwaitingVolumeDetachment"), reasons)
        self.assertTrue(self.events("Node", node, "AwaitingVolumeDetachment"))
        self.assertTrue(self.events("NodeClaim", claim["metadata"]["name"],
                                    "AwaitingVolumeDetachment"))

    def test_2_grace_period_bounds_the_wait(self):
        claim = self.start("stuck", "volgrace", "pv-b", "data-b")
        node = claim["status"]["nodeName"]
        vmid = self.vmid_of(claim)
        self.faults(holdDetach=True)
        self.addCleanup(self.faults, holdDetach=False)
        self.kubectl("delete", "nodeclaim", claim["metadata"]["name"],
                     "--wait=false")
        # The attachment never goes: the VM stays until the deadline
        # (25 s), then goes anyway.
        wait_until(lambda: not self.pods("stuck") or all(
            p["spec"].get("nodeName") != node for p in self.pods("stuck")),
            60, what="the pod off the node")
        self.assertIsNotNone(self.vm(vmid))
        reasons = set()

        def gone():
            c = self.exists("nodeclaims", claim["metadata"]["name"])
            for cond in (c or {}).get("status", {}).get("conditions", []):
                if cond["type"] == "VolumesDetached":
                    reasons.add((cond["status"], cond.get("reason")))
            return self.vm(vmid) is None
        wait_until(gone, 90, interval=0.3, what="the VM gone at the deadline")
        self.assertTrue(self.attachments(node, "pv-b"))
        self.assertTrue(self.events("Node", node, "VolumesNotDetached"))
        self.assertIn(("False", "TerminationGracePeriodElapsed"), reasons)
        self.wait_gone(claim, 60)

    def test_3_eviction_refused_backs_off(self):
        self.apply(json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "app", "namespace": "default"},
            "spec": {"replicas": 1,
                     "selector": {"matchLabels": {"app": "app"}},
                     "template": {
                         "metadata": {"labels": {"app": "app"}},
                         "spec": {
                             "nodeSelector": {
                                 "karpenter.sh/nodepool": "noevict"},
                             "terminationGracePeriodSeconds": 5,
                             "containers": [{
                                 "name": "c",
                                 "image": "registry.k8s.io/pause:3.9",
                                 "resources": {"requests": {
                                     "cpu": "500m",
                                     "memory": "128Mi"}}}]}}}}))
        pods = self.wait_running("app", 1, timeout=90)
        pod = pods[0]["metadata"]["name"]
        node = pods[0]["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        self.faults(noEvictionV1=True)
        self.addCleanup(self.faults, noEvictionV1=False)
        self.kubectl("delete", "nodeclaim", claim["metadata"]["name"],
                     "--wait=false")
        wait_until(lambda: self.evictions({pod}), 30,
                   what="the first eviction")
        time.sleep(15)
        ev = self.evictions({pod})
        print("\nno policy/v1 Eviction: %d evictions in 15 s" % len(ev))
        self.assertTrue(all(r["code"] == 400 for r in ev), ev)
        # Backed off to minutes: not one every few hundred milliseconds.
        self.assertLessEqual(len(ev), 2, ev)
        refused = [e for e in self.events("Node", node, "FailedDraining")
                   if "refused to evict" in e.get("message", "")]
        self.assertTrue(refused)
        # The deadline ends the drain: the pod is deleted, the node goes.
        self.wait_gone(claim, 90)
        self.assertTrue([r for r in self.pod_deletes() if r["name"] == pod])

    def test_4_vm_delete_refused_backs_off(self):
        self.apply(json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "gone", "namespace": "default"},
            "spec": {"replicas": 1,
                     "selector": {"matchLabels": {"app": "gone"}},
                     "template": {
                         "metadata": {"labels": {"app": "gone"}},
                         "spec": {
                             "nodeSelector": {
                                 "karpenter.sh/nodepool": "vmdelete"},
                             "containers": [{
                                 "name": "c",
                                 "image": "registry.k8s.io/pause:3.9",
                                 "resources": {"requests": {
                                     "cpu": "500m",
                                     "memory": "128Mi"}}}]}}}}))
        pods = self.wait_running("gone", 1, timeout=90)
        claim = self.claim_of_node(pods[0]["spec"]["nodeName"])
        vmid = self.vmid_of(claim)
        # Proxmox refuses every DELETE (the VM stops, its destroy fails).
        self.env.pve.control("POST", "faults", {"fault_500": 1.0,
                                                "fault_methods": ["DELETE"]})
        self.addCleanup(self.env.pve.control, "POST", "faults",
                        {"fault_500": 0.0, "fault_methods": []})
        self.kubectl("delete", "nodeclaim", claim["metadata"]["name"],
                     "--wait=false")

        def deletes():
            out = []
            with open(self.env.pve.reqlog) as f:
                for line in f:
                    r = json.loads(line)
                    if (r["method"] == "DELETE" and
                            r["path"].endswith("/qemu/%d" % vmid)):
                        out.append(r)
            return out
        wait_until(deletes, 60, what="the first VM delete")
        time.sleep(20)
        n = len(deletes())
        print("\nVM delete refused: %d DELETEs in 20 s" % n)
        # 1 s doubling per node: a handful, not one a second or more.
        self.assertLessEqual(n, 10)
        self.env.pve.control("POST", "faults", {"fault_500": 0.0,
                                                "fault_methods": []})
        self.wait_gone(claim, 120)


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
