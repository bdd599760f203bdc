"""Watchers: each watch request owns one; the store offers every change of
its resource (under the store lock) and the watcher queues the events that
pass its namespace / label / field filters, translating transitions in or
out of the filter into ADDED / DELETED as the watch cache does."""

import queue
import threading

from . import util

MAX_QUEUE = 500000


class Watcher:
    def __init__(self, table, ns, name, label_sel, field_sel, getter=None):
        self.table = table
        self.ns = ns
        self.name = name
        self.label_sel = label_sel
        self.field_sel = field_sel
        self.q = queue.SimpleQueue()
        self.closed = threading.Event()
        self.reason = None
        self.pending = 0
        self.sent_rv = 0

    def match(self, e):
        if self.ns is not None and self.table.namespaced and e.ns != self.ns:
            return False
        if self.name is not None and e.name != self.name:
            return False
        if self.label_sel is not None and not self.label_sel.empty() and not self.label_sel.matches(e.labels):
            return False
        if self.field_sel is not None and not self.field_sel.empty():
            t = self.table
            if not self.field_sel.matches(lambda f: t.field_value(e, f)):
                return False
        return True

    def offer(self, ev):
        """Called with the store lock held."""
        if self.closed.is_set():
            return
        if ev.type == "ADDED":
            if self.match(ev.new):
                self._put(("ADDED", ev.new.data, ev.rv))
        elif ev.type == "MODIFIED":
            new_ok = self.match(ev.new)
            old_ok = ev.old is not None and self.match(ev.old)
            if new_ok and old_ok:
                self._put(("MODIFIED", ev.new.data, ev.rv))
            elif new_ok:
                self._put(("ADDED", ev.new.data, ev.rv))
            elif old_ok:
                self._put(("DELETED", _with_rv(ev.old.data, ev.rv), ev.rv))
        else:
            if (ev.old is not None and self.match(ev.old)) or self.match(ev.new):
                self._put(("DELETED", ev.new.data, ev.rv))

    def initial_from_history(self, events):
        out = []
        for ev in events:
            self._collect(ev, out)
        return out

    def _collect(self, ev, out):
        saved = self._put
        try:
            self._put = out.append
            self.offer(ev)
        finally:
            self._put = saved

    def _put(self, item):
        self.pending += 1
        if self.pending > MAX_QUEUE:
            self.close("watcher fell too far behind")
            return
        self.q.put(item)

    def get(self, timeout):
        try:
            item = self.q.get(timeout=timeout)
        except queue.Empty:
            return None
        self.pending -= 1
        return item

    def close(self, reason):
        self.reason = reason
        self.closed.set()
        self.q.put(None)


def _with_rv(data, rv):
    obj = util.loads(data)
    obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return util.dumps(obj)
