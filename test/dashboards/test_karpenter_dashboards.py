"""Karpenter's two Grafana dashboards (karpenter/*.json) against a real
Prometheus scraping Carpenter on the simulators.

promql_metrics.py checks that every query names metrics Carpenter
exports; this checks that the queries return data once a cluster has
lived: Prometheus (Debian's `prometheus`) scrapes Carpenter's metrics port
every second while a NodePool scales up to three nodes and back down to
one (emptiness removes the other two), then every panel query and
template variable query runs through Prometheus's HTTP API
(/api/v1/query) with Grafana's variables substituted as Grafana would
(below). Each must return at least one sample with a number (not NaN),
but for those listed in CANNOT_HAVE_DATA, each with its reason; their
metrics are another exporter's or in docs/metrics.md's "Not exported"
table.

Prometheus's configuration and TSDB are in the run's scratch folder,
removed when the test ends, and Prometheus is stopped whatever happens."""
import atexit
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from e2elib import (E2ETest, daemonset_yaml, deployment_yaml,  # noqa: E402
                    nodepool_yaml, wait_until)
from sims import free_port  # noqa: E402
import promql_metrics  # noqa: E402

SOURCE_DIR = os.environ.get("CARP_SOURCE_DIR",
                            os.path.abspath(os.path.join(HERE, "..", "..")))
DASHBOARDS = [os.path.join(HERE, "karpenter", f) for f in (
    "karpenter-capacity-dashboard.json",
    "karpenter-performance-dashboard.json")]
METRICS_DOC = os.path.join(SOURCE_DIR, "docs", "metrics.md")

# Queries that cannot return data on Carpenter, by panel and a part of the
# query, with the reason.
CANNOT_HAVE_DATA = [
    ("Node Summary", "node_time_seconds",
     "node_exporter's node_time_seconds and node_boot_time_seconds: "
     "another exporter's metrics, not Carpenter's (no node_exporter runs "
     "on the simulators)"),
]

# Grafana's $__rate_interval is max($__interval + scrape interval,
# 4 x scrape interval): a few seconds with the 1 s scrape here. A minute
# gives the same answer (a rate of the counter) and stays non-empty when
# a loaded machine delays a few scrapes.
RATE_INTERVAL = "1m"

# How Grafana formats a multi-value variable in a regex matcher: the values'
# regex metacharacters escaped (prometheusSpecialRegexEscape), joined in
# (a|b).
REGEX_META = re.compile(r"([\\^$*+?.()|{}\[\]])")


def regex_escape(value):
    return REGEX_META.sub(r"\\\\\1", value)


class Prometheus:
    """A prometheus server scraping one target every second, its data in
    workdir."""

    def __init__(self, workdir, target):
        self.dir = os.path.join(workdir, "prometheus")
        os.makedirs(self.dir)
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:
            # The job is named as Karpenter's chart names it: the
            # performance dashboard selects job="karpenter".
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: karpenter\n"
                    "    static_configs:\n      - targets: ['%s']\n" % target)
        self.log_path = os.path.join(self.dir, "prometheus.log")
        self.proc = None
        atexit.register(self.stop)
        binary = shutil.which("prometheus")
        if not binary:
            raise AssertionError("prometheus not found (Debian package "
                                 "prometheus; hack/lib/deps.sh installs it)")
        # A free port can be taken between the probe and the bind: retry.
        for _ in range(5):
            self.port = free_port()
            self.url = "http://127.0.0.1:%d" % self.port
            with open(self.log_path, "a") as log:
                self.proc = subprocess.Popen([
                    binary, "--config.file=" + self.config,
                    "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                    "--web.listen-address=127.0.0.1:%d" % self.port,
                    "--web.console.templates=" + self.dir,
                    "--web.console.libraries=" + self.dir],
                    stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            if wait_until(self.ready_or_exited, 60, what="prometheus ready"):
                if self.proc.poll() is None:
                    return
            self.proc = None
        raise AssertionError("prometheus did not start:\n" + self.log())

    def ready_or_exited(self):
        if self.proc.poll() is not None:
            return "exited"
        try:
            with urllib.request.urlopen(self.url + "/-/ready",
                                        timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def log(self):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-40:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def query(self, expr):
        """The result of an instant query (a list of {metric, value})."""
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError("query %r: %s %s" % (expr, e.code,
                                                      e.read()[:500]))
        if body.get("status") != "success":
            raise AssertionError("query %r: %s" % (expr, body))
        data = body["data"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        if data["resultType"] == "vector":
            return data["result"]
        raise AssertionError("query %r: result type %s" %
                             (expr, data["resultType"]))


def has_number(result):
    return any(not math.isnan(float(s["value"][1])) for s in result)


def not_exported():
    """The metric names (and prefixes, for `name_*`) of docs/metrics.md's
    "Not exported, and why" table."""
    with open(METRICS_DOC) as f:
        text = f.read()
    section = text.split("## Not exported, and why", 1)[1].split("\n## ")[0]
    names = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`([a-z_<>]+\*?)`", row.split("|")[1]))
    return names


class KarpenterDashboardsTest(E2ETest):

    @classmethod
    def prepare(cls):
        cls.prom = None
        cls.env.apply(nodepool_yaml("dash", consolidate_after="5s",
                                    limit_cpu=64, limit_memory="256Gi"))
        cls.prom = Prometheus(cls.env.workdir,
                              "127.0.0.1:%d" % cls.metrics_port)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "prom", None):
            cls.prom.stop()
        super().tearDownClass()

    @classmethod
    def setUpClass(cls):
        try:
            super().setUpClass()
        except BaseException:
            if getattr(cls, "prom", None):
                cls.prom.stop()
            raise

    def prom_sum(self, expr):
        r = self.prom.query("sum(%s)" % expr)
        return float(r[0]["value"][1]) if r else None

    # ---- Grafana's variables ----

    def variable_values(self, var):
        """The values of a query variable, as Grafana gets them for
        label_values(metric, label): the label's values on the metric's
        series."""
        q = var["query"]
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\s*\)", q.strip())
        self.assertIsNotNone(m, "variable $%s: %s" % (var["name"], q))
        result = self.prom.query("count by (%s) (%s)" % (m.group(2),
                                                          m.group(1)))
        return sorted({s["metric"].get(m.group(2), "") for s in result} -
                      {""})

    def substitutions(self, dash):
        """[{variable: text}]: one substitution per value of each custom
        variable (a panel is drawn for each), query variables as the
        dashboard's current selection ("All": every value)."""
        fixed = {"__rate_interval": RATE_INTERVAL}
        custom = {}
        for var in dash.get("templating", {}).get("list", []):
            name, cur = var["name"], var.get("current", {}).get("value")
            if var["type"] == "query":
                values = self.variable_values(var)
                self.assertTrue(values, "variable $%s has no values" % name)
                if cur in ("$__all", ["$__all"]):
                    fixed[name] = "(%s)" % "|".join(map(regex_escape,
                                                        values))
                else:
                    self.assertIn(cur, values, "variable $%s" % name)
                    fixed[name] = cur
            elif var["type"] == "custom":
                custom[name] = [o["value"] for o in var["options"]]
        out = [fixed]
        for name, values in custom.items():
            out = [dict(s, **{name: v}) for s in out for v in values]
        return out

    @staticmethod
    def substitute(expr, values):
        def one(m):
            name = m.group(1) or m.group(2)
            if name not in values:
                raise AssertionError("no value for $%s in %s" % (name, expr))
            return values[name]
        return re.sub(r"\$\{(\w+)\}|\$([A-Za-z_]\w*)", one, expr)

    def cannot_have_data(self, panel, expr):
        for p, part, reason in CANNOT_HAVE_DATA:
            if p == panel and part in expr:
                return reason
        return None

    # ---- the test ----

    def scale_up_and_down(self):
        self.apply(daemonset_yaml("agent", "dash"))
        # 1500m pods on 2-CPU nodes: one node each.
        self.apply(deployment_yaml("web", "dash", replicas=3, cpu="1500m"))
        self.wait_running("web", 3, timeout=120)
        wait_until(lambda: self.prom_sum("karpenter_nodes_created_total") ==
                   3, 30, what="3 nodes created, in Prometheus")
        # Emptiness takes the two nodes the scale-down empties.
        self.kubectl("scale", "deployment", "web", "--replicas=1")
        wait_until(lambda: len(self.claims_of_pool("dash")) == 1 and
                   len(self.get("nodes")) == 1, 120,
                   what="the pool back to one node")
        wait_until(lambda: self.prom_sum(
            "karpenter_nodes_terminated_total") == 2, 30,
            what="2 nodes terminated, in Prometheus")
        # A few more scrapes, so each counter has samples both sides of
        # its last change within RATE_INTERVAL.
        time.sleep(5)

    def test_dashboards_have_data(self):
        start = time.monotonic()
        self.scale_up_and_down()
        print("\ndashboards: scaled up and down in %.0f s" %
              (time.monotonic() - start))
        empty, ran, excused = [], 0, set()
        for path in DASHBOARDS:
            with open(path) as f:
                dash = json.load(f)
            subs = self.substitutions(dash)
            for panel, expr in promql_metrics.queries(dash):
                reason = self.cannot_have_data(panel, expr)
                if panel.startswith("variable $"):
                    m = re.fullmatch(r"label_values\((.*),\s*(\w+)\s*\)",
                                     expr.strip())
                    exprs = ["count by (%s) (%s)" % (m.group(2), m.group(1))]
                else:
                    exprs = sorted({self.substitute(expr, s) for s in subs})
                for e in exprs:
                    ran += 1
                    result = self.prom.query(e)
                    if reason:
                        excused.add((panel, expr))
                        self.assertFalse(
                            has_number(result),
                            "listed as without data (%s), but has: %s\n%s" %
                            (reason, e, result))
                    elif not has_number(result):
                        empty.append("[%s] %s\n    -> %s" %
                                     (os.path.basename(path) + ": " + panel,
                                      e, result))
        print("dashboards: %d queries run, %d without data by design" %
              (ran, len(excused)))
        self.assertEqual(empty, [], "queries without data:\n" +
                         "\n".join(empty))
        # Every entry of the list is used, and names only metrics of
        # another exporter or ones docs/metrics.md says are not exported.
        self.assertEqual(len(excused), len(CANNOT_HAVE_DATA))
        docs = not_exported()
        for panel, expr in excused:
            for name in promql_metrics.metric_names(expr):
                ext = any(name.startswith(p)
                          for p, _ in promql_metrics.EXTERNAL)
                listed = name in docs or any(
                    d.endswith("*") and name.startswith(d[:-1])
                    for d in docs)
                self.assertTrue(ext or listed, "%s (%s): %s is neither "
                                "another exporter's nor in docs/metrics.md's "
                                "Not exported table" % (panel, expr, name))


if __name__ == "__main__":
    import unittest
    unittest.main()
