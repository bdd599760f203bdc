#!/usr/bin/env python3
"""Writes a kube-sim preload file (JSON lines) with N nodes and M pods
shaped like a real cluster: Deployments' pods (owner references, app and
pod-template-hash labels, requests, a toleration or two, some with
topology spread or anti-affinity), DaemonSet pods on every node, status
with conditions. Deterministic for a given seed.

usage: gen_cluster.py --nodes 5000 --pods 150000 --out FILE [--seed 1]"""
import argparse
import json
import random
import uuid


def pod(i, d, node, rnd, ts):
    """Pod i of Deployment d (Running on node), as the API server shows it."""
    ns = "team-%d" % (d % 40)
    app = "app-%d" % d
    spec = {"containers": [{"name": "main", "image": "registry.local/%s:1.%d" % (app, d % 7),
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "%dm" % (100 * (1 + d % 5)),
                                                       "memory": "%dMi" % (128 * (1 + d % 6))},
                                          "limits": {"memory": "%dMi" % (256 * (1 + d % 6))}},
                            "env": [{"name": "APP", "value": app}],
                            "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets"}]}],
            "nodeName": node, "schedulerName": "default-scheduler",
            "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}]}
    if d % 5 == 1:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": {"app": app}}}]
    if d % 5 == 2:
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                "labelSelector": {"matchLabels": {"app": app}}}}]}}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "%s-7d9f8c6b5-%05d" % (app, i), "namespace": ns,
                     "uid": str(uuid.UUID(int=rnd.getrandbits(128))),
                     "creationTimestamp": ts,
                     "labels": {"app": app, "pod-template-hash": "7d9f8c6b5"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": "%s-7d9f8c6b5" % app,
                                          "uid": "00000000-0000-0000-0000-%012d" % d,
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": spec,
        "status": {"phase": "Running", "podIP": "10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255, i & 255),
                   "hostIP": "192.168.1.10", "startTime": ts, "qosClass": "Burstable",
                   "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts},
                                  {"type": "Initialized", "status": "True", "lastTransitionTime": ts},
                                  {"type": "ContainersReady", "status": "True", "lastTransitionTime": ts},
                                  {"type": "Ready", "status": "True", "lastTransitionTime": ts}],
                   "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                          "image": "registry.local/%s:1.%d" % (app, d % 7),
                                          "imageID": "sha256:%064x" % d,
                                          "containerID": "containerd://%064x" % i,
                                          "started": True,
                                          "state": {"running": {"startedAt": ts}}}]}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    ts = "2026-11-22T10:00:00Z"
    zones = ["pve%d" % i for i in range(1, 6)]
    with open(a.out, "w") as f:
        nodes = []
        for i in range(a.nodes):
            name = "node-%05d" % i
            zone = zones[i % len(zones)]
            nodes.append(name)
            f.write(json.dumps({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": str(uuid.UUID(int=rnd.getrandbits(128))),
                             "creationTimestamp": ts,
                             "labels": {"kubernetes.io/hostname": name,
                                        "kubernetes.io/arch": "amd64",
                                        "kubernetes.io/os": "linux",
                                        "topology.kubernetes.io/zone": zone,
                                        "topology.kubernetes.io/region": "pve",
                                        "node.kubernetes.io/instance-type": "s1.8VCPU-32GB",
                                        "karpenter.sh/nodepool": "default",
                                        "karpenter.sh/registered": "true"}},
                "spec": {"providerID": "proxmox://pve/%d" % (1000 + i)},
                "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                           "allocatable": {"cpu": "7800m", "memory": "31Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True",
                                           "lastHeartbeatTime": ts, "lastTransitionTime": ts,
                                           "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
                           "nodeInfo": {"kubeletVersion": "v1.31.0+k3s1", "osImage": "Debian GNU/Linux 12",
                                        "architecture": "amd64", "operatingSystem": "linux"}}}) + "\n")
        deployments = max(1, a.pods // 30)
        for i in range(a.pods):
            d = i % deployments
            node = nodes[rnd.randrange(len(nodes))] if nodes else ""
            f.write(json.dumps(pod(i, d, node, rnd, ts)) + "\n")


if __name__ == "__main__":
    main()
