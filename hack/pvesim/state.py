"""Cluster state: hosts, VMs, storage, pools, stats, and the VM operations.

Every public method runs with self.lock held (the HTTP layer and the
scheduler take it).  Texts of errors follow qemu-server / pve-manager.
"""

import collections
import hashlib
import random
import re
import threading
import time
import urllib.parse

from . import devices as devmod, formats, vms
from .errors import Interrupted, PveError, TaskError, die, param_error, perm_error
from .formats import parse_size, format_size, split_list
from .storage import DEFS, GiB, Storages
from .tasks import Lock, Scheduler, Sleep, TaskManager, Work
from .vms import VM

MiB = 1 << 20
HOST_BASE_MEM = 2 * (1 << 30)     # memory the host itself uses
ROOT = "root@pam"

ALL_PRIVS = sorted("""
Datastore.Allocate Datastore.AllocateSpace Datastore.AllocateTemplate Datastore.Audit
Group.Allocate Mapping.Audit Mapping.Modify Mapping.Use Permissions.Modify Pool.Allocate
Pool.Audit Realm.Allocate Realm.AllocateUser SDN.Allocate SDN.Audit SDN.Use
Sys.AccessNetwork Sys.Audit Sys.Console Sys.Incoming Sys.Modify Sys.PowerMgmt Sys.Syslog
User.Modify VM.Allocate VM.Audit VM.Backup VM.Clone VM.Config.CDROM VM.Config.CPU
VM.Config.Cloudinit VM.Config.Disk VM.Config.HWType VM.Config.Memory VM.Config.Network
VM.Config.Options VM.Console VM.Migrate VM.Monitor VM.PowerMgmt VM.Snapshot
VM.Snapshot.Rollback""".split())

CPU_KEYS = {"cores", "sockets", "vcpus", "cpu", "cpulimit", "cpuunits", "numa"}
MEM_KEYS = {"memory", "balloon", "shares"}
HW_KEYS = {"vga", "hotplug", "scsihw", "machine", "watchdog", "keyboard", "tablet", "rng0",
           "audio0", "bios", "efidisk0", "tpmstate0", "arch", "kvm", "acpi", "localtime",
           "freeze", "tdf", "smp", "spice_enhancements", "ivshmem", "amd-sev", "intel-tdx"}
ROOT_ONLY = {"args", "affinity", "hookscript", "lock", "vmstatestorage"}
SKIP_CLONE = {"snapshots", "parent", "snaptime", "vmstate", "snapstate", "runningcpu",
              "runningmachine", "running-nets-host-mtu", "lock"}

SSHKEY_RE = re.compile(
    r"^(?:(?:[^\s\"]+|\"[^\"]*\")\s+)?"
    r"(ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521)|"
    r"sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)\s+([A-Za-z0-9+/]+={0,3})(?:\s.*)?$")


def validate_ssh_keys(text):
    import base64
    import struct
    for line in text.split("\n"):
        if re.match(r"^\s*$", line) or line.lstrip().startswith("#"):
            continue
        m = SSHKEY_RE.match(line.strip())
        ok = False
        if m:
            try:
                blob = base64.b64decode(m.group(2), validate=True)
                (n,) = struct.unpack(">I", blob[:4])
                ok = blob[4:4 + n].decode("ascii") == m.group(1)
            except Exception:
                ok = False
        if not ok:
            die("SSH public key validation error")


class Host:
    def __init__(self, name, index, cpus, mem, rng):
        self.name = name
        self.index = index
        self.cpus = cpus
        self.mem = mem
        self.online = True
        self.mode = None              # "crash" | "partition" while offline
        self.offline_since = None
        self.maintenance = False      # the LRM's mode is "maintenance"
        self.boot_time = time.time() - rng.randrange(3 * 86400, 40 * 86400)
        self.ip = "192.168.100.%d" % (11 + index)


class Token:
    def __init__(self, tokenid, secret, privs):
        self.id = tokenid
        self.secret = secret
        self.privs = set(privs)
        self.user = tokenid.split("!", 1)[0]
        self.root = False


class Sim:
    def __init__(self, opts, schema, faults, guests=None):
        self.opts = opts
        self.schema = schema
        self.faults = faults
        self.guests = guests
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.sched = Scheduler(self.cond)
        self.tasks = TaskManager(self.cond, self.sched, opts.flock_timeout)
        self.tasks.pstart_of = self._pstart
        self.rng = random.Random(opts.seed or 0)
        self.cluster = opts.cluster
        self.hosts = collections.OrderedDict()
        for i, h in enumerate(opts.hosts):
            self.hosts[h] = Host(h, i, opts.host_cpus, opts.host_memory, self.rng)
        self.entry = opts.hosts[0]
        self.storage = Storages(opts.hosts)
        self.vms = {}
        self.pools = collections.OrderedDict((p, {"comment": "", "members": set()})
                                             for p in opts.pools)
        self.rrd_vm = {}
        self.rrd_node = {}
        self.active_full = collections.Counter()
        self.max_active_full = collections.Counter()
        self.stats = collections.Counter()
        self.tokens = {}
        self.fingerprint = None
        self.ha_used = False          # the HA CRM has kept a node status
        self.started_at = time.time()
        self.devices = devmod.Devices(opts, opts.hosts)
        for spec in opts.templates:
            self._add_template(spec)

    # ---------------------------------------------------------------- basics
    def _pstart(self, node):
        return int((time.time() - self.hosts[node].boot_time) * 100)

    def start_threads(self):
        self.sched.start()
        with self.lock:
            self._stats_tick(reschedule=True)
            for spec in self.opts.host_offline:
                self._schedule_offline(spec)
            for spec in self.opts.host_maintenance:
                self._schedule_maintenance(spec)

    def add_token(self, tokenid, secret, privs):
        self.tokens[tokenid] = Token(tokenid, secret, privs)
        return self.tokens[tokenid]

    def quorate(self):
        online = sum(1 for h in self.hosts.values() if h.online)
        return online * 2 > len(self.hosts)

    def check_quorum(self, exc=PveError):
        if not self.quorate():
            self._fail(exc, "cluster not ready - no quorum?")

    @staticmethod
    def _fail(exc, msg):
        if exc is TaskError:
            raise TaskError(msg)
        die(msg)

    def conf_missing(self, node, vmid):
        return "Configuration file 'nodes/%s/qemu-server/%s.conf' does not exist" % (node, vmid)

    def load(self, node, vmid, exc=PveError):
        vm = self.vms.get(int(vmid))
        if vm is None or vm.node != node:
            self._fail(exc, self.conf_missing(node, vmid))
        return vm

    def check_lock(self, vm, exc=PveError):
        if vm.lock:
            self._fail(exc, "VM is locked (%s)" % vm.lock)

    def _user(self, token):
        return token.id if token else ROOT

    def has(self, token, *privs, any_of=False):
        if token is None or token.root:
            return True
        if any_of:
            return any(p in token.privs for p in privs)
        return all(p in token.privs for p in privs)

    def need(self, token, path, *privs, any_of=False):
        if not self.has(token, *privs, any_of=any_of):
            perm_error("%s, %s" % (path, "|".join(privs)))

    # ------------------------------------------------------------- templates
    def _add_template(self, spec):
        m = re.match(r"^([^:@]+):(\d+)(?:@(.+))?$", spec)
        if not m:
            raise SystemExit("pve-sim: bad --template %r (want NAME:VMID[@HOST])" % spec)
        name, vmid, host = m.group(1), int(m.group(2)), m.group(3)
        if host and host not in self.hosts:
            raise SystemExit("pve-sim: --template %s: no host %s" % (spec, host))
        if vmid in self.vms:
            raise SystemExit("pve-sim: --template %s: VMID %d used twice" % (spec, vmid))
        node = host or self.entry
        sid = "local-lvm" if host else "ceph"
        size = self.opts.template_disk
        disk = "base-%d-disk-0" % vmid
        self.storage.alloc(sid, node, disk, parse_size(size), vmid)
        self.storage.alloc(sid, node, "vm-%d-cloudinit" % vmid, 4 * MiB, vmid)
        conf = {
            "agent": "1",
            "boot": "order=scsi0",
            "cores": "2",
            "cpu": "x86-64-v2-AES",
            "ide0": "%s:vm-%d-cloudinit,media=cdrom" % (sid, vmid),
            "memory": "2048",
            "meta": "creation-qemu=9.0.2,ctime=%d" % int(time.time() - 86400 * 30),
            "name": name,
            "net0": "virtio=%s,bridge=vmbr0,firewall=1" % vms.gen_mac(self.rng),
            "ostype": "l26",
            "scsi0": "%s:%s,iothread=1,size=%s" % (sid, disk, size),
            "scsihw": "virtio-scsi-single",
            "serial0": "socket",
            "smbios1": "uuid=%s" % vms.gen_uuid(self.rng),
            "sockets": "1",
            "template": "1",
            "vga": "serial0",
            "vmgenid": vms.gen_uuid(self.rng),
        }
        self.vms[vmid] = VM(vmid, node, conf)

    # ------------------------------------------------------------------ stats
    def _stats_tick(self, reschedule=False):
        now = time.time()
        for h in self.hosts.values():
            if not h.online:
                continue
            self.rrd_node[h.name] = {
                "uptime": int(now - h.boot_time), "maxcpu": h.cpus,
                "cpu": round(0.02 + 0.03 * self._running_cpus(h.name) / max(1, h.cpus), 4),
                "maxmem": h.mem, "mem": self.host_mem_used(h.name),
                "maxdisk": 100 * GiB, "disk": 12 * GiB,
            }
        for vmid in list(self.rrd_vm):
            vm = self.vms.get(vmid)
            if vm is None or not self.hosts[vm.node].online:
                del self.rrd_vm[vmid]
        for vm in self.vms.values():
            if not self.hosts[vm.node].online:
                continue
            self.rrd_vm[vm.vmid] = self._vm_stats(vm)
        self.stats["stats_ticks"] += 1
        if reschedule:
            self.sched.call_later(self.opts.stats_seconds, self._stats_tick, True)

    def _vm_stats(self, vm):
        up = int(time.time() - vm.started_at) if vm.running else 0
        return {
            "uptime": up,
            "name": vm.conf.get("name") or "VM %d" % vm.vmid,
            "status": "running" if vm.running else "stopped",
            "template": 1 if vm.template else 0,
            "maxcpu": vm.cpus(), "cpu": 0.01 if vm.running else 0,
            "maxmem": vm.memory_bytes(), "mem": int(vm.memory_bytes() * 0.6) if vm.running else 0,
            "maxdisk": vm.maxdisk(), "disk": 0,
            "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
        }

    def _running_cpus(self, node):
        return sum(vm.cpus() for vm in self.vms.values() if vm.node == node and vm.running)

    def host_mem_used(self, node):
        used = HOST_BASE_MEM
        for vm in self.vms.values():
            if vm.node == node and (vm.running or getattr(vm, "starting", False)):
                used += vm.memory_bytes(vm.boot_conf or vm.conf)
        return used

    # ------------------------------------------------------------- host state
    def _host_schedule(self, flag, spec, begin, end):
        """HOST[@AFTER[+FOR]]: begin(host) now or AFTER s from now, end(host)
        FOR s later."""
        m = re.match(r"^([^@]+)(?:@(\d+(?:\.\d+)?))?(?:\+(\d+(?:\.\d+)?))?$", spec)
        if not m or m.group(1) not in self.hosts:
            raise SystemExit("pve-sim: bad %s %r" % (flag, spec))
        host, after, dur = m.group(1), float(m.group(2) or 0), m.group(3)

        def go():
            begin(host)
            if dur is not None:
                self.sched.call_later(float(dur), end, host)
        if after <= 0:
            go()
        else:
            self.sched.call_later(after, go)

    def _schedule_offline(self, spec):
        mode = self.opts.host_offline_mode
        self._host_schedule("--host-offline", spec,
                            lambda h: self.set_offline(h, mode), self.set_online)

    def _schedule_maintenance(self, spec):
        self._host_schedule("--host-maintenance", spec,
                            lambda h: self.set_maintenance(h, True),
                            lambda h: self.set_maintenance(h, False))

    # ------------------------------------------------------- HA maintenance
    def set_maintenance(self, name, enable):
        """ha-manager crm-command node-maintenance enable|disable NAME, as
        the CRM carries it out (pve-ha-manager Manager.pm): enabling needs
        the node online in the CRM's view, disabling needs it in
        maintenance; otherwise the command is logged and ignored. The
        LRM's mode stays "maintenance" while the node is down. Returns a
        note when ignored. HA-managed VMs are not migrated away (no
        migration here)."""
        h = self.hosts[name]
        self.ha_used = True
        if enable:
            if h.maintenance:
                return "ignoring crm command - node %s is already in maintenance state" % name
            if not h.online:
                return "crm command error - node not online: enable-node-maintenance %s" % name
            h.maintenance = True
            self.stats["host_maintenance"] += 1
            return None
        if not h.maintenance:
            return "crm command 'disable-node-maintenance' error - node not in maintenance mode"
        h.maintenance = False
        return None

    def ha_active(self):
        return self.ha_used or any(vm.ha for vm in self.vms.values())

    def ha_node_state(self, h):
        """The CRM's node state (NodeStatus.pm): maintenance (also while the
        node is down, its LRM mode stays), online, else unknown."""
        if h.maintenance:
            return "maintenance"
        return "online" if h.online else "unknown"

    def ha_status_current(self):
        """GET /cluster/ha/status/current (pve-ha-manager API2/HA/Status.pm):
        quorum, then - once the HA stack keeps a status - master, one lrm
        entry per node and the services. An lrm status reads "NODE
        (maintenance mode, TIME)" for a node in maintenance; PVE 9 adds the
        watchdog state: "NODE (maintenance mode, watchdog standby, TIME)"."""
        now = time.time()
        quorate = self.quorate()
        out = [{"id": "quorum", "type": "quorum", "node": self.entry,
                "status": "OK" if quorate else "No quorum on node '%s'!" % self.entry,
                "quorate": 1 if quorate else 0}]
        if not self.ha_active():
            return out
        master = next((h.name for h in self.hosts.values() if h.online), self.entry)
        out.append({"id": "master", "type": "master", "node": master,
                    "status": "%s (active, %s)" % (master, time.ctime(now)),
                    "timestamp": int(now)})
        for h in sorted(self.hosts.values(), key=lambda x: x.name):
            active = any(vm.ha and vm.running and vm.node == h.name
                         for vm in self.vms.values())
            ts = int(now) if h.online else int(h.offline_since or self.started_at)
            if h.maintenance:
                st = "maintenance mode"
            elif not h.online:
                st = "old timestamp - dead?"
            else:
                st = "active" if active else "idle"
            parts = [st]
            if self.opts.pve_version >= 9:
                parts.append("watchdog active" if h.online and active
                             else "watchdog standby")
            parts.append(time.ctime(ts))
            out.append({"id": "lrm:%s" % h.name, "type": "lrm", "node": h.name,
                        "status": "%s (%s)" % (h.name, ", ".join(parts)),
                        "timestamp": ts})
        for vm in sorted(self.vms.values(), key=lambda v: v.vmid):
            if not vm.ha:
                continue
            sid = "vm:%d" % vm.vmid
            st = "started" if vm.running else "stopped"
            out.append({"id": "service:" + sid, "type": "service", "sid": sid,
                        "node": vm.node, "crm_state": st, "state": st,
                        "status": "%s (%s, %s)" % (sid, vm.node, st),
                        "request_state": "started", "max_restart": 1,
                        "max_relocate": 1, "failback": 1})
        return out

    def set_offline(self, name, mode="crash"):
        h = self.hosts[name]
        if not h.online:
            return
        h.online = False
        h.mode = mode
        h.offline_since = time.time()
        self.stats["host_offline"] += 1
        # The cluster stops hearing from the host at once: its guests'
        # last stats go now, not at the next tick (their status reads
        # "unknown" in /cluster/resources from here on).
        for vm in self.vms.values():
            if vm.node == name:
                self.rrd_vm.pop(vm.vmid, None)
        if mode == "crash":
            for vm in self.vms.values():
                if vm.node == name and vm.running:
                    self._power_off(vm, crashed=True)
            for t in self.tasks.running():
                if t.node == name:
                    # the worker died with the host: no cleanup, no end line
                    t.wake += 1
                    try:
                        t.gen.close()
                    except Exception:
                        pass
                    self.tasks._finish(t, "unexpected status")
                    t.lines.pop()  # a crashed worker writes no TASK line
        elif self.guests:
            for vm in self.vms.values():
                if vm.node == name and vm.running:
                    self.guests.pause(vm.vmid, True)

    def set_online(self, name):
        h = self.hosts[name]
        if h.online:
            return
        mode = h.mode
        h.online = True
        h.mode = None
        if mode == "crash":
            h.boot_time = time.time()
            for vm in sorted(self.vms.values(), key=lambda v: v.vmid):
                if vm.node == name and vm.conf.get("onboot") == "1" and not vm.template \
                        and not vm.lock:
                    self._start_task(vm, ROOT, "qmstart")
        elif self.guests:
            for vm in self.vms.values():
                if vm.node == name and vm.running:
                    self.guests.pause(vm.vmid, False)

    # ------------------------------------------------------------------ nextid
    def nextid(self, vmid=None):
        if vmid is not None:
            if int(vmid) not in self.vms:
                return str(vmid)
            param_error({"vmid": "VM %s already exists" % vmid})
        lower = self.opts.nextid_lower
        for i in range(lower, 1000000):
            if i not in self.vms:
                return str(i)
        die("unable to get any free VMID in range [%d, 1000000]" % lower)

    # ------------------------------------------------------------------- clone
    def clone(self, node, vmid, p, token):
        user = self._user(token)
        newid = int(p["newid"])
        pool = p.get("pool")
        storage = p.get("storage")
        fmt = p.get("format")
        target = p.get("target")
        if target in (node, "localhost"):
            target = None
        if pool is not None and pool not in self.pools:
            perm_error("pool '%s' does not exist" % pool)
        if target and target not in self.hosts:
            die("no such cluster node '%s'" % target)
        if storage:
            if storage not in DEFS:
                die("storage '%s' does not exist" % storage)
            if "images" not in DEFS[storage].content:
                param_error({"storage": "storage '%s' does not support vm images" % storage})
            if target and not DEFS[storage].shared:
                die("can't clone to non-shared storage '%s'" % storage)
        self.check_quorum()
        src = self.load(node, vmid)
        self.check_lock(src)
        if p.get("snapname"):
            die("snapshot '%s' does not exist" % p["snapname"])
        full = (p["full"] == "1") if p.get("full") is not None else not src.template
        if storage is not None and not full:
            die("parameter 'storage' not allowed for linked clones")
        if fmt is not None and not full:
            die("parameter 'format' not allowed for linked clones")
        shared = True
        plan = []   # (opt, drive, full_copy)
        for opt, d in src.drives():
            volid = d.get("file", "")
            if vms.drive_is_cdrom(d) and not vms.drive_is_cloudinit(d):
                if ":" in volid and volid.split(":", 1)[0] in DEFS and \
                        not DEFS[volid.split(":", 1)[0]].shared:
                    shared = False
                continue
            sid = volid.split(":", 1)[0]
            if sid in DEFS and not DEFS[sid].shared:
                shared = False
            self.need(token, "/storage/" + (storage or sid), "Datastore.AllocateSpace")
            copy = full or vms.drive_is_cloudinit(d) or opt == "tpmstate0"
            if not copy and not src.template:
                die("Linked clone feature is not supported for '%s' (%s)" % (volid, opt))
            plan.append((opt, d, copy))
        if target and not shared:
            die("can't clone VM to node '%s' (VM uses local storage)" % target)
        if newid in self.vms:
            die("unable to create VM %d: config file already exists" % newid)

        full_keys = set()
        for opt, d, copy in plan:
            if copy and not vms.drive_is_cloudinit(d):
                sid = storage or d["file"].split(":", 1)[0]
                full_keys.add(self.storage.key(sid, node))
        duration = self.opts.full_clone_seconds if full else self.opts.clone_seconds
        fail = self.faults.draw("fail_clone")
        self.stats["clones_started"] += 1

        def body(task):
            vm = VM(newid, node, {"lock": "clone"})
            vm.creating = True
            self.vms[newid] = vm
            yield Lock(newid)
            task.log("create %s clone of VM %s with ID %d" % ("full" if full else "linked",
                                                             vmid, newid))
            new_vols = []
            counted = []
            try:
                busy = [k for k in full_keys
                        if self.active_full[k] >= self.opts.max_full_clones]
                if busy:
                    yield Sleep(self.opts.storage_lock_seconds)
                    key = sorted(busy, key=lambda k: (k[0] or "", k[1]))[0]
                    sid = key[1]
                    if DEFS[sid].shared:
                        raise TaskError("clone failed: cfs-lock 'storage-%s' error: got lock "
                                        "request timeout" % sid)
                    raise TaskError("clone failed: can't lock file '/var/lock/pve-manager/"
                                    "pve-storage-%s' - got timeout" % sid)
                for k in full_keys:
                    self.active_full[k] += 1
                    self.max_active_full[k] = max(self.max_active_full[k], self.active_full[k])
                    counted.append(k)
                newconf = {}
                for opt, value in sorted(src.conf.items()):
                    if opt in SKIP_CLONE or vms.UNUSED_RE.match(opt) or opt == "template":
                        continue
                    if re.match(r"^net\d+$", opt):
                        n = vms.parse_net(value)
                        n["macaddr"] = vms.gen_mac(self.rng)
                        newconf[opt] = vms.print_net(n)
                    elif vms.is_drive_key(opt):
                        newconf[opt] = value
                    else:
                        newconf[opt] = value
                for opt, d, copy in plan:
                    sid, volname = d["file"].split(":", 1)
                    if vms.drive_is_cloudinit(d):
                        tsid = storage or sid
                        name = "vm-%d-cloudinit" % newid
                        task.log("create full clone of drive %s (%s)" % (opt, d["file"]))
                        v = self.storage.alloc(tsid, node, name, 4 * MiB, newid)
                    elif copy:
                        tsid = storage or sid
                        name = self.storage.next_disk_name(tsid, node, newid)
                        task.log("create full clone of drive %s (%s)" % (opt, d["file"]))
                        v = self.storage.alloc(tsid, node, name, vms.drive_size(d), newid)
                    else:
                        name = "%s/%s" % (volname.split("/")[0],
                                          self.storage.next_disk_name(sid, node, newid))
                        task.log("create linked clone of drive %s (%s)" % (opt, d["file"]))
                        v = self.storage.alloc(sid, node, name, vms.drive_size(d), newid)
                    new_vols.append(v.volid)
                    nd = dict(d)
                    nd["file"] = v.volid
                    newconf[opt] = vms.print_drive(nd)
                yield Work(duration)
                if fail:
                    if full:
                        raise TaskError(
                            "clone failed: copy failed: command '/usr/bin/qemu-img convert -p -n "
                            "-f raw -O raw' failed: exit code 1 (pve-sim injected fault)")
                    raise TaskError("clone failed: lvcreate 'pve/vm-%d-disk-0' error: "
                                    "Thin pool transaction_id mismatch (pve-sim injected fault)"
                                    % newid)
                sm = vms.parse_kv(newconf.get("smbios1", ""))
                sm["uuid"] = vms.gen_uuid(self.rng)
                newconf["smbios1"] = ",".join(
                    ["uuid=" + sm.pop("uuid")] + ["%s=%s" % kv for kv in sorted(sm.items())])
                if "vmgenid" in newconf:
                    newconf["vmgenid"] = vms.gen_uuid(self.rng)
                newconf["name"] = p.get("name") or "Copy-of-VM-%s" % (src.name or vmid)
                if p.get("description"):
                    newconf["description"] = p["description"]
                vm.conf = newconf
                vm.creating = False
                if target:
                    vm.node = target
                if pool:
                    self.pools[pool]["members"].add(newid)
                self.stats["clones_ok"] += 1
                return 0
            except (TaskError, Interrupted) as e:
                for volid in new_vols:
                    self.storage.free(volid, node)
                if self.vms.get(newid) is vm:
                    del self.vms[newid]
                self.rrd_vm.pop(newid, None)
                self.stats["clones_failed"] += 1
                msg = e.msg if isinstance(e, TaskError) else "interrupted by signal"
                if not msg.startswith("clone failed: "):
                    msg = "clone failed: " + msg
                raise TaskError(msg)
            finally:
                for k in counted:
                    self.active_full[k] -= 1

        hang = self.faults.hang("qmclone")
        return self.tasks.start(node, "qmclone", vmid, user, body, hang=hang).upid

    # ------------------------------------------------------------ config get
    def render_conf(self, conf, vm=None):
        out = {}
        for k, v in conf.items():
            if k == "cipassword":
                out[k] = "**********"
                continue
            sch = self.schema.config_key_schema(k)
            typ = sch.get("type") if sch else "string"
            if typ in ("integer", "boolean") and re.match(r"^-?\d+$", v):
                out[k] = int(v)
            else:
                out[k] = v
        if vm is not None:
            out["digest"] = vm.digest()
        return out

    def config_get(self, node, vmid, current=False):
        vm = self.load(node, vmid)
        conf = vm.conf if current else vm.merged_conf()
        return self.render_conf(conf, vm)

    def pending_get(self, node, vmid):
        vm = self.load(node, vmid)
        out = []
        keys = set(vm.conf) | set(vm.pending) | set(vm.pending_delete)
        for k in sorted(keys):
            e = {"key": k}
            if k in vm.conf:
                e["value"] = self.render_conf({k: vm.conf[k]})[k]
            if k in vm.pending:
                e["pending"] = self.render_conf({k: vm.pending[k]})[k]
            if k in vm.pending_delete:
                e["delete"] = 1
            out.append(e)
        return out

    # --------------------------------------------------------- config update
    def update_config(self, node, vmid, p, token, sync):
        user = self._user(token)
        p = dict(p)
        p.pop("node", None)
        p.pop("vmid", None)
        digest = p.pop("digest", None)
        bg_delay = p.pop("background_delay", None)
        p.pop("import-working-storage", None)
        skiplock = p.pop("skiplock", None)
        if skiplock == "1" and user != ROOT:
            param_error({"skiplock": "Only root may use this option."})
        delete_str = p.pop("delete", None)
        revert_str = p.pop("revert", None)
        force = p.pop("force", None) == "1"
        if p.get("sshkeys") is not None:
            validate_ssh_keys(formats.uri_unescape(p["sshkeys"]))
        if not delete_str and not revert_str and not p:
            die("no options specified")
        if p.get("cdrom"):
            v = p.pop("cdrom")
            if "media=" not in v:
                v += ",media=cdrom"
            p["ide2"] = v
        revert = []
        for opt in split_list(revert_str):
            if self.schema.config_key_schema(opt) is None:
                param_error({"revert": "unknown option '%s'" % opt})
            if opt in p:
                param_error({"delete": "you can't use '-%s' and -revert %s' at the same time"
                             % (opt, opt)})
            revert.append(opt)
        deletes = []
        for opt in split_list(delete_str):
            if opt == "cdrom":
                opt = "ide2"
            if opt in p:
                param_error({"delete": "you can't use '-%s' and -delete %s' at the same time"
                             % (opt, opt)})
            if opt in revert:
                param_error({"revert": "you can't use '-delete %s' and -revert %s' at the "
                                       "same time" % (opt, opt)})
            if self.schema.config_key_schema(opt) is None:
                param_error({"delete": "unknown option '%s'" % opt})
            deletes.append(opt)
        for opt in sorted(p):
            if vms.is_drive_key(opt):
                d = vms.parse_drive(p[opt])
                f = d.get("file", "")
                m = re.match(r"^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$", f, re.I)
                if m and not formats.NEW_DISK_RE.match(f) and m.group(2) != "cloudinit":
                    sid = m.group(1)
                    if sid not in DEFS:
                        die("storage '%s' does not exist" % sid)
                    vtype = "iso" if m.group(2).startswith("iso/") else "images"
                    if vtype == "iso" and d.get("media") != "cdrom":
                        param_error({opt: "explicit 'media=cdrom' is required for iso images"})
            elif re.match(r"^net\d+$", opt):
                n = vms.parse_net(p[opt])
                if not n.get("macaddr"):
                    n["macaddr"] = vms.gen_mac(self.rng)
                p[opt] = vms.print_net(n)
            elif opt == "vmgenid" and p[opt] == "1":
                p[opt] = vms.gen_uuid(self.rng)
        for opt in deletes + sorted(p):
            self._check_modify_perm(token, vmid, opt, p.get(opt))
        for opt in sorted(p):
            if vms.is_drive_key(opt):
                f = vms.parse_drive(p[opt]).get("file", "")
                m = formats.NEW_DISK_RE.match(f)
                if m:
                    sid = m.group(2)
                    if not sid:
                        die("no storage ID specified (and no default storage)")
                    if sid not in DEFS:
                        die("storage '%s' does not exist" % sid)
                    if "images" not in DEFS[sid].content:
                        param_error({"storage": "storage '%s' does not support vm images" % sid})
        if p.get("cicustom"):
            for k, volid in vms.parse_kv(p["cicustom"]).items():
                sid = volid.split(":", 1)[0]
                if sid not in DEFS:
                    die("storage '%s' does not exist" % sid)
                if "snippets" not in DEFS[sid].content:
                    die("storage '%s' does not support content-type 'snippets'" % sid)

        def load_and_check(exc):
            vm = self.load(node, vmid, exc)
            if digest and digest != vm.digest():
                self._fail(exc, "checksum mismatch (file change by other user?)")
            if skiplock != "1":
                self.check_lock(vm, exc)
            if p.get("memory") or p.get("balloon") is not None:
                mc = dict(vm.merged_conf())
                if p.get("memory"):
                    mc["memory"] = p["memory"]
                maxmem = vms.current_memory_mib(mc)
                balloon = p.get("balloon", mc.get("balloon"))
                if balloon and int(balloon) > maxmem:
                    self._fail(exc, "balloon value too large (must be smaller than assigned "
                                    "memory)")
            return vm

        self.check_quorum()
        load_and_check(PveError)
        if sync:
            holder = None
            try:
                holder = self.tasks.lock_sync(int(vmid))
                vm = load_and_check(PveError)
                self._apply_update(vm, p, deletes, revert, force, None)
            except TaskError as e:
                die(e.msg)
            finally:
                if holder is not None:
                    self.tasks.release(int(vmid), holder)
            return None

        def body(task):
            yield Lock(int(vmid))
            vm = load_and_check(TaskError)
            task.log("update VM %s: %s" % (vmid, " ".join(
                "-%s %s" % (k, "<hidden>" if k == "cipassword" else v)
                for k, v in sorted(p.items()))))
            warnings = self._apply_update(vm, p, deletes, revert, force, task)
            yield Work(self.opts.task_seconds)
            return warnings

        task = self.tasks.start(node, "qmconfig", vmid, user, body,
                                hang=self.faults.hang("qmconfig"))
        if bg_delay:
            deadline = time.monotonic() + int(bg_delay)
            while task.status == "running" and time.monotonic() < deadline:
                self.cond.wait(min(0.2, deadline - time.monotonic()))
            if task.status != "running":
                st = task.exitstatus
                if st == "OK" or re.match(r"^WARNINGS: \d+$", st):
                    return None
                die("failed to update VM %s: %s" % (vmid, st))
        return task.upid

    def _check_modify_perm(self, token, vmid, opt, value):
        path = "/vms/%s" % vmid
        if re.match(r"^(hostpci|usb)\d+$", opt):
            if self._user(token) == ROOT:
                return
            if value is None:
                self.need(token, path, "VM.Config.HWType")
            else:
                self.devices.check_config_perm(self, token, opt, value)
            return
        if opt in ROOT_ONLY or re.match(r"^(parallel|virtiofs)\d+$", opt) or \
                (re.match(r"^serial\d+$", opt) and value not in (None, "socket")):
            if self._user(token) != ROOT:
                die("only root can set '%s' config" % opt)
            return
        if opt in CPU_KEYS:
            self.need(token, path, "VM.Config.CPU")
        elif opt in MEM_KEYS:
            self.need(token, path, "VM.Config.Memory")
        elif re.match(r"^net\d+$", opt):
            self.need(token, path, "VM.Config.Network")
        elif vms.is_drive_key(opt) or vms.UNUSED_RE.match(opt):
            if value is not None and vms.drive_is_cdrom(vms.parse_drive(value)):
                self.need(token, path, "VM.Config.CDROM")
            else:
                self.need(token, path, "VM.Config.Disk")
        elif opt in vms.CLOUDINIT_KEYS or opt.startswith("ipconfig"):
            self.need(token, path, "VM.Config.Cloudinit", "VM.Config.Network", any_of=True)
        elif opt in HW_KEYS:
            self.need(token, path, "VM.Config.HWType")
        else:
            self.need(token, path, "VM.Config.Options")

    def _apply_update(self, vm, p, deletes, revert, force, task):
        warnings = 0
        running = vm.running
        conf = vm.conf
        order = []
        m = re.search(r"order=([^,]+)", conf.get("boot", ""))
        if m:
            order = split_list(m.group(1))

        def put(key, value):
            if running and not vms.hot_pluggable(key):
                vm.pending[key] = value
                if key in vm.pending_delete:
                    vm.pending_delete.remove(key)
            else:
                conf[key] = value
                vm.pending.pop(key, None)

        for opt in revert:
            vm.pending.pop(opt, None)
            if opt in vm.pending_delete:
                vm.pending_delete.remove(opt)
        for opt in deletes:
            val = conf.get(opt, vm.pending.get(opt))
            if val is None:
                msg = "cannot delete '%s' - not set in current configuration!" % opt
                if task:
                    task.log(msg)
                warnings += 1
                continue
            if order and opt in order:
                order = [o for o in order if o != opt]
                put("boot", "order=" + ";".join(order) if order else "")
                if not order:
                    conf.pop("boot", None)
            if running and not vms.hot_pluggable(opt):
                if opt not in vm.pending_delete:
                    vm.pending_delete.append(opt)
                vm.pending.pop(opt, None)
                continue
            vm.pending.pop(opt, None)
            conf.pop(opt, None)
            if vms.UNUSED_RE.match(opt):
                self.storage.free(vms.parse_drive(val).get("file", ""), vm.node)
            elif vms.is_drive_key(opt):
                d = vms.parse_drive(val)
                if not vms.drive_is_cdrom(d) or vms.drive_is_cloudinit(d):
                    if force or vms.drive_is_cloudinit(d):
                        self.storage.free(d.get("file", ""), vm.node)
                    elif d.get("file") and self.storage.get(d["file"], vm.node):
                        conf[vm.next_unused_key()] = d["file"]
        for opt in sorted(p):
            value = p[opt]
            if opt == "tags":
                seen, tags = set(), []
                for t in split_list(value):
                    if t.lower() not in seen:
                        seen.add(t.lower())
                        tags.append(t)
                value = ";".join(tags)
            elif opt == "cipassword":
                value = "$5$pvesim$" + hashlib.sha256(value.encode()).hexdigest()[:43]
                conf[opt] = value
                continue
            elif opt == "boot":
                mm = re.search(r"order=([^,]+)", value)
                if mm:
                    for dev in split_list(mm.group(1)):
                        if dev not in conf and dev not in vm.pending and dev not in p or \
                                dev in deletes:
                            raise TaskError("invalid bootorder: device '%s' does not exist'"
                                            % dev)
                    order = split_list(mm.group(1))
            elif vms.is_drive_key(opt):
                d = vms.parse_drive(value)
                f = d.get("file", "")
                mnew = formats.NEW_DISK_RE.match(f)
                if mnew:
                    sid = mnew.group(2)
                    name = self.storage.next_disk_name(sid, vm.node, vm.vmid)
                    size = int(float(mnew.group(3)) * GiB)
                    v = self.storage.alloc(sid, vm.node, name, size, vm.vmid)
                    d["file"] = v.volid
                    d["size"] = format_size(size)
                    if task:
                        task.log("%s: successfully created disk '%s'" % (opt, v.volid))
                    value = vms.print_drive(d)
                old = conf.get(opt)
                if old is not None:
                    od = vms.parse_drive(old)
                    if od.get("file") != d.get("file") and not vms.drive_is_cdrom(od) and \
                            od.get("file") and self.storage.get(od["file"], vm.node):
                        conf[vm.next_unused_key()] = od["file"]
                if vms.drive_is_cdrom(d, exclude_cloudinit=True) and order and opt not in order:
                    order.append(opt)
                    put("boot", "order=" + ";".join(order))
            put(opt, value)
        return warnings

    # ------------------------------------------------------------------ resize
    def resize(self, node, vmid, p, token):
        user = self._user(token)
        if p.get("skiplock") == "1" and user != ROOT:
            param_error({"skiplock": "Only root may use this option."})
        disk, sizestr, digest = p["disk"], p["size"], p.get("digest")

        def body(task):
            yield Lock(int(vmid))
            vm = self.load(node, vmid, TaskError)
            if digest and digest != vm.digest():
                raise TaskError("checksum mismatch (file change by other user?)")
            if p.get("skiplock") != "1":
                self.check_lock(vm, TaskError)
            if disk not in vm.conf:
                raise TaskError("disk '%s' does not exist" % disk)
            d = vms.parse_drive(vm.conf[disk])
            if not d.get("file"):
                raise TaskError("disk '%s' has no associated volume" % disk)
            if vms.drive_is_cdrom(d):
                raise TaskError("you can't resize a cdrom")
            sid = d["file"].split(":", 1)[0]
            if not self.has(token, "Datastore.AllocateSpace"):
                raise TaskError("Permission check failed (/storage/%s, Datastore.AllocateSpace)"
                                % sid)
            vol = self.storage.get(d["file"], vm.node)
            cur = vol.size if vol else vms.drive_size(d)
            m = re.match(r"^(\+)?(\d+(\.\d+)?)([KMGT])?$", sizestr)
            if not m:
                raise TaskError("internal error")
            new = parse_size(m.group(2) + (m.group(4) or ""))
            if m.group(1):
                new += cur
            if new < cur:
                raise TaskError("shrinking disks is not supported")
            if new == cur:
                return 0
            task.log("update VM %s: resize --disk %s --size %s" % (vmid, disk, sizestr))
            yield Work(self.opts.task_seconds)
            d["size"] = format_size(new)
            vm.conf[disk] = vms.print_drive(d)
            if vol:
                vol.size = new
            return 0

        return self.tasks.start(node, "resize", vmid, user, body,
                                hang=self.faults.hang("resize")).upid

    # ------------------------------------------------------------- power ops
    def start(self, node, vmid, p, token):
        user = self._user(token)
        for k in ("skiplock", "stateuri", "migratedfrom", "migration_type",
                  "migration_network", "targetstorage", "force-cpu", "with-conntrack-state",
                  "nets-host-mtu"):
            if p.get(k) and p.get(k) != "0" and user != ROOT:
                param_error({k: "Only root may use this option."})
        self.check_quorum()
        vm = self.vms.get(int(vmid))
        if vm is not None and vm.node == node and vm.ha:
            return self._ha_task(vm, user, "hastart")
        return self._start_task(None, user, "qmstart", node=node, vmid=int(vmid))

    def _ha_task(self, vm, user, ttype):
        vmid = vm.vmid

        def body(task):
            task.log("Requesting HA %s for VM %d" % ("start" if ttype == "hastart" else "stop",
                                                     vmid))
            yield Sleep(0.05)
            return 0

        def later():
            cur = self.vms.get(vmid)
            if cur is None or not self.hosts[cur.node].online:
                return
            if ttype == "hastart" and not cur.running:
                self._start_task(cur, ROOT, "qmstart")
            elif ttype == "hastop" and cur.running:
                self._stop_task(cur.node, vmid, ROOT, "qmstop", self.opts.stop_seconds)
        self.sched.call_later(1.0, later)
        return self.tasks.start(vm.node, ttype, vmid, user, body).upid

    def _start_task(self, vm, user, ttype, node=None, vmid=None):
        node = node or vm.node
        vmid = vmid or vm.vmid

        def body(task):
            yield Lock(vmid)
            cur = self.load(node, vmid, TaskError)
            if cur.template:
                raise TaskError("you can't start a vm if it's a template")
            self.check_lock(cur, TaskError)
            if cur.running:
                raise TaskError("VM %d already running" % vmid)
            self.check_quorum(TaskError)
            conf = cur.merged_conf()
            host = self.hosts[node]
            ncpu = vms.vcpus(conf)
            if ncpu > host.cpus:
                raise TaskError("MAX %d vcpus allowed per VM on this node" % host.cpus)
            for key, d in cur.drives(conf):
                f = d.get("file", "")
                if vms.drive_is_cdrom(d) and not vms.drive_is_cloudinit(d) and ":" in f:
                    if self.storage.get(f, node) is None:
                        raise TaskError("volume '%s' does not exist" % f)
            if conf.get("cicustom"):
                for _, volid in sorted(vms.parse_kv(conf["cicustom"]).items()):
                    if self.storage.get(volid, node) is None:
                        raise TaskError("volume '%s' does not exist" % volid)
            need = vms.current_memory_mib(conf) * MiB
            if self.host_mem_used(node) + need > host.mem:
                task.log("kvm: cannot set up guest memory 'pc.ram': Cannot allocate memory")
                raise TaskError("start failed: QEMU exited with code 1")
            cur.devices = self.devices.assign(self, cur, conf, node)
            cur.starting = True
            cur.boot_conf = conf
            try:
                yield Work(self.opts.start_seconds)
            except BaseException:
                cur.devices = []
                raise
            finally:
                cur.starting = False
            if self.vms.get(vmid) is not cur:
                cur.devices = []
                raise TaskError("VM %d vanished during start" % vmid)
            for k, v in cur.pending.items():
                cur.conf[k] = v
            for k in cur.pending_delete:
                cur.conf.pop(k, None)
            cur.pending, cur.pending_delete = {}, []
            cur.running = True
            cur.started_at = time.time()
            cur.pid = self.tasks.next_pid()
            cur.boot_gen += 1
            cur.boot_conf = dict(cur.conf)
            self.stats["vm_starts"] += 1
            self._boot_guest(cur)
            return 0

        return self.tasks.start(node, ttype, vmid, user, body, hang=self.faults.hang(ttype)).upid

    def stop(self, node, vmid, p, token, shutdown=False):
        user = self._user(token)
        for k in ("skiplock", "keepActive", "migratedfrom"):
            if p.get(k) and p.get(k) != "0" and user != ROOT:
                param_error({k: "Only root may use this option."})
        vm = self.vms.get(int(vmid))
        if vm is not None and vm.node == node and vm.ha:
            return self._ha_task(vm, user, "hastop")
        if shutdown:
            timeout = int(p["timeout"]) if p.get("timeout") is not None else None
            return self._stop_task(node, int(vmid), user, "qmshutdown",
                                   self.opts.shutdown_seconds, timeout=timeout,
                                   force=p.get("forceStop") == "1")
        return self._stop_task(node, int(vmid), user, "qmstop", self.opts.stop_seconds)

    def make_template(self, node, vmid, p, token):
        """POST /nodes/{node}/qemu/{vmid}/template: a stopped VM becomes a
        template (qm template), in a qmtemplate task."""
        user = self._user(token)
        vmid = int(vmid)

        def body(task):
            yield Lock(vmid)
            cur = self.vms.get(vmid)
            if cur is None or cur.node != node:
                raise TaskError("unable to find configuration file for VM %d on node '%s'"
                                % (vmid, node))
            self.check_lock(cur, TaskError)
            if cur.template:
                raise TaskError("you can't convert a template to a template")
            if cur.running:
                raise TaskError("you can't convert a VM to template if VM is running")
            yield Work(self.opts.task_seconds)
            cur.conf["template"] = "1"
            return 0

        return self.tasks.start(node, "qmtemplate", vmid, user, body).upid

    def _stop_task(self, node, vmid, user, ttype, seconds, timeout=None, force=False):
        def body(task):
            yield Lock(vmid)
            cur = self.vms.get(vmid)
            if cur is None or cur.node != node:
                raise TaskError("unable to find configuration file for VM %d on node '%s'"
                                % (vmid, node))
            if not cur.running:
                return 0
            self.check_lock(cur, TaskError)
            if ttype == "qmshutdown" and timeout is not None and timeout < seconds:
                yield Work(timeout)
                if not force:
                    raise TaskError("VM quit/powerdown failed - got timeout")
                task.log("VM quit/powerdown failed - terminating now with SIGTERM")
            else:
                yield Work(seconds)
            if cur.running:
                self._power_off(cur)
            return 0

        return self.tasks.start(node, ttype, vmid, user, body, hang=self.faults.hang(ttype)).upid

    def _power_off(self, vm, crashed=False):
        vm.running = False
        vm.devices = []
        vm.started_at = None
        vm.pid = None
        self.stats["vm_stops"] += 1
        if self.guests:
            self.guests.stop(vm.vmid)

    def kill(self, vmid):
        vm = self.vms.get(vmid)
        if vm and vm.running:
            self._power_off(vm, crashed=True)
            return True
        return False

    # ----------------------------------------------------------------- destroy
    def destroy(self, node, vmid, p, token):
        user = self._user(token)
        vmid = int(vmid)
        skiplock = p.get("skiplock") == "1"
        if skiplock and user != ROOT:
            param_error({"skiplock": "Only root may use this option."})
        purge = p.get("purge") == "1"
        unref = p.get("destroy-unreferenced-disks") == "1"

        def early(exc):
            vm = self.load(node, vmid, exc)
            if vm.conf.get("protection") == "1":
                self._fail(exc, "can't remove VM %d - protection mode enabled" % vmid)
            if not purge and vm.ha:
                self._fail(exc, "unable to remove VM %d - used in HA resources and purge "
                                "parameter not set." % vmid)
            if vm.running:
                self._fail(exc, "VM %d is running - destroy failed" % vmid)
            return vm

        self.check_quorum()
        early(PveError)

        def body(task):
            yield Lock(vmid)
            vm = early(TaskError)
            if not skiplock:
                self.check_lock(vm, TaskError)
            if vm.template:
                for v in self.storage.all_volumes():
                    for volid in vm.volumes():
                        base = volid.split(":", 1)[1]
                        if v.volname.startswith(base + "/") and \
                                v.storage == volid.split(":", 1)[0]:
                            raise TaskError("base volume '%s' is still in use by linked cloned"
                                            % volid)
            old = vm.conf
            vm.destroying = True
            vm.conf = {"lock": "destroyed"}
            vm.pending, vm.pending_delete = {}, []
            yield Work(self.opts.destroy_seconds)
            for volid in vms.VM(vmid, node, old).volumes():
                base = volid.split(":", 1)[1]
                if re.search(r"(^|/)(vm|base)-%d-" % vmid, base):
                    if self.storage.free(volid, node):
                        task.log("Removing image: 100% complete...done.")
            if unref:
                for v in list(self.storage.all_volumes()):
                    if v.vmid == vmid and v.content == "images" and \
                            (v.node is None or v.node == node):
                        self.storage.free(v.volid, node)
                        task.log("Removing unreferenced image %s" % v.volid)
            for pool in self.pools.values():
                pool["members"].discard(vmid)
            if purge:
                task.log("purging VM %d from related configurations.." % vmid)
                if vm.ha:
                    vm.ha = False
                    task.log("NOTE: removed VM %d from HA resource configuration." % vmid)
            if self.vms.get(vmid) is vm:
                del self.vms[vmid]
            self.rrd_vm.pop(vmid, None)
            self.stats["vms_destroyed"] += 1
            return 0

        return self.tasks.start(node, "qmdestroy", vmid, user, body,
                                hang=self.faults.hang("qmdestroy")).upid

    # ------------------------------------------------------------------ guests
    def _boot_guest(self, vm):
        iso = None
        snippets = {}
        notes = []
        conf = vm.boot_conf
        for key, d in vm.drives(conf):
            f = d.get("file", "")
            if vms.drive_is_cdrom(d) and not vms.drive_is_cloudinit(d) and ":" in f:
                vol = self.storage.get(f, vm.node)
                if vol is not None and vol.data is not None:
                    if iso is None:
                        iso = (key, f, vol.data)
                    else:
                        notes.append("ignored second ISO %s on %s" % (f, key))
        if conf.get("cicustom"):
            for kind, volid in vms.parse_kv(conf["cicustom"]).items():
                vol = self.storage.get(volid, vm.node)
                if vol is not None and vol.data is not None:
                    snippets[kind] = vol.data
        info = {
            "vmid": vm.vmid, "node": vm.node, "cluster": self.cluster, "conf": dict(conf),
            "iso": iso, "snippets": snippets, "notes": notes, "gen": vm.boot_gen,
            "host_index": self.hosts[vm.node].index,
            "resources": self.devices.node_resources(getattr(vm, "devices", None)),
        }
        if self.guests:
            self.guests.boot(info, paused=not self.hosts[vm.node].online)

    # ------------------------------------------------------------ read views
    def vm_status(self, vm, full=False):
        conf = vm.conf
        d = {
            "vmid": vm.vmid,
            "name": conf.get("name") or "VM %d" % vm.vmid,
            "status": "running" if vm.running else "stopped",
            "cpus": vm.cpus(),
            "maxmem": vm.memory_bytes(),
            "maxdisk": vm.maxdisk(),
            "mem": int(vm.memory_bytes() * 0.6) if vm.running else 0,
            "disk": 0, "cpu": 0.01 if vm.running else 0,
            "uptime": int(time.time() - vm.started_at) if vm.running else 0,
            "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
        }
        if vm.running:
            d["pid"] = vm.pid
        if conf.get("lock"):
            d["lock"] = conf["lock"]
        if conf.get("tags"):
            d["tags"] = conf["tags"]
        if vm.template:
            d["template"] = 1
        if full or True:
            d["qmpstatus"] = "running" if vm.running else "stopped"
        if conf.get("balloon") is not None:
            d["balloon"] = int(conf["balloon"]) * MiB if conf["balloon"].isdigit() else 0
        return d

    def status_current(self, node, vmid):
        vm = self.load(node, vmid)
        d = self.vm_status(vm)
        if vm.running:
            d["running-machine"] = "pc-i440fx-9.0+pve0"
            d["running-qemu"] = "9.0.2"
        d["ha"] = {"managed": 1, "state": "started" if vm.running else "stopped",
                   "group": None} if vm.ha else {"managed": 0}
        if vm.ha:
            d["ha"].pop("group")
        ag = vms.parse_kv(vm.conf.get("agent", ""), "enabled")
        if ag.get("enabled") in ("1", "on", "yes", "true"):
            d["agent"] = 1
        return d

    def qemu_list(self, node, token):
        out = []
        for vm in sorted(self.vms.values(), key=lambda v: v.vmid):
            if vm.node != node:
                continue
            if not self.has(token, "VM.Audit"):
                continue
            out.append(self.vm_status(vm))
        return out

    def resources(self, rtype, token):
        out = []
        if rtype in (None, "vm"):
            for vm in sorted(self.vms.values(), key=lambda v: v.vmid):
                if not self.has(token, "VM.Audit"):
                    continue
                e = {"id": "qemu/%d" % vm.vmid, "vmid": vm.vmid, "node": vm.node,
                     "type": "qemu", "status": "unknown"}
                r = self.rrd_vm.get(vm.vmid)
                if r:
                    e.update(r)
                    if not r.get("template"):
                        e.pop("template", None)
                if vm.conf.get("lock"):
                    e["lock"] = vm.conf["lock"]
                if vm.conf.get("tags"):
                    e["tags"] = vm.conf["tags"]
                for pool, pd in self.pools.items():
                    if vm.vmid in pd["members"]:
                        e["pool"] = pool
                if vm.ha:
                    e["hastate"] = "started" if vm.running else "stopped"
                out.append(e)
        if rtype in (None, "node"):
            for h in self.hosts.values():
                if not self.has(token, "Sys.Audit"):
                    continue
                out.append(self._node_entry(h))
        if rtype in (None, "storage"):
            for h in self.hosts.values():
                for sd in self.storage.on_node(h.name):
                    if not self.has(token, "Datastore.Audit", "Datastore.AllocateSpace",
                                    any_of=True):
                        continue
                    e = {"id": "storage/%s/%s" % (h.name, sd.id), "storage": sd.id,
                         "node": h.name, "type": "storage", "plugintype": sd.type,
                         "content": sd.content_str(), "shared": 1 if sd.shared else 0,
                         "status": "available" if h.online else "unknown"}
                    if h.online:
                        e["maxdisk"] = sd.total
                        e["disk"] = self.storage.used(sd.id, h.name)
                    out.append(e)
        if rtype is None:
            for pool in self.pools:
                if self.has(token, "Pool.Audit"):
                    out.append({"id": "/pool/%s" % pool, "pool": pool, "type": "pool"})
        return out

    def _node_entry(self, h, exclude_stats=False):
        e = {"id": "node/%s" % h.name, "node": h.name, "type": "node", "status": "unknown"}
        r = self.rrd_node.get(h.name)
        if r:
            if h.online and not exclude_stats:
                e.update({k: r[k] for k in ("uptime", "cpu", "mem", "disk")})
            if h.online:
                e["status"] = "online"
            e["level"] = ""
            if not exclude_stats:
                e.update({k: r[k] for k in ("maxcpu", "maxmem", "maxdisk")})
        if not h.online:
            e["status"] = "offline"
        e["cgroup-mode"] = 2
        # pve-manager 8.3+ (Cluster.pm resources): the CRM's node state,
        # while the HA stack keeps one.
        if not self.opts.no_node_hastate and self.ha_active():
            e["hastate"] = self.ha_node_state(h)
        return e

    def nodes_list(self, token):
        out = []
        for h in self.hosts.values():
            e = self._node_entry(h, exclude_stats=not self.has(token, "Sys.Audit"))
            e.pop("cgroup-mode", None)
            e.pop("hastate", None)
            e["ssl_fingerprint"] = self.fingerprint
            out.append(e)
        return out

    def node_status(self, node):
        h = self.hosts[node]
        used = self.host_mem_used(node)
        ver = "9.0.10" if self.opts.pve_version >= 9 else "8.4.1"
        return {
            "cpu": round(0.02 + 0.03 * self._running_cpus(node) / max(1, h.cpus), 4),
            "cpuinfo": {"cpus": h.cpus, "cores": h.cpus // 2 or 1, "sockets": 1,
                        "model": "AMD EPYC 7313P 16-Core Processor", "mhz": "3000.000",
                        "hvm": "1", "user_hz": 100},
            "memory": {"total": h.mem, "used": used, "free": h.mem - used,
                       "available": h.mem - used},
            "swap": {"total": 0, "used": 0, "free": 0},
            "rootfs": {"total": 100 * GiB, "used": 12 * GiB, "free": 88 * GiB,
                       "avail": 83 * GiB},
            "ksm": {"shared": 0},
            "loadavg": ["0.12", "0.20", "0.18"],
            "uptime": int(time.time() - h.boot_time),
            "wait": 0.001,
            "idle": 0,
            "kversion": "Linux 6.8.12-4-pve #1 SMP PREEMPT_DYNAMIC PMX 6.8.12-4 "
                        "(2024-11-06T15:04Z) x86_64",
            "pveversion": "pve-manager/%s/ec5affc9e41f1d79" % ver,
            "current-kernel": {"machine": "x86_64", "release": "6.8.12-4-pve",
                               "sysname": "Linux", "version": "#1 SMP PREEMPT_DYNAMIC"},
            "boot-info": {"mode": "efi", "secureboot": 0},
        }

    def storage_list(self, node, p, token):
        out = []
        want = set(split_list(p.get("content"))) if p.get("content") else None
        for sd in self.storage.on_node(node):
            if p.get("storage") and p["storage"] != sd.id:
                continue
            if want and not (want & sd.content):
                continue
            if not self.has(token, "Datastore.Audit", "Datastore.AllocateSpace", any_of=True):
                continue
            used = self.storage.used(sd.id, node)
            out.append({"storage": sd.id, "type": sd.type, "content": sd.content_str(),
                        "shared": 1 if sd.shared else 0, "active": 1, "enabled": 1,
                        "total": sd.total, "used": used, "avail": sd.total - used,
                        "used_fraction": round(used / sd.total, 6)})
        return out

    def storage_config(self, token):
        out = []
        for sd in DEFS.values():
            if not self.has(token, "Datastore.Audit", "Datastore.AllocateSpace", any_of=True):
                continue
            e = {"storage": sd.id, "type": sd.type, "content": sd.content_str(),
                 "digest": "0" * 40}
            if sd.shared:
                e["shared"] = 1
            if sd.path:
                e["path"] = sd.path
            if sd.type == "lvmthin":
                e.update({"thinpool": "data", "vgname": "pve"})
            if sd.type == "rbd":
                e.update({"pool": "vm-pool", "krbd": 0})
            out.append(e)
        return out

    def content_list(self, node, sid, p, token):
        if sid not in DEFS:
            die("storage '%s' does not exist" % sid)
        self.need(token, "/storage/" + sid, "Datastore.Audit", "Datastore.AllocateSpace",
                  any_of=True)
        out = []
        vmid = int(p["vmid"]) if p.get("vmid") else None
        for v in self.storage.list(sid, node, p.get("content"), vmid):
            e = {"volid": v.volid, "content": v.content, "size": v.size, "ctime": v.ctime,
                 "format": "iso" if v.content == "iso" else v.format}
            if v.vmid is not None:
                e["vmid"] = v.vmid
            out.append(e)
        return out

    def upload(self, node, sid, p, filedata, token):
        user = self._user(token)
        if sid not in DEFS:
            die("storage '%s' does not exist" % sid)
        content = p["content"]
        fname = p["filename"]
        fname = re.sub(r"[^-a-zA-Z0-9_.]", "_", fname.replace("\\", "/").split("/")[-1])
        if content == "iso":
            if not re.match(r"^[^/]+\.(?:iso|img)$", fname, re.I):
                param_error({"filename": "wrong file extension"})
        if content not in DEFS[sid].content:
            die("storage '%s' does not support '%s' content" % (sid, content))
        if node not in self.hosts:
            die("no such cluster node '%s'" % node)
        if not self.hosts[node].online:
            die("command '/usr/bin/ssh -e none -o BatchMode=yes -o HostKeyAlias=%s root@%s "
                "/bin/mkdir -p -- /var/lib/vz/template/iso' failed: exit code 255"
                % (node, self.hosts[node].ip))
        if p.get("checksum"):
            algo = p.get("checksum-algorithm")
            got = hashlib.new(algo, filedata).hexdigest()
            if got.lower() != p["checksum"].lower():
                die("checksum mismatch: got '%s' != expect '%s'" % (got, p["checksum"]))
        volname = ("iso/" if content == "iso" else content + "/") + fname

        def body(task):
            task.log("starting file import from: /var/tmp/pveupload-%s"
                     % hashlib.md5(filedata).hexdigest())
            task.log("target node: %s" % node)
            task.log("target file: /var/lib/vz/template/%s" % volname)
            task.log("file size is: %d" % len(filedata))
            yield Work(self.opts.task_seconds)
            if not self.hosts[node].online:
                raise TaskError("import failed: exit code 255")
            self.storage.alloc(sid, node, volname, len(filedata), None, content, filedata,
                               "iso" if content == "iso" else "raw")
            task.log("finished file import successfully")
            self.stats["uploads"] += 1
            return 0

        return self.tasks.start(self.entry, "imgcopy", "", user, body,
                                hang=self.faults.hang("imgcopy")).upid

    def content_delete(self, node, sid, volume, p, token):
        user = self._user(token)
        if ":" in volume:
            vsid = volume.split(":", 1)[0]
            if sid and vsid != sid:
                die("storage '%s' does not exist" % sid)
            volid = volume
        else:
            if not sid:
                param_error({"storage": "property is missing and it is not optional"})
            volid = "%s:%s" % (sid, volume)
        vsid = volid.split(":", 1)[0]
        if vsid not in DEFS:
            die("storage '%s' does not exist" % vsid)
        self.need(token, "/storage/" + vsid, "Datastore.Allocate")
        vol = self.storage.get(volid, node)
        if vol is None:
            die("volume '%s' does not exist" % volid)
        if vol.content == "images" and vol.vmid in self.vms:
            owner = self.vms[vol.vmid]
            if volid in owner.volumes() or any(volid in v for v in owner.conf.values()):
                die("unable to delete volume '%s' - still used by VM %d" % (volid, vol.vmid))

        def body(task):
            yield Work(self.opts.task_seconds)
            self.storage.free(volid, node)
            task.log("Removed volume '%s'" % volid)
            return 0

        task = self.tasks.start(node, "imgdel", "", user, body)
        if p.get("delay"):
            deadline = time.monotonic() + int(p["delay"])
            while task.status == "running" and time.monotonic() < deadline:
                self.cond.wait(min(0.2, deadline - time.monotonic()))
            if task.status != "running":
                if task.exitstatus != "OK":
                    die(task.exitstatus)
                return None
        return task.upid

    def pools_list(self, p, token):
        out = []
        for pool, pd in self.pools.items():
            if p.get("poolid") and p["poolid"] != pool:
                continue
            if not self.has(token, "Pool.Audit"):
                continue
            e = {"poolid": pool}
            if pd["comment"]:
                e["comment"] = pd["comment"]
            if p.get("poolid"):
                e["members"] = self._pool_members(pd, p.get("type"))
            out.append(e)
        if p.get("poolid") and not out:
            die("pool '%s' does not exist" % p["poolid"])
        return out

    def _pool_members(self, pd, mtype=None):
        out = []
        if mtype in (None, "qemu"):
            for vmid in sorted(pd["members"]):
                vm = self.vms.get(vmid)
                if vm is None:
                    continue
                e = {"id": "qemu/%d" % vmid, "vmid": vmid, "node": vm.node, "type": "qemu",
                     "status": "running" if vm.running else "stopped"}
                if vm.name:
                    e["name"] = vm.name
                out.append(e)
        return out

    def pool_get(self, poolid, p, token):
        pd = self.pools.get(poolid)
        if pd is None:
            die("pool '%s' does not exist" % poolid)
        self.need(token, "/pool/" + poolid, "Pool.Audit")
        e = {"members": self._pool_members(pd, p.get("type"))}
        if pd["comment"]:
            e["comment"] = pd["comment"]
        return e

    def cluster_status(self):
        out = [{"type": "cluster", "id": "cluster", "name": self.cluster,
                "nodes": len(self.hosts), "quorate": 1 if self.quorate() else 0,
                "version": 3 + len(self.hosts)}]
        for h in self.hosts.values():
            out.append({"type": "node", "id": "node/%s" % h.name, "name": h.name,
                        "nodeid": h.index + 1, "ip": h.ip, "online": 1 if h.online else 0,
                        "local": 1 if h.name == self.entry else 0, "level": ""})
        return out

    def version(self):
        if self.opts.pve_version >= 9:
            return {"version": "9.0.10", "release": "9.0", "repoid": "deb1ca707ec72a89"}
        return {"version": "8.4.1", "release": "8.4", "repoid": "2a5fa54a8503f96d"}

    def permissions(self, token, path=None):
        if token is None or not token.privs:
            return {}
        privs = {p: 1 for p in sorted(token.privs)}
        if path:
            return {path: privs}
        return {"/": privs}

    # ----------------------------------------------------------------- tasks
    def task_get(self, node, upid):
        t = self.tasks.tasks.get(upid)
        if not re.match(r"^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):"
                        r"([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):"
                        r"([^:\s/]+):$", upid):
            param_error({"upid": "unable to parse worker upid"})
        if t is None or t.node != node:
            param_error({"upid": "no such task"})
        return t

    def task_list(self, node, p, token):
        out = []
        limit = int(p.get("limit", 50))
        start = int(p.get("start", 0))
        for upid in reversed(self.tasks.order):
            t = self.tasks.tasks[upid]
            if t.node != node:
                continue
            if p.get("vmid") and t.id != str(p["vmid"]):
                continue
            if p.get("typefilter") and t.type != p["typefilter"]:
                continue
            src = p.get("source", "archive")
            if src == "active" and t.status != "running":
                continue
            if src == "archive" and t.status == "running":
                continue
            if p.get("errors") == "1" and (t.status == "running" or t.exitstatus == "OK"):
                continue
            e = {"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
                 "starttime": t.starttime, "type": t.type, "id": t.id, "user": t.user}
            if t.status == "stopped":
                e["status"] = t.exitstatus
                e["endtime"] = t.endtime
            out.append(e)
        return out[start:start + limit] if limit else out[start:]
