#!/usr/bin/env python3
"""fakeorch.py: a stand-in for the orchestrator's side of the app gateway's
control channel (docs/internals/gateway-control.md), for tests.

  fakeorch.py --socket PATH --routes FILE [--cmd FIFO] [--log FILE]

Listens on a unix socket (or --listen HOST:PORT with --token T). On hello it
sends welcome, one route per line of the routes file (JSON objects, "token"
given in clear is hashed into token_sha256), synced. It answers open by
connecting to 127.0.0.1:<port> here and passing the fd with SCM_RIGHTS (or,
for a route with "mode":"addr", the address; "mode":"stopped": 503). Every
message it receives is appended to --log as a JSON line.
Commands, one per line on --cmd:
  route {json}    add/replace (sent to connected gateways)
  unroute HOST
  send TEXT       a raw line to every gateway (garbage tests)
  long N          a line of N bytes without newline
  drop            close every gateway connection
  down / up       stop / start accepting (down also drops)
  delay MS        answer opens after MS
"""
import argparse, hashlib, json, os, selectors, socket, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--socket")
ap.add_argument("--listen")
ap.add_argument("--token")
ap.add_argument("--routes", required=True)
ap.add_argument("--cmd")
ap.add_argument("--log")
a = ap.parse_args()

sel = selectors.DefaultSelector()
routes = {}
gws = {}  # sock -> bytearray
delay_ms = 0
pending = []  # (due, sock, reply, fd)
hellod = set()


def log(obj):
    if a.log:
        with open(a.log, "a") as f:
            f.write(json.dumps(obj) + "\n")


def norm(r):
    r = dict(r)
    if "token" in r:
        r["token_sha256"] = hashlib.sha256(r.pop("token").encode()).hexdigest()
    r["op"] = "route"
    return r


def load_routes():
    routes.clear()
    try:
        for line in open(a.routes):
            line = line.strip()
            if line:
                r = norm(json.loads(line))
                routes[r["host"]] = r
    except FileNotFoundError:
        pass


def send(s, obj, fd=None):
    data = (obj if isinstance(obj, (bytes, bytearray)) else json.dumps(obj).encode() + b"\n")
    try:
        s.setblocking(True)
        if fd is not None:
            socket.send_fds(s, [data], [fd])
        else:
            s.sendall(data)
        s.setblocking(False)
    except OSError:
        drop(s)


def drop(s):
    if s in gws:
        sel.unregister(s)
        del gws[s]
        hellod.discard(s)
        s.close()


def bcast(obj):
    for s in list(hellod):
        send(s, obj)


def open_reply(host, oid):
    r = routes.get(host)
    if r is None:
        return {"op": "open", "id": oid, "ok": False, "status": 404, "error": "no such app"}, None
    mode = r.get("mode", "fd")
    if mode == "stopped":
        return {"op": "open", "id": oid, "ok": False, "status": 503,
                "error": "the sandbox is stopped; the next tool call of its session resumes it"}, None
    if mode == "addr" or a.listen:  # TCP: no descriptors to pass
        return {"op": "open", "id": oid, "ok": True, "addr": "127.0.0.1:%d" % r["port"]}, None
    c = socket.socket()
    try:
        c.connect(("127.0.0.1", r["port"]))
    except OSError:
        c.close()
        # the text the orchestrator sends (orchestrator/session/apps.c apps_open)
        return {"op": "open", "id": oid, "ok": False, "status": 502,
                "error": "Nothing listens on port %d in the sandbox: start the app there "
                         "(listening on 0.0.0.0 or 127.0.0.1), then reload" % r["port"]}, None
    return {"op": "open", "id": oid, "ok": True, "fd": True}, c


def on_msg(s, m):
    log(m)
    op = m.get("op")
    if s not in hellod:
        if op != "hello" or m.get("version") != 1 or (a.token and m.get("token") != a.token):
            drop(s)
            return
        hellod.add(s)
        send(s, {"op": "welcome", "version": 1})
        for r in routes.values():
            send(s, r)
        send(s, {"op": "synced"})
        return
    if op == "open":
        reply, c = open_reply(m.get("host"), m.get("id"))
        if delay_ms:
            pending.append((time.time() + delay_ms / 1000.0, s, reply, c))
        else:
            send(s, reply, c.fileno() if c else None)
            if c:
                c.close()


def command(line):
    global delay_ms, lis
    w = line.split(" ", 1)
    if w[0] == "route":
        r = norm(json.loads(w[1]))
        routes[r["host"]] = r
        bcast(r)
    elif w[0] == "unroute":
        routes.pop(w[1], None)
        bcast({"op": "unroute", "host": w[1]})
    elif w[0] == "send":
        for s in list(hellod):
            send(s, w[1].encode() + b"\n")
    elif w[0] == "long":
        for s in list(hellod):
            send(s, b"{" + b"x" * int(w[1]))
    elif w[0] == "drop":
        for s in list(gws):
            drop(s)
    elif w[0] == "down":
        if lis is not None:
            sel.unregister(lis)
            lis.close()
            lis = None
        for s in list(gws):
            drop(s)
    elif w[0] == "up":
        if lis is None:
            lis = listen()
    elif w[0] == "delay":
        delay_ms = int(w[1])
    elif w[0] == "reload":
        load_routes()


def listen():
    if a.socket:
        try:
            os.unlink(a.socket)
        except FileNotFoundError:
            pass
        l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        l.bind(a.socket)
    else:
        h, p = a.listen.rsplit(":", 1)
        l = socket.socket()
        l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        l.bind((h, int(p)))
    l.listen(16)
    l.setblocking(False)
    sel.register(l, selectors.EVENT_READ, "lis")
    return l


load_routes()
lis = listen()
cmdf = None
if a.cmd:
    if not os.path.exists(a.cmd):
        os.mkfifo(a.cmd)
    cmdf = os.open(a.cmd, os.O_RDWR | os.O_NONBLOCK)
    sel.register(cmdf, selectors.EVENT_READ, "cmd")
cmdbuf = b""
print("ready", flush=True)
while True:
    for key, _ in sel.select(0.05):
        if key.data == "lis":
            s, _ = lis.accept()
            s.setblocking(False)
            gws[s] = bytearray()
            sel.register(s, selectors.EVENT_READ, "gw")
        elif key.data == "cmd":
            cmdbuf += os.read(cmdf, 65536)
            while b"\n" in cmdbuf:
                line, cmdbuf = cmdbuf.split(b"\n", 1)
                if line.strip():
                    command(line.decode())
        else:
            s = key.fileobj
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            if not d:
                drop(s)
                continue
            buf = gws[s]
            buf += d
            while b"\n" in buf:
                line, _, rest = bytes(buf).partition(b"\n")
                buf[:] = rest
                try:
                    on_msg(s, json.loads(line))
                except ValueError:
                    drop(s)
                    break
                if s not in gws:
                    break
    now = time.time()
    for p in [p for p in pending if p[0] <= now]:
        pending.remove(p)
        _, s, reply, c = p
        if s in gws:
            send(s, reply, c.fileno() if c else None)
        if c:
            c.close()
