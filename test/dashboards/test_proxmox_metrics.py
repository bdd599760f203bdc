"""The Proxmox view's metrics on a live Carpenter (kube-sim and pve-sim):
hosts and regions as pve-sim has them, Carpenter's VMs counted per host,
committed vCPUs and memory covering its VMs, every clone and start counted
and timed; and every metric the chart's Grafana dashboard reads present in
the scrape (promql_metrics.py --metrics), but for an error counter no error
has touched."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2elib import E2ETest, deployment_yaml, nodepool_yaml  # noqa: E402
from carptest import http_get  # noqa: E402
from sims import wait_until  # noqa: E402

SOURCE_DIR = os.environ.get("CARP_SOURCE_DIR",
                            os.path.abspath(os.path.join(HERE, "..", "..")))
DASHBOARD = os.path.join(SOURCE_DIR, "charts", "carpenter", "dashboards",
                         "carpenter-proxmox.json")


class ProxmoxMetricsTest(E2ETest):
    @classmethod
    def prepare(cls):
        cls.env.apply(nodepool_yaml("metrics"))

    def test_proxmox_view(self):
        hosts = {h["node"]: h for h in self.pve_api("GET", "/nodes")}
        self.assertEqual(len(hosts), 3)
        wait_until(lambda: self.metric("carpenter_proxmox_region_up",
                                       region="homelab") == 1, 30,
                   what="region homelab up")
        for name, h in hosts.items():
            self.assertEqual(self.metric("carpenter_proxmox_host_up",
                                         zone=name), 1)
            self.assertEqual(self.metric("carpenter_proxmox_host_cpus",
                                         zone=name), h["maxcpu"])
            self.assertEqual(self.metric("carpenter_proxmox_host_memory_bytes",
                                         zone=name), h["maxmem"])
        self.assertEqual(self.metric("carpenter_proxmox_host_vms",
                                     managed="true"), 0)

        # Three 2-vCPU nodes (one pod each: 1500m of the 2 CPUs).
        self.apply(deployment_yaml("web", "metrics", replicas=3,
                                   cpu="1500m"))
        claims = wait_until(lambda: (lambda c: c if len(c) == 3 and all(
            x.get("status", {}).get("providerID") for x in c) else None)(
            self.claims_of_pool("metrics")), 90, what="3 NodeClaims launched")
        self.wait_running("web", 3, timeout=90)
        vms = [v for v in self.env.pve.vms() if not v.get("template")]
        self.assertEqual(len(vms), 3)

        def counted():
            return self.metric("carpenter_proxmox_host_vms",
                               managed="true") == 3
        wait_until(counted, 60, what="3 managed VMs in the host metrics")
        per_host = {}
        for c in claims:
            zone = c["metadata"]["labels"]["topology.kubernetes.io/zone"]
            per_host[zone] = per_host.get(zone, 0) + 1
        for zone, n in per_host.items():
            self.assertEqual(self.metric("carpenter_proxmox_host_vms",
                                         zone=zone, managed="true"), n)
            # Committed covers at least Carpenter's running VMs there
            # (2 vCPUs, 4 GiB each).
            self.assertGreaterEqual(self.metric(
                "carpenter_proxmox_host_committed_vcpus", zone=zone), 2 * n)
            self.assertGreaterEqual(self.metric(
                "carpenter_proxmox_host_committed_memory_bytes", zone=zone),
                n * 4 * 2**30)
        # Every clone counted and timed, by the host it ran on.
        self.assertEqual(self.metric("carpenter_proxmox_tasks_total",
                                     type="qmclone", result="ok"), 3)
        for zone, n in per_host.items():
            self.assertEqual(self.metric("carpenter_proxmox_tasks_total",
                                         type="qmclone", zone=zone), n)
        self.assertEqual(self.metric(
            "carpenter_proxmox_task_duration_seconds_count", type="qmclone"),
            3)
        self.assertEqual(self.metric("carpenter_proxmox_tasks_total",
                                     type="qmstart", result="ok"), 3)
        self.assertIsNone(self.metric("carpenter_proxmox_tasks_total",
                                      result="failed"))

        # Every metric the chart's dashboard reads is in the scrape.
        status, _, text = http_get("http://127.0.0.1:%d/metrics" %
                                   self.metrics_port)
        self.assertEqual(status, 200)
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write(text)
            f.flush()
            r = subprocess.run([sys.executable, os.path.join(
                HERE, "promql_metrics.py"), "--json", "--metrics", f.name,
                DASHBOARD], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        bad = {k: v for k, v in json.loads(r.stdout)["metrics"].items()
               if v["status"] != "ok"}
        # No call failed in this run, so the error counter has no series
        # yet (test_promql_metrics checks it is registered).
        self.assertEqual(set(bad), {"karpenter_cloudprovider_errors_total"})
        self.assertIsNone(self.metric("karpenter_cloudprovider_errors_total"))


if __name__ == "__main__":
    unittest.main()
