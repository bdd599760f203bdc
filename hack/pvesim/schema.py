"""The PVE API schema (apidata.js, kept gzip-compressed in data/; see
data/SOURCE.md): routing and parameter checks.

Validation follows pve-common's JSONSchema.pm (check_prop, check_type,
check_format, parse_property_string) so that the "errors" map of a 400 answer
carries the same texts the real server sends, e.g.
  {"sshkeys": "invalid format - invalid urlencoded string: ssh-rsa+AAA\n"}
  {"foo": "property is not defined in schema and the schema does not allow
           additional properties"}
"""

import gzip
import json
import os
import re

from . import formats
from .formats import FormatError, split_list

# apidata.js folds numbered keys (net0..net31) into "net[n]".  Ranges come
# from the key's description ("n is 0 to 3") or from qemu-server's constants.
N_RANGES = {
    "hostpci": 16, "ipconfig": 32, "net": 32, "numa": 8, "unused": 256,
    "usb": 14, "virtiofs": 10, "ide": 4, "sata": 6, "scsi": 31, "virtio": 16,
    "serial": 4, "parallel": 3, "mp": 256,
}


def perl_regex(pat):
    """Turn a Perl regex from apidata.js into a Python one."""
    pat = pat.replace("(?^i:", "(?i:").replace("(?^:", "(?:")
    pat = pat.replace("\\z", "\\Z").replace("\\A", "^")
    return pat


_regex_cache = {}


def full_match(pattern, value):
    rx = _regex_cache.get(pattern)
    if rx is None:
        rx = re.compile("^(?:" + perl_regex(pattern) + ")$", re.A | re.S)
        _regex_cache[pattern] = rx
    return rx.match(value) is not None


def is_number(v):
    return re.match(r"^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$", v) is not None


def is_integer(v):
    return re.match(r"^[+-]?\d+$", v) is not None


def perl_num(v):
    """Print a schema number the way Perl interpolates it."""
    if isinstance(v, str):
        return v
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def scalar_text(value):
    """What Perl would see for a JSON-decoded scalar."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    return value


class Errors(dict):
    def add(self, path, msg):
        path = path or "_root"
        if path in self:
            self[path] = self[path] + "\\n" + msg
        else:
            self[path] = msg


def expand_props(props):
    """Map of real key -> schema; numbered keys as (prefix, range, schema)."""
    plain, numbered = {}, []
    for k, v in (props or {}).items():
        m = re.match(r"^([a-z]+)\[n\]$", k)
        if m:
            prefix = m.group(1)
            rng = N_RANGES.get(prefix, 32)
            d = re.search(r"n is (\d+) to (\d+)", v.get("description", ""))
            if d and prefix not in ("usb",):
                rng = int(d.group(2)) + 1
            numbered.append((prefix, rng, v))
        else:
            plain[k] = v
    return plain, numbered


def lookup(plain, numbered, key):
    if key in plain:
        return plain[key]
    m = re.match(r"^([a-z]+)(\d+)$", key)
    if m:
        for prefix, rng, sch in numbered:
            if prefix == m.group(1) and int(m.group(2)) < rng and \
                    str(int(m.group(2))) == m.group(2):
                return sch
    return None


def check_type(path, typ, value, errors):
    if not typ:
        return True
    if isinstance(typ, list):
        for t in typ:
            tmp = Errors()
            check_type(path, t, value, tmp)
            if not tmp:
                return True
        errors.add(path, "type check ('%s') failed" % "|".join(typ))
        return False
    if typ == "any":
        return True
    if typ == "null":
        if value is not None:
            errors.add(path, "type check ('null') failed - value is not null")
            return False
        return True
    if typ == "array":
        if not isinstance(value, list):
            errors.add(path, "type check ('array') failed")
            return False
        return True
    if typ == "object":
        if not isinstance(value, dict):
            errors.add(path, "type check ('object') failed")
            return False
        return True
    if isinstance(value, (list, dict)) or (isinstance(value, bool) and typ != "boolean"):
        ref = {list: "ARRAY", dict: "HASH"}.get(type(value), "JSON::PP::Boolean")
        errors.add(path, "type check ('%s') failed - got %s" % (typ, ref))
        return False
    if isinstance(value, bool):
        return True
    v = scalar_text(value)
    if typ == "string":
        return True
    if typ == "boolean":
        if v in ("1", "0"):
            return True
        errors.add(path, "type check ('boolean') failed - got '%s'" % v)
        return False
    if typ == "integer":
        if not is_integer(v):
            errors.add(path, "type check ('integer') failed - got '%s'" % v)
            return False
        return True
    if typ == "number":
        if not is_number(v):
            errors.add(path, "type check ('number') failed - got '%s'" % v)
            return False
        return True
    return True


# The copy in the repository; PVE_APIDATA or --apidata name another
# (apidata.js as Proxmox's pve-docs builds it, or that file gzip-compressed).
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "apidata.js.gz")


def default_path():
    return os.environ.get("PVE_APIDATA") or BUNDLED


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8")


class Schema:
    def __init__(self, path=None):
        text = read_text(path or default_path())
        text = text[text.index("["):text.rindex("]") + 1]
        self.tree = json.loads(text)
        self.nodes = {}
        self._index(self.tree)
        # 'cdrom' and the drive keys share the ide drive property string.
        qm = self.nodes["/nodes/{node}/qemu/{vmid}/config"]["info"]["POST"]
        props = qm["parameters"]["properties"]
        formats.HASHES.setdefault("pve-qm-ide", props["ide[n]"]["format"])
        self.config_props = expand_props(props)
        getconf = self.nodes["/nodes/{node}/qemu/{vmid}/config"]["info"]["GET"]
        self.config_return_props = expand_props(getconf["returns"]["properties"])

    def _index(self, children):
        for c in children:
            self.nodes[c["path"]] = c
            self._index(c.get("children", []))

    # ---- routing (PVE::RESTHandler::find_handler) ----
    def find(self, method, relpath):
        """Return (template, info, uri_params) or (template, None, params)
        when the path exists without that method, or None."""
        segs = [s for s in relpath.split("/") if s != ""]
        params = {}
        level = self.tree
        node = None
        i = 0
        while i < len(segs):
            seg = segs[i]
            nxt = None
            for c in level:
                last = c["path"].rsplit("/", 1)[-1]
                if last == seg:
                    nxt = c
                    break
            if nxt is None:
                for c in level:
                    last = c["path"].rsplit("/", 1)[-1]
                    m = re.match(r"^\{(\w+)\}$", last)
                    if m:
                        nxt = c
                        name = m.group(1)
                        if name == "volume" and not c.get("children"):
                            # a volume ID may carry slashes (local:iso/x.iso)
                            params[name] = "/".join(segs[i:])
                            i = len(segs) - 1
                        else:
                            params[name] = seg
                        break
            if nxt is None:
                return None
            node = nxt
            level = nxt.get("children", [])
            i += 1
        if node is None:
            return None
        info = node.get("info", {}).get(method)
        return node["path"], info, params

    # ---- validation ----
    def validate(self, params, pschema):
        errors = Errors()
        props = pschema.get("properties") or {}
        plain, numbered = expand_props(props)
        # A form repeats an array parameter's key; the server joins the
        # values with NUL (pve-http-server), the handler splits them again.
        for k, v in list(params.items()):
            sch = lookup(plain, numbered, k)
            if sch and sch.get("type") == "array" and isinstance(v, str):
                params[k] = v.split("\0") if v else []
        self.check_object("", plain, numbered, params, pschema.get("additionalProperties"),
                          errors)
        return errors

    def check_object(self, path, plain, numbered, value, additional, errors):
        for k, sch in plain.items():
            self.check_prop(value.get(k), sch, (path + "." + k) if path else k, errors)
        for k in value:
            newpath = (path + "." + k) if path else k
            sub = lookup(plain, numbered, k)
            if sub is not None:
                req = sub.get("requires")
                if isinstance(req, str) and value.get(req) is None:
                    errors.add((path + "." + req) if path else req,
                               "missing property - '%s' requires this property" % newpath)
                if k not in plain:
                    self.check_prop(value[k], sub, newpath, errors)
                continue
            if additional is not None and not additional:
                errors.add(newpath, "property is not defined in schema and the schema does "
                                    "not allow additional properties")
                continue
            if isinstance(additional, dict):
                self.check_prop(value[k], additional, newpath, errors)

    def check_prop(self, value, schema, path, errors):
        if value is None:
            if schema.get("type") == "null":
                return
            if not schema.get("optional") and not schema.get("alias") and \
                    not schema.get("group"):
                errors.add(path, "property is missing and it is not optional")
            return
        if not check_type(path, schema.get("type"), value, errors):
            return
        if isinstance(value, list):
            items = schema.get("items")
            if isinstance(items, dict):
                for n, el in enumerate(value):
                    self.check_prop(el, items, "%s[%d]" % (path, n), errors)
            return
        if isinstance(value, dict):
            if schema.get("properties") is not None or schema.get("additionalProperties"):
                plain, numbered = expand_props(schema.get("properties") or {})
                self.check_object(path, plain, numbered, value,
                                  schema.get("additionalProperties"), errors)
            return
        v = scalar_text(value)
        fmt = schema.get("format")
        if fmt:
            try:
                self.check_format(fmt, v, path)
            except FormatError as e:
                errors.add(path, "invalid format - " + e.msg)
                return
        pattern = schema.get("pattern")
        if pattern and not full_match(pattern, v):
            errors.add(path, "value does not match the regex pattern")
            return
        if schema.get("maxLength") is not None and len(v) > int(schema["maxLength"]):
            errors.add(path, "value may only be %s characters long" % perl_num(schema["maxLength"]))
            return
        if schema.get("minLength") is not None and len(v) < int(schema["minLength"]):
            errors.add(path, "value must be at least %s characters long"
                       % perl_num(schema["minLength"]))
            return
        if is_number(v):
            mx = schema.get("maximum")
            if mx is not None and float(v) > float(mx):
                errors.add(path, "value must have a maximum value of %s" % perl_num(mx))
                return
            mn = schema.get("minimum")
            if mn is not None and float(v) < float(mn):
                errors.add(path, "value must have a minimum value of %s" % perl_num(mn))
                return
        enum = schema.get("enum")
        if enum is not None and v not in [str(e) for e in enum]:
            errors.add(path, "value '%s' does not have a value in the enumeration '%s'"
                       % (v, ", ".join(str(e) for e in enum)))

    def check_format(self, fmt, value, path):
        """Raise FormatError like PVE::JSONSchema::check_format."""
        if isinstance(fmt, dict):
            self.parse_property_string(fmt, value, path)
            return
        if fmt == "regex":
            return
        m = re.match(r"^(.*?)(?:-(list|opt))?$", fmt)
        name, kind = m.group(1), m.group(2)
        if name in formats.HASHES and not kind:
            self.parse_property_string(formats.HASHES[name], value, path)
            return
        fn = formats.FUNCS.get(name)
        if fn is None:
            if name in formats.UNCHECKED or fmt in formats.UNCHECKED:
                return
            # A format the simulator does not know: accept, like an unchecked one.
            return
        if kind == "list":
            for item in split_list(value):
                fn(item)
        elif kind == "opt":
            if value:
                fn(value)
        else:
            fn(value)

    def parse_property_string(self, fmt, data, path, additional=0):
        """PVE::JSONSchema::parse_property_string; returns the parsed dict."""
        res = {}
        default_key = None
        for part in data.split(","):
            if re.match(r"^\s*$", part):
                continue
            m = re.match(r"^([^=]+)=(.+)$", part, re.S)
            if m:
                k, v = m.group(1), m.group(2)
                if k in res:
                    raise FormatError("duplicate key in comma-separated list property: %s" % k)
                sch = fmt.get(k)
                if sch and sch.get("alias"):
                    if sch.get("keyAlias"):
                        if sch["keyAlias"] in res:
                            raise FormatError("key alias '%s' is already defined" % sch["keyAlias"])
                        res[sch["keyAlias"]] = k
                    k = sch["alias"]
                    sch = fmt.get(k)
                if not sch:
                    raise FormatError("invalid key in comma-separated list property: %s" % k)
                if sch.get("type") == "boolean":
                    if re.match(r"^(1|on|yes|true)$", v, re.I):
                        v = "1"
                    elif re.match(r"^(0|off|no|false)$", v, re.I):
                        v = "0"
                res[k] = v
            elif "=" not in part:
                if default_key:
                    raise FormatError("duplicate key in comma-separated list property: %s"
                                      % default_key)
                for key, sch in fmt.items():
                    if sch.get("default_key"):
                        default_key = key
                        if key not in res:
                            res[key] = part
                            break
                        raise FormatError("duplicate key in comma-separated list property: %s"
                                          % key)
                if not default_key:
                    raise FormatError("value without key, but schema does not define a "
                                      "default key")
            else:
                raise FormatError("missing key in comma-separated list property")
        errors = Errors()
        self.check_object(path, fmt, [], res, additional, errors)
        if errors:
            msg = "format error\n" + "".join("%s: %s\n" % (k, errors[k]) for k in sorted(errors))
            raise FormatError(msg)
        return res

    def parse_prop_string_loose(self, fmt, data):
        """Parse without raising; None when invalid."""
        if isinstance(fmt, str):
            fmt = formats.HASHES.get(fmt)
        try:
            return self.parse_property_string(fmt, data, "x")
        except FormatError:
            return None

    def config_key_schema(self, key):
        plain, numbered = self.config_props
        return lookup(plain, numbered, key)
