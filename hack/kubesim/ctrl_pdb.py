"""The disruption controller: keeps PodDisruptionBudget status current
(expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed,
observedGeneration, disruptedPods, the DisruptionAllowed condition) as
pods come, go, turn ready or are evicted."""

import time

from . import errors as E
from . import jsonpath
from . import selector as selectors
from . import util
from .controllers import Controller, controller_ref

MANAGER = "kube-controller-manager"
DELETION_TIMEOUT = 120.0  # seconds a disruptedPods entry is trusted


class _Pod:
    __slots__ = ("ns", "name", "labels", "ready", "deleting", "owner_kind", "owner_name", "owner_uid", "terminal")


def _pod(obj, entry):
    md = obj.get("metadata") or {}
    p = _Pod()
    p.ns = entry.ns
    p.name = entry.name
    p.labels = entry.labels or {}
    p.deleting = bool(md.get("deletionTimestamp"))
    p.ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                  for c in util.get_path(obj, "status", "conditions") or [])
    p.terminal = util.get_path(obj, "status", "phase") in ("Succeeded", "Failed")
    ref = controller_ref(obj)
    p.owner_kind = ref.get("kind") if ref else None
    p.owner_name = ref.get("name") if ref else None
    p.owner_uid = ref.get("uid") if ref else None
    return p


class DisruptionController(Controller):
    name = "pdb"
    sids = ("poddisruptionbudgets.policy", "pods")
    period = 5.0

    def __init__(self, sim):
        super().__init__(sim)
        self.dirty_ns = set()
        self.pods_by_ns = {}
        self.pdb_ns = {}  # namespace -> number of PDBs; pods are kept only there

    def extract(self, sid, obj, entry):
        if sid == "pods":
            return _pod(obj, entry) if entry.ns in self.pdb_ns else None
        ns = util.get_path(obj, "metadata", "namespace")
        return obj

    def initial(self):
        for pdb in self.cache["poddisruptionbudgets.policy"].values():
            self._pdb_added(pdb["metadata"]["namespace"])

    def _pdb_added(self, ns):
        first = ns not in self.pdb_ns
        self.pdb_ns[ns] = self.pdb_ns.get(ns, 0) + 1
        if first:
            # start following this namespace's pods
            with self.store.lock:
                t = self.store.tables.get("pods")
                ents = []
                if t is not None:
                    lo, hi = t.range(ns)
                    ents = [t.items[k] for k in t.keys[lo:hi]]
            pods = self.cache["pods"]
            keys = self.pods_by_ns.setdefault(ns, set())
            for e in ents:
                pods[e.key] = _pod(e.obj(), e)
                keys.add(e.key)

    def _pdb_removed(self, ns):
        n = self.pdb_ns.get(ns, 0) - 1
        if n > 0:
            self.pdb_ns[ns] = n
            return
        self.pdb_ns.pop(ns, None)
        for k in self.pods_by_ns.pop(ns, ()):
            self.cache["pods"].pop(k, None)

    def changed(self, items):
        for sid, key, old, new, ev in items:
            rec = new or old
            if sid == "pods":
                ns = key.split("/", 1)[0]
                if ns not in self.pdb_ns:
                    continue
                s = self.pods_by_ns.setdefault(ns, set())
                if new is None:
                    s.discard(key)
                else:
                    s.add(key)
                self.dirty_ns.add(ns)
            elif rec is not None:
                ns = rec["metadata"]["namespace"]
                if old is None and new is not None:
                    self._pdb_added(ns)
                elif new is None and old is not None:
                    self._pdb_removed(ns)
                self.dirty_ns.add(ns)

    def resync(self):
        for pdb in self.cache["poddisruptionbudgets.policy"].values():
            self.dirty_ns.add(pdb["metadata"]["namespace"])

    def work(self):
        if not self.dirty_ns:
            return
        dirty, self.dirty_ns = self.dirty_ns, set()
        for pdb in list(self.cache["poddisruptionbudgets.policy"].values()):
            if pdb["metadata"]["namespace"] in dirty:
                self._safe(self.sync, pdb)

    def _scale_of(self, p):
        """Replicas of the pod's controller (deployments through their
        ReplicaSet), as the disruption controller's finders do."""
        api = self.api
        if p.owner_kind == "ReplicaSet":
            rs = api.get_object_internal("apps", "replicasets", p.ns, p.owner_name)
            if rs is None:
                return None, None
            dref = controller_ref(rs)
            if dref and dref.get("kind") == "Deployment":
                d = api.get_object_internal("apps", "deployments", p.ns, dref.get("name"))
                if d is not None:
                    return d["metadata"]["uid"], util.get_path(d, "spec", "replicas", default=1)
            return rs["metadata"]["uid"], util.get_path(rs, "spec", "replicas", default=1)
        if p.owner_kind == "StatefulSet":
            s = api.get_object_internal("apps", "statefulsets", p.ns, p.owner_name)
            if s is not None:
                return s["metadata"]["uid"], util.get_path(s, "spec", "replicas", default=1)
            return None, None
        if p.owner_kind:
            # any custom controller with a scale subresource
            for rt in self.sim.registry.all():
                if rt.kind == p.owner_kind and rt.is_custom and rt.scale_paths:
                    o = api.get_object_internal(rt.group, rt.plural, p.ns, p.owner_name)
                    if o is not None:
                        return o["metadata"]["uid"], jsonpath.compile(rt.scale_paths[0]).first(o, 0) or 0
        return None, None

    def sync(self, pdb):
        md = pdb["metadata"]
        spec = pdb.get("spec") or {}
        ns = md["namespace"]
        try:
            sel = selectors.from_label_selector_object(spec.get("selector"))
        except ValueError:
            sel = selectors.NOTHING
        pods = [self.cache["pods"][k] for k in self.pods_by_ns.get(ns, ()) if k in self.cache["pods"]]
        pods = sorted((p for p in pods if sel.matches(p.labels)), key=lambda p: p.name)
        st = util.deepcopy(pdb.get("status") or {})
        now = time.time()
        disrupted = dict(st.get("disruptedPods") or {})
        live = {p.name: p for p in pods}
        for name, ts in list(disrupted.items()):
            p = live.get(name)
            try:
                old = now - util.parse_time(ts) > DELETION_TIMEOUT
            except ValueError:
                old = True
            if p is None or p.deleting or old:
                del disrupted[name]
        healthy = sum(1 for p in pods if p.ready and not p.deleting and p.name not in disrupted and not p.terminal)
        min_av = spec.get("minAvailable")
        max_un = spec.get("maxUnavailable")
        error = None
        try:
            if max_un is not None or (isinstance(min_av, str) and min_av.endswith("%")):
                seen = {}
                bare = 0
                for p in pods:
                    uid, scale = self._scale_of(p) if p.owner_kind else (None, None)
                    if uid is None:
                        bare += 1
                    else:
                        seen[uid] = scale
                if bare:
                    error = "found no controllers for pod \"%s\"" % next(p.name for p in pods if not p.owner_kind)
                expected = sum(seen.values()) + bare
                if max_un is not None:
                    desired = max(0, expected - util.int_or_percent(max_un, expected, True))
                else:
                    desired = util.int_or_percent(min_av, expected, True)
            elif min_av is not None:
                expected = len(pods)
                desired = util.int_or_percent(min_av, expected, True)
            else:
                expected = len(pods)
                desired = 0
        except ValueError as e:
            error = str(e)
            expected = len(pods)
            desired = expected
        if error is not None:
            # failSafe: only disruptionsAllowed and the condition change
            new = util.deepcopy(st)
            new["disruptionsAllowed"] = 0
            conds = [c for c in new.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
            conds.append({"type": "DisruptionAllowed", "status": "False",
                          "observedGeneration": st.get("observedGeneration", 0),
                          "lastTransitionTime": util.rfc3339(), "reason": "SyncFailed", "message": error})
            prev = [c for c in st.get("conditions") or [] if c.get("type") == "DisruptionAllowed"]
            if prev and prev[0].get("reason") == "SyncFailed" and prev[0].get("message") == error:
                return
            new["conditions"] = conds
            obj = util.deepcopy(pdb)
            obj["status"] = new
            try:
                self.api.update_internal("policy", "poddisruptionbudgets", obj, MANAGER, subresource="status")
            except E.ApiError as e:
                if e.code == 409:
                    self.dirty_ns.add(ns)
            return
        allowed = max(0, healthy - desired)
        cond_status = "True" if allowed > 0 else "False"
        reason = "SufficientPods" if allowed > 0 else ("SyncFailed" if error else "InsufficientPods")
        conds = [c for c in st.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
        prev = next((c for c in st.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
        ltt = prev.get("lastTransitionTime") if prev and prev.get("status") == cond_status else util.rfc3339()
        conds.append({"type": "DisruptionAllowed", "status": cond_status, "observedGeneration": md.get("generation", 1),
                      "lastTransitionTime": ltt, "reason": reason, "message": error or ""})
        new = {"observedGeneration": md.get("generation", 1), "disruptionsAllowed": allowed,
               "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected, "conditions": conds}
        if disrupted:
            new["disruptedPods"] = disrupted
        if new != st:
            obj = util.deepcopy(pdb)
            obj["status"] = new
            try:
                self.api.update_internal("policy", "poddisruptionbudgets", obj, MANAGER, subresource="status")
            except E.ApiError as e:
                if e.code == 409:
                    self.dirty_ns.add(ns)
