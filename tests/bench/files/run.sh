#!/usr/bin/env bash
# tests/bench/files/run.sh: REST files and exec figures (not a gate), side
# by side in one run, through the real orchestrator to a real sandbox:
#   - upload and download of BENCH_MIB (100) MiB over REST (PUT/GET
#     /v1/sessions/{id}/files/...) versus piping the same bytes through
#     `cat` into the sandbox (the sandbox's own process, from the host:
#     nsenter into its namespaces, local runtime), MiB/s, best of
#     BENCH_ROUNDS (3); targets: REST >= 50% of the pipe and >= 200 MiB/s.
#     Twice: into /workspace (the sandbox's disk) and into /tmp (tmpfs).
#     The agent's PUT is durable (fsync, then rename) and cat is not, so
#     the pipe is also timed followed by `sync FILE` (an fsync): on the
#     disk the upload is bounded by that fsync, on tmpfs it costs nothing
#     and the figure is the transfer path alone.
#   - exec first-byte latency: POST /exec {"command":"echo x"} until its
#     first NDJSON line, p50/p99 of BENCH_EXECS (200); target p50 <= 5 ms
#   - an `echo` round trip: REST exec (whole reply, checked) versus the MCP
#     shell tool in a real MCP session (initialize, notifications/
#     initialized, tools/list, then tools/call with the negotiated
#     MCP-Protocol-Version; each result checked), p50 of BENCH_EXECS
#   B=build bash tests/bench/files/run.sh
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/mcp/orch-lib.sh
MIB=${BENCH_MIB:-100}
ROUNDS=${BENCH_ROUNDS:-3}
NEX=${BENCH_EXECS:-200}
SID=bench-files
if [ "$ORCH_RT" != local ]; then
	echo "skip: the files benchmark needs the local runtime (root, bwrap)"
	exit 0
fi
orch_config "files:" "  max_bytes: 2GiB"
orch_start || { echo "orchestrator did not start"; exit 1; }
rest POST /v1/sessions -H 'Content-Type: application/json' -d "{\"id\":\"$SID\"}" >/dev/null
F="$ORCH_URL/v1/sessions/$SID/files"
A=(-H "Authorization: Bearer $ORCH_KEY")
head -c $((MIB * 1048576)) /dev/urandom > "$T/blob"
id=$(rest GET "/v1/sessions/$SID" | jq -r .sandbox_id)
spid=$(pgrep -P "$(awk '{print $3}' "$ORCH_SBX_DIR/$id/pid")" | head -n1)
# the sandbox's agent: its namespaces, its root
sin() { nsenter -t "$spid" -m -U -- "$@"; }
now() { date +%s%N; }
mibs() { python3 -c "import sys; print('%.0f' % ($MIB / ((int(sys.argv[2]) - int(sys.argv[1])) / 1e9)))" "$1" "$2"; }
best() { tr ' ' '\n' | sort -n | tail -1; }
# One round: REST upload, REST download, then the pipe, into dir ($1),
# appending MiB/s to the lists named up_$2, down_$2, pipe_$2 (and
# pipesync_$2: the pipe followed by an fsync of the file, as the agent's
# atomic write does before its rename).
round() {
	local dir=$1 k=$2 t0 t1
	t0=$(now); curl -s "${A[@]}" -o /dev/null -T "$T/blob" "$F$dir/blob"; t1=$(now)
	eval "up_$k=\"\$up_$k $(mibs "$t0" "$t1")\""
	t0=$(now); curl -s "${A[@]}" -o /dev/null "$F$dir/blob"; t1=$(now)
	eval "down_$k=\"\$down_$k $(mibs "$t0" "$t1")\""
	sin rm -f "$dir/blob"
	t0=$(now); sin sh -c "cat > $dir/pipe" < "$T/blob" || echo "nsenter failed"; t1=$(now)
	eval "pipe_$k=\"\$pipe_$k $(mibs "$t0" "$t1")\""
	ok=$(sin sha256sum "$dir/pipe" | cut -d' ' -f1)
	[ "$ok" = "$SUM" ] || echo "WARNING: the piped bytes differ (the pipe figure is not valid)"
	sin rm -f "$dir/pipe"
	t0=$(now); sin sh -c "cat > $dir/pipe && sync $dir/pipe" < "$T/blob" || echo "nsenter failed"; t1=$(now)
	eval "pipesync_$k=\"\$pipesync_$k $(mibs "$t0" "$t1")\""
	sin rm -f "$dir/pipe"
}
SUM=$(sha256sum "$T/blob" | cut -d' ' -f1)
up_ws=; down_ws=; pipe_ws=; pipesync_ws=; up_tmp=; down_tmp=; pipe_tmp=; pipesync_tmp=
for _ in $(seq 1 "$ROUNDS"); do
	round /workspace ws
	round /tmp tmp
done
# exec first byte and round trips
python3 - "$ORCH_PORT" "$ORCH_KEY" "$SID" "$NEX" <<'PY'
import base64, http.client, json, sys, time
port, key, sid, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
h = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
def conn(): return http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c = conn()
fb, rt = [], []
for i in range(n):
    t0 = time.perf_counter()
    c.request("POST", "/v1/sessions/%s/exec" % sid, json.dumps({"command": "echo x"}), h)
    r = c.getresponse()
    first = r.read(1)                # the first byte of the first line
    fb.append(time.perf_counter() - t0)
    body = first + r.read()
    rt.append(time.perf_counter() - t0)
    lines = [json.loads(l) for l in body.splitlines()]
    out = b"".join(base64.b64decode(l["b"]) for l in lines if l.get("s") == "out")
    if r.status != 200 or lines[-1].get("exit") != 0 or out != b"x\n":
        sys.exit("exec echo x answered %d %r" % (r.status, body[:300]))
mh = dict(h); mh["Accept"] = "application/json, text/event-stream"; mh["X-Session-Id"] = sid
def rpc(msg, want_reply=True):
    c.request("POST", "/mcp", json.dumps(msg), mh)
    r = c.getresponse()
    b = r.read()
    if not want_reply:
        if r.status != 202:
            sys.exit("MCP %s: HTTP %d, not 202" % (msg["method"], r.status))
        return None
    if r.status != 200:
        sys.exit("MCP %s: HTTP %d: %r" % (msg["method"], r.status, b[:200]))
    ct = r.getheader("Content-Type", "")
    if ct.startswith("text/event-stream"):     # the reply is the last data: line
        b = [l[5:] for l in b.decode().splitlines() if l.startswith("data:")][-1]
    o = json.loads(b)
    if "result" not in o:
        sys.exit("MCP %s: %r" % (msg["method"], o))
    return o["result"]
# a real MCP session: initialize, the initialized notification, then calls
# with the negotiated MCP-Protocol-Version
init = rpc({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "bench-files", "version": "1"}}})
mh["MCP-Protocol-Version"] = init["protocolVersion"]
rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}, False)
tools = [t["name"] for t in rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["tools"]]
if "shell" not in tools:
    sys.exit("MCP: no shell tool in %r" % tools)
mc = []
for i in range(n):
    msg = {"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
        "params": {"name": "shell", "arguments": {"command": "echo x"}}}
    t0 = time.perf_counter()
    res = rpc(msg)
    mc.append(time.perf_counter() - t0)
    text = "".join(x.get("text", "") for x in res.get("content", []))
    if res.get("isError") or not text.startswith("x\n"):
        sys.exit("MCP shell echo x answered %r" % res)
def p(v, q): v = sorted(v); return v[min(len(v) - 1, int(len(v) * q))] * 1000
print("exec first byte: p50 %.2f ms p99 %.2f ms (target p50 <= 5 ms)" % (p(fb, .5), p(fb, .99)))
print("echo round trip: REST exec p50 %.2f ms, MCP shell p50 %.2f ms" % (p(rt, .5), p(mc, .5)))
PY
list() { eval "echo \$$1_$2" | best; }
for k in ws tmp; do
	U=$(list up $k); D=$(list down $k); P=$(list pipe $k); S=$(list pipesync $k)
	if [ $k = ws ]; then
		echo "/workspace (the sandbox's disk, ext4 on a loop device; the agent fsyncs before its rename, cat does not):"
	else
		echo "/tmp (tmpfs in the sandbox: fsync costs nothing, so this is the transfer path alone):"
	fi
	echo "  REST upload ${U} MiB/s, download ${D} MiB/s; cat pipe ${P} MiB/s, cat pipe + fsync ${S} MiB/s"
	python3 -c "import sys; u,d,p,s=map(float,sys.argv[1:]); print('  upload %.0f%% of the pipe (%.0f%% of pipe + fsync), download %.0f%% of the pipe' % (100*u/p, 100*u/s, 100*d/p))" "$U" "$D" "$P" "$S"
done
echo "(${MIB} MiB, best of ${ROUNDS}; targets: >= 50% of the pipe and >= 200 MiB/s)"
echo "load: $(uptime)"
