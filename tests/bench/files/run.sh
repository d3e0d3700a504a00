#!/usr/bin/env bash
# tests/bench/files/run.sh: REST files and exec figures (not a gate), side
# by side in one run, through the real orchestrator to a real sandbox:
#   - upload and download of BENCH_MIB (100) MiB over REST (PUT/GET
#     /v1/sessions/{id}/files/...) versus piping the same bytes through
#     `cat` into the sandbox (the sandbox's own process, from the host:
#     nsenter into its namespaces, local runtime), MiB/s, best of
#     BENCH_ROUNDS (3); targets: REST >= 50% of the pipe and >= 200 MiB/s
#   - exec first-byte latency: POST /exec {"command":"echo x"} until its
#     first NDJSON line, p50/p99 of BENCH_EXECS (200); target p50 <= 5 ms
#   - an `echo` round trip: REST exec (whole reply) versus the MCP shell
#     tool (tools/call), p50 of BENCH_EXECS
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
up=; down=; pipe=
for _ in $(seq 1 "$ROUNDS"); do
	t0=$(now); curl -s "${A[@]}" -o /dev/null -T "$T/blob" "$F/workspace/blob"; t1=$(now)
	up="$up $(mibs "$t0" "$t1")"
	t0=$(now); curl -s "${A[@]}" -o /dev/null "$F/workspace/blob"; t1=$(now)
	down="$down $(mibs "$t0" "$t1")"
	t0=$(now); sin sh -c 'cat > /workspace/pipe' < "$T/blob" || echo "nsenter failed"; t1=$(now)
	pipe="$pipe $(mibs "$t0" "$t1")"
done
ok=$(sin sha256sum /workspace/pipe | cut -d' ' -f1)
[ "$ok" = "$(sha256sum "$T/blob" | cut -d' ' -f1)" ] || echo "WARNING: the piped bytes differ (the pipe figure is not valid)"
U=$(echo "$up" | best); D=$(echo "$down" | best); P=$(echo "$pipe" | best)
# exec first byte and round trips
python3 - "$ORCH_PORT" "$ORCH_KEY" "$SID" "$NEX" <<'PY'
import http.client, json, sys, time, statistics
port, key, sid, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
h = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
def conn(): return http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c = conn()
fb, rt = [], []
for i in range(n):
    t0 = time.perf_counter()
    c.request("POST", "/v1/sessions/%s/exec" % sid, json.dumps({"command": "echo x"}), h)
    r = c.getresponse()
    r.read(1)                        # the first byte of the first line
    fb.append(time.perf_counter() - t0)
    r.read()
    rt.append(time.perf_counter() - t0)
mh = dict(h); mh["Accept"] = "application/json, text/event-stream"; mh["X-Session-Id"] = sid
mc = []
for i in range(n):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
        "params": {"name": "shell", "arguments": {"command": "echo x"}}})
    t0 = time.perf_counter()
    c.request("POST", "/mcp", body, mh)
    c.getresponse().read()
    mc.append(time.perf_counter() - t0)
def p(v, q): v = sorted(v); return v[min(len(v) - 1, int(len(v) * q))] * 1000
print("exec first byte: p50 %.2f ms p99 %.2f ms (target p50 <= 5 ms)" % (p(fb, .5), p(fb, .99)))
print("echo round trip: REST exec p50 %.2f ms, MCP shell p50 %.2f ms" % (p(rt, .5), p(mc, .5)))
PY
echo "REST upload ${U} MiB/s, download ${D} MiB/s, cat pipe into the sandbox ${P} MiB/s (${MIB} MiB, best of ${ROUNDS}; targets: >= 50% of the pipe and >= 200 MiB/s)"
python3 -c "import sys; u,d,p=map(float,sys.argv[1:]); print('upload %.0f%% of the pipe, download %.0f%%' % (100*u/p, 100*d/p))" "$U" "$D" "$P"
echo "load: $(uptime)"
