"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
strategic merge patch with the merge keys of the built-in types.

Strategic merge patch follows the real types: tolerations and taints have
no merge key there (the whole list is replaced); containers, volumes, env,
ports, conditions, ownerReferences, podIPs ... merge by key; finalizers and
podCIDRs merge as sets.  Directives: $patch (replace/delete/merge),
$retainKeys, $deleteFromPrimitiveList/<field>, $setElementOrder/<field>."""

import json

from . import util


class PatchError(Exception):
    """Applying the patch failed (422 for JSON patch, 400/422 for SMP)."""


# ---------------------------------------------------------------- list semantics

# SMP merge keys of built-in types, by field name (context-dependent ones below)
_SMP_MERGE_KEY = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
    "imagePullSecrets": "name", "env": "name", "resourceClaims": "name", "schedulingGates": "name",
    "volumeMounts": "mountPath", "volumeDevices": "devicePath", "conditions": "type", "addresses": "type",
    "ownerReferences": "uid", "podIPs": "ip", "hostIPs": "ip", "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey", "containerStatuses": None, "initContainerStatuses": None,
}
_SMP_PRIMITIVE_MERGE = {"finalizers", "podCIDRs"}

# server-side apply list types of built-in types
_SSA_MAP_KEYS = {
    "containers": ["name"], "initContainers": ["name"], "ephemeralContainers": ["name"], "volumes": ["name"],
    "imagePullSecrets": ["name"], "env": ["name"], "resourceClaims": ["name"], "schedulingGates": ["name"],
    "volumeMounts": ["mountPath"], "volumeDevices": ["devicePath"], "conditions": ["type"],
    "ownerReferences": ["uid"], "podIPs": ["ip"], "hostIPs": ["ip"], "hostAliases": ["ip"],
    "topologySpreadConstraints": ["topologyKey", "whenUnsatisfiable"], "addresses": ["type"],
}
_SSA_SETS = {"finalizers", "podCIDRs"}


class BuiltinSemantics:
    """List semantics of built-in types, decided by field name and context."""

    def smp_list(self, path):
        """('merge', key) | ('merge-primitive', None) | ('replace', None)."""
        name = path[-1] if path else None
        if name == "ports":
            in_container = any(p in ("containers", "initContainers", "ephemeralContainers") for p in path)
            return ("merge", "containerPort" if in_container else "port")
        if name in _SMP_PRIMITIVE_MERGE:
            return ("merge-primitive", None)
        key = _SMP_MERGE_KEY.get(name)
        if key:
            return ("merge", key)
        return ("replace", None)

    def list_info(self, path):
        name = path[-1] if path else None
        if name == "ports":
            in_container = any(p in ("containers", "initContainers", "ephemeralContainers") for p in path)
            return ("map", ["containerPort", "protocol"] if in_container else ["port", "protocol"])
        if name in _SSA_SETS:
            return ("set", None)
        keys = _SSA_MAP_KEYS.get(name)
        if keys:
            return ("map", keys)
        return ("atomic", None)

    def map_atomic(self, path):
        return False


class SchemaSemantics:
    """List semantics from a CRD's structural schema (metadata as built-in)."""

    def __init__(self, schema):
        self.schema = schema
        self.builtin = BuiltinSemantics()

    def list_info(self, path):
        if path and path[0] == "metadata":
            return self.builtin.list_info(path)
        if self.schema is None:
            return ("atomic", None)
        return self.schema.list_info(path)

    def smp_list(self, path):
        return ("replace", None)

    def map_atomic(self, path):
        if self.schema is None or (path and path[0] == "metadata"):
            return False
        return self.schema.map_atomic(path)


BUILTIN = BuiltinSemantics()

# ---------------------------------------------------------------- JSON merge patch


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return util.deepcopy(patch)
    result = util.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


# ---------------------------------------------------------------- JSON patch


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("JSON pointer must start with '/': %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc, parts):
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise PatchError("path not found: %s" % p)
            cur = cur[p]
        elif isinstance(cur, list):
            try:
                i = int(p)
            except ValueError:
                raise PatchError("invalid array index %r" % p)
            if not 0 <= i < len(cur):
                raise PatchError("array index out of range")
            cur = cur[i]
        else:
            raise PatchError("cannot traverse a scalar")
    return cur


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError:
                raise PatchError("invalid array index %r" % last)
            if not 0 <= i <= len(parent):
                raise PatchError("array index out of range")
            parent.insert(i, value)
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc, parts):
    if not parts:
        raise PatchError("cannot remove the whole document")
    parent = _resolve(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("unable to remove nonexistent key: %s: missing value" % last)
        return parent.pop(last)
    if isinstance(parent, list):
        try:
            i = int(last)
        except ValueError:
            raise PatchError("invalid array index %r" % last)
        if not 0 <= i < len(parent):
            raise PatchError("array index out of range")
        return parent.pop(i)
    raise PatchError("cannot remove from a scalar")


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise PatchError("json patch must be an array of operations")
    doc = util.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("invalid operation %r" % (op,))
        kind = op["op"]
        path = _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, path, util.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _resolve(doc, path)
            if not path:
                doc = util.deepcopy(op.get("value"))
            else:
                parent = _resolve(doc, path[:-1])
                if isinstance(parent, dict):
                    parent[path[-1]] = util.deepcopy(op.get("value"))
                else:
                    parent[int(path[-1])] = util.deepcopy(op.get("value"))
        elif kind == "move":
            frm = _pointer(op.get("from", ""))
            v = _remove(doc, frm)
            doc = _add(doc, path, v)
        elif kind == "copy":
            frm = _pointer(op.get("from", ""))
            doc = _add(doc, path, util.deepcopy(_resolve(doc, frm)))
        elif kind == "test":
            try:
                actual = _resolve(doc, path)
            except PatchError:
                raise PatchError("testing value %s failed: path not found" % op.get("path"))
            if actual != op.get("value") or type(actual) is bool != (type(op.get("value")) is bool):
                raise PatchError("testing value %s failed: test failed" % op.get("path"))
        else:
            raise PatchError("unexpected kind: %s" % kind)
    return doc


# ---------------------------------------------------------------- strategic merge patch


def _strip(v):
    """Remove SMP directives from a value used as-is."""
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items()
                if not (k.startswith("$setElementOrder/") or k.startswith("$deleteFromPrimitiveList/")
                        or k in ("$patch", "$retainKeys"))}
    if isinstance(v, list):
        return [_strip(x) for x in v if not (isinstance(x, dict) and x.get("$patch") == "delete")]
    return v


def strategic_merge_patch(orig, patch, sem=BUILTIN, path=()):
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    return _smp_map(orig if isinstance(orig, dict) else {}, patch, sem, path)


def _smp_map(orig, patch, sem, path):
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip(patch)
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError("unknown patch type: %s in map: %s" % (directive, json.dumps(patch)))
    result = util.deepcopy(orig)
    orders = {}
    for k, pv in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = pv
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(pv, list):
                result[field] = [x for x in result[field] if x not in pv]
            continue
        if pv is None:
            result.pop(k, None)
            continue
        ov = result.get(k)
        if isinstance(pv, dict):
            if isinstance(ov, dict):
                merged = _smp_map(ov, pv, sem, path + (k,))
            else:
                merged = None if pv.get("$patch") == "delete" else _strip(pv)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        elif isinstance(pv, list):
            strategy, key = sem.smp_list(path + (k,))
            order = patch.get("$setElementOrder/" + k)
            if strategy == "merge" and isinstance(ov, list):
                result[k] = _smp_list(ov, pv, key, sem, path + (k,), order)
                continue
            elif strategy == "merge-primitive" and isinstance(ov, list):
                if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in pv):
                    result[k] = [x for x in pv if not isinstance(x, dict)]
                else:
                    out = list(ov)
                    for x in pv:
                        if x not in out:
                            out.append(x)

                    def ident(x):
                        return "v:" + json.dumps(x)
                    result[k] = _order_merged(out, ov, [ident(x) for x in pv], order, ident)
                continue
            else:
                result[k] = _strip(pv)
        else:
            result[k] = pv
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        for k in list(result.keys()):
            if k not in retain:
                del result[k]
    for field, order in orders.items():
        if field in patch:
            continue
        lst = result.get(field)
        if not isinstance(lst, list) or not isinstance(order, list):
            continue
        strategy, key = sem.smp_list(path + (field,))
        if strategy == "merge" and key:
            idx = {}
            for i, o in enumerate(order):
                if isinstance(o, dict) and key in o:
                    idx[json.dumps(o[key], sort_keys=True)] = i
            lst.sort(key=lambda it: idx.get(json.dumps(it.get(key), sort_keys=True) if isinstance(it, dict)
                                            else None, len(order)))
        elif strategy == "merge-primitive":
            idx = {json.dumps(o): i for i, o in enumerate(order)}
            lst.sort(key=lambda it: idx.get(json.dumps(it), len(order)))
    return result


def _merge_sorted(left, right, server_order, ident):
    """strategicpatch.mergeSortedSlice: insert server-only items (left) into
    the patch items (right) keeping both relative orders, using the live
    list's order where both items are in it."""
    pos = {}
    for i, x in enumerate(server_order):
        pos.setdefault(ident(x), i)
    out = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = pos.get(ident(left[i]), -1)
            ri = pos.get(ident(right[j]), -1)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _smp_list(orig, patch, key, sem, path, order=None):
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [_strip(x) for x in patch if not (isinstance(x, dict) and x.get("$patch") == "replace")]

    def ident(x):
        return json.dumps(x.get(key), sort_keys=True) if isinstance(x, dict) else "v:" + json.dumps(x)

    result = util.deepcopy(orig)
    patch_ids = []
    for item in patch:
        if not isinstance(item, dict):
            if item not in result:
                result.append(item)
            patch_ids.append(ident(item))
            continue
        if key not in item:
            raise PatchError("map: %s does not contain declared merge key: %s" % (json.dumps(item), key))
        kv = item[key]
        idx = next((i for i, x in enumerate(result) if isinstance(x, dict) and x.get(key) == kv), None)
        if item.get("$patch") == "delete":
            result = [x for x in result if not (isinstance(x, dict) and x.get(key) == kv)]
            continue
        patch_ids.append(ident(item))
        if idx is None:
            result.append(_strip(item))
        else:
            merged = _smp_map(result[idx], item, sem, path)
            if merged is None:
                del result[idx]
            else:
                result[idx] = merged
    return _order_merged(result, orig, patch_ids, order, ident)


def _order_merged(result, orig, patch_ids, order, ident):
    pset = set(patch_ids)
    patch_items = [x for x in result if ident(x) in pset]
    server_only = [x for x in result if ident(x) not in pset]
    porder = [ident(x) for x in order] if order is not None else patch_ids
    prank = {v: i for i, v in enumerate(porder)}
    patch_items.sort(key=lambda x: prank.get(ident(x), len(porder)))
    orank = {}
    for i, x in enumerate(orig):
        orank.setdefault(ident(x), i)
    server_only.sort(key=lambda x: orank.get(ident(x), len(orig)))
    return _merge_sorted(server_only, patch_items, orig, ident)
