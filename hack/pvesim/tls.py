"""Self-signed server certificate made with the openssl CLI, and its
SHA-256 fingerprint in PVE's form (AA:BB:...; of the DER certificate)."""

import hashlib
import os
import ssl
import subprocess


def make_cert(directory):
    cert = os.path.join(directory, "pve-ssl.pem")
    key = os.path.join(directory, "pve-ssl.key")
    if not (os.path.exists(cert) and os.path.exists(key)):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048",
             "-nodes", "-keyout", key, "-out", cert, "-days", "3650", "-subj",
             "/OU=PVE Cluster Node/O=Proxmox Virtual Environment/CN=pve-sim",
             "-addext", "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost",
             "-addext", "basicConstraints=critical,CA:TRUE"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return cert, key


def fingerprint(cert_path):
    with open(cert_path) as f:
        der = ssl.PEM_cert_to_DER_cert(f.read())
    h = hashlib.sha256(der).hexdigest().upper()
    return ":".join(h[i:i + 2] for i in range(0, len(h), 2))


def server_context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx
