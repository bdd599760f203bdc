"""The chart's RBAC is exactly what Carpenter uses.

kube-sim runs with --rbac: Carpenter authenticates as a user bound only by
the chart's rendered ClusterRole and Roles (values/rbac.yaml), so a missing
permission is a 403 that breaks the scenario. pve-sim's token holds only the
Proxmox privileges that docs/getting-started.md tells users to grant.

The scenario, with leader election on (the Lease in kube-system, found
through POD_NAMESPACE as the chart sets it):
1. scale-up on a Template-mode NodePool and on a UserData-mode NodePool
   (the user-data Secret is read), with a DaemonSet and a PDB; two
   CapacityBuffers of 0 chunks (a PodTemplate and a Deployment read, their
   status written);
2. `kubectl delete nodeclaim`: taint, evictions through the Eviction API, a
   do-not-disrupt pod deleted at the terminationGracePeriod, VM, Node and
   NodeClaim gone (meanwhile a pod that fits no NodePool keeps getting the
   same FailedScheduling event, folded into patches);
3. an empty node removed by the disruption controller;
4. garbage collection: a leaked VM, and a NodeClaim whose VM was deleted;
5. (the PromQL of docs/operations.md checked against this Carpenter's
   /metrics and promtool);
6. shutdown (the Lease released).

Then every request Carpenter made (kube-sim's request log, user agent
carpenter/...) is compared with the rendered rules: every request must be
granted, with no 403 anywhere, and every granted (group, resource, verb,
scope, name) must have been used, or be listed in ALLOWED_UNUSED with a
reason. The rules themselves, not only their bindings, are what is
enforced: kube-sim's --user takes no ':' in a user name, so the test binds
the chart's roles to a user "carpenter" beside the chart's own bindings
(whose ServiceAccount subjects are checked statically)."""
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import chartlib  # noqa: E402
import e2elib  # noqa: E402
from e2elib import (E2ETest, daemonset_yaml, deployment_yaml,  # noqa: E402
                    item_list, nodepool_yaml, wait_until)
from carptest import Carpenter, http_get  # noqa: E402
from sims import CAPACITYBUFFER_CRD, Env  # noqa: E402

NAMESPACE = "kube-system"
USER = "carpenter"
SOURCE_DIR = chartlib.SOURCE_DIR

# Granted but not exercised by the scenario; each needs a reason.
ALLOWED_UNUSED = {
    ("apps", "statefulsets", "get"):
        "a CapacityBuffer's scalableRef may name a StatefulSet; the scenario's "
        "buffer names a Deployment (the same code path)",
    ("apps", "replicasets", "get"):
        "a CapacityBuffer's scalableRef may name a ReplicaSet; the scenario's "
        "buffer names a Deployment (the same code path)",
}

# Requests outside any resource: discovery, which every authenticated user
# may make (the system:discovery ClusterRole of every cluster).
DISCOVERY = re.compile(r"^/(api|apis)(/|$)|^/version$")


METRIC_NAME = re.compile(r"\b((?:karpenter|carpenter|leader_election|"
                         r"workqueue|rest_client)_[a-z0-9_]+)")


def doc_queries():
    """The PromQL expressions of docs/operations.md (```promql blocks, one
    per line, and the expr: of its rule file examples) and those rule
    files."""
    with open(os.path.join(SOURCE_DIR, "docs", "operations.md")) as f:
        text = f.read()
    exprs, rules = [], []
    for block in re.findall(r"```promql\n(.*?)```", text, re.S):
        exprs += [line.strip() for line in block.splitlines()
                  if line.strip()]
    for block in re.findall(r"```yaml\n(groups:.*?)```", text, re.S):
        rules.append(block)
        exprs += [e.strip() for e in re.findall(r"expr: (.*)", block)]
    return exprs, rules


def pve_privileges():
    """The privileges of the roles in docs/getting-started.md's
    `pveum role add NAME --privs "..."` lines."""
    out = set()
    with open(os.path.join(SOURCE_DIR, "docs", "getting-started.md")) as f:
        text = f.read()
        for m in re.finditer(r'pveum role add \S+ --privs "([^"]+)"', text):
            out.update(m.group(1).split())
    return sorted(out)


def userdata_class():
    """The example NodeClass in bootstrap mode UserData, on pve-sim's
    per-host templates, named ud."""
    with open(e2elib.NODECLASS) as f:
        text = f.read()
    text = text.replace("  name: default\n", "  name: ud\n", 1)
    text = text.replace(
        "  bootstrap:\n    mode: Template\n",
        "  bootstrap:\n    mode: UserData\n    userDataSecretRef:\n"
        "      name: carpenter-userdata\n      namespace: kube-system\n"
        "      key: user-data\n    isoStorage: local\n")
    # Users and keys come from the user-data in this mode.
    text = re.sub(r"\n    user: .*", "", text)
    text = re.sub(r"\n    sshKeys:\n(      - .*\n)+", "\n", text)
    assert "mode: UserData" in text and "sshKeys" not in text
    return text


def pool_of_class(name, cls, cpu_limit=None, **kw):
    text = nodepool_yaml(name, **kw)
    text = text.replace("        name: default\n", "        name: %s\n" % cls)
    if cpu_limit:
        text += "  limits:\n    cpu: '%s'\n" % cpu_limit
    return text


def kubeconfig_for(admin_kubeconfig, token, path):
    with open(admin_kubeconfig) as f:
        text = f.read()
    text, n = re.subn(r"(token:\s*)\S+", lambda m: m.group(1) + token, text)
    assert n == 1, "no token line in kube-sim's kubeconfig"
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def user_binding(binding):
    """A copy of a rendered (Cluster)RoleBinding for the test user."""
    b = json.loads(json.dumps(binding))
    md = b["metadata"]
    b["metadata"] = {"name": md["name"] + "-test-user"}
    if md.get("namespace"):
        b["metadata"]["namespace"] = md["namespace"]
    b["subjects"] = [{"kind": "User", "name": USER,
                      "apiGroup": "rbac.authorization.k8s.io"}]
    return b


def granted(docs):
    """Every (group, resource, verb, namespace or None, resourceName or
    None) the rendered roles grant; namespace None = cluster-wide."""
    out = set()
    for d in docs:
        if d["kind"] not in ("ClusterRole", "Role"):
            continue
        ns = d["metadata"].get("namespace") if d["kind"] == "Role" else None
        for r in d.get("rules") or []:
            assert not r.get("nonResourceURLs"), r
            for g in r["apiGroups"]:
                for res in r["resources"]:
                    for v in r["verbs"]:
                        assert "*" not in (g, res, v), r
                        for n in r.get("resourceNames") or [None]:
                            out.add((g, res, v, ns, n))
    return out


def covers(grant, req):
    g, res, v, ns, name = grant
    rg, rres, rv, rns, rname = req
    return (g, res, v) == (rg, rres, rv) and \
        (ns is None or ns == rns) and (name is None or name == rname)


class ChartRBACTest(E2ETest):

    @classmethod
    def setUpClass(cls):
        cls.docs = chartlib.render(["rbac.yaml"], namespace=NAMESPACE)
        token = secrets.token_hex(16)
        cls.privs = pve_privileges()
        cls.env = Env(kube_args=["--rbac", "--user", "%s=%s" % (token, USER),
                                 "--crds", CAPACITYBUFFER_CRD],
                      pve_args=["--token-privs", ",".join(cls.privs)])
        env = cls.env
        cls.carpenter = None
        try:
            rbac_kinds = ("ServiceAccount", "ClusterRole", "Role",
                          "ClusterRoleBinding", "RoleBinding")
            objs = [d for d in cls.docs if d["kind"] in rbac_kinds]
            objs += [user_binding(d) for d in cls.docs
                     if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
            env.apply(item_list(*[json.dumps(o) for o in objs]))
            with open(os.path.join(SOURCE_DIR, "crds", "examples",
                                   "userdata-secret.yaml")) as f:
                env.apply(f.read())
            env.kubectl("apply", "-f", e2elib.NODECLASS)
            env.apply(userdata_class())
            # A NodeOverlay: read, and its status written.
            env.apply(json.dumps({
                "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
                "metadata": {"name": "fuse"},
                "spec": {"requirements": [], "capacity": {
                    "smarter-devices/fuse": "1"}}}))
            kubeconfig = kubeconfig_for(
                env.kube.kubeconfig, token,
                os.path.join(env.workdir, "carpenter.kubeconfig"))
            # Leader election on, as the chart runs it.
            args = env.carpenter_args(*[
                f for f in e2elib.FAST_FLAGS
                if not f.startswith("--leader-elect")])
            args[args.index("--kubeconfig") + 1] = kubeconfig
            cls.carpenter = Carpenter(
                *args, env={"POD_NAMESPACE": NAMESPACE},
                log=os.path.join(env.workdir, "carpenter.log"))
            cls.metrics_port = cls.carpenter.port("metrics")
        except BaseException:
            if cls.carpenter:
                cls.carpenter.stop(signal.SIGKILL)
            env.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.carpenter.stop(signal.SIGTERM, 10)
        cls.env.stop()

    # ---- the scenario ----

    def test_1_scale_up(self):
        self.apply(pool_of_class("main", "default", tgp="8s", cpu_limit=64))
        self.apply(pool_of_class("ud", "ud", consolidate_after="2s"))
        self.apply(daemonset_yaml("agent", "main"))
        self.apply("""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
""")
        # One apply: one batch, so that the pods share a node.
        self.apply(item_list(
            deployment_yaml("web", "main", replicas=2, grace=1),
            deployment_yaml("pinned", "main", replicas=1, grace=1,
                            annotations={"karpenter.sh/do-not-disrupt":
                                         "true"})))
        self.apply(deployment_yaml("udapp", "ud", replicas=1))
        # CapacityBuffers keeping no room (0 chunks): their templates read
        # and their status written, nothing launched for them.
        self.apply(item_list(
            json.dumps({"apiVersion": "v1", "kind": "PodTemplate",
                        "metadata": {"name": "chunk", "namespace": "default"},
                        "template": {"spec": {"containers": [{
                            "name": "c", "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": "1"}}}]}}}),
            json.dumps({"apiVersion": "autoscaling.x-k8s.io/v1beta1",
                        "kind": "CapacityBuffer",
                        "metadata": {"name": "tmpl", "namespace": "default"},
                        "spec": {"podTemplateRef": {"name": "chunk"},
                                 "replicas": 0}}),
            json.dumps({"apiVersion": "autoscaling.x-k8s.io/v1beta1",
                        "kind": "CapacityBuffer",
                        "metadata": {"name": "web", "namespace": "default"},
                        "spec": {"scalableRef": {"apiGroup": "apps",
                                                 "kind": "Deployment",
                                                 "name": "web"},
                                 "replicas": 0}})))
        for name in ("tmpl", "web"):
            wait_until(lambda name=name: any(
                c["type"] == "Provisioning" and c["reason"] == "BufferEmpty"
                for c in self.get("capacitybuffers", name, "default").get(
                    "status", {}).get("conditions", [])), 30,
                what="buffer %s's status written" % name)
        # No NodePool fits it: its FailedScheduling event repeats, and a
        # repeat is folded into a patch of the first event.
        self.apply(deployment_yaml("stray", "none", replicas=1))
        self.wait_running("web", 2, timeout=90)
        self.wait_running("pinned", 1, timeout=30)
        self.wait_running("udapp", 1, timeout=90)
        cls = self.get("proxmoxnodeclasses", "ud")
        ready = [c for c in cls["status"]["conditions"]
                 if c["type"] == "Ready"]
        self.assertEqual(ready[0]["status"], "True", cls["status"])

    def test_2_delete_nodeclaim_drains(self):
        pinned = self.pods("pinned")[0]
        node = pinned["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        self.kubectl("delete", "nodeclaim", claim["metadata"]["name"],
                     "--wait=false")
        self.wait_gone(claim, 60)
        self.assertTrue(self.evictions())
        self.assertTrue(self.pod_deletes(), "the do-not-disrupt pod was "
                        "not deleted at the grace period")
        self.wait_running("web", 2, timeout=60, exclude_nodes=(node,))

    def test_3_empty_node_removed(self):
        pod = self.pods("udapp")[0]
        claim = self.claim_of_node(pod["spec"]["nodeName"])
        self.kubectl("scale", "deployment", "udapp", "--replicas=0")
        self.wait_gone(claim, 45)

    def test_4_garbage_collection(self):
        pod = self.wait_running("web", 2, timeout=60)[0]
        node = pod["spec"]["nodeName"]
        claim = self.claim_of_node(node)
        vmid = self.vmid_of(claim)
        host = claim["metadata"]["labels"]["topology.kubernetes.io/zone"]
        # A leaked VM, tagged and described as Carpenter's.
        upid = self.pve_api("POST", "/nodes/pve1/qemu/9000/clone",
                            {"newid": 600, "name": "ghost"})
        self.pve_wait_task("pve1", upid)
        self.pve_api("PUT", "/nodes/pve1/qemu/600/config", {
            "tags": "carpenter;carpenter-e2e",
            "description": "Managed by Carpenter; do not edit.\n"
                           "nodeclaim: ghost\nnodeclaim-uid: %s\n"
                           "nodepool: main\n" % uuid.uuid4()})
        # The VM of a live NodeClaim, gone behind Carpenter's back.
        upid = self.pve_api("POST", "/nodes/%s/qemu/%d/status/stop" %
                            (host, vmid))
        self.pve_wait_task(host, upid)
        upid = self.pve_api("DELETE", "/nodes/%s/qemu/%d" % (host, vmid))
        self.pve_wait_task(host, upid)
        wait_until(lambda: 600 not in self.vm_ids(), 30,
                   what="the leaked VM deleted")
        # Counted once Carpenter's own poll of the delete task sees it
        # finish, which may come after pve-sim has dropped the VM.
        wait_until(lambda: re.search(
            r"^carpenter_garbage_collected_vms_total\{[^}]*\} [1-9]",
            http_get("http://127.0.0.1:%d/metrics" % self.metrics_port)[2],
            re.M), 30, what="the leaked VM's deletion counted")
        wait_until(lambda: not self.exists("nodeclaims",
                                           claim["metadata"]["name"]) and
                   not self.exists("nodes", node), 60,
                   what="the NodeClaim without VM and its Node gone")

    def test_5_documented_queries(self):
        """The PromQL of docs/operations.md parses (promtool) and names
        only metrics this Carpenter serves."""
        exprs, rules = doc_queries()
        self.assertGreater(len(exprs), 10)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "queries.yml")
            with open(path, "w") as f:
                f.write("groups:\n  - name: docs\n    rules:\n")
                for i, e in enumerate(exprs):
                    f.write("      - record: docs:query_%d\n        expr: %s\n"
                            % (i, json.dumps(e)))
            paths = [path]
            for i, block in enumerate(rules):
                paths.append(os.path.join(d, "alerts%d.yml" % i))
                with open(paths[-1], "w") as f:
                    f.write(block)
            r = subprocess.run(["promtool", "check", "rules", *paths],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        status, _, text = http_get("http://127.0.0.1:%d/metrics" %
                                   self.metrics_port)
        self.assertEqual(status, 200)
        families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
        missing = set()
        for e in exprs:
            for name in re.findall(METRIC_NAME, e):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in families and base not in families:
                    missing.add(name)
        self.assertEqual(missing, set(), "docs/operations.md queries "
                         "metrics Carpenter does not serve")

    def test_6_rbac_is_exact(self):
        wait_until(lambda: self.carpenter_requests(method="PATCH",
                                                   resource="events"), 30,
                   what="a repeated event folded into a patch")
        code, took = self.carpenter.stop(signal.SIGTERM, 15)
        self.assertEqual(code, 0, "\n".join(self.carpenter.lines[-40:]))
        time.sleep(0.5)
        reqs = self.carpenter_requests()
        self.assertTrue(reqs)
        self.assertEqual({r["user"] for r in reqs}, {USER})

        denied = [r for r in reqs if r["code"] == 403]
        self.assertEqual(denied, [], "requests refused by the chart's RBAC")

        used = set()
        for r in reqs:
            if not r["resource"]:
                self.assertRegex(r["path"], DISCOVERY, r)
                continue
            res = r["resource"] + ("/" + r["subresource"]
                                   if r["subresource"] else "")
            used.add((r["apiGroup"], res, r["verb"], r["namespace"] or None,
                      r["name"] or None))
        grants = granted(self.docs)

        missing = sorted(u for u in used
                         if not any(covers(g, u) for g in grants))
        self.assertEqual(missing, [], "used but not granted")

        unused = []
        for g in sorted(grants, key=str):
            if any(covers(g, u) for u in used):
                continue
            if (g[0], g[1], g[2]) in ALLOWED_UNUSED:
                continue
            unused.append(g)
        self.assertEqual(unused, [], "granted but never used (remove them, "
                         "or list them in ALLOWED_UNUSED with a reason)")

        # The Proxmox side: nothing refused to a token holding only the
        # privileges docs/getting-started.md grants.
        with open(self.env.pve.reqlog) as f:
            pve = [json.loads(line) for line in f if line.strip()]
        self.assertTrue(pve)
        refused = [r for r in pve if r.get("status") in (401, 403)]
        self.assertEqual(refused, [], "Proxmox calls refused with the "
                         "documented privileges %s" % self.privs)

        summary = sorted({(u[0] or "core", u[1], u[2],
                           "namespaced" if u[3] else "cluster")
                          for u in used})
        print("\nCarpenter's API calls (%d requests):" % len(reqs))
        for s in summary:
            print("  %-20s %-28s %-7s %s" % s)

    def test_7_bindings_name_the_service_account(self):
        sa = chartlib.one(self.docs, "ServiceAccount")
        names = {(d["kind"], d["metadata"]["name"],
                  d["metadata"].get("namespace")) for d in self.docs
                 if d["kind"] in ("ClusterRole", "Role")}
        for b in chartlib.find(self.docs, "ClusterRoleBinding") + \
                chartlib.find(self.docs, "RoleBinding"):
            self.assertEqual(b["subjects"], [{
                "kind": "ServiceAccount", "name": sa["metadata"]["name"],
                "namespace": NAMESPACE}])
            ref = b["roleRef"]
            ns = b["metadata"].get("namespace") if ref["kind"] == "Role" \
                else None
            self.assertIn((ref["kind"], ref["name"], ns), names)


if __name__ == "__main__":
    unittest.main(verbosity=2)
