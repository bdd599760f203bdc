"""Shared pieces of the end-to-end disruption tests: kube-sim and pve-sim
(test/integration/sims.py) with Carpenter started with short disruption
and garbage-collection timings, NodePools and workloads pinned to a pool,
and readers for kube-sim's request log, Events, pve-sim's VMs and API, and
Carpenter's /metrics."""
import datetime
import json
import os
import re
import signal
import ssl
import sys
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from carptest import Carpenter, SOURCE_DIR, http_get  # noqa: E402
from sims import Env, wait_until  # noqa: E402

NODECLASS = os.path.join(SOURCE_DIR, "crds", "examples",
                         "proxmoxnodeclass.yaml")

# Short timings so each case takes seconds (the defaults are 10 s, 15 s,
# 2 min and 5 min).
FAST_FLAGS = ["--leader-elect=false", "--log-level=debug",
              "--disruption-poll-interval=1s",
              "--disruption-validation-delay=2s",
              "--gc-interval=2s", "--gc-leaked-vm-grace=6s"]


def parse_time(s):
    """RFC 3339 (with or without fraction) to epoch seconds."""
    return datetime.datetime.fromisoformat(
        s.replace("Z", "+00:00")).timestamp()


def nodepool_yaml(name, consolidate_after="Never", budgets=("100%",),
                  tgp=None, expire_after="720h", cpu=2, replicas=None,
                  policy="WhenEmpty", limit_cpu=None, limit_memory=None):
    lines = [
        "apiVersion: karpenter.sh/v1",
        "kind: NodePool",
        "metadata:",
        "  name: %s" % name,
        "spec:",
    ]
    if replicas is not None:
        lines.append("  replicas: %d" % replicas)
    if limit_cpu or limit_memory:
        lines.append("  limits:")
    if limit_cpu:
        lines.append("    cpu: '%d'" % limit_cpu)
    if limit_memory:
        lines.append("    memory: %s" % limit_memory)
    lines += [
        "  template:",
        "    spec:",
        "      nodeClassRef:",
        "        group: carpenter.dev",
        "        kind: ProxmoxNodeClass",
        "        name: default",
        "      requirements:",
        "        - key: carpenter.dev/instance-family",
        "          operator: In",
        "          values: [c1]",
        "        - key: carpenter.dev/instance-cpu",
        "          operator: In",
        "          values: ['%d']" % cpu,
        "      expireAfter: %s" % expire_after,
    ]
    if tgp:
        lines.append("      terminationGracePeriod: %s" % tgp)
    lines += [
        "  disruption:",
        "    consolidationPolicy: %s" % policy,
        "    consolidateAfter: %s" % consolidate_after,
        "    budgets:",
    ]
    lines += ["      - nodes: '%s'" % b for b in budgets]
    return "\n".join(lines) + "\n"


def deployment_yaml(name, pool, replicas=1, namespace="default", cpu="500m",
                    annotations=None, grace=None):
    pod_meta = {"labels": {"app": name}}
    if annotations:
        pod_meta["annotations"] = annotations
    spec = {
        "nodeSelector": {"karpenter.sh/nodepool": pool},
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": cpu,
                                                   "memory": "128Mi"}}}],
    }
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas,
                 "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": pod_meta, "spec": spec}}})


def daemonset_yaml(name, pool, namespace="default"):
    # Tolerates the unregistered taint only, as a node agent would: not
    # karpenter.sh/disrupted, so only its DaemonSet ownership keeps the
    # drain away from it.
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {"karpenter.sh/nodepool": pool},
                    "tolerations": [{"key": "karpenter.sh/unregistered",
                                     "operator": "Exists"}],
                    "containers": [{
                        "name": "agent", "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "50m",
                                                   "memory": "32Mi"}}}]}}}})


def item_list(*docs):
    """Several documents for a single kubectl apply (YAML documents: a
    leading comment keeps kubectl from reading the whole as one JSON)."""
    return "# documents\n" + "\n---\n".join(docs) + "\n"


def kube_request(env, method, path, body=None, ctype="application/json"):
    """A request to kube-sim (over TLS, its CA not checked): (status,
    parsed body)."""
    ks = env.kube
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(ks.url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + ks.token)
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, None


class E2ETest(unittest.TestCase):
    """One simulated cluster and one Carpenter per test class."""

    carpenter_flags = ()
    kube_args = ()
    # Node repair is on by default; every test class checks at its end that
    # it never replaced a node, unless the class is about repair.
    repairs_expected = False

    @classmethod
    def setUpClass(cls):
        cls.env = Env(kube_args=cls.kube_args)
        cls.carpenter = None
        try:
            cls.env.kubectl("apply", "-f", NODECLASS)
            cls.carpenter = Carpenter(*cls.env.carpenter_args(
                *FAST_FLAGS, *cls.carpenter_flags))
            cls.metrics_port = cls.carpenter.port("metrics")
            cls.prepare()
        except BaseException:
            # tearDownClass does not run after a failed setUpClass.
            if cls.carpenter:
                cls.carpenter.stop(signal.SIGKILL)
            cls.env.stop()
            raise

    @classmethod
    def prepare(cls):
        """Objects the whole class needs (NodePools), once Carpenter runs."""

    @classmethod
    def repaired(cls):
        """How many nodes node repair replaced (its counter's sum)."""
        status, _, text = http_get("http://127.0.0.1:%d/metrics" %
                                   cls.metrics_port)
        if status != 200:
            return None
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(
                       "karpenter_nodeclaims_unhealthy_disrupted_total{"))

    @classmethod
    def tearDownClass(cls):
        repaired = cls.repaired() if cls.carpenter.proc.poll() is None \
            else None
        code, _ = cls.carpenter.stop(signal.SIGTERM, 10)
        cls.env.stop()
        # Beside the simulators' logs (scratch: removed when the test ends).
        with open(os.path.join(cls.env.workdir, "carpenter.log"), "w") as f:
            f.write("\n".join(cls.carpenter.lines) + "\n")
        cls.exit_code = code
        if repaired and not cls.repairs_expected:
            raise AssertionError("node repair replaced %d healthy node(s)" %
                                 repaired)
        if code != 0:
            raise AssertionError("carpenter exited with %d; log:\n%s" %
                                 (code, "\n".join(cls.carpenter.lines[-80:])))

    # ---- kubectl and objects ----

    def apply(self, text):
        return self.env.apply(text)

    def kubectl(self, *args, **kw):
        return self.env.kubectl(*args, **kw)

    def get(self, kind, name=None, namespace=None):
        return self.env.get(kind, name, namespace)

    def kube(self, method, path, body=None, ctype="application/json"):
        return kube_request(self.env, method, path, body, ctype)

    def exists(self, kind, name, namespace=None):
        path = {"nodeclaims": "/apis/karpenter.sh/v1/nodeclaims/",
                "nodes": "/api/v1/nodes/"}[kind]
        status, body = self.kube("GET", path + name)
        if status == 404:
            return None
        self.assertEqual(status, 200, body)
        return body

    def claims_of_pool(self, pool):
        return [c for c in self.get("nodeclaims")
                if c["metadata"].get("labels", {}).get(
                    "karpenter.sh/nodepool") == pool]

    def pods(self, app, namespace="default"):
        return [p for p in self.get("pods", namespace=namespace)
                if p["metadata"].get("labels", {}).get("app") == app]

    def running(self, app, n, namespace="default", exclude_nodes=()):
        """The pods of app when exactly n run (not terminating) on nodes
        outside exclude_nodes, else None."""
        ps = [p for p in self.pods(app, namespace)
              if p["status"].get("phase") == "Running" and
              not p["metadata"].get("deletionTimestamp")]
        if len(ps) == n and all(p["spec"].get("nodeName") not in exclude_nodes
                                for p in ps):
            return ps
        return None

    def wait_running(self, app, n, timeout=60, namespace="default",
                     exclude_nodes=()):
        return wait_until(lambda: self.running(app, n, namespace,
                                               exclude_nodes),
                          timeout, what="%d %s pods running" % (n, app))

    def claim_of_node(self, node):
        for c in self.get("nodeclaims"):
            if c.get("status", {}).get("nodeName") == node:
                return c
        return None

    def vmid_of(self, claim):
        return int(claim["status"]["providerID"].rsplit("/", 1)[1])

    def vm_ids(self):
        return {v["vmid"] for v in self.env.pve.vms() if not v.get("template")}

    def wait_gone(self, claim, timeout):
        """Waits until the NodeClaim, its Node and its VM are all gone;
        returns the seconds it took."""
        start = time.monotonic()
        name = claim["metadata"]["name"]
        node = claim["status"]["nodeName"]
        vmid = self.vmid_of(claim)
        wait_until(lambda: not self.exists("nodeclaims", name) and
                   not self.exists("nodes", node) and
                   vmid not in self.vm_ids(), timeout,
                   what="nodeclaim %s, node %s and VM %d gone" %
                   (name, node, vmid))
        return time.monotonic() - start

    # ---- logs, events, metrics ----

    def requests(self):
        out = []
        with open(self.env.kreqlog) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def carpenter_requests(self, **match):
        return [r for r in self.requests()
                if r.get("userAgent", "").startswith("carpenter/") and
                all(r.get(k) == v for k, v in match.items())]

    def evictions(self, names=None):
        return [r for r in self.carpenter_requests(subresource="eviction")
                if names is None or r["name"] in names]

    def pod_deletes(self):
        return [r for r in self.carpenter_requests(method="DELETE",
                                                   resource="pods")]

    def events(self, kind=None, name=None, reason=None):
        status, body = self.kube("GET", "/api/v1/events")
        self.assertEqual(status, 200, body)
        out = []
        for e in body["items"]:
            io = e.get("involvedObject", {})
            if kind and io.get("kind") != kind:
                continue
            if name and io.get("name") != name:
                continue
            if reason and e.get("reason") != reason:
                continue
            out.append(e)
        return out

    def metric(self, name, **labels):
        """The sum of the series of name whose labels include labels."""
        status, _, text = http_get("http://127.0.0.1:%d/metrics" %
                                   self.metrics_port)
        self.assertEqual(status, 200)
        total = None
        for line in text.splitlines():
            if not line.startswith(name):
                continue
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$',
                         line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"',
                                  m.group(3) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total = (total or 0.0) + float(m.group(4))
        return total

    def log_records(self, message):
        return [r for r in self.carpenter.records()
                if r.get("message") == message]

    # ---- Proxmox ----

    def pve_api(self, method, path, params=None):
        """A call to pve-sim's /api2/json with the main token."""
        info = self.env.pve.control("GET", "tokens")
        tok = info["tokens"][0]
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        data = None
        url = self.env.pve.url + path
        if params and method in ("POST", "PUT"):
            data = urllib.parse.urlencode(params).encode()
        elif params:
            url += "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", "PVEAPIToken=%s=%s" %
                       (tok["tokenID"], tok["tokenSecret"]))
        if data is not None:
            req.add_header("Content-Type",
                           "application/x-www-form-urlencoded")
        with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
            return json.loads(r.read() or b"{}").get("data")

    def pve_wait_task(self, node, upid, timeout=30):
        quoted = urllib.parse.quote(upid, safe="")

        def done():
            st = self.pve_api("GET", "/nodes/%s/tasks/%s/status" %
                              (node, quoted))
            return st if st.get("status") == "stopped" else None
        st = wait_until(done, timeout, what="task %s" % upid)
        self.assertEqual(st.get("exitstatus"), "OK", st)
