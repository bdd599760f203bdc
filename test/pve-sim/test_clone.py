"""pve-sim clones: UPIDs and tasks, nextid, the clone lock, unnamed-then-named
resources, linked vs full vs target rules, full-clone storage lock timeouts."""

import threading
import time
import urllib.parse

from simtest import UPID_RE, Sim, SimCase, main, wait_until


def resource(sim, vmid):
    for r in sim.ok(sim.get("/cluster/resources", type="vm")):
        if r["vmid"] == vmid:
            return r
    return None


class Clone(SimCase):
    sim_args = ("--stats-seconds", "600", "--pools", "kube")

    def test_upid_and_task_lifecycle(self):
        upid = self.sim.clone(110, wait=False, name="t110")
        m = UPID_RE.match(upid)
        self.assertTrue(m, upid)
        self.assertEqual((m.group(1), m.group(6), m.group(7), m.group(8)),
                         ("pve1", "qmclone", "9000", "carpenter@pve!carpenter"))
        st = self.sim.task(upid).data
        self.assertEqual(st["status"], "running")
        self.assertNotIn("exitstatus", st)
        self.assertEqual((st["upid"], st["node"], st["type"], st["id"]),
                         (upid, "pve1", "qmclone", "9000"))
        for k in ("pid", "pstart", "starttime"):
            self.assertIsInstance(st[k], int)
        self.assertEqual(int(m.group(3), 16), st["pid"])
        done = self.sim.wait_task(upid)
        self.assertEqual(done["exitstatus"], "OK")
        log = self.sim.get("/nodes/pve1/tasks/%s/log" % urllib.parse.quote(upid, safe=""))
        self.assertEqual(log.json["total"], len(log.data))
        self.assertEqual(log.data[-1]["t"], "TASK OK")
        self.assertEqual(log.data[0]["n"], 1)
        # a task is only known on its own node
        r = self.sim.get("/nodes/pve2/tasks/%s/status" % urllib.parse.quote(upid, safe=""))
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["errors"], {"upid": "no such task"})
        r = self.sim.get("/nodes/pve1/tasks/UPID:garbage/status")
        self.assertEqual(r.json["errors"], {"upid": "unable to parse worker upid"})
        lst = self.sim.ok(self.sim.get("/nodes/pve1/tasks", vmid="9000"))
        self.assertIn(upid, [t["upid"] for t in lst])

    def test_nextid_reserves_nothing(self):
        a = self.sim.ok(self.sim.get("/cluster/nextid"))
        b = self.sim.ok(self.sim.get("/cluster/nextid"))
        self.assertEqual(a, b)
        self.assertIsInstance(a, str)
        self.assertEqual(self.sim.ok(self.sim.get("/cluster/nextid", vmid="4000")), "4000")
        r = self.sim.get("/cluster/nextid", vmid="9000")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["errors"], {"vmid": "VM 9000 already exists"})
        # two callers that both trust nextid collide on the clone, not on nextid
        n = int(a)
        self.sim.clone(n, wait=False)
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid=str(n))
        self.assertEqual((r.status, r.reason),
                         (500, "unable to create VM %d: config file already exists" % n))
        self.assertNotEqual(self.sim.ok(self.sim.get("/cluster/nextid")), a)

    def test_clone_lock_and_unnamed_then_named(self):
        upid = self.sim.clone(120, wait=False, name="named-120", description="uid=x")
        r = resource(self.sim, 120)
        self.assertEqual(r["status"], "unknown")
        self.assertNotIn("name", r)
        self.assertEqual(r["lock"], "clone")
        conf = self.sim.ok(self.sim.get("/nodes/pve1/qemu/120/config"))
        self.assertEqual(set(conf), {"lock", "digest"})
        r = self.sim.put("/nodes/pve1/qemu/120/config", cores="4")
        self.assertEqual((r.status, r.reason), (500, "VM is locked (clone)"))
        r = self.sim.post("/nodes/pve1/qemu/120/config", cores="4")
        self.assertEqual((r.status, r.reason), (500, "VM is locked (clone)"))
        self.sim.wait_task(upid)
        conf = self.sim.ok(self.sim.get("/nodes/pve1/qemu/120/config"))
        self.assertNotIn("lock", conf)
        self.assertEqual((conf["name"], conf["description"]), ("named-120", "uid=x"))
        # pvestatd has not pushed yet: still no name in /cluster/resources
        r = resource(self.sim, 120)
        self.assertNotIn("name", r)
        self.assertEqual(r["status"], "unknown")
        live = [v for v in self.sim.ok(self.sim.get("/nodes/pve1/qemu")) if v["vmid"] == 120]
        self.assertEqual(live[0]["name"], "named-120")   # qemu list is live
        self.sim.tick()
        r = resource(self.sim, 120)
        self.assertEqual((r["name"], r["status"]), ("named-120", "stopped"))

    def test_linked_and_full_disks(self):
        self.sim.clone(130)
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/130/config"))
        t = self.sim.ok(self.sim.get("/nodes/pve1/qemu/9000/config"))
        self.assertTrue(c["scsi0"].startswith("local-lvm:base-9000-disk-0/vm-130-disk-0,"), c)
        self.assertEqual(c["ide0"], "local-lvm:vm-130-cloudinit,media=cdrom")
        self.assertEqual(c["name"], "Copy-of-VM-ubuntu")
        self.assertNotIn("template", c)
        self.assertNotEqual(c["net0"], t["net0"])
        self.assertNotEqual(c["smbios1"], t["smbios1"])
        self.assertNotEqual(c["vmgenid"], t["vmgenid"])
        self.sim.clone(131, full="1", storage="local-lvm")
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/131/config"))
        self.assertTrue(c["scsi0"].startswith("local-lvm:vm-131-disk-0,"), c)

    def test_linked_clone_rules(self):
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="140", storage="local-lvm")
        self.assertEqual((r.status, r.reason),
                         (500, "parameter 'storage' not allowed for linked clones"))
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="140", full="0", format="qcow2")
        self.assertEqual((r.status, r.reason),
                         (500, "parameter 'format' not allowed for linked clones"))
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="140", full="1", storage="local")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["errors"], {"storage": "storage 'local' does not support vm "
                                                       "images"})
        self.sim.clone(141)
        r = self.sim.post("/nodes/pve1/qemu/141/clone", newid="142", full="0")
        self.assertEqual(r.status, 500)
        self.assertTrue(r.reason.startswith("Linked clone feature is not supported for"), r)
        self.sim.clone(142, src=141)   # a plain VM is always fully cloned

    def test_target_rules(self):
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="150", target="pve2")
        self.assertEqual((r.status, r.reason),
                         (500, "can't clone VM to node 'pve2' (VM uses local storage)"))
        r = self.sim.post("/nodes/pve1/qemu/9001/clone", newid="150", target="pve2", full="1",
                          storage="local-lvm")
        self.assertEqual((r.status, r.reason), (500, "can't clone to non-shared storage "
                                                     "'local-lvm'"))
        upid = self.sim.clone(150, src=9001, target="pve3", wait=False)
        self.assertEqual(resource(self.sim, 150)["node"], "pve1")   # runs on the source
        self.sim.wait_task(upid)
        self.assertEqual(resource(self.sim, 150)["node"], "pve3")
        self.assertEqual(self.sim.get("/nodes/pve3/qemu/150/config").status, 200)
        r = self.sim.get("/nodes/pve1/qemu/150/config")
        self.assertEqual((r.status, r.reason),
                         (500, "Configuration file 'nodes/pve1/qemu-server/150.conf' does not "
                               "exist"))
        c = self.sim.ok(self.sim.get("/nodes/pve3/qemu/150/config"))
        self.assertTrue(c["scsi0"].startswith("ceph:base-9001-disk-0/vm-150-disk-0"), c)
        # the wrong node for the source
        r = self.sim.post("/nodes/pve2/qemu/9000/clone", newid="151")
        self.assertEqual(r.reason, "Configuration file 'nodes/pve2/qemu-server/9000.conf' does "
                                   "not exist")

    def test_pool(self):
        self.sim.clone(160, pool="kube")
        self.assertEqual(resource(self.sim, 160)["pool"], "kube")
        pools = self.sim.ok(self.sim.get("/pools"))
        self.assertEqual(pools, [{"poolid": "kube"}])
        p = self.sim.ok(self.sim.get("/pools", poolid="kube"))
        self.assertIn(160, [m["vmid"] for m in p[0]["members"]])
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="161", pool="nope")
        self.assertEqual((r.status, r.reason),
                         (403, "Permission check failed (pool 'nope' does not exist)"))


class CloneLocks(SimCase):
    sim_args = ("--clone-seconds", "4", "--flock-timeout", "0.5")

    def test_flock_held_by_running_clone(self):
        upid = self.sim.clone(170, wait=False)
        for r, what in ((self.sim.post("/nodes/pve1/qemu/170/status/start"), "start"),
                        (self.sim.put("/nodes/pve1/qemu/170/resize", disk="scsi0",
                                      size="+1G"), "resize"),
                        (self.sim.delete("/nodes/pve1/qemu/170"), "delete")):
            t = self.sim.run_task(r, expect=None)
            self.assertEqual(t["exitstatus"], "can't lock file '/var/lock/qemu-server/"
                                              "lock-170.conf' - got timeout", what)
        self.assertEqual(self.sim.wait_task(upid)["exitstatus"], "OK")
        self.assertEqual(self.sim.vm(170)["lock"], None)

    def test_flock_wait_then_success(self):
        # a start queued behind a clone that ends within the flock timeout succeeds
        sim = Sim("--clone-seconds", "0.4", "--flock-timeout", "3")
        try:
            upid = sim.clone(171, wait=False)
            t = sim.run_task(sim.post("/nodes/pve1/qemu/171/status/start"))
            self.assertEqual(t["exitstatus"], "OK")
            self.assertEqual(sim.wait_task(upid)["exitstatus"], "OK")
            self.assertEqual(sim.ok(sim.get("/nodes/pve1/qemu/171/status/current"))["status"],
                             "running")
        finally:
            sim.close()

    def test_stale_clone_lock(self):
        # the host dies mid-clone: the config keeps lock=clone, nothing holds the flock
        upid = self.sim.clone(172, node="pve1", wait=False)
        self.sim.ctl("POST", "/hosts/pve1/offline")
        self.sim.ctl("POST", "/hosts/pve1/online")
        self.assertEqual(self.sim.task(upid).data["exitstatus"], "unexpected status")
        self.assertEqual(self.sim.vm(172)["lock"], "clone")
        r = self.sim.put("/nodes/pve1/qemu/172/config", cores="2")
        self.assertEqual((r.status, r.reason), (500, "VM is locked (clone)"))
        for r in (self.sim.post("/nodes/pve1/qemu/172/status/start"),
                  self.sim.put("/nodes/pve1/qemu/172/resize", disk="scsi0", size="+1G"),
                  self.sim.delete("/nodes/pve1/qemu/172")):
            self.assertEqual(self.sim.run_task(r, expect=None)["exitstatus"],
                             "VM is locked (clone)")
        r = self.sim.delete("/nodes/pve1/qemu/172", skiplock="1")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["errors"], {"skiplock": "Only root may use this option."})
        r = self.sim.post("/nodes/pve1/qemu/9000/clone", newid="172")
        self.assertEqual(r.reason, "unable to create VM 172: config file already exists")


class FullCloneStorageLocks(SimCase):
    sim_args = ("--max-full-clones", "2", "--full-clone-seconds", "1.5",
                "--storage-lock-seconds", "0.2")

    def _burst(self, src, ids, **params):
        upids = {}
        for i in ids:
            r = self.sim.post("/nodes/pve1/qemu/%d/clone" % src, newid=str(i), **params)
            self.assertEqual(r.status, 200, r)
            upids[i] = r.data
        return {i: self.sim.wait_task(u)["exitstatus"] for i, u in upids.items()}

    def test_local_lvm_lock_timeouts(self):
        res = self._burst(9000, range(180, 185), full="1")
        ok = [i for i, s in res.items() if s == "OK"]
        bad = [s for s in res.values() if s != "OK"]
        self.assertEqual(len(ok), 2, res)
        self.assertEqual(set(bad), {"clone failed: can't lock file '/var/lock/pve-manager/"
                                    "pve-storage-local-lvm' - got timeout"})
        vms = {v["vmid"] for v in self.sim.ctl("GET", "/vms")}
        self.assertEqual(vms & set(range(180, 185)), set(ok))   # failed clones leave nothing
        vols = [v for v in self.sim.ctl("GET", "/storage")
                if v["vmid"] in set(range(180, 185)) - set(ok)]
        self.assertEqual(vols, [])

    def test_shared_storage_cfs_lock(self):
        res = self._burst(9001, range(190, 194), full="1")
        bad = {s for s in res.values() if s != "OK"}
        self.assertEqual(bad, {"clone failed: cfs-lock 'storage-ceph' error: got lock request "
                                "timeout"})

    def test_linked_clones_do_not_contend(self):
        res = self._burst(9000, range(195, 200))
        self.assertEqual(set(res.values()), {"OK"})


if __name__ == "__main__":
    main()
