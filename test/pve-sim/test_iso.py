"""pve-sim cloud-init ISOs: upload (multipart), content list/delete, ide2
attach rules, ISO 9660 parsing (Rock Ridge, Joliet, plain, mangled names) and
what the booted guest makes of user-data; smbios1 identity."""

import base64
import urllib.parse

import isobuild
from simtest import SimCase, main, wait_until

USER_DATA = b"""#cloud-config
write_files:
  - path: /etc/rancher/k3s/config.yaml
    content: |
      node-label:
        - karpenter.sh/nodepool=default
        - node.kubernetes.io/instance-type=m1.large
      node-taint:
        - "dedicated=infra:NoSchedule"
      kubelet-arg:
        - "provider-id=proxmox://lab/%d"
runcmd:
  - curl -sfL https://get.k3s.io | INSTALL_K3S_EXEC="agent --node-label team=a" sh -
"""


def b64(s):
    return base64.b64encode(s.encode()).decode()


class Iso(SimCase):
    def upload(self, name, data, node="pve1", storage="local", content="iso", **extra):
        fields = dict(content=content, **extra)
        body, ctype = isobuild.multipart(fields, "filename", name, data)
        r = self.sim.raw("POST", "/api2/json/nodes/%s/storage/%s/upload" % (node, storage),
                         body, {"Content-Type": ctype})
        return r

    def boot(self, vmid, iso=None, names="rockridge", label="cidata", ud=None, md=None,
             node="pve1", **conf):
        self.sim.clone(vmid, name="guest-%d" % vmid)
        if iso is None and ud is not None:
            img = isobuild.build({"user-data": ud, "meta-data": md or b"instance-id: i\n",
                                  "network-config": b"version: 2\n"}, label=label, names=names)
            iso = "user-data-%d.iso" % vmid
            self.sim.run_task(self.upload(iso, img, node=node))
        if iso:
            conf["ide2"] = "local:iso/%s,media=cdrom" % iso
        if conf:
            self.sim.ok(self.sim.put("/nodes/pve1/qemu/%d/config" % vmid, **conf))
        self.sim.run_task(self.sim.post("/nodes/pve1/qemu/%d/status/start" % vmid))
        def guest():
            g = self.sim.vm(vmid)["guest"]
            return g if g and g.get("node") else None
        return wait_until(guest, what="guest %d" % vmid)

    def test_upload_list_delete(self):
        img = isobuild.build({"user-data": b"#cloud-config\n", "meta-data": b"{}\n"})
        r = self.upload("user-data-300.iso", img)
        self.assertEqual(r.status, 200, r)
        self.assertRegex(r.data, r"^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8,9}:[0-9A-F]{8}:imgcopy::")
        self.sim.run_task(r)
        lst = self.sim.ok(self.sim.get("/nodes/pve1/storage/local/content", content="iso"))
        e = [x for x in lst if x["volid"] == "local:iso/user-data-300.iso"]
        self.assertEqual((e[0]["size"], e[0]["format"], e[0]["content"]), (len(img), "iso", "iso"))
        self.assertEqual(self.sim.ok(self.sim.get("/nodes/pve3/storage/local/content")), [])
        r = self.sim.delete("/nodes/pve1/storage/local/content/" +
                            urllib.parse.quote("local:iso/user-data-300.iso", safe=""))
        self.sim.run_task(r)
        lst = self.sim.ok(self.sim.get("/nodes/pve1/storage/local/content"))
        self.assertNotIn("local:iso/user-data-300.iso", [x["volid"] for x in lst])
        r = self.sim.delete("/nodes/pve1/storage/local/content/local:iso/user-data-300.iso")
        self.assertEqual((r.status, r.reason),
                         (500, "volume 'local:iso/user-data-300.iso' does not exist"))

    def test_upload_validation(self):
        img = isobuild.build({"user-data": b"x", "meta-data": b"y"})
        r = self.upload("seed.txt", img)
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["errors"], {"filename": "wrong file extension"})
        r = self.upload("seed.iso", img, content="images")
        self.assertEqual(r.status, 400)
        self.assertIn("content", r.json["errors"])
        r = self.upload("seed.iso", img, storage="local-lvm")
        self.assertEqual((r.status, r.reason),
                         (500, "storage 'local-lvm' does not support 'iso' content"))
        r = self.upload("seed.iso", img, checksum="00", **{"checksum-algorithm": "sha256"})
        self.assertEqual(r.status, 500)
        self.assertTrue(r.reason.startswith("checksum mismatch: got '"), r)
        r = self.upload("seed.iso", img, checksum="00")
        self.assertEqual(r.json["errors"]["checksum-algorithm"],
                         "missing property - 'checksum' requires this property")

    def test_attach_rules(self):
        self.sim.clone(310)
        r = self.sim.put("/nodes/pve1/qemu/310/config", ide2="local:iso/x.iso")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["errors"], {"ide2": "explicit 'media=cdrom' is required for iso "
                                                    "images"})
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/310/config",
                                 ide2="local:iso/missing.iso,media=cdrom"))
        c = self.sim.ok(self.sim.get("/nodes/pve1/qemu/310/config"))
        self.assertEqual(c["boot"], "order=scsi0;ide2")   # new CD drives join the boot order
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/310/status/start"), expect=None)
        self.assertEqual(t["exitstatus"], "volume 'local:iso/missing.iso' does not exist")

    def test_iso_on_other_node_is_missing(self):
        img = isobuild.build({"user-data": b"#cloud-config\n", "meta-data": b"{}\n"})
        self.sim.run_task(self.upload("elsewhere.iso", img, node="pve2"))
        self.sim.clone(311)
        self.sim.ok(self.sim.put("/nodes/pve1/qemu/311/config",
                                 ide2="local:iso/elsewhere.iso,media=cdrom"))
        t = self.sim.run_task(self.sim.post("/nodes/pve1/qemu/311/status/start"), expect=None)
        self.assertEqual(t["exitstatus"], "volume 'local:iso/elsewhere.iso' does not exist")

    def test_user_data_rockridge(self):
        g = self.boot(320, ud=USER_DATA % 320,
                      smbios1="uuid=6f8c0c21-6f0e-4b2f-9c2a-0c9d27b1a320,serial=%s,sku=%s,"
                              "base64=1" % (b64("proxmox://lab/320"), b64("m1.large")))
        node = g["node"]
        self.assertEqual(node["metadata"]["name"], "guest-320")
        self.assertEqual(node["spec"]["providerID"], "proxmox://lab/320")
        self.assertEqual(g["meta"]["provider_id_source"], "kubelet-arg")
        labels = node["metadata"]["labels"]
        self.assertEqual(labels["karpenter.sh/nodepool"], "default")
        self.assertEqual(labels["team"], "a")
        self.assertEqual(labels["node.kubernetes.io/instance-type"], "m1.large")
        self.assertEqual(labels["kubernetes.io/hostname"], "guest-320")
        self.assertEqual(node["spec"]["taints"], [
            {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
            {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])
        self.assertEqual(node["status"]["nodeInfo"]["systemUUID"],
                         "6f8c0c21-6f0e-4b2f-9c2a-0c9d27b1a320")
        self.assertEqual(g["meta"]["user_data_source"], "iso local:iso/user-data-320.iso")

    def test_user_data_joliet_and_plain(self):
        for vmid, names in ((321, "joliet"), (322, "plain")):
            g = self.boot(vmid, ud=b"node-label:\n  - via=%s\n" % names.encode(), names=names)
            self.assertEqual(g["node"]["metadata"]["labels"]["via"], names)

    def test_mangled_names_and_wrong_label_are_ignored(self):
        g = self.boot(323, ud=b"node-label: [x=y]\n", names="mangled")
        self.assertNotIn("x", g["node"]["metadata"]["labels"])
        self.assertTrue(any("no file 'user-data'" in n for n in g["notes"]), g["notes"])
        g = self.boot(324, ud=b"node-label: [x=y]\n", label="config-2")
        self.assertNotIn("x", g["node"]["metadata"]["labels"])
        self.assertTrue(any("is not cidata" in n for n in g["notes"]), g["notes"])

    def test_identity_without_user_data(self):
        g = self.boot(325, cores="3", memory="3072",
                      smbios1="uuid=6f8c0c21-6f0e-4b2f-9c2a-0c9d27b1a325,serial=%s,base64=1"
                              % b64("proxmox://lab/325"))
        node = g["node"]
        self.assertEqual(node["spec"]["providerID"], "proxmox://lab/325")
        self.assertEqual(g["meta"]["provider_id_source"], "smbios1 serial")
        cap, alloc = node["status"]["capacity"], node["status"]["allocatable"]
        self.assertEqual((cap["cpu"], cap["memory"], cap["pods"]), ("3", "3145728Ki", "110"))
        self.assertEqual(cap["ephemeral-storage"], "20971520Ki")
        self.assertEqual((alloc["cpu"], alloc["memory"]), ("3", "3043328Ki"))
        self.assertEqual(alloc["ephemeral-storage"], str(int(20 * (1 << 30) * 0.9)))
        self.assertNotIn("node.kubernetes.io/instance-type", node["metadata"]["labels"])
        g = self.boot(326)
        self.assertEqual(g["node"]["spec"]["providerID"], "proxmox://lab/326")
        self.assertEqual(g["node"]["spec"]["taints"],
                         [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])

    def test_cicustom_snippet(self):
        c = self.sim.conn()
        c.request("POST", "/_sim/storage/pve1/local/snippets/ud-327.yaml",
                  body=b"#cloud-config\nhostname: from-snippet\nnode-label: [s=1]\n")
        c.getresponse().read()
        c.close()
        g = self.boot(327, cicustom="user=local:snippets/ud-327.yaml")
        self.assertEqual(g["node"]["metadata"]["name"], "from-snippet")
        self.assertEqual(g["node"]["metadata"]["labels"]["s"], "1")


if __name__ == "__main__":
    main()
