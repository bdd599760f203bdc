"""The JSONPath subset used by CRD additionalPrinterColumns and
scale subresource paths: .a.b, .a['b.c'], .a.b\\.c, [0], [*], [-1],
[?(@.type=="Ready")] (==, != on strings/numbers), optional {} wrapping."""

import re


class JSONPathError(ValueError):
    pass


def _parse(expr):
    s = expr.strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    if s.startswith("$"):
        s = s[1:]
    steps = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == ".":
            i += 1
            if i < n and s[i] == ".":
                raise JSONPathError("recursive descent is not supported")
            name = []
            while i < n:
                ch = s[i]
                if ch == "\\" and i + 1 < n:
                    name.append(s[i + 1])
                    i += 2
                    continue
                if ch in ".[":
                    break
                name.append(ch)
                i += 1
            nm = "".join(name)
            if nm == "*":
                steps.append(("all",))
            elif nm:
                steps.append(("field", nm))
        elif c == "[":
            j = _match_bracket(s, i)
            inner = s[i + 1:j].strip()
            i = j + 1
            if inner == "*":
                steps.append(("all",))
            elif inner.startswith("?(") and inner.endswith(")"):
                steps.append(("filter",) + _parse_filter(inner[2:-1]))
            elif inner[:1] in "'\"":
                steps.append(("field", inner[1:-1]))
            elif re.match(r"^-?\d+$", inner):
                steps.append(("index", int(inner)))
            elif re.match(r"^-?\d*:-?\d*$", inner):
                a, b = inner.split(":")
                steps.append(("slice", int(a) if a else None, int(b) if b else None))
            else:
                raise JSONPathError("unsupported subscript [%s]" % inner)
        elif c.isspace():
            i += 1
        else:
            # bare leading field name (e.g. "spec.replicas")
            name = []
            while i < n and s[i] not in ".[":
                if s[i] == "\\" and i + 1 < n:
                    name.append(s[i + 1])
                    i += 2
                    continue
                name.append(s[i])
                i += 1
            steps.append(("field", "".join(name)))
    return steps


def _match_bracket(s, i):
    depth = 0
    q = None
    j = i
    while j < len(s):
        ch = s[j]
        if q:
            if ch == q:
                q = None
        elif ch in "'\"":
            q = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise JSONPathError("unterminated [")


_FILTER_RE = re.compile(r"^@((?:\.[A-Za-z0-9_\-/\\.]+)+)\s*(==|!=|<=|>=|<|>)\s*(.+)$")


def _parse_filter(f):
    f = f.strip()
    m = _FILTER_RE.match(f)
    if not m:
        m2 = re.match(r"^@((?:\.[A-Za-z0-9_\-/]+)+)$", f)
        if m2:
            return (m2.group(1)[1:].split("."), "exists", None)
        raise JSONPathError("unsupported filter %s" % f)
    path = [p for p in re.split(r"(?<!\\)\.", m.group(1))[1:]]
    path = [p.replace("\\.", ".") for p in path]
    lit = m.group(3).strip()
    if lit[:1] in "'\"":
        val = lit[1:-1]
    else:
        try:
            val = int(lit)
        except ValueError:
            try:
                val = float(lit)
            except ValueError:
                val = {"true": True, "false": False}.get(lit, lit)
    return (path, m.group(2), val)


class JSONPath:
    def __init__(self, expr):
        self.expr = expr
        self.steps = _parse(expr)

    def find(self, obj):
        """All matches, in order."""
        cur = [obj]
        for st in self.steps:
            nxt = []
            kind = st[0]
            for v in cur:
                if kind == "field":
                    if isinstance(v, dict) and st[1] in v:
                        nxt.append(v[st[1]])
                elif kind == "index":
                    if isinstance(v, list):
                        idx = st[1]
                        if -len(v) <= idx < len(v):
                            nxt.append(v[idx])
                elif kind == "slice":
                    if isinstance(v, list):
                        nxt.extend(v[st[1]:st[2]])
                elif kind == "all":
                    if isinstance(v, list):
                        nxt.extend(v)
                    elif isinstance(v, dict):
                        nxt.extend(v.values())
                elif kind == "filter":
                    path, op, lit = st[1], st[2], st[3]
                    items = v if isinstance(v, list) else []
                    for it in items:
                        x = it
                        ok = True
                        for p in path:
                            if isinstance(x, dict) and p in x:
                                x = x[p]
                            else:
                                ok = False
                                break
                        if op == "exists":
                            if ok:
                                nxt.append(it)
                            continue
                        if not ok:
                            continue
                        if _compare(x, op, lit):
                            nxt.append(it)
            cur = nxt
        return cur

    def first(self, obj, default=None):
        r = self.find(obj)
        return r[0] if r else default


def _compare(a, op, b):
    try:
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == ">":
            return a > b
        if op == "<=":
            return a <= b
        if op == ">=":
            return a >= b
    except TypeError:
        return False
    return False


_cache = {}


def compile(expr):
    jp = _cache.get(expr)
    if jp is None:
        jp = JSONPath(expr)
        _cache[expr] = jp
    return jp


def set_path(obj, expr, value):
    """Set a simple dotted path (scale subresource specReplicasPath)."""
    steps = _parse(expr)
    cur = obj
    for st in steps[:-1]:
        if st[0] != "field":
            raise JSONPathError("only simple field paths can be set")
        nxt = cur.get(st[1])
        if not isinstance(nxt, dict):
            nxt = {}
            cur[st[1]] = nxt
        cur = nxt
    last = steps[-1]
    if last[0] != "field":
        raise JSONPathError("only simple field paths can be set")
    cur[last[1]] = value
