#!/usr/bin/env bash
# 37-agent-stream: the streamed endpoints of issue 15 against the real agent
# with real curl: raw GET/PUT round trips by sha256 (1 byte to 100 MiB, the
# agent's memory flat), chunked PUT, the --max-upload cap, a client gone
# mid-PUT, append, mode, a full filesystem (507 no_space), listings with
# version stamps, delete, exec (streams apart, first output before the end,
# exit codes, 124 and the tree killed, stdin, env/cwd, disconnect kills,
# 20 at once, the output cap, bad input) and the shell's output tail; and
# the kill domains of issue 28 (--cgroup: fork bombs under an exec's and the
# shell's timeout, a full process limit brought back by the next call).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

check "agent starts (--max-upload 200 MiB)" start_agent --max-upload $((200 * 1024 * 1024))
WS=$(cd "$T/ws" && pwd -P)
C=(curl -s --unix-socket "$SOCK")
# put QUERY FILE [curl args...]: PUT /v1/files/raw?QUERY; body/status as api.
put() {
	local q=$1 f=$2; shift 2
	"${C[@]}" -X PUT "$@" --data-binary @"$f" -o "$T/body" -w '%{http_code}' \
	    "http://a/v1/files/raw?$q" >"$T/status"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
rss_kb() { awk '/^VmHWM/ {print $2}' "/proc/$AGENT_PID/status"; }
temps() { find "$WS" -name '.*.agent-*' | wc -l; }

# 1. raw round trips by sha256; memory stays flat.
head -c 1 /dev/urandom >"$T/f1"
head -c $((1024 * 1024)) /dev/urandom >"$T/f2"
head -c $((100 * 1024 * 1024)) /dev/urandom >"$T/f3"
for f in f1 f2 f3; do
	put "path=rt/$f" "$T/$f"
	check "put $f: 200, bytes, created" test "$(status)" = 200 -a "$(j .bytes)" = "$(stat -c %s "$T/$f")" -a "$(j .created)" = true
	"${C[@]}" -D "$T/hdr" -o "$T/got" "http://a/v1/files/raw?path=rt/$f"
	check "get $f: same sha256" test "$(sha "$T/got")" = "$(sha "$T/$f")"
	check "get $f: Content-Length and X-File-Size" bash -c "grep -qi '^Content-Length: $(stat -c %s "$T/$f")' '$T/hdr' && grep -qi '^X-File-Size: $(stat -c %s "$T/$f")' '$T/hdr'"
done
check "get: X-File-Version is the put's version" grep -qi "^X-File-Version: $(j .version)" "$T/hdr"
check "get: X-File-Mode 0644" grep -qi '^X-File-Mode: 0644' "$T/hdr"
check "100 MiB through PUT and GET: agent peak RSS under 20 MiB ($(rss_kb) kB)" test "$(rss_kb)" -lt 20480
"${C[@]}" -o "$T/got" "http://a/v1/files/raw?path=rt/f2&offset=1000&length=5000"
check "get offset/length: the right slice" test "$(sha "$T/got")" = "$(tail -c +1001 "$T/f2" | head -c 5000 | sha256sum | cut -d' ' -f1)"
"${C[@]}" -o "$T/got" -w '%{http_code}' "http://a/v1/files/raw?path=rt/f1&offset=99" >"$T/status"
check "get offset beyond the size: 200, empty" test "$(status)" = 200 -a ! -s "$T/got"
mkdir -p "$WS/adir"; mkfifo "$WS/afifo"
api GET "/v1/files/raw?path=adir"
check "get a directory: 422 not a regular file" test "$(status)" = 422 -a "$(j '.error.message | test("not a regular file")')" = true
api GET "/v1/files/raw?path=afifo"
check "get a FIFO: 422 at once (not hung)" test "$(status)" = 422
api GET "/v1/files/raw?path=rt/f1&offset=-1"
check "get bad offset: 400" test "$(status)" = 400

# 2. chunked PUT, the cap, append, mode, a client gone mid-body.
"${C[@]}" -X PUT -H 'Transfer-Encoding: chunked' --data-binary @"$T/f2" -o "$T/body" \
    -w '%{http_code}' "http://a/v1/files/raw?path=rt/chunked" >"$T/status"
check "chunked put: 200, exact bytes" test "$(status)" = 200 -a "$(sha "$WS/rt/chunked")" = "$(sha "$T/f2")"
cat "$T/f2" | "${C[@]}" -X PUT -T - -o "$T/body" -w '%{http_code}' \
    "http://a/v1/files/raw?path=rt/piped" >"$T/status"
check "put from a pipe (curl -T -, chunked): exact bytes" test "$(status)" = 200 -a "$(sha "$WS/rt/piped")" = "$(sha "$T/f2")"
truncate -s $((200 * 1024 * 1024 + 1)) "$T/over"
put "path=rt/over" "$T/over"
check "put over --max-upload (Content-Length): 413 at the head" test "$(status)" = 413 -a "$(j .error.code)" = too_large
check "put over the cap: nothing written" test ! -e "$WS/rt/over" -a "$(temps)" = 0
head -c $((201 * 1024 * 1024)) /dev/zero | "${C[@]}" -X PUT -T - -o "$T/body" -w '%{http_code}' \
    "http://a/v1/files/raw?path=rt/f1" >"$T/status"
check "chunked put over the cap: 413" test "$(status)" = 413
check "chunked over the cap: target untouched, temp removed" test "$(sha "$WS/rt/f1")" = "$(sha "$T/f1")" -a "$(temps)" = 0
printf 'abc' >"$T/a1"; printf 'def' >"$T/a2"
put "path=rt/app" "$T/a1"
put "path=rt/app&append=1" "$T/a2"
check "append: old then new, size 6, created false" test "$(cat "$WS/rt/app")" = abcdef -a "$(j .size)" = 6 -a "$(j .created)" = false
put "path=rt/new-append&append=1" "$T/a2"
check "append to a missing file creates it" test "$(cat "$WS/rt/new-append")" = def -a "$(j .created)" = true
put "path=rt/mode&mode=0750" "$T/a1"
check "mode=0750 applied" test "$(stat -c %a "$WS/rt/mode")" = 750
put "path=rt/mode" "$T/a2"
check "no mode: the old mode kept" test "$(stat -c %a "$WS/rt/mode")" = 750
cp "$T/f1" "$T/keep"
python3 - "$SOCK" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"PUT /v1/files/raw?path=rt/f1 HTTP/1.1\r\nHost: a\r\nContent-Length: 10000000\r\n\r\n" + b"x" * 3000000)
time.sleep(0.3); s.close()
EOF
sleep 0.3
check "client gone mid-PUT: target untouched" test "$(sha "$WS/rt/f1")" = "$(sha "$T/keep")"
check "client gone mid-PUT: no temp file left" test "$(temps)" = 0
check "client gone mid-PUT: agent fine" agent_alive
# raw BYTES: the status code of the agent's answer to exactly these bytes
raw() { python3 "$TOP/tests/fixtures/rawhttp.py" "$SOCK" "$1" | head -n 1 | cut -d' ' -f2; }
raw 'PUT /v1/files/raw?path=rt/badchunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\nzz\r\n' >"$T/bad"
check "malformed chunked: 400, nothing left" test "$(cat "$T/bad")" = 400 -a ! -e "$WS/rt/badchunk" -a "$(temps)" = 0
api POST /v1/shell '{"command":"true"}'
raw 'POST /v1/shell HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n' >"$T/te"
check "chunked on another route: still 501" test "$(cat "$T/te")" = 501

# 3. a full filesystem: 507 no_space, nothing left (a small tmpfs).
if mkdir -p "$WS/full" && mount -t tmpfs -o size=1m tmpfs "$WS/full" 2>/dev/null; then
	on_exit "mountpoint -q '$WS/full' && umount '$WS/full'"
	printf 'old' >"$WS/full/t"
	put "path=full/t" "$T/f2"
	check "ENOSPC: 507 no_space naming the path" test "$(status)" = 507 -a "$(j .error.code)" = no_space -a "$(j '.error.message | test("full/t.*full")')" = true
	check "ENOSPC: target untouched, no temp" test "$(cat "$WS/full/t")" = old -a "$(ls -A "$WS/full")" = t
	umount "$WS/full"
else
	skip "ENOSPC" "cannot mount a tmpfs here"
fi

# 4. listing.
rm -rf "$WS/L"; mkdir -p "$WS/L/b/c" "$T/outside"; printf 1 >"$WS/L/z"; printf 2 >"$WS/L/a"
printf 3 >"$WS/L/b/c/f"; ln -s "$T/outside" "$WS/L/lnk"; touch "$T/outside/secret"; mkfifo "$WS/L/fifo"
api GET "/v1/files/list?path=L&recursive=1"
check "list: depth first, sorted" test "$(j '[.entries[].name] | join(",")')" = "a,b,c,f,fifo,lnk,z"
check "list: types" test "$(j '[.entries[].type] | join(",")')" = "file,dir,dir,file,other,symlink,file"
check "list: symlink target, not followed" test "$(j '.entries[] | select(.name=="lnk") | .target')" = "$T/outside" -a "$(j '[.entries[].name] | index("secret")')" = null
check "list: version on files only, 16 hex" test "$(j '[.entries[] | select(.type=="file") | .version | test("^[0-9a-f]{16}$")] | all')" = true -a "$(j '[.entries[] | select(.type!="file") | .version] | map(select(. != null)) | length')" = 0
check "list: path, mode, size, mtime_ms" test "$(j '.entries[0] | (.path | endswith("/L/a")) and .mode == "0644" and .size == 1 and .mtime_ms > 0')" = true
v1=$(j '.entries[] | select(.name=="a") | .version')
api GET "/v1/files/list?path=L"
check "list: not recursive" test "$(j '[.entries[].name] | join(",")')" = "a,b,fifo,lnk,z"
check "list: untouched, same version" test "$(j '.entries[] | select(.name=="a") | .version')" = "$v1"
printf 9 >"$T/nine"; put "path=L/a" "$T/nine"
api GET "/v1/files/list?path=L"
check "list: content changed (same size), new version" test "$(j '.entries[] | select(.name=="a") | .version')" != "$v1"
api GET "/v1/files/list?path=L&recursive=1&max_entries=3"
check "list: max_entries 3, truncated" test "$(j '.entries | length')" = 3 -a "$(j .truncated)" = true
api GET "/v1/files/list?path=L/z"
check "list a file: that one entry" test "$(j '[.entries[].name] | join(",")')" = z -a "$(j .truncated)" = false
api GET "/v1/files/list?path=nope"
check "list missing: 404" test "$(status)" = 404
api GET "/v1/files/list?path=L&max_entries=0"
check "list max_entries 0: 400" test "$(status)" = 400

# 5. delete.
api POST /v1/files/delete '{"path":"L/b"}'
check "delete non-empty dir without recursive: 422 saying so" test "$(status)" = 422 -a "$(j '.error.message | test("non-empty")')" = true
api POST /v1/files/delete '{"path":"L/lnk"}'
check "delete a symlink to outside: removed, target kept" test "$(j .deleted)" = 1 -a ! -L "$WS/L/lnk" -a -e "$T/outside/secret"
ln -s "$T/outside" "$WS/L/b/lnk2"
api POST /v1/files/delete '{"path":"L","recursive":true}'
check "delete recursive: count, gone, outside kept" test "$(j .deleted)" = 8 -a ! -e "$WS/L" -a -e "$T/outside/secret"
for p in . / "$T/state" "$(dirname "$WS")"; do
	api POST /v1/files/delete "$(jq -cn --arg p "$p" '{path:$p,recursive:true}')"
	check "delete $p refused: 422" test "$(status)" = 422 -a -d "$WS" -a -d "$T/state"
done
api POST /v1/files/delete '{"path":"nope"}'
check "delete missing: 404" test "$(status)" = 404

# 6. exec.
# ex JSON: POST /v1/exec into $T/ex (lines).
ex() { "${C[@]}" -N -m 60 -d "$1" -o "$T/ex" -w '%{http_code}' http://a/v1/exec >"$T/status"; }
dec() { jq -r "select(.s==\"$1\") | .b" "$T/ex" | while read -r b; do printf %s "$b" | base64 -d; done; }
last() { tail -n 1 "$T/ex" | jq -r "$1"; }
ex '{"command":"for i in 1 2 3; do echo o$i; echo e$i >&2; done; exit 7"}'
check "exec: 200, stdout apart and in order" test "$(status)" = 200 -a "$(dec out | tr '\n' ,)" = "o1,o2,o3,"
check "exec: stderr apart and in order" test "$(dec err | tr '\n' ,)" = "e1,e2,e3,"
check "exec: exit 7, not timed out, signal null" test "$(last '[.exit, .timed_out, .signal, .dropped_bytes] | join(",")')" = "7,false,,0"
python3 - "$SOCK" >"$T/first" <<'EOF'
import socket, sys, time, json
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
b = b'{"command":"echo first; sleep 1.5; echo second"}'
t0 = time.time()
s.sendall(b"POST /v1/exec HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
data = b""; first = None
while True:
    d = s.recv(65536)
    if not d: break
    data += d
    if first is None and b'"s":"out"' in data: first = time.time() - t0
    if b'"exit"' in data: break
end = time.time() - t0
print("ok" if first is not None and first < 1.0 and end >= 1.4 else "bad %s %s" % (first, end))
EOF
check "exec: first output before the command ends ($(cat "$T/first"))" test "$(cat "$T/first")" = ok
ex '{"command":"cat; echo; echo $FOO; pwd","stdin":"aGVsbG8=","env":{"FOO":"b a r"},"cwd":"/tmp"}'
check "exec: stdin, env, cwd" test "$(dec out)" = "$(printf 'hello\nb a r\n/tmp')"
mkdir -p "$WS/sub"
ex '{"command":"pwd; echo $HOME","cwd":"sub"}'
check "exec: relative cwd from the workdir" test "$(dec out | head -1)" = "$WS/sub"
api POST /v1/env '{"set":{"FROM_ENV":"yes"}}'
ex '{"command":"echo $FROM_ENV; cat </dev/stdin | wc -c"}'
check "exec: /v1/env applies; stdin defaults to /dev/null" test "$(dec out | tr '\n' ,)" = "yes,0,"
ex '{"command":"setsid sh -c \"echo \\$\\$ >'"$T"'/gc.pid; exec sleep 300\" & sleep 300","timeout_ms":700}'
check "exec timeout: 124, timed_out" test "$(last '[.exit, .timed_out] | join(",")')" = "124,true"
check "exec timeout: setsid'd grandchild killed" bash -c "sleep 0.3; ! kill -0 \$(cat '$T/gc.pid') 2>/dev/null"
ex '{"command":"kill -9 $$"}'
check "exec killed by signal 9: exit 137, signal 9" test "$(last '[.exit, .signal] | join(",")')" = "137,9"
ex '{"command":"sleep 300 & echo $! >'"$T"'/bg.pid; echo done"}'
check "exec: what the command left running is killed at its end" bash -c "sleep 0.3; ! kill -0 \$(cat '$T/bg.pid') 2>/dev/null"
rm -f "$T/d1.pid" "$T/d2.pid"
"${C[@]}" -N -m 60 -d '{"command":"echo $$ >'"$T"'/d1.pid; (setsid sleep 300 & echo $! >'"$T"'/d2.pid); sleep 300"}' \
    -o /dev/null http://a/v1/exec & cpid=$!
wait_for 10 test -s "$T/d2.pid"
kill "$cpid"; wait "$cpid" 2>/dev/null
check "exec: client disconnect kills the tree" wait_for 10 bash -c "! kill -0 \$(cat '$T/d1.pid') 2>/dev/null && ! kill -0 \$(cat '$T/d2.pid') 2>/dev/null"
check "exec: disconnect: none left running" wait_for 10 bash -c "curl -s --unix-socket '$SOCK' http://a/v1/health | jq -e '.running_execs == 0'"
ex '{"command":"head -c 3000000 /dev/zero; echo tail >&2","max_output":10000}'
check "exec: output cap: one note, dropped_bytes counted" test "$(grep -c '"note"' "$T/ex")" = 1 -a "$(last .dropped_bytes)" = $((3000000 + 5 - 10000))
check "exec: output cap: out+err at most max_output" test "$(( $(dec out | wc -c) + $(dec err | wc -c) ))" = 10000
pids=()
for i in $(seq 20); do
	"${C[@]}" -N -m 60 -d '{"command":"sleep 0.5; echo n'"$i"'"}' -o "$T/par.$i" http://a/v1/exec &
	pids+=($!)
done
wait "${pids[@]}"
n=0; for i in $(seq 20); do tail -n1 "$T/par.$i" | jq -e '.exit == 0' >/dev/null && grep -q "$(printf "n$i\n" | base64)" "$T/par.$i" && n=$((n + 1)); done
check "exec: 20 at once, all answered right ($n)" test "$n" = 20
for b in '{"command":"a\u0000b"}' '{"command":""}' '{"command":"true","stdin":"!!"}' \
    '{"command":"true","env":{"1X":"v"}}' '{"command":"true","env":{"X":1}}' \
    '{"command":"true","timeout_ms":0}' '{"command":"true","max_output":10}' \
    '{"command":"true","cwd":"/nonexistent"}' 'not json'; do
	ex "$b"
	check "exec bad input $b: 400" test "$(status)" = 400
done
# a slow reader: the agent stops reading the pipes (memory bounded)
python3 - "$SOCK" "$AGENT_PID" >"$T/slow" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
b = b'{"command":"head -c 400000000 /dev/zero","max_output":1073741824}'
s.sendall(b"POST /v1/exec HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
time.sleep(2)
rss = [int(l.split()[1]) for l in open("/proc/%s/status" % sys.argv[2]) if l.startswith("VmRSS")][0]
total = 0
while True:
    d = s.recv(1 << 20)
    if not d: break
    total += len(d)
    if b'"exit"' in d[-200:]: break
print("ok" if rss < 40000 and total > 400000000 else "bad rss=%d total=%d" % (rss, total))
EOF
check "exec: slow client: agent RSS bounded, all delivered ($(cat "$T/slow"))" test "$(cat "$T/slow")" = ok

# 7. shell output tail, and activity.
api GET /v1/shell/output
check "shell output idle: running false" test "$(j '[.running, .bytes, .tail] | join(",")')" = "false,0,"
"${C[@]}" -m 30 -d '{"command":"for i in $(seq 100); do echo line$i; done; sleep 1"}' -o /dev/null http://a/v1/shell & spid=$!
sleep 0.5
api GET "/v1/shell/output?max=15"
check "shell output while running: bytes and the last lines" test "$(j '[.running, .bytes] | join(",")')" = "true,$(seq 100 | sed 's/^/line/' | wc -c)" -a "$(j .tail)" = "$(printf 'line99\nline100')"
wait "$spid"
api GET "/v1/shell/output?max=100000"
check "shell output max over 65536: 400" test "$(status)" = 400
a0=$(curl -s --unix-socket "$SOCK" http://a/v1/health | jq .last_activity_ms); sleep 0.05
put "path=act" "$T/a1"
a1=$(curl -s --unix-socket "$SOCK" http://a/v1/health | jq .last_activity_ms); sleep 0.05
api POST /v1/files/delete '{"path":"act"}'
a2=$(curl -s --unix-socket "$SOCK" http://a/v1/health | jq .last_activity_ms); sleep 0.05
ex '{"command":"true"}'
a3=$(curl -s --unix-socket "$SOCK" http://a/v1/health | jq .last_activity_ms)
check "activity moves on raw PUT, delete and exec" test "$a1" -gt "$a0" -a "$a2" -gt "$a1" -a "$a3" -gt "$a2"
check "agent alive at the end" agent_alive
check "no log flood" test "$(wc -l <"$T/agent.log")" -lt 100
stop_agent

# 8. kill domains (issue 28): the agent on the host with a cgroup v2
# directory of its own (--cgroup) and a v1 pids limit of 100 whose files are
# bound where the local runtime binds them (/run/sandbox, in a private
# mount namespace). Needs the hybrid layout of this machine.
KD=/sys/fs/cgroup/unified/e2e-kd-$$
KP=/sys/fs/cgroup/pids/e2e-kd-$$
if [ "$(id -u)" = 0 ] && [ -f /sys/fs/cgroup/unified/cgroup.procs ] &&
    [ -f /sys/fs/cgroup/pids/cgroup.procs ] && mkdir "$KD" "$KP" 2>/dev/null; then
	on_exit "echo 1 >$KD/cgroup.kill 2>/dev/null; for p in \$(cat $KP/cgroup.procs 2>/dev/null); do kill -9 \$p; done; sleep 0.5; rmdir $KD/* $KD $KP 2>/dev/null"
	echo 100 >"$KP/pids.max"
	cat >"$T/kd.sh" <<'SH'
kp=$1; shift
echo $$ >"$kp/cgroup.procs" || exit 1
exec unshare -m --propagation private sh -c '
	kp=$1; shift
	mount -t tmpfs kd /run && mkdir /run/sandbox || exit 1
	for f in current max events; do
		: >/run/sandbox/pids.$f && mount --bind "$kp/pids.$f" /run/sandbox/pids.$f || exit 1
	done
	exec "$@"' sh "$kp" "$@"
SH
	SOCK=$T/kd.sock
	C=(curl -s --unix-socket "$SOCK")
	mkdir -p "$T/kdws" "$T/kdstate"
	bash "$T/kd.sh" "$KP" "$AGENT" -d --listen "unix:$SOCK" --state "$T/kdstate" \
	    --workdir "$T/kdws" --cgroup "$KD" >>"$T/kd.log" 2>&1 &
	AGENT_PID=$!
	track_pid "$AGENT_PID"
	check "kill domains: the agent starts with --cgroup" wait_for 20 curl -sf --unix-socket "$SOCK" http://a/v1/health
	kp_low() { [ "$(cat "$KP/pids.current")" -lt 10 ]; }
	kp_full() { [ "$(cat "$KP/pids.current")" -ge 90 ]; }
	t0=$(date +%s%N)
	ex '{"command":":(){ :|:& };:; sleep 60","timeout_ms":3000}'
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	check "kill domains: exec bomb ends 124 within 3 s of its timeout (${ms} ms)" test "$(last .exit)" = 124 -a "$ms" -lt 6000
	check "kill domains: exec bomb's processes gone" wait_for 5 kp_low
	sh_run 'export KD=kept; sleep 300 >/dev/null 2>&1 & echo $! >'"$T"'/kdbg'
	sh_run ':(){ :|:& };:; sleep 60' 3000
	check "kill domains: shell bomb times out (124)" test "$(j .exit_code)" = 124
	check "kill domains: shell bomb's processes gone" wait_for 5 kp_low
	sh_run 'echo $KD; kill -0 $(cat '"$T"'/kdbg) && echo bg-alive'
	check "kill domains: the shell kept its state and its background process" out_is "$(printf 'kept\nbg-alive')"
	job_start "setsid bash -c ':(){ :|:& };:' </dev/null >/dev/null 2>&1 & echo x" >/dev/null
	check "kill domains: a bomb left by a job fills the limit" wait_for 15 kp_full
	sh_run '/bin/echo ok-full' 20000
	check "kill domains: the next call runs and says what it killed" bash -c "grep -q 'ok-full' <<<\"\$(jq -r .output '$T/body')\" && grep -q 'process limit' <<<\"\$(jq -r .output '$T/body')\""
	check "kill domains: the bomb is gone" wait_for 5 kp_low
	check "kill domains: agent alive" agent_alive
	stop_agent
else
	skip "kill domains (--cgroup)" "needs root and the v1/v2 hybrid cgroup layout"
fi
