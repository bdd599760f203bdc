"""pve-sim guests against a tiny fake Kubernetes API: Node registration
(providerID from smbios1 serial, capacity, taint, labels), Lease heartbeats,
Ready status, and heartbeats stopping when the VM stops or its host dies."""

import base64
import http.server
import json
import os
import socketserver
import threading
import time

from simtest import Sim, main, scratch, wait_until
import unittest


class FakeKube:
    """Just enough of kube-apiserver for a kubelet: nodes, node status, leases."""

    def __init__(self):
        self.lock = threading.Lock()
        self.nodes = {}
        self.leases = {}
        self.log = []
        self.conns = []         # (path, client port) of each request
        self.close_every = 0    # > 0: hang up silently after every so many
        self.served = 0
        self.rv = 100
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _reply(self, code, obj):
                raw = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                if self.headers.get("Authorization") != "Bearer s3cr3t":
                    return self._reply(401, {"kind": "Status", "reason": "Unauthorized"})
                code, obj = fake.route(self.command, self.path, body,
                                       self.headers.get("Content-Type"))
                self._reply(code, obj)
                with fake.lock:
                    fake.conns.append((self.path, self.client_address[1]))
                    fake.served += 1
                    # as a server ending an idle connection: no
                    # "Connection: close", the client learns on its next send
                    if fake.close_every and fake.served % fake.close_every == 0:
                        self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = S(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.dir = scratch.mkdtemp("fake-kube-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write("""apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: "http://127.0.0.1:%d"}
users:
- name: u
  user: {token: s3cr3t}
contexts:
- name: c
  context: {cluster: fake, user: u}
current-context: c
""" % self.server.server_address[1])

    def close(self):
        self.server.shutdown()

    def route(self, method, path, body, ctype):
        with self.lock:
            self.log.append((time.monotonic(), method, path))
            self.rv += 1
            lease = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
            if method == "POST" and path == "/api/v1/nodes":
                name = body["metadata"]["name"]
                if name in self.nodes:
                    return 409, {"kind": "Status", "reason": "AlreadyExists"}
                body["metadata"]["uid"] = "uid-" + name
                body["metadata"]["resourceVersion"] = str(self.rv)
                self.nodes[name] = body
                return 201, body
            if path.startswith("/api/v1/nodes/") and path.endswith("/status"):
                name = path.split("/")[4]
                if name not in self.nodes:
                    return 404, {"kind": "Status", "reason": "NotFound"}
                if method == "PATCH":
                    self.nodes[name]["status"].update(body["status"])
                    return 200, self.nodes[name]
            if path.startswith(lease):
                name = path[len(lease) + 1:]
                if method == "GET":
                    if name in self.leases:
                        return 200, self.leases[name]
                    return 404, {"kind": "Status", "reason": "NotFound"}
                if method == "POST":
                    body["metadata"]["resourceVersion"] = str(self.rv)
                    self.leases[body["metadata"]["name"]] = body
                    return 201, body
                if method == "PUT":
                    if body["metadata"].get("resourceVersion") != \
                            self.leases[name]["metadata"]["resourceVersion"]:
                        return 409, {"kind": "Status", "reason": "Conflict"}
                    body["metadata"]["resourceVersion"] = str(self.rv)
                    self.leases[name] = body
                    return 200, body
            return 404, {"kind": "Status", "reason": "NotFound", "message": path}

    def connections(self, name):
        """The client ports that carried the requests about `name`."""
        with self.lock:
            return [port for path, port in self.conns if path.split("/")[-1] == name
                    or path.endswith("/" + name + "/status")]

    def renewals(self, name):
        with self.lock:
            return [t for t, m, p in self.log if m == "PUT" and p.endswith("/leases/" + name)]


class Guests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kube = FakeKube()
        cls.sim = Sim("--kubeconfig", cls.kube.kubeconfig, "--heartbeat-seconds", "0.2",
                      "--node-status-seconds", "1")

    @classmethod
    def tearDownClass(cls):
        cls.sim.close()
        cls.kube.close()

    def start(self, vmid, name, node="pve1", src=9000, **conf):
        if node == "pve1":
            self.sim.clone(vmid, src=src, name=name)
        else:
            self.sim.clone(vmid, src=9001, name=name, target=node)
        if conf:
            self.sim.ok(self.sim.put("/nodes/%s/qemu/%d/config" % (node, vmid), **conf))
        self.sim.run_task(self.sim.post("/nodes/%s/qemu/%d/status/start" % (node, vmid)))

    def test_register_and_heartbeat(self):
        serial = base64.b64encode(b"proxmox://lab/500").decode()
        sku = base64.b64encode(b"c1.2VCPU-4GB").decode()
        self.start(500, "nc-500", cores="2", memory="4096",
                   smbios1="uuid=6f8c0c21-6f0e-4b2f-9c2a-0c9d27b1a500,serial=%s,sku=%s,base64=1"
                           % (serial, sku))
        node = wait_until(lambda: self.kube.nodes.get("nc-500"), what="node registered")
        self.assertEqual(node["spec"]["providerID"], "proxmox://lab/500")
        self.assertIn({"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                      node["spec"]["taints"])
        self.assertEqual(node["metadata"]["labels"]["node.kubernetes.io/instance-type"],
                         "c1.2VCPU-4GB")
        self.assertEqual(node["status"]["capacity"]["cpu"], "2")
        self.assertEqual(node["status"]["capacity"]["memory"], "4194304Ki")
        wait_until(lambda: len(self.kube.renewals("nc-500")) >= 3, what="lease renewals")
        lease = self.kube.leases["nc-500"]
        self.assertEqual(lease["spec"]["holderIdentity"], "nc-500")
        self.assertEqual(lease["spec"]["leaseDurationSeconds"], 40)
        self.assertRegex(lease["spec"]["renewTime"],
                         r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        self.assertEqual(lease["metadata"]["ownerReferences"][0]["uid"], "uid-nc-500")
        ready = [c for c in self.kube.nodes["nc-500"]["status"]["conditions"]
                 if c["type"] == "Ready"][0]
        self.assertEqual(ready["status"], "True")
        # Ready is posted before the Lease is first written: kube-sim's
        # kubelet would otherwise post Ready too, for a node it does not run.
        # (The guest reads its Lease before it first creates or renews it.)
        with self.kube.lock:
            order = [(m, p) for _, m, p in self.kube.log if "nc-500" in p]
        status = order.index(("PATCH", "/api/v1/nodes/nc-500/status"))
        lease = min(i for i, (m, p) in enumerate(order) if p.endswith("/leases/nc-500"))
        self.assertLess(status, lease, order)
        g = self.sim.vm(500)["guest"]
        self.assertTrue(g["registered"])
        self.assertGreaterEqual(g["heartbeats"], 3)

    def test_heartbeats_keep_their_connections(self):
        # A kubelet keeps its connection: a TLS handshake for every renewal
        # cost kube-sim more than the renewal itself.
        self.start(504, "nc-504")
        wait_until(lambda: len(self.kube.renewals("nc-504")) >= 8, what="renewals")
        ports = self.kube.connections("nc-504")
        self.assertGreaterEqual(len(ports), 10)
        self.assertLessEqual(len(set(ports)), 4, ports)   # the guests' 4 workers

    def test_a_connection_the_server_ended_costs_no_heartbeat(self):
        self.start(505, "nc-505")
        wait_until(lambda: len(self.kube.renewals("nc-505")) >= 2, what="renewals")
        errors = self.sim.vm(505)["guest"]["last_error"]
        self.kube.close_every = 2
        try:
            n = len(self.kube.renewals("nc-505"))
            wait_until(lambda: len(self.kube.renewals("nc-505")) >= n + 6,
                       what="renewals over connections the server ends")
            ports = self.kube.connections("nc-505")
        finally:
            self.kube.close_every = 0
        self.assertEqual(self.sim.vm(505)["guest"]["last_error"], errors)
        self.assertGreater(len(set(ports)), 2)   # it did reconnect

    def test_stop_stops_heartbeats_and_keeps_node(self):
        self.start(501, "nc-501")
        wait_until(lambda: len(self.kube.renewals("nc-501")) >= 2, what="renewals")
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/501/status/stop"))
        time.sleep(0.3)
        n = len(self.kube.renewals("nc-501"))
        time.sleep(1.0)
        self.assertEqual(len(self.kube.renewals("nc-501")), n)
        self.assertIn("nc-501", self.kube.nodes)     # the sim never deletes Nodes
        # started again: AlreadyExists is fine, heartbeats resume
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/501/status/start"))
        wait_until(lambda: len(self.kube.renewals("nc-501")) > n + 1, what="resumed")

    def test_default_provider_id_and_host_crash(self):
        self.start(502, "nc-502", node="pve2")
        node = wait_until(lambda: self.kube.nodes.get("nc-502"), what="node registered")
        self.assertEqual(node["spec"]["providerID"], "proxmox://lab/502")
        wait_until(lambda: len(self.kube.renewals("nc-502")) >= 2, what="renewals")
        self.sim.ctl("POST", "/hosts/pve2/offline")
        try:
            time.sleep(0.3)
            n = len(self.kube.renewals("nc-502"))
            time.sleep(1.0)
            self.assertEqual(len(self.kube.renewals("nc-502")), n)
        finally:
            self.sim.ctl("POST", "/hosts/pve2/online")

    def test_kill_stops_heartbeats(self):
        self.start(503, "nc-503")
        wait_until(lambda: len(self.kube.renewals("nc-503")) >= 2, what="renewals")
        self.sim.ctl("POST", "/vms/503/kill")
        time.sleep(0.3)
        n = len(self.kube.renewals("nc-503"))
        time.sleep(0.8)
        self.assertEqual(len(self.kube.renewals("nc-503")), n)
        self.assertEqual(self.sim.vm(503)["status"], "stopped")


if __name__ == "__main__":
    main()
