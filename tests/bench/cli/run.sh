#!/usr/bin/env bash
# tests/bench/cli/run.sh: the command-line client (build/cli/orch) beside
# curl doing the same REST requests, in one run, through the real
# orchestrator to a real sandbox (figures, not a gate; issue 34's target:
# within 10% of curl):
#   - cp up and down of BENCH_MIB (100) MiB: `orch cp FILE ID:/tmp/blob`
#     and `orch cp ID:/tmp/blob FILE` versus `curl -T` / `curl -o` on
#     PUT/GET /v1/sessions/{id}/files/tmp/blob, MiB/s, the median and the
#     best of BENCH_ROUNDS (5), interleaved: single transfers here vary by
#     a factor of 2-3 from one to the next, so a best alone misleads. /tmp
#     is the sandbox's tmpfs: the figure is the transfer path.
#   - exec: a whole `orch exec ID true` (a process started, its request,
#     the NDJSON stream to its exit line, the process's exit) versus
#     `curl -sN` posting the same body to /exec, p50 and p90 of
#     BENCH_EXECS (40) each, interleaved.
#   B=build bash tests/bench/cli/run.sh
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/mcp/orch-lib.sh
MIB=${BENCH_MIB:-100}
ROUNDS=${BENCH_ROUNDS:-5}
NEX=${BENCH_EXECS:-40}
SID=bench-cli
ORCH_CLI=${ORCH_CLI:-$TOP/$B/cli/orch}
if [ "$ORCH_RT" != local ]; then
	echo "skip: the CLI benchmark needs the local runtime (root, bwrap)"
	exit 0
fi
[ -x "$ORCH_CLI" ] || { echo "no $ORCH_CLI (make)"; exit 1; }
orch_config "files:" "  max_bytes: 2GiB"
orch_start || { echo "orchestrator did not start"; exit 1; }
export ORCH_URL ORCH_KEY
"$ORCH_CLI" create "$SID" >/dev/null || { echo "create failed"; exit 1; }
F="$ORCH_URL/v1/sessions/$SID/files"
A=(-H "Authorization: Bearer $ORCH_KEY")
head -c $((MIB * 1048576)) /dev/urandom > "$T/blob"
now() { date +%s%N; }
mibs() { python3 -c "import sys; print('%.0f' % ($MIB / ((int(sys.argv[2]) - int(sys.argv[1])) / 1e9)))" "$1" "$2"; }
best() { tr ' ' '\n' | sort -n | tail -1; }
med() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cup="" cdown="" kup="" kdown=""
for _ in $(seq "$ROUNDS"); do
	t0=$(now); "$ORCH_CLI" -q cp "$T/blob" "$SID:/tmp/blob" >/dev/null || echo "orch cp up failed"; t1=$(now)
	cup="$cup $(mibs "$t0" "$t1")"
	rm -f "$T/back"
	t0=$(now); "$ORCH_CLI" -q cp "$SID:/tmp/blob" "$T/back" >/dev/null || echo "orch cp down failed"; t1=$(now)
	cdown="$cdown $(mibs "$t0" "$t1")"
	cmp -s "$T/blob" "$T/back" || echo "orch cp: the bytes differ"
	t0=$(now); curl -sf "${A[@]}" -T "$T/blob" "$F/tmp/blob" >/dev/null || echo "curl up failed"; t1=$(now)
	kup="$kup $(mibs "$t0" "$t1")"
	t0=$(now); curl -sf "${A[@]}" -o "$T/back" "$F/tmp/blob" || echo "curl down failed"; t1=$(now)
	kdown="$kdown $(mibs "$t0" "$t1")"
	cmp -s "$T/blob" "$T/back" || echo "curl: the bytes differ"
done
ex_orch="" ex_curl=""
for _ in $(seq "$NEX"); do
	t0=$(now); "$ORCH_CLI" exec "$SID" true >/dev/null 2>&1; t1=$(now)
	ex_orch="$ex_orch $(( (t1 - t0) / 1000 ))"
	t0=$(now)
	curl -sfN "${A[@]}" -H 'Content-Type: application/json' -d '{"command":"true"}' \
	    "$ORCH_URL/v1/sessions/$SID/exec" >/dev/null; t1=$(now)
	ex_curl="$ex_curl $(( (t1 - t0) / 1000 ))"
done
pct() { tr ' ' '\n' | grep . | sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100+0.5); if (i<1) i=1; printf "%.1f", a[i]/1000}'; }
cu=$(echo $cup | med) cd=$(echo $cdown | med) ku=$(echo $kup | med) kd=$(echo $kdown | med)
cub=$(echo $cup | best) cdb=$(echo $cdown | best) kub=$(echo $kup | best) kdb=$(echo $kdown | best)
eo50=$(echo $ex_orch | pct 50) ec50=$(echo $ex_curl | pct 50)
eo90=$(echo $ex_orch | pct 90) ec90=$(echo $ex_curl | pct 90)
ratio() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-38s %10s %10s %8s\n' "" "orch" "curl" "ratio"
printf '%-38s %10s %10s %8s\n' "cp up, $MIB MiB, median MiB/s ($ROUNDS)" "$cu" "$ku" "$(ratio "$cu" "$ku")"
printf '%-38s %10s %10s %8s\n' "cp up, best MiB/s" "$cub" "$kub" "$(ratio "$cub" "$kub")"
printf '%-38s %10s %10s %8s\n' "cp down, $MIB MiB, median MiB/s" "$cd" "$kd" "$(ratio "$cd" "$kd")"
printf '%-38s %10s %10s %8s\n' "cp down, best MiB/s" "$cdb" "$kdb" "$(ratio "$cdb" "$kdb")"
printf '%-38s %10s %10s %8s\n' "exec true, p50 ms ($NEX each)" "$eo50" "$ec50" "$(ratio "$ec50" "$eo50")"
printf '%-38s %10s %10s %8s\n' "exec true, p90 ms" "$eo90" "$ec90" "$(ratio "$ec90" "$eo90")"
echo "(ratio: orch's speed over curl's; 1.00 is equal, above is faster)"
"$ORCH_CLI" delete "$SID" >/dev/null
