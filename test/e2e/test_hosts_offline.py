"""End to end: a Proxmox host that goes offline (issue 14) on kube-sim and
pve-sim.

Two 2-vCPU nodes, one 1.2-CPU pod each. pve-sim crashes the host of one
of them (its guests stop, so their kubelets stop renewing leases and the
Node turns Unknown). Once the host has been offline for
--host-offline-toleration and the Node is not Ready, the
nodeclaim.interruption controller deletes its NodeClaim; termination gets
the dead kubelet's pods off, and the provisioner places them on a new
node on a host that is up. When the host comes back, the VM left on it is
swept by the garbage collector."""
import time

from e2elib import E2ETest, deployment_yaml, nodepool_yaml, wait_until

ZONE = "topology.kubernetes.io/zone"


class HostOfflineTest(E2ETest):
    carpenter_flags = ("--host-offline-toleration=10s",)

    def tearDown(self):
        if getattr(self, "host", None):
            self.env.pve.control("POST", "hosts/%s/online" % self.host)

    def test_offline_host_nodes_are_replaced(self):
        # The drain of a dead kubelet's pods is bounded by the pool's
        # terminationGracePeriod (their deletions never complete).
        self.apply(nodepool_yaml("offl", tgp="15s"))
        self.apply(deployment_yaml("offl", "offl", replicas=2, cpu="1200m"))
        self.wait_running("offl", 2, timeout=120)
        claims = self.claims_of_pool("offl")
        self.assertEqual(len(claims), 2)
        self.host = claims[0]["metadata"]["labels"][ZONE]
        gone = {c["metadata"]["name"] for c in claims
                if c["metadata"]["labels"][ZONE] == self.host}
        vmids = {v["vmid"] for v in self.env.pve.vms()
                 if v.get("node") == self.host and not v.get("template")}
        start = time.monotonic()
        self.env.pve.control("POST", "hosts/%s/offline?mode=crash" % self.host)

        wait_until(lambda: not {c["metadata"]["name"]
                                for c in self.claims_of_pool("offl")
                                if not c["metadata"].get("deletionTimestamp")}
                   & gone, 120, interval=1,
                   what="the NodeClaims on %s deleted" % self.host)
        deleted_s = time.monotonic() - start

        def replaced():
            names = {c["metadata"]["name"] for c in self.claims_of_pool("offl")}
            return (not names & gone and
                    self.running("offl", 2) is not None)
        wait_until(replaced, 240, interval=1,
                   what="the nodes on offline host %s replaced" % self.host)
        print("\nhost offline: %d node(s) off %s deleted after %.1f s, "
              "replaced after %.1f s" % (len(gone), self.host, deleted_s,
                                         time.monotonic() - start))
        self.assertNotIn(self.host, [c["metadata"]["labels"][ZONE]
                                     for c in self.claims_of_pool("offl")])
        self.assertEqual(self.metric("karpenter_nodeclaims_disrupted_total",
                                     reason="host_offline", nodepool="offl"),
                         len(gone))
        # Back online: the VM Carpenter could not reach is swept.
        self.env.pve.control("POST", "hosts/%s/online" % self.host)
        wait_until(lambda: not vmids & {v["vmid"] for v in self.env.pve.vms()},
                   120, interval=1,
                   what="the VMs left on %s deleted once it is back" %
                   self.host)
        self.host = None


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
