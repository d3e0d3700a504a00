#!/usr/bin/env bash
# fuzz.sh: runs every libFuzzer target built by `make fuzz`
# (build-fuzz/tests/fuzz/fuzz_*), one after another, each from its committed
# corpus (tests/fuzz/corpus/<name>/) plus the inputs earlier runs found
# (build-fuzz/corpus/<name>/, where new ones go), until FUZZ_EXECS
# executions or FUZZ_SECONDS seconds, whichever comes first.
#
# A crash (or timeout, or out-of-memory) stops that target: the input is
# minimized, copied to tests/fuzz/corpus/<name>/crash-<sha1> (so the replay
# tests of `make test` run it from then on: commit it with the fix) and its
# trace is kept in build-fuzz/crash-<name>-<sha1>.txt; the next target runs.
# The table at the end (also saved in build-fuzz/, as fuzz-figures) has the figures
# docs/testing.md reports.
#
#   FUZZ_EXECS    executions per target (10000000; -1: no bound)
#   FUZZ_SECONDS  most seconds per target (1800; 0: no time bound)
#   FUZZ_ONLY     space-separated target names to run (default: all)
#   FUZZ_TIMEOUT  seconds one input may take before it counts as a hang (10)
#   FUZZ_ARGS     extra libFuzzer flags
# Exit status: 0 when no target crashed.
set -u
cd "$(dirname "$0")/.." || exit 1
execs=${FUZZ_EXECS:-10000000}
secs=${FUZZ_SECONDS:-1800}
unit_tmo=${FUZZ_TIMEOUT:-10}
out=build-fuzz
rc=0
rows=()
for f in "$out"/tests/fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	case "$f" in *.o|*.d) continue ;; esac
	name=$(basename "$f"); name=${name#fuzz_}
	if [ -n "${FUZZ_ONLY:-}" ] && ! grep -qw -- "$name" <<<"$FUZZ_ONLY"; then
		continue
	fi
	mkdir -p "$out/corpus/$name" "tests/fuzz/corpus/$name" "$out/artifacts/$name"
	dict=tests/fuzz/$name.dict
	log=$out/fuzz-$name.log
	echo "fuzz: $name: up to $execs executions or ${secs}s"
	t0=$(date +%s)
	dargs=()
	[ -f "$dict" ] && dargs=("-dict=$dict")
	# shellcheck disable=SC2086
	"$f" -runs="$execs" -max_total_time="$secs" -timeout="$unit_tmo" -print_final_stats=1 \
	    -artifact_prefix="$out/artifacts/$name/" ${FUZZ_ARGS:-} "${dargs[@]}" \
	    "$out/corpus/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1
	frc=$?
	took=$(( $(date +%s) - t0 ))
	# figures: the last status line (cov, ft, corp) and the final stats
	st=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	newu=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -n 1)
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$st")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$st")
	corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$st")
	crashes=0
	for a in "$out/artifacts/$name"/crash-* "$out/artifacts/$name"/timeout-* \
	    "$out/artifacts/$name"/oom-* "$out/artifacts/$name"/leak-*; do
		[ -f "$a" ] || continue
		case $(basename "$a") in *.*) continue ;; esac
		crashes=$((crashes + 1))
		kind=$(basename "$a"); kind=${kind%%-*}
		min=$a.min
		# shellcheck disable=SC2086
		"$f" -minimize_crash=1 -runs=200000 -timeout="$unit_tmo" \
		    -exact_artifact_path="$min" "$a" >"$a.minimize.log" 2>&1
		[ -s "$min" ] || min=$a
		sum=$(sha1sum "$min" | cut -c1-12)
		cp "$min" "tests/fuzz/corpus/$name/$kind-$sum"
		"$f" -timeout="$unit_tmo" "$min" >"$out/crash-$name-$sum.txt" 2>&1
		echo "fuzz: $name: $kind; seed tests/fuzz/corpus/$name/$kind-$sum," \
		    "trace $out/crash-$name-$sum.txt:"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|    #[0-9] )|runtime error' \
		    "$out/crash-$name-$sum.txt" | head -n 14 | sed 's/^/    /'
		mv "$a" "$a.seeded"
	done
	[ "$frc" -ne 0 ] && [ "$crashes" -eq 0 ] && { echo "fuzz: $name exited $frc:"; tail -n 5 "$log"; }
	{ [ "$frc" -ne 0 ] || [ "$crashes" -ne 0 ]; } && rc=1
	rows+=("| $name | ${n:-?} | ${took} | ${eps:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | ${newu:-?} | ${rss:-?} | $crashes |")
	echo "fuzz: $name: ${n:-?} executions in ${took}s (${eps:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, $crashes crash(es)"
done
{
	echo "| target | executions | seconds | exec/s | cov | ft | corpus (units/size) | new units | peak RSS MB | crashes |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$out/fuzz-figures.md"
exit $rc
