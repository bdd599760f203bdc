"""Label selectors (string and metav1.LabelSelector form) and field
selectors, parsed and matched like k8s.io/apimachinery does."""

import re

from . import util
from .errors import bad_request

# ---------------------------------------------------------------- labels


class Requirement:
    __slots__ = ("key", "op", "values")

    def __init__(self, key, op, values):
        self.key = key
        self.op = op  # in, notin, =, !=, exists, !, gt, lt
        self.values = values

    def matches(self, labels):
        k = self.key
        if self.op == "exists":
            return k in labels
        if self.op == "!":
            return k not in labels
        if self.op in ("=", "in"):
            return k in labels and labels[k] in self.values
        if self.op in ("!=", "notin"):
            return k not in labels or labels[k] not in self.values
        if self.op in ("gt", "lt"):
            if k not in labels:
                return False
            try:
                v = int(labels[k])
            except ValueError:
                return False
            return v > self.values[0] if self.op == "gt" else v < self.values[0]
        return False


class LabelSelector:
    """A parsed selector; empty selector matches everything; `nothing`
    matches nothing (a nil metav1.LabelSelector on a PDB, for example)."""

    def __init__(self, reqs, nothing=False):
        self.reqs = reqs
        self.nothing = nothing

    def empty(self):
        return not self.reqs and not self.nothing

    def matches(self, labels):
        if self.nothing:
            return False
        labels = labels or {}
        for r in self.reqs:
            if not r.matches(labels):
                return False
        return True

    def equality_values(self, key):
        """If the selector pins `key` to one value, return it (for indexes)."""
        for r in self.reqs:
            if r.key == key and r.op in ("=", "in") and len(r.values) == 1:
                return next(iter(r.values))
        return None

    def __str__(self):
        parts = []
        for r in self.reqs:
            if r.op == "exists":
                parts.append(r.key)
            elif r.op == "!":
                parts.append("!" + r.key)
            elif r.op == "=":
                parts.append("%s=%s" % (r.key, next(iter(r.values))))
            elif r.op == "!=":
                parts.append("%s!=%s" % (r.key, next(iter(r.values))))
            elif r.op in ("in", "notin"):
                parts.append("%s %s (%s)" % (r.key, r.op, ",".join(sorted(r.values))))
            elif r.op == "gt":
                parts.append("%s>%d" % (r.key, r.values[0]))
            elif r.op == "lt":
                parts.append("%s<%d" % (r.key, r.values[0]))
        return ",".join(parts)


EVERYTHING = LabelSelector([])
NOTHING = LabelSelector([], nothing=True)

_TOKEN_RE = re.compile(r"\s*(\(|\)|,|==|!=|=|!|>|<|[^\s(),=!<>]+)")


def _tokens(s):
    pos = 0
    out = []
    while pos < len(s):
        m = _TOKEN_RE.match(s, pos)
        if not m:
            break
        tok = m.group(1)
        pos = m.end()
        out.append(tok)
        while pos < len(s) and s[pos].isspace():
            pos += 1
    return out


def _check_key(key):
    errs = util.qualified_name_errors(key)
    if errs:
        raise bad_request('unable to parse requirement: key: Invalid value: "%s": %s' % (key, "; ".join(errs)))


def _check_value(v):
    errs = util.label_value_errors(v)
    if errs:
        raise bad_request('unable to parse requirement: values[0]: Invalid value: "%s": %s' % (v, "; ".join(errs)))


def parse_label_selector(s):
    """Parse the string form (?labelSelector=...).  Raises ApiError 400."""
    if s is None:
        return EVERYTHING
    s = s.strip()
    if not s:
        return EVERYTHING
    toks = _tokens(s)
    reqs = []
    i = 0
    n = len(toks)

    def expect_more():
        if i >= n:
            raise bad_request("unable to parse requirement: found '', expected: identifier")

    while i < n:
        t = toks[i]
        if t == "!":
            i += 1
            expect_more()
            key = toks[i]
            _check_key(key)
            reqs.append(Requirement(key, "!", None))
            i += 1
        else:
            if t in ("(", ")", ",", "=", "==", "!=", ">", "<"):
                raise bad_request("unable to parse requirement: found '%s', expected: !, identifier" % t)
            key = t
            _check_key(key)
            i += 1
            if i >= n or toks[i] == ",":
                reqs.append(Requirement(key, "exists", None))
            else:
                op = toks[i]
                i += 1
                if op in ("=", "=="):
                    v = toks[i] if i < n and toks[i] not in (",",) else ""
                    if v in ("(", ")", "=", "==", "!=", "!"):
                        raise bad_request("unable to parse requirement: found '%s', expected: identifier" % v)
                    if v:
                        i += 1
                    _check_value(v)
                    reqs.append(Requirement(key, "=", {v}))
                elif op == "!=":
                    v = toks[i] if i < n and toks[i] != "," else ""
                    if v:
                        i += 1
                    _check_value(v)
                    reqs.append(Requirement(key, "!=", {v}))
                elif op in ("in", "notin"):
                    if i >= n or toks[i] != "(":
                        found = toks[i] if i < n else ""
                        raise bad_request("unable to parse requirement: found '%s', expected: '('" % found)
                    i += 1
                    vals = set()
                    expect_value = True
                    while True:
                        if i >= n:
                            raise bad_request("unable to parse requirement: found '', expected: ')'")
                        tk = toks[i]
                        if tk == ")":
                            i += 1
                            break
                        if tk == ",":
                            if expect_value:
                                vals.add("")
                            expect_value = True
                            i += 1
                            continue
                        _check_value(tk)
                        vals.add(tk)
                        expect_value = False
                        i += 1
                    reqs.append(Requirement(key, op, vals))
                elif op in (">", "<"):
                    v = toks[i] if i < n else ""
                    i += 1
                    try:
                        iv = int(v)
                    except ValueError:
                        raise bad_request("unable to parse requirement: for 'Gt', 'Lt' operators, the value "
                                          "must be an integer")
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", [iv]))
                else:
                    raise bad_request("unable to parse requirement: found '%s', expected: in, notin, =, ==, "
                                      "!=, gt, lt" % op)
        if i < n:
            if toks[i] != ",":
                raise bad_request("found '%s', expected: ',' or 'end of string'" % toks[i])
            i += 1
            if i >= n:
                raise bad_request("found '', expected: !, identifier")
    return LabelSelector(reqs)


def from_label_selector_object(sel):
    """metav1.LabelSelector -> LabelSelector.  None -> NOTHING (as for PDBs
    and Deployments a nil selector selects nothing); {} -> EVERYTHING."""
    if sel is None:
        return NOTHING
    reqs = []
    for k, v in sorted((sel.get("matchLabels") or {}).items()):
        reqs.append(Requirement(k, "=", {v}))
    for e in sel.get("matchExpressions") or []:
        op = e.get("operator")
        key = e.get("key")
        vals = set(e.get("values") or [])
        if op == "In":
            reqs.append(Requirement(key, "in", vals))
        elif op == "NotIn":
            reqs.append(Requirement(key, "notin", vals))
        elif op == "Exists":
            reqs.append(Requirement(key, "exists", None))
        elif op == "DoesNotExist":
            reqs.append(Requirement(key, "!", None))
        else:
            raise ValueError('"%s" is not a valid label selector operator' % op)
    return LabelSelector(reqs)


def label_selector_object_errors(sel, path):
    """Validation errors of a metav1.LabelSelector (as FieldErrors)."""
    from . import errors as E
    errs = []
    if sel is None:
        return errs
    if not isinstance(sel, dict):
        return [E.invalid(path, sel, "must be an object")]
    for k, v in (sel.get("matchLabels") or {}).items():
        for m in util.qualified_name_errors(k):
            errs.append(E.invalid("%s.matchLabels" % path, k, m))
        if not isinstance(v, str):
            errs.append(E.invalid("%s.matchLabels" % path, v, "must be a string"))
            continue
        for m in util.label_value_errors(v):
            errs.append(E.invalid("%s.matchLabels" % path, v, m))
    for i, e in enumerate(sel.get("matchExpressions") or []):
        p = "%s.matchExpressions[%d]" % (path, i)
        op = e.get("operator")
        if op in ("In", "NotIn"):
            if not e.get("values"):
                errs.append(E.required(p + ".values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if e.get("values"):
                errs.append(E.forbidden(p + ".values",
                                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(E.invalid(p + ".operator", op, "not a valid selector operator"))
    return errs


def selector_to_string(sel):
    """metav1.FormatLabelSelector for Scale.status.selector and columns."""
    if sel is None:
        return "<none>"
    s = str(from_label_selector_object(sel))
    return s if s else "<none>"


# ---------------------------------------------------------------- fields


class FieldSelector:
    def __init__(self, terms):
        self.terms = terms  # list of (field, op, value) with op in '=', '!='

    def empty(self):
        return not self.terms

    def fields(self):
        return [t[0] for t in self.terms]

    def matches(self, getter):
        """getter(field) -> string value of the field for an object."""
        for f, op, v in self.terms:
            actual = getter(f)
            if op == "=":
                if actual != v:
                    return False
            elif actual == v:
                return False
        return True

    def equality_value(self, field):
        for f, op, v in self.terms:
            if f == field and op == "=":
                return v
        return None


EVERYTHING_FIELDS = FieldSelector([])


def _split_unescaped(s, sep):
    out = []
    cur = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            cur.append(s[i:i + 2])
            i += 2
            continue
        if ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _unescape(v):
    out = []
    i = 0
    while i < len(v):
        if v[i] == "\\" and i + 1 < len(v):
            if v[i + 1] not in "\\,=!":
                raise bad_request("invalid field selector: invalid escape sequence: \\%s" % v[i + 1])
            out.append(v[i + 1])
            i += 2
            continue
        out.append(v[i])
        i += 1
    return "".join(out)


def parse_field_selector(s):
    if s is None or not s.strip():
        return EVERYTHING_FIELDS
    terms = []
    for part in _split_unescaped(s, ","):
        if not part:
            continue
        matched = False
        for op, tok in (("!=", "!="), ("=", "=="), ("=", "=")):
            idx = _find_unescaped(part, tok)
            if idx >= 0:
                field = part[:idx].strip()
                value = _unescape(part[idx + len(tok):])
                terms.append((field, op, value))
                matched = True
                break
        if not matched:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (s, part))
    return FieldSelector(terms)


def _find_unescaped(s, tok):
    i = 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s.startswith(tok, i):
            return i
        i += 1
    return -1


def field_value(obj, path):
    """String value of a dotted field path in an object, '' if absent;
    booleans are 'true'/'false' as the API server's field sets render them."""
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, (int, float)):
        return str(cur)
    if isinstance(cur, str):
        return cur
    return ""
