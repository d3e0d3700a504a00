# 22-proxy-lua-faults: the Lua addon engine never takes the proxy down and
# its hooks are bounded in time (issue 13). Out of Lua memory in a hook
# (an addon keeping memory per request; one filling the heap then raising;
# the shipped github.lua at limits.lua_memory 1MiB under thousands of blind
# tunnels) fails that request closed and the worker goes on; hostile Lua
# patterns are interrupted, refused with nothing forwarded, and do not hold
# up another client on the same worker; empty secrets are refused.
# Asserted on what the fake upstreams received.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

ulimit -n "$(ulimit -Hn)" 2>/dev/null
ulimit -n 65536 2>/dev/null
fx_all || { fail "fixtures start"; exit 1; }
LF=$TOP/tests/fixtures/lua-faults
R=$T/r; mkdir -p "$R"

# one worker: every connection shares the one Lua VM under test
one_worker() { sed -i 's/^workers: .*/workers: 1/' "$PX_DIR/proxy.yaml"; }
# curl through the proxy as sandbox sb-e2e (a real client, one connection reused)
pcurl() {
	curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 --cacert "$PX_CA" \
		-x "http://$PC_ID:$PC_SECRET@127.0.0.1:$PX_PORT" "$@"
}
api_auth_count() { fx_api_q "h.get('authorization')==['token $GH_TOKEN_REAL']"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# LF_ONLY="1 3": run only those parts (while debugging one)
only() { [ -z "${LF_ONLY:-}" ] || [[ " $LF_ONLY " == *" $1 "* ]]; }

# --- 1. an addon that keeps a little memory per request, limits.lua_memory 1MiB
if only 1; then
PX_ADDONS="[$LF/leak.lua]" PX_EXTRA="limits:
  lua_memory: 1MiB" px_config leak && one_worker && px_start leak && px_sandbox ||
	{ fail "leak: proxy start"; exit 1; }
n0=$(api_auth_count)
pcurl "https://api.github.com/user?i=[1-450]" >"$R/leak.codes" 2>&1
check "leak: proxy alive after 450 requests" px_alive
nok=$(grep -c '^200$' "$R/leak.codes"); nbad=$(grep -c '^502$' "$R/leak.codes")
echo "# leak: $nok x 200, $nbad x 502 of 450"
check "leak: the heap ran out at least once (502 for that request)" test "$nbad" -ge 1
check "leak: every other request answered 200" test $((nok + nbad)) = 450
check "leak: each forwarded request carried the full token" test "$(( $(api_auth_count) - n0 ))" = "$nok"
check "leak: nothing forwarded without the token" test "$(fx_api_q "'i=' in r['path'] and h.get('authorization')!=['token $GH_TOKEN_REAL']")" = 0
check "leak: out-of-memory logged" grep -q "not enough memory" "$PX_DIR/proxy.log"
check "leak: logged at most a few times (once per interval)" test "$(grep -c 'failed closed: not enough memory' "$PX_DIR/proxy.log")" -le 3
check "leak: on_response out of memory logged, the response still delivered" grep -q "hook=on_response failed: not enough memory" "$PX_DIR/proxy.log"
check "leak: the worker rebuilt its VM" grep -q "rebuilding this worker's addon VM" "$PX_DIR/proxy.log"
check "leak: served again afterwards" test "$(pcurl https://api.github.com/user?after=1)" = 200
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
fi


# --- 2. an addon that fills the heap, then raises
if only 2; then
PX_ADDONS="[$LF/fill.lua, $FX/addons/inject.lua]" PX_EXTRA="limits:
  lua_memory: 1MiB" px_config fill && one_worker && px_start fill && px_sandbox ||
	{ fail "fill: proxy start"; exit 1; }
n_nginx=$(wc -l <"$T/nginx/access.log")
# Four fills: each hook may grow the heap by a quarter of it, so the first VM
# is full and rebuilt within them, and the rebuilt one is not full yet. (With
# more, the rebuilt VM fills too and is not rebuilt again for 10 s, by design;
# whether the next request then fits depends on where a table's last growth
# stopped, a few hundred bytes either way.)
pcurl "https://uploads.github.com/o/r/f?i=[1-4]" >"$R/fill.codes" 2>&1
check "fill: proxy alive" px_alive
check "fill: every request refused (502)" test "$(grep -c '^502$' "$R/fill.codes")" = 4
check "fill: the worker rebuilt its VM" grep -q "rebuilding this worker's addon VM" "$PX_DIR/proxy.log"
check "fill: nothing reached the upload host" test "$(wc -l <"$T/nginx/access.log")" = "$n_nginx"
check "fill: the addon's error or the memory error is logged" grep -qE "after filling the heap|not enough memory" "$PX_DIR/proxy.log"
check "fill: other hosts still served by the same worker" test "$(pcurl https://api.github.com/user)" = 200
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
fi


# --- 3. shipped github.lua, limits.lua_memory 1MiB, thousands of blind tunnels
if only 3; then
NTUN=${LF_NTUN:-4500}
PX_EXTRA="limits:
  lua_memory: 1MiB
  tunnels_per_sandbox: 5000
  conns_per_sandbox: 5000" px_config tun && one_worker && px_start tun && px_sandbox ||
	{ fail "tunnels: proxy start"; exit 1; }
hold blind --target "127.0.0.1:$SINK_PORT" --n "$NTUN" --threads 32 --max-hold 300
echo "# blind tunnels: $(cat "$T/hold-blind.out")"
check "tunnels: proxy alive with $NTUN blind tunnels from one client" px_alive
check "tunnels: all $NTUN opened" test "$(opened blind)" = "$NTUN"
check "tunnels: github.lua still injects for a new request" test "$(pcurl https://api.github.com/user)" = 200
release blind
check "tunnels: proxy alive after they close" px_alive
# intercepted connections keep their ctx in Lua: past the heap, CONNECTs are refused, no abort
hold icpt --target api.github.com:443 --tls --sni api.github.com --cafile "$PX_CA" --n 3500 \
	--threads 32 --max-hold 300
echo "# intercepted: $(cat "$T/hold-icpt.out")"
check "tunnels: proxy alive with 3500 intercepted connections at lua_memory 1MiB" px_alive
check "tunnels: ...most of them set up" test "$(opened icpt)" -ge 1000
check "tunnels: a new request is answered meanwhile (200, or 502 when the heap is full)" \
	bash -c "c=\$(PC_ID=$PC_ID PC_SECRET=$PC_SECRET; curl -s -o /dev/null -w '%{http_code}' --max-time 60 --cacert $PX_CA -x http://$PC_ID:$PC_SECRET@127.0.0.1:$PX_PORT https://api.github.com/user); [ \$c = 200 ] || [ \$c = 502 ]"
release icpt
check "tunnels: served again once they close" wait_for 20 bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 --cacert $PX_CA -x http://$PC_ID:$PC_SECRET@127.0.0.1:$PX_PORT https://api.github.com/user) = 200 ]"
check "tunnels: proxy alive at the end" px_alive
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
fi


# --- 4. hostile patterns: interrupted, refused, nothing forwarded, others not held up
if only 4; then
# lua_instructions at its maximum and timeouts.hook long: only the bound on one
# hook run (100 ms of CPU) can stop these hooks this soon.
PX_ADDONS="[$LF/regex.lua, $FX/addons/inject.lua]" PX_EXTRA="limits:
  lua_instructions: 1000000000
timeouts:
  hook: 20s" px_config re && one_worker && px_start re && px_sandbox ||
	{ fail "regex: proxy start"; exit 1; }
n_nginx=$(wc -l <"$T/nginx/access.log")
for p in find match gsub gmatch pcall plain; do
	t0=$(date +%s%N)
	code=$(pcurl "https://codeload.github.com/$p")
	el=$(ms_since "$t0")
	echo "# hostile $p: $code in $el ms"
	check "regex $p: refused (502)" test "$code" = 502
	check "regex $p: within 3 s, far below timeouts.hook ($el ms)" test "$el" -lt 3000
done
check "regex: nothing reached the git host (no credential forwarded)" test "$(wc -l <"$T/nginx/access.log")" = "$n_nginx"
check "regex: the audit lines of the refused requests do not claim an injection" \
	bash -c "grep -q '\"host\":\"codeload.github.com:443\".*\"status\":502' $PX_DIR/audit.jsonl && ! grep '\"host\":\"codeload.github.com:443\"' $PX_DIR/audit.jsonl | grep -q '\"injected\":true'"
check "regex: the bound is logged as the reason" grep -qE "without pausing|timed out" "$PX_DIR/proxy.log"
# another client on the same (only) worker while a hostile hook runs: its extra
# wait over the same request alone is bounded by one hook run (100 ms of CPU; the
# machine may be loaded, so the bound is generous, measured relative, tried twice)
px_register sb-two two-secret
other() { PC_ID=sb-two PC_SECRET=two-secret pcurl https://api.github.com/user; }
lat() {
	local i el base code best_d=999999 best_el= best_base=
	for i in 1 2; do
		t0=$(date +%s%N); other >/dev/null; base=$(ms_since "$t0")
		pcurl https://codeload.github.com/find >/dev/null &
		sleep 0.05
		t0=$(date +%s%N); code=$(other); el=$(ms_since "$t0")
		wait
		[ "$code" = 200 ] || continue
		[ $((el - base)) -lt "$best_d" ] && { best_d=$((el - base)); best_el=$el; best_base=$base; }
		[ "$best_d" -lt 1500 ] && break
	done
	echo "${best_el:-none} ${best_base:-none} $best_d"
}
set -- $(lat)
echo "# other client during a hostile hook: $1 ms (alone: $2 ms; extra $3 ms; load $(cut -d' ' -f1 /proc/loadavg))"
check "regex: another client's request on the same worker served (200)" test "$1" != none
check "regex: ...held up by less than 1500 ms ($3 ms)" test "$3" -lt 1500
check "regex: proxy alive" px_alive
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
fi

# --- 7. a hook that finishes after timeouts.hook (one long C call) is refused, not forwarded
if only 7; then
PX_ADDONS="[$LF/regex.lua, $FX/addons/inject.lua]" PX_EXTRA="timeouts:
  hook: 500ms" px_config re2 && one_worker && px_start re2 && px_sandbox ||
	{ fail "deadline: proxy start"; exit 1; }
n_nginx=$(wc -l <"$T/nginx/access.log")
check "deadline: a hook returning after timeouts.hook is refused (502)" test "$(pcurl https://codeload.github.com/sleep)" = 502
check "deadline: nothing reached the git host" test "$(wc -l <"$T/nginx/access.log")" = "$n_nginx"
check "deadline: logged as a timeout" grep -q "hook timed out" "$PX_DIR/proxy.log"
check "deadline: proxy alive" px_alive
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
fi


# --- 5. empty and whitespace-only secrets: refused, never an empty credential
if only 5; then
printf '  \n\t\n' >"$T/blank_token"
export PX_EMPTY_TOKEN="   "
PX_ADDON_CONFIG="  github_token@e2e-org: env:PX_EMPTY_TOKEN
  github_token@blank-org: file:$T/blank_token" px_config sec && px_start sec && px_sandbox ||
	{ fail "secrets: proxy start"; exit 1; }
px_register sb-blank blank-secret '{"org":"blank-org"}'
n_api=$(wc -l <"$T/api.log")
code_env=$(pcurl https://api.github.com/user?empty=env)
code_file=$(PC_ID=sb-blank PC_SECRET=blank-secret pcurl https://api.github.com/user?empty=file)
check "secrets: env: whitespace-only token refused (502)" test "$code_env" = 502
check "secrets: file: whitespace-only token refused (502)" test "$code_file" = 502
check "secrets: nothing reached the API" test "$(wc -l <"$T/api.log")" = "$n_api"
check "secrets: refusal logged as an empty secret" grep -q "empty secret" "$PX_DIR/proxy.log"
check "secrets: no audit line claims an injection" bash -c "! grep 'empty=' $PX_DIR/audit.jsonl | grep -q '\"injected\":true'"
check "secrets: no empty or blank credential reached the API" test "$(fx_api_q "any(v.split(' ', 1)[-1].strip() == '' or v.strip() in ('Bearer', 'token') for v in h.get('authorization', []))")" = 0
check "secrets: proxy alive" px_alive
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
fi

# --- 6. out of memory at load and at reload
if only 6; then
A=$T/addons6; mkdir -p "$A"; cp "$FX/addons/inject.lua" "$A/main.lua"
PX_ADDONS="[$A/main.lua]" PX_EXTRA="limits:
  lua_memory: 1MiB" px_config ld && one_worker && px_start ld && px_sandbox ||
	{ fail "load: proxy start"; exit 1; }
check "load: baseline request served" test "$(pcurl https://api.github.com/user)" = 200
cp "$LF/bigload.lua" "$A/main.lua.new" && mv "$A/main.lua.new" "$A/main.lua"
kill -HUP "$PX_PID"
check "reload: out of memory reported as a reload failure" wait_for 10 grep -q "not enough memory" "$PX_DIR/proxy.log"
check "reload: proxy alive" px_alive
check "reload: the old addon still injects" test "$(pcurl https://api.github.com/user?after=reload)" = 200
check "reload: ...with the token" test "$(fx_api_q "'after=reload' in r['path'] and h.get('authorization')==['token $GH_TOKEN_REAL']")" = 1
check "load: -n rejects the addon (out of memory), without aborting" bash -c "$PROXY_BIN -n -f $PX_DIR/proxy.yaml >$R/n-big 2>&1; [ \$? = 1 ] && grep -q 'not enough memory' $R/n-big"
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
fi


# --- 8. a Lua error unwinding out of proxy.github_app_token leaks nothing
# (the token request body used to be allocated before the last raise:
# addon.c). Needs LeakSanitizer, which reports at a clean exit: the proxy
# under test is the ASan build, stopped with SIGTERM, its reports in a
# file of its own (CI's ASAN_OPTIONS log_path is overridden for it).
if only 8; then
if ! grep -qa __asan_init "$PROXY_BIN"; then
	skip "apptoken-raise: no leak after Lua errors" "needs the sanitizer build (B=build-san SANITIZER=address,undefined)"
else
mkdir -p "$T/lsan"
PX_ADDONS="[$LF/apptoken-raise.lua]" px_config ar && one_worker &&
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=1:log_path=$T/lsan/proxy" px_start ar && px_sandbox ||
	{ fail "apptoken-raise: proxy start"; exit 1; }
n_api=$(wc -l <"$T/api.log")
for i in 1 2 3 4; do
	curl -s --max-time 30 --cacert "$PX_CA" -x "http://$PC_ID:$PC_SECRET@127.0.0.1:$PX_PORT" \
		"https://api.github.com/apptoken-raise" >"$R/ar.$i" 2>&1
done
check "apptoken-raise: every call raised inside github_app_token (4 x 150)" \
	test "$(cat "$R"/ar.* | grep -c 'raised 150 of 150: .*bad repository name')" = 4
check "apptoken-raise: nothing reached the API" test "$(wc -l <"$T/api.log")" = "$n_api"
check "apptoken-raise: proxy alive" px_alive
kill -TERM "$PX_PID"; wait "$PX_PID" 2>/dev/null
check "apptoken-raise: no leak reported by LeakSanitizer at the proxy's exit" \
	bash -c "! grep -sq . $T/lsan/proxy* && ! grep -q 'LeakSanitizer' $PX_DIR/stderr"
grep -hs 'SUMMARY\|l_github_app_token' "$T"/lsan/proxy* | head -n 3 | sed 's/^/# /'
fi
fi

check "no sanitizer report from the proxy" px_san_clean
