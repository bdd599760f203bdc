#!/usr/bin/env python3
"""Checks that every module under internal/ declares, in the DEPS of its
carp_module() call, each module whose header its sources include. A
header says which module it belongs to on its first line ("Module X
(internal/path)"); a header without that line is an error too. A
header that includes another module's header makes its own module need
that one as well. Last, a few layering rules: the API types and the
metrics registry stay below the clients and servers (FORBIDDEN lists
what a module must not reach, even through its dependencies).

usage: hack/check-deps.py [source-dir]    (exit 1 and a list when wrong)"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..")
INCLUDE = os.path.join(ROOT, "include", "carpenter")
INTERNAL = os.path.join(ROOT, "internal")

# module library -> libraries it must never reach: the cached types are
# read by every layer and must not pull the kube client in; the metrics
# registry is rendered by whoever serves it.
FORBIDDEN = {
    "carp_api": {"carp_kube", "carp_http", "carp_informer"},
    "carp_metrics": {"carp_http"},
}


def header_modules(problems):
    """header name -> module directory (relative to internal/)."""
    owner = {}
    for name in sorted(os.listdir(INCLUDE)):
        if not name.endswith(".h"):
            continue
        with open(os.path.join(INCLUDE, name)) as f:
            first = f.readline()
        m = re.match(r"/\* Module \S+ \(internal/([\w/]+)\)", first)
        if not m:
            problems.append("include/carpenter/%s: its first line does not "
                            "say \"Module X (internal/...)\"" % name)
            continue
        if not os.path.isdir(os.path.join(INTERNAL, m.group(1))):
            problems.append("include/carpenter/%s: no directory internal/%s"
                            % (name, m.group(1)))
            continue
        owner[name] = m.group(1)
    return owner


def modules():
    """module directory -> (library name, DEPS set, its .c files)."""
    out = {}
    for d, _, files in os.walk(INTERNAL):
        if "CMakeLists.txt" not in files:
            continue
        with open(os.path.join(d, "CMakeLists.txt")) as f:
            text = f.read()
        m = re.search(r"carp_module\((\w+)(.*?)\)", text, re.S)
        if not m:
            continue
        body = m.group(2)
        deps = set()
        dm = re.search(r"\bDEPS\b(.*)", body, re.S)
        if dm:
            deps = set(dm.group(1).split())
        rel = os.path.relpath(d, INTERNAL)
        srcs = [os.path.join(d, f) for f in files if f.endswith(".c")]
        out[rel] = ("carp_" + m.group(1), deps, srcs)
    return out


def main():
    problems = []
    owner = header_modules(problems)
    mods = modules()
    lib_of = {rel: v[0] for rel, v in mods.items()}
    for rel, (lib, deps, srcs) in sorted(mods.items()):
        for src in sorted(srcs):
            with open(src) as f:
                text = f.read()
            for h in re.findall(r'#include "carpenter/(\w+\.h)"', text):
                mod = owner.get(h)
                if mod is None or mod == rel:
                    continue
                need = lib_of.get(mod)
                if need and need not in deps:
                    problems.append("%s: includes carpenter/%s (%s) but %s "
                                    "does not list it in DEPS" % (
                                        os.path.relpath(src, ROOT), h, need,
                                        lib))
    # a module's headers count as its sources
    for h, mod in sorted(owner.items()):
        lib = lib_of.get(mod)
        if not lib:
            continue
        with open(os.path.join(INCLUDE, h)) as f:
            text = f.read()
        for inc in re.findall(r'#include "carpenter/(\w+\.h)"', text):
            other = owner.get(inc)
            need = lib_of.get(other) if other and other != mod else None
            if need and need not in mods[mod][1]:
                problems.append("include/carpenter/%s: includes carpenter/%s "
                                "(%s) but %s does not list it in DEPS" % (
                                    h, inc, need, lib))
    deps_of = {v[0]: v[1] for v in mods.values()}
    for lib, banned in sorted(FORBIDDEN.items()):
        seen, todo = set(), list(deps_of.get(lib, ()))
        while todo:
            d = todo.pop()
            if d in seen:
                continue
            seen.add(d)
            todo.extend(deps_of.get(d, ()))
        for b in sorted(banned & seen):
            problems.append("%s reaches %s through its DEPS: that layering is "
                            "not allowed" % (lib, b))
    for p in problems:
        print(p)
    if problems:
        print("%d problem(s)" % len(problems))
        return 1
    print("every module declares the modules it includes (%d modules, %d "
          "headers); the layering holds" % (len(mods), len(owner)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
