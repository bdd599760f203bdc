"""Helpers for the pve-sim tests: start a simulator, talk to it."""

import gzip
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("CARP_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
import scratch  # noqa: E402
SIM = os.path.join(ROOT, "hack", "pve-sim")
KUBESIM = os.path.join(ROOT, "hack", "kube-sim")

FAST = ["--clone-seconds", "0.3", "--full-clone-seconds", "0.6", "--boot-seconds", "0.3",
        "--start-seconds", "0.1", "--stop-seconds", "0.1", "--shutdown-seconds", "0.3",
        "--destroy-seconds", "0.1", "--task-seconds", "0.1", "--stats-seconds", "0.5",
        "--bad-token-delay", "0.3", "--offline-delay-ms", "50", "--flock-timeout", "2"]


def read_config(path):
    out = {}
    with open(path) as f:
        lines = f.readlines()
    for line in lines:
        m = re.match(r"^\s*(?:- )?(\w+): (.*)$", line)
        if m:
            v = m.group(2).strip()
            if v.startswith('"'):
                v = json.loads(v)
            out[m.group(1)] = v
    return out


class Resp:
    def __init__(self, status, reason, headers, raw):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.raw = raw
        try:
            self.json = json.loads(raw) if raw else None
        except ValueError:
            self.json = None

    @property
    def data(self):
        return self.json["data"] if self.json else None

    def __repr__(self):
        return "<Resp %d %s %r>" % (self.status, self.reason, self.raw[:300])


class Sim:
    """A running hack/pve-sim."""

    def __init__(self, *args, fast=True, templates=("ubuntu:9000@pve1", "shared:9001"),
                 hosts="pve1,pve2,pve3"):
        self.dir = scratch.mkdtemp("pve-sim-test-")
        self.cfg = os.path.join(self.dir, "pve.yaml")
        self.cfg_np = os.path.join(self.dir, "pve-noperm.yaml")
        self.log = os.path.join(self.dir, "requests.jsonl")
        cmd = [sys.executable, SIM, "--listen", "127.0.0.1:0", "--cluster", "lab",
               "--hosts", hosts, "--host-cpus", "16", "--host-memory", "64Gi",
               "--config-out", self.cfg, "--config-out-noperm", self.cfg_np,
               "--request-log", self.log, "--cert-dir", self.dir, "--seed", "7"]
        for t in templates:
            cmd += ["--template", t]
        if fast:
            cmd += FAST
        cmd += list(args)
        self.stderr = open(os.path.join(self.dir, "stderr.txt"), "w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"^pve-sim ready (https://\S+)$", line.strip())
        if not m:
            self.stderr.seek(0)
            raise RuntimeError("pve-sim did not start: %r %s" % (line, self.stderr.read()))
        self.url = m.group(1)
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port
        c = read_config(self.cfg)
        self.config = c
        self.token = "%s=%s" % (c["tokenID"], c["tokenSecret"])
        n = read_config(self.cfg_np)
        self.noperm = "%s=%s" % (n["tokenID"], n["tokenSecret"])
        self.fingerprint = c["fingerprint"]
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()

    def stderr_text(self):
        with open(os.path.join(self.dir, "stderr.txt")) as f:
            return f.read()

    # --------------------------------------------------------------- raw HTTP
    def conn(self):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)

    def raw(self, method, path, body=None, headers=None, token=True, conn=None):
        h = dict(headers or {})
        if token is True:
            h["Authorization"] = "PVEAPIToken=" + self.token
        elif token:
            h["Authorization"] = "PVEAPIToken=" + token
        own = conn is None
        c = conn or self.conn()
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            raw = r.read()
            if r.getheader("Content-Encoding") == "gzip":
                raw = gzip.decompress(raw)
            return Resp(r.status, r.reason, r, raw.decode("utf-8", "replace"))
        finally:
            if own:
                c.close()

    def api(self, method, path, params=None, token=True, json_body=False, headers=None):
        """Call /api2/json<path>; GET/DELETE params go in the query."""
        full = "/api2/json" + path
        body = None
        h = dict(headers or {})
        if params:
            if method in ("GET", "DELETE"):
                full += "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
            elif json_body:
                body = json.dumps(params)
                h["Content-Type"] = "application/json"
            else:
                body = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
                h["Content-Type"] = "application/x-www-form-urlencoded"
        return self.raw(method, full, body, h, token)

    def get(self, path, **params):
        return self.api("GET", path, params or None)

    def post(self, path, **params):
        return self.api("POST", path, params)

    def put(self, path, **params):
        return self.api("PUT", path, params)

    def delete(self, path, **params):
        return self.api("DELETE", path, params or None)

    def ctl(self, method, path, body=None):
        c = self.conn()
        try:
            c.request(method, "/_sim" + path, body=json.dumps(body) if body is not None else None)
            r = c.getresponse()
            return json.loads(r.read() or b"null")
        finally:
            c.close()

    # ----------------------------------------------------------------- tasks
    def node_of_upid(self, upid):
        return upid.split(":")[1]

    def task(self, upid):
        return self.get("/nodes/%s/tasks/%s/status" % (self.node_of_upid(upid),
                                                       urllib.parse.quote(upid, safe="")))

    def wait_task(self, upid, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.task(upid)
            assert r.status == 200, r
            if r.data["status"] == "stopped":
                return r.data
            time.sleep(0.05)
        raise AssertionError("task %s still running" % upid)

    def ok(self, r):
        assert r.status == 200, r
        return r.data

    def clone(self, newid, src=9000, node="pve1", wait=True, **params):
        r = self.post("/nodes/%s/qemu/%d/clone" % (node, src), newid=newid, **params)
        assert r.status == 200, r
        if wait:
            t = self.wait_task(r.data)
            assert t["exitstatus"] == "OK", t
        return r.data

    def run_task(self, r, expect="OK"):
        assert r.status == 200, r
        t = self.wait_task(r.data)
        if expect is not None:
            assert t["exitstatus"] == expect, t
        return t

    def vm(self, vmid):
        return self.ctl("GET", "/vms/%d" % vmid)

    def requests(self):
        with open(self.log) as f:
            return [json.loads(x) for x in f if x.strip()]

    def tick(self):
        self.ctl("POST", "/stats-tick")


def wait_until(fn, timeout=10, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


UPID_RE = re.compile(r"^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-F]{8}):"
                     r"([0-9A-F]{8,9}):([0-9A-F]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$")


class SimCase(unittest.TestCase):
    """One simulator per test class."""
    sim_args = ()
    sim_kwargs = {}

    @classmethod
    def setUpClass(cls):
        cls.sim = Sim(*cls.sim_args, **cls.sim_kwargs)

    @classmethod
    def tearDownClass(cls):
        cls.sim.close()


def main():
    unittest.main(verbosity=2)
