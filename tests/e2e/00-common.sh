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
	for n in $(grep -ohE '\b[0-9]{2}-(proxy|agent|runtime|orch|k8s|gateway|apps)-[a-z0-9-]+' \
	    "$TOP"/README.md "$TOP"/docs/*.md "$TOP"/docs/internals/*.md | sort -u); do
		[ -e "$TOP/tests/e2e/$n.sh" ] || { echo "docs name a missing test: $n"; missing=1; }
	done
	return $missing
}
check "docs: every e2e test they name exists" named_tests_exist
# Every file a code comment or a doc cites is in the repository; the
# checker itself catches a stale citation.
check "comments and docs cite only files that exist" \
	python3 "$TOP/tests/lib/citecheck.py" "$TOP"
mkdir -p "$T/cc" && git -C "$T/cc" init -q &&
	printf '/* see orchestrator/nothere.c and DESIGN.md */\nint x;\n' >"$T/cc/a.c" &&
	git -C "$T/cc" add a.c
cite_caught() { ! python3 "$TOP/tests/lib/citecheck.py" "$T/cc" >"$T/cc.out"; }
check "cite checker catches a missing file" cite_caught
check "cite checker names it" grep -q 'a.c: cites DESIGN.md' "$T/cc.out"
# Layers point one way: no two files of a program call each other
# (tests/lib/layers.sh reads the objects' symbols).
check "orchestrator: no two files call each other" bash "$TOP/tests/lib/layers.sh" \
	"$BIN"/orchestrator/*.o "$BIN"/orchestrator/runtime/*.o \
	"$BIN"/orchestrator/runtime/*/*.o "$BIN"/netpol/*.o "$BIN"/common/*.o
check "egress-proxy: no two files call each other" bash "$TOP/tests/lib/layers.sh" \
	"$BIN"/egress-proxy/*.o "$BIN"/common/*.o
check "agent: no two files call each other" bash "$TOP/tests/lib/layers.sh" \
	"$BIN"/agent/*.o
check "app-gateway: no two files call each other" bash "$TOP/tests/lib/layers.sh" \
	"$BIN"/gateway/*.o "$BIN"/common/*.o
printf 'void b(void);\nvoid a(void);\nvoid a(void) { b(); }\n' >"$T/la.c"
printf 'void a(void);\nvoid b(void);\nvoid b(void) { a(); }\n' >"$T/lb.c"
cc -c "$T/la.c" -o "$T/la.o" && cc -c "$T/lb.c" -o "$T/lb.o"
cycle_caught() { ! bash "$TOP/tests/lib/layers.sh" "$T/la.o" "$T/lb.o" >"$T/layers.out"; }
check "layer checker catches two files calling each other" cycle_caught
check "layer checker names them" grep -q 'CYCLE: .*la.o <-> .*lb.o' "$T/layers.out"
