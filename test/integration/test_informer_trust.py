"""Informers and resourceVersions they must not trust (issue 20 point 8): a
BOOKMARK whose version is not a number, an event whose version is far
ahead of the server's, a server that refuses to watch from it, a stream
that does not parse. The informer
relists instead of rewatching forever, so changes made after the bad
version reach the cache, and it reports itself not synced while it cannot
list."""
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from sims import KubeSim, wait_until  # noqa: E402
from test_informer import Probe, pod  # noqa: E402


class InformerTrustTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="carp-inftrust-")
        self.addCleanup(shutil.rmtree, self.workdir, True)
        self.reqlog = os.path.join(self.workdir, "requests.jsonl")
        self.sim = KubeSim("--request-log", self.reqlog, workdir=self.workdir)
        self.addCleanup(self.sim.stop)
        self.probe = Probe(self.sim.kubeconfig, "pods")
        self.addCleanup(self.quit_probe)
        wait_until(lambda: self.probe.stats("pods")["synced"], 30,
                   what="the first list")

    def quit_probe(self):
        self.assertEqual(self.probe.quit(), 0)

    def faults(self, **kw):
        st, body = self.sim.request("POST", "/_sim/faults", kw)
        self.assertEqual(st, 200, body)
        return body

    def create(self, name):
        st, body = self.sim.request(
            "POST", "/api/v1/namespaces/default/pods", pod(name))
        self.assertEqual(st, 201, body)
        return body["metadata"]["resourceVersion"]

    def lists_since(self, t0):
        n = 0
        with open(self.reqlog) as f:
            for line in f:
                r = json.loads(line)
                ts = datetime.datetime.fromisoformat(
                    r["time"].replace("Z", "+00:00")).timestamp()
                if (ts >= t0 and r["path"] == "/api/v1/pods" and
                        r.get("verb") == "list"):
                    n += 1
        return n

    def cached(self, name):
        return self.probe.dump("pods").get("default/" + name)

    def test_bad_bookmark_relists(self):
        lists = self.probe.stats("pods")["lists"]
        self.faults(match="^/api/v1/pods$", badBookmarks=1)
        # Any watch now in flight keeps going; the next one gets the bad
        # bookmark.
        self.sim.request("POST", "/_sim/restart-watches", {})
        wait_until(lambda: self.faults()["injected"]["badBookmark"] == 1, 30,
                   what="the bad bookmark sent")
        rv = self.create("after-bad-bookmark")
        wait_until(lambda: self.cached("after-bad-bookmark") == rv, 30,
                   what="a pod created after the bad bookmark in the cache")
        stats = self.probe.stats("pods")
        self.assertGreater(stats["lists"], lists)
        self.assertTrue(stats["synced"])

    def test_stream_that_does_not_parse_relists(self):
        lists = self.probe.stats("pods")["lists"]
        self.faults(match="^/api/v1/pods$", badFrames=1)
        self.sim.request("POST", "/_sim/restart-watches", {})
        wait_until(lambda: self.faults()["injected"]["badFrame"] == 1, 30,
                   what="the bad frame sent")
        rv = self.create("after-bad-frame")
        wait_until(lambda: self.cached("after-bad-frame") == rv, 30,
                   what="a pod created after the bad frame in the cache")
        self.assertGreater(self.probe.stats("pods")["lists"], lists)

    def test_future_version_relists(self):
        lists = self.probe.stats("pods")["lists"]
        self.faults(match="^/api/v1/pods$", futureRvEvents=1)
        self.create("carries-future-rv")
        wait_until(lambda: self.faults()["injected"]["futureRv"] == 1, 30,
                   what="an event with a version far ahead")
        # The stream ends; the rewatch from the version far ahead is refused
        # (504 too large) and must lead to a relist, not to rewatching.
        self.sim.request("POST", "/_sim/restart-watches", {})
        rv = self.create("after-future-rv")
        wait_until(lambda: self.cached("after-future-rv") == rv, 45,
                   what="a pod created after the bad version in the cache")
        self.assertGreater(self.probe.stats("pods")["lists"], lists)
        # The relist replaced the version that was far ahead.
        _, body = self.sim.request(
            "GET", "/api/v1/namespaces/default/pods/carries-future-rv")
        self.assertEqual(self.cached("carries-future-rv"),
                         body["metadata"]["resourceVersion"])

    def test_not_synced_while_it_cannot_list(self):
        # The watch is refused and so is every list: the cache may miss
        # anything, and says so.
        self.faults(match="^/api/v1/pods$", error500=1.0, badBookmarks=1)
        self.sim.request("POST", "/_sim/restart-watches", {})
        wait_until(lambda: not self.probe.stats("pods")["synced"], 30,
                   what="the informer to report itself not synced")
        rv = self.create("while-down")
        # Lists keep failing: they back off (the client's retries, 0.2 s
        # doubling, four times; then the informer's, 0.8 s doubling to
        # 30 s): about ten requests in 10 s, not hundreds.
        start = time.time()
        time.sleep(10)
        lists = self.lists_since(start)
        self.assertLessEqual(lists, 15, "%d lists in 10 s" % lists)
        self.assertFalse(self.probe.stats("pods")["synced"])
        self.faults(match=None, error500=0.0)
        wait_until(lambda: self.probe.stats("pods")["synced"], 60,
                   what="synced again once lists work")
        wait_until(lambda: self.cached("while-down") == rv, 30,
                   what="the pod created meanwhile in the cache")


if __name__ == "__main__":
    unittest.main(verbosity=2)
