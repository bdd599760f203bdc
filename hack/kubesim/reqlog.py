"""--request-log: one JSON line per request, written when the status code is
sent (so a watch is logged when it starts).

Fields: time (RFC 3339, microseconds), method, path, query (raw string),
verb (get, list, watch, create, update, patch, delete, deletecollection,
or for non-resource paths the lower-case HTTP method), apiGroup,
apiVersion, resource, subresource, namespace, name, code, userAgent, user,
and patchType / fieldManager / dryRun when present."""

import json
import threading

from . import util


class RequestLog:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.fh = open(path, "a", encoding="utf-8", buffering=1) if path else None
        self.count = 0

    def write(self, rec):
        self.count += 1
        if self.fh is None:
            return
        rec = dict(rec)
        rec.setdefault("time", util.rfc3339_micro())
        line = json.dumps(rec, separators=(",", ":"), ensure_ascii=False)
        with self.lock:
            self.fh.write(line + "\n")

    def close(self):
        if self.fh:
            with self.lock:
                self.fh.close()
                self.fh = None
