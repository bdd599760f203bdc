"""Inspection and control endpoints under /_sim (no auth; loopback only).

GET  /_sim/vms                      every VM: vmid, name, node, status, lock, tags,
                                    description, template, pool, ha, config, pending, guest
GET  /_sim/vms/{vmid}
POST /_sim/vms/{vmid}/kill          the qemu process dies (no task)
POST /_sim/vms/{vmid}/ha?managed=1  mark a VM HA-managed (delete then needs purge=1)
GET  /_sim/hosts                    hosts with online state and memory accounting
POST /_sim/hosts/{host}/offline?mode=crash|partition
POST /_sim/hosts/{host}/online
POST /_sim/hosts/{host}/maintenance?enable=1|0
                                    HA node maintenance on or off, as
                                    `ha-manager crm-command node-maintenance`
GET  /_sim/tasks                    every task with status, exitstatus and log
GET  /_sim/storage                  every volume (storage, node, volid, size, vmid)
POST /_sim/storage/{node}/{storage}/{content}/{name}[?vmid=N&size=BYTES]
                                    put a volume there: snippets (body = file, for
                                    cicustom), iso, or an orphan images volume
GET  /_sim/stats                    counters
GET  /_sim/faults, POST /_sim/faults (JSON object of new values)
GET  /_sim/tokens                   token ids and secrets, fingerprint, url
POST /_sim/stats-tick               push stats now (as pvestatd would on its next run)
"""

import json
import re
import urllib.parse

from .storage import DEFS


class Control:
    def __init__(self, sim, faults, guests, info):
        self.sim = sim
        self.faults = faults
        self.guests = guests
        self.info = info

    def vm_view(self, vm):
        sim = self.sim
        pool = None
        for name, pd in sim.pools.items():
            if vm.vmid in pd["members"]:
                pool = name
        d = {
            "vmid": vm.vmid, "name": vm.conf.get("name"), "node": vm.node,
            "status": "running" if vm.running else "stopped",
            "lock": vm.conf.get("lock"), "tags": vm.conf.get("tags"),
            "description": vm.conf.get("description"), "template": vm.template,
            "pool": pool, "ha": vm.ha, "config": dict(vm.conf),
            "pending": dict(vm.pending), "pending_delete": list(vm.pending_delete),
            "boot_gen": vm.boot_gen,
            "devices": list(getattr(vm, "devices", None) or []),
        }
        if self.guests:
            d["guest"] = self.guests.view(vm.vmid)
        return d

    def handle(self, h, method, url):
        app = h.server.app
        path = url.path.rstrip("/")
        q = dict(urllib.parse.parse_qsl(url.query))
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        sim = self.sim
        try:
            with sim.lock:
                out = self._route(method, path, q, body)
        except LookupError as e:
            app.reply_json(h, 404, {"error": str(e)})
            return
        except ValueError as e:
            app.reply_json(h, 400, {"error": str(e)})
            return
        app.reply_json(h, 200, out)

    def _route(self, method, path, q, body):
        sim = self.sim
        if method == "GET" and path == "/_sim/devices":
            return sim.devices.status(sim)
        if method == "GET" and path == "/_sim/vms":
            return [self.vm_view(vm) for vm in sorted(sim.vms.values(), key=lambda v: v.vmid)]
        m = re.match(r"^/_sim/vms/(\d+)(?:/(\w+))?$", path)
        if m:
            vm = sim.vms.get(int(m.group(1)))
            if vm is None:
                raise LookupError("no VM %s" % m.group(1))
            action = m.group(2)
            if method == "GET" and action is None:
                return self.vm_view(vm)
            if method == "POST" and action == "kill":
                return {"killed": sim.kill(vm.vmid)}
            if method == "POST" and action == "ha":
                vm.ha = q.get("managed", "1") == "1"
                sim.ha_used = sim.ha_used or vm.ha
                return {"vmid": vm.vmid, "ha": vm.ha}
            raise LookupError("unknown action")
        if method == "GET" and path == "/_sim/hosts":
            out = []
            for hst in sim.hosts.values():
                out.append({"name": hst.name, "online": hst.online, "mode": hst.mode,
                            "maintenance": hst.maintenance,
                            "cpus": hst.cpus, "maxmem": hst.mem,
                            "mem_used": sim.host_mem_used(hst.name),
                            "running_vms": sorted(v.vmid for v in sim.vms.values()
                                                  if v.node == hst.name and v.running)})
            return out
        m = re.match(r"^/_sim/hosts/([^/]+)/(offline|online|maintenance)$", path)
        if m and method == "POST":
            if m.group(1) not in sim.hosts:
                raise LookupError("no host %s" % m.group(1))
            if m.group(2) == "maintenance":
                enable = q.get("enable", "1")
                if enable not in ("0", "1"):
                    raise ValueError("enable must be 1 or 0")
                note = sim.set_maintenance(m.group(1), enable == "1")
                out = {"host": m.group(1),
                       "maintenance": sim.hosts[m.group(1)].maintenance}
                if note:
                    out["ignored"] = note
                return out
            if m.group(2) == "offline":
                mode = q.get("mode", "crash")
                if mode not in ("crash", "partition"):
                    raise ValueError("mode must be crash or partition")
                sim.set_offline(m.group(1), mode)
            else:
                sim.set_online(m.group(1))
            return {"host": m.group(1), "online": sim.hosts[m.group(1)].online}
        if method == "GET" and path == "/_sim/tasks":
            out = []
            for upid in sim.tasks.order:
                t = sim.tasks.tasks[upid]
                d = t.as_status()
                d["log"] = list(t.lines)
                d["hung"] = t.hung
                out.append(d)
            return out
        if method == "GET" and path == "/_sim/storage":
            return [{"storage": v.storage, "node": v.node, "volid": v.volid, "size": v.size,
                     "vmid": v.vmid, "content": v.content} for v in sim.storage.all_volumes()]
        m = re.match(r"^/_sim/storage/([^/]+)/([^/]+)/(snippets|iso|images)/([^/]+)$", path)
        if m and method == "POST":
            node, sid, content, name = m.groups()
            if sid not in DEFS or content not in DEFS[sid].content:
                raise ValueError("storage %s has no %s content" % (sid, content))
            if node not in sim.hosts:
                raise LookupError("no host %s" % node)
            volname = name if content == "images" else "%s/%s" % (content, name)
            vmid = int(q["vmid"]) if q.get("vmid") else None
            size = int(q.get("size", len(body)))
            sim.storage.alloc(sid, node, volname, size, vmid, content,
                              body if content != "images" else None,
                              "iso" if content == "iso" else "raw")
            return {"volid": "%s:%s" % (sid, volname)}
        if method == "GET" and path == "/_sim/stats":
            d = dict(sim.stats)
            d["vms"] = len(sim.vms)
            d["running_vms"] = sum(1 for v in sim.vms.values() if v.running)
            d["tasks_running"] = len(sim.tasks.running())
            d["max_concurrent_full_clones"] = {
                "%s/%s" % (k[0] or "shared", k[1]): v for k, v in sim.max_active_full.items()}
            if self.guests:
                d.update(self.guests.stats())
            return d
        if path == "/_sim/faults":
            if method == "POST":
                self.faults.update(json.loads(body or b"{}"))
            return self.faults.snapshot()
        if path == "/_sim/guests":
            if method == "POST":
                d = json.loads(body or b"{}")
                if "hold_registration" in d:
                    with self.guests.lock:
                        self.guests.hold_registration = bool(d["hold_registration"])
                        self.guests.cond.notify_all()
            return {"hold_registration": self.guests.hold_registration}
        if method == "GET" and path == "/_sim/tokens":
            return self.info
        if method == "POST" and path == "/_sim/stats-tick":
            sim._stats_tick()
            return {"ok": True}
        raise LookupError("no such control endpoint %s %s" % (method, path))
