"""The Dockerfile's runtime stage installs what the binary needs to run.

docker cannot run on the build machines, so instead of building the image
this reads the Dockerfile's last stage, whose `apt-get install` names the
runtime packages, and checks them against the binary of this build:

- every library the binary itself links (its NEEDED entries) comes from a
  package of that list, or from libc6, the C library every Debian image
  has (it is Essential: dpkg and the shell need it) and the one package the
  list may leave out;
- every library `ldd` resolves (the indirect ones too) comes from a package
  in the dependency closure of that list (Depends and Pre-Depends, as
  apt-get installs them), so the image resolves them all;
- every listed package provides one of those libraries, but ca-certificates
  (the CA bundle for TLS to the Kubernetes and Proxmox APIs), so the list
  holds nothing superfluous.

Libraries are mapped to packages with `dpkg -S`; the machine must be the
Debian release the Dockerfile builds on (skipped otherwise, and for a
sanitizer build, whose libasan is no runtime dependency)."""
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chartlib  # noqa: E402

DOCKERFILE = os.path.join(chartlib.SOURCE_DIR, "Dockerfile")
BINARY = os.path.join(chartlib.BUILD_DIR, "carpenter")
BASE = {"libc6": "the C library, Essential in every Debian image"}
NOT_LIBRARIES = {"ca-certificates": "CA bundle for TLS (libcurl's default "
                 "trust store when no caFile or fingerprint is given)"}


def instructions(text):
    """(keyword, argument) of each Dockerfile instruction, continuation
    lines joined and comments dropped."""
    out, cur = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if s.startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        kw, _, arg = cur.partition(" ")
        out.append((kw.upper(), arg.strip()))
        cur = ""
    return out


def stages(text):
    """[(FROM argument, [instructions])] and the ARG defaults before the
    first FROM."""
    args, out = {}, []
    for kw, arg in instructions(text):
        if kw == "FROM":
            out.append((arg, []))
        elif not out and kw == "ARG":
            k, _, v = arg.partition("=")
            args[k] = v
        elif out:
            out[-1][1].append((kw, arg))
    return out, args


def installed_by(run):
    """Packages of the `apt-get install` commands of a RUN."""
    pkgs = []
    for cmd in re.split(r"&&|;", run):
        words = cmd.split()
        if "install" not in words or not any(w.endswith("apt-get")
                                              for w in words):
            continue
        for w in words[words.index("install") + 1:]:
            if not w.startswith("-"):
                pkgs.append(w)
    return pkgs


def packages_of(paths):
    """{path: Debian package} with one `dpkg -S` (usrmerge: a file may be
    registered under /lib or /usr/lib, and under its real path)."""
    cands = {}
    for path in paths:
        for p in (path, os.path.realpath(path)):
            for c in (p, p[4:] if p.startswith("/usr/") else "/usr" + p):
                cands.setdefault(c, path)
    r = subprocess.run(["dpkg", "-S", *sorted(cands)], capture_output=True,
                       text=True)
    out = {}
    for line in r.stdout.splitlines():
        pkg, _, file = line.partition(": ")
        if file in cands:
            out.setdefault(cands[file], pkg.split(":")[0].strip())
    return out


def depends(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}",
                        pkg], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    out = []
    for alt in r.stdout.split(","):
        alt = alt.strip()
        if not alt:
            continue
        # "a (>= 1) | b": the alternatives, the installed one first.
        names = [re.sub(r"[ :(].*", "", a.strip()) for a in alt.split("|")]
        for n in names:
            if is_installed(n):
                out.append(n)
                break
        else:
            out.append(names[0])
    return out


def is_installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg],
                       capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


class ImageTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(DOCKERFILE) as f:
            cls.stages, cls.args = stages(f.read())
        if not os.path.exists(BINARY):
            raise unittest.SkipTest("no %s" % BINARY)
        ldd = subprocess.run(["ldd", BINARY], capture_output=True,
                             text=True, check=True).stdout
        cls.libs = {}
        for line in ldd.splitlines():
            m = re.match(r"^\s*(\S+) => (/\S+)", line)
            if m:
                cls.libs[m.group(1)] = m.group(2)
            m = re.match(r"^\s*(/\S+) \(", line)
            if m:
                cls.libs[os.path.basename(m.group(1))] = m.group(1)
        if any(re.match(r"lib(a|ub|t|l)san", s) for s in cls.libs):
            raise unittest.SkipTest("a sanitizer build; the image is built "
                                    "without sanitizers")
        readelf = subprocess.run(["readelf", "-d", BINARY],
                                 capture_output=True, text=True,
                                 check=True).stdout
        cls.needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]",
                                readelf)

    def runtime(self):
        base, body = self.stages[-1]
        pkgs = []
        for kw, arg in body:
            if kw == "RUN":
                pkgs += installed_by(arg)
        return base, pkgs

    def test_dockerfile_shape(self):
        self.assertEqual(len(self.stages), 2, "a build and a runtime stage")
        build, body = self.stages[0]
        self.assertRegex(build, r"^debian:\S+ AS build$")
        self.assertIn("libuv1-dev", installed_by(
            " ".join(a for k, a in body if k == "RUN")))
        base, body = self.stages[-1]
        self.assertRegex(base, r"^debian:\S+-slim AS runtime$")
        kws = dict(body)
        self.assertIn("COPY", kws)
        self.assertIn("--from=build", kws["COPY"])
        user = kws.get("USER", "0").split(":")[0]
        self.assertTrue(user.isdigit() and int(user) != 0,
                        "USER must be a numeric non-root user (runAsNonRoot "
                        "can only check a number)")
        self.assertEqual(kws.get("ENTRYPOINT"), '["/usr/local/bin/carpenter"]')

    def release(self):
        base, _ = self.runtime()
        m = re.match(r"^debian:(\S+?)-slim", base)
        rel = m.group(1)
        for k, v in self.args.items():
            rel = rel.replace("${%s}" % k, v).replace("$" + k, v)
        with open("/etc/os-release") as f:
            host = dict(line.rstrip("\n").split("=", 1) for line in f
                        if "=" in line)
        host_rel = host.get("VERSION_CODENAME", "").strip('"')
        if host_rel != rel:
            self.skipTest("this machine runs Debian %r, the image %r: dpkg "
                          "cannot tell the image's packages" % (host_rel, rel))
        return rel

    def test_runtime_packages_cover_ldd(self):
        self.release()
        _, pkgs = self.runtime()
        self.assertTrue(pkgs, "no apt-get install in the runtime stage")
        by_path = packages_of(self.libs.values())
        owner = {}
        for soname, path in sorted(self.libs.items()):
            self.assertIn(path, by_path, "dpkg -S knows no package for %s"
                          % path)
            owner[soname] = by_path[path]
        # Direct libraries: listed explicitly (or libc6).
        for soname in self.needed:
            self.assertIn(soname, owner, "NEEDED %s not resolved" % soname)
            self.assertTrue(owner[soname] in pkgs or owner[soname] in BASE,
                            "%s (package %s) is linked by the binary but "
                            "the runtime stage does not install %s" %
                            (soname, owner[soname], owner[soname]))
        # Every library: within what apt-get installs for the list.
        closure, todo = set(), list(pkgs) + list(BASE)
        while todo:
            p = todo.pop()
            if p in closure:
                continue
            closure.add(p)
            deps = depends(p)
            self.assertIsNotNone(deps, "package %s is not known to dpkg" % p)
            todo += deps
        for soname, pkg in sorted(owner.items()):
            self.assertIn(pkg, closure, "%s (package %s) would be missing "
                          "from the image" % (soname, pkg))
        # Nothing superfluous.
        for p in pkgs:
            if p in NOT_LIBRARIES:
                continue
            self.assertIn(p, owner.values(), "the runtime stage installs "
                          "%s, which provides none of the binary's libraries"
                          % p)
        print("\nruntime packages %s cover %d libraries (%d linked directly)"
              % (" ".join(pkgs), len(owner), len(self.needed)))


if __name__ == "__main__":
    r = unittest.main(verbosity=2, exit=False).result
    if r.failures or r.errors:
        sys.exit(1)
    # Everything skipped: tell ctest (SKIP_RETURN_CODE 77).
    sys.exit(77 if r.testsRun == len(r.skipped) or
             (r.testsRun == 0 and r.skipped) else 0)
