#!/usr/bin/env python3
"""upstream.py: the app behind the gateway in tests.

  upstream.py --port N [--garbage]

HTTP/1.1 with keep-alive, one thread per connection:
  GET  /echo...      JSON {method, target, headers [[k, v]...], conn, peer}
                      (conn: a number per TCP connection, to see reuse)
  POST /upload       reads the body (Content-Length or chunked), answers
                      JSON {sha256, bytes}
  GET  /download?n=B[&chunked=1]   B deterministic bytes (see blob())
  GET  /setcookie    Set-Cookie sbx-app=evil, __Host-sbx-app=evil, other=1
  GET  /close        a body delimited by closing the connection
  GET  /ws[?flood=1] WebSocket: echoes each frame; flood: sends 64 KiB
                      binary frames as fast as it can, forever
  GET  /slow         answers after 3 s
  GET  /bighead      a response head of 40 KB
--garbage: answers every request with bytes that are not HTTP.
"""
import argparse, base64, hashlib, json, socket, sys, threading, itertools

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--garbage", action="store_true")
a = ap.parse_args()
threading.stack_size(256 * 1024)
conn_ids = itertools.count(1)
BLOCK = hashlib.sha256(b"gateway-test").digest() * 2048  # 64 KiB


def blob_iter(n):
    while n > 0:
        k = min(n, len(BLOCK))
        yield BLOCK[:k]
        n -= k


class Conn:
    def __init__(self, s):
        self.s = s
        self.buf = b""

    def fill(self):
        d = self.s.recv(262144)
        if not d:
            raise EOFError
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l

    def read(self, n):
        out = []
        while n > 0:
            if not self.buf:
                self.fill()
            k = min(n, len(self.buf))
            out.append(self.buf[:k])
            self.buf = self.buf[k:]
            n -= k
        return b"".join(out)

    def body_chunks(self, hdrs):
        te = hdrs.get("transfer-encoding", "")
        if "chunked" in te.lower():
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line():
                        pass
                    return
                yield self.read(size)
                self.line()
        n = int(hdrs.get("content-length", "0"))
        while n > 0:
            if not self.buf:
                self.fill()
            k = min(n, len(self.buf))
            yield self.buf[:k]
            self.buf = self.buf[k:]
            n -= k


def respond(s, status, body, ctype="application/json", extra=()):
    h = ["HTTP/1.1 %s" % status, "Content-Type: " + ctype, "Content-Length: %d" % len(body)]
    h += list(extra)
    s.sendall(("\r\n".join(h) + "\r\n\r\n").encode() + body)


def ws_frame(payload, op=2):
    n = len(payload)
    if n < 126:
        hdr = bytes([0x80 | op, n])
    elif n < 65536:
        hdr = bytes([0x80 | op, 126]) + n.to_bytes(2, "big")
    else:
        hdr = bytes([0x80 | op, 127]) + n.to_bytes(8, "big")
    return hdr + payload


def ws(c, hdrs, flood):
    key = hdrs.get("sec-websocket-key", "")
    acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    c.s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: " + acc + b"\r\n\r\n")
    if flood:
        f = ws_frame(b"F" * 65536)
        while True:
            c.s.sendall(f)
    while True:
        b0, b1 = c.read(2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(c.read(2), "big")
        elif n == 127:
            n = int.from_bytes(c.read(8), "big")
        mask = c.read(4) if b1 & 0x80 else b"\0\0\0\0"
        data = bytes(x ^ mask[i % 4] for i, x in enumerate(c.read(n)))
        op = b0 & 0x0F
        if op == 8:
            c.s.sendall(ws_frame(data, 8))
            return
        c.s.sendall(ws_frame(data, op))


def serve(s, peer):
    cid = next(conn_ids)
    c = Conn(s)
    try:
        while True:
            reqline = c.line()
            if not reqline:
                continue
            method, target, ver = reqline.decode("latin-1").split(" ")
            hl, hdrs = [], {}
            while True:
                l = c.line()
                if not l:
                    break
                k, v = l.decode("latin-1").split(":", 1)
                hl.append([k, v.strip()])
                hdrs[k.lower()] = v.strip()
            if a.garbage:
                s.sendall(b"\x00\x01garbage that is not HTTP\r\n\r\n" * 10)
                return
            path = target.split("?")[0]
            q = dict(p.split("=", 1) for p in target.split("?", 1)[1].split("&") if "=" in p) if "?" in target else {}
            if path == "/upload":
                h, n = hashlib.sha256(), 0
                for chunk in c.body_chunks(hdrs):
                    h.update(chunk)
                    n += len(chunk)
                respond(s, "200 OK", json.dumps({"sha256": h.hexdigest(), "bytes": n}).encode())
            elif path == "/download":
                n = int(q.get("n", "0"))
                if q.get("chunked"):
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n")
                    for b in blob_iter(n):
                        s.sendall(b"%x\r\n" % len(b) + b + b"\r\n")
                    s.sendall(b"0\r\n\r\n")
                else:
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                              b"Content-Length: %d\r\n\r\n" % n)
                    for b in blob_iter(n):
                        s.sendall(b)
            elif path == "/setcookie":
                respond(s, "200 OK", b"{}", extra=("Set-Cookie: sbx-app=evil; Path=/",
                                                   "Set-Cookie: __Host-sbx-app=evil; Path=/; Secure",
                                                   "Set-Cookie: other=1; Path=/"))
            elif path == "/close":
                s.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
                return
            elif path == "/ws":
                for _ in c.body_chunks(hdrs):
                    pass
                ws(c, hdrs, q.get("flood") == "1")
                return
            elif path == "/bighead":
                respond(s, "200 OK", b"{}", extra=("X-Big: " + "b" * 40000,))
            elif path == "/slow":
                import time
                time.sleep(3)
                respond(s, "200 OK", b"slow")
            else:
                for _ in c.body_chunks(hdrs):
                    pass
                respond(s, "200 OK", json.dumps({"method": method, "target": target, "headers": hl,
                                                  "conn": cid, "peer": peer[0]}).encode())
            if hdrs.get("connection", "").lower() == "close":
                return
    except (EOFError, OSError, ValueError):
        pass
    finally:
        try:
            s.close()
        except OSError:
            pass


import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", a.port))
l.listen(1024)
print("ready", flush=True)
while True:
    s, peer = l.accept()
    threading.Thread(target=serve, args=(s, peer), daemon=True).start()
