#!/usr/bin/env python3
"""tests/chaos/selftest.py: the chaos test's judges catch what they must.

client.py's judge_reply on hostile replies (HTML, a 502 with internal text,
a reply to another id, truncated JSON, an error object without a code) and
check.py on made-up records (a hang, a reset while the orchestrator was up,
a "busy" refusal, a job cut short, a lost file write, a job gone without an
agent kill), each of which must be reported, next to the records of a clean
run, which must pass. Prints ok / not ok lines.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the tree
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from client import judge_reply, JOB_LINES  # noqa: E402

fails = 0


def check(name, cond, why=""):
    global fails
    if cond:
        print("ok " + name)
    else:
        fails += 1
        print("not ok %s -- %s" % (name, why))


good = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "x"}],
                   "structuredContent": {"output": "x"}}}).encode()
cases = [
    ("an HTML 502", 502, "text/html", b"<html><body>Bad Gateway</body></html>", "malformed"),
    ("a 502 with internal text", 502, "text/plain", b"upstream agent socket /var/lib/x refused", "malformed"),
    ("a reply to another id", 200, "application/json", good.replace(b'"id": 3', b'"id": 4'), "malformed"),
    ("truncated JSON", 200, "application/json", good[:-9], "malformed"),
    ("an error without a code", 200, "application/json",
     b'{"jsonrpc":"2.0","id":3,"error":{"message":"x"}}', "malformed"),
    ("a result without content", 200, "application/json", b'{"jsonrpc":"2.0","id":3,"result":{}}', "malformed"),
    ("a JSON-RPC error", 503, "application/json",
     b'{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"draining"}}', "rpc_error"),
    ("a tool error", 200, "application/json",
     b'{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[{"type":"text","text":"no"}]}}', "tool_error"),
    ("a result", 200, "application/json", good, "ok"),
    ("a result over SSE", 200, "text/event-stream",
     b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
     b"event: message\ndata: " + good + b"\n\n", "ok"),
]
for name, st, ct, body, want in cases:
    kind, _ = judge_reply(st, ct, body, 3)
    check("client judges %s as %s" % (name, want), kind == want, "got " + kind)

full = "".join("L%d\n" % i for i in range(1, JOB_LINES + 1)) + "END\n"


def run_check(events, work, verify):
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "events"), "w") as f:
        f.write("".join("%d %s\n" % e if len(e) == 2 else "%d %s %s\n" % e for e in events))
    log = os.path.join(d, "chaos-1.jsonl")
    with open(log, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in work))
    with open(log + ".verify", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in verify))
    out = subprocess.run([sys.executable, os.path.join(here, "check.py"),
                          os.path.join(d, "events"), log], capture_output=True, text=True).stdout
    subprocess.run(["rm", "-rf", d])
    return out


def rec(op, kind, t0, detail="", **kw):
    d = {"t0": t0, "t1": t0 + 10, "op": op, "kind": kind, "detail": detail}
    d.update(kw)
    return d


events = [(1000, "orch_kill"), (2000, "orch_up"), (5000, "agent_kill", "chaos-1")]
work = [rec("shell", "ok", 100 + i * 20) for i in range(25)]
work.append(rec("shell", "conn", 1500, "ConnectionRefusedError"))
verify = [{"op": "final_wait", "job": "j-%d" % i, "started": 200, "kind": "ok", "state": "exited",
           "exit_code": 0, "complete": True, "bytes": len(full)} for i in range(4)]
verify += [{"op": "final_file", "path": "/workspace/chaos/f%d" % i, "want": ["v2\n"], "got": "v2\n",
            "kind": "ok"} for i in range(4)]
out = run_check(events, work, verify)
check("check.py passes a clean run", "not ok" not in out and out.count("\nok ") + out.startswith("ok ") >= 5, out)


def caught(name, check_name, work_extra=(), verify_extra=(), ev=events):
    out = run_check(ev, work + list(work_extra), verify + list(verify_extra))
    line = [l for l in out.split("\n") if check_name in l]
    check("check.py catches " + name, line and line[0].startswith("not ok"), out)


caught("a hang", "every call answered", [rec("shell", "hang", 3000, "no reply in 60s")])
caught("a malformed reply", "every call answered", [rec("shell", "malformed", 3000, "HTTP 502")])
caught("a reset while the orchestrator was up", "every call answered",
       [rec("shell", "conn", 3000, "ConnectionResetError")])
caught("a busy refusal", "refused as busy",
       [rec("shell", "tool_error", 2100, "shell failed: another command is still running in this "
            "session's shell (a concurrent call)")])
caught("a job cut short", "full output",
       verify_extra=[{"op": "final_wait", "job": "j-cut", "started": 6000, "kind": "ok",
                      "state": "exited", "exit_code": 0, "complete": False, "bytes": 30}])
caught("a job cut short even after an agent kill", "full output",
       verify_extra=[{"op": "final_wait", "job": "j-cut", "started": 4500, "kind": "ok",
                      "state": "exited", "exit_code": 0, "complete": False, "bytes": 30}])
caught("a job gone with no agent kill after it", "full output",
       verify_extra=[{"op": "final_wait", "job": "j-gone", "started": 7000, "kind": "tool_error",
                      "detail": "no job 'j-gone' in this session"}])
caught("a lost file write", "file write",
       verify_extra=[{"op": "final_file", "path": "/workspace/chaos/lost", "want": ["v2\n"],
                      "got": None, "kind": "ok"}])
out = run_check(events, work, verify + [{"op": "final_wait", "job": "j-gone", "started": 4500,
                                          "kind": "tool_error", "detail": "no job"}])
check("check.py lets a job go when its agent was killed after it started",
      "not ok chaos: every finished job" not in out, out)
sys.exit(1 if fails else 0)
