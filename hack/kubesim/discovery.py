"""Discovery documents: /version, /api, /api/v1, /apis, /apis/<group>,
/apis/<group>/<version> (custom resources appear as soon as their CRD is
established), and the health endpoints."""

import time

from .resources import VIRTUAL

SERVER_VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-kube-sim",
                  "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                  "buildDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "goVersion": "go1.23.0",
                  "compiler": "gc", "platform": "linux/amd64"}

SUB_VERBS = {"status": ["get", "patch", "update"], "scale": ["get", "patch", "update"],
             "binding": ["create"], "eviction": ["create"], "finalize": ["update"],
             "ephemeralcontainers": ["get", "patch", "update"]}

HEALTH_CHECKS = ["ping", "log", "etcd", "informer-sync", "poststarthook/start-apiextensions-informers",
                 "poststarthook/start-apiextensions-controllers", "poststarthook/crd-informer-synced",
                 "poststarthook/generic-apiserver-start-informers", "shutdown"]


def api_versions(server_address):
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group_entry(name, versions, preferred):
    vs = [{"groupVersion": name + "/" + v, "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": {"groupVersion": name + "/" + preferred,
                                                              "version": preferred}}


def api_group_list(registry):
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group_entry(g, vs, pref) for g, vs, pref in registry.groups()]}


def api_group(registry, group):
    for g, vs, pref in registry.groups():
        if g == group:
            d = {"kind": "APIGroup", "apiVersion": "v1"}
            d.update(_group_entry(g, vs, pref))
            return d
    return None


def resource_list(registry, group, version):
    rts = registry.resources(group, version)
    if not rts:
        return None
    rts.sort(key=lambda r: r.plural)
    res = []
    for rt in rts:
        d = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
             "verbs": rt.verbs}
        if rt.short_names:
            d["shortNames"] = rt.short_names
        if rt.categories:
            d["categories"] = rt.categories
        if (rt.group, rt.plural) not in VIRTUAL:
            d["storageVersionHash"] = rt.storage_version_hash
        res.append(d)
        for sub in sorted(rt.subresources):
            sd = {"name": rt.plural + "/" + sub, "singularName": "", "namespaced": rt.namespaced}
            if sub == "scale":
                sd.update({"group": "autoscaling", "version": "v1", "kind": "Scale"})
            elif sub == "eviction":
                # Without policy/v1 (before 1.21/1.22) Eviction is policy/v1beta1.
                ev = "v1" if registry.get("policy", "v1", "poddisruptionbudgets") else "v1beta1"
                sd.update({"group": "policy", "version": ev, "kind": "Eviction"})
            elif sub == "binding":
                sd["kind"] = "Binding"
            else:
                sd["kind"] = rt.kind
            sd["verbs"] = SUB_VERBS.get(sub, ["get"])
            res.append(sd)
    d = {"kind": "APIResourceList"}
    if group:
        d["apiVersion"] = "v1"
    d["groupVersion"] = group + "/" + version if group else version
    d["resources"] = res
    return d


def health_text(path, verbose):
    name = path.strip("/")
    if not verbose:
        return "ok"
    lines = ["[+]%s ok" % c for c in HEALTH_CHECKS]
    lines.append("%s check passed" % name)
    return "\n".join(lines) + "\n"


NOT_FOUND_PATHS = ["/.well-known/openid-configuration", "/api", "/api/v1", "/apis", "/apis/", "/healthz",
                   "/healthz/etcd", "/healthz/log", "/healthz/ping", "/livez", "/livez/etcd", "/livez/log",
                   "/livez/ping", "/metrics", "/openapi/v2", "/openapi/v3", "/openapi/v3/", "/readyz",
                   "/readyz/etcd", "/readyz/informer-sync", "/readyz/log", "/readyz/ping", "/readyz/shutdown",
                   "/version"]


def not_found_paths(registry):
    paths = list(NOT_FOUND_PATHS)
    for g, vs, _ in registry.groups():
        paths.append("/apis/" + g)
        for v in vs:
            paths.append("/apis/%s/%s" % (g, v))
    return {"paths": sorted(paths)}
