#!/usr/bin/env python3
"""tests/apps/webapp-check.py: checks tests/apps/webapp.py itself, so a test
that relies on it (through the gateway) knows what the app does on its own.

    python3 webapp-check.py [--no-hostile] HOST:PORT [HOSTHDR [TOKEN]]

Prints "ok NAME" / "not ok NAME -- why" lines (tests/lib/common.sh's
format): every endpoint (/, /static/app.js, /headers, /bytes, /echo with
Content-Length and chunked, /sha256, the WebSocket: text, binary, 200 KB
frames, fragments, ping, close, the Sec-WebSocket-Accept), then hostile
clients (an oversized head, too many fields, a half-sent body, bad chunks,
an unmasked frame, a 2^62-byte frame length, resets mid-response, 300
connections opened and dropped), and at the end that the app still answers.
HOSTHDR and TOKEN (sent as Authorization: Bearer) let it run through the
app gateway as well (with --no-hostile: the gateway answers those itself).
Exit 1 if anything failed.
"""
import base64
import hashlib
import os
import socket
import struct
import sys
import threading

args = sys.argv[1:]
HOSTILE = "--no-hostile" not in args
args = [a for a in args if a != "--no-hostile"]
addr, _, port = args[0].rpartition(":")
PORT = int(port)
HOST = args[1] if len(args) > 1 else args[0]
TOKEN = args[2] if len(args) > 2 else None
failed = 0


def report(name, good, why=""):
    global failed
    if good:
        print("ok webapp: " + name)
    else:
        failed += 1
        print("not ok webapp: %s%s" % (name, " -- " + why if why else ""))
    sys.stdout.flush()


def conn(timeout=20):
    s = socket.create_connection((addr, PORT), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def head_lines(extra=""):
    h = "Host: %s\r\n" % HOST
    if TOKEN:
        h += "Authorization: Bearer %s\r\n" % TOKEN
    return h + extra


class Reader:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(1 << 16)
            if not d:
                raise EOFError("eof")
            self.buf += d

    def take(self, n):
        self.need(n)
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(1 << 16)
            if not d:
                raise EOFError("eof")
            self.buf += d
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def response(self):
        """(status, headers dict lower-case, body) of one response."""
        st = self.line()
        while st == b"":
            st = self.line()
        status = int(st.split()[1])
        hdrs = {}
        while True:
            ln = self.line()
            if ln == b"":
                break
            k, v = ln.decode("latin-1").split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
        if status == 101:
            return status, hdrs, b""
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                n = int(self.line().split(b";")[0], 16)
                if n == 0:
                    while self.line() != b"":
                        pass
                    break
                body += self.take(n)
                self.take(2)
            return status, hdrs, body
        return status, hdrs, self.take(int(hdrs.get("content-length", "0")))


def request(method, path, body=None, extra="", chunked=False):
    s = conn()
    r = Reader(s)
    h = "%s %s HTTP/1.1\r\n%s" % (method, path, head_lines(extra))
    if body is not None and not chunked:
        h += "Content-Length: %d\r\n" % len(body)
    if chunked:
        h += "Transfer-Encoding: chunked\r\n"
    s.sendall(h.encode() + b"\r\n")

    def send_body():
        if chunked:
            for i in range(0, len(body), 100000):
                p = body[i:i + 100000]
                s.sendall(b"%x\r\n%s\r\n" % (len(p), p))
            s.sendall(b"0\r\n\r\n")
        else:
            view = memoryview(body)
            for i in range(0, len(body), 1 << 20):
                s.sendall(view[i:i + (1 << 20)])
    # the body goes out while the answer comes in (/echo streams it back)
    t = threading.Thread(target=send_body, daemon=True) if body is not None else None
    if t:
        t.start()
    out = r.response()
    if t:
        t.join()
    s.close()
    return out


def guarded(name, fn):
    try:
        fn()
    except Exception as e:  # a check that raised failed
        report(name, False, repr(e))


def ws_open():
    s = conn()
    r = Reader(s)
    key = base64.b64encode(os.urandom(16))
    s.sendall(("GET /ws HTTP/1.1\r\n%sUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (
                   head_lines(), key.decode())).encode())
    st, hdrs, _ = r.response()
    want = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()).decode()
    return s, r, st, hdrs.get("sec-websocket-accept") == want


def ws_send(s, b0, data, mask=True):
    n = len(data)
    m = 0x80 if mask else 0
    if n < 126:
        h = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        h = struct.pack("!BBH", b0, m | 126, n)
    else:
        h = struct.pack("!BBQ", b0, m | 127, n)
    if mask:
        k = os.urandom(4)
        km = (k * (n // 4 + 1))[:n]
        data = (int.from_bytes(data, "big") ^ int.from_bytes(km, "big")).to_bytes(n, "big") if n else b""
        h += k
    s.sendall(h + data)


def ws_recv(r):
    b0, b1 = r.take(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", r.take(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", r.take(8))[0]
    return b0, r.take(n)


def endpoints():
    st, h, body = request("GET", "/")
    report("GET / is the page loading /static/app.js", st == 200 and b'src="/static/app.js"' in body)
    st, h, body = request("GET", "/static/app.js")
    report("GET /static/app.js", st == 200 and b"script-ok" in body and "javascript" in h.get("content-type", ""))
    st, h, body = request("GET", "/headers?x=1", extra="X-Probe: probe-42\r\n")
    import json
    j = json.loads(body)
    report("GET /headers shows the request as received",
           st == 200 and j["target"] == "/headers?x=1" and ["X-Probe", "probe-42"] in j["headers"])
    st, h, body = request("GET", "/bytes?n=1000003")
    report("GET /bytes?n=1000003", st == 200 and len(body) == 1000003 and
           body[:300] == bytes(range(256)) + bytes(range(44)))
    big = os.urandom(20 << 20)
    st, h, body = request("POST", "/echo", big)
    report("POST /echo 20 MiB (Content-Length)", st == 200 and body == big)
    st, h, body = request("POST", "/echo", big[:3 << 20], chunked=True)
    report("POST /echo 3 MiB (chunked)", st == 200 and body == big[:3 << 20])
    st, h, body = request("POST", "/sha256", big)
    report("POST /sha256", st == 200 and body.decode().split() == [hashlib.sha256(big).hexdigest(), str(len(big))])
    st, h, body = request("GET", "/nothere")
    report("unknown path -> 404", st == 404)
    # keep-alive: two requests on one connection, pipelined
    s = conn()
    r = Reader(s)
    s.sendall(("GET /headers HTTP/1.1\r\n%s\r\nGET / HTTP/1.1\r\n%s\r\n" % (head_lines(), head_lines())).encode())
    a, b = r.response(), r.response()
    report("keep-alive, pipelined requests answered in order", a[0] == 200 and b"target" in a[2] and b"<html>" in b[2])
    s.close()


def websocket():
    s, r, st, acc = ws_open()
    report("WebSocket handshake: 101 with the right Sec-WebSocket-Accept", st == 101 and acc)
    ws_send(s, 0x81, b"hello")
    report("WebSocket text echo", ws_recv(r) == (0x81, b"hello"))
    d = os.urandom(200000)
    ws_send(s, 0x82, d)
    report("WebSocket 200 KB binary echo", ws_recv(r) == (0x82, d))
    ws_send(s, 0x01, b"frag1-")
    ws_send(s, 0x80, b"frag2")
    report("WebSocket fragments echoed as sent", ws_recv(r) == (0x01, b"frag1-") and ws_recv(r) == (0x80, b"frag2"))
    ws_send(s, 0x89, b"pp")
    report("WebSocket ping -> pong", ws_recv(r) == (0x8A, b"pp"))
    ws_send(s, 0x88, struct.pack("!H", 1000))
    report("WebSocket close -> close", ws_recv(r) == (0x88, struct.pack("!H", 1000)))
    s.close()
    s, r, st, _ = ws_open()
    ws_send(s, 0x81, b"x", mask=False)
    report("WebSocket unmasked client frame -> close 1002", ws_recv(r) == (0x88, struct.pack("!H", 1002)))
    s.close()


def hostile():
    def raw(data, linger_reset=False, read=True):
        s = conn(5)
        try:
            s.sendall(data)
            if linger_reset:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.recv(100)
                return b""
            return s.recv(100) if read else b""
        except OSError:
            return b""
        finally:
            s.close()
    report("hostile: 70 KB head -> 400", raw(b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400"))
    report("hostile: 300 fields -> 400",
           raw(b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 300 + b"\r\n").startswith(b"HTTP/1.1 400"))
    raw(b"POST /echo HTTP/1.1\r\nContent-Length: 1000\r\n\r\nabc", read=False)
    raw(b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    raw(b"POST /sha256 HTTP/1.1\r\nContent-Length: -5\r\n\r\n")
    report("hostile: garbage -> 400", raw(b"\xff\xfe\x00\r\n\r\n").startswith(b"HTTP/1.1 400"))
    raw(b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: x\r\nSec-WebSocket-Version: 13\r\n\r\n"
        b"\x81\xff" + struct.pack("!Q", 1 << 62))
    raw(b"GET /bytes?n=100000000 HTTP/1.1\r\n\r\n", linger_reset=True)
    socks = []
    for _ in range(300):
        try:
            socks.append(conn(5))
        except OSError:
            break
    for x in socks:
        x.close()
    st, h, body = request("GET", "/headers")
    report("still answers after the hostile clients", st == 200 and b"target" in body)


guarded("endpoints", endpoints)
guarded("websocket", websocket)
if HOSTILE:
    guarded("hostile", hostile)
sys.exit(1 if failed else 0)
