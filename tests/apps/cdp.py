#!/usr/bin/env python3
"""tests/apps/cdp.py: opens a URL in headless chromium and waits, in real
time, until the page has settled, through the DevTools protocol (python3
stdlib only). --dump-dom with --virtual-time-budget does not wait for a
WebSocket in flight, so on a loaded machine it can dump a page whose
WebSocket has not answered yet; this waits for it.

    cdp.py [--timeout S] [--chromium PATH] URL OUT.html [OUT.png]

Settled: the page left about:blank, its readyState is complete and its
body holds no "-pending" text (tests/apps/webapp.py's pages mark what they
still wait for so), or --timeout seconds (default 20) passed. Then the DOM
(document.documentElement.outerHTML) goes to OUT.html and a screenshot to
OUT.png. Chromium runs as root with --no-sandbox, a fresh profile in a
temporary directory, no proxy; it is killed at the end. Exit 0 when the
page settled, 3 when the timeout passed first (files written anyway), 1 on
an error.
"""
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

SETTLED = ("location.href !== 'about:blank' && document.readyState === 'complete' && "
           "!!document.body && document.body.innerText.indexOf('-pending') < 0")


class WS:
    """A minimal RFC 6455 client for the DevTools socket."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.s = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (
                            path, hostport, key)).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("devtools closed the handshake")
            self.buf += d
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("devtools handshake: %r" % head[:100])
        self.id = 0

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("devtools closed")
            self.buf += d

    def _take(self, n):
        self._need(n)
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def send(self, obj):
        data = json.dumps(obj).encode()
        n = len(data)
        if n < 126:
            h = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            h = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            h = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        m = os.urandom(4)
        mm = (m * (n // 4 + 1))[:n]
        self.s.sendall(h + m + (int.from_bytes(data, "big") ^ int.from_bytes(mm, "big")).to_bytes(n, "big"))

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._take(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._take(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._take(8))[0]
            data = self._take(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise EOFError("devtools closed")
            if op in (0x9, 0xA):
                continue
            msg += data
            if b0 & 0x80:
                return json.loads(msg)

    def call(self, method, **params):
        self.id += 1
        my = self.id
        self.send({"id": my, "method": method, "params": params})
        while True:
            r = self.recv()
            if r.get("id") == my:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (method, r["error"]))
                return r.get("result", {})


def evaluate(ws, expr):
    r = ws.call("Runtime.evaluate", expression=expr, returnByValue=True)
    return r.get("result", {}).get("value")


def main():
    args = sys.argv[1:]
    timeout, chromium = 20.0, shutil.which("chromium") or "chromium"
    while args and args[0].startswith("--"):
        if args[0] == "--timeout":
            timeout = float(args[1])
        elif args[0] == "--chromium":
            chromium = args[1]
        else:
            break
        args = args[2:]
    if len(args) not in (2, 3):
        sys.stderr.write(__doc__)
        return 1
    url, out_html = args[0], args[1]
    out_png = args[2] if len(args) == 3 else None
    prof = tempfile.mkdtemp(prefix="cdp-")
    errlog = open(os.path.join(prof, "stderr"), "w+")
    p = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                          "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                          "--no-proxy-server", "--hide-scrollbars", "--mute-audio",
                          "--window-size=1000,640", "--user-data-dir=" + prof,
                          "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                          "about:blank"], stdout=subprocess.DEVNULL, stderr=errlog,
                         start_new_session=True)
    rc = 1
    try:
        port_file = os.path.join(prof, "DevToolsActivePort")
        end = time.time() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if time.time() > end or p.poll() is not None:
                errlog.seek(0)
                raise RuntimeError("chromium did not start: " + errlog.read()[-500:])
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        page = None
        while page is None and time.time() < end:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
                page = next((t for t in json.load(r) if t.get("type") == "page"), None)
            if page is None:
                time.sleep(0.05)
        if page is None:
            raise RuntimeError("no page target")
        ws = WS(page["webSocketDebuggerUrl"])
        ws.call("Page.enable")
        ws.call("Page.navigate", url=url)
        deadline = time.time() + timeout
        settled = False
        while time.time() < deadline:
            if evaluate(ws, SETTLED):
                settled = True
                break
            time.sleep(0.1)
        with open(out_html, "w") as f:
            f.write(evaluate(ws, "document.documentElement.outerHTML") or "")
            f.write("\n")
        if out_png:
            shot = ws.call("Page.captureScreenshot", format="png")
            with open(out_png, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        rc = 0 if settled else 3
    except Exception as e:
        sys.stderr.write("cdp.py: %r\n" % (e,))
        rc = 1
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
        errlog.close()
        shutil.rmtree(prof, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
