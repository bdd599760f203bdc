"""--scheduler: binds pending pods (schedulerName default-scheduler) to
nodes where they fit, in the filter order of kube-scheduler:
NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and
required node affinity, including matchFields metadata.name), then
NodeResourcesFit (requests vs allocatable, and the pod count).  Among
feasible nodes the least allocated wins (ties by name).  A pod that fits
nowhere gets PodScheduled=False reason Unschedulable with kube-scheduler's
message and a FailedScheduling event; it is retried when nodes or pods
change, and every 10 s, but, as kube-scheduler's backoff queue has it,
never before its backoff ends: --pod-initial-backoff seconds (1) after its
first failure, doubling with each failure up to --pod-max-backoff (10).
So a pod waits up to 10 s after a node became usable, as it does on a real
cluster."""

import json
import math
import time
from fractions import Fraction

from . import errors as E
from . import util
from .controllers import Controller, record_event

COMPONENT = "default-scheduler"
RETRY = 10.0


# ---------------------------------------------------------------- predicates (shared with the DaemonSet controller)

def tolerates(tol, taint):
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return not tol.get("key") or tol.get("key") == taint.get("key")
    return tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or "")


def untolerated(tols, taints, effects=("NoSchedule", "NoExecute")):
    for t in taints or []:
        if t.get("effect") not in effects:
            continue
        if not any(tolerates(x, t) for x in tols or []):
            return t
    return None


def tolerates_all(tols, taints, effects=("NoSchedule", "NoExecute")):
    return untolerated(tols, taints, effects) is None


def _req_matches(req, labels):
    key = req.get("key")
    op = req.get("operator")
    vals = req.get("values") or []
    has = key in labels
    v = labels.get(key)
    if op == "In":
        return has and v in vals
    if op == "NotIn":
        return not has or v not in vals
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt"):
        if not has or len(vals) != 1:
            return False
        try:
            a = int(v)
            b = int(vals[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def _term_matches(term, name, labels, ignore_fields=False):
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    for r in exprs:
        if not _req_matches(r, labels):
            return False
    if not ignore_fields:
        for r in fields:
            if r.get("key") != "metadata.name" or not _req_matches({**r, "key": "n"}, {"n": name}):
                return False
    return True


def node_affinity_matches(spec, name, labels, ignore_fields=False):
    req = util.get_path(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    if not req:
        return True
    terms = req.get("nodeSelectorTerms") or []
    return any(_term_matches(t, name, labels, ignore_fields) for t in terms)


def selector_matches(spec, labels):
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    return True


def pod_requests(spec):
    """Effective requests: max(sum of containers, largest init container) + overhead."""
    total = {}
    for c in spec.get("containers") or []:
        for k, v in (util.get_path(c, "resources", "requests") or {}).items():
            total[k] = total.get(k, Fraction(0)) + util.quantity_or_zero(v)
    for c in spec.get("initContainers") or []:
        req = util.get_path(c, "resources", "requests") or {}
        if c.get("restartPolicy") == "Always":
            for k, v in req.items():
                total[k] = total.get(k, Fraction(0)) + util.quantity_or_zero(v)
            continue
        for k, v in req.items():
            q = util.quantity_or_zero(v)
            if q > total.get(k, Fraction(0)):
                total[k] = q
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, Fraction(0)) + util.quantity_or_zero(v)
    return {k: amount(k, v) for k, v in total.items()}


def amount(resource, q):
    """A quantity as kube-scheduler compares it: CPU in millicores
    (MilliValue), the rest in whole units (Value), both rounded up. Whole
    numbers: the fit of every pending pod on every node is worked out in
    them, and Fractions made that most of the scheduler's time."""
    return math.ceil(q * 1000) if resource == "cpu" else math.ceil(q)


def backoff_seconds(attempts, initial, maximum):
    """kube-scheduler's backoff after `attempts` failed tries: initial,
    doubled per further failure, capped at maximum (0 when initial is 0)."""
    if initial <= 0 or attempts <= 0:
        return 0.0
    return min(max(initial, maximum), initial * 2 ** min(attempts - 1, 30))


# ---------------------------------------------------------------- cache records

class _Node:
    __slots__ = ("name", "labels", "taints", "unschedulable", "alloc", "obj_kind", "placement")


class _Pod:
    __slots__ = ("key", "ns", "name", "uid", "node", "req", "active", "pending", "spec", "prio", "created",
                 "message")


def _node(obj):
    md = obj.get("metadata") or {}
    n = _Node()
    n.name = md.get("name")
    n.labels = md.get("labels") or {}
    n.taints = util.get_path(obj, "spec", "taints") or []
    n.unschedulable = bool(util.get_path(obj, "spec", "unschedulable"))
    st = obj.get("status") or {}
    alloc = st.get("allocatable") or st.get("capacity") or {}
    n.alloc = {k: amount(k, util.quantity_or_zero(v)) for k, v in alloc.items()}
    # pod class -> what unschedulable, taints and node affinity say of
    # it here (None: nothing against it); a changed Node is a new record
    n.placement = {}
    return n


def _pod(obj):
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    p = _Pod()
    p.ns = md.get("namespace")
    p.name = md.get("name")
    p.key = p.ns + "/" + p.name
    p.uid = md.get("uid")
    p.node = spec.get("nodeName") or ""
    p.active = st.get("phase") not in ("Succeeded", "Failed")
    deleting = bool(md.get("deletionTimestamp"))
    p.pending = (not p.node and p.active and not deleting and spec.get("schedulerName", COMPONENT) == COMPONENT
                 and not spec.get("schedulingGates"))
    p.req = pod_requests(spec) if (p.node or p.pending) else {}
    p.spec = spec if p.pending else None
    p.prio = spec.get("priority") or 0
    p.created = md.get("creationTimestamp") or ""
    cond = next((c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
    p.message = cond.get("message") if cond and cond.get("status") == "False" else None
    return p


class Scheduler(Controller):
    name = "scheduler"
    sids = ("pods", "nodes")
    period = RETRY

    def __init__(self, sim):
        super().__init__(sim)
        self.used = {}  # node -> {resource: amount()}, plus "pods" count
        self.queue = set()  # pending pod keys to try now
        self.unschedulable = set()  # keys that did not fit last time
        self.initial_backoff = getattr(sim.options, "pod_initial_backoff", 0.0)
        self.max_backoff = max(self.initial_backoff, getattr(sim.options, "pod_max_backoff", 0.0))
        self.attempts = {}  # key -> failed attempts
        self.backoff_until = {}  # key -> when it may be tried again
        self.backoff = {}  # key -> due: moved by an event, waiting out its backoff

    def _forget(self, key):
        self.unschedulable.discard(key)
        self.attempts.pop(key, None)
        self.backoff_until.pop(key, None)
        self.backoff.pop(key, None)

    def _move(self, keys):
        """An event may make these schedulable: to the queue, or to wait
        out their backoff first (kube-scheduler's backoffQ)."""
        now = time.time()
        for key in keys:
            due = self.backoff_until.get(key, 0.0)
            if due <= now:
                self.backoff.pop(key, None)
                self.queue.add(key)
            else:
                self.backoff[key] = due

    def extract(self, sid, obj, entry):
        return _pod(obj) if sid == "pods" else _node(obj)

    def _account(self, p, sign):
        if p is None or not p.node or not p.active:
            return
        u = self.used.setdefault(p.node, {})
        for k, v in p.req.items():
            u[k] = u.get(k, 0) + sign * v
        u["pods"] = u.get("pods", 0) + sign

    def resync(self):
        if not self.used:
            for p in self.cache["pods"].values():
                self._account(p, +1)
        self._move([key for key, p in self.cache["pods"].items() if p.pending])

    def changed(self, items):
        retry = False
        for sid, key, old, new, ev in items:
            if sid == "nodes":
                retry = True
                continue
            self._account(old, -1)
            self._account(new, +1)
            if new is not None and new.pending:
                # a failed pod's own status update does not skip its backoff
                self._move([key])
            else:
                self.queue.discard(key)
                self._forget(key)
            if old is not None and old.node and (new is None or not new.active or new.node != old.node):
                retry = True
        if retry:
            self._move(self.unschedulable)

    def idle_wait(self):
        if self.queue:
            return 0.05
        if self.backoff:
            return max(0.01, min(1.0, min(self.backoff.values()) - time.time()))
        return 1.0

    def work(self):
        now = time.time()
        for key in [k for k, due in self.backoff.items() if due <= now]:
            del self.backoff[key]
            self.queue.add(key)
        if not self.queue:
            return
        keys, self.queue = self.queue, set()
        pods = [self.cache["pods"].get(k) for k in keys]
        pods = [p for p in pods if p is not None and p.pending]
        pods.sort(key=lambda p: (-p.prio, p.created, p.key))
        nodes = sorted(self.cache["nodes"].values(), key=lambda n: n.name)
        # Pods alike (same requests and placement constraints) get the same
        # answer within one pass: nodes only fill up as it binds, so once
        # one of them fits nowhere the rest fit nowhere either, for the
        # same reasons. At thousands of pending pods and hundreds of nodes
        # this is most of the pass (kube-scheduler's old equivalence cache).
        failed = {}
        for p in pods:
            self._safe(self._schedule, p, nodes, failed)

    def _fit(self, p, n, cls=None):
        """None if the pod fits the node, else the list of reasons."""
        if cls is None:
            placement = self._placement(p, n)
        elif cls in n.placement:
            placement = n.placement[cls]
        else:
            placement = n.placement[cls] = self._placement(p, n)
        if placement is not None:
            return placement
        used = self.used.get(n.name, {})
        alloc = n.alloc
        reasons = []
        if used.get("pods", 0) + 1 > alloc.get("pods", 0):
            reasons.append("Too many pods")
        for k, v in sorted(p.req.items()):
            if v <= 0:
                continue
            if used.get(k, 0) + v > alloc.get(k, 0):
                reasons.append("Insufficient " + k)
        return reasons or None

    def _placement(self, p, n):
        """The reasons unschedulable, taints or node affinity keep the pod
        off the node (None: none do)."""
        spec = p.spec
        tols = spec.get("tolerations") or []
        if n.unschedulable and not any(tolerates(t, {"key": "node.kubernetes.io/unschedulable",
                                                     "effect": "NoSchedule"}) for t in tols):
            return ["node(s) were unschedulable"]
        t = untolerated(tols, n.taints)
        if t is not None:
            return ["node(s) had untolerated taint {%s: %s}" % (t.get("key"), t.get("value") or "")]
        if not selector_matches(spec, n.labels) or not node_affinity_matches(spec, n.name, n.labels):
            return ["node(s) didn't match Pod's node affinity/selector"]
        return None

    def _score(self, p, n):
        used = self.used.get(n.name, {})
        s = 0.0
        for k in ("cpu", "memory"):
            cap = n.alloc.get(k, 0)
            if cap > 0:
                s += (cap - used.get(k, 0) - p.req.get(k, 0)) / cap
        return s

    def _schedule(self, p, nodes, failed=None):
        cls = _class_key(p)
        reasons = failed.get(cls) if failed is not None and cls is not None else None
        feasible = []
        if reasons is None:
            reasons = {}
            for n in nodes:
                r = self._fit(p, n, cls)
                if r is None:
                    feasible.append(n)
                else:
                    for x in r:
                        reasons[x] = reasons.get(x, 0) + 1
            if not feasible and failed is not None and cls is not None:
                failed[cls] = reasons
        if feasible:
            # the highest score; ties to the first name (nodes are sorted)
            best, top = None, None
            for n in feasible:
                sc = self._score(p, n)
                if top is None or sc > top:
                    best, top = n, sc
            ctx = _ctx()
            try:
                self.api.binding(p.ns, p.name, {"target": {"apiVersion": "v1", "kind": "Node", "name": best.name},
                                                "metadata": {"name": p.name, "uid": p.uid}}, ctx)
            except E.ApiError:
                return
            self._forget(p.key)
            # account now; the pod's event will replace this record
            p2 = _Pod()
            for a in _Pod.__slots__:
                setattr(p2, a, getattr(p, a))
            p2.node = best.name
            p2.pending = False
            self._account(p2, +1)
            self.cache["pods"][p.key] = p2
            obj = self.api.get_object_internal("", "pods", p.ns, p.name)
            if obj is not None:
                record_event(self.api, obj, "Normal", "Scheduled", "Successfully assigned %s/%s to %s"
                             % (p.ns, p.name, best.name), COMPONENT)
            return
        total = len(nodes)
        if total == 0:
            msg = "no nodes available to schedule pods"
        else:
            parts = sorted("%d %s" % (v, k) for k, v in reasons.items())
            msg = ("0/%d nodes are available: %s. preemption: 0/%d nodes are available: %d Preemption is not "
                   "helpful for scheduling." % (total, ", ".join(parts), total, total))
        self.unschedulable.add(p.key)
        n = self.attempts.get(p.key, 0) + 1
        self.attempts[p.key] = n
        if self.initial_backoff > 0:
            self.backoff_until[p.key] = time.time() + backoff_seconds(n, self.initial_backoff, self.max_backoff)
        if p.message == msg:
            return
        patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                            "lastTransitionTime": util.rfc3339(), "reason": "Unschedulable",
                                            "message": msg}]}}
        try:
            self.api.patch_internal("", "pods", p.ns, p.name, patch, COMPONENT, subresource="status",
                                    patch_type=P_SMP)
        except E.ApiError:
            return
        p.message = msg
        obj = self.api.get_object_internal("", "pods", p.ns, p.name)
        if obj is not None:
            record_event(self.api, obj, "Warning", "FailedScheduling", msg, COMPONENT)


P_SMP = "application/strategic-merge-patch+json"


def _class_key(p):
    """What _fit reads of a pod, as a hashable key (None: not comparable)."""
    spec = p.spec
    try:
        return (json.dumps([spec.get("tolerations"), spec.get("nodeSelector"),
                            util.get_path(spec, "affinity", "nodeAffinity")], sort_keys=True),
                tuple(sorted(p.req.items())))
    except (TypeError, ValueError):
        return None


def _ctx():
    from .api import Ctx
    return Ctx("system:kube-scheduler", user_agent="kube-scheduler", params={"fieldManager": COMPONENT})
