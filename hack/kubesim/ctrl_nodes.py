"""The node lifecycle controller's taint work: nodes whose Ready condition
is False get node.kubernetes.io/not-ready (NoSchedule and NoExecute),
Unknown gets node.kubernetes.io/unreachable, True gets neither; pods on a
node that stops being Ready are marked Ready=False; pods that do not
tolerate a NoExecute taint are deleted (after their tolerationSeconds).

In time, as a real control plane: every node registers with
node.kubernetes.io/not-ready:NoSchedule (the API adds it, as the
TaintNodesByCondition admission does), and taints go from a node that
turned Ready only on this controller's next pass, every
--node-monitor-period seconds (5, as kube-controller-manager's), not the
moment it is Ready; 0 takes them off at once. --keep-not-ready-taint
leaves not-ready:NoSchedule on Ready nodes for good, as a broken CNI
does.
Also the pod garbage collector's orphan sweep: pods bound to a node that has
not existed for --pod-gc-delay seconds (40, as kube-controller-manager's
quarantine) are marked Failed (DisruptionTarget, DeletionByPodGC) and
deleted."""

import time

from . import errors as E
from . import util
from .controllers import Controller
from .scheduler import tolerates

MANAGER = "node-controller"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


class _N:
    __slots__ = ("name", "ready", "taints", "rv")


class NodeLifecycleController(Controller):
    name = "nodelifecycle"
    sids = ("nodes",)
    period = 10.0

    def __init__(self, sim):
        super().__init__(sim)
        self.dirty = set()
        self.evictions = {}  # pod key -> due time
        self.watched = set()  # nodes not Ready or with NoExecute taints
        self.gc_delay = getattr(sim.options, "pod_gc_delay", 40.0)
        self.missing = {}  # node name -> first time seen missing (pods bound to it)
        self.next_gc = 0.0
        self.resynced_once = False
        self.monitor_period = getattr(sim.options, "node_monitor_period", 0.0)
        self.keep_not_ready = getattr(sim.options, "keep_not_ready_taint", False)
        self.next_monitor = time.time() + self.monitor_period
        self.untaint = set()  # Ready nodes whose taints go on the next monitor pass

    def extract(self, sid, obj, entry):
        n = _N()
        n.name = entry.name
        cond = next((c for c in util.get_path(obj, "status", "conditions") or [] if c.get("type") == "Ready"),
                    None)
        n.ready = cond.get("status") if cond else None
        n.taints = util.get_path(obj, "spec", "taints") or []
        n.rv = entry.rv
        return n

    def changed(self, items):
        for sid, key, old, new, ev in items:
            self.dirty.add(key)
            if new is None:
                # a node went: look for its pods sooner
                self.next_gc = min(self.next_gc, time.time() + min(self.gc_delay, 20.0))

    def resync(self):
        self.dirty.update(self.watched)
        if not self.resynced_once:
            self.resynced_once = True
            self.dirty.update(self.cache["nodes"].keys())


    def idle_wait(self):
        waits = [1.0]
        if self.evictions:
            waits.append(max(0.05, min(self.evictions.values()) - time.time()))
        if self.untaint:
            waits.append(max(0.01, self.next_monitor - time.time()))
        return min(waits)

    def _pod_gc(self, now):
        """podgc: pods bound to nodes that do not exist go after a quarantine."""
        nodes = self.cache["nodes"]
        orphans = {}
        with self.store.lock:
            t = self.store.tables.get("pods")
            if t is None:
                return
            pos = t.field_pos.get("spec.nodeName")
            for e in t.items.values():
                node = e.fields[pos] if e.fields else ""
                if node and node not in nodes:
                    orphans.setdefault(node, []).append(e)
        for name in list(self.missing):
            if name not in orphans:
                del self.missing[name]
        for name, ents in orphans.items():
            first = self.missing.setdefault(name, now)
            if now - first < self.gc_delay:
                continue
            for e in ents:
                pod = e.obj()
                if util.get_path(pod, "status", "phase") not in ("Succeeded", "Failed"):
                    ts = util.rfc3339(now)
                    patch = {"status": {"phase": "Failed", "conditions": [
                        {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                         "lastTransitionTime": ts, "reason": "DeletionByPodGC",
                         "message": "PodGC: node no longer exists"}]}}
                    try:
                        self.api.patch_internal("", "pods", e.ns, e.name, patch, "pod-garbage-collector",
                                                subresource="status",
                                                patch_type="application/strategic-merge-patch+json")
                    except E.ApiError:
                        pass
                try:
                    self.api.delete_internal("", "pods", e.ns, e.name, "pod-garbage-collector",
                                             {"gracePeriodSeconds": 0})
                except E.ApiError:
                    pass

    def work(self):
        dirty, self.dirty = self.dirty, set()
        monitor = False
        if self.monitor_period > 0 and time.time() >= self.next_monitor:
            # the periodic pass (monitorNodeHealth): its period runs on
            # whether or not a node waits for it
            monitor = True
            self.next_monitor = time.time() + self.monitor_period
            dirty |= self.untaint
            self.untaint = set()
        interesting = []
        for name in dirty:
            n = self.cache["nodes"].get(name)
            if n is None:
                self.watched.discard(name)
                self.untaint.discard(name)
                continue
            self._safe(self._taints, n, monitor)
            if n.ready not in ("True", None) or any(t.get("effect") == "NoExecute" for t in n.taints):
                self.watched.add(name)
                interesting.append(n)
            else:
                self.watched.discard(name)
        if interesting:
            by_node = self._pods_on({n.name for n in interesting})
            for n in interesting:
                self._safe(self._pods, n, by_node.get(n.name, []))
        now = time.time()
        if now >= self.next_gc:
            # kube-controller-manager's podgc looks every 20 s; shorter grace, shorter period
            self.next_gc = now + min(20.0, max(0.5, self.gc_delay / 4))
            self._safe(self._pod_gc, now)
        for key, due in list(self.evictions.items()):
            if due <= now:
                del self.evictions[key]
                ns, name = key.split("/", 1)
                try:
                    self.api.delete_internal("", "pods", ns, name, "taint-eviction-controller")
                except E.ApiError:
                    pass

    def _pods_on(self, names):
        """Pods bound to these nodes, from the store's nodeName index."""
        out = {}
        with self.store.lock:
            t = self.store.tables.get("pods")
            if t is None:
                return out
            pos = t.field_pos.get("spec.nodeName")
            for e in t.items.values():
                node = e.fields[pos] if e.fields else ""
                if node in names:
                    out.setdefault(node, []).append(e)
        return out

    def _taints(self, n, monitor):
        want = set()
        if n.ready == "False":
            want = {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}
        elif n.ready == "Unknown":
            want = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
        elif n.ready is None:
            return  # registered, not reporting yet: the API's admission set not-ready
        elif self.keep_not_ready:
            want = {(NOT_READY, "NoSchedule")}
        managed = {NOT_READY, UNREACHABLE}
        have = {(t.get("key"), t.get("effect")) for t in n.taints if t.get("key") in managed}
        if have == want:
            self.untaint.discard(n.name)
            return
        if n.ready == "True" and have - want and self.monitor_period > 0 and not monitor:
            self.untaint.add(n.name)  # Ready: the taints go on the next pass
            return
        self.untaint.discard(n.name)
        taints = [t for t in n.taints if t.get("key") not in managed or (t.get("key"), t.get("effect")) in want]
        for key, eff in sorted(want - have):
            t = {"key": key, "effect": eff}
            if eff == "NoExecute":
                t["timeAdded"] = util.rfc3339()
            taints.append(t)
        # As PatchNodeTaints does: the taint list is replaced whole, so the
        # patch carries the resourceVersion it was computed from and a
        # conflict (someone else changed the taints) is retried from the
        # fresher cache rather than undoing their change.
        patch = {"metadata": {"resourceVersion": str(n.rv)}, "spec": {"taints": taints}}
        try:
            self.api.patch_internal("", "nodes", "", n.name, patch, MANAGER)
        except E.ApiError:
            self.dirty.add(n.name)

    def _pods(self, n, entries):
        noexec = [t for t in n.taints if t.get("effect") == "NoExecute"]
        now = time.time()
        for e in entries:
            pod = e.obj()
            md = pod["metadata"]
            key = e.key
            if md.get("deletionTimestamp"):
                self.evictions.pop(key, None)
                continue
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in util.get_path(pod, "status", "conditions") or [])
            if n.ready not in ("True", None) and ready:
                patch = {"status": {"conditions": [{"type": "Ready", "status": "False", "lastProbeTime": None,
                                                    "lastTransitionTime": util.rfc3339()}]}}
                try:
                    self.api.patch_internal("", "pods", e.ns, e.name, patch, MANAGER, subresource="status",
                                            patch_type="application/strategic-merge-patch+json")
                except E.ApiError:
                    pass
            if not noexec:
                self.evictions.pop(key, None)
                continue
            tols = util.get_path(pod, "spec", "tolerations") or []
            due = float("inf")
            for t in noexec:
                match = [x for x in tols if tolerates(x, t)]
                if not match:
                    due = now
                    break
                secs = [x.get("tolerationSeconds") for x in match]
                if any(s is None for s in secs):
                    continue
                added = t.get("timeAdded")
                try:
                    start = util.parse_time(added) if added else now
                except ValueError:
                    start = now
                due = min(due, start + max(0, min(secs)))
            if due == float("inf"):
                self.evictions.pop(key, None)
            else:
                self.evictions[key] = due
