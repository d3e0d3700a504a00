#!/usr/bin/env bash
# r31-scale-heal (issue 31 part 5): the egress heal at scale. With N
# sandboxes (SCALE_HEAL_N, default 1000: the count that runs in about 3
# minutes on the 2-core test host; busybox image, no disk image, made by
# REST through the orchestrator) the proxy is killed and started again (a
# new boot id, no registration left): the orchestrator's heal registers
# every one of the N again. With nothing wrong the heal asks the proxy's
# stats summary only (counted from the proxy's -v log, one line per admin
# request): no ids walk, no register. The proxy's paged ids form lists
# every registered id once, in order, across pages (1,500 extra
# registrations of 120-character ids: about three pages).
. "$(dirname "$0")/../lib/common.sh"
[ "$(id -u)" = 0 ] || { skip "r31-scale-heal" "needs root"; exit 0; }
export ORCH_TEST_RUNTIME=local
. "$TOP/tests/mcp/orch-lib.sh"
N=${SCALE_HEAL_N:-1000}
PROXY=$BIN/egress-proxy/egress-proxy
PADMIN=$TOP/tests/fixtures/padmin.py
D=$TOP/tests/bench/density/density.py

on_exit orch_mass_cleanup

PP=$(free_port)
cat >"$T/p.yaml" <<YAML
listen: 127.0.0.1:$PP
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key}
addon_watch: 0
log:
  file: $T/proxy.log
YAML
PXPID=
px_up() {
	rm -f "$T/admin.sock"
	"$PROXY" -d -v -f "$T/p.yaml" >>"$T/proxy.stderr" 2>&1 &
	PXPID=$!
	track_pid "$PXPID"
	wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock"
}
admin() { python3 "$PADMIN" "$T/admin.sock" "$1"; }
summary() { admin '{"op":"stats","summary":true}'; }
count() { summary | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'; }
boot() { summary | python3 -c 'import json,sys; print(json.load(sys.stdin)["boot_id"])'; }
count_is() { [ "$(count)" = "$1" ]; }
# every id, page by page: "PAGES N" then the ids, one a line
walk() {
	python3 - "$T/admin.sock" <<'PY'
import json, socket, sys
def call(req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1]); s.send(json.dumps(req).encode())
    r = json.loads(s.recv(1 << 17)); s.close(); return r
ids, after, pages = [], None, 0
while True:
    req = {"op": "stats", "ids": True}
    if after is not None:
        req["after"] = after
    r = call(req); pages += 1
    assert r["ok"], r
    ids += r["ids"]
    if "next" not in r:
        break
    assert r["next"] == r["ids"][-1], r["next"]
    after = r["next"]
print("PAGES", pages)
print("\n".join(ids))
PY
}
px_up || { fail "proxy start" "$(tail -3 "$T/proxy.stderr")"; exit 1; }

# ---- the proxy's summary and paged ids forms ----
r=$(summary)
check "summary: boot id and count only" python3 -c '
import json,sys; r=json.loads(sys.argv[1]); assert set(r)=={"ok","boot_id","count"} and r["count"]==0, r' "$r"
python3 -c '
import json
for i in range(1500):
    print(json.dumps({"op":"register","id":"x%04d-%s" % (i, "y"*115),"secret":"s%d" % i}))' |
	python3 "$PADMIN" "$T/admin.sock" - >/dev/null
check "1,500 long ids registered" count_is 1500
walk >"$T/walk"
check "ids: more than one page ($(head -1 "$T/walk"))" python3 -c '
import sys; l=open(sys.argv[1]).read().split("\n"); assert int(l[0].split()[1]) >= 2, l[0]' "$T/walk"
check "ids: every id once, in order, across the pages" python3 -c '
import sys; ids=open(sys.argv[1]).read().split()[2:]
want=["x%04d-%s" % (i, "y"*115) for i in range(1500)]
assert ids==want, (len(ids), ids[:2])' "$T/walk"
check "ids: after past the last id is an empty last page" python3 -c '
import json,sys; r=json.loads(sys.argv[1]); assert r["ids"]==[] and "next" not in r and r["count"]==1500, r' \
	"$(admin '{"op":"stats","ids":true,"after":"zzz"}')"
check "stats: a non-string after is refused" grep -q 'after must be a string' <<<"$(admin '{"op":"stats","ids":true,"after":7}')"
# gone again: the heal must not count them as ours
kill -9 "$PXPID"; wait "$PXPID" 2>/dev/null
px_up || { fail "proxy restart" "$(tail -3 "$T/proxy.stderr")"; exit 1; }

# ---- N sandboxes through the orchestrator ----
orch_config "  proxy_admin_socket: $T/admin.sock" "  proxy_ca_cert: $T/ca.crt" \
	"  mem_overcommit: 100000" "  disk_bytes: 0" "limits:" "  max_running: $((N + 50))"
sed -i -e 's/^  mem_bytes: 512MiB/  mem_bytes: 16MiB/' \
	-e "s/^  uid_count: 256/  uid_count: $((N + 100))/" "$T/orch.yaml"
sed -i -e "s/^  uid_count: 256/  uid_count: $((N + 100))/" "$T/rt.yaml"
orch_start || { fail "orchestrator start" "$(tail -5 "$T/orch.stderr")"; exit 1; }
t0=$(date +%s)
out=$(python3 "$D" create "$ORCH_URL" "$ORCH_KEY" heal 0 "$N" 8)
check "$N sessions made ($out)" python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["ok"]==int(sys.argv[2]), d' "$out" "$N"
echo "# $N creates in $(( $(date +%s) - t0 )) s"
check "the proxy knows all $N" wait_until 30 count_is "$N"

# ---- nothing wrong: the heal asks the summary only ----
sleep 3	# a heal that started before the last register may still walk once
a0=$(wc -l <"$T/proxy.log")
sleep 7
tail -n +$((a0 + 1)) "$T/proxy.log" | grep 'admin op=' >"$T/quiet"
nsum=$(grep -c 'admin op=stats summary' "$T/quiet")
check "quiet: the heal ran (summary asked $nsum times in 7 s)" [ "$nsum" -ge 2 ]
check "quiet: nothing but the summary asked ($(sed 's/.*admin //' "$T/quiet" | sort | uniq -c | tr -s ' \n' ' '))" \
	[ "$(grep -vc 'admin op=stats summary$' "$T/quiet")" = 0 ]

# ---- the proxy restarts: every sandbox registered again ----
b0=$(boot)
kill -9 "$PXPID"; wait "$PXPID" 2>/dev/null
t0=$(date +%s)
px_up || { fail "proxy restart" "$(tail -3 "$T/proxy.stderr")"; exit 1; }
check "a new boot id" [ "$(boot)" != "$b0" ]
check "after the restart the heal registers all $N again" wait_until 120 count_is "$N"
echo "# re-registered $N in $(( $(date +%s) - t0 )) s"
walk | tail -n +2 | sort >"$T/known"
ls "$ORCH_SBX_DIR" | grep -v '^\.' | sort >"$T/ours"
check "the proxy knows exactly the $N sandboxes" cmp -s "$T/known" "$T/ours"
healed() { grep -o 'egress: [0-9]* sandboxes registered again, [0-9]* failed' "$ORCH_LOG" | awk '{n += $2} END {print n + 0}'; }
check "the orchestrator says so ($(healed) registered again)" [ "$(healed)" = "$N" ]
check "no stats failure logged" bash -c "! grep -q 'egress proxy stats failed' '$ORCH_LOG'"
# a sandbox reaches the proxy again through its listener (the proxy
# answers for a host it cannot reach; refused: nothing listens)
out=$(mcp_tool heal-7 shell '{"command":"exec 3<>/dev/tcp/127.0.0.1/3128 && printf \"GET http://nowhere.invalid/ HTTP/1.0\\r\\n\\r\\n\" >&3 && head -c 12 <&3"}')
check "a re-registered sandbox's 127.0.0.1:3128 answers ($out)" grep -q 'HTTP/1' <<<"$out"
