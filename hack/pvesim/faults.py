"""Fault injection, each one a flag (and adjustable at run time through
POST /_sim/faults).  One seeded RNG (--seed) makes runs reproducible."""

import random
import threading

FRACTIONS = ("fail_clone", "hang_tasks", "fault_500", "fault_500_after", "fault_body")
# What a --fault-body answer is: "huge" (a 200 whose JSON body is
# --fault-body-bytes long, announced in Content-Length), "huge-stream" (the
# same without Content-Length, ended by closing the connection) or
# "malformed" (a 200 whose body is not JSON).
BODY_MODES = ("huge", "huge-stream", "malformed")


class Faults:
    def __init__(self, opts):
        self.lock = threading.Lock()
        self.rng = random.Random((opts.seed or 0) * 7919 + 17)
        self.fail_clone = opts.fail_clone_fraction
        self.hang_tasks = opts.hang_tasks_fraction
        self.hang_task_types = set(t for t in (opts.hang_task_types or "").split(",") if t)
        self.fault_500 = opts.fault_500
        self.fault_500_after = opts.fault_500_after
        self.fault_methods = set(m.upper() for m in (opts.fault_methods or "").split(",") if m)
        self.fault_message = opts.fault_500_message
        self.delay_ms = opts.delay_ms
        self.delay_jitter_ms = opts.delay_jitter_ms
        # One path answered this much later still (runtime only): a test
        # holds a single call open, e.g. /cluster/nextid.
        self.slow_route = ""
        self.slow_route_ms = 0.0
        self.bad_token_delay = opts.bad_token_delay
        self.fault_body = opts.fault_body_fraction
        self.fault_body_mode = opts.fault_body
        self.fault_body_bytes = opts.fault_body_bytes

    def draw(self, name):
        frac = getattr(self, name)
        if frac <= 0:
            return False
        with self.lock:
            return self.rng.random() < frac

    def hang(self, task_type):
        if self.hang_task_types and task_type not in self.hang_task_types:
            return False
        return self.draw("hang_tasks")

    def applies_to(self, method):
        return not self.fault_methods or method in self.fault_methods

    def delay_seconds(self, rel=None):
        extra = self.slow_route_ms if self.slow_route and rel == self.slow_route else 0.0
        if self.delay_ms <= 0 and self.delay_jitter_ms <= 0:
            return extra / 1000.0
        with self.lock:
            jitter = self.rng.uniform(0, self.delay_jitter_ms) if self.delay_jitter_ms else 0
        return (self.delay_ms + jitter + extra) / 1000.0

    def snapshot(self):
        return {
            "fail_clone": self.fail_clone, "hang_tasks": self.hang_tasks,
            "hang_task_types": sorted(self.hang_task_types),
            "fault_500": self.fault_500, "fault_500_after": self.fault_500_after,
            "fault_methods": sorted(self.fault_methods), "fault_message": self.fault_message,
            "delay_ms": self.delay_ms, "delay_jitter_ms": self.delay_jitter_ms,
            "slow_route": self.slow_route, "slow_route_ms": self.slow_route_ms,
            "bad_token_delay": self.bad_token_delay,
            "fault_body": self.fault_body, "fault_body_mode": self.fault_body_mode,
            "fault_body_bytes": self.fault_body_bytes,
        }

    def update(self, d):
        with self.lock:
            for k in FRACTIONS + ("delay_ms", "delay_jitter_ms", "bad_token_delay", "slow_route_ms"):
                if k in d:
                    setattr(self, k, float(d[k]))
            if "slow_route" in d:
                if not isinstance(d["slow_route"], str):
                    raise ValueError("slow_route: an API path such as /cluster/nextid")
                self.slow_route = d["slow_route"]
            if "fault_body_mode" in d:
                if d["fault_body_mode"] not in BODY_MODES:
                    raise ValueError("fault_body_mode: one of %s" % ", ".join(BODY_MODES))
                self.fault_body_mode = d["fault_body_mode"]
            if "fault_body_bytes" in d:
                self.fault_body_bytes = int(d["fault_body_bytes"])
            if "fault_message" in d:
                self.fault_message = str(d["fault_message"])
            if "hang_task_types" in d:
                self.hang_task_types = set(d["hang_task_types"] or [])
            if "fault_methods" in d:
                self.fault_methods = set(m.upper() for m in (d["fault_methods"] or []))
