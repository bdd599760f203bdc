#!/usr/bin/env python3
"""kube-sim is as slow as a real control plane where Carpenter can tell:

- a node that registers gets node.kubernetes.io/not-ready:NoSchedule at
  once, and the taint outlives the node turning Ready until the node
  lifecycle controller's next monitor pass (--node-monitor-period, 5 s by
  default as in kube-controller-manager), when it goes;
- --keep-not-ready-taint leaves it for good (a broken CNI), and pods stay
  Pending with the kube-scheduler's message for the taint;
- the scheduler retries a pod that did not fit only after its backoff
  (--pod-initial-backoff doubling up to --pod-max-backoff), even when a
  node that fits arrives meanwhile.

Each case runs its own simulator with the flags it is about; the numbers
are chosen so that every check waits for something to happen (or
observes that it has not happened yet, well inside a long period), never
that it happened quickly."""

import time

from simlib import Sim, SimTestCase, main

PODS = "/api/v1/namespaces/default/pods"
NODES = "/api/v1/nodes"
NOT_READY = "node.kubernetes.io/not-ready"


def node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"providerID": "proxmox://lab/" + name},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "addresses": [{"type": "InternalIP", "address": "192.168.7.7"}]}}


def pod(name, cpu="1"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


class Timing(SimTestCase):
    sim_args = None  # every test starts the simulator it needs

    @classmethod
    def setUpClass(cls):
        pass

    def start(self, *args):
        s = Sim("--kubelet", "--node-lease-grace", "60", *args)
        self.addCleanup(s.cleanup)
        return s

    def taints(self, s, name):
        return {(t["key"], t["effect"]) for t in s.get(NODES + "/" + name).json()["spec"].get("taints", [])}

    def ready(self, s, name):
        c = [c for c in s.get(NODES + "/" + name).json().get("status", {}).get("conditions", [])
             if c["type"] == "Ready"]
        return c[0]["status"] if c else None

    def register_and_heartbeat(self, s, name):
        self.assertCode(s.post(NODES, node(name)), 201)
        # the admission plugin's taint, before the kubelet reports anything
        s.wait_for(lambda: (NOT_READY, "NoSchedule") in self.taints(s, name), msg="not-ready at registration")
        self.assertCode(s.post("/_sim/heartbeat/" + name, {}), 200)
        s.wait_for(lambda: self.ready(s, name) == "True", msg="node Ready")

    def test_not_ready_taint_outlives_ready_until_the_monitor_pass(self):
        s = self.start("--node-monitor-period", "3600")
        self.register_and_heartbeat(s, "slow")
        time.sleep(2)  # well inside the hour before the first pass
        self.assertEqual(self.ready(s, "slow"), "True")
        self.assertIn((NOT_READY, "NoSchedule"), self.taints(s, "slow"))

    def test_not_ready_taint_goes_on_the_next_pass_by_default(self):
        s = self.start()  # --node-monitor-period 5
        self.register_and_heartbeat(s, "usual")
        s.wait_for(lambda: not {k for k, _ in self.taints(s, "usual") if k.startswith("node.kubernetes.io/")},
                   timeout=30, msg="not-ready gone on a monitor pass")

    def test_keep_not_ready_taint(self):
        s = self.start("--scheduler", "--node-monitor-period", "0.5", "--keep-not-ready-taint")
        self.register_and_heartbeat(s, "nocni")
        # the NoExecute half goes on a pass, the NoSchedule one stays
        s.wait_for(lambda: self.taints(s, "nocni") == {(NOT_READY, "NoSchedule")}, msg="only NoSchedule left")
        self.assertCode(s.post(PODS, pod("stuck")), 201)

        def cond():
            for c in s.get(PODS + "/stuck").json()["status"].get("conditions", []):
                if c["type"] == "PodScheduled":
                    return c
        c = s.wait_for(cond, msg="stuck pod condition")
        self.assertEqual(c["reason"], "Unschedulable")
        self.assertIn("1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }", c["message"])
        time.sleep(2)  # four passes
        self.assertEqual(self.taints(s, "nocni"), {(NOT_READY, "NoSchedule")})
        self.assertFalse(s.get(PODS + "/stuck").json()["spec"].get("nodeName"))

    def scheduled_after_a_node_comes(self, s):
        self.assertCode(s.post(PODS, pod("waits")), 201)

        def failed():
            for c in s.get(PODS + "/waits").json()["status"].get("conditions", []):
                if c["type"] == "PodScheduled" and c["status"] == "False":
                    return c
        s.wait_for(failed, msg="no node: Unschedulable")
        self.register_and_heartbeat(s, "fits")
        s.wait_for(lambda: not self.taints(s, "fits"), msg="node usable")

    def test_scheduler_backs_off_a_failed_pod(self):
        s = self.start("--scheduler", "--node-monitor-period", "0", "--pod-initial-backoff", "60",
                       "--pod-max-backoff", "60")
        self.scheduled_after_a_node_comes(s)
        # the node fits, but the pod's backoff (a minute) is not over
        time.sleep(3)
        self.assertFalse(s.get(PODS + "/waits").json()["spec"].get("nodeName"))

    def test_scheduler_binds_once_the_backoff_is_over(self):
        s = self.start("--scheduler", "--node-monitor-period", "0", "--pod-initial-backoff", "2",
                       "--pod-max-backoff", "4")
        self.scheduled_after_a_node_comes(s)
        s.wait_for(lambda: s.get(PODS + "/waits").json()["spec"].get("nodeName") == "fits", timeout=30,
                   msg="bound after the backoff")


if __name__ == "__main__":
    main()
