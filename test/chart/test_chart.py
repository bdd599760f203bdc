"""charts/carpenter rendered as `helm template` would (hack/chart-render.sh:
Go's text/template with the sprig functions, built from Debian's packages),
with the default values and with the files in test/chart/values/:

- what a Karpenter user expects of the Deployment (replicas, leader
  election, never on Carpenter's own nodes, spread, priority class, probes,
  security context), the PDB, the Service and the optional ServiceMonitor;
- every environment variable the chart sets is a flag of `carpenter --help`
  and every flag is reachable, with the binary's own defaults;
- the Proxmox token never appears in clear in the rendered manifests;
- values mistakes fail the render with a clear message;
- crds/ is the repository's crds/, byte for byte; values.yaml is documented
  in the chart's README; the event reasons and log messages the operator
  docs quote are strings of the C sources;
- the optional PrometheusRule passes `promtool check rules` and the unit
  tests of testdata/alerts_test.yaml (`promtool test rules`); the optional
  Grafana dashboard ConfigMap carries the dashboards/ file and its queries
  parse;
- every rendering is accepted by `kubectl apply --dry-run=server` against
  kube-sim (the CRDs installed first, as `helm install` does)."""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import chartlib  # noqa: E402
from chartlib import find, one  # noqa: E402

VALUE_SETS = ("default", "full.yaml", "single.yaml", "rbac.yaml")
TOKEN = "5f3c1a9e-7b2d-4c8e-9a61-0d4b7e2f9c13"  # in values/full.yaml
SELECTOR = {"app.kubernetes.io/name": "carpenter",
            "app.kubernetes.io/instance": "carpenter"}
CARPENTER = os.path.join(chartlib.BUILD_DIR, "carpenter")


def container(docs):
    dep = one(docs, "Deployment")
    return dep, dep["spec"]["template"]["spec"]["containers"][0]


def env_of(c):
    return {e["name"]: e.get("value", e.get("valueFrom"))
            for e in c.get("env", [])}


def flags_help():
    """{ENV: default or None} from `carpenter --help`."""
    out = subprocess.run([CARPENTER, "--help"], capture_output=True,
                         text=True, timeout=30).stdout
    envs, last = {}, None
    for line in out.splitlines():
        m = re.search(r"\(env (\w+)\)", line)
        if m:
            last = m.group(1)
            envs[last] = None
            continue
        m = re.match(r"^\s+Default: (.*)$", line)
        if m and last:
            envs[last] = m.group(1)
    return envs


# Kubernetes structures the README documents as a whole.
OPAQUE = {"strategy", "podSecurityContext", "securityContext", "nodeSelector",
          "affinity", "controller.resources", "controller.livenessProbe",
          "controller.readinessProbe", "grafanaDashboard.labels"}


# CamelCase words the docs quote that are not Carpenter's to emit.
NOT_CARPENTERS = {"CriticalAddonsOnly"}  # a taint key (the chart tolerates)


def c_literals():
    """Every string literal of Carpenter's C sources, adjacent literals
    joined ("a" "b" is "ab")."""
    out = set()
    root = chartlib.SOURCE_DIR
    for sub, exts in (("internal", (".c", ".h")), ("controller", (".c",)),
                      ("include", (".h",))):
        for dirpath, _, files in os.walk(os.path.join(root, sub)):
            for name in files:
                if not name.endswith(exts):
                    continue
                with open(os.path.join(dirpath, name)) as f:
                    text = f.read()
                for m in re.finditer(r'(?:"(?:[^"\\\n]|\\.)*"\s*)+', text):
                    out.add("".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"',
                                               m.group(0))))
    return out


def leaves(d, prefix=""):
    """Dotted key paths of values.yaml; lists, maps that are empty by
    default and the OPAQUE structures are leaves."""
    out = []
    for k, v in d.items():
        path = prefix + k
        if isinstance(v, dict) and v and path not in OPAQUE:
            out += leaves(v, path + ".")
        else:
            out.append(path)
    return out


class RenderTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.text = {}
        cls.docs = {}
        for v in VALUE_SETS:
            files = [] if v == "default" else [v]
            cls.text[v] = chartlib.render_text(files)
            cls.docs[v] = chartlib.load_docs(cls.text[v])

    def test_default_objects(self):
        kinds = sorted((d["kind"], d["metadata"]["name"])
                       for d in self.docs["default"])
        self.assertEqual(kinds, [
            ("ClusterRole", "carpenter"), ("ClusterRoleBinding", "carpenter"),
            ("Deployment", "carpenter"), ("PodDisruptionBudget", "carpenter"),
            ("Role", "carpenter-lease"), ("RoleBinding", "carpenter-lease"),
            ("Secret", "carpenter-pve"), ("Service", "carpenter"),
            ("ServiceAccount", "carpenter")])
        for d in self.docs["default"]:
            if d["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
                self.assertEqual(d["metadata"]["namespace"], "kube-system", d)
            for k, v in SELECTOR.items():
                self.assertEqual(d["metadata"]["labels"][k], v)
        # Template mode needs no Secret at all.
        for r in find(self.docs["default"], "Role") + \
                find(self.docs["default"], "ClusterRole"):
            for rule in r["rules"]:
                self.assertNotIn("secrets", rule["resources"])

    def test_deployment(self):
        dep, c = container(self.docs["default"])
        spec = dep["spec"]
        pod = spec["template"]["spec"]
        self.assertEqual(spec["replicas"], 2)
        self.assertEqual(spec["selector"]["matchLabels"], SELECTOR)
        self.assertEqual(pod["serviceAccountName"], "carpenter")
        self.assertEqual(pod["priorityClassName"], "system-cluster-critical")
        self.assertEqual(c["image"], "carpenter:0.1.0")
        # Never on a node of a NodePool.
        terms = pod["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        for t in terms:
            self.assertIn({"key": "karpenter.sh/nodepool",
                           "operator": "DoesNotExist"}, t["matchExpressions"])
        # Spread: one replica per node, and across Proxmox hosts.
        anti = pod["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(anti, [{"topologyKey": "kubernetes.io/hostname",
                                 "labelSelector": {"matchLabels": SELECTOR}}])
        self.assertEqual(pod["topologySpreadConstraints"], [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": SELECTOR}}])
        self.assertEqual(pod["tolerations"], [{"key": "CriticalAddonsOnly",
                                               "operator": "Exists"}])
        self.assertEqual(pod["nodeSelector"], {"kubernetes.io/os": "linux"})
        # Probes on the health port, metrics on its own.
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"http-metrics": 8080, "http": 8081})
        self.assertEqual(c["livenessProbe"]["httpGet"],
                         {"path": "/healthz", "port": "http"})
        self.assertEqual(c["readinessProbe"]["httpGet"],
                         {"path": "/readyz", "port": "http"})
        # Locked down.
        psc, sc = pod["securityContext"], c["securityContext"]
        self.assertTrue(psc["runAsNonRoot"])
        self.assertEqual(psc["runAsUser"], 65532)
        self.assertEqual(psc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertTrue(c["resources"]["requests"])
        # The --pve-config from the Secret, and the lease in the pod's
        # namespace.
        env = env_of(c)
        self.assertEqual(env["POD_NAMESPACE"],
                         {"fieldRef": {"fieldPath": "metadata.namespace"}})
        self.assertEqual(env["LEADER_ELECT"], "true")
        self.assertEqual(env["PVE_CONFIG"], "/etc/carpenter/pve/pve.yaml")
        mount = [m for m in c["volumeMounts"] if m["name"] == "pve-config"][0]
        self.assertEqual(mount, {"name": "pve-config", "readOnly": True,
                                 "mountPath": "/etc/carpenter/pve"})
        vol = [v for v in pod["volumes"] if v["name"] == "pve-config"][0]
        secret = one(self.docs["default"], "Secret")
        self.assertEqual(vol["secret"]["secretName"],
                         secret["metadata"]["name"])
        self.assertIn("pve.yaml", secret["data"])
        self.assertRegex(dep["spec"]["template"]["metadata"]["annotations"][
            "checksum/pve-config"], "^[0-9a-f]{64}$")

    def test_pdb_and_service(self):
        docs = self.docs["default"]
        pdb = one(docs, "PodDisruptionBudget")
        self.assertEqual(pdb["spec"], {"maxUnavailable": 1, "selector": {
            "matchLabels": SELECTOR}})
        svc = one(docs, "Service")
        self.assertEqual(svc["spec"]["ports"], [{
            "name": "http-metrics", "port": 8080,
            "targetPort": "http-metrics", "protocol": "TCP"}])
        self.assertEqual(svc["spec"]["selector"], SELECTOR)
        self.assertEqual(find(docs, "ServiceMonitor"), [])

    def test_env_is_carpenters_flags(self):
        flags = flags_help()
        self.assertIn("PVE_CONFIG", flags)
        seen = set()
        for v in VALUE_SETS:
            env = env_of(container(self.docs[v])[1])
            seen |= set(env)
            unknown = set(env) - set(flags) - {"POD_NAMESPACE", "TZ"}
            self.assertEqual(unknown, set(), "%s: not carpenter flags" % v)
        # Every flag can be set from values, but the kubeconfig (in-cluster).
        self.assertEqual(set(flags) - seen, {"KUBECONFIG", "KUBE_CONTEXT"})
        # With the binary's defaults, but the listen addresses: the binary
        # keeps its ports on loopback, a pod opens them to the kubelet's
        # probes and to Prometheus.
        pod_defaults = {"METRICS_BIND_ADDRESS": "0.0.0.0",
                        "HEALTH_PROBE_BIND_ADDRESS": "0.0.0.0"}
        env = env_of(container(self.docs["default"])[1])
        for name, value in env.items():
            if name in pod_defaults:
                self.assertEqual(flags[name], "127.0.0.1", name)
                self.assertEqual(value, pod_defaults[name], name)
            elif name in flags and flags[name] is not None:
                self.assertEqual(value, flags[name], name)

    def test_token_never_in_clear(self):
        text = self.text["full.yaml"]
        self.assertNotIn(TOKEN, text)
        docs = self.docs["full.yaml"]
        secret = one(docs, "Secret")
        config = base64.b64decode(secret["data"]["pve.yaml"]).decode()
        self.assertIn(TOKEN, config)
        clusters = chartlib.yamlmini.load_all(config)[0]["clusters"]
        self.assertEqual(clusters[0], {
            "region": "homelab", "url": "https://pve1.example.org:8006",
            "tokenID": "carpenter@pve!controller", "tokenSecret": TOKEN,
            "caFile": "/etc/carpenter/pve/ca-homelab.pem"})
        self.assertEqual(clusters[1]["tokenSecretFile"],
                         "/etc/carpenter/token/lab2")
        self.assertNotIn("tokenSecret", clusters[1])
        known = {"region", "url", "tokenID", "tokenSecret", "tokenSecretFile",
                 "caFile", "fingerprint", "insecure"}
        for c in clusters:
            self.assertLessEqual(set(c), known)
        pem = base64.b64decode(secret["data"]["ca-homelab.pem"]).decode()
        self.assertTrue(pem.startswith("-----BEGIN CERTIFICATE-----"))
        # Only the Secret carries it, encoded.
        b64 = secret["data"]["pve.yaml"]
        self.assertEqual(text.count(b64), 1)

    def test_full_values(self):
        docs = self.docs["full.yaml"]
        dep, c = container(docs)
        pod = dep["spec"]["template"]["spec"]
        self.assertEqual(dep["spec"]["replicas"], 3)
        self.assertEqual(c["image"], "registry.example.org/carpenter@sha256:"
                         "0123456789abcdef0123456789abcdef0123456789abcdef"
                         "0123456789abcdef")
        self.assertEqual(pod["imagePullSecrets"],
                         [{"name": "registry-credentials"}])
        env = env_of(c)
        self.assertEqual(env["CLUSTER_NAME"], "homelab-k3s")
        self.assertEqual(env["LEADER_ELECTION_NAME"], "carpenter-lock")
        self.assertEqual(env["LEADER_ELECTION_NAMESPACE"], "carpenter-leases")
        self.assertEqual(env["LOG_FORMAT"], "text")
        self.assertEqual(env["GC_LEAKED_VM_GRACE"], "10m")
        self.assertEqual(env["TZ"], "UTC")
        self.assertEqual(c["envFrom"], [{"configMapRef":
                                         {"name": "carpenter-extra"}}])
        self.assertIn({"name": "pve-token", "mountPath":
                       "/etc/carpenter/token", "readOnly": True},
                      c["volumeMounts"])
        self.assertEqual(pod["volumes"][1]["name"], "pve-token")
        self.assertEqual(dep["spec"]["template"]["metadata"]["labels"]["tier"],
                         "control")
        for d in docs:
            self.assertEqual(d["metadata"]["labels"]["team"], "platform", d)
            self.assertEqual(d["metadata"]["annotations"][
                "example.org/owner"], "platform", d)
        self.assertEqual(one(docs, "ServiceAccount")["metadata"][
            "annotations"]["example.org/role"], "autoscaler")
        # The lease Role where the lease is, on its name only.
        lease = one(docs, "Role", "carpenter-full-lease")
        self.assertEqual(lease["metadata"]["namespace"], "carpenter-leases")
        self.assertEqual(lease["rules"][1]["resourceNames"],
                         ["carpenter-lock"])
        # user-data Secrets: one Role per namespace, on the names given.
        ud = find(docs, "Role", "carpenter-full-userdata")
        self.assertEqual(sorted(r["metadata"]["namespace"] for r in ud),
                         ["carpenter-bootstrap", "kube-system"])
        for r in ud:
            self.assertEqual(r["rules"], [{
                "apiGroups": [""], "resources": ["secrets"],
                "resourceNames": ["carpenter-userdata"], "verbs": ["get"]}])
        self.assertEqual(len(find(docs, "RoleBinding",
                                  "carpenter-full-userdata")), 2)
        sm = one(docs, "ServiceMonitor")
        self.assertEqual(sm["metadata"]["labels"]["release"], "prometheus")
        self.assertEqual(sm["spec"]["selector"]["matchLabels"], SELECTOR)
        ep = sm["spec"]["endpoints"][0]
        self.assertEqual((ep["port"], ep["path"], ep["interval"]),
                         ("http-metrics", "/metrics", "30s"))
        self.assertEqual(ep["metricRelabelings"][0]["action"], "drop")

    def promtool(self, *args):
        r = subprocess.run(["promtool", *args], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, "promtool %s:\n%s%s" % (
            " ".join(args), r.stdout, r.stderr))
        return r.stdout

    def test_alerts(self):
        """The rules with the default values: promtool's checks and the
        unit tests of testdata/alerts_test.yaml."""
        docs = chartlib.render(sets=["prometheusRule.enabled=true"])
        rule = one(docs, "PrometheusRule")
        self.assertEqual(rule["metadata"]["namespace"], "kube-system")
        names = [r["alert"] for r in rule["spec"]["groups"][0]["rules"]]
        self.assertEqual(names, [
            "CarpenterPodsUnschedulable", "CarpenterNodeClaimsNotRegistering",
            "CarpenterProxmoxAPIErrors", "CarpenterProxmoxRegionDown",
            "CarpenterProxmoxHostFull", "CarpenterInsufficientCapacity",
            "CarpenterLeaderFlapping", "CarpenterNoLeader",
            "CarpenterClusterStateUnsynced"])
        with tempfile.TemporaryDirectory(prefix="carp-alerts-") as d:
            with open(os.path.join(d, "carpenter-rules.yaml"), "w") as f:
                json.dump({"groups": rule["spec"]["groups"]}, f)
            shutil.copy(os.path.join(HERE, "testdata", "alerts_test.yaml"), d)
            out = self.promtool("check", "rules",
                                os.path.join(d, "carpenter-rules.yaml"))
            self.assertIn("SUCCESS: 9 rules found", out)
            self.promtool("test", "rules", os.path.join(d, "alerts_test.yaml"))

    def test_alerts_and_dashboard_values(self):
        docs = self.docs["full.yaml"]
        rule = one(docs, "PrometheusRule")
        self.assertEqual(rule["metadata"]["labels"]["release"], "prometheus")
        rules = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
        self.assertNotIn("CarpenterLeaderFlapping", rules)
        self.assertEqual(len(rules), 8)
        for r in rules.values():
            self.assertEqual(r["labels"]["team"], "platform", r["alert"])
            self.assertIn(r["labels"]["severity"], ("warning", "critical"))
        self.assertTrue(rules["CarpenterProxmoxHostFull"]["expr"].endswith(
            "> 0.8"), rules["CarpenterProxmoxHostFull"]["expr"])
        cm = one(docs, "ConfigMap", "carpenter-full-dashboard")
        self.assertEqual(cm["metadata"]["namespace"], "monitoring")
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
        self.assertEqual(cm["metadata"]["annotations"]["grafana_folder"],
                         "Carpenter")
        with open(os.path.join(chartlib.CHART, "dashboards",
                               "carpenter-proxmox.json")) as f:
            self.assertEqual(json.loads(cm["data"]["carpenter-proxmox.json"]),
                             json.load(f))
        # Off by default (test_default_objects lists what is rendered).
        self.assertEqual(find(self.docs["default"], "PrometheusRule"), [])

    def test_dashboard_queries_parse(self):
        """Every query of the chart's dashboard is valid PromQL once
        Grafana's variables are put in (promtool parses them as recording
        rules)."""
        with open(os.path.join(chartlib.CHART, "dashboards",
                               "carpenter-proxmox.json")) as f:
            dash = json.load(f)
        exprs = []

        def walk(panels):
            for p in panels:
                exprs.extend(t["expr"] for t in p.get("targets", []))
                walk(p.get("panels", []))
        walk(dash["panels"])
        self.assertGreater(len(exprs), 15)
        subst = [(r"$__rate_interval", "5m"), ("$region", ".*"),
                 ("$zone", ".*")]
        rules = []
        for i, e in enumerate(exprs):
            for a, b in subst:
                e = e.replace(a, b)
            self.assertNotIn("$", e)
            rules.append({"record": "dashboard:query%d" % i, "expr": e})
        with tempfile.TemporaryDirectory(prefix="carp-dash-") as d:
            path = os.path.join(d, "queries.yaml")
            with open(path, "w") as f:
                json.dump({"groups": [{"name": "dashboard",
                                       "rules": rules}]}, f)
            self.promtool("check", "rules", path)

    def test_single_replica_existing_secret(self):
        docs = self.docs["single.yaml"]
        dep, c = container(docs)
        pod = dep["spec"]["template"]["spec"]
        self.assertEqual(dep["spec"]["replicas"], 1)
        env = env_of(c)
        self.assertEqual(env["LEADER_ELECT"], "false")
        self.assertNotIn("LEADER_ELECTION_NAME", env)
        self.assertEqual(env["PVE_CONFIG"], "/etc/pve-config/config.yaml")
        self.assertEqual(find(docs, "Secret"), [])
        self.assertEqual(find(docs, "Role"), [])
        vol = [v for v in pod["volumes"] if v["name"] == "pve-config"][0]
        self.assertEqual(vol["secret"]["secretName"], "my-pve-config")
        self.assertNotIn("priorityClassName", pod)
        self.assertNotIn("topologySpreadConstraints", pod)
        self.assertNotIn("annotations", dep["spec"]["template"]["metadata"])
        anti = pod["affinity"]["podAntiAffinity"]
        self.assertEqual(list(anti),
                         ["preferredDuringSchedulingIgnoredDuringExecution"])
        pref = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(pref[0]["podAffinityTerm"]["labelSelector"],
                         {"matchLabels": SELECTOR})

    def test_mistakes_fail_the_render(self):
        cases = [
            (["settings.leaderElection.enabled=false"],
             "settings.leaderElection.enabled=false needs replicas: 1"),
            (["serviceAccount.create=false"],
             "serviceAccount.name is required"),
        ]
        for sets, msg in cases:
            with self.assertRaises(chartlib.RenderError) as cm:
                chartlib.render_text(sets=sets)
            self.assertIn(msg, str(cm.exception))
        with tempfile.TemporaryDirectory() as d:
            bad = [
                ("clusters:\n  - region: a\n    url: https://x:8006\n"
                 "    tokenID: u@pve!t\n",
                 "proxmox.clusters[0]: tokenSecret or tokenSecretFile is "
                 "required"),
                ("clusters:\n  - region: a\n    url: https://x:8006\n"
                 "    tokenID: u@pve!t\n    tokenSecret: s\n"
                 "    insecure: true\n    fingerprint: AA\n",
                 "set at most one of caCert, caFile, fingerprint and "
                 "insecure"),
                ("clusters:\n  - url: https://x:8006\n",
                 "proxmox.clusters[0].region is required"),
            ]
            for i, (proxmox, msg) in enumerate(bad):
                path = os.path.join(d, "bad%d.yaml" % i)
                with open(path, "w") as f:
                    f.write("proxmox:\n" + "".join(
                        "  " + line + "\n" for line in
                        proxmox.rstrip("\n").split("\n")))
                with self.assertRaises(chartlib.RenderError) as cm:
                    chartlib.render_text([path])
                self.assertIn(msg, str(cm.exception))

    def test_notes(self):
        """NOTES.txt (which helm prints after an install; the renderer
        skips .txt files, so it is rendered here under another name)."""
        import shutil
        with tempfile.TemporaryDirectory() as d:
            chart = os.path.join(d, "carpenter")
            shutil.copytree(chartlib.CHART, chart)
            os.rename(os.path.join(chart, "templates", "NOTES.txt"),
                      os.path.join(chart, "templates", "notes.yaml"))
            binary = os.path.join(chartlib.BUILD_DIR, "helm-render")

            def notes(*args):
                out = subprocess.run(
                    [binary, "--name", "carpenter", "--namespace",
                     "kube-system", *args, chart], capture_output=True,
                    text=True, timeout=60, check=True).stdout
                return out.split("# Source: carpenter/templates/notes.yaml",
                                 1)[1].split("\n---", 1)[0]
            text = notes()
            self.assertIn("leader Lease kube-system/carpenter-leader-election",
                          text)
            self.assertIn("WARNING: no Proxmox VE cluster is configured", text)
            self.assertIn("kubectl -n kube-system rollout status "
                          "deployment/carpenter", text)
            text = notes("-f", os.path.join(chartlib.VALUES_DIR, "full.yaml"))
            self.assertNotIn("WARNING", text)
            self.assertNotIn(TOKEN, text)
            self.assertIn("http://carpenter-full.kube-system.svc:8080/metrics",
                          text)

    def test_crds_are_the_repositorys(self):
        repo = os.path.join(chartlib.SOURCE_DIR, "crds")
        chart = os.path.join(chartlib.CHART, "crds")
        want = sorted(f for f in os.listdir(repo) if f.endswith(".yaml"))
        self.assertEqual(sorted(os.listdir(chart)), want,
                         "charts/carpenter/crds/ must hold crds/*.yaml: "
                         "cp crds/*.yaml charts/carpenter/crds/")
        for f in want:
            with open(os.path.join(repo, f), "rb") as a, \
                    open(os.path.join(chart, f), "rb") as b:
                self.assertEqual(a.read(), b.read(),
                                 "charts/carpenter/crds/%s differs from "
                                 "crds/%s: cp crds/*.yaml "
                                 "charts/carpenter/crds/" % (f, f))

    def test_values_documented(self):
        with open(os.path.join(chartlib.CHART, "values.yaml")) as f:
            values = chartlib.yamlmini.load_all(f.read())[0]
        with open(os.path.join(chartlib.CHART, "README.md")) as f:
            readme = f.read()
        table = readme.split("\n## Values\n", 1)[1].split("\n## ", 1)[0]
        documented = set(re.findall(r"^\| `([^`]+)` \|", table, re.M))
        missing = [k for k in leaves(values) if k not in documented]
        self.assertEqual(missing, [], "values missing from the README's table")
        stale = [k for k in documented if k not in leaves(values)]
        self.assertEqual(stale, [], "README documents values that are gone")

    def test_docs_quote_the_sources(self):
        """Event reasons, condition reasons and log messages that the
        operator docs quote in backticks are strings of the C sources."""
        lits = c_literals()
        blob = "\n".join(lits)
        formats = [re.compile(re.sub(r"%[-0-9.]*(?:l|ll|z|j)?[sduxfc]",
                                     ".+?", re.escape(x).replace(r"\%", "%")))
                   for x in lits if "%" in x]
        commands = ("kubectl ", "journalctl ", "cloud-init ", "qm ", "helm ",
                    "cat ", "insecure: ")
        for doc in ("troubleshooting.md", "operations.md", "install.md"):
            with open(os.path.join(chartlib.SOURCE_DIR, "docs", doc)) as f:
                text = f.read()
            bad = []
            for span in sorted(set(re.findall(r"`([^`\n]+)`", text))):
                if span in NOT_CARPENTERS:
                    continue
                if re.match(r"^[A-Z][a-z]+(?:[A-Z][a-z]*)+$", span):
                    ok = span in lits  # a reason: a literal of its own
                elif re.match(r"^[a-z][a-z0-9 ,;:'()/.!-]*$", span) and \
                        " " in span and not span.startswith(commands):
                    ok = span in blob or any(r.search(span) for r in formats)
                else:
                    continue
                if not ok:
                    bad.append(span)
            self.assertEqual(bad, [], "docs/%s quotes strings Carpenter "
                             "does not emit" % doc)

    def test_dry_run_on_kube_sim(self):
        from sims import KubeSim
        with tempfile.TemporaryDirectory(prefix="carp-chart-") as work:
            ks = KubeSim("--tls", "--crds", os.path.join(
                HERE, "testdata", "servicemonitor-crd.yaml"), "--crds",
                os.path.join(HERE, "testdata", "prometheusrule-crd.yaml"),
                workdir=work)
            try:
                def kubectl(*args, stdin=None):
                    r = subprocess.run(["kubectl", "--kubeconfig",
                                        ks.kubeconfig, *args], input=stdin,
                                       capture_output=True, text=True,
                                       timeout=120)
                    self.assertEqual(r.returncode, 0, "kubectl %s: %s" %
                                     (" ".join(args), r.stderr))
                    return r.stdout
                # As helm install: the chart's crds/ first, for real.
                crds = chartlib.render_text(include_crds=True)
                crd_docs = [d for d in chartlib.load_docs(crds)
                            if d["kind"] == "CustomResourceDefinition"]
                self.assertEqual(len(crd_docs), 5)
                kubectl("apply", "-f", os.path.join(chartlib.CHART, "crds"))
                kubectl("wait", "--for=condition=Established", "--timeout=30s",
                        "crd/nodepools.karpenter.sh",
                        "crd/nodeclaims.karpenter.sh",
                        "crd/proxmoxnodeclasses.carpenter.dev",
                        "crd/capacitybuffers.autoscaling.x-k8s.io",
                        "crd/nodeoverlays.karpenter.sh")
                for ns in ("carpenter-leases", "carpenter-bootstrap",
                           "monitoring"):
                    kubectl("create", "namespace", ns)
                for v in VALUE_SETS:
                    out = kubectl("apply", "--dry-run=server", "-f", "-",
                                  stdin=self.text[v])
                    lines = [line for line in out.splitlines() if line]
                    self.assertEqual(len(lines), len(self.docs[v]), out)
                    for line in lines:
                        self.assertTrue(line.endswith("(server dry run)"),
                                        line)
                # Dry runs leave nothing behind.
                got = kubectl("get", "deployments,services,secrets,roles",
                              "-n", "kube-system", "-o", "name")
                self.assertEqual(got.strip(), "")
            finally:
                ks.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
