"""HTTP/1.1 front end: bearer-token authentication, routing, content
negotiation (JSON, YAML, Table, PartialObjectMetadata), chunked watch
streams, faults, the request log and the /_sim control endpoints."""

import http.server
import json
import random
import select
import socket
import socketserver
import ssl
import sys
import time
import traceback
import urllib.parse

from . import api as A
from . import discovery as D
from . import errors as E
from .openapi_pb import MEDIA_TYPES as OPENAPI_PB_TYPES
from . import table as T
from . import util
from . import yamlmini
from .watch import Watcher

NON_RESOURCE_NO_AUTH = ("/healthz", "/livez", "/readyz", "/version")


class RequestInfo:
    def __init__(self):
        self.is_resource = False
        self.group = ""
        self.version = ""
        self.resource = ""
        self.subresource = ""
        self.namespace = ""
        self.name = ""
        self.verb = ""
        self.rt = None


def parse_request_info(method, path, query):
    ri = RequestInfo()
    parts = [p for p in path.split("/") if p]
    ri.verb = method.lower()
    if not parts or parts[0] not in ("api", "apis"):
        return ri
    if parts[0] == "api":
        if len(parts) < 2:
            return ri
        ri.group, ri.version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return ri
        ri.group, ri.version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return ri
    watch_path = False
    if rest[0] == "watch":
        watch_path = True
        rest = rest[1:]
    if not rest:
        return ri
    ri.is_resource = True
    if rest[0] == "namespaces" and len(rest) >= 2:
        if len(rest) == 2 or (len(rest) == 3 and rest[2] in ("status", "finalize")):
            ri.resource = "namespaces"
            ri.name = rest[1]
            ri.subresource = rest[2] if len(rest) == 3 else ""
        else:
            ri.namespace = rest[1]
            rest = rest[2:]
            ri.resource = rest[0]
            ri.name = rest[1] if len(rest) > 1 else ""
            ri.subresource = "/".join(rest[2:])
    else:
        ri.resource = rest[0]
        ri.name = rest[1] if len(rest) > 1 else ""
        ri.subresource = "/".join(rest[2:])
    m = method.upper()
    if m in ("GET", "HEAD"):
        if watch_path or query.get("watch") in ("true", "1", "True"):
            ri.verb = "watch"
        elif ri.name:
            ri.verb = "get"
        else:
            ri.verb = "list"
    elif m == "POST":
        ri.verb = "create"
    elif m == "PUT":
        ri.verb = "update"
    elif m == "PATCH":
        ri.verb = "patch"
    elif m == "DELETE":
        ri.verb = "delete" if ri.name else "deletecollection"
    return ri


class Media:
    """Negotiated response media type."""

    def __init__(self, kind="json", table_version="v1"):
        self.kind = kind  # json | yaml | table | pom (PartialObjectMetadata)
        self.table_version = table_version


def negotiate(accept):
    """Pick the response form from an Accept header; None if nothing we
    can produce is acceptable (406)."""
    if not accept:
        return Media()
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        mt = fields[0].lower()
        params = {}
        for f in fields[1:]:
            if "=" in f:
                k, v = f.split("=", 1)
                params[k.strip().lower()] = v.strip()
        if params.get("q") in ("0", "0.0"):
            continue
        if mt in ("application/json", "*/*", "application/*"):
            as_ = params.get("as")
            if not as_:
                return Media("json")
            if params.get("g") != "meta.k8s.io":
                continue
            if as_ == "Table":
                return Media("table", params.get("v", "v1"))
            if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                return Media("pom", params.get("v", "v1"))
            continue
        if mt in ("application/yaml", "application/x-yaml"):
            return Media("yaml")
    return None


def negotiate_openapi_v2(accept):
    """The form of /openapi/v2 an Accept header asks for: "json", "pb" or
    None (406).  As the API server, the first acceptable entry wins and a
    wildcard means JSON."""
    if not accept:
        return "json"
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        mt = fields[0].lower()
        if any(f.replace(" ", "") in ("q=0", "q=0.0") for f in fields[1:]):
            continue
        if mt in ("application/json", "*/*", "application/*"):
            return "json"
        if mt in OPENAPI_PB_TYPES:
            return "pb"
    return None


class SimHTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, addr, handler, sim, ssl_ctx=None):
        self.sim = sim
        self.ssl_ctx = ssl_ctx
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, handler)

    def finish_request(self, request, client_address):
        if self.ssl_ctx is not None:
            try:
                request.settimeout(10)
                request = self.ssl_ctx.wrap_socket(request, server_side=True)
                request.settimeout(None)
            except (ssl.SSLError, OSError, socket.timeout):
                try:
                    request.close()
                except OSError:
                    pass
                return
        self.RequestHandlerClass(request, client_address, self)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, socket.timeout, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without TCP_NODELAY every
    # response would wait for the client's delayed ACK (~40 ms)
    disable_nagle_algorithm = True
    server_version = "kube-sim"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass

    # -------------------------------------------------------------- plumbing

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    def do_HEAD(self):
        self._handle("HEAD")

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _send(self, code, body, ctype="application/json", headers=None, log=True):
        self.send_response(code)
        self.send_header("Audit-Id", util.new_uid())
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            if isinstance(v, list):
                for x in v:
                    self.send_header(k, x)
            else:
                self.send_header(k, v)
        self.send_header("X-Kubernetes-Pf-Flowschema-Uid", self.sim.flowschema_uid)
        self.send_header("X-Kubernetes-Pf-Prioritylevel-Uid", self.sim.prioritylevel_uid)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        if log:
            self._log(code)

    def _log(self, code):
        ri = self.ri
        rec = {"time": util.rfc3339_micro(self.t0), "method": self.command, "path": self.path_only,
               "query": self.raw_query, "verb": ri.verb if ri else self.command.lower(),
               "apiGroup": ri.group if ri else "", "apiVersion": ri.version if ri else "",
               "resource": ri.resource if ri else "", "subresource": ri.subresource if ri else "",
               "namespace": ri.namespace if ri else "", "name": ri.name if ri else "", "code": code,
               "userAgent": self.headers.get("User-Agent", ""), "user": self.user or "",
               "durationMs": round((time.time() - self.t0) * 1000, 3)}
        q = self.query
        if self.command == "PATCH":
            rec["patchType"] = (self.headers.get("Content-Type") or "").split(";")[0]
        if q.get("fieldManager"):
            rec["fieldManager"] = q["fieldManager"]
        if q.get("dryRun"):
            rec["dryRun"] = q["dryRun"]
        self.sim.reqlog.write(rec)
        self.sim.count_request(code)

    def _status(self, err):
        body = util.dumps(err.status()) if not self.pretty else util.dumps_pretty(err.status())
        self._send(err.code, body, headers=err.headers)

    def _json(self, code, obj, headers=None, media=None):
        if media is not None and media.kind == "yaml":
            self._send(code, yamlmini.dump(obj).encode(), "application/yaml", headers)
            return
        body = util.dumps_pretty(obj) if self.pretty else util.dumps(obj)
        self._send(code, body, headers=headers)

    def _raw_json(self, code, data, headers=None, media=None):
        if (media is not None and media.kind == "yaml") or self.pretty:
            self._json(code, util.loads(data), headers, media)
            return
        self._send(code, data, headers=headers)

    # -------------------------------------------------------------- entry

    def _handle(self, method):
        self.t0 = time.time()
        self.sim = self.server.sim
        self.ri = None
        self.user = None
        split = urllib.parse.urlsplit(self.path)
        self.path_only = split.path
        self.raw_query = split.query
        q = {}
        for k, v in urllib.parse.parse_qsl(split.query, keep_blank_values=True):
            q[k] = v
        self.query = q
        ua = self.headers.get("User-Agent", "")
        self.pretty = q.get("pretty") in ("true", "1") or (ua.startswith("curl") and q.get("pretty") != "false")
        try:
            body = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        except (ValueError, OSError):
            self.close_connection = True
            return
        try:
            self._dispatch(method, split.path, body)
        except E.ApiError as e:
            self._status(e)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # noqa: BLE001 - any bug becomes a 500 Status
            traceback.print_exc(file=sys.stderr)
            self._status(E.internal(str(e)))

    def _auth(self):
        h = self.headers.get("Authorization") or ""
        if h.startswith("Bearer "):
            tok = h[7:].strip()
            user = self.sim.users.get(tok)
            if user:
                return user
        return None

    def _dispatch(self, method, path, body):
        sim = self.sim
        if len(path) > 1 and path.endswith("/") and not path.startswith("/_sim"):
            path = path.rstrip("/") or "/"
        ri = parse_request_info(method, path, self.query)
        self.ri = ri
        user = self._auth()
        if user is None:
            if path in NON_RESOURCE_NO_AUTH or path.startswith(("/healthz/", "/livez/", "/readyz/")):
                user = ("system:anonymous", ("system:unauthenticated",))
            else:
                if (self.server.ssl_ctx is None and not self.headers.get("Authorization")
                        and self.headers.get("User-Agent", "").startswith("kubectl") and not sim.warned_plain_http):
                    sim.warned_plain_http = True
                    sim.log("kubectl sent no credentials: client-go sends bearer tokens only over TLS; start "
                            "kube-sim with --tls to use kubectl")
                raise E.unauthorized()
        self.user = user[0]
        self.groups = user[1]
        if path.startswith("/_sim/") or path == "/_sim":
            return self._control(method, path, body)
        if ri.is_resource:
            return self._resource(method, ri, body)
        return self._non_resource(method, path)

    # -------------------------------------------------------------- non-resource

    def _non_resource(self, method, path):
        sim = self.sim
        if method not in ("GET", "HEAD"):
            if path in ("/api", "/apis") or path.startswith(("/api/", "/apis/")):
                raise E.method_not_allowed()
            self._send(404, util.dumps_pretty(D.not_found_paths(sim.registry)))
            return
        if path in ("/healthz", "/livez", "/readyz") or path.startswith(("/healthz/", "/livez/", "/readyz/")):
            verbose = "verbose" in self.query
            self._send(200, D.health_text(path, verbose).encode(), "text/plain; charset=utf-8",
                       {"X-Content-Type-Options": "nosniff"})
            return
        if path == "/version":
            self._send(200, util.dumps_pretty(D.SERVER_VERSION).rstrip(b"\n"))
            return
        if path == "/api":
            self._json(200, D.api_versions(sim.server_address))
            return
        if path == "/apis":
            self._json(200, D.api_group_list(sim.registry))
            return
        parts = [p for p in path.split("/") if p]
        if parts[0] == "api" and len(parts) == 2:
            d = D.resource_list(sim.registry, "", parts[1])
            if d is None:
                raise E.not_found_path()
            self._json(200, d)
            return
        if parts[0] == "apis" and len(parts) == 2:
            d = D.api_group(sim.registry, parts[1])
            if d is None:
                raise E.not_found_path()
            self._json(200, d)
            return
        if parts[0] == "apis" and len(parts) == 3:
            d = D.resource_list(sim.registry, parts[1], parts[2])
            if d is None:
                raise E.not_found_path()
            self._json(200, d)
            return
        if path == "/openapi/v3":
            self._json(200, sim.openapi.index())
            return
        if path.startswith("/openapi/v3/"):
            doc = sim.openapi.document(path[len("/openapi/v3/"):])
            if doc is None:
                raise E.not_found_path()
            h, data = doc
            self._send(200, data, "application/json", {"Etag": '"%s"' % h})
            return
        if path == "/openapi/v2":
            media = negotiate_openapi_v2(self.headers.get("Accept"))
            if media is None:
                raise E.not_acceptable()
            body, ctype, etag = sim.openapi.swagger_v2_bytes(media)
            self._send(200, body, ctype, {"Etag": etag, "Vary": ["Accept-Encoding", "Accept"],
                                          "X-Varied-Accept": self.headers.get("Accept") or ""})
            return
        if path == "/metrics":
            self._send(200, sim.metrics_text().encode(), "text/plain; version=0.0.4; charset=utf-8")
            return
        self._send(404, util.dumps_pretty(D.not_found_paths(sim.registry)))

    # -------------------------------------------------------------- resources

    def _resource(self, method, ri, body):
        sim = self.sim
        rt = sim.registry.get(ri.group, ri.version, ri.resource)
        if rt is None:
            raise E.not_found_path()
        ri.rt = rt
        if ri.namespace and not rt.namespaced:
            raise E.not_found_path()
        sub = ri.subresource
        if sub and sub not in rt.subresources:
            raise E.not_found_path()
        if sim.rbac is not None:
            sim.rbac.authorize(self.user, self.groups, ri)
        fault = sim.faults.pick(self.path_only) if sim.faults else None
        if sim.faults and sim.faults.delay_ms and sim.faults.applies(self.path_only):
            time.sleep(sim.faults.delay_ms / 1000.0)
        if fault == "500":
            raise E.internal("injected fault (kube-sim --fault-500)")
        if fault == "429":
            ra = sim.faults.retry_after
            raise E.too_many_requests("Too many requests, please try again later.", ra) if ra else \
                E.too_many_requests("Too many requests, please try again later.")
        ctx = A.Ctx(self.user, self.groups, self.headers.get("User-Agent", ""), self.query)
        accept = self.headers.get("Accept")
        media = negotiate(accept)
        if media is None:
            raise E.not_acceptable()
        api = sim.api
        ns = ri.namespace
        name = ri.name
        verb = ri.verb
        if ri.group == "authorization.k8s.io":
            return self._access_review(rt, body, ctx)
        if rt.plural == "bindings" and ri.group == "":
            if verb != "create":
                raise E.method_not_allowed()
            obj = api.decode_body(rt, body, self.headers.get("Content-Type"), "Binding")
            code, out = api.binding(ns, util.get_path(obj, "metadata", "name") or "", obj, ctx)
            return self._json(code, out)
        if rt.namespaced and not ns and verb not in ("list", "watch", "deletecollection"):
            if verb == "create" and not name:
                raise E.not_found_path()
            if name:
                raise E.not_found_path()
        if sub in ("binding", "eviction"):
            if verb != "create":
                raise E.method_not_allowed()
            kind = "Binding" if sub == "binding" else "Eviction"
            obj = api.decode_body(rt, body, self.headers.get("Content-Type"), kind)
            if sub == "binding":
                code, out = api.binding(ns, name, obj, ctx)
            elif self.sim.faults and self.sim.faults.no_eviction_v1:
                with self.sim.faults.lock:
                    self.sim.faults.injected["eviction400"] += 1
                raise E.bad_request('Eviction in version "v1" cannot be handled as a Eviction: no kind '
                                    '"Eviction" is registered for version "policy/v1" in scheme '
                                    '"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"')
            else:
                code, out = api.eviction(ns, name, obj, ctx)
            return self._json(code, out)
        if sub == "scale":
            if verb == "get":
                return self._json(200, api.scale_get(rt, ns, name), media=media)
            if verb == "update":
                obj = api.decode_body(rt, body, self.headers.get("Content-Type"), "Scale")
                code, out = api.scale_update(rt, ns, name, obj, ctx)
                return self._json(code, out, media=media)
            if verb == "patch":
                code, out = api.scale_update(rt, ns, name, body, ctx, self.headers.get("Content-Type"))
                return self._json(code, out, media=media)
            raise E.method_not_allowed()
        if sub == "finalize":
            if verb != "update":
                raise E.method_not_allowed()
            obj = api.decode_body(rt, body, self.headers.get("Content-Type"))
            code, out = api.finalize_namespace(name, obj, ctx)
            return self._json(code, api.to_rt(rt, out), media=media)
        if verb not in rt.verbs and not (sub and verb in ("get", "update", "patch")):
            raise E.method_not_allowed()
        if verb == "get":
            e = api.get(rt, ns, name, ctx)
            return self._object_response(200, rt, e, media)
        if verb == "list":
            return self._list(rt, ns, ctx, media)
        if verb == "watch":
            return self._watch(rt, ns, name, ctx, media)
        warn = {}
        if verb == "create":
            obj = api.decode_body(rt, body, self.headers.get("Content-Type"))
            code, out = api.create(rt, ns, obj, ctx)
        elif verb == "update":
            obj = api.decode_body(rt, body, self.headers.get("Content-Type"))
            code, out = api.update(rt, ns, name, obj, ctx, sub or None)
        elif verb == "patch":
            code, out = api.patch(rt, ns, name, self.headers.get("Content-Type"), body, ctx, sub or None)
        elif verb == "delete":
            opts = self._delete_options(body)
            code, out = api.delete(rt, ns, name, opts, ctx)
        elif verb == "deletecollection":
            opts = self._delete_options(body)
            code, out = api.delete_collection(rt, ns, opts, ctx)
        else:
            raise E.method_not_allowed()
        if ctx.warnings:
            warn["Warning"] = ['299 - "%s"' % w.replace('"', '\\"') for w in ctx.warnings]
        if media.kind == "table" and verb != "deletecollection" and out.get("kind") not in ("Status",):
            out = T.table(rt, [out], {"resourceVersion": util.get_path(out, "metadata", "resourceVersion") or ""})
        self._json(code, out, headers=warn, media=media)

    def _delete_options(self, body):
        opts = {}
        if body and body.strip():
            try:
                opts = json.loads(body)
            except ValueError as e:
                raise E.bad_request("error decoding DeleteOptions: %s" % e)
            if not isinstance(opts, dict):
                raise E.bad_request("error decoding DeleteOptions")
        q = self.query
        if "gracePeriodSeconds" in q:
            try:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            except ValueError:
                raise E.bad_request("invalid gracePeriodSeconds")
        if q.get("propagationPolicy"):
            opts["propagationPolicy"] = q["propagationPolicy"]
        if "orphanDependents" in q:
            opts["orphanDependents"] = q["orphanDependents"] in ("true", "1")
        if isinstance(opts.get("dryRun"), list) and "All" in opts["dryRun"]:
            self.query["dryRun"] = "All"
        return opts

    def _object_response(self, code, rt, entry, media):
        api = self.sim.api
        if media.kind == "table":
            obj = api.entry_obj(rt, entry)
            tbl = T.table(rt, [obj], {"resourceVersion": str(entry.rv)}, self.query.get("includeObject", "Metadata"))
            return self._json(code, tbl)
        if media.kind == "pom":
            return self._json(code, T.partial_metadata(api.entry_obj(rt, entry)))
        return self._raw_json(code, api.entry_bytes(rt, entry), media=media)

    def _list(self, rt, ns, ctx, media):
        api = self.sim.api
        entries, meta = api.list(rt, ns, ctx)
        if media.kind == "table":
            objs = [api.entry_obj(rt, e) for e in entries]
            tmeta = {k: v for k, v in meta.items() if v != ""}
            tbl = T.table(rt, objs, tmeta, self.query.get("includeObject", "Metadata"))
            return self._json(200, tbl)
        if media.kind == "pom":
            items = [T.partial_metadata(api.entry_obj(rt, e)) for e in entries]
            return self._json(200, {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                    "metadata": meta, "items": items})
        if media.kind == "yaml" or self.pretty:
            items = [api.entry_obj(rt, e) for e in entries]
            if not rt.is_custom:
                for it in items:
                    it.pop("kind", None)
                    it.pop("apiVersion", None)
            if rt.is_custom:
                out = {"apiVersion": rt.api_version, "items": items, "kind": rt.list_kind, "metadata": meta}
            else:
                out = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}
            return self._json(200, out, media=media)
        # fast path: join the stored bytes (streamed in chunks when large)
        storage_form = api.is_storage_form(rt)
        if rt.is_custom:
            head = b'{"apiVersion":' + util.dumps(rt.api_version) + b',"items":['
            tail = b'],"kind":' + util.dumps(rt.list_kind) + b',"metadata":' + util.dumps(meta) + b'}'
            prefix = None
        else:
            prefix = b'{"kind":' + util.dumps(rt.kind) + b',"apiVersion":' + util.dumps(rt.api_version) + b","
            head = (b'{"kind":' + util.dumps(rt.list_kind) + b',"apiVersion":' + util.dumps(rt.api_version)
                    + b',"metadata":' + util.dumps(meta) + b',"items":[')
            tail = b"]}"

        def item(e):
            d = e.data if storage_form else util.dumps(api.to_rt(rt, e.obj()))
            if prefix is None:
                return d
            return b"{" + d[len(prefix):] if d.startswith(prefix) else _strip_kind(d)

        if len(entries) <= 2000:
            self._send(200, head + b",".join(item(e) for e in entries) + tail)
            return
        self.send_response(200)
        self.send_header("Audit-Id", util.new_uid())
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._log(200)
        w = self.wfile
        for i in range(0, len(entries), 1000):
            part = b",".join(item(e) for e in entries[i:i + 1000])
            chunk = (head if i == 0 else b",") + part
            w.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        w.write(b"%x\r\n" % len(tail) + tail + b"\r\n0\r\n\r\n")
        w.flush()

    def _access_review(self, rt, body, ctx):
        api = self.sim.api
        obj = api.decode_body(rt, body, self.headers.get("Content-Type"))
        spec = obj.get("spec") or {}
        ra = spec.get("resourceAttributes") or {}
        allowed = True
        reason = ""
        if self.sim.rbac is not None:
            user = self.user
            groups = self.groups
            if rt.plural == "subjectaccessreviews":
                user = spec.get("user", "")
                groups = tuple(spec.get("groups") or ())
            allowed, reason = self.sim.rbac.check(user, groups, ra.get("verb", ""), ra.get("group", ""),
                                                  ra.get("resource", ""), ra.get("subresource", ""),
                                                  ra.get("namespace", ""), ra.get("name", ""))
        obj["status"] = {"allowed": allowed}
        if reason:
            obj["status"]["reason"] = reason
        obj.setdefault("metadata", {})["creationTimestamp"] = None
        self._json(201, obj)

    # -------------------------------------------------------------- watch

    def _watch(self, rt, ns, name, ctx, media):
        sim = self.sim
        api = sim.api
        q = self.query
        ls, fs = api.parse_list_params(rt, q)
        if name:
            fs = type(fs)(fs.terms + [("metadata.name", "=", name)])
        rv_param = q.get("resourceVersion") or ""
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        send_initial = q.get("sendInitialEvents") in ("true", "1")
        if send_initial:
            errs = []
            if q.get("resourceVersionMatch") != "NotOlderThan":
                errs.append(E.forbidden("resourceVersionMatch", "sendInitialEvents requires setting "
                                        "resourceVersionMatch to NotOlderThan"))
            if not bookmarks:
                errs.append(E.forbidden("allowWatchBookmarks", "allowWatchBookmarks must be set to true when "
                                        "sendInitialEvents is set"))
            if errs:
                raise E.invalid_error("ListOptions", "", errs, group="meta.k8s.io")
        timeout = q.get("timeoutSeconds")
        try:
            timeout = float(timeout) if timeout not in (None, "") else random.uniform(1800, 3600)
        except ValueError:
            raise E.bad_request("invalid timeoutSeconds")
        if sim.faults and sim.faults.watch_end and sim.faults.applies(self.path_only):
            timeout = min(timeout, sim.faults.watch_end)
        start_rv = None
        if rv_param not in ("", "0"):
            try:
                start_rv = int(rv_param)
                if start_rv < 0:
                    raise ValueError
            except ValueError:
                raise E.internal_plain('resourceVersion: Invalid value: "%s": strconv.ParseUint: parsing "%s": '
                                       "invalid syntax" % (rv_param, rv_param))
            api._wait_for_rv(start_rv)
        store = sim.store
        table = api.table_for(api.storage_rt(rt))
        w = Watcher(table, ns if rt.namespaced and ns else None, None, ls, fs)
        initial = []
        error_status = None
        with store.lock:
            if start_rv is None or send_initial:
                lo, hi = table.range(w.ns)
                for k in table.keys[lo:hi]:
                    e = table.items[k]
                    if w.match(e):
                        initial.append(("ADDED", e.data, e.rv))
                start = store.rv
            else:
                try:
                    evs = store.events_since(table.sid, start_rv)
                    initial = w.initial_from_history(evs)
                    start = store.rv
                except E.ApiError as err:
                    error_status = err
                    start = store.rv
            if error_status is None:
                store.watchers.setdefault(table.sid, set()).add(w)
                sim.watch_count += 1
        w.sent_rv = start_rv or 0
        self.send_response(200)
        self.send_header("Audit-Id", util.new_uid())
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._log(200)
        self.close_connection = False
        writer = _WatchWriter(self, rt, media, api)
        try:
            if error_status is not None:
                writer.event("ERROR", util.dumps(error_status.status()), None)
                writer.end()
                return
            deadline = time.time() + timeout
            interval = sim.options.bookmark_interval
            next_bm = time.time() + interval if bookmarks else None
            final_bm = deadline - 2 if bookmarks and deadline - 2 > time.time() else None
            last_rv = start_rv or 0
            for typ, data, rv in initial:
                writer.event(typ, data, rv)
                last_rv = max(last_rv, rv)
            if send_initial:
                last_rv = max(start, last_rv)
                writer.bookmark(last_rv, initial_end=True)
            if sim.faults and sim.faults.take("bad_bookmarks", self.path_only, "badBookmark"):
                writer.bookmark("not-a-number")
            if sim.faults and sim.faults.take("bad_frames", self.path_only, "badFrame"):
                writer.buf.append(b'{"type":"MODIFIED","object":{"metadata":}}\n')
            writer.flush()
            while True:
                now = time.time()
                if now >= deadline or (w.closed.is_set() and w.q.empty()):
                    break
                wait = min(deadline - now, 1.0)
                for t in (next_bm, final_bm):
                    if t is not None:
                        wait = min(wait, max(0.0, t - now))
                item = w.get(wait)
                if item is None:
                    if w.closed.is_set():
                        break
                    now = time.time()
                    due = False
                    if next_bm is not None and now >= next_bm:
                        due = True
                        next_bm = now + interval
                    if final_bm is not None and now >= final_bm:
                        due = True
                        final_bm = None
                    # a bookmark once anything changed since the watch started (like the watch cache)
                    if due and store.rv > (start_rv if start_rv is not None else start):
                        last_rv = max(last_rv, store.rv)
                        writer.bookmark(last_rv)
                        writer.flush()
                    if self._client_gone():
                        break
                    continue
                last_rv = max(last_rv, item[2])
                if (sim.faults and item[0] in ("ADDED", "MODIFIED") and
                        sim.faults.take("future_rv_events", self.path_only, "futureRv")):
                    obj = util.loads(item[1])
                    obj["metadata"]["resourceVersion"] = str(item[2] + 10 ** 9)
                    item = (item[0], util.dumps(obj), item[2] + 10 ** 9)
                writer.event(*item)
                while True:
                    more = w.get(0)
                    if more is None:
                        break
                    writer.event(*more)
                    last_rv = max(last_rv, more[2])
                writer.flush()
            writer.end()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            with store.lock:
                ws = store.watchers.get(table.sid)
                if ws is not None:
                    ws.discard(w)
            w.closed.set()

    def _client_gone(self):
        sock = self.connection
        try:
            r, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        if not r:
            return False
        try:
            if isinstance(sock, ssl.SSLSocket):
                sock.setblocking(False)
                try:
                    data = sock.recv(1)
                except ssl.SSLWantReadError:
                    return False
                finally:
                    sock.setblocking(True)
                return True
            data = sock.recv(1, socket.MSG_PEEK)
            return not data
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    # -------------------------------------------------------------- control

    def _control(self, method, path, body):
        sim = self.sim
        if path == "/_sim/stats" and method == "GET":
            return self._json(200, sim.stats())
        if path == "/_sim/compact" and method == "POST":
            sim.store.compact()
            return self._json(200, {"compactedResourceVersion": sim.store.compacted_rv})
        if path == "/_sim/restart-watches" and method == "POST":
            return self._json(200, {"closed": sim.close_watches("restart requested")})
        if path == "/_sim/faults":
            if method == "POST":
                try:
                    d = json.loads(body or b"{}")
                except ValueError as e:
                    raise E.bad_request(str(e))
                sim.faults.update(d)
            return self._json(200, sim.faults.to_json())
        if path == "/_sim/save" and method == "POST":
            if not sim.options.state:
                raise E.bad_request("kube-sim was started without --state")
            sim.save_state()
            return self._json(200, {"saved": sim.options.state})
        if path.startswith("/_sim/heartbeat/") and method == "POST":
            node = path[len("/_sim/heartbeat/"):]
            sim.heartbeat(node)
            return self._json(200, {"node": node})
        raise E.not_found_path()


def _strip_kind(data):
    obj = util.loads(data)
    obj.pop("kind", None)
    obj.pop("apiVersion", None)
    return util.dumps(obj)


_BOOKMARK_EXTRA = {
    "Pod": {"spec": {"containers": None}, "status": {}},
    "Node": {"spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                                    "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                                                 "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                                                 "kubeProxyVersion": "", "operatingSystem": "",
                                                 "architecture": ""}}},
    "Namespace": {"spec": {}, "status": {}},
    "Lease": {"spec": {}},
    "PodDisruptionBudget": {"spec": {}, "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                                   "expectedPods": 0}},
    "Deployment": {"spec": {"selector": None, "template": {"metadata": {"creationTimestamp": None},
                                                           "spec": {"containers": None}}, "strategy": {}},
                   "status": {}},
    "ReplicaSet": {"spec": {"selector": None, "template": {"metadata": {"creationTimestamp": None},
                                                           "spec": {"containers": None}}}, "status": {"replicas": 0}},
    "DaemonSet": {"spec": {"selector": None, "template": {"metadata": {"creationTimestamp": None},
                                                          "spec": {"containers": None}}, "updateStrategy": {}},
                  "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                             "numberReady": 0}},
    "Event": {"involvedObject": {}, "source": {}, "firstTimestamp": None, "lastTimestamp": None,
              "eventTime": None, "reportingComponent": "", "reportingInstance": ""},
}


class _WatchWriter:
    """Encodes watch events in the negotiated form and writes chunks."""

    def __init__(self, handler, rt, media, api):
        self.h = handler
        self.rt = rt
        self.media = media
        self.api = api
        self.buf = []
        self.columns_sent = False
        self.storage_form = api.is_storage_form(rt)

    def _obj_bytes(self, data):
        if self.storage_form:
            return data
        return util.dumps(self.api.to_rt(self.rt, util.loads(data)))

    def event(self, typ, data, rv):
        if typ == "ERROR":
            line = b'{"type":"ERROR","object":' + data + b"}\n"
        elif self.media.kind == "table":
            obj = self.api.to_rt(self.rt, util.loads(data))
            tbl = T.table(self.rt, [obj], {"resourceVersion": str(rv)}, self.h.query.get("includeObject", "Metadata"),
                          with_columns=not self.columns_sent)
            self.columns_sent = True
            line = b'{"type":"' + typ.encode() + b'","object":' + util.dumps(tbl) + b"}\n"
        elif self.media.kind == "pom":
            obj = T.partial_metadata(util.loads(data))
            line = b'{"type":"' + typ.encode() + b'","object":' + util.dumps(obj) + b"}\n"
        else:
            line = b'{"type":"' + typ.encode() + b'","object":' + self._obj_bytes(data) + b"}\n"
        self.buf.append(line)
        if len(self.buf) >= 256:
            self.flush()

    def bookmark(self, rv, initial_end=False):
        rt = self.rt
        md = {"resourceVersion": str(rv)}
        if initial_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        if self.media.kind == "table":
            obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": md, "columnDefinitions": None,
                   "rows": None}
        elif self.media.kind == "pom":
            obj = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md}
        elif rt.is_custom:
            obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": md}
        else:
            md["creationTimestamp"] = None
            obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": md}
            obj.update(util.deepcopy(_BOOKMARK_EXTRA.get(rt.kind, {})))
        self.buf.append(b'{"type":"BOOKMARK","object":' + util.dumps(obj) + b"}\n")

    def flush(self):
        if not self.buf:
            return
        data = b"".join(self.buf)
        self.buf = []
        self.h.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.h.wfile.flush()

    def end(self):
        self.flush()
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()
