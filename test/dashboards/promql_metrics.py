#!/usr/bin/env python3
"""Which metrics do Grafana dashboards need, and does Carpenter export them?

Reads Grafana dashboard JSON files, takes every PromQL query in them (each
panel target's expr, nested rows included, and the template variables'
queries), finds the metric names each query reads, and marks each name:

  ok          Carpenter exports it (with the type the query needs)
  TYPE        Carpenter exports the family, but not as the query reads it
              (say quantile series of a summary from a histogram)
  MISSING     Carpenter does not export it
  external    another exporter's (node_exporter's node_*, kube-state-
              metrics' kube_*, cAdvisor's container_*)

What Carpenter exports comes from its C sources (every family registered
with carp_metrics_counter/_gauge/_histogram/_summary/_stream, and the
metrics controller's stream() wrapper), or from a /metrics scrape given
with --metrics (its # TYPE lines).

usage: promql_metrics.py [--source DIR | --metrics FILE] [--json] DASHBOARD...

Text output: per dashboard, per panel, each query and its metrics; then a
summary of the metric names by status. --json prints the same as data.
Exit status 0 (it reports, it does not judge; tests judge its --json)."""
import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.path.join(HERE, "..", ".."))

EXTERNAL = (("node_", "node_exporter"), ("kube_", "kube-state-metrics"),
            ("container_", "cAdvisor"), ("machine_", "cAdvisor"))

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "offset", "and", "or", "unless", "inf", "nan", "atan2",
            "start", "end"}
IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


# ---- what Carpenter exports ----

def exported_from_source(root):
    """name -> type (counter, gauge, histogram, summary, untyped) of every
    family registered in the C sources under internal/ and controller/."""
    out = {}
    call = re.compile(
        r"carp_metrics_(counter|gauge|histogram|summary|stream)\s*\(\s*"
        r"[^,]+,\s*\"([a-z_:][a-z0-9_:]*)\"(?=(.{0,400}))", re.S)
    wrapper = re.compile(
        r"\b(?:carp__mctl_)?stream\(\s*\w+,\s*\"([a-z_:][a-z0-9_:]*)\"")
    # Names kept in tables and registered in a loop (streamed gauges).
    literal = re.compile(r"\"((?:karpenter|carpenter|controller_runtime|"
                         r"workqueue|rest_client|leader_election)_"
                         r"[a-z0-9_:]+)\"")
    for path in glob.glob(os.path.join(root, "internal", "**", "*.c"),
                          recursive=True) + \
            glob.glob(os.path.join(root, "controller", "*.c")):
        with open(path) as f:
            text = f.read()
        for kind, name, rest in call.findall(text):
            if kind == "stream":
                m = re.search(r"CARP_METRIC_(GAUGE|COUNTER|UNTYPED)", rest)
                kind = m.group(1).lower() if m else "gauge"
            out[name] = kind
        # internal/metricsctl's carp__mctl_stream(): gauges, untyped when
        # "_count" or "_total".
        for name in wrapper.findall(text):
            out.setdefault(name, "untyped" if name.endswith(
                ("_count", "_total")) else "gauge")
        if "carp_metrics_stream" in text:
            for name in literal.findall(text):
                out.setdefault(name, "gauge")
    return out


def exported_from_scrape(path):
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"# TYPE (\S+) (\S+)", line)
            if m:
                out[m.group(1)] = m.group(2)
    return out


# ---- the queries ----

def queries(dash):
    """(panel title, query) for every query of a dashboard."""
    out = []

    def walk(panels):
        for p in panels or []:
            for t in p.get("targets") or []:
                if t.get("expr"):
                    out.append((p.get("title", ""), t["expr"]))
            walk(p.get("panels"))
    walk(dash.get("panels"))
    for v in (dash.get("templating") or {}).get("list") or []:
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query" and isinstance(q, str) and q:
            out.append(("variable $" + v.get("name", ""), q))
    return out


def strip(expr):
    """The query without comments, strings, label matchers, ranges,
    grouping clauses and Grafana variables: what is left names metrics,
    functions, operators and numbers."""
    s = re.sub(r"#[^\n]*", " ", expr)
    s = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`', '""', s)
    # label_values(metric, label): the label is not a metric
    s = re.sub(r"label_values\(\s*([^,()]*(?:\{[^}]*\})?)\s*,[^)]*\)",
               r"label_values(\1)", s)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)",
               " ", s)
    s = re.sub(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]", " ", s)
    return s


def metric_names(expr):
    s = strip(expr)
    names = []
    for m in IDENT.finditer(s):
        name = m.group(0)
        after = s[m.end():].lstrip()
        if after.startswith("(") or name.lower() in KEYWORDS:
            continue
        if m.start() and (s[m.start() - 1].isdigit() or
                          s[m.start() - 1] == "."):
            continue  # the rest of a number: 1e5, 0x1f, 1.5e3
        if name not in names:
            names.append(name)
    return names


def needs_quantile(expr, name):
    return re.search(re.escape(name) + r"\s*\{[^}]*\bquantile\s*=", expr) \
        is not None


def status(name, expr, exported):
    """(status, detail) of one metric name in one query."""
    for prefix, who in EXTERNAL:
        if name.startswith(prefix):
            return "external", who
    typ = exported.get(name)
    if typ:
        if needs_quantile(expr, name) and typ != "summary":
            return "TYPE", "read as a summary (quantile=), exported as %s" % typ
        return "ok", typ
    for suffix, kinds in (("_bucket", ("histogram",)),
                          ("_sum", ("histogram", "summary")),
                          ("_count", ("histogram", "summary"))):
        if name.endswith(suffix):
            base = name[:-len(suffix)]
            if exported.get(base) in kinds:
                return "ok", "%s %s" % (exported[base], suffix[1:])
            if base in exported:
                return "TYPE", "needs a %s, exported as %s" % (
                    " or ".join(kinds), exported[base])
    return "MISSING", ""


def analyse(paths, exported):
    report = []
    for path in paths:
        with open(path) as f:
            dash = json.load(f)
        entries = []
        for title, expr in queries(dash):
            metrics = []
            for name in metric_names(expr):
                st, detail = status(name, expr, exported)
                metrics.append({"name": name, "status": st,
                                "detail": detail})
            entries.append({"panel": title, "query": expr,
                            "metrics": metrics})
        report.append({"dashboard": os.path.basename(path),
                       "title": dash.get("title", ""), "queries": entries})
    return report


def summary(report):
    by = {}
    for d in report:
        for q in d["queries"]:
            for m in q["metrics"]:
                cur = by.get(m["name"])
                # a name that fails in any query keeps its worst status
                rank = {"MISSING": 3, "TYPE": 2, "external": 1, "ok": 0}
                if cur is None or rank[m["status"]] > rank[cur[0]]:
                    by[m["name"]] = (m["status"], m["detail"])
    return by


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=SOURCE_DIR,
                    help="Carpenter's source tree (default: this one)")
    ap.add_argument("--metrics", help="a /metrics scrape to use instead")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("dashboards", nargs="+")
    a = ap.parse_args()
    exported = (exported_from_scrape(a.metrics) if a.metrics else
                exported_from_source(a.source))
    report = analyse(a.dashboards, exported)
    if a.json:
        json.dump({"dashboards": report,
                   "metrics": {k: {"status": v[0], "detail": v[1]}
                               for k, v in sorted(summary(report).items())}},
                  sys.stdout, indent=2)
        print()
        return 0
    for d in report:
        print("== %s (%s)" % (d["dashboard"], d["title"]))
        for q in d["queries"]:
            print("  [%s] %s" % (q["panel"], " ".join(q["query"].split())))
            for m in q["metrics"]:
                print("      %-8s %s%s" % (m["status"], m["name"],
                                           " (%s)" % m["detail"]
                                           if m["detail"] else ""))
    print("== metrics")
    for name, (st, detail) in sorted(summary(report).items(),
                                     key=lambda kv: (kv[1][0], kv[0])):
        print("  %-8s %s%s" % (st, name, " (%s)" % detail if detail else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
