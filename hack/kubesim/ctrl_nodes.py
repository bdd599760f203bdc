"""The node lifecycle controller's taint work: nodes whose Ready condition
is False get node.kubernetes.io/not-ready (NoSchedule and NoExecute),
Unknown gets node.kubernetes.io/unreachable, True gets neither; pods on a
node that stops being Ready are marked Ready=False; pods that do not
tolerate a NoExecute taint are deleted (after their tolerationSeconds)."""

import time

from . import errors as E
from . import util
from .controllers import Controller
from .scheduler import tolerates

MANAGER = "node-controller"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


class _N:
    __slots__ = ("name", "ready", "taints")


class _P:
    __slots__ = ("node", "ready", "deleting")


class NodeLifecycleController(Controller):
    name = "nodelifecycle"
    sids = ("nodes", "pods")
    period = 2.0

    def __init__(self, sim):
        super().__init__(sim)
        self.by_node = {}
        self.dirty = set()
        self.evictions = {}  # pod key -> due time

    def extract(self, sid, obj):
        if sid == "nodes":
            n = _N()
            n.name = util.get_path(obj, "metadata", "name")
            cond = next((c for c in util.get_path(obj, "status", "conditions") or [] if c.get("type") == "Ready"),
                        None)
            n.ready = cond.get("status") if cond else None
            n.taints = util.get_path(obj, "spec", "taints") or []
            return n
        node = util.get_path(obj, "spec", "nodeName")
        if not node:
            return None
        p = _P()
        p.node = node
        p.ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                      for c in util.get_path(obj, "status", "conditions") or [])
        p.deleting = bool(util.get_path(obj, "metadata", "deletionTimestamp"))
        return p

    def changed(self, items):
        for sid, key, old, new, ev in items:
            if sid == "nodes":
                self.dirty.add(key)
                continue
            if old is not None:
                s = self.by_node.get(old.node)
                if s:
                    s.discard(key)
            if new is not None:
                self.by_node.setdefault(new.node, set()).add(key)
                self.dirty.add(new.node)

    def resync(self):
        if not self.by_node:
            for key, p in self.cache["pods"].items():
                self.by_node.setdefault(p.node, set()).add(key)
        self.dirty.update(self.cache["nodes"].keys())

    def idle_wait(self):
        if self.evictions:
            return max(0.05, min(self.evictions.values()) - time.time())
        return 1.0

    def work(self):
        dirty, self.dirty = self.dirty, set()
        for name in dirty:
            n = self.cache["nodes"].get(name)
            if n is not None:
                self._safe(self._taints, n)
                self._safe(self._pods, n)
        now = time.time()
        for key, due in list(self.evictions.items()):
            if due <= now:
                del self.evictions[key]
                ns, name = key.split("/", 1)
                try:
                    self.api.delete_internal("", "pods", ns, name, "taint-eviction-controller")
                except E.ApiError:
                    pass

    def _taints(self, n):
        want = set()
        if n.ready == "False":
            want = {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}
        elif n.ready == "Unknown":
            want = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
        elif n.ready is None:
            return
        managed = {NOT_READY, UNREACHABLE}
        have = {(t.get("key"), t.get("effect")) for t in n.taints if t.get("key") in managed}
        if have == want:
            return
        taints = [t for t in n.taints if t.get("key") not in managed or (t.get("key"), t.get("effect")) in want]
        for key, eff in sorted(want - have):
            t = {"key": key, "effect": eff}
            if eff == "NoExecute":
                t["timeAdded"] = util.rfc3339()
            taints.append(t)
        try:
            self.api.patch_internal("", "nodes", "", n.name, {"spec": {"taints": taints}}, MANAGER)
        except E.ApiError:
            self.dirty.add(n.name)

    def _pods(self, n):
        keys = list(self.by_node.get(n.name, ()))
        if not keys:
            return
        if n.ready not in ("True", None):
            for key in keys:
                p = self.cache["pods"].get(key)
                if p is None or not p.ready:
                    continue
                ns, name = key.split("/", 1)
                patch = {"status": {"conditions": [{"type": "Ready", "status": "False", "lastProbeTime": None,
                                                    "lastTransitionTime": util.rfc3339()}]}}
                try:
                    self.api.patch_internal("", "pods", ns, name, patch, MANAGER, subresource="status",
                                            patch_type="application/strategic-merge-patch+json")
                except E.ApiError:
                    pass
        noexec = [t for t in n.taints if t.get("effect") == "NoExecute"]
        if not noexec:
            for key in keys:
                self.evictions.pop(key, None)
            return
        now = time.time()
        for key in keys:
            p = self.cache["pods"].get(key)
            if p is None or p.deleting:
                continue
            ns, name = key.split("/", 1)
            pod = self.api.get_object_internal("", "pods", ns, name)
            if pod is None:
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
