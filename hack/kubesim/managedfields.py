"""metadata.managedFields: field sets per manager, updated on every write,
and server-side apply (merge, conflict detection, removal of fields a
manager stopped applying).  A simplified structured-merge-diff."""

import json

from . import util
from .errors import ApiError

# metadata fields the server owns; never tracked
_META_SKIP = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
              "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "generateName"}


def _key_elem(item, keys):
    d = {}
    for k in keys:
        if k in item:
            d[k] = item[k]
    return "k:" + json.dumps(d, separators=(",", ":"), ensure_ascii=False)


def fieldset(obj, sem, scope="all", apply=False):
    """Set of field paths (tuples of 'f:x', 'k:{...}', 'v:..', '.')."""
    out = set()
    if not isinstance(obj, dict):
        return out
    for k, v in obj.items():
        if k in ("apiVersion", "kind"):
            continue
        if scope == "main" and k == "status":
            continue
        if scope == "status" and k != "status":
            continue
        p = ("f:" + k,)
        if k == "metadata":
            if isinstance(v, dict):
                for mk, mv in v.items():
                    if mk in _META_SKIP:
                        continue
                    _walk(mv, p + ("f:" + mk,), ("metadata", mk), out, sem, apply)
            continue
        _walk(v, p, (k,), out, sem, apply)
    return out


def _walk(v, path, spath, out, sem, apply):
    if isinstance(v, dict) and v and not sem.map_atomic(spath):
        if not apply:
            out.add(path + (".",))
        for k, sub in v.items():
            _walk(sub, path + ("f:" + k,), spath + (k,), out, sem, apply)
    elif isinstance(v, list) and v:
        kind, keys = sem.list_info(spath)
        if kind == "map" and all(isinstance(x, dict) for x in v):
            if not apply:
                out.add(path + (".",))
            for item in v:
                elem = _key_elem(item, keys)
                out.add(path + (elem, "."))
                for k, sub in item.items():
                    _walk(sub, path + (elem, "f:" + k), spath + (None, k), out, sem, apply)
        elif kind == "set":
            if not apply:
                out.add(path + (".",))
            for item in v:
                out.add(path + ("v:" + json.dumps(item, separators=(",", ":"), ensure_ascii=False),))
        else:
            out.add(path)
    else:
        out.add(path)


_MISSING = object()


def value_at(obj, path):
    cur = obj
    for el in path:
        if el == ".":
            return cur
        if el.startswith("f:"):
            if not isinstance(cur, dict) or el[2:] not in cur:
                return _MISSING
            cur = cur[el[2:]]
        elif el.startswith("k:"):
            if not isinstance(cur, list):
                return _MISSING
            want = json.loads(el[2:])
            cur = next((x for x in cur if isinstance(x, dict) and all(x.get(k) == w for k, w in want.items())),
                       _MISSING)
            if cur is _MISSING:
                return _MISSING
        elif el.startswith("v:"):
            if not isinstance(cur, list):
                return _MISSING
            want = json.loads(el[2:])
            return want if want in cur else _MISSING
        else:
            return _MISSING
    return cur


def to_fields_v1(fs):
    root = {}
    for path in sorted(fs):
        d = root
        for el in path:
            d = d.setdefault(el, {})
    return root


def from_fields_v1(d, prefix=()):
    out = set()
    if not isinstance(d, dict):
        return out
    for k, sub in d.items():
        if k == ".":
            out.add(prefix + (".",))
        elif not sub:
            out.add(prefix + (k,))
        else:
            out |= from_fields_v1(sub, prefix + (k,))
    return out


class Entry:
    def __init__(self, manager, operation, api_version, time, fields, subresource=""):
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.time = time
        self.fields = fields
        self.subresource = subresource

    def key(self):
        return (self.manager, self.operation, self.subresource)

    def to_json(self):
        d = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
             "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(self.fields)}
        if self.subresource:
            d["subresource"] = self.subresource
        return d


def parse_entries(obj):
    out = []
    for e in util.get_path(obj, "metadata", "managedFields") or []:
        if not isinstance(e, dict):
            continue
        out.append(Entry(e.get("manager", ""), e.get("operation", "Update"), e.get("apiVersion", ""),
                         e.get("time"), from_fields_v1(e.get("fieldsV1") or {}), e.get("subresource", "")))
    return out


def _leaf(p):
    return p and p[-1] != "."


def _changed(old, new, fs_old, fs_new):
    changed = set()
    for p in fs_new:
        if p not in fs_old:
            changed.add(p)
        elif _leaf(p) and not p[-1].startswith(("k:", "v:")):
            a = value_at(old, p)
            b = value_at(new, p)
            if a != b or (type(a) is bool) != (type(b) is bool):
                changed.add(p)
    return changed


def update(old, new, manager, api_version, sem, scope, subresource, now):
    """Record an Update by `manager` that turned `old` (None on create)
    into `new`; writes new['metadata']['managedFields']."""
    md = new.setdefault("metadata", {})
    if old is not None:
        sent = md.get("managedFields")
        base = old if not sent or sent == util.get_path(old, "metadata", "managedFields") else new
    else:
        base = new
    entries = parse_entries(base)
    fs_new = fieldset(new, sem, scope)
    fs_old = fieldset(old, sem, scope) if old is not None else set()
    changed = _changed(old or {}, new, fs_old, fs_new)
    removed = fs_old - fs_new
    key = (manager, "Update", subresource)
    mine = None
    for e in entries:
        if e.key() == key:
            mine = e
            continue
        if changed or removed:
            e.fields = (e.fields - changed) - removed
    entries = [e for e in entries if e.fields or e is mine]
    if mine is None:
        if changed:
            entries.append(Entry(manager, "Update", api_version, now, set(changed), subresource))
    else:
        newf = (mine.fields - removed) | changed
        if changed or newf != mine.fields:
            mine.fields = newf
            mine.time = now
            mine.api_version = api_version
        if not mine.fields:
            entries.remove(mine)
    _store(md, entries)


def _store(md, entries):
    if entries:
        md["managedFields"] = [e.to_json() for e in entries]
    else:
        md.pop("managedFields", None)


def _path_str(p):
    out = []
    for el in p:
        if el == ".":
            continue
        if el.startswith("f:"):
            out.append("." + el[2:])
        elif el.startswith("k:"):
            d = json.loads(el[2:])
            out.append("[" + ",".join("%s=%s" % (k, json.dumps(v)) for k, v in d.items()) + "]")
        elif el.startswith("v:"):
            out.append("[=" + el[2:] + "]")
    return "".join(out)


def _manager_label(e):
    if e.operation == "Update":
        return '"%s" using %s' % (e.manager, e.api_version)
    return '"%s"' % e.manager


def apply(live, applied, manager, force, api_version, sem, scope, subresource, now):
    """Server-side apply of `applied` onto `live` (None to create).
    Returns the merged object with managedFields set.  Raises a 409
    Conflict ApiError on conflicts unless force."""
    A = fieldset(applied, sem, scope, apply=True)
    if live is None:
        obj = util.deepcopy(applied)
        obj.setdefault("metadata", {})
        _store(obj["metadata"], [Entry(manager, "Apply", api_version, now, A, subresource)] if A else [])
        return obj
    entries = parse_entries(live)
    key = (manager, "Apply", subresource)
    conflicts = []
    for e in entries:
        if e.key() == key:
            continue
        for p in sorted(A & e.fields):
            if not _leaf(p):
                continue
            a = value_at(live, p)
            b = value_at(applied, p)
            if a is _MISSING or a != b or (type(a) is bool) != (type(b) is bool):
                conflicts.append((e, p))
    if conflicts and not force:
        n = len(conflicts)
        if n == 1:
            e, p = conflicts[0]
            text = "conflict with %s: %s" % (_manager_label(e), _path_str(p))
        else:
            by = {}
            for e, p in conflicts:
                by.setdefault(_manager_label(e), []).append(_path_str(p))
            lines = []
            for m in sorted(by):
                lines.append("conflicts with %s:" % m)
                lines.extend("- " + x for x in by[m])
            text = "\n".join(lines)
        causes = [{"reason": "FieldManagerConflict", "message": "conflict with %s" % _manager_label(e),
                   "field": _path_str(p)} for e, p in conflicts]
        raise ApiError(409, "Conflict", "Apply failed with %d conflict%s: %s" % (n, "" if n == 1 else "s", text),
                       {"causes": causes})
    if force:
        for e, p in conflicts:
            e.fields.discard(p)
    merged = merge(live, applied, sem)
    mine = next((e for e in entries if e.key() == key), None)
    prev = mine.fields if mine else set()
    others = set()
    for e in entries:
        if e is not mine:
            others |= e.fields
    for p in sorted(prev - A - others, key=len, reverse=True):
        if p[-1] == "." and len(p) >= 2 and p[-2].startswith("k:"):
            _remove_path(merged, p[:-1])
        elif _leaf(p):
            _remove_path(merged, p)
    entries = [e for e in entries if e.fields or e is mine]
    if mine is None:
        if A:
            entries.append(Entry(manager, "Apply", api_version, now, A, subresource))
    else:
        if mine.fields != A or _changed(live, merged, A, A):
            mine.time = now
        mine.fields = A
        mine.api_version = api_version
        if not A:
            entries.remove(mine)
    _store(merged.setdefault("metadata", {}), entries)
    return merged


def merge(live, applied, sem, spath=()):
    """Apply semantics: maps merge, associative lists merge by key, sets
    union, atomic lists and scalars are replaced."""
    if not isinstance(applied, dict) or not isinstance(live, dict) or sem.map_atomic(spath):
        return util.deepcopy(applied)
    out = util.deepcopy(live)
    for k, av in applied.items():
        sp = spath + (k,) if not (spath == () and k == "metadata") else ("metadata",)
        if isinstance(av, dict):
            out[k] = merge(out.get(k), av, sem, sp)
        elif isinstance(av, list):
            lv = out.get(k)
            kind, keys = sem.list_info(sp)
            if kind == "map" and isinstance(lv, list):
                res = util.deepcopy(lv)
                for item in av:
                    if not isinstance(item, dict):
                        res.append(util.deepcopy(item))
                        continue
                    idx = next((i for i, x in enumerate(res) if isinstance(x, dict)
                                and all(x.get(kk) == item.get(kk) for kk in keys)), None)
                    if idx is None:
                        res.append(util.deepcopy(item))
                    else:
                        res[idx] = merge(res[idx], item, sem, sp + (None,))
                out[k] = res
            elif kind == "set" and isinstance(lv, list):
                res = list(lv)
                for x in av:
                    if x not in res:
                        res.append(x)
                out[k] = res
            else:
                out[k] = util.deepcopy(av)
        else:
            out[k] = av
    return out


def _remove_path(obj, path):
    chain = [obj]
    cur = obj
    for el in path[:-1]:
        if el.startswith("f:"):
            if not isinstance(cur, dict) or el[2:] not in cur:
                return
            cur = cur[el[2:]]
        elif el.startswith("k:"):
            want = json.loads(el[2:])
            if not isinstance(cur, list):
                return
            cur = next((x for x in cur if isinstance(x, dict) and all(x.get(k) == w for k, w in want.items())),
                       None)
            if cur is None:
                return
        chain.append(cur)
    last = path[-1]
    if last.startswith("f:") and isinstance(cur, dict):
        cur.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(cur, list):
        want = json.loads(last[2:])
        cur[:] = [x for x in cur if not (isinstance(x, dict) and all(x.get(k) == w for k, w in want.items()))]
    elif last.startswith("v:") and isinstance(cur, list):
        want = json.loads(last[2:])
        cur[:] = [x for x in cur if x != want]
    # drop maps and lists left empty (never the object itself or its metadata)
    for i in range(len(chain) - 1, 0, -1):
        node = chain[i]
        if not ((isinstance(node, dict) or isinstance(node, list)) and not node):
            break
        parent = chain[i - 1]
        el = path[i - 1]
        if isinstance(parent, dict) and el.startswith("f:") and not (i == 1 and el == "f:metadata"):
            parent.pop(el[2:], None)
        else:
            break
