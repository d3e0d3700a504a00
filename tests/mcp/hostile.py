#!/usr/bin/env python3
"""tests/mcp/hostile.py: raw-socket clients for tests/e2e/58-orch-hostile.sh.

Each subcommand prints "ok NAME" / "not ok NAME -- why" lines (the runner
counts them).

  hostile.py proto HOST PORT KEY       malformed and hostile requests
  hostile.py hold HOST PORT N SECS MODE [SRC...]   holds N connections
      (MODE idle: nothing sent; partial: half a request head), from the
      source addresses given (round robin), for SECS seconds or until
      stdin closes; prints "held N" once they are up.
"""
import json
import socket
import sys
import time


_left = {}


def resp(sock, timeout=5.0, head_only=False):
    """Reads one response (or until close); returns (status, headers, body).
    Bytes past it are kept for the next call on the same socket."""
    sock.settimeout(timeout)
    data = _left.pop(sock.fileno(), b"")
    while b"\r\n\r\n" not in data:
        try:
            b = sock.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, data
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        hdrs.setdefault(k.strip().lower(), v.strip())
    n = int(hdrs.get("content-length", "-1"))
    if head_only:
        _left[sock.fileno()] = body
        return status, hdrs, b""
    while n >= 0 and len(body) < n:
        try:
            b = sock.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        body += b
    if n >= 0:
        _left[sock.fileno()] = body[n:]
        body = body[:n]
    return status, hdrs, body


def raw(host, port, payload, timeout=5.0, pause=None):
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        if isinstance(payload, (list, tuple)):
            for p in payload:
                s.sendall(p)
                time.sleep(pause or 0.05)
        else:
            s.sendall(payload)
        return resp(s, timeout)
    finally:
        s.close()


def ok(name):
    print("ok " + name, flush=True)


def notok(name, why):
    print("not ok %s -- %s" % (name, why), flush=True)


def expect(name, r, status, shape):
    """shape: 'rpc' (a JSON-RPC error) or 'rest' ({"error":{code,message}})."""
    st, h, body = r
    if st != status:
        return notok(name, "status %r, want %d: %r" % (st, status, body[:200]))
    if not h.get("content-type", "").startswith("application/json"):
        return notok(name, "content-type %r: %r" % (h.get("content-type"), body[:200]))
    try:
        d = json.loads(body)
    except ValueError:
        return notok(name, "body is not JSON: %r" % body[:200])
    if shape == "rpc" and not (d.get("jsonrpc") == "2.0" and "error" in d and
                               isinstance(d["error"].get("code"), int)):
        return notok(name, "not a JSON-RPC error: %r" % d)
    if shape == "rest" and not (isinstance(d.get("error"), dict) and
                                "code" in d["error"] and "message" in d["error"]):
        return notok(name, "not the REST error shape: %r" % d)
    ok(name)


def proto(host, port, key):
    port = int(port)
    auth = ("Authorization: Bearer %s\r\n" % key).encode()
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    mcp = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
           b"Content-Type: application/json\r\nX-Session-Id: hostile\r\n")
    rest = b"GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth
    # framing
    expect("duplicate equal Content-Length: 400 JSON-RPC", raw(host, port, mcp +
           b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(ping), len(ping)) + ping),
           400, "rpc")
    expect("conflicting Content-Length: 400 JSON-RPC", raw(host, port, mcp +
           b"Content-Length: %d\r\nContent-Length: 3\r\n\r\n" % len(ping) + ping), 400, "rpc")
    expect("Content-Length list '5, 5': 400", raw(host, port, mcp +
           b"Content-Length: 5, 5\r\n\r\nhello"), 400, "rpc")
    expect("Content-Length with Transfer-Encoding: 400", raw(host, port, mcp +
           b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 400, "rpc")
    expect("Transfer-Encoding gzip (not chunked): 400", raw(host, port, mcp +
           b"Transfer-Encoding: gzip\r\n\r\nxxxx"), 400, "rpc")
    expect("bad chunk size: 400", raw(host, port, mcp +
           b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"), 400, "rpc")
    expect("duplicate Content-Length on REST: 400 REST shape", raw(host, port,
           b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
           b"Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
           400, "rest")
    expect("garbage request line: 400 JSON", raw(host, port, b"GARBAGE\r\n\r\n"), 400, "rest")
    expect("unknown method on /mcp: 400 JSON-RPC", raw(host, port,
           b"BREW /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 400, "rpc")
    expect("unknown method on /v1: 400 REST shape", raw(host, port,
           b"BREW /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 400, "rest")
    expect("TRACE on /mcp: 405 JSON-RPC", raw(host, port,
           b"TRACE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"\r\n"), 405, "rpc")
    expect("HTTP/2 preface: JSON error", raw(host, port,
           b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 400, "rest")
    expect("HTTP/3.0 version: 505 JSON", raw(host, port,
           b"GET /healthz HTTP/3.0\r\nHost: 127.0.0.1\r\n\r\n"), 505, "rest")
    expect("NUL in a header: 400", raw(host, port,
           b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\x00b\r\n\r\n"), 400, "rest")
    expect("request target not a path: 400", raw(host, port,
           b"GET healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 400, "rest")
    expect("Expect: something else: 400", raw(host, port, mcp +
           b"Expect: 200-ok\r\nContent-Length: %d\r\n\r\n" % len(ping) + ping), 400, "rpc")
    # sizes
    big = b"X-Big: " + b"a" * 70000 + b"\r\n"
    expect("head over http.max_headers: 431 JSON-RPC", raw(host, port, mcp + big +
           b"Content-Length: %d\r\n\r\n" % len(ping) + ping), 431, "rpc")
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    expect("150 headers: 431 REST shape", raw(host, port, rest + many + b"\r\n"), 431, "rest")
    expect("request target of 10 KB: 431", raw(host, port,
           b"GET /v1/sessions/" + b"a" * 10000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"\r\n"),
           431, "rest")
    chunks = b"".join(b"10000\r\n" + b" " * 0x10000 + b"\r\n" for _ in range(20))
    expect("chunked body over http.max_body: 413 JSON-RPC (no HTML)", raw(host, port, mcp +
           b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n", timeout=10), 413, "rpc")
    expect("announced body over http.max_body on REST: 413 REST shape", raw(host, port,
           b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
           b"Content-Type: application/json\r\nContent-Length: 99999999\r\n\r\n"), 413, "rest")
    expect("Content-Length beyond 64 bits: 400", raw(host, port, mcp +
           b"Content-Length: 99999999999999999999999\r\n\r\n"), 400, "rpc")
    # slowloris: a head that never ends gets 408 in the route's shape
    t0 = time.time()
    r = raw(host, port, [mcp[:40], mcp[40:]], timeout=10)
    expect("unfinished head: 408 JSON-RPC after http.request_timeout", r, 408, "rpc")
    if time.time() - t0 > 8:
        notok("408 came in time", "%.1fs" % (time.time() - t0))
    # keep-alive and pipelining still work
    s = socket.create_connection((host, port), timeout=5)
    one = mcp + b"Content-Length: %d\r\n\r\n" % len(ping) + ping
    s.sendall(one + one + one)
    got = [resp(s) for _ in range(3)]
    _left.pop(s.fileno(), None)
    s.close()
    if all(g[0] == 200 and json.loads(g[2]).get("id") == 1 for g in got):
        ok("three pipelined requests: three answers in order")
    else:
        notok("three pipelined requests: three answers in order", repr(got)[:300])
    # a request split byte by byte is parsed whole
    r = raw(host, port, [bytes([b]) for b in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
            pause=0.001)
    if r[0] == 200:
        ok("a head sent byte by byte")
    else:
        notok("a head sent byte by byte", repr(r)[:200])
    # absolute-form target
    r = raw(host, port, b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    if r[0] == 200:
        ok("absolute-form target served")
    else:
        notok("absolute-form target served", repr(r)[:200])
    # HTTP/1.0 without Host: answered and closed
    r = raw(host, port, b"GET /healthz HTTP/1.0\r\n\r\n")
    if r[0] == 200 and r[1].get("connection", "").lower() == "close":
        ok("HTTP/1.0: answered with Connection: close")
    else:
        notok("HTTP/1.0: answered with Connection: close", repr(r)[:200])
    # HEAD: no body, the next response right after the head
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    a = resp(s, head_only=True)
    b = resp(s)
    _left.pop(s.fileno(), None)
    s.close()
    if a[0] == 200 and b[0] == 200 and json.loads(b[2]) == {"ok": True}:
        ok("HEAD: head only, the next response follows at once")
    else:
        notok("HEAD: head only, the next response follows at once", repr((a, b)))


def hold(host, port, n, secs, mode, srcs):
    port, n, secs = int(port), int(n), float(secs)
    socks = []
    srcs = srcs or [None]
    for i in range(n):
        src = srcs[i % len(srcs)]
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if src:
            s.bind((src, 0))
        s.settimeout(5)
        try:
            s.connect((host, port))
        except OSError as e:
            print("connect %d failed: %s" % (i, e), flush=True)
            s.close()
            continue
        if mode == "partial":
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        socks.append(s)
    print("held %d" % len(socks), flush=True)
    t0 = time.time()
    import select
    while time.time() - t0 < secs:
        r, _, _ = select.select([sys.stdin], [], [], 0.5)
        if r and not sys.stdin.readline():
            break
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            b = s.recv(1)
            if b:
                alive += 1
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    print("alive %d" % alive, flush=True)
    for s in socks:
        s.close()


if __name__ == "__main__":
    if sys.argv[1] == "proto":
        proto(*sys.argv[2:5])
    elif sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:])
