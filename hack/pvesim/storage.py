"""Storages and the volumes on them.

Per host: "local" (dir: iso, vztmpl, backup, snippets, import; not shared) and
"local-lvm" (lvmthin: images, rootdir; not shared).  Cluster-wide: "ceph"
(rbd: images, rootdir; shared).  A template given as NAME:VMID@HOST lives on
HOST's local-lvm; one without @HOST lives on ceph and can be cloned anywhere.
"""

import time

GiB = 1 << 30
TiB = 1 << 40


class StorageDef:
    def __init__(self, sid, stype, content, shared, total, path=None):
        self.id = sid
        self.type = stype
        self.content = content
        self.shared = shared
        self.total = total
        self.path = path

    def content_str(self):
        return ",".join(sorted(self.content))


DEFS = {
    "local": StorageDef("local", "dir", {"iso", "vztmpl", "backup", "snippets", "import"},
                        False, 100 * GiB, "/var/lib/vz"),
    "local-lvm": StorageDef("local-lvm", "lvmthin", {"images", "rootdir"}, False, 2 * TiB),
    "ceph": StorageDef("ceph", "rbd", {"images", "rootdir"}, True, 20 * TiB),
}

ISO_DIR = {"local": "/var/lib/vz/template/iso"}


class Volume:
    def __init__(self, storage, node, volname, size, vmid=None, content="images",
                 data=None, fmt="raw"):
        self.storage = storage
        self.node = node          # None on shared storage
        self.volname = volname
        self.size = size
        self.vmid = vmid
        self.content = content
        self.data = data
        self.format = fmt
        self.ctime = int(time.time())

    @property
    def volid(self):
        return "%s:%s" % (self.storage, self.volname)


class Storages:
    def __init__(self, hosts):
        self.hosts = list(hosts)
        self.vols = {}   # (node|None, sid) -> {volname: Volume}

    def exists(self, sid):
        return sid in DEFS

    def on_node(self, node):
        return [DEFS[s] for s in ("local", "local-lvm", "ceph")]

    def key(self, sid, node):
        return (None if DEFS[sid].shared else node, sid)

    def bucket(self, sid, node):
        return self.vols.setdefault(self.key(sid, node), {})

    def get(self, volid, node):
        if ":" not in volid:
            return None
        sid, volname = volid.split(":", 1)
        if sid not in DEFS:
            return None
        return self.bucket(sid, node).get(volname)

    def alloc(self, sid, node, volname, size, vmid=None, content="images", data=None,
              fmt="raw"):
        v = Volume(sid, None if DEFS[sid].shared else node, volname, size, vmid, content,
                   data, fmt)
        self.bucket(sid, node)[volname] = v
        return v

    def free(self, volid, node):
        if ":" not in volid:
            return False
        sid, volname = volid.split(":", 1)
        if sid not in DEFS:
            return False
        return self.bucket(sid, node).pop(volname, None) is not None

    def used(self, sid, node):
        return sum(v.size for v in self.bucket(sid, node).values())

    def list(self, sid, node, content=None, vmid=None):
        out = []
        for v in sorted(self.bucket(sid, node).values(), key=lambda v: v.volname):
            if content and v.content != content:
                continue
            if vmid is not None and v.vmid != vmid:
                continue
            out.append(v)
        return out

    def all_volumes(self):
        for (node, sid), b in sorted(self.vols.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
            for v in b.values():
                yield v

    def next_disk_name(self, sid, node, vmid):
        b = self.bucket(sid, node)
        n = 0
        while True:
            cand = "vm-%d-disk-%d" % (vmid, n)
            if cand not in b and not any(k.endswith("/" + cand) for k in b):
                return cand
            n += 1
