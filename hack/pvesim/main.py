"""pve-sim entry point: flags, wiring, config-out, ready line."""

import argparse
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import uuid

from . import formats, tls
from .control import Control
from .faults import Faults
from .httpserver import App, Server
from .schema import Schema, default_path as schema_default_path
from .state import ALL_PRIVS, Sim


def quantity(text):
    m = re.match(r"^(\d+(?:\.\d+)?)\s*(Ki|Mi|Gi|Ti|K|M|G|T|k)?B?$", text.strip())
    if not m:
        raise argparse.ArgumentTypeError("bad quantity %r" % text)
    mult = {None: 1, "k": 1000, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "T": 1000 ** 4,
            "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}[m.group(2)]
    return int(float(m.group(1)) * mult)


def fraction(text):
    v = float(text)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError("fraction must be in [0, 1]")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="pve-sim",
        description="Proxmox VE 8/9 API stand-in (/api2/json) for Carpenter's tests.")
    a = p.add_argument
    a("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any free port)")
    a("--cluster", default="pve-sim", help="cluster name (the Carpenter region)")
    a("--hosts", default="pve1", help="comma-separated host (node) names")
    a("--host-cpus", type=int, default=32)
    a("--host-memory", type=quantity, default=quantity("128Gi"))
    a("--template", dest="templates", action="append", default=[],
      help="NAME:VMID[@HOST]; with @HOST on that host's local-lvm, else on shared ceph")
    a("--template-disk", default="20G", help="template boot disk size (PVE size syntax)")
    a("--pools", default="", help="comma-separated resource pools")
    a("--clone-seconds", type=float, default=2.0, help="linked clone duration")
    a("--full-clone-seconds", type=float, default=None, help="full clone duration (3x linked)")
    a("--boot-seconds", type=float, default=5.0, help="start finished -> Node registered")
    a("--start-seconds", type=float, default=0.5, help="qmstart task duration")
    a("--stop-seconds", type=float, default=0.5, help="qmstop task duration")
    a("--shutdown-seconds", type=float, default=2.0, help="ACPI shutdown duration")
    a("--destroy-seconds", type=float, default=0.5, help="qmdestroy task duration")
    a("--task-seconds", type=float, default=0.3, help="qmconfig/resize/imgcopy duration")
    a("--stats-seconds", type=float, default=2.0, help="pvestatd push interval (names, status)")
    a("--max-full-clones", type=int, default=2,
      help="concurrent full clones per storage before storage lock timeouts")
    a("--storage-lock-seconds", type=float, default=5.0,
      help="wait before a contended full clone fails with a storage lock timeout")
    a("--flock-timeout", type=float, default=10.0, help="qemu-server config flock wait")
    a("--nextid-lower", type=int, default=100)
    a("--kubeconfig", help="kube-sim kubeconfig: booted VMs register Nodes and heartbeat")
    a("--heartbeat-seconds", type=float, default=5.0, help="node Lease renew interval")
    # A kubelet posts an unchanged status every nodeStatusReportFrequency
    # (5m by default) and renews its Lease in between.
    a("--node-status-seconds", type=float, default=300.0, help="node status (Ready) refresh")
    a("--kubelet-version", default="v1.31.4+k3s1")
    a("--ccm-labels", action="store_true",
      help="also set topology.kubernetes.io/region|zone as a Proxmox CCM would")
    a("--config-out", required=True, help="write Carpenter's --pve-config YAML here")
    a("--config-out-noperm", help="same for the token without privileges")
    a("--cert-dir", help="keep the server certificate here (default: a temp dir)")
    a("--cert-out", help="copy the server certificate (PEM, also a CA file) here")
    a("--token-id", default="carpenter@pve!carpenter")
    a("--token-secret", default=None, help="default: a random UUID")
    a("--token-privs", default="", help="comma list; default every privilege")
    a("--noperm-token-id", default="carpenter@pve!noperm")
    a("--pve-version", type=int, choices=(8, 9), default=8)
    a("--request-log", help="append every /api2 request as a JSON line")
    a("--seed", type=int, default=0)
    a("--fail-clone-fraction", type=fraction, default=0.0)
    a("--hang-tasks-fraction", type=fraction, default=0.0)
    a("--hang-task-types", default="", help="limit hangs to these task types (qmclone,...)")
    a("--fault-500", type=fraction, default=0.0, help="fraction answered 500 before acting")
    a("--fault-500-after", type=fraction, default=0.0,
      help="fraction answered 500 after acting (lost response)")
    a("--fault-methods", default="", help="limit --fault-500* to these methods")
    a("--fault-500-message", default="pve-sim injected fault")
    a("--fault-body", choices=("huge", "huge-stream", "malformed"), default="huge",
      help="what --fault-body-fraction answers are: a huge JSON body (with or without "
      "Content-Length) or one that is not JSON")
    a("--fault-body-fraction", type=fraction, default=0.0,
      help="fraction of successful answers replaced by a --fault-body answer")
    a("--fault-body-bytes", type=int, default=100 << 20, help="size of a huge body")
    a("--delay-ms", type=float, default=0.0, help="added to every /api2 answer")
    a("--delay-jitter-ms", type=float, default=0.0)
    a("--bad-token-delay", type=float, default=3.0, help="401 delay (PVE: 3 s)")
    a("--host-offline", action="append", default=[],
      help="HOST[@AFTER_S[+FOR_S]]: host goes offline (repeatable)")
    a("--host-offline-mode", choices=("crash", "partition"), default="crash")
    a("--host-maintenance", action="append", default=[],
      help="HOST[@AFTER_S[+FOR_S]]: HA node maintenance enabled on HOST (repeatable)")
    a("--no-node-hastate", action="store_true",
      help="as PVE before 8.3: no hastate on /cluster/resources node entries "
      "(maintenance shows only in /cluster/ha/status/current)")
    a("--offline-delay-ms", type=float, default=500.0,
      help="how long a node-scoped call to an offline host takes to fail (595)")
    a("--keepalive-timeout", type=float, default=5.0)
    a("--max-post-bytes", type=int, default=512 * 1024)
    a("--max-upload-bytes", type=int, default=64 << 20)
    a("--pci-mapping", dest="pci_mappings", action="append", default=[],
      help="ID=HOST:N[,HOST:N...][@VENDOR:DEVICE]: a PCI resource mapping with N devices on "
      "each host (repeatable; default id 10de:2684, an NVIDIA GPU)")
    a("--usb-mapping", dest="usb_mappings", action="append", default=[],
      help="ID=HOST:N[,...][@VENDOR:PRODUCT]: a USB resource mapping (repeatable)")
    a("--device-resource", dest="device_resources", action="append", default=[],
      help="VENDOR[:DEVICE]=RESOURCE: the extended resource a guest's device of that id "
      "reports (defaults: 10de nvidia.com/gpu, 1002 amd.com/gpu, 8086 gpu.intel.com/i915)")
    a("--apidata", default=None,
      help="the PVE API schema (apidata.js, or .js.gz); default: PVE_APIDATA, else the copy in hack/pvesim/data")
    a("--verbose", action="store_true")
    opts = p.parse_args(argv)
    opts.hosts = [h for h in opts.hosts.split(",") if h]
    for h in opts.hosts:
        if not formats.NODE_RE.match(h):
            p.error("bad host name %r" % h)
    opts.pools = [x for x in opts.pools.split(",") if x]
    if opts.full_clone_seconds is None:
        opts.full_clone_seconds = opts.clone_seconds * 3
    from . import devices
    try:
        for kind, texts in (("pci", opts.pci_mappings), ("usb", opts.usb_mappings)):
            for t in texts:
                for host, _ in devices.parse_mapping_flag(t, kind)[2]:
                    if host not in opts.hosts:
                        raise ValueError("--%s-mapping %r: no host %r" % (kind, t, host))
        for t in opts.device_resources:
            devices.parse_resource_flag(t)
    except ValueError as e:
        p.error(str(e))
    opts.apidata = opts.apidata or schema_default_path()
    if not os.path.isfile(opts.apidata):
        p.error("the PVE API schema %s does not exist (--apidata or PVE_APIDATA)" % opts.apidata)
    return opts


def yaml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_config(path, region, url, tokenid, secret, fp):
    text = ("clusters:\n"
            "  - region: %s\n"
            "    url: %s\n"
            "    tokenID: %s\n"
            "    tokenSecret: %s\n"
            "    fingerprint: %s\n") % (yaml_str(region), url, yaml_str(tokenid),
                                         yaml_str(secret), yaml_str(fp))
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".pve-sim-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    formats.set_pve_version(opts.pve_version)
    schema = Schema(opts.apidata)
    faults = Faults(opts)
    rng = random.Random(opts.seed)

    guests = None
    if True:
        from .guest import GuestManager
        guests = GuestManager(opts)

    sim = Sim(opts, schema, faults, guests)
    secret = opts.token_secret or str(uuid.UUID(int=rng.getrandbits(128), version=4))
    noperm_secret = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    privs = [x for x in opts.token_privs.split(",") if x] or ALL_PRIVS
    sim.add_token(opts.token_id, secret, privs)
    sim.add_token(opts.noperm_token_id, noperm_secret, [])

    # a temporary certificate folder of our own goes when we stop
    cert_dir = opts.cert_dir or tempfile.mkdtemp(prefix="pve-sim-")
    own_cert_dir = cert_dir if not opts.cert_dir else None
    os.makedirs(cert_dir, exist_ok=True)
    cert, key = tls.make_cert(cert_dir)
    fp = tls.fingerprint(cert)
    sim.fingerprint = fp
    if opts.cert_out:
        with open(cert) as src, open(opts.cert_out, "w") as dst:
            dst.write(src.read())

    host, _, port = opts.listen.rpartition(":")
    info = {}
    control = Control(sim, faults, guests, info)
    app = App(opts, sim, schema, faults, control)
    server = Server((host.strip("[]") or "127.0.0.1", int(port)), app,
                    tls.server_context(cert, key))
    real_port = server.server_address[1]
    shown = host if ":" not in host.strip("[]") else "[%s]" % host.strip("[]")
    url = "https://%s:%d/api2/json" % (shown, real_port)
    info.update({"url": url, "fingerprint": fp, "cluster": opts.cluster, "cert": cert,
                 "tokens": [{"tokenID": opts.token_id, "tokenSecret": secret,
                             "privileges": sorted(privs)},
                            {"tokenID": opts.noperm_token_id, "tokenSecret": noperm_secret,
                             "privileges": []}]})
    write_config(opts.config_out, opts.cluster, url, opts.token_id, secret, fp)
    if opts.config_out_noperm:
        write_config(opts.config_out_noperm, opts.cluster, url, opts.noperm_token_id,
                     noperm_secret, fp)

    if guests:
        guests.start()
    sim.start_threads()

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("pve-sim ready %s" % url, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        if guests:
            guests.shutdown()
        if own_cert_dir:
            shutil.rmtree(own_cert_dir, ignore_errors=True)
    return 0
