"""Shared by the chart tests: rendering charts/carpenter with
hack/chart-render.sh (Go text/template + sprig, as `helm template`), reading
the YAML it prints, and finding the rendered objects."""
import os
import subprocess
import sys

SOURCE_DIR = os.environ.get(
    "CARP_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("CARP_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
CHART = os.path.join(SOURCE_DIR, "charts", "carpenter")
RENDER = os.path.join(SOURCE_DIR, "hack", "chart-render.sh")
VALUES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "values")

sys.path.insert(0, os.path.join(SOURCE_DIR, "hack"))
from kubesim import yamlmini  # noqa: E402  (checked against kubectl's parser)


class RenderError(Exception):
    pass


def render_text(values=(), sets=(), name="carpenter", namespace="kube-system",
                include_crds=False):
    """The chart rendered with the values files (paths, or names of files
    in test/chart/values/) and --set pairs; raises RenderError with the
    renderer's message when it fails."""
    cmd = [RENDER, "--name", name, "--namespace", namespace]
    if include_crds:
        cmd.append("--include-crds")
    for v in values:
        cmd += ["-f", v if os.sep in v else os.path.join(VALUES_DIR, v)]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ, CARP_BUILD_DIR=BUILD_DIR)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=300)
    if r.returncode != 0:
        raise RenderError(r.stderr.strip())
    return r.stdout


def load_docs(text):
    return [d for d in yamlmini.load_all(text) if d]


def render(*args, **kw):
    return load_docs(render_text(*args, **kw))


def find(docs, kind, name=None):
    """The rendered objects of a kind (and name)."""
    return [d for d in docs if d.get("kind") == kind and
            (name is None or d["metadata"]["name"] == name)]


def one(docs, kind, name=None):
    got = find(docs, kind, name)
    if len(got) != 1:
        raise AssertionError("want one %s%s, got %d" %
                             (kind, " " + name if name else "", len(got)))
    return got[0]
