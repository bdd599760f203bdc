"""The guests: what each booted VM's kubelet does in kube-sim.

--boot-seconds after a VM is running, its kubelet registers a Node
(POST /api/v1/nodes; AlreadyExists is fine) and then heartbeats: it renews
the Lease kube-node-lease/<node> every --heartbeat-seconds and patches the
node's status conditions (Ready=True) on the first heartbeat, before its
first renewal, and every --node-status-seconds (5 minutes, a kubelet's
nodeStatusReportFrequency).  A stopped, crashed or deleted VM sends nothing more; a
partitioned host's guests pause and resume.  The sim never deletes Nodes.

Node contents (see docs/pve-sim.md): name = VM name (lower-cased) unless
cloud-init says otherwise; providerID from kubelet-arg provider-id, else the
smbios1 serial, else proxmox://<cluster>/<vmid>; capacity from cores x sockets,
memory, the boot disk and the extended resources its passed-through devices
give (devices.py); allocatable = kubelet defaults (memory minus the
100Mi hard eviction threshold, ephemeral-storage minus the 10% nodefs
threshold, cpu and pods unreserved); taint karpenter.sh/unregistered:NoExecute
plus cloud-init's labels and taints.
"""

import concurrent.futures
import datetime
import hashlib
import heapq
import itertools
import re
import sys
import threading
import time
import uuid

from . import cloudinit, iso9660, vms

LEASE_NS = "kube-node-lease"
UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}


def now_rfc3339(micro=False):
    t = datetime.datetime.now(datetime.timezone.utc)
    if micro:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_node(info, opts):
    """(node object, notes) for a VM booting with info['conf']."""
    conf = info["conf"]
    vmid = info["vmid"]
    notes = list(info.get("notes", []))
    ud = md = None
    source = None
    if info.get("snippets", {}).get("user"):
        ud, md = info["snippets"]["user"], info["snippets"].get("meta")
        source = "cicustom"
        if info.get("iso"):
            notes.append("cicustom user-data used; ISO %s ignored" % info["iso"][1])
    elif info.get("iso"):
        key, volid, data = info["iso"]
        ud, md, n = iso9660.nocloud(data)
        notes += ["%s (%s): %s" % (key, volid, x) for x in n]
        source = "iso " + volid if ud is not None else None
    st = cloudinit.extract(ud, md)
    notes += st.notes
    sm = vms.decode_smbios1(conf.get("smbios1"))
    name = st.node_name or st.hostname or conf.get("name") or "vm-%d" % vmid
    name = name.lower()
    if st.with_node_id:
        name += "-" + hashlib.sha256(str(vmid).encode()).hexdigest()[:8]
    provider = "proxmox://%s/%d" % (info["cluster"], vmid)
    pid_source = "default"
    if sm.get("serial"):
        provider, pid_source = sm["serial"], "smbios1 serial"
        if not re.match(r"^proxmox://[^/]*/[^/]+$", provider):
            notes.append("smbios1 serial %r is not a proxmox:// provider ID" % provider)
    if st.provider_id:
        if sm.get("serial") and st.provider_id != sm["serial"]:
            notes.append("kubelet-arg provider-id %r differs from smbios1 serial %r"
                         % (st.provider_id, sm["serial"]))
        provider, pid_source = st.provider_id, "kubelet-arg"
    cpus = vms.vcpus(conf)
    mem_ki = vms.current_memory_mib(conf) * 1024
    _, disk = vms.boot_disk(conf)
    disk_bytes = vms.drive_size(disk)
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
    }
    if sm.get("sku"):
        labels["node.kubernetes.io/instance-type"] = sm["sku"]
    if opts.ccm_labels:
        labels["topology.kubernetes.io/region"] = info["cluster"]
        labels["topology.kubernetes.io/zone"] = info["node"]
    labels.update(st.labels)
    taints = [dict(UNREGISTERED)]
    for t in st.taints:
        if t["key"] != UNREGISTERED["key"] or t.get("effect") != UNREGISTERED["effect"]:
            taints.append(t)
    ip = None
    ipc = vms.parse_kv(conf.get("ipconfig0", ""))
    if ipc.get("ip") and "/" in ipc["ip"]:
        ip = ipc["ip"].split("/")[0]
    if not ip:
        ip = "10.%d.%d.%d" % (200 + info.get("host_index", 0) % 50, (vmid >> 8) & 255,
                              vmid & 255)
    ts = now_rfc3339()
    conditions = []
    for ctype, reason, msg in (
            ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")):
        conditions.append({"type": ctype, "status": "False", "reason": reason, "message": msg,
                           "lastHeartbeatTime": ts, "lastTransitionTime": ts})
    conditions.append({"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                       "message": "container runtime status check may not have completed yet",
                       "lastHeartbeatTime": ts, "lastTransitionTime": ts})
    capacity = {"cpu": str(cpus), "memory": "%dKi" % mem_ki, "pods": "110",
                "ephemeral-storage": "%dKi" % (disk_bytes // 1024),
                "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    allocatable = {"cpu": str(cpus), "memory": "%dKi" % max(0, mem_ki - 102400),
                   "pods": "110", "ephemeral-storage": str(int(disk_bytes * 0.9)),
                   "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    # What the VM's passed-through devices give, as their device plugins
    # would report it (devices.py).
    for res, n in sorted((info.get("resources") or {}).items()):
        capacity[res] = allocatable[res] = str(n)
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name, "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                            "pve-sim/vmid": str(vmid)},
        },
        "spec": {"providerID": provider, "taints": taints},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": ip},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": hashlib.md5(("%s/%d" % (info["cluster"], vmid)).encode()
                                         ).hexdigest(),
                "systemUUID": sm.get("uuid", "").lower(),
                "bootID": str(uuid.uuid4()),
                "kernelVersion": "6.8.0-49-generic",
                "osImage": "Ubuntu 24.04.1 LTS",
                "containerRuntimeVersion": "containerd://1.7.23-k3s2",
                "kubeletVersion": opts.kubelet_version,
                "kubeProxyVersion": opts.kubelet_version,
                "operatingSystem": "linux", "architecture": "amd64",
            },
        },
    }
    meta = {"user_data_source": source, "provider_id_source": pid_source,
            "cloudinit_sources": st.sources}
    return node, notes, meta


class Guest:
    def __init__(self, vmid, gen, node, notes, meta):
        self.vmid = vmid
        self.gen = gen
        self.node = node
        self.notes = notes
        self.meta = meta
        self.state = "booting"
        self.paused = False
        self.registered = False
        self.register_status = None
        self.heartbeats = 0
        self.last_heartbeat = None
        self.last_error = None
        self.lease_rv = None
        self.status_patched = 0.0
        self.booted_at = time.time()

    @property
    def name(self):
        return self.node["metadata"]["name"]


class GuestManager:
    def __init__(self, opts):
        self.opts = opts
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.heap = []
        self.seq = itertools.count()
        self.guests = {}
        self.history = {}            # vmid -> last guest (kept after stop)
        self.counters = {"guest_registrations": 0, "guest_heartbeats": 0,
                         "guest_kube_errors": 0}
        self.kube = None
        self.kube_error = None
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4,
                                                          thread_name_prefix="pvesim-kubelet")
        self.thread = threading.Thread(target=self._run, name="pvesim-guests", daemon=True)
        self.stopped = False
        # POST /_sim/guests {"hold_registration": true}: booted guests do not
        # register their Node until it is false again (a broken image).
        self.hold_registration = False

    def start(self):
        if self.opts.kubeconfig:
            from .kube import KubeClient, KubeError
            try:
                self.kube = KubeClient(self.opts.kubeconfig)
            except (KubeError, OSError, ValueError, KeyError) as e:
                self.kube_error = str(e)
                sys.stderr.write("pve-sim: kubeconfig: %s\n" % e)
        self.thread.start()

    def shutdown(self):
        with self.lock:
            self.stopped = True
            self.cond.notify_all()
        self.pool.shutdown(wait=False)

    # ---- called by the state (its lock held; we only take ours briefly) ----
    def boot(self, info, paused=False):
        try:
            node, notes, meta = build_node(info, self.opts)
        except Exception as e:  # never let a guest bug break the API
            node, notes, meta = None, ["guest build failed: %s" % e], {}
        with self.lock:
            g = Guest(info["vmid"], info["gen"], node, notes, meta)
            g.paused = paused
            if node is None:
                g.state = "failed"
            self.guests[g.vmid] = g
            self.history[g.vmid] = g
            if node is not None:
                self._push(time.monotonic() + self.opts.boot_seconds, g, "register")

    def stop(self, vmid):
        with self.lock:
            g = self.guests.pop(vmid, None)
            if g:
                g.state = "stopped"

    def pause(self, vmid, paused):
        with self.lock:
            g = self.guests.get(vmid)
            if g:
                g.paused = paused

    def view(self, vmid):
        with self.lock:
            g = self.history.get(vmid)
            if g is None:
                return None
            return {"state": g.state, "paused": g.paused, "registered": g.registered,
                    "node_name": g.name if g.node else None,
                    "provider_id": g.node["spec"]["providerID"] if g.node else None,
                    "heartbeats": g.heartbeats, "last_heartbeat": g.last_heartbeat,
                    "last_error": g.last_error, "notes": list(g.notes), "meta": g.meta,
                    "node": g.node, "boot_gen": g.gen}

    def stats(self):
        with self.lock:
            d = dict(self.counters)
            d["guests_running"] = len(self.guests)
            d["kube_error"] = self.kube_error
            return d

    # ---- scheduling ----
    def _push(self, when, g, action):
        heapq.heappush(self.heap, (when, next(self.seq), g, g.gen, action))
        self.cond.notify_all()

    def _current(self, g, gen):
        return self.guests.get(g.vmid) is g and g.gen == gen and g.state != "stopped"

    def _run(self):
        with self.lock:
            while not self.stopped:
                now = time.monotonic()
                if self.heap and self.heap[0][0] <= now:
                    _, _, g, gen, action = heapq.heappop(self.heap)
                    if not self._current(g, gen):
                        continue
                    if g.paused or (action == "register" and self.hold_registration):
                        self._push(now + self.opts.heartbeat_seconds, g, action)
                        continue
                    self.pool.submit(self._do, g, gen, action)
                    continue
                timeout = (self.heap[0][0] - now) if self.heap else 1.0
                self.cond.wait(min(timeout, 1.0))

    def _do(self, g, gen, action):
        try:
            if action == "register":
                self._register(g, gen)
            else:
                self._heartbeat(g, gen)
        except Exception as e:
            with self.lock:
                g.last_error = "internal: %s" % e
                self.counters["guest_kube_errors"] += 1
                if self._current(g, gen):
                    self._push(time.monotonic() + self.opts.heartbeat_seconds, g, action)

    def _err(self, g, what, status, body):
        msg = "%s: HTTP %s %s" % (what, status, (body or {}).get("message", ""))
        with self.lock:
            g.last_error = msg
            self.counters["guest_kube_errors"] += 1

    def _register(self, g, gen):
        if self.kube is None:
            with self.lock:
                g.state = "booted (no kubeconfig)" if not self.opts.kubeconfig else \
                    "booted (kubeconfig unusable)"
            return
        status, body = self.kube.request("POST", "/api/v1/nodes", g.node)
        with self.lock:
            if not self._current(g, gen):
                return
            g.register_status = status
            if status in (200, 201, 409):
                if status != 409 and isinstance(body, dict):
                    uid = (body.get("metadata") or {}).get("uid")
                    if uid:
                        g.node["metadata"]["uid"] = uid
                g.registered = True
                g.state = "running"
                self.counters["guest_registrations"] += 1
                self._push(time.monotonic(), g, "heartbeat")
                return
        self._err(g, "register node", status, body)
        with self.lock:
            if self._current(g, gen):
                self._push(time.monotonic() + 2.0, g, "register")

    def _lease_body(self, g, rv=None):
        meta = {"name": g.name, "namespace": LEASE_NS}
        uid = g.node["metadata"].get("uid")
        if uid:
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": g.name,
                                        "uid": uid}]
        if rv:
            meta["resourceVersion"] = rv
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": {"holderIdentity": g.name, "leaseDurationSeconds": 40,
                         "renewTime": now_rfc3339(micro=True)}}

    def _heartbeat(self, g, gen):
        base = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % LEASE_NS
        ok = True
        # The first Ready goes before the first Lease renewal: kube-sim's
        # --kubelet posts Ready for a node whose Lease is fresh and whose
        # Ready is not True, so a renewal first would let it post for this
        # node too while this patch waits (a node with two kubelets: 85 of
        # 380 nodes of a loaded 5,000-pod run; 34 of 385 with this order,
        # so some other path remains).
        first = g.heartbeats == 0
        if first and not self._patch_status(g):
            ok = False
        elif first:
            g.status_patched = time.monotonic()
        if g.lease_rv is None:
            status, body = self.kube.request("GET", base + "/" + g.name)
            if status == 200:
                g.lease_rv = body["metadata"].get("resourceVersion", "")
            elif status == 404:
                status, body = self.kube.request("POST", base, self._lease_body(g))
                if status == 404:
                    self.kube.request("POST", "/api/v1/namespaces", {
                        "apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": LEASE_NS}})
                    status, body = self.kube.request("POST", base, self._lease_body(g))
                if status in (200, 201):
                    g.lease_rv = body["metadata"].get("resourceVersion", "")
                else:
                    ok = False
                    self._err(g, "create lease", status, body)
            else:
                ok = False
                self._err(g, "get lease", status, body)
        else:
            status, body = self.kube.request("PUT", base + "/" + g.name,
                                             self._lease_body(g, g.lease_rv))
            if status == 200:
                g.lease_rv = body["metadata"].get("resourceVersion", "")
            else:
                ok = False
                g.lease_rv = None      # re-read (conflict) or re-create (deleted)
                self._err(g, "renew lease", status, body)
        if not first and time.monotonic() - g.status_patched >= self.opts.node_status_seconds:
            if self._patch_status(g):
                g.status_patched = time.monotonic()
            else:
                ok = False
        with self.lock:
            if ok:
                g.heartbeats += 1
                g.last_heartbeat = now_rfc3339(micro=True)
                self.counters["guest_heartbeats"] += 1
            if self._current(g, gen):
                self._push(time.monotonic() + self.opts.heartbeat_seconds, g, "heartbeat")

    def _patch_status(self, g):
        ts = now_rfc3339()
        conds = []
        for c in g.node["status"]["conditions"]:
            c = dict(c)
            c["lastHeartbeatTime"] = ts
            if c["type"] == "Ready" and c["status"] != "True":
                c.update({"status": "True", "reason": "KubeletReady",
                          "message": "kubelet is posting ready status", "lastTransitionTime": ts})
            conds.append(c)
        g.node["status"]["conditions"] = conds
        patch = {"status": {"conditions": conds}}
        path = "/api/v1/nodes/%s/status" % g.name
        for ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            status, body = self.kube.request("PATCH", path, patch, ctype)
            if status == 200:
                return True
            if status not in (404, 405, 415):
                break
        if status in (404, 405):
            # no status subresource: read-modify-write the node
            st2, node = self.kube.request("GET", "/api/v1/nodes/" + g.name)
            if st2 == 200 and isinstance(node, dict):
                node.setdefault("status", {})["conditions"] = conds
                st3, body = self.kube.request("PUT", "/api/v1/nodes/%s/status" % g.name, node)
                if st3 == 200:
                    return True
                st3, body = self.kube.request("PUT", "/api/v1/nodes/" + g.name, node)
                if st3 == 200:
                    return True
                status = st3
            else:
                status, body = st2, node
        self._err(g, "update node status", status, body)
        return False
