#!/usr/bin/env python3
"""kube-sim: faults, the request log, restarts with --state, RBAC users,
plain HTTP and the control endpoints."""

import json
import os
import socket
import time
import unittest

from simlib import Sim, SimTestCase, main, scratch

PODS = "/api/v1/namespaces/default/pods"
CM = "/api/v1/namespaces/default/configmaps"


class Faults(SimTestCase):
    def test_500_and_429_with_retry_after(self):
        s = self.sim
        s.post("/_sim/faults", {"error500": 1.0})
        st = self.assertStatus(s.get(PODS), 500, "InternalError")
        self.assertIn("injected fault", st["message"])
        self.assertCode(s.get("/api/v1"), 200, "discovery is not faulted")
        self.assertCode(s.get("/_sim/stats"), 200)
        s.post("/_sim/faults", {"error500": 0.0, "error429": 1.0, "retryAfter": 3})
        r = s.get(PODS)
        st = self.assertStatus(r, 429, "TooManyRequests")
        self.assertEqual(r.headers.get("retry-after"), "3")
        self.assertEqual(st["details"]["retryAfterSeconds"], 3)
        s.post("/_sim/faults", {"error429": 0.5, "match": "/configmaps"})
        self.assertTrue(all(s.get(PODS).code == 200 for _ in range(10)))
        codes = {s.get(CM).code for _ in range(40)}
        self.assertEqual(codes, {200, 429})
        s.post("/_sim/faults", {"error429": 0.0, "match": ""})
        self.assertGreater(s.get("/_sim/faults").json()["injected"]["429"], 0)

    def test_delay(self):
        s = self.sim
        s.post("/_sim/faults", {"delayMs": 300})
        t = time.time()
        s.get(PODS)
        self.assertGreater(time.time() - t, 0.29)
        s.post("/_sim/faults", {"delayMs": 0})

    def test_watch_end_and_restart_watches_and_compaction(self):
        s = self.sim
        s.post("/_sim/faults", {"watchEndSeconds": 1})
        t = time.time()
        w = s.watch(PODS + "?watch=1")
        # ended by the server: well before the client's own 30 s read timeout
        w.done.wait(20)
        self.assertTrue(w.done.is_set())
        print("watch ended after %.1f s" % (time.time() - t))
        s.post("/_sim/faults", {"watchEndSeconds": 0})
        w = s.watch(PODS + "?watch=1&timeoutSeconds=60")
        time.sleep(0.3)
        self.assertGreaterEqual(s.post("/_sim/restart-watches", {}).json()["closed"], 1)
        w.done.wait(5)
        self.assertTrue(w.done.is_set())
        rv = s.get(PODS).json()["metadata"]["resourceVersion"]
        s.post(CM, {"metadata": {"name": "bump"}})
        s.post("/_sim/compact", {})
        w = s.watch(PODS + "?watch=1&resourceVersion=" + rv)
        evs = w.wait(1)
        self.assertEqual(evs[0]["object"]["code"], 410)


class CompactEvery(SimTestCase):
    sim_args = ("--fault-compact-every", "0.5")

    def test_periodic_compaction(self):
        s = self.sim
        rv = s.get(PODS).json()["metadata"]["resourceVersion"]
        s.post(CM, {"metadata": {"name": "x"}})
        time.sleep(1.5)
        w = s.watch(PODS + "?watch=1&resourceVersion=" + rv)
        evs = w.wait(1)
        w.close()
        self.assertEqual(evs[0]["type"], "ERROR")


class RequestLog(unittest.TestCase):
    def test_request_log_lines(self):
        d = scratch.mkdtemp("kube-sim-reqlog-")
        log = os.path.join(d, "requests.jsonl")
        sim = Sim("--request-log", log)
        try:
            sim.post(PODS, {"metadata": {"name": "r1"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}},
                     headers={"User-Agent": "carpenter/0.1 (replica-a)"})
            sim.get(PODS + "/r1")
            sim.patch(PODS + "/r1?fieldManager=carpenter", {"metadata": {"labels": {"a": "b"}}})
            sim.get(PODS + "?limit=5")
            sim.post(PODS + "/r1/eviction", {"apiVersion": "policy/v1", "kind": "Eviction",
                                             "metadata": {"name": "r1"}})
            sim.delete("/apis/example.com/v1/namespaces/default/widgets")
            sim.get(PODS, token="nope")
            w = sim.watch("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=1&timeoutSeconds=1")
            w.done.wait(5)
            time.sleep(0.2)
            with open(log) as fh:
                recs = [json.loads(l) for l in fh]
        finally:
            sim.cleanup()
            __import__("shutil").rmtree(d, ignore_errors=True)
        recs = [r for r in recs if r["userAgent"] != "kubectl"]
        by = [(r["method"], r["verb"], r["resource"], r["subresource"], r["name"], r["code"]) for r in recs]
        for want in [("POST", "create", "pods", "", "", 201), ("GET", "get", "pods", "", "r1", 200),
                     ("PATCH", "patch", "pods", "", "r1", 200), ("GET", "list", "pods", "", "", 200),
                     ("POST", "create", "pods", "eviction", "r1", 201),
                     ("DELETE", "deletecollection", "widgets", "", "", 200), ("GET", "list", "pods", "", "", 401),
                     ("GET", "watch", "leases", "", "", 200)]:
            self.assertIn(want, by)
        first = recs[0]
        for k in ("time", "method", "path", "query", "verb", "apiGroup", "apiVersion", "resource", "subresource",
                  "namespace", "name", "code", "userAgent", "user"):
            self.assertIn(k, first)
        self.assertEqual(first["userAgent"], "carpenter/0.1 (replica-a)")
        self.assertEqual(first["user"], "admin")
        patch = next(r for r in recs if r["method"] == "PATCH")
        self.assertEqual((patch["patchType"], patch["fieldManager"]), ("application/merge-patch+json", "carpenter"))
        watch = next(r for r in recs if r["verb"] == "watch")
        self.assertEqual((watch["apiGroup"], watch["namespace"]), ("coordination.k8s.io", "kube-node-lease"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class State(unittest.TestCase):
    def test_restart_keeps_objects_token_and_resource_versions(self):
        d = scratch.mkdtemp("kube-sim-state-")
        state = os.path.join(d, "state.jsonl")
        sim = Sim("--state", state, workdir=d, port=free_port())
        try:
            uid = sim.post(CM, {"metadata": {"name": "keep"}, "data": {"a": "1"}}).json()["metadata"]["uid"]
            sim.post("/apis/example.com/v1/namespaces/default/widgets",
                     {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                      "spec": {"color": "blue"}})
            rv1 = int(sim.get(CM).json()["metadata"]["resourceVersion"])
            token = sim.token
            sim.stop()
            self.assertTrue(os.path.exists(state))
            sim.start()
            self.assertEqual(sim.token, token, "same token after a restart")
            cm = sim.get(CM + "/keep").json()
            self.assertEqual((cm["metadata"]["uid"], cm["data"]), (uid, {"a": "1"}))
            self.assertEqual(sim.get("/apis/example.com/v1/namespaces/default/widgets/w").json()["spec"]["color"],
                             "blue")
            rv2 = int(sim.post(CM, {"metadata": {"name": "after"}}).json()["metadata"]["resourceVersion"])
            self.assertGreater(rv2, rv1, "resourceVersions keep increasing across restarts")
            w = sim.watch(PODS + "?watch=1&resourceVersion=%d" % (rv1 - 1))
            evs = w.wait(1)
            w.close()
            self.assertEqual(evs[0]["object"]["code"], 410, "the history is not kept across restarts")
            # the kubeconfig (same port, token and CA) still works for kubectl
            self.assertIn("keep", sim.kubectl("get", "configmaps", "-o", "name")[1])
        finally:
            sim.cleanup()


class RBAC(SimTestCase):
    sim_args = ("--rbac", "--user", "alice-token=alice:dev", "--user", "bob-token=bob")

    def test_forbidden_until_bound(self):
        s = self.sim
        st = self.assertStatus(s.get(PODS, token="alice-token"), 403, "Forbidden")
        self.assertEqual(st["message"], 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
                                        'in the namespace "default"')
        self.assertEqual(st["details"], {"kind": "pods"})
        st = self.assertStatus(s.get("/api/v1/nodes/n1", token="alice-token"), 403, "Forbidden")
        self.assertIn("at the cluster scope", st["message"])
        self.assertCode(s.get("/api/v1", token="alice-token"), 200, "discovery is open")
        s.post("/apis/rbac.authorization.k8s.io/v1/clusterroles",
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "evictor"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
                          {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]})
        s.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "dev"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "evictor"},
                "subjects": [{"kind": "Group", "name": "dev"}]})
        self.assertCode(s.get(PODS, token="alice-token"), 200)
        self.assertStatus(s.get(PODS, token="bob-token"), 403, "Forbidden")
        self.assertStatus(s.get("/api/v1/namespaces/kube-system/pods", token="alice-token"), 403, "Forbidden")
        st = self.assertStatus(s.delete(PODS + "/x", token="alice-token"), 403, "Forbidden")
        self.assertEqual(st["details"], {"name": "x", "kind": "pods"})
        st = self.assertStatus(s.post(PODS + "/x/eviction", {"apiVersion": "policy/v1", "kind": "Eviction",
                                                             "metadata": {"name": "x"}}, token="alice-token"),
                               404, "NotFound")
        r = s.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                   {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                    "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "subresource": "eviction",
                                                    "namespace": "default"}}}, token="alice-token")
        self.assertTrue(r.json()["status"]["allowed"])


class PlainHTTP(SimTestCase):
    sim_tls = False

    def test_http_with_token(self):
        self.assertTrue(self.sim.url.startswith("http://"))
        self.assertStatus(self.sim.get(PODS, token=False), 401, "Unauthorized")
        self.assertCode(self.sim.curl("GET", PODS), 200)
        st = self.sim.stats()
        for k in ("resourceVersion", "objects", "watches", "requests", "maxRSSKiB"):
            self.assertIn(k, st)


if __name__ == "__main__":
    main()
