"""Starting hack/kube-sim (and talking to it) from integration tests."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from carptest import SOURCE_DIR

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
        self.workdir = workdir or tempfile.mkdtemp(prefix="carp-ks-")
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
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
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
