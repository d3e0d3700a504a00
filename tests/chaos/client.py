#!/usr/bin/env python3
"""tests/chaos/client.py: one MCP-over-HTTP client of the chaos test
(tests/e2e/90-chaos.sh). Raw JSON-RPC POSTs to /mcp, the way mcp_tool in
tests/mcp/orch-lib.sh sends them, one call at a time for one session, until
a deadline; every call is written as one JSON line to OUT:

  {"t0": ms, "t1": ms, "op": ..., "kind": ..., "detail": ...}

kind is what came back, judged here and again by tests/chaos/check.py:
  ok         a JSON-RPC result that says what the call did (the marker
             echoed, the file written, the job's id)
  tool_error a JSON-RPC result with isError (text in detail)
  rpc_error  a JSON-RPC error object
  conn       no HTTP reply: refused, reset or closed mid-reply (the
             orchestrator was down or killed; check.py decides)
  hang       no reply within the bound (--bound seconds)
  malformed  an HTTP reply that is not a JSON-RPC response to this id, or a
             result that contradicts the call (wrong marker, short output)

  client.py work URL KEY SESSION SECONDS OUT     the mixed workload
  client.py verify URL KEY SESSION OUT JOBS FILES  after the chaos: every job
             and file the workload recorded (read from OUT) is checked
"""
import http.client
import json
import random
import socket
import sys
import time
import urllib.parse

BOUND = 60.0        # seconds: a call unanswered this long is a hang
JOB_LINES = 300     # lines every background job prints
ms = lambda: int(time.time() * 1000)


class Client:
    def __init__(self, url, key, sid):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.path = u.hostname, u.port, u.path or "/mcp"
        self.key, self.sid, self.n = key, sid, 0

    def call(self, name, args):
        """One tools/call: (kind, result-or-detail)."""
        self.n += 1
        rid = self.n
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": name, "arguments": args}})
        c = http.client.HTTPConnection(self.host, self.port, timeout=BOUND)
        try:
            c.request("POST", self.path, body=body, headers={
                "Authorization": "Bearer " + self.key,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18",
                "X-Session-Id": self.sid})
            r = c.getresponse()
            raw = r.read()
            status, ctype = r.status, r.getheader("Content-Type", "")
        except socket.timeout:
            return "hang", "no reply in %ds" % BOUND
        except (ConnectionError, http.client.HTTPException, OSError) as e:
            return "conn", "%s: %s" % (type(e).__name__, e)
        finally:
            c.close()
        return judge_reply(status, ctype, raw, rid)


def judge_reply(status, ctype, raw, rid):
    text = raw.decode("utf-8", "replace")
    msg = None
    try:
        if ctype.startswith("text/event-stream"):
            for ev in text.split("\n\n"):
                data = "".join(l[5:].lstrip() for l in ev.split("\n") if l.startswith("data:"))
                if data:
                    m = json.loads(data)
                    if m.get("id") == rid:
                        msg = m
        else:
            msg = json.loads(text)
    except ValueError:
        return "malformed", "HTTP %d %s not JSON: %r" % (status, ctype, text[:200])
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or msg.get("id") != rid:
        return "malformed", "HTTP %d: not a JSON-RPC reply to id %d: %r" % (status, rid, text[:200])
    if "error" in msg:
        e = msg["error"]
        if not isinstance(e, dict) or not isinstance(e.get("code"), int):
            return "malformed", "bad error object: %r" % text[:200]
        return "rpc_error", "HTTP %d %d %s" % (status, e["code"], e.get("message", ""))
    res = msg.get("result")
    if not isinstance(res, dict) or not isinstance(res.get("content"), list):
        return "malformed", "HTTP %d: result without content: %r" % (status, text[:200])
    if status != 200:
        return "malformed", "HTTP %d with a result" % status
    txt = "".join(c.get("text", "") for c in res["content"] if isinstance(c, dict))
    if res.get("isError"):
        return "tool_error", txt[:300]
    return "ok", res


def job_output_ok(res):
    """A finished job's reply: full output or the reason it is not."""
    sc = res.get("structuredContent") or {}
    out = sc.get("output", "")
    want = "".join("L%d\n" % i for i in range(1, JOB_LINES + 1)) + "END\n"
    return out == want, sc


def work(url, key, sid, secs, out):
    cl = Client(url, key, sid)
    rnd = random.Random(sid)
    end = time.time() + secs
    jobs, fileno, i = [], 0, 0
    f = open(out, "a", buffering=1)

    def rec(op, kind, detail, t0, **kw):
        d = {"t0": t0, "t1": ms(), "op": op, "kind": kind,
             "detail": detail if isinstance(detail, str) else ""}
        d.update(kw)
        f.write(json.dumps(d) + "\n")

    while time.time() < end:
        i += 1
        op = ("shell", "async", "edit", "wait", "slow")[i % 5] if i > 1 else "shell"
        t0 = ms()
        if op in ("shell", "slow"):
            # slow: a command the orchestrator's kill is likely to hit
            mark = "m-%s-%d-%d" % (sid, i, rnd.randrange(1 << 30))
            kind, r = cl.call("shell", {"command": "mkdir -p /workspace/chaos; %secho %s; echo done" % (
                "sleep 2; " if op == "slow" else "", mark), "timeout": 30})
            if kind == "ok":
                o = (r.get("structuredContent") or {}).get("output", "")
                if mark + "\ndone\n" not in o:
                    kind, r = "malformed", "shell output lacks its marker: %r" % json.dumps(r)[:300]
            rec(op, kind, r, t0)
        elif op == "async":
            cmd = "for i in $(seq 1 %d); do echo L$i; done; sleep 0.%d; echo END" % (
                JOB_LINES, rnd.randrange(1, 9))
            kind, r = cl.call("shell_async", {"command": cmd})
            jid = None
            if kind == "ok":
                jid = (r.get("structuredContent") or {}).get("job_id")
                if not jid:
                    kind, r = "malformed", "shell_async without a job_id: %r" % json.dumps(r)[:300]
                else:
                    jobs.append(jid)
            rec("async", kind, r, t0, job=jid)
        elif op == "edit":
            fileno += 1
            path = "/workspace/chaos/%s-%d.txt" % (sid, fileno)
            kind, r = cl.call("str_replace_based_edit_tool",
                              {"command": "create", "path": path,
                               "file_text": "v1 %s\n" % path})
            rec("create", kind, r, t0, path=path, content="v1 %s\n" % path)
            if kind == "ok":
                t0 = ms()
                kind, r = cl.call("str_replace_based_edit_tool",
                                  {"command": "str_replace", "path": path,
                                   "old_str": "v1 ", "new_str": "v2 "})
                rec("replace", kind, r, t0, path=path, content="v2 %s\n" % path)
        elif op == "wait" and jobs:
            jid = jobs[rnd.randrange(len(jobs))]
            kind, r = cl.call("shell_wait", {"job_id": jid, "timeout": 10})
            if kind == "ok":
                good, sc = job_output_ok(r)
                if sc.get("state") == "exited" and not good:
                    kind, r = "malformed", "job %s exited with partial output (%d bytes)" % (
                        jid, len(sc.get("output", "")))
            rec("wait", kind, r, t0, job=jid)
        # a think time; longer while the daemon is restarting: no spinning
        time.sleep(0.2 if kind in ("conn", "rpc_error") else 0.05)


def verify(url, key, sid, out):
    """Every job that got an id and every file whose write was answered."""
    cl = Client(url, key, sid)
    recs = [json.loads(l) for l in open(out)]
    f = open(out + ".verify", "w", buffering=1)
    for r in recs:
        if r["op"] == "async" and r["kind"] == "ok":
            t0 = ms()
            for _ in range(3):      # a call refused as busy right after restart
                kind, res = cl.call("shell_wait", {"job_id": r["job"], "timeout": 10})
                if kind != "conn":
                    break
                time.sleep(1)
            d = {"t0": t0, "t1": ms(), "op": "final_wait", "job": r["job"],
                 "started": r["t1"], "kind": kind}
            if kind == "ok":
                good, sc = job_output_ok(res)
                d.update(state=sc.get("state"), exit_code=sc.get("exit_code"),
                         complete=good, bytes=len(sc.get("output", "")))
            else:
                d["detail"] = res if isinstance(res, str) else ""
            f.write(json.dumps(d) + "\n")
    # what each file may hold: the last answered write's content; after a
    # write whose answer was lost or refused, the content before or after it
    want = {}
    for r in recs:
        if r["op"] not in ("create", "replace"):
            continue
        before = want.get(r["path"], [None])
        if r["kind"] == "ok":
            want[r["path"]] = [r["content"]]
        elif r["op"] == "create" or before != [None]:
            want[r["path"]] = before + [r["content"]]
    for path, content in sorted(want.items()):
        kind, res = cl.call("shell", {"command": "cat %s 2>/dev/null || echo ABSENT" % path})
        got = (res.get("structuredContent") or {}).get("output") if kind == "ok" else None
        if got == "ABSENT\n":
            got = None
        f.write(json.dumps({"op": "final_file", "path": path, "want": content,
                            "got": got, "kind": kind,
                            "detail": res if isinstance(res, str) else ""}) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "work":
        work(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6])
    else:
        verify(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
