"""--tls: a CA and a serving certificate for 127.0.0.1 / localhost / ::1,
made with the openssl command line (reused when already in the directory)."""

import os
import ssl
import subprocess


def _run(args, cwd):
    r = subprocess.run(["openssl"] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise SystemExit("kube-sim: openssl %s failed: %s" % (args[0], r.stderr.decode(errors="replace").strip()))


def ensure_certs(d):
    os.makedirs(d, exist_ok=True)
    ca_crt = os.path.join(d, "ca.crt")
    crt = os.path.join(d, "server.crt")
    key = os.path.join(d, "server.key")
    if all(os.path.exists(p) for p in (ca_crt, crt, key)):
        return ca_crt, crt, key
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _run(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
                                  "-subj", "/CN=kube-sim-ca",
                                  "-addext", "basicConstraints=critical,CA:TRUE",
                                  "-addext", "keyUsage=critical,keyCertSign,cRLSign"], d)
    _run(["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=kube-sim"], d)
    with open(os.path.join(d, "server.ext"), "w") as fh:
        fh.write("subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n"
                 "basicConstraints=CA:FALSE\n"
                 "keyUsage=critical,digitalSignature,keyEncipherment\n"
                 "extendedKeyUsage=serverAuth\n")
    _run(["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
          "-out", "server.crt", "-days", "3650", "-extfile", "server.ext"], d)
    os.chmod(os.path.join(d, "ca.key"), 0o600)
    os.chmod(key, 0o600)
    return ca_crt, crt, key


def server_context(d):
    ca_crt, crt, key = ensure_certs(d)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(crt, key)
    ctx.set_alpn_protocols(["http/1.1"])
    with open(ca_crt, "rb") as fh:
        ca_pem = fh.read()
    return ctx, ca_pem
