"""Informers against kube-sim: a cache of 10,000 pods converges with the
server and stays equal to it through changes, dropped watches, forced 410
Gone (history compaction), injected 500s and a kube-sim restart."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from carptest import BUILD_DIR, scratch  # noqa: E402
from sims import KubeSim, wait_until  # noqa: E402

PROBE = os.path.join(BUILD_DIR, "test", "integration", "informer_probe")
PODS = 10000


def pod(name, ns="default", labels=None):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns,
                         "labels": labels or {"app": "bulk"}},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {
                                         "cpu": "100m",
                                         "memory": "64Mi"}}}]}}


class Probe:
    def __init__(self, kubeconfig, *kinds):
        self.proc = subprocess.Popen([PROBE, kubeconfig, *kinds],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def _ask(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("probe exited")
            line = line.rstrip("\n")
            if line == "end":
                return lines
            lines.append(line)

    def dump(self, kind):
        out = {}
        for line in self._ask("dump"):
            k, key, rv = line.split(" ")
            if k == kind:
                out[key] = rv
        return out

    def stats(self, kind):
        for line in self._ask("stats"):
            f = line.split(" ")
            if f[1] == kind:
                return {"lists": int(f[2]), "watches": int(f[3]),
                        "events": int(f[4]), "decode_errors": int(f[5]),
                        "synced": f[6] == "1"}
        raise KeyError(kind)

    def quit(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        code = self.proc.wait(20)
        self.proc.stdin.close()
        self.proc.stdout.close()
        return code


class InformerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = scratch.mkdtemp("carp-informer-")
        preload = os.path.join(cls.workdir, "preload.jsonl")
        with open(preload, "w") as f:
            for i in range(PODS):
                f.write(json.dumps(pod("bulk-%05d" % i,
                                       "ns-%d" % (i % 10))) + "\n")
        cls.state = os.path.join(cls.workdir, "state.json")
        cls.sim = KubeSim("--preload", preload, "--state", cls.state,
                          "--watch-history", "2000",
                          workdir=cls.workdir)
        cls.probe = Probe(cls.sim.kubeconfig, "pods", "nodes")

    @classmethod
    def tearDownClass(cls):
        code = cls.probe.quit()
        cls.sim.stop()
        assert code == 0, "probe did not close cleanly: %d" % code

    def converge(self, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            server = self.sim.list_all("/api/v1/pods")
            cache = self.probe.dump("pods")
            if server == cache:
                return server
            if time.monotonic() > deadline:
                missing = set(server) - set(cache)
                extra = set(cache) - set(server)
                stale = [k for k in server if k in cache and
                         server[k] != cache[k]]
                self.fail("cache differs: %d missing, %d extra, %d stale "
                          "(e.g. %s)" % (len(missing), len(extra), len(stale),
                                         (list(missing) + list(extra) +
                                          stale)[:3]))
            time.sleep(0.3)

    def churn(self, tag, n=200):
        """Creates n pods, relabels n/2 of them, deletes n/4."""
        for i in range(n):
            st, _ = self.sim.request(
                "POST", "/api/v1/namespaces/default/pods",
                pod("%s-%d" % (tag, i)))
            self.assertIn(st, (201, 500), "create %s-%d" % (tag, i))
        for i in range(0, n, 2):
            self.sim.request(
                "PATCH", "/api/v1/namespaces/default/pods/%s-%d" % (tag, i),
                {"metadata": {"labels": {"touched": "yes"}}},
                "application/merge-patch+json")
        for i in range(0, n, 4):
            self.sim.request(
                "DELETE", "/api/v1/namespaces/default/pods/%s-%d" % (tag, i),
                {"gracePeriodSeconds": 0})

    def test_1_initial_list_converges(self):
        start = time.monotonic()
        while not self.probe.stats("pods")["synced"]:
            self.assertLess(time.monotonic() - start, 60, "never synced")
            time.sleep(0.2)
        got = self.converge()
        self.assertGreaterEqual(len(got), PODS)
        self.assertEqual(self.probe.stats("pods")["decode_errors"], 0)

    def test_2_watch_applies_changes(self):
        self.churn("w")
        self.converge()

    def test_3_dropped_watches(self):
        before = self.probe.stats("pods")["watches"]
        for round_ in range(3):
            self.sim.request("POST", "/_sim/restart-watches", {})
            self.churn("d%d" % round_, 60)
        self.converge()
        self.assertGreater(self.probe.stats("pods")["watches"], before)

    def test_4_forced_410_relists(self):
        before = self.probe.stats("pods")["lists"]
        # Changes the cache misses while its watch is down, then history is
        # compacted so the rewatch gets 410 and must relist (deleting what
        # vanished meanwhile).
        # The informer lists and watches /api/v1/pods; the churn below
        # writes through namespaced paths, which the fault does not match.
        self.sim.request("POST", "/_sim/faults",
                         {"match": "^/api/v1/pods$", "error500": 1.0})
        self.sim.request("POST", "/_sim/restart-watches", {})
        self.churn("g", 100)
        self.sim.request("POST", "/_sim/compact", {})
        self.sim.request("POST", "/_sim/faults",
                         {"match": None, "error500": 0.0})
        # The relist applies its pages as they come, so the cache can equal
        # the server before the list has finished: wait for the relist to
        # complete, then compare.
        wait_until(lambda: self.probe.stats("pods")["lists"] > before, 45,
                   interval=0.1, what="a relist after the 410")
        self.converge(45)

    def test_5_server_errors(self):
        self.sim.request("POST", "/_sim/faults", {"error500": 0.3})
        try:
            self.sim.request("POST", "/_sim/restart-watches", {})
            self.churn("e", 100)
        finally:
            self.sim.request("POST", "/_sim/faults", {"error500": 0.0})
        self.converge(45)

    def test_6_restart(self):
        self.sim.stop()
        self.sim.start("--state", self.state)
        self.churn("r", 100)
        self.converge(45)


if __name__ == "__main__":
    unittest.main(verbosity=2)
