"""Helpers shared by the integration tests: locating the build, starting
the carpenter binary and reading the ports it logged, HTTP GETs."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SOURCE_DIR = os.environ.get(
    "CARP_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("CARP_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
CARPENTER = os.path.join(BUILD_DIR, "carpenter")
sys.path.insert(0, os.path.join(SOURCE_DIR, "test", "tools"))
import scratch  # noqa: E402,F401  (for the tests that import it from here)


class Carpenter:
    """A running carpenter process whose JSON log lines are collected."""

    def __init__(self, *args, env=None, log=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [CARPENTER, *args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=full_env, text=True)
        self.lines = []
        self.logfile = open(log, "a") if log else None
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            if self.logfile:
                self.logfile.write(line)
                self.logfile.flush()
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def records(self):
        out = []
        with self.cond:
            lines = list(self.lines)
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def wait_for(self, pred, timeout=10.0):
        """Waits for a log record satisfying pred; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            for rec in self.records():
                if pred(rec):
                    return rec
            with self.cond:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    break
                self.cond.wait(min(left, 0.2))
        raise AssertionError("log record not seen; log:\n" +
                             "\n".join(self.lines))

    def port(self, server):
        rec = self.wait_for(lambda r: r.get("message") == "serving" and
                            r.get("server") == server)
        return rec["port"]

    def wait_exit(self, timeout=10.0):
        """Waits for the process to exit on its own; returns its code."""
        code = self.proc.wait(timeout)
        self.reader.join(2)
        self._close_pipes()
        return code

    def _close_pipes(self):
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()
        if self.logfile:
            self.logfile.close()
            self.logfile = None

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends sig and returns (exit code, seconds to exit)."""
        start = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.reader.join(2)
        self._close_pipes()
        return code, time.monotonic() - start


def sanitized():
    """Whether the carpenter binary is an AddressSanitizer build: its RSS
    (shadow memory, the freed-memory quarantine) says nothing then."""
    try:
        out = subprocess.run(["ldd", CARPENTER], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "libasan" in out


def proc_cpu_seconds(pid):
    """User + system CPU seconds the process has used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_get(url, timeout=5.0):
    """Returns (status, headers, body text) without raising on 4xx/5xx."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()
