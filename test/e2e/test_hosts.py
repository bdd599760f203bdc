"""End to end: a Proxmox host put in HA maintenance (issue 14) on kube-sim
and pve-sim.

Three 2-vCPU nodes, one 1.2-CPU pod each, spread over pve1..pve3. pve-sim
puts one host in HA maintenance (as `ha-manager crm-command
node-maintenance enable`): within the provider's inventory refresh (30 s)
and the host poll, its nodes get Drifted=True with reason HostMaintenance
and are replaced as drift replaces nodes - replacement up first, on
another host, then the drain - so no pod waits for a place. Nodes on the
other hosts are left alone, and no new VM goes to the host in maintenance
meanwhile."""
import time

from e2elib import (E2ETest, deployment_yaml, nodepool_yaml, parse_time,
                    wait_until)

ZONE = "topology.kubernetes.io/zone"


class HostMaintenanceTest(E2ETest):

    def drifted(self, claim):
        c = self.exists("nodeclaims", claim) or {}
        for cond in c.get("status", {}).get("conditions", []):
            if cond["type"] == "Drifted" and cond["status"] == "True":
                return cond["reason"]
        return None

    def tearDown(self):
        self.env.pve.control("POST", "hosts/%s/maintenance?enable=0" %
                             getattr(self, "host", "pve1"))

    def test_host_in_maintenance_is_emptied(self):
        self.apply(nodepool_yaml("maint", budgets=("1",)))
        self.apply(deployment_yaml("maint", "maint", replicas=3,
                                   cpu="1200m"))
        self.wait_running("maint", 3, timeout=120)
        claims = self.claims_of_pool("maint")
        self.assertEqual(len(claims), 3)
        self.host = claims[0]["metadata"]["labels"][ZONE]
        on_host = {c["metadata"]["name"] for c in claims
                   if c["metadata"]["labels"][ZONE] == self.host}
        others = {c["metadata"]["name"] for c in claims} - on_host
        since = time.time() - 1  # events carry whole seconds
        start = time.monotonic()
        self.env.pve.control("POST", "hosts/%s/maintenance?enable=1" %
                             self.host)
        # Seen at the next inventory refresh (30 s), then the host poll.
        for name in on_host:
            reason = wait_until(
                lambda: self.drifted(name) or
                (not self.exists("nodeclaims", name) and "gone"), 60,
                what="%s drifted (host %s in maintenance)" %
                (name, self.host))
            if reason != "gone":
                self.assertEqual(reason, "HostMaintenance")

        def emptied():
            live = [c for c in self.claims_of_pool("maint")
                    if not c["metadata"].get("deletionTimestamp")]
            return (not any(c["metadata"]["name"] in on_host
                            for c in self.claims_of_pool("maint")) and
                    len(live) == 3 and self.running("maint", 3) is not None)
        wait_until(emptied, 60, interval=0.5,
                   what="the nodes on %s replaced" % self.host)
        print("\nhost maintenance: %d node(s) moved off %s in %.1f s" %
              (len(on_host), self.host, time.monotonic() - start))
        claims = self.claims_of_pool("maint")
        # Replaced elsewhere; the others untouched and not drifted.
        self.assertNotIn(self.host,
                         [c["metadata"]["labels"][ZONE] for c in claims])
        vms = self.env.pve.vms()
        self.assertEqual([v["vmid"] for v in vms if v.get("node") == self.host
                          and not v.get("template")], [])
        for name in others:
            self.assertIsNotNone(self.exists("nodeclaims", name))
            self.assertIsNone(self.drifted(name))
        self.assertEqual(self.metric("karpenter_nodeclaims_disrupted_total",
                                     reason="drifted", nodepool="maint"),
                         len(on_host))
        # Replacement first: no evicted pod waited for a node.
        self.assertEqual([e for e in self.events(kind="Pod",
                                                 reason="FailedScheduling")
                          if e["involvedObject"]["name"].startswith("maint")
                          and parse_time(e.get("lastTimestamp") or
                                         e["firstTimestamp"]) > since],
                         [])
        self.assertEqual(self.pod_deletes(), [])


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
