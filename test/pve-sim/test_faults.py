"""pve-sim faults, one flag each: failed clones, hung tasks (and stopping
them), 500s before and after acting, slow answers, hosts going offline
(crash and partition; clones onto an offline host), HA node maintenance
(in /cluster/resources and /cluster/ha/status/current, with and without
PVE 8.3's node hastate), quorum loss, and the token without privileges."""

import time
import urllib.parse

from simtest import Sim, SimCase, main, wait_until


class FailClone(SimCase):
    sim_args = ("--fail-clone-fraction", "1")

    def test_failed_clone_leaves_nothing(self):
        upid = self.sim.clone(400, wait=False)
        self.assertEqual(self.sim.vm(400)["lock"], "clone")
        t = self.sim.wait_task(upid)
        self.assertTrue(t["exitstatus"].startswith("clone failed: "), t)
        self.assertNotIn(400, [v["vmid"] for v in self.sim.ctl("GET", "/vms")])
        self.assertEqual([v for v in self.sim.ctl("GET", "/storage") if v["vmid"] == 400], [])
        self.assertEqual(self.sim.ctl("GET", "/stats")["clones_failed"], 1)
        # the VMID is free again
        self.assertEqual(self.sim.ok(self.sim.get("/cluster/nextid", vmid="400")), "400")


class HangTasks(SimCase):
    sim_args = ("--hang-tasks-fraction", "1", "--hang-task-types", "qmclone")

    def test_hung_clone_and_stop(self):
        upid = self.sim.clone(410, wait=False)
        time.sleep(1.0)   # > --clone-seconds
        self.assertEqual(self.sim.task(upid).data["status"], "running")
        self.assertEqual(self.sim.vm(410)["lock"], "clone")
        q = urllib.parse.quote(upid, safe="")
        r = self.sim.delete("/nodes/pve1/tasks/" + q)
        self.assertEqual((r.status, r.data), (200, None))
        t = self.sim.wait_task(upid)
        self.assertEqual(t["exitstatus"], "clone failed: interrupted by signal")
        self.assertNotIn(410, [v["vmid"] for v in self.sim.ctl("GET", "/vms")])
        # other task types are not hung by this run's flags
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/9000/config", description="x"))


class Fault500(SimCase):
    def test_500_before_and_after(self):
        self.sim.ctl("POST", "/faults", {"fault_500": 1})
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="420")
        self.assertEqual((r.status, r.reason, r.raw), (500, "pve-sim injected fault",
                                                       '{"data":null}'))
        self.assertNotIn(420, [v["vmid"] for v in self.sim.ctl("GET", "/vms")])
        self.sim.ctl("POST", "/faults", {"fault_500": 0, "fault_500_after": 1,
                                         "fault_methods": ["POST"]})
        self.assertEqual(self.sim.get("/version").status, 200)   # GET not affected
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="420")
        self.assertEqual(r.status, 500)
        # the clone happened anyway: a retry must adopt it, not make a second VM
        self.assertEqual(self.sim.vm(420)["vmid"], 420)
        self.sim.ctl("POST", "/faults", {"fault_500_after": 0})
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="420")
        self.assertEqual(r.reason, "unable to create VM 420: config file already exists")
        st = self.sim.ctl("GET", "/stats")
        self.assertEqual((st["fault_500"], st["fault_500_after"]), (1, 1))

    def test_delay(self):
        self.sim.ctl("POST", "/faults", {"delay_ms": 400})
        try:
            t0 = time.monotonic()
            self.assertEqual(self.sim.get("/version").status, 200)
            self.assertGreaterEqual(time.monotonic() - t0, 0.39)
        finally:
            self.sim.ctl("POST", "/faults", {"delay_ms": 0})

    def test_flags_at_startup(self):
        sim = Sim("--fault-500", "1", "--delay-ms", "200", "--fault-500-message",
                  "proxy loop detected")
        try:
            t0 = time.monotonic()
            r = sim.get("/cluster/resources")
            self.assertEqual((r.status, r.reason), (500, "proxy loop detected"))
            self.assertGreaterEqual(time.monotonic() - t0, 0.19)
        finally:
            sim.close()


class HostOffline(SimCase):
    sim_args = ("--stats-seconds", "600", "--host-offline", "pve3")

    def test_offline_flag_at_start(self):
        r = self.sim.get("/nodes/pve3/qemu")
        self.assertEqual((r.status, r.reason, r.raw), (595, "No route to host", ""))
        nodes = {n["node"]: n for n in self.sim.ok(self.sim.get("/nodes"))}
        self.assertEqual(nodes["pve3"]["status"], "offline")
        self.assertEqual(nodes["pve1"]["status"], "online")

    def test_crash_and_return(self):
        self.sim.clone(430, src=9001, target="pve2")
        self.sim.clone(431, src=9001, target="pve2")
        self.sim.ok(self.sim.put("/nodes/pve2/qemu/431/config", onboot="1"))
        for vmid in (430, 431):
            self.sim.run_task(self.sim.post("/nodes/pve2/qemu/%d/status/start" % vmid))
        self.sim.tick()
        self.sim.ctl("POST", "/hosts/pve2/offline")
        self.addCleanup(self.sim.ctl, "POST", "/hosts/pve2/online")
        for path in ("/nodes/pve2/qemu/430/status/current", "/nodes/pve2/qemu/430/config"):
            self.assertEqual(self.sim.get(path).status, 595)
        r = self.sim.post("/nodes/pve2/qemu/430/status/stop")
        self.assertEqual(r.status, 595)
        self.sim.tick()
        res = {x.get("vmid") or x.get("node"): x
               for x in self.sim.ok(self.sim.get("/cluster/resources"))
               if x["type"] in ("qemu", "node")}
        self.assertEqual(res["pve2"]["status"], "offline")
        self.assertNotIn("mem", res["pve2"])
        self.assertEqual(res[430]["status"], "unknown")
        self.assertEqual(self.sim.vm(430)["status"], "stopped")   # the host died
        self.sim.ctl("POST", "/hosts/pve2/online")
        wait_until(lambda: self.sim.vm(431)["status"] == "running", what="onboot start")
        self.assertEqual(self.sim.vm(430)["status"], "stopped")
        self.assertEqual(self.sim.ok(self.sim.get("/nodes/pve2/qemu/430/status/current"))
                         ["status"], "stopped")

    def test_partition_keeps_vms(self):
        self.sim.clone(432, src=9001, target="pve2")
        self.sim.run_task(self.sim.post("/nodes/pve2/qemu/432/status/start"))
        self.sim.ctl("POST", "/hosts/pve2/offline?mode=partition")
        self.assertEqual(self.sim.get("/nodes/pve2/qemu").status, 595)
        self.assertEqual(self.sim.vm(432)["status"], "running")
        wait_until(lambda: self.sim.vm(432)["guest"] and self.sim.vm(432)["guest"]["paused"],
                   what="guest paused")
        self.sim.ctl("POST", "/hosts/pve2/online")
        self.assertFalse(self.sim.vm(432)["guest"]["paused"])
        self.sim.run_task(self.sim.post("/nodes/pve2/qemu/432/status/stop"))

    def test_quorum_loss(self):
        self.sim.ctl("POST", "/hosts/pve2/offline")
        try:
            r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="433")
            self.assertEqual((r.status, r.reason), (500, "cluster not ready - no quorum?"))
            cs = self.sim.ok(self.sim.get("/cluster/status"))
            self.assertEqual(cs[0]["quorate"], 0)
        finally:
            self.sim.ctl("POST", "/hosts/pve2/online")


class OfflineClone(SimCase):
    """Where a clone onto an offline host fails, as qemu-server has it:
    the clone call itself is proxied to the source's node (595 when that is
    down), a target is only checked to be a cluster member
    (check_node_exists), so the VM lands there and its start is what fails."""

    def test_clone_onto_offline_host(self):
        self.sim.ctl("POST", "/hosts/pve3/offline")
        self.addCleanup(self.sim.ctl, "POST", "/hosts/pve3/online")
        # A per-host template on pve3: the call cannot reach pve3.
        r = self.sim.post("/nodes/pve3/qemu/9000/clone", newid="440")
        self.assertEqual((r.status, r.reason), (595, "No route to host"))
        self.assertNotIn(440, [v["vmid"] for v in self.sim.ctl("GET", "/vms")])
        # A shared template cloned from pve1 with target pve3: accepted.
        self.sim.clone(441, src=9001, target="pve3")
        self.assertEqual(self.sim.vm(441)["node"], "pve3")
        r = self.sim.post("/nodes/pve3/qemu/441/status/start")
        self.assertEqual(r.status, 595)
        self.sim.ctl("POST", "/hosts/pve3/online")
        self.sim.run_task(self.sim.post("/nodes/pve3/qemu/441/status/start"))
        self.sim.run_task(self.sim.post("/nodes/pve3/qemu/441/status/stop"))
        self.sim.run_task(self.sim.delete("/nodes/pve3/qemu/441"))


def ha_entries(sim, kind):
    return [e for e in sim.ok(sim.get("/cluster/ha/status/current"))
            if e["type"] == kind]


def node_hastate(sim):
    return {e["node"]: e.get("hastate")
            for e in sim.ok(sim.get("/cluster/resources", type="node"))}


class Maintenance(SimCase):
    def test_maintenance_on_and_off(self):
        # HA never used: no node status anywhere, only the quorum entry.
        self.assertEqual(node_hastate(self.sim),
                         {"pve1": None, "pve2": None, "pve3": None})
        self.assertEqual([e["type"] for e in self.sim.ok(
            self.sim.get("/cluster/ha/status/current"))], ["quorum"])
        out = self.sim.ctl("POST", "/hosts/pve2/maintenance?enable=1")
        self.addCleanup(self.sim.ctl, "POST", "/hosts/pve2/maintenance?enable=0")
        self.assertEqual(out, {"host": "pve2", "maintenance": True})
        self.assertEqual(node_hastate(self.sim),
                         {"pve1": "online", "pve2": "maintenance", "pve3": "online"})
        lrm = {e["node"]: e for e in ha_entries(self.sim, "lrm")}
        self.assertEqual(sorted(lrm), ["pve1", "pve2", "pve3"])
        self.assertTrue(lrm["pve2"]["status"].startswith("pve2 (maintenance mode, "),
                        lrm["pve2"])
        self.assertTrue(lrm["pve1"]["status"].startswith("pve1 (idle, "), lrm["pve1"])
        self.assertEqual(lrm["pve2"]["id"], "lrm:pve2")
        self.assertEqual(len(ha_entries(self.sim, "master")), 1)
        # /nodes has no HA state; the host still takes clones and starts.
        self.assertNotIn("hastate", self.sim.ok(self.sim.get("/nodes"))[0])
        self.sim.clone(450, src=9001, target="pve2")
        self.sim.run_task(self.sim.post("/nodes/pve2/qemu/450/status/start"))
        self.sim.run_task(self.sim.post("/nodes/pve2/qemu/450/status/stop"))
        self.sim.run_task(self.sim.delete("/nodes/pve2/qemu/450"))
        # Enabling twice, or disabling a node not in maintenance, is ignored
        # by the CRM.
        out = self.sim.ctl("POST", "/hosts/pve2/maintenance?enable=1")
        self.assertIn("already in maintenance", out["ignored"])
        out = self.sim.ctl("POST", "/hosts/pve3/maintenance?enable=0")
        self.assertIn("not in maintenance", out["ignored"])
        # Down while in maintenance: still in maintenance (the LRM's mode).
        self.sim.ctl("POST", "/hosts/pve2/offline")
        self.assertEqual(node_hastate(self.sim)["pve2"], "maintenance")
        self.sim.ctl("POST", "/hosts/pve2/online")
        self.assertEqual(self.sim.ctl("POST", "/hosts/pve2/maintenance?enable=0"),
                         {"host": "pve2", "maintenance": False})
        self.assertEqual(node_hastate(self.sim)["pve2"], "online")
        lrm = {e["node"]: e for e in ha_entries(self.sim, "lrm")}
        self.assertNotIn("maintenance", lrm["pve2"]["status"])
        # Not online: the CRM refuses to start maintenance.
        self.sim.ctl("POST", "/hosts/pve3/offline")
        try:
            out = self.sim.ctl("POST", "/hosts/pve3/maintenance?enable=1")
            self.assertIn("node not online", out["ignored"])
            self.assertFalse(out["maintenance"])
            self.assertEqual(node_hastate(self.sim)["pve3"], "unknown")
            lrm = {e["node"]: e for e in ha_entries(self.sim, "lrm")}
            self.assertIn("old timestamp - dead?", lrm["pve3"]["status"])
        finally:
            self.sim.ctl("POST", "/hosts/pve3/online")
        self.assertEqual(self.sim.ctl("POST", "/hosts/pve9/maintenance"),
                         {"error": "no host pve9"})
        self.assertIn("error", self.sim.ctl("POST", "/hosts/pve1/maintenance?enable=yes"))

    def test_needs_sys_audit(self):
        r = self.sim.api("GET", "/cluster/ha/status/current", token=self.sim.noperm)
        self.assertEqual(r.status, 403)


class MaintenanceOldPve(SimCase):
    """PVE before 8.3: maintenance shows only in the HA status; PVE 9's lrm
    status text names the watchdog too."""
    sim_args = ("--no-node-hastate", "--pve-version", "9",
                "--host-maintenance", "pve3")

    def test_only_in_ha_status(self):
        self.assertEqual(node_hastate(self.sim),
                         {"pve1": None, "pve2": None, "pve3": None})
        lrm = {e["node"]: e["status"] for e in ha_entries(self.sim, "lrm")}
        self.assertTrue(lrm["pve3"].startswith("pve3 (maintenance mode, watchdog standby, "),
                        lrm["pve3"])
        self.assertTrue(lrm["pve1"].startswith("pve1 (idle, watchdog standby, "), lrm["pve1"])


class NoPermToken(SimCase):
    def call(self, method, path, **params):
        return self.sim.api(method, path, params or None, token=self.sim.noperm)

    def test_lists_are_empty(self):
        self.assertEqual(self.call("GET", "/cluster/resources").data, [])
        self.assertEqual(self.call("GET", "/nodes/pve1/qemu").data, [])
        self.assertEqual(self.call("GET", "/pools").data, [])
        self.assertEqual(self.call("GET", "/access/permissions").data, {})
        self.assertEqual(self.call("GET", "/nodes/pve1/storage").data, [])
        nodes = self.call("GET", "/nodes").data
        self.assertEqual([n["node"] for n in nodes], ["pve1", "pve2", "pve3"])
        self.assertNotIn("maxmem", nodes[0])
        self.assertEqual(self.call("GET", "/version").status, 200)
        self.assertEqual(self.call("GET", "/cluster/nextid").status, 200)
        perms = self.sim.ok(self.sim.get("/access/permissions"))
        self.assertIn("VM.Clone", perms["/"])

    def test_actions_are_403(self):
        r = self.call("POST", "/nodes/pve1/qemu/9000/clone", newid="440")
        self.assertEqual((r.status, r.reason),
                         (403, "Permission check failed (/vms/9000, VM.Clone)"))
        r = self.call("GET", "/nodes/pve1/qemu/9000/config")
        self.assertEqual((r.status, r.reason),
                         (403, "Permission check failed (/vms/9000, VM.Audit)"))
        r = self.call("GET", "/cluster/status")
        self.assertEqual(r.status, 403)


if __name__ == "__main__":
    main()
