"""Controller plumbing: each controller is a thread that receives the store's
change events for the resources it cares about, keeps the decoded objects
it needs, and reconciles through the same API code paths clients use.

Built-in controllers (all on unless --disable-controllers names them):
namespace, gc, deployment, replicaset, daemonset, pdb, nodelifecycle, crd,
attachdetach;
--scheduler and --kubelet add the simulated actors."""

import collections
import sys
import threading
import time
import traceback

from . import errors as E
from . import util


class Controller:
    """Base: event queue + periodic tick, single worker thread."""

    name = "controller"
    sids = ()  # storage ids to follow; None: every resource
    period = 5.0  # seconds between ticks
    needs_initial = True

    def __init__(self, sim):
        self.sim = sim
        self.api = sim.api
        self.store = sim.store
        self.all_sids = self.sids is None
        self.cache = collections.defaultdict(dict) if self.all_sids else {sid: {} for sid in self.sids}
        self.q = collections.deque()
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.thread = None
        self.ready = threading.Event()

    # -------------------------------------------------------- lifecycle

    def start(self):
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.wake.set()

    def _on_event(self, ev):
        # called under the store lock: only queue it
        if self.all_sids or ev.sid in self.cache:
            self.q.append(ev)
            self.wake.set()

    def _run(self):
        initial = []
        with self.store.lock:
            for sid in (list(self.store.tables) if self.all_sids else self.sids):
                t = self.store.tables.get(sid)
                if t is not None:
                    initial.extend((sid, e) for e in t.items.values())
            self.store.subscribers.append(self._on_event)
        for sid, e in initial:
            try:
                rec = self.extract(sid, e.obj(), e)
                if rec is not None:
                    self.cache[sid][e.key] = rec
            except Exception:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
        del initial
        self._safe(self.initial)
        self.ready.set()
        self._safe(self.resync)
        next_tick = time.time() + self.period
        while not self.stopping.is_set():
            timeout = max(0.0, min(next_tick - time.time(), self.idle_wait()))
            self.wake.wait(timeout)
            self.wake.clear()
            if self.stopping.is_set():
                break
            changed = []
            while self.q:
                ev = self.q.popleft()
                c = self.cache[ev.sid]
                if ev.type == "DELETED":
                    old = c.pop(ev.key, None)
                    changed.append((ev.sid, ev.key, old, None, ev))
                else:
                    try:
                        rec = self.extract(ev.sid, ev.new.obj(), ev.new)
                    except Exception:  # noqa: BLE001
                        traceback.print_exc(file=sys.stderr)
                        continue
                    old = c.get(ev.key)
                    if rec is None:
                        c.pop(ev.key, None)
                    else:
                        c[ev.key] = rec
                    changed.append((ev.sid, ev.key, old, rec, ev))
            if changed:
                self._safe(self.changed, changed)
            if time.time() >= next_tick:
                next_tick = time.time() + self.period
                self._safe(self.resync)
            self._safe(self.work)

    def _safe(self, fn, *args):
        try:
            fn(*args)
        except E.ApiError as e:
            if e.code not in (404, 409):
                self.sim.log("%s: %s" % (self.name, e.message))
        except Exception:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)

    # -------------------------------------------------------- hooks

    def extract(self, sid, obj, entry):
        """A record of `obj` for the cache (None: not kept).  `entry` is the
        store entry: its name, ns, uid and labels may be shared."""
        return obj

    def initial(self):
        """Called once after the initial cache fill (build indexes here)."""

    def changed(self, items):
        """items: [(sid, key, old_record, new_record_or_None, event)]"""

    def resync(self):
        """Periodic full pass."""

    def work(self):
        """Called after each wake-up (for delayed work)."""

    def idle_wait(self):
        return 1.0


# ---------------------------------------------------------------- helpers

def owner_uids(obj):
    return [o.get("uid") for o in util.get_path(obj, "metadata", "ownerReferences") or [] if isinstance(o, dict)]


def controller_ref(obj):
    for o in util.get_path(obj, "metadata", "ownerReferences") or []:
        if isinstance(o, dict) and o.get("controller"):
            return o
    return None


def record_event(api, obj, etype, reason, message, component):
    """A core/v1 Event about `obj`, as client-go's recorder writes it."""
    md = obj.get("metadata") or {}
    ns = md.get("namespace") or "default"
    now = util.rfc3339()
    ev = {"apiVersion": "v1", "kind": "Event",
          "metadata": {"name": "%s.%x" % (md.get("name", "obj"), time.time_ns()), "namespace": ns},
          "involvedObject": {"kind": obj.get("kind"), "namespace": md.get("namespace") or "",
                             "name": md.get("name"), "uid": md.get("uid"), "apiVersion": obj.get("apiVersion"),
                             "resourceVersion": md.get("resourceVersion")},
          "reason": reason, "message": message, "source": {"component": component},
          "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": etype,
          "eventTime": None, "reportingComponent": component, "reportingInstance": ""}
    if not md.get("namespace"):
        ev["involvedObject"].pop("namespace")
    try:
        api.create_internal("", "events", ev, component)
    except E.ApiError:
        pass


def build(sim):
    from . import ctrl_attach, ctrl_gc, ctrl_nodes, ctrl_pdb, ctrl_workloads
    disabled = sim.options.disabled
    out = []
    table = [("namespace", ctrl_gc.NamespaceController), ("gc", ctrl_gc.GarbageCollector),
             ("crd", ctrl_gc.CRDCleanup), ("deployment", ctrl_workloads.DeploymentController),
             ("replicaset", ctrl_workloads.ReplicaSetController),
             ("daemonset", ctrl_workloads.DaemonSetController), ("pdb", ctrl_pdb.DisruptionController),
             ("nodelifecycle", ctrl_nodes.NodeLifecycleController),
             ("attachdetach", ctrl_attach.AttachDetachController)]
    for name, cls in table:
        if name not in disabled:
            out.append(cls(sim))
    if sim.options.scheduler:
        from . import scheduler
        out.append(scheduler.Scheduler(sim))
    if sim.options.kubelet:
        from . import kubelet
        out.append(kubelet.Kubelet(sim))
    return out
