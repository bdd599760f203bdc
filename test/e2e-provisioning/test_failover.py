"""Two replicas; the leader gets SIGKILL in the middle of a scale-up. The
standby takes over, every pod ends up running, no VM is duplicated or
leaked, and kube-sim's request log shows that the two never both wrote:
every write except the Lease's own comes from the replica that held the
lease at that moment."""
import datetime
import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2elib import (NODECLASS, Env, check_vm_invariants,  # noqa: E402
                    deployment, nodeclaims, nodepool, start_carpenter,
                    wait_running, wait_until)


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")
                                           ).timestamp()


def leading(c):
    return any(r.get("message") == "became the leader" for r in c.records())


class FailoverTest(unittest.TestCase):
    def test_failover_mid_scale_up(self):
        env = Env(clone_seconds=2.0, boot_seconds=2.0)
        self.addCleanup(env.stop)
        env.apply(NODECLASS)
        env.apply(nodepool())
        a = start_carpenter(self, env, name="carpenter-a")
        b = start_carpenter(self, env, name="carpenter-b")
        wait_until(lambda: leading(a) or leading(b), 20, what="a leader")
        first, second = (a, b) if leading(a) else (b, a)
        ident = {}
        for c in (a, b):
            ident[c] = c.wait_for(lambda r: r.get("message") ==
                                  "campaigning for leadership")["identity"]
        env.apply(deployment("web", 12, cpu="1", memory="2Gi"))
        # Kill the leader as soon as it has created a NodeClaim (its VMs
        # are being cloned).
        first.wait_for(lambda r: r.get("message") == "created nodeclaim",
                       timeout=30)
        time.sleep(0.5)
        killed = time.time()
        first.proc.send_signal(signal.SIGKILL)
        first.stop(signal.SIGKILL)
        second.wait_for(lambda r: r.get("message") == "became the leader",
                        timeout=90)
        print("\nsecond replica led %.1f s after the kill" % (time.time() - killed))
        wait_running(env, "web", 12, timeout=120)
        time.sleep(2)
        vms = check_vm_invariants(self, env)
        self.assertEqual(len(vms), len(nodeclaims(env)))

        # Who wrote what, and when.
        acquired = {}
        writes = []
        with open(env.kreqlog) as f:
            for line in f:
                r = json.loads(line)
                if r["method"] == "GET":
                    continue
                m = re.search(r"\(([^)]+)\)", r.get("userAgent", ""))
                who = m.group(1) if m else None
                if who not in ident.values():
                    continue
                t = ts(r["time"])
                if r.get("resource") == "leases":
                    if 200 <= r["code"] < 300:
                        acquired.setdefault(who, t)
                    continue
                writes.append((t, who, r))
        handover = acquired[ident[second]]
        by_first = [w for w in writes if w[1] == ident[first]]
        by_second = [w for w in writes if w[1] == ident[second]]
        self.assertTrue(by_first, "the first leader made no write")
        self.assertTrue(by_second, "the new leader made no write")
        for t, who, r in by_first:
            self.assertLess(t, handover, "old leader wrote after the "
                            "handover: %s %s" % (r["method"], r["path"]))
        for t, who, r in by_second:
            self.assertGreaterEqual(t, handover, "standby wrote before "
                                    "leading: %s %s" % (r["method"],
                                                        r["path"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
