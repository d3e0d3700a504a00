#!/usr/bin/env python3
"""tests/chaos/check.py: judges the chaos test's records (tests/e2e/90-chaos.sh).

  check.py EVENTS CLIENT-LOG...

EVENTS has one line per fault or restart, "MS WHAT [SESSION]" with WHAT one
of orch_kill, orch_up, proxy_kill, proxy_up, agent_kill. Each CLIENT-LOG is a
tests/chaos/client.py work log, with its .verify file beside it. Prints
"ok NAME" / "not ok NAME -- why" lines (the harness's format) and a summary
of what the clients saw.
"""
import collections
import json
import sys

SLACK = 300         # ms around a restart within which a reset is clean


def load(path):
    try:
        return [json.loads(l) for l in open(path) if l.strip()]
    except FileNotFoundError:
        return []


def main():
    events = []
    for l in open(sys.argv[1]):
        p = l.split()
        if len(p) >= 2:
            events.append((int(p[0]), p[1], p[2] if len(p) > 2 else None))
    # intervals in which the orchestrator was down
    down, start = [], None
    for t, what, _ in events:
        if what == "orch_kill":
            start = t
        elif what == "orch_up" and start is not None:
            down.append((start - SLACK, t + SLACK))
            start = None
    if start is not None:
        down.append((start - SLACK, 1 << 62))
    agent_kills = collections.defaultdict(list)
    for t, what, sid in events:
        if what == "agent_kill":
            agent_kills[sid].append(t)

    bad, counts, errs, busy = [], collections.Counter(), collections.Counter(), []
    jobs_bad, files_bad, njobs, nfiles, lost_ok = [], [], 0, 0, 0
    for log in sys.argv[2:]:
        sid = log.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        for r in load(log):
            counts[r["kind"]] += 1
            k = r["kind"]
            if k in ("hang", "malformed"):
                bad.append("%s %s %s: %s" % (sid, r["op"], k, r["detail"]))
            elif k == "conn":
                if not any(a <= r["t1"] and r["t0"] <= b for a, b in down):
                    bad.append("%s %s: connection error while the orchestrator was up: %s"
                               % (sid, r["op"], r["detail"]))
            elif k in ("tool_error", "rpc_error"):
                d = r["detail"]
                errs[d[:70]] += 1
                # the shell still held by a call whose orchestrator died
                # (issue 13: recovered after a restart, never "busy")
                if "busy" in d or "still running in this session's shell" in d:
                    busy.append("%s %s at %d: %s" % (sid, r["op"], r["t0"], d[:120]))
        for r in load(log + ".verify"):
            if r["op"] == "final_wait":
                njobs += 1
                if r["kind"] == "ok" and r.get("state") == "exited" and r.get("complete") \
                        and r.get("exit_code") == 0:
                    continue
                # a sandbox whose agent died restarts with no jobs (the
                # tool error says so, orchestrator/mcp/tools.c): a job started
                # before an agent kill of its session may be gone, never cut
                took = any(t >= r["started"] - 1000 for t in agent_kills[sid])
                partial = r["kind"] == "ok" and r.get("state") == "exited" and not r.get("complete")
                if took and not partial and r["kind"] in ("ok", "tool_error"):
                    lost_ok += 1    # its sandbox's agent was killed while it ran
                    continue
                jobs_bad.append("%s job %s: %s" % (sid, r["job"], json.dumps(
                    {k: r.get(k) for k in ("kind", "state", "exit_code", "complete", "bytes", "detail")})))
            elif r["op"] == "final_file":
                nfiles += 1
                if r["kind"] != "ok" or r["got"] not in r["want"]:
                    files_bad.append("%s %s: want one of %r, got %r (%s %s)" % (
                        sid, r["path"], r["want"], r["got"], r["kind"], r.get("detail", "")))

    total = sum(counts.values())
    print("# %d calls: %s" % (total, dict(counts)))
    print("# faults: %s" % dict(collections.Counter(w for _, w, _ in events)))
    for e, n in errs.most_common(12):
        print("# error x%d: %s" % (n, e))
    print("# jobs checked: %d (%d taken by an agent kill), files checked: %d" % (njobs, lost_ok, nfiles))

    def report(name, probs):
        if probs:
            print("not ok %s -- %d: %s" % (name, len(probs), " | ".join(probs[:6])))
        else:
            print("ok %s" % name)
    report("chaos: clients did work", [] if counts["ok"] >= 20 and njobs >= 4 and nfiles >= 4
           else ["only %d ok calls, %d jobs, %d files" % (counts["ok"], njobs, nfiles)])
    report("chaos: every call answered (JSON-RPC result or error) or refused while the "
           "orchestrator was down; none hung or malformed", bad)
    report("chaos: no call refused as busy by a command whose call died with the orchestrator", busy)
    report("chaos: every finished job reports its full output", jobs_bad)
    report("chaos: every answered file write is on disk", files_bad)


main()
