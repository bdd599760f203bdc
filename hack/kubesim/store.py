"""The object store: every object is kept as its compact JSON bytes plus a
small index (namespace, name, labels, uid, field-selector values).  One
global lock; one resourceVersion counter; a bounded history of change
events serves watches from a resourceVersion and consistent paginated
lists (a page at an older resourceVersion is rebuilt by undoing the
history events newer than it)."""

import bisect
import collections
import heapq
import threading

from . import selector as selectors
from . import util
from .errors import gone_expired


class Entry:
    """One stored version of an object.  Immutable once created."""
    __slots__ = ("rv", "data", "ns", "name", "labels", "uid", "fields", "key")

    def __init__(self, rv, data, ns, name, labels, uid, fields, key):
        self.rv = rv
        self.data = data
        self.ns = ns
        self.name = name
        self.labels = labels
        self.uid = uid
        self.fields = fields
        self.key = key

    def obj(self):
        return util.loads(self.data)


class Event:
    """A change: type ADDED/MODIFIED/DELETED.  For DELETED `new` is the
    tombstone (last state, resourceVersion of the deletion)."""
    __slots__ = ("rv", "sid", "type", "key", "new", "old")

    def __init__(self, rv, sid, etype, key, new, old):
        self.rv = rv
        self.sid = sid
        self.type = etype
        self.key = key
        self.new = new
        self.old = old


def _source_field(obj):
    return util.get_path(obj, "source", "component", default="")


def _bool_field(path):
    def get(obj):
        v = obj
        for p in path.split("."):
            v = v.get(p) if isinstance(v, dict) else None
        return "true" if v is True else "false"
    return get


_SPECIAL_FIELDS = {
    "source": _source_field,
    "spec.unschedulable": _bool_field("spec.unschedulable"),
    "spec.hostNetwork": _bool_field("spec.hostNetwork"),
}


class Table:
    """Objects of one storage id (all versions of a resource share it)."""

    def __init__(self, sid, namespaced, field_labels):
        self.sid = sid
        self.namespaced = namespaced
        self.items = {}
        self.keys = []  # sorted
        self.start_rv = 0  # oldest resourceVersion this resource's watch history covers
        self.field_labels = tuple(field_labels)
        self.field_pos = {f: i for i, f in enumerate(self.field_labels)}
        self.getters = []
        for f in self.field_labels:
            if f in _SPECIAL_FIELDS:
                self.getters.append(_SPECIAL_FIELDS[f])
            elif f == "status.replicas" or f == "status.successful":
                self.getters.append(lambda o, f=f: str(selectors.field_value(o, f) or "0"))
            else:
                self.getters.append(lambda o, f=f: selectors.field_value(o, f))

    def key_of(self, ns, name):
        return ns + "/" + name if self.namespaced else name

    def range(self, ns):
        """Index range [lo, hi) of keys in a namespace (all if ns is None)."""
        if ns is None or not self.namespaced:
            return 0, len(self.keys)
        lo = bisect.bisect_left(self.keys, ns + "/")
        hi = bisect.bisect_left(self.keys, ns + "0")
        return lo, hi

    def field_value(self, entry, field):
        if field == "metadata.name":
            return entry.name
        if field == "metadata.namespace":
            return entry.ns
        pos = self.field_pos.get(field)
        if pos is None or entry.fields is None:
            return ""
        return entry.fields[pos]


def _intern_labels(labels):
    if not labels:
        return None
    return {intern_str(k): intern_str(v) if isinstance(v, str) else v for k, v in labels.items()}


_interned = {}


def intern_str(s):
    if not isinstance(s, str):
        return s
    r = _interned.get(s)
    if r is None:
        if len(_interned) < 500000:
            _interned[s] = s
        r = s
    return r


class Store:
    def __init__(self, history_size=10000):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 0
        self.tables = {}
        self.history = collections.deque()
        self.history_size = max(1, history_size)
        self.compacted_rv = 0
        self.watchers = {}  # sid -> set(Watcher)
        self.subscribers = []  # callables(ev), called with the lock held
        self.uid_index = {}  # uid -> (sid, key)
        self.stats = collections.Counter()

    # ---------------------------------------------------------- tables

    def table(self, rt):
        t = self.tables.get(rt.storage_id)
        if t is None:
            t = Table(rt.storage_id, rt.namespaced, rt.field_labels)
            if rt.is_custom:
                # like the watch cache of a CRD, history starts when the type appears
                t.start_rv = self.rv
            self.tables[rt.storage_id] = t
        return t

    def table_by_sid(self, sid):
        return self.tables.get(sid)

    def drop_table(self, sid):
        with self.lock:
            t = self.tables.pop(sid, None)
            if t:
                for e in t.items.values():
                    if e.uid:
                        self.uid_index.pop(e.uid, None)

    def make_entry(self, table, obj, data, rv):
        md = obj.get("metadata") or {}
        ns = intern_str(md.get("namespace") or "") if table.namespaced else ""
        name = md.get("name") or ""
        fields = tuple(intern_str(g(obj)) for g in table.getters) if table.getters else None
        return Entry(rv, data, ns, name, _intern_labels(md.get("labels")), md.get("uid"), fields,
                     table.key_of(ns, name))

    # ---------------------------------------------------------- reads

    def get(self, table, key):
        return table.items.get(key)

    def by_uid(self, uid):
        loc = self.uid_index.get(uid)
        if loc is None:
            return None, None
        t = self.tables.get(loc[0])
        if t is None:
            return None, None
        return t, t.items.get(loc[1])

    # ---------------------------------------------------------- writes (lock held)

    def _next_rv(self):
        self.rv += 1
        return self.rv

    def put(self, table, obj):
        """Create or replace; assigns resourceVersion; returns the Entry."""
        rv = self._next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        data = util.dumps(obj)
        entry = self.make_entry(table, obj, data, rv)
        old = table.items.get(entry.key)
        table.items[entry.key] = entry
        if old is None:
            bisect.insort(table.keys, entry.key)
            etype = "ADDED"
        else:
            etype = "MODIFIED"
            if old.uid and old.uid != entry.uid:
                self.uid_index.pop(old.uid, None)
        if entry.uid:
            self.uid_index[entry.uid] = (table.sid, entry.key)
        self._record(Event(rv, table.sid, etype, entry.key, entry, old))
        return entry

    def delete(self, table, key, final_obj=None):
        """Remove; the tombstone carries the last state at the new RV."""
        old = table.items.get(key)
        if old is None:
            return None
        rv = self._next_rv()
        obj = final_obj if final_obj is not None else old.obj()
        obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
        tomb = self.make_entry(table, obj, util.dumps(obj), rv)
        del table.items[key]
        i = bisect.bisect_left(table.keys, key)
        if i < len(table.keys) and table.keys[i] == key:
            del table.keys[i]
        if old.uid:
            self.uid_index.pop(old.uid, None)
        self._record(Event(rv, table.sid, "DELETED", key, tomb, old))
        return tomb

    def _record(self, ev):
        self.history.append(ev)
        while len(self.history) > self.history_size:
            dropped = self.history.popleft()
            self.compacted_rv = dropped.rv
        self.stats[ev.type] += 1
        for w in list(self.watchers.get(ev.sid, ())):
            w.offer(ev)
        for s in self.subscribers:
            s(ev)
        self.cond.notify_all()

    def load_entry(self, table, obj, assign_rv=True):
        """Bulk load (preload/state): no history, no watch events."""
        md = obj.setdefault("metadata", {})
        if assign_rv or not md.get("resourceVersion"):
            rv = self._next_rv()
            md["resourceVersion"] = str(rv)
        else:
            rv = int(md["resourceVersion"])
            if rv > self.rv:
                self.rv = rv
        data = util.dumps(obj)
        e = self.make_entry(table, obj, data, rv)
        existed = e.key in table.items
        table.items[e.key] = e
        if e.uid:
            self.uid_index[e.uid] = (table.sid, e.key)
        return existed

    def finish_load(self):
        for t in self.tables.values():
            t.keys = sorted(t.items.keys())
            t.start_rv = min(t.start_rv, self.rv)
        self.compacted_rv = self.rv
        self.history.clear()

    # ---------------------------------------------------------- history

    def compact(self):
        """Forget all history (watches from older RVs get 410)."""
        with self.lock:
            self.history.clear()
            self.compacted_rv = self.rv

    def events_since(self, sid, rv):
        """History events of `sid` newer than rv, oldest first.  Raises 410."""
        t = self.tables.get(sid)
        oldest = max(self.compacted_rv, t.start_rv if t is not None else 0)
        if rv < oldest:
            raise gone_expired("too old resource version: %d (%d)" % (rv, oldest))
        out = []
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            if ev.sid == sid:
                out.append(ev)
        out.reverse()
        return out

    def overlay(self, sid, rv):
        """{key: Entry-or-None} giving the state at `rv` for keys changed since."""
        ov = {}
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            if ev.sid == sid:
                ov[ev.key] = ev.old
        return ov

    # ---------------------------------------------------------- lists

    def list_page(self, table, ns, at_rv, start_after, limit, pred, count_remaining):
        """One page of a list at resourceVersion `at_rv` (None: current).
        Returns (entries, more, remaining) where `more` says whether keys
        remain after the last returned one."""
        if at_rv is not None and at_rv < self.rv:
            if at_rv < self.compacted_rv:
                raise gone_expired("too old")
            ov = self.overlay(table.sid, at_rv)
        else:
            ov = {}
        lo, hi = table.range(ns)
        keys = table.keys
        if start_after is not None:
            lo = max(lo, bisect.bisect_right(keys, start_after))
        if ns is not None and table.namespaced:
            ov_keys = sorted(k for k in ov if k.startswith(ns + "/") and (start_after is None or k > start_after))
        else:
            ov_keys = sorted(k for k in ov if start_after is None or k > start_after)
        out = []
        last = None
        more = False
        prev = None
        items = table.items
        for k in heapq.merge(_islice_keys(keys, lo, hi), ov_keys):
            if k == prev:
                continue
            prev = k
            e = ov[k] if k in ov else items.get(k)
            if e is None:
                continue
            if limit is not None and len(out) >= limit:
                more = True
                break
            last = k
            if pred is not None and not pred(e):
                continue
            out.append(e)
        remaining = None
        if more and count_remaining and last is not None:
            # keys after `last` that exist at at_rv
            start = bisect.bisect_right(keys, last)
            cnt = max(0, hi - max(start, lo))
            for k in ov_keys:
                if k <= last:
                    continue
                exists_then = ov[k] is not None
                exists_now = k in items
                if exists_then and not exists_now:
                    cnt += 1
                elif exists_now and not exists_then:
                    cnt -= 1
            remaining = cnt
        return out, more, remaining, last

    # ---------------------------------------------------------- state

    def snapshot(self):
        """Consistent (rv, [(sid, data)]) of everything (for --state)."""
        with self.lock:
            out = []
            for sid, t in self.tables.items():
                for k in t.keys:
                    out.append((sid, t.items[k].data))
            return self.rv, out


def _islice_keys(keys, lo, hi):
    for i in range(lo, hi):
        yield keys[i]
