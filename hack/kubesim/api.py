"""REST semantics of kube-apiserver: get, list, watch, create, update,
patch (merge, JSON, strategic, apply), delete, deletecollection and the
status, scale, binding, eviction and finalize subresources.

Every write happens under the store lock, so a read-modify-write is
atomic; controllers in this process use the same entry points (the
`*_internal` helpers)."""

import base64
import json
import time

from . import kinds as builtins
from . import crds as CRD
from . import errors as E
from . import managedfields as MF
from . import patch as P
from . import selector as selectors
from . import util
from . import yamlmini

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
APPLY_CBOR = "application/apply-patch+cbor"

_META_ORDER = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
               "ownerReferences", "finalizers", "managedFields")
_EVENT_ORDER = ("kind", "apiVersion", "metadata", "involvedObject", "reason", "message", "source", "firstTimestamp",
                "lastTimestamp", "count", "type", "eventTime", "series", "action", "related", "reportingComponent",
                "reportingInstance")


def _sorted_deep(v):
    if isinstance(v, dict):
        return {k: _sorted_deep(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [_sorted_deep(x) for x in v]
    return v


def order_object(rt, obj):
    """Key order of the real server: sorted for custom resources (they are
    unstructured), Go struct order at the top and in metadata otherwise."""
    if rt.is_custom:
        return _sorted_deep(obj)
    md = obj.get("metadata")
    if isinstance(md, dict):
        md.setdefault("resourceVersion", "")
        nm = {k: md[k] for k in _META_ORDER if k in md}
        for k, v in md.items():
            if k not in nm:
                nm[k] = v
        obj["metadata"] = nm
    keys = _EVENT_ORDER if rt.kind == "Event" else ("kind", "apiVersion", "metadata", "spec", "status")
    out = {k: obj[k] for k in keys if k in obj}
    for k, v in obj.items():
        if k not in out:
            out[k] = v
    return out


class Ctx:
    """Who is asking and with which options."""

    def __init__(self, user="admin", groups=("system:masters",), user_agent="", params=None):
        self.user = user
        self.groups = groups
        self.user_agent = user_agent or ""
        self.params = params or {}
        self.warnings = []

    def manager(self, default=None):
        fm = self.params.get("fieldManager")
        if fm:
            return fm
        if default:
            return default
        ua = self.user_agent.split("/", 1)[0].strip()
        return ua or "unknown"

    @property
    def dry_run(self):
        return self.params.get("dryRun") == "All"


def _param_int(params, key):
    v = params.get(key)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise E.bad_request("invalid value for %s: %s" % (key, v))


class Api:
    def __init__(self, registry, store, options):
        self.registry = registry
        self.store = store
        self.options = options
        self.lock = store.lock
        self.rbac = None  # set by main when authorization is enabled

    # ================================================================ helpers

    def table_for(self, rt):
        return self.store.table(rt)

    def storage_rt(self, rt):
        if rt.storage_id == "events":
            return self.registry.get("", "v1", "events")
        if rt.is_custom:
            return self.registry.storage_rt(rt.storage_id) or rt
        return rt

    def is_storage_form(self, rt):
        if rt.storage_id == "events":
            return rt.group == ""
        if rt.is_custom:
            return bool(rt.crd_version and rt.crd_version.get("storage"))
        return True

    def to_rt(self, rt, obj):
        """Storage form -> the form of the requested version (in place ok)."""
        if rt.storage_id == "events" and rt.group == "events.k8s.io":
            return builtins.event_from_core(obj)
        if rt.is_custom and obj.get("apiVersion") != rt.api_version:
            obj["apiVersion"] = rt.api_version
            return _sorted_deep(obj)
        return obj

    def from_rt(self, rt, obj):
        """Requested-version form -> storage form."""
        if rt.storage_id == "events" and rt.group == "events.k8s.io":
            return builtins.event_to_core(obj)
        if rt.is_custom:
            srt = self.storage_rt(rt)
            obj["apiVersion"] = srt.api_version
        return obj

    def entry_obj(self, rt, entry):
        return self.to_rt(rt, entry.obj())

    def entry_bytes(self, rt, entry):
        if self.is_storage_form(rt):
            return entry.data
        return util.dumps(self.to_rt(rt, entry.obj()))

    def key(self, rt, ns, name):
        return ns + "/" + name if rt.namespaced else name

    def lookup(self, group, plural):
        return self.registry.find_plural(group, plural)

    def get_object_internal(self, group, plural, ns, name):
        rt = self.lookup(group, plural)
        if rt is None:
            return None
        with self.lock:
            e = self.table_for(rt).items.get(self.key(rt, ns, name))
            return e.obj() if e else None

    def list_internal(self, group, plural, ns=None):
        rt = self.lookup(group, plural)
        if rt is None:
            return []
        with self.lock:
            t = self.table_for(rt)
            lo, hi = t.range(ns)
            ents = [t.items[k] for k in t.keys[lo:hi]]
        return [e.obj() for e in ents]

    # ================================================================ decoding

    def decode_body(self, rt, body, content_type, expect_kind=None):
        ct = (content_type or "application/json").split(";")[0].strip().lower()
        kind = expect_kind or rt.kind
        if ct in ("application/json", "", "*/*"):
            try:
                obj = json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
            except (ValueError, UnicodeDecodeError) as e:
                snippet = body[:30].decode("utf-8", "replace") if isinstance(body, bytes) else str(body)[:30]
                raise E.bad_request("the object provided is unrecognized (must be of type %s): couldn't get "
                                    "version/kind; json parse error: %s (%s ...)" % (kind, _json_err(e), snippet))
        elif ct in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                obj = yamlmini.load(body)
            except (yamlmini.YAMLError, UnicodeDecodeError) as e:
                raise E.bad_request("the object provided is unrecognized (must be of type %s): %s" % (kind, e))
        elif ct == "application/vnd.kubernetes.protobuf":
            from . import protobuf
            try:
                obj = protobuf.decode(body)
            except (protobuf.ProtobufError, UnicodeDecodeError) as e:
                raise E.bad_request("the object provided is unrecognized (must be of type %s): %s" % (kind, e))
        else:
            raise E.unsupported_media_type(["application/json", "application/yaml",
                                            "application/vnd.kubernetes.protobuf"])
        if not isinstance(obj, dict):
            raise E.bad_request("the object provided is unrecognized (must be of type %s): couldn't get version/kind;"
                                " json parse error: json: cannot unmarshal %s into Go value of type struct { "
                                "APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                                "\"json:\\\"kind,omitempty\\\"\" }" % (kind, "array" if isinstance(obj, list)
                                                                       else "string"))
        return obj

    def check_gvk(self, rt, obj, expect_kind=None, expect_av=None):
        kind = expect_kind or rt.kind
        av = expect_av or rt.api_version
        if rt.is_custom:
            if not obj.get("kind"):
                raise E.bad_request("Object 'Kind' is missing in '%s'" % json.dumps(obj, separators=(",", ":"))[:200])
            if not obj.get("apiVersion"):
                raise E.bad_request("Object 'apiVersion' is missing in '%s'" %
                                    json.dumps(obj, separators=(",", ":"))[:200])
        if obj.get("apiVersion") and obj["apiVersion"] != av:
            raise E.bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                                % (obj["apiVersion"], av))
        if obj.get("kind") and obj["kind"] != kind:
            raise E.bad_request("the kind in the data (%s) does not match the expected kind (%s)"
                                % (obj["kind"], kind))
        obj["apiVersion"] = av
        obj["kind"] = kind
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise E.bad_request("%s in version \"%s\" cannot be handled as a %s: json: cannot unmarshal into "
                                "Go struct field %s.metadata of type v1.ObjectMeta" % (kind, rt.version, kind, kind))
        obj.setdefault("metadata", {})

    # ================================================================ validation helpers

    def validate_meta(self, rt, obj, old):
        errs = []
        md = obj["metadata"]
        # metadata goes through the typed ObjectMeta: empty maps and lists are omitted
        for k in ("labels", "annotations", "finalizers", "ownerReferences", "managedFields"):
            if k in md and md[k] in ({}, [], None):
                del md[k]
        name = md.get("name")
        if not name:
            errs.append(E.required("metadata.name", "name or generateName is required"))
        elif not isinstance(name, str):
            errs.append(E.invalid("metadata.name", name, "must be a string"))
        else:
            for m in builtins.name_errors(rt, name):
                errs.append(E.invalid("metadata.name", name, m))
        if not rt.namespaced and md.get("namespace"):
            errs.append(E.forbidden("metadata.namespace", "not allowed on this type"))
        labels = md.get("labels")
        if labels is not None:
            if not isinstance(labels, dict):
                errs.append(E.invalid("metadata.labels", labels, "must be a map"))
            else:
                for k, v in labels.items():
                    for m in util.qualified_name_errors(k):
                        errs.append(E.invalid("metadata.labels", k, m))
                    if not isinstance(v, str):
                        raise E.bad_request("%s in version \"%s\" cannot be handled as a %s: json: cannot unmarshal "
                                            "%s into Go struct field ObjectMeta.metadata.labels of type string"
                                            % (rt.kind, rt.version, rt.kind, _json_type(v)))
                    for m in util.label_value_errors(v):
                        errs.append(E.invalid("metadata.labels", v, m))
        ann = md.get("annotations")
        if ann is not None:
            if not isinstance(ann, dict):
                errs.append(E.invalid("metadata.annotations", ann, "must be a map"))
            else:
                total = 0
                for k, v in ann.items():
                    for m in util.qualified_name_errors(k):
                        errs.append(E.invalid("metadata.annotations", k, m))
                    if not isinstance(v, str):
                        raise E.bad_request("%s in version \"%s\" cannot be handled as a %s: json: cannot unmarshal "
                                            "%s into Go struct field ObjectMeta.metadata.annotations of type string"
                                            % (rt.kind, rt.version, rt.kind, _json_type(v)))
                    total += len(k) + len(v)
                if total > 262144:
                    errs.append(E.FieldError("FieldValueTooLong", "metadata.annotations",
                                             "Too long: must have at most 262144 bytes"))
        fins = md.get("finalizers")
        if fins is not None:
            if not isinstance(fins, list):
                errs.append(E.invalid("metadata.finalizers", fins, "must be a list"))
            else:
                for i, f in enumerate(fins):
                    if not isinstance(f, str):
                        errs.append(E.invalid("metadata.finalizers[%d]" % i, f, "must be a string"))
                        continue
                    for m in util.qualified_name_errors(f):
                        errs.append(E.invalid("metadata.finalizers", f, m))
        orefs = md.get("ownerReferences")
        if orefs is not None:
            if not isinstance(orefs, list):
                errs.append(E.invalid("metadata.ownerReferences", orefs, "must be a list"))
            else:
                controllers = 0
                for i, o in enumerate(orefs):
                    p = "metadata.ownerReferences"
                    if not isinstance(o, dict):
                        errs.append(E.invalid(p, o, "must be an object"))
                        continue
                    for k in ("apiVersion", "kind", "name", "uid"):
                        if not o.get(k):
                            errs.append(E.invalid(p + "." + k, o.get(k, ""), "%s must not be empty" % k)
                                        if k != "uid" else E.invalid(p + ".uid", "", "uid must not be empty"))
                    if o.get("controller"):
                        controllers += 1
                if controllers > 1:
                    errs.append(E.invalid("metadata.ownerReferences", orefs,
                                          "Only one reference can have Controller set to true. Found \"true\" in "
                                          "references for %s" % ", ".join("%s/%s" % (o.get("kind"), o.get("name"))
                                                                          for o in orefs if isinstance(o, dict)
                                                                          and o.get("controller"))))
        return errs

    def _strict_unknown(self, ctx, pruned):
        if not pruned:
            return
        fv = ctx.params.get("fieldValidation", "Warn")
        if fv == "Strict":
            raise E.bad_request("strict decoding error: " + ", ".join('unknown field "%s"' % p for p in pruned))
        if fv != "Ignore":
            for p in pruned:
                ctx.warnings.append('unknown field "%s"' % p)

    def _custom_checks(self, rt, obj, ctx, old=None):
        """Prune, default and validate a custom resource."""
        if rt.schema is not None:
            pruned = rt.schema.prune(obj)
            self._strict_unknown(ctx, pruned)
            rt.schema.default(obj)
            return rt.schema.validate(obj)
        return []

    def _ensure_namespace(self, rt, ns, name):
        if not rt.namespaced:
            return
        nrt = self.registry.get("", "v1", "namespaces")
        e = self.table_for(nrt).items.get(ns)
        if e is None:
            raise E.not_found_raw("namespaces", ns)
        o = e.obj()
        if util.get_path(o, "status", "phase") == "Terminating" or util.get_path(o, "metadata", "deletionTimestamp"):
            raise E.ApiError(403, "Forbidden", '%s "%s" is forbidden: unable to create new content in namespace %s '
                             "because it is being terminated" % (E.qualified_resource(rt), name, ns),
                             {"name": name, **({"group": rt.group} if rt.group else {}), "kind": rt.plural,
                              "causes": [{"reason": "NamespaceTerminating",
                                          "message": "namespace %s is being terminated" % ns,
                                          "field": "metadata.namespace"}]})

    def _normalize(self, rt, obj):
        try:
            builtins.normalize(rt, obj)
        except builtins.DecodeError as e:
            raise E.bad_request('%s in version "%s" cannot be handled as a %s: %s' % (rt.kind, rt.version, rt.kind, e))

    # ================================================================ get

    def get(self, rt, ns, name, ctx):
        with self.lock:
            e = self.table_for(rt).items.get(self.key(rt, ns, name))
        if e is None:
            raise E.not_found(rt, name)
        return e

    # ================================================================ list

    def parse_list_params(self, rt, params):
        ls = selectors.parse_label_selector(params.get("labelSelector"))
        fs = selectors.parse_field_selector(params.get("fieldSelector"))
        if not fs.empty():
            terms = []
            for f, op, v in fs.terms:
                if rt.group == "events.k8s.io" and rt.storage_id == "events":
                    if f in builtins.EV2_FIELD_MAP:
                        f = builtins.EV2_FIELD_MAP[f]
                    elif f not in ("metadata.name", "metadata.namespace", "reason", "type"):
                        raise E.bad_request("field label not supported: %s" % f)
                elif f not in rt.all_field_labels:
                    raise E.bad_request('field label not supported: %s' % f)
                terms.append((f, op, v))
            fs = selectors.FieldSelector(terms)
        return ls, fs

    def make_pred(self, table, ls, fs, name=None):
        if ls.empty() and fs.empty() and name is None:
            return None

        def pred(e):
            if name is not None and e.name != name:
                return False
            if not ls.empty() and not ls.matches(e.labels):
                return False
            if not fs.empty() and not fs.matches(lambda f: table.field_value(e, f)):
                return False
            return True
        return pred

    def list(self, rt, ns, ctx):
        """Returns (entries, list_metadata)."""
        params = ctx.params
        ls, fs = self.parse_list_params(rt, params)
        limit = _param_int(params, "limit")
        if limit is not None and limit <= 0:
            limit = None
        cont = params.get("continue")
        rv_param = params.get("resourceVersion")
        match = params.get("resourceVersionMatch") or ""
        if match and match not in ("Exact", "NotOlderThan"):
            self._invalid_list_options("resourceVersionMatch", match, "must be one of NotOlderThan, Exact")
        if match and not rv_param:
            self._invalid_list_options("resourceVersionMatch", match,
                                       "resourceVersionMatch is forbidden unless resourceVersion is provided")
        table = self.table_for(rt)
        pred = self.make_pred(table, ls, fs)
        start_after = None
        at_rv = None
        if cont:
            if rv_param and rv_param != "0":
                raise E.bad_request("specifying resource version is not allowed when using continue")
            tok_rv, start = _decode_continue(cont)
            if ns and rt.namespaced:
                start_after = ns + "/" + start
            else:
                start_after = start
            at_rv = tok_rv if tok_rv > 0 else None
            with self.lock:
                if at_rv is not None and at_rv < self.store.compacted_rv:
                    raise E.gone_expired(
                        "The provided continue parameter is too old to display a consistent list result. You can "
                        "start a new list without the continue parameter, or use the continue token in this "
                        "response to retrieve the remainder of the results. Continuing with the provided token "
                        "results in an inconsistent list - objects that were created, modified, or deleted between "
                        "the time the first chunk was returned and now may show up in the list.",
                        metadata={"continue": _encode_continue(-1, start + "\x00")})
        elif rv_param not in (None, "", "0"):
            try:
                want = int(rv_param)
                if want < 0:
                    raise ValueError
            except ValueError:
                raise E.internal_plain('resourceVersion: Invalid value: "%s": strconv.ParseUint: parsing "%s": '
                                       "invalid syntax" % (rv_param, rv_param))
            self._wait_for_rv(want)
            if match == "Exact" or (not match and limit is not None):
                at_rv = want
                with self.lock:
                    if at_rv < self.store.compacted_rv:
                        raise E.gone_expired("The resourceVersion for the provided list is too old.")
        elif rv_param == "0":
            limit = None  # served from the watch cache, which ignores limit
        with self.lock:
            page, more, remaining, last = self.store.list_page(
                table, (ns or None) if rt.namespaced else None, at_rv, start_after, limit, pred,
                count_remaining=(pred is None))
            list_rv = at_rv if at_rv is not None else self.store.rv
        meta = {"resourceVersion": str(list_rv)}
        if more and last is not None:
            rel = last[len(ns) + 1:] if (ns and rt.namespaced) else last
            meta["continue"] = _encode_continue(list_rv, rel + "\x00")
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        elif rt.is_custom:
            meta["continue"] = ""
        return page, meta

    def _invalid_list_options(self, field, value, msg):
        raise E.invalid_error("ListOptions", "", [E.invalid(field, value, msg)], group="meta.k8s.io")

    def _wait_for_rv(self, want, timeout=3.0):
        with self.lock:
            if want <= self.store.rv:
                return
            deadline = time.time() + timeout
            while self.store.rv < want:
                left = deadline - time.time()
                if left <= 0:
                    raise E.timeout("Too large resource version: %d, current: %d" % (want, self.store.rv), 1,
                                    [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}])
                self.store.cond.wait(left)

    # ================================================================ create

    def create(self, rt, ns, obj, ctx, subresource=None):
        """POST to a collection.  Returns (code, object-in-rt-form)."""
        self.check_gvk(rt, obj)
        md = obj["metadata"]
        if rt.namespaced:
            if md.get("namespace") and md["namespace"] != ns:
                raise E.bad_request("the namespace of the provided object does not match the namespace sent on "
                                    "the request")
            md["namespace"] = ns
        with self.lock:
            if not md.get("name") and md.get("generateName"):
                gn = md["generateName"]
                for _ in range(8):
                    cand = gn[:63 - 5] + util.random_suffix()
                    if self.key(rt, ns, cand) not in self.table_for(rt).items:
                        break
                md["name"] = cand
            obj = self.from_rt(rt, obj)
            srt = self.storage_rt(rt)
            created = self._create_locked(srt, ns, obj, ctx, manager=ctx.manager(), api_version=rt.api_version,
                                          user_rt=rt)
        return 201, self.to_rt(rt, created)

    def _create_locked(self, rt, ns, obj, ctx, manager, api_version, op="Update", apply_done=False, user_rt=None):
        user_rt = user_rt or rt
        table = self.table_for(rt)
        md = obj["metadata"]
        name = md.get("name")
        if rt.is_custom and self._crd_terminating(rt):
            raise E.ApiError(405, "MethodNotAllowed", "create not allowed while custom resource definition is "
                             "terminating", {})
        # server-owned metadata
        for k in ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "selfLink"):
            md.pop(k, None)
        if rt.namespaced:
            md["namespace"] = ns
        elif not md.get("namespace"):
            md.pop("namespace", None)
        # status is dropped on create where status is a subresource (built-ins reset it themselves)
        if rt.is_custom and rt.status_sub:
            obj.pop("status", None)
        errs = self.validate_meta(rt, obj, None)
        if errs:
            raise E.invalid_error(user_rt, name, errs)
        self._ensure_namespace(rt, ns, name)
        if rt.kind == "CustomResourceDefinition":
            CRD.prepare_create(obj)
            errs = CRD.validate(obj)
        elif rt.is_custom:
            errs = self._custom_checks(rt, obj, ctx)
        else:
            builtins.prepare_create(self, rt, obj)
            self._normalize(rt, obj)
            errs = builtins.validate(self, user_rt, obj, None)
        if errs:
            raise E.invalid_error(user_rt, name, errs)
        key = self.key(rt, ns, name)
        if key in table.items:
            raise E.already_exists(user_rt, name)
        now = util.rfc3339()
        md["uid"] = util.new_uid()
        md["creationTimestamp"] = now
        if rt.has_generation:
            md["generation"] = 1
        if not apply_done:
            scope = "main" if rt.status_sub else "all"
            MF.update(None, obj, manager, api_version, self.semantics(rt), scope, "", now)
        obj = order_object(rt, obj)
        if ctx.dry_run:
            obj["metadata"]["resourceVersion"] = ""
            return obj
        self.store.put(table, obj)
        self._after_write(rt, None, obj)
        return obj

    def _crd_terminating(self, rt):
        crd_rt = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        e = self.table_for(crd_rt).items.get(rt.storage_id)
        return e is not None and b'"deletionTimestamp"' in e.data

    def semantics(self, rt):
        if rt.is_custom:
            return P.SchemaSemantics(rt.schema)
        return P.BUILTIN

    # ================================================================ update

    def update(self, rt, ns, name, obj, ctx, subresource=None):
        self.check_gvk(rt, obj)
        md = obj["metadata"]
        if md.get("name") and md["name"] != name:
            raise E.bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                % (md["name"], name))
        if rt.namespaced and md.get("namespace") and md["namespace"] != ns:
            raise E.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                "request")
        md["name"] = name
        if rt.namespaced:
            md["namespace"] = ns
        with self.lock:
            srt = self.storage_rt(rt)
            table = self.table_for(srt)
            key = self.key(rt, ns, name)
            entry = table.items.get(key)
            if entry is None:
                if rt.allow_create_on_update and subresource is None:
                    obj = self.from_rt(rt, obj)
                    return 201, self.to_rt(rt, self._create_locked(srt, ns, obj, ctx, ctx.manager(),
                                                                   rt.api_version, user_rt=rt))
                raise E.not_found(rt, name)
            rv = md.get("resourceVersion")
            if rv:
                if rv != str(entry.rv):
                    raise E.conflict(rt, name)
            elif not rt.allow_unconditional_update:
                raise E.invalid_error(rt, name, [E.invalid("metadata.resourceVersion", "0x0",
                                                           "must be specified for an update")])
            uid = md.get("uid")
            if uid and uid != entry.uid:
                raise E.conflict(rt, name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                 % (uid, entry.uid))
            old = entry.obj()
            new = self.from_rt(rt, obj)
            res = self._update_locked(srt, table, entry, old, new, ctx, ctx.manager(), rt.api_version, subresource,
                                      user_rt=rt)
        return 200, self.to_rt(rt, res)

    def _update_locked(self, rt, table, entry, old, new, ctx, manager, api_version, subresource, op="Update",
                       user_rt=None, skip_mf=False):
        """Common tail of update and patch: strategy, validation, generation,
        managedFields, no-op detection, finalizer completion."""
        user_rt = user_rt or rt
        name = entry.name
        md = new.setdefault("metadata", {})
        omd = old.get("metadata") or {}
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                  "selfLink"):
            if k in omd:
                md[k] = omd[k]
            else:
                md.pop(k, None)
        md["name"] = omd.get("name")
        if rt.namespaced:
            md["namespace"] = omd.get("namespace")
        elif not md.get("namespace"):
            md.pop("namespace", None)
        if "managedFields" not in md and "managedFields" in omd:
            md["managedFields"] = omd["managedFields"]
        # what this endpoint may change
        if rt.is_custom:
            if rt.status_sub:
                if subresource == "status":
                    status = new.get("status")
                    mf = md.get("managedFields")
                    new = util.deepcopy(old)
                    if mf is not None:
                        new["metadata"]["managedFields"] = mf
                    if status is None:
                        new.pop("status", None)
                    else:
                        new["status"] = status
                    md = new["metadata"]
                elif "status" in old:
                    new["status"] = util.deepcopy(old["status"])
                else:
                    new.pop("status", None)
        elif rt.kind == "CustomResourceDefinition":
            if subresource == "status":
                st = new.get("status")
                new = util.deepcopy(old)
                new["status"] = st
                md = new["metadata"]
            else:
                new["status"] = util.deepcopy(old.get("status"))
        else:
            builtins.prepare_update(rt, new, old, subresource)
            md = new["metadata"]
        if md.get("deletionTimestamp") and not omd.get("deletionTimestamp"):
            md.pop("deletionTimestamp")
        errs = self.validate_meta(rt, new, old)
        if errs:
            raise E.invalid_error(user_rt, name, errs)
        if rt.kind == "CustomResourceDefinition":
            errs = CRD.validate(new, old)
            if subresource != "status":
                CRD.set_status(new, terminating=bool(md.get("deletionTimestamp")))
        elif rt.is_custom:
            errs = self._custom_checks(rt, new, ctx, old)
        else:
            builtins.update_defaults(self, rt, new)
            self._normalize(rt, new)
            errs = builtins.validate(self, user_rt, new, old, subresource)
        if errs:
            raise E.invalid_error(user_rt, name, errs)
        # finalizers cannot be added to an object being deleted
        if omd.get("deletionTimestamp"):
            newf = md.get("finalizers") or []
            oldf = omd.get("finalizers") or []
            added = [f for f in newf if f not in oldf]
            if added:
                raise E.invalid_error(user_rt, name, [E.forbidden("metadata.finalizers", "no new finalizers can be "
                                                                  "added if the object is being deleted, found new "
                                                                  "finalizers %s" % json.dumps(added))])
        if rt.has_generation and subresource is None:
            gen = omd.get("generation", 1)
            if rt.is_custom and not rt.status_sub:
                changed = any(new.get(k) != old.get(k) for k in set(new) | set(old)
                              if k not in ("metadata", "apiVersion", "kind"))
            else:
                changed = builtins.spec_changed(rt, new, old)
            md["generation"] = gen + 1 if changed else gen
        if not skip_mf:
            scope = "status" if subresource == "status" else ("main" if rt.status_sub else "all")
            MF.update(old, new, manager, api_version, self.semantics(rt), scope, subresource or "", util.rfc3339())
        new = order_object(rt, new)
        new["metadata"]["resourceVersion"] = str(entry.rv)
        if _same(new, old):
            return old
        if ctx.dry_run:
            return new
        if md.get("deletionTimestamp") and not new["metadata"].get("finalizers") and \
                not (rt.kind == "Pod" and (md.get("deletionGracePeriodSeconds") or 0) > 0) and \
                not (rt.kind == "Namespace" and util.get_path(new, "spec", "finalizers")):
            # the last finalizer is gone: the object goes (the stored state is the previous one)
            self.store.delete(table, entry.key)
            self._after_delete(rt, old)
            return new
        self.store.put(table, new)
        self._after_write(rt, old, new)
        return new

    # ================================================================ patch

    def patch(self, rt, ns, name, patch_type, body, ctx, subresource=None):
        pt = (patch_type or "").split(";")[0].strip().lower()
        if pt == SMP and rt.is_custom:
            raise E.unsupported_media_type([JSON_PATCH, MERGE_PATCH, APPLY])
        if pt not in (JSON_PATCH, MERGE_PATCH, SMP, APPLY):
            raise E.unsupported_media_type([JSON_PATCH, MERGE_PATCH, APPLY] + ([] if rt.is_custom else [SMP]))
        if pt == APPLY:
            return self._apply(rt, ns, name, body, ctx, subresource)
        try:
            doc = json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
        except (ValueError, UnicodeDecodeError) as e:
            raise E.bad_request("error decoding patch: %s" % _json_err(e))
        if pt in (MERGE_PATCH, SMP) and not isinstance(doc, dict):
            raise E.bad_request("error decoding patch: json: cannot unmarshal %s into Go value of type "
                                "map[string]interface {}" % _json_type(doc))
        with self.lock:
            srt = self.storage_rt(rt)
            table = self.table_for(srt)
            entry = table.items.get(self.key(rt, ns, name))
            if entry is None:
                raise E.not_found(rt, name)
            old = entry.obj()
            cur = self.to_rt(rt, util.deepcopy(old))
            try:
                if pt == MERGE_PATCH:
                    new = P.merge_patch(cur, doc)
                elif pt == JSON_PATCH:
                    new = P.json_patch(cur, doc)
                else:
                    new = P.strategic_merge_patch(cur, doc, P.BUILTIN)
            except P.PatchError as e:
                if pt == JSON_PATCH:
                    raise E.ApiError(422, "Invalid", "the server rejected our request due to an error in our "
                                     "request", {})
                raise E.ApiError(422, "Invalid", str(e), {})
            if not isinstance(new, dict):
                raise E.bad_request("patch produced a non-object")
            new.setdefault("metadata", {})
            self.check_gvk(rt, new)
            prv = util.get_path(new, "metadata", "resourceVersion")
            if prv and prv != str(entry.rv):
                raise E.conflict(rt, name)
            puid = util.get_path(new, "metadata", "uid")
            if puid and puid != entry.uid:
                raise E.conflict(rt, name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                 % (puid, entry.uid))
            new = self.from_rt(rt, new)
            res = self._update_locked(srt, table, entry, old, new, ctx, ctx.manager(), rt.api_version,
                                      subresource, user_rt=rt)
        return 200, self.to_rt(rt, res)

    def _apply(self, rt, ns, name, body, ctx, subresource):
        force = ctx.params.get("force") in ("true", "1", "True")
        manager = ctx.params.get("fieldManager")
        if not manager:
            raise E.invalid_error("PatchOptions", "", [E.required("fieldManager", "is required for apply patch")],
                                  group="meta.k8s.io")
        try:
            applied = yamlmini.load(body)
        except (yamlmini.YAMLError, UnicodeDecodeError, ValueError) as e:
            raise E.bad_request("error decoding YAML: %s" % e)
        if not isinstance(applied, dict):
            raise E.bad_request("error decoding YAML: object expected")
        if not applied.get("apiVersion") or not applied.get("kind"):
            raise E.bad_request("invalid object type: %s" % ("/, Kind=" if not applied.get("kind") else
                                                            applied.get("kind")))
        self.check_gvk(rt, applied)
        amd = applied["metadata"]
        if amd.get("name") and amd["name"] != name:
            raise E.bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                % (amd["name"], name))
        if rt.namespaced and amd.get("namespace") and amd["namespace"] != ns:
            raise E.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                "request")
        amd.pop("managedFields", None)
        with self.lock:
            srt = self.storage_rt(rt)
            table = self.table_for(srt)
            entry = table.items.get(self.key(rt, ns, name))
            sem = self.semantics(srt)
            scope = "status" if subresource == "status" else ("main" if srt.status_sub else "all")
            now = util.rfc3339()
            if entry is None:
                if subresource:
                    raise E.not_found(rt, name)
                amd["name"] = name
                if rt.namespaced:
                    amd["namespace"] = ns
                obj = MF.apply(None, self.from_rt(rt, applied), manager, force, rt.api_version, sem, scope, "", now)
                created = self._create_locked(srt, ns, obj, ctx, manager, rt.api_version, op="Apply",
                                              apply_done=True, user_rt=rt)
                return 201, self.to_rt(rt, created)
            rv = amd.get("resourceVersion")
            if rv and rv != str(entry.rv):
                raise E.conflict(rt, name)
            old = entry.obj()
            live = self.to_rt(rt, util.deepcopy(old))
            merged = MF.apply(live, applied, manager, force, rt.api_version, sem, scope, subresource or "", now)
            new = self.from_rt(rt, merged)
            res = self._update_locked(srt, table, entry, old, new, ctx, manager, rt.api_version, subresource,
                                      op="Apply", user_rt=rt, skip_mf=True)
        return 200, self.to_rt(rt, res)

    # ================================================================ delete

    def delete(self, rt, ns, name, options, ctx):
        """Returns (code, body-object)."""
        with self.lock:
            srt = self.storage_rt(rt)
            table = self.table_for(srt)
            entry = table.items.get(self.key(rt, ns, name))
            if entry is None:
                raise E.not_found(rt, name)
            if rt.kind == "Namespace" and name in builtins.PROTECTED_NAMESPACES:
                raise E.forbidden_plain('namespaces "%s" is forbidden: this namespace may not be deleted' % name,
                                        {"name": name, "kind": "namespaces"})
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != entry.uid:
                raise E.conflict_kind(rt, name, "Precondition failed: UID in precondition: %s, UID in object meta: "
                                      "%s" % (pre["uid"], entry.uid))
            if pre.get("resourceVersion") and pre["resourceVersion"] != str(entry.rv):
                raise E.conflict_kind(rt, name, "the ResourceVersion in the precondition (%s) does not match the "
                                      "ResourceVersion in record (%d). The object might have been modified"
                                      % (pre["resourceVersion"], entry.rv))
            code, out, deleted = self._delete_locked(srt, table, entry, options, ctx)
        if isinstance(out, dict) and out.get("kind") != "Status":
            out = self.to_rt(rt, out)
        return code, out

    def _delete_locked(self, rt, table, entry, options, ctx):
        obj = entry.obj()
        md = obj["metadata"]
        name = entry.name
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise E.invalid_error("DeleteOptions", "", [E.not_supported("propagationPolicy", policy,
                                                                        ["Foreground", "Background", "Orphan",
                                                                         "nil"])], group="meta.k8s.io")
        grace = options.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise E.bad_request("invalid gracePeriodSeconds")
        if ctx.dry_run:
            return 200, obj, False
        now = time.time()
        graceful = False
        if rt.kind == "Pod":
            spec = obj.get("spec") or {}
            phase = util.get_path(obj, "status", "phase")
            if grace is None:
                grace = spec.get("terminationGracePeriodSeconds", 30)
            if grace < 0:
                grace = 1
            if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                grace = 0
            graceful = True
        fins = list(md.get("finalizers") or [])
        if policy == "Foreground" and "foregroundDeletion" not in fins:
            fins.append("foregroundDeletion")
        elif policy == "Orphan" and "orphan" not in fins:
            fins.append("orphan")
        if rt.kind == "Namespace":
            # namespaces always go through Terminating; the namespace controller empties them
            if not md.get("deletionTimestamp"):
                md["deletionTimestamp"] = util.rfc3339(now)
                md["deletionGracePeriodSeconds"] = 0
                obj.setdefault("status", {})["phase"] = "Terminating"
                md["finalizers"] = fins or md.get("finalizers")
                if not md.get("finalizers"):
                    md.pop("finalizers", None)
                self.store.put(table, order_object(rt, obj))
                self._after_write(rt, entry.obj(), obj)
            return 200, obj, False
        if rt.kind == "CustomResourceDefinition" and not md.get("deletionTimestamp"):
            if CRD.CLEANUP_FINALIZER not in fins:
                fins.append(CRD.CLEANUP_FINALIZER)
        if md.get("deletionTimestamp"):
            # already terminating: a pod may shorten its grace period
            if graceful and grace is not None and grace < (md.get("deletionGracePeriodSeconds") or 0):
                md["deletionGracePeriodSeconds"] = grace
                md["deletionTimestamp"] = util.rfc3339(now + grace)
                if grace == 0 and not md.get("finalizers"):
                    self.store.put(table, order_object(rt, obj))
                    tomb = self.store.delete(table, entry.key)
                    self._after_delete(rt, obj)
                    return 200, obj, True
                self.store.put(table, order_object(rt, obj))
                self._after_write(rt, entry.obj(), obj)
            elif fins != (md.get("finalizers") or []):
                md["finalizers"] = fins
                self.store.put(table, order_object(rt, obj))
                self._after_write(rt, entry.obj(), obj)
            return 200, obj, False
        if fins or (graceful and grace > 0):
            md["deletionTimestamp"] = util.rfc3339(now + (grace or 0))
            md["deletionGracePeriodSeconds"] = grace or 0
            if fins:
                md["finalizers"] = fins
            if rt.has_generation and md.get("generation"):
                md["generation"] = md["generation"] + 1
            if rt.kind == "CustomResourceDefinition":
                CRD.set_status(obj, terminating=True)
            self.store.put(table, order_object(rt, obj))
            self._after_write(rt, entry.obj(), obj)
            return 200, obj, False
        if graceful:
            # pods: the deletion is recorded first (MODIFIED), then the object goes
            md["deletionTimestamp"] = util.rfc3339(now)
            md["deletionGracePeriodSeconds"] = 0
            self.store.put(table, order_object(rt, obj))
        tomb = self.store.delete(table, entry.key)
        self._after_delete(rt, obj)
        if rt.return_deleted_object:
            return 200, obj, True
        details = {"name": name}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = entry.uid
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                     "details": details}, True

    def delete_collection(self, rt, ns, options, ctx):
        ls, fs = self.parse_list_params(rt, ctx.params)
        with self.lock:
            srt = self.storage_rt(rt)
            table = self.table_for(srt)
            pred = self.make_pred(table, ls, fs)
            page, _, _, _ = self.store.list_page(table, (ns or None) if rt.namespaced else None, None, None, None, pred, False)
            out = []
            for e in page:
                cur = table.items.get(e.key)
                if cur is None:
                    continue
                code, obj, _ = self._delete_locked(srt, table, cur, options, ctx)
                if isinstance(obj, dict) and obj.get("kind") != "Status":
                    out.append(obj)
                else:
                    o = cur.obj()
                    out.append(o)
            rv = self.store.rv
        items = [self.to_rt(rt, o) for o in out]
        for it in items:
            if not rt.is_custom:
                it.pop("kind", None)
                it.pop("apiVersion", None)
        return 200, {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {"resourceVersion": str(rv)},
                     "items": items}

    # ================================================================ hooks

    def _after_write(self, rt, old, new):
        if rt.kind == "CustomResourceDefinition":
            sid = CRD.register(self.registry, new)
            crt = self.registry.for_storage(sid)
            if crt is not None:
                self.store.table(crt)

    def _after_delete(self, rt, obj):
        if rt.kind == "CustomResourceDefinition":
            spec = obj.get("spec") or {}
            sid = (spec.get("names") or {}).get("plural", "") + "." + spec.get("group", "")
            self.registry.remove_storage(sid)
            self.store.drop_table(sid)

    # ================================================================ subresources

    def scale_get(self, rt, ns, name):
        e = self.get(rt, ns, name, None)
        return self._scale_of(rt, self.entry_obj(rt, e))

    def _scale_of(self, rt, obj):
        md = obj["metadata"]
        if rt.is_custom:
            spec_p, status_p, sel_p = rt.scale_paths
            from . import jsonpath
            replicas = jsonpath.compile(spec_p).first(obj, 0) if spec_p else 0
            st_rep = jsonpath.compile(status_p).first(obj, 0) if status_p else 0
            sel = jsonpath.compile(sel_p).first(obj, "") if sel_p else ""
            status = {"replicas": st_rep or 0}
            if sel:
                status["selector"] = sel
        else:
            replicas = util.get_path(obj, "spec", "replicas", default=0)
            status = {"replicas": util.get_path(obj, "status", "replicas", default=0)}
            sel = util.get_path(obj, "spec", "selector")
            if sel is not None:
                status["selector"] = str(selectors.from_label_selector_object(sel))
        smd = {"name": md.get("name")}
        if md.get("namespace"):
            smd["namespace"] = md["namespace"]
        smd["uid"] = md.get("uid")
        smd["resourceVersion"] = md.get("resourceVersion")
        smd["creationTimestamp"] = md.get("creationTimestamp")
        return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": smd, "spec": {"replicas": replicas or 0},
                "status": status}

    def scale_update(self, rt, ns, name, scale_or_patch, ctx, patch_type=None):
        with self.lock:
            srt = self.storage_rt(rt)
            table = self.table_for(srt)
            entry = table.items.get(self.key(rt, ns, name))
            if entry is None:
                raise E.not_found(rt, name)
            cur_scale = self._scale_of(rt, self.entry_obj(rt, entry))
            if patch_type is not None:
                pt = patch_type.split(";")[0].strip()
                try:
                    doc = json.loads(scale_or_patch)
                    if pt == MERGE_PATCH:
                        new_scale = P.merge_patch(cur_scale, doc)
                    elif pt == JSON_PATCH:
                        new_scale = P.json_patch(cur_scale, doc)
                    elif pt == SMP:
                        new_scale = P.strategic_merge_patch(cur_scale, doc)
                    elif pt == APPLY:
                        new_scale = P.merge_patch(cur_scale, yamlmini.load(scale_or_patch))
                    else:
                        raise E.unsupported_media_type([JSON_PATCH, MERGE_PATCH, SMP, APPLY])
                except (ValueError, P.PatchError) as e:
                    raise E.bad_request(str(e))
            else:
                new_scale = scale_or_patch
            rv = util.get_path(new_scale, "metadata", "resourceVersion")
            if rv and rv != str(entry.rv):
                raise E.conflict(rt, name)
            replicas = util.get_path(new_scale, "spec", "replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise E.invalid_error("Scale", name, [E.invalid("spec.replicas", replicas,
                                                                "must be greater than or equal to 0")],
                                      group="autoscaling")
            old = entry.obj()
            new = util.deepcopy(old)
            if rt.is_custom:
                from . import jsonpath
                jsonpath.set_path(new, rt.scale_paths[0], replicas)
            else:
                new.setdefault("spec", {})["replicas"] = replicas
            res = self._update_locked(srt, table, entry, old, new, ctx, ctx.manager(), rt.api_version, None,
                                      user_rt=rt)
        return 200, self._scale_of(rt, self.to_rt(rt, res))

    def binding(self, ns, name, body, ctx):
        prt = self.registry.get("", "v1", "pods")
        target = util.get_path(body, "target", "name")
        if not target:
            raise E.invalid_error("Binding", name, [E.required("target.name")])
        with self.lock:
            table = self.table_for(prt)
            entry = table.items.get(self.key(prt, ns, name))
            if entry is None:
                raise E.not_found(prt, name)
            pod = entry.obj()
            if util.get_path(pod, "metadata", "deletionTimestamp"):
                raise E.conflict_raw("pods/binding", name, "pod %s is being deleted, cannot be assigned to a host"
                                     % name)
            cur = util.get_path(pod, "spec", "nodeName")
            if cur:
                raise E.conflict_raw("pods/binding", name, 'pod %s is already assigned to node "%s"' % (name, cur))
            uid = util.get_path(body, "metadata", "uid")
            if uid and uid != entry.uid:
                raise E.conflict_raw("pods/binding", name, "Precondition failed: UID in precondition: %s, UID in "
                                     "object meta: %s" % (uid, entry.uid))
            new = util.deepcopy(pod)
            new["spec"]["nodeName"] = target
            for k, v in (util.get_path(body, "metadata", "annotations") or {}).items():
                new["metadata"].setdefault("annotations", {})[k] = v
            st = new.setdefault("status", {})
            conds = [c for c in st.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": util.rfc3339()})
            st["conditions"] = conds
            st.pop("nominatedNodeName", None)
            if ctx.dry_run:
                return 201, _success(201)
            self._raw_update(prt, table, entry, pod, new, ctx.manager(), "")
        return 201, _success(201)

    def _raw_update(self, rt, table, entry, old, new, manager, subresource):
        """Server-internal write (binding, eviction bookkeeping): no strategy."""
        MF.update(old, new, manager, rt.api_version, self.semantics(rt), "all", subresource, util.rfc3339())
        new = order_object(rt, new)
        self.store.put(table, new)
        self._after_write(rt, old, new)
        return new

    def eviction(self, ns, name, body, ctx):
        from . import eviction as EV
        return EV.evict(self, ns, name, body, ctx)

    def finalize_namespace(self, name, obj, ctx):
        nrt = self.registry.get("", "v1", "namespaces")
        with self.lock:
            table = self.table_for(nrt)
            entry = table.items.get(name)
            if entry is None:
                raise E.not_found(nrt, name)
            old = entry.obj()
            new = util.deepcopy(old)
            new.setdefault("spec", {})["finalizers"] = util.get_path(obj, "spec", "finalizers") or []
            if not new["spec"]["finalizers"]:
                new["spec"].pop("finalizers")
            if new["metadata"].get("deletionTimestamp") and not new["spec"].get("finalizers") and \
                    not new["metadata"].get("finalizers"):
                self.store.delete(table, entry.key)
                return 200, new
            res = self._raw_update(nrt, table, entry, old, new, ctx.manager(), "finalize")
        return 200, res

    # ================================================================ internal client for controllers

    def create_internal(self, group, plural, obj, manager):
        rt = self.lookup(group, plural)
        ns = util.get_path(obj, "metadata", "namespace") or ""
        ctx = Ctx(user="system:kube-controller-manager", user_agent=manager, params={"fieldManager": manager})
        obj.setdefault("apiVersion", rt.api_version)
        obj.setdefault("kind", rt.kind)
        return self.create(rt, ns, obj, ctx)[1]

    def update_internal(self, group, plural, obj, manager, subresource=None):
        rt = self.lookup(group, plural)
        md = obj["metadata"]
        ctx = Ctx(user="system:kube-controller-manager", user_agent=manager, params={"fieldManager": manager})
        return self.update(rt, md.get("namespace") or "", md["name"], obj, ctx, subresource)[1]

    def patch_internal(self, group, plural, ns, name, patch_doc, manager, subresource=None, patch_type=MERGE_PATCH):
        rt = self.lookup(group, plural)
        ctx = Ctx(user="system:kube-controller-manager", user_agent=manager, params={"fieldManager": manager})
        return self.patch(rt, ns, name, patch_type, json.dumps(patch_doc).encode(), ctx, subresource)[1]

    def delete_internal(self, group, plural, ns, name, manager, options=None):
        rt = self.lookup(group, plural)
        ctx = Ctx(user="system:kube-controller-manager", user_agent=manager, params={})
        return self.delete(rt, ns, name, options or {}, ctx)


def _same(a, b):
    a2 = dict(a)
    b2 = dict(b)
    a2["metadata"] = {k: v for k, v in (a.get("metadata") or {}).items() if k != "resourceVersion"}
    b2["metadata"] = {k: v for k, v in (b.get("metadata") or {}).items() if k != "resourceVersion"}
    return a2 == b2


def _success(code):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def _json_err(e):
    msg = str(e)
    if "Expecting" in msg and ("line" in msg) and ("char" in msg):
        if msg.startswith("Expecting value") or msg.startswith("Expecting property") or "delimiter" in msg:
            return "unexpected end of JSON input" if "char" in msg else msg
    return msg


def _json_type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _encode_continue(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(tok):
    try:
        pad = "=" * (-len(tok) % 4)
        d = json.loads(base64.urlsafe_b64decode(tok + pad).decode())
        if d.get("v") != "meta.k8s.io/v1":
            raise ValueError("continue key is not valid: incorrect encoded start resourceVersion (version "
                             "meta.k8s.io/v1)")
        rv = int(d["rv"])
        start = d["start"]
        if not isinstance(start, str) or not start.endswith("\x00"):
            raise ValueError("continue key is not valid: invalid start")
        return rv, start[:-1]
    except (ValueError, KeyError, TypeError) as e:
        msg = str(e) if str(e).startswith("continue key") else "continue key is not valid: %s" % e
        raise E.bad_request(msg)
