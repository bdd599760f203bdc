"""pve-sim transport: config-out, TLS fingerprint, token auth and the delayed
401, envelope and numbers-as-strings, PVE 8 vs 9 error shapes, 501s,
request encoding quirks, gzip, request log."""

import hashlib
import json
import os
import re
import ssl
import subprocess
import time
import unittest

from simtest import Sim, SimCase, main, read_config


class ConfigAndTLS(SimCase):
    def test_config_out(self):
        with open(self.sim.cfg) as f:
            text = f.read()
        self.assertTrue(text.startswith("clusters:\n  - region: "), text)
        c = read_config(self.sim.cfg)
        self.assertEqual(c["region"], "lab")
        self.assertEqual(c["tokenID"], "carpenter@pve!carpenter")
        self.assertRegex(c["tokenSecret"], r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
                                           r"[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        self.assertEqual(c["url"], self.sim.url)
        self.assertRegex(c["url"], r"^https://127\.0\.0\.1:\d+/api2/json$")
        self.assertRegex(c["fingerprint"], r"^([0-9A-F]{2}:){31}[0-9A-F]{2}$")
        n = read_config(self.sim.cfg_np)
        self.assertEqual(n["tokenID"], "carpenter@pve!noperm")
        self.assertNotEqual(n["tokenSecret"], c["tokenSecret"])

    def test_fingerprint_matches_served_certificate(self):
        der = ssl.get_server_certificate((self.sim.host, self.sim.port))
        fp = hashlib.sha256(ssl.PEM_cert_to_DER_cert(der)).hexdigest().upper()
        self.assertEqual(":".join(fp[i:i + 2] for i in range(0, 64, 2)), self.sim.fingerprint)
        nodes = self.sim.ok(self.sim.get("/nodes"))
        self.assertEqual({n["ssl_fingerprint"] for n in nodes}, {self.sim.fingerprint})

    def test_curl_pinned_and_reason_phrase(self):
        # what a libcurl client sees: status line with the PVE error text
        out = subprocess.run(
            ["curl", "-sk", "-i", "-H", "Authorization: PVEAPIToken=" + self.sim.token,
             self.sim.url + "/nodes/pve1/qemu/4242/config"],
            stdout=subprocess.PIPE, check=True, text=True).stdout
        first = out.splitlines()[0]
        self.assertEqual(first.rstrip("\r"), "HTTP/1.1 500 Configuration file "
                                             "'nodes/pve1/qemu-server/4242.conf' does not exist")
        self.assertTrue(out.rstrip().endswith('{"data":null}'), out)


class Auth(SimCase):
    sim_args = ("--bad-token-delay", "3")

    def test_bad_secret_401_after_3s_no_body(self):
        t0 = time.monotonic()
        r = self.sim.api("GET", "/version", token="carpenter@pve!carpenter=wrong")
        took = time.monotonic() - t0
        self.assertEqual((r.status, r.reason), (401, "invalid token value!"))
        self.assertEqual(r.raw, "")
        self.assertGreaterEqual(took, 2.9)
        self.assertEqual(r.headers.getheader("Connection"), "close")

    def test_401_variants(self):
        cases = [
            (None, "No ticket"),
            ("carpenter@pve!nosuch=x", "no such token 'nosuch' for user 'carpenter@pve'"),
            ("bob@pve!carpenter=x", "no such user ('bob@pve')"),
            ("notatoken=x", "'notatoken' is not a valid token ID"),
        ]
        for tok, reason in cases:
            h = {} if tok is None else {"Authorization": "PVEAPIToken=" + tok}
            t0 = time.monotonic()
            r = self.sim.raw("GET", "/api2/json/version", headers=h, token=False)
            self.assertEqual((r.status, r.reason), (401, reason))
            self.assertGreaterEqual(time.monotonic() - t0, 2.9)

    def test_good_token_and_space_form(self):
        self.assertEqual(self.sim.get("/version").status, 200)
        r = self.sim.raw("GET", "/api2/json/version",
                         headers={"Authorization": "PVEAPIToken " + self.sim.token}, token=False)
        self.assertEqual(r.status, 200)


class Envelope(SimCase):
    def test_envelope_and_strings(self):
        r = self.sim.get("/version")
        self.assertEqual(r.headers.getheader("Content-Type"), "application/json;charset=UTF-8")
        self.assertEqual(set(r.json), {"data"})
        self.assertEqual(r.data["release"], "8.4")
        nid = self.sim.get("/cluster/nextid")
        self.assertEqual(nid.raw, '{"data":"100"}')
        conf = self.sim.ok(self.sim.get("/nodes/pve1/qemu/9000/config"))
        self.assertEqual(conf["memory"], "2048")        # memory is a string (PVE >= 8.1)
        self.assertEqual(conf["cores"], 2)              # integer keys are numbers
        self.assertEqual(conf["template"], 1)           # booleans are 0/1 numbers
        self.assertEqual(conf["agent"], "1")            # property strings stay strings
        self.assertRegex(conf["digest"], r"^[0-9a-f]{40}$")
        res = self.sim.ok(self.sim.get("/cluster/resources", type="vm"))
        self.assertIsInstance(res[0]["vmid"], int)

    def test_pve8_error_shape(self):
        r = self.sim.get("/nodes/pve1/qemu/777/status/current")
        self.assertEqual((r.status, r.reason),
                         (500, "Configuration file 'nodes/pve1/qemu-server/777.conf' does not "
                               "exist"))
        self.assertEqual(r.raw, '{"data":null}')

    def test_501s(self):
        r = self.sim.get("/nodes/pve1/nosuchthing")
        self.assertEqual((r.status, r.reason),
                         (501, "Method 'GET /nodes/pve1/nosuchthing' not implemented"))
        self.assertEqual(r.json, {"data": None})
        r = self.sim.api("DELETE", "/version")
        self.assertEqual((r.status, r.reason), (501, "Method 'DELETE /version' not implemented"))
        r = self.sim.raw("PATCH", "/api2/json/version")
        self.assertEqual((r.status, r.reason), (501, "method 'PATCH' not available"))
        r = self.sim.raw("GET", "/api2/json/version", body="x=1",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual((r.status, r.reason), (501, "Unexpected content for method 'GET'"))
        r = self.sim.raw("GET", "/api2/extjs/version")
        self.assertEqual(r.status, 501)

    def test_unknown_node_is_hostname_lookup_error(self):
        r = self.sim.get("/nodes/pve9/qemu")
        self.assertEqual(r.status, 500)
        self.assertTrue(r.reason.startswith("hostname lookup 'pve9' failed"), r.reason)

    def test_connection_reuse_and_close_on_error(self):
        c = self.sim.conn()
        r1 = self.sim.raw("GET", "/api2/json/version", conn=c)
        r2 = self.sim.raw("GET", "/api2/json/cluster/nextid", conn=c)
        self.assertEqual((r1.status, r2.status), (200, 200))
        self.assertEqual(r2.headers.getheader("Connection"), "Keep-Alive")
        r3 = self.sim.raw("GET", "/api2/json/nodes/pve1/qemu/5555/config", conn=c)
        self.assertEqual(r3.headers.getheader("Connection"), "close")
        c.close()

    def test_gzip_when_accepted(self):
        r = self.sim.raw("GET", "/api2/json/cluster/resources",
                         headers={"Accept-Encoding": "gzip"})
        self.assertEqual(r.headers.getheader("Content-Encoding"), "gzip")
        self.assertTrue(any(x.get("name") == "ubuntu" for x in r.data))
        r = self.sim.raw("GET", "/api2/json/cluster/resources")
        self.assertIsNone(r.headers.getheader("Content-Encoding"))
        r = self.sim.raw("GET", "/api2/json/version", headers={"Accept-Encoding": "gzip"})
        self.assertIsNone(r.headers.getheader("Content-Encoding"))  # small: not compressed

    def test_form_encoding_quirks(self):
        # PVE splits form bodies on ';' too, and cuts a value at a second raw '='
        self.sim.clone(300, name="quirks")
        body = "description=a;b"
        r = self.sim.raw("PUT", "/api2/json/nodes/pve1/qemu/300/config", body,
                         {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json["errors"], {"b": "property is not defined in schema and the "
                                                 "schema does not allow additional properties"})
        body = "smbios1=uuid=1b1e5c1a-0000-4000-8000-000000000001,serial=cHJvdmlkZXI="
        r = self.sim.raw("PUT", "/api2/json/nodes/pve1/qemu/300/config", body,
                         {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(r.status, 400, r)   # value became "uuid": no default key
        self.assertIn("smbios1", r.json["errors"])
        # properly encoded, the same value is fine; so is a JSON body
        r = self.sim.put("/nodes/pve1/qemu/300/config",
                         smbios1="uuid=1b1e5c1a-0000-4000-8000-000000000001,serial=cHJvdmlkZXI=")
        self.assertEqual(r.status, 200, r)
        r = self.sim.api("PUT", "/nodes/pve1/qemu/300/config", {"cores": 3, "onboot": True},
                         json_body=True)
        self.assertEqual(r.status, 200, r)
        conf = self.sim.ok(self.sim.get("/nodes/pve1/qemu/300/config"))
        self.assertEqual((conf["cores"], conf["onboot"]), (3, 1))

    def test_request_log(self):
        self.sim.get("/cluster/nextid", vmid="4321")
        self.sim.api("GET", "/version", token="carpenter@pve!carpenter=bad")
        recs = self.sim.requests()
        nx = [r for r in recs if r["path"] == "/api2/json/cluster/nextid"][-1]
        self.assertEqual(nx["method"], "GET")
        self.assertEqual(nx["route"], "/cluster/nextid")
        self.assertEqual(nx["params"], {"vmid": "4321"})
        self.assertEqual(nx["status"], 200)
        self.assertEqual(nx["token"], "carpenter@pve!carpenter")
        bad = [r for r in recs if r["status"] == 401][-1]
        self.assertNotIn("bad", json.dumps(bad))  # secrets are never logged
        for r in recs:
            self.assertTrue({"ts", "method", "path", "status", "reason"} <= set(r), r)


class Pve9(SimCase):
    sim_args = ("--pve-version", "9")

    def test_message_field(self):
        r = self.sim.get("/nodes/pve1/qemu/777/config")
        self.assertEqual(r.status, 500)
        self.assertEqual(r.json, {"data": None, "message": "Configuration file "
                                  "'nodes/pve1/qemu-server/777.conf' does not exist\n"})
        r = self.sim.get("/cluster/nextid", vmid="9000")
        self.assertEqual(r.json, {"data": None, "errors": {"vmid": "VM 9000 already exists"},
                                  "message": "Parameter verification failed.\n"})
        self.assertEqual(self.sim.get("/version").data["release"], "9.0")


if __name__ == "__main__":
    main()
