"""metav1.Status errors with the same reason, code, message and details as
the real API server (see ../shared/kube/*.txt)."""


class ApiError(Exception):
    """An error answered to the client as a metav1.Status object."""

    def __init__(self, code, reason, message, details=None, headers=None, metadata=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.metadata = metadata

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": self.metadata or {},
              "status": "Failure"}
        if self.message is not None:
            st["message"] = self.message
        if self.reason:
            st["reason"] = self.reason
        if self.details is not None:
            st["details"] = self.details
        st["code"] = self.code
        return st


def qualified_resource(rt):
    """'widgets.example.com' or 'pods' (core)."""
    return rt.plural + ("." + rt.group if rt.group else "")


def qualified_kind(rt):
    return rt.kind + ("." + rt.group if rt.group else "")


def _details(rt, name, kind=None, extra=None):
    d = {}
    if name is not None:
        d["name"] = name
    if rt is not None and rt.group:
        d["group"] = rt.group
    d["kind"] = kind if kind is not None else (rt.plural if rt is not None else "")
    if extra:
        d.update(extra)
    return d


def not_found(rt, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (qualified_resource(rt), name),
                    _details(rt, name))


def not_found_raw(resource, name, group=""):
    d = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = resource
    return ApiError(404, "NotFound", '%s "%s" not found' % (resource + ("." + group if group else ""), name), d)


def not_found_path():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(rt, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (qualified_resource(rt), name),
                    _details(rt, name))


def conflict(rt, name, why="the object has been modified; please apply your changes to the latest "
                           "version and try again"):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (qualified_resource(rt), name, why), _details(rt, name))


def conflict_kind(rt, name, why):
    """Conflicts that name the Kind (delete preconditions do)."""
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (qualified_kind(rt), name, why), _details(rt, name, kind=rt.kind))


def conflict_raw(resource, name, why, kind=None):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (resource, name, why),
                    {"name": name, "kind": kind or resource})


class FieldError:
    """One field.Error: type is the cause reason (FieldValueInvalid, ...)."""

    def __init__(self, reason, field, message):
        self.reason = reason
        self.field = field
        self.message = message

    def text(self):
        return "%s: %s" % (self.field, self.message) if self.field else self.message


def required(field, detail=""):
    return FieldError("FieldValueRequired", field, "Required value" + (": " + detail if detail else ""))


def _fmt(v):
    import json
    if isinstance(v, str):
        return json.dumps(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def invalid(field, value, detail):
    return FieldError("FieldValueInvalid", field, "Invalid value: %s: %s" % (_fmt(value), detail))


def not_supported(field, value, supported):
    msg = "Unsupported value: %s" % _fmt(value)
    if supported:
        msg += ": supported values: " + ", ".join(_fmt(s) for s in supported)
    return FieldError("FieldValueNotSupported", field, msg)


def forbidden(field, detail):
    return FieldError("FieldValueForbidden", field, "Forbidden: " + detail)


def duplicate(field, value):
    return FieldError("FieldValueDuplicate", field, "Duplicate value: %s" % _fmt(value))


def too_long(field, max_len):
    return FieldError("FieldValueTooLong", field, "Too long: may not be more than %d bytes" % max_len)


def too_many(field, actual, max_items):
    return FieldError("FieldValueTooMany", field, "Too many: %d: must have at most %d items" % (actual, max_items))


def type_invalid(field, detail):
    return FieldError("FieldValueTypeInvalid", field, "Invalid value: " + detail)


def invalid_error(rt_or_kind, name, errors, group=None):
    """422 Invalid: 'Kind.group "name" is invalid: [a, b]'."""
    if isinstance(rt_or_kind, str):
        kind = rt_or_kind
        grp = group or ""
    else:
        kind = rt_or_kind.kind
        grp = rt_or_kind.group
    qk = kind + ("." + grp if grp else "")
    if len(errors) == 1:
        agg = errors[0].text()
    else:
        agg = "[" + ", ".join(e.text() for e in errors) + "]"
    d = {}
    if name:
        d["name"] = name
    if grp:
        d["group"] = grp
    d["kind"] = kind
    causes = []
    for e in errors:
        c = {"reason": e.reason, "message": e.message}
        if e.field:
            c["field"] = e.field
        causes.append(c)
    d["causes"] = causes
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (qk, name if name is not None else "", agg), d)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def method_not_allowed():
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                    {})


def unsupported_media_type(accepted):
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(accepted))


def not_acceptable():
    return ApiError(406, "NotAcceptable", "406: Not Acceptable", {})


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden_error(user, verb, resource, group, namespace, name=None, subresource=""):
    res = resource + ("/" + subresource if subresource else "")
    what = '%s "%s"' % (resource + ("." + group if group else ""), name) if name else \
        (resource + ("." + group if group else ""))
    msg = '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s"' % (what, user, verb, res, group)
    if namespace:
        msg += ' in the namespace "%s"' % namespace
    else:
        msg += " at the cluster scope"
    d = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = resource
    return ApiError(403, "Forbidden", msg, d)


def gone_expired(message, metadata=None):
    return ApiError(410, "Expired", message, None, metadata=metadata)


def too_many_requests(message, retry_after=0, causes=None):
    details = None
    if causes or retry_after:
        details = {}
        if causes:
            details["causes"] = causes
        if retry_after:
            details["retryAfterSeconds"] = retry_after
    hdr = {"Retry-After": str(retry_after)} if retry_after else {}
    return ApiError(429, "TooManyRequests", message, details, headers=hdr)


def internal(message):
    return ApiError(500, "InternalError", "Internal error occurred: " + message,
                    {"causes": [{"message": message}]})


def internal_plain(message):
    return ApiError(500, "", message)


def timeout(message, retry_after=1, causes=None):
    d = {"retryAfterSeconds": retry_after}
    if causes:
        d["causes"] = causes
    return ApiError(504, "Timeout", message, d, headers={"Retry-After": str(retry_after)})


def forbidden_plain(message, details):
    return ApiError(403, "Forbidden", message, details)
