#!/usr/bin/env bash
# fuzz.sh: runs every libFuzzer target built by `make fuzz` for FUZZ_SECONDS
# (default 60) each, starting from its committed corpus; new inputs go to
# build-fuzz/corpus/<name>/ (copy interesting ones into tests/fuzz/corpus/).
set -u
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
rc=0
for f in build-fuzz/tests/fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	case "$f" in *.o|*.d) continue ;; esac
	name=$(basename "$f"); name=${name#fuzz_}
	mkdir -p "build-fuzz/corpus/$name"
	dict=tests/fuzz/$name.dict
	echo "fuzz: $name for ${secs}s"
	"$f" -max_total_time="$secs" -timeout=10 -artifact_prefix="build-fuzz/artifacts-$name-" ${FUZZ_ARGS:-} \
	    $([ -f "$dict" ] && echo "-dict=$dict") \
	    "build-fuzz/corpus/$name" "tests/fuzz/corpus/$name" 2>&1 | tail -n 2 || rc=1
done
exit $rc
