"""Minimal Kubernetes client for the simulated kubelets (http.client only).

The kubeconfig is read once with `kubectl config view --raw -o json`
(no YAML library needed): server, bearer token (or token file), CA data or
file, client certificate, insecure-skip-tls-verify.
"""

import base64
import http.client
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import urllib.parse


class KubeError(Exception):
    pass


def _load(path):
    for extra in (["--minify"], []):
        r = subprocess.run(["kubectl", "config", "view", "--raw", "-o", "json",
                            "--kubeconfig", path] + extra,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        if r.returncode == 0:
            cfg = json.loads(r.stdout)
            if cfg.get("clusters"):
                return cfg
    raise KubeError("kubectl config view failed for %s: %s" % (path, r.stderr.decode().strip()))


class KubeClient:
    def __init__(self, kubeconfig, timeout=10.0):
        cfg = _load(kubeconfig)
        ctxname = cfg.get("current-context")
        ctx = next((c["context"] for c in cfg.get("contexts", []) if c["name"] == ctxname),
                   None)
        cluster = next((c["cluster"] for c in cfg["clusters"]
                        if ctx is None or c["name"] == ctx.get("cluster")),
                       cfg["clusters"][0]["cluster"])
        users = cfg.get("users") or []
        user = next((u["user"] for u in users if ctx is not None and
                     u["name"] == ctx.get("user")), users[0]["user"] if users else {})
        self.server = cluster["server"].rstrip("/")
        u = urllib.parse.urlsplit(self.server)
        self.host, self.prefix = u.netloc, u.path
        self.local = threading.local()
        self.timeout = timeout
        self.token = user.get("token")
        if not self.token and user.get("tokenFile"):
            with open(user["tokenFile"]) as f:
                self.token = f.read().strip()
        self.ssl = None
        if self.server.startswith("https"):
            sctx = ssl.create_default_context()
            if cluster.get("insecure-skip-tls-verify"):
                sctx.check_hostname = False
                sctx.verify_mode = ssl.CERT_NONE
            elif cluster.get("certificate-authority-data"):
                sctx.load_verify_locations(cadata=base64.b64decode(
                    cluster["certificate-authority-data"]).decode())
            elif cluster.get("certificate-authority"):
                sctx.load_verify_locations(cafile=cluster["certificate-authority"])
            cert = user.get("client-certificate-data")
            key = user.get("client-key-data")
            if cert and key:
                # ssl reads a client certificate from files only: written
                # to a private folder, loaded, and removed
                d = tempfile.mkdtemp(prefix="pve-sim-kube-")
                try:
                    cp, kp = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
                    with open(cp, "wb") as f:
                        f.write(base64.b64decode(cert))
                    with open(kp, "wb") as f:
                        f.write(base64.b64decode(key))
                    sctx.load_cert_chain(cp, kp)
                finally:
                    shutil.rmtree(d, ignore_errors=True)
            elif user.get("client-certificate") and user.get("client-key"):
                sctx.load_cert_chain(user["client-certificate"], user["client-key"])
            self.ssl = sctx

    def _connection(self):
        """This thread's connection to the API server, opened on first use."""
        conn = getattr(self.local, "conn", None)
        if conn is None:
            if self.ssl is not None:
                conn = http.client.HTTPSConnection(self.host, timeout=self.timeout,
                                                   context=self.ssl)
            else:
                conn = http.client.HTTPConnection(self.host, timeout=self.timeout)
            self.local.conn = conn
            self.local.used = False
        return conn

    def _drop(self):
        conn = getattr(self.local, "conn", None)
        self.local.conn = None
        if conn is not None:
            conn.close()

    def request(self, method, path, body=None, ctype="application/json"):
        """(status, decoded JSON or None).  Network errors: status 0.

        Each thread keeps one connection open, as a kubelet does: a new TLS
        handshake for every Lease renewal cost the API server more than the
        renewal itself (11,000 of them while 5,000 pods scaled out).  A
        connection the server closed while idle fails on its next request
        before anything was read; that request is sent once more on a new
        connection (every request here is safe to repeat: a Lease update
        carries its resourceVersion, a Node create tolerates AlreadyExists).
        """
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json",
                   "User-Agent": "k3s/v1.31.4+k3s1 (linux/amd64) kubelet pve-sim"}
        if data is not None:
            headers["Content-Type"] = ctype
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (0, 1):
            conn = self._connection()
            reused = self.local.used
            try:
                conn.request(method, self.prefix + path, body=data, headers=headers)
                r = conn.getresponse()
                raw = r.read()
            except (http.client.RemoteDisconnected, ConnectionResetError,
                    BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError) as e:
                self._drop()
                if reused and attempt == 0:
                    continue
                return 0, {"message": str(e)}
            except (http.client.HTTPException, OSError) as e:
                self._drop()
                return 0, {"message": str(e)}
            self.local.used = True
            if r.will_close:
                self._drop()
            if r.status >= 400:
                try:
                    return r.status, json.loads(raw)
                except ValueError:
                    return r.status, {"message": raw.decode("utf-8", "replace")}
            try:
                return r.status, (json.loads(raw) if raw else None)
            except ValueError as e:
                return 0, {"message": str(e)}
        return 0, {"message": "unreachable"}
