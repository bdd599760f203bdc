#!/usr/bin/env python3
"""kube-sim conformance of the simulated actors and controllers: --scheduler
(fit, selectors, affinity, taints, unschedulable, messages), --kubelet (node
readiness from Lease heartbeats, pods Running/Ready, graceful deletion,
completion), the node lifecycle taints, DaemonSets, garbage collection
(background, foreground, orphan) and namespace deletion."""

import threading
import time

from simlib import SimTestCase, main

PODS = "/api/v1/namespaces/default/pods"
NODES = "/api/v1/nodes"


def node(name, cpu="2", memory="4Gi", pods="110", labels=None, taints=None, unschedulable=False):
    n = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name}, **(labels or {}))},
         "spec": {"providerID": "proxmox://lab/" + name, "podCIDR": "10.244.%d.0/24" % (hash(name) % 200)},
         "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": pods},
                    "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                    "addresses": [{"type": "InternalIP", "address": "192.168.0.%d" % (hash(name) % 200 + 1)}]}}
    if taints:
        n["spec"]["taints"] = taints
    if unschedulable:
        n["spec"]["unschedulable"] = True
    return n


def pod(name, cpu=None, memory=None, **spec):
    c = {"name": "c", "image": "registry.invalid/x:1"}
    if cpu or memory:
        c["resources"] = {"requests": {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}}
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [c]}}
    p["spec"].update(spec)
    return p


class Actors(SimTestCase):
    # Taints and retries at once: the control plane's own pace (monitor
    # period, scheduler backoff) is timing_test.py's subject.
    sim_args = ("--scheduler", "--kubelet", "--node-lease-grace", "4", "--pod-start-delay", "0.1",
                "--pod-grace-scale", "0.1", "--pod-grace-max", "1", "--node-monitor-period", "0",
                "--pod-initial-backoff", "0")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.live = set()
        cls.stop_hb = threading.Event()

        def beat():
            while not cls.stop_hb.wait(0.3):
                for n in list(cls.live):
                    try:
                        cls.sim.post("/_sim/heartbeat/" + n, {})
                    except Exception:  # noqa: BLE001
                        pass
        cls.hb_thread = threading.Thread(target=beat, daemon=True)
        cls.hb_thread.start()

    @classmethod
    def tearDownClass(cls):
        cls.stop_hb.set()
        cls.hb_thread.join(5)
        super().tearDownClass()

    def hb(self, name):
        self.assertCode(self.sim.post("/_sim/heartbeat/" + name, {}), 200)

    def ready(self, name):
        n = self.sim.get(NODES + "/" + name).json()
        c = [c for c in n.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
        return c[0]["status"] if c else None

    def add_node(self, name, live=True, **kw):
        self.assertCode(self.sim.post(NODES, node(name, **kw)), 201)
        self.hb(name)
        if live:
            self.live.add(name)
        self.sim.wait_for(lambda: self.ready(name) == "True", msg="node %s Ready" % name)
        # the node lifecycle controller removes the not-ready taint once Ready
        self.sim.wait_for(lambda: not [t for t in self.sim.get(NODES + "/" + name).json()["spec"].get("taints", [])
                                       if t["key"].startswith("node.kubernetes.io/")], msg="taints gone")

    def keep_alive(self, *names):
        for n in names:
            self.hb(n)

    def pod_state(self, name):
        p = self.sim.get(PODS + "/" + name).json()
        return p

    def test_heartbeat_readiness_and_taints(self):
        s = self.sim
        self.add_node("hb1")
        self.live.discard("hb1")
        self.sim.post(PODS, pod("on-hb1", nodeName="hb1"))
        s.wait_for(lambda: self.pod_state("on-hb1")["status"].get("phase") == "Running", msg="running")
        # no more heartbeats: Unknown after the grace, unreachable taints, pod not ready
        s.wait_for(lambda: self.ready("hb1") == "Unknown", timeout=15, msg="node Unknown")
        n = s.get(NODES + "/hb1").json()
        ready = [c for c in n["status"]["conditions"] if c["type"] == "Ready"][0]
        self.assertEqual((ready["reason"], ready["message"]), ("NodeStatusUnknown",
                                                               "Kubelet stopped posting node status."))
        s.wait_for(lambda: {(t["key"], t["effect"]) for t in s.get(NODES + "/hb1").json()["spec"].get("taints", [])}
                   == {("node.kubernetes.io/unreachable", "NoSchedule"),
                       ("node.kubernetes.io/unreachable", "NoExecute")}, msg="unreachable taints")
        s.wait_for(lambda: [c for c in self.pod_state("on-hb1")["status"]["conditions"]
                            if c["type"] == "Ready"][0]["status"] == "False", msg="pod not ready")
        # a deleted pod on a dead node stays Terminating
        s.delete(PODS + "/on-hb1")
        time.sleep(1.5)
        self.assertCode(s.get(PODS + "/on-hb1"), 200)
        # heartbeats again: Ready, taints gone, and the kubelet finishes the deletion
        self.hb("hb1")
        s.wait_for(lambda: self.ready("hb1") == "True", msg="Ready again")
        s.wait_for(lambda: s.get(PODS + "/on-hb1").code == 404, msg="deletion completed")
        s.wait_for(lambda: not s.get(NODES + "/hb1").json()["spec"].get("taints"), msg="taints removed")
        # a node that never sends a heartbeat stays as registered, then Unknown
        self.assertCode(s.post(NODES, node("silent")), 201)
        time.sleep(0.5)
        self.assertIsNone(self.ready("silent"))
        s.wait_for(lambda: self.ready("silent") == "Unknown", timeout=15, msg="silent node Unknown")

    def test_pod_completion_and_daemonset(self):
        s = self.sim
        self.add_node("ds1")
        self.add_node("ds2", labels={"role": "edge"})
        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
              "spec": {"selector": {"matchLabels": {"app": "agent"}},
                       "template": {"metadata": {"labels": {"app": "agent"}},
                                    "spec": {"containers": [{"name": "a", "image": "registry.invalid/agent:1"}]}}}}
        self.assertCode(s.post("/apis/apps/v1/namespaces/default/daemonsets", ds), 201)

        def ds_pods():
            return {p["spec"].get("nodeName") for p in s.get(PODS + "?labelSelector=app%3Dagent").json()["items"]}
        s.wait_for(lambda: ds_pods() == {"ds1", "ds2"}, msg="one agent per node")
        self.keep_alive("ds1", "ds2")
        st = s.wait_for(lambda: (lambda x: x if x.get("numberReady") == 2 else None)(
            s.get("/apis/apps/v1/namespaces/default/daemonsets/agent").json()["status"]), msg="ds ready")
        self.assertEqual(st["desiredNumberScheduled"], 2)
        s.patch("/apis/apps/v1/namespaces/default/daemonsets/agent",
                {"spec": {"template": {"spec": {"nodeSelector": {"role": "edge"}}}}})
        s.wait_for(lambda: ds_pods() == {"ds2"}, msg="agent only on the edge node")
        self.keep_alive("ds1", "ds2")
        p = pod("job-like", restartPolicy="Never", nodeName="ds1")
        p["metadata"]["annotations"] = {"kube-sim.carpenter.dev/complete-after": "0.5"}
        s.post(PODS, p)
        s.wait_for(lambda: self.pod_state("job-like")["status"].get("phase") == "Succeeded", msg="Succeeded")


class Scheduling(Actors):
    """Its own simulator: the scheduler's messages count the nodes."""

    def test_scheduler_and_kubelet(self):
        s = self.sim
        self.add_node("small", cpu="1", memory="1Gi")
        self.add_node("gpu", cpu="8", memory="16Gi", labels={"gpu": "yes"},
                      taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
        self.keep_alive("small", "gpu")
        s.post(PODS, pod("fits", cpu="500m", memory="256Mi"))
        s.post(PODS, pod("selector", nodeSelector={"gpu": "yes"},
                         tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                       "effect": "NoSchedule"}]))
        s.post(PODS, pod("affinity", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                         "values": ["small"]}]}]}}}))
        s.post(PODS, pod("toobig", cpu="4"))
        s.post(PODS, pod("untolerated", nodeSelector={"gpu": "yes"}))

        def bound(n):
            return s.get(PODS + "/" + n).json()["spec"].get("nodeName")
        s.wait_for(lambda: bound("fits") == "small", msg="fits on small")
        s.wait_for(lambda: bound("selector") == "gpu", msg="selector on gpu")
        s.wait_for(lambda: bound("affinity") == "small", msg="affinity on small")
        self.keep_alive("small", "gpu")

        def cond(n):
            for c in s.get(PODS + "/" + n).json()["status"].get("conditions", []):
                if c["type"] == "PodScheduled":
                    return c
        c = s.wait_for(lambda: cond("toobig"), msg="toobig condition")
        self.assertEqual((c["status"], c["reason"]), ("False", "Unschedulable"))
        self.assertEqual(c["message"], "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
                                       "{dedicated: gpu}. preemption: 0/2 nodes are available: 2 Preemption is not "
                                       "helpful for scheduling.")
        c = s.wait_for(lambda: cond("untolerated"), msg="untolerated condition")
        self.assertEqual(c["message"], "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                       "1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/2 nodes are "
                                       "available: 2 Preemption is not helpful for scheduling.")
        evs = s.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dtoobig").json()["items"]
        self.assertEqual(evs[0]["reason"], "FailedScheduling")
        self.assertEqual(evs[0]["type"], "Warning")
        # the kubelet runs bound pods
        p = s.wait_for(lambda: (lambda x: x if x["status"].get("phase") == "Running" else None)(
            self.pod_state("fits")), msg="fits Running")
        self.keep_alive("small", "gpu")
        conds = {c["type"]: c["status"] for c in p["status"]["conditions"]}
        self.assertEqual(conds.get("Ready"), "True")
        self.assertTrue(p["status"]["podIP"].startswith("10.244."))
        self.assertEqual(p["status"]["containerStatuses"][0]["ready"], True)
        # capacity frees up: a bigger node makes toobig schedulable
        self.add_node("big", cpu="16", memory="32Gi")
        self.keep_alive("small", "gpu", "big")
        s.wait_for(lambda: bound("toobig") == "big", msg="toobig on big")
        # an unschedulable (cordoned) node takes no new pods
        s.patch(NODES + "/big", {"spec": {"unschedulable": True}})
        s.post(PODS, pod("huge", cpu="10"))
        c = s.wait_for(lambda: cond("huge"), msg="huge condition")
        self.assertIn("1 node(s) were unschedulable", c["message"])
        self.keep_alive("small", "gpu", "big")
        # graceful deletion: the kubelet finishes it after the (scaled) grace period
        s.delete(PODS + "/fits")
        self.assertCode(s.get(PODS + "/fits"), 200)
        s.wait_for(lambda: s.get(PODS + "/fits").code == 404, timeout=10, msg="fits deleted by the kubelet")


    test_heartbeat_readiness_and_taints = None
    test_pod_completion_and_daemonset = None


class Controllers(SimTestCase):
    sim_args = ("--pod-gc-delay", "1", "--node-monitor-period", "0")

    def test_pods_of_deleted_nodes_are_collected(self):
        s = self.sim
        s.post(NODES, node("doomed"))
        s.post(PODS, pod("on-doomed", nodeName="doomed"))
        time.sleep(1.5)
        self.assertCode(s.get(PODS + "/on-doomed"), 200)
        s.delete(NODES + "/doomed")
        s.wait_for(lambda: s.get(PODS + "/on-doomed").code == 404, msg="orphaned pod collected")

    def deployment(self, name, replicas=2):
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}}}

    def count(self, path):
        return len(self.sim.get(path).json()["items"])

    def test_deployment_status_and_gc_background(self):
        s = self.sim
        D = "/apis/apps/v1/namespaces/default/deployments"
        s.post(D, self.deployment("bg", 3))
        s.wait_for(lambda: self.count(PODS + "?labelSelector=app%3Dbg") == 3, msg="3 pods")
        d = s.wait_for(lambda: (lambda x: x if x["status"].get("replicas") == 3 else None)(s.get(D + "/bg").json()),
                       msg="deployment status")
        self.assertEqual(d["status"]["observedGeneration"], 1)
        self.assertEqual(d["status"]["updatedReplicas"], 3)
        self.assertEqual({c["type"] for c in d["status"]["conditions"]}, {"Available", "Progressing"})
        rs = s.get("/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dbg").json()["items"][0]
        self.assertEqual(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment")
        self.assertTrue(rs["metadata"]["name"].startswith("bg-"))
        s.delete(D + "/bg")
        s.wait_for(lambda: self.count(PODS + "?labelSelector=app%3Dbg") == 0, msg="pods collected")
        self.assertEqual(self.count("/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dbg"), 0)

    def test_replicaset_status_follows_its_pods(self):
        # The counts are kept as pods change and counted afresh when the
        # ReplicaSet changes: each kind of change moves them.
        s = self.sim
        R = "/apis/apps/v1/namespaces/default/replicasets"
        s.post(R, {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "cnt"},
                   "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "cnt"}},
                            "template": {"metadata": {"labels": {"app": "cnt", "tier": "a"}},
                                         "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}}})

        def status(want):
            def got():
                st = s.get(R + "/cnt").json().get("status") or {}
                st = {k: st.get(k, 0) for k in ("replicas", "fullyLabeledReplicas", "readyReplicas",
                                                 "availableReplicas")}
                return st if st == want else None
            # well within the controller's 30 s resync, which counts afresh
            return s.wait_for(got, timeout=10, msg="status %s" % want)

        def pods():
            items = s.get(PODS + "?labelSelector=app%3Dcnt").json()["items"]
            return sorted(p["metadata"]["name"] for p in items
                          if not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") == "Pending")

        status({"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 0, "availableReplicas": 0})
        a, b, c = pods()
        s.patch(PODS + "/" + a, {"metadata": {"labels": {"tier": "b"}}})
        status({"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 0, "availableReplicas": 0})
        s.patch(PODS + "/" + b + "/status", {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True"}]}})
        status({"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 1})
        # a finished pod no longer counts, and is replaced
        s.patch(PODS + "/" + b + "/status", {"status": {"phase": "Succeeded"}})
        s.wait_for(lambda: len(pods()) == 3 and b not in pods(), msg="a replacement")
        status({"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 0, "availableReplicas": 0})
        # a new template: every pod counted against its labels again
        s.patch(R + "/cnt", {"spec": {"template": {"metadata": {"labels": {"tier": "b"}}}}})
        status({"replicas": 3, "fullyLabeledReplicas": 1, "readyReplicas": 0, "availableReplicas": 0})
        # its replacement comes from the new template
        s.delete(PODS + "/" + c)
        status({"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 0, "availableReplicas": 0})
        self.assertNotIn(c, pods())
        s.patch(R + "/cnt", {"spec": {"replicas": 1}})
        s.wait_for(lambda: len(pods()) == 1, msg="scaled down")
        left = s.get(PODS + "/" + pods()[0]).json()["metadata"]["labels"]
        status({"replicas": 1, "fullyLabeledReplicas": int(left.get("tier") == "b"), "readyReplicas": 0,
                "availableReplicas": 0})
        s.delete(R + "/cnt")

    def test_gc_foreground_and_orphan(self):
        s = self.sim
        D = "/apis/apps/v1/namespaces/default/deployments"
        s.post(D, self.deployment("fg", 2))
        s.wait_for(lambda: self.count(PODS + "?labelSelector=app%3Dfg") == 2, msg="2 pods")
        r = s.delete(D + "/fg", {"propagationPolicy": "Foreground"}).json()
        self.assertIn("foregroundDeletion", r["metadata"]["finalizers"])
        s.wait_for(lambda: s.get(D + "/fg").code == 404, msg="owner gone after its dependents")
        self.assertEqual(self.count(PODS + "?labelSelector=app%3Dfg"), 0)
        s.post(D, self.deployment("or", 1))
        s.wait_for(lambda: self.count(PODS + "?labelSelector=app%3Dor") == 1, msg="1 pod")
        s.delete(D + "/or", {"propagationPolicy": "Orphan"})
        s.wait_for(lambda: s.get(D + "/or").code == 404, msg="owner gone")
        rs = s.get("/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dor").json()["items"]
        self.assertEqual(len(rs), 1)
        self.assertNotIn("ownerReferences", rs[0]["metadata"])
        # a dependent whose owner does not exist is collected
        p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphaned", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost",
             "uid": "00000000-0000-0000-0000-000000000000"}]},
             "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}
        s.post(PODS, p)
        s.wait_for(lambda: s.get(PODS + "/orphaned").code == 404, msg="orphan collected")

    def test_namespace_deletion(self):
        s = self.sim
        s.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
        s.post("/api/v1/namespaces/gone/configmaps", {"metadata": {"name": "c"}})
        w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w",
                                                                             "finalizers": ["example.com/x"]},
             "spec": {"color": "red"}}
        s.post("/apis/example.com/v1/namespaces/gone/widgets", w)
        r = s.delete("/api/v1/namespaces/gone").json()
        self.assertEqual(r["status"]["phase"], "Terminating")
        st = self.assertStatus(s.post("/api/v1/namespaces/gone/configmaps", {"metadata": {"name": "d"}}), 403,
                               "Forbidden")
        self.assertEqual(st["details"]["causes"][0]["reason"], "NamespaceTerminating")
        s.wait_for(lambda: s.get("/api/v1/namespaces/gone/configmaps/c").code == 404, msg="content deleted")
        time.sleep(1)
        self.assertCode(s.get("/api/v1/namespaces/gone"), 200)  # the widget's finalizer holds it
        s.patch("/apis/example.com/v1/namespaces/gone/widgets/w", {"metadata": {"finalizers": None}})
        s.wait_for(lambda: s.get("/api/v1/namespaces/gone").code == 404, msg="namespace gone")


if __name__ == "__main__":
    main()
