#!/usr/bin/env python3
"""kube-sim at scale: a preload file written by hack/kubesim-gen must load,
list (paginated, consistent) and watch without falling over.

CI runs 500 nodes / 15,000 pods.  KUBE_SIM_SCALE=full runs the target size
(5,000 nodes / 150,000 pods) and prints the timings docs/kube-sim.md quotes."""

import os
import re
import subprocess
import sys
import time
import unittest

from simlib import ROOT, Sim, scratch

FULL = os.environ.get("KUBE_SIM_SCALE") == "full"
NODES = 5000 if FULL else 500
PODS = 150000 if FULL else 15000


class Scale(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = scratch.mkdtemp("kube-sim-scale-")
        cls.file = os.path.join(cls.dir, "preload.jsonl")
        subprocess.run([sys.executable, os.path.join(ROOT, "hack", "kubesim-gen"), "--nodes", str(NODES), "--pods",
                        str(PODS), "--out", cls.file], check=True)
        t = time.time()
        cls.sim = Sim("--preload", cls.file, "--watch-history", "50000", workdir=cls.dir)
        cls.load_seconds = time.time() - t

    @classmethod
    def tearDownClass(cls):
        cls.sim.cleanup()

    def report(self, what, value):
        sys.stderr.write("scale: %s: %s\n" % (what, value))

    def page_all(self, path, limit):
        n = 0
        cont = ""
        pages = 0
        rv = None
        while True:
            r = self.sim.get("%s?limit=%d%s" % (path, limit, "&continue=" + cont if cont else ""), timeout=120)
            self.assertEqual(r.code, 200)
            n += len(re.findall(rb'\{"metadata":\{"name":', r.body))
            head = r.body[:300].decode()
            m = re.search(r'"resourceVersion":"(\d+)"', head)
            if rv is None:
                rv = m.group(1)
            else:
                self.assertEqual(m.group(1), rv, "every page is served at the first page's resourceVersion")
            m = re.search(r'"continue":"([^"]*)"', head)
            cont = m.group(1) if m else ""
            pages += 1
            if not cont:
                return n, pages

    def test_load_list_and_watch(self):
        self.report("nodes/pods", "%d/%d" % (NODES, PODS))
        self.report("preload until ready (s)", round(self.load_seconds, 1))
        st = self.sim.stats()
        self.assertEqual(st["objects"]["pods"], PODS)
        self.assertEqual(st["objects"]["nodes"], NODES)
        # let the controllers look at everything once; nothing should churn
        deadline = time.time() + 120
        last = -1
        while time.time() < deadline:
            rv = self.sim.stats()["resourceVersion"]
            if rv == last:
                break
            last = rv
            time.sleep(2)
        st = self.sim.stats()
        self.assertEqual(st["objects"]["pods"], PODS, "the controllers created or deleted no pods")
        self.report("RSS after load and controllers (MiB)", st["maxRSSKiB"] // 1024)
        t = time.time()
        n, pages = self.page_all("/api/v1/pods", 500)
        dt = time.time() - t
        self.assertEqual(n, PODS)
        self.report("full list of pods, limit=500 (s)", "%.2f (%d pages)" % (dt, pages))
        n, _ = self.page_all("/api/v1/nodes", 500)
        self.assertEqual(n, NODES)
        r = self.sim.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-00007")
        self.assertEqual(r.code, 200)
        self.assertEqual(len(r.json()["items"]), PODS // NODES)
        # a watch from "now" and a list+watch from the list's resourceVersion both see a change
        rv = re.search(rb'"resourceVersion":"(\d+)"', self.sim.get("/api/v1/pods?limit=1").body).group(1).decode()
        w = self.sim.watch("/api/v1/pods?watch=1&resourceVersion=%s&labelSelector=app%%3Dapp-00003" % rv)
        name = self.sim.get("/api/v1/pods?labelSelector=app%3Dapp-00003&limit=1").json()["items"][0]
        self.sim.patch("/api/v1/namespaces/%s/pods/%s" % (name["metadata"]["namespace"], name["metadata"]["name"]),
                       {"metadata": {"labels": {"touched": "yes"}}})
        evs = w.wait(1, timeout=20)
        w.close()
        self.assertEqual(evs[0]["type"], "MODIFIED")
        # watch from resourceVersion 0: every pod as ADDED
        t = time.time()
        conn = self.sim._conn(300)
        conn.request("GET", "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=300",
                     headers={"Authorization": "Bearer " + self.sim.token})
        resp = conn.getresponse()
        lines = 0
        while lines < PODS:
            chunk = resp.read1(1 << 20)
            if not chunk:
                break
            lines += chunk.count(b"\n")
        conn.close()
        self.assertEqual(lines, PODS)
        self.report("watch from resourceVersion 0, all ADDED (s)", round(time.time() - t, 2))
        self.report("peak RSS (MiB)", self.sim.stats()["maxRSSKiB"] // 1024)
        self.assertLess(self.sim.stats()["maxRSSKiB"] // 1024, 2000)


if __name__ == "__main__":
    unittest.main(verbosity=2)
