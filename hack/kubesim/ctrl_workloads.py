"""Deployment, ReplicaSet and DaemonSet controllers.

A Deployment owns one ReplicaSet per pod template (named
<deployment>-<template hash>); a template change scales the new ReplicaSet
to the desired count and old ones to zero at once (a simplified rolling
update).  A ReplicaSet creates pods from its template (generateName
<replicaset>-) and deletes the surplus, unscheduled and not-ready pods
first.  A DaemonSet creates one pod per eligible node, pinned with node
affinity on metadata.name (the scheduler binds it) and deletes pods on
nodes that are no longer eligible."""

import json

from . import errors as E
from . import selector as selectors
from . import util
from .controllers import Controller, controller_ref
from .store import intern_str

MANAGER = "kube-controller-manager"
BURST = 500
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template, collision=0):
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    if collision:
        for b in str(collision).encode():
            h ^= b
            h = (h * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(h))


class PodRec:
    """The few pod fields the workload controllers need (kept small: there
    may be 150,000 of them)."""
    __slots__ = ("ns", "name", "uid", "labels", "owner", "owner_kind", "deleting", "phase", "ready", "node",
                 "created", "nodeAffinityName")

    def __getitem__(self, k):
        return getattr(self, k)

    def get(self, k, default=None):
        return getattr(self, k, default)


def pod_record(obj, entry=None):
    md = obj.get("metadata") or {}
    st = obj.get("status") or {}
    ref = controller_ref(obj)
    r = PodRec()
    if entry is not None:
        r.ns, r.name, r.uid, r.labels = entry.ns, entry.name, entry.uid, entry.labels or {}
    else:
        r.ns = md.get("namespace")
        r.name = md.get("name")
        r.uid = md.get("uid")
        r.labels = md.get("labels") or {}
    r.owner = intern_str(ref.get("uid")) if ref else None
    r.owner_kind = intern_str(ref.get("kind")) if ref else None
    r.deleting = bool(md.get("deletionTimestamp"))
    r.phase = st.get("phase")
    r.ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
    r.node = util.get_path(obj, "spec", "nodeName") or ""
    r.created = intern_str(md.get("creationTimestamp") or "")
    r.nodeAffinityName = _pinned_node(obj) if r.owner_kind == "DaemonSet" else None
    return r


def _pinned_node(pod):
    terms = util.get_path(pod, "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                          "nodeSelectorTerms") or []
    for t in terms:
        for mf in t.get("matchFields") or []:
            if mf.get("key") == "metadata.name" and mf.get("operator") == "In" and len(mf.get("values") or []) == 1:
                return mf["values"][0]
    return None


def active(p):
    return not p["deleting"] and p["phase"] not in ("Succeeded", "Failed")


class _PodOwnerIndex:
    def __init__(self):
        self.by_owner = {}

    def update(self, key, old, new):
        if old and old.get("owner"):
            s = self.by_owner.get(old["owner"])
            if s:
                s.discard(key)
        if new and new.get("owner"):
            self.by_owner.setdefault(new["owner"], set()).add(key)

    def get(self, uid):
        return self.by_owner.get(uid, ())


def _set_condition(conds, ctype, status, reason, message, now):
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            if c.get("status") != status or c.get("reason") != reason or c.get("message") != message:
                c["lastUpdateTime"] = now
            c.update({"status": status, "reason": reason, "message": message})
            return
    conds.append({"type": ctype, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
                  "reason": reason, "message": message})


class ReplicaSetController(Controller):
    name = "replicaset"
    sids = ("replicasets.apps", "pods")
    period = 30.0

    def __init__(self, sim):
        super().__init__(sim)
        self.index = _PodOwnerIndex()
        self.dirty = set()
        # ReplicaSet uid -> [active, ready, fully labeled] of its pods, and
        # the template labels the last were counted against. Kept up to
        # date as pods change, and counted afresh when the ReplicaSet
        # changes and at every resync: a count over every owned pod at each
        # sync took 27 of about 60 CPU s in a 2,000-pod scale-out.
        self.counts = {}
        self.labels = {}

    def initial(self):
        for key, rec in self.cache["pods"].items():
            self.index.update(key, None, rec)

    def _count(self, uid, p, sign):
        c = self.counts.get(uid)
        if c is None or p is None or not active(p):
            return
        c[0] += sign
        if p.ready:
            c[1] += sign
        labels = p.labels
        for k, v in self.labels[uid]:
            if labels.get(k) != v:
                return
        c[2] += sign

    def _recount(self, uid, rs):
        tl = util.get_path(rs, "spec", "template", "metadata", "labels") or {}
        self.labels[uid] = tuple(tl.items())
        self.counts[uid] = [0, 0, 0]
        pods_cache = self.cache["pods"]
        for k in self.index.get(uid):
            self._count(uid, pods_cache.get(k), +1)
        return self.counts[uid]

    def extract(self, sid, obj, entry):
        if sid == "pods":
            r = pod_record(obj, entry)
            return r if r.owner_kind in (None, "ReplicaSet") else None
        return obj

    def changed(self, items):
        for sid, key, old, new, ev in items:
            if sid == "pods":
                self.index.update(key, old, new)
                if old is not None:
                    self._count(old.owner, old, -1)
                if new is not None:
                    self._count(new.owner, new, +1)
                for r in (old, new):
                    if r and r.get("owner"):
                        self.dirty.add(r["owner"])
                if new and not new.get("owner") and active(new):
                    self._maybe_adopt(key, new)
            else:
                rec = new or old
                if rec:
                    uid = rec["metadata"]["uid"]
                    # Counted afresh only when what the count reads may
                    # have changed (the template's labels are in the spec):
                    # a status write is this controller's own, and
                    # recounting on each made every pod's change cost a
                    # pass over all of its ReplicaSet's pods.
                    if old is None or new is None or \
                            old["metadata"].get("generation") != new["metadata"].get("generation"):
                        self.counts.pop(uid, None)
                    self.dirty.add(uid)

    def resync(self):
        self.counts.clear()
        for rs in list(self.cache["replicasets.apps"].values()):
            self.dirty.add(rs["metadata"]["uid"])

    def work(self):
        if not self.dirty:
            return
        by_uid = {rs["metadata"]["uid"]: rs for rs in self.cache["replicasets.apps"].values()}
        dirty, self.dirty = self.dirty, set()
        for uid in dirty:
            rs = by_uid.get(uid)
            if rs is not None:
                self._safe(self.reconcile, rs)

    def _maybe_adopt(self, key, pod):
        for rs in self.cache["replicasets.apps"].values():
            md = rs["metadata"]
            if md.get("namespace") != pod["ns"] or md.get("deletionTimestamp"):
                continue
            try:
                sel = selectors.from_label_selector_object(util.get_path(rs, "spec", "selector"))
            except ValueError:
                continue
            if sel.empty() or not sel.matches(pod["labels"]):
                continue
            ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": md["name"], "uid": md["uid"],
                   "controller": True, "blockOwnerDeletion": True}
            try:
                cur = self.api.get_object_internal("", "pods", pod["ns"], pod["name"])
                if cur is None or controller_ref(cur):
                    return
                refs = list(cur["metadata"].get("ownerReferences") or []) + [ref]
                self.api.patch_internal("", "pods", pod["ns"], pod["name"],
                                        {"metadata": {"ownerReferences": refs,
                                                      "resourceVersion": cur["metadata"]["resourceVersion"]}},
                                        MANAGER)
            except E.ApiError:
                pass
            return

    def reconcile(self, rs):
        md = rs["metadata"]
        if md.get("deletionTimestamp"):
            return
        uid = md["uid"]
        nact, ready, full = self.counts.get(uid) or self._recount(uid, rs)
        want = util.get_path(rs, "spec", "replicas", default=1)
        diff = nact - want
        if diff < 0:
            tmpl = util.get_path(rs, "spec", "template") or {}
            for _ in range(min(-diff, BURST)):
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"generateName": md["name"] + "-", "namespace": md["namespace"],
                                    "labels": dict(util.get_path(tmpl, "metadata", "labels") or {}),
                                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                         "name": md["name"], "uid": md["uid"],
                                                         "controller": True, "blockOwnerDeletion": True}]},
                       "spec": util.deepcopy(tmpl.get("spec") or {})}
                ann = util.get_path(tmpl, "metadata", "annotations")
                if ann:
                    pod["metadata"]["annotations"] = dict(ann)
                try:
                    self.api.create_internal("", "pods", pod, MANAGER)
                except E.ApiError as e:
                    self.sim.log("replicaset %s/%s: cannot create pod: %s" % (md["namespace"], md["name"], e.message))
                    break
        elif diff > 0:
            def rank(p):
                return (1 if p["node"] else 0, {"Pending": 0, "Unknown": 1, "Running": 2}.get(p["phase"], 1),
                        1 if p["ready"] else 0, "".join(chr(255 - ord(c)) for c in p["created"]))
            pods_cache = self.cache["pods"]
            act = [pods_cache[k] for k in self.index.get(uid) if k in pods_cache and active(pods_cache[k])]
            for p in sorted(act, key=rank)[:min(diff, BURST)]:
                try:
                    self.api.delete_internal("", "pods", p["ns"], p["name"], MANAGER)
                except E.ApiError:
                    pass
        # status
        status = dict(rs.get("status") or {})
        new = {"replicas": nact,
               "fullyLabeledReplicas": full,
               "readyReplicas": ready,
               "availableReplicas": ready,
               "observedGeneration": md.get("generation", 1)}
        for k in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not new[k]:
                new.pop(k)
        if status.get("conditions"):
            new["conditions"] = status["conditions"]
        if new != status:
            try:
                self.api.patch_internal("apps", "replicasets", md["namespace"], md["name"],
                                        {"status": {**{k: None for k in status if k not in new}, **new}}, MANAGER,
                                        subresource="status")
            except E.ApiError:
                pass


class DeploymentController(Controller):
    name = "deployment"
    sids = ("deployments.apps", "replicasets.apps")
    period = 30.0

    def __init__(self, sim):
        super().__init__(sim)
        self.dirty = set()
        self.rs_by_owner = {}  # deployment uid -> set of ReplicaSet keys

    def _owner(self, rs):
        ref = controller_ref(rs) if rs else None
        return ref.get("uid") if ref and ref.get("kind") == "Deployment" else None

    def initial(self):
        for key, rs in self.cache["replicasets.apps"].items():
            o = self._owner(rs)
            if o:
                self.rs_by_owner.setdefault(o, set()).add(key)

    def changed(self, items):
        for sid, key, old, new, ev in items:
            rec = new or old
            if rec is None:
                continue
            if sid == "deployments.apps":
                self.dirty.add(key)
            else:
                for r, add in ((old, False), (new, True)):
                    o = self._owner(r)
                    if o:
                        s = self.rs_by_owner.setdefault(o, set())
                        (s.add if add else s.discard)(key)
                ref = controller_ref(rec)
                if ref and ref.get("kind") == "Deployment":
                    self.dirty.add(rec["metadata"]["namespace"] + "/" + ref.get("name", ""))

    def resync(self):
        self.dirty.update(self.cache["deployments.apps"].keys())

    def work(self):
        dirty, self.dirty = self.dirty, set()
        for key in dirty:
            d = self.cache["deployments.apps"].get(key)
            if d is not None:
                self._safe(self.reconcile, d)

    def reconcile(self, d):
        md = d["metadata"]
        if md.get("deletionTimestamp"):
            return
        spec = d.get("spec") or {}
        uid = md["uid"]
        cache = self.cache["replicasets.apps"]
        rss = [cache[k] for k in self.rs_by_owner.get(uid, ()) if k in cache]
        tmpl = util.deepcopy(spec.get("template") or {})
        tmpl.get("metadata", {}).pop("creationTimestamp", None)
        collision = util.get_path(d, "status", "collisionCount", default=0)
        h = template_hash(tmpl, collision)
        new_rs = None
        for rs in rss:
            if util.get_path(rs, "metadata", "labels", "pod-template-hash") == h:
                new_rs = rs
        want = spec.get("replicas", 1)
        paused = spec.get("paused")
        revisions = [int(util.get_path(rs, "metadata", "annotations", "deployment.kubernetes.io/revision") or 0)
                     for rs in rss]
        if new_rs is None and not paused:
            rev = max(revisions + [0]) + 1
            labels = dict(util.get_path(tmpl, "metadata", "labels") or {})
            labels["pod-template-hash"] = h
            rtmpl = util.deepcopy(spec.get("template") or {})
            rtmpl.setdefault("metadata", {})["labels"] = labels
            sel = util.deepcopy(spec.get("selector") or {})
            sel.setdefault("matchLabels", {})["pod-template-hash"] = h
            rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": {"name": md["name"] + "-" + h, "namespace": md["namespace"], "labels": labels,
                               "annotations": {"deployment.kubernetes.io/desired-replicas": str(want),
                                               "deployment.kubernetes.io/max-replicas": str(want),
                                               "deployment.kubernetes.io/revision": str(rev)},
                               "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                    "name": md["name"], "uid": uid, "controller": True,
                                                    "blockOwnerDeletion": True}]},
                  "spec": {"replicas": want, "minReadySeconds": spec.get("minReadySeconds", 0), "selector": sel,
                           "template": rtmpl}}
            try:
                new_rs = self.api.create_internal("apps", "replicasets", rs, MANAGER)
            except E.ApiError as e:
                if e.code == 409:
                    # a ReplicaSet of that name with another template: bump collisionCount
                    self.api.patch_internal("apps", "deployments", md["namespace"], md["name"],
                                            {"status": {"collisionCount": collision + 1}}, MANAGER,
                                            subresource="status")
                    return
                raise
            rss.append(new_rs)
            self.api.patch_internal("apps", "deployments", md["namespace"], md["name"],
                                    {"metadata": {"annotations": {"deployment.kubernetes.io/revision": str(rev)}}},
                                    MANAGER)
        if not paused:
            for rs in rss:
                rmd = rs["metadata"]
                target = want if rs is new_rs or (new_rs and rmd["uid"] == new_rs["metadata"]["uid"]) else 0
                if util.get_path(rs, "spec", "replicas", default=1) != target:
                    self.api.patch_internal("apps", "replicasets", rmd["namespace"], rmd["name"],
                                            {"spec": {"replicas": target},
                                             "metadata": {"annotations": {
                                                 "deployment.kubernetes.io/desired-replicas": str(want),
                                                 "deployment.kubernetes.io/max-replicas": str(want)}}}, MANAGER)
            # revision history: drop the oldest empty ReplicaSets
            limit = spec.get("revisionHistoryLimit", 10)
            old = [rs for rs in rss if new_rs is None or rs["metadata"]["uid"] != new_rs["metadata"]["uid"]]
            old_empty = [rs for rs in old if util.get_path(rs, "spec", "replicas", default=1) == 0
                         and not util.get_path(rs, "status", "replicas")]
            old_empty.sort(key=lambda rs: int(util.get_path(rs, "metadata", "annotations",
                                                            "deployment.kubernetes.io/revision") or 0))
            for rs in old_empty[:max(0, len(old) - limit)]:
                try:
                    self.api.delete_internal("apps", "replicasets", rs["metadata"]["namespace"],
                                             rs["metadata"]["name"], MANAGER)
                except E.ApiError:
                    pass
        self._status(d, rss, new_rs, want)

    def _status(self, d, rss, new_rs, want):
        md = d["metadata"]
        st = util.deepcopy(d.get("status") or {})
        replicas = sum(util.get_path(rs, "status", "replicas", default=0) for rs in rss)
        ready = sum(util.get_path(rs, "status", "readyReplicas", default=0) for rs in rss)
        avail = sum(util.get_path(rs, "status", "availableReplicas", default=0) for rs in rss)
        updated = util.get_path(new_rs, "status", "replicas", default=0) if new_rs else 0
        spec = d.get("spec") or {}
        max_unavail = util.get_path(spec, "strategy", "rollingUpdate", "maxUnavailable", default="25%")
        try:
            mu = util.int_or_percent(max_unavail, want, False) \
                if util.get_path(spec, "strategy", "type") != "Recreate" else 0
        except ValueError:
            mu = 0
        now = util.rfc3339()
        conds = util.deepcopy(st.get("conditions") or [])
        if avail >= want - mu:
            _set_condition(conds, "Available", "True", "MinimumReplicasAvailable",
                           "Deployment has minimum availability.", now)
        else:
            _set_condition(conds, "Available", "False", "MinimumReplicasUnavailable",
                           "Deployment does not have minimum availability.", now)
        rs_name = new_rs["metadata"]["name"] if new_rs else ""
        if new_rs and updated == want and avail >= want and replicas == want:
            _set_condition(conds, "Progressing", "True", "NewReplicaSetAvailable",
                           'ReplicaSet "%s" has successfully progressed.' % rs_name, now)
        elif new_rs:
            _set_condition(conds, "Progressing", "True", "ReplicaSetUpdated",
                           'ReplicaSet "%s" is progressing.' % rs_name, now)
        new = {"observedGeneration": md.get("generation", 1), "replicas": replicas, "updatedReplicas": updated,
               "readyReplicas": ready, "availableReplicas": avail,
               "unavailableReplicas": max(0, want - avail), "conditions": conds}
        if st.get("collisionCount"):
            new["collisionCount"] = st["collisionCount"]
        for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not new[k]:
                new.pop(k)
        old_cmp = {k: v for k, v in st.items()}
        if _strip_times(new) != _strip_times(old_cmp):
            self.api.patch_internal("apps", "deployments", md["namespace"], md["name"],
                                    {"status": {**{k: None for k in st if k not in new}, **new}}, MANAGER,
                                    subresource="status")


def _strip_times(st):
    st = util.deepcopy(st)
    for c in st.get("conditions") or []:
        c.pop("lastUpdateTime", None)
        c.pop("lastTransitionTime", None)
    return st


# ---------------------------------------------------------------- daemonsets

DS_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def node_record(obj):
    md = obj.get("metadata") or {}
    return {"name": md.get("name"), "labels": md.get("labels") or {}, "taints": util.get_path(obj, "spec", "taints")
            or [], "deleting": bool(md.get("deletionTimestamp"))}


class DaemonSetController(Controller):
    name = "daemonset"
    sids = ("daemonsets.apps", "pods", "nodes")
    period = 30.0

    def __init__(self, sim):
        super().__init__(sim)
        self.index = _PodOwnerIndex()
        self.dirty = set()
        self.all_dirty = False

    def initial(self):
        for key, rec in self.cache["pods"].items():
            self.index.update(key, None, rec)

    def extract(self, sid, obj, entry):
        if sid == "pods":
            ref = controller_ref(obj)
            if not ref or ref.get("kind") != "DaemonSet":
                return None
            return pod_record(obj, entry)
        if sid == "nodes":
            return node_record(obj)
        return obj

    def changed(self, items):
        for sid, key, old, new, ev in items:
            if sid == "pods":
                self.index.update(key, old, new)
                for r in (old, new):
                    if r and r.get("owner"):
                        self.dirty.add(r["owner"])
            elif sid == "nodes":
                self.all_dirty = True
            else:
                rec = new or old
                if rec:
                    self.dirty.add(rec["metadata"]["uid"])

    def resync(self):
        self.all_dirty = True

    def work(self):
        dss = {ds["metadata"]["uid"]: ds for ds in self.cache["daemonsets.apps"].values()}
        if self.all_dirty:
            self.dirty.update(dss.keys())
            self.all_dirty = False
        dirty, self.dirty = self.dirty, set()
        for uid in dirty:
            if uid in dss:
                self._safe(self.reconcile, dss[uid])

    def _eligible(self, ds, node):
        from .scheduler import node_affinity_matches, tolerates_all
        if node["deleting"]:
            return False
        spec = util.get_path(ds, "spec", "template", "spec") or {}
        for k, v in (spec.get("nodeSelector") or {}).items():
            if node["labels"].get(k) != v:
                return False
        if not node_affinity_matches(spec, node["name"], node["labels"], ignore_fields=True):
            return False
        tols = list(spec.get("tolerations") or []) + DS_TOLERATIONS
        return tolerates_all(tols, node["taints"], ("NoSchedule", "NoExecute"))

    def reconcile(self, ds):
        md = ds["metadata"]
        if md.get("deletionTimestamp"):
            return
        pods_cache = self.cache["pods"]
        owned = [pods_cache[k] for k in self.index.get(md["uid"]) if k in pods_cache]
        by_node = {}
        for p in owned:
            if active(p):
                by_node.setdefault(p["nodeAffinityName"] or p["node"], []).append(p)
        nodes = list(self.cache["nodes"].values())
        eligible = {n["name"] for n in nodes if self._eligible(ds, n)}
        tmpl = util.get_path(ds, "spec", "template") or {}
        created = 0
        for name in sorted(eligible):
            if name in by_node or created >= BURST:
                continue
            spec = util.deepcopy(tmpl.get("spec") or {})
            aff = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
            aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}
            tols = spec.setdefault("tolerations", [])
            for t in DS_TOLERATIONS:
                if not any(x.get("key") == t["key"] and x.get("effect") == t["effect"] for x in tols):
                    tols.append(dict(t))
            labels = dict(util.get_path(tmpl, "metadata", "labels") or {})
            labels["pod-template-generation"] = str(md.get("generation", 1))
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"generateName": md["name"] + "-", "namespace": md["namespace"], "labels": labels,
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                     "name": md["name"], "uid": md["uid"], "controller": True,
                                                     "blockOwnerDeletion": True}]},
                   "spec": spec}
            try:
                self.api.create_internal("", "pods", pod, MANAGER)
                created += 1
            except E.ApiError as e:
                self.sim.log("daemonset %s/%s: cannot create pod: %s" % (md["namespace"], md["name"], e.message))
                break
        for node, ps in by_node.items():
            extra = ps if node not in eligible else sorted(ps, key=lambda p: p["created"])[1:]
            for p in extra:
                try:
                    self.api.delete_internal("", "pods", p["ns"], p["name"], MANAGER)
                except E.ApiError:
                    pass
        on_eligible = [ps for n, ps in by_node.items() if n in eligible]
        scheduled = [ps for n, ps in by_node.items() if n in eligible and any(p["node"] for p in ps)]
        ready = sum(1 for ps in on_eligible if any(p["ready"] for p in ps))
        st = dict(ds.get("status") or {})
        new = {"currentNumberScheduled": len(scheduled), "numberMisscheduled": sum(
            1 for n, ps in by_node.items() if n not in eligible and any(p["node"] for p in ps)),
            "desiredNumberScheduled": len(eligible), "numberReady": ready, "observedGeneration": md.get("generation", 1),
            "updatedNumberScheduled": len(scheduled), "numberAvailable": ready,
            "numberUnavailable": max(0, len(eligible) - ready)}
        for k in ("updatedNumberScheduled", "numberAvailable", "numberUnavailable"):
            if not new[k]:
                new.pop(k)
        if new != {k: v for k, v in st.items() if k != "conditions"}:
            self.api.patch_internal("apps", "daemonsets", md["namespace"], md["name"],
                                    {"status": {**{k: None for k in st if k not in new and k != "conditions"},
                                                **new}}, MANAGER, subresource="status")
