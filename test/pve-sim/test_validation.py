"""pve-sim parameter validation against apidata.js: 400 "Parameter
verification failed." with the errors map PVE sends."""

import urllib.parse

from simtest import SimCase, main

NOT_DEFINED = ("property is not defined in schema and the schema does not allow additional "
               "properties")
SSH_KEY = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
           " carpenter@test")


class Validation(SimCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sim.clone(200, name="val")

    def bad(self, r, errors):
        self.assertEqual((r.status, r.reason), (400, "Parameter verification failed."), r)
        self.assertEqual(r.json["data"], None)
        self.assertEqual(r.json["errors"], errors)

    def test_bad_vmid(self):
        self.bad(self.sim.get("/nodes/pve1/qemu/abc/config"),
                 {"vmid": "type check ('integer') failed - got 'abc'"})
        self.bad(self.sim.get("/nodes/pve1/qemu/99/config"),
                 {"vmid": "invalid format - value does not look like a valid VM ID\n"})
        self.bad(self.sim.get("/cluster/nextid", vmid="1000000000"),
                 {"vmid": "invalid format - value does not look like a valid VM ID\n"})
        self.bad(self.sim.post("/nodes/pve1/qemu/9000/clone", newid="x1"),
                 {"newid": "type check ('integer') failed - got 'x1'"})

    def test_unknown_parameter(self):
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", cores="2", foo="1"),
                 {"foo": NOT_DEFINED})
        self.bad(self.sim.get("/cluster/resources", type="vm", bogus="1"), {"bogus": NOT_DEFINED})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", net40="virtio,bridge=vmbr0"),
                 {"net40": NOT_DEFINED})

    def test_missing_required(self):
        self.bad(self.sim.post("/nodes/pve1/qemu/9000/clone", name="x"),
                 {"newid": "property is missing and it is not optional"})

    def test_booleans_are_0_or_1(self):
        self.bad(self.sim.post("/nodes/pve1/qemu/9000/clone", newid="201", full="true"),
                 {"full": "type check ('boolean') failed - got 'true'"})

    def test_enum_and_range(self):
        self.bad(self.sim.get("/cluster/resources", type="vms"),
                 {"type": "value 'vms' does not have a value in the enumeration "
                          "'vm, storage, node, sdn'"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", cores="0"),
                 {"cores": "value must have a minimum value of 1"})
        self.bad(self.sim.post("/nodes/pve1/qemu/200/config", cores="2", background_delay="31"),
                 {"background_delay": "value must have a maximum value of 30"})

    def test_sshkeys_raw_plus_rejected(self):
        # a '+' where the urlencoded format wants %20/%2B
        raw = SSH_KEY.replace(" ", "+")
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", sshkeys=raw),
                 {"sshkeys": "invalid format - invalid urlencoded string: %s\n" % raw})

    def test_sshkeys_double_encoding_accepted_and_stored_encoded(self):
        once = urllib.parse.quote(SSH_KEY, safe="")
        r = self.sim.put("/nodes/pve1/qemu/200/config", sshkeys=once)   # form-encoded again
        self.assertEqual(r.status, 200, r)
        conf = self.sim.ok(self.sim.get("/nodes/pve1/qemu/200/config"))
        self.assertEqual(conf["sshkeys"], once)
        self.assertEqual(urllib.parse.unquote(conf["sshkeys"]), SSH_KEY)
        req = [x for x in self.sim.requests() if x.get("params", {}).get("sshkeys") == once]
        self.assertTrue(req, "request log keeps the decoded form parameter")

    def test_sshkeys_invalid_key_is_500(self):
        r = self.sim.put("/nodes/pve1/qemu/200/config",
                         sshkeys=urllib.parse.quote("ssh-rsa notbase64!", safe=""))
        self.assertEqual((r.status, r.reason), (500, "SSH public key validation error"))

    def test_property_strings(self):
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", net0="bridge=vmbr0"),
                 {"net0": "invalid format - format error\nnet0.model: property is missing and "
                          "it is not optional\n"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", net0="virtio,bridge=vmbr0,foo=1"),
                 {"net0": "invalid format - invalid key in comma-separated list property: foo\n"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", smbios1="serial=proxmox://lab/1"),
                 {"smbios1": "invalid format - format error\nsmbios1.serial: value does not "
                             "match the regex pattern\n"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", ipconfig0="ip=10.0.0.5/33"),
                 {"ipconfig0": "invalid format - format error\nipconfig0.ip: invalid format - "
                               "value does not look like a valid ipv4 network configuration\n\n"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", memory="current=8"),
                 {"memory": "invalid format - format error\nmemory.current: value must have a "
                            "minimum value of 16\n"})

    def test_names_tags_nameserver(self):
        self.bad(self.sim.post("/nodes/pve1/qemu/9000/clone", newid="202", name="bad_name"),
                 {"name": "invalid format - value does not look like a valid DNS name\n"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", tags="ok;bad tag!"),
                 {"tags": "invalid format - invalid characters in tag\n"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", nameserver="1.1.1.1 no_pe"),
                 {"nameserver": "invalid format - value does not look like a valid address: "
                                "no_pe\n"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/config", delete="scsi0,Not-An_ID!"),
                 {"delete": "invalid format - invalid configuration ID 'Not-An_ID!'\n"})

    def test_valid_values_pass(self):
        r = self.sim.put("/nodes/pve1/qemu/200/config", tags="carpenter;pool-a",
                         ipconfig0="ip=dhcp", nameserver="1.1.1.1 8.8.8.8",
                         smbios1="uuid=6f8c0c21-6f0e-4b2f-9c2a-0c9d27b1a001,"
                                 "serial=cHJveG1veDovL2xhYi8yMDA=,sku=bTEubGFyZ2U=,base64=1",
                         agent="enabled=1,fstrim_cloned_disks=1", onboot="1",
                         net0="virtio,bridge=vmbr0,firewall=1,queues=2", balloon="0",
                         ciuser="ubuntu", description="uid=abc\nline two")
        self.assertEqual(r.status, 200, r)
        conf = self.sim.ok(self.sim.get("/nodes/pve1/qemu/200/config"))
        self.assertEqual(conf["tags"], "carpenter;pool-a")
        self.assertRegex(conf["net0"], r"^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0,")
        self.assertEqual(conf["description"], "uid=abc\nline two")

    def test_duplicate_uri_parameter(self):
        r = self.sim.get("/nodes/pve1/qemu/200/config", vmid="200")
        self.bad(r, {"vmid": "duplicate parameter (already defined in URI)"})

    def test_resize_size_pattern(self):
        self.bad(self.sim.put("/nodes/pve1/qemu/200/resize", disk="scsi0", size="10GB"),
                 {"size": "value does not match the regex pattern"})
        self.bad(self.sim.put("/nodes/pve1/qemu/200/resize", disk="scsi99", size="+1G"),
                 {"disk": self.sim.put("/nodes/pve1/qemu/200/resize", disk="scsi99",
                                       size="+1G").json["errors"]["disk"]})

    def test_every_logged_failure_has_errors(self):
        for rec in self.sim.requests():
            if rec["status"] == 400:
                self.assertTrue(rec.get("errors"), rec)


if __name__ == "__main__":
    main()
