"""End to end on the simulators: NodePool and ProxmoxNodeClass status as
kubectl shows it, the hash annotations, refusal of invalid pools, and the
cluster-state metrics on /metrics (checked with promtool).

One kube-sim, one pve-sim and one Carpenter (leader election off) serve
every test; each test uses its own NodePool and NodeClass names. The
Proxmox configuration has a second region, "broken", whose token secret is
wrong."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "integration"))
from carptest import SOURCE_DIR, Carpenter, http_get  # noqa: E402
from sims import Env, wait_until  # noqa: E402

NODECLASS = """
apiVersion: carpenter.dev/v1alpha1
kind: ProxmoxNodeClass
metadata:
  name: %(name)s
spec:
  regions: [%(regions)s]
  template:
    name: k3s-agent
  bootstrap:
    mode: Template
  instanceTypes:
    families:
      - name: c1
        memoryPerCPU: 2Gi
    sizes: [2, 4]
"""

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: %(name)s
spec:
  weight: %(weight)d
  template:
    metadata:
      labels:
        %(labels)s
    spec:
      nodeClassRef:
        group: carpenter.dev
        kind: ProxmoxNodeClass
        name: %(nodeclass)s
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: [on-demand]
  limits:
    cpu: "64"
    memory: 256Gi
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %(name)s
  namespace: default
spec:
  replicas: %(replicas)d
  selector:
    matchLabels: {app: %(name)s}
  template:
    metadata:
      labels: {app: %(name)s}
    spec:
      nodeSelector: {%(selector)s}
      containers:
        - name: app
          image: registry.k8s.io/pause:3.9
          resources:
            requests: {cpu: "1", memory: 512Mi}
"""

# A gauge of Karpenter's named *_count, which promtool's lint reserves for
# histograms and summaries; registered by the provisioner (the metrics
# controller exports its own such gauge untyped, which lint accepts).
LINT_ALLOWED = ("karpenter_scheduler_unschedulable_pods_count",)


def conditions(obj):
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}


def parse_metrics(text):
    """[(name, {labels}, value)] of the sample lines."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        if not m:
            raise AssertionError("bad sample line: %r" % line)
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"',
                                 m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


class StatusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = Env()
        with open(cls.env.pve.config) as f:
            good = f.read()
        first = good.split("\n  - ", 1)[1]
        broken = first.replace('region: "homelab"', 'region: "broken"')
        broken = re.sub(r'tokenSecret: "[^"]*"',
                        'tokenSecret: "00000000-0000-0000-0000-000000000000"',
                        broken)
        cls.pve_config = os.path.join(cls.env.workdir, "pve-two.yaml")
        with open(cls.pve_config, "w") as f:
            f.write(good.rstrip("\n") + "\n  - " + broken)
        args = cls.env.carpenter_args("--leader-elect=false")
        args[args.index("--pve-config") + 1] = cls.pve_config
        cls.carp = Carpenter(*args)
        cls.metrics_port = cls.carp.port("metrics")

    @classmethod
    def tearDownClass(cls):
        code, _ = cls.carp.stop(signal.SIGTERM)
        try:
            if code != 0:
                sys.stderr.write("\n".join(cls.carp.lines[-50:]) + "\n")
            assert code == 0, "carpenter exited with %d" % code
        finally:
            cls.env.stop()

    # ---- helpers ----

    def apply(self, text):
        self.env.apply(text)

    def nodeclass(self, name, regions="homelab"):
        self.apply(NODECLASS % {"name": name, "regions": regions})

    def nodepool(self, name, nodeclass, labels, weight=10):
        self.apply(NODEPOOL % {"name": name, "nodeclass": nodeclass,
                               "labels": labels, "weight": weight})

    def wait_condition(self, kind, name, ctype, status, timeout=30):
        def check():
            obj = self.env.get(kind, name)
            c = conditions(obj).get(ctype)
            return c if c and c["status"] == status else None
        return wait_until(check, timeout, what="%s %s %s=%s" %
                          (kind, name, ctype, status))

    def scrape(self):
        status, _, body = http_get("http://127.0.0.1:%d/metrics" %
                                   self.metrics_port, timeout=20)
        self.assertEqual(status, 200)
        return body

    def assert_promtool_clean(self, body):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus)")
        r = subprocess.run([promtool, "check", "metrics"], input=body,
                           capture_output=True, text=True)
        problems = [l for l in (r.stdout + r.stderr).splitlines()
                    if l.strip() and not l.startswith(LINT_ALLOWED)]
        self.assertEqual(problems, [], r.stdout + r.stderr)

    # ---- tests ----

    def test_pool_ready_counts_nodes_and_metrics(self):
        self.nodeclass("np-a")
        self.nodepool("pool-a", "np-a", "team: alpha")
        self.wait_condition("proxmoxnodeclasses", "np-a", "Ready", "True")
        self.wait_condition("nodepools", "pool-a", "Ready", "True")
        out = self.env.kubectl("get", "proxmoxnodeclasses", "np-a")
        self.assertRegex(out, r"(?m)^np-a\s+True\s+\[\"homelab\"\]")
        cls = self.env.get("proxmoxnodeclasses", "np-a")
        st = cls["status"]
        self.assertEqual(st["observedGeneration"], 1)
        self.assertEqual(st["regions"], ["homelab"])
        self.assertEqual(st["zones"], ["pve1", "pve2", "pve3"])
        self.assertRegex(st["specHash"], r"^\d+$")
        self.assertEqual([t["name"] for t in st["instanceTypes"]],
                         ["c1.2VCPU-4GB", "c1.4VCPU-8GB"])
        self.assertEqual(st["instanceTypes"][0]["price"], "0.076")

        # The template hash is stamped on the pool.
        pool = self.env.get("nodepools", "pool-a")
        ann = pool["metadata"].get("annotations", {})
        self.assertRegex(ann.get("karpenter.sh/nodepool-hash", ""), r"^\d+$")
        self.assertEqual(ann.get("karpenter.sh/nodepool-hash-version"),
                         "carpenter-v1")

        # Scale up: three pods of 1 CPU each.
        self.apply(DEPLOYMENT % {"name": "app-a", "replicas": 3,
                                 "selector": "team: alpha"})

        def running():
            pods = self.env.get("pods", namespace="default")
            mine = [p for p in pods
                    if p["metadata"]["labels"].get("app") == "app-a"]
            return len(mine) == 3 and all(
                p.get("status", {}).get("phase") == "Running" and
                p["spec"].get("nodeName") for p in mine) and mine
        pods = wait_until(running, 90, interval=0.5, what="pods running")

        def counted():
            p = self.env.get("nodepools", "pool-a")
            return p if p.get("status", {}).get("nodes", 0) >= 1 else None
        pool = wait_until(counted, 30, what="status.nodes")
        claims = [c for c in self.env.get("nodeclaims")
                  if c["metadata"]["labels"].get("karpenter.sh/nodepool") ==
                  "pool-a" and c.get("status", {}).get("capacity")]

        def settle():
            p = self.env.get("nodepools", "pool-a")
            cs = [c for c in self.env.get("nodeclaims")
                  if c["metadata"]["labels"].get("karpenter.sh/nodepool") ==
                  "pool-a" and c.get("status", {}).get("capacity")]
            return (p, cs) if p["status"]["nodes"] == len(cs) else None
        pool, claims = wait_until(settle, 15, what="counter settled")
        cpu = sum(int(c["status"]["capacity"]["cpu"]) for c in claims)
        self.assertEqual(pool["status"]["resources"]["cpu"], str(cpu))
        self.assertEqual(pool["status"]["resources"]["nodes"],
                         str(len(claims)))
        self.assertIn("memory", pool["status"]["resources"])
        wide = self.env.kubectl("get", "nodepools", "pool-a", "-o", "wide")
        row = wide.splitlines()[1].split()
        # NAME NODECLASS NODES READY AGE WEIGHT CPU MEMORY
        self.assertEqual(row[0:4], ["pool-a", "np-a", str(len(claims)),
                                    "True"])
        self.assertEqual(row[6], str(cpu))
        self.assertRegex(row[7], r"^\d+(Ki|Mi|Gi)?$")

        # Claims carry the same hash annotations; one stamped by another
        # hash version (Karpenter's v3) is re-stamped.
        for c in claims:
            self.assertEqual(c["metadata"]["annotations"].get(
                "karpenter.sh/nodepool-hash-version"), "carpenter-v1")
        victim = claims[0]["metadata"]["name"]
        self.env.kubectl("annotate", "--overwrite", "nodeclaim", victim,
                         "karpenter.sh/nodepool-hash-version=v3",
                         "karpenter.sh/nodepool-hash=12345")

        def restamped():
            a = self.env.get("nodeclaims", victim)["metadata"]["annotations"]
            return a.get("karpenter.sh/nodepool-hash-version") == \
                "carpenter-v1" and a.get("karpenter.sh/nodepool-hash") == \
                ann["karpenter.sh/nodepool-hash"]
        wait_until(restamped, 15, what="nodeclaim hash re-stamped")

        # Metrics.
        node_names = {p["spec"]["nodeName"] for p in pods}
        def metrics_ready():
            body = self.scrape()
            samples = parse_metrics(body)
            starts = [s for s in samples if s[0] ==
                      "karpenter_pods_startup_duration_seconds_count"]
            return (body, samples) if starts and starts[0][2] >= 3 else None
        body, samples = wait_until(metrics_ready, 20, interval=0.5,
                                   what="startup durations observed")
        by = {}
        for name, labels, value in samples:
            by.setdefault(name, []).append((labels, value))

        alloc = [(l, v) for l, v in by["karpenter_nodes_allocatable"]
                 if l["node_name"] in node_names]
        self.assertTrue(alloc)
        for l, v in alloc:
            self.assertEqual(l["nodepool"], "pool-a")
            self.assertEqual(l["region"], "homelab")
            self.assertIn(l["zone"], ("pve1", "pve2", "pve3"))
            self.assertRegex(l["instance_type"], r"^c1\.")
            self.assertEqual(l["capacity_type"], "on-demand")
            self.assertEqual(l["arch"], "amd64")
            self.assertEqual(l["os"], "linux")
            self.assertEqual(l["managed"], "true")
        types = {l["resource_type"] for l, _ in alloc}
        self.assertTrue({"cpu", "memory", "pods",
                         "ephemeral_storage"} <= types, types)
        cpu_alloc = [v for l, v in alloc if l["resource_type"] == "cpu"]
        self.assertTrue(all(0 < v < 8 for v in cpu_alloc), cpu_alloc)
        reqs = {(l["node_name"], l["resource_type"]): v for l, v in
                by["karpenter_nodes_total_pod_requests"]}
        total_cpu = sum(reqs.get((n, "cpu"), 0) for n in node_names)
        self.assertGreaterEqual(total_cpu, 3.0)
        self.assertIn("karpenter_nodes_total_daemon_requests", by)
        over = [v for l, v in by["karpenter_nodes_system_overhead"]
                if l["node_name"] in node_names and
                l["resource_type"] == "memory"]
        self.assertTrue(over and all(v > 0 for v in over), over)
        life = [v for l, v in by["karpenter_nodes_current_lifetime_seconds"]
                if l["node_name"] in node_names]
        self.assertTrue(life and all(v >= 0 for v in life))

        states = [l for l, v in by["karpenter_pods_state"]
                  if l["name"] in {p["metadata"]["name"] for p in pods}]
        self.assertEqual(len(states), 3)
        for l in states:
            self.assertEqual(l["namespace"], "default")
            self.assertEqual(l["nodepool"], "pool-a")
            self.assertEqual(l["phase"], "Running")
            self.assertEqual(l["scheduled"], "true")
            self.assertEqual(l["ready"], "true")
            self.assertEqual(l["managed"], "true")
            self.assertRegex(l["owner"],
                             r"^/apis/apps/v1/namespaces/default/"
                             r"replicasets/app-a-")
        usage = {l["resource_type"]: v for l, v in
                 by["karpenter_nodepools_usage"] if l["nodepool"] == "pool-a"}
        self.assertEqual(usage["cpu"], float(cpu))
        self.assertEqual(usage["nodes"], float(len(claims)))
        limit = {l["resource_type"]: v for l, v in
                 by["karpenter_nodepools_limit"] if l["nodepool"] == "pool-a"}
        self.assertEqual(limit, {"cpu": 64.0, "memory": 256 * 2.0 ** 30})
        self.assertGreaterEqual(by["karpenter_cluster_state_node_count"][0][1],
                                len(claims))
        self.assertEqual(by["karpenter_cluster_state_synced"][0][1], 1.0)
        quantiles = {l["quantile"] for l, _ in
                     by["karpenter_pods_startup_duration_seconds"]}
        self.assertEqual(quantiles, {"0", "0.5", "0.9", "0.99", "1"})
        self.assertGreaterEqual(
            by["karpenter_pods_bound_duration_seconds_count"][0][1], 3)
        self.assertIn("karpenter_cluster_utilization_percent", by)
        self.assertIn("# TYPE karpenter_pods_startup_duration_seconds summary",
                      body)
        self.assert_promtool_clean(body)
        self.env.kubectl("delete", "deployment", "app-a", "-n", "default")

    def test_invalid_pool_is_refused(self):
        self.nodeclass("np-b")
        # A CEL-only rule: the karpenter.sh label domain is restricted.
        self.nodepool("pool-bad", "np-b",
                      "team: bravo\n        karpenter.sh/custom: x",
                      weight=90)
        c = self.wait_condition("nodepools", "pool-bad",
                                "ValidationSucceeded", "False")
        self.assertEqual(c["reason"], "NodePoolValidationFailed")
        self.assertIn("karpenter.sh", c["message"])
        ready = self.wait_condition("nodepools", "pool-bad", "Ready", "False")
        self.assertEqual(ready["reason"], "NodePoolValidationFailed")
        out = self.env.kubectl("get", "nodepools", "pool-bad")
        self.assertRegex(out, r"(?m)^pool-bad\s+np-b\s+0\s+False")
        # A pod only this pool could take stays pending: no NodeClaim.
        self.apply(DEPLOYMENT % {"name": "app-b", "replicas": 1,
                                 "selector": "team: bravo"})
        time.sleep(6)
        claims = [c for c in self.env.get("nodeclaims")
                  if c["metadata"]["labels"].get("karpenter.sh/nodepool") ==
                  "pool-bad"]
        self.assertEqual(claims, [])
        self.env.kubectl("delete", "deployment", "app-b", "-n", "default")

    def test_missing_nodeclass(self):
        self.nodepool("pool-orphan", "does-not-exist", "team: charlie")
        c = self.wait_condition("nodepools", "pool-orphan", "NodeClassReady",
                                "False")
        self.assertEqual(c["reason"], "NodeClassNotFound")
        ready = self.wait_condition("nodepools", "pool-orphan", "Ready",
                                    "False")
        self.assertEqual(ready["reason"], "NodeClassNotFound")
        self.wait_condition("nodepools", "pool-orphan",
                            "ValidationSucceeded", "True")

    def test_region_problems(self):
        self.nodeclass("np-broken", regions="broken")
        self.nodeclass("np-ghost", regions="nowhere")
        c = self.wait_condition("proxmoxnodeclasses", "np-broken",
                                "RegionsReady", "False")
        self.assertEqual(c["reason"], "Unauthorized")
        self.assertIn("broken", c["message"])
        ready = self.wait_condition("proxmoxnodeclasses", "np-broken",
                                    "Ready", "False")
        self.assertEqual(ready["reason"], "Unauthorized")
        c = self.wait_condition("proxmoxnodeclasses", "np-ghost",
                                "RegionsReady", "False")
        self.assertEqual(c["reason"], "RegionNotConfigured")
        self.assertIn("nowhere", c["message"])
        self.assertIn("homelab", c["message"])
        out = self.env.kubectl("get", "proxmoxnodeclasses", "np-ghost",
                               "-o", "wide")
        self.assertIn("RegionNotConfigured", out)
        # A pool of the broken class takes the class's reason.
        self.nodepool("pool-broken", "np-broken", "team: delta")
        c = self.wait_condition("nodepools", "pool-broken", "NodeClassReady",
                                "False")
        self.assertEqual(c["reason"], "Unauthorized")

    def test_pool_of_unready_class_launches_nothing(self):
        # Regions and templates are fine (the provider offers its instance
        # types) but the bootstrap Secret is missing: the class is not
        # Ready, so neither is the pool, and the provisioner leaves it.
        self.apply("""
apiVersion: carpenter.dev/v1alpha1
kind: ProxmoxNodeClass
metadata:
  name: np-nosecret
spec:
  regions: [homelab]
  template:
    name: k3s-agent
  bootstrap:
    mode: UserData
    userDataSecretRef: {name: no-such-secret, namespace: default}
    isoStorage: local
""")
        self.nodepool("pool-unready", "np-nosecret", "team: echo", weight=95)
        c = self.wait_condition("nodepools", "pool-unready", "Ready", "False")
        self.assertEqual(c["reason"], "UserDataSecretNotFound")
        self.wait_condition("nodepools", "pool-unready",
                            "ValidationSucceeded", "True")
        self.apply(DEPLOYMENT % {"name": "app-e", "replicas": 1,
                                 "selector": "team: echo"})
        time.sleep(6)
        claims = [c for c in self.env.get("nodeclaims")
                  if c["metadata"]["labels"].get("karpenter.sh/nodepool") ==
                  "pool-unready"]
        self.assertEqual(claims, [])
        self.env.kubectl("delete", "deployment", "app-e", "-n", "default")

    def test_userdata_secret_missing_then_present(self):
        self.apply("""
apiVersion: carpenter.dev/v1alpha1
kind: ProxmoxNodeClass
metadata:
  name: np-ud
spec:
  regions: [homelab]
  template:
    name: k3s-agent
  bootstrap:
    mode: UserData
    userDataSecretRef:
      name: ud-secret
      namespace: default
    isoStorage: local
""")
        c = self.wait_condition("proxmoxnodeclasses", "np-ud",
                                "BootstrapReady", "False")
        self.assertEqual(c["reason"], "UserDataSecretNotFound")
        self.env.kubectl("create", "secret", "generic", "ud-secret",
                         "-n", "default",
                         "--from-literal=user-data=#cloud-config\n"
                         "hostname: {{ .NodeName }} {{ .Bogus }}\n")
        c = self.wait_condition("proxmoxnodeclasses", "np-ud",
                                "BootstrapReady", "False", timeout=30)
        wait_until(lambda: conditions(self.env.get(
            "proxmoxnodeclasses", "np-ud"))["BootstrapReady"]["reason"] ==
            "UserDataTemplateInvalid", 30, what="UserDataTemplateInvalid")
        self.env.kubectl("delete", "secret", "ud-secret", "-n", "default")
        self.env.kubectl("create", "secret", "generic", "ud-secret",
                         "-n", "default",
                         "--from-literal=user-data=#cloud-config\n"
                         "hostname: {{ .NodeName }}\n")
        self.wait_condition("proxmoxnodeclasses", "np-ud", "Ready", "True",
                            timeout=30)
        st = self.env.get("proxmoxnodeclasses", "np-ud")["status"]
        self.assertRegex(st["specHash"], r"^\d+$")


if __name__ == "__main__":
    unittest.main(verbosity=2)
