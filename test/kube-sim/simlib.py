"""Helpers for kube-sim's conformance suite: start the simulator as a
subprocess on port 0, talk to it over HTTP(S) (http.client), with curl and
with the real kubectl, and compare responses structurally."""

import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("CARP_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", ".."))
KUBE_SIM = os.path.join(ROOT, "hack", "kube-sim")
# the kubectl under test: $KUBECTL (ctest runs the kubectl suite with the
# machine's kubectl and again with Debian's 1.20), else the one on the PATH
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl") or "/usr/bin/kubectl"
CURL = shutil.which("curl") or "/usr/bin/curl"
TESTDATA = os.path.join(HERE, "testdata")
# the recordings of a real kube-apiserver: ../shared/kube when present, else the copy kept here
_SHARED = os.path.abspath(os.path.join(ROOT, "..", "shared", "kube"))
RECORDINGS = os.environ.get("KUBE_RECORDINGS") or (_SHARED if os.path.isdir(_SHARED)
                                                    else os.path.join(HERE, "recordings"))
sys.path.insert(0, os.path.join(ROOT, "hack"))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
import scratch  # noqa: E402


_kubectl_minor = None


def kubectl_minor():
    """The minor version of KUBECTL's client (20 for 1.20): kubectl before
    1.25 validates manifests itself against /openapi/v2, before 1.24 has no
    --subresource, and prints explain differently."""
    global _kubectl_minor
    if _kubectl_minor is None:
        out = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True, timeout=60).stdout
        _kubectl_minor = int(re.match(r"\d+", json.loads(out)["clientVersion"]["minor"]).group(0))
    return _kubectl_minor


class Response:
    def __init__(self, code, headers, body):
        self.code = code
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<Response %d %s>" % (self.code, self.body[:300])


class Sim:
    """A running kube-sim."""

    def __init__(self, *args, tls=True, crds=True, workdir=None, port=0, env=None):
        self.dir = workdir or scratch.mkdtemp("kube-sim-test-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.cache_dir = os.path.join(self.dir, "kubectl-cache")
        self.args = list(args)
        self.tls = tls
        self.port = port
        self.crds = crds
        self.env = env
        self.proc = None
        self.start()

    def start(self):
        cmd = [sys.executable, KUBE_SIM, "--listen", "127.0.0.1:%d" % self.port, "--kubeconfig-out",
               self.kubeconfig, "--quiet"]
        if self.tls:
            cmd += ["--tls", "--tls-dir", os.path.join(self.dir, "tls")]
        if self.crds:
            cmd += ["--crds", os.path.join(TESTDATA, "widget-crd.yaml")]
        cmd += self.args
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, env=self.env)
        deadline = time.time() + 120
        line = b""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith(b"kube-sim ready "):
                break
            if not line and self.proc.poll() is not None:
                raise RuntimeError("kube-sim exited: %s" % open(os.path.join(self.dir, "stderr.log")).read())
        else:
            raise RuntimeError("kube-sim did not become ready")
        self.url = line.decode().split()[-1]
        u = urllib.parse.urlsplit(self.url)
        self.host = u.hostname
        self.port = u.port
        self.scheme = u.scheme
        with open(self.kubeconfig) as fh:
            kc = fh.read()
        self.token = re.search(r"token: (\S+)", kc).group(1)
        self.cafile = os.path.join(self.dir, "tls", "ca.crt") if self.tls else None
        self._local = threading.local()

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        self.stderr.close()

    def restart(self, *extra):
        self.stop()
        self.args = list(self.args) + list(extra)
        self.start()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---------------------------------------------------------- HTTP

    def _conn(self, timeout=30):
        if self.scheme == "https":
            ctx = ssl.create_default_context(cafile=self.cafile)
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def req(self, method, path, body=None, ctype="application/json", accept="application/json", token=True,
            headers=None, timeout=30):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._conn(timeout)
            self._local.conn = conn
        h = {"User-Agent": "kube-sim-test/1.0", "Accept": accept}
        if token:
            h["Authorization"] = "Bearer " + (self.token if token is True else token)
        if body is not None:
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
            h["Content-Type"] = ctype
        h.update(headers or {})
        for attempt in range(2):
            try:
                conn.request(method, path, body=body, headers=h)
                r = conn.getresponse()
                data = r.read()
                return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
            except (http.client.HTTPException, ConnectionError, OSError):
                conn.close()
                conn = self._conn(timeout)
                self._local.conn = conn
                if attempt:
                    raise

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.req("POST", path, body, **kw)

    def put(self, path, body, **kw):
        return self.req("PUT", path, body, **kw)

    def patch(self, path, body, ptype="application/merge-patch+json", **kw):
        return self.req("PATCH", path, body, ctype=ptype, **kw)

    def delete(self, path, body=None, **kw):
        return self.req("DELETE", path, body, **kw)

    def watch(self, path, timeout=30, accept="application/json"):
        """Open a watch; returns a Watch reading events line by line."""
        return Watch(self, path, timeout, accept)

    # ---------------------------------------------------------- tools

    def kubectl(self, *args, input=None, check=True, timeout=60):
        cmd = [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache_dir] + list(args)
        r = subprocess.run(cmd, input=input.encode() if isinstance(input, str) else input, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        out = r.stdout.decode()
        err = r.stderr.decode()
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s failed (%d): %s%s" % (" ".join(args), r.returncode, out, err))
        return r.returncode, out, err

    def curl(self, method, path, body=None, ctype="application/json", accept="application/json", extra=(),
             token=True, timeout=30):
        cmd = [CURL, "-sS", "--http1.1", "-X", method, "-H", "Accept: " + accept, "-H",
               "User-Agent: rig-fixture-capture/1.0", "-o", "-", "-w", "\n%{http_code}", "--max-time", str(timeout)]
        if token:
            cmd += ["-H", "Authorization: Bearer " + (self.token if token is True else token)]
        if self.cafile:
            cmd += ["--cacert", self.cafile]
        if body is not None:
            if not isinstance(body, (str, bytes)):
                body = json.dumps(body)
            cmd += ["-H", "Content-Type: " + ctype, "--data-binary", "@-"]
        cmd += list(extra) + [self.url + path]
        r = subprocess.run(cmd, input=body.encode() if isinstance(body, str) else body, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout + 10)
        out = r.stdout
        text, _, code = out.rpartition(b"\n")
        return Response(int(code or 0), {}, text)

    def wait_for(self, fn, timeout=30, interval=0.1, msg="condition"):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError("timed out waiting for %s (last: %r)" % (msg, last))

    def stats(self):
        return self.get("/_sim/stats").json()


class Watch:
    def __init__(self, sim, path, timeout, accept):
        self.conn = sim._conn(timeout)
        self.conn.request("GET", path, headers={"Authorization": "Bearer " + sim.token, "Accept": accept,
                                                "User-Agent": "kube-sim-test-watch/1.0"})
        self.resp = self.conn.getresponse()
        self.code = self.resp.status
        self.events = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    break
                if line.strip():
                    ev = json.loads(line)
                    ev["_t"] = time.time()
                    with self.lock:
                        self.events.append(ev)
        except Exception:  # noqa: BLE001 - closed under us
            pass
        finally:
            self.done.set()

    def wait(self, n=1, timeout=15, pred=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                evs = [e for e in self.events if pred is None or pred(e)]
            if len(evs) >= n:
                return evs
            if self.done.is_set():
                break
            time.sleep(0.02)
        with self.lock:
            return [e for e in self.events if pred is None or pred(e)]

    def close(self):
        try:
            self.conn.sock.shutdown(2)
        except Exception:  # noqa: BLE001
            pass
        self.conn.close()


# ---------------------------------------------------------------- structure comparison

_VOLATILE_KEYS = {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "time", "startTime",
                  "lastTransitionTime", "lastHeartbeatTime", "lastProbeTime", "lastUpdateTime", "renewTime",
                  "acquireTime", "continue", "remainingItemCount", "storageVersionHash", "managedFields",
                  "startedAt", "finishedAt", "firstTimestamp", "lastTimestamp", "eventTime", "generateName"}


def shape(v, depth=0, ignore=()):
    """A comparable outline of a JSON value: key sets and value kinds."""
    if isinstance(v, dict):
        return {k: shape(x, depth + 1, ignore) for k, x in v.items() if k not in ignore}
    if isinstance(v, list):
        if not v:
            return []
        return [shape(v[0], depth + 1, ignore)]
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if v is None:
        return "null"
    return "string"


def shape_diff(want, got, path="", ignore=()):
    """Differences between two shapes as a list of strings."""
    out = []
    if isinstance(want, dict) and isinstance(got, dict):
        for k in want:
            if k in ignore:
                continue
            if k not in got:
                out.append("%s.%s missing" % (path, k))
            else:
                out.extend(shape_diff(want[k], got[k], path + "." + k, ignore))
        for k in got:
            if k not in want and k not in ignore:
                out.append("%s.%s unexpected" % (path, k))
        return out
    if isinstance(want, list) and isinstance(got, list):
        if want and got:
            out.extend(shape_diff(want[0], got[0], path + "[]", ignore))
        elif want and not got:
            out.append("%s empty, want items" % path)
        elif got and not want:
            out.append("%s has items, want empty" % path)
        return out
    if want != got:
        out.append("%s: want %s, got %s" % (path, _kind(want), _kind(got)))
    return out


def _kind(v):
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return v


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def norm_message(s):
    s = _UUID.sub("<uid>", s or "")
    s = re.sub(r"\d+", "N", s)
    return s


class SimTestCase(unittest.TestCase):
    """One kube-sim per test class."""

    sim_args = ()
    sim_tls = True
    sim = None

    @classmethod
    def setUpClass(cls):
        cls.sim = Sim(*cls.sim_args, tls=cls.sim_tls)

    @classmethod
    def tearDownClass(cls):
        if cls.sim:
            cls.sim.cleanup()

    def assertCode(self, resp, code, msg=None):
        if resp.code != code:
            self.fail("%s: want HTTP %d, got %d: %s" % (msg or "request", code, resp.code, resp.body[:600]))

    def assertStatus(self, resp, code, reason, msg=None):
        self.assertCode(resp, code, msg)
        st = resp.json()
        self.assertEqual(st.get("kind"), "Status", resp.body)
        self.assertEqual(st.get("reason", ""), reason, resp.body)
        self.assertEqual(st.get("code"), code, resp.body)
        return st


def main():
    unittest.main(verbosity=2)
