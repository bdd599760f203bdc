"""Minimal Kubernetes client for the simulated kubelets (urllib only).

The kubeconfig is read once with `kubectl config view --raw -o json`
(no YAML library needed): server, bearer token (or token file), CA data or
file, client certificate, insecure-skip-tls-verify.
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request


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

    def request(self, method, path, body=None, ctype="application/json"):
        """(status, decoded JSON or None).  Network errors: status 0."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        req.add_header("User-Agent", "k3s/v1.31.4+k3s1 (linux/amd64) kubelet pve-sim")
        if data is not None:
            req.add_header("Content-Type", ctype)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.ssl) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, {"message": raw.decode("utf-8", "replace")}
        except (urllib.error.URLError, OSError, ValueError) as e:
            return 0, {"message": str(e)}
