"""Structural OpenAPI v3 schemas of CRDs: validation with the API server's
error messages, defaulting and pruning of unknown fields.

x-kubernetes-validations (CEL) rules are not evaluated: they are accepted
and never reject an object."""

import base64
import json
import re

from . import errors as E
from . import util

_ROOT_KEEP = ("apiVersion", "kind", "metadata")
META_KEYS = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
             "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
             "ownerReferences", "finalizers", "managedFields"}


def _type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v == int(v) else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _is_int(v):
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v == int(v))


def _num_str(v):
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    return json.dumps(v)


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _format_ok(fmt, v):
    if fmt in ("date-time", "datetime"):
        return bool(_DATE_TIME.match(v))
    if fmt == "date":
        return bool(_DATE.match(v))
    if fmt == "uuid":
        return bool(_UUID.match(v))
    if fmt == "byte":
        try:
            base64.b64decode(v, validate=True)
            return True
        except Exception:
            return False
    if fmt in ("int32", "int64", "float", "double", "password", "", None):
        return True
    return True


class Schema:
    def __init__(self, root):
        self.root = root or {}
        self._regex = {}

    # ---------------------------------------------------------- navigation

    def at(self, path):
        """Sub-schema for a path of keys (ints step into items)."""
        s = self.root
        for p in path:
            if s is None:
                return None
            if isinstance(p, int) or p is None:
                s = s.get("items")
            else:
                props = s.get("properties")
                if props and p in props:
                    s = props[p]
                elif isinstance(s.get("additionalProperties"), dict):
                    s = s["additionalProperties"]
                else:
                    return None
        return s

    def list_info(self, path):
        """('map', keys) | ('set', None) | ('atomic', None) for a list field."""
        s = self.at(path)
        if not s:
            return ("atomic", None)
        lt = s.get("x-kubernetes-list-type")
        if lt == "map":
            return ("map", s.get("x-kubernetes-list-map-keys") or [])
        if lt == "set":
            return ("set", None)
        return ("atomic", None)

    def map_atomic(self, path):
        s = self.at(path)
        return bool(s) and (s.get("x-kubernetes-map-type") == "atomic")

    # ---------------------------------------------------------- pruning

    def prune(self, obj):
        """Drop fields the schema does not know.  Returns the pruned paths
        (for fieldValidation=Warn/Strict)."""
        pruned = []
        if not isinstance(obj, dict):
            return pruned
        self._prune_obj(obj, self.root, "", pruned, root=True)
        return pruned

    def _prune_obj(self, obj, s, path, pruned, root=False, embedded=False):
        if s is None:
            return
        if s.get("x-kubernetes-preserve-unknown-fields") and not s.get("properties") and \
                not isinstance(s.get("additionalProperties"), dict):
            if root or embedded:
                self._prune_meta(obj, path, pruned)
            return
        props = s.get("properties") or {}
        addl = s.get("additionalProperties")
        preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
        for k in list(obj.keys()):
            sub = path + "." + k if path else k
            if (root or embedded) and k in _ROOT_KEEP:
                if k == "metadata" and isinstance(obj[k], dict):
                    self._prune_meta(obj, path, pruned)
                continue
            if k in props:
                self._prune_value(obj[k], props[k], sub, pruned)
            elif isinstance(addl, dict):
                self._prune_value(obj[k], addl, sub, pruned)
            elif addl is True or preserve:
                continue
            else:
                pruned.append(sub)
                del obj[k]

    def _prune_meta(self, obj, path, pruned):
        md = obj.get("metadata")
        if not isinstance(md, dict):
            return
        for k in list(md.keys()):
            if k not in META_KEYS:
                pruned.append((path + "." if path else "") + "metadata." + k)
                del md[k]

    def _prune_value(self, v, s, path, pruned):
        if isinstance(v, dict):
            self._prune_obj(v, s, path, pruned, embedded=bool(s.get("x-kubernetes-embedded-resource")))
        elif isinstance(v, list):
            items = s.get("items")
            if isinstance(items, dict):
                for i, it in enumerate(v):
                    self._prune_value(it, items, "%s[%d]" % (path, i), pruned)

    # ---------------------------------------------------------- defaulting

    def default(self, obj):
        """Apply defaults and drop nulls of non-nullable fields, in place."""
        if isinstance(obj, dict):
            self._default_obj(obj, self.root, root=True)

    def _default_obj(self, obj, s, root=False):
        if s is None or not isinstance(obj, dict):
            return
        props = s.get("properties") or {}
        for k, ps in props.items():
            if root and k in _ROOT_KEEP:
                continue
            if k in obj and obj[k] is None and not ps.get("nullable"):
                del obj[k]
            if k not in obj and "default" in ps:
                obj[k] = util.deepcopy(ps["default"])
        for k, v in list(obj.items()):
            if root and k in _ROOT_KEEP:
                continue
            ps = props.get(k)
            if ps is None and isinstance(s.get("additionalProperties"), dict):
                ps = s["additionalProperties"]
            if ps is not None:
                self._default_value(v, ps)

    def _default_value(self, v, s):
        if isinstance(v, dict):
            self._default_obj(v, s)
        elif isinstance(v, list):
            items = s.get("items")
            if isinstance(items, dict):
                for i in range(len(v)):
                    if v[i] is None and not items.get("nullable") and "default" in items:
                        v[i] = util.deepcopy(items["default"])
                    self._default_value(v[i], items)

    # ---------------------------------------------------------- validation

    def validate(self, obj):
        """FieldErrors for the object (metadata, apiVersion and kind are not
        checked here)."""
        errs = []
        if not isinstance(obj, dict):
            return [E.invalid("", obj, "must be an object")]
        s = self.root
        props = s.get("properties") or {}
        for k in sorted(props):
            if k in _ROOT_KEEP:
                continue
            if k in obj:
                self._validate(obj[k], props[k], k, errs)
        for r in s.get("required") or []:
            if r not in obj and r not in _ROOT_KEEP:
                errs.append(E.required(r))
        return errs

    def _re(self, pat):
        r = self._regex.get(pat)
        if r is None:
            try:
                r = re.compile(_go_regex(pat))
            except re.error:
                r = re.compile(".*")
            self._regex[pat] = r
        return r

    def _validate(self, v, s, path, errs):
        if s is None:
            return
        if v is None:
            if s.get("nullable"):
                return
            if s.get("x-kubernetes-preserve-unknown-fields") and not s.get("type"):
                return
            errs.append(E.invalid(path, "null", "%s in body must be of type %s: \"null\""
                                  % (path, s.get("type") or "object")))
            return
        t = s.get("type")
        if s.get("x-kubernetes-int-or-string"):
            if not (isinstance(v, str) or _is_int(v)):
                errs.append(E.invalid(path, _type_name(v), "%s in body must be of type integer,string: %s"
                                      % (path, json.dumps(_type_name(v)))))
                return
        elif t:
            actual = _type_name(v)
            ok = (t == actual or (t == "number" and actual == "integer")
                  or (t == "integer" and _is_int(v)))
            if not ok:
                errs.append(E.invalid(path, actual, "%s in body must be of type %s: %s"
                                      % (path, t, json.dumps(actual))))
                return
        # enum
        if "enum" in s and s["enum"] is not None:
            if not any(_json_equal(v, e) for e in s["enum"]):
                errs.append(E.not_supported(path, v, s["enum"]))
        if isinstance(v, bool):
            pass
        elif isinstance(v, (int, float)):
            self._validate_number(v, s, path, errs)
        elif isinstance(v, str):
            self._validate_string(v, s, path, errs)
        elif isinstance(v, list):
            self._validate_array(v, s, path, errs)
        elif isinstance(v, dict):
            self._validate_object(v, s, path, errs)
        for key in ("allOf",):
            for sub in s.get(key) or []:
                self._validate(v, sub, path, errs)
        if s.get("anyOf"):
            if not any(not self._sub_errors(v, sub, path) for sub in s["anyOf"]):
                errs.append(E.invalid(path, v, "%s in body must validate at least one schema (anyOf)" % path))
        if s.get("oneOf"):
            n = sum(1 for sub in s["oneOf"] if not self._sub_errors(v, sub, path))
            if n != 1:
                errs.append(E.invalid(path, v, "%s in body must validate one and only one schema (oneOf)" % path))
        if isinstance(s.get("not"), dict):
            if not self._sub_errors(v, s["not"], path):
                errs.append(E.invalid(path, v, "%s in body must not validate the schema (not)" % path))

    def _sub_errors(self, v, s, path):
        e = []
        self._validate(v, s, path, e)
        return e

    def _validate_number(self, v, s, path, errs):
        mx = s.get("maximum")
        if mx is not None:
            if s.get("exclusiveMaximum") is True:
                if not v < mx:
                    errs.append(E.invalid(path, v, "%s in body should be less than %s" % (path, _num_str(mx))))
            elif not v <= mx:
                errs.append(E.invalid(path, v, "%s in body should be less than or equal to %s"
                                      % (path, _num_str(mx))))
        mn = s.get("minimum")
        if mn is not None:
            if s.get("exclusiveMinimum") is True:
                if not v > mn:
                    errs.append(E.invalid(path, v, "%s in body should be greater than %s" % (path, _num_str(mn))))
            elif not v >= mn:
                errs.append(E.invalid(path, v, "%s in body should be greater than or equal to %s"
                                      % (path, _num_str(mn))))
        mo = s.get("multipleOf")
        if mo:
            q = v / mo
            if abs(q - round(q)) > 1e-9:
                errs.append(E.invalid(path, v, "%s in body should be a multiple of %s" % (path, _num_str(mo))))
        if s.get("format") == "int32" and _is_int(v) and not (-2**31 <= v < 2**31):
            errs.append(E.invalid(path, v, "%s in body should be less than or equal to %d" % (path, 2**31 - 1)))

    def _validate_string(self, v, s, path, errs):
        mx = s.get("maxLength")
        if mx is not None and len(v) > mx:
            errs.append(E.too_long(path, mx))
        mn = s.get("minLength")
        if mn is not None and len(v) < mn:
            errs.append(E.invalid(path, v, "%s in body should be at least %d chars long" % (path, mn)))
        pat = s.get("pattern")
        if pat is not None and not self._re(pat).search(v):
            errs.append(E.invalid(path, v, "%s in body should match '%s'" % (path, pat)))
        fmt = s.get("format")
        if fmt and not s.get("x-kubernetes-int-or-string") and not _format_ok(fmt, v):
            errs.append(E.invalid(path, v, "%s in body must be of type %s: %s" % (path, fmt, json.dumps(v))))

    def _validate_array(self, v, s, path, errs):
        mx = s.get("maxItems")
        if mx is not None and len(v) > mx:
            errs.append(E.too_many(path, len(v), mx))
        mn = s.get("minItems")
        if mn is not None and len(v) < mn:
            errs.append(E.invalid(path, len(v), "%s in body should have at least %d items" % (path, mn)))
        items = s.get("items")
        if isinstance(items, dict):
            for i, it in enumerate(v):
                self._validate(it, items, "%s[%d]" % (path, i), errs)
        lt = s.get("x-kubernetes-list-type")
        if s.get("uniqueItems") or lt == "set":
            seen = []
            for i, it in enumerate(v):
                if any(_json_equal(it, x) for x in seen):
                    errs.append(E.duplicate("%s[%d]" % (path, i), it))
                else:
                    seen.append(it)
        elif lt == "map":
            keys = s.get("x-kubernetes-list-map-keys") or []
            seen = set()
            for i, it in enumerate(v):
                if not isinstance(it, dict):
                    continue
                k = json.dumps([it.get(x) for x in keys])
                if k in seen:
                    errs.append(E.duplicate("%s[%d]" % (path, i), {x: it.get(x) for x in keys if x in it}))
                seen.add(k)

    def _validate_object(self, v, s, path, errs):
        mx = s.get("maxProperties")
        if mx is not None and len(v) > mx:
            errs.append(E.too_many(path, len(v), mx))
        mn = s.get("minProperties")
        if mn is not None and len(v) < mn:
            errs.append(E.invalid(path, len(v), "%s in body should have at least %d properties" % (path, mn)))
        props = s.get("properties") or {}
        addl = s.get("additionalProperties")
        embedded = s.get("x-kubernetes-embedded-resource")
        for k in sorted(v):
            sub = path + "." + k
            if k in props:
                self._validate(v[k], props[k], sub, errs)
            elif isinstance(addl, dict):
                self._validate(v[k], addl, sub, errs)
        for r in s.get("required") or []:
            if r not in v:
                errs.append(E.required(path + "." + r))
        if embedded:
            if not v.get("apiVersion"):
                errs.append(E.required(path + ".apiVersion", "must not be empty"))
            if not v.get("kind"):
                errs.append(E.required(path + ".kind", "must not be empty"))


def _json_equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def _go_regex(pat):
    """Translate the RE2 features Python spells differently."""
    pat = pat.replace("\\z", "\\Z")
    pat = re.sub(r"\(\?P<", "(?P<", pat)
    pat = pat.replace("[[:alpha:]]", "[A-Za-z]").replace("[[:digit:]]", "[0-9]")
    pat = pat.replace("[[:alnum:]]", "[A-Za-z0-9]").replace("[[:space:]]", "\\s")
    pat = pat.replace("\\p{L}", "[^\\W\\d_]")
    return pat


# ---------------------------------------------------------------- CRD checks

def structural_errors(schema, path):
    """Errors that make a CRD schema non-structural (a subset of the checks)."""
    errs = []
    if not isinstance(schema, dict):
        return [E.required(path, "")]

    def walk(s, p, root=False):
        if not isinstance(s, dict):
            return
        if not s.get("type") and not s.get("x-kubernetes-int-or-string") and \
                not s.get("x-kubernetes-preserve-unknown-fields") and not root and \
                not any(k in s for k in ("allOf", "anyOf", "oneOf", "not")):
            errs.append(E.required(p + ".type", "must not be empty for specified object fields"))
        if root and s.get("type") not in (None, "object"):
            errs.append(E.invalid(p + ".type", s.get("type"), "must be object at the root"))
        for k, sub in (s.get("properties") or {}).items():
            walk(sub, p + ".properties[%s]" % k)
        if isinstance(s.get("items"), dict):
            walk(s["items"], p + ".items")
        if isinstance(s.get("additionalProperties"), dict):
            walk(s["additionalProperties"], p + ".additionalProperties")
        if s.get("properties") and isinstance(s.get("additionalProperties"), dict):
            errs.append(E.forbidden(p + ".additionalProperties",
                                    "additionalProperties and properties are mutual exclusive"))

    walk(schema, path, root=True)
    return errs
