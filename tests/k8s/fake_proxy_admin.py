#!/usr/bin/env python3
"""fake_proxy_admin.py - stands in for one egress-proxy pod's TCP admin
port in the kubernetes runtime's tests, until the proxy has one (the
runtime's side is in orchestrator/runtime/k8s/k8s.c: HTTP POST /admin, one JSON
op per request, "Authorization: Bearer <admin token>", reply JSON with
"ok"). Run by the fake API server's deployment controller for each proxy
pod, on $POD_IP. Like the proxy, its stats carry a boot id made at
start (a restarted stand-in forgets its registrations). It checks the token, checks each op's shape, and appends
what it accepted (or refused) to a JSON-lines record a test reads:
  {"pod": POD_NAME, "ip": POD_IP, "op": ..., "id": ..., ...}
"""
import http.server
import json
import os
import sys

IP = os.environ["POD_IP"]
POD = os.environ["POD_NAME"]
PORT = int(sys.argv[1])
TOKEN = open(sys.argv[2]).read().strip()
RECORD = sys.argv[3]
REG = {}
BOOT = os.urandom(16).hex()    # the proxy's boot id (admin stats)


def record(ent):
    ent.update({"pod": POD, "ip": IP})
    with open(RECORD, "a") as f:
        f.write(json.dumps(ent) + "\n")


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n)
        if self.path != "/v1/admin":
            return self.reply(404, {"ok": False, "error": "not found"})
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            record({"op": "unauthorized"})
            return self.reply(401, {"ok": False, "error": "unauthorized"})
        try:
            req = json.loads(raw)
        except ValueError:
            return self.reply(400, {"ok": False, "error": "bad json"})
        op = req.get("op")
        if op == "ping":
            return self.reply(200, {"ok": True, "version": "fake"})
        if op == "register":
            sec = req.get("secret")
            attrs = req.get("attrs")
            ips = req.get("client_ips")
            if not isinstance(req.get("id"), str) or not isinstance(sec, str) \
                    or len(sec) < 32 or not isinstance(attrs, dict) \
                    or not isinstance(ips, list) or len(ips) != 1 \
                    or set(req) - {"op", "id", "secret", "attrs", "client_ips",
                                   "policy"} \
                    or not isinstance(req.get("policy", {}), dict):
                record({"op": "bad-register", "req": req})
                return self.reply(400, {"ok": False, "error": "bad register"})
            REG[req["id"]] = req
            ent = {"op": "register", "id": req["id"], "secret": sec,
                   "peer": ips[0], "attrs": attrs}
            if "policy" in req:     # issue 16: the session's policy
                ent["policy"] = req["policy"]
            record(ent)
            return self.reply(200, {"ok": True})
        if op == "deregister":
            REG.pop(req.get("id"), None)
            record({"op": "deregister", "id": req.get("id")})
            return self.reply(200, {"ok": True})
        if op == "stats":
            return self.reply(200, {"ok": True, "boot_id": BOOT, "sandboxes": [
                {"id": k} for k in sorted(REG)]})
        return self.reply(400, {"ok": False, "error": "unknown op"})


http.server.ThreadingHTTPServer((IP, PORT), H).serve_forever()
