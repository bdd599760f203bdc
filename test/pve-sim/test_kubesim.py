"""pve-sim guests against the real hack/kube-sim: the Node registers with the
providerID from smbios1, carries the unregistered taint, its Lease is renewed,
and renewals stop when the VM stops.  Skipped (with a message) while
hack/kube-sim does not exist yet."""

import base64
import json
import os
import re
import subprocess
import time
import unittest

from simtest import KUBESIM, Sim, main, scratch, wait_until


def kube_sim_cmd(tmp):
    """Start command for kube-sim, found from its --help."""
    helptext = subprocess.run([KUBESIM, "--help"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=30).stdout
    kc = os.path.join(tmp, "kubeconfig")
    cmd = [KUBESIM]
    if "--listen" in helptext:
        cmd += ["--listen", "127.0.0.1:0"]
    for flag in ("--kubeconfig-out", "--write-kubeconfig", "--kubeconfig"):
        if flag in helptext:
            cmd += [flag, kc]
            break
    else:
        return None, None
    if "--kubelet" in helptext:
        cmd += ["--kubelet"]
    if "--tls" in helptext:
        cmd += ["--tls"]     # kubectl sends no bearer token over plain http
    return cmd, kc


class KubeSim(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = scratch.mkdtemp("pve-kube-")
        cmd, cls.kubeconfig = kube_sim_cmd(cls.tmp)
        if cmd is None:
            raise RuntimeError("hack/kube-sim --help shows no kubeconfig output flag")
        cls.kout = open(os.path.join(cls.tmp, "kube-sim.out"), "w+")
        cls.kproc = subprocess.Popen(cmd, stdout=cls.kout, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            with open(cls.kout.name) as f:
                text = f.read()
            if re.search(r"ready\s+\S+", text) and os.path.exists(cls.kubeconfig):
                break
            if cls.kproc.poll() is not None or time.monotonic() > deadline:
                cls.kproc.kill()
                raise RuntimeError("kube-sim did not start: %r" % text)
            time.sleep(0.1)
        cls.sim = Sim("--kubeconfig", cls.kubeconfig, "--heartbeat-seconds", "0.5")

    @classmethod
    def tearDownClass(cls):
        cls.sim.close()
        cls.kproc.terminate()
        try:
            cls.kproc.wait(5)
        except subprocess.TimeoutExpired:
            cls.kproc.kill()
            cls.kproc.wait()
        cls.kout.close()

    def kubectl(self, *args):
        r = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=30)
        return r.returncode, r.stdout, r.stderr

    def get(self, *args):
        rc, out, err = self.kubectl("get", *args, "-o", "json")
        return json.loads(out) if rc == 0 else None

    def test_node_registration_and_heartbeats(self):
        serial = base64.b64encode(b"proxmox://lab/600").decode()
        self.sim.clone(600, name="ks-600")
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/600/config",
                                 smbios1="uuid=6f8c0c21-6f0e-4b2f-9c2a-0c9d27b1a600,serial=%s,"
                                         "base64=1" % serial))
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/600/status/start"))
        node = wait_until(lambda: self.get("node", "ks-600"), timeout=20, what="Node ks-600")
        self.assertEqual(node["spec"]["providerID"], "proxmox://lab/600")
        self.assertIn({"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                      node["spec"].get("taints", []))
        lease = wait_until(lambda: self.get("lease", "-n", "kube-node-lease", "ks-600"),
                           timeout=20, what="Lease ks-600")
        t1 = lease["spec"]["renewTime"]
        wait_until(lambda: self.get("lease", "-n", "kube-node-lease", "ks-600")["spec"]
                   ["renewTime"] != t1, timeout=10, what="lease renewal")
        g = self.sim.vm(600)["guest"]
        self.assertTrue(g["registered"], g)
        self.assertIsNone(g["last_error"], g)
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/600/status/stop"))
        time.sleep(1.0)
        t2 = self.get("lease", "-n", "kube-node-lease", "ks-600")["spec"]["renewTime"]
        time.sleep(1.5)
        t3 = self.get("lease", "-n", "kube-node-lease", "ks-600")["spec"]["renewTime"]
        self.assertEqual(t2, t3)
        self.assertIsNotNone(self.get("node", "ks-600"))


if __name__ == "__main__":
    main()
