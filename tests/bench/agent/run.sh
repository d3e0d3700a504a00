#!/usr/bin/env bash
# tests/bench/agent/run.sh: figures for the in-sandbox agent, run on the
# host: shell round trip for `true` (p50/p99 over N calls on one keep-alive
# connection) beside the floor (the same round trip through a plain bash
# pipe), and the agent's resident memory (idle, and after the calls).
#   B=build bash tests/bench/agent/run.sh [N]
set -u
cd "$(dirname "$0")/../../.."
B=${B:-build}
N=${1:-1000}
AGENT=$B/agent/sandbox-agent
[ -x "$AGENT" ] || { echo "build $AGENT first (make $AGENT)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/agent-bench.XXXXXX")
"$AGENT" --listen "unix:$T/agent.sock" --state "$T/state" --workdir "$T/ws" 2>"$T/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 200); do
	curl -sf --unix-socket "$T/agent.sock" http://a/v1/health >/dev/null && break
	sleep 0.05
done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
rss_idle=$(rss $pid)
shell_pid=$(curl -s --unix-socket "$T/agent.sock" http://a/v1/health | sed 's/.*"shell_pid":\([0-9]*\).*/\1/')

python3 - "$T/agent.sock" "$N" "$pid" <<'PY'
import socket, subprocess, sys, time
sock, n, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]

s = socket.socket(socket.AF_UNIX)
s.connect(sock)

def call(cmd):
    body = b'{"command":"%s"}' % cmd
    req = b"POST /v1/shell HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    t0 = time.perf_counter_ns()
    s.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, rest = buf.split(b"\r\n\r\n", 1)
    cl = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    while len(rest) < cl:
        rest += s.recv(65536)
    t1 = time.perf_counter_ns()
    if b'"exit_code":0' not in rest:
        print("unexpected response:", rest[:200]); sys.exit(1)
    return (t1 - t0) / 1e6

def measure(count):
    return [call(b"true") for i in range(count + 50)][50:]

lat = measure(n)
# With background processes in the shell, each command starts by recording
# their tree (the timeout must tell them from the command's own tree).
call(b"sleep 1000 & sleep 1000 & sleep 1000 &")
lat_bg = measure(max(n // 4, 100))
call(b"kill $(jobs -p); wait")
s.close()

# The floor: the same round trip through a plain bash pipe.
p = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, bufsize=0)
floor = []
for i in range(n + 50):
    t0 = time.perf_counter_ns()
    p.stdin.write(b"true; echo __done\n")
    line = b""
    while not line.endswith(b"__done\n"):
        line += p.stdout.read(4096)
    t1 = time.perf_counter_ns()
    if i >= 50:
        floor.append((t1 - t0) / 1e6)
p.stdin.close(); p.wait()

print("agent shell round trip for `true` (%d calls, keep-alive unix socket):" % n)
print("  p50 %.3f ms  p99 %.3f ms   (target p50 <= 1 ms)" % (pct(lat, 50), pct(lat, 99)))
print("  with 3 background processes in the shell (their tree recorded per command; %d processes visible):" % len([d for d in __import__("os").listdir("/proc") if d.isdigit()]))
print("  p50 %.3f ms  p99 %.3f ms" % (pct(lat_bg, 50), pct(lat_bg, 99)))
print("floor, the same through a plain bash pipe:")
print("  p50 %.3f ms  p99 %.3f ms" % (pct(floor, 50), pct(floor, 99)))
PY
rss_after=$(rss $pid)
# Heavy use: 100 MB of output, a 4 MiB result, a 1 MB upload and download.
curl -s --unix-socket "$T/agent.sock" -d '{"command":"head -c 100000000 /dev/urandom","max_output":4194304}' \
    http://a/v1/shell >/dev/null
head -c 1000000 /dev/urandom >"$T/up"
curl -s --unix-socket "$T/agent.sock" -X PUT --data-binary @"$T/up" "http://a/v1/files/raw?path=up" >/dev/null
curl -s --unix-socket "$T/agent.sock" "http://a/v1/files/raw?path=up" >/dev/null
rss_heavy=$(rss $pid)
echo "agent resident memory: idle ${rss_idle} KiB, after the calls ${rss_after} KiB, after heavy output/uploads ${rss_heavy} KiB   (target <= 2048 KiB)"
[ -n "$shell_pid" ] && [ -r "/proc/$shell_pid/status" ] && \
    echo "  (its bash, a separate process: $(rss "$shell_pid") KiB)"
