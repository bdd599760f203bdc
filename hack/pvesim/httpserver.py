"""HTTPS server: transport, auth, envelope, faults and the request log.

Modelled on pve-http-server (AnyEvent.pm) and pve-manager's HTTPServer.pm:
- API token auth ("Authorization: PVEAPIToken=USER@REALM!TOKEN=SECRET");
  every 401 is delayed (3 s on PVE; --bad-token-delay) and has no body;
- the error text is the HTTP reason phrase; the body is {"data":null}
  (PVE 9: plus "message"); 400 adds "errors";
- GET/DELETE take parameters from the query string only; a body is
  501 "Unexpected content for method 'GET'"; POST/PUT bodies are
  x-www-form-urlencoded (split on & and ;, values cut at a second raw '=',
  exactly like PVE's decode_urlencoded) or JSON;
- answers >= 400 close the connection; bodies over 1 KiB are gzipped when
  the client accepts gzip.
"""

import gzip
import http.server
import json
import re
import socket
import socketserver
import sys
import threading
import time
import urllib.parse

from . import api
from .errors import PveError, die
from .formats import FormatError

JSON_CT = "application/json;charset=UTF-8"


def pct_decode(s):
    return re.sub(r"%([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), s)


def decode_urlencoded(data):
    """PVE::APIServer::AnyEvent::decode_urlencoded, quirks included."""
    res = {}
    if not data:
        return res
    for kv in re.split(r"[&;]", data):
        parts = kv.split("=")
        while len(parts) > 1 and parts[-1] == "":
            parts.pop()      # Perl's split drops trailing empty fields
        if parts == [""]:
            continue
        k = pct_decode(parts[0].replace("+", " "))
        k = k.encode("latin-1", "replace").decode("utf-8", "replace")
        v = parts[1] if len(parts) > 1 else None
        if v is not None:
            v = pct_decode(v.replace("+", " "))
            v = v.encode("latin-1", "replace").decode("utf-8", "replace")
            old = res.get(k)
            if old is not None:
                v = old + "\0" + v
        res[k] = v
    return res


def parse_multipart(body, boundary):
    """(fields, files) of a multipart/form-data body."""
    fields, files, names = {}, {}, {}
    delim = b"--" + boundary.encode("latin-1")
    for part in body.split(delim)[1:]:
        if part.startswith(b"--"):
            break
        part = part[2:] if part.startswith(b"\r\n") else part.lstrip(b"\n")
        if b"\r\n\r\n" in part:
            head, data = part.split(b"\r\n\r\n", 1)
        elif b"\n\n" in part:
            head, data = part.split(b"\n\n", 1)
        else:
            continue
        if data.endswith(b"\r\n"):
            data = data[:-2]
        elif data.endswith(b"\n"):
            data = data[:-1]
        disp = ""
        for line in head.decode("latin-1").splitlines():
            if line.lower().startswith("content-disposition:"):
                disp = line.split(":", 1)[1]
        name = re.search(r'\bname\s*=\s*"?([^";]+)"?', disp)
        fname = re.search(r'\bfilename\s*=\s*"?([^";]*)"?', disp)
        if not name:
            raise PveError(501, "upload failed\n", body=False)
        if fname:
            if name.group(1) != "filename":
                raise PveError(501, "upload failed\n", body=False)
            files[name.group(1)] = data
            names[name.group(1)] = fname.group(1)
        else:
            fields[name.group(1)] = data.decode("utf-8", "replace")
    return fields, files, names


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, app, ssl_ctx):
        self.app = app
        self.ssl_ctx = ssl_ctx
        super().__init__(addr, Handler)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, socket.timeout, OSError)):
            return  # TLS handshake failures and vanished clients are not news
        super().handle_error(request, client_address)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pve-api-daemon/3.0"
    # Headers and body go out in two writes: with Nagle on, the body waits
    # for the client's delayed ACK of the headers, 40 ms on every call on a
    # kept-alive connection - a stall pveproxy does not have.
    disable_nagle_algorithm = True

    def version_string(self):
        return self.server_version

    def setup(self):
        # TLS handshake in the connection's own thread
        self.request.settimeout(10)
        try:
            self.request = self.server.ssl_ctx.wrap_socket(self.request, server_side=True)
        except (OSError, socket.timeout) as e:
            self.server.app.stats_inc("tls_errors")
            raise ConnectionAbortedError(str(e))
        self.request.settimeout(self.server.app.opts.keepalive_timeout)
        super().setup()

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, socket.timeout, OSError):
            pass

    def log_message(self, fmt, *args):
        if self.server.app.opts.verbose:
            sys.stderr.write("pve-sim: %s\n" % (fmt % args))

    # the reason phrase can carry any text: write the status line as UTF-8
    def send_response_only(self, code, message=None):
        if message is None:
            message = self.responses.get(code, ("",))[0]
        message = message.replace("\r", " ").replace("\n", " ")
        line = "%s %d %s\r\n" % (self.protocol_version, code, message)
        if not hasattr(self, "_headers_buffer"):
            self._headers_buffer = []
        self._headers_buffer.append(line.encode("utf-8", "replace"))

    def do_GET(self):
        self.server.app.dispatch(self, "GET")

    def do_POST(self):
        self.server.app.dispatch(self, "POST")

    def do_PUT(self):
        self.server.app.dispatch(self, "PUT")

    def do_DELETE(self):
        self.server.app.dispatch(self, "DELETE")

    def _unknown(self):
        self.server.app.reply(self, 501, "method '%s' not available" % self.command, None)

    do_PATCH = do_HEAD = do_OPTIONS = do_CONNECT = do_TRACE = _unknown


class App:
    def __init__(self, opts, sim, schema, faults, control):
        self.opts = opts
        self.sim = sim
        self.schema = schema
        self.faults = faults
        self.control = control
        self.log_lock = threading.Lock()
        self.log_file = open(opts.request_log, "a", encoding="utf-8") if opts.request_log \
            else None
        self.secret_by_id = {}

    def stats_inc(self, key, n=1):
        with self.sim.lock:
            self.sim.stats[key] += n

    # ---------------------------------------------------------------- replies
    def reply(self, h, status, reason, data, extra=None, errors=None, body=True,
              message=None):
        payload = None
        if body:
            env = {"data": data}
            if errors:
                env["errors"] = errors
            if extra:
                env.update(extra)
            if status >= 400 and self.opts.pve_version >= 9:
                env["message"] = message if message is not None else reason + "\n"
            payload = json.dumps(env, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        # Logged before the answer leaves: a client that reads the request
        # log right after its answer must find the request there.
        self.log_answer(h, status, reason)
        h.send_response(status, reason)
        h.send_header("Cache-Control", "max-age=0")
        h.send_header("Pragma", "no-cache")
        h.send_header("Expires", h.date_time_string())
        if payload is not None:
            if len(payload) > 1024 and "gzip" in (h.headers.get("Accept-Encoding") or ""):
                payload = gzip.compress(payload)
                h.send_header("Content-Encoding", "gzip")
            h.send_header("Content-Type", JSON_CT)
        h.send_header("Content-Length", str(len(payload) if payload else 0))
        close = status >= 400 or (h.headers.get("Connection", "").lower() == "close")
        h.send_header("Connection", "close" if close else "Keep-Alive")
        h.end_headers()
        if payload:
            h.wfile.write(payload)
        h.close_connection = close

    def reply_bad_body(self, h):
        """A 200 whose body is huge or not JSON (--fault-body), after the
        work was done, as a broken proxy or server would answer."""
        mode = self.faults.fault_body_mode
        self.log_answer(h, 200, "OK")
        h.send_response(200, "OK")
        h.send_header("Content-Type", JSON_CT)
        if mode == "malformed":
            payload = b'{"data":[{"vmid":100,"name":"x"' + b"\x00garbage"
            h.send_header("Content-Length", str(len(payload)))
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.write(payload)
            h.close_connection = True
            return
        n = max(64, self.faults.fault_body_bytes)
        if mode == "huge":
            h.send_header("Content-Length", str(n))
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        # Valid JSON all the way: {"data":[0,0,...,0]} padded with spaces.
        head, tail = b'{"data":[0', b']}'
        chunk = b",0" * (1 << 19)
        sent = len(head)
        try:
            h.wfile.write(head)
            while sent + len(chunk) + len(tail) <= n:
                h.wfile.write(chunk)
                sent += len(chunk)
            h.wfile.write(b" " * (n - sent - len(tail)) + tail)
        except (ConnectionError, socket.timeout):
            pass  # the client gave up on it, as it should

    def reply_json(self, h, status, obj):
        payload = json.dumps(obj, indent=1, sort_keys=True).encode("utf-8") + b"\n"
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    def log_answer(self, h, status, reason):
        """Logs the API request h is answering, once."""
        rec = getattr(h, "pve_rec", None)
        if rec is None:
            return
        h.pve_rec = None
        rec["status"], rec["reason"] = status, reason
        rec["duration_ms"] = round((time.monotonic() - h.pve_t0) * 1000, 1)
        self.log_request(rec)

    def log_request(self, rec):
        if not self.log_file:
            return
        line = json.dumps(rec, sort_keys=True, ensure_ascii=False)
        with self.log_lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    # ------------------------------------------------------------------ auth
    def authenticate(self, h):
        """Token or None; raises PveError(401) (caller delays it)."""
        auth = h.headers.get("Authorization") or ""
        m = re.search(r"(?:^|\s)PVEAPIToken(?:=| )([^;]*)", auth)
        if not m:
            cookie = h.headers.get("Cookie") or ""
            if "PVEAuthCookie" in cookie or "PVEAuthCookie" in auth:
                raise PveError(401, "permission denied - invalid PVE ticket\n", body=False)
            raise PveError(401, "No ticket\n", body=False)
        value = m.group(1).strip()
        mm = re.match(r"^(.*)=(.*)$", value)
        if not mm:
            raise PveError(401, "no tokenid specified\n", body=False)
        tokenid, secret = mm.group(1), mm.group(2)
        tm = re.match(r"^([^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+)!([A-Za-z][A-Za-z0-9.\-_]+)$",
                      tokenid)
        if not tm:
            raise PveError(401, "'%s' is not a valid token ID\n" % tokenid, body=False)
        user = tm.group(1)
        users = {t.user for t in self.sim.tokens.values()}
        if user not in users:
            raise PveError(401, "no such user ('%s')\n" % user, body=False)
        tok = self.sim.tokens.get(tokenid)
        if tok is None:
            raise PveError(401, "no such token '%s' for user '%s'\n" % (tm.group(2), user),
                           body=False)
        if secret != tok.secret:
            raise PveError(401, "invalid token value!\n", body=False)
        return tok

    # -------------------------------------------------------------- dispatch
    def dispatch(self, h, method):
        t0 = time.monotonic()
        url = urllib.parse.urlsplit(h.path)
        raw_path = url.path
        if raw_path.startswith("/_sim/") or raw_path == "/_sim":
            self.control.handle(h, method, url)
            return
        rec = {"ts": round(time.time(), 6), "method": method, "path": raw_path,
               "query": url.query}
        h.pve_rec, h.pve_t0 = rec, t0
        status, reason = 500, "internal error"
        try:
            status, reason = self._api(h, method, url, rec, t0)
        except (ConnectionError, socket.timeout):
            h.close_connection = True
            status, reason = 0, "client went away"
        finally:
            self.log_answer(h, status, reason)  # when no answer was sent
            self.stats_inc("api_requests")
            self.stats_inc("api_status_%d" % status)

    def _read_body(self, h, method):
        te = h.headers.get("Transfer-Encoding")
        if te:
            if te.lower() == "chunked":
                raise PveError(501, "chunked transfer encoding not supported\n")
            raise PveError(501, "Unknown transfer encoding '%s'\n" % te)
        n = int(h.headers.get("Content-Length") or 0)
        if n and method not in ("POST", "PUT"):
            h.rfile.read(min(n, 1 << 20))
            raise PveError(501, "Unexpected content for method '%s'\n" % method)
        if n > self.opts.max_upload_bytes or (n > self.opts.max_post_bytes and
                                               "multipart/form-data" not in
                                               (h.headers.get("Content-Type") or "")):
            raise PveError(501, "for data too large\n")
        return h.rfile.read(n) if n else b""

    def _api(self, h, method, url, rec, t0):
        opts = self.opts
        token = None
        try:
            path = urllib.parse.unquote(url.path, errors="replace")
            m = re.match(r"^/api2/+([a-z][a-z0-9]+)(/.*)?$", path)
            if not path.startswith("/api2"):
                raise PveError(501, "no such file '%s'\n" % path)
            if not m:
                raise PveError(501, "no such uri\n")
            fmt, rel = m.group(1), m.group(2) or "/"
            rec["rel"] = rel
            if rel == "/access/ticket" and method in ("POST", "GET"):
                self._read_body(h, method)
                raise PveError(401, "authentication failure\n")
            try:
                token = self.authenticate(h)
            except PveError as e:
                self.stats_inc("auth_failures")
                delay = self.faults.bad_token_delay - (time.monotonic() - t0)
                if delay > 0:
                    time.sleep(delay)
                raise
            rec["token"] = token.id
            body = self._read_body(h, method)
            if fmt != "json":
                raise PveError(501, "no formatter for uri %s, %s\n" % (rel, fmt))
            ct = (h.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            files, fnames = {}, {}
            if method in ("POST", "PUT") and body:
                if ct == "multipart/form-data":
                    if not re.match(r"^/nodes/[^/]+/storage/[^/]+/upload$", rel):
                        raise PveError(506, "upload 'Content-Type '%s' not implemented\n"
                                       % h.headers.get("Content-Type"))
                    bm = re.search(r"boundary\s*=\s*\"?([^\";]+)\"?",
                                   h.headers.get("Content-Type"))
                    if not bm:
                        raise PveError(501, "upload failed\n")
                    fields, files, fnames = parse_multipart(body, bm.group(1))
                    params = dict(fields)
                    params.update({k: v for k, v in fnames.items()})
                    rec["upload"] = {k: {"filename": fnames[k], "size": len(v)}
                                     for k, v in files.items()}
                elif ct == "application/json":
                    try:
                        params = json.loads(body.decode("utf-8"))
                    except ValueError as e:
                        raise PveError(501, "malformed JSON string: %s\n" % e)
                    if not isinstance(params, dict):
                        raise PveError(501, "JSON body is not an object\n")
                elif ct in ("", "application/x-www-form-urlencoded"):
                    params = decode_urlencoded(body.decode("latin-1"))
                else:
                    raise PveError(506, "upload 'Content-Type '%s' not implemented\n"
                                   % h.headers.get("Content-Type"))
                rec["content_type"] = ct
            else:
                params = {}
            for k, v in decode_urlencoded(url.query).items():
                params[k] = v
            params.pop("_dc", None)
            rec["params"] = params
            found = self.schema.find(method, rel)
            if found is None or found[1] is None:
                raise PveError(501, "Method '%s %s' not implemented\n" % (method, rel))
            template, info, uri = found
            rec["route"] = template
            for k in params:
                if uri.get(k) is not None:
                    raise PveError(400, "Parameter verification failed.\n",
                                   errors={k: "duplicate parameter (already defined in URI)"})
            merged = dict(params)
            merged.update(uri)
            handler = api.ROUTES.get((method, template))
            with self.sim.lock:
                ok, what = api.perm_ok(self.sim, token, info.get("permissions"), merged)
            if not ok:
                raise PveError(403, "Permission check failed (%s)\n" % what)
            if info.get("proxyto") == "node":
                node = merged.get("node")
                if node not in self.sim.hosts:
                    raise PveError(500, "hostname lookup '%s' failed - failed to get address "
                                   "info for: %s: Name or service not known\n" % (node, node))
                if not self.sim.hosts[node].online:
                    time.sleep(opts.offline_delay_ms / 1000.0)
                    raise PveError(595, "No route to host\n", body=False)
            if handler is None:
                self.stats_inc("unimplemented")
                sys.stderr.write("pve-sim: not simulated: %s %s\n" % (method, template))
                raise PveError(501, "Method '%s %s' not implemented\n" % (method, rel))
            if self.faults.applies_to(method) and self.faults.draw("fault_500"):
                self.stats_inc("fault_500")
                raise PveError(500, self.faults.fault_message + "\n")
            errors = self.schema.validate(merged, info.get("parameters") or {})
            if errors:
                self.stats_inc("validation_failures")
                rec["errors"] = dict(errors)
                raise PveError(400, "Parameter verification failed.\n", errors=dict(errors))
            strp = {k: self._untaint(v) for k, v in merged.items() if v is not None}
            ctx = api.Ctx(self.sim, token, strp, files)
            with self.sim.lock:
                result = handler(ctx)
            extra = None
            if isinstance(result, tuple):
                result, extra = result
            if isinstance(result, str) and result.startswith("UPID:"):
                rec["upid"] = result
            if self.faults.applies_to(method) and self.faults.draw("fault_500_after"):
                self.stats_inc("fault_500_after")
                raise PveError(500, self.faults.fault_message + "\n")
            d = self.faults.delay_seconds(rec.get("rel"))
            if d:
                time.sleep(d)
            if self.faults.applies_to(method) and self.faults.draw("fault_body"):
                self.stats_inc("fault_body")
                self.reply_bad_body(h)
                return 200, "OK"
            self.reply(h, 200, "OK", result, extra=extra)
            return 200, "OK"
        except PveError as e:
            if e.errors:
                rec["errors"] = dict(e.errors)
            if e.status == 401:
                delay = self.faults.bad_token_delay - (time.monotonic() - t0)
                if delay > 0 and token is None and rec.get("rel") == "/access/ticket":
                    time.sleep(delay)
            else:
                d = self.faults.delay_seconds()
                if d:
                    time.sleep(d)
            self.reply(h, e.status, e.reason, None, errors=e.errors, body=e.body,
                       message=e.message)
            return e.status, e.reason

    @staticmethod
    def _untaint(v):
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, float):
            return str(int(v)) if v.is_integer() else repr(v)
        if isinstance(v, int):
            return str(v)
        return v
