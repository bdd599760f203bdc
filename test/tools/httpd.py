#!/usr/bin/env python3
"""A small HTTP/1.1 test server (standard library only) for Carpenter's
HTTP client tests.

Listens on 127.0.0.1 (port 0 by default: the kernel picks one) and prints
"ready <port>" on stdout once it accepts connections. Plain HTTP by default;
with --cert/--key it speaks TLS, and with --client-ca it demands a client
certificate signed by that CA. Connections are kept alive (HTTP/1.1), one
thread per connection, and every connection gets a number, reported as
"conn" by /echo and in the X-Conn-Id header of every response, so a test
can count how many connections its requests used.

Endpoints (query parameters in brackets):
  /echo                 any method: JSON with method, path, query, headers
                        (lower-case names), body, body_len, conn, client_cn
  /status/<code>        [reason=..., header=Name:Value (repeatable), body=...]
                        answers <code> with that reason phrase
  /slow                 [delay=ms] waits, then a short body
  /drip                 [n=5, interval=ms, first=ms] chunked: "chunk-<i>\\n"
                        every interval ms, the first after `first` ms
  /close-mid            [mode=length|chunked|reset] starts a body, then
                        closes the connection (reset: with an RST)
  /big                  [size=N, chunked=0|1] N bytes of 'a'..'z'
"""

import argparse
import itertools
import json
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_conn_ids = itertools.count(1)
_conn_lock = threading.Lock()


def _next_conn_id():
    with _conn_lock:
        return next(_conn_ids)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "carp-test-httpd"
    sys_version = ""

    def setup(self):
        super().setup()
        self.conn_id = _next_conn_id()

    def log_message(self, fmt, *args):  # quiet
        pass

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, socket.timeout, OSError):
            pass

    # --- helpers ---

    def _query(self):
        parts = urllib.parse.urlsplit(self.path)
        return parts.path, urllib.parse.parse_qs(parts.query,
                                                 keep_blank_values=True)

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _client_cn(self):
        getpeercert = getattr(self.connection, "getpeercert", None)
        if not getpeercert:
            return None
        cert = getpeercert()
        if not cert:
            return None
        for rdn in cert.get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return value
        return None

    def _send(self, code, body, reason=None, headers=(),
              ctype="text/plain"):
        self.send_response(code, reason)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Conn-Id", str(self.conn_id))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _start_chunked(self, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Conn-Id", str(self.conn_id))
        self.end_headers()
        self.wfile.flush()

    # --- dispatch ---

    def _dispatch(self):
        path, q = self._query()
        body = self._read_body()
        if path == "/echo":
            return self._echo(path, q, body)
        if path.startswith("/status/"):
            return self._status(path, q)
        if path == "/slow":
            time.sleep(int(q.get("delay", ["1000"])[0]) / 1000.0)
            return self._send(200, b"slow done")
        if path == "/drip":
            return self._drip(q)
        if path == "/close-mid":
            return self._close_mid(q)
        if path == "/big":
            return self._big(q)
        return self._send(404, b"no such endpoint", "Not Found")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = \
        do_OPTIONS = _dispatch

    def _echo(self, path, q, body):
        doc = {
            "method": self.command,
            "path": path,
            "query": {k: v[-1] for k, v in q.items()},
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
            "body_len": len(body),
            "conn": self.conn_id,
            "client_cn": self._client_cn(),
        }
        out = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        self._send(200, out.encode(), ctype="application/json",
                   headers=[("X-Method", self.command)])

    def _status(self, path, q):
        code = int(path[len("/status/"):])
        reason = q.get("reason", [None])[0]
        headers = []
        for h in q.get("header", []):
            name, _, value = h.partition(":")
            headers.append((name, value))
        body = q.get("body", ["status body"])[0].encode()
        self._send(code, body, reason, headers)

    def _drip(self, q):
        n = int(q.get("n", ["5"])[0])
        interval = int(q.get("interval", ["50"])[0]) / 1000.0
        first = int(q.get("first", ["0"])[0]) / 1000.0
        self._start_chunked()
        for i in range(n):
            time.sleep(first if i == 0 else interval)
            self._chunk(b"chunk-%d\n" % i)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _close_mid(self, q):
        mode = q.get("mode", ["length"])[0]
        if mode == "chunked":
            self._start_chunked()
            self._chunk(b"partial-1\n")
            self._chunk(b"partial-2\n")
        else:
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.send_header("X-Conn-Id", str(self.conn_id))
            self.end_headers()
            self.wfile.write(b"x" * 100)
            self.wfile.flush()
        time.sleep(0.05)
        if mode == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()

    def _big(self, q):
        size = int(q.get("size", ["1000"])[0])
        pattern = bytes(range(ord("a"), ord("z") + 1))
        data = (pattern * (size // len(pattern) + 1))[:size]
        if q.get("chunked", ["0"])[0] == "1":
            self._start_chunked()
            for off in range(0, size, 16384):
                self._chunk(data[off:off + 16384])
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._send(200, data)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024
    tls_context = None

    def finish_request(self, request, client_address):
        # In the connection's own thread: a slow or failing TLS handshake
        # never blocks accept().
        if self.tls_context is not None:
            try:
                request.settimeout(10)
                request = self.tls_context.wrap_socket(request,
                                                       server_side=True)
                request.settimeout(None)
            except (ssl.SSLError, OSError):
                request.close()
                return
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):  # quiet
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--cert", help="server certificate (PEM): enables TLS")
    ap.add_argument("--key", help="server key (PEM)")
    ap.add_argument("--client-ca", help="demand client certificates "
                    "signed by this CA")
    args = ap.parse_args()

    server = Server(("127.0.0.1", args.port), Handler)
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        if args.client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(args.client_ca)
        server.tls_context = ctx
    print("ready %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
