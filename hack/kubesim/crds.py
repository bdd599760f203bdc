"""CustomResourceDefinitions: validation, defaults, status (NamesAccepted,
Established), registration of the served versions, conversion between
versions (strategy None: only apiVersion changes)."""

import os
import re

from . import errors as E
from . import resources
from . import schema as S
from . import util
from . import yamlmini

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_KIND_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def prepare_create(crd):
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})
    md = crd.setdefault("metadata", {})
    fins = md.setdefault("finalizers", [])
    if CLEANUP_FINALIZER not in fins:
        fins.append(CLEANUP_FINALIZER)
    set_status(crd)


def set_status(crd, terminating=False):
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    now = util.rfc3339()
    old = crd.get("status") or {}
    old_conds = {c.get("type"): c for c in old.get("conditions") or []}

    def cond(t, status, reason, msg):
        prev = old_conds.get(t)
        ltt = prev.get("lastTransitionTime") if prev and prev.get("status") == status else now
        return {"type": t, "status": status, "lastTransitionTime": ltt, "reason": reason, "message": msg}

    accepted = {"plural": names.get("plural"), "singular": names.get("singular"), "kind": names.get("kind"),
                "listKind": names.get("listKind")}
    if names.get("shortNames"):
        accepted["shortNames"] = names["shortNames"]
    if names.get("categories"):
        accepted["categories"] = names["categories"]
    conds = [cond("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
             cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")]
    if terminating:
        conds.append(cond("Terminating", "True", "InstanceDeletionInProgress",
                          "CustomResource deletion is in progress"))
    stored = list(old.get("storedVersions") or [])
    for v in spec.get("versions") or []:
        if v.get("storage") and v.get("name") not in stored:
            stored.append(v["name"])
    crd["status"] = {"conditions": conds, "acceptedNames": accepted, "storedVersions": stored}


def validate(crd, old=None):
    errs = []
    md = crd.get("metadata") or {}
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [E.required("spec")]
    group = spec.get("group") or ""
    names = spec.get("names") or {}
    plural = names.get("plural") or ""
    if not group:
        errs.append(E.required("spec.group"))
    elif len(group.split(".")) < 2:
        errs.append(E.invalid("spec.group", group, "should be a domain with at least one dot"))
    else:
        for m in util.dns1123_subdomain_errors(group):
            errs.append(E.invalid("spec.group", group, m))
    if not plural:
        errs.append(E.required("spec.names.plural"))
    else:
        for m in util.dns1123_label_errors(plural):
            errs.append(E.invalid("spec.names.plural", plural, m))
    if md.get("name") != plural + "." + group:
        errs.append(E.invalid("metadata.name", md.get("name"), 'must be spec.names.plural+"."+spec.group'))
    kind = names.get("kind")
    if not kind:
        errs.append(E.required("spec.names.kind"))
    elif not _KIND_RE.match(kind):
        errs.append(E.invalid("spec.names.kind", kind, "may have mixed case, but should otherwise match: "
                              "[a-z]([-a-z0-9]*[a-z0-9])?"))
    if names.get("singular"):
        for m in util.dns1123_label_errors(names["singular"]):
            errs.append(E.invalid("spec.names.singular", names["singular"], m))
    for i, sn in enumerate(names.get("shortNames") or []):
        for m in util.dns1123_label_errors(sn):
            errs.append(E.invalid("spec.names.shortNames[%d]" % i, sn, m))
    scope = spec.get("scope")
    if scope not in ("Cluster", "Namespaced"):
        if not scope:
            errs.append(E.required("spec.scope"))
        else:
            errs.append(E.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    versions = spec.get("versions")
    if not versions:
        errs.append(E.invalid("spec.versions", versions, "must have exactly one version marked as storage version"))
        return errs
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errs.append(E.invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                              "must have exactly one version marked as storage version"))
    seen = set()
    for i, v in enumerate(versions):
        p = "spec.versions[%d]" % i
        if not isinstance(v, dict):
            errs.append(E.invalid(p, v, "must be an object"))
            continue
        name = v.get("name") or ""
        if not name:
            errs.append(E.required(p + ".name"))
        elif name in seen:
            errs.append(E.duplicate(p + ".name", name))
        seen.add(name)
        if "served" not in v:
            pass
        sch = (v.get("schema") or {}).get("openAPIV3Schema")
        if sch is None:
            errs.append(E.required(p + ".schema.openAPIV3Schema", "schemas are required"))
        else:
            errs.extend(S.structural_errors(sch, p + ".schema.openAPIV3Schema"))
        sc = (v.get("subresources") or {}).get("scale")
        if isinstance(sc, dict):
            srp = sc.get("specReplicasPath")
            if not srp:
                errs.append(E.required(p + ".subresources.scale.specReplicasPath"))
            elif not srp.startswith(".spec."):
                errs.append(E.invalid(p + ".subresources.scale.specReplicasPath", srp, "should be a json path under "
                                      ".spec"))
            strp = sc.get("statusReplicasPath")
            if not strp:
                errs.append(E.required(p + ".subresources.scale.statusReplicasPath"))
            elif not strp.startswith(".status."):
                errs.append(E.invalid(p + ".subresources.scale.statusReplicasPath", strp, "should be a json path "
                                      "under .status"))
        for j, c in enumerate(v.get("additionalPrinterColumns") or []):
            cp = "%s.additionalPrinterColumns[%d]" % (p, j)
            if not c.get("name"):
                errs.append(E.required(cp + ".name"))
            t = c.get("type")
            if t not in ("integer", "number", "string", "boolean", "date"):
                errs.append(E.not_supported(cp + ".type", t, ["integer", "number", "string", "boolean", "date"]))
            if not c.get("jsonPath"):
                errs.append(E.required(cp + ".JSONPath"))
    if old is not None:
        ospec = old.get("spec") or {}
        if ospec.get("scope") != spec.get("scope"):
            errs.append(E.invalid("spec.scope", spec.get("scope"), "field is immutable"))
        if ospec.get("group") != spec.get("group"):
            errs.append(E.invalid("spec.group", spec.get("group"), "field is immutable"))
    return errs


def register(registry, crd):
    """(Re)register the served versions of an established CRD."""
    types = resources.types_from_crd(crd)
    spec = crd.get("spec") or {}
    sid = (spec.get("names") or {}).get("plural", "") + "." + spec.get("group", "")
    with registry.lock:
        existing = registry.storage.get(sid, [])
        served = {rt.version for rt in types}
        for rt in list(existing):
            if rt.version not in served:
                registry.by_gvr.pop((rt.group, rt.version, rt.plural), None)
                existing.remove(rt)
        for rt in types:
            registry.add(rt)
    return sid


def storage_version(crd):
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return v.get("name")
    return None


def convert(obj, group, version):
    """Conversion strategy None: only apiVersion changes."""
    obj["apiVersion"] = group + "/" + version
    return obj


def load_dir(path):
    """All YAML/JSON documents in a directory (sorted by file name)."""
    docs = []
    if os.path.isfile(path):
        files = [path]
    else:
        files = []
        for root, _, names in os.walk(path):
            for n in names:
                if n.endswith((".yaml", ".yml", ".json")):
                    files.append(os.path.join(root, n))
        files.sort()
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        try:
            for d in yamlmini.load_all(text):
                if isinstance(d, dict) and d.get("kind", "").endswith("List") and isinstance(d.get("items"), list):
                    docs.extend(x for x in d["items"] if isinstance(x, dict))
                elif isinstance(d, dict):
                    docs.append(d)
        except yamlmini.YAMLError as e:
            raise ValueError("%s: %s" % (f, e))
    return docs
