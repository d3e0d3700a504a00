#!/usr/bin/env bash
# 69b-k8s-files-exec.sh: REST files and exec (orchestrator/api/xfer.c) on the
# kubernetes runtime, against the fake API server whose fake kubelet runs
# the real agent with the workspace claim's directory: a sandbox pod made
# for a REST session, binary round trips with sha256 both ways
# (Content-Length and chunked), the bytes on the claim's volume, a listing
# with version stamps that change with the content, DELETE, and exec streaming (stdout/stderr apart, exit code, 124, stdin).
# The fake kubelet's agent runs on the host (no mount namespace), so paths
# here are the claim directory's host path ($W), which is /workspace in a
# real pod: what this shows is the orchestrator's side (the pod's agent
# address and key, streaming both ways), not the pod's confinement (test
# 59 shows that with real sandboxes).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup
k8s_orch_setup
k8s_orch_up "orchestrator starts on the kubernetes runtime"
U=$ORCH_URL
A=(-H "Authorization: Bearer $ORCH_KEY")
S=kx-1
F="$U/v1/sessions/$S/files"
code=$(curl -s "${A[@]}" -o "$T/create" -w '%{http_code}' -H 'Content-Type: application/json' -d "{\"id\":\"$S\"}" "$U/v1/sessions")
check "REST session created: a sandbox pod" test "$code" = 201
sb=$(curl -s "${A[@]}" "$U/v1/sessions/$S" | jq -r .sandbox_id)
check "the session names its sandbox" test -n "$sb" -a "$sb" != null
vol=$T/fake/pvc/sandboxes/sbx-$sb-ws
W=$vol
check "the claim's directory is the agent's workdir" test -d "$W"
sha() { sha256sum "$1" | cut -d' ' -f1; }

head -c 1 /dev/urandom >"$T/f1"
head -c 3145728 /dev/urandom >"$T/f3m"
for f in f1 f3m; do
	code=$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -T "$T/$f" "$F$W/$f")
	check "PUT $f: 201" test "$code" = 201
	check "PUT $f: the bytes are on the claim's volume" test "$(sha "$vol/$f" 2>/dev/null)" = "$(sha "$T/$f")"
	code=$(curl -s "${A[@]}" -o "$T/get.$f" -D "$T/hdr.$f" -w '%{http_code}' "$F$W/$f")
	check "GET $f: 200 and the same bytes" test "$code $(sha "$T/get.$f")" = "200 $(sha "$T/$f")"
	check "GET $f: Content-Length" grep -qi "^content-length: $(stat -c %s "$T/$f")" "$T/hdr.$f"
	code=$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -T - "$F$W/c.$f" <"$T/$f")
	check "PUT $f chunked: 201 and the same bytes" test "$code $(sha "$vol/c.$f" 2>/dev/null)" = "201 $(sha "$T/$f")"
done
l1=$(curl -s "${A[@]}" "$F$W/?recursive=1")
v1=$(jq -r '.entries[] | select(.name == "f1") | .version' <<<"$l1")
check "listing: entries with a version stamp" test -n "$v1" -a "$v1" != null
check "listing: the sizes" test "$(jq -r '.entries[] | select(.name == "f3m") | .size' <<<"$l1")" = 3145728
sleep 0.01
printf 'changed' | curl -s "${A[@]}" -o /dev/null -T - "$F$W/f1"
v2=$(curl -s "${A[@]}" "$F$W/?recursive=1" | jq -r '.entries[] | select(.name == "f1") | .version')
check "listing: the version changes with the content" test -n "$v2" -a "$v2" != "$v1"
code=$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -X DELETE "$F$W/c.f1")
check "DELETE: 200 and gone from the volume" test "$code $(test -e "$vol/c.f1" && echo there || echo gone)" = "200 gone"

X="$U/v1/sessions/$S/exec"
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
out=$(ex '{"command":"sha256sum f3m | cut -c1-64"}')
check "exec: sees the uploaded file" test "$(dec out <<<"$out" | tr -d '\n')" = "$(sha "$T/f3m")"

code=$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -X DELETE "$U/v1/sessions/$S")
check "session deleted" test "$code" = 200 -o "$code" = 204
k8s_orch_stop
k8s_no_violations
