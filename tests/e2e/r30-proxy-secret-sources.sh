# r30-proxy-secret-sources: named credentials' secrets from a command
# (cmd:/abs/path args: no shell, bounded by credentials.cmd_timeout) and
# refreshed without a reload (a changed file: secret read again, a cmd:
# secret run again every secret_refresh), each asserted on what a
# recording upstream received; failed refreshes keep the last good value;
# load errors say why (relative path, missing binary, empty output, a
# hang killed at the timeout, 1 MiB of output, control bytes); hostile
# files (a symlink swapped in, a FIFO) never hang the proxy; no value in
# the log, stderr or audit log.
. "$(dirname "$0")/../lib/common.sh"
PY=${PY:-/usr/bin/python3}; FX=$TOP/tests/fixtures
. "$TOP/tests/lib/upca.sh"
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" file.test cmd.test flaky.test link.test lua.test localhost

UP=$(free_port); PP=$(free_port)
"$PY" "$FX/upstream.py" "$UP" --keepalive --log "$T/rec.jsonl" --cert "$T/srv.crt" \
	--key "$T/srv.key" & track_pid $!

rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
F1=file-ONE-$(rnd); F2=file-TWO-$(rnd)
C1=cmd-ONE-$(rnd); C2=cmd-TWO-$(rnd)
K1=flaky-ONE-$(rnd); K2=flaky-TWO-$(rnd); K3=flaky-THREE-$(rnd)
L1=link-ONE-$(rnd); L2=link-TWO-$(rnd)
MARK=OUTPUT-MARK-$(rnd)		# what failing commands print: never in a message
printf '%s\n' "$F1" >"$T/f.secret"
printf '%s\n' "$C1" >"$T/c.val"
printf '%s\n' "$K1" >"$T/k.val"; echo ok >"$T/k.mode"
printf '%s\n' "$L1" >"$T/l.secret"
mkdir -p "$T/bin" "$T/export"
# getsec FILE: prints FILE (a vault CLI's stand-in)
printf '#!/bin/sh\nexec /bin/cat "$1"\n' >"$T/bin/getsec"
# flaky VAL MODE: by MODE's content: ok (VAL), fail (output, exit 3), hang, big, ctl
cat >"$T/bin/flaky" <<EOF
#!/bin/sh
case \$(cat "\$2") in
ok) exec /bin/cat "\$1" ;;
fail) echo "$MARK"; exit 3 ;;
hang) echo "$MARK"; exec /bin/sleep 3609 ;;
big) /usr/bin/yes | /usr/bin/head -c 1048576 ;;
ctl) printf '$MARK\\001\\033[2J\\n' ;;
esac
EOF
printf '#!/bin/sh\n/bin/sleep 3608 &\necho "%s"; exec /bin/sleep 3607\n' "$MARK" >"$T/bin/hang"
printf '#!/bin/sh\n/usr/bin/yes | /usr/bin/head -c 1048576\n' >"$T/bin/big"
printf '#!/bin/sh\nprintf "%s\\001\\002\\n"\n' "$MARK" >"$T/bin/ctl"
printf '#!/bin/sh\nprintf "%s\\000rest\\n"\n' "$MARK" >"$T/bin/nul"
printf '#!/bin/sh\necho "%s"; exit 1\n' "$MARK" >"$T/bin/fails"
printf '#!/bin/sh\nexit 0\n' >"$T/bin/empty"
chmod 755 "$T"/bin/*

cat >"$T/creds.lua" <<EOF
return {
  name = "creds",
  credentials = {
    { name = "fsec", form = "bearer", secret = "file:$T/f.secret", hosts = { "file.test" } },
    { name = "csec", form = "bearer", secret = "cmd:$T/bin/getsec $T/c.val", secret_refresh = 1,
      hosts = { "cmd.test" } },
    { name = "ksec", form = "header", field = "x-api-key", secret = "cmd:$T/bin/flaky $T/k.val $T/k.mode",
      secret_refresh = 1, hosts = { "flaky.test" } },
    { name = "lsec", form = "bearer", secret = "file:$T/l.secret", hosts = { "link.test" } },
  },
}
EOF
P1=lua-ONE-$(rnd)
printf '%s\n' "$P1" >"$T/p.val"
cat >"$T/luasec.lua" <<EOF
local M = { name = "luasec" }
-- proxy.secret with cmd: runs at the load only
local tok = assert(proxy.secret("cmd:$T/bin/getsec $T/p.val"))
function M.on_connect(ctx) if ctx.host == "lua.test" then return "intercept" end end
function M.on_request(req, ctx)
  if req.host ~= "lua.test" then return end
  local v, err = proxy.secret("cmd:$T/bin/getsec $T/p.val")
  req:inject("x-lua-key", tok, "luasec")
  req:set_header("x-hook-cmd", v == nil and (err:gsub("[^%w ]", "")) or "ran")
  local f = proxy.secret("file:$T/fifo")
  req:set_header("x-fifo", f == nil and "refused" or "read")
end
return M
EOF
px_yaml() {	# px_yaml ADDON-FILE...
	cat <<EOF
listen: 127.0.0.1:$PP
workers: 2
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
credentials:
  secret_watch: 300ms
  cmd_timeout: 1500ms
upstream:
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
resolve:
  "file.test:443": "127.0.0.1:$UP"
  "cmd.test:443": "127.0.0.1:$UP"
  "flaky.test:443": "127.0.0.1:$UP"
  "link.test:443": "127.0.0.1:$UP"
  "lua.test:443": "127.0.0.1:$UP"
addons: [$1${2:+, $2}]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
}

# ---- 1. load errors: each says why, never a byte of the output; a hang is bounded ----
loaderr() {	# loaderr NAME SPEC WANT: a check-only load of one credential with SPEC fails saying WANT
	local name=$1 spec=$2 want=$3 t0 t1 rc
	printf 'return { name = "bad", credentials = { { name = "x", form = "bearer", secret = "%s", hosts = { "x.test" } } } }\n' \
		"$spec" >"$T/bad.lua"
	px_yaml "$T/bad.lua" >"$T/bad.yaml"
	t0=$(date +%s%N)
	"$BIN/egress-proxy/egress-proxy" -n -f "$T/bad.yaml" >"$T/bad.out" 2>&1; rc=$?
	t1=$(date +%s%N)
	if [ $rc -ne 0 ] && grep -qF -- "$want" "$T/bad.out" && ! grep -qF "$MARK" "$T/bad.out" &&
		[ $(( (t1 - t0) / 1000000 )) -lt 6000 ]; then
		ok "load error: $name"
	else
		fail "load error: $name" "rc=$rc $(( (t1 - t0) / 1000000 )) ms: $(tail -n 2 "$T/bad.out")"
	fi
}
loaderr "a relative program path" "cmd:bin/getsec $T/c.val" "absolute program path"
loaderr "a missing binary" "cmd:$T/bin/nosuch" "No such file"
loaderr "empty output" "cmd:$T/bin/empty" "printed nothing"
loaderr "a non-zero exit (its output not shown)" "cmd:$T/bin/fails" "exited with status 1"
loaderr "a hang is killed at cmd_timeout and the load says so" "cmd:$T/bin/hang" "no answer in 1500 ms (killed)"
loaderr "1 MiB of output" "cmd:$T/bin/big" "printed more than 8192 bytes"
loaderr "control bytes (not shown)" "cmd:$T/bin/ctl" "control byte"
loaderr "a NUL byte" "cmd:$T/bin/nul" "NUL byte"
mkfifo "$T/fifo"
loaderr "a FIFO as file: does not hang the load" "file:$T/fifo" "not a regular file"
printf 'return { name = "bad", credentials = { { name = "x", form = "bearer", secret = "file:%s", secret_refresh = 5, hosts = { "x.test" } } } }\n' \
	"$T/f.secret" >"$T/bad.lua"
px_yaml "$T/bad.lua" >"$T/bad.yaml"
"$BIN/egress-proxy/egress-proxy" -n -f "$T/bad.yaml" >"$T/bad.out" 2>&1
check "load error: secret_refresh is for cmd: secrets" grep -qF "secret_refresh is for a cmd: secret" "$T/bad.out"
sleep 0.2
check "the hung command's process group is gone (no stray sleep)" bash -c "! pgrep -f 'sleep 360[78]' >/dev/null"

# ---- 2. the proxy with file: and cmd: secrets ----
px_yaml "$T/creds.lua" "$T/luasec.lua" >"$T/p.yaml"
. "$TOP/tests/lib/pxsolo.sh"
px_solo
adm '{"op":"register","id":"sb","secret":"s","policy":{"credentials":["fsec","csec","ksec","lsec"]}}' >"$T/reg.json"
C=(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb:s@127.0.0.1:$PP")
last() { tail -n 1 "$T/rec.jsonl"; }
hdr() {	# hdr NAME: the value of header NAME in the last request the upstream saw
	last | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); n=sys.argv[1].lower()
print("\n".join(v for k,v in d["headers"] if k.lower()==n))' "$1"
}
got() {	# got URL HEADER: one request, the header the upstream got
	"${C[@]}" "$1" >/dev/null 2>&1
	hdr "$2"
}
until_got() {	# until_got URL HEADER WANT SECONDS: requests until the upstream gets WANT
	local i n=$(( $4 * 5 ))
	for i in $(seq "$n"); do
		[ "$(got "$1" "$2")" = "$3" ] && return 0
		sleep 0.2
	done
	return 1
}
metric() {	# metric 'NAME{LABELS}': its value, -1 when absent
	adm '{"op":"metrics"}' | "$PY" -c 'import json,sys
def texts(d):
    if isinstance(d, str): yield d
    elif isinstance(d, dict):
        for v in d.values(): yield from texts(v)
    elif isinstance(d, list):
        for v in d: yield from texts(v)
v = -1
for t in texts(json.load(sys.stdin)):
    for l in t.splitlines():
        if l.startswith(sys.argv[1] + " "): v = int(float(l.split()[-1]))
print(v)' "$1"
}
reloads0=$(grep -c "addons reloaded" "$T/proxy.log")

check "file: the value read at load" test "$(got https://file.test/a authorization)" = "Bearer $F1"
check "cmd: the command's output is the secret" test "$(got https://cmd.test/a authorization)" = "Bearer $C1"
check "cmd: (header form) its first value" test "$(got https://flaky.test/a x-api-key)" = "$K1"

check "proxy.secret(\"cmd:...\") at an addon's load: its output" test "$(got https://lua.test/a x-lua-key)" = "$P1"
check "proxy.secret(\"cmd:...\") in a hook: refused, no command run" \
	bash -c "tail -n 1 '$T/rec.jsonl' | grep -q 'cmd secrets are read at an addons load only'"
check "proxy.secret(\"file:FIFO\") in a hook: no hang, refused" \
	bash -c "tail -n 1 '$T/rec.jsonl' | grep -q '\"x-fifo\", \"refused\"'"

# ---- 3. refreshed without a reload ----
printf '%s\n' "$F2" >"$T/f.new"; mv "$T/f.new" "$T/f.secret"
check "file: changed on disk, the next requests carry the new value" \
	until_got https://file.test/b authorization "Bearer $F2" 5
printf '%s\n' "$C2" >"$T/c.val"
check "cmd: re-run every secret_refresh, the changed output taken" \
	until_got https://cmd.test/b authorization "Bearer $C2" 6
check "no reload happened (the addons are the same)" \
	test "$(grep -c "addons reloaded" "$T/proxy.log")" = "$reloads0"
check "the log says a secret was refreshed, naming the credential" \
	grep -qE "credential=fsec secret=file refreshed" "$T/proxy.log"
ch=$(metric 'egress_proxy_secret_refreshes_total{result="changed"}')
check "metric: refreshes that changed a value counted ($ch)" test "$ch" -ge 2

# ---- 4. failed refreshes keep the last good value ----
printf '%s\n' "$K2" >"$T/k.val"; echo fail >"$T/k.mode"
sleep 2.5
check "cmd: a failing command keeps the last good value" test "$(got https://flaky.test/c x-api-key)" = "$K1"
check "the failure is logged with its reason" wait_for 8 grep -qE "credential=ksec secret refresh failed.*exited with status 3" "$T/proxy.log"
echo hang >"$T/k.mode"
# requests over 2.5 s, while a refresh waits 1.5 s for the hung command: none waits for it
worst=0
for i in 1 2 3 4 5 6; do
	ms=$("${C[@]}" -o /dev/null -w '%{time_total}' https://flaky.test/d 2>/dev/null |
		"$PY" -c 'import sys; print(int(float(sys.stdin.read() or 9) * 1000))')
	[ "$ms" -gt "$worst" ] && worst=$ms
	sleep 0.3
done
check "a hanging refresh does not stall requests (the slowest: $worst ms), the last good value" \
	test "$(hdr x-api-key)" = "$K1" -a "$worst" -lt 1000
check "the hung refresh was killed at cmd_timeout and logged" \
	wait_for 10 grep -qE "credential=ksec secret refresh failed.*no answer in 1500 ms \\(killed\\)" "$T/proxy.log"
echo big >"$T/k.mode"
check "1 MiB from the command: refused, the reason logged" \
	wait_for 8 grep -q 'credential=ksec.*printed more than 8192 bytes' "$T/proxy.log"
echo ctl >"$T/k.mode"
check "control bytes from the command: refused, the reason logged" \
	wait_for 8 grep -q 'credential=ksec.*control byte' "$T/proxy.log"
check "1 MiB and control bytes from the command: the last good value" \
	test "$(got https://flaky.test/e x-api-key)" = "$K1"
check "admin still answers" bash -c "$PY $FX/padmin.py $T/admin.sock '{\"op\":\"ping\"}' | grep -q '\"ok\":true'"
fl=$(metric 'egress_proxy_secret_refreshes_total{result="failed"}')
nl=$(grep -c "secret refresh failed" "$T/proxy.log")
check "metric: failed refreshes counted ($fl); the log: each new reason once, repeats rate-limited ($nl lines)" \
	test "$fl" -ge 5 -a "$nl" -le 5
printf '%s\n' "$K3" >"$T/k.val"; echo ok >"$T/k.mode"
check "the command healed: its new value taken" until_got https://flaky.test/f x-api-key "$K3" 6
sleep 0.2
check "no hung refresh command left running" bash -c "! pgrep -f 'sleep 360[9]' >/dev/null"

# ---- 5. hostile files: a symlink swapped in (as Kubernetes does), a FIFO ----
check "file: its value at load" test "$(got https://link.test/a authorization)" = "Bearer $L1"
printf '%s\n' "$L2" >"$T/l2.secret"
ln -s "$T/l2.secret" "$T/l.tmp"; mv -T "$T/l.tmp" "$T/l.secret"
check "a symlink swapped in: the target's value taken" until_got https://link.test/b authorization "Bearer $L2" 5
fl0=$(metric 'egress_proxy_secret_refreshes_total{result="failed"}')
mkfifo "$T/l.fifo"; mv -T "$T/l.fifo" "$T/l.secret"	# one rename: never missing
sleep 1.5
t0=$(date +%s%N)
v=$(got https://link.test/c authorization)
t1=$(date +%s%N)
check "a FIFO in its place: no hang ($(( (t1 - t0) / 1000000 )) ms), the last good value" \
	test "$v" = "Bearer $L2" -a $(( (t1 - t0) / 1000000 )) -lt 1000
check "the FIFO counted once as a failure, not every poll" \
	test "$(metric 'egress_proxy_secret_refreshes_total{result="failed"}')" = $((fl0 + 1))
check "file: the cmd: and file: secrets still serve" test "$(got https://file.test/z authorization)" = "Bearer $F2"

# ---- 6. never a value in the log, stderr or audit log ----
sleep 0.5
check "no secret value (old or new) and no command output in the log, stderr or audit log" \
	bash -c "! grep -qF -e '$F1' -e '$F2' -e '$C1' -e '$C2' -e '$K1' -e '$K2' -e '$K3' -e '$L1' -e '$L2' -e '$P1' -e '$MARK' '$T/proxy.log' '$T/stderr' '$T/audit.jsonl'"
check "the audit log has the requests" grep -q '"credentials":"fsec:' "$T/audit.jsonl"
