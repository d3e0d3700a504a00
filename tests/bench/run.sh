#!/usr/bin/env bash
# tests/bench/run.sh: runs every tests/bench/*/run.sh (make bench). Figures,
# not a gate: a failing benchmark is reported and the others still run.
# tests/bench/gateway/run.sh (the app gateway, direct vs through it) is one.
cd "$(dirname "$0")/../.."
rc=0
for b in tests/bench/*/run.sh tests/bench/orchestrator/load-hostile.sh; do
	[ -f "$b" ] || continue
	# density: 2,000 Debian sandboxes, about 15 minutes (docs/testing.md)
	case $b in */density/run.sh) [ -n "${BENCH_DENSITY:-}" ] ||
		{ echo "==== $b: skipped (BENCH_DENSITY=1 runs it)"; continue; } ;; esac
	echo "==== $b"
	bash "$b" || { echo "benchmark $b exited with $?"; rc=1; }
done
exit $rc
