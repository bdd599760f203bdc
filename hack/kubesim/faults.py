"""Fault injection for resilience tests: random 500s and 429s, delays,
watches that end early, periodic history compaction, watches that deliver
resourceVersions a client must not trust, and a server without policy/v1
Eviction.  Settings can be changed at run time through POST /_sim/faults."""

import random
import re
import threading


class Faults:
    def __init__(self, error_500=0.0, error_429=0.0, retry_after=1, delay_ms=0, watch_end=0.0, compact_every=0.0,
                 match=None, seed=None, bad_bookmarks=0, future_rv_events=0, no_eviction_v1=False):
        self.lock = threading.Lock()
        self.error_500 = error_500
        self.error_429 = error_429
        self.retry_after = retry_after
        self.delay_ms = delay_ms
        self.watch_end = watch_end
        self.compact_every = compact_every
        self.match = match
        self._match_re = re.compile(match) if match else None
        self.rand = random.Random(seed)
        # The next N matching watch streams get a BOOKMARK whose
        # resourceVersion is "not-a-number" (after their initial events).
        self.bad_bookmarks = bad_bookmarks
        # The next N matching ADDED/MODIFIED watch events carry a
        # resourceVersion 10^9 ahead of the real one.
        self.future_rv_events = future_rv_events
        # The next N matching watch streams get a frame that is not JSON.
        self.bad_frames = 0
        # Evictions answer 400 as a server without policy/v1 Eviction
        # (Kubernetes < 1.22) does.
        self.no_eviction_v1 = no_eviction_v1
        # VolumeAttachments are not deleted (a volume stuck attached).
        self.hold_detach = False
        self.injected = {"500": 0, "429": 0, "badBookmark": 0, "futureRv": 0, "badFrame": 0,
                         "eviction400": 0}

    def to_json(self):
        return {"error500": self.error_500, "error429": self.error_429, "retryAfter": self.retry_after,
                "delayMs": self.delay_ms, "watchEndSeconds": self.watch_end, "compactEverySeconds": self.compact_every,
                "match": self.match or "", "badBookmarks": self.bad_bookmarks,
                "futureRvEvents": self.future_rv_events, "noEvictionV1": self.no_eviction_v1,
                "holdDetach": self.hold_detach, "badFrames": self.bad_frames,
                "injected": dict(self.injected)}

    def update(self, d):
        with self.lock:
            for key, attr, typ in (("error500", "error_500", float), ("error429", "error_429", float),
                                   ("retryAfter", "retry_after", int), ("delayMs", "delay_ms", int),
                                   ("watchEndSeconds", "watch_end", float),
                                   ("compactEverySeconds", "compact_every", float),
                                   ("badBookmarks", "bad_bookmarks", int),
                                   ("futureRvEvents", "future_rv_events", int),
                                   ("noEvictionV1", "no_eviction_v1", bool),
                                   ("holdDetach", "hold_detach", bool),
                                   ("badFrames", "bad_frames", int)):
                if key in d:
                    setattr(self, attr, typ(d[key]))
            if "match" in d:
                self.match = d["match"] or None
                self._match_re = re.compile(self.match) if self.match else None

    def applies(self, path):
        return self._match_re is None or bool(self._match_re.search(path))

    def pick(self, path):
        """None, '500' or '429' for this request."""
        if not self.applies(path):
            return None
        with self.lock:
            r = self.rand.random()
            if r < self.error_500:
                self.injected["500"] += 1
                return "500"
            if r < self.error_500 + self.error_429:
                self.injected["429"] += 1
                return "429"
        return None

    def take(self, attr, path, counter):
        """Uses one of the counted faults (bad_bookmarks, future_rv_events)
        for a request on path; True when it applies."""
        if not self.applies(path):
            return False
        with self.lock:
            if getattr(self, attr) <= 0:
                return False
            setattr(self, attr, getattr(self, attr) - 1)
            self.injected[counter] += 1
            return True
