#!/usr/bin/env python3
"""gwprobe.py: plays an app gateway on the orchestrator's control channel
(docs/internals/gateway-control.md), to test the orchestrator's side alone.

  gwprobe.py SOCK routes                 the routes after hello, as JSON
  gwprobe.py SOCK open HOST TOKEN [PATH]  open a connection to the app (a
                                          received fd), GET PATH over it,
                                          print the reply; or the refusal
  gwprobe.py SOCK raw LINE...             send these lines after hello and
                                          print what comes back for 1 s
  gwprobe.py SOCK hold SECONDS OUTFILE    stay connected, answer pings, log
                                          every message (one JSON a line)
  gwprobe.py SOCK activity HOST SECONDS   report traffic to HOST every 0.5 s
  gwprobe.py SOCK opens HOST:TOKEN...     one open per argument, all sent at
                                          once (ids 1..N); prints one JSON a
                                          reply as it comes: {id, ok, status,
                                          ms (since sending), got} where got
                                          is what GET / over the received
                                          connection answered (first line)
SOCK is a unix socket path, or tcp:HOST:PORT:TOKENFILE.
"""
import array
import json
import socket
import sys
import time


def connect(spec):
    if spec.startswith("tcp:"):
        _, host, port, tokf = spec.split(":", 3)
        s = socket.create_connection((host, int(port)), timeout=10)
        tok = open(tokf).read().strip()
        return s, False, tok
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(spec)
    return s, True, None


class Chan:
    def __init__(self, spec, hello=None):
        self.s, self.unix, tok = connect(spec)
        self.buf = b""
        self.fds = []
        h = hello if hello is not None else {"op": "hello", "version": 1}
        if tok is not None and "token" not in h:
            h["token"] = tok
        self.send(h)

    def send(self, o):
        self.s.sendall((json.dumps(o) + "\n").encode())

    def recv_line(self, timeout=10):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                return None
            self.s.settimeout(left)
            try:
                if self.unix:
                    fds = array.array("i")
                    data, anc, _, _ = self.s.recvmsg(65536, socket.CMSG_LEN(16 * fds.itemsize))
                    for lvl, typ, d in anc:
                        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                            fds.frombytes(d[:len(d) - (len(d) % fds.itemsize)])
                    self.fds.extend(fds)
                else:
                    data = self.s.recv(65536)
            except socket.timeout:
                return None
            if not data:
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        o = json.loads(line)
        if o.get("op") == "ping":
            self.send({"op": "pong", "n": o.get("n")})
        return o

    def until(self, op, timeout=10):
        seen = []
        end = time.time() + timeout
        while time.time() < end:
            o = self.recv_line(end - time.time())
            if o is None:
                break
            seen.append(o)
            if o.get("op") == op:
                return o, seen
        return None, seen


def main():
    spec, cmd = sys.argv[1], sys.argv[2]
    if cmd == "routes":
        c = Chan(spec)
        _, seen = c.until("synced")
        print(json.dumps([o for o in seen if o.get("op") == "route"]))
    elif cmd == "open":
        host, token = sys.argv[3], sys.argv[4]
        path = sys.argv[5] if len(sys.argv) > 5 else "/"
        c = Chan(spec)
        c.until("synced")
        msg = {"op": "open", "id": 7, "host": host}
        if token != "-":
            msg["token"] = token
        c.send(msg)
        r, _ = c.until("open")
        if r is None:
            print(json.dumps({"error": "no reply"}))
            return 1
        if not r.get("ok"):
            print(json.dumps(r))
            return 0
        if r.get("fd"):
            a = socket.socket(fileno=c.fds.pop(0))
        else:
            h, p = r["addr"].rsplit(":", 1)
            a = socket.create_connection((h, int(p)), timeout=10)
        a.settimeout(10)
        a.sendall(("GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" % (path, host)).encode())
        out = b""
        while True:
            try:
                d = a.recv(65536)
            except socket.timeout:
                break
            if not d:
                break
            out += d
        sys.stdout.write(out.decode("utf-8", "replace"))
    elif cmd == "raw":
        c = Chan(spec)
        c.until("synced")
        for line in sys.argv[3:]:
            c.s.sendall(line.encode() + b"\n")
        end = time.time() + 1
        while time.time() < end:
            o = c.recv_line(end - time.time())
            if o is None:
                break
            print(json.dumps(o))
    elif cmd == "activity":
        host, secs = sys.argv[3], float(sys.argv[4])
        c = Chan(spec)
        c.until("synced")
        end = time.time() + secs
        while time.time() < end:
            c.send({"op": "activity", "hosts": [host]})
            c.recv_line(0.5)
    elif cmd == "opens":
        c = Chan(spec)
        c.until("synced")
        want = sys.argv[3:]
        t0 = time.time()
        for i, ht in enumerate(want, 1):
            host, token = ht.split(":", 1)
            msg = {"op": "open", "id": i, "host": host}
            if token != "-":
                msg["token"] = token
            c.send(msg)
        left = len(want)
        end = t0 + 60
        while left > 0 and time.time() < end:
            o = c.recv_line(end - time.time())
            if o is None:
                break
            if o.get("op") != "open":
                continue
            left -= 1
            r = {"id": o.get("id"), "ok": bool(o.get("ok")), "status": o.get("status"),
                 "ms": int((time.time() - t0) * 1000), "got": None}
            if o.get("fd"):
                # replies and descriptors pair in arrival order
                a = socket.socket(fileno=c.fds.pop(0))
                a.settimeout(10)
                host = want[o["id"] - 1].split(":", 1)[0]
                try:
                    a.sendall(("GET / HTTP/1.0\r\nHost: %s\r\n\r\n" % host).encode())
                    r["got"] = a.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError as e:
                    r["got"] = "error: %s" % e
                a.close()
            print(json.dumps(r), flush=True)
    elif cmd == "hold":
        secs, outf = float(sys.argv[3]), sys.argv[4]
        c = Chan(spec)
        end = time.time() + secs
        with open(outf, "w") as f:
            while time.time() < end:
                o = c.recv_line(min(0.5, max(0.01, end - time.time())))
                if o is not None:
                    f.write(json.dumps(o) + "\n")
                    f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
