"""Garbage collection through ownerReferences (background, foreground and
orphan propagation), namespace deletion, and the cleanup of a deleted
CRD's objects."""

import time

from . import crds as CRD
from . import errors as E
from . import util
from .controllers import Controller
from .store import intern_str

MANAGER = "kube-controller-manager"
GC_DELAY = 0.5  # seconds before a dependent with a missing owner is collected


class GarbageCollector(Controller):
    name = "gc"
    sids = None  # every resource
    period = 10.0

    def __init__(self, sim):
        super().__init__(sim)
        self.dependents = {}  # owner uid -> set((sid, key))
        self.pending = {}  # (sid, key) -> due time (check dependent)
        self.owners_pending = set()  # (sid, key) of owners being deleted with foreground/orphan

    def initial(self):
        for sid, recs in list(self.cache.items()):
            for key, rec in recs.items():
                self._index(sid, key, None, rec)

    def extract(self, sid, obj, entry):
        md = obj.get("metadata") or {}
        refs = tuple((intern_str(o.get("uid")), bool(o.get("blockOwnerDeletion")))
                     for o in md.get("ownerReferences") or [] if isinstance(o, dict))
        fins = md.get("finalizers") or []
        special = md.get("deletionTimestamp") and ("foregroundDeletion" in fins or "orphan" in fins)
        if not refs and not special:
            return None
        return (entry.uid, refs, bool(special))

    def _index(self, sid, key, old, new):
        if old:
            for uid, _ in old[1]:
                s = self.dependents.get(uid)
                if s is not None:
                    s.discard((sid, key))
                    if not s:
                        del self.dependents[uid]
        if new:
            for uid, _ in new[1]:
                self.dependents.setdefault(uid, set()).add((sid, key))

    def changed(self, items):
        now = time.time()
        for sid, key, old, new, ev in items:
            self._index(sid, key, old, new)
            if new is not None:
                if new[1] and any(uid not in self.store.uid_index for uid, _ in new[1]):
                    self.pending.setdefault((sid, key), now + GC_DELAY)
                if new[2]:
                    self.owners_pending.add((sid, key))
            if ev.type == "DELETED" or (new is not None and new[2]):
                uid = ev.old.uid if ev.old is not None else None
                for dep in list(self.dependents.get(uid, ())):
                    self.pending[dep] = now
            if ev.type != "DELETED" and ev.new is not None and b'"deletionTimestamp"' in ev.new.data:
                # an owner that started terminating: its dependents may be blocked owners of foreground deletion
                uid = ev.new.uid
                if uid in self.dependents:
                    for dep in list(self.dependents[uid]):
                        self.pending[dep] = now

    def resync(self):
        now = time.time()
        uids = self.store.uid_index
        for sid, recs in list(self.cache.items()):
            for key, rec in list(recs.items()):
                if rec[1] and any(uid not in uids for uid, _ in rec[1]):
                    self.pending.setdefault((sid, key), now)
                if rec[2]:
                    self.owners_pending.add((sid, key))

    def idle_wait(self):
        if self.pending:
            return max(0.05, min(self.pending.values()) - time.time())
        return 1.0 if self.owners_pending else 5.0

    def _entry(self, sid, key):
        t = self.store.tables.get(sid)
        if t is None:
            return None, None
        return t, t.items.get(key)

    def _rt(self, sid):
        rt = self.sim.registry.for_storage(sid)
        return self.api.storage_rt(rt) if rt is not None else None

    def work(self):
        now = time.time()
        due = [k for k, t in self.pending.items() if t <= now]
        for k in due:
            self.pending.pop(k, None)
            self._check_dependent(*k)
        for k in list(self.owners_pending):
            if self._process_owner(*k):
                self.owners_pending.discard(k)

    def _owner_state(self, uid):
        """'absent', 'foreground', 'deleting' or 'alive'."""
        t, e = self.store.by_uid(uid)
        if e is None:
            return "absent"
        if b'"deletionTimestamp"' in e.data:
            md = e.obj().get("metadata") or {}
            if "foregroundDeletion" in (md.get("finalizers") or []):
                return "foreground"
            return "deleting"
        return "alive"

    def _check_dependent(self, sid, key):
        with self.store.lock:
            t, e = self._entry(sid, key)
            if e is None:
                return
            obj = e.obj()
            refs = util.get_path(obj, "metadata", "ownerReferences") or []
            if not refs:
                return
            states = [(r, self._owner_state(r.get("uid"))) for r in refs if isinstance(r, dict)]
        rt = self._rt(sid)
        if rt is None:
            return
        md = obj["metadata"]
        ns = md.get("namespace") or ""
        absent = [r for r, s in states if s == "absent"]
        solid = [r for r, s in states if s in ("alive", "deleting")]
        fg = [r for r, s in states if s == "foreground"]
        if not absent and not fg:
            return
        if solid:
            if absent:
                keep = [r for r in refs if r not in absent]
                try:
                    self.api.patch_internal(rt.group, rt.plural, ns, md["name"],
                                            {"metadata": {"ownerReferences": keep,
                                                          "resourceVersion": md["resourceVersion"]}}, MANAGER)
                except E.ApiError:
                    pass
            return
        if md.get("deletionTimestamp"):
            return
        policy = "Foreground" if fg else "Background"
        try:
            self.api.delete_internal(rt.group, rt.plural, ns, md["name"], MANAGER,
                                     {"propagationPolicy": policy, "preconditions": {"uid": md.get("uid")}})
        except E.ApiError:
            pass

    def _process_owner(self, sid, key):
        """Foreground and orphan finalizers.  True when done."""
        with self.store.lock:
            t, e = self._entry(sid, key)
            if e is None:
                return True
            obj = e.obj()
        md = obj["metadata"]
        fins = md.get("finalizers") or []
        if not md.get("deletionTimestamp"):
            return True
        rt = self._rt(sid)
        if rt is None:
            return True
        uid = md.get("uid")
        deps = list(self.dependents.get(uid, ()))
        if "orphan" in fins:
            for dsid, dkey in deps:
                drt = self._rt(dsid)
                with self.store.lock:
                    _, de = self._entry(dsid, dkey)
                    dobj = de.obj() if de else None
                if dobj is None or drt is None:
                    continue
                dmd = dobj["metadata"]
                keep = [r for r in dmd.get("ownerReferences") or [] if r.get("uid") != uid]
                try:
                    self.api.patch_internal(drt.group, drt.plural, dmd.get("namespace") or "", dmd["name"],
                                            {"metadata": {"ownerReferences": keep or None}}, MANAGER)
                except E.ApiError:
                    return False
            self._remove_finalizer(rt, md, "orphan")
            return False
        if "foregroundDeletion" in fins:
            blocking = 0
            for dsid, dkey in deps:
                drt = self._rt(dsid)
                with self.store.lock:
                    _, de = self._entry(dsid, dkey)
                    dobj = de.obj() if de else None
                if dobj is None or drt is None:
                    continue
                dmd = dobj["metadata"]
                ref = next((r for r in dmd.get("ownerReferences") or [] if r.get("uid") == uid), None)
                if ref is None:
                    continue
                if ref.get("blockOwnerDeletion"):
                    blocking += 1
                if not dmd.get("deletionTimestamp"):
                    try:
                        self.api.delete_internal(drt.group, drt.plural, dmd.get("namespace") or "", dmd["name"],
                                                 MANAGER, {"propagationPolicy": "Foreground"})
                    except E.ApiError:
                        pass
            if blocking == 0:
                self._remove_finalizer(rt, md, "foregroundDeletion")
                return True
            return False
        return True

    def _remove_finalizer(self, rt, md, fin):
        cur = self.api.get_object_internal(rt.group, rt.plural, md.get("namespace") or "", md["name"])
        if cur is None:
            return
        fins = [f for f in cur["metadata"].get("finalizers") or [] if f != fin]
        try:
            self.api.patch_internal(rt.group, rt.plural, md.get("namespace") or "", md["name"],
                                    {"metadata": {"finalizers": fins or None,
                                                  "resourceVersion": cur["metadata"]["resourceVersion"]}}, MANAGER)
        except E.ApiError:
            pass


class NamespaceController(Controller):
    """Deletes the content of a terminating namespace, then finalizes it."""

    name = "namespace"
    sids = ("namespaces",)
    period = 1.0

    def extract(self, sid, obj, entry):
        md = obj.get("metadata") or {}
        return bool(md.get("deletionTimestamp"))

    def changed(self, items):
        for sid, key, old, new, ev in items:
            if new:
                self._clean(key)

    def resync(self):
        for key, terminating in list(self.cache["namespaces"].items()):
            if terminating:
                self._clean(key)

    def idle_wait(self):
        return 0.5 if any(self.cache["namespaces"].values()) else 5.0

    def work(self):
        self.resync()

    def _clean(self, ns):
        remaining = 0
        todo = []
        with self.store.lock:
            for sid, t in list(self.store.tables.items()):
                if not t.namespaced:
                    continue
                lo, hi = t.range(ns)
                for k in t.keys[lo:hi]:
                    e = t.items[k]
                    remaining += 1
                    if b'"deletionTimestamp"' not in e.data:
                        todo.append((sid, e.name))
        for sid, name in todo:
            rt = self.sim.registry.for_storage(sid)
            if rt is None:
                continue
            try:
                self.api.delete_internal(rt.group, rt.plural, ns, name, "namespace-controller",
                                         {"propagationPolicy": "Background"})
            except E.ApiError:
                pass
        if remaining == 0:
            cur = self.api.get_object_internal("", "namespaces", "", ns)
            if cur is None or not cur["metadata"].get("deletionTimestamp"):
                return
            spec_f = [f for f in util.get_path(cur, "spec", "finalizers") or [] if f != "kubernetes"]
            try:
                self.api.finalize_namespace(ns, {"spec": {"finalizers": spec_f}},
                                            _ctx("namespace-controller"))
            except E.ApiError:
                pass


class CRDCleanup(Controller):
    """A deleted CRD first loses all its custom resources."""

    name = "crd"
    sids = ("customresourcedefinitions.apiextensions.k8s.io",)
    period = 1.0

    def extract(self, sid, obj, entry):
        md = obj.get("metadata") or {}
        if not md.get("deletionTimestamp"):
            return None
        spec = obj.get("spec") or {}
        return ((spec.get("names") or {}).get("plural", "") + "." + spec.get("group", ""), md["name"])

    def changed(self, items):
        self.resync()

    def idle_wait(self):
        return 0.3 if self.cache[self.sids[0]] else 5.0

    def work(self):
        self.resync()

    def resync(self):
        for key, (sid, crd_name) in list(self.cache[self.sids[0]].items()):
            rt = self.sim.registry.for_storage(sid)
            names = []
            with self.store.lock:
                t = self.store.tables.get(sid)
                if t is not None:
                    names = [(e.ns, e.name, b'"deletionTimestamp"' in e.data) for e in t.items.values()]
            if rt is not None:
                for ns, name, deleting in names:
                    if not deleting:
                        try:
                            self.api.delete_internal(rt.group, rt.plural, ns, name, "apiextensions-controller")
                        except E.ApiError:
                            pass
            if not names:
                cur = self.api.get_object_internal("apiextensions.k8s.io", "customresourcedefinitions", "", crd_name)
                if cur is None:
                    continue
                fins = [f for f in cur["metadata"].get("finalizers") or [] if f != CRD.CLEANUP_FINALIZER]
                try:
                    self.api.patch_internal("apiextensions.k8s.io", "customresourcedefinitions", "", crd_name,
                                            {"metadata": {"finalizers": fins or None}}, "apiextensions-controller")
                except E.ApiError:
                    pass


def _ctx(manager):
    from .api import Ctx
    return Ctx("system:kube-controller-manager", user_agent=manager, params={"fieldManager": manager})
