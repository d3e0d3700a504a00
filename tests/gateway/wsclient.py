#!/usr/bin/env python3
"""wsclient.py: WebSocket clients through the gateway, for tests.

  wsclient.py --port P --host H [--auth HEADER]... MODE
  echo N        N messages of growing size, each echoed back identically
  hold N --ready F --stop F   N idle WebSockets; at F(stop) each echoes once;
                prints "open N echoed M"
  noread --ready F            opens /ws?flood=1, reads nothing, sleeps
  status        prints the status line of the handshake answer
"""
import argparse, base64, os, socket, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--host", required=True)
ap.add_argument("--auth", action="append", default=[])
ap.add_argument("--ready")
ap.add_argument("--stop")
ap.add_argument("--path", default="/ws")
ap.add_argument("--cafile", help="TLS to the gateway, trusting this CA")
ap.add_argument("mode")
ap.add_argument("n", nargs="?", type=int, default=1)
a = ap.parse_args()


def handshake(path=None):
    s = socket.create_connection(("127.0.0.1", a.port), timeout=20)
    if a.cafile:
        import ssl
        ctx = ssl.create_default_context(cafile=a.cafile)
        s = ctx.wrap_socket(s, server_hostname=a.host.split(":")[0])
    key = base64.b64encode(os.urandom(16)).decode()
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n" % (path or a.path, a.host, key))
    for h in a.auth:
        req += h + "\r\n"
    s.sendall((req + "\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    return s, head.decode("latin-1"), rest


def frame(payload, op=2):
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        hdr = bytes([0x80 | op, 0x80 | n])
    elif n < 65536:
        hdr = bytes([0x80 | op, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        hdr = bytes([0x80 | op, 0x80 | 127]) + n.to_bytes(8, "big")
    return hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def readn(s, buf, n):
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            raise EOFError
        buf += d
    return buf[:n], buf[n:]


def recv_frame(s, buf):
    h, buf = readn(s, buf, 2)
    n = h[1] & 0x7F
    if n == 126:
        e, buf = readn(s, buf, 2)
        n = int.from_bytes(e, "big")
    elif n == 127:
        e, buf = readn(s, buf, 8)
        n = int.from_bytes(e, "big")
    data, buf = readn(s, buf, n)
    return data, buf


if a.mode == "status":
    s, head, _ = handshake()
    print(head.split("\r\n")[0])
elif a.mode == "echo":
    s, head, buf = handshake()
    if " 101 " not in head.split("\r\n")[0]:
        print("no upgrade:", head.split("\r\n")[0])
        sys.exit(1)
    for i in range(a.n):
        msg = os.urandom(1 + i * 997 % 70000)
        s.sendall(frame(msg))
        got, buf = recv_frame(s, buf)
        if got != msg:
            print("echo mismatch at", i)
            sys.exit(1)
    print("echoed", a.n)
elif a.mode == "hold":
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for i in range(a.n):
        s, head, buf = handshake()
        if " 101 " not in head.split("\r\n")[0]:
            print("no upgrade at", i, head.split("\r\n")[0])
            sys.exit(1)
        socks.append((s, buf))
    open(a.ready, "w").write("%d\n" % len(socks))
    while not os.path.exists(a.stop):
        time.sleep(0.1)
    ok = 0
    for s, buf in socks:
        try:
            s.sendall(frame(b"ping"))
            got, _ = recv_frame(s, buf)
            ok += got == b"ping"
        except (OSError, EOFError):
            pass
    print("open %d echoed %d" % (len(socks), ok))
elif a.mode == "noread":
    s, head, _ = handshake("/ws?flood=1")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    open(a.ready, "w").write(head.split("\r\n")[0] + "\n")
    while not os.path.exists(a.stop):
        time.sleep(0.2)
