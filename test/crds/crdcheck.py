"""Offline checks of Carpenter's CustomResourceDefinitions.

A small structural-schema checker and OpenAPI v3 validator, enough to check
that the CRDs in crds/ are sound (what kube-apiserver would refuse when they are
created) and to validate manifests against them, with defaults applied the way
the API server applies them. CEL rules (x-kubernetes-validations) are only
checked for presence and shape here: evaluating them is the API server's job
(and Carpenter's C validation's).
"""

import copy
import glob
import os
import re
import sys

SOURCE_DIR = os.environ.get("CARP_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))

SCHEMA_KEYWORDS = {
    "type", "description", "properties", "items", "additionalProperties",
    "required", "enum", "pattern", "default", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "anyOf", "allOf", "oneOf", "not", "nullable", "title", "example",
    "multipleOf", "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type", "x-kubernetes-validations",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}


# ---------------------------------------------------------------- YAML loading

def _yaml_loader():
    """Returns (name, function(text) -> list of documents), or (None, None).

    Prefers the project's own YAML subset parser, hack/kubesim/yamlmini.py;
    falls back to PyYAML when that is installed."""
    sys.path.insert(0, os.path.join(SOURCE_DIR, "hack"))
    try:
        from kubesim import yamlmini  # type: ignore
        for name in ("load_all", "safe_load_all", "loads_all", "parse_all"):
            fn = getattr(yamlmini, name, None)
            if fn:
                return "yamlmini." + name, lambda text, fn=fn: [
                    d for d in fn(text) if d is not None]
        for name in ("load", "loads", "safe_load", "parse"):
            fn = getattr(yamlmini, name, None)
            if fn:
                return "yamlmini." + name, lambda text, fn=fn: [
                    d for d in (fn(p) for p in _split_docs(text))
                    if d is not None]
    except ImportError:
        pass
    finally:
        sys.path.pop(0)
    try:
        import yaml  # type: ignore
        return "PyYAML", lambda text: [
            d for d in yaml.safe_load_all(text) if d is not None]
    except ImportError:
        return None, None


def _split_docs(text):
    docs, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.rstrip() == "---":
            docs.append("".join(cur))
            cur = []
        else:
            cur.append(line)
    docs.append("".join(cur))
    return [d for d in docs if d.strip() and any(
        ln.strip() and not ln.lstrip().startswith("#")
        for ln in d.splitlines())]


LOADER_NAME, LOAD = _yaml_loader()


def load_file(path):
    with open(path, encoding="utf-8") as f:
        return LOAD(f.read())


def crd_paths():
    return sorted(glob.glob(os.path.join(SOURCE_DIR, "crds", "*.yaml")))


def load_crds():
    crds = {}
    for p in crd_paths():
        for d in load_file(p):
            crds[d["spec"]["names"]["kind"]] = d
    return crds


def version_schema(crd):
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


# ------------------------------------------------------- structural soundness

def go_regex_compiles(pattern):
    """Patterns are Go RE2 (kube-apiserver). Python's re accepts what we use;
    reject constructs RE2 lacks (lookaround, backreferences)."""
    if re.search(r"\(\?[=!<]|\\[1-9]", pattern):
        return False
    try:
        re.compile(pattern)
        return True
    except re.error:
        return False


def type_ok(value, typ):
    if typ == "object":
        return isinstance(value, dict)
    if typ == "array":
        return isinstance(value, list)
    if typ == "string":
        return isinstance(value, str)
    if typ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typ == "boolean":
        return isinstance(value, bool)
    return False


def structural_errors(schema, path="", root=True):
    """Errors that would make kube-apiserver refuse the CRD or leave it
    non-structural."""
    errs = []
    if not isinstance(schema, dict):
        return [f"{path}: schema is not a mapping"]
    for k in schema:
        if k not in SCHEMA_KEYWORDS:
            errs.append(f"{path}: unknown schema keyword {k!r}")
    ios = schema.get("x-kubernetes-int-or-string")
    pres = schema.get("x-kubernetes-preserve-unknown-fields")
    typ = schema.get("type")
    if ios:
        if typ is not None:
            errs.append(f"{path}: int-or-string must not set type")
        anyof = schema.get("anyOf")
        if anyof is not None and sorted(
                a.get("type") for a in anyof) != ["integer", "string"]:
            errs.append(f"{path}: int-or-string anyOf must be integer|string")
    elif typ is None and not pres:
        errs.append(f"{path}: no type (nor int-or-string/preserve-unknown)")
    elif typ is not None and typ not in TYPES:
        errs.append(f"{path}: bad type {typ!r}")
    if "properties" in schema and "additionalProperties" in schema:
        errs.append(f"{path}: properties and additionalProperties together")
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str) or not go_regex_compiles(
                schema["pattern"]):
            errs.append(f"{path}: pattern does not compile: "
                        f"{schema['pattern']!r}")
        if typ not in ("string", None):
            errs.append(f"{path}: pattern on a non-string")
    if "enum" in schema:
        if not isinstance(schema["enum"], list) or not schema["enum"]:
            errs.append(f"{path}: enum must be a non-empty list")
        else:
            for v in schema["enum"]:
                if typ and not type_ok(v, typ):
                    errs.append(f"{path}: enum value {v!r} is not {typ}")
                elif "pattern" in schema and isinstance(v, str) and not \
                        re.search(schema["pattern"], v):
                    errs.append(f"{path}: enum value {v!r} fails pattern")
            if len(set(map(repr, schema["enum"]))) != len(schema["enum"]):
                errs.append(f"{path}: duplicate enum values")
    for req in schema.get("required", []) or []:
        if req not in (schema.get("properties") or {}):
            errs.append(f"{path}: required {req!r} is not a property")
    for rule in schema.get("x-kubernetes-validations", []) or []:
        if not isinstance(rule, dict) or not isinstance(
                rule.get("rule"), str) or not rule["rule"].strip():
            errs.append(f"{path}: CEL validation without a rule")
            continue
        if not isinstance(rule.get("message"), str) or not rule["message"]:
            errs.append(f"{path}: CEL rule {rule['rule']!r} has no message")
        if rule["rule"].count("(") != rule["rule"].count(")") or \
                rule["rule"].count("[") != rule["rule"].count("]"):
            errs.append(f"{path}: unbalanced CEL rule {rule['rule']!r}")
        for rx in re.findall(r'find\("([^"]*)"\)', rule["rule"]):
            if not go_regex_compiles(rx):
                errs.append(f"{path}: CEL regex does not compile: {rx!r}")
    lt = schema.get("x-kubernetes-list-type")
    if lt is not None:
        if typ != "array":
            errs.append(f"{path}: list-type on a non-array")
        elif lt not in ("atomic", "set", "map"):
            errs.append(f"{path}: bad list-type {lt!r}")
        elif lt == "set" and (schema.get("items") or {}).get("type") in (
                "object", "array"):
            errs.append(f"{path}: list-type set needs scalar items")
        elif lt == "map":
            items = schema.get("items") or {}
            keys = schema.get("x-kubernetes-list-map-keys") or []
            if not keys:
                errs.append(f"{path}: list-type map without map keys")
            for k in keys:
                prop = (items.get("properties") or {}).get(k)
                if prop is None:
                    errs.append(f"{path}: map key {k!r} is not a property")
                elif k not in (items.get("required") or []) and \
                        "default" not in prop:
                    errs.append(f"{path}: map key {k!r} must be required "
                                "or defaulted")
    if typ == "array" and "items" not in schema:
        errs.append(f"{path}: array without items")
    for k, sub in (schema.get("properties") or {}).items():
        sp = f"{path}.{k}" if path else k
        if root and k == "metadata":
            if sub != {"type": "object"}:
                errs.append("metadata: must be exactly {type: object}")
            continue
        errs += structural_errors(sub, sp, False)
    if isinstance(schema.get("additionalProperties"), dict):
        errs += structural_errors(schema["additionalProperties"],
                                  f"{path}.*", False)
    if "items" in schema:
        errs += structural_errors(schema["items"], f"{path}[*]", False)
    if "default" in schema:
        value = apply_defaults(copy.deepcopy(schema["default"]), schema)
        for p, m in validate(value, schema, f"{path}(default)"):
            errs.append(f"{p}: default is invalid: {m}")
    return errs


# ------------------------------------------------------ defaults, validation

def apply_defaults(value, schema):
    """Defaults as kube-apiserver applies them: a missing property with a
    default gets it, recursively, including inside defaults."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for k, sub in props.items():
            if k not in value and "default" in sub:
                value[k] = copy.deepcopy(sub["default"])
            if k in value:
                value[k] = apply_defaults(value[k], sub)
        ap = schema.get("additionalProperties")
        if isinstance(ap, dict):
            for k in list(value):
                if k not in props:
                    value[k] = apply_defaults(value[k], ap)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [apply_defaults(v, schema["items"]) for v in value]
    return value


def validate(value, schema, path="", strict=True):
    """OpenAPI v3 validation as kube-apiserver does it for CRDs, without CEL.
    Returns [(field path, message)]. With strict, unknown fields are errors
    (kubectl's default field validation)."""
    errs = []
    if schema.get("x-kubernetes-int-or-string"):
        if not (type_ok(value, "integer") or type_ok(value, "string")):
            return [(path, "must be an integer or a string")]
    else:
        typ = schema.get("type")
        if typ and not type_ok(value, typ):
            return [(path, f"Invalid value: must be of type {typ}")]
    if "enum" in schema and value not in schema["enum"]:
        errs.append((path, f'Unsupported value: {value!r}'))
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append((path, f"should match '{schema['pattern']}'"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append((path, "Too long"))
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append((path, "Too short"))
    if type_ok(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append((path, "should be greater than or equal to "
                         f"{schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            errs.append((path, "should be less than or equal to "
                         f"{schema['maximum']}"))
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append((path, "Too many items"))
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append((path, "Too few items"))
        lt = schema.get("x-kubernetes-list-type")
        if lt == "set" and len(set(map(repr, value))) != len(value):
            errs.append((path, "Duplicate value"))
        if lt == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen = set()
            for v in value:
                if isinstance(v, dict):
                    k = tuple(repr(v.get(x)) for x in keys)
                    if k in seen:
                        errs.append((path, f"Duplicate value: {k}"))
                    seen.add(k)
        if isinstance(schema.get("items"), dict):
            for i, v in enumerate(value):
                errs += validate(v, schema["items"], f"{path}[{i}]", strict)
    if isinstance(value, dict):
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errs.append((path, "Too many properties"))
        for req in schema.get("required", []) or []:
            if req not in value or value[req] is None:
                errs.append((f"{path}.{req}" if path else req,
                             "Required value"))
        props = schema.get("properties")
        ap = schema.get("additionalProperties")
        for k, v in value.items():
            sp = f"{path}.{k}" if path else k
            if props is not None and k in props:
                if path == "" and k == "metadata":
                    continue
                errs += validate(v, props[k], sp, strict)
            elif isinstance(ap, dict):
                errs += validate(v, ap, sp, strict)
            elif props is not None and strict and not schema.get(
                    "x-kubernetes-preserve-unknown-fields"):
                errs.append((sp, "unknown field"))
    return errs


def validate_manifest(obj, crds):
    """Defaults then validates a manifest of one of our kinds; [] if valid."""
    crd = crds[obj["kind"]]
    group = crd["spec"]["group"]
    version = crd["spec"]["versions"][0]["name"]
    if obj.get("apiVersion") != f"{group}/{version}":
        return [("apiVersion", f"expected {group}/{version}")]
    schema = version_schema(crd)
    obj = apply_defaults(copy.deepcopy(obj), schema)
    return validate(obj, schema)


# ------------------------------------------------------------ schema lookups

def tokenize_jsonpath(path):
    """'.a.b\\.c[?(@.x=="y")].d' -> ['a', 'b.c', '[?(@.x=="y")]', 'd']"""
    toks, cur, i = [], "", 0
    path = path.lstrip(".")
    while i < len(path):
        c = path[i]
        if c == "\\" and i + 1 < len(path):
            cur += path[i + 1]
            i += 2
            continue
        if c == ".":
            if cur:
                toks.append(cur)
            cur = ""
        elif c == "[":
            if cur:
                toks.append(cur)
            cur = ""
            j = path.index("]", i)
            toks.append(path[i:j + 1])
            i = j
        else:
            cur += c
        i += 1
    if cur:
        toks.append(cur)
    return toks


METADATA_FIELDS = {"name", "labels", "annotations", "creationTimestamp",
                   "generation", "uid", "namespace", "deletionTimestamp",
                   "finalizers", "ownerReferences", "resourceVersion"}


def resolve_jsonpath(schema, path):
    """Schema node that a printer column's JSONPath points at, or None."""
    toks = tokenize_jsonpath(path)
    node = schema
    for n, tok in enumerate(toks):
        if tok.startswith("["):
            if node.get("type") != "array":
                return None
            items = node["items"]
            m = re.match(r'\[\?\(@\.(\w+)\s*==\s*"[^"]*"\)\]$', tok)
            if m and m.group(1) not in (items.get("properties") or {}):
                return None
            node = items
            continue
        if n == 0 and tok == "metadata":
            if len(toks) < 2 or toks[1] not in METADATA_FIELDS:
                return None
            return {"type": "object"}
        props = node.get("properties") or {}
        if tok in props:
            node = props[tok]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return None
    return node


def schema_at(schema, field_path):
    """Schema node of an API field path such as spec.a[0].b."""
    node = schema
    for tok in re.findall(r"[^.\[\]]+|\[\d+\]", field_path):
        if tok.startswith("["):
            node = node.get("items") or {}
        else:
            props = node.get("properties") or {}
            if tok in props:
                node = props[tok]
            elif isinstance(node.get("additionalProperties"), dict):
                node = node["additionalProperties"]
            else:
                return None
    return node


def invalid_cases():
    """[(path, header dict)] for crds/invalid/*.yaml. Each file starts with
    comment lines '# refused-by: schema|cel', '# field: ...', '# message: ...'."""
    cases = []
    for p in sorted(glob.glob(os.path.join(SOURCE_DIR, "crds", "invalid",
                                           "*.yaml"))):
        hdr = {}
        with open(p, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"#\s*(refused-by|field|message):\s*(.*?)\s*$",
                             line)
                if m:
                    hdr[m.group(1)] = m.group(2)
        cases.append((p, hdr))
    return cases
