"""/openapi/v2 in protobuf: the Swagger 2.0 document encoded as the
gnostic `openapi.v2.Document` message, the form a real API server sends to
kubectl 1.20-1.26 (Accept: application/com.github.proto-openapi.spec.v2@v1.0
+protobuf) and later (...spec.v2.v1.0+protobuf).  kubectl parses it into its
models for client-side validation, `explain` and strategic merge patches.

Field numbers are those of gnostic's OpenAPIv2.proto.  Keys the message has
no field for (OpenAPI v3 words such as anyOf or nullable) are dropped, as the
API server drops them from v2; vendor extensions (x-...) and free-form
values (default, enum, example) travel as their YAML text, for which JSON
text is used (JSON is YAML)."""

import json
import struct

MEDIA_TYPES = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
               "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
# what a real server answers in Content-Type, whichever of the two was asked
CONTENT_TYPE = MEDIA_TYPES[1]


def _varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(num, wire):
    return _varint(num << 3 | wire)


def _bytes(num, data):
    return _key(num, 2) + _varint(len(data)) + data


def _str(num, s):
    return _bytes(num, str(s).encode("utf-8")) if s not in (None, "") else b""


def _bool(num, v):
    return _key(num, 0) + b"\x01" if v else b""


def _int(num, v):
    return _key(num, 0) + _varint(int(v)) if v else b""


def _double(num, v):
    return _key(num, 1) + struct.pack("<d", float(v)) if v else b""


def _msg(num, body):
    """A sub-message field; written even when empty (it is set)."""
    return _bytes(num, body)


def _any(num, value):
    # Any { google.protobuf.Any value = 1; string yaml = 2; }
    return _msg(num, _str(2, json.dumps(value, separators=(",", ":")) + "\n"))


def _named_any(num, name, value):
    return _msg(num, _str(1, name) + _any(2, value))


def _extensions(num, d):
    return b"".join(_named_any(num, k, v) for k, v in d.items() if k.startswith("x-"))


# ---------------------------------------------------------------- Schema

def schema(s):
    """Schema message from a Swagger 2.0 schema dict."""
    if not isinstance(s, dict):
        return b""
    out = [_str(1, s.get("$ref")), _str(2, s.get("format")), _str(3, s.get("title")),
           _str(4, s.get("description"))]
    if "default" in s:
        out.append(_any(5, s["default"]))
    out += [_double(6, s.get("multipleOf")), _double(7, s.get("maximum")), _bool(8, s.get("exclusiveMaximum")),
            _double(9, s.get("minimum")), _bool(10, s.get("exclusiveMinimum")), _int(11, s.get("maxLength")),
            _int(12, s.get("minLength")), _str(13, s.get("pattern")), _int(14, s.get("maxItems")),
            _int(15, s.get("minItems")), _bool(16, s.get("uniqueItems")), _int(17, s.get("maxProperties")),
            _int(18, s.get("minProperties"))]
    out += [_str(19, r) for r in s.get("required") or ()]
    out += [_any(20, e) for e in s.get("enum") or ()]
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        out.append(_msg(21, _msg(1, schema(ap))))
    elif isinstance(ap, bool):
        out.append(_msg(21, _key(2, 0) + (b"\x01" if ap else b"\x00")))
    t = s.get("type")
    if t:
        out.append(_msg(22, b"".join(_str(1, x) for x in (t if isinstance(t, list) else [t]))))
    items = s.get("items")
    if items is not None:
        out.append(_msg(23, b"".join(_msg(1, schema(x)) for x in (items if isinstance(items, list) else [items]))))
    out += [_msg(24, schema(x)) for x in s.get("allOf") or ()]
    props = s.get("properties")
    if props is not None:
        out.append(_msg(25, b"".join(_msg(1, _str(1, k) + _msg(2, schema(v))) for k, v in props.items())))
    out += [_str(26, s.get("discriminator")), _bool(27, s.get("readOnly"))]
    if "example" in s:
        out.append(_any(30, s["example"]))
    out.append(_extensions(31, s))
    return b"".join(out)


# ---------------------------------------------------------------- paths

def _parameter(p):
    """ParametersItem from a Swagger 2.0 parameter."""
    if "$ref" in p:
        return _msg(2, _str(1, p["$ref"]))
    if p.get("in") == "body":
        body = (_str(1, p.get("description")) + _str(2, p.get("name")) + _str(3, "body") +
                _bool(4, p.get("required")) + _msg(5, schema(p.get("schema") or {})) + _extensions(6, p))
        return _msg(1, _msg(1, body))
    # Header (1), FormData (2), Query (3) and Path (4) sub-schemas: the same
    # fields, numbered from where allowEmptyValue is (form and query) or is not.
    where = {"header": 1, "formData": 2, "query": 3, "path": 4}.get(p.get("in"), 3)
    n = 6 if where in (2, 3) else 5
    sub = [_bool(1, p.get("required")), _str(2, p.get("in")), _str(3, p.get("description")),
           _str(4, p.get("name"))]
    if n == 6:
        sub.append(_bool(5, p.get("allowEmptyValue")))
    sub += [_str(n, p.get("type")), _str(n + 1, p.get("format"))]
    sub.append(_bool(n + 14, p.get("uniqueItems")))
    sub.append(_extensions(n + 17, p))
    return _msg(1, _msg(2, _msg(where, b"".join(sub))))


def _operation(op):
    out = [_str(1, t) for t in op.get("tags") or ()]
    out += [_str(2, op.get("summary")), _str(3, op.get("description")), _str(5, op.get("operationId"))]
    out += [_str(6, m) for m in op.get("produces") or ()]
    out += [_str(7, m) for m in op.get("consumes") or ()]
    out += [_msg(8, _parameter(p)) for p in op.get("parameters") or ()]
    codes = []
    for code, r in (op.get("responses") or {}).items():
        resp = _str(1, r.get("description"))
        if "schema" in r:
            resp += _msg(2, _msg(1, schema(r["schema"])))
        codes.append(_msg(1, _str(1, code) + _msg(2, _msg(1, resp))))
    out.append(_msg(9, b"".join(codes)))
    out += [_str(10, s) for s in op.get("schemes") or ()]
    out += [_bool(11, op.get("deprecated")), _extensions(13, op)]
    return b"".join(out)


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item):
    out = [_msg(num, _operation(item[m])) for m, num in _METHODS.items() if m in item]
    out += [_msg(9, _parameter(p)) for p in item.get("parameters") or ()]
    out.append(_extensions(10, item))
    return b"".join(out)


def document(doc):
    """The Document message (bytes) of a Swagger 2.0 document (dict)."""
    info = doc.get("info") or {}
    out = [_str(1, doc.get("swagger", "2.0")), _msg(2, _str(1, info.get("title")) + _str(2, info.get("version")))]
    paths = doc.get("paths") or {}
    out.append(_msg(8, b"".join(_msg(2, _str(1, p) + _msg(2, _path_item(item))) for p, item in paths.items())))
    defs = doc.get("definitions") or {}
    out.append(_msg(9, b"".join(_msg(1, _str(1, k) + _msg(2, schema(v))) for k, v in defs.items())))
    return b"".join(out)
