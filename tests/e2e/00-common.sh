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
	"$BIN"/orchestrator/*.o "$BIN"/orchestrator/*/*.o \
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
# Edges the symbols alone do not show (tests/lib/layerck.py, the folders'
# order in orchestrator/module.mk, exceptions in tests/lib/layers.allow):
# includes and calls only downwards, private headers in their folder, no
# thread-locals carrying call state, exported names carrying their file's.
LK="$TOP/tests/lib/layerck.py"
check "orchestrator: no include or call of a layer above or a peer folder" \
	python3 "$LK" includes "$TOP" "$BIN" orchestrator common netpol
check "private headers (*_int.h) only in their own folder" \
	python3 "$LK" private "$TOP" "$BIN" orchestrator common netpol egress-proxy agent gateway
check "no thread-locals (none is allowed)" \
	python3 "$LK" threads "$TOP" "$BIN" orchestrator common netpol agent gateway
check "orchestrator, common, proxy, gateway: exported names start with their file's name" \
	python3 "$LK" names "$TOP" "$BIN" orchestrator common netpol egress-proxy gateway
# The hostile case for each rule: a planted tree of two folders, lo below
# hi, where the lower file breaks every rule once.
P="$T/lk"; mkdir -p "$P/orchestrator/lo" "$P/orchestrator/hi" \
	"$P/b/orchestrator/lo" "$P/b/orchestrator/hi"
printf '#layer orchestrator/lo\n#layer orchestrator/hi\n' >"$P/orchestrator/module.mk"
printf 'int hi_f(void);\n' >"$P/orchestrator/hi/hi.h"
printf 'struct hi_priv { int x; };\n' >"$P/orchestrator/hi/hi_int.h"
printf '#include "hi.h"\nint hi_f(void) { return 1; }\n' >"$P/orchestrator/hi/hi.c"
printf '#include "hi/hi.h"\n#include "hi/hi_int.h"\n_Thread_local int lo_tl;\nint other_name(void) { return hi_f() + lo_tl; }\n' \
	>"$P/orchestrator/lo/lo.c"
cc -c -I"$P/orchestrator" "$P/orchestrator/hi/hi.c" -o "$P/b/orchestrator/hi/hi.o" &&
	cc -c -I"$P/orchestrator" "$P/orchestrator/lo/lo.c" -o "$P/b/orchestrator/lo/lo.o"
planted() { ! LAYERS_ALLOW=/dev/null python3 "$LK" "$1" "$P" "$P/b" orchestrator >"$T/lk-$1.out"; }
check "layer checker catches an include of a layer above" planted includes
check "layer checker names the include" \
	grep -q 'INCLUDE: orchestrator/lo/lo.c includes orchestrator/hi/hi.h' "$T/lk-includes.out"
check "layer checker names the call of a layer above" \
	grep -q 'CALL: orchestrator/lo/lo.o calls hi_f' "$T/lk-includes.out"
check "layer checker catches a private header of another folder" planted private
check "layer checker names it" \
	grep -q 'PRIVATE: orchestrator/lo/lo.c includes orchestrator/hi/hi_int.h' "$T/lk-private.out"
check "layer checker catches a thread-local" planted threads
check "layer checker names it" grep -q 'THREAD: orchestrator/lo/lo.c:3' "$T/lk-threads.out"
# The real allow list excuses no thread-local either: the runtime's
# progress sink, the last one it listed (runtime.c), is an argument now.
mkdir -p "$P/orchestrator/runtime"
printf '#include <stddef.h>\nstatic _Thread_local void *tl_progress_arg;\n' \
	>"$P/orchestrator/runtime/runtime.c"
check "layer checker catches a thread-local in runtime.c (none allowed)" \
	eval '! LAYERS_ALLOW="$TOP/tests/lib/layers.allow" python3 "$LK" threads "$P" "$P/b" orchestrator >"$T/lk-rthreads.out"'
check "layer checker names it" \
	grep -q 'THREAD: orchestrator/runtime/runtime.c:2' "$T/lk-rthreads.out"
check "layer checker catches a name without its file's prefix" planted names
check "layer checker names it" grep -q 'NAME: orchestrator/lo/lo.c exports other_name' "$T/lk-names.out"
# The proxy's old slip (conn_accept in proxy.c), checked against the real
# allow list: its proxy.c short forms must not excuse it.
mkdir -p "$P/egress-proxy" "$P/b/egress-proxy"
printf 'int conn_accept(void) { return 0; }\nint proxy_ok(void) { return 0; }\n' >"$P/egress-proxy/proxy.c"
cc -c "$P/egress-proxy/proxy.c" -o "$P/b/egress-proxy/proxy.o"
check "layer checker catches a proxy name without its file's prefix" \
	eval '! LAYERS_ALLOW="$TOP/tests/lib/layers.allow" python3 "$LK" names "$P" "$P/b" egress-proxy >"$T/lk-pnames.out"'
check "layer checker names it (and only it)" \
	eval 'grep -q "NAME: egress-proxy/proxy.c exports conn_accept" "$T/lk-pnames.out" && [ "$(wc -l <"$T/lk-pnames.out")" = 1 ]'
