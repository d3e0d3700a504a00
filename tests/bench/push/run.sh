#!/usr/bin/env bash
# tests/bench/push/run.sh: git push of a 50 MiB pack through the egress proxy
# (shipped github.lua, a PAT) to the local nginx + git-http-backend, for a
# sandbox without a policy and one with push rules (the command list read
# and checked before anything goes upstream), plus direct (no proxy) for
# reference. Each push goes to a fresh bare repository, so the whole pack is
# sent every time. Prints the median wall time of BENCH_RUNS pushes per row,
# the difference the rules make, the proxy's peak RSS (VmHWM) per row (a
# fresh proxy per row: buffering the pack would show as +50 MiB), and the
# median of BENCH_PROBES small receive-pack POSTs (git's "0000" probe, on
# kept-alive connections) per row, where the gate's own cost is not drowned by git.
# Figures, not a gate. Knobs: BENCH_MIB (50), BENCH_RUNS (5), BENCH_PROBES (200).
# Rows alternate push by push (and probe batch by batch) so load drift
# hits both alike.
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/lib/fakegit.sh
. tests/lib/proxy.sh
px_isolate "$@"	# its own network namespace: nothing leaves the machine
MIB=${BENCH_MIB:-50}
RUNS=${BENCH_RUNS:-5}
PROBES=${BENCH_PROBES:-200}

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
# push_once NAME [git -c args...]: one timed push (ms) to a fresh repository
push_once() {
	local name=$1 t0 t1; shift
	fx_bare "$T/git/github/e2e-org/$name.git"
	t0=$(ms_now)
	git -C "$W" "$@" push -q "https://$HOSTPORT/e2e-org/$name.git" HEAD:refs/heads/agent/b >/dev/null 2>"$T/push.err" ||
		{ echo "push failed: $(head -3 "$T/push.err")" >&2; return 1; }
	t1=$(ms_now)
	echo $(( (t1 - t0) / 1000000 ))
	rm -rf "$T/git/github/e2e-org/$name.git"
}
# probes N: N receive-pack POSTs of "0000" on one kept-alive connection, ms each
probes() {
	local urls=() i
	for i in $(seq "$1"); do urls+=("https://github.com/e2e-org/repo.git/git-receive-pack"); done
	curl -s -o /dev/null -w '%{time_total}\n' -X POST --data-binary 0000 \
		-H 'Content-Type: application/x-git-receive-pack-request' "${urls[@]}" |
		awk '{printf "%.3f\n", $1 * 1000}'
}

# direct: git to nginx itself, the token in an extra header
HOSTPORT=github.com:$GH_PORT
for i in $(seq "$RUNS"); do
	GIT_SSL_CAINFO=$PKI/ca.pem push_once "direct$i" -c "http.curloptResolve=github.com:$GH_PORT:127.0.0.1" \
		-c "http.extraHeader=Authorization: Basic $(b64 "x-access-token:$GH_TOKEN_REAL")" || exit 1
done >"$T/t-direct"
printf '%-22s push median %6s ms   (all: %s)\n' "direct (no proxy)" "$(median <"$T/t-direct")" "$(tr '\n' ' ' <"$T/t-direct")"

# Two proxies, one sandbox each; pushes and probes alternate between them.
HOSTPORT=github.com
start_row() {	# start_row NAME POLICY-JSON-OR-EMPTY
	px_config "px-$1" && px_start "px-$1" || { echo "proxy start failed"; exit 1; }
	px_admin "{\"op\":\"register\",\"id\":\"sb\",\"secret\":\"s\"${2:+,\"policy\":$2}}" >/dev/null
	eval "PORT_$1=$PX_PORT PID_$1=$PX_PID CA_$1=$PX_CA"
}
use_row() { eval "PX_PORT=\$PORT_$1 PX_PID=\$PID_$1 PX_CA=\$CA_$1"; px_client_env sb s; }
start_row plain ""
start_row rules '{"github":{"repositories":["e2e-org/*"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main"]}}'
for i in $(seq "$RUNS"); do
	for r in plain rules; do
		use_row $r
		push_once "$r$i" >>"$T/t-$r" || exit 1
	done
done
for i in 1 2 3 4 5; do
	for r in plain rules; do
		use_row $r
		probes $((PROBES / 5)) >>"$T/p-$r"
	done
done
for r in plain rules; do
	use_row $r
	printf '%-22s push median %6s ms   probe POST median %7s ms (%s)   proxy peak RSS %6s KiB   (pushes: %s)\n' \
		"$r" "$(median <"$T/t-$r")" "$(median <"$T/p-$r")" "$(wc -l <"$T/p-$r")" \
		"$(awk '/^VmHWM:/ {print $2}' "/proc/$PX_PID/status")" "$(tr '\n' ' ' <"$T/t-$r")"
done
awk -v a="$(median <"$T/t-rules")" -v b="$(median <"$T/t-plain")" -v c="$(median <"$T/p-rules")" -v d="$(median <"$T/p-plain")" 'BEGIN {
	printf "push rules add: %+.0f ms per push (git and git-http-backend dominate), %+.3f ms per probe POST\n", a - b, c - d }'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
