"""The Proxmox provider against hack/pve-sim (ctest: provider_pve_sim,
label integration).

Each test class starts its own simulator (fast task timings), runs
provider_driver (a C program linking the provider) with a ProxmoxNodeClass
and a list of steps, and checks what the driver reports against the
simulator's own view (/_sim/vms, /_sim/storage, /_sim/stats). After every
test, every request Carpenter sent is validated again against apidata.js
from the request log: none may be a 400 with parameter errors, none may hit
an unimplemented route.

usage: test_provider.py PATH/TO/provider_driver
"""
import base64
import collections
import json
import os
import re
import subprocess
import sys
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("CARP_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "pve-sim"))
sys.path.insert(0, os.path.join(ROOT, "hack"))

import simtest  # noqa: E402
import scratch  # noqa: E402  (test/tools: on the path since simtest)
from pvesim.schema import Schema  # noqa: E402

DRIVER = None
SCHEMA = None
# Faster than the pve-sim suite's FAST set where it matters here.
SIM_FAST = ["--clone-seconds", "0.2", "--full-clone-seconds", "0.3", "--boot-seconds", "0.2",
            "--start-seconds", "0.1", "--stop-seconds", "0.1", "--destroy-seconds", "0.1",
            "--task-seconds", "0.05", "--stats-seconds", "0.5", "--bad-token-delay", "0.2"]
PER_HOST = ("k3s:8990@pve1", "k3s:9000@pve1", "k3s:9010@pve2", "k3s:9020@pve3")
LATENCY = collections.defaultdict(list)


def nodeclass(**spec):
    base = {
        "template": {"name": "k3s"},
        "tags": ["k8s"],
        "bootDisk": {"size": "32Gi"},
        "network": {"bridge": "vmbr1", "firewall": False},
        "cloudInit": {"user": "ubuntu",
                      "sshKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN5WC8SQ+s4/sh/Phj8sNbIi4AFSGB98ztrGbXzHMoL9 admin@example.org"],
                      "nameservers": ["10.0.0.53", "10.0.0.54"],
                      "searchDomains": ["lab.example.org"]},
    }
    base.update(spec)
    return {"apiVersion": "carpenter.dev/v1alpha1", "kind": "ProxmoxNodeClass",
            "metadata": {"name": "default", "uid": "nc-uid-1", "resourceVersion": "1",
                         "generation": 1},
            "spec": base,
            "status": {"specHash": "1234567890"}}


class ProviderCase(unittest.TestCase):
    sim_args = ()
    templates = PER_HOST
    hosts = "pve1,pve2,pve3"

    @classmethod
    def setUpClass(cls):
        cls.sim = simtest.Sim(*(SIM_FAST + list(cls.sim_args)), fast=False,
                              templates=cls.templates, hosts=cls.hosts)
        cls.dir = scratch.mkdtemp("carp-provider-")

    @classmethod
    def tearDownClass(cls):
        cls.sim.close()

    def setUp(self):
        self.log_start = len(self.sim.requests())

    def tearDown(self):
        self.check_requests()

    def requests(self):
        """Requests sent during this test."""
        return self.sim.requests()[self.log_start:]

    # ----------------------------------------------------------- helpers
    def write(self, name, obj):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def drive(self, nc, *steps, config=None, env=None, timeout=90):
        ncpath = self.write("nodeclass-%s.json" % self.id().split(".")[-1], nc)
        cmd = [DRIVER, config or self.sim.cfg, ncpath] + list(steps)
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
        if p.returncode != 0:
            raise AssertionError("driver failed (%d): %s\n%s" % (p.returncode, p.stderr,
                                                                 p.stdout[-2000:]))
        events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        self.assertEqual(events[-1].get("event"), "exit", p.stderr)
        self.assertTrue(events[-1]["loop_closed"])
        self.stderr = p.stderr
        return events

    def drive_paused(self, nc, steps, actions, timeout=120):
        """drive() whose pause:name=X steps run actions[X]() (changing the
        simulator) before the driver goes on."""
        ncpath = self.write("nodeclass-%s.json" % self.id().split(".")[-1], nc)
        errpath = os.path.join(self.dir, "driver-stderr.txt")
        events = []
        with open(errpath, "w") as err:
            p = subprocess.Popen([DRIVER, self.sim.cfg, ncpath] + list(steps),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=err, text=True)
            try:
                deadline = time.monotonic() + timeout
                for line in p.stdout:
                    if time.monotonic() > deadline:
                        raise AssertionError("driver took too long")
                    if not line.startswith("{"):
                        continue
                    ev = json.loads(line)
                    events.append(ev)
                    if ev["event"] == "pause":
                        actions[ev["name"]]()
                        p.stdin.write("\n")
                        p.stdin.flush()
                rc = p.wait(timeout)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                p.stdin.close()
                p.stdout.close()
        with open(errpath) as f:
            self.stderr = f.read()
        self.assertEqual(rc, 0, self.stderr)
        self.assertEqual(events[-1].get("event"), "exit", self.stderr)
        return events

    @staticmethod
    def of(events, kind):
        return [e for e in events if e["event"] == kind]

    def our_vms(self):
        return [v for v in self.sim.ctl("GET", "/vms") if not v.get("template") and
                "carpenter" in (v.get("tags") or "")]

    def all_vms(self):
        return [v for v in self.sim.ctl("GET", "/vms") if not v.get("template")]

    def volumes_of(self, vmid):
        return [v for v in self.sim.ctl("GET", "/storage") if v.get("vmid") == vmid]

    def check_requests(self, sim=None):
        """Every request Carpenter sent is valid per apidata.js."""
        sim = sim or self.sim
        bad = []
        for rec in sim.requests():
            if rec.get("token", "").endswith("!noperm") and rec.get("status") == 403:
                continue
            if rec.get("status") == 400 and rec.get("errors"):
                bad.append(("400", rec["method"], rec.get("rel"), rec["errors"]))
                continue
            if rec.get("status") == 501:
                bad.append(("501", rec["method"], rec.get("rel"), rec.get("reason")))
                continue
            if "route" not in rec or rec.get("status") == 401:
                continue
            found = SCHEMA.find(rec["method"], rec["rel"])
            if not found or not found[1]:
                bad.append(("route", rec["method"], rec["rel"]))
                continue
            merged = dict(rec.get("params") or {})
            merged.update(found[2])
            errors = SCHEMA.validate(merged, found[1].get("parameters") or {})
            if errors:
                bad.append(("schema", rec["method"], rec["rel"], dict(errors)))
        self.assertEqual(bad, [], "invalid requests sent to Proxmox")
        stats = sim.ctl("GET", "/stats")
        self.assertEqual(stats.get("unimplemented", 0), 0)

    def assert_clean(self, vmids=None):
        """No VM of ours left, no disk of ours left."""
        self.assertEqual(self.our_vms(), [])
        for vmid in vmids or []:
            self.assertEqual(self.volumes_of(vmid), [], "volumes of %d leaked" % vmid)


# -------------------------------------------------------------------------------
class TestCreateDelete(ProviderCase):
    templates = PER_HOST + ("k3s-new:9030@pve1",)

    def test_create_get_list_drift_delete(self):
        ev = self.drive(nodeclass(), "refresh", "types", "create:count=1,prefix=basic", "get", "list",
                        "drift", "drift:hash=999")
        created = self.of(ev, "create")
        self.assertEqual(len(created), 1)
        c = created[0]
        self.assertEqual(c["status"], 0, c)
        vmid, zone = c["vmid"], c["zone"]
        self.assertEqual(c["providerID"], "proxmox://lab/%d" % vmid)
        self.assertEqual(c["annotation"], "lab/%s/%d" % (zone, vmid))
        self.assertEqual(c["reserves"], 1)
        # Spread over equal hosts: by name; the newest template on pve1.
        self.assertEqual(zone, "pve1")
        self.assertEqual(c["imageID"], "lab/9000")
        self.assertEqual(c["type"], "c1.1VCPU-2GB")  # the cheapest
        self.assertEqual(c["capCPU"], 1000)
        self.assertEqual(c["capEphemeral"], 32 << 30)
        self.assertEqual(c["capPods"], 110)
        self.assertLess(c["allocMemory"], c["capMemory"])
        LATENCY["create (linked clone, resize, start)"].append(c["ms"])

        vm = self.sim.vm(vmid)
        conf = vm["config"]
        self.assertEqual(vm["status"], "running")
        self.assertEqual(conf["name"], "basic-1")
        self.assertEqual(conf["tags"], "carpenter;carpenter-test;k8s")
        self.assertEqual(str(conf["cores"]), "1")
        self.assertEqual(str(conf["memory"]), "2048")
        self.assertEqual(str(conf["onboot"]), "1")
        self.assertIn("nodeclaim-uid: %s" % c["uid"], conf["description"])
        self.assertIn("nodeclass: default", conf["description"])
        sm = dict(kv.split("=", 1) for kv in conf["smbios1"].split(","))
        self.assertEqual(base64.b64decode(sm["serial"]).decode(), c["providerID"])
        self.assertEqual(base64.b64decode(sm["sku"]).decode(), "c1.1VCPU-2GB")
        self.assertEqual(sm["base64"], "1")
        self.assertRegex(sm["uuid"], r"^[0-9a-f-]{36}$")
        key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN5WC8SQ+s4/sh/Phj8sNbIi4AFSGB98ztrGbXzHMoL9 admin@example.org"
        self.assertEqual(conf["sshkeys"], urllib.parse.quote(key, safe=""))
        self.assertIn("bridge=vmbr1", conf["net0"])
        self.assertIn("firewall=0", conf["net0"])
        self.assertRegex(conf["net0"], r"^virtio=[0-9A-F:]{17},")
        self.assertIn("size=32G", conf["scsi0"])
        self.assertEqual(conf["ipconfig0"], "ip=dhcp")
        self.assertEqual(conf["nameserver"], "10.0.0.53 10.0.0.54")
        self.assertEqual(str(conf["ciupgrade"]), "0")
        # The guest reads its providerID from the SMBIOS serial.
        if vm.get("guest"):
            pid = vm["guest"].get("provider_id") or vm["guest"].get("providerID")
            if pid:
                self.assertEqual(pid, c["providerID"])

        types = self.of(ev, "types")[0]
        self.assertEqual(types["status"], 0)
        names = [t["name"] for t in types["types"]]
        self.assertIn("c1.1VCPU-2GB", names)
        self.assertEqual(len(names), 15)
        t = types["types"][0]
        self.assertEqual(sorted(o["zone"] for o in t["offerings"]), ["pve1", "pve2", "pve3"])
        self.assertTrue(all(o["available"] for o in t["offerings"]))
        self.assertEqual(t["capEphemeral"], 32 << 30)

        gets = self.of(ev, "get")
        self.assertEqual(gets[0]["status"], 0)
        self.assertEqual(gets[0]["zone"], "pve1")
        self.assertEqual(gets[0]["uid"], c["uid"])
        self.assertEqual(gets[0]["type"], "c1.1VCPU-2GB")
        lst = self.of(ev, "list")[0]
        self.assertEqual(lst["status"], 0)
        self.assertEqual([i["uid"] for i in lst["instances"]], [c["uid"]])
        self.assertEqual(lst["instances"][0]["imageID"], "lab/9000")
        drift = self.of(ev, "drift")
        self.assertEqual(drift[0]["reason"], "")
        self.assertEqual(drift[1]["reason"], "NodeClassDrifted")

        metrics = self.of(ev, "metrics")[0]["text"]
        self.assertIn('karpenter_cloudprovider_duration_seconds_count{controller='
                      '"nodeclaim.lifecycle",method="Create",provider="proxmox"} 1', metrics)

        # Another process (a restarted controller) adopts it and deletes it.
        ev = self.drive(nodeclass(), "create:name=basic-1,uid=%s,annotation=%s"
                        % (c["uid"], c["annotation"]), "delete", "get")
        self.assertEqual(self.of(ev, "create")[0]["vmid"], vmid)
        self.assertEqual(self.of(ev, "get")[0]["errname"], "ENOTFOUND")
        d = self.of(ev, "delete")[0]
        self.assertEqual(d["errname"], "ENOTFOUND")
        self.assertEqual(d["calls"], 2)  # deleted, then NotFound
        LATENCY["delete (stop, destroy)"].append(d["ms"])
        self.assert_clean([vmid])

        metrics = self.of(ev, "metrics")[0]["text"]
        self.assertIn('karpenter_cloudprovider_errors_total{controller="nodeclaim.lifecycle",'
                      'method="Delete",provider="proxmox",error="NodeClaimNotFoundError"} 1',
                      metrics)

        # The requests of one create, for docs/provider.md.
        reqs = [r for r in self.requests() if r.get("status") != 401]
        with open(os.path.join(self.dir, "create-requests.txt"), "w") as f:
            for r in reqs:
                f.write("%s %s %s -> %s\n" % (r["method"], r.get("rel"),
                                             json.dumps(r.get("params")), r["status"]))
        print("\nrequests of one create+delete:", os.path.join(self.dir, "create-requests.txt"))

    def test_template_drift(self):
        # The class now selects another template on the VM's host.
        other = self.write("nc-new.json", nodeclass(template={"name": "k3s-new"}))
        ev = self.drive(nodeclass(), "create:count=1,prefix=tdrift,zone=pve1", "drift",
                        "nodeclass:file=%s" % other, "drift", "delete")
        c = self.of(ev, "create")[0]
        self.assertEqual(c["status"], 0, c)
        self.assertEqual(c["imageID"], "lab/9000")
        drift = self.of(ev, "drift")
        self.assertEqual(drift[0]["reason"], "")
        self.assertEqual(drift[1]["reason"], "TemplateDrifted")
        self.assert_clean([c["vmid"]])


# -------------------------------------------------------------------------------
def metric_value(text, name, **labels):
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


class TestHosts(ProviderCase):
    """A host put in HA maintenance and a host going offline while the
    provider runs (PVE 8.3+: the hosts' hastate in /cluster/resources)."""

    def tearDown(self):
        for h in ("pve1", "pve2", "pve3"):
            self.sim.ctl("POST", "/hosts/%s/online" % h)
            self.sim.ctl("POST", "/hosts/%s/maintenance?enable=0" % h)
        super().tearDown()

    def zones(self, ev):
        return {z["zone"]: z for z in self.of(ev, "zone")}

    def test_maintenance_and_offline(self):
        ctl = self.sim.ctl
        marks = {}

        def maintenance():
            marks["ha"] = time.time()  # HA in use from here on
            ctl("POST", "/hosts/pve2/maintenance?enable=1")
        ev = self.drive_paused(nodeclass(), [
            "refresh", "create:count=3,prefix=h", "pause:name=maintenance",
            "refresh", "zone:name=pve1", "zone:name=pve2", "zone:name=pve3",
            "types", "drift", "create:count=2,prefix=m", "pause:name=offline",
            "refresh", "zone:name=pve3", "drift", "delete", "list",
            "pause:name=back", "refresh", "zone:name=pve3", "zone:name=pve2",
            "delete"], {
            "maintenance": maintenance,
            "offline": lambda: ctl("POST", "/hosts/pve3/offline"),
            "back": lambda: (ctl("POST", "/hosts/pve3/online"),
                             ctl("POST", "/hosts/pve2/maintenance?enable=0")),
        })
        created = self.of(ev, "create")
        self.assertTrue(all(c["status"] == 0 for c in created), created)
        first = {c["zone"]: c for c in created[:3]}
        self.assertEqual(sorted(first), ["pve1", "pve2", "pve3"])  # spread
        # pve2 in maintenance: reported so, offered nowhere, drifted, avoided.
        zones = self.zones(ev[:[e["event"] for e in ev].index("types")])
        self.assertEqual({z: v["state"] for z, v in zones.items()},
                         {"pve1": "Ready", "pve2": "Maintenance", "pve3": "Ready"})
        self.assertGreater(zones["pve2"]["since_ms"], 0)
        self.assertLessEqual(zones["pve2"]["since_ms"], zones["pve2"]["now_ms"])
        for t in self.of(ev, "types")[0]["types"]:
            self.assertEqual(sorted(o["zone"] for o in t["offerings"]), ["pve1", "pve3"])
        drift = {d["nodeclaim"]: d["reason"] for d in self.of(ev, "drift")[:3]}
        self.assertEqual(drift[first["pve2"]["nodeclaim"]], "HostMaintenance")
        self.assertEqual(drift[first["pve1"]["nodeclaim"]], "")
        self.assertEqual(drift[first["pve3"]["nodeclaim"]], "")
        self.assertEqual(sorted(c["zone"] for c in created[3:]), ["pve1", "pve3"])
        # pve3 offline: its VMs cannot be deleted, and say so; the rest go.
        z3 = [z for z in self.of(ev, "zone") if z["zone"] == "pve3"]
        self.assertEqual([z["state"] for z in z3], ["Ready", "Offline", "Ready"])
        on3 = {c["nodeclaim"] for c in created if c["zone"] == "pve3"}
        deletes = self.of(ev, "delete")
        first_round = deletes[:5]
        for d in first_round:
            if d["nodeclaim"] in on3:
                self.assertEqual((d["errname"], d["reason"], d["calls"]),
                                 ("ENOTFOUND", "HostOffline", 1), d)
                self.assertIn("offline", d["message"])
            else:
                self.assertEqual((d["errname"], d["calls"]), ("ENOTFOUND", 2), d)
        # Still listed (by VMID only: this provider never read their configs,
        # and the host is out of reach), the whole list not failed for them.
        lst = self.of(ev, "list")[0]
        self.assertEqual((lst["status"], lst.get("message")), (0, None))
        self.assertEqual({i["providerID"] for i in lst["instances"]},
                         {c["providerID"] for c in created if c["zone"] == "pve3"})
        self.assertEqual({(i["zone"], i["vmstatus"]) for i in lst["instances"]},
                         {("pve3", "unknown")})
        # Back: used again, and deleted for real.
        self.assertEqual(self.zones(ev[-10:])["pve2"]["state"], "Ready")
        for d in deletes[5:]:
            self.assertEqual(d["errname"], "ENOTFOUND", d)
            self.assertNotEqual(d.get("reason"), "HostOffline", d)
        self.assert_clean([c["vmid"] for c in created])
        # Before any HA use the listing has no hastate and the HA status is
        # read (once: the refreshes came within one refresh interval); from
        # the first maintenance on the listing carries hastate and the HA
        # status is never read again.
        ha = [r for r in self.requests() if r.get("rel") == "/cluster/ha/status/current"]
        self.assertEqual(len(ha), 1, ha)
        self.assertLess(ha[0]["ts"], marks["ha"])

    def test_metrics(self):
        self.sim.ctl("POST", "/hosts/pve2/maintenance?enable=1")
        self.sim.ctl("POST", "/hosts/pve3/offline?mode=partition")
        ev = self.drive(nodeclass(), "refresh", "sleep:ms=1100")
        text = self.of(ev, "metrics")[0]["text"]
        self.assertEqual(metric_value(text, "carpenter_proxmox_host_maintenance",
                                      zone="pve2"), 1)
        self.assertEqual(metric_value(text, "carpenter_proxmox_host_maintenance",
                                      zone="pve1"), 0)
        self.assertEqual(metric_value(text, "carpenter_proxmox_host_offline_seconds",
                                      zone="pve2"), 0)
        self.assertGreaterEqual(metric_value(
            text, "carpenter_proxmox_host_offline_seconds", zone="pve3"), 1)
        self.assertEqual(metric_value(text, "carpenter_proxmox_host_up", zone="pve3"), 0)


class TestTaskPace(ProviderCase):
    """A task's first status poll goes out when tasks of its kind have
    lately been done, not at 100 ms."""
    sim_args = ("--start-seconds", "1.0")

    def test_polls_learn_how_long_a_start_takes(self):
        ev = self.drive(nodeclass(), "create:count=1,prefix=pace1,zone=pve1",
                        "create:count=1,prefix=pace2,zone=pve1",
                        "create:count=1,prefix=pace3,zone=pve1", "delete")
        vmids = [c["vmid"] for c in self.of(ev, "create")]
        self.assertTrue(all(c["status"] == 0 for c in self.of(ev, "create")), ev)

        def start_polls(vmid):
            return len([r for r in self.requests() if r["method"] == "GET" and
                        r.get("rel", "").endswith("/status") and
                        (":qmstart:%d:" % vmid) in r.get("rel", "")])
        polls = [start_polls(v) for v in vmids]
        # The first from 0.1 s on, doubling (six or seven polls: a start
        # here takes a little over a second); later ones first at nine
        # tenths of the quickest so far, then 0.2 s and 0.4 s later.
        self.assertGreaterEqual(polls[0], 4, polls)
        self.assertLessEqual(polls[2], 3, polls)
        self.assert_clean(vmids)


class TestTaskFollowers(ProviderCase):
    """Clones of a template nothing is known of, started together: one
    climbs from the first poll (the driver's 50 ms, doubling), the others
    poll at the cap (the driver's 250 ms, 20 % jitter) until it has
    succeeded, instead of each climbing."""
    sim_args = ("--clone-seconds", "1.0")

    def test_clones_started_together_follow_the_first(self):
        ev = self.drive(nodeclass(), "create:count=3,prefix=fol,zone=pve1", "delete")
        vmids = [c["vmid"] for c in self.of(ev, "create")]
        self.assertTrue(all(c["status"] == 0 for c in self.of(ev, "create")), ev)
        times = collections.defaultdict(list)
        for r in self.requests():
            rel = urllib.parse.unquote(r.get("rel", ""))
            if r["method"] == "GET" and rel.endswith("/status") and ":qmclone:" in rel:
                times[rel].append(r["ts"])
        self.assertEqual(len(times), 3, times)
        gaps = sorted(min(b - a for a, b in zip(sorted(t), sorted(t)[1:]))
                      for t in times.values() if len(t) > 1)
        self.assertEqual(len(gaps), 3, times)
        self.assertLess(gaps[0], 0.15, gaps)          # the first climbs
        self.assertGreaterEqual(gaps[1], 0.19, gaps)  # the others follow
        self.assert_clean(vmids)


class TestHostBack(ProviderCase):
    """A crashed host that comes back starts its onboot guests; a delete
    that finds one still stopped races that start."""
    sim_args = ("--start-seconds", "3")

    def test_delete_races_onboot_start(self):
        ev = self.drive_paused(nodeclass(), [
            "create:count=1,prefix=back,zone=pve3", "pause:name=crash",
            "refresh", "pause:name=back", "refresh", "sleep:ms=1000", "delete"], {
            "crash": lambda: self.sim.ctl("POST", "/hosts/pve3/offline"),
            "back": lambda: self.sim.ctl("POST", "/hosts/pve3/online"),
        })
        c = self.of(ev, "create")[0]
        self.assertEqual((c["status"], c["zone"]), (0, "pve3"), c)
        d = self.of(ev, "delete")[0]
        self.assertEqual((d["errname"], d["calls"]), ("ENOTFOUND", 2), d)
        # Listed stopped (a stats pass later, its start still running):
        # destroyed at once, which failed once the start had run; stopped,
        # then destroyed for real.
        mine = [(r["method"], r["rel"].rsplit("/", 1)[-1]) for r in self.requests()
                if r.get("rel", "").startswith("/nodes/pve3/qemu/%d" % c["vmid"]) and
                r["method"] in ("POST", "DELETE") and not r["rel"].endswith("/config")]
        self.assertEqual(mine[-3:], [("DELETE", str(c["vmid"])), ("POST", "stop"),
                                     ("DELETE", str(c["vmid"]))], mine)
        self.assert_clean([c["vmid"]])


class TestHostsOldPve(ProviderCase):
    """PVE before 8.3: no hastate in the listing, maintenance read from
    /cluster/ha/status/current."""
    sim_args = ("--no-node-hastate", "--host-maintenance", "pve1")

    def test_maintenance_from_ha_status(self):
        ev = self.drive(nodeclass(), "refresh", "zone:name=pve1", "zone:name=pve2", "types",
                        "create:count=3,prefix=old", "delete")
        zones = {z["zone"]: z["state"] for z in self.of(ev, "zone")}
        self.assertEqual(zones, {"pve1": "Maintenance", "pve2": "Ready"})
        for t in self.of(ev, "types")[0]["types"]:
            self.assertNotIn("pve1", [o["zone"] for o in t["offerings"]])
        created = self.of(ev, "create")
        self.assertTrue(all(c["status"] == 0 for c in created), created)
        self.assertNotIn("pve1", [c["zone"] for c in created])
        ha = [r for r in self.requests() if r.get("rel") == "/cluster/ha/status/current"]
        self.assertTrue(ha)
        self.assertTrue(all(r["status"] == 200 for r in ha), ha)
        self.assert_clean([c["vmid"] for c in created])


# -------------------------------------------------------------------------------
class TestConcurrent(ProviderCase):
    sim_args = ("--host-cpus", "32")

    def test_fifty_concurrent_creates(self):
        # Two VMIDs of the range are taken by someone else already.
        self.sim.clone(2000, src=9000, node="pve1", name="other-a")
        self.sim.clone(2003, src=9010, node="pve2", name="other-b")
        nc = nodeclass(vmidRange={"min": 2000, "max": 2099})
        ev = self.drive(nc, "create:count=50,prefix=burst", "list", "delete")
        created = self.of(ev, "create")
        self.assertEqual(len(created), 50)
        bad = [c for c in created if c["status"] != 0]
        self.assertEqual(bad, [])
        vmids = [c["vmid"] for c in created]
        self.assertEqual(len(set(vmids)), 50, "duplicate VMIDs")
        self.assertTrue(all(2000 <= v <= 2099 for v in vmids))
        self.assertNotIn(2000, vmids)
        self.assertNotIn(2003, vmids)
        self.assertTrue(all(c["reserves"] == 1 for c in created))
        per_host = collections.Counter(c["zone"] for c in created)
        self.assertEqual(sorted(per_host), ["pve1", "pve2", "pve3"])
        self.assertTrue(all(n >= 15 for n in per_host.values()), per_host)
        lst = self.of(ev, "list")[0]
        self.assertEqual(len(lst["instances"]), 50)
        self.assertEqual(len({i["uid"] for i in lst["instances"]}), 50)
        for c in created:
            LATENCY["create x50 concurrent"].append(c["ms"])
        # One clone request per NodeClaim, never two VMs for one claim.
        clones = [r for r in self.requests() if r.get("route", "").endswith("/clone")
                  and r.get("token", "").endswith("!carpenter") and
                  str(r["params"].get("name", "")).startswith("burst-")]
        self.assertEqual(len(clones), 50)
        deleted = self.of(ev, "delete")
        self.assertEqual(len(deleted), 50)
        self.assertTrue(all(d["errname"] == "ENOTFOUND" for d in deleted))
        for d in deleted:
            LATENCY["delete x50 concurrent"].append(d["ms"])
        self.assert_clean(vmids)
        others = sorted(v["vmid"] for v in self.all_vms())
        self.assertEqual(others, [2000, 2003])


    def test_burst_asks_nextid_once(self):
        # Someone else's VM sits just above nextid's answer: skipped, as
        # the inventory shows it.
        floor = int(self.sim.ok(self.sim.get("/cluster/nextid")))
        self.sim.clone(floor + 1, src=9000, node="pve1", name="other-c")
        seen = len(self.sim.requests())
        ev = self.drive(nodeclass(), "create:count=20,prefix=nid", "delete")
        created = self.of(ev, "create")
        self.assertEqual([c["status"] for c in created], [0] * 20)
        vmids = sorted(c["vmid"] for c in created)
        self.assertEqual(vmids, [floor] + list(range(floor + 2, floor + 21)))
        self.assertTrue(all(c["reserves"] == 1 for c in created))
        asked = [r for r in self.sim.requests()[seen:]
                 if r.get("route") == "/cluster/nextid"
                 and r.get("token", "").endswith("!carpenter")]
        # One answer for the whole burst, and no candidate asked about:
        # the clone refuses a taken VMID itself.
        self.assertEqual([r["params"] for r in asked], [{}])
        self.assert_clean(vmids)
        self.sim.delete("/nodes/pve1/qemu/%d" % (floor + 1), purge=1)


    def test_create_cancelled_while_nextid_is_asked(self):
        # /cluster/nextid answers 1.5 s late: a burst of three waits for
        # it, and the first create is cancelled meanwhile. It leaves the
        # wait (the other two are woken by the one answer and go on) and
        # nothing is cloned for it.
        got = self.sim.ctl("POST", "/faults", {"slow_route": "/cluster/nextid",
                                               "slow_route_ms": 1500})
        self.assertEqual(got.get("slow_route"), "/cluster/nextid", got)
        try:
            seen = len(self.sim.requests())
            ev = self.drive(nodeclass(), "create:count=3,prefix=cut,cancel_first_ms=700",
                            "delete")
        finally:
            self.sim.ctl("POST", "/faults", {"slow_route": "", "slow_route_ms": 0})
        created = {c["nodeclaim"]: c for c in self.of(ev, "create")}
        self.assertEqual(created["cut-1"]["errname"], "ECANCELED", created["cut-1"])
        self.assertEqual(created["cut-1"]["reserves"], 0)
        self.assertEqual([created[n]["status"] for n in ("cut-2", "cut-3")], [0, 0])
        mine = self.sim.requests()[seen:]
        asked = [r for r in mine if r.get("route") == "/cluster/nextid"
                 and r.get("token", "").endswith("!carpenter")]
        self.assertEqual(len(asked), 1)
        clones = [str(r["params"].get("name", "")) for r in mine
                  if r.get("route", "").endswith("/clone")]
        self.assertEqual(sorted(clones), ["cut-2", "cut-3"])
        self.assert_clean([created[n]["vmid"] for n in ("cut-2", "cut-3")])


# -------------------------------------------------------------------------------
class TestRegions(ProviderCase):
    """Two Proxmox clusters at once; one host of the first is offline."""
    sim_args = ("--host-offline", "pve1")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sim2 = simtest.Sim(*SIM_FAST, fast=False, templates=("k3s:9000@edge1",
                                                                  "k3s:9001@edge2"),
                               hosts="edge1,edge2")
        # The second simulator calls itself "lab" too: rename its region.
        with open(cls.sim.cfg) as f:
            one = f.read()
        with open(cls.sim2.cfg) as f:
            two = f.read().replace('region: "lab"', 'region: "dc2"')
        cls.both = os.path.join(cls.dir, "both.yaml")
        with open(cls.both, "w") as f:
            f.write(one.rstrip("\n") + "\n" + two.split("clusters:", 1)[1].lstrip("\n"))

    @classmethod
    def tearDownClass(cls):
        cls.sim2.close()
        super().tearDownClass()

    def tearDown(self):
        super().tearDown()
        self.check_requests(self.sim2)

    def test_two_regions(self):
        ev = self.drive(nodeclass(), "refresh", "types",
                        "create:count=1,prefix=east,region=dc2",
                        "create:count=2,prefix=west,region=lab", "list", "delete",
                        config=self.both)
        t = self.of(ev, "types")[0]["types"][0]
        zones = sorted((o["region"], o["zone"]) for o in t["offerings"])
        # pve1 is offline: never offered, never used.
        self.assertEqual(zones, [("dc2", "edge1"), ("dc2", "edge2"), ("lab", "pve2"),
                                 ("lab", "pve3")])
        created = self.of(ev, "create")
        self.assertTrue(all(c["status"] == 0 for c in created), created)
        east = [c for c in created if c["nodeclaim"].startswith("east")]
        west = [c for c in created if c["nodeclaim"].startswith("west")]
        self.assertTrue(east[0]["providerID"].startswith("proxmox://dc2/"))
        self.assertIn(east[0]["zone"], ("edge1", "edge2"))
        self.assertEqual(sorted(c["zone"] for c in west), ["pve2", "pve3"])  # spread
        lst = self.of(ev, "list")[0]
        self.assertEqual(lst["status"], 0)
        self.assertEqual(sorted(i["region"] for i in lst["instances"]), ["dc2", "lab", "lab"])
        self.assertTrue(all(d["errname"] == "ENOTFOUND" for d in self.of(ev, "delete")))
        self.assert_clean()
        self.assertEqual([v for v in self.sim2.ctl("GET", "/vms") if not v.get("template")],
                         [])


# -------------------------------------------------------------------------------
class TestCloneFailure(ProviderCase):
    sim_args = ("--fail-clone-fraction", "1")

    def test_failed_clone(self):
        ev = self.drive(nodeclass(), "create:count=2,prefix=fail")
        for c in self.of(ev, "create"):
            self.assertEqual(c["reason"], "CloneFailed", c)
            self.assertIn("clone failed", c["message"])
        self.assertEqual(self.all_vms(), [])
        self.assertEqual([v for v in self.sim.ctl("GET", "/storage")
                          if v.get("vmid") and v["vmid"] >= 100 and
                          v["vmid"] not in (8990, 9000, 9010, 9020)], [])


class TestRollback(ProviderCase):
    sim_args = ("--hang-task-types", "qmstart", "--hang-tasks-fraction", "1")

    def test_start_failure_rolls_back(self):
        ev = self.drive(nodeclass(), "create:count=1,prefix=rb", "list",
                        env={"DRIVER_START_TIMEOUT_MS": "1000"})
        c = self.of(ev, "create")[0]
        self.assertEqual(c["reason"], "StartFailed", c)
        self.assertEqual(c["errname"], "ETIMEDOUT")
        vmid = int(c["annotation"].split("/")[2])
        self.assertIsNone(self.sim.ctl("GET", "/vms/%d" % vmid) if False else None)
        self.assert_clean([vmid])
        self.assertEqual(self.of(ev, "list")[0]["instances"], [])
        # The hung start task was stopped, then the VM stopped and destroyed.
        routes = [(r["method"], r.get("route")) for r in self.requests()]
        self.assertIn(("DELETE", "/nodes/{node}/tasks/{upid}"), routes)
        self.assertIn(("DELETE", "/nodes/{node}/qemu/{vmid}"), routes)


# -------------------------------------------------------------------------------
class TestCapacity(ProviderCase):
    hosts = "pve1"
    templates = ("k3s:9000@pve1",)
    sim_args = ("--host-memory", "8Gi", "--host-cpus", "8")

    def test_insufficient_capacity(self):
        ev = self.drive(nodeclass(), "create:count=1,prefix=big,type=m1.1VCPU-8GB",
                        "ice:type=m1.1VCPU-8GB,zone=pve1", "types")
        c = self.of(ev, "create")[0]
        self.assertEqual(c["errname"], "EINSUFFICIENT_CAPACITY", c)
        self.assertEqual(c["reason"], "InsufficientCapacity")
        self.assertEqual(c["reserves"], 0)
        self.assertTrue(self.of(ev, "ice")[0]["cached"])
        types = {t["name"]: t for t in self.of(ev, "types")[0]["types"]}
        self.assertFalse(types["m1.1VCPU-8GB"]["offerings"][0]["available"])
        self.assertTrue(types["c1.1VCPU-2GB"]["offerings"][0]["available"])
        self.assertEqual(self.all_vms(), [])
        self.assertIn('error="InsufficientCapacityError"', self.of(ev, "metrics")[0]["text"])

    def test_out_of_memory_at_start(self):
        # Memory overcommit 2: the model allows 12Gi on this 8Gi host, the
        # host itself refuses the second start.
        nc = nodeclass(hostCapacity={"memoryOvercommitRatio": "2"})
        ev = self.drive(nc, "create:count=2,prefix=oom,type=s1.1VCPU-4GB",
                        "ice:type=s1.1VCPU-4GB,zone=pve1", "delete")
        res = sorted(self.of(ev, "create"), key=lambda c: c["status"])
        self.assertEqual(res[-1]["status"], 0, res)
        self.assertEqual(res[0]["errname"], "EINSUFFICIENT_CAPACITY", res)
        self.assertIn("QEMU exited", res[0]["message"])
        self.assertTrue(self.of(ev, "ice")[0]["cached"])
        failed_vmid = int(res[0]["annotation"].split("/")[2])
        self.assertEqual(self.volumes_of(failed_vmid), [])
        self.assert_clean([failed_vmid, res[-1]["vmid"]])


# -------------------------------------------------------------------------------
class TestNoPrivileges(ProviderCase):

    def test_token_without_rights(self):
        ev = self.drive(nodeclass(), "create:count=1,prefix=np", "status", "list",
                        config=self.sim.cfg_np)
        c = self.of(ev, "create")[0]
        self.assertEqual(c["errname"], "ENODECLASS_NOT_READY", c)
        self.assertEqual(c["reason"], "NodeClassNotReady")
        self.assertIn("has no privileges", c["message"])
        st = self.of(ev, "status")[0]
        self.assertEqual(st["errname"], "EFORBIDDEN")
        self.assertIn("has no privileges", st["message"])
        lst = self.of(ev, "list")[0]
        self.assertNotEqual(lst.get("reason", None), None)
        self.assertIn("no privileges", lst["message"])
        self.assertEqual(self.all_vms(), [])

    def test_bad_token(self):
        with open(self.sim.cfg) as f:
            text = f.read()
        cfg = self.write("bad-token.yaml", text.replace(self.sim.config["tokenSecret"],
                                                        "00000000-0000-0000-0000-000000000000"))
        ev = self.drive(nodeclass(), "create:count=1,prefix=bt", "status", config=cfg)
        st = self.of(ev, "status")[0]
        self.assertEqual(st["errname"], "EUNAUTHORIZED", st)
        self.assertIn("check tokenID and tokenSecret", st["message"])
        self.assertNotIn("00000000-0000", self.stderr)

    def test_wrong_fingerprint(self):
        with open(self.sim.cfg) as f:
            text = f.read()
        wrong = ":".join(["AB"] * 32)
        cfg = self.write("wrong-fp.yaml", text.replace(self.sim.fingerprint, wrong))
        ev = self.drive(nodeclass(), "create:count=1,prefix=fp", "status", config=cfg)
        c = self.of(ev, "create")[0]
        self.assertNotEqual(c["status"], 0)
        st = self.of(ev, "status")[0]
        self.assertEqual(st["errname"], "ETLS", st)
        self.assertIn("TLS", st["message"])
        self.assertEqual(self.all_vms(), [])


# -------------------------------------------------------------------------------
class TestAdoption(ProviderCase):
    # Clones slow enough that a restarted create finds one still running.
    sim_args = ("--clone-seconds", "1.0")

    def test_resume_after_restart(self):
        # A create cancelled mid-clone (the controller died); the annotation
        # was stored first.
        ev = self.drive(nodeclass(), "create:name=adopt-a,uid=uid-adopt-a,cancel_ms=60")
        a = self.of(ev, "create")[0]
        self.assertEqual(a["errname"], "ECANCELED", a)
        ann = a["annotation"]
        self.assertTrue(ann.startswith("lab/"), a)
        vmid = int(ann.split("/")[2])
        # A new process resumes from the annotation: no second clone.
        ev = self.drive(nodeclass(), "create:name=adopt-a,uid=uid-adopt-a,annotation=%s" % ann)
        b = self.of(ev, "create")[0]
        self.assertEqual(b["status"], 0, b)
        self.assertEqual(b["vmid"], vmid)
        self.assertEqual(b["reserves"], 0)
        clones = [r for r in self.requests() if r.get("route", "").endswith("/clone")
                  and r["params"].get("name") == "adopt-a"]
        self.assertEqual(len(clones), 1)
        self.assertEqual(self.sim.vm(vmid)["status"], "running")
        configs = [r for r in self.requests() if r["method"] == "POST" and
                   r.get("rel") == "/nodes/%s/qemu/%d/config" % (b["zone"], vmid)]
        self.assertEqual(len(configs), 1)
        # The resumed create waited for the clone's lock to go.
        locked = [r for r in self.requests() if r["method"] == "GET" and
                  r.get("rel") == "/nodes/%s/qemu/%d/config" % (b["zone"], vmid)]
        self.assertGreaterEqual(len(locked), 2)
        # Once more on the running VM: reported as is.
        ev = self.drive(nodeclass(), "create:name=adopt-a,uid=uid-adopt-a,annotation=%s" % ann,
                        "delete")
        c = self.of(ev, "create")[0]
        self.assertEqual(c["status"], 0, c)
        self.assertEqual(c["vmid"], vmid)
        self.assertEqual(c["type"], "c1.1VCPU-2GB")
        self.assert_clean([vmid])

    def test_annotation_without_vm(self):
        ev = self.drive(nodeclass(), "create:name=adopt-b,annotation=lab/pve2/4242", "delete")
        c = self.of(ev, "create")[0]
        self.assertEqual(c["status"], 0, c)
        self.assertEqual(c["vmid"], 4242)
        self.assertEqual(c["zone"], "pve2")
        self.assertEqual(c["reserves"], 0)
        self.assert_clean([4242])

    def test_annotation_names_someone_elses_vm(self):
        self.sim.clone(4343, src=9000, node="pve1", name="not-ours")
        ev = self.drive(nodeclass(), "create:name=adopt-c,annotation=lab/pve1/4343", "delete")
        c = self.of(ev, "create")[0]
        self.assertEqual(c["status"], 0, c)
        self.assertNotEqual(c["vmid"], 4343)
        self.assertEqual(c["reserves"], 1)
        self.assertEqual(self.sim.vm(4343)["name"], "not-ours")
        self.assert_clean([c["vmid"]])
        self.sim.delete("/nodes/pve1/qemu/4343", purge=1)

    def test_vmid_taken_between_check_and_clone(self):
        ev = self.drive(nodeclass(), "create:name=steal-d,steal=9000@pve1", "delete")
        c = self.of(ev, "create")[0]
        steal = self.of(ev, "steal")[0]
        self.assertEqual(steal["status"], 0, steal)
        self.assertEqual(c["status"], 0, c)
        self.assertEqual(c["reserves"], 2)
        thief = [v for v in self.all_vms() if v.get("name") == "thief" or
                 "thief" in json.dumps(v.get("config", {}))]
        self.assertEqual(len(thief), 1)
        self.assertNotEqual(thief[0]["vmid"], c["vmid"])
        self.assert_clean([c["vmid"]])
        self.sim.delete("/nodes/pve1/qemu/%d" % thief[0]["vmid"], purge=1)


# -------------------------------------------------------------------------------
USERDATA = """#cloud-config
hostname: {{ .NodeName }}
write_files:
  - path: /etc/rancher/k3s/config.yaml
    content: |
      kubelet-arg:
        - provider-id={{ .ProviderID }}
        - max-pods={{.MaxPods}}
runcmd:
  - echo {{ v1.local_hostname }} {{ .Region }}/{{ .Zone }}/{{ .VMID }} {{ .InstanceType }}
  - k3s agent --node-labels={{ .Labels }} --register-with-taints={{ .Taints }}
"""


class TestUserData(ProviderCase):

    def userdata_class(self):
        spec = {"bootstrap": {"mode": "UserData",
                              "userDataSecretRef": {"name": "ud", "namespace": "kube-system"},
                              "isoStorage": "local"},
                "cloudInit": {"nameservers": ["10.0.0.53"]}}
        return nodeclass(**spec)

    def test_nocloud_iso(self):
        ud = self.write("user-data", USERDATA)
        ev = self.drive(self.userdata_class(), "create:count=1,prefix=ud,userdata=%s" % ud)
        c = self.of(ev, "create")[0]
        self.assertEqual(c["status"], 0, c)
        vmid = c["vmid"]
        conf = self.sim.vm(vmid)["config"]
        self.assertEqual(conf["ide2"], "local:iso/carpenter-%d.iso,media=cdrom" % vmid)
        self.assertNotIn("sshkeys", conf)
        isos = [v for v in self.sim.ctl("GET", "/storage")
                if v["volid"] == "local:iso/carpenter-%d.iso" % vmid]
        self.assertEqual(len(isos), 1)
        guest = self.sim.vm(vmid).get("guest") or {}
        notes = json.dumps(guest)
        self.assertNotIn("no file 'user-data'", notes)
        self.assertNotIn("is not cidata", notes)
        ev = self.drive(self.userdata_class(), "create:name=ud-1,uid=%s,annotation=%s,"
                        "userdata=%s" % (c["uid"], c["annotation"], ud), "delete")
        self.assertEqual(self.of(ev, "delete")[0]["errname"], "ENOTFOUND")
        self.assert_clean([vmid])
        self.assertEqual([v for v in self.sim.ctl("GET", "/storage")
                          if "carpenter-%d.iso" % vmid in v["volid"]], [])

    def test_unknown_variable(self):
        ud = self.write("user-data-bad", "#cloud-config\nruncmd: [echo {{ .Bogus }}]\n")
        ev = self.drive(self.userdata_class(), "create:count=1,prefix=udbad,userdata=%s" % ud)
        c = self.of(ev, "create")[0]
        self.assertEqual(c["reason"], "UserDataRenderFailed", c)
        self.assertIn(".Bogus", c["message"])
        vmid = int(c["annotation"].split("/")[2])
        self.assert_clean([vmid])


# -------------------------------------------------------------------------------
class TestFullClones(ProviderCase):
    hosts = "pve1"
    templates = ("k3s:9000@pve1",)
    sim_args = ("--max-full-clones", "1", "--storage-lock-seconds", "0.3")

    def test_full_clone_limit(self):
        nc = nodeclass(clone={"mode": "Full", "maxConcurrentFullClones": 1})
        ev = self.drive(nc, "create:count=4,prefix=full", "delete")
        created = self.of(ev, "create")
        self.assertTrue(all(c["status"] == 0 for c in created), created)
        stats = self.sim.ctl("GET", "/stats")
        self.assertLessEqual(max(stats.get("max_concurrent_full_clones", {}).values() or [1])
                             if isinstance(stats.get("max_concurrent_full_clones"), dict)
                             else stats.get("max_concurrent_full_clones", 1), 1, stats)
        clones = [r for r in self.requests() if r.get("route", "").endswith("/clone")]
        self.assertTrue(all(r["params"].get("full") == "1" for r in clones))
        self.assertEqual(len(clones), 4)
        for c in created:
            LATENCY["create (full clone, 1 at a time, 4 queued)"].append(c["ms"])
        self.assert_clean([c["vmid"] for c in created])


# -------------------------------------------------------------------------------
def gpu_nodeclass():
    return nodeclass(
        devices=[{"name": "rtx", "mapping": "gpu", "resource": "nvidia.com/gpu",
                  "price": "0.5", "gpu": {"name": "rtx-4090", "manufacturer": "nvidia",
                                          "memory": "24Gi"}}],
        instanceTypes={"families": [{"name": "c1", "memoryPerCPU": "2Gi"},
                                    {"name": "g1", "memoryPerCPU": "4Gi", "devices": ["rtx"]}],
                       "sizes": [2]})


class TestDevices(ProviderCase):
    """GPUs through a PCI resource mapping: one device, on pve2 only."""
    sim_args = ("--pci-mapping", "gpu=pve2:1",)

    def test_gpu_vm(self):
        # the first call for a class with devices has the mappings read
        ev = self.drive(gpu_nodeclass(), "types", "refresh", "types",
                        "create:count=2,prefix=gpu,type=g1.2VCPU-8GB", "types", "get",
                        "delete", "refresh", "types")
        first = {t["name"]: t for t in self.of(ev, "types")[0]["types"]}
        self.assertFalse(any(o["available"] for o in first["g1.2VCPU-8GB"]["offerings"]))
        types = {t["name"]: t for t in self.of(ev, "types")[1]["types"]}
        g = types["g1.2VCPU-8GB"]
        self.assertEqual({o["zone"]: o["available"] for o in g["offerings"]},
                         {"pve1": False, "pve2": True, "pve3": False})
        self.assertEqual(g["extended"], {"nvidia.com/gpu": 1})
        self.assertEqual(g["labels"]["carpenter.dev/instance-gpu-count"], "1")
        self.assertEqual(g["labels"]["carpenter.dev/instance-gpu-memory"], "24576")
        self.assertEqual(g["priceMicro"], 2 * 30000 + 8 * 4000 + 500000)
        c = types["c1.2VCPU-4GB"]
        self.assertEqual(c["extended"], {})
        self.assertIsNone(c["labels"]["carpenter.dev/instance-gpu-count"])  # DoesNotExist
        self.assertTrue(all(o["available"] for o in c["offerings"]))

        # two creates race for one device: one gets it, the other is told why
        res = sorted(self.of(ev, "create"), key=lambda x: x["status"], reverse=True)
        ok, ice = res
        self.assertEqual(ok["status"], 0, ok)
        self.assertEqual(ok["zone"], "pve2")
        self.assertEqual(ok["extended"], {"nvidia.com/gpu": 1})
        self.assertEqual(ok["labels"]["carpenter.dev/instance-gpu-name"], "rtx-4090")
        self.assertEqual(ice["errname"], "EINSUFFICIENT_CAPACITY", ice)
        self.assertIn("PCI mapping gpu has 0 of 1 devices free on lab/pve2", ice["message"])
        self.assertEqual(ice["reserves"], 0)   # nothing was cloned for it
        conf = [r["params"] for r in self.requests() if r["method"] == "POST" and
                r.get("rel") == "/nodes/pve2/qemu/%d/config" % ok["vmid"]]
        self.assertEqual(len(conf), 1)
        self.assertEqual((conf[0]["hostpci0"], conf[0]["machine"], conf[0]["balloon"]),
                         ("mapping=gpu,pcie=1", "q35", "0"))
        starts = [r for r in self.requests() if r.get("rel") == "/nodes/pve2/qemu/%d/status/"
                  "start" % ok["vmid"]]
        self.assertEqual([r["status"] for r in starts], [200])   # the start passed
        # the offering is unavailable now; deleting gives the device back
        after = {t["name"]: t for t in self.of(ev, "types")[2]["types"]}
        self.assertFalse(any(o["available"] for o in after["g1.2VCPU-8GB"]["offerings"]))
        again = {t["name"]: t for t in self.of(ev, "types")[3]["types"]}
        self.assertEqual({o["zone"]: o["available"]
                          for o in again["g1.2VCPU-8GB"]["offerings"]},
                         {"pve1": False, "pve2": True, "pve3": False})
        self.assert_clean([ok["vmid"]])
        mapping_reads = [r for r in self.requests() if r.get("rel") == "/cluster/mapping/pci"]
        self.assertTrue(mapping_reads)

    def test_device_held_by_another_vm(self):
        # someone else's VM on pve2 runs with the only device
        self.sim.clone(500, src=9010, node="pve2", name="plex")
        self.assertEqual(self.sim.put("/nodes/pve2/qemu/500/config",
                                      hostpci0="mapping=gpu").status, 200)
        self.sim.run_task(self.sim.post("/nodes/pve2/qemu/500/status/start"))
        self.sim.tick()   # the listing shows it running (pvestatd)
        try:
            ev = self.drive(gpu_nodeclass(), "types", "refresh", "types",
                            "create:count=1,prefix=busy,type=g1.2VCPU-8GB")
            g = {t["name"]: t for t in self.of(ev, "types")[1]["types"]}["g1.2VCPU-8GB"]
            self.assertFalse(any(o["available"] for o in g["offerings"]))
            c = self.of(ev, "create")[0]
            self.assertEqual(c["errname"], "EINSUFFICIENT_CAPACITY", c)
            self.assertIn("PCI mapping gpu has 0 of 1 devices free on lab/pve2", c["message"])
            configs = [r for r in self.requests() if r.get("rel") == "/nodes/pve2/qemu/500/config"
                       and r["method"] == "GET"]
            self.assertEqual(len(configs), 1)   # read once for its devices
        finally:
            self.sim.run_task(self.sim.post("/nodes/pve2/qemu/500/status/stop"))
            self.sim.run_task(self.sim.delete("/nodes/pve2/qemu/500"))


def main():
    global DRIVER, SCHEMA
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    DRIVER = sys.argv.pop(1)
    SCHEMA = Schema()
    prog = unittest.main(verbosity=2, exit=False)
    if LATENCY:
        print("\nlatency on pve-sim (clone 0.2 s, start 0.1 s, stop 0.1 s, destroy 0.1 s):")
        for k, v in LATENCY.items():
            v = sorted(v)
            print("  %-45s n=%-3d min %5d ms  median %5d ms  max %5d ms"
                  % (k, len(v), v[0], v[len(v) // 2], v[-1]))
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
