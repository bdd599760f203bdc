"""Host devices and the cluster-wide resource mappings that name them.

--pci-mapping / --usb-mapping create mappings as Datacenter > Resource
Mappings does (/cluster/mapping/pci and /usb, Proxmox VE 8+), each with one
map entry per device ("node=pve1,path=0000:01:00.0,id=10de:2684,
iommugroup=1"); the API creates, changes and deletes more.  What
qemu-server does with them is modelled after PVE::QemuServer::PCI and
::USB and API2/Qemu.pm:

- setting hostpciN / usbN: a mapped device needs Mapping.Use (plus
  VM.Config.HWType); a raw host device is root's only ("only root can set
  'hostpci0' config for non-mapped devices"); neither set: "either 'host'
  or 'mapping' must be set.";
- starting the VM: each hostpciN picks the first entry of the mapping on
  its host that no running VM holds ("PCI device mapping not found for
  'x'", "PCI device '0000:01:00.0' already in use by VMID '105'" with one
  entry, "could not find a free device for 'hostpci0'" with several);
  pcie=1 needs the q35 machine; a USB mapping takes the one entry of its
  host ("More than one USB mapping per host not supported");
- a stopped VM holds nothing.

The guest (guest.py) reports what its devices give the node, as a device
plugin would: --device-resource VENDOR[:DEVICE]=RESOURCE (defaults: NVIDIA
10de nvidia.com/gpu, AMD 1002 amd.com/gpu, Intel 8086 gpu.intel.com/i915).
"""

import collections
import re

from .errors import TaskError, die

MAPPING_PRIVS = ("Mapping.Modify", "Mapping.Use", "Mapping.Audit")
DEFAULT_RESOURCES = {"10de": "nvidia.com/gpu", "1002": "amd.com/gpu",
                     "8086": "gpu.intel.com/i915"}
DEFAULT_IDS = {"pci": "10de:2684", "usb": "10c4:ea60"}
Q35_DIE = ("q35 machine model is not enabled at /usr/share/perl5/PVE/QemuServer/PCI.pm "
           "line 510.")


def parse_mapping_flag(text, kind):
    """'ID=HOST:N[,HOST:N...][@VENDOR:DEVICE]' -> (id, device id, [(host, n)])."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9_-]+)=([^@]+)(?:@([0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}))?$",
                 text)
    if not m:
        raise ValueError("bad --%s-mapping %r (ID=HOST:N[,HOST:N][@VENDOR:DEVICE])"
                         % (kind, text))
    hosts = []
    for part in m.group(2).split(","):
        hm = re.match(r"^([A-Za-z0-9][A-Za-z0-9-]*):(\d+)$", part)
        if not hm:
            raise ValueError("bad host count %r in --%s-mapping %r" % (part, kind, text))
        hosts.append((hm.group(1), int(hm.group(2))))
    return m.group(1), (m.group(3) or DEFAULT_IDS[kind]).lower(), hosts


def parse_resource_flag(text):
    m = re.match(r"^([0-9A-Fa-f]{4}(?::[0-9A-Fa-f]{4})?)=(\S+/\S+)$", text)
    if not m:
        raise ValueError("bad --device-resource %r (VENDOR[:DEVICE]=RESOURCE)" % text)
    return m.group(1).lower(), m.group(2)


def _kv(text):
    out = {}
    for part in text.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
        elif part:
            out.setdefault("", part)
    return out


class Devices:
    def __init__(self, opts, hosts):
        self.maps = {"pci": collections.OrderedDict(), "usb": collections.OrderedDict()}
        self.resources = dict(DEFAULT_RESOURCES)
        for text in getattr(opts, "device_resources", None) or []:
            k, v = parse_resource_flag(text)
            self.resources[k] = v
        buses = collections.Counter()
        for kind in ("pci", "usb"):
            for text in getattr(opts, kind + "_mappings", None) or []:
                mid, devid, counts = parse_mapping_flag(text, kind)
                entries = []
                for host, n in counts:
                    if host not in hosts:
                        raise ValueError("--%s-mapping %r: no host %r" % (kind, text, host))
                    for _ in range(n):
                        buses[kind, host] += 1
                        b = buses[kind, host]
                        if kind == "pci":
                            entries.append("node=%s,path=0000:%02x:00.0,id=%s,iommugroup=%d"
                                           % (host, b, devid, 10 + b))
                        else:
                            entries.append("node=%s,path=1-%d,id=%s" % (host, b, devid))
                self.maps[kind][mid] = {"map": entries, "description": ""}

    # ------------------------------------------------------------ the API
    @staticmethod
    def _can_see(sim, token):
        return sim.has(token, *MAPPING_PRIVS, any_of=True)

    def list(self, sim, kind, token):
        if not self._can_see(sim, token):
            return []
        out = []
        for mid, m in self.maps[kind].items():
            e = {"id": mid, "map": list(m["map"]), "description": m.get("description", "")}
            for k in ("mdev", "live-migration-capable"):
                if k in m:
                    e[k] = int(m[k])
            out.append(e)
        return out

    def get(self, kind, mid):
        m = self.maps[kind].get(mid)
        if m is None:
            die("mapping '%s' not found" % mid)
        return dict(m, map=list(m["map"]))

    def create(self, kind, p):
        mid = p["id"]
        if mid in self.maps[kind]:
            die("create hardware mapping failed: %s ID '%s' already defined" % (kind, mid))
        m = {"map": list(p.get("map") or []), "description": p.get("description", "")}
        for k in ("mdev", "live-migration-capable"):
            if p.get(k) is not None:
                m[k] = p[k]
        self.maps[kind][mid] = m

    def update(self, kind, p):
        mid = p["id"]
        m = self.maps[kind].get(mid)
        if m is None:
            die("update hardware mapping failed: %s ID '%s' does not exist" % (kind, mid))
        for k in re.split(r"[,; ]+", p.get("delete") or ""):
            if k:
                m.pop(k, None)
        if p.get("map") is not None:
            m["map"] = list(p["map"])
        for k in ("description", "mdev", "live-migration-capable"):
            if p.get(k) is not None:
                m[k] = p[k]

    def delete(self, kind, mid):
        self.maps[kind].pop(mid, None)

    # ----------------------------------------------------- config changes
    def check_config_perm(self, sim, token, opt, value):
        """API2/Qemu.pm check_hostpci_perm / check_usb_perm (token users)."""
        path = "/vms"
        kind = "usb" if opt.startswith("usb") else "pci"
        d = _kv(value)
        host = d.get("host", d.get(""))
        if kind == "usb":
            sim.need(token, path, "VM.Config.HWType")
            if host:
                if host.lower() != "spice":
                    die("only root can set '%s' config for real devices" % opt)
            elif d.get("mapping"):
                sim.need(token, "/mapping/usb/%s" % d["mapping"], "Mapping.Use")
            else:
                die("either 'host' or 'mapping' must be set.")
            return
        if host:
            die("only root can set '%s' config for non-mapped devices" % opt)
        elif d.get("mapping"):
            sim.need(token, "/mapping/pci/%s" % d["mapping"], "Mapping.Use")
            sim.need(token, path, "VM.Config.HWType")
        else:
            die("either 'host' or 'mapping' must be set.")
        if d.get("romfile") is not None:
            die("only root@pam can set 'romfile' option")

    # ------------------------------------------------------------- start
    def _entries(self, kind, mid, node):
        m = self.maps[kind].get(mid)
        if m is None:
            return None
        out = []
        for e in m["map"]:
            d = _kv(e)
            if d.get("node") == node:
                out.append(d)
        return out

    @staticmethod
    def _holders(sim, vm, node):
        held = {}
        for other in sim.vms.values():
            if other is vm or other.node != node:
                continue
            if not (other.running or getattr(other, "starting", False)):
                continue
            for dev in getattr(other, "devices", None) or []:
                held[(dev["kind"], dev["path"])] = other.vmid
        return held

    def assign(self, sim, vm, conf, node):
        """The devices a starting VM gets; raises TaskError like qemu-server."""
        held = self._holders(sim, vm, node)
        got = []
        mine = set()

        def take(kind, key, path, devid, mapping):
            got.append({"kind": kind, "key": key, "path": path, "id": devid,
                        "mapping": mapping})
            mine.add((kind, path))

        machine = _kv(conf.get("machine", "")).get("type") or \
            _kv(conf.get("machine", "")).get("", "")
        q35 = "q35" in machine
        for n in range(16):
            key = "hostpci%d" % n
            if not conf.get(key):
                continue
            d = _kv(conf[key])
            mapping = d.get("mapping")
            host = d.get("host", d.get(""))
            if mapping:
                entries = self._entries("pci", mapping, node)
                if not entries:
                    raise TaskError("PCI device mapping not found for '%s'" % mapping)
                alts = [(e.get("path", ""), e.get("id", "")) for e in entries]
            elif host:
                alts = [(host, "")]
            else:
                raise TaskError("Either 'host' or 'mapping' must be set.")
            if d.get("pcie") == "1" and not q35:
                raise TaskError(Q35_DIE)
            if len(alts) == 1:
                path, devid = alts[0]
                owner = held.get(("pci", path))
                if owner is not None or ("pci", path) in mine:
                    raise TaskError("PCI device '%s' already in use by VMID '%s'"
                                    % (path, owner if owner is not None else vm.vmid))
                take("pci", key, path, devid, mapping or "")
                continue
            for path, devid in alts:
                if ("pci", path) in held or ("pci", path) in mine:
                    continue
                take("pci", key, path, devid, mapping)
                break
            else:
                raise TaskError("could not find a free device for '%s'" % key)
        for n in range(15):
            key = "usb%d" % n
            if not conf.get(key):
                continue
            d = _kv(conf[key])
            mapping = d.get("mapping")
            if not mapping:
                continue        # spice or a raw device: nothing to account
            entries = self._entries("usb", mapping, node)
            if not entries:
                raise TaskError("USB device mapping not found for '%s'" % mapping)
            if len(entries) > 1:
                raise TaskError("More than one USB mapping per host not supported")
            path, devid = entries[0].get("path", ""), entries[0].get("id", "")
            if ("usb", path) in held or ("usb", path) in mine:
                raise TaskError("start failed: QEMU exited with code 1")
            take("usb", key, path, devid, mapping)
        return got

    def node_resources(self, devices):
        """What the devices give a node: {resource: count}."""
        out = collections.Counter()
        for dev in devices or []:
            devid = (dev.get("id") or "").lower()
            res = self.resources.get(devid) or self.resources.get(devid.split(":")[0])
            if res:
                out[res] += 1
        return dict(out)

    def status(self, sim):
        """GET /_sim/devices: every mapping entry and the VM holding it."""
        out = []
        for kind in ("pci", "usb"):
            for mid, m in self.maps[kind].items():
                for e in m["map"]:
                    d = _kv(e)
                    holder = None
                    for vm in sim.vms.values():
                        if vm.node != d.get("node") or not (vm.running or
                                                            getattr(vm, "starting", False)):
                            continue
                        for dev in getattr(vm, "devices", None) or []:
                            if dev["kind"] == kind and dev["path"] == d.get("path"):
                                holder = vm.vmid
                    out.append({"kind": kind, "mapping": mid, "node": d.get("node"),
                                "path": d.get("path"), "id": d.get("id"), "vmid": holder})
        return out
