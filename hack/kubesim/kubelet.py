"""--kubelet: what the kubelets of the nodes would do, given a heartbeat.

A node is Ready=True while its Lease kube-node-lease/<node> has been renewed
within --node-lease-grace seconds (the VM player renews it; POST
/_sim/heartbeat/<node> does it too); once the lease goes stale the node's
conditions turn Unknown (NodeStatusUnknown, "Kubelet stopped posting node
status.") as the node lifecycle controller does.  A node without any lease
is left alone until it is older than the grace, then Unknown.

On Ready nodes, bound pods start: after --pod-start-delay they are Running
and Ready with container statuses and IPs.  A pod annotated
kube-sim.carpenter.dev/complete-after=<seconds> then Succeeds.  A deleted
pod goes after its grace period times --pod-grace-scale (at most
--pod-grace-max seconds), as the kubelet's final delete; on a node that is
not Ready it stays Terminating, as in a real cluster."""

import hashlib
import ipaddress
import itertools
import time

from . import errors as E
from . import util
from .controllers import Controller

MANAGER = "kubelet"
COMPLETE_AFTER = "kube-sim.carpenter.dev/complete-after"
SMP = "application/strategic-merge-patch+json"
KUBELET_VERSION = "v1.32.0"


class _N:
    __slots__ = ("name", "ready", "created", "cidr", "ip", "has_capacity", "version")


class _P:
    __slots__ = ("ns", "name", "node", "phase", "deleting", "del_requested", "del_grace", "containers",
                 "complete_after", "started", "ready")


def _node(obj):
    md = obj.get("metadata") or {}
    st = obj.get("status") or {}
    n = _N()
    n.name = md.get("name")
    cond = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
    n.ready = cond.get("status") if cond else None
    try:
        n.created = util.parse_time(md.get("creationTimestamp"))
    except ValueError:
        n.created = time.time()
    n.cidr = util.get_path(obj, "spec", "podCIDR") or ""
    n.ip = next((a.get("address") for a in st.get("addresses") or [] if a.get("type") == "InternalIP"), "")
    n.has_capacity = bool(st.get("capacity") or st.get("allocatable"))
    n.version = util.get_path(st, "nodeInfo", "kubeletVersion") or ""
    return n


def _pod(obj):
    spec = obj.get("spec") or {}
    if not spec.get("nodeName"):
        return None
    md = obj.get("metadata") or {}
    st = obj.get("status") or {}
    p = _P()
    p.ns = md.get("namespace")
    p.name = md.get("name")
    p.node = spec["nodeName"]
    p.phase = st.get("phase")
    p.deleting = bool(md.get("deletionTimestamp"))
    p.del_grace = md.get("deletionGracePeriodSeconds") or 0
    p.del_requested = None
    if p.deleting:
        try:
            p.del_requested = util.parse_time(md["deletionTimestamp"]) - p.del_grace
        except ValueError:
            p.del_requested = time.time()
    p.containers = [(c.get("name"), c.get("image")) for c in spec.get("containers") or []]
    ca = (md.get("annotations") or {}).get(COMPLETE_AFTER)
    try:
        p.complete_after = float(ca.rstrip("s")) if ca else None
    except ValueError:
        p.complete_after = None
    try:
        p.started = util.parse_time(st["startTime"]) if st.get("startTime") else None
    except ValueError:
        p.started = None
    p.ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
    return p


class Kubelet(Controller):
    name = "kubelet"
    sids = ("nodes", "pods", "leases.coordination.k8s.io")
    period = 1.0

    def __init__(self, sim):
        super().__init__(sim)
        o = sim.options
        self.grace = o.node_lease_grace
        self.start_delay = o.pod_start_delay
        self.grace_scale = o.pod_grace_scale
        self.grace_max = o.pod_grace_max
        self.first_seen = {}  # pod key -> when we first saw it bound
        self.ip_counters = {}
        self.global_ip = itertools.count(2)
        self.todo = set()
        self.states = {}
        self.next_node_pass = 0.0

    def extract(self, sid, obj, entry):
        if sid == "nodes":
            return _node(obj)
        if sid == "pods":
            p = _pod(obj)
            # steady Running and Ready pods need nothing from the kubelet: not kept
            return p if p is not None and self._needs_work(p) else None
        md = obj.get("metadata") or {}
        if md.get("namespace") != "kube-node-lease":
            return None
        rt = util.get_path(obj, "spec", "renewTime")
        try:
            return util.parse_time(rt) if rt else 0.0
        except ValueError:
            return 0.0

    def idle_wait(self):
        return 0.1

    def _needs_work(self, p):
        return p.deleting or p.phase == "Pending" or (p.phase == "Running" and
                                                        (p.complete_after is not None or not p.ready))

    def changed(self, items):
        now = time.time()
        for sid, key, old, new, ev in items:
            if sid == "pods":
                if new is None:
                    self.first_seen.pop(key, None)
                    self.todo.discard(key)
                else:
                    self.first_seen.setdefault(key, now)
                    if self._needs_work(new):
                        self.todo.add(key)
                    else:
                        self.todo.discard(key)

    def resync(self):
        self.todo = {k for k, p in self.cache["pods"].items() if self._needs_work(p)}

    def work(self):
        now = time.time()
        if now >= self.next_node_pass:
            self.next_node_pass = now + 0.5
            for name, n in list(self.cache["nodes"].items()):
                self.states[name] = self._node(n, now)
        for key in list(self.todo):
            p = self.cache["pods"].get(key)
            if p is None:
                self.todo.discard(key)
                continue
            if self.states.get(p.node) != "True":
                continue
            self._safe(self._pod, key, p, now)

    # -------------------------------------------------------- nodes

    def _node(self, n, now):
        renew = self.cache["leases.coordination.k8s.io"].get("kube-node-lease/" + n.name)
        if renew is not None:
            want = "True" if now - renew <= self.grace else "Unknown"
        elif now - n.created > self.grace:
            want = "Unknown"
        else:
            return n.ready
        if want == n.ready and (want != "True" or (n.has_capacity and n.version)):
            return want
        self._safe(self._set_node, n, want, now)
        return want

    def _set_node(self, n, want, now):
        ts = util.rfc3339(now)
        cur = self.api.get_object_internal("", "nodes", "", n.name)
        if cur is None:
            return
        st = cur.get("status") or {}
        old = {c.get("type"): c for c in st.get("conditions") or []}
        if want == "True":
            spec = [("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    ("Ready", "True", "KubeletReady", "kubelet is posting ready status")]
        else:
            spec = [(t, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
                    for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")]
        conds = []
        for t, s, reason, msg in spec:
            prev = old.get(t)
            ltt = prev.get("lastTransitionTime") if prev and prev.get("status") == s else ts
            hb = ts if want == "True" else (prev.get("lastHeartbeatTime") if prev else ts)
            conds.append({"type": t, "status": s, "lastHeartbeatTime": hb, "lastTransitionTime": ltt,
                          "reason": reason, "message": msg})
        patch = {"status": {"conditions": conds}}
        if want == "True":
            if not st.get("capacity") and not st.get("allocatable"):
                patch["status"]["capacity"] = {"pods": "110"}
                patch["status"]["allocatable"] = {"pods": "110"}
            if not util.get_path(st, "nodeInfo", "kubeletVersion"):
                patch["status"]["nodeInfo"] = {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
                                               "operatingSystem": "linux", "architecture": "amd64",
                                               "containerRuntimeVersion": "containerd://1.7.0",
                                               "osImage": "kube-sim", "kernelVersion": "6.1.0"}
        try:
            self.api.patch_internal("", "nodes", "", n.name, patch, MANAGER, subresource="status",
                                    patch_type=SMP)
        except E.ApiError:
            pass

    # -------------------------------------------------------- pods

    def _ips(self, node):
        n = self.cache["nodes"].get(node)
        host = (n.ip if n else "") or "10.0.0.1"
        cidr = n.cidr if n else ""
        if cidr:
            try:
                net = ipaddress.ip_network(cidr, strict=False)
                c = self.ip_counters.setdefault(node, itertools.count(2))
                i = next(c) % max(2, net.num_addresses - 2)
                return host, str(net.network_address + max(1, i))
            except ValueError:
                pass
        i = next(self.global_ip)
        return host, str(ipaddress.IPv4Address(int(ipaddress.IPv4Address("10.244.0.0")) + i))

    def _pod(self, key, p, now):
        if p.deleting:
            if p.del_requested is None:
                return
            wait = min(p.del_grace * self.grace_scale, self.grace_max)
            if now >= p.del_requested + wait:
                try:
                    self.api.delete_internal("", "pods", p.ns, p.name, MANAGER, {"gracePeriodSeconds": 0})
                except E.ApiError:
                    pass
            return
        if p.phase == "Pending":
            seen = self.first_seen.setdefault(key, now)
            if now - seen < self.start_delay:
                return
            self._start(p, now)
        elif p.phase == "Running":
            if p.complete_after is not None and p.started is not None and now - p.started >= p.complete_after:
                self._complete(p, now)
            elif not p.ready:
                # the kubelet is back: it reports its containers ready again
                ts = util.rfc3339(now)
                conds = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
                         for t in ("Ready", "ContainersReady")]
                try:
                    self.api.patch_internal("", "pods", p.ns, p.name, {"status": {"conditions": conds}}, MANAGER,
                                            subresource="status", patch_type=SMP)
                except E.ApiError:
                    pass

    def _start(self, p, now):
        ts = util.rfc3339(now)
        host, ip = self._ips(p.node)
        statuses = []
        for name, image in p.containers:
            h = hashlib.sha256(("%s/%s/%s" % (p.ns, p.name, name)).encode()).hexdigest()
            img = image or ""
            statuses.append({"name": name, "state": {"running": {"startedAt": ts}}, "lastState": {}, "ready": True,
                             "restartCount": 0, "image": img,
                             "imageID": "%s@sha256:%s" % (img.split(":")[0], hashlib.sha256(img.encode()).hexdigest()),
                             "containerID": "containerd://" + h, "started": True})
        conds = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
                 for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
        patch = {"status": {"phase": "Running", "conditions": conds, "hostIP": host, "hostIPs": [{"ip": host}],
                            "podIP": ip, "podIPs": [{"ip": ip}], "startTime": ts, "containerStatuses": statuses}}
        try:
            self.api.patch_internal("", "pods", p.ns, p.name, patch, MANAGER, subresource="status", patch_type=SMP)
        except E.ApiError:
            pass

    def _complete(self, p, now):
        ts = util.rfc3339(now)
        pod = self.api.get_object_internal("", "pods", p.ns, p.name)
        if pod is None:
            return
        statuses = []
        for cs in util.get_path(pod, "status", "containerStatuses") or []:
            started = util.get_path(cs, "state", "running", "startedAt") or ts
            cs = dict(cs)
            cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                          "finishedAt": ts, "containerID": cs.get("containerID", "")}}
            cs["ready"] = False
            cs["started"] = False
            statuses.append(cs)
        conds = [{"type": "Ready", "status": "False", "lastProbeTime": None, "lastTransitionTime": ts,
                  "reason": "PodCompleted"},
                 {"type": "ContainersReady", "status": "False", "lastProbeTime": None, "lastTransitionTime": ts,
                  "reason": "PodCompleted"},
                 {"type": "PodReadyToStartContainers", "status": "False", "lastProbeTime": None,
                  "lastTransitionTime": ts}]
        patch = {"status": {"phase": "Succeeded", "conditions": conds, "containerStatuses": statuses}}
        try:
            self.api.patch_internal("", "pods", p.ns, p.name, patch, MANAGER, subresource="status", patch_type=SMP)
        except E.ApiError:
            pass
