#!/usr/bin/env python3
"""Tests of Carpenter's CRDs, examples and invalid manifests.

    test_crds.py --offline    structural soundness of crds/*.yaml; Karpenter v1
                              compatibility of names, defaults, enums, columns;
                              examples valid and invalid manifests refused by the
                              schema (with defaults applied), CEL rules present
    test_crds.py --kube-sim   the same manifests against hack/kube-sim with
                              kubectl: apply, columns, explain, 422s naming the field

Exit status: 0 all passed, 1 a failure, 77 everything skipped (ctest SKIP).
"""

import copy
import glob
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import traceback
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crdcheck as cc  # noqa: E402

SRC = cc.SOURCE_DIR
sys.path.insert(0, os.path.join(SRC, "test", "tools"))
import scratch  # noqa: E402
RESULTS = {"passed": 0, "failed": 0, "skipped": 0}


def check(name, fn):
    try:
        msg = fn()
    except Skip as e:
        RESULTS["skipped"] += 1
        print(f"skip  {name}: {e}")
        return
    except AssertionError as e:
        RESULTS["failed"] += 1
        print(f"FAIL  {name}: {e}")
        return
    except Exception:  # a bug in the test or an unexpected reply
        RESULTS["failed"] += 1
        print(f"FAIL  {name}:\n{traceback.format_exc()}")
        return
    RESULTS["passed"] += 1
    print(f"ok    {name}" + (f" ({msg})" if msg else ""))


class Skip(Exception):
    pass


def rel(p):
    return os.path.relpath(p, SRC)


def example_paths():
    return sorted(glob.glob(os.path.join(SRC, "crds", "examples", "*.yaml")))


USER_NODEPOOL = os.path.join(SRC, "test", "crds", "karpenter-user-nodepool.yaml")
NODECLAIM = os.path.join(SRC, "test", "crds", "nodeclaim.yaml")


# ============================================================== offline tests

def offline():
    if cc.LOAD is None:
        print("FAIL  no YAML parser (hack/kubesim/yamlmini.py is missing "
              "and PyYAML is not installed)")
        return 1
    print(f"# YAML parser: {cc.LOADER_NAME}")
    crds = cc.load_crds()

    def t_five_crds():
        want = {"NodePool": "nodepools.karpenter.sh",
                "NodeClaim": "nodeclaims.karpenter.sh",
                "ProxmoxNodeClass": "proxmoxnodeclasses.carpenter.dev",
                "CapacityBuffer": "capacitybuffers.autoscaling.x-k8s.io",
                "NodeOverlay": "nodeoverlays.karpenter.sh"}
        assert {k: v["metadata"]["name"] for k, v in crds.items()} == want, \
            sorted(crds)
    check("crds: NodePool, NodeClaim, ProxmoxNodeClass, CapacityBuffer and "
          "NodeOverlay are defined", t_five_crds)

    for kind, crd in sorted(crds.items()):
        spec = crd["spec"]

        def t_meta(crd=crd, spec=spec, kind=kind):
            assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
            assert crd["kind"] == "CustomResourceDefinition"
            n = spec["names"]
            assert crd["metadata"]["name"] == f"{n['plural']}.{spec['group']}"
            assert n["kind"] == kind and n["listKind"] == kind + "List"
            assert n["singular"] == kind.lower()
            # Cluster Autoscaler's CapacityBuffer is namespaced and in its
            # own category.
            buffer = kind == "CapacityBuffer"
            assert spec["scope"] == ("Namespaced" if buffer else "Cluster")
            assert ("autoscaling" if buffer else "karpenter") in \
                n["categories"], n.get("categories")
            vs = spec["versions"]
            assert len(vs) == 1 and vs[0]["served"] and vs[0]["storage"]
            assert vs[0]["subresources"].get("status") == {}
        check(f"{kind}: names, scope, category, one served storage "
              "version, status subresource", t_meta)

        def t_structural(crd=crd):
            errs = cc.structural_errors(cc.version_schema(crd))
            assert not errs, "\n  " + "\n  ".join(errs)
        check(f"{kind}: structural schema, patterns compile, enums typed, "
              "defaults valid against their schema", t_structural)

        def t_columns(crd=crd):
            schema = cc.version_schema(crd)
            for col in crd["spec"]["versions"][0]["additionalPrinterColumns"]:
                assert col["type"] in ("string", "integer", "number",
                                       "boolean", "date"), col
                assert cc.resolve_jsonpath(schema, col["jsonPath"]) is not \
                    None, f"column {col['name']}: {col['jsonPath']} " \
                          "matches no field"
        check(f"{kind}: printer columns' JSONPaths name existing fields",
              t_columns)

    def columns(kind):
        cols = crds[kind]["spec"]["versions"][0]["additionalPrinterColumns"]
        return ([c["name"] for c in cols if not c.get("priority")],
                [c["name"] for c in cols if c.get("priority")])

    def t_np_columns():
        normal, wide = columns("NodePool")
        assert normal == ["NodeClass", "Nodes", "Ready", "Age"], normal
        assert wide == ["Weight", "CPU", "Memory"], wide
    check("NodePool: columns NodeClass Nodes Ready Age; wide Weight CPU Memory",
          t_np_columns)

    def t_nc_columns():
        normal, wide = columns("NodeClaim")
        assert normal == ["Type", "Capacity", "Zone", "Node", "Ready", "Age"], \
            normal
        assert wide == ["ImageID", "ID", "NodePool", "NodeClass", "Drifted",
                        "VM"], wide
        vm = [c for c in crds["NodeClaim"]["spec"]["versions"][0][
            "additionalPrinterColumns"] if c["name"] == "VM"][0]
        assert vm["jsonPath"] == ".metadata.annotations.carpenter\\.dev/vm"
    check("NodeClaim: columns Type Capacity Zone Node Ready Age (Karpenter's); "
          "wide ImageID ID NodePool NodeClass Drifted (Karpenter's) and VM "
          "(carpenter.dev/vm: region/host/VMID)", t_nc_columns)

    def t_pnc_columns():
        normal, wide = columns("ProxmoxNodeClass")
        assert normal == ["Ready", "Regions", "Template", "Clone", "Age"], \
            normal
        for w in ("Zones", "Strategy"):
            assert w in wide, wide
        assert crds["ProxmoxNodeClass"]["spec"]["names"]["categories"] == [
            "karpenter", "carpenter"]
    check("ProxmoxNodeClass: columns Ready Regions Template Clone Age; wide "
          "Zones Strategy; categories karpenter, carpenter", t_pnc_columns)

    def t_checker_catches():
        bad = {"type": "object", "properties": {
            "metadata": {"type": "object"},
            "a": {"description": "no type"},
            "b": {"type": "string", "pattern": "(unclosed"},
            "c": {"type": "string", "enum": ["x"], "default": "y"},
            "d": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["k"],
                  "items": {"type": "object",
                            "properties": {"k": {"type": "string"}}}},
            "e": {"type": "object", "required": ["z"], "default": {},
                  "properties": {"z": {"type": "string"}}},
            "f": {"type": "strnig", "maxitems": 3}}}
        errs = "\n".join(cc.structural_errors(bad))
        for want in ("a: no type", "b: pattern does not compile",
                     "c(default): default is invalid", "map key 'k' must be",
                     "e(default).z: default is invalid", "f: bad type",
                     "unknown schema keyword 'maxitems'"):
            assert want in errs, f"missed {want!r} in:\n{errs}"
        assert cc.resolve_jsonpath(bad, ".status.nope") is None
        assert cc.resolve_jsonpath(bad, ".b") is not None
    check("checker: catches missing types, bad patterns, bad defaults, "
          "map keys, typos", t_checker_catches)

    np = cc.version_schema(crds["NodePool"])
    ncl = cc.version_schema(crds["NodeClaim"])

    def t_np_defaults():
        obj = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
               "metadata": {"name": "x"},
               "spec": {"template": {"spec": {
                   "nodeClassRef": {"group": "carpenter.dev",
                                    "kind": "ProxmoxNodeClass",
                                    "name": "default"},
                   "requirements": []}}}}
        d = cc.apply_defaults(copy.deepcopy(obj), np)
        assert d["spec"]["disruption"] == {
            "consolidateAfter": "0s",
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "budgets": [{"nodes": "10%"}]}, d["spec"]["disruption"]
        assert d["spec"]["template"]["spec"]["expireAfter"] == "720h"
        assert cc.validate(d, np) == []
    check("NodePool: defaults expireAfter 720h, consolidationPolicy "
          "WhenEmptyOrUnderutilized, consolidateAfter 0s, budgets [{nodes: 10%}]",
          t_np_defaults)

    def t_np_enums():
        s = np["properties"]["spec"]["properties"]
        ops = s["template"]["properties"]["spec"]["properties"][
            "requirements"]["items"]["properties"]["operator"]["enum"]
        assert ops == ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt",
                       "Gte", "Lte"], ops
        pol = s["disruption"]["properties"]["consolidationPolicy"]["enum"]
        assert pol == ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
        rs = s["disruption"]["properties"]["budgets"]["items"]["properties"][
            "reasons"]["items"]["enum"]
        assert rs == ["Underutilized", "Empty", "Drifted"], rs
        w = s["weight"]
        assert (w["minimum"], w["maximum"]) == (1, 100)
        sc = crds["NodePool"]["spec"]["versions"][0]["subresources"]["scale"]
        assert sc == {"specReplicasPath": ".spec.replicas",
                      "statusReplicasPath": ".status.nodes"}, sc
        assert cc.resolve_jsonpath(np, sc["specReplicasPath"])
        assert cc.resolve_jsonpath(np, sc["statusReplicasPath"])
    check("NodePool: operators (with Gte/Lte), policies (with Balanced), "
          "reasons, weight 1..100, scale subresource", t_np_enums)

    def t_nc_immutable():
        rules = ncl["properties"]["spec"]["x-kubernetes-validations"]
        assert {"message": "spec is immutable", "rule": "self == oldSelf"} \
            in rules, rules
        assert ncl["properties"]["spec"]["properties"]["expireAfter"][
            "default"] == "720h"
    check("NodeClaim: spec immutable (CEL), expireAfter default 720h",
          t_nc_immutable)

    def t_karpenter_patterns():
        # Values the Karpenter docs use must pass, near misses must not.
        s = np["properties"]["spec"]["properties"]
        b = s["disruption"]["properties"]["budgets"]["items"]["properties"]
        cases = [
            (b["nodes"], ["0", "5", "10%", "100%", "1000"], ["110%", "-1",
                                                            "10 %", "ten"]),
            (b["duration"], ["10m", "8h", "1h30m", "10m0s"], ["30s", "1d",
                                                             "h"]),
            (b["schedule"], ["@daily", "0 9 * * mon-fri", "*/5 * * * *"],
             ["@often"]),
            (s["disruption"]["properties"]["consolidateAfter"],
             ["0s", "30s", "1h30m", "Never"], ["30d", "never", "1.5h"]),
            (s["template"]["properties"]["spec"]["properties"]["expireAfter"],
             ["720h", "Never", "24h30m"], ["30d", ""]),
        ]
        for node, good, bad in cases:
            for v in good:
                assert cc.validate(v, node) == [], (v, node["pattern"])
            for v in bad:
                assert cc.validate(v, node) != [], (v, node["pattern"])
    check("NodePool: budget, duration, schedule and duration patterns accept "
          "Karpenter's values and refuse near misses", t_karpenter_patterns)

    # Every example and the Karpenter user's NodePool is valid.
    for p in example_paths() + [USER_NODEPOOL, NODECLAIM]:
        def t_example(p=p):
            docs = cc.load_file(p)
            assert docs, "no documents"
            n = 0
            for d in docs:
                if d.get("kind") not in crds:
                    continue
                errs = cc.validate_manifest(d, crds)
                assert not errs, "; ".join(f"{a}: {b}" for a, b in errs)
                n += 1
            return f"{n} of our kinds"
        check(f"valid: {rel(p)}", t_example)

    # Invalid manifests: schema cases refused at the named field; CEL cases
    # pass the schema and the CRD holds the rule with that message there.
    cases = cc.invalid_cases()
    assert cases, "no crds/invalid manifests"
    for p, hdr in cases:
        def t_invalid(p=p, hdr=hdr):
            assert hdr.get("refused-by") in ("schema", "cel") and \
                hdr.get("field") and hdr.get("message"), \
                f"header comments missing: {hdr}"
            (obj,) = cc.load_file(p)
            errs = cc.validate_manifest(obj, crds)
            schema = cc.version_schema(crds[obj["kind"]])
            if hdr["refused-by"] == "schema":
                fields = [f for f, _ in errs]
                assert hdr["field"] in fields, \
                    f"want an error at {hdr['field']}, got {errs}"
                return "schema: " + "; ".join(f"{a}: {b}" for a, b in errs)
            assert not errs, f"must pass the schema (CEL refuses it): {errs}"
            field = re.sub(r"\[\d+\]", "[0]", hdr["field"])
            node = cc.schema_at(schema, field)
            assert node is not None, f"{field} is not in the schema"
            msgs = [r["message"] for r in node.get(
                "x-kubernetes-validations", [])]
            assert hdr["message"] in msgs, \
                f"no CEL rule {hdr['message']!r} at {field}: {msgs}"
            return "CEL rule present"
        check(f"invalid: {rel(p)} refused at {hdr.get('field')}", t_invalid)

    return 0


# ============================================================= kube-sim tests

class KubeSim:
    def __init__(self):
        self.dir = scratch.mkdtemp("carp-crds-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.proc = None
        self.url = None

    def start(self):
        exe = os.path.join(SRC, "hack", "kube-sim")
        self.log = open(os.path.join(self.dir, "kube-sim.log"), "w+")
        self.proc = subprocess.Popen(
            [exe, "--listen", "127.0.0.1:0", "--tls", "--kubeconfig-out",
             self.kubeconfig],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.match(r"kube-sim ready (\S+)", line)
            if m:
                self.url = m.group(1)
                return
        self.stop()
        self.log.seek(0)
        raise RuntimeError("kube-sim did not become ready: " + self.log.read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def kubectl(self, *args, stdin=None, timeout=60):
        r = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig,
                            "--request-timeout=20s", *args],
                           input=stdin, capture_output=True, text=True,
                           timeout=timeout)
        return r.returncode, r.stdout, r.stderr

    def ok(self, *args, **kw):
        rc, out, err = self.kubectl(*args, **kw)
        assert rc == 0, f"kubectl {' '.join(args)} failed ({rc}): {err}{out}"
        return out

    def put(self, path, obj):
        """A PUT straight to the API (kubectl 1.20 cannot write a status
        subresource)."""
        with open(self.kubeconfig) as f:
            token = re.search(r"token: *(\S+)", f.read()).group(1)
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(self.url + path, method="PUT",
                                     data=json.dumps(obj).encode())
        req.add_header("Authorization", "Bearer " + token.strip("'\""))
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=20, context=ctx) as r:
            assert r.status == 200, r.status


def header(out):
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines, "no output"
    return lines[0].split()


def kube_sim():
    if not os.path.exists(os.path.join(SRC, "hack", "kube-sim")):
        print("FAIL  hack/kube-sim is missing")
        return 1
    if shutil.which("kubectl") is None:
        print("FAIL  kubectl is not installed")
        return 1
    sim = KubeSim()
    try:
        sim.start()
    except Exception as e:
        print(f"FAIL  start kube-sim: {e}")
        return 1
    try:
        run_kube_sim(sim)
    finally:
        sim.stop()
    return 0


def run_kube_sim(sim):
    crd_files = cc.crd_paths()

    def t_apply_crds():
        out = sim.ok("apply", "-f", os.path.join(SRC, "crds") + "/")
        for name in ("nodepools.karpenter.sh", "nodeclaims.karpenter.sh",
                     "proxmoxnodeclasses.carpenter.dev",
                     "capacitybuffers.autoscaling.x-k8s.io"):
            assert name in out, out
        # the new kinds are served (wait for discovery)
        deadline = time.time() + 20
        while True:
            rc, out, err = sim.kubectl("get", "nodepools,nodeclaims,"
                                       "proxmoxnodeclasses")
            if rc == 0 or time.time() > deadline:
                break
            time.sleep(0.3)
        assert rc == 0, err
    check("kube-sim: kubectl apply -f crds/ creates the four CRDs",
          t_apply_crds)
    del crd_files

    def t_user_nodepool():
        sim.ok("apply", "-f", USER_NODEPOOL)
        got = json.loads(sim.ok("get", "nodepool", "default", "-o", "json"))
        ref = got["spec"]["template"]["spec"]["nodeClassRef"]
        assert ref == {"group": "carpenter.dev", "kind": "ProxmoxNodeClass",
                       "name": "default"}, ref
        assert len(got["spec"]["disruption"]["budgets"]) == 3
        sim.ok("delete", "nodepool", "default")
    check("kube-sim: a Karpenter user's v1 NodePool applies unchanged "
          "(test/crds/karpenter-user-nodepool.yaml)", t_user_nodepool)

    def t_defaults():
        manifest = json.dumps({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "minimal"},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "carpenter.dev",
                                 "kind": "ProxmoxNodeClass",
                                 "name": "default"},
                "requirements": []}}}})
        sim.ok("apply", "-f", "-", stdin=manifest)
        got = json.loads(sim.ok("get", "nodepool", "minimal", "-o", "json"))
        sim.ok("delete", "nodepool", "minimal")
        d = got["spec"].get("disruption")
        assert d == {"consolidateAfter": "0s",
                     "consolidationPolicy": "WhenEmptyOrUnderutilized",
                     "budgets": [{"nodes": "10%"}]}, d
        assert got["spec"]["template"]["spec"]["expireAfter"] == "720h"
    check("kube-sim: a minimal NodePool gets Karpenter's defaults", t_defaults)

    def t_examples():
        for p in example_paths():
            for d in cc.load_file(p):
                ns = (d.get("metadata") or {}).get("namespace")
                if ns:
                    sim.kubectl("create", "namespace", ns)
            sim.ok("apply", "-f", p)
        return f"{len(example_paths())} files"
    check("kube-sim: every crds/examples manifest applies", t_examples)

    def t_pnc_defaults():
        got = json.loads(sim.ok("get", "proxmoxnodeclass", "cloud-image",
                                "-o", "json"))
        s = got["spec"]
        assert s["template"]["scope"] == "Shared"
        assert s["pricing"] == {"perCPU": "0.03", "perGiB": "0.004"}, \
            s.get("pricing")
        assert s["instanceTypes"]["families"][0] == {
            "name": "c1", "memoryPerCPU": "2Gi"}, s["instanceTypes"]
        assert s["placementStrategy"] == "LeastLoaded"
        assert s["bootstrap"]["userDataSecretRef"]["key"] == "user-data"
        assert s["hostCapacity"]["cpuOvercommitRatio"] == "1"
    check("kube-sim: ProxmoxNodeClass defaults are applied", t_pnc_defaults)

    def t_nodeclaim():
        sim.ok("apply", "-f", NODECLAIM)
    check("kube-sim: a NodeClaim applies", t_nodeclaim)

    def t_nodeclaim_status():
        claim = json.loads(sim.ok("get", "nodeclaim", "default-x7k2p", "-o",
                                  "json"))
        t = "2026-11-22T10:00:00Z"
        claim["status"] = {
            "providerID": "proxmox://homelab/20017",
            "imageID": "homelab/9001",
            "conditions": [
                {"type": "Launched", "status": "True", "reason": "Launched",
                 "message": "", "lastTransitionTime": t},
                {"type": "Registered", "status": "Unknown",
                 "reason": "AwaitingNodeRegistration",
                 "message": "Node not registered with cluster",
                 "lastTransitionTime": t},
                {"type": "Ready", "status": "Unknown",
                 "reason": "AwaitingNodeRegistration",
                 "message": "Node not registered with cluster",
                 "lastTransitionTime": t}]}
        sim.put("/apis/karpenter.sh/v1/nodeclaims/default-x7k2p/status", claim)
        out = sim.ok("get", "nodeclaims", "-o", "wide")
        head, row = out.splitlines()[0], out.splitlines()[1]
        # Cells by the header's columns (NODE is empty: split() would
        # shift every cell after it).
        starts = [m.start() for m in re.finditer(r"\S+", head)]
        got = {head[a:b].strip(): row[a:b].strip()
               for a, b in zip(starts, starts[1:] + [None])}
        assert got["NODE"] == "", got
        assert got["ZONE"] == "pve2" and got["READY"] == "Unknown", got
        assert got["IMAGEID"] == "homelab/9001", got
        assert got["ID"] == "proxmox://homelab/20017", got
        assert got["VM"] == "homelab/pve2/20017", got
        out = sim.ok("describe", "nodeclaim", "default-x7k2p")
        for want in (r"carpenter.dev/vm: homelab/pve2/20017",
                     r"Reason: +AwaitingNodeRegistration",
                     r"Message: +Node not registered with cluster",
                     r"Image ID: +homelab/9001",
                     r"Provider ID: +proxmox://homelab/20017"):
            assert re.search(want, out), f"{want!r} not in:\n{out}"
    check("kube-sim: kubectl get nodeclaims -o wide shows the VM "
          "(region/host/VMID), the template and the providerID; describe "
          "shows conditions with reasons and messages", t_nodeclaim_status)

    def cols(resource, wide):
        args = ["get", resource] + (["-o", "wide"] if wide else [])
        return header(sim.ok(*args))

    for resource, normal, wide in (
            ("nodepools", ["NAME", "NODECLASS", "NODES", "READY", "AGE"],
             ["WEIGHT", "CPU", "MEMORY"]),
            ("nodeclaims", ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE",
                            "READY", "AGE"],
             ["IMAGEID", "ID", "NODEPOOL", "NODECLASS", "DRIFTED", "VM"]),
            ("proxmoxnodeclasses", ["NAME", "READY", "REGIONS", "TEMPLATE",
                                    "CLONE", "AGE"],
             ["ZONES", "STRATEGY", "BOOTSTRAP", "REASON"])):
        def t_cols(resource=resource, normal=normal, wide=wide):
            got = cols(resource, False)
            assert got == normal, got
            got = cols(resource, True)
            assert got == normal + wide, got
        check(f"kube-sim: kubectl get {resource} columns (and -o wide)",
              t_cols)

    def t_rows():
        out = sim.ok("get", "nodepools")
        rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:]}
        assert rows["default"][1] == "default", rows
        assert set(rows) >= {"default", "batch"}, rows
        out = sim.ok("get", "nodepools", "-o", "wide")
        rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:]}
        assert "50" in rows["batch"], rows["batch"]
        out = sim.ok("get", "proxmoxnodeclasses")
        rows = {ln.split()[0]: ln for ln in out.splitlines()[1:]}
        assert "k3s-agent" in rows["default"] and "Linked" in rows["default"]
        assert "Full" in rows["cloud-image"]
    check("kube-sim: rows show the NodeClass, weight, template and clone mode",
          t_rows)

    def t_category():
        out = sim.ok("get", "karpenter")
        for want in ("nodepool.karpenter.sh/default",
                     "proxmoxnodeclass.carpenter.dev/default"):
            assert want in out, out
    check("kube-sim: kubectl get karpenter lists the category", t_category)

    def t_explain():
        rc, out, err = sim.kubectl("explain", "nodepool.spec.disruption")
        if rc != 0:
            raise Skip("kubectl explain is not served by kube-sim: " +
                       (err or out).strip().splitlines()[-1][:160])
        for field in ("budgets", "consolidateAfter", "consolidationPolicy"):
            assert field in out, out
        rc, out, err = sim.kubectl("explain", "proxmoxnodeclass.spec.bootstrap")
        assert rc == 0 and "userDataSecretRef" in out, err + out
    check("kube-sim: kubectl explain nodepool.spec.disruption", t_explain)

    for p, hdr in cc.invalid_cases():
        def t_invalid(p=p, hdr=hdr):
            (obj,) = cc.load_file(p)
            rc, out, err = sim.kubectl("apply", "-f", p)
            if rc == 0:
                # Accepted: only allowed where kube-sim does not run CEL.
                sim.kubectl("delete", obj["kind"].lower(),
                            obj["metadata"]["name"])
                assert hdr["refused-by"] == "cel", \
                    f"accepted, but the schema must refuse it at " \
                    f"{hdr['field']}: {out}"
                return ("accepted: kube-sim does not evaluate CEL; the CRD "
                        "holds the rule (offline test) and the C validation "
                        "enforces it")
            assert "is invalid" in err or "(Invalid)" in err, \
                f"not refused as invalid (422): {err.strip()}"
            field = hdr["field"]
            assert field in err or (hdr["refused-by"] == "cel" and
                                    hdr["message"] in err), \
                f"refused without naming {field}: {err.strip()}"
            return "422: " + err.strip().splitlines()[0][:200]
        check(f"kube-sim: invalid {rel(p)} refused at {hdr.get('field')}",
              t_invalid)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "--offline"
    if mode == "--offline":
        rc = offline()
    elif mode == "--kube-sim":
        rc = kube_sim()
    else:
        print(__doc__)
        return 2
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed, "
          f"{RESULTS['skipped']} skipped")
    if RESULTS["failed"]:
        return 1
    if rc == 77 or (RESULTS["passed"] == 0 and RESULTS["skipped"]):
        return 77
    return rc


if __name__ == "__main__":
    sys.exit(main())
