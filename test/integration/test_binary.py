"""The carpenter binary as users and Kubernetes see it: flags, exit codes,
the metrics and health endpoints (checked with promtool), and a graceful
shutdown on SIGTERM and SIGINT."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from carptest import CARPENTER, Carpenter, http_get  # noqa: E402
from sims import CRDS, KubeSim, wait_until  # noqa: E402

DESIGN_FLAGS = {
    "--kubeconfig": "KUBECONFIG", "--pve-config": "PVE_CONFIG",
    "--metrics-port": "METRICS_PORT",
    "--health-probe-port": "HEALTH_PROBE_PORT",
    "--leader-elect": "LEADER_ELECT",
    "--leader-election-namespace": "LEADER_ELECTION_NAMESPACE",
    "--log-level": "LOG_LEVEL", "--log-format": "LOG_FORMAT",
    "--batch-idle-duration": "BATCH_IDLE_DURATION",
    "--batch-max-duration": "BATCH_MAX_DURATION",
    "--kube-client-qps": "KUBE_CLIENT_QPS",
    "--kube-client-burst": "KUBE_CLIENT_BURST",
}


def run(*args, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([CARPENTER, *args], capture_output=True, text=True,
                          env=full_env, timeout=10)


class FlagsTest(unittest.TestCase):
    def test_help_documents_every_flag(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        for flag, env in DESIGN_FLAGS.items():
            self.assertRegex(r.stdout, re.escape(flag) + r" \S+\s+\(env " +
                             re.escape(env) + r"\)")
        self.assertIn("--version", r.stdout)

    def test_version(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^carpenter \d+\.\d+\.\d+ \(commit \S+\)")

    def test_readyz_waits_for_crds(self):
        sim = KubeSim()  # no CRDs installed
        self.addCleanup(sim.stop)
        c = Carpenter("--kubeconfig", sim.kubeconfig, "--leader-elect=false",
                      "--metrics-port=0", "--health-probe-port=0")
        self.addCleanup(c.stop, signal.SIGKILL)
        base = "http://127.0.0.1:%d" % c.port("health")
        time.sleep(1.5)
        status, _, body = http_get(base + "/readyz?verbose")
        self.assertEqual(status, 503)
        self.assertIn("[-]crds failed", body)

    def test_old_or_incomplete_server_is_named_and_not_ready(self):
        """Kubernetes 1.20 (as recorded: no policy/v1) and a current
        server without policy/v1: one ERROR naming what is missing, once
        (the check repeats every 10 s), and /readyz failing with it."""
        crds = []
        for c in CRDS:
            crds += ["--crds", c]
        cases = [(("--server-version", "1.20.2", "--omit-api", "policy/v1"),
                  "Kubernetes v1.20.2 is older than 1.25, the oldest "
                  "Carpenter supports; the server does not serve policy/v1 "
                  "Eviction (pods/eviction) (Kubernetes 1.22), policy/v1 "
                  "poddisruptionbudgets (Kubernetes 1.21)"),
                 (("--omit-api", "policy/v1"),
                  "the server does not serve policy/v1 Eviction "
                  "(pods/eviction) (Kubernetes 1.22), policy/v1 "
                  "poddisruptionbudgets (Kubernetes 1.21)")]
        runs = []
        for args, problem in cases:
            sim = KubeSim(*crds, *args)
            self.addCleanup(shutil.rmtree, sim.workdir, ignore_errors=True)
            self.addCleanup(sim.stop)
            c = Carpenter("--kubeconfig", sim.kubeconfig,
                          "--leader-elect=false", "--metrics-port=0",
                          "--health-probe-port=0")
            self.addCleanup(c.stop, signal.SIGKILL)
            runs.append((c, problem))
        time.sleep(11)  # a second round of checks
        for c, problem in runs:
            errors = [r for r in c.records() if r.get("level") == "ERROR"]
            self.assertEqual(len(errors), 1, "\n".join(c.lines))
            self.assertEqual(errors[0]["message"], "the Kubernetes API server "
                             "lacks what Carpenter needs; not ready")
            self.assertEqual(errors[0]["problem"], problem)
            base = "http://127.0.0.1:%d" % c.port("health")
            status, _, body = http_get(base + "/readyz?verbose")
            self.assertEqual(status, 503)
            self.assertIn("[-]kubernetes failed: " + problem + "\n", body)
            self.assertIn("[+]crds ok", body)

    def test_bad_values_exit_2_naming_the_flag(self):
        for args, env, want in [
                (["--metrics-port", "http"], None, "--metrics-port"),
                (["--log-level=verbose"], None, "--log-level"),
                ([], {"BATCH_MAX_DURATION": "forever"}, "BATCH_MAX_DURATION"),
                (["--unknown"], None, "unknown flag --unknown")]:
            r = run(*args, env=env)
            self.assertEqual(r.returncode, 2, (args, env, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(r.stdout, "")


    def test_broken_kube_config_exits_2(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "kubeconfig")
            with open(bad, "w") as f:
                f.write("current-context: x\ncontexts: [unclosed\n")
            for args, env, want in [
                    (["--kubeconfig", bad], None, bad + ":"),
                    (["--kubeconfig", os.path.join(d, "missing")], None,
                     "No such file"),
                    ([], {"KUBERNETES_SERVICE_HOST": ""},
                     "KUBERNETES_SERVICE_HOST")]:
                r = run(*args, "--metrics-port=0", "--health-probe-port=0",
                        env=env)
                self.assertEqual(r.returncode, 2, (args, r.stderr))
                self.assertIn(want, r.stderr)

    def test_broken_pve_config_exits_2(self):
        sim = KubeSim()
        self.addCleanup(sim.stop)
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "pve.yaml")
            with open(bad, "w") as f:
                f.write("clusters:\n  - region: a\n    url: 42\n")
            r = run("--kubeconfig", sim.kubeconfig, "--pve-config", bad,
                    "--metrics-port=0", "--health-probe-port=0")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("invalid Proxmox VE configuration", r.stderr)
            self.assertIn(bad + ":", r.stderr)


class EndpointsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        args = []
        for c in CRDS:
            args += ["--crds", c]
        cls.sim = KubeSim(*args)

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def start(self, *extra):
        return Carpenter("--kubeconfig", self.sim.kubeconfig,
                         "--leader-elect=false", *extra)

    def setUp(self):
        self.c = self.start("--metrics-port=0", "--health-probe-port=0")
        self.addCleanup(self.c.stop, signal.SIGKILL)
        self.metrics = self.c.port("metrics")
        self.health = self.c.port("health")

    def test_metrics_pass_promtool(self):
        status, headers, body = http_get(
            "http://127.0.0.1:%d/metrics" % self.metrics)
        self.assertEqual(status, 200)
        self.assertIn("version=0.0.4", headers["Content-Type"])
        for name in ("process_resident_memory_bytes",
                     "process_cpu_seconds_total", "process_start_time_seconds",
                     "process_open_fds", "karpenter_build_info"):
            self.assertRegex(body, r"(?m)^%s[ {]" % name)
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus)")
        r = subprocess.run([promtool, "check", "metrics"], input=body,
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.strip(), "")

    def test_health_and_errors(self):
        base = "http://127.0.0.1:%d" % self.health
        self.assertEqual(http_get(base + "/healthz")[0], 200)
        self.assertEqual(http_get(base + "/healthz")[2], "ok")
        # Ready once every cache has synced and the CRDs are found.
        wait_until(lambda: http_get(base + "/readyz")[0] == 200, 20,
                   what="/readyz 200")
        self.assertIn("[+]informers-synced ok",
                      http_get(base + "/readyz?verbose")[2])
        self.assertEqual(http_get(base + "/nothing")[0], 404)
        self.assertEqual(http_get(
            "http://127.0.0.1:%d/healthz" % self.metrics)[0], 404)

    def test_graceful_shutdown(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            c = self.start("--metrics-port=0", "--health-probe-port=0")
            c.port("health")
            # stop() waits (generously) and then kills: exit code 0 means
            # Carpenter stopped by itself
            code, _ = c.stop(sig, timeout=60.0)
            self.assertEqual(code, 0, "\n".join(c.lines))
            self.assertTrue(any(r.get("message") == "stopped"
                                for r in c.records()))
            self.assertFalse(any(r.get("level") == "ERROR"
                                 for r in c.records()), "\n".join(c.lines))

    def test_ports_bind_to_the_flags_addresses(self):
        # Loopback only by default; elsewhere when the flags say so.
        self.assertEqual([r["host"] for r in self.c.records()
                          if r.get("message") == "serving"],
                         ["127.0.0.1", "127.0.0.1"])
        c = self.start("--metrics-port=0", "--health-probe-port=0",
                       "--metrics-bind-address=127.0.0.2",
                       "--health-probe-bind-address=127.0.0.3")
        self.addCleanup(c.stop, signal.SIGKILL)
        metrics, health = c.port("metrics"), c.port("health")
        self.assertEqual(http_get("http://127.0.0.2:%d/metrics" %
                                  metrics)[0], 200)
        self.assertEqual(http_get("http://127.0.0.3:%d/healthz" %
                                  health)[0], 200)
        for url in ("http://127.0.0.1:%d/metrics" % metrics,
                    "http://127.0.0.1:%d/healthz" % health):
            with self.assertRaises(OSError):
                http_get(url)

    def test_port_in_use_fails(self):
        c = self.start("--metrics-port=%d" % self.metrics,
                       "--health-probe-port=0")
        self.assertEqual(c.wait_exit(5), 1)
        self.assertTrue(any(r.get("message") == "cannot listen"
                            for r in c.records()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
