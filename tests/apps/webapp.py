#!/usr/bin/env python3
"""tests/apps/webapp.py: the web app the apps tests expose (python3 stdlib,
runs inside a sandbox of the default image, or on the host).

    python3 webapp.py PORT [--bind ADDR]     (ADDR default 127.0.0.1)

A threaded HTTP/1.1 server with keep-alive:
  GET  /               an HTML page that loads /static/app.js by absolute
                       path; the script writes "script-ok" into #script,
                       fetches /headers (#fetch: "fetch-ok", #appcookie: the
                       Cookie header the app saw, or "none"), opens a
                       WebSocket to its own host at /ws, sends "ping-from-
                       browser" and writes "ws-ok:<echo>" into #ws; #loc is
                       location.href, #doccookie document.cookie
  GET  /static/app.js  that script (in a frame it also posts "ws-ok:<echo>"
                       to its parent)
  GET  /cross?peer=URL a probe of cross-app requests: URL (another app, with
                       its token) in a frame; once the frame's WebSocket
                       echoed (the browser holds the peer's cookie), this
                       page opens a WebSocket to the peer's host: #iframe
                       the frame's message, #cross cross-ws-open /
                       cross-ws-echo:<echo> / cross-ws-refused
  GET  /ws             RFC 6455 WebSocket: text and binary frames echoed (a
                       fragment as the same fragment), ping -> pong, close ->
                       close; unmasked client frames close with 1002,
                       payloads over 16 MiB with 1009
  GET  /headers        JSON: the request line, the headers as received (in
                       order) and the peer address, so tests can assert what
                       reached the app
  GET  /bytes?n=N      N bytes (byte i is i % 256), streamed, Content-Length N
  POST /echo           the body back (Content-Length or chunked), streamed
  POST /sha256         the body's SHA-256, hex, and its length
  anything else        404
A bad client (garbage, a reset, a half-sent body) ends its own connection
and nothing else: the server never dies of a client.
"""
import base64
import hashlib
import json
import socket
import socketserver
import struct
import sys
import urllib.parse

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_HEAD = 64 * 1024          # request line + headers
MAX_FIELDS = 200
MAX_WS_PAYLOAD = 16 << 20
CHUNK = 64 * 1024
BYTES_MAX = 64 << 30          # /bytes?n= at most 64 GiB
BLOCK = bytes(range(256)) * (CHUNK // 256)

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>sandbox webapp</title>
<style>body{font:16px sans-serif;margin:2em} p{padding:.3em;border:1px solid #ccc}</style>
</head><body>
<h1>sandbox webapp</h1>
<p>script: <span id="script">script-pending</span></p>
<p>fetch: <span id="fetch">fetch-pending</span> cookie seen by the app: <span id="appcookie">?</span></p>
<p>websocket: <span id="ws">ws-pending</span></p>
<p>location: <span id="loc">?</span></p>
<p>document.cookie: <span id="doccookie">?</span></p>
<script src="/static/app.js"></script>
</body></html>
"""

SCRIPT = b"""// served at an absolute path: it runs only if /static/ reaches the app
(function () {
  function set(id, text) { document.getElementById(id).textContent = text; }
  set("script", "script-ok");
  set("loc", location.href);
  set("doccookie", document.cookie === "" ? "none" : document.cookie);
  fetch("/headers").then(function (r) { return r.json(); }).then(function (j) {
    var c = "none";
    j.headers.forEach(function (h) { if (h[0].toLowerCase() === "cookie") c = h[1]; });
    set("fetch", "fetch-ok");
    set("appcookie", c);
  }).catch(function (e) { set("fetch", "fetch-failed:" + e); });
  var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  ws.onopen = function () { ws.send("ping-from-browser"); };
  ws.onmessage = function (ev) {
    set("ws", "ws-ok:" + ev.data);
    ws.close();
    // in /cross's frame: tell the page around it
    if (window.parent !== window) window.parent.postMessage("ws-ok:" + ev.data, "*");
  };
  ws.onerror = function () { set("ws", "ws-error"); };
})();
"""


CROSS_PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>cross-app probe</title>
<style>body{font:16px sans-serif;margin:2em} p{padding:.3em;border:1px solid #ccc}
iframe{width:90%;height:260px}</style>
</head><body>
<h1>cross-app probe</h1>
<p>peer in a frame: <span id="iframe">iframe-pending</span></p>
<p>this page's WebSocket to the peer: <span id="cross">cross-pending</span></p>
<script src="/static/cross.js"></script>
</body></html>
"""

CROSS_SCRIPT = b"""// /cross?peer=URL: URL (another app, with its token) in a frame; once
// its own WebSocket echoed there (so this browser holds its cookie), this
// page opens a WebSocket to the peer's host: a cross-app request
(function () {
  function set(id, text) { document.getElementById(id).textContent = text; }
  var peer = new URLSearchParams(location.search).get("peer");
  if (!peer) { set("cross", "no-peer"); return; }
  var u = new URL(peer), done = false;
  var f = document.createElement("iframe");
  f.src = peer;
  document.body.appendChild(f);
  window.addEventListener("message", function (ev) {
    if (done || ev.origin !== u.origin) return;
    done = true;
    set("iframe", String(ev.data));
    var opened = false;
    var ws = new WebSocket((u.protocol === "https:" ? "wss://" : "ws://") + u.host + "/ws");
    ws.onopen = function () { opened = true; set("cross", "cross-ws-open"); ws.send("cross-probe"); };
    ws.onmessage = function (e) { set("cross", "cross-ws-echo:" + e.data); ws.close(); };
    ws.onerror = function () { if (!opened) set("cross", "cross-ws-refused"); };
    ws.onclose = function () { if (!opened) set("cross", "cross-ws-refused"); };
  });
  setTimeout(function () { if (!done) set("iframe", "iframe-timeout"); }, 8000);
})();
"""


class BadRequest(Exception):
    pass


class Conn:
    """One client connection: reads requests until the client closes."""

    def __init__(self, sock, peer):
        self.s = sock
        self.peer = peer
        self.buf = b""

    # -- input
    def fill(self):
        d = self.s.recv(CHUNK)
        if not d:
            raise ConnectionError("eof")
        self.buf += d

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEAD:
                raise BadRequest("head too large")
            try:
                self.fill()
            except ConnectionError:
                if self.buf.strip():
                    raise BadRequest("truncated head")
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if len(head) > MAX_HEAD:
            raise BadRequest("head too large")
        lines = head.decode("latin-1").split("\r\n")
        while lines and lines[0] == "":      # RFC 9112: ignore leading CRLFs
            lines.pop(0)
        if not lines:
            raise BadRequest("empty head")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest("bad request line")
        hdrs = []
        for ln in lines[1:]:
            if ":" not in ln or ln[0] in " \t":
                raise BadRequest("bad header line")
            k, v = ln.split(":", 1)
            hdrs.append((k.strip(), v.strip()))
        if len(hdrs) > MAX_FIELDS:
            raise BadRequest("too many headers")
        return parts[0], parts[1], parts[2], hdrs

    def read_exact(self, n):
        """Yields the next n bytes in pieces."""
        while n > 0:
            if not self.buf:
                self.fill()
            piece = self.buf[:n]
            self.buf = self.buf[len(piece):]
            n -= len(piece)
            yield piece

    def read_line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > 4096:
                raise BadRequest("chunk line too long")
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def body(self, hdrs):
        """Yields the request body in pieces (Content-Length or chunked)."""
        te = hget(hdrs, "transfer-encoding")
        if te is not None:
            if te.lower() != "chunked":
                raise BadRequest("unsupported transfer-encoding")
            while True:
                ln = self.read_line().split(b";", 1)[0].strip()
                try:
                    n = int(ln, 16)
                except ValueError:
                    raise BadRequest("bad chunk size")
                if n < 0:
                    raise BadRequest("bad chunk size")
                if n == 0:
                    while self.read_line() != b"":   # trailers
                        pass
                    return
                yield from self.read_exact(n)
                if self.read_line() != b"":
                    raise BadRequest("bad chunk end")
        cl = hget(hdrs, "content-length")
        if cl is None:
            return
        if not cl.isdigit():
            raise BadRequest("bad content-length")
        yield from self.read_exact(int(cl))

    # -- output
    def send(self, data):
        self.s.sendall(data)

    def respond(self, status, ctype, body, extra=()):
        h = "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n" % (
            status, ctype, len(body))
        for k, v in extra:
            h += "%s: %s\r\n" % (k, v)
        self.send(h.encode("latin-1") + b"\r\n" + body)

    # -- the loop
    def run(self):
        while True:
            try:
                req = self.read_head()
            except BadRequest as e:
                self.respond("400 Bad Request", "text/plain", (str(e) + "\n").encode(),
                             [("Connection", "close")])
                return
            if req is None:
                return
            if not self.handle(*req):
                return

    def handle(self, method, target, version, hdrs):
        """Answers one request; False ends the connection."""
        path, _, query = target.partition("?")
        q = urllib.parse.parse_qs(query)
        conn = (hget(hdrs, "connection") or "").lower()
        keep = ("close" not in conn) if version == "HTTP/1.1" else ("keep-alive" in conn)
        ka = [] if keep else [("Connection", "close")]
        if path == "/ws" and "websocket" in (hget(hdrs, "upgrade") or "").lower():
            return self.websocket(hdrs)
        if method == "GET" and path == "/":
            self.respond("200 OK", "text/html; charset=utf-8", PAGE, ka)
        elif method == "GET" and path == "/static/app.js":
            self.respond("200 OK", "application/javascript", SCRIPT, ka)
        elif method == "GET" and path == "/cross":
            self.respond("200 OK", "text/html; charset=utf-8", CROSS_PAGE, ka)
        elif method == "GET" and path == "/static/cross.js":
            self.respond("200 OK", "application/javascript", CROSS_SCRIPT, ka)
        elif method == "GET" and path == "/headers":
            j = {"method": method, "target": target, "version": version,
                 "headers": [[k, v] for k, v in hdrs], "peer": self.peer}
            self.respond("200 OK", "application/json", json.dumps(j).encode() + b"\n", ka)
        elif method == "GET" and path == "/bytes":
            try:
                n = int(q.get("n", ["0"])[0])
            except ValueError:
                n = -1
            if n < 0 or n > BYTES_MAX:
                self.respond("400 Bad Request", "text/plain", b"bad n\n", ka)
                return keep
            self.send(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                       "Content-Length: %d\r\n%s\r\n" % (n, "" if keep else "Connection: close\r\n")
                       ).encode())
            off = 0
            while off < n:
                k = min(CHUNK, n - off)
                self.send(BLOCK[:k])
                off += k
        elif method == "POST" and path == "/echo":
            cl = hget(hdrs, "content-length")
            chunked = hget(hdrs, "transfer-encoding") is not None
            if hget(hdrs, "expect", "").lower() == "100-continue":
                self.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            if chunked or cl is None:
                self.send(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                           "Transfer-Encoding: chunked\r\n%s\r\n" % (
                               "" if keep else "Connection: close\r\n")).encode())
                for piece in self.body(hdrs):
                    self.send(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.send(b"0\r\n\r\n")
            else:
                if not cl.isdigit():
                    raise BadRequest("bad content-length")
                self.send(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                           "Content-Length: %s\r\n%s\r\n" % (
                               cl, "" if keep else "Connection: close\r\n")).encode())
                for piece in self.body(hdrs):
                    self.send(piece)
        elif method == "POST" and path == "/sha256":
            if hget(hdrs, "expect", "").lower() == "100-continue":
                self.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            h = hashlib.sha256()
            n = 0
            for piece in self.body(hdrs):
                h.update(piece)
                n += len(piece)
            self.respond("200 OK", "text/plain", ("%s %d\n" % (h.hexdigest(), n)).encode(), ka)
        else:
            for _ in self.body(hdrs):       # keep the connection in step
                pass
            self.respond("404 Not Found", "text/plain", b"not found\n", ka)
        return keep

    # -- WebSocket (RFC 6455)
    def websocket(self, hdrs):
        key = hget(hdrs, "sec-websocket-key")
        if not key or hget(hdrs, "sec-websocket-version") != "13":
            self.respond("400 Bad Request", "text/plain", b"bad websocket handshake\n",
                         [("Connection", "close")])
            return False
        acc = base64.b64encode(hashlib.sha1(key.encode("latin-1") + WS_GUID).digest())
        self.send(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + acc + b"\r\n\r\n")
        while True:
            hd = b"".join(self.read_exact(2))
            fin_op, ln = hd[0], hd[1]
            op = fin_op & 0x0F
            if fin_op & 0x70:
                return self.ws_close(1002)
            if not ln & 0x80:
                return self.ws_close(1002)          # clients must mask
            n = ln & 0x7F
            if n == 126:
                n = struct.unpack("!H", b"".join(self.read_exact(2)))[0]
            elif n == 127:
                n = struct.unpack("!Q", b"".join(self.read_exact(8)))[0]
            if n > MAX_WS_PAYLOAD:
                return self.ws_close(1009)
            mask = b"".join(self.read_exact(4))
            data = unmask(b"".join(self.read_exact(n)), mask)
            if op == 0x8:                        # close: answer with its code
                self.send(frame(0x88, data[:2]))
                return False
            if op == 0x9:                        # ping
                self.send(frame(0x8A, data))
            elif op == 0xA:                      # pong
                pass
            elif op in (0x0, 0x1, 0x2):          # echo as received
                self.send(frame(fin_op, data))
            else:
                return self.ws_close(1002)

    def ws_close(self, code):
        self.send(frame(0x88, struct.pack("!H", code)))
        return False


def unmask(data, mask):
    if not data:
        return data
    m = (mask * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(m, "big")).to_bytes(len(data), "big")


def frame(b0, data):
    n = len(data)
    if n < 126:
        h = struct.pack("!BB", b0, n)
    elif n < 65536:
        h = struct.pack("!BBH", b0, 126, n)
    else:
        h = struct.pack("!BBQ", b0, 127, n)
    return h + data


def hget(hdrs, name, default=None):
    for k, v in hdrs:
        if k.lower() == name:
            return v
    return default


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request.settimeout(600)
        try:
            Conn(self.request, "%s:%d" % self.client_address[:2]).run()
        except (OSError, ConnectionError, BadRequest, ValueError, struct.error):
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass                                    # a client's failure is its own


def main():
    args = sys.argv[1:]
    bind = "127.0.0.1"
    if "--bind" in args:
        i = args.index("--bind")
        bind = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or not args[0].isdigit():
        sys.stderr.write("usage: webapp.py PORT [--bind ADDR]\n")
        sys.exit(2)
    fam = socket.AF_INET6 if ":" in bind else socket.AF_INET
    Server.address_family = fam
    srv = Server((bind, int(args[0])), Handler)
    print("webapp: listening on %s:%s" % (bind, args[0]), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
