"""pve-sim resource mappings and passed-through devices: the /cluster/mapping
API (list, get, create with a repeated map parameter, update, delete, its
errors and privileges), hostpciN / usbN validation and permissions, devices
handed out at start (one per map entry, busy ones refused with qemu-server's
texts, q35 needed for pcie=1, freed when the VM stops), and what a guest's
Node reports for them."""

import json
import urllib.parse

from simtest import Sim, SimCase, main, wait_until


class Mappings(SimCase):
    sim_args = ("--pci-mapping", "gpu=pve1:2,pve2:1",
                "--pci-mapping", "nic=pve3:1@8086:1572",
                "--usb-mapping", "zigbee=pve2:1")

    def test_list_and_get(self):
        pci = {m["id"]: m for m in self.sim.ok(self.sim.get("/cluster/mapping/pci"))}
        self.assertEqual(sorted(pci), ["gpu", "nic"])
        self.assertEqual(len(pci["gpu"]["map"]), 3)
        self.assertIn("node=pve1,path=0000:01:00.0,id=10de:2684", pci["gpu"]["map"][0])
        self.assertIn("node=pve3,path=0000:01:00.0,id=8086:1572", pci["nic"]["map"][0])
        usb = self.sim.ok(self.sim.get("/cluster/mapping/usb"))
        self.assertEqual([(m["id"], m["map"]) for m in usb],
                         [("zigbee", ["node=pve2,path=1-1,id=10c4:ea60"])])
        g = self.sim.ok(self.sim.get("/cluster/mapping/pci/gpu"))
        self.assertEqual(len(g["map"]), 3)
        r = self.sim.get("/cluster/mapping/pci/nosuch")
        self.assertEqual((r.status, r.reason), (500, "mapping 'nosuch' not found"))
        idx = self.sim.ok(self.sim.get("/cluster/mapping"))
        self.assertEqual(sorted(x["name"] for x in idx), ["dir", "pci", "usb"])

    def test_noperm_token_sees_nothing(self):
        r = self.sim.api("GET", "/cluster/mapping/pci", token=self.sim.noperm)
        self.assertEqual((r.status, r.data), (200, []))
        r = self.sim.api("GET", "/cluster/mapping/pci/gpu", token=self.sim.noperm)
        self.assertEqual(r.status, 403)

    def test_create_update_delete(self):
        # map is an array parameter: a form repeats the key
        body = urllib.parse.urlencode([("id", "tpu"), ("map", "node=pve1,path=0000:09:00.0,"
                                                              "id=1ae0:0001"),
                                       ("map", "node=pve2,path=0000:09:00.0,id=1ae0:0001")])
        r = self.sim.raw("POST", "/api2/json/cluster/mapping/pci", body,
                         {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(self.sim.ok(self.sim.get("/cluster/mapping/pci/tpu"))["map"]), 2)
        r = self.sim.post("/cluster/mapping/pci", id="tpu", map="node=pve1,path=0000:0a:00.0,"
                                                               "id=1ae0:0001")
        self.assertEqual((r.status, r.reason),
                         (500, "create hardware mapping failed: pci ID 'tpu' already defined"))
        r = self.sim.post("/cluster/mapping/pci", id="bad", map="node=pve1,path=zz,id=1ae0:0001")
        self.assertEqual(r.status, 400)
        self.assertIn("map[0]", r.json["errors"])
        r = self.sim.put("/cluster/mapping/pci/tpu", description="three TPUs")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.sim.ok(self.sim.get("/cluster/mapping/pci/tpu"))["description"],
                         "three TPUs")
        r = self.sim.put("/cluster/mapping/pci/nosuch", description="x")
        self.assertEqual(r.reason, "update hardware mapping failed: pci ID 'nosuch' does not "
                                   "exist")
        self.assertEqual(self.sim.delete("/cluster/mapping/pci/tpu").status, 200)
        self.assertEqual(self.sim.get("/cluster/mapping/pci/tpu").status, 500)


class Passthrough(SimCase):
    sim_args = ("--pci-mapping", "gpu=pve1:2,pve2:1", "--usb-mapping", "zigbee=pve1:1",
                "--device-resource", "10c4:ea60=example.com/zigbee")

    def config(self, vmid, **kv):
        return self.sim.put("/nodes/pve1/qemu/%d/config" % vmid, **kv)

    def start(self, vmid, node="pve1"):
        r = self.sim.post("/nodes/%s/qemu/%d/status/start" % (node, vmid))
        self.assertEqual(r.status, 200, r)
        return self.sim.wait_task(r.data)

    def stop(self, vmid, node="pve1"):
        r = self.sim.post("/nodes/%s/qemu/%d/status/stop" % (node, vmid))
        self.sim.run_task(r)

    def test_validation_and_permissions(self):
        self.sim.clone(300, name="perm")
        r = self.config(300, hostpci0="mapping=gpu,pcie=maybe")
        self.assertEqual(r.status, 400)
        self.assertIn("hostpci0", r.json["errors"])
        r = self.config(300, hostpci0="0000:01:00.0")
        self.assertEqual(r.reason, "only root can set 'hostpci0' config for non-mapped devices")
        r = self.config(300, hostpci0="pcie=1")
        self.assertEqual(r.reason, "either 'host' or 'mapping' must be set.")
        r = self.config(300, usb0="host=10c4:ea60")
        self.assertEqual(r.reason, "only root can set 'usb0' config for real devices")
        self.assertEqual(self.config(300, hostpci0="mapping=gpu,pcie=1", machine="q35",
                                     usb0="mapping=zigbee").status, 200)

    def test_privileges_of_a_token(self):
        sim = Sim("--pci-mapping", "gpu=pve1:1",
                  "--token-privs", "VM.Audit,VM.Clone,VM.Allocate,Datastore.AllocateSpace,"
                                   "Sys.Audit,VM.Config.HWType")
        try:
            sim.clone(300, name="noperm")
            r = sim.put("/nodes/pve1/qemu/300/config", hostpci0="mapping=gpu")
            self.assertEqual((r.status, r.reason),
                             (403, "Permission check failed (/mapping/pci/gpu, Mapping.Use)"))
            self.assertEqual(sim.ok(sim.get("/cluster/mapping/pci")), [])
        finally:
            sim.close()

    def test_devices_at_start(self):
        s = self.sim
        for vmid in (310, 311, 312):
            s.clone(vmid, name="gpu%d" % vmid)
        self.assertEqual(self.config(310, hostpci0="mapping=gpu,pcie=1", machine="q35",
                                     balloon="0").status, 200)
        self.assertEqual(self.config(311, hostpci0="mapping=gpu,pcie=1",
                                     machine="pc-q35-8.1").status, 200)
        self.assertEqual(self.config(312, hostpci0="mapping=gpu,pcie=1").status, 200)
        # pcie=1 without q35 fails at start, as qemu-server does
        t = self.start(312)
        self.assertIn("q35 machine model is not enabled", t["exitstatus"])
        self.assertEqual(self.config(312, machine="q35").status, 200)
        self.assertEqual(self.start(310)["exitstatus"], "OK")
        self.assertEqual(self.start(311)["exitstatus"], "OK")
        # two entries on pve1, both held now
        t = self.start(312)
        self.assertEqual(t["exitstatus"], "could not find a free device for 'hostpci0'")
        held = {(d["path"], d["vmid"]) for d in s.ctl("GET", "/devices")
                if d["mapping"] == "gpu" and d["node"] == "pve1"}
        self.assertEqual(held, {("0000:01:00.0", 310), ("0000:02:00.0", 311)})
        self.assertEqual(s.vm(310)["devices"][0]["mapping"], "gpu")
        # a stopped VM holds nothing
        self.stop(310)
        self.assertEqual(self.start(312)["exitstatus"], "OK")
        self.assertEqual(s.vm(312)["devices"][0]["path"], "0000:01:00.0")
        for vmid in (311, 312):
            self.stop(vmid)

    def test_single_entry_in_use_and_raw_devices(self):
        s = self.sim
        # root may pass the raw device that is pve2's only gpu entry
        s.clone(320, src=9001, name="raw", target="pve2")
        s.clone(321, src=9001, name="mapped", target="pve2")
        pve2 = "/nodes/pve2/qemu/%d/config"
        r = s.raw("PUT", "/api2/json" + pve2 % 320, "hostpci0=0000%3A01%3A00.0",
                  {"Content-Type": "application/x-www-form-urlencoded",
                   "Authorization": "PVEAPIToken=" + s.token})
        self.assertEqual(r.reason, "only root can set 'hostpci0' config for non-mapped devices")
        self.assertEqual(s.put(pve2 % 321, hostpci0="mapping=gpu").status, 200)
        self.assertEqual(self.start(321, "pve2")["exitstatus"], "OK")
        s.clone(322, src=9001, name="second", target="pve2")
        self.assertEqual(s.put(pve2 % 322, hostpci0="mapping=gpu").status, 200)
        t = self.start(322, "pve2")
        self.assertEqual(t["exitstatus"],
                         "PCI device '0000:01:00.0' already in use by VMID '321'")
        self.stop(321, "pve2")
        r = s.put(pve2 % 322, hostpci0="mapping=zigbee")
        self.assertEqual(r.status, 200)
        t = self.start(322, "pve2")
        self.assertEqual(t["exitstatus"], "PCI device mapping not found for 'zigbee'")

    def test_guest_reports_device_resources(self):
        s = self.sim
        s.clone(330, name="guest")
        self.assertEqual(self.config(330, hostpci0="mapping=gpu,pcie=1", machine="q35",
                                     usb0="mapping=zigbee").status, 200)
        self.assertEqual(self.start(330)["exitstatus"], "OK")
        node = wait_until(lambda: (s.vm(330).get("guest") or {}).get("node"), timeout=20,
                          what="guest node")
        cap = node["status"]["capacity"]
        self.assertEqual((cap.get("nvidia.com/gpu"), cap.get("example.com/zigbee")), ("1", "1"))
        self.assertEqual(node["status"]["allocatable"]["nvidia.com/gpu"], "1")
        self.stop(330)


class Flags(SimCase):
    def test_bad_flags(self):
        for args in (("--pci-mapping", "gpu=pve9:1"), ("--pci-mapping", "gpu"),
                     ("--usb-mapping", "x=pve1:one"), ("--device-resource", "10de=gpu")):
            try:
                Sim(*args)
            except RuntimeError as e:
                self.assertIn("pve-sim: error", str(e), args)
            else:
                self.fail("accepted %r" % (args,))


if __name__ == "__main__":
    main()
