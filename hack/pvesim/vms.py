"""A VM and its qm.conf-style configuration.

Config values are kept as the strings the config file would hold; GET config
renders them with qemu-server's types (integer and boolean keys become JSON
numbers, everything else - including "memory" - stays a string).
"""

import base64
import hashlib
import re
import uuid as uuidlib

from .formats import parse_size, split_list

DRIVE_RE = re.compile(r"^(ide|sata|scsi|virtio)(\d+)$|^(efidisk0|tpmstate0)$")
UNUSED_RE = re.compile(r"^unused(\d+)$")

# keys that apply at once on a running VM (qemu-server's fast-plug options,
# cloud-init options, and network/disk hotplug which is on by default)
HOTPLUG_IMMEDIATE = {
    "lock", "name", "onboot", "shares", "startup", "description", "protection",
    "vmstatestorage", "hookscript", "tags",
    "ciuser", "cipassword", "citype", "ciupgrade", "cicustom", "nameserver",
    "searchdomain", "sshkeys",
}

CLOUDINIT_KEYS = {"ciuser", "cipassword", "citype", "ciupgrade", "cicustom", "nameserver",
                  "searchdomain", "sshkeys"}


def is_drive_key(key):
    return DRIVE_RE.match(key) is not None


def hot_pluggable(key):
    return (key in HOTPLUG_IMMEDIATE or key.startswith("ipconfig") or key.startswith("net")
            or is_drive_key(key) or UNUSED_RE.match(key) is not None)


def parse_kv(value, default_key=None):
    """Loose property-string parse (the value was validated already)."""
    out = {}
    for part in (value or "").split(","):
        if part == "":
            continue
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
        elif default_key:
            out[default_key] = part
    return out


NET_MODELS = ("e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551",
              "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio",
              "vmxnet3")


def parse_net(value):
    d = parse_kv(value, "model")
    for m in NET_MODELS:
        if m in d:
            d["macaddr"] = d.pop(m)
            d["model"] = m
    return d


def print_net(d):
    parts = []
    model = d.get("model", "virtio")
    parts.append("%s=%s" % (model, d["macaddr"]) if d.get("macaddr") else model)
    for k in sorted(d):
        if k in ("model", "macaddr"):
            continue
        parts.append("%s=%s" % (k, d[k]))
    return ",".join(parts)


def parse_drive(value):
    d = parse_kv(value, "file")
    if "volume" in d and "file" not in d:
        d["file"] = d.pop("volume")
    return d


def print_drive(d):
    parts = [d["file"]]
    for k in sorted(d):
        if k != "file":
            parts.append("%s=%s" % (k, d[k]))
    return ",".join(parts)


def drive_is_cdrom(d, exclude_cloudinit=False):
    if exclude_cloudinit and drive_is_cloudinit(d):
        return False
    return d.get("media") == "cdrom"


def drive_is_cloudinit(d):
    return re.search(r"[:/]vm-\d+-cloudinit(\.\w+)?$", d.get("file", "")) is not None


def current_memory_mib(conf):
    mem = conf.get("memory")
    if mem is None:
        return 512
    d = parse_kv(mem, "current")
    try:
        return int(d.get("current", 512))
    except ValueError:
        return 512


def vcpus(conf):
    try:
        return int(conf.get("sockets", 1)) * int(conf.get("cores", 1))
    except ValueError:
        return 1


def boot_disk(conf):
    """(key, drive) of the boot disk: first disk of the boot order, else
    virtio0 > scsi0 > sata0 > ide0."""
    order = []
    boot = conf.get("boot", "")
    m = re.search(r"order=([^,]+)", boot)
    if m:
        order = split_list(m.group(1))
    for key in order + ["virtio0", "scsi0", "sata0", "ide0"]:
        if key in conf and is_drive_key(key):
            d = parse_drive(conf[key])
            if not drive_is_cdrom(d) and not drive_is_cloudinit(d):
                return key, d
    return None, None


def drive_size(d):
    s = d.get("size") if d else None
    return parse_size(s) if s else 0


def decode_smbios1(value):
    """smbios1 as a dict, base64 fields decoded when base64=1."""
    d = parse_kv(value or "")
    if d.get("base64") in ("1", "on", "yes", "true"):
        for k in ("serial", "sku", "manufacturer", "product", "version", "family"):
            if k in d:
                try:
                    d[k] = base64.b64decode(d[k], validate=False).decode("utf-8", "replace")
                except Exception:
                    pass
    return d


def gen_uuid(rng):
    return str(uuidlib.UUID(int=rng.getrandbits(128), version=4))


def gen_mac(rng):
    # Proxmox's default OUI for generated addresses
    return "BC:24:11:%02X:%02X:%02X" % (rng.randrange(256), rng.randrange(256),
                                         rng.randrange(256))


class VM:
    def __init__(self, vmid, node, conf):
        self.vmid = vmid
        self.node = node
        self.conf = conf              # current config (strings)
        self.pending = {}             # pending changes (running VM)
        self.pending_delete = []
        self.running = False
        self.started_at = None
        self.pid = None
        self.ha = False
        self.boot_gen = 0
        self.boot_conf = None         # config the guest booted with
        self.guest = None             # guest-side info for /_sim/vms
        self.creating = False         # clone in progress
        self.destroying = False

    @property
    def template(self):
        return self.conf.get("template") == "1"

    @property
    def name(self):
        return self.conf.get("name")

    @property
    def lock(self):
        return self.conf.get("lock")

    def merged_conf(self):
        c = dict(self.conf)
        c.update(self.pending)
        for k in self.pending_delete:
            c.pop(k, None)
        return c

    def conf_text(self, conf=None):
        conf = self.conf if conf is None else conf
        lines = []
        if "description" in conf:
            for ln in conf["description"].split("\n"):
                lines.append("#" + ln)
        for k in sorted(conf):
            if k == "description":
                continue
            lines.append("%s: %s" % (k, conf[k]))
        if self.pending or self.pending_delete:
            lines.append("")
            lines.append("[PENDING]")
            for k in sorted(self.pending):
                lines.append("%s: %s" % (k, self.pending[k]))
            if self.pending_delete:
                lines.append("delete: " + ",".join(self.pending_delete))
        return "\n".join(lines) + "\n"

    def digest(self):
        return hashlib.sha1(self.conf_text().encode("utf-8")).hexdigest()

    def memory_bytes(self, conf=None):
        return current_memory_mib(self.conf if conf is None else conf) * 1024 * 1024

    def cpus(self, conf=None):
        return vcpus(self.conf if conf is None else conf)

    def maxdisk(self, conf=None):
        _, d = boot_disk(self.conf if conf is None else conf)
        return drive_size(d)

    def drives(self, conf=None):
        conf = self.conf if conf is None else conf
        return [(k, parse_drive(v)) for k, v in sorted(conf.items()) if is_drive_key(k)]

    def volumes(self, conf=None):
        """Volume IDs referenced by disk/unused keys (not ISO images)."""
        conf = self.conf if conf is None else conf
        out = []
        for k, v in sorted(conf.items()):
            if is_drive_key(k) or UNUSED_RE.match(k):
                d = parse_drive(v)
                f = d.get("file", "")
                if f and f not in ("none", "cdrom") and ":" in f and \
                        (not drive_is_cdrom(d) or drive_is_cloudinit(d)):
                    out.append(f)
        return out

    def next_unused_key(self):
        n = 0
        while "unused%d" % n in self.conf:
            n += 1
        return "unused%d" % n
