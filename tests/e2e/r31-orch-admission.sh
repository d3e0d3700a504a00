#!/usr/bin/env bash
# r31-orch-admission.sh (issue 31): the local runtime admits a sandbox by
# its memory reservation, not its limit (docs/local-runtime.md, "Memory:
# reservations and limits"). With the default 2 GiB limit and default
# reservation, 40 sandboxes are made through the orchestrator (the old
# admission by limits refused the 18th on a 24 GiB host); sandbox_status
# and the session JSON show the reservation beside the limit; the cgroup
# has memory.max = the limit and (v2) memory.low = the reservation, the
# record keeps it; a reservation that cannot fit is refused naming the
# numbers and leaves nothing behind; one above sandbox.max_memory_reservation
# or above the limit is refused clearly; MemAvailable below the protected
# share refuses (naming it); limits.max_running auto resolves to what the
# host holds (>= 5000 on a 24 GiB host; /metrics orch_max_running).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ "$ORCH_RT" != local ]; then
	skip "admission by reservations" "needs the local runtime (root, bwrap)"
	exit 0
fi
jq_() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps(eval(sys.argv[2], {"d": d})))' "$1" "$2"; }
MiB=$((1 << 20))
# the runtime's defaults: a 2 GiB limit (local.mem_bytes), the default
# reservation; uid_count large enough that max_running auto is bounded
# by memory, not by uids
ORCH_LOCAL_YAML=$(sed -e 's/^  mem_bytes: .*/  mem_bytes: 2GiB/' -e 's/^  uid_count: .*/  uid_count: 10000/' <<<"$ORCH_LOCAL_YAML")
printf '%s\n' "$ORCH_LOCAL_YAML" >"$T/rt.yaml"
orch_config "sandbox:" "  max_memory: 1024GiB" "  max_memory_reservation: 200GiB" \
    "pool:" "  min_idle: 0" "limits:" "  max_creating: 4"
check "orch starts" orch_start || { tail -n 5 "$ORCH_LOG" "$T/orch.stderr"; exit 1; }

# --- limits.max_running auto: what the host holds ---
total_b=$(( $(awk '/^MemTotal/ {print $2}' /proc/meminfo) * 1024 ))
prot_b=$(( total_b / 100 * 10 )); [ "$prot_b" -lt $((1 << 30)) ] && prot_b=$((1 << 30))
want_n=$(( (total_b - prot_b) / (4 * MiB) )); [ "$want_n" -gt 10000 ] && want_n=10000
mr=$(curl -s -H "Authorization: Bearer $ORCH_KEY" "$ORCH_URL/metrics" | awk '$1 == "orch_max_running" {print $2}')
echo "# host $((total_b / MiB)) MiB, protected $((prot_b / MiB)) MiB: max_running auto = $mr (expected $want_n)"
check "max_running auto: resolved as floor((MemTotal - protected) / 4MiB)" test "$mr" = "$want_n"
if [ "$total_b" -ge $((20 << 30)) ]; then
	check "max_running auto: at least 5000 on this host" test "$mr" -ge 5000
fi

# --- 40 sandboxes with the default 2 GiB limit: all admitted ---
N=40
t0=$(date +%s%N)
for b in $(seq 0 4 $((N - 1))); do
	cpids=()
	for i in $(seq "$b" $((b + 3))); do
		[ "$i" -lt "$N" ] || continue
		( mcp_tool "adm-$i" shell '{"command":"echo up"}' >"$T/c$i" 2>&1 ) &
		cpids+=($!)
	done
	wait "${cpids[@]}"	# not the orchestrator's pid
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
okn=0
for i in $(seq 0 $((N - 1))); do
	grep -qx up "$T/c$i" && okn=$((okn + 1))
done
echo "# $okn of $N sessions got a sandbox in $ms ms (4 at a time; load $(cut -d' ' -f1-3 /proc/loadavg))"
check "40 sandboxes with 2 GiB limits are admitted (the old admission stopped at 17)" test "$okn" = "$N"
[ "$okn" = "$N" ] || { grep -h ERROR "$T"/c* | head -3; }
check "40 sandboxes run" test "$(running_sandboxes)" -ge "$N"

# --- the reservation beside the limit: sandbox_status, session JSON ---
st=$(mcp_struct adm-0 sandbox_status '{}')
check "sandbox_status: memory limit 2GiB" test "$(jq_ "$st" 'd["limits"]["memory_bytes"]')" = $((2 << 30))
check "sandbox_status: reservation 4MiB" test "$(jq_ "$st" 'd["limits"]["memory_reservation_bytes"]')" = $((4 * MiB))
txt=$(mcp_tool adm-0 sandbox_status '{}')
check "sandbox_status text: the reservation" contains <(echo "$txt") "memory 2GiB (4MiB reserved)"
js=$(rest GET /v1/sessions/adm-0)
check "session JSON: limit and reservation" test "$(jq_ "$js" '[d["limits"]["memory_bytes"], d["limits"]["memory_reservation_bytes"]]')" = "[$((2 << 30)), $((4 * MiB))]"
id0=$(jq_ "$js" 'd["sandbox_id"]' | tr -d '"')
check "record: the reservation kept" grep -q '"mem_reserve_bytes":[[:space:]]*4194304' "$ORCH_SBX_DIR/$id0/record.json"

# --- the cgroup: memory.max = the limit, memory.low = the reservation ---
cg_check() {	# NAME ID LIMIT RESERVATION
	local v1=/sys/fs/cgroup/memory/$ORCH_CG/$2 v2=/sys/fs/cgroup/$ORCH_CG/$2
	if [ -f "$v2/memory.max" ]; then
		check "$1: memory.max is the limit" test "$(cat "$v2/memory.max")" = "$3"
		check "$1: memory.low is the reservation" test "$(cat "$v2/memory.low")" = "$4"
	else
		check "$1: memory.limit_in_bytes is the limit (v1)" test "$(cat "$v1/memory.limit_in_bytes")" = "$3"
		skip "$1: memory.low is the reservation" "cgroup v1 limits here (no memory.low; tests/unit test_rl_admit writes it on a v2 tree)"
	fi
}
cg_check "default sandbox" "$id0" $((2 << 30)) $((4 * MiB))

# --- a reservation asked for ---
out=$(mcp_tool adm-r create_sandbox '{"memory":"1GiB","memory_reservation":"64MiB"}')
check "create_sandbox with memory_reservation 64MiB" contains <(echo "$out") "sandbox"
st=$(mcp_struct adm-r sandbox_status '{}')
check "sandbox_status: the asked reservation" test "$(jq_ "$st" '[d["limits"]["memory_bytes"], d["limits"]["memory_reservation_bytes"]]')" = "[$((1 << 30)), $((64 * MiB))]"
cg_check "asked reservation" "$(jq_ "$st" 'd["sandbox_id"]' | tr -d '"')" $((1 << 30)) $((64 * MiB))

# --- refused: above the operator's maximum, above the limit ---
out=$(mcp_tool adm-r create_sandbox '{"memory":"400GiB","memory_reservation":"300GiB"}')
check "reservation above sandbox.max_memory_reservation: refused naming it" contains <(echo "$out") "memory_reservation 300GiB is above the maximum of 200GiB (sandbox.max_memory_reservation)"
out=$(mcp_tool adm-r create_sandbox '{"memory":"256MiB","memory_reservation":"512MiB"}')
check "reservation above the limit: refused" contains <(echo "$out") "memory_reservation 512MiB is above the sandbox's memory limit of 256MiB"
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"adm-rest","memory_reservation":"3GiB"}' -w ' %{http_code}')
check "REST: reservation above the default limit (2GiB) refused" contains <(echo "$out") "is above the sandbox's memory limit of 2048 MiB"
check "REST: a 400" contains <(echo "$out") ' 400'

# --- a reservation that cannot fit: refused with the numbers, nothing left ---
before=$(sandboxes | sort)
cgs_before=$(ls /sys/fs/cgroup/memory/"$ORCH_CG" /sys/fs/cgroup/unified/"$ORCH_CG" 2>/dev/null | sort)
big=$(( (total_b - prot_b) / (1 << 30) + 1 ))
out=$(mcp_tool adm-r create_sandbox "{\"memory\":\"${big}GiB\",\"memory_reservation\":\"${big}GiB\"}")
echo "# refused: $(head -c 600 <<<"$out")"
check "too big a reservation: refused" contains <(echo "$out") "not enough memory on this host: "
check "too big a reservation: names what is held" grep -qE "[0-9]+ sandboxes reserve [0-9]+ MiB" <<<"$out"
check "too big a reservation: names its own" contains <(echo "$out") "this one asks $((big * 1024)) MiB"
check "too big a reservation: names the protected share and the host" contains <(echo "$out") "$((prot_b / MiB)) MiB of the host's $((total_b / MiB)) MiB stay protected (local.mem_protected)"
check "too big a reservation: says what to do" contains <(echo "$out") "smaller memory_reservation"
check "too big a reservation: the old sandbox is unchanged" contains <(echo "$out") "Your sandbox and its /workspace are unchanged."
check "too big a reservation: no sandbox left behind" test "$(sandboxes | sort)" = "$before"
check "too big a reservation: no cgroup left behind" test "$(ls /sys/fs/cgroup/memory/"$ORCH_CG" /sys/fs/cgroup/unified/"$ORCH_CG" 2>/dev/null | sort)" = "$cgs_before"
check "too big a reservation: the session still works" test "$(mcp_tool adm-r shell '{"command":"echo still"}' | head -n 1)" = still

# The reservations the records hold (phase creating or running).
held_now() {
	python3 - "$ORCH_SBX_DIR" <<'EOF'
import glob, json, sys
n = 0
for p in glob.glob(sys.argv[1] + "/*/record.json"):
    r = json.load(open(p))
    if r.get("phase") in ("creating", "running"):
        n += r.get("limits", {}).get("mem_reserve_bytes") or 4 << 20
print(n)
EOF
}

# --- MemAvailable below the protected share: refused, naming it ---
# (a second process on the same state dir, sandboxctl, with a protected
# share between MemAvailable and what the books allow: the books fit, the
# host does not. MemAvailable moves with the machine: up to 3 tries.)
held=$(held_now)
low_ok=0
for _ in 1 2 3; do
	avail_b=$(( $(awk '/^MemAvailable/ {print $2}' /proc/meminfo) * 1024 ))
	gap=$(( total_b - held - avail_b ))	# what the host uses beyond the books
	[ "$gap" -gt $((64 * MiB)) ] || { echo "# no room between MemAvailable and the books (gap $((gap / MiB)) MiB)"; break; }
	prot=$(( avail_b - 4 * MiB + gap / 2 ))
	sed "s/^  mem_bytes: .*/  mem_bytes: 2GiB\n  mem_protected: $prot/" "$T/rt.yaml" >"$T/low.yaml"
	out=$("$SBX" -c "$T/low.yaml" create adm-low 2>&1); rc=$?
	echo "# MemAvailable $((avail_b / MiB)) MiB, protected $((prot / MiB)) MiB: rc=$rc $(head -c 400 <<<"$out")"
	if [ "$rc" -ne 0 ] && grep -q "not enough memory on this host right now: [0-9]* MiB available (MemAvailable)" <<<"$out"; then
		low_ok=1
		break
	fi
	"$SBX" -c "$T/rt.yaml" destroy adm-low >/dev/null 2>&1
done
check "MemAvailable below the protected share: refused, naming MemAvailable and the share" test "$low_ok" = 1
check "MemAvailable refusal: names the protected share" contains <(echo "$out") "stay protected (local.mem_protected); stop or delete a sandbox, or free memory on the host"
check "MemAvailable refusal: nothing left behind" test ! -e "$ORCH_SBX_DIR/adm-low"

# --- the tally follows a second process (sandboxctl on the same state
# dir): once .admit-gen moved, the orchestrator counts what it made. Two
# reservations of half the room and 512 MiB each: either fits alone (and
# leaves MemAvailable above the protected share), both do not ---
held=$(held_now)
room=$(( total_b - prot_b - held ))
half=$(( (room / 2 + (512 * MiB)) / MiB ))
sed "s/^  mem_bytes: .*/  mem_bytes: ${half}MiB\n  mem_reservation: ${half}MiB/" "$T/rt.yaml" >"$T/ctl.yaml"
echo "# room $((room / MiB)) MiB: two reservations of $half MiB"
check "sandboxctl: a create reserving half the room and 512 MiB" "$SBX" -c "$T/ctl.yaml" create adm-ctl
out=$(mcp_tool adm-r create_sandbox "{\"memory\":\"${half}MiB\",\"memory_reservation\":\"${half}MiB\"}")
check "the orchestrator counts the other process's create" contains <(echo "$out") "not enough memory on this host: "
"$SBX" -c "$T/rt.yaml" destroy adm-ctl
out=$(mcp_tool adm-r create_sandbox "{\"memory\":\"${half}MiB\",\"memory_reservation\":\"${half}MiB\"}")
check "...and its destroy: the same create is admitted" not_contains <(echo "$out") "ERROR"
st=$(mcp_struct adm-r sandbox_status '{}')
check "the new sandbox has that reservation" test "$(jq_ "$st" 'd["limits"]["memory_reservation_bytes"]')" = $((half * MiB))

orch_stop
echo "# orchestrator log: $(grep -c 'not enough memory' "$ORCH_LOG") refusals logged"
