"""pve-sim VM lifecycle: config get/set, pending changes, resize, start/stop/
shutdown, status/current, delete rules (running, protection, HA + purge),
host capacity accounting."""

import time

from simtest import SimCase, main, wait_until

GiB = 1 << 30


class Config(SimCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sim.clone(200, name="cfg")
        cls.sim.clone(201, name="cfg2")

    def test_set_and_get(self):
        r = self.sim.put("/nodes/pve1/qemu/200/config", cores="4", memory="8192",
                         sockets="1", ciuser="ubuntu", ipconfig0="ip=10.1.2.3/24,gw=10.1.2.1",
                         nameserver="10.1.2.1", onboot="1", agent="1", cicustom="user=local:"
                         "snippets/ud.yaml", cipassword="secret")
        self.assertEqual((r.status, r.data), (200, None))
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/200/config"))
        self.assertEqual((c["cores"], c["memory"], c["onboot"], c["ipconfig0"]),
                         (4, "8192", 1, "ip=10.1.2.3/24,gw=10.1.2.1"))
        self.assertEqual(c["cipassword"], "**********")
        self.assertEqual(c["cicustom"], "user=local:snippets/ud.yaml")

    def test_async_config_task_and_warnings(self):
        r = self.sim.post("/nodes/pve1/qemu/201/config", tags="a;b;A", description="d")
        t = self.sim.run_task(r)
        self.assertRegex(r.data, r":qmconfig:201:")
        self.assertEqual(self.sim.vm(201)["tags"], "a;b")   # unique, case-insensitive
        r = self.sim.post("/nodes/pve1/qemu/201/config", delete="ide2")
        t = self.sim.run_task(r, expect="WARNINGS: 1")    # deleting an unset key warns
        r = self.sim.post("/nodes/pve1/qemu/201/config", description="x", background_delay="5")
        self.assertEqual((r.status, r.data), (200, None))   # done within the delay

    def test_errors(self):
        r = self.sim.put("/nodes/pve1/qemu/200/config")
        self.assertEqual((r.status, r.reason), (500, "no options specified"))
        r = self.sim.put("/nodes/pve1/qemu/200/config", cores="2", digest="0" * 40)
        self.assertEqual((r.status, r.reason),
                         (500, "checksum mismatch (file change by other user?)"))
        r = self.sim.put("/nodes/pve1/qemu/200/config", memory="1024", balloon="2048")
        self.assertEqual((r.status, r.reason),
                         (500, "balloon value too large (must be smaller than assigned memory)"))
        r = self.sim.put("/nodes/pve1/qemu/200/config", args="-foo")
        self.assertEqual((r.status, r.reason), (500, "only root can set 'args' config"))
        r = self.sim.put("/nodes/pve1/qemu/200/config", delete="nosuchkey")
        self.assertEqual(r.status, 400)
        r = self.sim.put("/nodes/pve1/qemu/200/config", cores="2", delete="cores")
        self.assertEqual(r.json["errors"], {"delete": "you can't use '-cores' and -delete "
                                                      "cores' at the same time"})
        r = self.sim.put("/nodes/pve1/qemu/200/config", boot="order=scsi0;virtio9")
        self.assertEqual((r.status, r.reason),
                         (500, "invalid bootorder: device 'virtio9' does not exist'"))
        r = self.sim.put("/nodes/pve2/qemu/200/config", cores="2")
        self.assertEqual(r.reason, "Configuration file 'nodes/pve2/qemu-server/200.conf' does "
                                   "not exist")
        good = self.sim.ok(self.sim.get("/nodes/pve1/qemu/200/config"))["digest"]
        self.assertEqual(self.sim.put("/nodes/pve1/qemu/200/config", cores="2",
                                      digest=good).status, 200)

    def test_new_disk_and_delete_to_unused(self):
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/201/config", scsi1="local-lvm:4"))
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/201/config"))
        self.assertEqual(c["scsi1"], "local-lvm:vm-201-disk-1,size=4G")
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/201/config", delete="scsi1"))
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/201/config"))
        self.assertEqual(c["unused0"], "local-lvm:vm-201-disk-1")
        r = self.sim.put("/nodes/pve1/qemu/201/config", scsi2="local:4")
        self.assertEqual(r.json["errors"], {"storage": "storage 'local' does not support vm "
                                                       "images"})

    def test_resize(self):
        r = self.sim.put("/nodes/pve1/qemu/200/resize", disk="scsi0", size="+10G")
        self.assertRegex(r.data, r":resize:200:")
        self.sim.run_task(r)
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/200/config"))
        self.assertIn("size=30G", c["scsi0"])
        self.sim.run_task(self.sim.put("/nodes/pve1/qemu/200/resize", disk="scsi0", size="30G"))
        for size, disk, err in (("10G", "scsi0", "shrinking disks is not supported"),
                                ("+1G", "scsi5", "disk 'scsi5' does not exist"),
                                ("+1G", "ide0", "you can't resize a cdrom")):
            t = self.sim.run_task(self.sim.put("/nodes/pve1/qemu/200/resize", disk=disk,
                                               size=size), expect=None)
            self.assertEqual(t["exitstatus"], err)


class Power(SimCase):
    def test_start_stop_status(self):
        self.sim.clone(210, name="pw")
        st = self.sim.ok(self.sim.get("/nodes/pve1/qemu/210/status/current"))
        self.assertEqual((st["status"], st["vmid"], st["name"]), ("stopped", 210, "pw"))
        self.assertEqual(st["ha"], {"managed": 0})
        r = self.sim.post("/nodes/pve1/qemu/210/status/start")
        self.assertRegex(r.data, r":qmstart:210:carpenter@pve!carpenter:$")
        self.sim.run_task(r)
        st = self.sim.ok(self.sim.get("/nodes/pve1/qemu/210/status/current"))
        self.assertEqual((st["status"], st["qmpstatus"]), ("running", "running"))
        self.assertIsInstance(st["pid"], int)
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/start"), expect=None)
        self.assertEqual(t["exitstatus"], "VM 210 already running")
        r = self.sim.delete("/nodes/pve1/qemu/210")
        self.assertEqual((r.status, r.reason), (500, "VM 210 is running - destroy failed"))
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/stop"))
        self.assertEqual(self.sim.vm(210)["status"], "stopped")
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/stop"))  # no-op, OK
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/start"))
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/shutdown"))
        self.assertEqual(self.sim.vm(210)["status"], "stopped")
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/start"))
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/shutdown",
                                            timeout="0"), expect=None)
        self.assertEqual(t["exitstatus"], "VM quit/powerdown failed - got timeout")
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/210/status/shutdown", timeout="0",
                                        forceStop="1"))
        self.assertEqual(self.sim.vm(210)["status"], "stopped")

    def test_start_errors(self):
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/9000/status/start"), expect=None)
        self.assertEqual(t["exitstatus"], "you can't start a vm if it's a template")
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/999/status/start"), expect=None)
        self.assertEqual(t["exitstatus"], "Configuration file 'nodes/pve1/qemu-server/999.conf'"
                                          " does not exist")
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/999/status/stop"), expect=None)
        self.assertEqual(t["exitstatus"],
                         "unable to find configuration file for VM 999 on node 'pve1'")

    def test_pending_on_running_vm(self):
        self.sim.clone(211)
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/211/status/start"))
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/211/config", cores="4", tags="x"))
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/211/config"))
        cur = self.sim.ok(self.sim.get("/nodes/pve1/qemu/211/config", current="1"))
        self.assertEqual((c["cores"], cur["cores"], cur["tags"]), (4, 2, "x"))
        pend = {p["key"]: p for p in self.sim.ok(self.sim.get("/nodes/pve1/qemu/211/pending"))}
        self.assertEqual((pend["cores"]["value"], pend["cores"]["pending"]), (2, 4))
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/211/status/stop"))
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/211/status/start"))
        cur = self.sim.ok(self.sim.get("/nodes/pve1/qemu/211/config", current="1"))
        self.assertEqual(cur["cores"], 4)
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/211/status/stop"))


class Delete(SimCase):
    def test_delete_and_volumes(self):
        self.sim.clone(220)
        vols = [v for v in self.sim.ctl("GET", "/storage") if v["vmid"] == 220]
        self.assertEqual(len(vols), 2)
        r = self.sim.delete("/nodes/pve1/qemu/220")
        self.assertRegex(r.data, r":qmdestroy:220:")
        self.sim.run_task(r)
        self.assertEqual(self.sim.get("/nodes/pve1/qemu/220/config").status, 500)
        self.assertEqual([v for v in self.sim.ctl("GET", "/storage") if v["vmid"] == 220], [])
        r = self.sim.delete("/nodes/pve1/qemu/220")
        self.assertEqual(r.reason, "Configuration file 'nodes/pve1/qemu-server/220.conf' does "
                                   "not exist")

    def test_protection(self):
        self.sim.clone(221)
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/221/config", protection="1"))
        r = self.sim.delete("/nodes/pve1/qemu/221")
        self.assertEqual((r.status, r.reason),
                         (500, "can't remove VM 221 - protection mode enabled"))

    def test_ha_needs_purge(self):
        self.sim.clone(222)
        self.sim.ctl("POST", "/vms/222/ha?managed=1")
        r = self.sim.post("/nodes/pve1/qemu/222/status/start")
        self.assertRegex(r.data, r":hastart:222:")
        self.sim.run_task(r)
        wait_until(lambda: self.sim.vm(222)["status"] == "running", what="HA start")
        st = self.sim.ok(self.sim.get("/nodes/pve1/qemu/222/status/current"))
        self.assertEqual(st["ha"]["managed"], 1)
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/222/status/stop"))
        wait_until(lambda: self.sim.vm(222)["status"] == "stopped", what="HA stop")
        r = self.sim.delete("/nodes/pve1/qemu/222")
        self.assertEqual((r.status, r.reason),
                         (500, "unable to remove VM 222 - used in HA resources and purge "
                               "parameter not set."))
        t = self.sim.run_task(self.sim.delete("/nodes/pve1/qemu/222", purge="1"))
        self.assertEqual(self.sim.task(self.sim.ctl("GET", "/tasks")[-1]["upid"]).status, 200)
        self.assertNotIn(222, [v["vmid"] for v in self.sim.ctl("GET", "/vms")])

    def test_unreferenced_disks(self):
        # disks that only carry the VMID (left over by a crash, say)
        for vmid in (223, 224):
            self.sim.clone(vmid)
            self.sim.ctl("POST", "/storage/pve1/local-lvm/images/vm-%d-disk-7?vmid=%d&size=1024"
                         % (vmid, vmid))
        self.sim.run_task(self.sim.delete("/nodes/pve1/qemu/223"))
        left = [v["volid"] for v in self.sim.ctl("GET", "/storage") if v["vmid"] == 223]
        self.assertEqual(left, ["local-lvm:vm-223-disk-7"])
        self.sim.run_task(self.sim.delete("/nodes/pve1/qemu/224",
                                          **{"destroy-unreferenced-disks": "1"}))
        self.assertEqual([v for v in self.sim.ctl("GET", "/storage") if v["vmid"] == 224], [])


class Capacity(SimCase):
    sim_args = ("--stats-seconds", "600")

    def node(self, name):
        self.sim.tick()
        for n in self.sim.ok(self.sim.get("/nodes")):
            if n["node"] == name:
                return n

    def test_accounting(self):
        n = self.node("pve1")
        self.assertEqual((n["maxcpu"], n["maxmem"], n["status"]), (16, 64 * GiB, "online"))
        base = n["mem"]
        res = [r for r in self.sim.ok(self.sim.get("/cluster/resources", type="node"))
               if r["node"] == "pve1"][0]
        self.assertEqual((res["maxcpu"], res["maxmem"], res["mem"]), (16, 64 * GiB, base))
        self.sim.clone(230)
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/230/config", memory="8192", cores="4"))
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/230/status/start"))
        self.assertEqual(self.node("pve1")["mem"], base + 8 * GiB)
        live = self.sim.ok(self.sim.get("/nodes/pve1/status"))["memory"]
        self.assertEqual(live["used"], base + 8 * GiB)
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/230/status/stop"))
        self.assertEqual(self.node("pve1")["mem"], base)

    def test_start_beyond_capacity(self):
        self.sim.clone(231)
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/231/config", memory=str(80 * 1024)))
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/231/status/start"), expect=None)
        self.assertEqual(t["exitstatus"], "start failed: QEMU exited with code 1")
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/231/config", memory="1024", cores="17"))
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/231/status/start"), expect=None)
        self.assertEqual(t["exitstatus"], "MAX 16 vcpus allowed per VM on this node")


if __name__ == "__main__":
    main()
