"""Starting hack/kube-sim (and talking to it) from integration tests."""
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

from carptest import SOURCE_DIR, scratch

KUBE_SIM = os.path.join(SOURCE_DIR, "hack", "kube-sim")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def kube_sim_command():
    if os.path.exists(KUBE_SIM):
        return [sys.executable, KUBE_SIM]
    # Until the entry script exists, run the package directly.
    return [sys.executable, "-c",
            "import sys; sys.path.insert(0, %r); sys.argv[0] = 'kube-sim'; "
            "from kubesim import main; main.main()"
            % os.path.join(SOURCE_DIR, "hack")]


class KubeSim:
    """A kube-sim process on a fixed port (so it can be restarted)."""

    def __init__(self, *args, port=None, workdir=None):
        self.workdir = workdir or scratch.mkdtemp("carp-ks-")
        self.port = port or free_port()
        self.kubeconfig = os.path.join(self.workdir, "kubeconfig")
        self.args = list(args)
        self.proc = None
        self.start()

    def start(self, *extra):
        cmd = kube_sim_command() + [
            "--listen", "127.0.0.1:%d" % self.port,
            "--kubeconfig-out", self.kubeconfig, "--quiet"] + \
            self.args + list(extra)
        if "--tls" in cmd and "--tls-dir" not in cmd:
            # in the work folder: kube-sim removes a temporary one only
            # when it stops by itself
            cmd += ["--tls-dir", os.path.join(self.workdir, "tls")]
        self.log = open(os.path.join(self.workdir, "kube-sim.log"), "a")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("kube-sim ready "):
            raise RuntimeError("kube-sim did not start: %r" % line)
        self.url = line.split()[2]
        with open(self.kubeconfig) as f:
            for l in f:
                l = l.strip()
                if l.startswith("token:"):
                    self.token = l.split(":", 1)[1].strip().strip('"')

    def stop(self, sig=15):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.proc.stdout.close()
            self.log.close()
        self.proc = None

    def request(self, method, path, body=None, ctype="application/json"):
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else \
                json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", ctype)
        ctx = None
        if self.url.startswith("https:"):
            # Loopback to a test server whose CA is thrown away: not checked.
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(req, timeout=60, context=ctx) as r:
                text = r.read()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, None

    def list_all(self, path):
        """Every item of a collection, paginated: {key: resourceVersion}."""
        out = {}
        cont = ""
        while True:
            q = "?limit=500" + ("&continue=" + cont if cont else "")
            status, body = self.request("GET", path + q)
            assert status == 200, (status, body)
            for it in body["items"]:
                m = it["metadata"]
                key = (m["namespace"] + "/" if m.get("namespace") else "") + \
                    m["name"]
                out[key] = m["resourceVersion"]
            cont = body["metadata"].get("continue", "")
            if not cont:
                return out


PVE_SIM = os.path.join(SOURCE_DIR, "hack", "pve-sim")
CRDS = [os.path.join(SOURCE_DIR, "crds", f) for f in (
    "karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml",
    "carpenter.dev_proxmoxnodeclasses.yaml", "karpenter.sh_nodeoverlays.yaml")]
# Cluster Autoscaler's CapacityBuffer API: optional, so left out of CRDS
# (every other test runs Carpenter on a cluster without it); tests of
# buffers add it with kube_args=("--crds", CAPACITYBUFFER_CRD).
CAPACITYBUFFER_CRD = os.path.join(SOURCE_DIR, "crds",
                                  "autoscaling.x-k8s.io_capacitybuffers.yaml")


class PveSim:
    """A pve-sim process playing a Proxmox cluster (and, with a kube-sim
    kubeconfig, the guests that register Nodes)."""

    def __init__(self, workdir, kubeconfig=None, cluster="homelab",
                 hosts=("pve1", "pve2", "pve3"), host_cpus=32,
                 host_memory="128Gi", clone_seconds=0.5, boot_seconds=1.0,
                 extra=()):
        self.workdir = workdir
        self.config = os.path.join(workdir, "pve.yaml")
        self.reqlog = os.path.join(workdir, "pve-requests.jsonl")
        cmd = [sys.executable, PVE_SIM, "--listen", "127.0.0.1:0",
               "--cluster", cluster, "--hosts", ",".join(hosts),
               "--host-cpus", str(host_cpus), "--host-memory", host_memory,
               "--pools", "k8s-nodes", "--clone-seconds", str(clone_seconds),
               "--boot-seconds", str(boot_seconds), "--config-out",
               self.config, "--request-log", self.reqlog,
               "--bad-token-delay", "0.2",
               "--cert-dir", os.path.join(workdir, "pve-cert")]
        for i, h in enumerate(hosts):
            cmd += ["--template", "k3s-agent:%d@%s" % (9000 + i, h)]
        if kubeconfig:
            cmd += ["--kubeconfig", kubeconfig]
        cmd += list(extra)
        self.log = open(os.path.join(workdir, "pve-sim.log"), "a")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("pve-sim ready "):
            raise RuntimeError("pve-sim did not start: %r" % line)
        self.url = line.split()[2].rstrip("/")
        self.base = self.url.split("/api2/")[0]

    def control(self, method, path, body=None):
        """The /_sim control endpoints (no auth)."""
        import ssl
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + "/_sim/" + path, data=data,
                                     method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
            text = r.read()
            return json.loads(text) if text else None

    def vms(self):
        out = self.control("GET", "vms")
        return out.get("vms", out) if isinstance(out, dict) else out

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.proc.stdout.close()
            self.log.close()
        self.proc = None


class Env:
    """kube-sim (--tls --scheduler --kubelet, Carpenter's CRDs), pve-sim
    playing three Proxmox hosts and their guests, and kubectl helpers."""

    def __init__(self, workdir=None, kube_args=(), pve_args=(), **pve_kw):
        self.workdir = workdir or scratch.mkdtemp("carp-e2e-")
        self.kreqlog = os.path.join(self.workdir, "kube-requests.jsonl")
        args = ["--tls", "--scheduler", "--kubelet", "--request-log",
                self.kreqlog, "--node-lease-grace", "10"]
        for c in CRDS:
            args += ["--crds", c]
        self.kube = KubeSim(*args, *kube_args, workdir=self.workdir)
        self.pve = PveSim(self.workdir, kubeconfig=self.kube.kubeconfig,
                          extra=pve_args, **pve_kw)

    def kubectl(self, *args, input=None, check=True):
        r = subprocess.run(["kubectl", "--kubeconfig", self.kube.kubeconfig,
                            *args], input=input, capture_output=True,
                           text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s failed: %s" %
                                 (" ".join(args), r.stderr))
        return r.stdout

    def apply(self, text):
        return self.kubectl("apply", "-f", "-", input=text)

    def get(self, kind, name=None, namespace=None):
        args = ["get", kind, "-o", "json"]
        if name:
            args.insert(2, name)
        if namespace:
            args += ["-n", namespace]
        out = json.loads(self.kubectl(*args))
        return out if name else out["items"]

    def carpenter_args(self, *extra):
        return ["--kubeconfig", self.kube.kubeconfig, "--pve-config",
                self.pve.config, "--metrics-port=0", "--health-probe-port=0",
                "--cluster-name", "e2e", *extra]

    def stop(self):
        self.pve.stop()
        self.kube.stop()


def wait_until(pred, timeout, interval=0.25, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" %
                                 (timeout, what))
        time.sleep(interval)
