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
An optional fourth argument names a JSON file of named credentials
(issue 30), {NAME: {"form", "hosts"?, "user"?, "env"?: [VAR...],
"client"?: {...}, "default"?: true}}: a register whose policy lists some
of them (or, without a "credentials" list, those marked default) is
answered with them as the proxy does ("credentials": NAME: form, hosts, user,
placeholder, key_id for sigv4, env {VAR: placeholder}, client), each
placeholder "PXC" and 29 base32 characters of a hash of the id and name.
"""
import base64
import hashlib
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
CREDS = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else {}


def placeholder(sid, name, part):
    h = hashlib.sha256(("%s\0%s\0%d" % (sid, name, part)).encode()).digest()
    return "PXC" + base64.b32encode(h).decode()[:29]


def cred_reply(sid, policy):
    out = {}
    names = (policy or {}).get("credentials")
    if names is None:   # no list: the credentials declared "default": true
        names = [n for n, d in CREDS.items() if d.get("default")]
    for name in names:
        d = CREDS.get(name)
        if d is None:
            continue
        one = {"form": d["form"], "hosts": d.get("hosts", []),
               "placeholder": placeholder(sid, name, 0)}
        if "user" in d:
            one["user"] = d["user"]
        if d["form"] == "sigv4":
            one["key_id"] = placeholder(sid, name, 1)
        if "env" in d:
            one["env"] = {v: one["placeholder"] for v in d["env"]}
        if "client" in d:
            one["client"] = d["client"]
        out[name] = one
    return out
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
            if CREDS:
                return self.reply(200, {"ok": True, "credentials":
                                        cred_reply(req["id"], req.get("policy"))})
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
