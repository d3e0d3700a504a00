#!/usr/bin/env bash
# 59-orch-files-exec.sh: REST files and exec through the real orchestrator
# (xfer.c) to the real agent in real sandboxes: binary round trips with
# sha256 (1 byte to 100 MiB, Content-Length and chunked), the daemon's
# memory flat during a 100 MiB upload, files.max_bytes, a client that goes
# mid-upload, GET headers, listings and version stamps, DELETE, path
# traversal and symlinks confined to the sandbox, concurrent uploads;
# exec streaming (first line before the end, stdout/stderr apart, 124,
# stdin, disconnect kills the tree, exec.max_concurrent, an agent that
# dies mid-command ends the stream with an agent_lost line), auth, unknown
# session, hostile input.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"
# The fake runtime's agent runs on the host: a run there would write the
# test's files, symlinks and uploads into the host's /workspace and /tmp.
if [ "$ORCH_RT" != local ]; then skip "REST files and exec need the local runtime (root, bwrap): the fake one has no confinement"; exit 0; fi

orch_config "files:" "  max_bytes: 200MiB" "exec:" "  max_concurrent: 3"
check "orch starts" orch_start
S=fx-1
F="$ORCH_URL/v1/sessions/$S/files"
A=(-H "Authorization: Bearer $ORCH_KEY")
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d "{\"id\":\"$S\"}" -w ' %{http_code}')
check "session created" contains <(echo "$out") ' 201'
sha() { sha256sum "$1" | cut -d' ' -f1; }
ssha() { mcp_tool "$S" shell "{\"command\":\"sha256sum $1 | cut -d' ' -f1\"}" | head -1; }

hwm() { awk '/VmHWM/{print $2}' /proc/$ORCH_PID/status; }
h0=$(hwm)	# before any transfer: the 100 MiB ones below must not move it much
# --- round trips: Content-Length and chunked, 1 byte to 100 MiB ---
head -c 1 /dev/urandom > "$T/f1"
head -c 1048576 /dev/urandom > "$T/f1m"
head -c 104857600 /dev/urandom > "$T/f100m"
for f in f1 f1m f100m; do
	code=$(curl -s "${A[@]}" -o "$T/put.$f" -w '%{http_code}' -T "$T/$f" "$F/workspace/$f")
	check "PUT $f (Content-Length): 201" test "$code" = 201
	check "PUT $f: the sandbox has the bytes" test "$(ssha /workspace/$f)" = "$(sha "$T/$f")"
	code=$(curl -s "${A[@]}" -o "$T/get.$f" -D "$T/hdr.$f" -w '%{http_code}' "$F/workspace/$f")
	check "GET $f: 200 and the same bytes" test "$code $(sha "$T/get.$f")" = "200 $(sha "$T/$f")"
	check "GET $f: Content-Length" grep -qi "^content-length: $(stat -c %s "$T/$f")" "$T/hdr.$f"
	code=$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -T - "$F/workspace/c.$f" <"$T/$f")
	check "PUT $f chunked (curl -T -): 201" test "$code" = 201
	check "PUT $f chunked: the same bytes" test "$(ssha /workspace/c.$f)" = "$(sha "$T/$f")"
done
check "PUT again: 200 (not created)" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -T "$T/f1" "$F/workspace/f1")" = 200
check "GET: ETag is the version" eval 'grep -qi "^etag: \"[0-9a-f]\{16\}\"" "$T/hdr.f1m"'
check "GET: X-File-Mode" grep -qi '^x-file-mode: 0' "$T/hdr.f1m"

# --- memory stays flat during a 100 MiB upload ---
curl -s "${A[@]}" -o /dev/null -T - "$F/workspace/m2" <"$T/f100m"
h1=$(hwm)
echo "VmHWM before any transfer ${h0} kB, after three 100 MiB uploads and a download ${h1} kB"
# ASan's quarantine keeps freed buffers out of reuse (256 MiB by default):
# peak memory means nothing in the sanitizer build, as in 71
case $B in *-san*) skip "memory flat: VmHWM grew < 24 MiB over 100 MiB uploads" "sanitizer build" ;;
*) check "memory flat: VmHWM grew < 24 MiB over 100 MiB uploads" test $((h1 - h0)) -lt 24576 ;;
esac

# --- files.max_bytes ---
head -c $((200 * 1048576 + 1)) /dev/zero > "$T/big"
out=$(curl -s "${A[@]}" -w ' %{http_code}' -T "$T/big" "$F/workspace/big")
check "over files.max_bytes (Content-Length): 413 at the head" contains <(echo "$out") ' 413'
check "413 names files.max_bytes" contains <(echo "$out") 'files.max_bytes'
out=$(curl -s "${A[@]}" -w ' %{http_code}' -T - "$F/workspace/big" <"$T/big")
check "over files.max_bytes (chunked): 413" contains <(echo "$out") ' 413'
sleep 0.5
check "nothing left of either" test "$(mcp_tool "$S" shell '{"command":"ls -a /workspace | grep -c big"}' | head -1)" = 0
rm -f "$T/big"

# --- a client that goes mid-upload: the target untouched ---
echo original > "$T/orig"
curl -s "${A[@]}" -o /dev/null -T "$T/orig" "$F/workspace/keep"
# (The body never ends before curl is killed at 3 s: the writer stays
# open 4 s past its 30 MB; the pipeline waits for it, so not 30 s.)
( head -c 30000000 /dev/urandom; sleep 4 ) | timeout 3 curl -s "${A[@]}" -o /dev/null -T - "$F/workspace/keep"
sleep 1
check "client gone mid-upload: target untouched" test "$(ssha /workspace/keep)" = "$(sha "$T/orig")"
check "client gone mid-upload: no temp left" test "$(mcp_tool "$S" shell '{"command":"ls -a /workspace | grep -c keep"}' | head -1)" = 1

# --- listing and version stamps ---
curl -s "${A[@]}" -o /dev/null -T "$T/f1" "$F/workspace/d/a/x"
l1=$(curl -s "${A[@]}" "$F/workspace/d/?recursive=1")
check "listing: recursive finds d/a/x" contains <(echo "$l1") '"/workspace/d/a/x"'
v1=$(jq -r '.entries[] | select(.name=="x") | .version' <<<"$l1")
curl -s "${A[@]}" -o /dev/null -T "$T/f1m" "$F/workspace/d/a/x"
v2=$(curl -s "${A[@]}" "$F/workspace/d/?recursive=1" | jq -r '.entries[] | select(.name=="x") | .version')
check "version changes with content" eval '[ -n "$v1" ] && [ "$v1" != "$v2" ]'
check "list=1 on a dir" test "$(curl -s "${A[@]}" "$F/workspace/d?list=1" | jq -r '.entries[0].name')" = a

# --- DELETE ---
check "DELETE a non-empty dir without recursive: 422" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -X DELETE "$F/workspace/d")" = 422
out=$(curl -s "${A[@]}" -X DELETE "$F/workspace/d?recursive=1")
check "DELETE recursive: deleted 3" test "$(jq -r .deleted <<<"$out")" = 3
check "GET after DELETE: 404" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' "$F/workspace/d/a/x")" = 404

# --- paths: traversal, NUL, symlinks stay inside the sandbox ---
echo host-secret > "$T/secret"
mcp_tool "$S" shell "{\"command\":\"ln -sfn / /workspace/root; ln -sfn $T /workspace/hostdir; ln -sfn $T/secret /workspace/hs\"}" >/dev/null
code=$(curl -s "${A[@]}" -o "$T/tr" -w '%{http_code}' --path-as-is "$F/workspace/../../../../etc/hostname")
check "../ traversal: never the host's file" eval '! cmp -s "$T/tr" /etc/hostname'
code=$(curl -s "${A[@]}" -o "$T/tr" -w '%{http_code}' --path-as-is "$F/workspace/%2e%2e/%2e%2e$T/secret")
check "%2e%2e traversal: not the host file ($code)" eval '! grep -q host-secret "$T/tr"'
check "NUL in the path: 400" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' "$F/workspace/a%00b")" = 400
check "relative path: 400" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' "$F")" = 400
curl -s "${A[@]}" -o "$T/tr" "$F/workspace/hs"
check "symlink to a host path: not the host file" eval '! grep -q host-secret "$T/tr"'
curl -s "${A[@]}" -o /dev/null -T "$T/f1" "$F/workspace/hostdir/planted"
check "PUT through a symlink to a host dir: nothing on the host" test ! -e "$T/planted"
curl -s "${A[@]}" -o /dev/null -T "$T/f1" "$F/workspace/root/tmp/viaroot"
check "PUT through a symlink to /: inside the sandbox" test "$(mcp_tool "$S" shell '{"command":"test -f /tmp/viaroot && echo in"}' | head -1)" = in
check "PUT through a symlink to /: not on the host" test ! -e /tmp/viaroot

# --- concurrent uploads ---
pids=
for i in 1 2 3 4; do
	curl -s "${A[@]}" -o /dev/null -w '%{http_code}\n' -T "$T/f1m" "$F/workspace/cc$i" > "$T/cc$i" &
	pids="$pids $!"
done
wait $pids
for i in 1 2 3 4; do
	check "concurrent upload $i" test "$(cat "$T/cc$i") $(ssha /workspace/cc$i)" = "201 $(sha "$T/f1m")"
done

# --- exec ---
X="$ORCH_URL/v1/sessions/$S/exec"
ex() { curl -sN "${A[@]}" -H 'Content-Type: application/json' -d "$1" "$X"; }
dec() { jq -r "select(.s==\"$1\") | .b" | while read -r b; do printf '%s' "$b" | base64 -d; done; }
out=$(ex '{"command":"echo out1; echo err1 >&2; echo out2; exit 3"}')
check "exec: stdout apart" test "$(dec out <<<"$out")" = "$(printf 'out1\nout2')"
check "exec: stderr apart" test "$(dec err <<<"$out")" = err1
check "exec: exit 3 on the last line" test "$(tail -1 <<<"$out" | jq -r .exit)" = 3
out=$(ex '{"command":"sleep 5","timeout":1}')
check "exec: timeout is 124" test "$(tail -1 <<<"$out" | jq -r '"\(.exit) \(.timed_out)"')" = "124 true"
out=$(ex "{\"command\":\"cat\",\"stdin\":\"$(printf 'in-bytes' | base64)\"}")
check "exec: stdin" test "$(dec out <<<"$out")" = in-bytes
t0=$(date +%s%N)
ex '{"command":"echo first; sleep 3; echo last"}' | { read -r l; echo "$(( ($(date +%s%N) - t0) / 1000000 )) $l"; cat >/dev/null; } > "$T/first"
read -r ms _ < "$T/first"
check "exec: the first line before the command ends (${ms} ms)" test "$ms" -lt 2500
curl -sN "${A[@]}" -H 'Content-Type: application/json' -o /dev/null \
    -d '{"command":"sleep 300 & echo $! > /tmp/bgpid; sleep 300"}' "$X" &
cp=$!
sleep 1.5
kill "$cp"; wait "$cp" 2>/dev/null
sleep 1.5
bg=$(mcp_tool "$S" shell '{"command":"cat /tmp/bgpid"}' | head -1)
check "exec: a client that goes kills the tree" test "$(mcp_tool "$S" shell "{\"command\":\"kill -0 $bg 2>/dev/null && echo alive || echo dead\"}" | head -1)" = dead
pids=
for i in 1 2 3; do ( ex '{"command":"sleep 3"}' >/dev/null ) & pids="$pids $!"; done
sleep 1
out=$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"command":"true"}' "$X")
check "exec.max_concurrent: 429 beyond" test "$out" = 429
wait $pids
check "exec: unknown member refused (400)" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"command":"true","shell":1}' "$X")" = 400
check "exec: bad JSON (400)" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"command":' "$X")" = 400
check "exec: bad base64 stdin is the agent's 400" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"command":"cat","stdin":"!!!"}' "$X")" = 400

# --- a client that stops sending mid-upload: the agent's request timeout
# (30 s without a byte) ends the transfer, so it cannot hold its worker and
# the session for ever; the target is not created ---
python3 - "$ORCH_PORT" "$ORCH_KEY" "$S" > "$T/stall" <<'PY' &
import socket, sys, time
port, key, sid = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("PUT /v1/sessions/%s/files/workspace/stalled HTTP/1.1\r\n"
    "Host: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
    "Content-Length: 1000\r\n\r\n" % (sid, key)).encode() + b"x" * 10)
t0 = time.time()
s.settimeout(90)
try:
    d = s.recv(4096)
except socket.timeout:
    d = b"no answer"
print(int(time.time() - t0), (d.split(b"\r\n")[0] or b"closed").decode(errors="replace"))
PY
stall=$!
# --- auth, unknown session, hostile heads ---
check "no key: 401" test "$(curl -s -o /dev/null -w '%{http_code}' -T "$T/f1" "$F/workspace/na")" = 401
check "no key: nothing written" test "$(mcp_tool "$S" shell '{"command":"test -e /workspace/na && echo yes || echo no"}' | head -1)" = no
check "unknown session: 404" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' "$ORCH_URL/v1/sessions/nope/files/etc/passwd")" = 404
check "unknown query parameter: 400" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' "$F/workspace/f1?foo=1")" = 400
check "oversized head: 431" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' a)" -T "$T/f1" "$F/workspace/f1")" = 431
check "bad mode: 400" test "$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -T "$T/f1" "$F/workspace/f1?mode=9z")" = 400
check "the daemon still serves" curl -sf "$ORCH_URL/readyz"
# --- an exec whose agent dies mid-command: the stream ends with a last
# line saying so ({"error":{"code":"agent_lost"}}), not just stopping ---
S2=fx-lost
rest POST /v1/sessions -H 'Content-Type: application/json' -d "{\"id\":\"$S2\"}" >/dev/null
id2=$(rest GET "/v1/sessions/$S2" | jq -r .sandbox_id)
if [ "$ORCH_RT" = local ]; then
	apid=$(pgrep -P "$(awk '{print $3}' "$ORCH_SBX_DIR/$id2/pid")" | head -n1)
else
	apid=$(grep -lx --null-data "FAKE_SANDBOX_ID=$id2" /proc/[0-9]*/environ 2>/dev/null |
	    cut -d/ -f3 | sort -n | head -n1)
fi
( curl -sN --max-time 60 "${A[@]}" -H 'Content-Type: application/json' \
    -d '{"command":"echo started; sleep 60"}' "$ORCH_URL/v1/sessions/$S2/exec" > "$T/lost"
  echo $? > "$T/lost.rc" ) &
lost=$!
for _ in $(seq 1 100); do grep -q '"s":"out"' "$T/lost" 2>/dev/null && break; sleep 0.1; done
[ -n "$apid" ] && kill -9 "$apid"
wait "$lost"
check "agent lost mid-exec: the output so far came through" test "$(dec out < "$T/lost")" = started
check "agent lost mid-exec: the last line is an agent_lost error" \
    test "$(tail -1 "$T/lost" | jq -r .error.code)" = agent_lost
check "agent lost mid-exec: its message says the exit status is unknown" \
    contains <(tail -1 "$T/lost" | jq -r .error.message) 'exit status'
check "agent lost mid-exec: the stream is ended properly (curl exit 0)" test "$(cat "$T/lost.rc")" = 0
check "agent lost mid-exec: no exit line" test "$(jq -r 'select(.exit != null) | .exit' < "$T/lost" | wc -l)" = 0
wait "$stall"
read -r secs what < "$T/stall"
echo "stalled upload: ${secs} s, then: $what"
check "a stalled upload is ended within 45 s ($secs s: $what)" test "${secs:-99}" -le 45
check "a stalled upload leaves no file and no temp" test "$(mcp_tool "$S" shell '{"command":"ls -a /workspace | grep -c stalled"}' | head -1)" = 0

