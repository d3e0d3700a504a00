# 00-common: the harness itself and configuration checking of the binaries.
. "$(dirname "$0")/../lib/common.sh"
check "tmpdir exists" test -d "$T"
check "free_port gives a number" test -n "$(free_port)"
# The documented configuration tables are the binaries' own key tables.
check "docs: operator guide's key table matches orchestrator --print-docs" \
	python3 "$TOP/tests/lib/docsync.py" "$BIN/orchestrator/orchestrator" "$TOP/docs/operator-guide.md"
check "docs: kubernetes.md's key table matches the kubernetes.* keys" \
	python3 "$TOP/tests/lib/docsync.py" "$BIN/orchestrator/orchestrator" "$TOP/docs/kubernetes.md" kubernetes.
check "docs: proxy.md's key table matches egress-proxy --print-docs" \
	python3 "$TOP/tests/lib/docsync.py" "$BIN/egress-proxy/egress-proxy" "$TOP/docs/proxy.md"
# The hostile case for the checker itself: a stale row is caught.
sed 's/| `listen` | string |/| `listen` | integer |/' "$TOP/docs/operator-guide.md" >"$T/stale.md"
stale_caught() {
	! python3 "$TOP/tests/lib/docsync.py" "$BIN/orchestrator/orchestrator" "$T/stale.md" >"$T/stale.out"
}
check "docs checker catches a stale row" stale_caught
check "docs checker names the stale row" grep -q 'stale in .*`listen` | integer' "$T/stale.out"
# Every test the docs name (the threat model cites its proving tests) exists.
named_tests_exist() {
	local n missing=0
	for n in $(grep -ohE '\b[0-9]{2}-(proxy|agent|runtime|orch|k8s)-[a-z0-9-]+' \
	    "$TOP"/README.md "$TOP"/docs/*.md "$TOP"/docs/internals/*.md | sort -u); do
		[ -e "$TOP/tests/e2e/$n.sh" ] || { echo "docs name a missing test: $n"; missing=1; }
	done
	return $missing
}
check "docs: every e2e test they name exists" named_tests_exist
