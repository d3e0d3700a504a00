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
