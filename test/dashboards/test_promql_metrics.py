"""promql_metrics.py: metric names out of PromQL, their status against an
exported set, the queries of a dashboard; and the chart's own dashboard
reading only metrics Carpenter exports."""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import promql_metrics as pm  # noqa: E402

SOURCE_DIR = os.environ.get("CARP_SOURCE_DIR",
                            os.path.abspath(os.path.join(HERE, "..", "..")))
OURS = os.path.join(SOURCE_DIR, "charts", "carpenter", "dashboards",
                    "carpenter-proxmox.json")
KARPENTER = [os.path.join(HERE, "karpenter", f) for f in (
    "karpenter-capacity-dashboard.json",
    "karpenter-performance-dashboard.json")]


class NamesTest(unittest.TestCase):
    def test_metric_names(self):
        for expr, want in (
                ('sum by(cluster,nodepool) (karpenter_nodes_created_total'
                 '{nodepool=~"$nodepool"})', ["karpenter_nodes_created_total"]),
                ("histogram_quantile(0.9, rate(a_seconds_bucket"
                 '{controller="$controller"}[10m]))', ["a_seconds_bucket"]),
                ("(count(x{capacity_type=\"spot\"}) or vector(0)) / "
                 "count(x)", ["x"]),
                ("sum by ($distribution_filter)(\n  pods_state{arch=~\"$arch\"}\n)",
                 ["pods_state"]),
                ("count by (nodepool)(alloc{nodepool!=\"N/A\"}) # Selects "
                 "a single resource type to get node count", ["alloc"]),
                ("label_values(karpenter_nodes_allocatable, nodepool)",
                 ["karpenter_nodes_allocatable"]),
                ('label_replace(sum by (node)(node_time_seconds) - sum by '
                 '(node)(node_boot_time_seconds), "node_name", "$1", "node", '
                 '"(.+)")', ["node_time_seconds", "node_boot_time_seconds"]),
                ("a / on(x) group_left(y) b * 1e3 > bool 0.5", ["a", "b"]),
                ("max(s{quantile=\"0.9\"}) offset 5m", ["s"])):
            self.assertEqual(pm.metric_names(expr), want, expr)

    def test_status(self):
        exported = {"g": "gauge", "h": "histogram", "s": "summary",
                    "c_total": "counter"}
        for name, expr, want in (
                ("g", "g", "ok"),
                ("h_bucket", "rate(h_bucket[5m])", "ok"),
                ("h_count", "h_count", "ok"),
                ("s_sum", "s_sum", "ok"),
                ("s", 's{quantile="0.5"}', "ok"),
                ("h", 'max(h{quantile="0.5"})', "TYPE"),
                ("g_bucket", "g_bucket", "TYPE"),
                ("s_bucket", "s_bucket", "TYPE"),
                ("nope", "nope", "MISSING"),
                ("node_load1", "node_load1", "external"),
                ("kube_pod_info", "kube_pod_info", "external")):
            self.assertEqual(pm.status(name, expr, exported)[0], want, name)

    def test_exported_from_source(self):
        got = pm.exported_from_source(SOURCE_DIR)
        # One of each way a family is registered.
        self.assertEqual(got["karpenter_cloudprovider_errors_total"],
                         "counter")
        self.assertEqual(got["karpenter_pods_startup_duration_seconds"],
                         "summary")
        self.assertEqual(got["controller_runtime_reconcile_time_seconds"],
                         "histogram")
        self.assertEqual(got["karpenter_nodes_allocatable"], "gauge")
        self.assertEqual(got["karpenter_cluster_state_node_count"], "untyped")
        self.assertEqual(got["carpenter_proxmox_host_committed_vcpus"],
                         "gauge")
        self.assertEqual(got["karpenter_nodes_termination_duration_seconds"],
                         "summary")


class DashboardsTest(unittest.TestCase):
    def run_tool(self, *args):
        r = subprocess.run([sys.executable, os.path.join(
            HERE, "promql_metrics.py"), "--json", *args],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_karpenter_dashboards_queries(self):
        out = self.run_tool(*KARPENTER)
        by = {d["dashboard"]: d for d in out["dashboards"]}
        cap = by["karpenter-capacity-dashboard.json"]["queries"]
        perf = by["karpenter-performance-dashboard.json"]["queries"]
        # Every target and variable query is found.
        self.assertEqual(len(cap), 26)
        self.assertEqual(len(perf), 17)
        self.assertIn(("variable $controller",
                       ["controller_runtime_reconcile_time_seconds_count"]),
                      [(q["panel"], [m["name"] for m in q["metrics"]])
                       for q in perf])
        # node_exporter's metrics are not Carpenter's to export.
        self.assertEqual(out["metrics"]["node_time_seconds"]["status"],
                         "external")

    def test_our_dashboard_reads_only_exported_metrics(self):
        out = self.run_tool(OURS)
        bad = {k: v for k, v in out["metrics"].items()
               if v["status"] not in ("ok",)}
        self.assertEqual(bad, {})
        titles = {q["panel"] for q in out["dashboards"][0]["queries"]}
        for want in ("Carpenter's VMs per host", "vCPUs committed per host",
                     "Memory committed per host", "Clone duration",
                     "Start duration", "Task failures per host"):
            self.assertIn(want, titles)

    def test_scrape_instead_of_sources(self):
        d = os.environ.get("TMPDIR", "/tmp")
        path = os.path.join(d, "carp-dash-scrape-%d.txt" % os.getpid())
        with open(path, "w") as f:
            f.write("# HELP karpenter_nodes_allocatable x\n"
                    "# TYPE karpenter_nodes_allocatable gauge\n"
                    "karpenter_nodes_allocatable{zone=\"a\"} 1\n")
        self.addCleanup(os.remove, path)
        out = self.run_tool("--metrics", path, OURS)
        self.assertEqual(out["metrics"]["karpenter_nodes_allocatable"][
            "status"], "ok")
        self.assertEqual(out["metrics"]["carpenter_proxmox_host_up"][
            "status"], "MISSING")


if __name__ == "__main__":
    unittest.main()
