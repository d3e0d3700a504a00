#!/usr/bin/env bash
# tests/bench/push/run.sh: git push of a 50 MiB pack through the egress proxy
# (shipped github.lua, a PAT) to the local nginx + git-http-backend, for a
# sandbox without a policy and one with push rules (the command list read
# and checked before anything goes upstream), plus direct (no proxy) for
# reference. Each push goes to a fresh bare repository, so the whole pack is
# sent every time. Prints the median wall time of BENCH_RUNS pushes per row,
# the difference the rules make, the proxy's peak RSS (VmHWM) per row (a
# fresh proxy per row: buffering the pack would show as +50 MiB), and the
# median of BENCH_PROBES small receive-pack POSTs (git's "0000" probe, one
# curl each) per row, where the gate's own cost is not drowned by git.
# Figures, not a gate. Knobs: BENCH_MIB (50), BENCH_RUNS (5), BENCH_PROBES (40).
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/lib/fakegit.sh
. tests/lib/proxy.sh
px_isolate "$@"	# its own network namespace: nothing leaves the machine
MIB=${BENCH_MIB:-50}
RUNS=${BENCH_RUNS:-5}
PROBES=${BENCH_PROBES:-40}

echo "== push benchmark ($(date -u +%FT%TZ), $(nproc) CPUs, ${MIB} MiB pack, $RUNS pushes per row, load: $(cut -d' ' -f1-3 /proc/loadavg))"
fx_all || { echo "fixtures failed"; exit 1; }
fx_client_home
W=$T/w
git init -q -b main "$W"
head -c $((MIB * 1048576)) /dev/urandom >"$W/big.bin"
git -C "$W" add big.bin && git -C "$W" commit -qm big
echo "pack: $(git -C "$W" count-objects -vH | awk '/size-pack|size:/ {print $2 $3}' | tr '\n' ' ')"

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ms_now() { date +%s%N; }
n=0
# push_times URL [git -c args...]: RUNS timed pushes to fresh repositories, ms each
push_times() {
	local i t0 t1 name
	for i in $(seq "$RUNS"); do
		n=$((n + 1)); name=bench$n
		fx_bare "$T/git/github/e2e-org/$name.git"
		t0=$(ms_now)
		git -C "$W" "$@" push -q "https://$HOSTPORT/e2e-org/$name.git" HEAD:refs/heads/agent/b >/dev/null 2>"$T/push.err" ||
			{ echo "push failed: $(head -3 "$T/push.err")" >&2; return 1; }
		t1=$(ms_now)
		echo $(( (t1 - t0) / 1000000 ))
		rm -rf "$T/git/github/e2e-org/$name.git"
	done
}
probe_times() {
	local i
	for i in $(seq "$PROBES"); do
		curl -s -o /dev/null -w '%{time_total}\n' -X POST --data-binary 0000 \
			-H 'Content-Type: application/x-git-receive-pack-request' \
			"https://github.com/e2e-org/repo.git/git-receive-pack"
	done | awk '{printf "%.3f\n", $1 * 1000}'
}

# direct: git to nginx itself, the token in an extra header
HOSTPORT=github.com:$GH_PORT
dt=$(push_times -c "http.curloptResolve=github.com:$GH_PORT:127.0.0.1" -c "http.sslCAInfo=$PKI/ca.pem" \
	-c "http.extraHeader=Authorization: Basic $(b64 "x-access-token:$GH_TOKEN_REAL")" | median) || exit 1
printf '%-28s push median %6s ms\n' "direct (no proxy)" "$dt"

HOSTPORT=github.com
row() {	# row NAME POLICY-JSON-OR-EMPTY
	local name=$1 pol=$2 pt pr hwm
	px_config "px-$name" && px_start "px-$name" || { echo "proxy start failed"; exit 1; }
	px_admin "{\"op\":\"register\",\"id\":\"sb\",\"secret\":\"s\"${pol:+,\"policy\":$pol}}" >/dev/null
	px_client_env sb s
	pt=$(push_times | median) || exit 1
	pr=$(probe_times | median)
	hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$PX_PID/status")
	printf '%-28s push median %6s ms   probe POST median %7s ms   proxy peak RSS %6s KiB\n' \
		"$name" "$pt" "$pr" "$hwm"
	kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
	eval "PT_$name=$pt PR_$name=$pr"
}
row plain ""
row push_rules '{"github":{"repositories":["e2e-org/*"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main"]}}'
awk -v a="$PT_push_rules" -v b="$PT_plain" -v c="$PR_push_rules" -v d="$PR_plain" 'BEGIN {
	printf "push rules add: %+.0f ms per %s MiB push (noise: git and git-http-backend dominate), %+.3f ms per probe POST\n", a - b, "'"$MIB"'", c - d }'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
