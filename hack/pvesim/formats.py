"""Named JSON-schema formats of the PVE API (pve-common JSONSchema.pm and
qemu-server), as far as the simulator serves them.

A format is either a function that raises FormatError(msg) on a bad value, or
a dict: a property-string format (key=value,key=value) checked by
schema.parse_property_string.  Error texts are the ones PVE dies with,
including the trailing newline: they end up verbatim in the "errors" map.
"""

import ipaddress
import re
import urllib.parse


class FormatError(Exception):
    def __init__(self, msg):
        super().__init__(msg)
        self.msg = msg if msg.endswith("\n") else msg + "\n"


def split_list(text):
    """PVE::Tools::split_list."""
    text = text or ""
    if "\0" in text:
        return text.split("\0")
    text = re.sub(r"[,;]", " ", text).strip()
    return [x for x in re.split(r"\s+", text) if x != ""]


CONFIGID_RE = re.compile(r"^[a-z][a-z0-9_-]+$", re.I | re.A)
TAG_RE = re.compile(r"^[a-z0-9_][a-z0-9_\-+.]*$", re.I | re.A)
NODE_RE = re.compile(r"^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$")
_NAME = r"([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)"
DNS_RE = re.compile(r"^(" + _NAME + r"\.)*" + _NAME + r"$")
VOLID_RE = re.compile(r"^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$", re.I | re.S)
NEW_DISK_RE = re.compile(r"^(([^/:\s]+):)?(\d+(\.\d+)?)$")


def parse_size(value):
    m = re.match(r"^(\d+(\.\d+)?)([KMGT])?$", value)
    if not m:
        return None
    size = float(m.group(1))
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(m.group(3), 1)
    return int(size * mult)


def format_size(size):
    size = int(size)
    for unit, nxt in (("", "K"), ("K", "M"), ("M", "G"), ("G", "T")):
        if size % 1024 != 0:
            return "%d%s" % (size, unit)
        size //= 1024
        if nxt == "T":
            return "%dT" % size
    return "%dT" % size


def is_ipv4(v):
    try:
        ipaddress.IPv4Address(v)
        return True
    except ValueError:
        return False


def is_ipv6(v):
    try:
        ipaddress.IPv6Address(v)
        return True
    except ValueError:
        return False


def _cidr(v, v6):
    if "/" not in v:
        return False
    addr, bits = v.rsplit("/", 1)
    if not bits.isdigit():
        return False
    ok = is_ipv6(addr) if v6 else is_ipv4(addr)
    return ok and 7 < int(bits) <= (128 if v6 else 32)


def f_urlencoded(v):
    if not re.match(r"^[-%a-zA-Z0-9_.!~*'()]*$", v):
        raise FormatError("invalid urlencoded string: %s" % v)


def f_configid(v):
    if not CONFIGID_RE.match(v):
        raise FormatError("invalid configuration ID '%s'" % v)


def f_storage_id(v):
    if not re.match(r"^[a-z][a-z0-9\-_.]*[a-z0-9]$", v, re.I):
        raise FormatError("storage ID '%s' contains illegal characters" % v)


def f_bridge_id(v):
    if not re.match(r"^[-_.\w\d]+$", v, re.A):
        raise FormatError("invalid bridge ID '%s'" % v)


def f_vmid(v):
    if not re.match(r"^[1-9][0-9]{2,8}$", str(v)):
        raise FormatError("value does not look like a valid VM ID")


def f_node(v):
    if not NODE_RE.match(v):
        raise FormatError("value does not look like a valid node name")


def f_mac(v):
    if not re.match(r"^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$", v, re.I):
        raise FormatError("value does not look like a valid unicast MAC address")


def f_ipv4(v):
    if not is_ipv4(v):
        raise FormatError("value does not look like a valid IPv4 address")


def f_ipv6(v):
    if not is_ipv6(v):
        raise FormatError("value does not look like a valid IPv6 address")


def f_ip(v):
    if not (is_ipv4(v) or is_ipv6(v)):
        raise FormatError("value does not look like a valid IP address")


def f_cidr(v):
    if not (_cidr(v, False) or _cidr(v, True)):
        raise FormatError("value does not look like a valid CIDR network")


def f_cidrv4(v):
    if not _cidr(v, False):
        raise FormatError("value does not look like a valid IPv4 CIDR network")


def f_cidrv6(v):
    if not _cidr(v, True):
        raise FormatError("value does not look like a valid IPv6 CIDR network")


def f_ipv4_config(v):
    if not (v in ("dhcp", "manual") or _cidr(v, False)):
        raise FormatError("value does not look like a valid ipv4 network configuration")


def f_ipv6_config(v):
    if not (v in ("auto", "dhcp", "manual") or _cidr(v, True)):
        raise FormatError("value does not look like a valid ipv6 network configuration")


def f_dns_name(v):
    if not DNS_RE.match(v):
        raise FormatError("value does not look like a valid DNS name")


def f_address(v):
    if not (is_ipv4(v) or is_ipv6(v) or DNS_RE.match(v)):
        raise FormatError("value does not look like a valid address: %s" % v)


def f_tag(v):
    if not TAG_RE.match(v):
        raise FormatError("invalid characters in tag")


def f_disk_size(v):
    if parse_size(v) is None:
        raise FormatError("value does not look like a valid disk size: %s" % v)


def f_startup(v):
    ok = bool(v)
    for p in (v or "").split(","):
        if re.match(r"^\s*$", p):
            continue
        if not (re.match(r"^(order=)?(\d+)$", p) or re.match(r"^(up|down)=(\d+)$", p)):
            ok = False
    if not ok:
        raise FormatError("unable to parse startup options")


def f_volume_id(v):
    if not VOLID_RE.match(v):
        raise FormatError("unable to parse volume ID '%s'" % v)


def f_volume_or_path(v):
    if v.startswith("/"):
        return
    f_volume_id(v)


def f_volume_or_qm_path(v):
    if v in ("none", "cdrom"):
        return
    f_volume_or_path(v)


STORAGE_CONTENT = ("images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import", "none")


def f_storage_content(v):
    if v not in STORAGE_CONTENT:
        raise FormatError("invalid content type '%s'" % v)


def f_task_status_type(v):
    if not re.match(r"^(ok|error|warning|unknown)$", v, re.I):
        raise FormatError("invalid status '%s'" % v)


def f_poolid_8(v):
    if len(v.split("/")) > 3:
        raise FormatError("pool name '%s' nested too deeply (max levels = 3)" % v)
    if not re.match(r"^[A-Za-z0-9_\-]+(?:/[A-Za-z0-9_\-]+){0,2}$", v):
        raise FormatError("pool name '%s' contains invalid characters" % v)


def f_poolid_9(v):
    f_poolid_8(v)
    if not re.match(r"^[A-Za-z]", v):
        raise FormatError("pool name '%s' contains invalid characters" % v)


def f_cpuset(v):
    if not re.match(r"^\s*\d+(-\d+)?(\s*,\s*\d+(-\d+)?)*\s*$", v):
        raise FormatError("unable to parse cpuset '%s'" % v)


def f_hotplug(v):
    if v in ("0", "1"):
        return
    for item in v.split(","):
        if item not in ("network", "disk", "cpu", "memory", "usb", "cloudinit"):
            raise FormatError("unable to parse hotplug option")


DRIVE_MAX = {"ide": 4, "sata": 6, "scsi": 31, "virtio": 16}


def is_valid_drivename(name):
    m = re.match(r"^(ide|sata|scsi|virtio)(\d+)$", name)
    if m:
        return int(m.group(2)) < DRIVE_MAX[m.group(1)]
    return name in ("efidisk0", "tpmstate0")


def f_bootdisk(v):
    if not is_valid_drivename(v):
        raise FormatError("invalid drive name '%s'" % v)


def f_bootdev(v):
    if is_valid_drivename(v) and not v.startswith(("efidisk", "tpmstate")):
        return
    for base, mx in (("net", 32), ("usb", 14), ("hostpci", 16)):
        m = re.match(r"^%s(\d+)$" % base, v)
        if m and int(m.group(1)) < mx:
            return
    raise FormatError("invalid boot device '%s'" % v)


def f_any(v):
    return


# Property-string formats that apidata.js names but does not expand.
SMBIOS1_FMT = {
    "uuid": {"type": "string", "optional": 1,
             "pattern": r"[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}"},
    "base64": {"type": "boolean", "optional": 1},
}
for _k in ("version", "serial", "manufacturer", "product", "sku", "family"):
    SMBIOS1_FMT[_k] = {"type": "string", "optional": 1, "pattern": r"[A-Za-z0-9+\/]+={0,2}"}

# qemu-server's PVE::QemuServer::PCI $hostpci_fmt.
_PCIRE = r"(?:[a-f0-9]{4,}:)?[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?"
_HEXID = r"^0x[0-9a-fA-F]{4}$"
HOSTPCI_FMT = {
    "host": {"default_key": 1, "optional": 1, "type": "string",
             "pattern": _PCIRE + "(;" + _PCIRE + ")*"},
    "mapping": {"optional": 1, "type": "string", "format": "pve-configid"},
    "rombar": {"type": "boolean", "optional": 1},
    "romfile": {"type": "string", "optional": 1, "pattern": r"[^,;]+"},
    "pcie": {"type": "boolean", "optional": 1},
    "x-vga": {"type": "boolean", "optional": 1},
    "legacy-igd": {"type": "boolean", "optional": 1},
    "mdev": {"type": "string", "optional": 1, "pattern": r"[^/\.:]+"},
    "vendor-id": {"type": "string", "optional": 1, "pattern": _HEXID},
    "device-id": {"type": "string", "optional": 1, "pattern": _HEXID},
    "sub-vendor-id": {"type": "string", "optional": 1, "pattern": _HEXID},
    "sub-device-id": {"type": "string", "optional": 1, "pattern": _HEXID},
    "driver": {"type": "string", "optional": 1, "enum": ["vfio", "keep"]},
}

IPCONFIG_FMT = {
    "ip": {"type": "string", "format": "pve-ipv4-config", "optional": 1},
    "gw": {"type": "string", "format": "ipv4", "optional": 1},
    "ip6": {"type": "string", "format": "pve-ipv6-config", "optional": 1},
    "gw6": {"type": "string", "format": "ipv6", "optional": 1},
}

CICUSTOM_FMT = {k: {"type": "string", "format": "pve-volume-id", "optional": 1}
                for k in ("meta", "network", "user", "vendor")}

BOOT_FMT = {
    "legacy": {"optional": 1, "default_key": 1, "type": "string", "pattern": "[acdn]{1,4}"},
    "order": {"optional": 1, "type": "string", "format": "pve-qm-bootdev-list"},
}

FUNCS = {
    "string": f_any,
    "urlencoded": f_urlencoded,
    "pve-configid": f_configid,
    "pve-storage-id": f_storage_id,
    "pve-bridge-id": f_bridge_id,
    "pve-vmid": f_vmid,
    "pve-node": f_node,
    "mac-addr": f_mac,
    "ipv4": f_ipv4,
    "ipv6": f_ipv6,
    "ip": f_ip,
    "CIDR": f_cidr,
    "CIDRv4": f_cidrv4,
    "CIDRv6": f_cidrv6,
    "pve-ipv4-config": f_ipv4_config,
    "pve-ipv6-config": f_ipv6_config,
    "dns-name": f_dns_name,
    "address": f_address,
    "pve-tag": f_tag,
    "disk-size": f_disk_size,
    "pve-startup-order": f_startup,
    "pve-volume-id": f_volume_id,
    "pve-volume-id-or-absolute-path": f_volume_or_path,
    "pve-volume-id-or-qm-path": f_volume_or_qm_path,
    "pve-storage-content": f_storage_content,
    "pve-task-status-type": f_task_status_type,
    "pve-poolid": f_poolid_8,
    "pve-cpuset": f_cpuset,
    "pve-hotplug-features": f_hotplug,
    "pve-qm-bootdisk": f_bootdisk,
    "pve-qm-bootdev": f_bootdev,
    "storage-pair": f_any,
}

HASHES = {
    "pve-qm-smbios1": SMBIOS1_FMT,
    "pve-qm-ipconfig": IPCONFIG_FMT,
    "pve-qm-cicustom": CICUSTOM_FMT,
    "pve-qm-boot": BOOT_FMT,
    "pve-qm-hostpci": HOSTPCI_FMT,
}

# Named formats the simulator accepts without checking (documented in
# docs/pve-sim.md): CPU models and devices Carpenter never sets.
UNCHECKED = {
    "pve-vm-cpu-conf", "pve-qm-watchdog", "pve-qm-rng",
    "pve-qemu-sev-fmt", "pve-qemu-tdx-fmt",
}


def set_pve_version(major):
    FUNCS["pve-poolid"] = f_poolid_9 if major >= 9 else f_poolid_8


def uri_unescape(s):
    return urllib.parse.unquote(s, errors="surrogateescape")
